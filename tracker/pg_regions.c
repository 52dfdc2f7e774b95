/* pg_regions.c: the pinned-region index. Readers (every copy and launch) search a sorted array
 * under a seqlock and take no lock; writers (pin / unpin) serialize on one mutex, which also
 * guards a uthash by exact base so unpinning finds its region in O(1). */
#include <stdlib.h>
#include <string.h>

#include "pg_tracker_internal.h"

/* The index: entries sorted by base. Bases live in their own array so the binary search reads
 * 8 bytes per step (100k regions: 800 KiB, not 3 MiB). Every field is atomic because readers
 * may race with a writer; the seqlock tells them afterwards to retry. pmax is the largest end
 * among entries 0..i, which bounds the backward scan when regions overlap (the same pages
 * registered twice). */
typedef struct ix_ent {
  _Atomic uintptr_t end, pmax;
  _Atomic(pg_region_rec_t *) rec;
} ix_ent_t;

typedef struct ix_arr {
  size_t cap;
  struct ix_arr *retired_next; /* superseded arrays stay readable until exit */
  _Atomic uintptr_t *base;     /* cap bases, then cap entries, in the same allocation */
  ix_ent_t *e;
} ix_arr_t;

/* Live entries are a->e[g_first .. g_first+g_n), with slack on both sides: pinned memory comes
 * from mmap, whose addresses often descend, so inserting at the front must be as cheap as
 * appending. Each insert or removal shifts the shorter side. */
static _Atomic(ix_arr_t *) g_arr;
static atomic_size_t g_first, g_n;
static atomic_ulong g_seq;       /* odd while a writer is changing the index */
static atomic_ulong g_next_id = 1;
static pthread_mutex_t g_wmu = PTHREAD_MUTEX_INITIALIZER;
static pg_region_rec_t *g_by_base; /* uthash: newest registration for each exact base */
static pg_region_rec_t *g_all, *g_free;
static ix_arr_t *g_retired;

/* ---- writer helpers (g_wmu held) ---------------------------------------------------------- */
/* Seqlock without fences (ThreadSanitizer does not model them): every index store is a release
 * and every load an acquire, so a reader that sees any value a writer stored also sees the odd
 * sequence number that writer set first, and retries. Both are plain moves on x86-64. */
#define LD(x) atomic_load_explicit(&(x), memory_order_acquire)
#define ST(x, v) atomic_store_explicit(&(x), (v), memory_order_release)

static void write_begin(void) { atomic_fetch_add_explicit(&g_seq, 1, memory_order_acq_rel); }

static void write_end(void) { atomic_store_explicit(&g_seq, LD(g_seq) + 1, memory_order_release); }

/* Absolute slots i (of d) and j (of s). */
static void copy_ent(ix_arr_t *d, size_t i, ix_arr_t *s, size_t j) {
  ST(d->base[i], LD(s->base[j]));
  ST(d->e[i].end, LD(s->e[j].end));
  ST(d->e[i].pmax, LD(s->e[j].pmax));
  ST(d->e[i].rec, LD(s->e[j].rec));
}

/* Recomputes the prefix maxima of live entries from..n-1 (logical indices, first at f) after an
 * insert or removal at `from`. Past that point, once a recomputed maximum equals the stored one
 * every later one does too, so the usual case stops after a step or two. */
static void fix_pmax(ix_arr_t *a, size_t f, size_t from, size_t n) {
  uintptr_t m = from ? LD(a->e[f + from - 1].pmax) : 0;
  for (size_t i = from; i < n; i++) {
    uintptr_t end = LD(a->e[f + i].end);
    if (end > m) m = end;
    if (i > from && LD(a->e[f + i].pmax) == m) break;
    ST(a->e[f + i].pmax, m);
  }
}

/* First logical index whose base is > p (writer or reader view). */
static size_t upper_bound(ix_arr_t *a, size_t f, size_t n, uintptr_t p) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (LD(a->base[f + mid]) <= p) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static ix_arr_t *arr_new(size_t cap) {
  ix_arr_t *b = calloc(1, sizeof(*b) + cap * (sizeof(uintptr_t) + sizeof(ix_ent_t)));
  if (!b) return NULL;
  b->cap = cap;
  b->base = (_Atomic uintptr_t *)(b + 1);
  b->e = (ix_ent_t *)(b->base + cap);
  return b;
}

