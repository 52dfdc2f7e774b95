/* pg_pystack.c: reads CPython's frame chain for the calling thread (see pg_pystack.h). The
 * struct offsets are per version, from CPython's own headers (Include/cpython/pystate.h,
 * Include/internal/pycore_frame.h, Include/cpython/code.h, Include/cpython/unicodeobject.h) on
 * x86-64 in the default (GIL, release) build; a layout check at startup refuses anything else. */
#include "pg_pystack.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "pg_safeload.h"
#include "pg_stack.h"
#include "pg_tls.h"

/* ---- per-version layout ---------------------------------------------------------------------
 * Three shapes of frame chain:
 *   FRAMEOBJ (3.9, 3.10): tstate->frame is a PyFrameObject; f_back links it; f_lasti is the
 *     last instruction, in bytes (3.9) or code units (3.10).
 *   CFRAME (3.11, 3.12): tstate->cframe->current_frame is a _PyInterpreterFrame; `previous`
 *     links it; prev_instr points into the code object's inline bytecode (co_code_adaptive).
 *   DIRECT (3.13): tstate->current_frame; instr_ptr, the instruction being executed. */
enum { SHAPE_FRAMEOBJ, SHAPE_CFRAME, SHAPE_DIRECT };

typedef struct layout {
  unsigned version; /* 0xMMmm */
  int shape;
  /* PyThreadState */
  unsigned ts_frame;        /* frame (FRAMEOBJ), cframe (CFRAME), current_frame (DIRECT) */
  unsigned cf_current;      /* _PyCFrame.current_frame (CFRAME) */
  /* frame: code, link, instruction, owner (owner: -1 when the version has none) */
  unsigned f_code, f_back, f_instr;
  int f_owner;
  unsigned f_size;          /* bytes to read to cover those fields */
  int owner_cstack;         /* owner value of a C-stack shim frame, -1 if none */
  bool lasti_units;         /* f_lasti counts code units (3.10) rather than bytes */
  /* PyCodeObject */
  unsigned co_filename, co_name, co_firstlineno, co_linetable, co_code, co_firsttraceable;
  int table;                /* line table format: 0 lnotab (3.9), 1 3.10's, 2 locations (3.11+) */
  /* PyASCIIObject / PyCompactUnicodeObject sizes: the character data follows them */
  unsigned ascii_size, compact_size;
} layout_t;

static const layout_t layouts[] = {
    {0x0309, SHAPE_FRAMEOBJ, 24, 0, 32, 24, 104, -1, 112, -1, false,
     104, 112, 40, 120, 0, 0, 0, 48, 72},
    {0x030a, SHAPE_FRAMEOBJ, 24, 0, 32, 24, 96, -1, 104, -1, true,
     104, 112, 40, 120, 0, 0, 1, 48, 72},
    {0x030b, SHAPE_CFRAME, 56, 8, 32, 48, 56, 69, 72, -1, false,
     112, 128, 72, 136, 184, 168, 2, 48, 72},
    {0x030c, SHAPE_CFRAME, 56, 0, 0, 8, 56, 70, 72, 3, false,
     112, 128, 68, 136, 192, 176, 2, 40, 56},
    {0x030d, SHAPE_DIRECT, 72, 0, 0, 8, 56, 70, 72, 3, false,
     112, 128, 68, 136, 200, 184, 2, 40, 56},
};

/* Object header: ob_type, and the var-object size that bytes objects carry. */
#define OB_TYPE 8
#define OB_SIZE 16
#define BYTES_DATA 32
#define ASCII_LENGTH 16
#define ASCII_STATE 32

const void *volatile pg_pystack_layout; /* capture_fns' entry in use; NULL: capture off */
/* The layout of the interpreter found, whether or not every capture uses it: a report's CPU side
 * is read with it once, at report time (pg_pystack_capture_now), and frames are resolved with it. */
static const void *volatile g_found_layout;
static pg_py_state_t g_state = PG_PY_ABSENT;
static unsigned g_version;
static void *(*g_this_thread_state)(void); /* PyGILState_GetThisThreadState */
static uintptr_t g_code_type, g_unicode_type, g_bytes_type;
static atomic_int g_pid; /* process_vm_readv's target: this process, renewed in a fork child */

/* ---- reads that cannot fault ----------------------------------------------------------------
 * process_vm_readv on our own pid copies what is mapped and readable and fails (EFAULT) on the
 * rest, with no signal: the primitive every read of interpreter memory goes through. It costs a
 * system call, so reads are made in aligned blocks and a capture keeps the few blocks it has
 * read (a 3.11+ frame chain lies mostly in one or two blocks of the thread's data stack).
 * Memory between this function's frame and the top of the thread's own stack is live and
 * mapped: read directly (3.11's cframe and 3.12's shim frames live there). */
