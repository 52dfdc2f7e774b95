/* Intent: many devices in one process (SIMCUDA_DEVICES >= 8), run by multidev.sh.
 * "clean": one thread per device, each on its own device, storing to and retrieving from one
 * shared (portable) pinned pool through its own stream, its device's legacy stream, its per-thread
 * stream and another device's stream, ordered across devices by events and by per-device
 * cudaDeviceSynchronize: correct code, zero reports, every byte right.
 * "bugs": one bug per device, on the main thread, each reported once naming that device:
 *   device 1: cudaFreeHost of a buffer a copy on device 1 writes;
 *   devices 2 and 3: a copy into a buffer on device 2's legacy stream, then a copy from it on
 *     device 3's legacy stream (handle 0 both times; the legacy streams of two devices are not
 *     ordered with each other): a conflict naming device 2;
 *   device 4: a CPU read of a buffer a copy on device 4 writes (guard pages);
 *   devices 5 and 6: device 6's cudaDeviceSynchronize, then the free of a buffer a copy on
 *     device 5 writes (a device sync orders only that device's work);
 *   devices 7 and 0: with device 0 current, a copy on a stream of device 7 (pinguard's completion
 *     event must be device 7's), then the free of its buffer.
 * Both modes check cudaGetDevice after every call that pinguard intercepts (its event creation,
 * queries, waits, guard faults) and print "device mismatches: N" and "corrupted: N" (bytes not
 * as program order says; enforce must leave 0). Usage: multidev clean|bugs [devices] */
#include <pthread.h>

#include "e2e.h"

#define SLOT (64u * 1024u)
#define ROUNDS 12
#define MAXDEV 16

static int ndev = 8;
static unsigned char *pool; /* 4 slots per device */
static cudaStream_t streams[MAXDEV];
static cudaEvent_t events[MAXDEV];
static pthread_barrier_t barrier;
static int mismatches, corrupted;

/* The thread's current device must still be the one the program set. */
static void expect_device(int want, int line) {
  int d = -1;
  CHECK(cudaGetDevice(&d));
  if (d != want) {
    fprintf(stderr, "multidev.c:%d: current device %d, the program set %d\n", line, d, want);
    __atomic_add_fetch(&mismatches, 1, __ATOMIC_RELAXED);
  }
}
#define DEV_IS(k) expect_device((k), __LINE__)

static void expect_bytes(const unsigned char *p, size_t n, unsigned char v) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != v) {
      __atomic_add_fetch(&corrupted, 1, __ATOMIC_RELAXED);
      return;
    }
}

static unsigned char *slot(int dev, int i) { return pool + ((size_t)dev * 4 + i) * SLOT; }

