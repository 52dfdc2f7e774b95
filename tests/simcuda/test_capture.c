/* test_capture.c: stream capture and graphs: captured copies and launches are recorded, not
 * executed; each graph launch replays them (with the parameters captured); synchronizing or
 * querying a capturing stream fails with CUDA's codes and invalidates the capture; the capture
 * status/info calls; the legacy stream and device-wide sync while capturing. */
#include <stdatomic.h>
#include <string.h>

#include <simcuda_kernel.h>

#include "test_util.h"

static void low_latency(void) { sim_env("50"); }

/* Status and id only; the argument list differs between CUDA 12 (six) and 13 (seven). */
#if CUDART_VERSION >= 13000
#define CAPTURE_INFO(s, st, id) cudaStreamGetCaptureInfo(s, st, id, NULL, NULL, NULL, NULL)
#else
#define CAPTURE_INFO(s, st, id) cudaStreamGetCaptureInfo(s, st, id, NULL, NULL, NULL)
#endif

static atomic_int g_runs;
static atomic_int g_last_value;

SIMCUDA_KERNEL(count_kernel, sizeof(int)) {
  atomic_fetch_add(&g_runs, 1);
  atomic_store(&g_last_value, *(int *)launch->args[0]);
}

static void launch_count(int value, cudaStream_t s) {
  void *args[] = {&value};
  CK(cudaLaunchKernel((const void *)count_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, s));
}

Test(capture, recorded_not_executed_then_replayed, .init = low_latency) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  unsigned char *h, *d;
  CK(cudaHostAlloc((void **)&h, 4096, 0));
  CK(cudaMalloc((void **)&d, 4096));
  CK(cudaMemset(d, 0, 4096));
  CK(cudaDeviceSynchronize());
  memset(h, 0x61, 4096);

  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  enum cudaStreamCaptureStatus st;
  CK(cudaStreamIsCapturing(s, &st));
  cr_assert_eq(st, cudaStreamCaptureStatusActive);
  CK(cudaMemcpyAsync(d, h, 4096, cudaMemcpyHostToDevice, s));
  launch_count(41, s);
  cudaGraph_t graph;
  CK(cudaStreamEndCapture(s, &graph));
  CK(cudaStreamIsCapturing(s, &st));
  cr_assert_eq(st, cudaStreamCaptureStatusNone);

  CK(cudaDeviceSynchronize());
  cr_assert_eq(atomic_load(&g_runs), 0, "a captured launch must not run");
  unsigned char back;
  CK(cudaMemcpy(&back, d, 1, cudaMemcpyDeviceToHost));
  cr_assert_eq(back, 0, "a captured copy must not run");

  cudaGraphExec_t exec;
  CK(cudaGraphInstantiate(&exec, graph, 0));
  CK(cudaGraphLaunch(exec, s));
  CK(cudaStreamSynchronize(s));
  cr_assert_eq(atomic_load(&g_runs), 1);
  cr_assert_eq(atomic_load(&g_last_value), 41, "parameters captured at capture time");
  CK(cudaMemcpy(&back, d, 1, cudaMemcpyDeviceToHost));
  cr_assert_eq(back, 0x61);
  /* Each launch replays; the copy reads the source as it is at replay time. */
  memset(h, 0x62, 4096);
  CK(cudaGraphLaunch_ptsz(exec, s));
  CK(cudaStreamSynchronize(s));
  cr_assert_eq(atomic_load(&g_runs), 2);
  CK(cudaMemcpy(&back, d, 1, cudaMemcpyDeviceToHost));
  cr_assert_eq(back, 0x62);
  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(graph));
}

/* cudaGraphInstantiateWithFlags instantiates like cudaGraphInstantiate: each launch replays. */
Test(capture, instantiate_with_flags_replays, .init = low_latency) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  unsigned char *h, *d;
  CK(cudaHostAlloc((void **)&h, 4096, 0));
  CK(cudaMalloc((void **)&d, 4096));
  CK(cudaMemset(d, 0x2c, 4096));
  CK(cudaDeviceSynchronize());
  memset(h, 0, 4096);
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CK(cudaMemcpyAsync(h, d, 4096, cudaMemcpyDeviceToHost, s));
  cudaGraph_t graph;
  CK(cudaStreamEndCapture(s, &graph));
  CK(cudaStreamSynchronize(s));
  cr_assert_eq(h[100], 0, "a captured copy must not run");
  cudaGraphExec_t exec;
  CK_ERR(cudaGraphInstantiateWithFlags(NULL, graph, 0), cudaErrorInvalidValue);
  CK(cudaGraphInstantiateWithFlags(&exec, graph, cudaGraphInstantiateFlagAutoFreeOnLaunch));
  CK(cudaGraphLaunch(exec, s));
  CK(cudaStreamSynchronize(s));
  cr_assert_eq(h[100], 0x2c);
  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(graph));
  CK(cudaFreeHost(h));
  CK(cudaFree(d));
  CK(cudaStreamDestroy(s));
}

