/* test_memory.c: the device arena, pinned allocation, host registration with CUDA's error codes,
 * device pointers and flags of pinned memory, and cudaPointerGetAttributes for device, pinned
 * (interior pointers included) and pageable memory. */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "test_util.h"

Test(memory, device_arena_never_collides_with_host) {
  void *d1, *d2;
  CK(cudaMalloc(&d1, 1 << 20));
  CK(cudaMalloc(&d2, 100));
  cr_assert_neq(d1, d2);
  /* Host mappings made afterwards never land inside the arena. */
  for (int i = 0; i < 16; i++) {
    void *h = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct cudaPointerAttributes a;
    CK(cudaPointerGetAttributes(&a, h));
    cr_assert_eq(a.type, cudaMemoryTypeUnregistered);
    munmap(h, 1 << 20);
  }
  CK(cudaFree(d1));
  CK(cudaFree(d2));
  CK(cudaFree(NULL));
  CK_ERR(cudaFree((char *)d1 + 1), cudaErrorInvalidValue);
  size_t free_b, total;
  CK(cudaMemGetInfo(&free_b, &total));
  cr_assert_geq(total, (size_t)2 << 30, "room for 2 GiB of device allocations by default");
  void *big;
  CK(cudaMalloc(&big, (size_t)2 << 30));
  CK(cudaFree(big));
}

Test(memory, device_pointer_attributes_with_interior_pointers) {
  char *d;
  CK(cudaMalloc((void **)&d, 10000));
  struct cudaPointerAttributes a;
  CK(cudaPointerGetAttributes(&a, d + 5000));
  cr_assert_eq(a.type, cudaMemoryTypeDevice);
  cr_assert_eq(a.device, 0);
  cr_assert_eq(a.devicePointer, d + 5000);
  cr_assert_null(a.hostPointer);
  CK(cudaFree(d));
  CK_ERR(cudaPointerGetAttributes(&a, d), cudaErrorInvalidValue); /* freed device address */
}

Test(memory, host_alloc_and_attributes) {
  char *h;
  CK(cudaHostAlloc((void **)&h, 3 * 4096 + 17, cudaHostAllocMapped | cudaHostAllocPortable));
  cr_assert_eq((uintptr_t)h % (uintptr_t)sysconf(_SC_PAGESIZE), 0u, "page aligned");
  memset(h, 7, 3 * 4096 + 17);
  struct cudaPointerAttributes a;
  CK(cudaPointerGetAttributes(&a, h + 4096 + 3));
  cr_assert_eq(a.type, cudaMemoryTypeHost);
  cr_assert_eq(a.hostPointer, h + 4096 + 3);
  cr_assert_eq(a.devicePointer, h + 4096 + 3);
  void *dp;
  CK(cudaHostGetDevicePointer(&dp, h + 10, 0));
  cr_assert_eq(dp, h + 10, "UVA: the device pointer is the host pointer");
  unsigned flags;
  CK(cudaHostGetFlags(&flags, h));
  cr_assert_eq(flags, cudaHostAllocMapped | cudaHostAllocPortable);
  CK_ERR(cudaFreeHost(h + 1), cudaErrorInvalidValue);
  CK(cudaFreeHost(h));
  CK(cudaPointerGetAttributes(&a, h));
  cr_assert_eq(a.type, cudaMemoryTypeUnregistered);

  void *m;
  CK(cudaMallocHost(&m, 100));
  CK(cudaPointerGetAttributes(&a, m));
  cr_assert_eq(a.type, cudaMemoryTypeHost);
  CK(cudaFreeHost(m));
  CK_ERR(cudaHostAlloc(&m, 100, 0x100), cudaErrorInvalidValue);
}

Test(memory, pageable_pointer_is_unregistered) {
  int x = 0;
  struct cudaPointerAttributes a;
  CK(cudaPointerGetAttributes(&a, &x));
  cr_assert_eq(a.type, cudaMemoryTypeUnregistered);
  void *dp;
  CK_ERR(cudaHostGetDevicePointer(&dp, &x, 0), cudaErrorInvalidValue);
  unsigned flags;
  CK_ERR(cudaHostGetFlags(&flags, &x), cudaErrorInvalidValue);
}

Test(memory, register_keeps_contents_and_classifies) {
  size_t n = 5 * 4096;
  char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  for (size_t i = 0; i < n; i++) p[i] = (char)(i * 7);
  CK(cudaHostRegister(p + 100, n - 200, cudaHostRegisterDefault));
  for (size_t i = 0; i < n; i++) cr_assert_eq(p[i], (char)(i * 7), "byte %zu changed", i);
  struct cudaPointerAttributes a;
  CK(cudaPointerGetAttributes(&a, p + 3000));
  cr_assert_eq(a.type, cudaMemoryTypeHost);
  CK(cudaPointerGetAttributes(&a, p + 50)); /* outside the registered range, inside its page */
  cr_assert_eq(a.type, cudaMemoryTypeUnregistered);
  unsigned flags;
  CK(cudaHostGetFlags(&flags, p + 200));
  cr_assert_eq(flags, cudaHostRegisterDefault);
  CK(cudaHostUnregister(p + 100));
  CK(cudaPointerGetAttributes(&a, p + 3000));
  cr_assert_eq(a.type, cudaMemoryTypeUnregistered);
  for (size_t i = 0; i < n; i++) cr_assert_eq(p[i], (char)(i * 7));
  munmap(p, n);
}

