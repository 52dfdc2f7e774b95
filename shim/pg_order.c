/* pg_order.c: what the interceptors that order GPU work or tell the host it completed share, in
 * both layers (pg_entry_kinds.h): stream, device and context synchronization, host functions and
 * stream callbacks, capture and graph launches. Each one forwards first and, on success, tells
 * the engine what the host now knows (happens-before); events and stream waits make their one
 * engine call from their interceptors. */
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

/* pg_shim.h. Another context is made current around the call, so that the sync is judged for
 * its device, and the thread's own is put back before returning. The context rides in
 * pg_shim_host_sync's handle argument, which a device sync passes to its call untouched. */
int pg_shim_ctx_sync(void *ctx, int (*call)(cudaStream_t ctx)) {
  CUcontext cur = NULL;
  __typeof__(&cuCtxGetCurrent) get = PG_REAL(cuCtxGetCurrent);
  __typeof__(&cuCtxSetCurrent) set = PG_REAL(cuCtxSetCurrent);
  bool other = ctx && get && set && get(&cur) == CUDA_SUCCESS && cur != (CUcontext)ctx &&
               set((CUcontext)ctx) == CUDA_SUCCESS;
  int r = pg_shim_host_sync((cudaStream_t)ctx, 0, true, call);
  if (other) set(cur);
  return r;
}

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

/* pg_shim.h. A NULL function is forwarded as it is, for the API to refuse. */
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

/* ---- capture and graphs -------------------------------------------------------------------- */

/* pg_shim.h. The capture ends whatever the result; a failed one leaves no graph to replay. */
int pg_shim_capture_ended(cudaStream_t resolved, int err, cudaGraph_t *graph) {
  if (pg_shim_start_tracking()) {
    pg_reentry_t g = pg_shim_enter();
    pg_on_capture_end(resolved, (err == 0 && graph) ? *graph : NULL);
    pg_shim_leave(g);
  }
  return err;
}

/* pg_shim.h */
int pg_shim_graph_instantiated(int err, cudaGraphExec_t *exec, cudaGraph_t graph) {
  if (err == 0 && exec && pg_shim_start_tracking()) {
    pg_reentry_t g = pg_shim_enter();
    pg_on_graph_instantiate(*exec, graph);
    pg_shim_leave(g);
  }
  return err;
}

/* pg_shim.h */
void pg_shim_graph_launch_check(cudaGraphExec_t exec, cudaStream_t s, const char *api,
                                const pg_stack_t *st) {
  pg_reentry_t g = pg_shim_enter();
  pg_on_graph_launch_begin(exec, s, api, st);
  pg_shim_leave(g);
}
