/* pg_cuda_sync.c: interceptors that order GPU work or tell the host it completed: events,
 * stream and device synchronization, stream destruction, capture and graph launches. Each one
 * forwards first and, on success, tells the tracker what the host now knows (happens-before). */
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "pg_intercept.h"
#include "pg_shim.h"

/* ---- streams ------------------------------------------------------------------------------- */
/* What the host will know is fixed before the real call (other threads may enqueue while it
 * blocks) and learned after it. A query that answers cudaSuccess means the same as a sync. */
int pg_shim_host_sync(cudaStream_t s, cudaStream_t resolved, bool device,
                      int (*call)(cudaStream_t)) {
  if (!pg_shim_start_tracking()) return call(s);
  pg_reentry_t g = pg_shim_enter();
  if (device)
    pg_on_device_sync_begin();
  else
    pg_on_sync_begin(resolved);
  int err = call(s);
  pg_on_sync_end(err == 0);
  pg_shim_leave(g);
  return err;
}

#define PG_STREAM_SYNC(name, ptsz)                                                            \
  static int real_##name(cudaStream_t s) { return PG_FORWARD(name, s); }                      \
  PG_INTERCEPT(cudaError_t, name, cudaStream_t s) {                                           \
    return (cudaError_t)pg_shim_host_sync(s, pg_stream_of(s, ptsz), false, real_##name);      \
  }
PG_STREAM_SYNC(cudaStreamSynchronize, false)
PG_STREAM_SYNC(cudaStreamSynchronize_ptsz, true)
PG_STREAM_SYNC(cudaStreamQuery, false)
PG_STREAM_SYNC(cudaStreamQuery_ptsz, true)

static int real_device_sync(cudaStream_t unused) {
  (void)unused;
  return PG_FORWARD(cudaDeviceSynchronize);
}
PG_INTERCEPT(cudaError_t, cudaDeviceSynchronize, void) {
  return (cudaError_t)pg_shim_host_sync(0, 0, true, real_device_sync);
}

PG_INTERCEPT(cudaError_t, cudaStreamDestroy, cudaStream_t s) {
  /* Destroying a stream with work pending is legal: the work still completes. The tracker keeps
   * that work's accesses and forgets only the handle, which the runtime may hand out again. */
  return PG_AFTER_SUCCESS(PG_FORWARD(cudaStreamDestroy, s), pg_on_stream_destroy(s));
}

/* ---- events -------------------------------------------------------------------------------- */
#define PG_EVENT_RECORD(name, ptsz)                                                           \
  PG_INTERCEPT(cudaError_t, name, cudaEvent_t e, cudaStream_t s) {                            \
    return PG_AFTER_SUCCESS(PG_FORWARD(name, e, s),                                           \
                            pg_on_event_record(e, pg_stream_of(s, ptsz)));              \
  }
PG_EVENT_RECORD(cudaEventRecord, false)
PG_EVENT_RECORD(cudaEventRecord_ptsz, true)

#define PG_EVENT_RECORD_FLAGS(name, ptsz)                                                     \
  PG_INTERCEPT(cudaError_t, name, cudaEvent_t e, cudaStream_t s, unsigned int flags) {        \
    return PG_AFTER_SUCCESS(PG_FORWARD(name, e, s, flags),                                    \
                            pg_on_event_record(e, pg_stream_of(s, ptsz)));              \
  }
PG_EVENT_RECORD_FLAGS(cudaEventRecordWithFlags, false)
PG_EVENT_RECORD_FLAGS(cudaEventRecordWithFlags_ptsz, true)

PG_INTERCEPT(cudaError_t, cudaEventDestroy, cudaEvent_t e) {
  return PG_AFTER_SUCCESS(PG_FORWARD(cudaEventDestroy, e), pg_on_event_destroy(e));
}

PG_INTERCEPT(cudaError_t, cudaEventSynchronize, cudaEvent_t e) {
  return PG_AFTER_SUCCESS(PG_FORWARD(cudaEventSynchronize, e), pg_on_event_complete(e));
}

PG_INTERCEPT(cudaError_t, cudaEventQuery, cudaEvent_t e) {
  return PG_AFTER_SUCCESS(PG_FORWARD(cudaEventQuery, e), pg_on_event_complete(e));
}

#define PG_STREAM_WAIT_EVENT(name, ptsz)                                                      \
  PG_INTERCEPT(cudaError_t, name, cudaStream_t s, cudaEvent_t e, unsigned int flags) {        \
    return PG_AFTER_SUCCESS(PG_FORWARD(name, s, e, flags),                                    \
                            pg_on_stream_wait_event(pg_stream_of(s, ptsz), e));         \
  }
PG_STREAM_WAIT_EVENT(cudaStreamWaitEvent, false)
PG_STREAM_WAIT_EVENT(cudaStreamWaitEvent_ptsz, true)

/* Host functions run CPU code in a stream's order: after the work before them, before the work
 * after them. Each is enqueued through a trampoline that tells pinguard, on the thread running
 * it, where in its stream it stands, so that its CPU accesses are judged by stream order (a
 * host function may touch pages a later copy on its stream will write; enforce must never wait
 * there, for that copy waits behind it). One record per call, freed by the trampoline. A host
 * function captured into a graph runs at each launch of it, at no position known at capture
 * time: its record is kept for the life of the process and has no position, which still keeps
 * every wait and CUDA call out of it. */
typedef struct hostfn_call {
  cudaHostFn_t fn;                /* cudaLaunchHostFunc */
  cudaStreamCallback_t callback;  /* or cudaStreamAddCallback */
  void *user;
  pg_hostfn_pos_t pos;
  _Atomic bool ready;             /* pos is filled (the trampoline may start before that) */
  bool captured;                  /* runs at each graph launch: never freed */
} hostfn_call_t;

static void run_hostfn(hostfn_call_t *c, cudaStream_t s, cudaError_t status) {
  while (!atomic_load_explicit(&c->ready, memory_order_acquire)) sched_yield();
  pg_reentry_t g = pg_shim_enter();
  pg_on_hostfn_enter(&c->pos);
  pg_shim_leave(g);
  if (c->fn) c->fn(c->user);
  else c->callback(s, status, c->user);
  g = pg_shim_enter();
  pg_on_hostfn_leave();
  pg_shim_leave(g);
  if (!c->captured) free(c);
}

static void CUDART_CB hostfn_trampoline(void *arg) { run_hostfn(arg, NULL, cudaSuccess); }
static void CUDART_CB callback_trampoline(cudaStream_t s, cudaError_t status, void *arg) {
  run_hostfn(arg, s, status);
}

static cudaError_t do_enqueue(void *arg) {
  const pg_hostfn_enqueue_t *e = arg;
  return (cudaError_t)e->real(e);
}

/* pg_shim.h; the driver's cuLaunchHostFunc too (pg_cu_launch.c). A NULL function is forwarded
 * as it is, for the API to refuse. */
int pg_shim_enqueue_hostfn(pg_hostfn_enqueue_t *e, cudaStream_t resolved) {
  hostfn_call_t *c;
  if ((!e->fn && !e->cb) || !pg_shim_start_tracking() || !(c = calloc(1, sizeof *c)))
    return e->real(e);
  *c = (hostfn_call_t){.fn = e->fn, .callback = e->cb, .user = e->arg};
  if (e->fn) e->fn = hostfn_trampoline;
  else e->cb = callback_trampoline;
  e->arg = c;
  if (pg_engine_capturing(resolved)) {
    c->captured = true;
    atomic_store_explicit(&c->ready, true, memory_order_release);
    int err = e->real(e);
    if (err != 0) free(c);
    return err;
  }
  pg_reentry_t g = pg_shim_enter();
  int err = pg_on_hostfn_enqueue(resolved, do_enqueue, e, &c->pos);
  pg_shim_leave(g);
  if (err != 0) {
    free(c);
    return err;
  }
  atomic_store_explicit(&c->ready, true, memory_order_release);
  return err;
}

PG_HOSTFN_INTERCEPTOR(cudaError_t, PG_FORWARD, cudaLaunchHostFunc, false)
PG_HOSTFN_INTERCEPTOR(cudaError_t, PG_FORWARD, cudaLaunchHostFunc_ptsz, true)

#define PG_ADD_CALLBACK(name, ptsz)                                                           \
  static int real_##name(const pg_hostfn_enqueue_t *e) {                                      \
    return PG_FORWARD(name, e->stream, e->cb, e->arg, e->flags);                              \
  }                                                                                           \
  PG_INTERCEPT(cudaError_t, name, cudaStream_t s, cudaStreamCallback_t cb, void *user,        \
               unsigned int flags) {                                                          \
    pg_hostfn_enqueue_t e = {.real = real_##name, .stream = s, .flags = flags, .cb = cb,      \
                             .arg = user};                                                    \
    return (cudaError_t)pg_shim_enqueue_hostfn(&e, pg_stream_of(s, ptsz));                    \
  }