#define BLOCK 1024
#define SLOTS 4

typedef struct reader {
  uintptr_t stack_lo, stack_hi; /* direct-read range; empty when unknown */
  uintptr_t base[SLOTS];        /* block address, 0 = empty */
  unsigned next;
  unsigned char data[SLOTS][BLOCK];
} reader_t;

/* 4096 <= p < 2^47 and 8-aligned: p - 4096 rotated right by 3 bits is below the range's
 * eighth exactly when both hold (a low bit set lands in the top bits). */
static inline bool plausible(uintptr_t p) {
  uintptr_t d = p - 4096;
  return ((d >> 3) | (d << 61)) < ((((uintptr_t)1 << 47) - 4096) >> 3);
}

__attribute__((noinline)) static void reader_init(reader_t *r) {
  memset(r->base, 0, sizeof r->base);
  r->next = 0;
  r->stack_lo = r->stack_hi = 0;
  uintptr_t lo, hi, here = (uintptr_t)__builtin_frame_address(0);
  if (pg_stack_bounds(&lo, &hi) && here >= lo && here < hi) {
    r->stack_lo = here; /* our caller's frames and everything above them */
    r->stack_hi = hi;
  }
}

/* The system call itself: not the C library's wrapper, which pinguard interposes (a read from
 * pinned memory is a violation it checks for), and which would set errno in a signal handler. */
static long vm_read(pid_t pid, void *dst, const void *src, size_t n) {
  struct iovec local = {dst, n}, remote = {(void *)src, n};
#if defined(__x86_64__)
  long ret;
  register long r10 __asm__("r10") = (long)&remote;
  register long r8 __asm__("r8") = 1;
  register long r9 __asm__("r9") = 0;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "0"((long)SYS_process_vm_readv), "D"((long)pid), "S"(&local), "d"(1L),
                     "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
#else
  return syscall(SYS_process_vm_readv, pid, &local, 1, &remote, 1, 0);
#endif
}

static bool copy_block(uintptr_t base, void *dst) {
  pid_t pid = atomic_load_explicit(&g_pid, memory_order_relaxed);
  return pid > 0 && vm_read(pid, dst, (const void *)base, BLOCK) == BLOCK;
}

/* The block holding addr, read if need be; NULL when it is not readable. */
static const unsigned char *block_of(reader_t *r, uintptr_t base) {
  unsigned last = (r->next + SLOTS - 1) % SLOTS; /* the most recent first: chains are local */
  if (r->base[last] == base) return r->data[last];
  for (unsigned i = 0; i < SLOTS; i++)
    if (r->base[i] == base) return r->data[i];
  unsigned slot = r->next++ % SLOTS;
  r->base[slot] = 0;
  if (!copy_block(base, r->data[slot])) return NULL;
  r->base[slot] = base;
  return r->data[slot];
}

/* A readable copy of the n bytes at addr: a pointer into the reader's block, or into the live
 * stack, or into buf when the bytes straddle two blocks; NULL when any of them is not
 * readable. */
__attribute__((no_sanitize("address", "thread"))) static const unsigned char *
safe_view(reader_t *r, uintptr_t addr, size_t n, unsigned char *buf) {
  if (addr + n < addr) return NULL;
  if (addr >= r->stack_lo && addr + n <= r->stack_hi) {
    const volatile unsigned char *s = (const volatile unsigned char *)addr;
    for (size_t i = 0; i < n; i++) buf[i] = s[i];
    return buf;
  }
  uintptr_t base = addr & ~(uintptr_t)(BLOCK - 1);
  size_t off = addr - base;
  if (off + n <= BLOCK) {
    const unsigned char *b = block_of(r, base);
    return b ? b + off : NULL;
  }
  for (size_t done = 0; done < n;) { /* straddles blocks: assembled in buf */
    base = (addr + done) & ~(uintptr_t)(BLOCK - 1);
    off = addr + done - base;
    size_t take = BLOCK - off < n - done ? BLOCK - off : n - done;
    const unsigned char *b = block_of(r, base);
    if (!b) return NULL;
    memcpy(buf + done, b + off, take);
    done += take;
  }
  return buf;
}

/* Copies n bytes at addr into dst; false when any of it is not readable. */
static bool safe_read(reader_t *r, uintptr_t addr, void *dst, size_t n) {
  const unsigned char *v = safe_view(r, addr, n, dst);
  if (!v) return false;
  if (v != dst) memcpy(dst, v, n);
  return true;
}

