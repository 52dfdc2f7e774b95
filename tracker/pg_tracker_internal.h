/* pg_tracker_internal.h: what the tracker's files share with each other and nothing else:
 * region records, stream states with their vector clocks, access records, and the locks between
 * them. Lock order: events -> stream map -> region writer -> region record -> stream state ->
 * pending host functions (a leaf). */
#ifndef PG_TRACKER_INTERNAL_H
#define PG_TRACKER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "pg_lock.h"
#include "pg_tracker.h"

#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(obj) (pg_hash_oom = 1)
extern __thread int pg_hash_oom; /* set when a uthash add could not allocate */
#include <uthash.h>

/* Dense stream ids name the clock entries; id 0 is never used. The per-id state (the host's
 * clock entry, the stream state) lives in chunks of PG_ID_CHUNK ids, allocated as streams appear
 * (a two-level table: lock-free reads, no allocation once an id is in use). Beyond
 * PG_MAX_STREAMS streams alive at once (or out of memory), a new stream is not tracked: its ops
 * are counted (PG_TRACKER_UNTRACKED) and its copies checked as a stream ordered after nothing
 * (pg_stream_untracked). */
#define PG_MAX_STREAMS (1u << 20)
#define PG_ID_CHUNK 1024u
#define PG_ID_CHUNKS (PG_MAX_STREAMS / PG_ID_CHUNK)

/* A region's in-flight set keeps its first slots inside the record (one cache line), and adds a
 * uthash by address once it holds PG_HASH_SLOTS distinct starts. */
#define PG_INLINE_SLOTS 6
#define PG_HASH_SLOTS 16

typedef struct pg_acc pg_acc_t;
typedef struct pg_slot pg_slot_t;
typedef struct pg_stream pg_stream_t;
typedef struct pg_region_rec pg_region_rec_t;
typedef struct pg_clock_tab pg_clock_tab_t;

extern pg_devops_t pg_ops;
extern pg_access_begin_fn pg_hook_begin;
extern pg_access_hook_fn pg_hook_retire;
extern void *pg_hook_ctx;
extern size_t pg_hook_min_region; /* pg_tracker_set_hook_min_region */
extern atomic_size_t pg_inflight_total;

/* ---- regions (pg_regions.c) ---------------------------------------------------------------- */
/* Type-stable: never freed, recycled with gen bumped, so a lock-free reader holding a stale
 * pointer reads a valid record and notices the generation changed. */
struct pg_region_rec {
  _Atomic uint64_t gen;
  _Atomic uint64_t id;
  _Atomic int how;
  _Atomic unsigned flags;
  /* The region's owner: the stream whose accesses here are kept on own_head (a plain list, in
   * no order) instead of in the set. Changed only with mu and the owner's lock both held (so the
   * owner's lock alone keeps it fixed); the list is protected by the owner's lock. Most regions
   * are used by one stream at a time: its copies then insert, retire and check conflicts without
   * this record's lock (tracker/README.md, "The owner's list"). */
  _Atomic(pg_stream_t *) owner;
  pg_acc_t *own_head;
  /* For a lock-free conflict check, written under mu at the end of each change: PG_QUIET_EMPTY
   * when nothing is in flight here (no owner, empty set), the owner's id when the set is empty
   * (only the owner's accesses, on its list), 0 otherwise. */
  _Atomic uint32_t quiet;
  /* With quiet 0 (accesses in the set): a bound on where they lie, [set_lo, set_hi), and the
   * owner's id then (0: none), so that a check of a range outside the bound, from the owner's
   * stream or with no owner, takes no lock either; and whether the set may hold an access that
   * may write (set_writes: 0 only when none was inserted since the last change that found none),
   * so that a read's check, which conflicts only with writes, takes none either when it holds
   * only reads (many streams reading the same bytes). Written with quiet, under mu, between two
   * moves of sum_seq (odd while they are written); readers take a consistent snapshot or look. */
  atomic_uint sum_seq;
  _Atomic uint32_t set_owner, set_writes;
  _Atomic uintptr_t set_lo, set_hi;
  pg_lock_t mu;                /* protects everything below (zero: free; a futex lock, pg_lock.h) */
  /* in-flight set: slots (one per distinct access start) sorted by lo, and hashed by lo once
   * there are many (PG_HASH_SLOTS) */
  pg_slot_t **sorted;          /* inline_sorted until it outgrows it */
  size_t nslots, cap_slots;
  pg_slot_t *slots_by_lo;      /* uthash, or NULL while the set is small */
  uintptr_t maxlen;            /* longest access in the set since it was last empty */
  size_t nacc;
  size_t nwrites;              /* how many of the set's nacc accesses may write */
  pg_slot_t *inline_sorted[PG_INLINE_SLOTS];
  pg_slot_t *free_slots;       /* idle slots, kept for the set's next inserts: removal (which the
                                * fault handler's retirement does) never frees */
  pg_stack_t stack;            /* last: cold, read only for reports */
  /* writer side, under the region writer lock */
  uintptr_t key_base;          /* uthash key (exact base) */
  UT_hash_handle hh;
  pg_region_rec_t *dup_older;  /* older registration with the same base */
  pg_region_rec_t *next_all, *next_free;
};

