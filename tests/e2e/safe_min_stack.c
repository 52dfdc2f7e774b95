/* Intent: pinguard changes nothing in a process that never uses CUDA, not even how much of a
 * small thread stack is left: glibc carves every thread's static TLS (pinguard's included) from
 * its stack, so a thread created with a PTHREAD_STACK_MIN stack that uses most of it must still
 * run under the preload. The thread uses STACK_USE bytes of its stack, which fits beside the C
 * library's own TLS and thread descriptor but not beside kilobytes more.
 * Usage: safe_min_stack [bytes to use] */
// SAFE: min_stack.bare CHECK --no-preload --stdout "^thread used"
// SAFE: min_stack.preload CHECK --stdout "^thread used"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t use;

static __attribute__((noinline)) unsigned touch(size_t n) {
  volatile unsigned char *a = __builtin_alloca(n);
  for (size_t i = 0; i < n; i += 64) a[i] = (unsigned char)i;
  unsigned sum = 0;
  for (size_t i = 0; i < n; i += 64) sum += a[i];
  return sum;
}

static void *worker(void *unused) {
  (void)unused;
  /* A small call first: where touch calls into another object (a sanitizer's alloca hooks),
   * the dynamic linker's lazy binding runs here, near the top of the stack, and its depth (which
   * grows with the number of loaded objects and the CPU's register state) stays out of the
   * measure. */
  touch(64);
  return (void *)(uintptr_t)touch(use);
}

int main(int argc, char **argv) {
  use = argc > 1 ? (size_t)atol(argv[1]) : 9 * 1024;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  if (pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN) != 0) return 2;
  pthread_t t;
  int err = pthread_create(&t, &attr, worker, NULL);
  if (err) {
    printf("pthread_create: %s\n", strerror(err));
    return 1;
  }
  void *ret;
  pthread_join(t, &ret);
  printf("thread used %zu bytes of a %d-byte stack\n", use, (int)PTHREAD_STACK_MIN);
  return 0;
}