static bool read_ptr(reader_t *r, uintptr_t addr, uintptr_t *out) {
  return safe_read(r, addr, out, sizeof *out);
}

static uintptr_t field_ptr(const unsigned char *buf, unsigned off) {
  uintptr_t v;
  memcpy(&v, buf + off, sizeof v);
  return v;
}

static int32_t field_i32(const unsigned char *buf, unsigned off) {
  int32_t v;
  memcpy(&v, buf + off, sizeof v);
  return v;
}

/* ---- capture ------------------------------------------------------------------------------- */
static void walk(const layout_t *L, reader_t *r, uintptr_t ts, pg_stack_t *out) {
  uintptr_t frame = 0;
  if (!plausible(ts) || !read_ptr(r, ts + L->ts_frame, &frame)) return;
  if (L->shape == SHAPE_CFRAME) {
    uintptr_t cframe = frame;
    if (!plausible(cframe) || !read_ptr(r, cframe + L->cf_current, &frame)) return;
  }
  unsigned n = out->py_depth;
  /* Bounded: a cycle in a corrupt chain ends here too. */
  for (unsigned steps = 0; steps < 4 * PG_PYSTACK_MAX && n < PG_PYSTACK_MAX; steps++) {
    unsigned char buf[128];
    const unsigned char *f = plausible(frame) ? safe_view(r, frame, L->f_size, buf) : NULL;
    if (!f) break;
    uintptr_t code = field_ptr(f, L->f_code), back = field_ptr(f, L->f_back);
    bool shim = L->f_owner >= 0 && L->owner_cstack >= 0 &&
                (signed char)f[L->f_owner] == (signed char)L->owner_cstack;
    if (!shim && plausible(code)) {
      int64_t off;
      if (L->shape == SHAPE_FRAMEOBJ) {
        int32_t lasti = field_i32(f, L->f_instr);
        off = lasti < 0 ? -1 : (L->lasti_units ? (int64_t)lasti * 2 : lasti);
      } else {
        uintptr_t instr = field_ptr(f, L->f_instr), start = code + L->co_code;
        off = (int64_t)(instr - start);
        if (instr < start - 2) off = -1;
      }
      if (off > INT32_MAX) off = -1;
      out->py_code[n] = (const void *)code;
      out->py_offset[n] = (int32_t)off;
      n++;
    }
    if (!back || back == frame) break;
    frame = back;
  }
  out->py_depth = (uint8_t)n;
}

/* The same walk with safe loads (pg_safeload.h): no system call, and only the fields used are
 * read (code, link, instruction, and the owner byte's word where the layout has shim frames),
 * where walk() copies the frame's first f_size bytes. Inlined once per layout (walk_I below),
 * so that every offset is a constant and each load one instruction. A fault in any load ends
 * the walk with the frames found so far. The frames found are walk()'s for any chain whose
 * frames are readable (a garbage frame that straddles into an unreadable page beyond the fields
 * used is taken here, not there: its fields were read without harm). */
#if PG_SAFELOAD_AVAILABLE
/* The offsets that walk_direct_with relies on: every word read within the frame's f_size
 * bytes, FRAMEOBJ's f_lasti 8-aligned (its low half read). */
static inline bool layout_fits_direct(const layout_t *L) {
  if (L->f_code + 8 > L->f_size || L->f_back + 8 > L->f_size || L->f_instr + 8 > L->f_size)
    return false;
  if (L->f_owner >= 0 && ((unsigned)L->f_owner & ~7u) + 8 > L->f_size) return false;
  return L->shape != SHAPE_FRAMEOBJ || (L->f_instr % 8) == 0;
}

/* The memo of the thread's last direct walk (PG_TLS_PY_MEMO): every word that walk read (the
 * thread state's frame pointer, and each frame's code, link, instruction and owner words) and
 * the frames it produced. The walk's frames are a function of those words alone (where a load
 * faulted, nothing is kept), so a walk from the same thread state that finds every one of them
 * unchanged, read again at the same addresses, gives the same frames: they are copied from the
 * memo instead. The check reads as many words as the walk would, but compares them with the
 * memo's (no plausibility test, no offset, no store: memo_frames_same); a loop launching from the
 * same Python code finds the same chain each time. The first word that differs (a frame
 * returned and another pushed in its place, the top frame at another instruction) sends the
 * capture to the full walk, which keeps its words for the next one.
 * `busy` is set while a capture uses the memo: a capture from a signal handler that interrupted
 * it (the fault handler's) walks without it. */