static void *clean_worker(void *arg) {
  int k = (int)(long)arg, prev = (k + ndev - 1) % ndev, next = (k + 1) % ndev;
  CHECK(cudaSetDevice(k));
  CHECK(cudaStreamCreate(&streams[k])); /* blocking: ordered by device k's legacy stream */
  CHECK(cudaEventCreateWithFlags(&events[k], cudaEventDisableTiming));
  void *dev;
  CHECK(cudaMalloc(&dev, 2 * SLOT));
  cudaStream_t s = streams[k];
  pthread_barrier_wait(&barrier); /* every device's stream and event exist */
  for (int r = 0; r < ROUNDS; r++) {
    unsigned char v = (unsigned char)(16 * k + r);
    /* Store: the CPU writes slot 0, device k reads it; retrieve into slot 1. */
    memset(slot(k, 0), v, SLOT);
    CHECK(cudaMemcpyAsync(dev, slot(k, 0), SLOT, cudaMemcpyHostToDevice, s));
    DEV_IS(k);
    CHECK(cudaMemcpyAsync(slot(k, 1), dev, SLOT, cudaMemcpyDeviceToHost, s));
    DEV_IS(k);
    CHECK(cudaEventRecord(events[k], s));
    DEV_IS(k);
    /* Device k's legacy stream waits for s (same device): it may overwrite slot 0, which s
     * read. */
    CHECK(cudaMemcpyAsync(slot(k, 0), dev, SLOT, cudaMemcpyDeviceToHost, 0));
    DEV_IS(k);
    /* The per-thread stream of device k reads slot 2, then waits for it on the host. */
    memset(slot(k, 2), v, SLOT);
    CHECK(cudaMemcpyAsync((char *)dev + SLOT, slot(k, 2), SLOT, cudaMemcpyHostToDevice,
                          cudaStreamPerThread));
    DEV_IS(k);
    CHECK(cudaStreamSynchronize(cudaStreamPerThread));
    DEV_IS(k);
    pthread_barrier_wait(&barrier); /* every device's event of this round is recorded */
    /* Retrieve what device prev wrote into its slot 1, ordered by prev's event (another
     * device's): no conflict with prev's copy. */
    CHECK(cudaStreamWaitEvent(s, events[prev], 0));
    DEV_IS(k);
    CHECK(cudaMemcpyAsync(dev, slot(prev, 1), SLOT, cudaMemcpyHostToDevice, s));
    DEV_IS(k);
    /* A copy on the next device's stream, device k still current: pinguard's completion event
     * belongs to that stream's device. Slot 3 is k's alone. */
    memset(slot(k, 3), v, SLOT);
    CHECK(cudaMemcpyAsync((char *)dev + SLOT, slot(k, 3), SLOT, cudaMemcpyHostToDevice,
                          streams[next]));
    DEV_IS(k);
    CHECK(cudaStreamSynchronize(streams[next]));
    DEV_IS(k);
    CHECK(cudaEventSynchronize(events[prev]));
    DEV_IS(k);
    /* Device k's work (s and its legacy stream) is done: its slots are the CPU's again. */
    CHECK(cudaDeviceSynchronize());
    DEV_IS(k);
    expect_bytes(slot(k, 1), SLOT, v);
    expect_bytes(slot(k, 0), SLOT, v);
    pthread_barrier_wait(&barrier); /* nobody still reads slot 1 of this round */
  }
  CHECK(cudaFree(dev));
  DEV_IS(k);
  pthread_barrier_wait(&barrier); /* nobody still uses another device's stream */
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaEventDestroy(events[k]));
  return NULL;
}

static int clean(void) {
  pthread_barrier_init(&barrier, NULL, (unsigned)ndev);
  CHECK(cudaHostAlloc((void **)&pool, (size_t)ndev * 4 * SLOT, cudaHostAllocPortable));
  pthread_t t[MAXDEV];
  for (long k = 0; k < ndev; k++) pthread_create(&t[k], NULL, clean_worker, (void *)k);
  for (int k = 0; k < ndev; k++) pthread_join(t[k], NULL);
  DEV_IS(0);
  CHECK(cudaFreeHost(pool));
  return 0;
}

/* Device memory on device d, filled with v. */
static void *filled(int d, unsigned char v) {
  void *p;
  CHECK(cudaSetDevice(d));
  CHECK(cudaMalloc(&p, SLOT));
  CHECK(cudaMemset(p, v, SLOT));
  CHECK(cudaDeviceSynchronize());
  return p;
}

static void *pinned(void) {
  void *p;
  CHECK(cudaHostAlloc(&p, SLOT, cudaHostAllocPortable));
  memset(p, 0, SLOT);
  return p;
}

