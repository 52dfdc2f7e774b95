/* test_events.c: events: create with flags, record (and with flags, and _ptsz), query,
 * synchronize, elapsed time, destroy with a pending record, and cross-stream ordering through
 * cudaStreamWaitEvent; also host functions' place in stream order. */
#include <stdatomic.h>

#include "test_util.h"

static void low_latency(void) { sim_env("50"); }

Test(events, record_query_synchronize, .init = low_latency) {
  cudaStream_t s;
  cudaEvent_t e;
  CK(cudaStreamCreate(&s));
  CK(cudaEventCreate(&e));
  CK(cudaEventQuery(e)); /* never recorded: complete */
  static gate g = GATE_INIT;
  CK(cudaLaunchHostFunc(s, hf_gate_wait, &g));
  CK(cudaEventRecord(e, s));
  CK_ERR(cudaEventQuery(e), cudaErrorNotReady);
  gate_open(&g);
  CK(cudaEventSynchronize(e));
  CK(cudaEventQuery(e));
  CK(cudaEventDestroy(e));
  CK(cudaStreamDestroy(s));
}

Test(events, record_with_flags_and_ptsz, .init = low_latency) {
  cudaEvent_t e;
  CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming | cudaEventBlockingSync));
  static gate g = GATE_INIT;
  CK(cudaLaunchHostFunc_ptsz(0, hf_gate_wait, &g));
  CK(cudaEventRecordWithFlags_ptsz(e, 0, cudaEventRecordDefault));
  CK_ERR(cudaEventQuery(e), cudaErrorNotReady);
  gate_open(&g);
  CK(cudaEventSynchronize(e));
  CK(cudaEventRecordWithFlags(e, cudaStreamPerThread, cudaEventRecordExternal));
  CK(cudaEventRecord_ptsz(e, cudaStreamPerThread));
  CK(cudaEventSynchronize(e));
  CK_ERR(cudaEventRecordWithFlags(e, 0, 0x40), cudaErrorInvalidValue);
  CK_ERR(cudaEventCreateWithFlags(&e, cudaEventInterprocess), cudaErrorInvalidValue);
}

typedef struct flag_check {
  atomic_int flag;
  atomic_int seen;
  gate g;
} flag_check;

static void hf_wait_then_set(void *p) {
  flag_check *f = p;
  gate_wait(&f->g);
  atomic_store(&f->flag, 1);
}

static void hf_read_flag(void *p) {
  flag_check *f = p;
  atomic_store(&f->seen, atomic_load(&f->flag) + 1);
}

static void *open_from_thread(void *g) {
  /* Correct ordering never depends on this delay; it only gives a broken implementation
   * time to run the dependent op early, so that the test catches it. */
  struct timespec ts = {0, 100 * 1000 * 1000};
  nanosleep(&ts, NULL);
  gate_open(g);
  return NULL;
}

Test(events, stream_wait_event_orders_across_streams, .init = low_latency) {
  cudaStream_t a, b;
  cudaEvent_t e;
  CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  static flag_check f = {.g = GATE_INIT};
  CK(cudaLaunchHostFunc(a, hf_wait_then_set, &f));
  CK(cudaEventRecord(e, a));
  CK(cudaStreamWaitEvent(b, e, 0));
  CK(cudaLaunchHostFunc(b, hf_read_flag, &f));
  CK_ERR(cudaStreamQuery(b), cudaErrorNotReady); /* b is held by a's gated work */
  pthread_t t;
  pthread_create(&t, NULL, open_from_thread, &f.g);
  CK(cudaStreamSynchronize(b));
  pthread_join(t, NULL);
  cr_assert_eq(atomic_load(&f.seen), 2, "b's op ran before the event it waited for");
}

Test(events, wait_refers_to_the_record_at_call_time, .init = low_latency) {
  cudaStream_t a, b;
  cudaEvent_t e;
  CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  CK(cudaEventCreate(&e));
  /* Waiting on a never-recorded event is a no-op. */
  CK(cudaStreamWaitEvent(b, e, 0));
  CK(cudaStreamSynchronize(b));
  /* Re-recording after the wait was queued does not hold b: b waits only for the record that
   * was current when cudaStreamWaitEvent was called (already complete here). */
  CK(cudaEventRecord(e, a));
  CK(cudaEventSynchronize(e));
  CK(cudaStreamWaitEvent(b, e, 0));
  static gate g = GATE_INIT;
  CK(cudaLaunchHostFunc(a, hf_gate_wait, &g));
  CK(cudaEventRecord(e, a));
  CK(cudaStreamSynchronize(b));
  gate_open(&g);
  CK(cudaStreamSynchronize(a));
  cr_assert_eq(g.timed_out, 0, "b waited for a record queued after its cudaStreamWaitEvent");
}

