/* pg_intercept.h: how the shim defines an interposed entry point and reaches the real one.
 *
 * Every CUDA entry point pinguard interposes is a row of pg_entries.inc, which says how to add
 * one (a row, and a test); pg_entry_kinds.h turns each row into its interceptor. What this header
 * gives them: the hook table (one lazily resolved real function per row of pg_hooks.inc, which
 * takes in every entry row and its twin), PG_REAL and the forwards, PG_INTERCEPT (an exported
 * definition whose address the hook table knows), and the state every interceptor consults
 * first (pg_shim_start_tracking, the reentrancy token).
 *
 * Exporting needs nothing more for a CUDA name (libpinguard.map exports cuda* and cu*;
 * e2e.exports checks that the library exports exactly the table's names). A libc call is a
 * `PG_HOOK(libc, name, 0)` row and a PG_IO row in pg_syscalls.c (see there). */
#ifndef PG_INTERCEPT_H
#define PG_INTERCEPT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <cuda_runtime_api.h>

#include "pg_export.h"

/* cuda.h renames two of the table's names to their newer ABI; the table names each variant as
 * exported, so the renamings go. */
#include <cuda.h>
#undef cuGetProcAddress
#undef cuMemcpyBatchAsync

/* ---- every interposed entry point's declaration, from its row -------------------------------
 * The header's own declaration of a name must agree with its row (else this does not build);
 * the _ptsz twins, which the headers declare only in per-thread builds, get theirs here. */
#define PG_ENTRY(lib, name, twin, kind, ret, T) extern ret name T; PG_DECLARE_##twin(ret, name, T)
#define PG_DECLARE_none(ret, name, T)
#define PG_DECLARE_ptsz(ret, name, T) extern ret name##_ptsz T;
#include "pg_entries.inc"
#undef PG_ENTRY
#undef PG_DECLARE_none
#undef PG_DECLARE_ptsz

/* cudaMemcpyBatchAsync changed ABI between 12.8 (9 arguments, with size_t *failIdx) and 13.0
 * (8 arguments). We export one definition with the 12.8 shape: a 13.0 caller passes the stream
 * where we see `fail_idx` and leaves the 9th argument unset; pg_copy.c's batch_abi_is_128()
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
