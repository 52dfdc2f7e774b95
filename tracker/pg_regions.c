/* pg_regions.c: the pinned-region index. Readers (every copy and launch) search a balanced tree
 * of regions under a seqlock and take no lock; writers (pin / unpin) serialize on one mutex,
 * which also guards a uthash by exact base so unpinning finds its region in O(1). A pin or an
 * unpin costs O(log n) in the number of regions (issue 9: the sorted array it replaces shifted
 * O(n) entries when registrations came in no particular address order). */
#include <stdlib.h>
#include <string.h>

#include "pg_tls.h"
#include "pg_pinmap.h"
#include "pg_tracker_internal.h"

/* The index: an AVL tree keyed by (base, id), so that among equal bases (the same pages
 * registered twice) the newer registration comes later and lookups find it first. Each node
 * keeps the largest end in its subtree (maxend), which prunes every search to the subtrees that
 * can hold an overlapping region. Fields readers see are atomic, because readers may race with a
 * writer; the seqlock tells them afterwards to retry. Nodes are type-stable (never freed, reused
 * through a free list), so a reader on a stale node still reads valid memory. */
typedef struct ix_node {
  _Atomic uintptr_t base, end, maxend;
  _Atomic(pg_region_rec_t *) rec;
  _Atomic(struct ix_node *) kid[2];
  /* writer side, under g_wmu */
  uint64_t id;
  int height;
  struct ix_node *next_free;
} ix_node_t;

/* Readers' explicit stack: an AVL tree of n nodes is at most 1.44 log2(n + 2) high. */
#define IX_STACK 96
#define IX_CHUNK 256

static _Atomic(ix_node_t *) g_root;
static atomic_size_t g_n;
atomic_ulong pg_regions_seq;     /* odd while a writer is changing the index */
#define g_seq pg_regions_seq
static atomic_ulong g_next_id = 1;
static pthread_mutex_t g_wmu = PTHREAD_MUTEX_INITIALIZER;
static pg_region_rec_t *g_by_base; /* uthash: newest registration for each exact base */
static pg_region_rec_t *g_all, *g_free;
static ix_node_t *g_free_nodes;

/* ---- writer helpers (g_wmu held) ---------------------------------------------------------- */
/* Seqlock without fences (ThreadSanitizer does not model them): every index store is a release
 * and every load an acquire, so a reader that sees any value a writer stored also sees the odd
 * sequence number that writer set first, and retries. Both are plain moves on x86-64. */
#define LD(x) atomic_load_explicit(&(x), memory_order_acquire)
#define ST(x, v) atomic_store_explicit(&(x), (v), memory_order_release)

static void write_begin(void) { atomic_fetch_add_explicit(&g_seq, 1, memory_order_acq_rel); }

static void write_end(void) { atomic_store_explicit(&g_seq, LD(g_seq) + 1, memory_order_release); }

static ix_node_t *node_alloc(void) {
  if (!g_free_nodes) {
    ix_node_t *chunk = calloc(IX_CHUNK, sizeof *chunk);
    if (!chunk) return NULL;
    for (size_t i = 0; i < IX_CHUNK; i++) {
      chunk[i].next_free = g_free_nodes;
      g_free_nodes = &chunk[i];
    }
  }
  ix_node_t *t = g_free_nodes;
  g_free_nodes = t->next_free;
  return t;
}

static void node_free(ix_node_t *t) {
  t->next_free = g_free_nodes;
  g_free_nodes = t;
}

static int height(ix_node_t *t) { return t ? t->height : 0; }

/* Recomputes t's height and subtree maximum from its children. */
static void update(ix_node_t *t) {
  ix_node_t *l = LD(t->kid[0]), *r = LD(t->kid[1]);
  int hl = height(l), hr = height(r);
  t->height = 1 + (hl > hr ? hl : hr);
  uintptr_t m = LD(t->end);
  if (l && LD(l->maxend) > m) m = LD(l->maxend);
  if (r && LD(r->maxend) > m) m = LD(r->maxend);
  ST(t->maxend, m);
}

/* Rotates t's child on side `dir` up into t's place; returns the new subtree root. */
static ix_node_t *rotate(ix_node_t *t, int dir) {
  ix_node_t *c = LD(t->kid[dir]);
  ST(t->kid[dir], LD(c->kid[!dir]));
  ST(c->kid[!dir], t);
  update(t);
  update(c);
  return c;
}