/* Inside the write section: centers the n live entries, in a twice larger array when more
 * than half full (the old one is retired), else in place. Afterwards both sides have room for
 * at least n/2 more inserts, so recentering is amortized O(1) per insert and growth geometric.
 * False only when out of memory. */
static bool recenter(void) {
  ix_arr_t *a = LD(g_arr);
  size_t n = LD(g_n), f = LD(g_first), cap = a ? a->cap : 0;
  if (2 * (n + 1) > cap) {
    size_t ncap = cap ? cap * 2 : 64;
    ix_arr_t *b = arr_new(ncap);
    if (!b) return false;
    size_t nf = (ncap - n) / 2;
    for (size_t i = 0; i < n; i++) copy_ent(b, nf + i, a, f + i);
    if (a) {
      a->retired_next = g_retired;
      g_retired = a;
    }
    ST(g_arr, b);
    ST(g_first, nf);
    return true;
  }
  size_t nf = (cap - n) / 2;
  if (nf < f)
    for (size_t i = 0; i < n; i++) copy_ent(a, nf + i, a, f + i);
  else
    for (size_t i = n; i-- > 0;) copy_ent(a, nf + i, a, f + i);
  ST(g_first, nf);
  return true;
}

/* Inside the write section: inserts an entry at logical position pos. */
static bool ix_insert(size_t pos, uintptr_t base, uintptr_t end, pg_region_rec_t *r) {
  ix_arr_t *a = LD(g_arr);
  size_t n = LD(g_n), f = LD(g_first);
  bool right = pos >= n / 2; /* shift whichever side is shorter */
  if (!a || (right ? f + n == a->cap : f == 0)) {
    if (!recenter()) return false;
    a = LD(g_arr);
    f = LD(g_first);
  }
  if (right) {
    for (size_t i = n; i > pos; i--) copy_ent(a, f + i, a, f + i - 1);
  } else {
    for (size_t i = 0; i < pos; i++) copy_ent(a, f + i - 1, a, f + i);
    ST(g_first, --f);
  }
  ST(a->base[f + pos], base);
  ST(a->e[f + pos].end, end);
  ST(a->e[f + pos].rec, r);
  fix_pmax(a, f, pos, n + 1);
  ST(g_n, n + 1);
  return true;
}

/* Inside the write section: removes the entry at logical position pos. */
static void ix_remove(size_t pos) {
  ix_arr_t *a = LD(g_arr);
  size_t n = LD(g_n), f = LD(g_first);
  if (pos < n / 2) {
    for (size_t i = pos; i > 0; i--) copy_ent(a, f + i, a, f + i - 1);
    ST(g_first, ++f);
  } else {
    for (size_t i = pos; i + 1 < n; i++) copy_ent(a, f + i, a, f + i + 1);
  }
  fix_pmax(a, f, pos, n - 1);
  ST(g_n, n - 1);
}

