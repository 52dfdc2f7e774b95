/* pg_inflight.c: the in-flight table. Each region keeps its own set of in-flight access pieces
 * under its own lock: "slots" (one per distinct start address) sorted by address for range
 * queries, plus a uthash keyed by address for large sets. Beginning, queries, conflict checks. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pg_page.h"
#include "pg_stamp.h"
#include "pg_tracker_internal.h"

#define MAX_PIECES 64 /* regions one access or query may span (64 MiB pieces: 4 GiB) */

#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)

/* ---- deferred frees ----------------------------------------------------------------------
 * Nothing the fault handler reaches may call the allocator (the interrupted code may be inside
 * it). Retirement, which the handler runs, drops a set's hash once the set shrinks: its tables go
 * on a lock-free list (each block's first word is the link), freed by the next path that may
 * allocate (building a hash, clearing a region). */
static _Atomic(void *) g_deferred;

void pg_defer_free(void *p) {
  if (!p) return;
  void *head = atomic_load_explicit(&g_deferred, memory_order_relaxed);
  do {
    *(void **)p = head;
  } while (!atomic_compare_exchange_weak_explicit(&g_deferred, &head, p, memory_order_release,
                                                  memory_order_relaxed));
}

void pg_deferred_drain(void) {
  if (!atomic_load_explicit(&g_deferred, memory_order_relaxed)) return;
  void *p = atomic_exchange_explicit(&g_deferred, NULL, memory_order_acquire);
  while (p) {
    void *next = *(void **)p;
    free(p);
    p = next;
  }
}

/* The in-flight sets' hashes free through the list. */
#undef uthash_free
#define uthash_free(ptr, sz) pg_defer_free(ptr)

/* ---- one region's set (r->mu held) ------------------------------------------------------
 * Per copy, the cold memory touched is what costs (with 100k regions, each is a cache miss):
 * small sets live in the region record itself, and the uthash by address is built only for sets
 * large enough to need it. Slots removed stay on the region's free list (a removal never frees:
 * the fault handler's retirements remove), reused by its later inserts; the sorted array, once
 * grown, stays too. Both go back to the heap when the region is removed. */
static pg_slot_t *slot_alloc(pg_region_rec_t *r) {
  pg_slot_t *s = r->free_slots;
  if (s) r->free_slots = (pg_slot_t *)s->accs;
  else if (!(s = malloc(sizeof(*s)))) return NULL;
  memset(s, 0, sizeof(*s));
  return s;
}

static void slot_free(pg_region_rec_t *r, pg_slot_t *s) {
  s->accs = (pg_acc_t *)r->free_slots; /* reused as the free list's link */
  r->free_slots = s;
}

