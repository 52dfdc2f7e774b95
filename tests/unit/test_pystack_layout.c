/* test_pystack_layout.c: pinguard's Python frame reader against CPython's own struct
 * definitions. Built once per CPython found (tests/e2e/pythons.cmake) with that version's
 * headers, it lays out a thread state and a frame chain with the real types (so every offset in
 * common/pg_pystack.c's table is checked against the headers), and checks that the reader
 * returns each frame's code object and instruction offset, skips shim frames, and stops without
 * a crash on corrupt chains: unmapped and protected memory, misaligned pointers, cycles. Every
 * check runs twice: through process_vm_readv, and through the safe loads a fault handler
 * recovers (pg_safeload.h, pinguard's path where its handler is installed).
 * A plain program (no Criterion): it also runs under ThreadSanitizer. */
#define Py_BUILD_CORE 1
#include <Python.h>
#if PY_VERSION_HEX < 0x030B0000
#include <frameobject.h>
#else
#include "internal/pycore_frame.h"
#endif

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pg_pystack.h"
#include "pg_safeload.h"
#include "pg_stack.h"

#define VERSION ((unsigned)(PY_MAJOR_VERSION << 8 | PY_MINOR_VERSION))
#define N 4

static int failures;
#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (!(cond)) {                                         \
      failures++;                                          \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                        \
      fputc('\n', stderr);                                 \
    }                                                      \
  } while (0)

/* Stand-ins for code objects: the reader only takes their address (and, from 3.11, the address
 * of their inline bytecode) at capture time. */
static union {
  PyCodeObject co;
  char pad[sizeof(PyCodeObject) + 256];
} codes[N];

static PyThreadState ts;

#if PY_VERSION_HEX < 0x030B0000
typedef PyFrameObject frame_t;
static frame_t frames[N];
static void link_frame(int i, frame_t *back) { frames[i].f_back = back; }
static void build(void) {
  memset(frames, 0, sizeof frames);
  for (int i = 0; i < N; i++) {
    frames[i].f_code = &codes[i].co;
    frames[i].f_lasti = 3 * i; /* bytes in 3.9, code units in 3.10 */
    link_frame(i, i + 1 < N ? &frames[i + 1] : NULL);
  }
  ts.frame = &frames[0];
}
static void set_top(frame_t *f) { ts.frame = f; }
static int32_t want_offset(int i) { return PY_VERSION_HEX < 0x030A0000 ? 3 * i : 6 * i; }
/* One code unit further (bytes in 3.9: 2 of them), and another code object, in place. */
#define UNIT 1
static void bump_instr(int i) { frames[i].f_lasti += PY_VERSION_HEX < 0x030A0000 ? 2 : 1; }
static void set_code(int i, PyCodeObject *co) { frames[i].f_code = co; }
#else
typedef _PyInterpreterFrame frame_t;
static frame_t frames[N];
#if PY_VERSION_HEX < 0x030C0000
static _PyCFrame cframe;
#endif
static void link_frame(int i, frame_t *back) { frames[i].previous = back; }
static void build(void) {
  memset(frames, 0, sizeof frames);
  for (int i = 0; i < N; i++) {
    _Py_CODEUNIT *code = (_Py_CODEUNIT *)codes[i].co.co_code_adaptive;
#if PY_VERSION_HEX >= 0x030D0000
    frames[i].f_executable = (PyObject *)&codes[i].co;
    frames[i].instr_ptr = code + 3 * i;
#else
    frames[i].f_code = &codes[i].co;
    frames[i].prev_instr = code + 3 * i;
#endif
    frames[i].owner = FRAME_OWNED_BY_THREAD;
    link_frame(i, i + 1 < N ? &frames[i + 1] : NULL);
  }
#if PY_VERSION_HEX >= 0x030D0000
  ts.current_frame = &frames[0];
#elif PY_VERSION_HEX >= 0x030C0000
  static _PyCFrame cf;
  cf.current_frame = &frames[0];
  ts.cframe = &cf;
#else
  cframe.current_frame = &frames[0];
  ts.cframe = &cframe;
#endif
}
static void set_top(frame_t *f) {
#if PY_VERSION_HEX >= 0x030D0000
  ts.current_frame = f;
#else
  ts.cframe->current_frame = f;
#endif
}
static int32_t want_offset(int i) { return 6 * i; } /* 3 code units of 2 bytes */
#define UNIT 1
static void bump_instr(int i) {
#if PY_VERSION_HEX >= 0x030D0000
  frames[i].instr_ptr += 1;
#else
  frames[i].prev_instr += 1;
#endif
}
static void set_code(int i, PyCodeObject *co) {
#if PY_VERSION_HEX >= 0x030D0000
  frames[i].f_executable = (PyObject *)co;
#else
  frames[i].f_code = co;
#endif
}
#endif

