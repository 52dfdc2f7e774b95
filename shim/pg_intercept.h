/* pg_intercept.h: how the shim defines an interposed entry point and reaches the real one.
 *
 * How to add an interceptor (one hook row, one body, one test):
 *   1. The hook table: add `PG_HOOK(cudart, name, 0)` to pg_hooks.inc, and a row for its _ptsz
 *      twin if the runtime has one (declare the twin below with PG_DECLARE_PTSZ if the CUDA
 *      header does not). PG_INTERCEPT does not compile without the row.
 *   2. The body, in the shim file for its concern (copies: pg_cuda_copy.c, launches:
 *      pg_cuda_kernel.c, pinning, ordering and completion: pg_cuda_pinning.c, pg_cuda_sync.c;
 *      the driver's twins: pg_cu_api.c, pg_cu_launch.c, forwarding with PG_FORWARD_CU). Where the
 *      two layers' calls are alike, one body serves both (pg_shim.h: PG_LAUNCH_BODY and the
 *      *_INTERCEPTOR macros).
 *      For an asynchronous operation that touches host memory, with the helpers of pg_op.h:
 *        PG_INTERCEPT(cudaError_t, name, void *dst, const void *src, size_t n, cudaStream_t s) {
 *          if (!pg_shim_start_tracking()) return PG_FORWARD(name, dst, src, n, s);
 *          pg_op_t op;
 *          pg_op_begin(&op, #name, "what it does", s, false);   (true for the _ptsz twin)
 *          pg_op_add_span(&op, src, n, PG_DIR_READ);            (one per host operand)
 *          PG_CAPTURE_SITE(&op);     (after the spans: the compiler then knows they are fresh)
 *          return PG_TRACKED_CALL(&op, PG_FORWARD(name, dst, src, n, s));
 *        }
 *      A macro taking (name, ptsz) gives the plain and _ptsz definitions one body. Any other call
 *      brackets its one engine call (core/pg_engine.h) with pg_shim_enter / pg_shim_leave, so that what
 *      core does is not tracked itself, and forwards with PG_FORWARD (the real function, or
 *      cudaErrorSharedObjectSymbolNotFound when the runtime lacks it). Bodies stay short: the
 *      decisions belong in core/, which has unit tests.
 *   3. The test: a case in tests/e2e (a program run under LD_PRELOAD against tests/simcuda; give
 *      simcuda the entry point if it lacks it), wired in tests/e2e/CMakeLists.txt.
 * Exporting needs nothing more for a cuda* name (libpinguard.map exports cuda*); any other name
 * goes into libpinguard.map and the allow list of tests/e2e/check_exports.sh, which checks that
 * nothing else leaks. A libc call is a `PG_HOOK(libc, name, 0)` row and a PG_IO row in
 * pg_syscalls.c (see there). */
#ifndef PG_INTERCEPT_H
#define PG_INTERCEPT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <cuda_runtime_api.h>

#include "pg_export.h"

/* ---- prototypes the CUDA header only declares in per-thread-default-stream builds ---------- */
#define PG_DECLARE_PTSZ(name) extern __typeof__(name) name##_ptsz
PG_DECLARE_PTSZ(cudaMemcpyAsync);
PG_DECLARE_PTSZ(cudaMemcpy2DAsync);
PG_DECLARE_PTSZ(cudaMemcpy3DAsync);
PG_DECLARE_PTSZ(cudaMemcpyToSymbolAsync);
PG_DECLARE_PTSZ(cudaMemcpyFromSymbolAsync);
PG_DECLARE_PTSZ(cudaLaunchKernel);
PG_DECLARE_PTSZ(cudaLaunchKernelExC);
PG_DECLARE_PTSZ(cudaStreamSynchronize);
PG_DECLARE_PTSZ(cudaStreamQuery);
PG_DECLARE_PTSZ(cudaEventRecord);
PG_DECLARE_PTSZ(cudaEventRecordWithFlags);
PG_DECLARE_PTSZ(cudaStreamWaitEvent);
PG_DECLARE_PTSZ(cudaLaunchHostFunc);
PG_DECLARE_PTSZ(cudaStreamAddCallback);
PG_DECLARE_PTSZ(cudaStreamBeginCapture);
PG_DECLARE_PTSZ(cudaStreamEndCapture);
PG_DECLARE_PTSZ(cudaStreamIsCapturing);
PG_DECLARE_PTSZ(cudaGraphLaunch);

