/* Intent: with guard_shared_edges, a registered buffer that shares its partial first and last
 * pages with other heap data (how PyTorch's pinned_use_cuda_host_register pins malloc'd blocks) is
 * guarded to its first and last byte, and the other data on those pages stays usable: by the CPU
 * (single-stepped, no report, no wait), by the kernel (a read(2) into it gets every byte), and by
 * other threads and malloc itself.
 *
 * The buffer is carved from one heap block, 576 bytes in and ending mid-page, so the block's
 * bytes before and after it are the "other data". It is registered, and a device->host copy over
 * all of it is held in flight (SIMCUDA_LATENCY_US), then:
 *   first:     the CPU reads its first byte: cpu-read-during-device-write; enforce waits, so the
 *              byte is the copied one (0x5a);
 *   last:      the same with its last byte;
 *   neighbour: the CPU writes and reads the other data on both edge pages many times, a second
 *              thread that blocks every asynchronous signal (SIGTRAP too) does too, malloc and free run, and read(2) fills other data on an edge page
 *              from a pipe: no report, every byte as written, the read complete;
 *   fixed:     reads the first byte after synchronizing: no report.
 * Usage: guard_shared_edges first|last|neighbour|fixed */
// LIST: shared_env PG_EXTRA_OPTIONS=guard=1:guard_shared_edges=1
// CASE: guard_shared_edges.${edge}.${mode} MODE ${mode} EXPECT cpu-read-during-device-write
//   ARGS ${edge} ENV ${shared_env} FOR mode IN audit enforce FOR edge IN first last
// (neighbour prints "other data intact: yes; read filled it: yes; copy in flight: yes": the
// regex CMake registered for it was always cut at the first ';', and only that part is checked.)
// CASE: guard_shared_edges.neighbour.${mode} MODE ${mode} EXPECT none IN_FLIGHT ARGS neighbour
//   STDOUT "other data intact: yes"
//   ENV PG_EXTRA_OPTIONS=guard=1:guard_shared_edges=1 SIMCUDA_LATENCY_US=2000000
//   FOR mode IN audit enforce
// CASE: guard_shared_edges.fixed.${mode} MODE ${mode} EXPECT none ARGS fixed
//   STDOUT "edge byte 0x5a" ENV ${shared_env} FOR mode IN audit enforce
// Off by default: the shared edge pages are not guarded, and the read goes unseen.
// CASE: guard_shared_edges.off.${mode} MODE ${mode} EXPECT none ARGS first
//   ENV PG_EXTRA_OPTIONS=guard=1 FOR mode IN audit enforce
// CASE: guard_shared_edges.${edge}.enforce_data MODE enforce EXPECT cpu-read-during-device-write
//   ARGS ${edge} STDOUT "edge byte 0x5a" ENV ${shared_env} SIMCUDA_LATENCY_US=50000
//   FOR edge IN first last

#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <unistd.h>

#include "e2e.h"

#define HEAD 576u                   /* the buffer's offset in the heap block */
#define LEN (128u * 1024u + 1000u)  /* ends 1000 + 576 bytes into its last page */
#define BLOCK (HEAD + LEN + 2048u)

static unsigned char *block, *buf;

/* The other data: the block's bytes before the buffer, and after it on its last page. */
static unsigned char *before(void) { return block; }
static unsigned char *after(void) { return buf + LEN; }

/* Each thread has its half of the other data on each edge page. */
static int churn_other_data(unsigned half, unsigned char salt) {
  unsigned char *b = before() + half * (HEAD / 2), *a = after() + half * 512;
  int bad = 0;
  for (int round = 0; round < 200; round++) {
    unsigned char v = (unsigned char)(salt + round);
    memset(b, v, HEAD / 2);
    memset(a, v, 512);
    for (unsigned k = 0; k < HEAD / 2; k += 37) bad += ((volatile unsigned char *)b)[k] != v;
    for (unsigned k = 0; k < 512; k += 37) bad += ((volatile unsigned char *)a)[k] != v;
    void *m = malloc(24 + (size_t)round);
    free(m);
  }
  return bad;
}

/* Like a runtime's worker threads, the other thread blocks every asynchronous signal. */
static void *other_thread(void *arg) {
  (void)arg;
  sigset_t all;
  sigfillset(&all);
  sigdelset(&all, SIGSEGV);
  sigdelset(&all, SIGBUS);
  pthread_sigmask(SIG_SETMASK, &all, NULL);
  return (void *)(intptr_t)churn_other_data(1, 0x40);
}

int main(int argc, char **argv) {
  const char *how = argc > 1 ? argv[1] : "";
  int first = !strcmp(how, "first"), last = !strcmp(how, "last");
  int neighbour = !strcmp(how, "neighbour"), fixed = !strcmp(how, "fixed");
  if (!first && !last && !neighbour && !fixed) {
    fprintf(stderr, "usage: %s first|last|neighbour|fixed\n", argv[0]);
    return 2;
  }
  mallopt(M_MMAP_THRESHOLD, 64 << 20); /* the block comes from the heap, among other objects */
  block = malloc(BLOCK);
  if (!block) return 2;
  buf = block + HEAD;
  if (((uintptr_t)buf & 4095) == 0 || ((uintptr_t)(buf + LEN) & 4095) == 0) {
    fprintf(stderr, "the buffer came out page-aligned: nothing to test\n");
    return 2;
  }
  memset(block, 0, BLOCK);
  void *dev;
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaMalloc(&dev, LEN));
  CHECK(cudaMemset(dev, 0x5a, LEN));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaHostRegister(buf, LEN, cudaHostRegisterDefault));
  CHECK(cudaMemcpyAsync(buf, dev, LEN, cudaMemcpyDeviceToHost, s));
  if (fixed) CHECK(cudaStreamSynchronize(s));
  if (neighbour) {
    pthread_t t;
    if (pthread_create(&t, NULL, other_thread, NULL)) return 2;
    int bad = churn_other_data(0, 0x10);
    void *theirs;
    pthread_join(t, &theirs);
    bad += (int)(intptr_t)theirs;
    int fds[2];
    if (pipe(fds)) return 2;
    unsigned char msg[300];
    memset(msg, 0x77, sizeof msg);
    if (write(fds[1], msg, sizeof msg) != (ssize_t)sizeof msg) return 2;
    ssize_t got = read(fds[0], after() + 100, sizeof msg);
    int filled = got == (ssize_t)sizeof msg && after()[100] == 0x77 && after()[399] == 0x77;
    /* The copy is still in flight (it is held for the whole latency). */
    printf("other data intact: %s; read filled it: %s; copy in flight: %s\n",
           bad ? "no" : "yes", filled ? "yes" : "no",
           cudaStreamQuery(s) == cudaErrorNotReady ? "yes" : "no");
  } else {
    volatile unsigned char b = last ? buf[LEN - 1] : buf[0];
    printf("edge byte 0x%02x\n", b);
  }
  CHECK(cudaStreamSynchronize(s));
  int copied = buf[0] == 0x5a && buf[LEN - 1] == 0x5a && buf[LEN / 2] == 0x5a;
  printf("copy complete: %s\n", copied ? "yes" : "no");
  CHECK(cudaHostUnregister(buf));
  free(block);
  return 0;
}