PG_ADD_CALLBACK(cudaStreamAddCallback, false)
PG_ADD_CALLBACK(cudaStreamAddCallback_ptsz, true)

/* ---- capture and graphs -------------------------------------------------------------------- */
PG_BEGIN_CAPTURE_INTERCEPTOR(cudaError_t, PG_FORWARD, cudaStreamBeginCapture, false,
                             enum cudaStreamCaptureMode)
PG_BEGIN_CAPTURE_INTERCEPTOR(cudaError_t, PG_FORWARD, cudaStreamBeginCapture_ptsz, true,
                             enum cudaStreamCaptureMode)

/* pg_shim.h. The capture ends whatever the result; a failed one leaves no graph to replay. */
int pg_shim_capture_ended(cudaStream_t resolved, int err, cudaGraph_t *graph) {
  if (pg_shim_start_tracking()) {
    pg_reentry_t g = pg_shim_enter();
    pg_on_capture_end(resolved, (err == 0 && graph) ? *graph : NULL);
    pg_shim_leave(g);
  }
  return err;
}
PG_END_CAPTURE_INTERCEPTOR(cudaError_t, PG_FORWARD, cudaStreamEndCapture, false)
PG_END_CAPTURE_INTERCEPTOR(cudaError_t, PG_FORWARD, cudaStreamEndCapture_ptsz, true)

