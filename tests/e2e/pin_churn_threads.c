/* Intent: correct multi-threaded code gets no report. Eight threads each loop: pin a buffer of
 * their own (sizes vary, so freed addresses are handed to other threads at other sizes), copy
 * into it, synchronize, check the bytes, unpin. Every free is ordered after its copy, so any
 * report is false: state from an earlier region or access at a reused address must not outlive
 * its free. "alloc" uses cudaHostAlloc/cudaFreeHost, "register" mmap + cudaHostRegister.
 * Usage: pin_churn_threads alloc|register [rounds] */
// CASE: pin_churn_threads.${how}.${mode} MODE ${mode} EXPECT none ARGS ${how}
//   STDOUT " 0 bad bytes" ENV ${GUARD_ENV} FOR how IN alloc register FOR mode IN audit enforce

#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include "e2e.h"

#define THREADS 8

static int use_register;
static int rounds = 150;
static void *dev;
static atomic_int bad_bytes;

static void *worker(void *arg) {
  unsigned seed = (unsigned)(long)arg * 2654435761u + 1;
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (int r = 0; r < rounds; r++) {
    seed = seed * 1103515245u + 12345u;
    size_t pages = 1 + (seed >> 16) % 48;
    size_t len = pages * 4096;
    unsigned char *p;
    if (use_register) {
      p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) exit(2);
      CHECK(cudaHostRegister(p, len, cudaHostRegisterDefault));
    } else {
      CHECK(cudaHostAlloc((void **)&p, len, cudaHostAllocDefault));
    }
    memset(p, 0, len);
    CHECK(cudaMemcpyAsync(p, dev, len, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    for (size_t i = 0; i < len; i += 1024)
      if (p[i] != 0x77) atomic_fetch_add(&bad_bytes, 1);
    if (use_register) {
      CHECK(cudaHostUnregister(p));
      munmap(p, len);
    } else {
      CHECK(cudaFreeHost(p));
    }
  }
  CHECK(cudaStreamDestroy(s));
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2 || (strcmp(argv[1], "alloc") && strcmp(argv[1], "register"))) {
    fprintf(stderr, "usage: %s alloc|register [rounds]\n", argv[0]);
    return 2;
  }
  use_register = !strcmp(argv[1], "register");
  if (argc > 2) rounds = atoi(argv[2]);
  CHECK(cudaMalloc(&dev, 48 * 4096));
  CHECK(cudaMemset(dev, 0x77, 48 * 4096));
  CHECK(cudaDeviceSynchronize());
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  printf("%d threads x %d rounds, %d bad bytes\n", THREADS, rounds, atomic_load(&bad_bytes));
  return atomic_load(&bad_bytes) ? 1 : 0;
}
