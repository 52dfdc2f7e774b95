/* pg_stack.c: cheap call-stack capture (frame-pointer walk bounded by the thread's stack, with
 * glibc's backtrace() where the walk breaks) and the slower exact mode that always uses
 * backtrace(), chosen by pg_stack_set_fast_unwind(); the Python frames come from pg_pystack.c.
 * Also owns pinguard's small per-thread numbers (T1, T2, ...). */
#include "pg_stack.h"

#include <errno.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "pg_pystack.h"
#include "pg_tls.h"
#include "pg_unwind.h"

static atomic_int g_fast_unwind = PG_UNWIND_FP;
static atomic_uint g_next_thread = 1;


/* Code where a frame-pointer walk may end without having broken: the C library's program and
 * thread entry (and the sanitizer runtimes' thread entry) are built without frame pointers and
 * are the outermost frames of every stack; an interpreter's evaluation loop (and ctypes' call
 * through libffi into it) is where a Python process's native stack turns into Python frames,
 * which pg_pystack.c reads instead. A walk
 * that ends anywhere else broke inside the caller's code and is redone by the unwinder.
 * Written once, before the count is published; read without a lock. */
#define END_RANGES 16
static struct {
  uintptr_t lo, hi;
} end_ranges[END_RANGES];
static atomic_uint n_end_ranges;

bool pg_module_named(const char *path, const char *const *prefixes, size_t n) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  for (size_t i = 0; i < n; i++)
    if (strncmp(base, prefixes[i], strlen(prefixes[i])) == 0) return true;
  return false;
}

static bool end_module(const char *path) {
  static const char *const prefixes[] = {"libc.so", "libc-", "libasan", "libtsan", "libubsan",
                                         "libpython", "python", "libffi", "_ctypes."};
  return pg_module_named(path, prefixes, sizeof prefixes / sizeof prefixes[0]);
}

static int add_end_module(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  unsigned *n = data;
  const char *name = info->dlpi_name;
  if (!name || !name[0]) name = program_invocation_name; /* the main program */
  if (!name || !end_module(name)) return 0;
  for (unsigned i = 0; i < info->dlpi_phnum && *n < END_RANGES; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    end_ranges[*n].lo = info->dlpi_addr + ph->p_vaddr;
    end_ranges[*n].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
    (*n)++;
  }
  return 0;
}

static bool walk_may_end_at(uintptr_t ret) {
  unsigned n = atomic_load_explicit(&n_end_ranges, memory_order_acquire);
  for (unsigned i = 0; i < n; i++)
    if (ret - 1 >= end_ranges[i].lo && ret - 1 < end_ranges[i].hi) return true;
  return false;
}

/* Break points (the last return address a walk reached) where a walk is taken as complete: end
 * frames (walk_may_end_at), and those from which the unwinder found nothing but end frames (a
 * thread's entry in libc, for a thread function built without frame pointers). This thread then
 * stops paying for the range scan, or the unwinder, at that site. Direct-mapped, per thread: no
 * lock. */
#define DEAD_ENDS 64

/* The calling thread's capture state, in one block (one thread-pointer offset for all of it):
 * its stack bounds, learned on its first capture (pthread_getattr_np may allocate and read
 * /proc, so never from a signal handler), its number and its break points. */
static __thread struct {
  uintptr_t lo, hi;
  int known; /* 0: not yet learned; 1: lo and hi hold; -1: unknown (walks stop at frame 0) */
  uint32_t number;
  bool ready; /* known == 1 and number given: pg_stack_capture_here's one test */
} t_cap;
/* The tail memo: the last walk the cached unwinder made from a broken frame-pointer walk, in
 * this thread, with the stack words it read (pg_unwind_log_t). A capture that breaks at the same
 * frame, with the same registers and the same words on the stack, gets the same frames: they
 * are copied instead of unwound again (a loop calling the API from one place, in code without
 * frame pointers, checks a few words instead of unwinding a few frames). Every word it checks
 * was within this thread's stack bounds when the walk read it. Written only by this thread,
 * with pinguard's reentrancy guard held (no capture nests in one that is writing it). */