static void capture(pg_stack_t *st, const void *tstate) {
  memset(st, 0xa5, sizeof *st);
  pg_pystack_capture_from_tstate(st, VERSION, tstate);
}

/* The second pass: the reader's safe loads (pg_safeload.h) with a fault handler that recovers
 * them, as pinguard's own does first thing; any other fault is a failure of the test. */
static volatile int recovered;
static void on_fault(int sig, siginfo_t *info, void *uctx) {
  (void)info;
  if (pg_safeload_fixup(uctx)) {
    recovered++;
    return;
  }
  signal(sig, SIG_DFL); /* not a safe load's: die of it */
}

static void checks(const char *pass);

int main(void) {
  checks("process_vm_readv");
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, NULL);
  sigaction(SIGBUS, &sa, NULL);
  pg_safeload_arm();
  checks("safe loads");
  /* The corrupt chains above fault in the second pass (unmapped and protected frames, and the
   * unmapped top frame twice: the memo's check, then the walk): each fault was a safe load's,
   * recovered, and the walk ended where the first pass ended it. */
  if (PG_SAFELOAD_AVAILABLE) CHECK(recovered >= 8, "%d faults recovered, want 8 or more", recovered);
  if (failures) return 1;
  printf("ok: CPython %s layout, %d frames, both readers (%d faults recovered)\n", PY_VERSION, N,
         recovered);
  return 0;
}

