/* pg_symbolize.h: turns captured return addresses into module / function / file:line, only when
 * a report is printed. dladdr() always; addr2line (one long-lived helper per module) for
 * file:line when allowed. Callers serialize: it is only used under the report lock. */
#ifndef PG_SYMBOLIZE_H
#define PG_SYMBOLIZE_H

#include <stdbool.h>
#include <stdint.h>

#include "pg_pystack.h"
#include "pg_stack.h"

typedef struct pg_frame {
  void *pc;
  uintptr_t module_offset;  /* pc relative to the module's load base */
  char module[256];         /* full path as the loader knows it; "" if unknown */
  char function[192];       /* demangled where addr2line did it; "" if unknown */
  char file[256];           /* source file; "" if unknown */
  unsigned line;            /* 0 if unknown */
} pg_frame_t;

typedef struct pg_symstack {
  unsigned depth;
  uint32_t tid;
  bool present;             /* false when the report had no stack for this slot */
  pg_frame_t f[PG_STACK_MAX];
  unsigned py_depth;        /* Python frames, innermost first, printed after the native ones */
  pg_pyframe_t py[PG_PYSTACK_MAX];
} pg_symstack_t;

/* How pg_symbolize_stack finds file:line (names always come from dladdr and the module's symbol
 * table, or from addr2line when it ran). 0: no file:line. */
#define PG_SYM_ADDR2LINE 1u  /* an addr2line helper per module: a child process, never from a
                              * signal handler */
#define PG_SYM_LINE_TABLE 2u /* the module's own DWARF line table (pg_dwarf_line.h), where
                              * addr2line did not run or found nothing: signal-safe */

/* Symbolizes up to max_depth frames of s into out (s may be NULL: out->present = false), and
 * all of its Python frames. When there are Python frames, the native frames stop
 * before the first one in the interpreter's evaluation loop: the Python frames say what ran
 * there. `how`: PG_SYM_* flags; without PG_SYM_ADDR2LINE no fork, no malloc (signal handlers). */
void pg_symbolize_stack(const pg_stack_t *s, unsigned max_depth, unsigned how,
                        pg_symstack_t *out);

/* The module's base name ("libc.so.6"). */
const char *pg_frame_module_base(const pg_frame_t *f);

/* Stops the addr2line helpers (at exit). */
void pg_symbolize_shutdown(void);
/* In a fork child: forget the parent's helpers without touching them. */
void pg_symbolize_forget(void);

#endif /* PG_SYMBOLIZE_H */
