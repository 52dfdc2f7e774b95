/* bench_stubpin.c: libbench_stubpin.so, preloaded after libpinguard.so by the scaling benchmark
 * only. It lets the benchmark register 100,000 pinned regions, which simcuda cannot back: each
 * simcuda registration maps a DMA alias and the kernel allows 65,530 mappings per process.
 * Registrations inside the range set by bench_stubpin_set_range() are acknowledged without
 * reaching simcuda; everything else is forwarded. pinguard sees ordinary successful
 * cudaHostRegister calls either way, so its region index holds every one of them. */
#include <dlfcn.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#define STUB_API __attribute__((visibility("default")))

static uintptr_t stub_lo, stub_hi; /* set once, before any other thread registers */

STUB_API void bench_stubpin_set_range(void *lo, size_t len) {
  stub_lo = (uintptr_t)lo;
  stub_hi = (uintptr_t)lo + len;
}

static int stubbed(const void *p) {
  return (uintptr_t)p >= stub_lo && (uintptr_t)p < stub_hi;
}

/* The next definition after this object: simcuda's (versioned like the real libcudart). */
static void *next_fn(const char *name) {
  void *fn = dlvsym(RTLD_NEXT, name, "libcudart.so.13");
  return fn ? fn : dlsym(RTLD_NEXT, name);
}

STUB_API cudaError_t cudaHostRegister(void *p, size_t size, unsigned int flags) {
  if (stubbed(p)) return cudaSuccess;
  cudaError_t (*real)(void *, size_t, unsigned) =
      (cudaError_t(*)(void *, size_t, unsigned))next_fn("cudaHostRegister");
  return real ? real(p, size, flags) : cudaErrorNotSupported;
}

STUB_API cudaError_t cudaHostUnregister(void *p) {
  if (stubbed(p)) return cudaSuccess;
  cudaError_t (*real)(void *) = (cudaError_t(*)(void *))next_fn("cudaHostUnregister");
  return real ? real(p) : cudaErrorNotSupported;
}