typedef struct tail_memo {
  uintptr_t pc, sp, fp;   /* the walk's registers */
  unsigned from, to, max; /* it recorded out->pc[from, to), under max; max 0: empty */
  uint8_t end;            /* its pg_unwind_end_t */
  bool only_end;
  void *tail[PG_STACK_MAX];
  pg_unwind_log_t log;
} tail_memo_t;

/* The break points and the tail memo, in a per-thread block mapped on first use (pg_tls.h):
 * NULL (no memory) means none is known, and a broken walk is redone each time. The break
 * points come first: the block's address is the table's. */
typedef struct stack_block {
  uintptr_t ends[DEAD_ENDS];
  tail_memo_t memo;
} stack_block_t;
static stack_block_t *stack_block(void) { return pg_tls_get(PG_TLS_STACK_ENDS, sizeof(stack_block_t)); }
static uintptr_t *dead_ends(void) {
  stack_block_t *b = stack_block();
  return b ? b->ends : NULL;
}

static unsigned dead_end_slot(uintptr_t ret) { return (unsigned)((ret >> 4) ^ (ret >> 12)) % DEAD_ENDS; }

void pg_stack_set_fast_unwind(int fast) {
  if (!atomic_load(&n_end_ranges)) {
    unsigned n = 0;
    dl_iterate_phdr(add_end_module, &n);
    atomic_store_explicit(&n_end_ranges, n, memory_order_release);
    pg_unwind_set_end_test(walk_may_end_at);
  }
  /* Both modes may unwind (the fast one where its walk breaks): load libgcc_s now, not on the
   * first report-worthy event. */
  void *warm[2];
  backtrace(warm, 2);
  atomic_store_explicit(&g_fast_unwind, fast, memory_order_relaxed);
}

uint32_t pg_thread_number(void) {
  if (!t_cap.number) {
    t_cap.number = atomic_fetch_add_explicit(&g_next_thread, 1, memory_order_relaxed);
    t_cap.ready = t_cap.known == 1;
  }
  return t_cap.number;
}

static void learn_stack_bounds(void) {
  pthread_attr_t attr;
  void *addr = NULL;
  size_t size = 0;
  t_cap.known = -1; /* unknown: walks stop at the first frame */
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  if (pthread_attr_getstack(&attr, &addr, &size) == 0 && size) {
    t_cap.lo = (uintptr_t)addr;
    t_cap.hi = (uintptr_t)addr + size;
    t_cap.known = 1;
    t_cap.ready = t_cap.number != 0;
  }
  pthread_attr_destroy(&attr);
}

bool pg_stack_bounds(uintptr_t *lo, uintptr_t *hi) {
  if (t_cap.known != 1) return false;
  *lo = t_cap.lo;
  *hi = t_cap.hi;
  return true;
}

/* Walks saved frame pointers from fp (*at: the last frame whose return address it recorded, 0
 * if none). Each step must move up the stack, stay inside it and stay
 * aligned; a frame compiled without a frame pointer fails one of these and ends the walk.
 * *broken (if given) tells such an end from a full buffer. A saved frame pointer of 0 ends the
 * walk too, but counts as a break: the C library's thread and program entry leave one (an end
 * frame, or a dead end, which the caller learns once per thread and site), and so can code
 * built without frame pointers that keeps 0 in rbp, where the stack goes on. */