/* One region overlapping a queried range, as seen by a lock-free read. */
typedef struct pg_region_hit {
  pg_region_rec_t *rec;
  uint64_t gen;
  uintptr_t base, end;
} pg_region_hit_t;

/* Regions overlapping [lo, hi), ascending by base; fills min(total, cap), returns total. */
size_t pg_regions_overlapping(uintptr_t lo, uintptr_t hi, pg_region_hit_t *out, size_t cap);
/* The regions overlapping lk's span (hits are lk's own while it is current, else out's). */
const pg_region_hit_t *pg_regions_of_lookup_slow(const pg_lookup_t *lk, pg_region_hit_t *out,
                                                 size_t cap, size_t *total);
static inline const pg_region_hit_t *pg_regions_of_lookup(const pg_lookup_t *lk,
                                                          pg_region_hit_t *out, size_t cap,
                                                          size_t *total) {
  if (__builtin_expect(pg_lookup_current(lk), 1)) {
    *total = lk->total;
    return (const pg_region_hit_t *)(const void *)lk->hits;
  }
  return pg_regions_of_lookup_slow(lk, out, cap, total);
}
/* Calls fn on every region record ever allocated (fork handlers). */
void pg_regions_for_each_rec(void (*fn)(pg_region_rec_t *));
void pg_regions_lock_writer(void);
void pg_regions_unlock_writer(void);

/* ---- the in-flight set of one region (pg_inflight.c), region mu held ---------------------- */
struct pg_slot {
  uintptr_t lo;                /* uthash key */
  uintptr_t maxhi;             /* a bound on its accesses' ends: it shrinks only when it empties */
  /* Its accesses in two lists, so that a read's conflict check walks only what may write:
   * accs, those that may write (pg_dir_may_write); reads, those that only read. */
  pg_acc_t *accs;
  pg_acc_t *reads;
  UT_hash_handle hh;
};

/* Where an access is indexed. PG_IN_OWN: on its region's owner list (its stream is the owner;
 * changed with that stream's lock held); PG_IN_SET: in its region's set (region lock). */
enum { PG_IN_NONE, PG_IN_OWN, PG_IN_SET, PG_IN_PENDING };
#define PG_QUIET_EMPTY UINT32_MAX

struct pg_acc {
  pg_access_t pub;
  bool blocking;               /* its stream is ordered by the legacy default stream */
  /* The begin hook counted it: the retire hook owes it one call, made by whoever clears this
   * (retirement, or pg_access_unguard once a fault reported it). */
  atomic_bool hooked;
  uintptr_t hook_lo, hook_hi;  /* the range the begin hook counted (shaped: see hook_runs) */
  /* A pitched copy's side (pg_shape.h): only the shape's bytes inside [pub.lo, pub.hi) are
   * touched. Plain accesses leave `shaped` false and never read the rest. */
  bool shaped;
  pg_shape_t shape;
  /* Shaped, hooked run by run (pg_shape_page_runs): bit i set when the begin hook counted run
   * i; hook_lo and hook_hi are the ends of the runs at the clip's edges as the hook widened
   * them (pg_inflight.c, "shaped accesses"). */
  uint64_t hook_runs;
  atomic_bool ready;           /* indexed and its begin hook done: retirement may take it */
  /* Still holds its event (st->mu): pub.event, or late_event. Given back once seen complete.
   * An access without one (pg_event_every) completes when the next one on its stream does. */
  bool has_event;
  /* The event pg_access_cover recorded for an access begun without one (NULL: none yet); written
   * once under st->mu, read by queries holding only the region's lock. */
  _Atomic(cudaEvent_t) late_event;
  /* pg_stamp() when pinguard first saw it complete (its event answered), 0 before. Seeing it
   * complete orders nothing: it stays tracked until the host is ordered after it (README,
   * "Ordered, not finished"). Set once, by whoever sees it first. */
  _Atomic uint64_t done_stamp;
  _Atomic int where;           /* PG_IN_* */
  pg_region_rec_t *region;
  uint64_t region_gen;
  pg_slot_t *slot;
  pg_acc_t *slot_next, *slot_prev; /* the slot's list, or the owner list */
  pg_acc_t *fifo_next;
  pg_stream_t *stream;
};

