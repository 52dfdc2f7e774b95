/* pg_dedup.h: the fixed-size table that folds repeated reports into one line plus a count.
 * A report's identity is (kind, violating call site, launching call site); see pg_dedup_key.
 * Not thread-safe: pg_policy.c uses it under the report lock. */
#ifndef PG_DEDUP_H
#define PG_DEDUP_H

#include <stdbool.h>
#include <stdint.h>

#include "pg_report.h"

/* Frames of each stack that make up a call site. pc[0] alone is not enough: for a CPU access it
 * is often inside memcpy or another libc routine, and the caller is what tells two bugs apart. */
#define PG_DEDUP_FRAMES 2
#define PG_DEDUP_SLOTS 4096 /* power of two */

typedef struct pg_dedup_key {
  int kind;
  void *access[PG_DEDUP_FRAMES];
  void *launch[PG_DEDUP_FRAMES]; /* first in-flight access's launch stack */
} pg_dedup_key_t;

typedef struct pg_dedup_entry {
  bool used;
  pg_dedup_key_t key;
  uint64_t count;   /* occurrences, the first included */
  uint32_t id;      /* number of the printed report (0: not printed) */
  int rule;         /* suppression rule that matched it, or -1 */
} pg_dedup_entry_t;

typedef struct pg_dedup {
  unsigned used;
  pg_dedup_entry_t slots[PG_DEDUP_SLOTS];
} pg_dedup_t;

/* A stack's part of the key is its innermost Python frame (code object and instruction) when it
 * has Python frames. Otherwise it is its first frame outside the runtime: libc, the loader, pinguard,
 * the CUDA runtime, the sanitizer runtimes and the Python interpreter (libpython, or a python
 * executable), so one bug whose innermost frame is memcpy at varying offsets (or the eval loop)
 * is one report. A stack with no such frame keeps its first PG_DEDUP_FRAMES frames. Which
 * addresses are runtime comes from a table of the runtime modules' code ranges that
 * pg_dedup_runtime_refresh() rebuilds (dl_iterate_phdr: never from a signal handler); a signal
 * handler's report uses the table as last built. */
void pg_dedup_key_of(const pg_report_t *r, pg_dedup_key_t *k);
void pg_dedup_runtime_refresh(void);
/* Whether pc lies in a runtime module's code, by the table (tests). */
bool pg_dedup_is_runtime_pc(const void *pc);
/* The entry for k; *is_new tells whether it was just added (count 0, id 0, rule -1).
 * NULL when the table is full: the caller then treats the report as new every time. */
pg_dedup_entry_t *pg_dedup_lookup(pg_dedup_t *d, const pg_dedup_key_t *k, bool *is_new);
void pg_dedup_clear(pg_dedup_t *d);

#endif /* PG_DEDUP_H */