static int bugs(void) {
  if (ndev < 8) {
    fprintf(stderr, "multidev bugs needs 8 devices\n");
    return 2;
  }
  void *d1 = filled(1, 0x11), *d2 = filled(2, 0x22), *d3 = filled(3, 0x33),
       *d4 = filled(4, 0x44), *d5 = filled(5, 0x55), *d7 = filled(7, 0x77);
  cudaStream_t s1, s4, s5, s7;
  CHECK(cudaSetDevice(1));
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaSetDevice(4));
  CHECK(cudaStreamCreateWithFlags(&s4, cudaStreamNonBlocking));
  CHECK(cudaSetDevice(5));
  CHECK(cudaStreamCreateWithFlags(&s5, cudaStreamNonBlocking));
  CHECK(cudaSetDevice(7));
  CHECK(cudaStreamCreateWithFlags(&s7, cudaStreamNonBlocking));

  /* Device 1: free during a copy into the buffer. */
  CHECK(cudaSetDevice(1));
  void *a = pinned();
  CHECK(cudaMemcpyAsync(a, d1, SLOT, cudaMemcpyDeviceToHost, s1));
  DEV_IS(1);
  CHECK(cudaFreeHost(a));
  DEV_IS(1);

  /* Devices 2 and 3: two legacy streams, a write then a read of the same buffer. */
  unsigned char *b = pinned();
  CHECK(cudaSetDevice(2));
  CHECK(cudaMemcpyAsync(b, d2, SLOT, cudaMemcpyDeviceToHost, 0));
  DEV_IS(2);
  CHECK(cudaSetDevice(3));
  CHECK(cudaMemcpyAsync(d3, b, SLOT, cudaMemcpyHostToDevice, 0));
  DEV_IS(3);
  CHECK(cudaDeviceSynchronize());
  DEV_IS(3);
  CHECK(cudaMemcpy(b, d3, SLOT, cudaMemcpyDeviceToHost));
  expect_bytes(b, SLOT, 0x22); /* device 3 got what device 2 wrote (enforce waited) */

  /* Device 4: a CPU read during a copy into the buffer. */
  CHECK(cudaSetDevice(4));
  volatile unsigned char *c = pinned();
  CHECK(cudaMemcpyAsync((void *)c, d4, SLOT, cudaMemcpyDeviceToHost, s4));
  DEV_IS(4);
  unsigned char got = c[SLOT / 2]; /* the guard page faults here */
  DEV_IS(4);
  if (got != 0x44) __atomic_add_fetch(&corrupted, 1, __ATOMIC_RELAXED);

  /* Devices 5 and 6: device 6's synchronize does not cover device 5's copy. */
  CHECK(cudaSetDevice(5));
  void *d = pinned();
  CHECK(cudaMemcpyAsync(d, d5, SLOT, cudaMemcpyDeviceToHost, s5));
  DEV_IS(5);
  CHECK(cudaSetDevice(6));
  CHECK(cudaDeviceSynchronize());
  DEV_IS(6);
  CHECK(cudaFreeHost(d));
  DEV_IS(6);

  /* Devices 7 and 0: device 0 current, a copy on device 7's stream. */
  CHECK(cudaSetDevice(0));
  void *e = pinned();
  CHECK(cudaMemcpyAsync(e, d7, SLOT, cudaMemcpyDeviceToHost, s7));
  DEV_IS(0);
  CHECK(cudaFreeHost(e));
  DEV_IS(0);

  for (int k = 0; k < 8; k++) {
    CHECK(cudaSetDevice(k));
    CHECK(cudaDeviceSynchronize());
  }
  CHECK(cudaFreeHost(b));
  CHECK(cudaFreeHost((void *)c));
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2 || (strcmp(argv[1], "clean") && strcmp(argv[1], "bugs"))) {
    fprintf(stderr, "usage: %s clean|bugs [devices]\n", argv[0]);
    return 2;
  }
  int have = 0;
  CHECK(cudaGetDeviceCount(&have));
  ndev = argc > 2 ? atoi(argv[2]) : have;
  if (ndev < 2 || ndev > MAXDEV || ndev > have) {
    fprintf(stderr, "multidev: %d devices asked, %d present\n", ndev, have);
    return 2;
  }
  int rc = strcmp(argv[1], "clean") == 0 ? clean() : bugs();
  printf("device mismatches: %d\ncorrupted: %d\n", mismatches, corrupted);
  return rc;
}