/* Frees p later, from a path that may allocate (the in-flight set's hash tables, dropped by
 * retirements the fault handler runs); lock-free. pg_deferred_drain frees what is pending. */
void pg_defer_free(void *p);
void pg_deferred_drain(void);

/* Drops a region's whole in-flight set (region removed, or fork child); accesses stay in their
 * stream FIFOs and retire there. */
void pg_inflight_clear_region(pg_region_rec_t *rec);
/* The same in a fork child, whose stream locks are still held by its only thread. */
void pg_inflight_clear_region_child(pg_region_rec_t *rec);
/* Takes a retired access out of its region's set (PG_IN_SET). False if the region went away
 * meanwhile (the region's removal ended the access's bookkeeping, guard pages included). */
bool pg_inflight_remove(pg_acc_t *a);
/* The retire hook's call(s) for a piece the begin hook counted (hook_lo, hook_hi, and for a
 * shaped piece its runs): one call for a plain piece, one per counted run for a shaped one. */
void pg_acc_hook_retire(const pg_acc_t *a);
/* a's stream's lock held, a on its region's owner list: takes it off. */
static inline void pg_inflight_own_unlink(pg_acc_t *a) {
  pg_region_rec_t *r = a->region;
  if (a->slot_prev) a->slot_prev->slot_next = a->slot_next;
  else r->own_head = a->slot_next;
  if (a->slot_next) a->slot_next->slot_prev = a->slot_prev;
  atomic_store_explicit(&a->where, PG_IN_NONE, memory_order_relaxed);
}

/* ---- streams and vector clocks (pg_streams.c) --------------------------------------------- */
/* Type-stable and bound to one dense id for life; recycled for a new stream once the old one
 * was destroyed and its work drained, continuing its sequence so old clock entries stay true. */
struct pg_stream {
  cudaStream_t handle;
  uint32_t id;
  atomic_bool blocking;        /* not cudaStreamNonBlocking: ordered by the legacy stream */
  atomic_bool legacy;          /* the legacy default stream */
  atomic_bool dead;            /* destroyed (or its thread exited); recycled once drained */
  atomic_int device;           /* the device it belongs to (its events are created there) */
  bool recycled;               /* on the free list (stream map lock) */
  pg_lock_t mu;                /* protects the FIFO, pools, and writes to the clock (pg_lock.h) */
  /* Its vector clock, sparse: its own sequence, and the entries of the streams it was ordered
   * after (pg_clock_get; written under mu, read without a lock). */
  _Atomic uint64_t own;
  _Atomic(pg_clock_tab_t *) clk;
  _Atomic unsigned long learn_mark; /* pg_hb_sync_done: retired once per sync */
  atomic_bool trim_pending;    /* idle events left for the next host sync to trim */
  /* The version of the other side of the legacy stream's implicit order (implicit_version) st
   * last joined: a blocking stream's, its legacy stream's; the legacy stream's, its device's
   * blocking streams' (UINT64_MAX: none yet). Released after the joins: pg_hb_enqueue reads it
   * without the lock. */
  _Atomic uint64_t joined_version;
  pg_acc_t *fifo_head, *fifo_tail;
  /* The FIFO in three parts: from fifo_head, accesses seen complete but not yet ordered before
   * the host (ndone of them); from run_head (NULL: none), those that may still be running, each
   * holding its event or completing with the next one that does. Ordered ones leave from the
   * head. */
  pg_acc_t *run_head;
  unsigned unmarked;           /* accesses begun without an event since the last one with one */
  size_t ndone;
  size_t evicted_pending;      /* evicted by the last retirement, for the counter after unlock */
  /* The latest flag write on this stream (pg_hb_flag_written) not yet seen: its word, value and
   * width, and the stream position it orders the host after once the word holds the value. */
  atomic_bool flag_pending;
  const void *flag_addr;
  uint64_t flag_value, flag_seq;
  unsigned flag_width;
  unsigned poll_in;            /* begins left before the next poll of the FIFO's head */
  unsigned poll_gap;           /* begins between polls (0: not yet set; see poll_fifo) */
  size_t nfifo;                /* accesses on the FIFO */
  atomic_bool busy;            /* the FIFO is not empty: written under mu when it fills or
                                * empties; read without it by a sync, which skips idle streams */
  cudaEvent_t *pool;           /* idle completion events */
  size_t npool, cap_pool;      /* cap_pool >= nevents: returning one never grows the pool */
  size_t nevents;              /* events this stream owns: idle in the pool or its accesses' */
  pg_acc_t *free_accs;
  size_t nfree_accs;           /* records on free_accs */
  UT_hash_handle hh;           /* stream map, keyed by handle (default streams are not in it) */
  pg_stream_t *next_free;
};