static inline __attribute__((always_inline)) unsigned walk_frames(uintptr_t fp, void **pc,
                                                                 unsigned n, unsigned max,
                                                                 unsigned skip, bool *broken,
                                                                 uintptr_t *at) {
  bool bad = true;
  *at = 0;
  if (t_cap.known != 1) goto out;
  uintptr_t lo = t_cap.lo, hi = t_cap.hi;
  while (n < max) {
    /* lo <= fp <= hi - 2 words, as one unsigned compare (hi - lo is at least a page). */
    if (fp & (sizeof(void *) - 1)) break;
    if (fp - lo > hi - lo - 2 * sizeof(void *)) break;
    const uintptr_t *frame = (const uintptr_t *)fp;
    uintptr_t ret = frame[1], next = frame[0];
    /* A "return address" inside the stack is data: the frame was not a real one (code built
     * without frame pointers keeps other values in rbp). */
    if (ret < 4096 || ret - lo < hi - lo) break;
    if (skip) skip--;
    else pc[n++] = (void *)ret, *at = fp; /* the frame whose return address was recorded last */
    if (next <= fp) break; /* 0 included */
    fp = next;
  }
  if (n == max) bad = false;
out:
  if (broken) *broken = bad;
  return n;
}

/* The unwinder (glibc's backtrace(), libgcc's DWARF unwinder underneath): exact through frames
 * built without frame pointers. Not for signal handlers (pg_decide_fault_stack argues its own
 * case). The caller's frames are `ret` (a return address into the frame at fp: where they begin)
 * and the frames the unwinder finds above that frame. The frame is found by its own return
 * address, fp[1], so that a capture may run from deeper than the frame that took the site
 * (pg_stack_capture_site); failing that (fp is not a frame), by ret itself. */
static unsigned unwind(void *ret, uintptr_t fp, void **pc, unsigned skip, unsigned max_depth) {
  void *buf[PG_STACK_MAX + 64];
  unsigned want = max_depth + skip + 4 + 8;
  if (want > sizeof(buf) / sizeof(buf[0])) want = sizeof(buf) / sizeof(buf[0]);
  int got = backtrace(buf, (int)want);
  void *anchor = NULL;
  if (t_cap.known == 1 && !(fp & 7) && fp - t_cap.lo < t_cap.hi - t_cap.lo - 16)
    anchor = ((void *const *)fp)[1];
  /* Usually buf[1] is ret, but an interceptor of backtrace() (the sanitizers have one) adds
   * frames before it. */
  int first = -1;
  for (int i = 0; anchor && i < got; i++)
    if (buf[i] == anchor) {
      first = i - 1; /* buf[first] stands for ret */
      break;
    }
  for (int i = 0; first < 0 && i < got; i++)
    if (buf[i] == ret) first = i;
  if (first < 0) first = got ? 1 : 0;
  unsigned n = 0;
  for (int i = first + (int)skip; i < got && n < max_depth; i++)
    pc[n++] = i == first ? ret : buf[i];
  return n;
}

/* A walk of n frames that broke at `last`: redone by the unwinder from `ret` (the capture's
 * return address); where the unwinder finds nothing more but end frames, the break point is
 * remembered as a dead end. Returns the depth. Out of line, so that the common capture keeps a
 * small frame. */
__attribute__((noinline)) static unsigned redo_walk(pg_stack_t *out, unsigned n, uintptr_t last,
                                                    void *ret, uintptr_t fp, unsigned skip,
                                                    unsigned max_depth) {
  void *pc[PG_STACK_MAX];
  unsigned m = unwind(ret, fp, pc, skip, max_depth);
  bool gained = false;
  for (unsigned i = n; i < m && !gained; i++) gained = !walk_may_end_at((uintptr_t)pc[i]);
  uintptr_t *ends = dead_ends();
  if (!gained && ends) ends[dead_end_slot(last)] = last;
  if (m > n) {
    memcpy(out->pc, pc, m * sizeof *pc);
    n = m;
  }
  return n;
}

/* tail_from_memo's answer when the memo does not hold (no pg_unwind_end_t). */
#define PG_UNWIND_NO_MEMO ((pg_unwind_end_t)-1)

/* The memo's walk, if it was made from r with out->pc[n] next under max_depth and the stack
 * still holds every word it read: its frames copied to out->pc[n..*m), its ending returned.
 * Else PG_UNWIND_NO_MEMO, out untouched. */
