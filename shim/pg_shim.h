/* pg_shim.h: what the shim's files share with each other (not with tracker/ or policy/):
 * initialization state, warnings, and the small helpers interceptors use to describe a call
 * (the op-building ones are in pg_op.h). */
#ifndef PG_SHIM_H
#define PG_SHIM_H

#include <stdbool.h>
#include <cuda_runtime_api.h>

#include "pg_engine.h" /* the engine: every event pinguard reacts to */

/* One line on stderr, prefixed "pinguard: WARNING: ". Safe before options are parsed. */
void pg_shim_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Resolves every required hook of the runtime layer; false if one is missing. */
bool pg_resolve_required(void);

/* Warns once per loaded object that carries a statically linked CUDA runtime, whose calls
 * pinguard cannot see. Checks only objects loaded since its last call; no CUDA call. */
void pg_shim_check_static_runtimes(void);

/* Installs the guard-page fault handler (once), keeping the application's handler to chain to. */
void pg_signal_install(bool single_steps); /* single_steps: SIGTRAP too (guard_shared_edges) */

/* Stream 0 means the per-thread default stream in a _ptsz call, the legacy one otherwise. */
static inline cudaStream_t pg_stream_of(cudaStream_t s, bool ptsz) {
  return (ptsz && s == 0) ? cudaStreamPerThread : s;
}

/* Captures the interceptor's caller stack (the application's call site is frame 0). */
#define PG_CAPTURE(st) pg_stack_capture_here(st)
/* Keeps where the op's stack starts (pg_op.h): core captures it from there only if the op
 * touches pinned memory (pg_on_op_begin), while the interceptor runs. Taken inline in the
 * interceptor's own frame, so the stack starts at the application's call site (pinguard's own
 * frame is not in it) and the per-copy path makes no call for it. */
#define PG_CAPTURE_SITE(op) pg_stack_site_inline(&(op)->site)

/* After a successful pinning call (either API layer): the new region, with the application's
 * call site. A macro, so that the stack is captured in the interceptor's own frame. */
#define PG_NOTE_PINNED(p, n, how, flags)                \
  do {                                                  \
    if (pg_shim_start_tracking()) {                     \
      pg_stack_t st_;                                   \
      PG_CAPTURE(&st_);                                 \
      pg_reentry_t g_ = pg_shim_enter();                \
      pg_on_pin((p), (n), (how), (flags), &st_); \
      pg_shim_leave(g_);                                \
    }                                                   \
  } while (0)

/* Unpinning (cudaFreeHost, cuMemFreeHost, and the unregisters): the in-flight check around
 * forward(p), which returns the API's status (0: success). Returns that status. */
int pg_shim_unpin(void *p, bool is_free, const char *api, const pg_stack_t *st,
                  int (*forward)(void *p));

/* Before a host registration (either API layer): what its mapping says (PG_REGION_FLAG_*). */
unsigned pg_shim_register_kind(void *p, size_t n);

/* Says once per function (its describe callback runs once), at verbosity >= 1, that a kernel's
 * launches go unscanned because `query` gave no parameter layout. */
void pg_shim_note_unscanned(const void *func, const char *query);

/* A kernel launch in either API layer that may touch pinned memory, or whose parameters are
 * unknown (kp NULL or kp->nparams <= 0), called inside pinguard (pg_shim_enter): the op from
 * kp and the argument array (words before `first` of kp's word list are known to hold no
 * candidate: pg_kparams_first_candidate), then fwd(fwd_ctx), which returns the API's status (0:
 * success), between the decisions. Returns that status. */
int pg_shim_launch_op(const char *api, bool ptsz, const void *func, const pg_kparams_t *kp,
                      int first, void **args, cudaStream_t s, const pg_stack_site_t *site,
                      int (*fwd)(void *), void *fwd_ctx);

/* The driver layer's describe callback for the launch interceptors (pg_cu_api.c): a CUfunction's
 * parameter layout from cuFuncGetParamInfo, and its name. */
bool pg_cu_describe_kernel(const void *func, pg_kparams_t *kp);

