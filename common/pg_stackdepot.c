/* pg_stackdepot.c: the stack depot (pg_stackdepot.h). An insert-only hash of stacks, in the
 * style of the sanitizers' StackDepot but lock-free on insert too, so that a signal handler may
 * add a stack while the thread it interrupted was adding one:
 * - The stacks live in one arena, reserved once and filled by an atomic bump pointer; a stack's
 *   id is its offset in the arena in 16-byte units, plus one. So a get is arithmetic, no lookup.
 * - The hash table is a fixed array of buckets, each the id of the newest stack of a chain
 *   (stacks link to the older ones by id). A put writes its stack in full, then publishes it
 *   with a compare-and-swap of the bucket's head; one that loses the race looks through the
 *   stacks published since it read the head, so equal stacks always end with one id (the
 *   loser's copy stays in the arena unused: a few bytes, only on such a race).
 * Nothing is ever freed or moved, so a reader needs no lock either. */
#include "pg_stackdepot.h"

#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#define BUCKET_BITS 17
#define NBUCKETS (1u << BUCKET_BITS)
#define UNIT 16 /* arena granule: ids count these */
#define MAGIC 0xd5

/* One stack in the arena: the header, then depth return addresses, py_depth code objects and
 * py_depth offsets (4 bytes each), rounded up to UNIT. */
typedef struct node {
  _Atomic uint32_t next; /* older stack of the same bucket (its id), 0 at the end */
  uint32_t hash;
  uint8_t depth, flags, py_depth, magic;
  uint32_t spare;
  uintptr_t words[]; /* pc[depth], then py_code[py_depth], then the int32 offsets */
} node_t;

_Static_assert(sizeof(node_t) == UNIT, "the header is one granule");

static _Atomic(char *) g_arena;
static atomic_size_t g_used;    /* bytes handed out (may pass g_limit: then nothing more fits) */
static size_t g_limit = PG_STACKDEPOT_BYTES;
static atomic_size_t g_stacks, g_dropped;
static _Atomic uint32_t g_buckets[NBUCKETS];

/* The arena, mapped on first use. Two threads (or a thread and a signal handler) may map it at
 * once: one mapping wins, the other is unmapped. */
