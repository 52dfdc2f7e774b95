/* pg_resolve.c: the hook table (pg_hooks.inc) and its one resolver, which finds the real
 * function behind each row lazily, by the row's library:
 *   cudart: dlvsym(RTLD_NEXT, name, "libcudart.so.<major>"), then dlsym(RTLD_NEXT, name), then
 *           dlopen(RTLD_NOLOAD) of an already-loaded libcudart;
 *   cuda:   dlsym(RTLD_NEXT, name), then a RTLD_NOLOAD dlopen of libcuda.so.1 (pinguard's
 *           dlsym, pg_dlsym.S, never swaps in a wrapper for pinguard's own lookups);
 *   libc:   dlsym(RTLD_NEXT, name).
 * For every library, a result that lies inside libpinguard.so itself is our own wrapper and is
 * refused. The libc rows are resolved from interposers that may run before any constructor,
 * from a sanitizer's start-up, or from the fault handler (sigaction): this file allocates
 * nothing beyond what dlsym itself does, takes no lock of its own (each slot is an atomic
 * pointer; racing resolvers find the same address, the last store wins harmlessly), and is
 * built without sanitizer instrumentation. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "pg_intercept.h"
#include "pg_shim.h"

enum pg_lib { PG_LIB_cudart, PG_LIB_cuda, PG_LIB_libc };

/* pinguard's own wrappers: each PG_WRAPPER defines one; a row without one reads NULL. */
#define PG_HOOK(lib, n, req) \
  extern const void *const pg_wrapper_##n __attribute__((weak, visibility("hidden")));
#include "pg_hooks.inc"
#undef PG_HOOK

typedef struct pg_hook {
  const char *name;
  unsigned char lib;            /* enum pg_lib */
  bool required;
  const void *const *wrapper;   /* &pg_wrapper_<name>, NULL when pinguard defines none */
} pg_hook_t;