static inline __attribute__((always_inline)) pg_unwind_end_t
tail_from_memo(const tail_memo_t *mm, pg_unwind_regs_t r, pg_stack_t *out, unsigned n,
               unsigned max_depth, unsigned *m, bool *only_end) {
  if (mm->pc != r.pc || mm->sp != r.sp || mm->fp != r.fp || mm->from != n ||
      mm->max != max_depth || max_depth == 0)
    return PG_UNWIND_NO_MEMO;
  /* Every word read, four at a time, one branch at the end: the words lie above the break
   * frame's sp, which is this capture's too, in the live stack, so reading past one that
   * differs is harmless. */
  const uintptr_t *at = mm->log.at, *val = mm->log.val, *quad_end = at + (mm->log.n & ~3u),
                  *end_at = at + mm->log.n;
  uintptr_t d = 0;
#define PG_MEMO_WORD(i) (*(const volatile uintptr_t *)at[i] ^ val[i])
  for (; at != quad_end; at += 4, val += 4)
    d |= PG_MEMO_WORD(0) | PG_MEMO_WORD(1) | PG_MEMO_WORD(2) | PG_MEMO_WORD(3);
  for (; at != end_at; at++, val++) d |= PG_MEMO_WORD(0);
#undef PG_MEMO_WORD
  if (d) return PG_UNWIND_NO_MEMO;
  /* The frames, four at a time; the last four end where the tail ends, overlapping the block
   * before (the same values again). A tail of under four frames one by one. */
  void **dst = &out->pc[n], **end = &out->pc[mm->to];
  void *const *src = mm->tail;
  if (__builtin_expect(mm->to - n >= 4, 1)) {
    for (; dst + 4 <= end; dst += 4, src += 4) memcpy(dst, src, 4 * sizeof *dst);
    if (dst < end) memcpy(end - 4, src + (end - dst) - 4, 4 * sizeof *dst);
  } else {
    for (; dst < end; dst++, src++) *dst = *src;
  }
  *m = mm->to;
  *only_end = mm->only_end;
  return (pg_unwind_end_t)mm->end;
}

/* The cached unwinder from r (out->pc[n] next), its walk kept in the memo (if any) when every
 * word it read could be logged. */
__attribute__((noinline)) static pg_unwind_end_t tail_unwind(tail_memo_t *mm, pg_unwind_regs_t r,
                                                             pg_stack_t *out, unsigned n,
                                                             unsigned max_depth, unsigned *m,
                                                             bool *only_end) {
  if (!mm)
    return pg_unwind_continue(r, out->pc, m, max_depth, t_cap.lo, t_cap.hi,
                              PG_UNWIND_STOP_AT_END, only_end);
  mm->max = 0; /* empty while it is rewritten */
  pg_unwind_end_t end = pg_unwind_continue_logged(r, out->pc, m, max_depth, t_cap.lo, t_cap.hi,
                                                  PG_UNWIND_STOP_AT_END, only_end, &mm->log);
  if (mm->log.n > PG_UNWIND_LOG_MAX || *m > PG_STACK_MAX) return end;
  for (unsigned i = n; i < *m; i++) mm->tail[i - n] = out->pc[i];
  mm->pc = r.pc, mm->sp = r.sp, mm->fp = r.fp;
  mm->from = n, mm->to = *m;
  mm->end = (uint8_t)end;
  mm->only_end = *only_end;
  mm->max = max_depth;
  return end;
}

/* The registers the cached unwinder starts from at a broken walk's last recorded frame, `at`:
 * its return address, the stack pointer just above it, its saved rbp. */
static inline pg_unwind_regs_t break_regs(uintptr_t at) {
  const uintptr_t *f = (const uintptr_t *)at;
  return (pg_unwind_regs_t){f[1], at + 2 * sizeof(uintptr_t), f[0]};
}

/* A walk of n frames broke (the frame at `at` was the last one it recorded, whose saved rbp it
 * could not follow): the rest of the stack. The cached unwinder (pg_unwind.h) reads on from that
 * frame, and only where it cannot does the C library's unwinder redo the whole capture. A break
 * at an end frame, or one from which only end frames lie beyond (a thread function built without
 * frame pointers, whose caller is the C library's thread entry), ends the stack there: the walk
 * may end at libc's entry. Such a break point is remembered in the dead-end table, so that the
 * next walk that meets it stops at one compare. Returns the depth. */
