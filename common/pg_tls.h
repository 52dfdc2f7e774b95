/* pg_tls.h: pinguard's larger per-thread buffers, mapped on first use. pinguard's static TLS is
 * added to every thread of every process it is preloaded into (glibc carves it from each
 * thread's stack), CUDA or not, so it is kept under 1 KiB: a thread created with a
 * PTHREAD_STACK_MIN stack must not run out because of pinguard. Whatever is larger lives in the
 * blocks below, one mapping each, made the first time a thread asks and unmapped when it exits.
 *
 * pg_tls_get takes no lock and calls no allocator (mmap only), so it may run in the fault
 * handler; a caller copes with NULL (no memory): each use says what it does without its block. */
#ifndef PG_TLS_H
#define PG_TLS_H

#include <stddef.h>

typedef enum pg_tls_id {
  PG_TLS_REGION_MEMO, /* pg_regions.c: the memo of regions found alone, and of one range */
  PG_TLS_STREAM_CACHE, /* pg_streams.c: stream handle -> state, for threads using many streams */
  PG_TLS_NEG_CACHE,   /* pg_decide.c: pages known not to be pinned */
  PG_TLS_HOSTFN_OPEN, /* pg_decide.c: ranges a running host function was let through */
  PG_TLS_STACK_ENDS,  /* pg_stack.c: break points where a frame-pointer walk may end */
  PG_TLS_FAULT_STACK, /* core/pg_fault.c: the stack a fault is settled (and reported) on */
  PG_TLS_PY_MEMO,     /* pg_pystack.c: the thread's last Python frame walk, and what it read */
  PG_TLS_COUNT
} pg_tls_id_t;

/* The blocks' pointers (pg_tls.c): read inline, so that a block costs the per-copy path what
 * the thread-local array it replaces did, and one test. */
typedef struct pg_tls_block {
  void *p;
  size_t len; /* mapped bytes */
} pg_tls_block_t;
extern __thread pg_tls_block_t pg_tls_blocks[PG_TLS_COUNT];

/* Maps the calling thread's block `id` (pg_tls_get's slow path). */
void *pg_tls_map(pg_tls_id_t id, size_t bytes);

/* The calling thread's block `id`, of `bytes` (the same for every call with that id), zeroed
 * when first mapped; NULL if it cannot be mapped. Async-signal-safe. */
static inline void *pg_tls_get(pg_tls_id_t id, size_t bytes) {
  void *p = pg_tls_blocks[id].p;
  return __builtin_expect(p != NULL, 1) ? p : pg_tls_map(id, bytes);
}

/* The block if this thread has mapped it, else NULL; never maps. */
static inline void *pg_tls_peek(pg_tls_id_t id) { return pg_tls_blocks[id].p; }

#endif /* PG_TLS_H */