static pg_region_rec_t *rec_alloc(void) {
  pg_region_rec_t *r = g_free;
  if (r) {
    g_free = r->next_free;
    return r;
  }
  r = calloc(1, sizeof(*r));
  if (!r) return NULL;
  pthread_mutex_init(&r->mu, NULL);
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
  pthread_mutex_lock(&r->mu);
  if (alloc_stack) r->stack = *alloc_stack;
  else memset(&r->stack, 0, sizeof(r->stack));
  pthread_mutex_unlock(&r->mu);
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

  write_begin();
  ST(r->id, atomic_fetch_add_explicit(&g_next_id, 1, memory_order_relaxed));
  ST(r->how, (int)how);
  ST(r->flags, flags);
  /* Equal bases: the newer goes after the older, so lookups find the newest first. */
  ix_arr_t *a = LD(g_arr);
  size_t pos = a ? upper_bound(a, LD(g_first), LD(g_n), b) : 0;
  bool ok = ix_insert(pos, b, b + size, r);
  write_end();
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

  ix_arr_t *a = LD(g_arr);
  size_t f = LD(g_first), n = LD(g_n), pos = upper_bound(a, f, n, b);
  while (pos > 0 && LD(a->e[f + pos - 1].rec) != r) pos--;
  pos--; /* the entry exists: every indexed record is in the hash and vice versa */
  if (out) fill_info(out, b, LD(a->e[f + pos].end), r);
  if (stack) {
    pthread_mutex_lock(&r->mu);
    *stack = r->stack;
    pthread_mutex_unlock(&r->mu);
  }

  write_begin();
  ix_remove(pos);
  atomic_fetch_add_explicit(&r->gen, 1, memory_order_relaxed);
  ST(r->id, 0); /* ids of removed regions resolve to nothing */
  write_end();

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

/* The live window as this reader sees it, clamped so a torn view stays inside the array. */
static ix_arr_t *read_view(size_t *first, size_t *n) {
  ix_arr_t *a = LD(g_arr);
  size_t f = LD(g_first), k = LD(g_n);
  if (!a || f > a->cap) f = k = 0;
  else if (k > a->cap - f) k = a->cap - f;
  *first = f;
  *n = k;
  return a;
}

int pg_region_find(const void *p, pg_region_t *out) {
  uintptr_t x = (uintptr_t)p;
  for (;;) {
    unsigned long s = read_begin();
    size_t f, n;
    ix_arr_t *a = read_view(&f, &n);
    int found = 0;
    pg_region_t info;
    for (size_t i = n ? upper_bound(a, f, n, x) : 0; i-- > 0;) {
      if (LD(a->e[f + i].pmax) <= x) break;
      uintptr_t end = LD(a->e[f + i].end);
      if (end > x) {
        pg_region_rec_t *r = LD(a->e[f + i].rec);
        if (!r) break;
        fill_info(&info, LD(a->base[f + i]), end, r);
        found = 1;
        break;
      }
    }
    if (read_ok(s)) {
      if (found && out) *out = info;
      return found;
    }
  }
}

/* Each copy looks its range up twice (conflict check, then begin): a per-thread memo of the last
 * answer, valid while no writer has run since (the sequence number never repeats). */
#define MEMO_HITS 4
static __thread struct {
  bool valid;
  unsigned long seq;
  uintptr_t lo, hi;
  size_t total;
  pg_region_hit_t hits[MEMO_HITS];
} t_memo;

/* Collects overlapping entries scanning down from the last base < hi; results come out in
 * descending base order and are reversed at the end. */
size_t pg_regions_overlapping(uintptr_t lo, uintptr_t hi, pg_region_hit_t *out, size_t cap) {
  if (hi <= lo) return 0;
  if (t_memo.valid && t_memo.lo == lo && t_memo.hi == hi &&
      t_memo.seq == atomic_load_explicit(&g_seq, memory_order_acquire)) {
    size_t k = t_memo.total < cap ? t_memo.total : cap;
    memcpy(out, t_memo.hits, k * sizeof(*out));
    return t_memo.total;
  }
  for (;;) {
    unsigned long s = read_begin();
    size_t f, n, total = 0;
    ix_arr_t *a = read_view(&f, &n);
    for (size_t i = n ? upper_bound(a, f, n, hi - 1) : 0; i-- > 0;) {
      if (LD(a->e[f + i].pmax) <= lo) break;
      uintptr_t end = LD(a->e[f + i].end);
      if (end <= lo) continue;
      pg_region_rec_t *r = LD(a->e[f + i].rec);
      if (!r) break;
      if (total < cap)
        out[total] = (pg_region_hit_t){r, LD(r->gen), LD(a->base[f + i]), end};
      total++;
    }
    if (read_ok(s)) {
      size_t k = total < cap ? total : cap;
      for (size_t i = 0; i < k / 2; i++) {
        pg_region_hit_t t = out[i];
        out[i] = out[k - 1 - i];
        out[k - 1 - i] = t;
      }
      t_memo.valid = total <= k && total <= MEMO_HITS; /* only complete answers */
      if (t_memo.valid) {
        t_memo.seq = s;
        t_memo.lo = lo;
        t_memo.hi = hi;
        t_memo.total = total;
        memcpy(t_memo.hits, out, total * sizeof(*out));
      }
      return total;
    }
  }
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
    pthread_mutex_lock(&r->mu);
    *out = r->stack;
    pthread_mutex_unlock(&r->mu);
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