__attribute__((noinline)) static unsigned finish_broken(pg_stack_t *out, unsigned n, uintptr_t at,
                                                        void *ret, uintptr_t fp, unsigned skip,
                                                        unsigned max_depth) {
  uintptr_t last = (uintptr_t)out->pc[n - 1];
  uintptr_t *ends = dead_ends(), scratch = 0;
  uintptr_t *seen = ends ? &ends[dead_end_slot(last)] : &scratch;
  if (*seen == last) return n;
  if (at && skip == 0) {
    pg_unwind_regs_t r = break_regs(at);
    unsigned m = n;
    bool only_end;
    stack_block_t *b = ends ? (stack_block_t *)ends : NULL;
    pg_unwind_end_t end = b ? tail_from_memo(&b->memo, r, out, n, max_depth, &m, &only_end)
                            : PG_UNWIND_NO_MEMO;
    if (end == PG_UNWIND_NO_MEMO)
      end = tail_unwind(b ? &b->memo : NULL, r, out, n, max_depth, &m, &only_end);
    switch (end) {
      case PG_UNWIND_END_FRAME: *seen = last; return n;
      case PG_UNWIND_UNSUPPORTED: break;
      default:
        if (!only_end) return m;
        *seen = last;
        return n;
    }
  }
  if (walk_may_end_at(last)) {
    *seen = last;
    return n;
  }
  return redo_walk(out, n, last, ret, fp, skip, max_depth);
}

/* finish_broken for capture_at's walk, whose common case is inline: the tail memo holds, with
 * frames past the break that do not all lie in end frames (a loop calling the API from one place
 * through code without frame pointers). Anything else is finish_broken's, which asks the memo
 * again. */
static inline __attribute__((always_inline)) unsigned finish_memo_or_broken(stack_block_t *b,
                                                                             pg_stack_t *out,
                                                                             unsigned n,
                                                                             uintptr_t at,
                                                                             void *ret,
                                                                             uintptr_t fp) {
  if (__builtin_expect(b != NULL && at != 0, 1)) {
    unsigned m = n;
    bool only_end = true;
    pg_unwind_end_t end =
        tail_from_memo(&b->memo, break_regs(at), out, n, PG_STACK_MAX, &m, &only_end);
    if (__builtin_expect(end != PG_UNWIND_NO_MEMO && end != PG_UNWIND_END_FRAME &&
                             end != PG_UNWIND_UNSUPPORTED && !only_end,
                         1))
      return m; /* finish_broken's answer for this memo */
  }
  return finish_broken(out, n, at, ret, fp, 0, PG_STACK_MAX);
}

/* A capture for a caller whose return address is `ret` and whose frame is at `fp` (its saved
 * frame pointer: where the walk starts). pg_stack_capture and pg_stack_capture_here are this,
 * from their own frames. */
__attribute__((noinline)) static void capture(pg_stack_t *out, void *ret, uintptr_t fp,
                                              unsigned skip, unsigned max_depth) {
  if (max_depth > PG_STACK_MAX) max_depth = PG_STACK_MAX;
  out->tid = pg_thread_number();
  out->depth = 0;
  out->flags = 0;
  out->py_depth = 0;
  if (max_depth == 0) return;
  if (!t_cap.known) learn_stack_bounds();
  int mode = atomic_load_explicit(&g_fast_unwind, memory_order_relaxed);
  if (mode == PG_UNWIND_EXACT) {
    out->depth = (uint8_t)unwind(ret, fp, out->pc, skip, max_depth);
  } else {
    unsigned n = 0, s = skip;
    if (s == 0) out->pc[n++] = ret; /* exact even if the walk fails */
    else s--;
    bool broken;
    uintptr_t at;
    n = walk_frames(fp, out->pc, n, max_depth, s, &broken, &at);
    /* The walk broke in a frame without a frame pointer (libffi, a library built with
     * -fomit-frame-pointer): what it has not reached may be the caller's own code. */
    if (broken && mode == PG_UNWIND_FP_REDO && n)
      n = finish_broken(out, n, at, ret, fp, skip, max_depth);
    out->depth = (uint8_t)n;
  }
  pg_pystack_capture(out);
}

