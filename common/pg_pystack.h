/* pg_pystack.h: the Python frames of the calling thread, for processes running CPython 3.9 to
 * 3.13. Capture copies (code object, instruction offset) pairs into the stack record and is safe
 * anywhere, the guard-fault handler included: it takes no lock, allocates nothing, never takes
 * the GIL, and reads the interpreter's memory only through loads that cannot bring the process
 * down: where pinguard's fault handler is installed (pg_safeload.h: guard pages on, the
 * default), each load of the frame chain is one instruction whose fault the handler turns into
 * the end of the walk, with no system call; elsewhere through process_vm_readv on the process's
 * own pid, which fails instead of faulting (a few system calls per capture). Both give the same
 * frames. Names and lines are resolved when a report is printed (pg_pystack_resolve), through
 * process_vm_readv. */
#ifndef PG_PYSTACK_H
#define PG_PYSTACK_H

#include <stdbool.h>
#include <stdint.h>

struct pg_stack;

/* What pg_pystack_init found in the process. */
typedef enum pg_py_state {
  PG_PY_ABSENT,   /* no CPython in the process (or Python stacks turned off) */
  PG_PY_READY,    /* a known version: stacks carry its frames */
  PG_PY_UNKNOWN,  /* a CPython whose layout this build does not know: native frames only */
} pg_py_state_t;

/* Looks for CPython in the process (dlsym: never from a signal handler) and, if `enable`, turns
 * the capture on for a known version. Returns what it found; *version gets 0xMMmm (0x030b for
 * 3.11) when a CPython was found. Idempotent; enable=false turns the capture off. */
pg_py_state_t pg_pystack_init(bool enable, unsigned *version);

/* Appends the calling thread's Python frames (innermost first) to out's py_* fields. Cheap when
 * there is no Python: one relaxed load. */
void pg_pystack_capture(struct pg_stack *out);
/* Non-NULL while Python frames are captured: a caller that has set py_depth to 0 may test it
 * before the call. */
extern const void *volatile pg_pystack_layout;
/* The calling thread's Python frames into out, when out has none yet and the interpreter is one
 * pg_pystack_init found readable, even with every capture turned off (enable=false): for the CPU
 * side of a report, read once at report time, so it costs no launch anything. Safe where
 * pg_pystack_capture is (the fault handler included). */
void pg_pystack_capture_now(struct pg_stack *out);

/* One Python frame, resolved. */
typedef struct pg_pyframe {
  char file[256];
  char function[128];  /* co_qualname from 3.11, co_name before */
  unsigned line;       /* 0 if unknown */
} pg_pyframe_t;

/* Resolves a captured (code, offset) pair. False when the code object is gone or is not one (it
 * was freed since the capture), or the frame was still being set up: the frame is then left
 * out. Callers serialize (a static buffer holds the line table): the report lock. */
bool pg_pystack_resolve(const void *code, int32_t offset, pg_pyframe_t *out);

/* Tests: the layout table's entry for a version (0x030b), false when unknown; and a way to drive
 * the reader over hand-built frames: a fake PyThreadState `tstate` for `version`. */
bool pg_pystack_known_version(unsigned version);
void pg_pystack_capture_from_tstate(struct pg_stack *out, unsigned version, const void *tstate);

#endif /* PG_PYSTACK_H */