static const pg_hook_t hooks[PG_HOOK_COUNT] = {
#define PG_HOOK(l, n, req)                                                                   \
  [PG_HOOK_ID_##n] = {.name = #n, .lib = PG_LIB_##l, .required = (req),                      \
                      .wrapper = &pg_wrapper_##n},
#include "pg_hooks.inc"
#undef PG_HOOK
};

/* The interposed entry points (pg_entries.inc) the tracker itself calls, and so needs as much as
 * the required rows of pg_hooks.inc. */
static const enum pg_hook_id required_entries[] = {
    PG_HOOK_ID_cudaEventRecord, PG_HOOK_ID_cudaEventQuery, PG_HOOK_ID_cudaEventSynchronize,
    PG_HOOK_ID_cudaEventDestroy, PG_HOOK_ID_cudaStreamIsCapturing};

static bool is_required(enum pg_hook_id id) {
  if ((unsigned)id >= PG_HOOK_COUNT) return false;
  if (hooks[id].required) return true;
  for (size_t i = 0; i < sizeof required_entries / sizeof *required_entries; i++)
    if (required_entries[i] == id) return true;
  return false;
}

_Atomic(void *) pg_hook_real_fn[PG_HOOK_COUNT];
static atomic_bool warned[PG_HOOK_COUNT];

/* The bounds of this object, from the linker: an address between them is pinguard's own. */
extern const char __ehdr_start[] __attribute__((visibility("hidden")));
extern const char _end[] __attribute__((visibility("hidden")));

bool pg_hook_is_own(const void *p) {
  return p && (const char *)p >= __ehdr_start && (const char *)p < _end;
}

static void *accept(void *fn) { return pg_hook_is_own(fn) ? NULL : fn; }

/* The libcudart majors we know; tried newest first. */
static const char *const cudart_versions[] = {"libcudart.so.13", "libcudart.so.12"};
static const char *const cudart_sonames[] = {"libcudart.so.13", "libcudart.so.12"};
static const char *const cuda_sonames[] = {"libcuda.so.1"};

/* A library loaded only into an RTLD_LOCAL scope (Python extension modules): RTLD_NEXT cannot
 * see it, but a NOLOAD dlopen finds it without loading anything new. */
static void *lookup_noload(const char *name, const char *soname, const char *version) {
  void *h = dlopen(soname, RTLD_NOLOAD | RTLD_LAZY);
  if (!h) return NULL;
  void *fn = version ? accept(dlvsym(h, name, version)) : NULL;
  if (!fn) fn = accept(dlsym(h, name));
  dlclose(h); /* drops only the reference NOLOAD added */
  return fn;
}

static void *lookup(const pg_hook_t *h) {
  void *fn;
  switch ((enum pg_lib)h->lib) {
    case PG_LIB_cudart:
      for (size_t i = 0; i < sizeof cudart_versions / sizeof *cudart_versions; i++)
        if ((fn = accept(dlvsym(RTLD_NEXT, h->name, cudart_versions[i])))) return fn;
      if ((fn = accept(dlsym(RTLD_NEXT, h->name)))) return fn;
      for (size_t i = 0; i < sizeof cudart_sonames / sizeof *cudart_sonames; i++)
        if ((fn = lookup_noload(h->name, cudart_sonames[i], cudart_versions[i]))) return fn;
      return NULL;
    case PG_LIB_cuda:
      if ((fn = accept(dlsym(RTLD_NEXT, h->name)))) return fn;
      for (size_t i = 0; i < sizeof cuda_sonames / sizeof *cuda_sonames; i++)
        if ((fn = lookup_noload(h->name, cuda_sonames[i], NULL))) return fn;
      return NULL;
    case PG_LIB_libc:
      return accept(dlsym(RTLD_NEXT, h->name));
  }
  return NULL;
}

/* Whether a driver library is in the process, in any scope (loads nothing). */
static bool driver_loaded(void) {
  for (size_t i = 0; i < sizeof cuda_sonames / sizeof *cuda_sonames; i++) {
    void *h = dlopen(cuda_sonames[i], RTLD_NOLOAD | RTLD_LAZY);
    if (h) {
      dlclose(h);
      return true;
    }
  }
  return false;
}

void *pg_real_slow(enum pg_hook_id id) {
  const pg_hook_t *h = &hooks[id];
  void *fn = atomic_load_explicit(&pg_hook_real_fn[id], memory_order_acquire);
  if (fn) return fn;
  fn = lookup(h);
  if (fn) {
    atomic_store_explicit(&pg_hook_real_fn[id], fn, memory_order_release);
  } else if (h->lib == PG_LIB_cuda && !driver_loaded()) {
    /* No driver in the process at all: one line for every row of it. */
    static atomic_bool warned_no_driver;
    if (!atomic_exchange(&warned_no_driver, true))
      pg_shim_warn("no CUDA driver (libcuda.so.1) is loaded; calls to pinguard's driver entry "
                   "points fail with CUDA_ERROR_NOT_FOUND");
  } else if (h->lib != PG_LIB_libc && !atomic_exchange(&warned[id], true)) {
    /* A missing libc row is no surprise (an older glibc, libaio not loaded): its interposer
     * fails the call as the absent function would, without a word. A row pinguard only calls
     * itself (no wrapper) fails no call of the application's. */
    const char *consequence =
        pg_hook_wrapper_id(id) ? (h->lib == PG_LIB_cuda
                                      ? "calls to it fail with CUDA_ERROR_NOT_FOUND"
                                      : "calls to it fail with cudaErrorSharedObjectSymbolNotFound")
        : is_required(id) ? "pinguard needs it"
                          : "pinguard does without it";
    pg_shim_warn("cannot find the real %s; %s%s", h->name, consequence,
                 is_required(id) ? ", and pinguard stays inert" : "");
  }
  return fn;
}

void *pg_real_quiet(enum pg_hook_id id) {
  void *fn = atomic_load_explicit(&pg_hook_real_fn[id], memory_order_acquire);
  if (!fn && (fn = lookup(&hooks[id])))
    atomic_store_explicit(&pg_hook_real_fn[id], fn, memory_order_release);
  return fn;
}

bool pg_resolve_required(void) {
  bool ok = true;
  for (int i = 0; i < PG_HOOK_COUNT; i++)
    if (is_required((enum pg_hook_id)i) && !pg_real((enum pg_hook_id)i)) ok = false;
  return ok;
}

bool pg_hook_is_driver(enum pg_hook_id id) {
  return (unsigned)id < PG_HOOK_COUNT && hooks[id].lib == PG_LIB_cuda;
}

const void *pg_hook_wrapper_id(enum pg_hook_id id) {
  if ((unsigned)id >= PG_HOOK_COUNT || !hooks[id].wrapper) return NULL;
  return *hooks[id].wrapper;
}

const void *pg_hook_wrapper(const char *name) {
  if (!name) return NULL;
  for (int i = 0; i < PG_HOOK_COUNT; i++)
    if (strcmp(hooks[i].name, name) == 0) return pg_hook_wrapper_id((enum pg_hook_id)i);
  return NULL;
}

int pg_runtime_version(void) {
  static atomic_int cached = -1;
  int v = atomic_load_explicit(&cached, memory_order_relaxed);
  if (v >= 0) return v;
  v = 0;
  if (PG_REAL(cudaRuntimeGetVersion) == NULL || PG_REAL(cudaRuntimeGetVersion)(&v) != cudaSuccess)
    v = 0;
  atomic_store_explicit(&cached, v, memory_order_relaxed);
  return v;
}
