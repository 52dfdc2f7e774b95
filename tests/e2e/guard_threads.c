/* Intent: faults on several threads at once. Each thread enqueues a device->host copy into its
 * own pinned buffer and reads it at once, while the main thread keeps enqueuing and retiring
 * copies into another buffer of the same region's neighbour pages. Every fault is handled:
 * nobody hangs or crashes, and under enforce every thread reads the copied bytes. */
#include <pthread.h>

#include "e2e.h"

#define THREADS 4
#define ROUNDS 20

static unsigned char *region;
static void *dev;
static int all_fresh = 1;

static void *worker(void *arg) {
  int id = (int)(long)arg;
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  unsigned char *mine = region + (size_t)id * BUF_BYTES;
  for (int r = 0; r < ROUNDS; r++) {
    memset(mine, 0, BUF_BYTES);
    CHECK(cudaMemcpyAsync(mine, dev, BUF_BYTES, cudaMemcpyDeviceToHost, s));
    unsigned char b = mine[BUF_BYTES / 2]; /* faults while the copy is in flight */
    if (b != 0x3c) __atomic_store_n(&all_fresh, 0, __ATOMIC_RELAXED);
    CHECK(cudaStreamSynchronize(s));
  }
  CHECK(cudaStreamDestroy(s));
  return NULL;
}

int main(int argc, char **argv) {
  int bug = e2e_is_bug(argc, argv);
  (void)bug;
  CHECK(cudaHostAlloc((void **)&region, (THREADS + 1) * BUF_BYTES, cudaHostAllocDefault));
  CHECK(cudaMalloc(&dev, BUF_BYTES));
  CHECK(cudaMemset(dev, 0x3c, BUF_BYTES));
  CHECK(cudaDeviceSynchronize()); /* the workers' non-blocking streams do not wait for it */
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
  /* Meanwhile: enqueue and retire on the last slice, sharing the region with the workers. */
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (int r = 0; r < ROUNDS; r++) {
    CHECK(cudaMemcpyAsync(region + THREADS * BUF_BYTES, dev, BUF_BYTES, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
  }
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  printf("%d threads done; %s\n", THREADS,
         all_fresh ? "every read saw the copied bytes" : "some reads saw stale bytes");
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFreeHost(region));
  CHECK(cudaFree(dev));
  return 0;
}