#define MEMO_FRAMES 32 /* frames looked at that a memo keeps; a longer walk keeps none */
typedef struct memo_words {
  uintptr_t code, back, instr, owner;
} memo_words_t;
typedef struct py_memo {
  volatile uint32_t busy;
  uint32_t frames; /* frames whose words are in w[]; 0: no memo */
  uint32_t depth;  /* the frames the walk produced (py_depth) */
  const layout_t *L;
  uintptr_t ts, top0, top; /* the thread state; its frame word; the first frame (CFRAME) */
  const void *py_code[PG_PYSTACK_MAX];
  int32_t py_offset[PG_PYSTACK_MAX];
  memo_words_t w[MEMO_FRAMES];
} py_memo_t;
/* Whether each of the memo's `frames` frames (their words ending at `end`), from `frame` on,
 * holds the words kept, read again with safe loads (a fault: false). A frame's check is written
 * out: its loads (in the safe-load table), the compares against the memo's words, two branches;
 * its link, the last load, is the next frame's address. Memory operands, so that the offsets
 * need not be constants where the compiler does not fold them (-O0). */
static inline __attribute__((always_inline)) bool memo_frames_same(const layout_t *L,
                                                                   uintptr_t frame,
                                                                   const memo_words_t *end,
                                                                   uint32_t frames) {
  /* w: the frame's words, `at` bytes before `end` (the count is the index: an add, a branch) */
  intptr_t at = -(intptr_t)frames * (intptr_t)sizeof(memo_words_t);
  do {
    const memo_words_t *w = (const memo_words_t *)((const char *)end + at);
    uintptr_t c, x, o;
#define MEMO_AT(off) (*(const uintptr_t *)(frame + (off)))
    if (L->f_owner >= 0 && L->owner_cstack >= 0) {
      __asm__ volatile goto("2: movq %[mc], %[c]\n\t"
                            "3: movq %[mx], %[x]\n\t"
                            "4: movq %[mo], %[o]\n\t"
                            "5: movq %[mb], %[n]\n\t"
                            "xorq %[wc], %[c]\n\t"
                            "xorq %[wx], %[x]\n\t"
                            "xorq %[wo], %[o]\n\t"
                            "orq %[x], %[c]\n\t"
                            "orq %[o], %[c]\n\t"
                            "jne %l[differ]\n\t"
                            "cmpq %[wb], %[n]\n\t"
                            "jne %l[differ]\n\t"
                            ".pushsection pg_safeload_table, \"a\"\n\t"
                            ".balign 4\n\t"
                            ".long 2b - .\n\t.long %l[differ] - .\n\t"
                            ".long 3b - .\n\t.long %l[differ] - .\n\t"
                            ".long 4b - .\n\t.long %l[differ] - .\n\t"
                            ".long 5b - .\n\t.long %l[differ] - .\n\t"
                            ".popsection"
                            : [c] "=&r"(c), [x] "=&r"(x), [o] "=&r"(o), [n] "=&r"(frame)
                            : [mc] "m"(MEMO_AT(L->f_code)), [mx] "m"(MEMO_AT(L->f_instr)),
                              [mo] "m"(MEMO_AT((unsigned)L->f_owner & ~7u)),
                              [mb] "m"(MEMO_AT(L->f_back)), [wc] "m"(w->code),
                              [wx] "m"(w->instr), [wo] "m"(w->owner), [wb] "m"(w->back)
                            : "cc"
                            : differ);
    } else {
      (void)o;
      __asm__ volatile goto("2: movq %[mc], %[c]\n\t"
                            "3: movq %[mx], %[x]\n\t"
                            "4: movq %[mb], %[n]\n\t"
                            "xorq %[wc], %[c]\n\t"
                            "xorq %[wx], %[x]\n\t"
                            "orq %[x], %[c]\n\t"
                            "jne %l[differ]\n\t"
                            "cmpq %[wb], %[n]\n\t"
                            "jne %l[differ]\n\t"
                            ".pushsection pg_safeload_table, \"a\"\n\t"
                            ".balign 4\n\t"
                            ".long 2b - .\n\t.long %l[differ] - .\n\t"
                            ".long 3b - .\n\t.long %l[differ] - .\n\t"
                            ".long 4b - .\n\t.long %l[differ] - .\n\t"
                            ".popsection"
                            : [c] "=&r"(c), [x] "=&r"(x), [n] "=&r"(frame)
                            : [mc] "m"(MEMO_AT(L->f_code)), [mx] "m"(MEMO_AT(L->f_instr)),
                              [mb] "m"(MEMO_AT(L->f_back)), [wc] "m"(w->code),
                              [wx] "m"(w->instr), [wb] "m"(w->back)
                            : "cc"
                            : differ);
    }
#undef MEMO_AT
  } while ((at += (intptr_t)sizeof(memo_words_t)) != 0);
  return true;
differ:
  return false;
}