/* One chunk of per-id state: the host's clock entries and the stream states of PG_ID_CHUNK ids.
 * A chunk is allocated before any of its ids is published (pg_nids), and never freed. */
typedef struct pg_id_chunk {
  _Atomic uint64_t host[PG_ID_CHUNK];          /* the host's clock */
  _Atomic(pg_stream_t *) stream[PG_ID_CHUNK];
} pg_id_chunk_t;
extern _Atomic(pg_id_chunk_t *) pg_id_chunks[PG_ID_CHUNKS];
extern atomic_uint pg_nids;    /* ids in use are 1 .. pg_nids-1 */
/* The host's clock entry for id, which is in use (below pg_nids): lock-free, allocation-free
 * (the fault handler reads it). */
static inline _Atomic uint64_t *pg_host_clock_at(uint32_t id) {
  return &atomic_load_explicit(&pg_id_chunks[id / PG_ID_CHUNK], memory_order_acquire)
              ->host[id % PG_ID_CHUNK];
}
/* The stream state bound to id, NULL for an id not in use. Lock-free, allocation-free. */
static inline pg_stream_t *pg_stream_by_id(uint32_t id) {
  if (!id || id >= atomic_load_explicit(&pg_nids, memory_order_acquire)) return NULL;
  return atomic_load_explicit(&atomic_load_explicit(&pg_id_chunks[id / PG_ID_CHUNK],
                                                    memory_order_acquire)
                                   ->stream[id % PG_ID_CHUNK],
                              memory_order_acquire);
}

/* ---- sparse vector clocks ----------------------------------------------------------------------
 * A stream's clock holds an entry only for the streams it was ordered after (event waits, the
 * legacy stream's implicit order): an open-addressing table of (id, seq), written under the
 * stream's lock, read by any thread without one. It grows by doubling into a new table, published
 * with a release store; the old one stays readable (kept on the new one's `older` chain, at most
 * as large as the new one in all), so a reader holding it reads true, if stale, entries. Entries
 * are never deleted (a recycled stream zeroes their values). */
