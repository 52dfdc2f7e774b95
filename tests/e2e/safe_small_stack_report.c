/* Intent: a guard fault on a thread with a small stack (32 KiB, as some runtimes give their
 * workers) is reported without overflowing that stack: the report is formatted on a stack
 * pinguard owns, not below the interrupted frame. The worker reads the destination of an
 * in-flight device->host copy from a few frames deep (audit reports cpu-read-during-device-write
 * from the fault handler; enforce waits there).
 * Usage: safe_small_stack_report [stack bytes [depth in KiB]] */
// SAFE: small_stack_report.${mode}
//   OPTIONS mode=${mode}:guard=1:guard_min_bytes=4096:exitcode=0:dedup=0
//   CHECK --stdout "^worker done" --stderr cpu-read-during-device-write ARGS 32768 18
//   FOR mode IN audit enforce

#include <pthread.h>
#include <sys/mman.h>

#include "e2e.h"

#define BYTES (256u * 1024u)

static unsigned char *buf;
static void *dev;
static int depth = 8; /* frames of 1 KiB above the faulting read */

static __attribute__((noinline)) unsigned char read_deep(int depth) {
  volatile char pad[1024];
  pad[0] = (char)depth;
  if (depth > 0) return (unsigned char)(read_deep(depth - 1) + pad[0] - depth);
  return buf[BYTES / 2]; /* faults while the copy is in flight */
}

static void *worker(void *unused) {
  (void)unused;
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (int i = 0; i < 4; i++) {
    CHECK(cudaMemcpyAsync(buf, dev, BYTES, cudaMemcpyDeviceToHost, s));
    printf("worker read byte 0x%02x\n", read_deep(depth));
    CHECK(cudaStreamSynchronize(s));
  }
  CHECK(cudaStreamDestroy(s));
  return NULL;
}

int main(int argc, char **argv) {
  size_t stack = argc > 1 ? (size_t)atol(argv[1]) : 32 * 1024;
  if (argc > 2) depth = atoi(argv[2]);
  buf = mmap(NULL, BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (buf == MAP_FAILED) return 2;
  CHECK(cudaHostRegister(buf, BYTES, cudaHostRegisterDefault));
  CHECK(cudaMalloc(&dev, BYTES));
  CHECK(cudaMemset(dev, 0x5a, BYTES));
  CHECK(cudaDeviceSynchronize());
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  if (pthread_attr_setstacksize(&attr, stack) != 0) return 2;
  pthread_t t;
  if (pthread_create(&t, &attr, worker, NULL) != 0) return 2;
  pthread_join(t, NULL);
  CHECK(cudaHostUnregister(buf));
  printf("worker done\n");
  return 0;
}
