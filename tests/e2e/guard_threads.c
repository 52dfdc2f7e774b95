/* Intent: faults on several threads at once, while other threads enqueue and retire accesses.
 * "own": each worker enqueues a device->host copy into its own slice of one pinned region and
 * reads it at once (cpu-read-during-device-write), while the main thread keeps enqueuing and
 * retiring copies into the region's last slice. "samepage": each worker enqueues a host->device
 * copy from its slice and overwrites the slice at once (cpu-write-during-device-access), while the
 * main thread keeps enqueuing and retiring host->device copies from those very pages on its own
 * stream, so faults, new accesses and retirements meet on the same pages. Every fault is handled,
 * nobody hangs or crashes; under enforce, "own" workers always read the copied bytes.
 * Usage: guard_threads bug [own|samepage] */
// CASE: guard_threads.audit MODE audit EXPECT cpu-read-during-device-write ARGS bug own
//   STDOUT "4 threads done" ENV ${GUARD_ENV}
// CASE: guard_threads.enforce MODE enforce EXPECT cpu-read-during-device-write ARGS bug own
//   STDOUT "every read saw the copied bytes" ENV ${GUARD_ENV} ${PG_WAIT_LATENCY}
// (The program prints "4 threads done; same pages shared": the regex CMake registered for this
// case was always cut at the ';', and only its first part is checked.)
// CASE: guard_threads.samepage.${mode} MODE ${mode} EXPECT cpu-write-during-device-access
//   ARGS bug samepage STDOUT "4 threads done" ENV ${GUARD_ENV} FOR mode IN audit enforce

#include <pthread.h>

#include "e2e.h"

#define THREADS 4
#define ROUNDS 20

static unsigned char *region;
static void *dev;
static int samepage;
static int all_fresh = 1;

static void *worker(void *arg) {
  int id = (int)(long)arg;
  cudaStream_t s;
  void *dev_mine;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaMalloc(&dev_mine, BUF_BYTES));
  unsigned char *mine = region + (size_t)id * BUF_BYTES;
  for (int r = 0; r < ROUNDS; r++) {
    if (samepage) {
      CHECK(cudaMemcpyAsync(dev_mine, mine, BUF_BYTES, cudaMemcpyHostToDevice, s));
      memset(mine + BUF_BYTES / 2, r, 64); /* faults while the device reads the page */
    } else {
      memset(mine, 0, BUF_BYTES);
      CHECK(cudaMemcpyAsync(mine, dev, BUF_BYTES, cudaMemcpyDeviceToHost, s));
      unsigned char b = mine[BUF_BYTES / 2]; /* faults while the copy is in flight */
      if (b != 0x3c) __atomic_store_n(&all_fresh, 0, __ATOMIC_RELAXED);
    }
    CHECK(cudaStreamSynchronize(s));
  }
  CHECK(cudaFree(dev_mine));
  CHECK(cudaStreamDestroy(s));
  return NULL;
}

int main(int argc, char **argv) {
  e2e_is_bug(argc, argv);
  samepage = argc > 2 && strcmp(argv[2], "samepage") == 0;
  CHECK(cudaHostAlloc((void **)&region, (THREADS + 1) * BUF_BYTES, cudaHostAllocDefault));
  CHECK(cudaMalloc(&dev, (THREADS + 1) * BUF_BYTES));
  CHECK(cudaMemset(dev, 0x3c, (THREADS + 1) * BUF_BYTES));
  CHECK(cudaDeviceSynchronize()); /* the workers' non-blocking streams do not wait for it */
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
  /* Meanwhile the main thread enqueues and retires accesses of its own: on the last slice
   * ("own"), or reads of the workers' very pages ("samepage"). */
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (int r = 0; r < ROUNDS; r++) {
    if (samepage)
      CHECK(cudaMemcpyAsync(dev, region, THREADS * BUF_BYTES, cudaMemcpyHostToDevice, s));
    else
      CHECK(cudaMemcpyAsync(region + THREADS * BUF_BYTES, dev, BUF_BYTES, cudaMemcpyDeviceToHost,
                            s));
    CHECK(cudaStreamSynchronize(s));
  }
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  printf("%d threads done; %s\n", THREADS,
         samepage ? "same pages shared"
         : all_fresh ? "every read saw the copied bytes" : "some reads saw stale bytes");
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFreeHost(region));
  CHECK(cudaFree(dev));
  return 0;
}