typedef struct pg_clock_ent {
  _Atomic uint32_t id;         /* 0: empty */
  _Atomic uint64_t seq;
} pg_clock_ent_t;
struct pg_clock_tab {
  unsigned mask;               /* slots - 1 (a power of two) */
  _Atomic unsigned n;          /* entries in use */
  pg_clock_tab_t *older;       /* the tables it replaced */
  pg_clock_ent_t e[];
};
static inline unsigned pg_clock_slot(uint32_t id, unsigned mask) {
  return (id * 0x9E3779B1u >> 8) & mask;
}
/* st's clock entry for stream id: how far along id's sequence st is ordered after. */
static inline uint64_t pg_clock_get(const pg_stream_t *st, uint32_t id) {
  if (id == st->id) return atomic_load_explicit(&st->own, memory_order_relaxed);
  const pg_clock_tab_t *t = atomic_load_explicit(&st->clk, memory_order_acquire);
  if (!t) return 0;
  for (unsigned i = pg_clock_slot(id, t->mask);; i = (i + 1) & t->mask) {
    uint32_t k = atomic_load_explicit(&t->e[i].id, memory_order_acquire);
    if (k == id) return atomic_load_explicit(&t->e[i].seq, memory_order_relaxed);
    if (!k) return 0;
  }
}
/* A clock entry copied out (event snapshots, host syncs, host functions' positions). */
typedef struct pg_clock_pair {
  uint32_t id;
  uint64_t seq;
} pg_clock_pair_t;
/* Entries st's clock holds (its own included): a bound for pg_clock_copy. st->mu held. */
static inline size_t pg_clock_len(const pg_stream_t *st) {
  const pg_clock_tab_t *t = atomic_load_explicit(&st->clk, memory_order_relaxed);
  return 1 + (t ? atomic_load_explicit(&t->n, memory_order_relaxed) : 0);
}
/* Copies st's non-zero entries (its own first) into out (room for pg_clock_len); returns how
 * many. Without st->mu the copy is a snapshot at least as late as the caller's last ordering. */
size_t pg_clock_copy(const pg_stream_t *st, pg_clock_pair_t *out, size_t cap);
/* The host function this thread is running (pg_hb_hostfn_enter), if any. */
extern __thread bool pg_t_in_hostfn;
extern __thread pg_hostfn_pos_t pg_t_hostfn;

/* A conflict check of [lo, hi) from stream st for a new access that may write (write) or only
 * reads, without r's lock: true when r's summary says that nothing there can conflict with it.
 * For any access: no other stream's access overlaps the range (quiet, or the set's accesses all
 * outside it with no other stream owning r). For a read, also: the set holds only reads (with
 * no other stream owning r), which a read never conflicts with. False: look under the lock. */
bool pg_summary_clear_set(const pg_region_rec_t *r, uintptr_t lo, uintptr_t hi,
                          const pg_stream_t *st, bool write);
static inline bool pg_summary_clear(const pg_region_rec_t *r, uintptr_t lo, uintptr_t hi,
                                    const pg_stream_t *st, bool write) {
  uint32_t q = atomic_load_explicit(&r->quiet, memory_order_acquire);
  if (__builtin_expect(q == PG_QUIET_EMPTY || q == st->id, 1)) return true;
  if (q != 0) return false; /* another stream owns r, with nothing in the set */
  return pg_summary_clear_set(r, lo, hi, st, write);
}
/* Each device's legacy stream, and a version that moves with its clock; and a version that
 * moves with the clock of any of the device's other blocking streams, which the legacy stream
 * joins at each op only when it moved. */
extern _Atomic(pg_stream_t *) pg_legacy[PG_MAX_DEVICES];
extern _Atomic uint64_t pg_legacy_version[PG_MAX_DEVICES];
extern _Atomic uint64_t pg_blocking_version[PG_MAX_DEVICES];

/* A stream with no state of its own (out of ids or memory, or a device beyond PG_MAX_DEVICES):
 * what pg_stream_get answers then. Its id is no stream's and its clock is empty: a conflict check
 * on it finds everything unordered (the most conservative check); nothing is begun or ordered on
 * it (pg_stream_tracked). */
extern pg_stream_t pg_stream_untracked;
#define PG_UNTRACKED_ID (UINT32_MAX - 1)
static inline bool pg_stream_tracked(const pg_stream_t *st) { return st != &pg_stream_untracked; }
/* An access not begun (untracked stream, or no record or event): counted once per begin call
 * (PG_TRACKER_UNTRACKED, or _KERNEL when a kernel's). */
void pg_stream_untracked_op(bool kernel);

/* The state for a stream handle (0 and cudaStreamLegacy are the current device's legacy stream,
 * cudaStreamPerThread the calling thread's on the current device); &pg_stream_untracked when
 * out of ids or memory, or the device is beyond PG_MAX_DEVICES. Inline: a thread usually enqueues on a
 * handful of streams, so a small direct-mapped per-thread cache of handle -> state (valid while
 * no stream was destroyed since it was filled) answers on the per-copy path; the default-stream
 * handles, whose state depends on the current device, and misses take pg_stream_get_slow (the
 * map, under its read lock). */