/* The memo's check: true when every word the memo keeps reads the same (the frames then copied
 * into out). Otherwise *mp is the memo for the walk to fill (busy), or NULL where it may not
 * (a capture this one interrupted is using it; out already has frames). */
static inline __attribute__((always_inline)) bool memo_hit(const layout_t *L, uintptr_t ts,
                                                           pg_stack_t *out, py_memo_t **mp) {
  py_memo_t *m = *mp;
  if (!m || m->busy || out->py_depth) {
    *mp = NULL;
    return false;
  }
  m->busy = 1;
  atomic_signal_fence(memory_order_seq_cst);
  if (!m->frames || m->L != L || m->ts != ts) return false;
  uintptr_t t0, t;
  PG_SAFELOAD(ts + L->ts_frame, t0, miss);
  t = t0;
  if (L->shape == SHAPE_CFRAME) PG_SAFELOAD(t0 + L->cf_current, t, miss);
  if ((t0 ^ m->top0) | (t ^ m->top)) return false;
  if (!memo_frames_same(L, t, m->w + m->frames, m->frames)) return false;
  unsigned n = m->depth;
  pg_pyframes_copy(out->py_code, out->py_offset, m->py_code, m->py_offset, n);
  out->py_depth = (uint8_t)n;
  atomic_signal_fence(memory_order_seq_cst);
  m->busy = 0;
  return true;
miss:
  return false;
}

/* The walk, keeping what it read in m (when not NULL, busy: released here). */
static inline __attribute__((always_inline)) void walk_direct_with(const layout_t *L, uintptr_t ts,
                                                                   pg_stack_t *out,
                                                                   py_memo_t *m) {
  const bool owner = L->f_owner >= 0 && L->owner_cstack >= 0;
  const unsigned owner_word = (unsigned)L->f_owner & ~7u;
  size_t n = out->py_depth;
  uintptr_t top0 = 0, frame, code, back, instr, word = 0;
  memo_words_t *rec = m ? m->w : NULL; /* where the next frame's words go; NULL: not kept */
  if (!plausible(ts)) goto done;
  PG_SAFELOAD(ts + L->ts_frame, frame, fault);
  top0 = frame;
  if (L->shape == SHAPE_CFRAME) {
    if (!plausible(frame)) goto done;
    PG_SAFELOAD(frame + L->cf_current, frame, fault);
  }
  const uintptr_t top = frame;
  /* Bounded as walk() is: 4 * PG_PYSTACK_MAX frames looked at, PG_PYSTACK_MAX kept. */
  for (unsigned left = 4 * PG_PYSTACK_MAX; left && n < PG_PYSTACK_MAX; left--) {
    if (!plausible(frame)) break; /* a null link (the chain's end) included */
    PG_SAFELOAD(frame + L->f_code, code, fault);
    PG_SAFELOAD(frame + L->f_back, back, fault);
    PG_SAFELOAD(frame + L->f_instr, instr, fault);
    bool shim = false;
    if (owner) { /* the aligned word holding the owner byte (little-endian) */
      PG_SAFELOAD(frame + owner_word, word, fault);
      shim = (signed char)(word >> (8 * ((unsigned)L->f_owner & 7))) == (signed char)L->owner_cstack;
    }
    if (rec) {
      if (rec == m->w + MEMO_FRAMES) rec = NULL; /* too long a walk to keep */
      else *rec++ = (memo_words_t){code, back, instr, word};
    }
    if (!shim && plausible(code)) {
      int64_t off;
      if (L->shape == SHAPE_FRAMEOBJ) {
        int32_t lasti = (int32_t)(uint32_t)instr; /* little-endian: the word's low half */
        off = lasti < 0 ? -1 : (L->lasti_units ? (int64_t)lasti * 2 : lasti);
        if (off > INT32_MAX) off = -1;
      } else {
        /* walk()'s -1 below start - 2 or above INT32_MAX, as one unsigned compare */
        uintptr_t d = instr - (code + L->co_code - 2);
        off = d > (uintptr_t)INT32_MAX + 2 ? -1 : (int64_t)d - 2;
      }
      out->py_code[n] = (const void *)code;
      out->py_offset[n] = (int32_t)off;
      n++;
    }
    if (back == frame) break;
    frame = back;
  }
  out->py_depth = (uint8_t)n;
  if (m) { /* the walk ended on what it read: kept for the next */
    m->frames = rec ? (uint32_t)(rec - m->w) : 0;
    m->depth = (uint32_t)n;
    m->L = L;
    m->ts = ts;
    m->top0 = top0;
    m->top = top;
    pg_pyframes_copy(m->py_code, m->py_offset, out->py_code, out->py_offset, (unsigned)n);
  }
  goto release;
fault: /* a load faulted: the frames found so far, and no memo (the fault is not in the words) */
  out->py_depth = (uint8_t)n;
done:
  if (m) m->frames = 0;
release:
  if (m) {
    atomic_signal_fence(memory_order_seq_cst);
    m->busy = 0;
  }
}