/* First slot whose lo is >= x. */
static size_t slot_lower_bound(const pg_region_rec_t *r, uintptr_t x) {
  size_t lo = 0, hi = r->nslots;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r->sorted[mid]->lo < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static void hash_drop(pg_region_rec_t *r) { HASH_CLEAR(hh, r->slots_by_lo); }

/* Builds the hash once the set is large; if memory runs short the set works without it. */
static void hash_build(pg_region_rec_t *r) {
  pg_deferred_drain();
  pg_hash_oom = 0;
  for (size_t i = 0; i < r->nslots && !pg_hash_oom; i++)
    HASH_ADD(hh, r->slots_by_lo, lo, sizeof(r->sorted[i]->lo), r->sorted[i]);
  if (pg_hash_oom) hash_drop(r);
}

static pg_slot_t *slot_find(pg_region_rec_t *r, uintptr_t lo, size_t *pos) {
  pg_slot_t *s = NULL;
  if (r->slots_by_lo) {
    HASH_FIND(hh, r->slots_by_lo, &lo, sizeof(lo), s);
    if (s || !pos) return s;
  }
  size_t i = slot_lower_bound(r, lo);
  if (pos) *pos = i;
  return i < r->nslots && r->sorted[i]->lo == lo ? r->sorted[i] : NULL;
}

static pg_slot_t *slot_get(pg_region_rec_t *r, uintptr_t lo) {
  if (!r->sorted) {
    r->sorted = r->inline_sorted;
    r->cap_slots = PG_INLINE_SLOTS;
  }
  size_t pos = 0;
  pg_slot_t *s = slot_find(r, lo, &pos);
  if (s) return s; /* the same buffer copied again: no array shift at all */
  if (r->nslots == r->cap_slots) {
    size_t cap = r->cap_slots * 2;
    pg_slot_t **p = malloc(cap * sizeof(*p));
    if (!p) return NULL;
    memcpy(p, r->sorted, r->nslots * sizeof(*p));
    if (r->sorted != r->inline_sorted) free(r->sorted);
    r->sorted = p;
    r->cap_slots = cap;
  }
  if (!(s = slot_alloc(r))) return NULL;
  s->lo = lo;
  memmove(&r->sorted[pos + 1], &r->sorted[pos], (r->nslots - pos) * sizeof(*r->sorted));
  r->sorted[pos] = s;
  r->nslots++;
  if (r->slots_by_lo) {
    pg_deferred_drain(); /* an add may expand the table: this path may free */
    pg_hash_oom = 0;
    HASH_ADD(hh, r->slots_by_lo, lo, sizeof(s->lo), s);
    if (pg_hash_oom) hash_drop(r);
  } else if (r->nslots >= PG_HASH_SLOTS) {
    hash_build(r);
  }
  return s;
}

static void slot_remove(pg_region_rec_t *r, pg_slot_t *s) {
  size_t pos = slot_lower_bound(r, s->lo);
  memmove(&r->sorted[pos], &r->sorted[pos + 1], (r->nslots - pos - 1) * sizeof(*r->sorted));
  r->nslots--;
  if (r->slots_by_lo) {
    if (r->nslots < PG_HASH_SLOTS / 2) hash_drop(r); /* hysteresis: no rebuild per copy */
    else HASH_DEL(r->slots_by_lo, s);
  }
  slot_free(r, s);
}

/* The list of s that a belongs on: what may write, or what only reads. */
static inline pg_acc_t **slot_list(pg_slot_t *s, const pg_acc_t *a) {
  return pg_dir_may_write(a->pub.dir) ? &s->accs : &s->reads;
}

/* Inserts a into r's set. Returns 0 when out of memory, SET_SAME when r's summary (set_quiet)
 * would be written as it is (a slot already there, no longer access, no first write, a set not
 * empty before: many streams reading the same bytes), SET_MOVED otherwise. */
enum { SET_SAME = 1, SET_MOVED = 2 };
static int set_insert(pg_region_rec_t *r, pg_acc_t *a) {
  size_t nslots = r->nslots, maxlen = r->maxlen, nwrites = r->nwrites, nacc = r->nacc;
  pg_slot_t *s = slot_get(r, a->pub.lo);
  if (!s) return 0;
  pg_acc_t **head = slot_list(s, a);
  a->slot = s;
  a->slot_prev = NULL;
  a->slot_next = *head;
  if (*head) (*head)->slot_prev = a;
  *head = a;
  if (a->pub.hi > s->maxhi) s->maxhi = a->pub.hi;
  if (a->pub.hi - a->pub.lo > r->maxlen) r->maxlen = a->pub.hi - a->pub.lo;
  r->nacc++;
  r->nwrites += pg_dir_may_write(a->pub.dir);
  return nacc && r->nslots == nslots && r->maxlen == maxlen && (nwrites || !r->nwrites)
             ? SET_SAME
             : SET_MOVED;
}

static void set_remove(pg_region_rec_t *r, pg_acc_t *a) {
  pg_slot_t *s = a->slot;
  if (a->slot_prev) a->slot_prev->slot_next = a->slot_next;
  else *slot_list(s, a) = a->slot_next;
  if (a->slot_next) a->slot_next->slot_prev = a->slot_prev;
  /* maxhi stays a bound (no walk of the slot: many readers of the same bytes share one). */
  if (!s->accs && !s->reads) slot_remove(r, s);
  r->nwrites -= pg_dir_may_write(a->pub.dir);
  if (--r->nacc == 0) r->maxlen = 0;
}

/* Whether access a overlaps [lo, hi): the one overlap test of every walk (the set's and the
 * owner list's). */
static inline bool acc_overlaps(const pg_acc_t *a, uintptr_t lo, uintptr_t hi) {
  return a->pub.lo < hi && a->pub.hi > lo;
}

/* Visits every access in r's set overlapping [lo, hi) (with writes_only, only those that may
 * write: a read conflicts with nothing else). Slots are sorted by start; no access is longer
 * than maxlen, so the scan down from the last slot starting below hi stops at the first slot
 * that starts maxlen or more below lo. */
typedef void (*visit_fn)(pg_acc_t *a, void *ctx);
static void set_visit(pg_region_rec_t *r, uintptr_t lo, uintptr_t hi, bool writes_only,
                      visit_fn fn, void *ctx) {
  for (size_t i = slot_lower_bound(r, hi); i-- > 0;) {
    pg_slot_t *s = r->sorted[i];
    if (s->lo < lo && lo - s->lo >= r->maxlen) break;
    if (s->maxhi <= lo) continue;
    for (pg_acc_t *a = s->accs; a; a = a->slot_next)
      if (acc_overlaps(a, lo, hi)) fn(a, ctx);
    if (writes_only) continue;
    for (pg_acc_t *a = s->reads; a; a = a->slot_next)
      if (acc_overlaps(a, lo, hi)) fn(a, ctx);
  }
}

/* r->mu held, at the end of every change to r's owner, of every insert into its set and of
 * the removal that empties it (other removals leave the bound larger than it need be). */
static void set_quiet(pg_region_rec_t *r) {
  pg_stream_t *ow = atomic_load_explicit(&r->owner, memory_order_relaxed);
  uint32_t q = r->nacc ? 0 : ow ? ow->id : PG_QUIET_EMPTY;
  /* Seqlock without fences, as the region index's (pg_regions.c): release stores, acquire loads. */
  atomic_fetch_add_explicit(&r->sum_seq, 1, memory_order_acq_rel);
  atomic_store_explicit(&r->quiet, q, memory_order_release);
  if (q == 0) {
    /* Every access starts at or after the first slot's start, and none is longer than maxlen. */
    atomic_store_explicit(&r->set_owner, ow ? ow->id : 0, memory_order_release);
    atomic_store_explicit(&r->set_writes, r->nwrites != 0, memory_order_release);
    atomic_store_explicit(&r->set_lo, r->sorted[0]->lo, memory_order_release);
    atomic_store_explicit(&r->set_hi, r->sorted[r->nslots - 1]->lo + r->maxlen,
                          memory_order_release);
  }
  atomic_store_explicit(&r->sum_seq, atomic_load_explicit(&r->sum_seq, memory_order_relaxed) + 1,
                        memory_order_release);
}

/* pg_summary_clear with accesses in r's set: its summary read as a consistent snapshot. */
bool pg_summary_clear_set(const pg_region_rec_t *r, uintptr_t lo, uintptr_t hi,
                          const pg_stream_t *st, bool write) {
  unsigned s = atomic_load_explicit(&r->sum_seq, memory_order_acquire);
  if (s & 1) return false;
  bool set = atomic_load_explicit(&r->quiet, memory_order_acquire) == 0;
  uint32_t ow = atomic_load_explicit(&r->set_owner, memory_order_acquire);
  uint32_t writes = atomic_load_explicit(&r->set_writes, memory_order_acquire);
  uintptr_t slo = atomic_load_explicit(&r->set_lo, memory_order_acquire);
  uintptr_t shi = atomic_load_explicit(&r->set_hi, memory_order_acquire);
  if (atomic_load_explicit(&r->sum_seq, memory_order_relaxed) != s) return false;
  if (!set || (ow != 0 && ow != st->id)) return false;
  return hi <= slo || lo >= shi || (!write && !writes);
}

bool pg_inflight_remove(pg_acc_t *a) {
  pg_region_rec_t *r = a->region;
  if (!r) return false;
  pg_lock(&r->mu);
  bool live = LD(r->gen) == a->region_gen;
  if (live) {
    set_remove(r, a);
    /* The set's last write gone: reads need not look under the lock any more. */
    if (!r->nacc || (pg_dir_may_write(a->pub.dir) && !r->nwrites)) set_quiet(r);
  }
  pg_unlock(&r->mu);
  return live;
}

/* ---- the owner list (the owner's lock held) ---------------------------------------------- */
static void own_push(pg_region_rec_t *r, pg_acc_t *a) {
  a->slot_prev = NULL;
  a->slot_next = r->own_head;
  if (r->own_head) r->own_head->slot_prev = a;
  r->own_head = a;
  atomic_store_explicit(&a->where, PG_IN_OWN, memory_order_relaxed);
}

/* r->mu held: the owner (if any) gives its list up; each access moves into the set (where any
 * stream's checks find them sorted). On out of memory the rest stays on the list, still owned. */
static void own_disown(pg_region_rec_t *r) {
  pg_stream_t *ow = atomic_load_explicit(&r->owner, memory_order_relaxed);
  if (!ow) return;
  pg_lock(&ow->mu);
  while (r->own_head) {
    pg_acc_t *a = r->own_head;
    r->own_head = a->slot_next;
    if (r->own_head) r->own_head->slot_prev = NULL;
    if (!set_insert(r, a)) { /* out of memory: put it back */
      a->slot_prev = NULL;
      a->slot_next = r->own_head;
      if (r->own_head) r->own_head->slot_prev = a;
      r->own_head = a;
      break;
    }
    atomic_store_explicit(&a->where, PG_IN_SET, memory_order_relaxed);
  }
  if (!r->own_head) atomic_store_explicit(&r->owner, NULL, memory_order_relaxed);
  pg_unlock(&ow->mu);
  set_quiet(r);
}

static void clear_region(pg_region_rec_t *r, bool child) {
  pg_lock(&r->mu);
  pg_stream_t *ow = atomic_load_explicit(&r->owner, memory_order_relaxed);
  if (ow) { /* its accesses stay on their FIFO, indexed nowhere */
    if (!child) pg_lock(&ow->mu);
    for (pg_acc_t *a = r->own_head; a; a = a->slot_next)
      atomic_store_explicit(&a->where, PG_IN_NONE, memory_order_relaxed);
    r->own_head = NULL;
    atomic_store_explicit(&r->owner, NULL, memory_order_relaxed);
    if (!child) pg_unlock(&ow->mu);
  }
  hash_drop(r);
  for (size_t i = 0; i < r->nslots; i++) free(r->sorted[i]);
  while (r->free_slots) {
    pg_slot_t *s = r->free_slots;
    r->free_slots = (pg_slot_t *)s->accs;
    free(s);
  }
  if (r->sorted && r->sorted != r->inline_sorted) free(r->sorted);
  r->sorted = NULL;
  r->nslots = 0;
  r->nacc = 0;
  r->nwrites = 0;
  r->maxlen = 0;
  set_quiet(r);
  pg_unlock(&r->mu);
  pg_deferred_drain();
}

void pg_inflight_clear_region(pg_region_rec_t *r) { clear_region(r, false); }
void pg_inflight_clear_region_child(pg_region_rec_t *r) { clear_region(r, true); }

/* ---- begin ------------------------------------------------------------------------------------ */

/* st->mu held, a new access on the FIFO: indexes it on its region's owner list when st owns the
 * region (claiming an unowned one if its lock is free: st->mu is held, so only a try), else
 * leaves it PG_IN_PENDING for the set, which needs the region's lock (taken after st->mu). */
static inline __attribute__((always_inline)) void index_owned(pg_stream_t *st, pg_acc_t *a) {
  pg_region_rec_t *r = a->region;
  if (LD(r->gen) != a->region_gen) {
    atomic_store_explicit(&a->where, PG_IN_NONE, memory_order_relaxed);
    return;
  }
  pg_stream_t *ow = atomic_load_explicit(&r->owner, memory_order_relaxed);
  /* Claimed only while its set is empty: with other streams' accesses in flight there (many
   * streams reading the same bytes), the next check from one of them would take it back. */
  if (!ow && atomic_load_explicit(&r->quiet, memory_order_relaxed) != 0 &&
      pg_trylock(&r->mu)) {
    if (LD(r->gen) == a->region_gen && !atomic_load_explicit(&r->owner, memory_order_relaxed)) {
      atomic_store_explicit(&r->owner, st, memory_order_relaxed);
      set_quiet(r);
    }
    ow = atomic_load_explicit(&r->owner, memory_order_relaxed);
    pg_unlock(&r->mu);
  }
  if (ow == st) own_push(r, a);
  else atomic_store_explicit(&a->where, PG_IN_PENDING, memory_order_relaxed);
}

/* st->mu held, from a begin: gives back the events of what completed, and retires what the host
 * is ordered after. A poll costs an event query or more (the oldest running access, then a few
 * of those after it: pg_stream_complete_locked), so a begin polls only every poll_gap begins,
 * and each poll handles up to twice that many (the FIFO drains faster than begins fill it). A
 * poll that finds the oldest still running doubles the gap, up to POLL_GAP_MAX (a stream
 * completes in order: the accesses behind a running one are running too, and a burst of copies
 * enqueued ahead of the device would otherwise pay a failed query every few copies); one that
 * sees completions puts it back to POLL_GAP_MIN. */
enum { POLL_GAP_MIN = 8, POLL_GAP_MAX = 64 };
__attribute__((noinline)) static size_t poll_fifo(pg_stream_t *st, pg_acc_t **later) {
  unsigned gap = st->poll_gap ? st->poll_gap : POLL_GAP_MIN;
  size_t completed = pg_stream_complete_locked(st, 2 * (size_t)gap);
  size_t retired = pg_stream_retire_locked(st, 2 * (size_t)gap, later);
  if (completed) gap = POLL_GAP_MIN;
  else if (gap < POLL_GAP_MAX) gap *= 2;
  st->poll_gap = gap;
  st->poll_in = gap - 1;
  return retired;
}

/* What every piece of one begin shares. */
typedef struct begin_ctx {
  pg_stream_t *st;
  cudaStream_t stream;
  pg_dir_t dir;
  const pg_origin_t *origin;
  const pg_stack_t *stack;
  uint64_t t;         /* the enqueue stamp */
  uint64_t op;        /* the first piece's id (0 before it) */
  uint64_t first_seq; /* the first piece's sequence number */
  bool hook;          /* begin hooks are set (guard pages) */
  bool hooked;        /* a piece of this begin waits for the begin hook (piece_hooked) */
  const pg_shape_t *shape; /* a pitched copy's side (NULL: every byte of the span) */
} begin_ctx_t;

/* Whether a piece in a region of `size` bytes goes through the hooks (the region's size alone
 * decides, so begin_finish and begin_piece agree). */
static inline bool piece_hooked(bool hook, size_t region_size) {
  return hook && region_size >= pg_hook_min_region;
}

/* st->mu held: one of st's pooled events recorded on `handle` (which names st) into *ev. Under
 * the stream's lock, so the FIFO's order is the events' order on the stream, which completion
 * and retirement rely on; the next unmarked access counts from it. False when no event could be
 * had. */
static inline __attribute__((always_inline)) bool record_event_locked(pg_stream_t *st,
                                                                      cudaStream_t handle,
                                                                      cudaEvent_t *ev) {
  if (!pg_stream_take_event(st, ev)) return false;
  if (pg_ops.event_record(*ev, handle) != PG_DEV_OK) {
    pg_stream_give_event(st, *ev);
    return false;
  }
  st->unmarked = 0;
  return true;
}

/* st->mu held: the completion event of a piece about to be begun on c's stream into *ev, or NULL
 * when it records none: one piece in pg_event_every does, and the others complete with the next
 * that does. A guarded piece always does: the fault handler that reports it can record none later
 * (pg_access_cover), and its buffer is large enough that one event is cheap beside it. False
 * when no event could be had. */
static inline __attribute__((always_inline)) bool piece_event(begin_ctx_t *c, bool hooked,
                                                              cudaEvent_t *ev) {
  pg_stream_t *st = c->st;
  *ev = NULL;
  if (pg_event_every > 1 && !hooked && st->unmarked + 1 < pg_event_every) {
    st->unmarked++;
    return true;
  }
  return record_event_locked(st, c->stream, ev);
}

/* st->mu held: one piece [lo, hi) of region hit h, recorded on the stream and put on its FIFO
 * (indexed on the region's owner list, or left PG_IN_PENDING for begin_finish). NULL when no
 * record or event could be had: the piece, and any after it, is not tracked. */
static inline __attribute__((always_inline)) pg_acc_t *begin_piece(begin_ctx_t *c, uintptr_t lo,
                                                                   uintptr_t hi,
                                                                   const pg_region_hit_t *h) {
  pg_stream_t *st = c->st;
  pg_acc_t *a = pg_stream_alloc_acc(st);
  if (!a) return NULL;
  bool hooked = piece_hooked(c->hook, h->end - h->base);
  cudaEvent_t ev;
  if (!piece_event(c, hooked, &ev)) {
    a->fifo_next = st->free_accs;
    st->free_accs = a;
    st->nfree_accs++;
    return NULL;
  }
  uint64_t seq = LD(st->own) + 1;
  atomic_store_explicit(&st->own, seq, memory_order_relaxed);
  /* Unique without a shared counter: the stream's id above its sequence number (2^44 pieces
   * per stream). */
  uint64_t id = (uint64_t)st->id << 44 | (seq & ((UINT64_C(1) << 44) - 1));
  if (!c->op) {
    c->op = id;
    c->first_seq = seq;
  }
  a->pub.id = id;
  a->pub.op = c->op;
  a->pub.lo = lo;
  a->pub.hi = hi;
  a->pub.dir = c->dir;
  a->pub.stream = c->stream;
  a->pub.stream_id = st->id;
  a->pub.device = LD(st->device);
  a->pub.seq = seq;
  a->pub.event = ev;
  a->has_event = ev != NULL;
  atomic_store_explicit(&a->late_event, NULL, memory_order_relaxed);
  atomic_store_explicit(&a->done_stamp, 0, memory_order_relaxed);
  a->pub.enqueue_stamp = c->t;
  a->pub.region_base = h->base;
  a->pub.region_size = h->end - h->base;
  if (c->origin) a->pub.origin = *c->origin;
  else a->pub.origin = (pg_origin_t){NULL, NULL};
  if (c->stack) pg_stack_copy(&a->pub.stack, c->stack);
  else a->pub.stack.depth = 0;
  a->blocking = LD(st->blocking);
  a->shaped = c->shape != NULL;
  if (__builtin_expect(c->shape != NULL, 0)) a->shape = *c->shape;
  atomic_store_explicit(&a->hooked, false, memory_order_relaxed);
  /* Without a begin hook to run, retirement may take it as soon as it is indexed. */
  c->hooked |= hooked;
  atomic_store_explicit(&a->ready, !hooked, memory_order_relaxed);
  a->region = h->rec;
  a->region_gen = h->gen;
  a->stream = st;
  a->fifo_next = NULL;
  if (st->fifo_tail) {
    st->fifo_tail->fifo_next = a;
  } else {
    st->fifo_head = a;
    atomic_store_explicit(&st->busy, true, memory_order_release);
  }
  st->fifo_tail = a;
  if (!st->run_head) st->run_head = a;
  st->nfifo++;
  index_owned(st, a);
  if (atomic_load_explicit(&a->where, memory_order_relaxed) == PG_IN_PENDING)
    atomic_store_explicit(&a->ready, false, memory_order_relaxed);
  return a;
}

/* st->mu held, before the pieces: the periodic poll and the legacy stream's clock. */
static inline __attribute__((always_inline)) size_t begin_enter(pg_stream_t *st,
                                                                pg_acc_t **later) {
  size_t retired = 0;
  if (st->poll_in) st->poll_in--;
  else retired = poll_fifo(st, later);
  pg_stream_legacy_sync(st);
  return retired;
}

static bool shaped_hook_begin(pg_acc_t *a, const pg_region_t *reg);

/* The region a piece lies in, for the begin hook: as the piece's lookup found it. */
static pg_region_t piece_region(const pg_acc_t *a) {
  const pg_region_rec_t *r = a->region;
  return (pg_region_t){.base = a->pub.region_base,
                       .size = a->pub.region_size,
                       .how = (pg_pin_how_t)LD(r->how),
                       .flags = LD(r->flags),
                       .id = LD(r->id)};
}

/* After st->mu is released: the pieces that wait for their region's set, or for the begin
 * hook, are made ready (out of line: the common piece, on its stream's own owner list with no
 * hook, needs none of it). */
__attribute__((noinline)) static void begin_finish(pg_stream_t *st, bool hook,
                                                   uint64_t first_seq, pg_acc_t *const *accs,
                                                   size_t ok) {
  for (size_t i = 0; i < ok; i++) {
    pg_acc_t *a = accs[i];
    pg_region_rec_t *r = a->region;
    if (atomic_load_explicit(&a->where, memory_order_relaxed) == PG_IN_PENDING) {
      /* Not ready yet, so no retirement reads `where` meanwhile. A region removed since the
       * lookup (or out of memory): the access is not indexed, but it still retires from its
       * stream. */
      pg_lock(&r->mu);
      int indexed = LD(r->gen) == a->region_gen ? set_insert(r, a) : 0;
      atomic_store_explicit(&a->where, indexed ? PG_IN_SET : PG_IN_NONE, memory_order_relaxed);
      if (indexed == SET_MOVED) set_quiet(r);
      pg_unlock(&r->mu);
    }
    /* The hook protects the piece's pages only now that it is indexed: a CPU access that
     * faults on them from here on finds it. Not ready until the hook returned: no thread can
     * retire the piece (and call the retire hook) before, so a guard page is never protected
     * after its unprotect. */
    if (hook && piece_hooked(hook, a->pub.region_size)) {
      a->hook_lo = a->pub.lo;
      a->hook_hi = a->pub.hi;
      pg_region_t reg = piece_region(a);
      bool hooked = a->shaped ? shaped_hook_begin(a, &reg)
                              : pg_hook_begin(&a->hook_lo, &a->hook_hi, a->pub.dir, &reg,
                                              pg_hook_ctx);
      /* Its region's removal may have forgotten the pages before the hook counted them: undo
       * the count now, since no retirement will. */
      if (hooked && (atomic_load_explicit(&a->where, memory_order_acquire) == PG_IN_NONE ||
                     LD(r->gen) != a->region_gen)) {
        pg_acc_hook_retire(a);
        hooked = false;
      }
      atomic_store_explicit(&a->hooked, hooked, memory_order_relaxed);
    }
    atomic_store_explicit(&a->ready, true, memory_order_release);
  }
  /* A retirement that ran while these pieces were being made ready stopped at them; if the
   * host already knows them complete (another thread waited on this stream meanwhile), nothing
   * may come back to retire them, so this begin does. */
  if (atomic_load_explicit(pg_host_clock_at(st->id), memory_order_seq_cst) >= first_seq)
    pg_stream_retire(st, 16); /* no sweeper thread: begins retire their own stream */
}

/* An access that could not be begun (its stream has no state, or no record or event could be
 * had): counted, so that the stats do not count it tracked. Its conflict check ran. */
__attribute__((noinline, cold)) static int untracked_begin(const pg_origin_t *origin) {
  pg_stream_untracked_op(origin && origin->func);
  return -1;
}

/* st->mu held until here: releases it, settles the counts, and finishes the pieces that need
 * it. Returns what the begin returns. */
static inline __attribute__((always_inline)) int begin_leave(begin_ctx_t *c, pg_acc_t *const *accs,
                                                             size_t ok, bool pending,
                                                             size_t retired, pg_acc_t *later) {
  pg_stream_t *st = c->st;
  if (ok) pg_stream_clock_changed(st);
  size_t evicted = 0;
  if (__builtin_expect(retired != 0, 0)) {
    evicted = st->evicted_pending;
    st->evicted_pending = 0;
  }
  pg_unlock(&st->mu);
  if (later) pg_stream_retire_finish(st, later);
  if (retired) pg_stream_retired(retired, evicted);
  atomic_fetch_add_explicit(&pg_inflight_total, ok, memory_order_relaxed);
  if (ok && (c->hooked || pending)) begin_finish(st, c->hooked, c->first_seq, accs, ok);
  return ok ? (int)ok : untracked_begin(c->origin);
}

/* Any span: one piece per region, clipped so that no byte is tracked twice when regions
 * overlap. */
static int begin(uintptr_t lo, uintptr_t hi, const pg_region_hit_t *hits, size_t nh, pg_dir_t dir,
                 cudaStream_t stream, const pg_origin_t *origin, const pg_stack_t *stack,
                 const pg_shape_t *shape) {
  if (nh > MAX_PIECES) nh = MAX_PIECES;
  uintptr_t plo[MAX_PIECES], phi[MAX_PIECES], cur = lo;
  size_t hit_of[MAX_PIECES], np = 0;
  for (size_t i = 0; i < nh; i++) {
    uintptr_t a = hits[i].base > cur ? hits[i].base : cur;
    uintptr_t b = hits[i].end < hi ? hits[i].end : hi;
    if (a >= b) continue;
    plo[np] = a;
    phi[np] = b;
    hit_of[np++] = i;
    cur = b;
  }
  if (!np) return 0;
  pg_stream_t *st = pg_stream_get(stream);
  if (!pg_stream_tracked(st)) return untracked_begin(origin);
  begin_ctx_t c = {.st = st, .stream = stream, .dir = dir, .origin = origin, .stack = stack,
                   .t = pg_stamp(), .hook = pg_hook_begin != NULL, .shape = shape};
  pg_acc_t *accs[MAX_PIECES], *later = NULL;
  size_t ok = 0;
  bool pending = false;
  pg_lock(&st->mu);
  size_t retired = begin_enter(st, &later);
  for (; ok < np; ok++) {
    pg_acc_t *a = begin_piece(&c, plo[ok], phi[ok], &hits[hit_of[ok]]);
    if (!a) break;
    pending |= atomic_load_explicit(&a->where, memory_order_relaxed) == PG_IN_PENDING;
    accs[ok] = a;
  }
  return begin_leave(&c, accs, ok, pending, retired, later);
}

int pg_access_begin(const void *p, size_t n, pg_dir_t dir, cudaStream_t stream,
                    const pg_origin_t *origin, const pg_stack_t *stack) {
  uintptr_t lo = (uintptr_t)p, hi = lo + n < lo ? UINTPTR_MAX : lo + n;
  if (!n || !pg_ops.event_record) return 0;
  pg_region_hit_t hits[MAX_PIECES];
  size_t nh = pg_regions_overlapping(lo, hi, hits, MAX_PIECES);
  return begin(lo, hi, hits, nh, dir, stream, origin, stack, NULL);
}

/* The origin comes by value (two registers), so that a caller can make this its tail call. */
int pg_access_begin_at(const pg_lookup_t *lk, pg_dir_t dir, cudaStream_t stream,
                       pg_origin_t origin, const pg_stack_t *stack) {
  if (lk->hi <= lk->lo || !pg_ops.event_record) return 0;
  const pg_region_hit_t *h = (const pg_region_hit_t *)(const void *)lk->hits;
  /* A span over several regions, or a lookup no longer current. */
  if (__builtin_expect(lk->total != 1 || !pg_lookup_current(lk), 0)) {
    pg_region_hit_t buf[MAX_PIECES];
    size_t nh;
    const pg_region_hit_t *hits = pg_regions_of_lookup(lk, buf, MAX_PIECES, &nh);
    return begin(lk->lo, lk->hi, hits, nh, dir, stream, &origin, stack, NULL);
  }
  /* The common span: inside one region, found by a lookup that is still current, made for an
   * op on this stream (whose record it kept): begin's one piece, without its arrays. */
  uintptr_t lo = h->base > lk->lo ? h->base : lk->lo, hi = h->end < lk->hi ? h->end : lk->hi;
  if (lo >= hi) return 0;
  pg_stream_t *st = lk->stream ? (pg_stream_t *)lk->stream : pg_stream_get(stream);
  if (!pg_stream_tracked(st)) return untracked_begin(&origin);
  begin_ctx_t c = {.st = st, .stream = stream, .dir = dir, .origin = &origin, .stack = stack,
                   .t = pg_stamp(), .hook = pg_hook_begin != NULL};
  pg_acc_t *later = NULL;
  pg_lock(&st->mu);
  size_t retired = begin_enter(st, &later);
  pg_acc_t *a = begin_piece(&c, lo, hi, h);
  bool pending = a && atomic_load_explicit(&a->where, memory_order_relaxed) == PG_IN_PENDING;
  return begin_leave(&c, &a, a != NULL, pending, retired, later);
}

/* What a retire hook call needs of a piece, copied (pg_access_unguard releases the stream's lock
 * before the call, after which the record may be recycled). */
typedef struct hook_ranges {
  pg_dir_t dir;
  uintptr_t lo, hi;         /* hook_lo, hook_hi */
  uint64_t runs;            /* shaped, counted run by run: which runs (else 0) */
  pg_shape_t shape;
  uintptr_t clip_lo, clip_hi;
} hook_ranges_t;
static hook_ranges_t hook_ranges_of(const pg_acc_t *a);
static void hook_ranges_retire(const hook_ranges_t *h);

/* ---- queries ------------------------------------------------------------------------------- */
typedef struct collect {
  int mode;                 /* 0 any, 1 may write, 2 conflicts with (dir, st) */
  bool running_only;        /* leave out the accesses that completed */
  bool guarding_only;       /* leave out those whose guard pages a fault already let go */
  pg_dir_t dir;
  const pg_stream_t *st;
  pg_access_t *out;
  size_t cap, total;
  uintptr_t lo, hi;         /* the query's span (set by query_hits) */
  const pg_shape_t *shape;  /* the query's bytes, when a pitched copy's (else all of [lo, hi)) */
  uintptr_t at;             /* a fault's byte: a shaped access counts only if it touches it */
} collect_t;

static bool shaped_hit(const pg_acc_t *a, const collect_t *c);

/* Inside a host function: an access ordered after it cannot have started. */
static bool after_current_hostfn(const pg_acc_t *a) {
  return pg_t_in_hostfn && pg_hb_after_hostfn(&pg_t_hostfn, a->pub.stream_id, a->pub.seq);
}

static void collect(pg_acc_t *a, void *ctx) {
  collect_t *c = ctx;
  if (after_current_hostfn(a)) return;
  /* A pitched copy's side, on either part: only the bytes it touches count. */
  if (__builtin_expect(a->shaped || c->shape != NULL, 0) && !shaped_hit(a, c)) return;
  if (c->mode == 1 && !pg_dir_may_write(a->pub.dir)) return;
  if (c->mode == 2) {
    if (!pg_dir_may_write(a->pub.dir) && !pg_dir_may_write(c->dir)) return; /* read/read */
    if (pg_stream_ordered_after(c->st, a)) return;
  }
  if (pg_acc_ordered(a)) return;
  if (c->running_only && pg_acc_done(a)) return;
  /* Not ready: its begin hook may still be counting it; it guards (or soon will). */
  if (c->guarding_only && atomic_load_explicit(&a->ready, memory_order_acquire) &&
      !atomic_load_explicit(&a->hooked, memory_order_relaxed))
    return;
  if (c->total < c->cap) {
    pg_access_t *o = &c->out[c->total];
    *o = a->pub;
    if (!o->event) o->event = atomic_load_explicit(&a->late_event, memory_order_acquire);
    /* Reported all the same; whether it still runs decides only what enforce waits for. */
    o->completed = pg_acc_done(a);
    o->completed_stamp = o->completed ? atomic_load_explicit(&a->done_stamp, memory_order_acquire)
                                      : 0;
  }
  c->total++;
}

/* The owner's accesses on r's list (owner's lock held) overlapping [lo, hi). */
static void own_visit(pg_region_rec_t *r, uintptr_t lo, uintptr_t hi, collect_t *c) {
  for (pg_acc_t *a = r->own_head; a; a = a->slot_next)
    if (acc_overlaps(a, lo, hi)) collect(a, c);
}

/* The accesses of r, as a hit, that c asks for. r->mu held. */
static void region_visit(pg_region_rec_t *r, uintptr_t lo, uintptr_t hi, collect_t *c) {
  pg_stream_t *ow = atomic_load_explicit(&r->owner, memory_order_relaxed);
  if (c->mode == 2 && ow && ow != c->st) {
    own_disown(r); /* another stream checks: the owner's accesses go where it finds them fast */
    ow = atomic_load_explicit(&r->owner, memory_order_relaxed);
  }
  /* Only what may write matters to a query for writes, and to a read's conflict check. */
  bool writes_only = c->mode == 1 || (c->mode == 2 && !pg_dir_may_write(c->dir));
  if (r->nacc) set_visit(r, lo, hi, writes_only, collect, c);
  /* The owner's own list: ordered before a new access on its own stream, so a conflict check
   * from there skips it; everything else looks. */
  if (ow && !(c->mode == 2 && ow == c->st)) {
    pg_lock(&ow->mu);
    if (atomic_load_explicit(&r->owner, memory_order_relaxed) == ow) own_visit(r, lo, hi, c);
    pg_unlock(&ow->mu);
  }
}

static size_t query_hits(uintptr_t lo, uintptr_t hi, const pg_region_hit_t *hits, size_t nh,
                         collect_t *c);

static size_t query(const void *p, size_t n, collect_t *c) {
  uintptr_t lo = (uintptr_t)p, hi = lo + n < lo ? UINTPTR_MAX : lo + n;
  if (!n) return 0;
  pg_region_hit_t hits[MAX_PIECES];
  size_t nh = pg_regions_overlapping(lo, hi, hits, MAX_PIECES);
  return query_hits(lo, hi, hits, nh, c);
}

static size_t query_hits(uintptr_t lo, uintptr_t hi, const pg_region_hit_t *hits, size_t nh,
                         collect_t *c) {
  if (nh > MAX_PIECES) nh = MAX_PIECES;
  c->lo = lo;
  c->hi = hi;
  pg_hb_poll_flags(); /* what a flag the CPU polls has ordered */
  for (size_t i = 0; i < nh; i++) {
    pg_region_rec_t *r = hits[i].rec;
    if (c->mode == 2) {
      /* A conflict check need not wait for a change under way on another thread (that
       * thread's op is concurrent with this one): the region's summary, written at the end of
       * each change, says whether anything here could be another stream's. */
      if (pg_summary_clear(r, lo, hi, c->st, pg_dir_may_write(c->dir))) continue;
    }
    pg_lock(&r->mu);
    if (LD(r->gen) == hits[i].gen) region_visit(r, lo, hi, c);
    pg_unlock(&r->mu);
  }
  return c->total;
}

size_t pg_inflight_query(const void *p, size_t n, int writes_only, pg_access_t *out, size_t cap) {
  collect_t c = {.mode = writes_only ? 1 : 0, .out = out, .cap = cap};
  return query(p, n, &c);
}

size_t pg_access_conflicts(const void *p, size_t n, pg_dir_t dir, cudaStream_t stream,
                           pg_access_t *out, size_t cap) {
  pg_stream_t *st = pg_stream_get(stream); /* untracked: ordered after nothing */
  collect_t c = {.mode = 2, .dir = dir, .st = st, .out = out, .cap = cap};
  return query(p, n, &c);
}

size_t pg_access_conflicts_at(const pg_lookup_t *lk, pg_dir_t dir, cudaStream_t stream,
                              pg_access_t *out, size_t cap) {
  if (lk->hi <= lk->lo) return 0;
  pg_stream_t *st = pg_stream_get(stream); /* untracked: ordered after nothing */
  collect_t c = {.mode = 2, .dir = dir, .st = st, .out = out, .cap = cap};
  pg_region_hit_t buf[MAX_PIECES];
  size_t nh;
  const pg_region_hit_t *hits = pg_regions_of_lookup(lk, buf, MAX_PIECES, &nh);
  return query_hits(lk->lo, lk->hi, hits, nh, &c);
}

size_t pg_access_find(pg_query_kind_t kind, unsigned flags, const void *p, size_t n,
                      pg_dir_t dir, cudaStream_t stream, pg_access_t *out, size_t cap) {
  collect_t c = {.mode = (int)kind, .running_only = (flags & PG_FIND_RUNNING) != 0,
                 .guarding_only = (flags & PG_FIND_GUARDING) != 0, .dir = dir, .out = out,
                 .cap = cap};
  if (kind == PG_QUERY_CONFLICTS) c.st = pg_stream_get(stream); /* untracked: after nothing */
  return query(p, n, &c);
}

bool pg_access_quiet_at(const pg_lookup_t *lk, cudaStream_t stream) {
  if (lk->hi <= lk->lo) return true;
  if (!pg_lookup_current(lk)) return false;
  pg_stream_t *st = pg_stream_get(stream); /* untracked: ordered after nothing */
  /* query_hits' first test for each region, without its lock or its call. */
  for (size_t i = 0; i < lk->total; i++)
    if (!pg_summary_clear(lk->hits[i].rec, lk->lo, lk->hi, st, true)) return false;
  return true;
}

/* st->mu held: the record of found access a among st's FIFO from `from` on (in sequence order),
 * or NULL when it is no longer there. */
static pg_acc_t *fifo_find(pg_acc_t *from, const pg_access_t *a) {
  for (pg_acc_t *x = from; x && x->pub.seq <= a->seq; x = x->fifo_next)
    if (x->pub.id == a->id) return x;
  return NULL;
}

void pg_access_unguard(const pg_access_t *a) {
  pg_stream_t *st = pg_stream_by_id(a->stream_id);
  if (!st) return;
  hook_ranges_t h = {0};
  bool owed = false;
  pg_lock(&st->mu);
  /* Still on its stream's FIFO while not retired; retirement takes the hook's call for itself
   * the same way, so exactly one of the two makes it. */
  pg_acc_t *x = fifo_find(st->fifo_head, a);
  if (x && atomic_load_explicit(&x->ready, memory_order_acquire) &&
      LD(x->region->gen) == x->region_gen &&
      atomic_exchange_explicit(&x->hooked, false, memory_order_relaxed)) {
    h = hook_ranges_of(x); /* x may be recycled once the lock is released */
    owed = true;
  }
  pg_unlock(&st->mu);
  if (owed) hook_ranges_retire(&h);
}

bool pg_access_wait(const pg_access_t *a) {
  if (a->completed) return true;
  if (!a->event) return false;
  /* The event may have been recycled since: only for a later access on the same stream (pools
   * are per stream, reused once an access completed), so waiting on it still covers *a. The
   * wait teaches the host nothing: pinguard's own waits order nothing (a later check still
   * finds *a, completed). */
  if (pg_ops.event_synchronize(a->event) != PG_DEV_OK) return false;
  pg_stream_t *st = pg_stream_by_id(a->stream_id);
  if (st) pg_stream_retire(st, 0);
  return true;
}

/* st->mu held, a on st's FIFO, not known complete: the event a's completion can be asked of
 * (pg_access_cover), recording one through `handle` (which names st on this thread) for the
 * FIFO's newest access when no access from a on holds one and may_record. NULL when there is
 * none. */
static cudaEvent_t cover_locked(pg_stream_t *st, pg_acc_t *a, cudaStream_t handle,
                                bool may_record) {
  for (pg_acc_t *x = a; x; x = x->fifo_next)
    if (x->has_event) return pg_acc_event(x);
  pg_acc_t *t = st->fifo_tail;
  cudaEvent_t ev;
  if (!may_record || pg_t_in_hostfn || LD(st->dead) || !record_event_locked(st, handle, &ev))
    return NULL;
  atomic_store_explicit(&t->late_event, ev, memory_order_release);
  t->has_event = true;
  return ev;
}

bool pg_access_cover(pg_access_t *a, bool may_record) {
  if (a->event || a->completed) return true;
  pg_stream_t *st = pg_stream_by_id(a->stream_id);
  if (!st) return false;
  /* Recorded only through a handle that names st on this thread: the default streams' handles
   * name the calling thread's own per-thread stream, or its current device's legacy stream. */
  if (may_record && pg_stream_get(a->stream) != st) may_record = false;
  cudaEvent_t ev = NULL;
  uint64_t done = 0; /* its done_stamp */
  pg_lock(&st->mu);
  /* Among its stream's running accesses while not seen complete; one that left them meanwhile
   * completed (and may have retired since). */
  pg_acc_t *x = fifo_find(st->run_head, a);
  bool gone = x == NULL;
  if (x) done = atomic_load_explicit(&x->done_stamp, memory_order_acquire);
  if (x && !done) ev = cover_locked(st, x, a->stream, may_record);
  pg_unlock(&st->mu);
  if (!gone && !done && !ev) return false;
  a->event = ev;
  /* As pg_access_wait: the event may since have been given back and recorded again, for a later
   * access of the same stream, whose completion still implies a's. */
  if (gone || done || (!pg_t_in_hostfn && pg_ops.event_query(ev) == PG_DEV_OK)) {
    a->completed = true;
    a->completed_stamp = done ? done : pg_stamp();
  }
  return true;
}

size_t pg_tracker_inflight_count(void) {
  return atomic_load_explicit(&pg_inflight_total, memory_order_relaxed);
}

/* ---- shaped accesses: one side of a pitched copy (pg_shape.h) ---------------------------------
 * A shaped piece keeps its hull as [pub.lo, pub.hi) (indexed, summarized and clipped to its
 * region like any piece) and its shape; every query tests the bytes themselves (collect), and its
 * guard pages are only the pages holding its bytes. */

/* Whether access a and the query c share a byte, by their shapes (a plain side: all its bytes). */
static bool shaped_hit(const pg_acc_t *a, const collect_t *c) {
  uintptr_t lo = a->pub.lo > c->lo ? a->pub.lo : c->lo;
  uintptr_t hi = a->pub.hi < c->hi ? a->pub.hi : c->hi;
  if (c->at && a->shaped) /* a fault: the byte itself */
    return c->at >= a->pub.lo && c->at < a->pub.hi && pg_shape_contains(&a->shape, c->at);
  return pg_shape_overlap(a->shaped ? &a->shape : NULL, c->shape, lo, hi);
}

int pg_access_begin_shaped(const pg_shape_t *shape, pg_dir_t dir, cudaStream_t stream,
                           const pg_origin_t *origin, const pg_stack_t *stack) {
  uintptr_t lo = shape->base, hi = pg_shape_end(shape);
  if (lo >= hi || !pg_ops.event_record) return 0;
  pg_region_hit_t hits[MAX_PIECES];
  size_t nh = pg_regions_overlapping(lo, hi, hits, MAX_PIECES);
  return begin(lo, hi, hits, nh, dir, stream, origin, stack, shape);
}

size_t pg_access_find_shaped(pg_query_kind_t kind, unsigned flags, const pg_shape_t *shape,
                             pg_dir_t dir, cudaStream_t stream, pg_access_t *out, size_t cap) {
  collect_t c = {.mode = (int)kind, .running_only = (flags & PG_FIND_RUNNING) != 0,
                 .guarding_only = (flags & PG_FIND_GUARDING) != 0, .dir = dir, .out = out,
                 .cap = cap, .shape = shape};
  if (kind == PG_QUERY_CONFLICTS && !(c.st = pg_stream_get(stream))) return 0;
  return query((const void *)shape->base, pg_shape_end(shape) - shape->base, &c);
}

size_t pg_access_find_at(pg_query_kind_t kind, unsigned flags, const void *p, size_t n,
                         uintptr_t at, pg_dir_t dir, cudaStream_t stream, pg_access_t *out,
                         size_t cap) {
  collect_t c = {.mode = (int)kind, .running_only = (flags & PG_FIND_RUNNING) != 0,
                 .guarding_only = (flags & PG_FIND_GUARDING) != 0, .dir = dir, .out = out,
                 .cap = cap, .at = at};
  if (kind == PG_QUERY_CONFLICTS && !(c.st = pg_stream_get(stream))) return 0;
  return query(p, n, &c);
}

/* Guard pages, run by run (pg_shape_page_runs): every page holding a touched byte (a page a row
 * shares with a gap too: a CPU fault on its gap bytes is no conflict, see pg_decide_cpu_fault),
 * for the first HOOK_RUNS_MAX runs (one bit each in hook_runs); rows beyond them (rows a page or
 * more apart, many of them) are not guarded. */
#define HOOK_RUNS_MAX 64

static size_t shaped_runs(const pg_shape_t *s, uintptr_t lo, uintptr_t hi,
                          void (*fn)(uintptr_t, uintptr_t, void *), void *arg) {
  return pg_shape_page_runs(s, lo, hi, pg_page_size(), HOOK_RUNS_MAX, fn, arg);
}

typedef struct run_walk {
  pg_dir_t dir;
  const pg_region_t *reg;   /* begin: the region the runs lie in */
  unsigned i;
  uint64_t runs;            /* begin: the runs counted; retire: those to give back */
  uintptr_t clip_lo, clip_hi;
  uintptr_t first_lo, last_hi; /* the hook's widening of the runs at the clip's ends */
} run_walk_t;

static void run_begin(uintptr_t lo, uintptr_t hi, void *arg) {
  run_walk_t *w = arg;
  uintptr_t l = lo, h = hi;
  if (pg_hook_begin(&l, &h, w->dir, w->reg, pg_hook_ctx)) {
    w->runs |= UINT64_C(1) << w->i;
    if (lo == w->clip_lo) w->first_lo = l;
    if (hi == w->clip_hi) w->last_hi = h;
  }
  w->i++;
}

static void run_retire(uintptr_t lo, uintptr_t hi, void *arg) {
  run_walk_t *w = arg;
  if (w->runs & (UINT64_C(1) << w->i))
    pg_hook_retire(lo == w->clip_lo ? w->first_lo : lo, hi == w->clip_hi ? w->last_hi : hi,
                   w->dir, pg_hook_ctx);
  w->i++;
}

/* begin_finish's hook call for a shaped piece: whether anything was counted. */
static bool shaped_hook_begin(pg_acc_t *a, const pg_region_t *reg) {
  a->hook_runs = 0;
  run_walk_t w = {.dir = a->pub.dir, .reg = reg, .clip_lo = a->pub.lo, .clip_hi = a->pub.hi,
                  .first_lo = a->pub.lo, .last_hi = a->pub.hi};
  shaped_runs(&a->shape, a->pub.lo, a->pub.hi, run_begin, &w);
  a->hook_runs = w.runs;
  a->hook_lo = w.first_lo;
  a->hook_hi = w.last_hi;
  return w.runs != 0;
}

static hook_ranges_t hook_ranges_of(const pg_acc_t *a) {
  hook_ranges_t h = {.dir = a->pub.dir, .lo = a->hook_lo, .hi = a->hook_hi};
  if (a->shaped && a->hook_runs) {
    h.runs = a->hook_runs;
    h.shape = a->shape;
    h.clip_lo = a->pub.lo;
    h.clip_hi = a->pub.hi;
  }
  return h;
}

static void hook_ranges_retire(const hook_ranges_t *h) {
  if (!h->runs) {
    pg_hook_retire(h->lo, h->hi, h->dir, pg_hook_ctx);
    return;
  }
  run_walk_t w = {.dir = h->dir, .runs = h->runs, .clip_lo = h->clip_lo, .clip_hi = h->clip_hi,
                  .first_lo = h->lo, .last_hi = h->hi};
  shaped_runs(&h->shape, h->clip_lo, h->clip_hi, run_retire, &w);
}

void pg_acc_hook_retire(const pg_acc_t *a) {
  hook_ranges_t h = hook_ranges_of(a);
  hook_ranges_retire(&h);
}