Test(capture, synchronize_invalidates, .init = low_latency) {
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  launch_count(1, s);
  CK_ERR(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
  enum cudaStreamCaptureStatus st;
  CK(cudaStreamIsCapturing(s, &st));
  cr_assert_eq(st, cudaStreamCaptureStatusInvalidated);
  cudaGraph_t graph = (cudaGraph_t)0x1;
  CK_ERR(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
  cr_assert_null(graph);
  CK(cudaStreamSynchronize(s));
  cr_assert_eq(atomic_load(&g_runs), 0, "work captured before the invalidation never runs");
}

Test(capture, query_invalidates_and_end_reports_it, .init = low_latency) {
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  launch_count(1, s);
  CK_ERR(cudaStreamQuery(s), cudaErrorStreamCaptureUnsupported);
  /* Work queued on an invalidated capture fails too. */
  int v = 3;
  void *args[] = {&v};
  CK_ERR(cudaLaunchKernel((const void *)count_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, s),
         cudaErrorStreamCaptureInvalidated);
  cudaGraph_t graph = (cudaGraph_t)0x1;
  CK_ERR(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
  cr_assert_null(graph);
  CK(cudaStreamSynchronize(s)); /* out of capture: normal again */
  cr_assert_eq(atomic_load(&g_runs), 0);
}

Test(capture, capture_info_and_state_errors, .init = low_latency) {
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  cudaGraph_t graph;
  CK_ERR(cudaStreamEndCapture(s, &graph), cudaErrorIllegalState);
  CK_ERR(cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal), cudaErrorStreamCaptureUnsupported);
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  CK_ERR(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed), cudaErrorIllegalState);
#if CUDART_VERSION >= 13000 /* the seven-argument 13.0 signature */
  enum cudaStreamCaptureStatus st;
  unsigned long long id1 = 0, id2 = 0;
  cudaGraph_t g_out = NULL;
  const cudaGraphNode_t *deps = (const cudaGraphNode_t *)0x1;
  size_t ndeps = 99;
  CK(cudaStreamGetCaptureInfo(s, &st, &id1, &g_out, &deps, NULL, &ndeps));
  cr_assert_eq(st, cudaStreamCaptureStatusActive);
  cr_assert_neq(id1, 0);
  cr_assert_not_null(g_out);
  cr_assert_eq(ndeps, 0);
  CK(cudaStreamGetCaptureInfo_ptsz(s, &st, &id2, NULL, NULL, NULL, NULL));
  cr_assert_eq(id1, id2, "one capture sequence, one id");
#endif
  CK(cudaStreamEndCapture(s, &graph));
  enum cudaStreamCaptureStatus after;
  unsigned long long id_after = 1;
  CK(CAPTURE_INFO(s, &after, &id_after));
  cr_assert_eq(after, cudaStreamCaptureStatusNone);
  CK(cudaGraphDestroy(graph)); /* an empty graph */
  cudaGraphExec_t exec;
  CK_ERR(cudaGraphInstantiate(&exec, NULL, 0), cudaErrorInvalidValue);
}

Test(capture, legacy_stream_use_while_capturing_is_implicit_dependency, .init = low_latency) {
  cudaStream_t s;
  CK(cudaStreamCreate(&s)); /* blocking: the legacy stream would have to wait for it */
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  int v = 5;
  void *args[] = {&v};
  CK_ERR(cudaLaunchKernel((const void *)count_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, 0),
         cudaErrorStreamCaptureImplicit);
  cudaGraph_t graph;
  CK_ERR(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
}

Test(capture, device_synchronize_while_capturing, .init = low_latency) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CK_ERR(cudaDeviceSynchronize(), cudaErrorStreamCaptureUnsupported);
  cudaGraph_t graph;
  CK_ERR(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
  CK(cudaDeviceSynchronize());
}

Test(capture, other_streams_unaffected, .init = low_latency) {
  /* A non-blocking stream that is not capturing can be synchronized from anywhere. */
  cudaStream_t cap, other;
  CK(cudaStreamCreateWithFlags(&cap, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  CK(cudaStreamBeginCapture(cap, cudaStreamCaptureModeGlobal));
  launch_count(9, other);
  CK(cudaStreamSynchronize(other));
  cr_assert_eq(atomic_load(&g_runs), 1);
  cudaGraph_t graph;
  CK(cudaStreamEndCapture(cap, &graph));
  CK(cudaGraphDestroy(graph));
}

Test(capture, event_recorded_in_capture, .init = low_latency) {
  cudaStream_t s;
  cudaEvent_t e;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaEventCreate(&e));
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CK(cudaEventRecord(e, s));
  /* The event's last record is a node of an unfinished graph: it has no state to query. */
  CK_ERR(cudaEventQuery(e), cudaErrorCapturedEvent);
  CK_ERR(cudaEventSynchronize(e), cudaErrorCapturedEvent);
  cudaGraph_t graph;
  CK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  CK(cudaGraphInstantiate(&exec, graph, 0));
  CK(cudaGraphLaunch(exec, s)); /* the replayed record makes it an ordinary event again */
  CK(cudaEventSynchronize(e));
  CK(cudaEventQuery(e));
}

Test(capture, relaxed_thread_may_synchronize, .init = low_latency) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  CK(cudaThreadExchangeStreamCaptureMode(&mode));
  cr_assert_eq(mode, cudaStreamCaptureModeGlobal, "the default interaction mode is global");
  CK(cudaDeviceSynchronize()); /* allowed in relaxed mode; the capture stays valid */
  CK(cudaThreadExchangeStreamCaptureMode(&mode));
  cudaGraph_t graph;
  CK(cudaStreamEndCapture(s, &graph));
  CK(cudaGraphDestroy(graph));
}

Test(capture, synchronous_copy_breaks_capture, .init = low_latency) {
  unsigned char *h, *d;
  CK(cudaHostAlloc((void **)&h, 64, 0));
  CK(cudaMalloc((void **)&d, 64));
  CK(cudaStreamBeginCapture(cudaStreamPerThread, cudaStreamCaptureModeGlobal));
  CK_ERR(cudaMemcpy_ptds(d, h, 64, cudaMemcpyHostToDevice), cudaErrorStreamCaptureUnsupported);
  cudaGraph_t graph;
  CK_ERR(cudaStreamEndCapture(cudaStreamPerThread, &graph), cudaErrorStreamCaptureInvalidated);
}

/* A captured graph answers the node queries PyTorch makes at the end of torch.cuda.graph()
 * (cudaGraphGetNodes, also for an empty capture) and the usual walks: one chain of nodes in
 * capture order, each of the type of the op captured. */
static void noop_host(void *p) { (void)p; }
Test(capture, graph_node_queries, .init = low_latency) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  unsigned char *h, *d;
  CK(cudaHostAlloc((void **)&h, 4096, 0));
  CK(cudaMalloc((void **)&d, 4096));
  cudaEvent_t ev;
  CK(cudaEventCreate(&ev));
  cudaGraph_t g;
  /* empty */
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CK(cudaStreamEndCapture(s, &g));
  size_t n = 99;
  CK(cudaGraphGetNodes(g, NULL, &n));
  cr_assert_eq(n, 0);
  CK(cudaGraphGetRootNodes(g, NULL, &n));
  cr_assert_eq(n, 0);
  cudaGraphExec_t e;
  CK(cudaGraphInstantiate(&e, g, 0));
  CK(cudaGraphLaunch(e, s));
  CK(cudaStreamSynchronize(s));
  CK(cudaGraphExecDestroy(e));
  CK(cudaGraphDestroy(g));
  /* four ops */
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CK(cudaMemcpyAsync(d, h, 4096, cudaMemcpyHostToDevice, s));
  CK(cudaMemsetAsync(d, 0, 4096, s));
  CK(cudaLaunchHostFunc(s, noop_host, NULL));
  CK(cudaEventRecord(ev, s));
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphGetNodes(g, NULL, &n));
  cr_assert_eq(n, 4);
  cudaGraphNode_t nodes[6];
  n = 6;
  CK(cudaGraphGetNodes(g, nodes, &n));
  cr_assert_eq(n, 4);
  cr_assert_null(nodes[4]);
  cr_assert_null(nodes[5]);
  static const enum cudaGraphNodeType want[] = {cudaGraphNodeTypeMemcpy, cudaGraphNodeTypeMemset,
                                                cudaGraphNodeTypeHost, cudaGraphNodeTypeEventRecord};
  for (int i = 0; i < 4; i++) {
    enum cudaGraphNodeType t;
    CK(cudaGraphNodeGetType(nodes[i], &t));
    cr_assert_eq(t, want[i], "node %d: type %d", i, (int)t);
    size_t k = 0;
    CK(cudaGraphNodeGetDependencies(nodes[i], NULL, NULL, &k));
    cr_assert_eq(k, i ? 1u : 0u);
    if (i) {
      cudaGraphNode_t dep;
      k = 1;
      CK(cudaGraphNodeGetDependencies(nodes[i], &dep, NULL, &k));
      cr_assert_eq(dep, nodes[i - 1]);
    }
    CK(cudaGraphNodeGetDependentNodes(nodes[i], NULL, NULL, &k));
    cr_assert_eq(k, i < 3 ? 1u : 0u);
  }
  cudaGraphNode_t root;
  n = 1;
  CK(cudaGraphGetRootNodes(g, &root, &n));
  cr_assert_eq(n, 1);
  cr_assert_eq(root, nodes[0]);
  CK_ERR(cudaGraphGetNodes(g, nodes, NULL), cudaErrorInvalidValue);
  CK_ERR(cudaGraphNodeGetType((cudaGraphNode_t)h, NULL), cudaErrorInvalidValue);
  (void)cudaGetLastError();
  CK(cudaGraphDestroy(g));
  CK(cudaEventDestroy(ev));
  CK(cudaFreeHost(h));
  CK(cudaFree(d));
  CK(cudaStreamDestroy(s));
}
