/* pg_unwind.h: a stack walk through frames built without frame pointers, at close to the cost
 * of a frame-pointer walk (x86-64 only). Each return address's unwind rule (where the frame's
 * canonical frame address is, where the caller's rbp was saved, whether the frame is the
 * outermost) is read once from the object's .eh_frame (found through .eh_frame_hdr) and kept
 * in a fixed lock-free table, so that every later walk through that address costs a table
 * probe and two loads.
 *
 * Contract:
 * - pg_unwind_continue takes no lock and never allocates once every return address it meets is
 *   in the table; a new one is looked up with dl_iterate_phdr (the loader's lock): not from a
 *   signal handler (pass cached_only then).
 * - Rules it cannot follow (a CFA computed by an expression, a register other than rsp or rbp
 *   holding the CFA, 64-bit DWARF) end the walk with PG_UNWIND_UNSUPPORTED: the caller falls
 *   back to the C library's unwinder. An address no object describes ends it the same way.
 * - Every load is checked against the thread's stack bounds. */
#ifndef PG_UNWIND_H
#define PG_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

/* The state at a return: pc is a return address (already recorded by the caller), sp the stack
 * pointer just after that return (the callee's canonical frame address), fp the caller's rbp
 * then. */
typedef struct pg_unwind_regs {
  uintptr_t pc, sp, fp;
} pg_unwind_regs_t;

typedef enum pg_unwind_end {
  PG_UNWIND_OUTERMOST,   /* the outermost frame was reached (or a return address of 0) */
  PG_UNWIND_FULL,        /* max frames recorded */
  PG_UNWIND_UNSUPPORTED, /* a rule it cannot follow, or no unwind information (see above) */
  PG_UNWIND_END_FRAME,   /* PG_UNWIND_STOP_AT_END, and r.pc is in an end frame */
} pg_unwind_end_t;

enum {
  PG_UNWIND_CACHED_ONLY = 1u << 0, /* a return address not in the table ends the walk as
                                      UNSUPPORTED instead of being looked up */
  PG_UNWIND_STOP_AT_END = 1u << 1, /* r.pc in code the end test accepts: record nothing, return
                                      PG_UNWIND_END_FRAME */
};

/* Appends to pc[*n..max) the return addresses of the frames above r.pc's, stopping as the
 * result says; *n is updated. Stack bounds [lo, hi). flags: PG_UNWIND_*. *only_end (if given):
 * whether it recorded frames, reached the outermost one, and every frame it recorded is in code
 * the end test accepts (a thread function without frame pointers: only the C library's thread
 * entry lay beyond). */
pg_unwind_end_t pg_unwind_continue(pg_unwind_regs_t r, void **pc, unsigned *n, unsigned max,
                                   uintptr_t lo, uintptr_t hi, unsigned flags, bool *only_end);

/* The stack words a walk's result depends on: pg_unwind_continue_logged's record, in no
 * particular order. Every return address it read, and each saved rbp that a later frame's CFA
 * was computed from (a saved rbp that the next one replaced unused is left out). A walk from
 * the same registers over stack words that still hold the same values records the same frames
 * and ends the same way (a frame's rule depends on its return address only), so a caller may
 * keep one walk's result and reuse it after checking the words (pg_stack.c's tail memo). */
#define PG_UNWIND_LOG_MAX 40
typedef struct pg_unwind_log {
  unsigned n; /* words read; above PG_UNWIND_LOG_MAX, the first PG_UNWIND_LOG_MAX were kept */
  uintptr_t at[PG_UNWIND_LOG_MAX], val[PG_UNWIND_LOG_MAX];
} pg_unwind_log_t;

/* pg_unwind_continue, recording in *log (n set to 0 first) every stack word it read. */
pg_unwind_end_t pg_unwind_continue_logged(pg_unwind_regs_t r, void **pc, unsigned *n,
                                          unsigned max, uintptr_t lo, uintptr_t hi,
                                          unsigned flags, bool *only_end, pg_unwind_log_t *log);

/* The test behind PG_UNWIND_STOP_AT_END (pg_stack.c: the C library's entry, the interpreter's
 * loop), applied once per return address when its rule is cached. Set before the first walk. */
void pg_unwind_set_end_test(bool (*is_end)(uintptr_t ret));

typedef struct pg_unwind_stats {
  unsigned long cached;      /* return addresses in the table */
  unsigned long table_full;  /* lookups that found no room (computed every time instead) */
} pg_unwind_stats_t;
void pg_unwind_stats(pg_unwind_stats_t *out);

#endif /* PG_UNWIND_H */
