/* pg_shim.h: what the shim's files share with each other (not with tracker/ or policy/):
 * initialization state, warnings, and the small helpers interceptors use to describe a call
 * (the op-building ones are in pg_op.h). */
#ifndef PG_SHIM_H
#define PG_SHIM_H

#include <stdbool.h>
#include <stdint.h>
#include <cuda.h>
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
 * the scan's candidate words (words[0, nwords): pg_kparams_candidates, when kp has parameters)
 * or from kp and the argument array, then fwd(fwd_ctx), which returns the API's status (0:
 * success), between the decisions. Returns that status. */
int pg_shim_launch_op(const char *api, bool ptsz, const void *func, const pg_kparams_t *kp,
                      const uintptr_t *words, size_t nwords, void **args, cudaStream_t s,
                      const pg_stack_site_t *site, int (*fwd)(void *), void *fwd_ctx);

/* The describe callbacks of the launch interceptors (pg_launch.c): a kernel's parameter layout
 * and its name, from cudaFuncGetParamInfo (a function of the runtime's; false while an error of
 * the application's is pending, which asking would clear) or cuFuncGetParamInfo (a CUfunction). */
bool pg_rt_describe_kernel(const void *func, pg_kparams_t *kp);
bool pg_cu_describe_kernel(const void *func, pg_kparams_t *kp);

/* The body of a kernel-launch interceptor in either API layer. `direct` is the real launch as
 * an expression of the interceptor's own arguments (its status: 0 on success); fwd(&ctx) makes
 * the same call from a ctx_type built from the trailing initializer, only for a launch that
 * goes to pg_shim_launch_op. Forwarded untracked when `untracked` holds or tracking is off.
 * Else func's parameter layout (cached; asked with describe on first sight) and the scan of
 * its words (pg_kparams_candidates), which is the quick reject: a launch none of whose words
 * may point into pinned memory is forwarded straight away, capturing nothing, checking nothing,
 * recording nothing; only the legacy default stream's implicit ordering is told core. Any other
 * launch goes to pg_shim_launch_op with the candidates found and the interceptor's call site. A
 * macro, so that the site is the interceptor's own frame; it returns from the interceptor. */
#define PG_LAUNCH_BODY(ret, untracked, api, ptsz, func, describe, args, s, direct, fwd,       \
                       ctx_type, ...)                                                       \
  do {                                                                                      \
    if ((untracked) || !pg_shim_start_tracking()) return (ret)(direct);                     \
    pg_reentry_t g_ = pg_shim_enter();                                                      \
    const void *f_ = (func); /* NULL: a handle we never saw made */                         \
    const pg_kparams_t *kp_ = f_ ? pg_kparams_get(f_, describe) : NULL;                     \
    uintptr_t words_[PG_OP_MAX_SPANS];                                                      \
    size_t nwords_ = 0;                                                                     \
    int err_;                                                                               \
    if (__builtin_expect(kp_ && kp_->nparams > 0, 1) &&                                     \
        __builtin_expect((nwords_ = pg_kparams_candidates(kp_, args, words_,                \
                                                          PG_OP_MAX_SPANS)) == 0,           \
                         1)) {                                                              \
      err_ = (int)(direct);                                                                 \
      if (err_ == 0) pg_untracked_op((s), (ptsz)); /* the legacy stream's order */      \
    } else {                                                                                \
      pg_stack_site_t site_;                                                                \
      pg_stack_site_inline(&site_);                                                         \
      ctx_type ctx_ = __VA_ARGS__;                                                          \
      err_ = pg_shim_launch_op(api, ptsz, f_, kp_, words_, nwords_, args, s, &site_, fwd,    \
                               &ctx_);                                                      \
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

/* CUDA 13's cuCtxSynchronize_v2: a device sync (pg_shim_host_sync) of ctx's device, with ctx
 * made current around call(ctx) (NULL: the current context). Returns call's status. */
int pg_shim_ctx_sync(void *ctx, int (*call)(cudaStream_t ctx));

/* ---- stream memory operations (pg_memops.c) -------------------------------------------------- */
/* The pages of the flag word at addr (n bytes) are never guarded (once tracking runs). */
void pg_shim_never_guard(CUdeviceptr addr, size_t n);
void pg_shim_never_guard_batch(unsigned count, const CUstreamBatchMemOpParams *ops);
/* A write of value (width bytes) to addr by stream s succeeded: the CPU that sees it is ordered
 * after s's earlier work. For a batch, its last write. */
void pg_shim_flag_written(cudaStream_t s, bool ptsz, CUdeviceptr addr, uint64_t value,
                          unsigned width);
void pg_shim_batch_written(cudaStream_t s, bool ptsz, unsigned count,
                           const CUstreamBatchMemOpParams *ops);

/* ---- the driver's entry points handed out by name (pg_lookup.c) ------------------------------ */
/* What a lookup made from `caller` (a return address) answers for the real function fn: the
 * wrapper pinguard defines for it, or fn itself (for pinguard's own lookups, the driver's, and
 * the interposed runtime's: the track-once rule). */
void *pg_lookup_answer(void *fn, const void *caller);

/* ---- host functions, capture and graphs: what both API layers do (pg_order.c) ------------- */
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


/* After a capture's end call returned err (either layer): its ops go to *graph, or go. Returns
 * err. */
int pg_shim_capture_ended(cudaStream_t resolved, int err, cudaGraph_t *graph);

/* Before a launch of exec on the resolved stream s by `api`: pg_on_graph_launch_begin. */
void pg_shim_graph_launch_check(cudaGraphExec_t exec, cudaStream_t s, const char *api,
                                const pg_stack_t *st);

/* After an instantiation returned err: *exec runs graph's captured ops. Returns err. */
int pg_shim_graph_instantiated(int err, cudaGraphExec_t *exec, cudaGraph_t graph);


#endif /* PG_SHIM_H */
