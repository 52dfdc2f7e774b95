/* Intent: no enforce wait is without end. A kernel spins on a flag word inside a 1 MiB pinned
 * buffer until the CPU sets it (a flag protocol, as in PyTorch's external-wait graph test): the
 * kernel's access guards the whole buffer, so the CPU's store faults, and enforce would wait for
 * the kernel while the kernel waits for the store. With max_wait_ms the wait ends, the store goes
 * ahead (reported as wait-timeout), and the kernel finishes.
 * Usage: safe_flag_wait */
// Enforce waits max_wait_ms (here 300), reports wait-timeout (a violation it could not prevent:
// exit status 23) and lets the store go; the kernel then finishes. Audit reports the store.
// CASE: safe.flag_wait.enforce MODE enforce EXPECT wait-timeout EXIT 23 STDOUT "^kernel finished"
//   STDERR "waited 3[0-9][0-9]" ENV PG_EXTRA_OPTIONS=guard=1:max_wait_ms=300
// CASE: safe.flag_wait.audit MODE audit EXPECT cpu-write-during-device-access
//   STDOUT "^kernel finished" ENV PG_EXTRA_OPTIONS=guard=1

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"

#define BYTES (1u << 20)

typedef struct spin_args {
  volatile unsigned *flag; /* inside the buffer */
  unsigned char *data;     /* written once the flag is set */
  size_t len;
} spin_args_t;

/* Spins (through the device's view of the page) until *flag is non-zero, for at most 30 s, then
 * fills data with 0x5a. */
SIMCUDA_KERNEL(spin_on_flag, sizeof(spin_args_t)) {
  const spin_args_t *a = launch->args[0];
  volatile unsigned *flag = simcuda_dma((const void *)a->flag);
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (!*flag) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - t0.tv_sec > 30) return; /* never seen: the data stays unwritten */
    usleep(100);
  }
  memset(simcuda_dma(a->data), 0x5a, a->len);
}

int main(void) {
  alarm(60);
  unsigned char *buf;
  CHECK(cudaHostAlloc((void **)&buf, BYTES, cudaHostAllocDefault));
  memset(buf, 0, BYTES);
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  spin_args_t a = {.flag = (volatile unsigned *)buf, .data = buf + 4096, .len = 4096};
  void *args[] = {&a};
  CHECK(cudaLaunchKernel((const void *)spin_on_flag, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, s));
  usleep(50 * 1000); /* the kernel is spinning */
  *(volatile unsigned *)buf = 1; /* the CPU's half of the protocol */
  CHECK(cudaStreamSynchronize(s));
  int ok = buf[4096] == 0x5a && buf[8191] == 0x5a;
  printf(ok ? "kernel finished after the flag\n" : "the kernel never saw the flag\n");
  CHECK(cudaFreeHost(buf));
  return ok ? 0 : 1;
}