/* The launch path nvcc 13 generates for kernel<<<...>>> (declared in crt/device_functions.h,
 * which only C++ can include). */
extern cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *func);
extern cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void **args,
                                      size_t shmem, cudaStream_t stream);
PG_DECLARE_PTSZ(__cudaLaunchKernel);

/* cudaMemcpyBatchAsync changed ABI between 12.8 (9 arguments, with size_t *failIdx) and 13.0
 * (8 arguments). We export one definition with the 12.8 shape: a 13.0 caller passes the stream
 * where we see `fail_idx` and leaves the 9th argument unset; pg_cuda_copy.c's batch_abi_is_128()
 * says which reading is right, from cudaRuntimeGetVersion at run time (never from the
 * compile-time CUDART_VERSION). */
typedef cudaError_t (*pg_batch_fn_13)(void *const *dsts, const void *const *srcs,
                                      const size_t *sizes, size_t count,
                                      struct cudaMemcpyAttributes *attrs, size_t *attrs_idxs,
                                      size_t num_attrs, cudaStream_t stream);
typedef cudaError_t (*pg_batch_fn_128)(void *const *dsts, const void *const *srcs,
                                       const size_t *sizes, size_t count,
                                       struct cudaMemcpyAttributes *attrs, size_t *attrs_idxs,
                                       size_t num_attrs, size_t *fail_idx, cudaStream_t stream);

/* ---- the hook table (one entry per PG_HOOK row of pg_hooks.inc) ------------------------------ */
/* cuda.h maps cuGetProcAddress to cuGetProcAddress_v2; rows name each variant as exported. */
#ifdef cuGetProcAddress
#undef cuGetProcAddress
#endif
enum pg_hook_id {
#define PG_HOOK(lib, name, required) PG_HOOK_ID_##name,
#include "pg_hooks.inc"
#undef PG_HOOK
  PG_HOOK_COUNT
};

/* The resolved real functions, one lock-free slot per row: NULL until first resolved. */
extern _Atomic(void *) pg_hook_real_fn[PG_HOOK_COUNT];

/* Resolves a row (pg_resolve.c); NULL if the real function cannot be found (for libcudart and
 * libcuda rows a warning is printed once for that name). Never allocates beyond what dlsym
 * does, takes no lock of its own, and refuses an address inside libpinguard.so itself. */
void *pg_real_slow(enum pg_hook_id id);

/* pg_real_slow without the warning: for asking whether a library is there at all. */
void *pg_real_quiet(enum pg_hook_id id);

/* Returns the real function for a row, resolving it on first use. Safe before constructors
 * run, from a sanitizer's start-up and from a signal handler (once resolved: one atomic load). */
static inline void *pg_real(enum pg_hook_id id) {
  void *fn = atomic_load_explicit(&pg_hook_real_fn[id], memory_order_acquire);
  return __builtin_expect(fn != NULL, 1) ? fn : pg_real_slow(id);
}

/* PG_REAL(name) is the real function with its exact prototype (NULL if it does not exist). */
#define PG_REAL(name) ((__typeof__(&name))pg_real(PG_HOOK_ID_##name))

/* Calls the real function, or returns `missing` if it does not exist. */
#define PG_FORWARD_OR(missing, name, ...)                                       \
  __extension__({                                                               \
    __typeof__(&name) real_ = PG_REAL(name);                                    \
    real_ ? real_(__VA_ARGS__) : (missing);                                     \
  })

/* A runtime function: cudaErrorSharedObjectSymbolNotFound if it does not exist (only possible
 * when the process has no libcudart, or one without that entry point). */