#define PG_STREAM_CACHE 8
typedef struct pg_stream_cache {
  cudaStream_t h;
  pg_stream_t *st;
  unsigned long gen;
} pg_stream_cache_t;
extern __thread pg_stream_cache_t pg_stream_cache[PG_STREAM_CACHE];
/* The entry this thread's last pg_stream_get answered from, tried first: a copy resolves its
 * stream twice (its conflict check, its begin), and most threads enqueue on one stream. */
extern __thread pg_stream_cache_t pg_stream_last;
extern atomic_ulong pg_stream_map_gen; /* bumped on destroy: invalidates the thread caches */
pg_stream_t *pg_stream_get_slow(cudaStream_t s);
static inline unsigned pg_stream_cache_slot(cudaStream_t s) {
  uintptr_t k = (uintptr_t)s;
  return (unsigned)((k >> 4) ^ (k >> 12)) % PG_STREAM_CACHE;
}
static inline pg_stream_t *pg_stream_get(cudaStream_t s) {
  /* Default-stream handles are never cached: they miss here (h is never 0, 1 or 2 with a state
   * set) and resolve in the slow path. */
  unsigned long gen = atomic_load_explicit(&pg_stream_map_gen, memory_order_acquire);
  if (__builtin_expect(pg_stream_last.h == s && pg_stream_last.st && pg_stream_last.gen == gen, 1))
    return pg_stream_last.st;
  const pg_stream_cache_t *c = &pg_stream_cache[pg_stream_cache_slot(s)];
  if (__builtin_expect(c->st && c->h == s, 1) && c->gen == gen) {
    pg_stream_last = *c;
    return c->st;
  }
  return pg_stream_get_slow(s);
}
/* The calling thread's current device: 0 without asking while the process has one device. */
int pg_current_device(void);
/* Applies the legacy default stream's implicit ordering to an op about to be enqueued on st.
 * st->mu held. Non-blocking streams (most of the per-copy path) are not ordered by it. */
void pg_stream_legacy_sync_blocking(pg_stream_t *st);
static inline void pg_stream_legacy_sync(pg_stream_t *st) {
  if (atomic_load_explicit(&st->blocking, memory_order_relaxed)) pg_stream_legacy_sync_blocking(st);
}
/* Host learned that clock entry id reached seq. */
void pg_host_learn(uint32_t id, uint64_t seq);
/* st->mu held: a completion event from st's pool (false if none could be created), an access
 * record from its free list or the heap (NULL on OOM). */
bool pg_stream_take_event_new(pg_stream_t *st, cudaEvent_t *e); /* the pool is empty */
static inline bool pg_stream_take_event(pg_stream_t *st, cudaEvent_t *e) {
  if (__builtin_expect(st->npool != 0, 1)) {
    *e = st->pool[--st->npool];
    return true;
  }
  return pg_stream_take_event_new(st, e);
}
static inline void pg_stream_give_event(pg_stream_t *st, cudaEvent_t e) {
  if (st->npool < st->cap_pool) st->pool[st->npool++] = e; /* always: cap_pool >= nevents */
}
pg_acc_t *pg_stream_alloc_acc_new(void); /* the free list is empty: the heap */
static inline pg_acc_t *pg_stream_alloc_acc(pg_stream_t *st) {
  pg_acc_t *a = st->free_accs;
  if (__builtin_expect(a != NULL, 1)) {
    st->free_accs = a->fifo_next;
    st->nfree_accs--;
    return a;
  }
  return pg_stream_alloc_acc_new();
}
/* st->mu held: st's clock changed (the legacy stream's version moves with it, and another
 * blocking stream's moves its device's blocking version; a non-blocking stream's moves none). A
 * clock raised only by joining the legacy stream (pg_stream_legacy_sync) need not call this:
 * what it gained, the legacy stream knew. */
static inline void pg_stream_clock_changed(pg_stream_t *st) {
  if (!atomic_load_explicit(&st->blocking, memory_order_relaxed)) return;
  int device = atomic_load_explicit(&st->device, memory_order_relaxed);
  atomic_fetch_add_explicit(atomic_load_explicit(&st->legacy, memory_order_relaxed)
                                ? &pg_legacy_version[device]
                                : &pg_blocking_version[device],
                            1, memory_order_relaxed);
}
/* After a backlog drained: gives back to the heap (and the runtime) the idle records and events
 * of st's pools beyond what its steady state needs. Takes st->mu; calls the allocator, so never
 * from the fault handler's paths. */
