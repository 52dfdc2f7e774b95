/* pg_cuda_pinning.c: interceptors that create and destroy pinned host memory, and the helpers
 * the driver's pinning interceptors (pg_cu_api.c) share with them.
 * libcudart is linked -Bsymbolic, so cudaMallocHost never reaches our cudaHostAlloc: each entry
 * point is wrapped on its own. Freeing or unregistering checks in-flight accesses first. */
#include "pg_intercept.h"
#include "pg_shim.h"

PG_INTERCEPT(cudaError_t, cudaHostAlloc, void **p, size_t size, unsigned int flags) {
  cudaError_t err = PG_FORWARD(cudaHostAlloc, p, size, flags);
  if (err == cudaSuccess && p && *p) PG_NOTE_PINNED(*p, size, PG_PIN_HOST_ALLOC, flags);
  return err;
}

PG_INTERCEPT(cudaError_t, cudaMallocHost, void **p, size_t size) {
  cudaError_t err = PG_FORWARD(cudaMallocHost, p, size);
  if (err == cudaSuccess && p && *p)
    PG_NOTE_PINNED(*p, size, PG_PIN_MALLOC_HOST, cudaHostAllocDefault);
  return err;
}

unsigned pg_shim_register_kind(void *p, size_t n) {
  if (!pg_shim_start_tracking()) return 0;
  pg_reentry_t g = pg_shim_enter();
  unsigned kind = pg_on_register_begin(p, n);
  pg_shim_leave(g);
  return kind;
}

_Static_assert(PG_REGISTER_IOMEMORY == cudaHostRegisterIoMemory &&
                   PG_REGISTER_READ_ONLY == cudaHostRegisterReadOnly,
               "core's registration flags differ from the runtime's");

PG_INTERCEPT(cudaError_t, cudaHostRegister, void *p, size_t size, unsigned int flags) {
  unsigned kind = pg_shim_register_kind(p, size);
  cudaError_t err = PG_FORWARD(cudaHostRegister, p, size, flags);
  if (err == cudaSuccess) PG_NOTE_PINNED(p, size, PG_PIN_REGISTER, flags | kind);
  return err;
}

/* Free and unregister share one shape, in both API layers: check and forget, forward, remember
 * again on failure. */
int pg_shim_unpin(void *p, bool is_free, const char *api, const pg_stack_t *st,
                  int (*forward)(void *p)) {
  pg_reentry_t g = pg_shim_enter();
  pg_unpin_t saved;
  pg_on_unpin_begin(p, is_free, api, st, &saved);
  int err = forward(p);
  pg_on_unpin_end(&saved, err == 0);
  pg_shim_leave(g);
  return err;
}

static int free_host(void *p) { return PG_FORWARD(cudaFreeHost, p); }
static int unregister(void *p) { return PG_FORWARD(cudaHostUnregister, p); }

PG_INTERCEPT(cudaError_t, cudaFreeHost, void *p) {
  if (!p || !pg_shim_start_tracking()) return PG_FORWARD(cudaFreeHost, p);
  pg_stack_t st;
  PG_CAPTURE(&st);
  return (cudaError_t)pg_shim_unpin(p, true, "cudaFreeHost", &st, free_host);
}

PG_INTERCEPT(cudaError_t, cudaHostUnregister, void *p) {
  if (!p || !pg_shim_start_tracking()) return PG_FORWARD(cudaHostUnregister, p);
  pg_stack_t st;
  PG_CAPTURE(&st);
  return (cudaError_t)pg_shim_unpin(p, false, "cudaHostUnregister", &st, unregister);
}
