/* pg_stackdepot.h: one small id per unique stack. A record that must keep a stack (an in-flight
 * access, a region's allocation site) stores a pg_stack_id_t, 4 bytes, instead of a few hundred
 * bytes of pg_stack_t; a report turns the id back into the stack.
 *
 * What is kept per stack: depth, flags, the native return addresses, the Python frames (code
 * object and offset). Not the thread number: the same stack is often reached by many threads,
 * so a record keeps its `tid` beside the id.
 *
 * Contract:
 * - pg_stackdepot_put and pg_stackdepot_get take no lock and never call malloc: safe from a
 *   signal handler, from any thread, and in a fork child (the depot's memory is inherited).
 *   The first put of the process maps the depot's memory (one mmap, which is async-signal-safe);
 *   every later call makes no system call.
 * - Insert-only: an id, once returned, names the same stack for the life of the process (and of
 *   its fork children). Equal stacks get equal ids, from any thread, racing or not.
 * - Bounded: the depot holds at most PG_STACKDEPOT_BYTES of stacks (reserved, not committed:
 *   pages are touched as stacks are added). Once full, a put of a new stack returns
 *   PG_STACK_ID_NONE (counted: pg_stackdepot_stats); stacks already there keep their ids.
 * - Cost: a put hashes the stack and compares it with the bucket's entries (a few instructions
 *   per frame); a get is an index computation and a copy. */
#ifndef PG_STACKDEPOT_H
#define PG_STACKDEPOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pg_stack.h"

typedef uint32_t pg_stack_id_t;
#define PG_STACK_ID_NONE ((pg_stack_id_t)0) /* no stack: none captured, or the depot was full */

/* Reserved address space for stacks (committed as used). A stack of 16 native and 24 Python
 * frames takes 368 bytes, a typical one of 8 native frames 80: about a million such stacks. */
#define PG_STACKDEPOT_BYTES ((size_t)64 << 20)

/* The id of st's content (depth, flags, pc[], Python frames), adding it when new;
 * PG_STACK_ID_NONE when st is NULL, holds no frame at all, or the depot is full. */
pg_stack_id_t pg_stackdepot_put(const pg_stack_t *st);

/* Fills out with the stack named by id (tid set to 0: the caller's record keeps the thread).
 * False, with out emptied (depth 0), for PG_STACK_ID_NONE or an id the depot never gave. */
bool pg_stackdepot_get(pg_stack_id_t id, pg_stack_t *out);

/* The stack's frames in place, without a copy (NULL for an unknown id): its native depth and
 * return addresses. Valid forever. */
const void *const *pg_stackdepot_frames(pg_stack_id_t id, unsigned *depth);

typedef struct pg_stackdepot_stats {
  size_t stacks;      /* unique stacks held */
  size_t bytes;       /* arena bytes used by them */
  size_t dropped;     /* puts refused because the depot was full */
} pg_stackdepot_stats_t;
void pg_stackdepot_stats(pg_stackdepot_stats_t *out);

/* Tests only: caps the arena at `bytes` (at most PG_STACKDEPOT_BYTES), as if the depot had been
 * built that small, to exercise the full depot. Call before stacks are added. */
void pg_stackdepot_test_limit(size_t bytes);

#endif /* PG_STACKDEPOT_H */
