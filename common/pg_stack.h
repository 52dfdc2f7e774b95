/* pg_stack.h: call stacks captured as return addresses at every tracked event.
 * Capture is cheap and allocation-free; symbolization happens only when a report is printed
 * (policy/). Shared by tracker/ (which stores stacks) and policy/ (which prints them). */
#ifndef PG_STACK_H
#define PG_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PG_STACK_MAX 16
/* Python frames kept per stack (innermost first): deep enough to get from a library's internals
 * (torch's serialization under pickle is a dozen frames) out to the user's code. */
#define PG_PYSTACK_MAX 24

/* pg_stack_t.flags */
enum {
  /* pc[0] is the address of an instruction that was executing (a faulting one, from a signal
   * context), not a return address: it is symbolized as is, where a return address is looked up
   * one byte back, inside its call instruction (a call can be a function's last bytes). */
  PG_STACK_EXACT_PC0 = 1u << 0,
};

typedef struct pg_stack {
  uint8_t depth;               /* valid entries in pc[] */
  uint8_t flags;               /* PG_STACK_* */
  uint32_t tid;                /* pinguard's small thread number (T1, T2, ...) */
  uint8_t py_depth;            /* valid entries in py_code[] / py_offset[] (pg_pystack.h) */
  void *pc[PG_STACK_MAX];      /* pc[0] is the innermost frame */
  /* The thread's Python frames, innermost first: code object and byte offset of the current
   * instruction in its bytecode (-1: not started), resolved only when a report is printed. */
  const void *py_code[PG_PYSTACK_MAX];
  int32_t py_offset[PG_PYSTACK_MAX];
} pg_stack_t;

/* Whether the file name of `path` (a loaded object's path) starts with one of `prefixes`. */
bool pg_module_named(const char *path, const char *const *prefixes, size_t n);

/* Copies n (at most PG_PYSTACK_MAX) Python frames, in blocks of four (32 and 16 bytes: a few
 * moves each), the first three blocks written out: slots past n up to the next multiple of four
 * get whatever the source's held, and are never read. */
static inline __attribute__((always_inline)) void pg_pyframes_copy(const void **dcode,
                                                                   int32_t *doff,
                                                                   const void *const *scode,
                                                                   const int32_t *soff,
                                                                   unsigned n) {
#define PG_PYFRAMES_BLOCK(i)                                  \
  do {                                                        \
    memcpy(&dcode[i], &scode[i], 4 * sizeof *scode);          \
    memcpy(&doff[i], &soff[i], 4 * sizeof *soff);             \
  } while (0)
  if (!n) return;
  PG_PYFRAMES_BLOCK(0);
  if (n <= 4) return;
  PG_PYFRAMES_BLOCK(4);
  if (n <= 8) return;
  PG_PYFRAMES_BLOCK(8);
  for (unsigned i = 12; i < n; i += 4) PG_PYFRAMES_BLOCK(i);
#undef PG_PYFRAMES_BLOCK
}

/* Copies the valid part of a stack (a stack record is a few hundred bytes, mostly unused). The
 * header, then the frames in fixed-size blocks of PG_STACK_SHORT (a few moves each instead of a
 * loop over frames; slots past depth carry whatever they held and are never read), and the
 * Python frames in blocks of four (pg_pyframes_copy). */
#define PG_STACK_SHORT 4
_Static_assert(PG_STACK_MAX == 4 * PG_STACK_SHORT, "pg_stack_copy copies four blocks of frames");
static inline void pg_stack_copy(pg_stack_t *dst, const pg_stack_t *src) {
  memcpy(dst, src, offsetof(pg_stack_t, pc)); /* depth, flags, tid, py_depth */
  /* The blocks written out, one test each (PG_STACK_MAX is four of them). */
#define PG_STACK_BLOCK(i) memcpy(&dst->pc[i], &src->pc[i], PG_STACK_SHORT * sizeof src->pc[0])
  PG_STACK_BLOCK(0);
  if (src->depth > 4) PG_STACK_BLOCK(4);
  if (src->depth > 8) PG_STACK_BLOCK(8);
  if (src->depth > 12) PG_STACK_BLOCK(12);
#undef PG_STACK_BLOCK
  pg_pyframes_copy(dst->py_code, dst->py_offset, src->py_code, src->py_offset,
                   src->py_depth < PG_PYSTACK_MAX ? src->py_depth : PG_PYSTACK_MAX);
}
_Static_assert(PG_PYSTACK_MAX % 4 == 0, "pg_pyframes_copy copies frames four at a time");

/* Captures up to max_depth (<= PG_STACK_MAX) return addresses of the caller's stack, skipping
 * `skip` innermost frames. Allocation-free and lock-free after the thread's first call. */
void pg_stack_capture(pg_stack_t *out, unsigned skip, unsigned max_depth);

/* pg_stack_capture(out, 0, PG_STACK_MAX), cheaper: every interceptor's call. */
void pg_stack_capture_here(pg_stack_t *out);

/* Where a capture would start, kept so that the capture itself can wait until it is known to be
 * needed (an op that turns out to touch no pinned memory captures nothing): the return address
 * and frame pointer pg_stack_capture_here would start from. A few instructions. */
typedef struct pg_stack_site {
  void *ret;    /* NULL: no site kept */
  uintptr_t fp;
  uintptr_t frame; /* the frame that holds ret as its return address (0: unknown) */
} pg_stack_site_t;
void pg_stack_site_here(pg_stack_site_t *site);
/* The same, taken inline in the calling function's frame, one frame higher: the caller's return
 * address and its caller's frame, so a capture from it starts at the caller's call site (the
 * calling function's own frame, an interceptor's, is not in the stack) and costs no call. The
 * caller must keep a frame pointer (the shim is built with them). */
static inline __attribute__((always_inline)) void pg_stack_site_inline(pg_stack_site_t *site) {
  site->ret = __builtin_return_address(0);
  site->frame = (uintptr_t)__builtin_frame_address(0);
  site->fp = ((const uintptr_t *)site->frame)[0];
}
/* What pg_stack_capture_here would have captured at the site: only while the frame that took the
 * site is still live (called from it, or from a function it called). */
void pg_stack_capture_site(pg_stack_t *out, const pg_stack_site_t *site);

/* Captures from a signal context: pc and frame pointer of the interrupted instruction. pc[0] is
 * that pc, marked PG_STACK_EXACT_PC0. */
void pg_stack_capture_from(pg_stack_t *out, void *pc, void *fp, unsigned max_depth);

/* How stacks are captured (the policy option fast_unwind decides): */
enum {
  PG_UNWIND_EXACT = 0,   /* glibc backtrace() every time: exact, a few microseconds */
  PG_UNWIND_FP = 1,      /* frame pointers only: cheap, stops at a frame built without them */
  PG_UNWIND_FP_REDO = 2, /* frame pointers, continued through the cached unwind tables
                          * (pg_unwind.h) where the walk breaks in the program's code (not at
                          * libc's entry or the Python interpreter's), redone by backtrace()
                          * where those cannot be followed */
};
void pg_stack_set_fast_unwind(int mode);

/* The calling thread's stack bounds, when a capture on this thread has learned them. */
bool pg_stack_bounds(uintptr_t *lo, uintptr_t *hi);

/* Small stable per-thread number, assigned on first use (1 = first thread seen). */
uint32_t pg_thread_number(void);

#endif /* PG_STACK_H */