void pg_stream_trim(pg_stream_t *st);
/* Marks what completed on st's FIFO (giving events back) and retires what the host is ordered
 * after, at most `max` accesses each (0 = all). */
void pg_stream_retire(pg_stream_t *st, size_t max);
/* st->mu held: the accesses from run_head on that have completed (up to max, 0 = all) give their
 * events back; returns how many. A stream completes in order: a few of them are asked (the
 * oldest, the newest, a binary search between), not each; those the host is ordered after have
 * completed without asking. */
size_t pg_stream_complete_locked(pg_stream_t *st, size_t max);
/* st->mu held: takes up to `max` (0 = all) accesses off the FIFO head: those the host is ordered
 * after (running ones included: they have completed), and past pg_unordered_cap the oldest
 * completed, unordered ones (counted in st->evicted_pending). Those on an owner list without a
 * retire hook owed are finished at once (pools); the others (in a set, or owed a hook call) are
 * chained on *later for pg_stream_retire_finish, which needs st->mu released. Returns how many
 * left the FIFO. */
size_t pg_stream_retire_locked(pg_stream_t *st, size_t max, pg_acc_t **later);
void pg_stream_retire_finish(pg_stream_t *st, pg_acc_t *later);
/* After a retirement released st->mu: `done` accesses left the FIFO, `evicted` of them unordered
 * (the counts and the stats hook). */
void pg_stream_retired(size_t done, size_t evicted);
/* Whether the host is ordered after access a: a synchronization, a successful query, an event
 * chain or a host function taught the host clock so. The only test that ends tracking. */
static inline bool pg_acc_ordered(const pg_acc_t *a) {
  return atomic_load_explicit(pg_host_clock_at(a->pub.stream_id), memory_order_relaxed) >=
         a->pub.seq;
}
/* One completion event per this many accesses of a stream (pg_tracker_set_event_every). */
extern unsigned pg_event_every;
/* The event a's completion can be asked of: its own, the one recorded late for it, or NULL (it
 * completes with the next access on its stream that has one). */
static inline cudaEvent_t pg_acc_event(pg_acc_t *a) {
  return a->pub.event ? a->pub.event : atomic_load_explicit(&a->late_event, memory_order_acquire);
}
/* Whether access a has physically completed: seen so before (done_stamp), or its event answers
 * now (never inside a host function, where CUDA calls are forbidden). Teaches nothing: what
 * pinguard's own queries find orders nothing. Marks it (done_stamp) when the event answers. */
bool pg_acc_done_query(pg_acc_t *a);
static inline bool pg_acc_done(pg_acc_t *a) {
  return atomic_load_explicit(&a->done_stamp, memory_order_acquire) != 0 || pg_acc_done_query(a);
}
/* Completed but unordered accesses a stream keeps (pg_tracker_set_unordered_cap); beyond it the
 * oldest are evicted (counted: pg_tracker_stat). */
extern size_t pg_unordered_cap;
/* Counts an event for the stats hook (pg_tracker_set_stat_hook), if one is set. */
void pg_tracker_count(pg_tracker_stat_t what, uint64_t n);
/* Whether an access on st enqueued now is ordered after a. */
bool pg_stream_ordered_after(const pg_stream_t *st, const pg_acc_t *a);
/* Fork: the stream map lock, then every stream's lock (0 prepare, 1 parent, 2 child). */
void pg_streams_lock_map(bool lock);
void pg_streams_atfork(int phase);
void pg_streams_reset_map_lock_child(void);
void pg_events_atfork(int phase);
void pg_hostfns_atfork(int phase);

static inline void pg_atomic_max(_Atomic uint64_t *v, uint64_t x) {
  uint64_t cur = atomic_load_explicit(v, memory_order_relaxed);
  while (cur < x &&
         !atomic_compare_exchange_weak_explicit(v, &cur, x, memory_order_relaxed,
                                                memory_order_relaxed)) {
  }
}

#endif /* PG_TRACKER_INTERNAL_H */