/* noinline: the walk starts from this function's own frame, whose return address is pc[0]. */
__attribute__((noinline)) void pg_stack_capture(pg_stack_t *out, unsigned skip,
                                                unsigned max_depth) {
  const uintptr_t *self = (const uintptr_t *)__builtin_frame_address(0);
  capture(out, __builtin_return_address(0), self[0], skip, max_depth);
}

/* capture(out, ret, fp, 0, PG_STACK_MAX) for the common thread (bounds known, number given,
 * frame-pointer walks) without a call or a saved register: the walk that meets a break point
 * it saw before, or none, is the whole capture. Anything else is capture()'s, which redoes the
 * walk from the start (it has no side effect on out until then). */
/* From return address ret, whose frame is `frame` (0 if unknown), and the frame above it, fp. */
static inline __attribute__((always_inline)) void capture_at(pg_stack_t *out, void *ret,
                                                             uintptr_t fp, uintptr_t frame) {
  int mode = atomic_load_explicit(&g_fast_unwind, memory_order_relaxed);
  if (__builtin_expect(!t_cap.ready || mode == PG_UNWIND_EXACT, 0))
    return capture(out, ret, fp, 0, PG_STACK_MAX);
  out->pc[0] = ret;
  bool broken;
  uintptr_t at;
  unsigned n = walk_frames(fp, out->pc, 1, PG_STACK_MAX, 0, &broken, &at);
  if (!at) at = frame; /* the walk recorded nothing past ret: unwinding goes on from ret's frame */
  if (broken && mode == PG_UNWIND_FP_REDO) {
    uintptr_t last = (uintptr_t)out->pc[n - 1];
    stack_block_t *b = pg_tls_peek(PG_TLS_STACK_ENDS);
    if (__builtin_expect(!b || b->ends[dead_end_slot(last)] != last, 0))
      n = finish_memo_or_broken(b, out, n, at, ret, fp);
  }
  out->tid = t_cap.number;
  out->depth = (uint8_t)n;
  out->flags = 0;
  out->py_depth = 0;
  if (pg_pystack_layout) pg_pystack_capture(out);
}

__attribute__((noinline)) void pg_stack_capture_here(pg_stack_t *out) {
  uintptr_t frame = (uintptr_t)__builtin_frame_address(0);
  capture_at(out, __builtin_return_address(0), ((const uintptr_t *)frame)[0], frame);
}

__attribute__((noinline)) void pg_stack_site_here(pg_stack_site_t *site) {
  site->ret = __builtin_return_address(0);
  site->frame = (uintptr_t)__builtin_frame_address(0);
  site->fp = ((const uintptr_t *)site->frame)[0];
}

void pg_stack_capture_site(pg_stack_t *out, const pg_stack_site_t *site) {
  capture_at(out, site->ret, site->fp, site->frame);
}

void pg_stack_capture_from(pg_stack_t *out, void *pc, void *fp, unsigned max_depth) {
  if (max_depth > PG_STACK_MAX) max_depth = PG_STACK_MAX;
  out->tid = t_cap.number; /* no assignment here: may run in a signal handler */
  out->depth = 0;
  out->flags = 0;
  out->py_depth = 0;
  if (max_depth == 0) return;
  out->pc[0] = pc;
  out->flags = PG_STACK_EXACT_PC0;
  /* Bounds unknown (first event of this thread is a fault): report the faulting pc only. */
  uintptr_t at;
  out->depth = (uint8_t)walk_frames((uintptr_t)fp, out->pc, 1, max_depth, 0, NULL, &at);
  pg_pystack_capture(out);
}
