/* Intent: a program's own signal handler that reads a guarded buffer while its thread is inside
 * pinguard's guard bookkeeping (a stripe lock held, an mprotect under way) must not hang the
 * process: the fault path may take no lock the interrupted thread can hold.
 * A worker copies device->host into a 2 MiB-aligned registered buffer and synchronizes, over and
 * over (each copy protects its pages under a guard lock, each retirement opens them under it);
 * another thread sends the worker SIGUSR1 all the while, and the handler reads the buffer. Every
 * guard fault lands in one granule, so a signal that arrives while the worker holds that
 * granule's lock faults on a page whose lock the worker itself holds.
 * An alarm turns a hang into a failure. Usage: safe_signal_reentry [iterations] */
// Not under ThreadSanitizer, which holds a program's asynchronous signals back and runs their
// handlers itself on leaving an intercepted call (here pinguard's pthread_mutex_unlock of a guard
// stripe): the guard fault that handler takes never reaches pinguard's SIGSEGV handler, and the
// process dies of it (seen under gdb in CI's TSAN build; the normal and ASAN+UBSAN builds pass).
// SAFE: signal_reentry.${mode} OPTIONS mode=${mode}:guard=1:guard_min_bytes=4096:exitcode=0
//   ENV SIMCUDA_LATENCY_US=200 CHECK --stdout "^done" ARGS 3000 FOR mode IN audit enforce
//   IF NOT PG_E2E_TSAN

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "e2e.h"

#define REGION (2u << 20)
#define PIECE (256u * 1024u)

static unsigned char *buf;
static pthread_t worker_thread;
static atomic_bool done;
static atomic_long handled;

static void on_usr1(int sig) {
  (void)sig;
  volatile unsigned char b = buf[PIECE / 2]; /* inside the piece the copies write */
  (void)b;
  atomic_fetch_add_explicit(&handled, 1, memory_order_relaxed);
}

static void *signaller(void *unused) {
  (void)unused;
  while (!atomic_load(&done)) {
    pthread_kill(worker_thread, SIGUSR1);
    usleep(20);
  }
  return NULL;
}

int main(int argc, char **argv) {
  long iterations = argc > 1 ? atol(argv[1]) : 3000;
  alarm(30); /* a hang dies by SIGALRM */
  /* 2 MiB-aligned, so the whole buffer is one granule of pinguard's guard table. */
  unsigned char *map = mmap(NULL, 2 * REGION, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) return 2;
  buf = (unsigned char *)(((uintptr_t)map + REGION - 1) & ~(uintptr_t)(REGION - 1));
  memset(buf, 0, REGION);
  CHECK(cudaHostRegister(buf, REGION, cudaHostRegisterDefault));
  void *dev;
  CHECK(cudaMalloc(&dev, PIECE));
  CHECK(cudaMemset(dev, 0x5a, PIECE));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaDeviceSynchronize());

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);

  worker_thread = pthread_self();
  pthread_t t;
  pthread_create(&t, NULL, signaller, NULL);
  for (long i = 0; i < iterations; i++) {
    CHECK(cudaMemcpyAsync(buf, dev, PIECE, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
  }
  atomic_store(&done, true);
  pthread_join(t, NULL);
  for (size_t i = 0; i < PIECE; i++)
    if (buf[i] != 0x5a) {
      printf("byte %zu is 0x%02x, expected 0x5a\n", i, buf[i]);
      return 1;
    }
  CHECK(cudaHostUnregister(buf));
  printf("done: %ld iterations, %ld signals handled\n", iterations, atomic_load(&handled));
  return 0;
}