#define PG_FORWARD(name, ...) \
  PG_FORWARD_OR(cudaErrorSharedObjectSymbolNotFound, name, ##__VA_ARGS__)

/* A driver function: CUDA_ERROR_NOT_FOUND if it does not exist (where cuda.h is included). */
#define PG_FORWARD_CU(name, ...) PG_FORWARD_OR(CUDA_ERROR_NOT_FOUND, name, ##__VA_ARGS__)

/* PG_WRAPPER(name, decl): records the address of pinguard's own definition of the exported
 * symbol `name` (whose C declaration is `decl`: name itself, or the C name behind an assembler
 * label) in the hidden constant pg_wrapper_<name>, which the hook table picks up (weakly: rows
 * without a wrapper read NULL). The address is taken through a hidden alias, so it is always
 * this object's definition, whatever else the process exports under that name. A wrapper
 * without a PG_HOOK row does not compile. */
#define PG_WRAPPER(name, decl)                                                                \
  _Static_assert(PG_HOOK_ID_##name < PG_HOOK_COUNT, "no PG_HOOK row for " #name);            \
  extern __typeof__(decl) pg_self_##name                                                     \
      __attribute__((copy(decl), alias(#name), visibility("hidden")));                       \
  __attribute__((visibility("hidden"))) const void *const pg_wrapper_##name =                \
      (const void *)&pg_self_##name

/* Defines an exported interceptor of `name` (which needs a PG_HOOK row) and records its
 * address (PG_WRAPPER). Follow it with the body. */
#define PG_INTERCEPT(ret, name, ...)    \
  PG_EXPORT ret name(__VA_ARGS__);      \
  PG_WRAPPER(name, name);               \
  PG_EXPORT ret name(__VA_ARGS__)

/* pinguard's own definition of a row's name (what an application asking the runtime or the
 * driver for an entry point by name should be handed), or NULL when pinguard defines none or
 * the name has no row. By name: a linear search, for cold paths only. */
const void *pg_hook_wrapper_id(enum pg_hook_id id);
const void *pg_hook_wrapper(const char *name);

/* Whether a row is the driver's (lib cuda). */
bool pg_hook_is_driver(enum pg_hook_id id);

/* True if p lies inside this object (libpinguard.so): the resolver refuses such a result. */
bool pg_hook_is_own(const void *p);

/* The runtime's version (e.g. 13000, 12080), asked once through the real
 * cudaRuntimeGetVersion; 0 if unknown. Never called from a constructor. */
int pg_runtime_version(void);

/* ---- state every interceptor consults ------------------------------------------------------ */

/* The calling thread is inside pinguard (pg_shim_enter), and whether tracking started: 1 on,
 * -1 inert for good, 0 not yet (pg_init.c). Read inline by every interceptor. */
extern __thread bool pg_shim_inside;
extern atomic_int pg_shim_tracking_state;

/* Every CUDA interceptor's first call. Starts tracking on the first call that wants it (resolves
 * the required hooks, fills the device operations, starts core: never from a constructor), then
 * says whether this call is tracked: options say audit or enforce, tracking started, and the
 * calling thread is not already inside pinguard (reentrancy). Inline once tracking is on
 * (tracking_state becomes 1 only after initialization was seen complete, which it then stays). */
bool pg_shim_start_tracking_slow(void);
static inline bool pg_shim_start_tracking(void) {
  if (pg_shim_inside) return false;
  if (__builtin_expect(
          atomic_load_explicit(&pg_shim_tracking_state, memory_order_acquire) == 1, 1))
    return true;
  return pg_shim_start_tracking_slow();
}

/* True only once tracking has started (never starts it): for the libc interposers, which run
 * in every process and must cost nothing where CUDA is never used. */
bool pg_shim_tracking(void);

/* The thread-local reentrancy token (nothing to do with guard pages): between pg_shim_enter and
 * pg_shim_leave the thread is inside pinguard, and pinguard's own calls (reports, waits, the
 * events it records) are never tracked. Nests: leave restores what enter found. */
typedef struct pg_reentry { bool was_inside; } pg_reentry_t;
static inline pg_reentry_t pg_shim_enter(void) {
  pg_reentry_t g = {pg_shim_inside};
  pg_shim_inside = true;
  return g;
}
static inline void pg_shim_leave(pg_reentry_t r) { pg_shim_inside = r.was_inside; }

#endif /* PG_INTERCEPT_H */
