/* Intent: the bookkeeping of a pinned region ends with the region, even when another thread pins
 * the same address before the unpinning call has returned. Thread T2 registers a 64-page
 * mapping and unregisters it; the simulated runtime takes 300 ms to return after releasing it
 * (SIMCUDA_UNPIN_RETURN_US), and meanwhile the main thread registers the mapping's first 16
 * pages again. Then the main thread registers pages 32..47 too, starts a device->host copy into
 * them, and unregisters the first 16 pages, which no GPU work touches: that is correct code and
 * gets no report. (Before, T2's late bookkeeping removed the main thread's new region and left
 * its own 64-page one behind, so the last unregister was reported against the copy.)
 * "alloc": T2 allocates and frees with cudaHostAlloc, and the main thread is handed the freed
 * address before T2's free returns. The main thread then reads that buffer while a copy into it
 * is in flight (guard pages): the report must name the main thread's buffer, "pinned by
 * cudaHostAlloc (thread T1)", not T2's freed one.
 * Usage: unpin_reuse register|alloc */
// LIST: reuse_env SIMCUDA_UNPIN_RETURN_US=300000 SIMCUDA_LATENCY_US=50000
// CASE: unpin_reuse.register.${mode} MODE ${mode} EXPECT none ARGS register
//   STDOUT "address reused: yes" ENV ${reuse_env} FOR mode IN audit enforce
// ThreadSanitizer places mappings itself, so the freed address is not handed out again there.
// CASE: unpin_reuse.alloc.${mode} MODE ${mode} EXPECT cpu-read-during-device-write ARGS alloc
//   STDOUT "address reused: yes" STDERR "pinned by cudaHostAlloc [(]thread T1[)]"
//   ENV ${reuse_env} ${GUARD_ENV} FOR mode IN audit enforce IF NOT PG_E2E_TSAN

#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <time.h>

#include "e2e.h"

#define PAGE 4096u
static unsigned char *map;
static int use_alloc;
static atomic_int t2_started;

static void *t2(void *unused) {
  (void)unused;
  if (use_alloc) {
    CHECK(cudaHostAlloc((void **)&map, 16 * PAGE, cudaHostAllocDefault));
    atomic_store(&t2_started, 1);
    CHECK(cudaFreeHost(map));
  } else {
    CHECK(cudaHostRegister(map, 64 * PAGE, cudaHostRegisterDefault));
    atomic_store(&t2_started, 1);
    CHECK(cudaHostUnregister(map));
  }
  return NULL;
}

static void nap_ms(int ms) {
  struct timespec ts = {0, ms * 1000000L};
  nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
  if (argc < 2 || (strcmp(argv[1], "register") && strcmp(argv[1], "alloc"))) {
    fprintf(stderr, "usage: %s register|alloc\n", argv[0]);
    return 2;
  }
  use_alloc = !strcmp(argv[1], "alloc");
  void *dev;
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaMalloc(&dev, 16 * PAGE));
  if (!use_alloc) {
    map = mmap(NULL, 64 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) return 2;
  }
  unsigned char *scratch; /* the main thread pins first, so it is T1 in reports */
  CHECK(cudaHostAlloc((void **)&scratch, PAGE, cudaHostAllocDefault));
  pthread_t t;
  pthread_create(&t, NULL, t2, NULL);
  while (!atomic_load(&t2_started)) nap_ms(1);
  unsigned char *first = NULL, *other;
  if (use_alloc) {
    /* T2's free releases the address within its first milliseconds; the runtime gives the most
     * recently freed range of the same size back first. */
    nap_ms(100);
    CHECK(cudaHostAlloc((void **)&first, 16 * PAGE, cudaHostAllocDefault));
    CHECK(cudaHostAlloc((void **)&other, 16 * PAGE, cudaHostAllocDefault));
  } else {
    /* Registering again succeeds as soon as T2's unregister has released the pages. */
    for (int i = 0; i < 200 && !first; i++) {
      if (cudaHostRegister(map, 16 * PAGE, cudaHostRegisterDefault) == cudaSuccess) first = map;
      else nap_ms(1);
    }
    if (!first) return 2;
    other = map + 32 * PAGE;
    CHECK(cudaHostRegister(other, 16 * PAGE, cudaHostRegisterDefault));
  }
  pthread_join(t, NULL); /* T2's unpin call has returned */
  printf("address reused: %s\n", first == map ? "yes" : "no");
  if (use_alloc) {
    CHECK(cudaMemcpyAsync(first, dev, 16 * PAGE, cudaMemcpyDeviceToHost, s));
    volatile unsigned char b = first[8 * PAGE]; /* faults: the copy is in flight */
    (void)b;
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaFreeHost(first));
    CHECK(cudaFreeHost(other));
  } else {
    CHECK(cudaMemcpyAsync(other, dev, 16 * PAGE, cudaMemcpyDeviceToHost, s));
    CHECK(cudaHostUnregister(first)); /* no GPU work touches these pages */
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaHostUnregister(other));
  }
  CHECK(cudaFreeHost(scratch));
  printf("done\n");
  return 0;
}