#endif

/* walk() with a fresh reader: out of line, for the reader's 4 KiB. */
__attribute__((noinline)) static void walk_copied(const layout_t *L, uintptr_t ts,
                                                  pg_stack_t *out) {
  reader_t r;
  reader_init(&r);
  walk(L, &r, ts, out);
}

/* The walk of the thread state ts for layout L (a constant where inlined): with safe loads where
 * they are armed, the memo's check inline (few registers) and walk_out (walk_direct_with for L)
 * out of line; else through the reader (process_vm_readv). */
typedef void walk_out_fn(uintptr_t ts, pg_stack_t *out, void *memo);
static inline __attribute__((always_inline)) void from_tstate(const layout_t *L, uintptr_t ts,
                                                              pg_stack_t *out,
                                                              walk_out_fn *walk_out) {
#if PG_SAFELOAD_AVAILABLE
  if (layout_fits_direct(L) && __builtin_expect(pg_safeload_ready(), 1)) {
    py_memo_t *m = pg_tls_get(PG_TLS_PY_MEMO, sizeof(py_memo_t)); /* NULL: walks without */
    if (!memo_hit(L, ts, out, &m)) walk_out(ts, out, m);
    return;
  }
#else
  (void)walk_out;
#endif
  walk_copied(L, ts, out);
}

/* Per layout I, its offsets constants: walk_I (the direct walk, out of line), tstate_I (the walk
 * of a given thread state) and capture_I (the calling thread's). */
#if PG_SAFELOAD_AVAILABLE
#define WALK_OUT(I)                                                                             \
  __attribute__((noinline)) static void walk_##I(uintptr_t ts, pg_stack_t *out, void *memo) { \
    walk_direct_with(&layouts[I], ts, out, memo);                                               \
  }
#else
#define WALK_OUT(I) static walk_out_fn *const walk_##I = NULL;
#endif
#define LAYOUT_FNS(I)                                                                     \
  WALK_OUT(I)                                                                             \
  static void tstate_##I(uintptr_t ts, pg_stack_t *out) {                                 \
    from_tstate(&layouts[I], ts, out, walk_##I);                                          \
  }                                                                                       \
  static void capture_##I(pg_stack_t *out) {                                              \
    /* The TSS slot the interpreter keeps for each of its threads (PyGILState's): it      \
     * holds the thread's own state whether or not the thread holds the GIL right now,    \
     * which a ctypes call or a torch op has released. Reading it is                      \
     * pthread_getspecific: no lock, no allocation (faulthandler relies on the same from  \
     * its signal handler). */                                                            \
    uintptr_t ts = (uintptr_t)g_this_thread_state();                                      \
    if (ts) from_tstate(&layouts[I], ts, out, walk_##I);                                  \
  }
LAYOUT_FNS(0)
LAYOUT_FNS(1)
LAYOUT_FNS(2)
LAYOUT_FNS(3)
LAYOUT_FNS(4)
#define NLAYOUTS (sizeof layouts / sizeof layouts[0])
static void (*const tstate_fns[])(uintptr_t, pg_stack_t *) = {tstate_0, tstate_1, tstate_2,
                                                              tstate_3, tstate_4};
static void (*const capture_fns[])(pg_stack_t *) = {capture_0, capture_1, capture_2, capture_3,
                                                    capture_4};
_Static_assert(sizeof capture_fns / sizeof capture_fns[0] == NLAYOUTS, "functions per layout");

/* Most processes are not Python: one load and out. pg_pystack_layout is the capture_fns entry
 * of the layout in use, so a capture is one indirect jump. */
void pg_pystack_capture(pg_stack_t *out) {
  out->py_depth = 0;
  void (*const *capture)(pg_stack_t *) = pg_pystack_layout;
  if (capture) (*capture)(out);
}

void pg_pystack_capture_now(pg_stack_t *out) {
  const layout_t *L = g_found_layout;
  if (!L || out->py_depth) return;
  capture_fns[L - layouts](out);
}

void pg_pystack_capture_from_tstate(pg_stack_t *out, unsigned version, const void *tstate) {
  out->py_depth = 0;
  for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++) {
    if (layouts[i].version != version) continue;
    if (atomic_load(&g_pid) == 0) atomic_store(&g_pid, getpid());
    tstate_fns[i]((uintptr_t)tstate, out);
  }
}

