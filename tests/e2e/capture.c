/* Intent: stream capture and graph launches. A captured copy does not run when captured, but at
 * each launch of its graph: pinguard checks it at each launch, against what is in flight then,
 * and never at capture time.
 *   capture bug|fixed         a device->host copy into a pinned buffer is in flight on stream A
 *                             while stream B captures a host->device copy from it. fixed: A is
 *                             synchronized before the launch, so nothing races (no report, in
 *                             particular none at capture time). bug: the graph is launched while
 *                             A's copy is still in flight: audit reports the conflict at the
 *                             launch, enforce waits for A's copy first.
 *   capture bug|fixed late    the same, with A's copy started after the capture ended: only the
 *                             launch can see the race.
 *   capture bug|fixed write   A's device->host copy and the graph's captured device->host copy
 *                             write the same buffer: enforce makes the graph's bytes the last
 *                             ("the buffer holds the graph's bytes").
 *   capture bug|fixed two     one graph that writes the buffer, launched on A and on B; fixed
 *                             orders B's launch after A's with an event.
 * Each ends with "capture succeeded and the graph replayed". */
// A captured copy is checked at each launch of its graph, against what is in flight then, never
// when captured (the fixed twins capture while a conflicting copy is in flight, and synchronize
// it before the launch). Audit reports a launch that races; enforce waits first.
// SCENARIO: capture device-access-conflict STDOUT "capture succeeded and the graph replayed"
//   ENV SIMCUDA_LATENCY_US=20000
// SCENARIO: capture.${how} device-access-conflict ARGS ${how}
//   STDOUT "capture succeeded and the graph replayed" ENV SIMCUDA_LATENCY_US=20000
//   FOR how IN late write two
// Enforce waits for the copy in flight before the graph's copy of the same bytes runs.
// CASE: capture.write.enforce_data MODE enforce EXPECT device-access-conflict ARGS bug write
//   STDOUT "the buffer holds the graph's bytes" ENV SIMCUDA_LATENCY_US=20000

#include "e2e.h"

enum { OLD = 0x11, GRAPH = 0x22 };

int main(int argc, char **argv) {
  int bug = e2e_is_bug(argc, argv);
  const char *how = argc > 2 ? argv[2] : "";
  int late = strcmp(how, "late") == 0, write = strcmp(how, "write") == 0;
  int two = strcmp(how, "two") == 0;
  unsigned char *host;
  void *dev_src, *dev_dst;
  cudaStream_t a, b;
  cudaEvent_t done_a;
  CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  CHECK(cudaEventCreateWithFlags(&done_a, cudaEventDisableTiming));
  CHECK(cudaHostAlloc((void **)&host, BUF_BYTES, cudaHostAllocDefault));
  CHECK(cudaMalloc(&dev_src, BUF_BYTES));
  CHECK(cudaMalloc(&dev_dst, BUF_BYTES));
  CHECK(cudaMemset(dev_src, OLD, BUF_BYTES));
  CHECK(cudaMemset(dev_dst, GRAPH, BUF_BYTES));
  CHECK(cudaDeviceSynchronize());

  if (!late && !two) CHECK(cudaMemcpyAsync(host, dev_src, BUF_BYTES, cudaMemcpyDeviceToHost, a));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(b, cudaStreamCaptureModeGlobal));
  if (write || two)
    CHECK(cudaMemcpyAsync(host, dev_dst, BUF_BYTES, cudaMemcpyDeviceToHost, b));
  else
    CHECK(cudaMemcpyAsync(dev_dst, host, BUF_BYTES, cudaMemcpyHostToDevice, b));
  CHECK(cudaStreamEndCapture(b, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  if (late) CHECK(cudaMemcpyAsync(host, dev_src, BUF_BYTES, cudaMemcpyDeviceToHost, a));
  if (two) {
    CHECK(cudaGraphLaunch(exec, a));
    CHECK(cudaEventRecord(done_a, a));
    if (!bug) CHECK(cudaStreamWaitEvent(b, done_a, 0));
  } else if (!bug) {
    CHECK(cudaStreamSynchronize(a));
  }
  CHECK(cudaGraphLaunch(exec, b));
  CHECK(cudaStreamSynchronize(b));
  CHECK(cudaStreamSynchronize(a));
  if (write) {
    int graphs = 0;
    for (unsigned i = 0; i < BUF_BYTES; i++) graphs += host[i] == GRAPH;
    if (graphs == (int)BUF_BYTES) puts("the buffer holds the graph's bytes");
    else printf("the buffer holds %d of the graph's bytes\n", graphs);
  }
  puts("capture succeeded and the graph replayed");

  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaFreeHost(host));
  CHECK(cudaFree(dev_src));
  CHECK(cudaFree(dev_dst));
  CHECK(cudaEventDestroy(done_a));
  CHECK(cudaStreamDestroy(a));
  CHECK(cudaStreamDestroy(b));
  return 0;
}