static ix_node_t *rebalance(ix_node_t *t) {
  update(t);
  int bal = height(LD(t->kid[1])) - height(LD(t->kid[0]));
  if (bal < -1 || bal > 1) {
    int dir = bal > 0; /* the taller side */
    ix_node_t *c = LD(t->kid[dir]);
    if (height(LD(c->kid[!dir])) > height(LD(c->kid[dir]))) ST(t->kid[dir], rotate(c, !dir));
    return rotate(t, dir);
  }
  return t;
}

/* The order of the index: by base, then by id (registration order). */
static int key_cmp(uintptr_t base, uint64_t id, const ix_node_t *t) {
  uintptr_t tb = LD(t->base);
  if (base != tb) return base < tb ? -1 : 1;
  return id < t->id ? -1 : id > t->id;
}

static ix_node_t *avl_insert(ix_node_t *t, ix_node_t *n) {
  if (!t) return n;
  int dir = key_cmp(LD(n->base), n->id, t) > 0;
  ST(t->kid[dir], avl_insert(LD(t->kid[dir]), n));
  return rebalance(t);
}

static ix_node_t *avl_remove_min(ix_node_t *t, ix_node_t **min) {
  ix_node_t *l = LD(t->kid[0]);
  if (!l) {
    *min = t;
    return LD(t->kid[1]);
  }
  ST(t->kid[0], avl_remove_min(l, min));
  return rebalance(t);
}

/* Unlinks the node with key (base, id), returned in *gone (NULL if absent). */
static ix_node_t *avl_remove(ix_node_t *t, uintptr_t base, uint64_t id, ix_node_t **gone) {
  if (!t) return NULL;
  int c = key_cmp(base, id, t);
  if (c != 0) {
    int dir = c > 0;
    ST(t->kid[dir], avl_remove(LD(t->kid[dir]), base, id, gone));
    return rebalance(t);
  }
  *gone = t;
  ix_node_t *l = LD(t->kid[0]), *r = LD(t->kid[1]);
  if (!l || !r) return l ? l : r;
  ix_node_t *m = NULL;
  ix_node_t *rest = avl_remove_min(r, &m);
  ST(m->kid[0], l);
  ST(m->kid[1], rest);
  return rebalance(m);
}

/* The node with key (base, id), or NULL (writer view). */
static ix_node_t *avl_find(uintptr_t base, uint64_t id) {
  ix_node_t *t = LD(g_root);
  while (t) {
    int c = key_cmp(base, id, t);
    if (c == 0) return t;
    t = LD(t->kid[c > 0]);
  }
  return NULL;
}

static pg_region_rec_t *rec_alloc(void) {
  pg_region_rec_t *r = g_free;
  if (r) {
    g_free = r->next_free;
    return r;
  }
  r = calloc(1, sizeof(*r));
  if (!r) return NULL;
  r->next_all = g_all;
  g_all = r;
  return r;
}

static void fill_info(pg_region_t *out, uintptr_t base, uintptr_t end, pg_region_rec_t *r) {
  out->base = base;
  out->size = end - base;
  out->how = (pg_pin_how_t)LD(r->how);
  out->flags = LD(r->flags);
  out->id = LD(r->id);
}