bool pg_pystack_known_version(unsigned version) {
  for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
    if (layouts[i].version == version) return true;
  return false;
}

/* ---- detection ----------------------------------------------------------------------------- */
static void renew_pid(void) { atomic_store(&g_pid, getpid()); }
static void atfork_setup(void) { pthread_atfork(NULL, NULL, renew_pid); }

/* The interpreter's version, 0xMMmm: Py_Version from 3.11, else parsed from Py_GetVersion(). */
static unsigned detect_version(void) {
  const unsigned long *hex = dlsym(RTLD_DEFAULT, "Py_Version");
  if (hex) return (unsigned)((*hex >> 16) & 0xffff);
  const char *(*get)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
  if (!get) return 0;
  const char *s = get();
  unsigned major = 0, minor = 0;
  while (*s >= '0' && *s <= '9') major = major * 10 + (unsigned)(*s++ - '0');
  if (*s++ != '.') return 0;
  while (*s >= '0' && *s <= '9') minor = minor * 10 + (unsigned)(*s++ - '0');
  return major < 256 && minor < 256 ? major << 8 | minor : 0;
}

pg_py_state_t pg_pystack_init(bool enable, unsigned *version) {
  static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
  pg_pystack_layout = NULL;
  g_found_layout = NULL;
  g_state = PG_PY_ABSENT;
  void *tss = dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
  void *code = dlsym(RTLD_DEFAULT, "PyCode_Type");
  void *uni = dlsym(RTLD_DEFAULT, "PyUnicode_Type");
  void *bytes = dlsym(RTLD_DEFAULT, "PyBytes_Type");
  void *type = dlsym(RTLD_DEFAULT, "PyType_Type");
  if (!tss) return g_state;
  g_version = detect_version();
  if (version) *version = g_version;
  g_state = PG_PY_UNKNOWN;
  const layout_t *L = NULL;
  for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
    if (layouts[i].version == g_version) L = &layouts[i];
  /* The layouts assume the default object header (ob_refcnt, ob_type): a debug build with
   * Py_TRACE_REFS, or a free-threaded one, puts ob_type elsewhere, and PyType_Type is its own
   * type only where ob_type is where we read it. */
  if (!L || !code || !uni || !bytes || !type ||
      *(void *const *)((const char *)type + OB_TYPE) != type)
    return g_state;
  g_this_thread_state = (void *(*)(void))tss;
  g_code_type = (uintptr_t)code;
  g_unicode_type = (uintptr_t)uni;
  g_bytes_type = (uintptr_t)bytes;
  pthread_once(&atfork_once, atfork_setup);
  renew_pid();
  /* process_vm_readv may be refused (a seccomp filter): then there is no safe read at all. */
  static unsigned char probe[BLOCK] __attribute__((aligned(BLOCK))), copy[BLOCK];
  if (vm_read(getpid(), copy, probe, BLOCK) != BLOCK) return g_state;
  g_state = PG_PY_READY;
  g_found_layout = L;
  if (enable) pg_pystack_layout = &capture_fns[L - layouts];
  return g_state;
}

/* ---- resolution (report time) -------------------------------------------------------------- */
static void put_utf8(char *out, size_t cap, size_t *len, uint32_t c) {
  unsigned char b[4];
  size_t n;
  if (c < 0x80) {
    b[0] = (unsigned char)c;
    n = 1;
  } else if (c < 0x800) {
    b[0] = (unsigned char)(0xc0 | c >> 6);
    b[1] = (unsigned char)(0x80 | (c & 0x3f));
    n = 2;
  } else if (c < 0x10000) {
    b[0] = (unsigned char)(0xe0 | c >> 12);
    b[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3f));
    b[2] = (unsigned char)(0x80 | (c & 0x3f));
    n = 3;
  } else {
    b[0] = (unsigned char)(0xf0 | (c >> 18 & 7));
    b[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3f));
    b[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3f));
    b[3] = (unsigned char)(0x80 | (c & 0x3f));
    n = 4;
  }
  if (*len + n >= cap) return;
  memcpy(out + *len, b, n);
  *len += n;
}