static void hf_sleep_20ms(void *p) {
  (void)p;
  struct timespec ts = {0, 20 * 1000 * 1000};
  nanosleep(&ts, NULL); /* simulated work: the point here is that time passes */
}

Test(events, elapsed_time, .init = low_latency) {
  cudaStream_t s;
  cudaEvent_t start, end, notiming, never;
  CK(cudaStreamCreate(&s));
  CK(cudaEventCreate(&start));
  CK(cudaEventCreate(&end));
  CK(cudaEventCreate(&never));
  CK(cudaEventCreateWithFlags(&notiming, cudaEventDisableTiming));
  CK(cudaEventRecord(start, s));
  CK(cudaLaunchHostFunc(s, hf_sleep_20ms, NULL));
  CK(cudaEventRecord(end, s));
  CK(cudaEventRecord(notiming, s));
  CK(cudaEventSynchronize(end));
  float ms = -1;
  CK(cudaEventElapsedTime(&ms, start, end));
  cr_assert_geq(ms, 0.0f);
  CK_ERR(cudaEventElapsedTime(&ms, start, notiming), cudaErrorInvalidResourceHandle);
  CK_ERR(cudaEventElapsedTime(&ms, start, never), cudaErrorInvalidResourceHandle);
  static gate g = GATE_INIT;
  CK(cudaLaunchHostFunc(s, hf_gate_wait, &g));
  CK(cudaEventRecord(end, s));
  CK_ERR(cudaEventElapsedTime(&ms, start, end), cudaErrorNotReady);
  gate_open(&g);
  CK(cudaStreamSynchronize(s));
}

Test(events, destroy_with_pending_record, .init = low_latency) {
  cudaStream_t s;
  cudaEvent_t e;
  CK(cudaStreamCreate(&s));
  CK(cudaEventCreate(&e));
  static gate g = GATE_INIT;
  CK(cudaLaunchHostFunc(s, hf_gate_wait, &g));
  CK(cudaEventRecord(e, s));
  CK(cudaEventDestroy(e)); /* allowed: resources go when the record completes */
  gate_open(&g);
  CK(cudaStreamSynchronize(s));
  CK_ERR(cudaEventCreate(NULL), cudaErrorInvalidValue);
}

/* ---- host functions --------------------------------------------------------------------- */
typedef struct hf_state {
  unsigned char *dev_copy_seen;
  unsigned char *host;
  int value;
} hf_state;

static void hf_capture_value(void *p) {
  hf_state *st = p;
  st->value = st->host[0];
}

Test(events, host_function_runs_in_stream_order, .init = low_latency) {
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  unsigned char *host, *dev;
  CK(cudaHostAlloc((void **)&host, 64, 0));
  CK(cudaMalloc((void **)&dev, 64));
  CK(cudaMemset(dev, 0x42, 64));
  CK(cudaDeviceSynchronize());
  host[0] = 0;
  static hf_state st;
  st.host = host;
  st.value = -1;
  CK(cudaMemcpyAsync(host, dev, 64, cudaMemcpyDeviceToHost, s));
  CK(cudaLaunchHostFunc(s, hf_capture_value, &st)); /* runs after the copy completed */
  CK(cudaStreamSynchronize(s));
  cr_assert_eq(st.value, 0x42);
  CK_ERR(cudaLaunchHostFunc(s, NULL, NULL), cudaErrorInvalidValue);
}

typedef struct cb_seen {
  cudaStream_t stream;
  cudaError_t status;
  int calls;
} cb_seen;

static void CUDART_CB stream_callback(cudaStream_t stream, cudaError_t status, void *p) {
  cb_seen *c = p;
  c->stream = stream;
  c->status = status;
  c->calls++;
}

Test(events, stream_callback, .init = low_latency) {
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  static cb_seen c;
  CK(cudaStreamAddCallback(s, stream_callback, &c, 0));
  CK(cudaStreamAddCallback_ptsz(0, stream_callback, &c, 0));
  CK(cudaStreamSynchronize(s));
  CK(cudaStreamSynchronize(cudaStreamPerThread));
  cr_assert_eq(c.calls, 2);
  cr_assert_eq(c.status, cudaSuccess);
  CK_ERR(cudaStreamAddCallback(s, stream_callback, &c, 1), cudaErrorInvalidValue);
}
