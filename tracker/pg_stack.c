/* pg_stack.c: cheap call-stack capture (frame-pointer walk bounded by the thread's stack) and
 * the slower exact mode through glibc's backtrace(), chosen by pg_stack_set_fast_unwind().
 * Also owns pinguard's small per-thread numbers (T1, T2, ...). */
#include "pg_stack.h"

#include <execinfo.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

static atomic_int g_fast_unwind = 1;
static atomic_uint g_next_thread = 1;

/* The calling thread's stack bounds, learned on its first capture (pthread_getattr_np may
 * allocate and read /proc, so never from a signal handler). */
static __thread uintptr_t t_stack_lo, t_stack_hi;
static __thread int t_stack_known;
static __thread uint32_t t_thread_number;

void pg_stack_set_fast_unwind(int fast) {
  if (!fast) {
    void *warm[2];
    backtrace(warm, 2); /* loads libgcc_s now, not on the first report-worthy event */
  }
  atomic_store_explicit(&g_fast_unwind, fast ? 1 : 0, memory_order_relaxed);
}

uint32_t pg_thread_number(void) {
  if (!t_thread_number)
    t_thread_number = atomic_fetch_add_explicit(&g_next_thread, 1, memory_order_relaxed);
  return t_thread_number;
}

static void learn_stack_bounds(void) {
  pthread_attr_t attr;
  void *addr = NULL;
  size_t size = 0;
  t_stack_known = -1; /* unknown: walks stop at the first frame */
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  if (pthread_attr_getstack(&attr, &addr, &size) == 0 && size) {
    t_stack_lo = (uintptr_t)addr;
    t_stack_hi = (uintptr_t)addr + size;
    t_stack_known = 1;
  }
  pthread_attr_destroy(&attr);
}

/* Walks saved frame pointers from fp. Each step must move up the stack, stay inside it and stay
 * aligned; a frame compiled without a frame pointer fails one of these and ends the walk. */
static unsigned walk_frames(uintptr_t fp, void **pc, unsigned n, unsigned max, unsigned skip) {
  if (t_stack_known != 1) return n;
  while (n < max) {
    if (fp & (sizeof(void *) - 1)) break;
    if (fp < t_stack_lo || fp + 2 * sizeof(void *) > t_stack_hi) break;
    const uintptr_t *frame = (const uintptr_t *)fp;
    uintptr_t ret = frame[1], next = frame[0];
    /* A "return address" inside the stack is data: the frame was not a real one (code built
     * without frame pointers keeps other values in rbp). */
    if (ret < 4096 || (ret >= t_stack_lo && ret < t_stack_hi)) break;
    if (skip) skip--;
    else pc[n++] = (void *)ret;
    if (next <= fp) break;
    fp = next;
  }
  return n;
}

/* noinline: the walk starts from this function's own frame, whose return address is pc[0]. */
__attribute__((noinline)) void pg_stack_capture(pg_stack_t *out, unsigned skip,
                                                unsigned max_depth) {
  if (max_depth > PG_STACK_MAX) max_depth = PG_STACK_MAX;
  out->tid = pg_thread_number();
  out->depth = 0;
  out->flags = 0;
  if (max_depth == 0) return;
  if (!atomic_load_explicit(&g_fast_unwind, memory_order_relaxed)) {
    void *buf[PG_STACK_MAX + 64];
    unsigned want = max_depth + skip + 4;
    if (want > sizeof(buf) / sizeof(buf[0])) want = sizeof(buf) / sizeof(buf[0]);
    int got = backtrace(buf, (int)want);
    /* Our caller's return address marks where the caller's frames begin: usually buf[1], but
     * an interceptor of backtrace() (the sanitizers have one) adds frames before it. */
    void *ret = __builtin_return_address(0);
    int first = 1;
    for (int i = 0; i < got; i++)
      if (buf[i] == ret) {
        first = i;
        break;
      }
    unsigned n = 0;
    for (int i = first + (int)skip; i < got && n < max_depth; i++) out->pc[n++] = buf[i];
    out->depth = (uint8_t)n;
    return;
  }
  if (!t_stack_known) learn_stack_bounds();
  unsigned n = 0;
  if (skip == 0) out->pc[n++] = __builtin_return_address(0); /* exact even if the walk fails */
  else skip--;
  /* This frame's saved fp leads to the caller's frame, whose slot [1] is the next return
   * address: start the walk there. */
  const uintptr_t *self = (const uintptr_t *)__builtin_frame_address(0);
  out->depth = (uint8_t)walk_frames(self[0], out->pc, n, max_depth, skip);
}

void pg_stack_capture_from(pg_stack_t *out, void *pc, void *fp, unsigned max_depth) {
  if (max_depth > PG_STACK_MAX) max_depth = PG_STACK_MAX;
  out->tid = t_thread_number; /* no assignment here: may run in a signal handler */
  out->depth = 0;
  out->flags = 0;
  if (max_depth == 0) return;
  out->pc[0] = pc;
  out->flags = PG_STACK_EXACT_PC0;
  /* Bounds unknown (first event of this thread is a fault): report the faulting pc only. */
  out->depth = (uint8_t)walk_frames((uintptr_t)fp, out->pc, 1, max_depth, 0);
}