/* ---- public: writers ------------------------------------------------------------------------ */
int pg_region_add(const void *base, size_t size, pg_pin_how_t how, unsigned flags,
                  const pg_stack_t *alloc_stack) {
  uintptr_t b = (uintptr_t)base;
  if (!size || b + size < b) return -1;
  pthread_mutex_lock(&g_wmu);
  pg_region_rec_t *r = rec_alloc();
  if (!r) {
    pthread_mutex_unlock(&g_wmu);
    return -1;
  }
  pg_lock(&r->mu);
  atomic_store_explicit(&r->quiet, PG_QUIET_EMPTY, memory_order_release); /* nothing in flight */
  if (alloc_stack) pg_stack_copy(&r->stack, alloc_stack);
  else memset(&r->stack, 0, sizeof(r->stack));
  pg_unlock(&r->mu);
  r->key_base = b;
  pg_region_rec_t *older = NULL;
  HASH_FIND(hh, g_by_base, &b, sizeof(b), older);
  pg_hash_oom = 0;
  if (older) HASH_DEL(g_by_base, older);
  HASH_ADD(hh, g_by_base, key_base, sizeof(r->key_base), r);
  if (pg_hash_oom) { /* keep the older one reachable; the new one is not indexed */
    if (older) HASH_ADD(hh, g_by_base, key_base, sizeof(older->key_base), older);
    r->next_free = g_free;
    g_free = r;
    pthread_mutex_unlock(&g_wmu);
    return -1;
  }
  r->dup_older = older;

  ix_node_t *node = node_alloc();
  bool ok = node != NULL;
  if (ok) {
    pg_pinmap_add(b, b + size); /* before the index shows the region */
    write_begin();
    uint64_t id = atomic_fetch_add_explicit(&g_next_id, 1, memory_order_relaxed);
    ST(r->id, id);
    ST(r->how, (int)how);
    ST(r->flags, flags);
    /* Equal bases: the newer (larger id) goes after the older, so lookups find it first. */
    ST(node->base, b);
    ST(node->end, b + size);
    ST(node->maxend, b + size);
    ST(node->rec, r);
    ST(node->kid[0], NULL);
    ST(node->kid[1], NULL);
    node->id = id;
    node->height = 1;
    ST(g_root, avl_insert(LD(g_root), node));
    ST(g_n, LD(g_n) + 1);
    write_end();
  }
  if (!ok) { /* out of memory: undo the hash entry */
    HASH_DEL(g_by_base, r);
    if (older) HASH_ADD(hh, g_by_base, key_base, sizeof(older->key_base), older);
    r->dup_older = NULL;
    r->next_free = g_free;
    g_free = r;
  }
  pthread_mutex_unlock(&g_wmu);
  return ok ? 0 : -1;
}

int pg_region_remove(const void *base, pg_region_t *out) {
  return pg_region_remove_keep_stack(base, out, NULL);
}

int pg_region_remove_keep_stack(const void *base, pg_region_t *out, pg_stack_t *stack) {
  uintptr_t b = (uintptr_t)base;
  pthread_mutex_lock(&g_wmu);
  pg_region_rec_t *r = NULL;
  HASH_FIND(hh, g_by_base, &b, sizeof(b), r);
  if (!r) {
    pthread_mutex_unlock(&g_wmu);
    return 0;
  }
  HASH_DEL(g_by_base, r);
  if (r->dup_older) { /* deleting frees no memory, so re-adding the older one cannot fail */
    pg_hash_oom = 0;
    HASH_ADD(hh, g_by_base, key_base, sizeof(r->dup_older->key_base), r->dup_older);
  }
  r->dup_older = NULL;

  uint64_t id = LD(r->id);
  ix_node_t *node = avl_find(b, id); /* exists: every indexed record is in the hash and back */
  uintptr_t end = LD(node->end);
  if (out) fill_info(out, b, end, r);
  if (stack) {
    pg_lock(&r->mu);
    *stack = r->stack;
    pg_unlock(&r->mu);
  }

  write_begin();
  ix_node_t *gone = NULL;
  ST(g_root, avl_remove(LD(g_root), b, id, &gone));
  ST(g_n, LD(g_n) - 1);
  if (gone) {
    ST(gone->rec, NULL);
    node_free(gone);
  }
  atomic_fetch_add_explicit(&r->gen, 1, memory_order_relaxed);
  ST(r->id, 0); /* ids of removed regions resolve to nothing */
  write_end();
  pg_pinmap_remove(b, end); /* after the index forgot the region */
  pg_inflight_clear_region(r); /* takes r->mu; its accesses retire from their streams */
  r->next_free = g_free;
  g_free = r;
  pthread_mutex_unlock(&g_wmu);
  return 1;
}

/* ---- public: lock-free readers ---------------------------------------------------------------
 * Each reader runs its search between two reads of g_seq and retries if a writer intervened.
 * Every loop is bounded by the entry count it read, so a torn view cannot run away. */
static unsigned long read_begin(void) {
  unsigned long s;
  while ((s = atomic_load_explicit(&g_seq, memory_order_acquire)) & 1) {
    __builtin_ia32_pause();
  }
  return s;
}