/* A str object's text as UTF-8 (compact strings only: every identifier and file name). */
static bool read_str(const layout_t *L, reader_t *r, uintptr_t s, char *out, size_t cap) {
  unsigned char h[80];
  out[0] = '\0';
  if (!plausible(s) || !safe_read(r, s, h, L->compact_size)) return false;
  if (field_ptr(h, OB_TYPE) != g_unicode_type) return false;
  int64_t length;
  uint32_t state;
  memcpy(&length, h + ASCII_LENGTH, sizeof length);
  memcpy(&state, h + ASCII_STATE, sizeof state);
  unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  if (!compact || length < 0 || (kind != 1 && kind != 2 && kind != 4)) return false;
  uintptr_t data = s + (ascii ? L->ascii_size : L->compact_size);
  size_t len = 0;
  for (int64_t i = 0; i < length && len + 1 < cap; i++) {
    uint32_t c = 0;
    if (!safe_read(r, data + (uintptr_t)i * kind, &c, kind)) return false;
    put_utf8(out, cap, &len, c);
  }
  out[len] = '\0';
  return true;
}

static unsigned char table_buf[64 * 1024]; /* callers serialize */

static unsigned read_varint(const unsigned char **p, const unsigned char *end) {
  unsigned v = 0, shift = 0;
  while (*p < end) {
    unsigned b = *(*p)++;
    v |= (b & 63) << shift;
    shift += 6;
    if (!(b & 64) || shift > 30) break;
  }
  return v;
}

static int read_svarint(const unsigned char **p, const unsigned char *end) {
  unsigned u = read_varint(p, end);
  return u & 1 ? -(int)(u >> 1) : (int)(u >> 1);
}

/* The line of byte offset `addr` in the code's line table (the three formats CPython has used
 * since 3.9: Objects/lnotab_notes.txt and Objects/locations.md describe them). 0: no line. */
static int line_of(int format, const unsigned char *t, size_t n, int first, int addr) {
  if (addr < 0) return first;
  const unsigned char *p = t, *end = t + n;
  int line = first;
  if (format == 0) { /* (address delta, signed line delta) pairs */
    int a = 0;
    for (; p + 1 < end; p += 2) {
      a += p[0];
      if (a > addr) break;
      line += (signed char)p[1];
    }
    return line;
  }
  if (format == 1) { /* (address delta, line delta or -128 for none) pairs, ranges */
    int start = 0;
    for (; p + 1 < end; p += 2) {
      int stop = start + p[0], delta = (signed char)p[1];
      if (delta != -128) line += delta;
      if (p[0] && addr >= start && addr < stop) return delta == -128 ? 0 : line;
      start = stop;
    }
    return 0;
  }
  /* Location entries: a first byte with bit 7 set, code in bits 3-6, length-1 in code units in
   * bits 0-2, then the code's operands. */
  int start = 0;
  while (p < end) {
    unsigned b = *p++;
    if (!(b & 0x80)) return 0; /* not at an entry: corrupt */
    int code = (int)(b >> 3) & 15, stop = start + ((int)(b & 7) + 1) * 2;
    int delta = 0;
    if (code == 14 || code == 13) delta = read_svarint(&p, end); /* long form, no columns */
    else if (code >= 10 && code <= 12) delta = code - 10;        /* one-line forms */
    line += delta;
    while (p < end && !(*p & 0x80)) p++; /* the rest of the entry: columns */
    if (addr >= start && addr < stop) return code == 15 ? 0 : line;
    start = stop;
  }
  return 0;
}

bool pg_pystack_resolve(const void *code, int32_t offset, pg_pyframe_t *out) {
  memset(out, 0, sizeof *out);
  const layout_t *L = g_found_layout;
  if (!L) return false;
  reader_t r;
  reader_init(&r);
  unsigned char c[256];
  uintptr_t co = (uintptr_t)code;
  if (!plausible(co) || !safe_read(&r, co, c, L->co_code ? L->co_code : 128)) return false;
  if (field_ptr(c, OB_TYPE) != g_code_type) return false; /* freed, or not a code object */
  if (L->co_firsttraceable && offset >= 0 && offset / 2 < field_i32(c, L->co_firsttraceable))
    return false; /* a frame still being set up */
  if (!read_str(L, &r, field_ptr(c, L->co_filename), out->file, sizeof out->file)) return false;
  read_str(L, &r, field_ptr(c, L->co_name), out->function, sizeof out->function);
  int first = field_i32(c, L->co_firstlineno);
  uintptr_t table = field_ptr(c, L->co_linetable);
  unsigned char bh[BYTES_DATA];
  if (plausible(table) && safe_read(&r, table, bh, sizeof bh) &&
      field_ptr(bh, OB_TYPE) == g_bytes_type) {
    int64_t n;
    memcpy(&n, bh + OB_SIZE, sizeof n);
    if (n > (int64_t)sizeof table_buf) n = sizeof table_buf;
    if (n > 0 && safe_read(&r, table + BYTES_DATA, table_buf, (size_t)n)) {
      int line = line_of(L->table, table_buf, (size_t)n, first, offset);
      out->line = line > 0 ? (unsigned)line : 0;
    }
  }
  return true;
}