/* The body of a kernel-launch interceptor in either API layer. `direct` is the real launch as
 * an expression of the interceptor's own arguments (its status: 0 on success); fwd(&ctx) makes
 * the same call from a ctx_type built from the trailing initializer, only for a launch that
 * goes to pg_shim_launch_op. Forwarded untracked when `untracked` holds or tracking is off.
 * Else func's parameter layout (cached; asked with describe on first sight) and the quick
 * reject of its words, inline: a launch none of whose words may point into pinned memory is
 * forwarded straight away, capturing nothing, checking nothing, recording nothing; only the
 * legacy default stream's implicit ordering is told core. Any other launch goes to
 * pg_shim_launch_op with the interceptor's call site. A macro, so that the site is the
 * interceptor's own frame; it returns from the interceptor. */
#define PG_LAUNCH_BODY(ret, untracked, api, ptsz, func, describe, args, s, direct, fwd,       \
                       ctx_type, ...)                                                       \
  do {                                                                                      \
    if ((untracked) || !pg_shim_start_tracking()) return (ret)(direct);                     \
    pg_reentry_t g_ = pg_shim_enter();                                                      \
    const void *f_ = (func); /* NULL: a handle we never saw made */                         \
    const pg_kparams_t *kp_ = f_ ? pg_kparams_get(f_, describe) : NULL;                     \
    int first_ = 0;                                                                         \
    int err_;                                                                               \
    if (__builtin_expect(kp_ && kp_->nparams > 0, 1) &&                                     \
        __builtin_expect((first_ = pg_kparams_first_candidate(kp_, args)) == kp_->nwords,   \
                         1)) {                                                              \
      err_ = (int)(direct);                                                                 \
      if (err_ == 0 && !(ptsz) && (s) == 0) pg_on_untracked_op(0); /* legacy stream */  \
    } else {                                                                                \
      pg_stack_site_t site_;                                                                \
      pg_stack_site_inline(&site_);                                                         \
      ctx_type ctx_ = __VA_ARGS__;                                                          \
      err_ = pg_shim_launch_op(api, ptsz, f_, kp_, first_, args, s, &site_, fwd, &ctx_);    \
    }                                                                                       \
    pg_shim_leave(g_);                                                                      \
    return (ret)err_;                                                                       \
  } while (0)

/* Forwards (`call`: a cudaError_t or CUresult expression, 0 on success), then runs `on_success`
 * under the reentrancy guard when tracking is on: how ordering and completion calls tell core
 * what the host now knows. */
#define PG_AFTER_SUCCESS(call, on_success)                         \
  __extension__({                                                  \
    __typeof__(call) err_ = (call);                                \
    if (err_ == 0 && pg_shim_start_tracking()) {                   \
      pg_reentry_t g_ = pg_shim_enter();                           \
      on_success;                                                  \
      pg_shim_leave(g_);                                           \
    }                                                              \
    err_;                                                          \
  })

/* A host synchronization in either API layer (a stream's, or with device, the current
 * device's): what the host will know is fixed before call(s) and learned after it, if it
 * returned 0. Returns call's status. */
int pg_shim_host_sync(cudaStream_t s, cudaStream_t resolved, bool device,
                      int (*call)(cudaStream_t));

/* ---- host functions, capture and graphs: what both API layers do (pg_cuda_sync.c) ---------- */
/* One enqueue of a host function (cudaLaunchHostFunc, cuLaunchHostFunc) or of a stream callback
 * (cudaStreamAddCallback). The interceptor fills in its real enqueue and the application's
 * arguments; pg_shim_enqueue_hostfn may put a trampoline in fn or cb and its record in arg, then
 * calls real(e), which enqueues whichever of e->fn and e->cb is set, with e->arg, on e->stream
 * and returns the API's status (0: success). */
typedef struct pg_hostfn_enqueue {
  int (*real)(const struct pg_hostfn_enqueue *e);
  cudaStream_t stream; /* as the application passed it */
  unsigned flags;      /* cudaStreamAddCallback's */
  cudaHostFn_t fn;
  cudaStreamCallback_t cb;
  void *arg;
} pg_hostfn_enqueue_t;

/* Enqueues e at a known position in its stream (resolved: e->stream as pg_stream_of gives it),
 * so that the host function's CPU accesses are judged by stream order. Returns real's status. */
