/* test_dma.c: the DMA aliases. The simulated device must reach pinned memory the way a copy engine
 * does, never through the CPU's page protections: a copy into, and a kernel writing to, a
 * PROT_NONE pinned range both complete, for cudaHostAlloc memory, registered private anonymous
 * memory and registered MAP_SHARED memory; a copy across two adjacent, separately registered
 * ranges is translated piecewise; unregistering drops the alias. Registered private memory is
 * left as the driver leaves it (private, the same mapping, also across fork), and reached
 * through its pinned pages. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
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

/* The /proc/self/maps line of the mapping that holds p (empty when none). */
static void maps_line(const void *p, char *out, size_t cap) {
  FILE *f = fopen("/proc/self/maps", "re");
  cr_assert(f);
  char line[512];
  out[0] = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo <= (uintptr_t)p && (uintptr_t)p < hi) {
      snprintf(out, cap, "%s", line);
      break;
    }
  }
  fclose(f);
}

/* maps_line without the address range, after checking that the mapping still holds
 * [lo, lo + len) in one piece (no split): what the mapping is, which registration must not
 * change, not where it ends, which moves when a neighbour's mapping merges with it (a sanitizer's
 * allocator maps next to it). */
static void maps_kind(const unsigned char *lo, size_t len, char *out, size_t cap) {
  char line[512];
  maps_line(lo, line, sizeof line);
  unsigned long mlo, mhi;
  cr_assert_eq(sscanf(line, "%lx-%lx", &mlo, &mhi), 2, "no mapping holds %p", (void *)lo);
  cr_assert(mlo <= (uintptr_t)lo && (uintptr_t)lo + len <= mhi, "the mapping was split: %s",
            line);
  const char *rest = strchr(line, ' ');
  snprintf(out, cap, "%s", rest ? rest : line);
}

/* As the driver leaves it: registering private anonymous memory changes nothing the CPU can see
 * in /proc/self/maps (no memfd, no MAP_SHARED, no split), during and after; and the device still
 * reaches it while it is PROT_NONE (exercise_protected), through the pins. */
Test(dma, registered_private_mapping_unchanged) {
  unsigned char *p = mmap(NULL, 3 * N, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(p, MAP_FAILED);
  memset(p, 7, 3 * N);
  CK(cudaFree(NULL));
  char before[512], during[512], after[512];
  maps_kind(p, 3 * N, before, sizeof before);
  CK(cudaHostRegister(p + N, N, 0));
  maps_kind(p, 3 * N, during, sizeof during);
  cr_assert_str_eq(during, before, "cudaHostRegister changed the mapping");
  cr_assert_eq(strstr(during, "memfd"), NULL);
  exercise_protected(p + N);
  maps_kind(p, 3 * N, during, sizeof during);
  cr_assert_str_eq(during, before, "the device's copies changed the mapping");
  CK(cudaHostUnregister(p + N));
  maps_kind(p, 3 * N, after, sizeof after);
  cr_assert_str_eq(after, before);
  cr_assert_eq(p[0], 7, "the neighbours are untouched");
  cr_assert_eq(p[3 * N - 1], 7);
  munmap(p, 3 * N);
}

/* Registered private memory stays private across fork: a child's store is its own, and the
 * parent's pinned page stays the parent's, so the device's later copy lands where the parent
 * reads. */
Test(dma, registered_private_fork) {
  unsigned char *p = mmap(NULL, N, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(p, MAP_FAILED);
  memset(p, 1, N);
  CK(cudaHostRegister(p, N, 0));
  pid_t child = fork();
  if (child == 0) {
    p[0] = 0xee; /* never calls CUDA */
    _exit(p[0] == 0xee ? 0 : 1);
  }
  int status;
  cr_assert_eq(waitpid(child, &status, 0), child);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  cr_assert_eq(p[0], 1, "the child's store reached the parent: the mapping is shared");
  unsigned char *dev;
  CK(cudaMalloc((void **)&dev, N));
  CK(cudaMemset(dev, 0x3c, N));
  CK(cudaMemcpy(p, dev, N, cudaMemcpyDeviceToHost));
  cr_assert_eq(p[0], 0x3c, "the device wrote a page the parent no longer sees");
  cr_assert_eq(p[N - 1], 0x3c);
  CK(cudaHostUnregister(p));
  CK(cudaFree(dev));
  munmap(p, N);
}

/* A kernel body's view of registered private memory: what it writes lands, and what the CPU
 * wrote meanwhile to other bytes of the same page survives. */
SIMCUDA_KERNEL(wait_then_fill, sizeof(unsigned char *), sizeof(volatile int *)) {
  unsigned char *dst = simcuda_dma(*(unsigned char **)launch->args[0]);
  volatile int *go = *(volatile int **)launch->args[1]; /* pageable: the CPU's own */
  go[1] = 1; /* the view is taken */
  while (!go[0]) usleep(100);
  memset(dst, 0x44, 16);
}

Test(dma, kernel_view_of_private_memory) {
  unsigned char *p = mmap(NULL, N, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(p, MAP_FAILED);
  memset(p, 1, N);
  CK(cudaHostRegister(p, N, 0));
  static volatile int go[2];
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void *a0 = p;
  volatile int *a1 = go;
  void *args[] = {&a0, &a1};
  CK(cudaLaunchKernel((const void *)wait_then_fill, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, s));
  while (!go[1]) usleep(100);
  p[100] = 9; /* the CPU's store to the same page, while the kernel runs */
  go[0] = 1;
  CK(cudaStreamSynchronize(s));
  cr_assert_eq(p[0], 0x44);
  cr_assert_eq(p[15], 0x44);
  cr_assert_eq(p[16], 1);
  cr_assert_eq(p[100], 9, "the kernel's write-back undid the CPU's store");
  CK(cudaHostUnregister(p));
  CK(cudaStreamDestroy(s));
  munmap(p, N);
}

/* Where io_uring is unavailable (here: SIMCUDA_IO_URING=0), registered private memory falls back
 * to shared memfd pages, and the device still reaches it while it is PROT_NONE. */
static void no_io_uring(void) { setenv("SIMCUDA_IO_URING", "0", 1); }

Test(dma, private_memfd_fallback, .init = no_io_uring) {
  unsigned char *p = mmap(NULL, N, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(p, MAP_FAILED);
  memset(p, 7, N);
  CK(cudaHostRegister(p, N, 0));
  char line[512];
  maps_line(p, line, sizeof line);
  cr_assert_neq(strstr(line, "memfd:simcuda-pinned"), NULL, "%s", line);
  cr_assert_eq(p[N - 1], 7, "contents survive the swap");
  exercise_protected(p);
  CK(cudaHostUnregister(p));
  munmap(p, N);
}
