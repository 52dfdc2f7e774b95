/* Intent: a guard-page fault taken on a small-stack worker thread whose stack lies right next to
 * the pinned buffer is pinguard's fault, not a stack overflow: it must be settled and the program
 * must go on. The worker's 128 KiB stack and the registered buffer are carved from one mapping,
 * so the buffer starts a few KiB above the thread's stack pointer (before, any fault within 1 MiB
 * of the stack pointer was handed to the default action and killed the process).
 * "bug": the worker reads the destination of an in-flight device->host copy (audit reports
 * cpu-read-during-device-write; enforce waits and the read sees the copied bytes). "fixed": it
 * synchronizes first. A real stack overflow on such a thread still dies by SIGSEGV: "overflow"
 * recurses without bound and expects the default action (exit status 139 from the shell).
 * Usage: guard_small_stack bug|fixed|overflow */
// SCENARIO: guard_small_stack cpu-read-during-device-write ENV ${GUARD_ENV}
// CASE: guard_small_stack.enforce_data MODE enforce EXPECT cpu-read-during-device-write ARGS bug
//   STDOUT "worker read byte 0x5a" ENV ${GUARD_ENV} ${PG_WAIT_LATENCY}
// A real overflow on such a thread still dies of SIGSEGV.
// CASE: guard_small_stack.overflow MODE audit EXPECT none ARGS overflow EXIT 139
//   STDOUT "recursing" ENV ${APP_HANDLER_ENV}

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>

#include "e2e.h"

/* ThreadSanitizer needs about 1 MiB of a thread's stack for itself: the stack still ends right
 * below the buffer either way. */
#if defined(__SANITIZE_THREAD__)
#define STACK_BYTES (2048u * 1024u)
#else
#define STACK_BYTES (128u * 1024u)
#endif

static unsigned char *buf;
static void *dev;
static int bug;

static void *worker(void *unused) {
  (void)unused;
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  memset(buf, 0, BUF_BYTES);
  CHECK(cudaMemcpyAsync(buf, dev, BUF_BYTES, cudaMemcpyDeviceToHost, s));
  if (!bug) CHECK(cudaStreamSynchronize(s));
  volatile unsigned char b = buf[BUF_BYTES / 2]; /* faults while the copy is in flight */
  printf("worker read byte 0x%02x\n", b);
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaStreamDestroy(s));
  return NULL;
}

static int depth(volatile int n) {
  volatile char pad[512];
  pad[0] = (char)n;
  if (n < 0) return 0; /* never: n only grows, until the stack runs out */
  return depth(n + 1) + pad[0];
}

static void *overflow(void *unused) {
  (void)unused;
  /* An alternate signal stack, so that a SIGSEGV handler can run at all on overflow. */
  stack_t ss = {.ss_sp = malloc(64 * 1024), .ss_size = 64 * 1024};
  sigaltstack(&ss, NULL);
  printf("recursing\n");
  fflush(stdout);
  return (void *)(long)depth(0);
}

int main(int argc, char **argv) {
  int do_overflow = argc > 1 && strcmp(argv[1], "overflow") == 0;
  if (!do_overflow) bug = e2e_is_bug(argc, argv);
  /* One mapping: [stack | pinned buffer]; the stack grows down, away from the buffer. */
  unsigned char *map = mmap(NULL, STACK_BYTES + BUF_BYTES, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) return 2;
  buf = map + STACK_BYTES;
  CHECK(cudaHostRegister(buf, BUF_BYTES, cudaHostRegisterDefault));
  CHECK(cudaMalloc(&dev, BUF_BYTES));
  CHECK(cudaMemset(dev, 0x5a, BUF_BYTES));
  CHECK(cudaDeviceSynchronize());
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstack(&attr, map, STACK_BYTES);
  if (do_overflow) {
    /* A guard page below the stack, as glibc gives every thread it allocates itself. */
    mprotect(map, 4096, PROT_NONE);
    /* Keep one copy in flight into the buffer, so pinguard guards pages beside the stack. */
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaMemcpyAsync(buf, dev, BUF_BYTES, cudaMemcpyDeviceToHost, s));
  }
  pthread_t t;
  pthread_create(&t, &attr, do_overflow ? overflow : worker, NULL);
  pthread_join(t, NULL);
  CHECK(cudaHostUnregister(buf));
  printf("worker done\n");
  return 0;
}