static bool read_ok(unsigned long s) {
  return atomic_load_explicit(&g_seq, memory_order_relaxed) == s;
}

/* Bounds every reader walk: a consistent tree of n nodes is walked in fewer steps, and a torn
 * view (which the seqlock then rejects) cannot run away. */
static size_t step_limit(void) { return 2 * atomic_load_explicit(&g_n, memory_order_acquire) + 64; }

/* The region containing x with the largest key (the innermost, newest registration): a walk in
 * descending key order over bases <= x, skipping subtrees whose regions all end at or before x.
 * O(log n) when regions do not overlap. */
int pg_region_find(const void *p, pg_region_t *out) {
  uintptr_t x = (uintptr_t)p;
  for (;;) {
    unsigned long s = read_begin();
    ix_node_t *stack[IX_STACK];
    size_t sp = 0, steps = 0, limit = step_limit();
    ix_node_t *t = LD(g_root);
    int found = 0;
    pg_region_t info;
    for (;;) {
      while (t && steps++ < limit) {
        if (LD(t->maxend) <= x) break;
        if (LD(t->base) <= x) {
          if (sp == IX_STACK) break; /* only a torn view is this deep */
          stack[sp++] = t;
          t = LD(t->kid[1]);
        } else {
          t = LD(t->kid[0]);
        }
      }
      if (!sp || steps >= limit) break;
      t = stack[--sp];
      uintptr_t end = LD(t->end);
      if (end > x) {
        pg_region_rec_t *r = LD(t->rec);
        if (!r) break;
        fill_info(&info, LD(t->base), end, r);
        found = 1;
        break;
      }
      t = LD(t->kid[0]);
    }
    if (read_ok(s)) {
      if (found && out) *out = info;
      return found;
    }
  }
}

/* Each copy looks its span up three times (is it pinned, the conflict check, the begin), and
 * copies go on into the same buffers: a model's per-layer buffers, dozens to hundreds of them.
 * Two per-thread memos, both valid only while no writer has run since they were filled (the
 * sequence number never repeats):
 * - the regions found *alone* (a region no other region overlaps answers, by itself, every range
 *   inside it), up to SOLO_CACHE of them, sorted by base: all filled under one sequence number,
 *   so they never overlap each other, and a binary search finds the one holding an address. A
 *   hint per page of address (hashed) names the entry that answered there last, so a copy
 *   cycling over many buffers, small ones side by side included, finds its entry at once;
 * - the last answer for one exact range (any number of regions, up to MEMO_HITS). */
#define SOLO_CACHE 256
typedef struct solo_entry {
  unsigned long seq;           /* t_solo_last: 0 empty (a reader's sequence is never 0 after a
                                * fill); in the memo, the memo's own sequence counts */
  uintptr_t base, end;
  pg_region_rec_t *rec;
  uint64_t gen;
} solo_entry_t;
/* The entry that answered last, copied: the one fast-path test, in static TLS. */
static __thread solo_entry_t t_solo_last;
#define SOLO_HINTS 512
static inline unsigned solo_hint_slot(uintptr_t lo) {
  return (unsigned)((lo >> 12) ^ (lo >> 21)) % SOLO_HINTS;
}

#define MEMO_HITS 4
/* The rest of both memos, in a per-thread block mapped on first use (pg_tls.h): without one,
 * every lookup that misses t_solo_last walks the index. */
typedef struct lookup_memo {
  unsigned long solo_seq;      /* the sequence its entries were found under */
  unsigned nsolo;              /* entries in solo[], sorted by base */
  unsigned solo_evict;         /* which entry a full memo gives up next */
  uint16_t solo_hint[SOLO_HINTS];
  solo_entry_t solo[SOLO_CACHE];
  struct {
    bool valid;
    unsigned long seq;
    uintptr_t lo, hi;
    size_t total;
    pg_region_hit_t hits[MEMO_HITS];
  } range;
} lookup_memo_t;
static lookup_memo_t *lookup_memo(void) { return pg_tls_get(PG_TLS_REGION_MEMO, sizeof(lookup_memo_t)); }