Test(memory, register_error_codes) {
  size_t n = 8 * 4096;
  char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CK(cudaHostRegister(p, 4 * 4096, 0));
  CK_ERR(cudaHostRegister(p, 4 * 4096, 0), cudaErrorHostMemoryAlreadyRegistered);
  CK_ERR(cudaHostRegister(p + 4096, 4 * 4096, 0), cudaErrorHostMemoryAlreadyRegistered);
  cr_assert_eq(cudaGetLastError(), cudaErrorHostMemoryAlreadyRegistered);
  cr_assert_eq(cudaGetLastError(), cudaSuccess);
  CK(cudaHostRegister(p + 4 * 4096, 4 * 4096, 0)); /* adjacent: fine */
  CK_ERR(cudaHostUnregister(p + 8), cudaErrorHostMemoryNotRegistered);
  CK_ERR(cudaHostUnregister(&n), cudaErrorHostMemoryNotRegistered);
  CK_ERR(cudaHostRegister(p, 0, 0), cudaErrorInvalidValue);
  CK_ERR(cudaHostRegister(p, 4096, 0x80), cudaErrorInvalidValue);
  CK(cudaHostUnregister(p));
  CK_ERR(cudaHostUnregister(p), cudaErrorHostMemoryNotRegistered);
  CK(cudaHostUnregister(p + 4 * 4096));
  /* cudaHostAlloc memory is already pinned. */
  void *h;
  CK(cudaHostAlloc(&h, 4096, 0));
  CK_ERR(cudaHostRegister(h, 4096, 0), cudaErrorHostMemoryAlreadyRegistered);
  CK_ERR(cudaHostUnregister(h), cudaErrorHostMemoryNotRegistered);
  CK(cudaFreeHost(h));
  /* Unmapped memory cannot be registered. */
  munmap(p, n);
  CK_ERR(cudaHostRegister(p, 4096, 0), cudaErrorInvalidValue);
}

Test(memory, register_malloc_memory_subpage) {
  /* Two small heap objects that share a page, registered one after the other. */
  char *a = malloc(256), *b = malloc(256);
  memset(a, 'a', 256);
  memset(b, 'b', 256);
  CK(cudaHostRegister(a, 256, 0));
  CK(cudaHostRegister(b, 256, 0));
  for (int i = 0; i < 256; i++) cr_assert(a[i] == 'a' && b[i] == 'b');
  a[5] = 'x'; /* the CPU still writes through the original mapping */
  char *dev;
  CK(cudaMalloc((void **)&dev, 256));
  CK(cudaMemcpy(dev, a, 256, cudaMemcpyHostToDevice));
  char back[256];
  CK(cudaMemcpy(back, dev, 256, cudaMemcpyDeviceToHost));
  cr_assert_eq(back[5], 'x');
  CK(cudaHostUnregister(a));
  CK(cudaHostUnregister(b));
  free(a);
  free(b);
}

static void small_device(void) { setenv("SIMCUDA_DEVICE_MB", "64", 1); }

Test(memory, device_size_from_environment, .init = small_device) {
  size_t free_b, total;
  CK(cudaMemGetInfo(&free_b, &total));
  cr_assert_eq(total, (size_t)64 << 20);
  void *a, *b;
  CK(cudaMalloc(&a, 48 << 20));
  CK_ERR(cudaMalloc(&b, 32 << 20), cudaErrorMemoryAllocation);
  CK(cudaFree(a));
  CK(cudaMalloc(&b, 32 << 20)); /* freed space is reused */
  CK(cudaFree(b));
}

Test(memory, stream_ordered_allocation) {
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  unsigned char *d, back[16];
  CK(cudaMallocAsync((void **)&d, 4096, s));
  CK(cudaMemsetAsync(d, 0x12, 4096, s));
  CK(cudaMemcpyAsync(back, d, 16, cudaMemcpyDeviceToHost, s)); /* pageable: synchronous */
  cr_assert_eq(back[15], 0x12);
  CK(cudaFreeAsync(d, s));
  CK(cudaStreamSynchronize(s));
  struct cudaPointerAttributes a;
  CK_ERR(cudaPointerGetAttributes(&a, d), cudaErrorInvalidValue); /* freed at its stream position */
  CK_ERR(cudaFreeAsync(d, s), cudaErrorInvalidValue);
  int v = 0;
  CK(cudaDeviceGetAttribute(&v, cudaDevAttrUnifiedAddressing, 0));
  cr_assert_eq(v, 1);
}