static void checks(const char *pass) {
  pg_stack_t st;
  fprintf(stderr, "pass: %s\n", pass);
  CHECK(pg_pystack_known_version(VERSION), "version 0x%x is not in the table", VERSION);

  /* A whole chain: every frame, innermost first, with its offset. */
  build();
  capture(&st, &ts);
  CHECK(st.py_depth == N, "depth %u, want %d", st.py_depth, N);
  for (int i = 0; i < N && i < st.py_depth; i++) {
    CHECK(st.py_code[i] == &codes[i].co, "frame %d: code %p, want %p", i, st.py_code[i],
          (void *)&codes[i].co);
    CHECK(st.py_offset[i] == want_offset(i), "frame %d: offset %d, want %d", i, st.py_offset[i],
          want_offset(i));
  }

  /* The same chain again, then one word changed in place deep in it (an instruction, a code
   * object), then a frame turned into a shim (3.12+): each capture gives the chain as it is
   * now, where the safe-load reader may copy its last walk's frames once it finds every word
   * that walk read unchanged (a loop launching from the same code). */
  capture(&st, &ts);
  CHECK(st.py_depth == N && st.py_code[N - 1] == &codes[N - 1].co &&
            st.py_offset[N - 1] == want_offset(N - 1),
        "again: depth %u", st.py_depth);
  bump_instr(N - 1);
  capture(&st, &ts);
  CHECK(st.py_depth == N && st.py_offset[N - 1] == want_offset(N - 1) + 2 * UNIT,
        "an instruction moved: offset %d, want %d", st.py_offset[N - 1],
        want_offset(N - 1) + 2 * UNIT);
  capture(&st, &ts);
  CHECK(st.py_depth == N && st.py_offset[N - 1] == want_offset(N - 1) + 2 * UNIT,
        "the moved instruction again: offset %d", st.py_offset[N - 1]);
  set_code(N - 2, &codes[0].co);
  capture(&st, &ts);
  CHECK(st.py_depth == N && st.py_code[N - 2] == &codes[0].co, "a code object replaced");
#if PY_VERSION_HEX >= 0x030C0000
  build();
  capture(&st, &ts);
  frames[2].owner = FRAME_OWNED_BY_CSTACK;
  capture(&st, &ts);
  CHECK(st.py_depth == N - 1 && st.py_code[2] == &codes[3].co, "a frame turned shim: depth %u",
        st.py_depth);
#endif

#if PY_VERSION_HEX >= 0x030C0000
  /* A shim frame the evaluation loop pushes on the C stack carries no code: skipped. */
  build();
  frames[1].owner = FRAME_OWNED_BY_CSTACK;
  capture(&st, &ts);
  CHECK(st.py_depth == N - 1, "shim frame: depth %u, want %d", st.py_depth, N - 1);
  CHECK(st.py_code[1] == &codes[2].co, "shim frame: the frame after it comes next");
#endif

  /* Corrupt chains: each stops the walk where it is, and nothing faults. */
  long page = sysconf(_SC_PAGESIZE);
  char *gone = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(gone, (size_t)page);
  char *locked = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  frame_t *bad[] = {(frame_t *)gone, (frame_t *)locked, (frame_t *)((char *)&frames[2] + 1),
                    (frame_t *)(uintptr_t)8};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    build();
    link_frame(1, bad[k]);
    capture(&st, &ts);
    CHECK(st.py_depth == 2, "bad link %zu: depth %u, want 2", k, st.py_depth);
    build();
    set_top(bad[k]);
    capture(&st, &ts);
    CHECK(st.py_depth == 0, "bad top frame %zu: depth %u, want 0", k, st.py_depth);
    capture(&st, bad[k]);
    CHECK(st.py_depth == 0, "bad thread state %zu: depth %u, want 0", k, st.py_depth);
  }

  /* A chain read once (the safe-load reader keeps a memo of it), then its top frame's page
   * unmapped at the same address: the next capture's loads there fault, and it ends with no
   * frame. */
  frame_t *moved = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                        -1, 0);
  build();
  memcpy(moved, &frames[0], sizeof *moved);
  set_top(moved);
  capture(&st, &ts);
  CHECK(st.py_depth == N, "a top frame in its own page: depth %u, want %d", st.py_depth, N);
  munmap(moved, (size_t)page);
  capture(&st, &ts);
  CHECK(st.py_depth == 0, "its page unmapped: depth %u, want 0", st.py_depth);

  /* A cycle: the walk is bounded by the record's size. */
  build();
  link_frame(N - 1, &frames[0]);
  capture(&st, &ts);
  CHECK(st.py_depth == PG_PYSTACK_MAX, "cycle: depth %u, want %d", st.py_depth, PG_PYSTACK_MAX);

  /* A frame whose code pointer is null (being set up) is left out. */
  build();
#if PY_VERSION_HEX >= 0x030D0000
  frames[0].f_executable = NULL;
#else
  frames[0].f_code = NULL;
#endif
  capture(&st, &ts);
  CHECK(st.py_depth == N - 1 && st.py_code[0] == &codes[1].co, "null code: depth %u",
        st.py_depth);

  /* An unknown version reads nothing. */
  build();
  memset(&st, 0xa5, sizeof st);
  pg_pystack_capture_from_tstate(&st, 0x0308, &ts);
  CHECK(st.py_depth == 0 && !pg_pystack_known_version(0x0308), "3.8 is not known");

  munmap(locked, (size_t)page);
}