/* One walk of a consistent-looking tree (the caller's seqlock section judges it): overlapping
 * entries in ascending key order, skipping subtrees whose regions all end at or before lo and
 * stopping at the first base >= hi. */
static size_t walk(uintptr_t lo, uintptr_t hi, pg_region_hit_t *out, size_t cap) {
  ix_node_t *stack[IX_STACK];
  size_t sp = 0, steps = 0, limit = step_limit(), total = 0;
  ix_node_t *t = LD(g_root);
  for (;;) {
    while (t && steps++ < limit) {
      if (LD(t->maxend) <= lo || sp == IX_STACK) break;
      stack[sp++] = t;
      t = LD(t->kid[0]);
    }
    if (!sp || steps >= limit) break;
    t = stack[--sp];
    uintptr_t base = LD(t->base);
    if (base >= hi) break;
    uintptr_t end = LD(t->end);
    if (end > lo) {
      pg_region_rec_t *r = LD(t->rec);
      if (!r) break;
      if (total < cap) out[total] = (pg_region_hit_t){r, LD(r->gen), base, end};
      total++;
    }
    t = LD(t->kid[1]);
  }
  return total;
}

static size_t overlapping_slow(uintptr_t lo, uintptr_t hi, pg_region_hit_t *out, size_t cap,
                               unsigned long now);
static size_t overlapping_scan(uintptr_t lo, uintptr_t hi, pg_region_hit_t *out, size_t cap,
                               unsigned long now);

/* The memo of regions found alone answers most lookups; everything else is out of line, so
 * that this path saves no registers. Inlined into pg_region_lookup too. */
static inline __attribute__((always_inline)) size_t overlapping(uintptr_t lo, uintptr_t hi,
                                                                pg_region_hit_t *out, size_t cap) {
  if (hi <= lo) return 0;
  unsigned long now = atomic_load_explicit(&g_seq, memory_order_acquire);
  /* The entry that answered last (copies go on into the same buffer), then the one hinted for
   * this address, then the rest. */
  const solo_entry_t *e = &t_solo_last;
  if (__builtin_expect(e->seq == now && e->base <= lo && hi <= e->end, 1)) {
    if (cap) out[0] = (pg_region_hit_t){e->rec, e->gen, e->base, e->end};
    return 1;
  }
  return overlapping_scan(lo, hi, out, cap, now);
}

/* The entry of m (current) that may hold lo: the last one whose base is <= lo, or -1. */
static int solo_search(const lookup_memo_t *m, uintptr_t lo) {
  int a = 0, b = (int)m->nsolo; /* the answer is a - 1 once a == b */
  while (a < b) {
    int mid = (a + b) / 2;
    if (m->solo[mid].base <= lo) a = mid + 1;
    else b = mid;
  }
  return a - 1;
}

/* The rest of the memo of regions found alone (the hinted entry first, then a binary search),
 * then the index. */
__attribute__((noinline)) static size_t overlapping_scan(uintptr_t lo, uintptr_t hi,
                                                         pg_region_hit_t *out, size_t cap,
                                                         unsigned long now) {
  lookup_memo_t *m = lookup_memo();
  if (!m || m->solo_seq != now) return overlapping_slow(lo, hi, out, cap, now);
  unsigned hint = solo_hint_slot(lo);
  int i = m->solo_hint[hint];
  const solo_entry_t *e = &m->solo[i];
  if (!((unsigned)i < m->nsolo && e->base <= lo && hi <= e->end)) {
    if ((i = solo_search(m, lo)) < 0 || hi > m->solo[i].end)
      return overlapping_slow(lo, hi, out, cap, now);
    e = &m->solo[i];
    m->solo_hint[hint] = (uint16_t)i;
  }
  t_solo_last = *e;
  t_solo_last.seq = now;
  if (cap) out[0] = (pg_region_hit_t){e->rec, e->gen, e->base, e->end};
  return 1;
}

/* A region found alone under sequence s joins the memo (emptied first if it was filled under an
 * older one; full, it gives up an entry in turn). */