/* Observed only: the decision layer asks the real function itself when it must know. */
#define PG_IS_CAPTURING(name)                                                                 \
  PG_INTERCEPT(cudaError_t, name, cudaStream_t s, enum cudaStreamCaptureStatus *status) {     \
    return PG_FORWARD(name, s, status);                                                       \
  }
PG_IS_CAPTURING(cudaStreamIsCapturing)
PG_IS_CAPTURING(cudaStreamIsCapturing_ptsz)

/* pg_shim.h */
int pg_shim_graph_instantiated(int err, cudaGraphExec_t *exec, cudaGraph_t graph) {
  if (err == 0 && exec && pg_shim_start_tracking()) {
    pg_reentry_t g = pg_shim_enter();
    pg_on_graph_instantiate(*exec, graph);
    pg_shim_leave(g);
  }
  return err;
}
PG_INSTANTIATE_INTERCEPTOR(cudaError_t, PG_FORWARD, cudaGraphInstantiate)
PG_INSTANTIATE_INTERCEPTOR(cudaError_t, PG_FORWARD, cudaGraphInstantiateWithFlags)

/* pg_shim.h */
void pg_shim_graph_launch_check(cudaGraphExec_t exec, cudaStream_t s, const char *api,
                                const pg_stack_t *st) {
  pg_reentry_t g = pg_shim_enter();
  pg_on_graph_launch_begin(exec, s, api, st);
  pg_shim_leave(g);
}

PG_GRAPH_LAUNCH_INTERCEPTOR(cudaError_t, PG_FORWARD, cudaGraphLaunch, false)
PG_GRAPH_LAUNCH_INTERCEPTOR(cudaError_t, PG_FORWARD, cudaGraphLaunch_ptsz, true)

PG_GRAPH_EXEC_DESTROY_INTERCEPTOR(cudaError_t, PG_FORWARD, cudaGraphExecDestroy)
