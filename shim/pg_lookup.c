/* pg_lookup.c: getting in front of the driver. Clients that use the driver API rarely call a
 * cu* symbol by name: they ask for each function's address, in one of three ways, and pinguard
 * answers each with its own wrapper for exactly the variant the driver returned:
 *   cuGetProcAddress / cuGetProcAddress_v2 (every runtime, cuda-python): the real one is asked
 *     first; when its answer is the real address of a function pinguard wraps (a pg_hooks.inc
 *     row of lib cuda with a wrapper), the wrapper is handed back instead. The version and the
 *     flags (per-thread default stream or not) have chosen that variant already, so nothing
 *     here guesses names or ABIs;
 *   cudaGetDriverEntryPoint / ...ByVersion (PyTorch): the same, through the runtime;
 *   dlsym(handle, "cu...") (CuPy, Triton, and how cuda-python finds cuGetProcAddress_v2): the
 *     real dlsym answers, and its answer is swapped the same way (pg_dlsym.S sends only names of
 *     the driver's shape here).
 * Everything else passes untouched, and nothing is swapped for three callers:
 *   - pinguard itself (its resolver must find the real functions);
 *   - the driver looking itself up;
 *   - the dynamic runtime whose cuda* symbols pinguard interposes. Its driver calls are what
 *     pinguard's runtime wrappers already track: handing it wrappers would track each copy
 *     twice. This is the track-once rule: a runtime call and the driver call it makes underneath
 *     are one access. A runtime pinguard does not interpose (a static one, linked into a
 *     program or a Python extension) gets the wrappers, and its traffic is tracked there.
 * The swap looks up a small table, filled once; it never allocates. */
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>

#include "pg_intercept.h"
#include "pg_shim.h"

/* ---- whose call is it ------------------------------------------------------------------------ */
/* The load base of the runtime pinguard interposes, where its real cuda* functions live; 0 while
 * the process has no dynamic runtime (asked again later: one may be dlopen()ed). Quiet: a
 * process that uses only the driver has none, and that is no fault. */
static uintptr_t interposed_runtime(void) {
  static _Atomic uintptr_t cached;
  uintptr_t base = atomic_load_explicit(&cached, memory_order_relaxed);
  if (base) return base;
  Dl_info info;
  void *fn = pg_real_quiet(PG_HOOK_ID_cudaRuntimeGetVersion);
  base = fn && dladdr(fn, &info) ? (uintptr_t)info.dli_fbase : 0;
  atomic_store_explicit(&cached, base, memory_order_relaxed);
  return base;
}

/* Whether a lookup made from `caller` (a return address) may be handed pinguard's wrappers. */
static bool swaps_for(const void *caller) {
  static const char *const driver[] = {"libcuda.so"};
  if (!caller || pg_hook_is_own(caller)) return false;
  Dl_info info;
  if (!dladdr(caller, &info)) return true;
  uintptr_t runtime = interposed_runtime();
  if (runtime && (uintptr_t)info.dli_fbase == runtime) return false;
  return !(info.dli_fname && pg_module_named(info.dli_fname, driver, 1));
}

/* ---- the swap -------------------------------------------------------------------------------- */
/* Rows of lib cuda that have a wrapper, with their real addresses once resolved. */
enum { MAX_WRAPPED = PG_HOOK_COUNT };
static const enum pg_hook_id *wrapped_rows(unsigned *n) {
  static enum pg_hook_id rows[MAX_WRAPPED];
  static atomic_uint nrows = UINT32_MAX; /* UINT32_MAX: not listed yet */
  unsigned k = atomic_load_explicit(&nrows, memory_order_acquire);
  if (k == UINT32_MAX) {
    k = 0;
    for (int i = 0; i < PG_HOOK_COUNT; i++)
      if (pg_hook_is_driver((enum pg_hook_id)i) && pg_hook_wrapper_id((enum pg_hook_id)i))
        rows[k++] = (enum pg_hook_id)i;
    atomic_store_explicit(&nrows, k, memory_order_release); /* racing fillers write the same */
  }
  *n = k;
  return rows;
}

/* pinguard's wrapper for a real driver function, or fn itself. */
static void *swap(void *fn) {
  if (!fn) return fn;
  unsigned n;
  const enum pg_hook_id *rows = wrapped_rows(&n);
  for (unsigned i = 0; i < n; i++)
    if (pg_real(rows[i]) == fn) return (void *)pg_hook_wrapper_id(rows[i]);
  return fn;
}

/* ---- dlsym ----------------------------------------------------------------------------------- */
typedef void *(*dlsym_fn)(void *, const char *);
/* Read by pg_dlsym.S. */
__attribute__((visibility("hidden"))) _Atomic(dlsym_fn) pg_real_dlsym;

/* glibc >= 2.34 keeps dlsym in libc with this version node as well as GLIBC_2.34. */
__attribute__((visibility("hidden"))) dlsym_fn pg_dlsym_resolve(void) {
  dlsym_fn fn = atomic_load_explicit(&pg_real_dlsym, memory_order_acquire);
  if (fn) return fn;
  fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  if (!fn) fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  atomic_store_explicit(&pg_real_dlsym, fn, memory_order_release);
  return fn;
}

/* Whether handle is a handle of libpinguard.so itself (whose lookups answer pinguard's own
 * definitions, as any library's handle answers its own). */
static bool handle_is_own(void *handle) {
  if (handle == RTLD_DEFAULT || handle == RTLD_NEXT) return false;
  void *self = dlopen(NULL, RTLD_LAZY); /* the program's handle: its lookups go global */
  if (self) dlclose(self);
  if (handle == self) return false;
  Dl_info info;
  struct link_map *map = NULL;
  if (!dladdr1((void *)&handle_is_own, &info, (void **)&map, RTLD_DL_LINKMAP) || !map)
    return false;
  return handle == (void *)map; /* glibc's handles are link maps */
}

/* A lookup of a name of the driver's shape ("cu" and a capital letter), from pg_dlsym.S. An
 * RTLD_NEXT lookup is answered relative to libpinguard.so rather than the caller: for those
 * names both find the driver's function (or pinguard's wrapper of it), and the swap makes the
 * answer the wrapper either way. */
__attribute__((visibility("hidden"))) void *pg_dlsym_driver(void *handle, const char *name,
                                                            const void *caller) {
  dlsym_fn real = pg_dlsym_resolve();
  if (!real) return NULL;
  void *fn = real(handle, name);
  /* The lookup found pinguard's own definition (RTLD_DEFAULT, or the program's handle: pinguard
   * is first in the global scope). Without pinguard it would have found the next one, or none
   * (no driver, or one loaded RTLD_LOCAL): ask for exactly that, so that dlsym answers NULL where
   * the real one would (dlerror included), and a wrapper only where a driver function exists. */
  if (pg_hook_is_own(fn) && !handle_is_own(handle)) {
    fn = real(RTLD_NEXT, name);
    if (!fn) return NULL;
  }
  return swaps_for(caller) ? swap(fn) : fn;
}

/* ---- cuGetProcAddress and the runtime's entry-point queries ---------------------------------- */
/* pg_shim.h; their interceptors are the entry_lookup kind (pg_entry_kinds.h). */
void *pg_lookup_answer(void *fn, const void *caller) {
  return swaps_for(caller) ? swap(fn) : fn;
}