static void solo_remember(lookup_memo_t *m, const solo_entry_t *e, unsigned long s) {
  if (m->solo_seq != s) {
    m->solo_seq = s;
    m->nsolo = 0;
  }
  int at = solo_search(m, e->base) + 1; /* where it goes: solo entries never overlap */
  if (at > 0 && m->solo[at - 1].base == e->base) return; /* there already */
  if (m->nsolo == SOLO_CACHE) {
    unsigned j = m->solo_evict++ % SOLO_CACHE;
    memmove(&m->solo[j], &m->solo[j + 1], (SOLO_CACHE - j - 1) * sizeof m->solo[0]);
    m->nsolo--;
    if ((int)j < at) at--;
  }
  memmove(&m->solo[at + 1], &m->solo[at], (m->nsolo - (unsigned)at) * sizeof m->solo[0]);
  m->solo[at] = *e;
  m->nsolo++;
  m->solo_hint[solo_hint_slot(e->base)] = (uint16_t)at;
}

size_t pg_regions_overlapping(uintptr_t lo, uintptr_t hi, pg_region_hit_t *out, size_t cap) {
  return overlapping(lo, hi, out, cap);
}

__attribute__((noinline)) static size_t overlapping_slow(uintptr_t lo, uintptr_t hi,
                                                         pg_region_hit_t *out, size_t cap,
                                                         unsigned long now) {
  lookup_memo_t *m = lookup_memo();
  if (m && m->range.valid && m->range.lo == lo && m->range.hi == hi && m->range.seq == now) {
    size_t k = m->range.total < cap ? m->range.total : cap;
    memcpy(out, m->range.hits, k * sizeof(*out));
    return m->range.total;
  }
  for (;;) {
    unsigned long s = read_begin();
    size_t total = walk(lo, hi, out, cap);
    /* One region holding the whole range: is it alone over its own extent? */
    bool solo = total == 1 && cap && out[0].base <= lo && hi <= out[0].end &&
                walk(out[0].base, out[0].end, NULL, 0) == 1;
    if (read_ok(s)) {
      if (solo) {
        solo_entry_t e = {s, out[0].base, out[0].end, out[0].rec, out[0].gen};
        t_solo_last = e;
        if (m) solo_remember(m, &e, s);
        return 1;
      }
      size_t k = total < cap ? total : cap;
      if (!m) return total;
      m->range.valid = total <= k && total <= MEMO_HITS; /* only complete answers */
      if (m->range.valid) {
        m->range.seq = s;
        m->range.lo = lo;
        m->range.hi = hi;
        m->range.total = total;
        memcpy(m->range.hits, out, total * sizeof(*out));
      }
      return total;
    }
  }
}

_Static_assert(sizeof(((pg_lookup_t *)0)->hits[0]) == sizeof(pg_region_hit_t),
               "a lookup's hits are region hits");

static inline __attribute__((always_inline)) size_t lookup(const void *p, size_t n,
                                                           pg_lookup_t *lk) {
  uintptr_t lo = (uintptr_t)p, hi = lo + n < lo ? UINTPTR_MAX : lo + n;
  lk->lo = lo;
  lk->hi = hi;
  /* Read first: a writer running meanwhile makes the lookup stale, never a stale one current. */
  lk->version = atomic_load_explicit(&g_seq, memory_order_acquire);
  lk->total = overlapping(lo, hi, (pg_region_hit_t *)(void *)lk->hits, PG_LOOKUP_HITS);
  return lk->total;
}

size_t pg_region_lookup(const void *p, size_t n, pg_lookup_t *lk) {
  lk->stream = NULL;
  lk->quiet = false;
  return lookup(p, n, lk);
}

__attribute__((noinline)) static void lookup_on_many(pg_lookup_t *lk, cudaStream_t stream) {
  lk->quiet = pg_access_quiet_at(lk, stream);
}

static inline __attribute__((always_inline)) size_t lookup_on(const void *p, size_t n,
                                                              cudaStream_t stream, pg_dir_t dir,
                                                              pg_lookup_t *lk) {
  size_t total = lookup(p, n, lk);
  /* pg_access_quiet_at's answer, which the common span (one region, the lookup just made)
   * gets without a call. */
  if (__builtin_expect(total == 1 && lk->hi > lk->lo && pg_lookup_current(lk), 1)) {
    pg_stream_t *st = pg_stream_get(stream);
    lk->stream = st;
    lk->quiet = pg_summary_clear(lk->hits[0].rec, lk->lo, lk->hi, st, pg_dir_may_write(dir));
    return 1;
  }
  lk->stream = NULL;
  lk->quiet = false;
  if (total) lookup_on_many(lk, stream);
  return total;
}

