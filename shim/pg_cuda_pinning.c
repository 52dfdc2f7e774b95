/* pg_cuda_pinning.c: interceptors that create and destroy pinned host memory.
 * libcudart is linked -Bsymbolic, so cudaMallocHost never reaches our cudaHostAlloc: each entry
 * point is wrapped on its own. Freeing or unregistering checks in-flight accesses first. */
#include "pg_intercept.h"
#include "pg_shim.h"

/* After a successful pinning call: the new region, with the application's call site. A macro,
 * so that the stack is captured in the interceptor's own frame. */
#define PG_NOTE_PINNED(p, n, how, flags)                \
  do {                                                  \
    if (pg_shim_start_tracking()) {                     \
      pg_stack_t st_;                                   \
      PG_CAPTURE(&st_);                                 \
      pg_reentry_t g_ = pg_shim_enter();                \
      pg_decide_pinned((p), (n), (how), (flags), &st_); \
      pg_shim_leave(g_);                                \
    }                                                   \
  } while (0)

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

PG_INTERCEPT(cudaError_t, cudaHostRegister, void *p, size_t size, unsigned int flags) {
  unsigned kind = 0;
  if (pg_shim_start_tracking()) {
    pg_reentry_t g = pg_shim_enter();
    kind = pg_decide_register_flags(p, size);
    pg_shim_leave(g);
  }
  cudaError_t err = PG_FORWARD(cudaHostRegister, p, size, flags);
  if (err == cudaSuccess) PG_NOTE_PINNED(p, size, PG_PIN_REGISTER, flags | kind);
  return err;
}

/* Free and unregister share one shape: check and forget, forward, remember again on failure. */
static cudaError_t unpin(void *p, bool is_free, const pg_stack_t *st) {
  pg_reentry_t g = pg_shim_enter();
  pg_unpin_t saved;
  pg_decide_unpin_begin(p, is_free, st, &saved);
  cudaError_t err = is_free ? PG_FORWARD(cudaFreeHost, p) : PG_FORWARD(cudaHostUnregister, p);
  pg_decide_unpin_end(&saved, err == cudaSuccess);
  pg_shim_leave(g);
  return err;
}

PG_INTERCEPT(cudaError_t, cudaFreeHost, void *p) {
  if (!p || !pg_shim_start_tracking()) return PG_FORWARD(cudaFreeHost, p);
  pg_stack_t st;
  PG_CAPTURE(&st);
  return unpin(p, true, &st);
}

PG_INTERCEPT(cudaError_t, cudaHostUnregister, void *p) {
  if (!p || !pg_shim_start_tracking()) return PG_FORWARD(cudaHostUnregister, p);
  pg_stack_t st;
  PG_CAPTURE(&st);
  return unpin(p, false, &st);
}