int pg_shim_enqueue_hostfn(pg_hostfn_enqueue_t *e, cudaStream_t resolved);

/* The interceptor of a host-function launch, name(stream, fn, user), in both API layers:
 * cudaLaunchHostFunc and cuLaunchHostFunc take the same types (a CUstream is a cudaStream_t, a
 * CUhostFn a cudaHostFn_t). ret is the API's status type, forward its PG_FORWARD macro. */
#define PG_HOSTFN_INTERCEPTOR(ret, forward, name, ptsz)                                       \
  static int real_##name(const pg_hostfn_enqueue_t *e) {                                      \
    return forward(name, e->stream, e->fn, e->arg);                                           \
  }                                                                                           \
  PG_INTERCEPT(ret, name, cudaStream_t s, cudaHostFn_t fn, void *user) {                      \
    pg_hostfn_enqueue_t e = {.real = real_##name, .stream = s, .fn = fn, .arg = user};        \
    return (ret)pg_shim_enqueue_hostfn(&e, pg_stream_of(s, ptsz));                            \
  }

/* After a capture's end call returned err (either layer): its ops go to *graph, or go. Returns
 * err. */
int pg_shim_capture_ended(cudaStream_t resolved, int err, cudaGraph_t *graph);

/* Before a launch of exec on the resolved stream s by `api`: pg_on_graph_launch_begin. */
void pg_shim_graph_launch_check(cudaGraphExec_t exec, cudaStream_t s, const char *api,
                                const pg_stack_t *st);

/* After an instantiation returned err: *exec runs graph's captured ops. Returns err. */
int pg_shim_graph_instantiated(int err, cudaGraphExec_t *exec, cudaGraph_t graph);

/* The capture and graph interceptors of both API layers, each defined once: ret is the layer's
 * status type, forward its PG_FORWARD macro. The driver's functions take the runtime's types (a
 * CUgraph is a cudaGraph_t, a CUgraphExec a cudaGraphExec_t), but for the capture mode. */
#define PG_BEGIN_CAPTURE_INTERCEPTOR(ret, forward, name, ptsz, mode_t)                        \
  PG_INTERCEPT(ret, name, cudaStream_t s, mode_t mode) {                                      \
    return PG_AFTER_SUCCESS(forward(name, s, mode),                                           \
                            pg_on_capture_begin(pg_stream_of(s, ptsz)));                  \
  }
#define PG_END_CAPTURE_INTERCEPTOR(ret, forward, name, ptsz)                                  \
  PG_INTERCEPT(ret, name, cudaStream_t s, cudaGraph_t *graph) {                               \
    return (ret)pg_shim_capture_ended(pg_stream_of(s, ptsz), forward(name, s, graph), graph); \
  }
#define PG_INSTANTIATE_INTERCEPTOR(ret, forward, name)                                        \
  PG_INTERCEPT(ret, name, cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long flags) { \
    return (ret)pg_shim_graph_instantiated(forward(name, exec, graph, flags), exec, graph);   \
  }
/* On success the ops captured into the graph become in flight on its launch stream, launched
 * from the interceptor's call site. */
#define PG_GRAPH_LAUNCH_INTERCEPTOR(ret, forward, name, ptsz)                                 \
  PG_INTERCEPT(ret, name, cudaGraphExec_t exec, cudaStream_t s) {                             \
    pg_stack_t st_ = {0};                                                                     \
    if (pg_shim_start_tracking()) {                                                           \
      PG_CAPTURE(&st_);                                                                       \
      pg_shim_graph_launch_check(exec, pg_stream_of(s, ptsz), #name, &st_);                   \
    }                                                                                         \
    return PG_AFTER_SUCCESS(forward(name, exec, s),                                           \
                            pg_on_graph_launch_end(exec, pg_stream_of(s, ptsz), &st_));     \
  }
#define PG_GRAPH_EXEC_DESTROY_INTERCEPTOR(ret, forward, name)                                 \
  PG_INTERCEPT(ret, name, cudaGraphExec_t exec) {                                             \
    return PG_AFTER_SUCCESS(forward(name, exec), pg_on_graph_exec_destroy(exec));       \
  }

#endif /* PG_SHIM_H */