static char *arena(void) {
  char *a = atomic_load_explicit(&g_arena, memory_order_acquire);
  if (__builtin_expect(a != NULL, 1)) return a;
  void *m = mmap(NULL, PG_STACKDEPOT_BYTES, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return NULL;
  char *expected = NULL;
  if (!atomic_compare_exchange_strong_explicit(&g_arena, &expected, (char *)m,
                                               memory_order_acq_rel, memory_order_acquire)) {
    munmap(m, PG_STACKDEPOT_BYTES);
    return expected;
  }
  return m;
}

static inline size_t node_bytes(unsigned depth, unsigned py_depth) {
  size_t b = sizeof(node_t) + (depth + py_depth) * sizeof(uintptr_t) + py_depth * sizeof(int32_t);
  return (b + UNIT - 1) & ~(size_t)(UNIT - 1);
}

static inline node_t *node_of(char *a, pg_stack_id_t id) {
  return (node_t *)(a + (size_t)(id - 1) * UNIT);
}

/* The stack's depth, clamped to what a pg_stack_t can hold. */
static inline unsigned native_depth(const pg_stack_t *st) {
  return st->depth < PG_STACK_MAX ? st->depth : PG_STACK_MAX;
}
static inline unsigned python_depth(const pg_stack_t *st) {
  return st->py_depth < PG_PYSTACK_MAX ? st->py_depth : PG_PYSTACK_MAX;
}

/* One multiply per word; the bucket is taken from the top bits, which every word reaches. */
static inline uint64_t hash_stack(const pg_stack_t *st, unsigned d, unsigned pd) {
  const uint64_t k = 0x9E3779B97F4A7C15ull;
  uint64_t h = (d | (uint64_t)st->flags << 8 | (uint64_t)pd << 16) * k;
  for (unsigned i = 0; i < d; i++) h = (h ^ (uintptr_t)st->pc[i]) * k;
  for (unsigned i = 0; i < pd; i++)
    h = (h ^ (uintptr_t)st->py_code[i] ^ ((uint64_t)(uint32_t)st->py_offset[i] << 48)) * k;
  return h ^ (h >> 29);
}

static inline bool same(const node_t *n, uint32_t hash, const pg_stack_t *st, unsigned d,
                        unsigned pd) {
  if (n->hash != hash || n->depth != d || n->flags != st->flags || n->py_depth != pd)
    return false;
  for (unsigned i = 0; i < d; i++)
    if (n->words[i] != (uintptr_t)st->pc[i]) return false;
  if (pd == 0) return true;
  const int32_t *off = (const int32_t *)&n->words[d + pd];
  for (unsigned i = 0; i < pd; i++)
    if (n->words[d + i] != (uintptr_t)st->py_code[i] || off[i] != st->py_offset[i]) return false;
  return true;
}

/* The id of the stack equal to st on the chain from `from` down to (not including) `stop`. */
static pg_stack_id_t find(char *a, pg_stack_id_t from, pg_stack_id_t stop, uint32_t hash,
                          const pg_stack_t *st, unsigned d, unsigned pd) {
  for (pg_stack_id_t id = from; id != stop && id != PG_STACK_ID_NONE;) {
    const node_t *n = node_of(a, id);
    if (same(n, hash, st, d, pd)) return id;
    id = atomic_load_explicit(&n->next, memory_order_acquire);
  }
  return PG_STACK_ID_NONE;
}

/* A new stack's room in the arena, or NULL when the depot is full. */
static node_t *take(char *a, size_t bytes, pg_stack_id_t *id) {
  size_t at = atomic_fetch_add_explicit(&g_used, bytes, memory_order_relaxed);
  if (at + bytes > g_limit) return NULL;
  *id = (pg_stack_id_t)(at / UNIT + 1);
  return (node_t *)(a + at);
}

static void fill(node_t *n, uint32_t hash, const pg_stack_t *st, unsigned d, unsigned pd) {
  n->hash = hash;
  n->depth = (uint8_t)d;
  n->flags = st->flags;
  n->py_depth = (uint8_t)pd;
  n->magic = MAGIC;
  for (unsigned i = 0; i < d; i++) n->words[i] = (uintptr_t)st->pc[i];
  int32_t *off = (int32_t *)&n->words[d + pd];
  for (unsigned i = 0; i < pd; i++) {
    n->words[d + i] = (uintptr_t)st->py_code[i];
    off[i] = st->py_offset[i];
  }
}

pg_stack_id_t pg_stackdepot_put(const pg_stack_t *st) {
  if (!st) return PG_STACK_ID_NONE;
  unsigned d = native_depth(st), pd = python_depth(st);
  if (d == 0 && pd == 0) return PG_STACK_ID_NONE;
  char *a = arena();
  if (!a) return PG_STACK_ID_NONE;
  uint64_t h64 = hash_stack(st, d, pd);
  uint32_t hash = (uint32_t)(h64 >> 32);
  _Atomic uint32_t *bucket = &g_buckets[h64 >> (64 - BUCKET_BITS)];
  pg_stack_id_t head = atomic_load_explicit(bucket, memory_order_acquire);
  pg_stack_id_t id = find(a, head, PG_STACK_ID_NONE, hash, st, d, pd);
  if (id != PG_STACK_ID_NONE) return id;

  node_t *n = take(a, node_bytes(d, pd), &id);
  if (!n) {
    atomic_fetch_add_explicit(&g_dropped, 1, memory_order_relaxed);
    return PG_STACK_ID_NONE;
  }
  fill(n, hash, st, d, pd);
  atomic_store_explicit(&n->next, head, memory_order_relaxed);
  /* Published with release: a reader that finds the id on the chain sees the stack written. */
  while (!atomic_compare_exchange_weak_explicit(bucket, &head, id, memory_order_acq_rel,
                                                memory_order_acquire)) {
    pg_stack_id_t older = atomic_load_explicit(&n->next, memory_order_relaxed);
    pg_stack_id_t other = find(a, head, older, hash, st, d, pd);
    if (other != PG_STACK_ID_NONE) return other; /* published meanwhile: n stays unused */
    atomic_store_explicit(&n->next, head, memory_order_relaxed);
  }
  atomic_fetch_add_explicit(&g_stacks, 1, memory_order_relaxed);
  return id;
}

/* The stack of id, or NULL when id cannot be one the depot gave. */
static const node_t *lookup(pg_stack_id_t id) {
  if (id == PG_STACK_ID_NONE) return NULL;
  char *a = atomic_load_explicit(&g_arena, memory_order_acquire);
  size_t used = atomic_load_explicit(&g_used, memory_order_relaxed);
  if (used > g_limit) used = g_limit;
  if (!a || (size_t)(id - 1) * UNIT + sizeof(node_t) > used) return NULL;
  const node_t *n = node_of(a, id);
  return n->magic == MAGIC ? n : NULL;
}

bool pg_stackdepot_get(pg_stack_id_t id, pg_stack_t *out) {
  out->depth = 0;
  out->flags = 0;
  out->py_depth = 0;
  out->tid = 0;
  const node_t *n = lookup(id);
  if (!n) return false;
  unsigned d = n->depth, pd = n->py_depth;
  for (unsigned i = 0; i < d; i++) out->pc[i] = (void *)n->words[i];
  const int32_t *off = (const int32_t *)&n->words[d + pd];
  for (unsigned i = 0; i < pd; i++) {
    out->py_code[i] = (const void *)n->words[d + i];
    out->py_offset[i] = off[i];
  }
  out->depth = (uint8_t)d;
  out->flags = n->flags;
  out->py_depth = (uint8_t)pd;
  return true;
}

const void *const *pg_stackdepot_frames(pg_stack_id_t id, unsigned *depth) {
  const node_t *n = lookup(id);
  *depth = n ? n->depth : 0;
  return n ? (const void *const *)n->words : NULL;
}

void pg_stackdepot_stats(pg_stackdepot_stats_t *out) {
  size_t used = atomic_load_explicit(&g_used, memory_order_relaxed);
  out->stacks = atomic_load_explicit(&g_stacks, memory_order_relaxed);
  out->bytes = used < g_limit ? used : g_limit;
  out->dropped = atomic_load_explicit(&g_dropped, memory_order_relaxed);
}

void pg_stackdepot_test_limit(size_t bytes) {
  g_limit = bytes < PG_STACKDEPOT_BYTES ? bytes : PG_STACKDEPOT_BYTES;
}
