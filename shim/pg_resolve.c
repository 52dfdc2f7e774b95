/* pg_resolve.c: finds the real libcudart functions behind pinguard's interceptors, lazily.
 * Order (interposition.md): dlvsym(RTLD_NEXT, name, "libcudart.so.<major>"), then
 * dlsym(RTLD_NEXT, name), then dlopen(RTLD_NOLOAD) of an already-loaded libcudart. A result that
 * lies inside libpinguard.so itself is our own wrapper and is refused. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pg_intercept.h"
#include "pg_shim.h"

typedef struct pg_hook {
  const char *name;
  bool required;
  _Atomic(void *) fn;
  atomic_bool warned;
} pg_hook_t;

static pg_hook_t hooks[PG_HOOK_COUNT] = {
#define PG_HOOK(n, req) [PG_HOOK_ID_##n] = {.name = #n, .required = (req)},
#include "pg_hooks.inc"
#undef PG_HOOK
};

/* The libcudart majors we know; tried newest first. */
static const char *const cudart_versions[] = {"libcudart.so.13", "libcudart.so.12"};
static const char *const cudart_sonames[] = {"libcudart.so.13", "libcudart.so.12"};

static bool is_ours(void *fn) {
  Dl_info mine, theirs;
  if (!dladdr((void *)&pg_real, &mine) || !dladdr(fn, &theirs)) return false;
  return mine.dli_fbase == theirs.dli_fbase;
}

static void *accept(void *fn) { return (fn && !is_ours(fn)) ? fn : NULL; }

static void *lookup(const char *name) {
  void *fn;
  for (size_t i = 0; i < sizeof cudart_versions / sizeof *cudart_versions; i++)
    if ((fn = accept(dlvsym(RTLD_NEXT, name, cudart_versions[i])))) return fn;
  if ((fn = accept(dlsym(RTLD_NEXT, name)))) return fn;
  /* libcudart loaded only into an RTLD_LOCAL scope (Python extension modules): RTLD_NEXT cannot
   * see it, but a NOLOAD dlopen finds it without loading anything new. */
  for (size_t i = 0; i < sizeof cudart_sonames / sizeof *cudart_sonames; i++) {
    void *h = dlopen(cudart_sonames[i], RTLD_NOLOAD | RTLD_LAZY);
    if (!h) continue;
    fn = accept(dlvsym(h, name, cudart_versions[i]));
    if (!fn) fn = accept(dlsym(h, name));
    dlclose(h); /* drops only the reference NOLOAD added */
    if (fn) return fn;
  }
  return NULL;
}

void *pg_real(enum pg_hook_id id) {
  pg_hook_t *h = &hooks[id];
  void *fn = atomic_load_explicit(&h->fn, memory_order_acquire);
  if (fn) return fn;
  fn = lookup(h->name); /* racing resolvers find the same address; last store wins harmlessly */
  if (fn) {
    atomic_store_explicit(&h->fn, fn, memory_order_release);
  } else if (!atomic_exchange(&h->warned, true)) {
    pg_shim_warn("cannot find the real %s; calls to it fail with "
                 "cudaErrorSharedObjectSymbolNotFound%s", h->name,
                 h->required ? " and pinguard stays inert" : "");
  }
  return fn;
}

bool pg_resolve_required(void) {
  bool ok = true;
  for (int i = 0; i < PG_HOOK_COUNT; i++)
    if (hooks[i].required && !pg_real((enum pg_hook_id)i)) ok = false;
  return ok;
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
