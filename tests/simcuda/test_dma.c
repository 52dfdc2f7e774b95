/* test_dma.c: the DMA aliases. The simulated device must reach pinned memory the way a copy engine
 * does, never through the CPU's page protections: a copy into, and a kernel writing to, a
 * PROT_NONE pinned range both complete, for cudaHostAlloc memory, registered private anonymous
 * memory and registered MAP_SHARED memory; a copy across two adjacent, separately registered
 * ranges is translated piecewise; unregistering drops the alias. */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <simcuda_kernel.h>

#include "test_util.h"

#define N (64 * 1024)

SIMCUDA_KERNEL(fill_kernel, sizeof(unsigned char *), sizeof(size_t), sizeof(int)) {
  unsigned char *dst = *(unsigned char **)launch->args[0];
  size_t n = *(size_t *)launch->args[1];
  int value = *(int *)launch->args[2];
  memset(simcuda_dma(dst), value, n);
}

static void launch_fill(void *dst, size_t n, int value, cudaStream_t s) {
  void *args[] = {&dst, &n, &value};
  CK(cudaLaunchKernel((const void *)fill_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, s));
}

/* With host pinned and PROT_NONE: a D2H copy and a kernel store both land; then the CPU, with
 * access restored, sees them. Also an H2D copy reads the protected source. */
static void exercise_protected(unsigned char *host) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  unsigned char *dev;
  CK(cudaMalloc((void **)&dev, N));
  CK(cudaMemset(dev, 0x5a, N));
  CK(cudaDeviceSynchronize());
  memset(host, 0, N);

  cr_assert_eq(mprotect(host, N, PROT_NONE), 0);
  CK(cudaMemcpyAsync(host, dev, N / 2, cudaMemcpyDeviceToHost, s));
  launch_fill(host + N / 2, N / 2, 0x77, s);
  CK(cudaStreamSynchronize(s));
  /* The device also reads through protections (an H2D copy from a guarded source). */
  CK(cudaMemcpyAsync(dev, host + N / 2, 16, cudaMemcpyHostToDevice, s));
  CK(cudaStreamSynchronize(s));
  cr_assert_eq(mprotect(host, N, PROT_READ | PROT_WRITE), 0);

  for (size_t i = 0; i < N / 2; i++) cr_assert_eq(host[i], 0x5a, "copy byte %zu", i);
  for (size_t i = N / 2; i < N; i++) cr_assert_eq(host[i], 0x77, "kernel byte %zu", i);
  unsigned char back[16];
  CK(cudaMemcpy(back, dev, 16, cudaMemcpyDeviceToHost));
  cr_assert_eq(back[0], 0x77);
  CK(cudaFree(dev));
  CK(cudaStreamDestroy(s));
}

Test(dma, host_alloc_protected) {
  unsigned char *h;
  CK(cudaHostAlloc((void **)&h, N, 0));
  exercise_protected(h);
  CK(cudaFreeHost(h));
}

Test(dma, registered_private_anonymous_protected) {
  unsigned char *p = mmap(NULL, N, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(p, MAP_FAILED);
  CK(cudaHostRegister(p, N, 0));
  exercise_protected(p);
  CK(cudaHostUnregister(p));
  munmap(p, N);
}

Test(dma, registered_shared_protected) {
  int fd = memfd_create("test-shared", 0);
  cr_assert_geq(fd, 0);
  cr_assert_eq(ftruncate(fd, N), 0);
  unsigned char *p = mmap(NULL, N, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  unsigned char *other = mmap(NULL, N, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  cr_assert_neq(p, MAP_FAILED);
  CK(cudaHostRegister(p, N, cudaHostRegisterPortable));
  exercise_protected(p);
  /* The device wrote the shared pages themselves: another mapping of the segment sees it. */
  cr_assert_eq(other[0], 0x5a);
  cr_assert_eq(other[N - 1], 0x77);
  CK(cudaHostUnregister(p));
  munmap(p, N);
  munmap(other, N);
  close(fd);
}

Test(dma, copy_spanning_adjacent_registrations) {
  /* The "64 MiB pieces" case, scaled down: one buffer registered as two pieces, one copy across. */
  unsigned char *p = mmap(NULL, 2 * N, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CK(cudaHostRegister(p, N, 0));
  CK(cudaHostRegister(p + N, N, 0));
  unsigned char *dev;
  CK(cudaMalloc((void **)&dev, 2 * N));
  CK(cudaMemset(dev, 0x33, 2 * N));
  memset(p, 0, 2 * N);
  cr_assert_eq(mprotect(p, 2 * N, PROT_NONE), 0);
  CK(cudaMemcpyAsync(p + N / 2, dev, N, cudaMemcpyDeviceToHost, cudaStreamPerThread));
  CK(cudaStreamSynchronize(cudaStreamPerThread));
  cr_assert_eq(mprotect(p, 2 * N, PROT_READ | PROT_WRITE), 0);
  for (size_t i = 0; i < 2 * N; i++) {
    unsigned char want = (i >= N / 2 && i < N / 2 + N) ? 0x33 : 0;
    cr_assert_eq(p[i], want, "byte %zu", i);
  }
  CK(cudaHostUnregister(p));
  CK(cudaHostUnregister(p + N));
  CK(cudaFree(dev));
  munmap(p, 2 * N);
}

Test(dma, translator_identity_outside_pinned_memory) {
  unsigned char *h;
  CK(cudaHostAlloc((void **)&h, N, 0));
  cr_assert_neq(simcuda_dma(h), (void *)h, "pinned memory is reached through an alias");
  cr_assert_eq((char *)simcuda_dma(h + 100) - (char *)simcuda_dma(h), 100);
  int x;
  cr_assert_eq(simcuda_dma(&x), (void *)&x);
  void *d;
  CK(cudaMalloc(&d, 64));
  cr_assert_eq(simcuda_dma(d), d);
  /* Both views are the same memory. */
  h[7] = 9;
  cr_assert_eq(((unsigned char *)simcuda_dma(h))[7], 9);
  CK(cudaFreeHost(h));

  unsigned char *p = mmap(NULL, N, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CK(cudaHostRegister(p, N, 0));
  cr_assert_neq(simcuda_dma(p), (void *)p);
  CK(cudaHostUnregister(p));
  cr_assert_eq(simcuda_dma(p), (void *)p, "unregister drops the alias");
  munmap(p, N);
}

Test(dma, registered_read_only_mapping) {
  /* A range the CPU may only read (e.g. guarded for a device read) can still be registered and
   * written by the device through the alias. */
  unsigned char *p = mmap(NULL, N, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  memset(p, 1, N);
  cr_assert_eq(mprotect(p, N, PROT_READ), 0);
  CK(cudaHostRegister(p, N, cudaHostRegisterReadOnly));
  cr_assert_eq(p[N - 1], 1, "contents survive registration");
  launch_fill(p, 16, 0x44, 0);
  CK(cudaDeviceSynchronize());
  cr_assert_eq(p[0], 0x44);
  CK(cudaHostUnregister(p));
  munmap(p, N);
}