size_t pg_region_lookup_on(const void *p, size_t n, cudaStream_t stream, pg_dir_t dir,
                           pg_lookup_t *lk) {
  return lookup_on(p, n, stream, dir, lk);
}

size_t pg_region_lookup_rest_on(const void *p, cudaStream_t stream, pg_dir_t *dir,
                                pg_lookup_t *lk) {
  uintptr_t x = (uintptr_t)p, end;
  pg_pin_how_t how;
  unsigned flags;
  /* The region that answered this thread's last lookup, when it still stands alone over its
   * extent: the only one holding p, so the one pg_region_find gives (and lookup_on's lookup
   * finds it again at its first test). */
  const solo_entry_t *e = &t_solo_last;
  if (__builtin_expect(e->seq == atomic_load_explicit(&g_seq, memory_order_acquire) &&
                           e->base <= x && x < e->end,
                       1)) {
    end = e->end;
    how = (pg_pin_how_t)LD(e->rec->how);
    flags = LD(e->rec->flags);
  } else {
    pg_region_t reg;
    if (!pg_region_find(p, &reg)) return 0;
    end = reg.base + reg.size;
    how = reg.how;
    flags = reg.flags;
  }
  if (pg_pin_is_read_only(how, flags)) *dir = PG_DIR_READ;
  lookup_on(p, end - x, stream, *dir, lk);
  return end - x;
}

const pg_region_hit_t *pg_regions_of_lookup_slow(const pg_lookup_t *lk, pg_region_hit_t *out,
                                                 size_t cap, size_t *total) {
  *total = pg_regions_overlapping(lk->lo, lk->hi, out, cap);
  return out;
}

size_t pg_region_find_range(const void *p, size_t n, pg_region_t *out, size_t cap) {
  pg_region_hit_t hits[64];
  uintptr_t lo = (uintptr_t)p, hi = lo + n < lo ? UINTPTR_MAX : lo + n;
  size_t total = pg_regions_overlapping(lo, hi, hits, 64);
  if (total > 64 && cap > 64) { /* rare: many regions in range, take them all */
    pg_region_hit_t *big = malloc(total * sizeof(*big));
    if (big) {
      total = pg_regions_overlapping(lo, hi, big, total);
      size_t k = total < cap ? total : cap;
      for (size_t i = 0; i < k; i++) {
        out[i] = (pg_region_t){.base = big[i].base, .size = big[i].end - big[i].base,
                               .how = (pg_pin_how_t)LD(big[i].rec->how),
                               .flags = LD(big[i].rec->flags), .id = LD(big[i].rec->id)};
      }
      free(big);
      return total;
    }
  }
  size_t k = total < cap ? total : cap;
  if (k > 64) k = 64;
  for (size_t i = 0; i < k; i++) {
    out[i] = (pg_region_t){.base = hits[i].base, .size = hits[i].end - hits[i].base,
                           .how = (pg_pin_how_t)LD(hits[i].rec->how),
                           .flags = LD(hits[i].rec->flags), .id = LD(hits[i].rec->id)};
  }
  return total;
}

int pg_region_stack(uint64_t id, pg_stack_t *out) {
  int found = 0;
  pthread_mutex_lock(&g_wmu);
  for (pg_region_rec_t *r = g_all; r && !found; r = r->next_all) {
    if (!id || LD(r->id) != id) continue;
    pg_lock(&r->mu);
    *out = r->stack;
    pg_unlock(&r->mu);
    found = 1;
  }
  pthread_mutex_unlock(&g_wmu);
  return found;
}

size_t pg_region_count(void) { return atomic_load_explicit(&g_n, memory_order_relaxed); }

/* ---- fork support -------------------------------------------------------------------------- */
void pg_regions_for_each_rec(void (*fn)(pg_region_rec_t *)) {
  for (pg_region_rec_t *r = g_all; r; r = r->next_all) fn(r);
}
void pg_regions_lock_writer(void) { pthread_mutex_lock(&g_wmu); }
void pg_regions_unlock_writer(void) { pthread_mutex_unlock(&g_wmu); }
