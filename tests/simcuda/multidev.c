/* multidev.c: eight simulated devices driven at once, one thread per device, without Criterion
 * (which cannot run under ThreadSanitizer). Each thread makes its device current, then round after
 * round copies a pattern host -> its device -> its neighbour device's arena (a peer copy) -> host,
 * ordering the legacy stream after its own stream through an event, alternating its own stream
 * with its per-thread default stream, and alternating cudaStreamSynchronize, cudaEventSynchronize
 * and cudaDeviceSynchronize; every byte that comes back is checked, and so is that no thread's
 * current device ever changed. Run with SIMCUDA_DEVICES=8 (CTest does). Exit status 0 means all
 * of it was right. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#define CHECK(cond)                                                                 \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      fprintf(stderr, "multidev: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      exit(1);                                                                      \
    }                                                                               \
  } while (0)
#define CK(call) CHECK((call) == cudaSuccess)

enum { NDEV = 8, SZ = 1 << 16, ROUNDS = 40 };

static unsigned char pattern(int dev, int round, size_t i) {
  return (unsigned char)(dev * 31 + round * 7 + i * 13);
}

static void *device_thread(void *arg) {
  int dev = (int)(intptr_t)arg, next = (dev + 1) % NDEV, cur = -1;
  CK(cudaGetDevice(&cur));
  CHECK(cur == 0); /* a thread's first call sees device 0 */
  CK(cudaSetDevice(dev));

  unsigned char *src, *dst, *mine, *theirs;
  CK(cudaHostAlloc((void **)&src, SZ, cudaHostAllocPortable));
  CK(cudaHostAlloc((void **)&dst, SZ, cudaHostAllocPortable));
  CK(cudaMalloc((void **)&mine, SZ));
  CK(cudaSetDevice(next)); /* a buffer in the neighbour's arena, allocated from this thread */
  CK(cudaMalloc((void **)&theirs, SZ));
  CK(cudaSetDevice(dev));
  cudaStream_t own;
  cudaEvent_t ev;
  CK(cudaStreamCreate(&own));
  CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));

  for (int r = 0; r < ROUNDS; r++) {
    cudaStream_t s = (r % 2) ? cudaStreamPerThread : own;
    for (size_t i = 0; i < SZ; i++) src[i] = pattern(dev, r, i);
    memset(dst, 0, SZ);
    CK(cudaMemcpyAsync(mine, src, SZ, cudaMemcpyHostToDevice, s));
    CK(cudaMemcpyPeerAsync(theirs, next, mine, dev, SZ, s));
    CK(cudaEventRecord(ev, s));
    CK(cudaStreamWaitEvent(0, ev, 0));
    CK(cudaMemcpyAsync(dst, theirs, SZ, cudaMemcpyDeviceToHost, 0));
    switch (r % 3) {
    case 0: CK(cudaStreamSynchronize(0)); break;
    case 1: CK(cudaDeviceSynchronize()); break;
    default:
      CK(cudaEventRecord(ev, 0));
      CK(cudaEventSynchronize(ev));
      break;
    }
    for (size_t i = 0; i < SZ; i++) CHECK(dst[i] == pattern(dev, r, i));
    CK(cudaGetDevice(&cur));
    CHECK(cur == dev);
  }

  struct cudaPointerAttributes a;
  CK(cudaPointerGetAttributes(&a, mine));
  CHECK(a.type == cudaMemoryTypeDevice && a.device == dev);
  CK(cudaPointerGetAttributes(&a, theirs));
  CHECK(a.type == cudaMemoryTypeDevice && a.device == next);
  CK(cudaPointerGetAttributes(&a, src));
  CHECK(a.type == cudaMemoryTypeHost && a.device == dev);
  int sdev = -1;
  CK(cudaStreamGetDevice(own, &sdev));
  CHECK(sdev == dev);

  CK(cudaEventDestroy(ev));
  CK(cudaStreamDestroy(own));
  CK(cudaFree(theirs));
  CK(cudaFree(mine));
  CK(cudaFreeHost(dst));
  CK(cudaFreeHost(src));
  return NULL;
}

int main(void) {
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  if (n != NDEV) {
    fprintf(stderr, "multidev: %d devices; run with SIMCUDA_DEVICES=%d\n", n, NDEV);
    return 1;
  }
  pthread_t t[NDEV];
  for (int d = 0; d < NDEV; d++) CHECK(pthread_create(&t[d], NULL, device_thread, (void *)(intptr_t)d) == 0);
  for (int d = 0; d < NDEV; d++) pthread_join(t[d], NULL);
  int cur = -1;
  CK(cudaGetDevice(&cur));
  CHECK(cur == 0);
  printf("multidev: %d devices x %d rounds of %d bytes, all correct\n", NDEV, ROUNDS, SZ);
  return 0;
}
