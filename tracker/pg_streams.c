/* pg_streams.c: happens-before between streams and the host, with vector clocks as in
 * PyTorch's CUDA sanitizer: dense stream ids, per-stream sequence numbers, per-stream clocks,
 * recorded events' clock snapshots, the host's clock, and per-stream FIFO retirement. */
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pg_tls.h"
#include "pg_tracker_internal.h"

/* ---- the stream lock's slow paths (pg_lock.h) ----------------------------------------------- */
void pg_lock_wait(pg_lock_t *l) {
  /* Marked contended (2) whoever holds it, so that its release wakes a sleeper. */
  while (atomic_exchange_explicit(&l->v, 2, memory_order_acquire) != 0)
    syscall(SYS_futex, &l->v, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
}

void pg_lock_wake(pg_lock_t *l) { syscall(SYS_futex, &l->v, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0); }

/* The per-id table's first chunk is static: a process with up to PG_ID_CHUNK streams allocates
 * none. */
static pg_id_chunk_t g_chunk0;
_Atomic(pg_id_chunk_t *) pg_id_chunks[PG_ID_CHUNKS] = {&g_chunk0};
atomic_uint pg_nids = 1;
pg_stream_t pg_stream_untracked = {.id = PG_UNTRACKED_ID};
_Atomic(pg_stream_t *) pg_legacy[PG_MAX_DEVICES];
_Atomic uint64_t pg_legacy_version[PG_MAX_DEVICES];
_Atomic bool pg_hb_legacy_used;
_Atomic uint64_t pg_blocking_version[PG_MAX_DEVICES];

#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define ST(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)

/* Ids are below this (pg_tracker_set_max_streams). */
static atomic_uint g_max_ids = PG_MAX_STREAMS;
void pg_tracker_set_max_streams(unsigned n) {
  ST(g_max_ids, n < PG_MAX_STREAMS ? n + 1 : PG_MAX_STREAMS); /* id 0 is never used */
}

/* Stream map: handle -> state. Read-locked only on a thread's cache miss. */
static pthread_rwlock_t g_map_lock = PTHREAD_RWLOCK_INITIALIZER;
static pg_stream_t *g_map;
static pg_stream_t *g_free_streams;
atomic_ulong pg_stream_map_gen;    /* bumped on destroy: invalidates the thread caches */
__thread pg_stream_cache_t pg_stream_cache[PG_STREAM_CACHE];
__thread pg_stream_cache_t pg_stream_last;
/* The calling thread's per-thread default streams, one per device (allocated at first use). */
static __thread pg_stream_t **t_per_thread;
static pthread_key_t g_ptds_key;
static pthread_once_t g_ptds_once = PTHREAD_ONCE_INIT;

/* Recorded application events: handle -> clock snapshot. */
typedef struct ev_snap {
  cudaEvent_t e;
  size_t len, cap;
  pg_clock_pair_t *clock;      /* the recording stream's clock entries */
  UT_hash_handle hh;
} ev_snap_t;
static pthread_mutex_t g_ev_mu = PTHREAD_MUTEX_INITIALIZER;
static ev_snap_t *g_events;

/* Per-thread buffers of clock entries, on the heap (kept for the thread's next use, freed at
 * its exit): `sync`, the host sync in progress on this thread (pg_hb_sync_prepare ..
 * pg_hb_sync_done), and `tmp`, an event's snapshot being learned. Out of memory, a sync teaches
 * nothing: later accesses look unordered, never wrongly ordered. Never the fault handler's. */
typedef struct pair_buf {
  pg_clock_pair_t *p;
  size_t n, cap;
} pair_buf_t;
typedef struct thread_bufs {
  pair_buf_t sync, tmp;
} thread_bufs_t;
static __thread thread_bufs_t *t_bufs;
static pthread_key_t g_bufs_key;
static pthread_once_t g_bufs_once = PTHREAD_ONCE_INIT;
static void free_bufs(void *p) {
  thread_bufs_t *b = p;
  t_bufs = NULL;
  free(b->sync.p);
  free(b->tmp.p);
  free(b);
}
static void make_bufs_key(void) { pthread_key_create(&g_bufs_key, free_bufs); }
static thread_bufs_t *bufs(void) {
  if (__builtin_expect(t_bufs != NULL, 1)) return t_bufs;
  pthread_once(&g_bufs_once, make_bufs_key);
  if ((t_bufs = calloc(1, sizeof *t_bufs))) pthread_setspecific(g_bufs_key, t_bufs);
  return t_bufs;
}
/* Room for `more` entries past b->n; false on out of memory. */
static bool pairs_reserve(pair_buf_t *b, size_t more) {
  if (b->n + more <= b->cap) return true;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < b->n + more) cap *= 2;
  pg_clock_pair_t *p = realloc(b->p, cap * sizeof *p);
  if (!p) return false;
  b->p = p;
  b->cap = cap;
  return true;
}

/* ---- devices ---------------------------------------------------------------------------------
 * With one device (or no way to ask how many) every stream is device 0's and nothing is asked:
 * the one-device process pays nothing. With several, the default-stream handles mean a
 * different stream on each device, so resolving one asks the thread's current device. */
static atomic_int g_ndevices; /* 0: not asked yet */

static int device_count(void) {
  int n = atomic_load_explicit(&g_ndevices, memory_order_relaxed);
  if (n) return n;
  n = 1;
  int c = 0;
  if (pg_ops.device_count && pg_ops.current_device && pg_ops.device_count(&c) == PG_DEV_OK &&
      c > 1)
    n = c;
  atomic_store_explicit(&g_ndevices, n, memory_order_relaxed);
  return n;
}

int pg_current_device(void) {
  if (device_count() == 1) return 0;
  int d = 0;
  if (pg_ops.current_device(&d) != PG_DEV_OK || d < 0) d = 0;
  return d;
}

/* The device of a stream the application created: the runtime's answer, else the current
 * device (right when asked at its creation, which is when the shim tells the tracker its flags). */
static int stream_device_of(cudaStream_t s) {
  if (device_count() == 1) return 0;
  int d = -1;
  if (pg_ops.stream_device && pg_ops.stream_device(s, &d) == PG_DEV_OK && d >= 0) return d;
  return pg_current_device();
}

/* ---- stream states -------------------------------------------------------------------------- */
static void on_thread_exit(void *p) {
  pg_stream_t **per_dev = p;
  for (int d = 0; d < PG_MAX_DEVICES; d++) {
    pg_stream_t *st = per_dev[d];
    if (!st) continue;
    ST(st->dead, true);
    pg_stream_retire(st, 0);
  }
  t_per_thread = NULL; /* a later use on this thread starts over (and gets here again) */
  free(per_dev);
}
static void make_ptds_key(void) { pthread_key_create(&g_ptds_key, on_thread_exit); }

/* Map lock held for writing. */
static pg_stream_t *stream_new(cudaStream_t h, bool blocking, bool legacy, int device) {
  pg_stream_t *st = g_free_streams;
  if (st) {
    g_free_streams = st->next_free;
    pg_lock(&st->mu);
    /* Its idle events belong to its old device: a stream of another device cannot record them.
     * Drained, so every event it owns is idle in the pool. */
    if (LD(st->device) != device) {
      while (st->npool) pg_ops.event_destroy(st->pool[--st->npool]);
      st->nevents = 0;
    }
    /* The old owner's work all retired: the host knows it complete, and the sequence goes on
     * from there, so clock entries naming this id stay true. */
    pg_atomic_max(pg_host_clock_at(st->id), LD(st->own));
    pg_clock_tab_t *t = atomic_load_explicit(&st->clk, memory_order_relaxed);
    for (unsigned i = 0; t && i <= t->mask; i++) ST(t->e[i].seq, 0);
    pg_unlock(&st->mu);
  } else {
    unsigned id = LD(pg_nids);
    if (id >= LD(g_max_ids)) return NULL;
    pg_id_chunk_t *c = atomic_load_explicit(&pg_id_chunks[id / PG_ID_CHUNK], memory_order_acquire);
    if (!c) { /* ids are taken in order: a chunk is needed at its first id */
      if (!(c = calloc(1, sizeof *c))) return NULL;
      atomic_store_explicit(&pg_id_chunks[id / PG_ID_CHUNK], c, memory_order_release);
    }
    st = calloc(1, sizeof(*st));
    if (!st) return NULL;
    atomic_init(&st->mu.v, 0);
    st->id = id;
    atomic_store_explicit(&c->stream[id % PG_ID_CHUNK], st, memory_order_release);
    atomic_store_explicit(&pg_nids, id + 1, memory_order_release);
  }
  st->handle = h;
  ST(st->device, device);
  ST(st->joined_version, legacy ? UINT64_MAX : 0);
  st->recycled = false;
  st->next_free = NULL;
  ST(st->blocking, blocking);
  ST(st->legacy, legacy);
  ST(st->dead, false);
  return st;
}

static pg_stream_t *per_thread_stream(int device) {
  if (t_per_thread && t_per_thread[device]) return t_per_thread[device];
  if (!t_per_thread) {
    pthread_once(&g_ptds_once, make_ptds_key);
    if (!(t_per_thread = calloc(PG_MAX_DEVICES, sizeof *t_per_thread))) return NULL;
    pthread_setspecific(g_ptds_key, t_per_thread);
  }
  pthread_rwlock_wrlock(&g_map_lock);
  pg_stream_t *st = stream_new(cudaStreamPerThread, true, false, device);
  pthread_rwlock_unlock(&g_map_lock);
  return t_per_thread[device] = st;
}

static pg_stream_t *legacy_stream(int device) {
  pg_stream_t *st = atomic_load_explicit(&pg_legacy[device], memory_order_acquire);
  if (st) return st;
  pthread_rwlock_wrlock(&g_map_lock);
  st = atomic_load_explicit(&pg_legacy[device], memory_order_acquire);
  if (!st && (st = stream_new(0, true, true, device))) {
    atomic_store_explicit(&pg_legacy[device], st, memory_order_release);
    atomic_store_explicit(&pg_hb_legacy_used, true, memory_order_relaxed);
  }
  pthread_rwlock_unlock(&g_map_lock);
  return st;
}

/* A stream the application created (never a default-stream handle). */
static pg_stream_t *lookup_or_add(cudaStream_t s, int known_flags, unsigned flags) {
  pg_stream_t *st = NULL;
  pthread_rwlock_rdlock(&g_map_lock);
  HASH_FIND(hh, g_map, &s, sizeof(s), st);
  pthread_rwlock_unlock(&g_map_lock);
  if (st) return st;
  int device = stream_device_of(s);
  if (device >= PG_MAX_DEVICES) return NULL;
  if (!known_flags) {
    flags = 0; /* unknown: blocking, the default, which can only hide conflicts */
    bool nonblocking = false;
    if (pg_ops.stream_nonblocking && pg_ops.stream_nonblocking(s, &nonblocking) == PG_DEV_OK &&
        nonblocking)
      flags = cudaStreamNonBlocking;
  }
  pthread_rwlock_wrlock(&g_map_lock);
  HASH_FIND(hh, g_map, &s, sizeof(s), st);
  if (!st && (st = stream_new(s, !(flags & cudaStreamNonBlocking), false, device))) {
    pg_hash_oom = 0;
    HASH_ADD(hh, g_map, handle, sizeof(st->handle), st);
    if (pg_hash_oom) {
      ST(st->dead, true);
      st->recycled = true;
      st->next_free = g_free_streams;
      g_free_streams = st;
      st = NULL;
    }
  }
  pthread_rwlock_unlock(&g_map_lock);
  return st;
}

/* No state could be had for a stream: warned about once; its ops are counted where they would
 * have been tracked (pg_stream_untracked_op). */
static atomic_bool g_untracked_warned;
static pg_stream_t *untracked(void) {
  if (!atomic_exchange_explicit(&g_untracked_warned, true, memory_order_relaxed)) {
    static const char msg[] =
        "pinguard: WARNING: a stream could not be tracked (more than 1048576 streams alive, "
        "out of memory, or a device past the limit); its copies and kernels are checked as "
        "ordered after nothing but not tracked (counted: accesses_untracked)\n";
    ssize_t r = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)r;
  }
  return &pg_stream_untracked;
}

void pg_stream_untracked_op(bool kernel) {
  pg_tracker_count(kernel ? PG_TRACKER_UNTRACKED_KERNEL : PG_TRACKER_UNTRACKED, 1);
}

/* The larger handle cache, in a per-thread block (pg_tls.h): two-way set-associative (a handle
 * goes in either entry of its pair: two streams whose handles share a slot then do not evict
 * each other at every alternation), valid as the small one is (no stream destroyed since the
 * entry was filled). */
#define STREAM_CACHE_BIG 1024
/* The first entry of s's pair. Fibonacci hashing: a runtime's stream handles are often equally
 * spaced (one allocation size apart), which a shift-and-xor maps onto few slots. */
static inline unsigned stream_cache_big_slot(cudaStream_t s) {
  uint64_t k = (uint64_t)(uintptr_t)s * UINT64_C(0x9E3779B97F4A7C15);
  return (unsigned)(k >> 55) % (STREAM_CACHE_BIG / 2) * 2;
}
static inline bool stream_cache_hit(const pg_stream_cache_t *c, cudaStream_t s,
                                    unsigned long gen) {
  return c->st && c->h == s && c->gen == gen;
}

pg_stream_t *pg_stream_get_slow(cudaStream_t s) {
  if (s == 0 || s == cudaStreamLegacy || s == cudaStreamPerThread) {
    /* The legacy stream of a process with one device, once made: no device to ask. */
    if (s != cudaStreamPerThread && atomic_load_explicit(&g_ndevices, memory_order_relaxed) == 1) {
      pg_stream_t *st = atomic_load_explicit(&pg_legacy[0], memory_order_acquire);
      if (__builtin_expect(st != NULL, 1)) return st;
    }
    int device = pg_current_device();
    pg_stream_t *st = NULL;
    if (device < PG_MAX_DEVICES)
      st = s == cudaStreamPerThread ? per_thread_stream(device) : legacy_stream(device);
    return st ? st : untracked();
  }
  unsigned long gen = atomic_load_explicit(&pg_stream_map_gen, memory_order_acquire);
  /* A thread enqueueing on more streams than its small cache holds (many streams reading the
   * same weights, a pool of streams per device) finds most of them here, without the map. */
  pg_stream_cache_t *big = pg_tls_get(PG_TLS_STREAM_CACHE, STREAM_CACHE_BIG * sizeof *big);
  pg_stream_cache_t *b = big ? &big[stream_cache_big_slot(s)] : NULL;
  bool first = b && stream_cache_hit(&b[0], s, gen);
  pg_stream_t *st = first ? b[0].st : b && stream_cache_hit(&b[1], s, gen) ? b[1].st : NULL;
  if (!st) st = lookup_or_add(s, 0, 0);
  if (!st) return untracked();
  /* b[0] holds the pair's most recent handle: a hit in b[1] swaps the two, a miss evicts b[1]
   * (the one used least recently). */
  if (b && !first) {
    b[1] = b[0];
    b[0] = (pg_stream_cache_t){s, st, gen};
  }
  {
    pg_stream_cache_t *c = &pg_stream_cache[pg_stream_cache_slot(s)];
    c->h = s;
    c->st = st;
    c->gen = gen;
    pg_stream_last = *c;
  }
  return st;
}

void pg_hb_stream_flags(cudaStream_t s, unsigned flags) {
  if (s == 0 || s == cudaStreamLegacy || s == cudaStreamPerThread) return;
  pg_stream_t *st = lookup_or_add(s, 1, flags);
  if (st) ST(st->blocking, !(flags & cudaStreamNonBlocking));
}

/* ---- host functions in flight ---------------------------------------------------------------
 * A host function H at (stream X, seq h) orders after it whatever a stream enqueues once its
 * clock's entry for X reached h. Clocks move by joins (event waits, the legacy stream's implicit
 * ordering), so each join that carries some stream's entry past a pending host function's h
 * notes, in H's record, from which of its own positions that stream is ordered after H. Host
 * functions are rare: joins pay nothing while none is pending. */
typedef struct pg_hostfn_after {
  uint32_t stream_id;
  uint64_t from_seq;   /* that stream's accesses from this position on come after H */
} pg_hostfn_after_t;

struct pg_hostfn_rec {
  uint32_t stream_id;
  uint64_t seq;
  size_t nclock;
  pg_clock_pair_t *clock; /* its stream's clock at its position: all of it completes before it runs */
  size_t n, cap;
  pg_hostfn_after_t *after;
  struct pg_hostfn_rec *next, **pprev;
};

static pthread_mutex_t g_hf_mu = PTHREAD_MUTEX_INITIALIZER; /* a leaf: taken under any other */
static struct pg_hostfn_rec *g_hf_pending;
static atomic_uint g_hf_count;

/* st->mu held: st's entry for stream x moves from old to v. A pending host function of x
 * that this crosses learns from which of st's own positions st is ordered after it. */
static void hostfn_note_cross(pg_stream_t *st, uint32_t x, uint64_t old, uint64_t v) {
  pthread_mutex_lock(&g_hf_mu);
  for (struct pg_hostfn_rec *h = g_hf_pending; h; h = h->next) {
    if (h->stream_id != x || v < h->seq || old >= h->seq) continue; /* not crossed */
    if (h->n == h->cap) {
      size_t cap = h->cap ? 2 * h->cap : 4;
      pg_hostfn_after_t *p = realloc(h->after, cap * sizeof *p);
      if (!p) continue; /* that stream's later work then counts as unordered: a report at most */
      h->after = p;
      h->cap = cap;
    }
    h->after[h->n++] = (pg_hostfn_after_t){st->id, LD(st->own) + 1};
  }
  pthread_mutex_unlock(&g_hf_mu);
}

/* ---- sparse vector clocks (pg_tracker_internal.h) -------------------------------------------- */
size_t pg_clock_copy(const pg_stream_t *st, pg_clock_pair_t *out, size_t cap) {
  size_t k = 0;
  if (!cap) return 0;
  out[k++] = (pg_clock_pair_t){st->id, LD(st->own)};
  const pg_clock_tab_t *t = atomic_load_explicit(&st->clk, memory_order_acquire);
  for (unsigned i = 0; t && i <= t->mask && k < cap; i++) {
    uint32_t id = atomic_load_explicit(&t->e[i].id, memory_order_acquire);
    uint64_t v = LD(t->e[i].seq);
    if (id && v) out[k++] = (pg_clock_pair_t){id, v};
  }
  return k;
}

/* st->mu held: puts (id, seq) into t, which has room and no entry for id. */
static void clock_put(pg_clock_tab_t *t, uint32_t id, uint64_t seq) {
  unsigned i = pg_clock_slot(id, t->mask);
  while (LD(t->e[i].id)) i = (i + 1) & t->mask;
  ST(t->e[i].seq, seq);
  atomic_store_explicit(&t->e[i].id, id, memory_order_release); /* the entry, then its key */
  ST(t->n, LD(t->n) + 1);
}

/* st->mu held: a table twice as large with t's entries, published; NULL on out of memory. */
static pg_clock_tab_t *clock_grow(pg_stream_t *st, pg_clock_tab_t *t) {
  unsigned slots = t ? 2 * (t->mask + 1) : 8;
  pg_clock_tab_t *g = calloc(1, sizeof *g + slots * sizeof g->e[0]);
  if (!g) return NULL;
  g->mask = slots - 1;
  g->older = t; /* a reader may still be in it: kept */
  for (unsigned i = 0; t && i <= t->mask; i++) {
    uint32_t id = LD(t->e[i].id);
    if (id) clock_put(g, id, LD(t->e[i].seq));
  }
  atomic_store_explicit(&st->clk, g, memory_order_release);
  return g;
}

/* st->mu held: st's entry for id becomes at least seq. Out of memory, the entry is left as it
 * was: st then looks ordered after less than it is (a report at most, never a missed one). */
static void clock_raise(pg_stream_t *st, uint32_t id, uint64_t seq) {
  if (!seq || !id || id == st->id) return;
  pg_clock_tab_t *t = atomic_load_explicit(&st->clk, memory_order_relaxed);
  if (t) {
    for (unsigned i = pg_clock_slot(id, t->mask);; i = (i + 1) & t->mask) {
      uint32_t k = LD(t->e[i].id);
      if (!k) break;
      if (k != id) continue;
      uint64_t old = LD(t->e[i].seq);
      if (seq <= old) return;
      if (atomic_load_explicit(&g_hf_count, memory_order_acquire))
        hostfn_note_cross(st, id, old, seq);
      ST(t->e[i].seq, seq);
      return;
    }
  }
  if ((!t || 4 * (LD(t->n) + 1) > 3 * (t->mask + 1)) && !(t = clock_grow(st, t))) return;
  if (atomic_load_explicit(&g_hf_count, memory_order_acquire)) hostfn_note_cross(st, id, 0, seq);
  clock_put(t, id, seq);
}

/* ---- vector clocks -------------------------------------------------------------------------- */
/* st->mu held: st's clock joins src's (read without src's lock: a snapshot at least as late as
 * what ordered st after it). */
static void join_stream(pg_stream_t *st, const pg_stream_t *src) {
  clock_raise(st, src->id, LD(src->own));
  const pg_clock_tab_t *t = atomic_load_explicit(&src->clk, memory_order_acquire);
  for (unsigned i = 0; t && i <= t->mask; i++) {
    uint32_t id = atomic_load_explicit(&t->e[i].id, memory_order_acquire);
    if (id) clock_raise(st, id, LD(t->e[i].seq));
  }
}

static void join_pairs(pg_stream_t *st, const pg_clock_pair_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) clock_raise(st, p[i].id, p[i].seq);
}

/* The implicit ordering holds among the streams of one device: a device's legacy stream and its
 * blocking streams. Another device's legacy stream orders nothing here. */

/* The version of the other side of blocking stream st's implicit order, which
 * pg_stream_clock_changed moves: for the legacy stream its device's blocking streams', for any
 * other its device's legacy stream's. */
static inline uint64_t implicit_version(const pg_stream_t *st) {
  int device = LD(st->device);
  return atomic_load_explicit(LD(st->legacy) ? &pg_blocking_version[device]
                                             : &pg_legacy_version[device],
                              memory_order_relaxed);
}

/* Whether b (an id's stream, NULL when none) is one of the blocking streams whose work legacy
 * stream L's ops wait for: one of L's device, L left out. A destroyed one's work still runs. */
static inline bool legacy_peer(const pg_stream_t *b, const pg_stream_t *L) {
  return b && b != L && LD(b->blocking) && LD(b->device) == LD(L->device);
}

/* (st is blocking: the inline pg_stream_legacy_sync tested it.) */
void pg_stream_legacy_sync_blocking(pg_stream_t *st) {
  /* Read before the joins: a clock that moves during them moves the version again. */
  uint64_t v = implicit_version(st);
  if (v == LD(st->joined_version)) return; /* nothing moved on the other side: nothing to join */
  if (LD(st->legacy)) { /* legacy work waits for all prior work on its device's blocking streams */
    unsigned n = atomic_load_explicit(&pg_nids, memory_order_acquire);
    for (unsigned id = 1; id < n; id++) {
      pg_stream_t *b = pg_stream_by_id(id);
      if (legacy_peer(b, st)) join_stream(st, b);
    }
  } else { /* blocking work waits for all prior work on its device's legacy stream */
    pg_stream_t *L = atomic_load_explicit(&pg_legacy[LD(st->device)], memory_order_acquire);
    if (!L) return;
    join_stream(st, L);
  }
  /* After the joins, released: pg_hb_enqueue reads it without the lock. */
  atomic_store_explicit(&st->joined_version, v, memory_order_release);
  if (LD(st->legacy)) pg_stream_clock_changed(st);
}

void pg_host_learn(uint32_t id, uint64_t seq) {
  if (id && id < atomic_load_explicit(&pg_nids, memory_order_acquire))
    pg_atomic_max(pg_host_clock_at(id), seq);
}

/* The stamp of an access found complete at `now` (pg_stamp()): never 0, which means not found
 * complete. */
static inline uint64_t done_stamp_of(uint64_t now) { return now ? now : 1; }

/* Marks access a found complete at stamp (done_stamp_of), unless it already was. */
static inline void acc_mark_done(pg_acc_t *a, uint64_t stamp) {
  uint64_t none = 0;
  atomic_compare_exchange_strong_explicit(&a->done_stamp, &none, stamp, memory_order_acq_rel,
                                          memory_order_relaxed);
}

bool pg_acc_done_query(pg_acc_t *a) {
  if (pg_t_in_hostfn) return false; /* no CUDA call inside a host function */
  /* Once its event was given back a later access of the stream may have recorded it again: the
   * answer is then that one's, which comes no earlier than this one's. Without an event, only a
   * poll that reached a later one knows (done_stamp). */
  cudaEvent_t ev = pg_acc_event(a);
  if (!ev || pg_ops.event_query(ev) != PG_DEV_OK) return false;
  acc_mark_done(a, done_stamp_of(pg_stamp()));
  return true;
}

/* Whether st's clock, or its entry for its own work, covers access a. */
static inline bool clock_covers(const pg_stream_t *st, const pg_acc_t *a) {
  return a->pub.stream_id == st->id || pg_clock_get(st, a->pub.stream_id) >= a->pub.seq;
}

/* The legacy stream's implicit order, as the enqueue that follows a conflict check applies it
 * (pg_stream_legacy_sync_blocking), without applying it: the enqueue may still fail. Each clock
 * it would join counts, not only the work on the joined streams: a clock carries what its
 * stream's event waits learned, on any stream of any device. */
static bool legacy_join_covers(const pg_stream_t *st, const pg_acc_t *a) {
  int device = LD(st->device);
  if (!LD(st->legacy)) { /* a blocking stream: after the device's legacy stream's work */
    pg_stream_t *L = atomic_load_explicit(&pg_legacy[device], memory_order_acquire);
    return L && clock_covers(L, a);
  }
  /* The legacy stream: after the device's blocking streams' work, and all they were ordered
   * after. A walk of the streams, but only for an access that neither st's clock nor the host
   * is ordered after: one a report will name, most often. */
  if (a->blocking && a->pub.device == device) return true; /* on one of them */
  if (pg_acc_ordered(a)) return false; /* collect's next test: no walk for it */
  unsigned n = atomic_load_explicit(&pg_nids, memory_order_acquire);
  for (unsigned id = 1; id < n; id++) {
    const pg_stream_t *b = pg_stream_by_id(id);
    if (legacy_peer(b, st) && clock_covers(b, a)) return true;
  }
  return false;
}

bool pg_stream_ordered_after(const pg_stream_t *st, const pg_acc_t *a) {
  if (clock_covers(st, a)) return true;
  return LD(st->blocking) && legacy_join_covers(st, a);
}

/* ---- pools ------------------------------------------------------------------------------------
 * Retirement returns events to the pool, and the fault handler retires: the pool is grown when an
 * event is created (never from the handler), so that every event the stream owns fits in it. */
/* An event belongs to the device current at its creation, and only a stream of that device can
 * record it: it is created with the stream's device current, and the thread's device is put
 * back at once. */
static bool create_event_on(int device, cudaEvent_t *e) {
  int cur = 0;
  bool switch_dev = device_count() > 1 && pg_ops.set_device &&
                    pg_ops.current_device(&cur) == PG_DEV_OK && cur != device;
  if (switch_dev && pg_ops.set_device(device) != PG_DEV_OK) return false;
  bool ok = pg_ops.event_create(e) == PG_DEV_OK;
  if (switch_dev) pg_ops.set_device(cur);
  return ok;
}

bool pg_stream_take_event_new(pg_stream_t *st, cudaEvent_t *e) {
  if (st->nevents >= st->cap_pool) {
    size_t cap = st->cap_pool ? st->cap_pool * 2 : 16;
    cudaEvent_t *p = realloc(st->pool, cap * sizeof(*p));
    if (!p) return false;
    st->pool = p;
    st->cap_pool = cap;
  }
  if (!create_event_on(LD(st->device), e)) return false;
  st->nevents++;
  return true;
}

pg_acc_t *pg_stream_alloc_acc_new(void) { return malloc(sizeof(pg_acc_t)); }

/* ---- retirement ------------------------------------------------------------------------------- */
static void maybe_recycle(pg_stream_t *st) {
  if (!LD(st->dead) || LD(st->legacy)) return;
  pthread_rwlock_wrlock(&g_map_lock);
  pg_lock(&st->mu);
  bool drained = st->fifo_head == NULL;
  pg_unlock(&st->mu);
  if (drained && LD(st->dead) && !st->recycled) {
    st->recycled = true;
    st->next_free = g_free_streams;
    g_free_streams = st;
  }
  pthread_rwlock_unlock(&g_map_lock);
}

/* st->mu held: a retired access's record (and its event, if it still holds one) go back to
 * st's pools. */
static void recycle(pg_stream_t *st, pg_acc_t *a) {
  if (a->has_event) pg_stream_give_event(st, pg_acc_event(a));
  a->fifo_next = st->free_accs;
  st->free_accs = a;
  st->nfree_accs++;
}

/* What a stream's pools keep once its backlog drained: enough for bursts of this size (a
 * program's usual copies between two synchronizes) without a new allocation or event: 4096
 * records (about 2.5 MiB) and 1024 idle events; idle events beyond are destroyed at most
 * TRIM_EVENTS per call (each is a runtime call). */
enum { TRIM_KEEP_RECORDS = 4096, TRIM_KEEP_EVENTS = 1024, TRIM_EVENTS = 256 };

void pg_stream_trim(pg_stream_t *st) {
  pg_acc_t *spare = NULL;
  cudaEvent_t extra[TRIM_EVENTS];
  size_t nextra = 0;
  pg_lock(&st->mu);
  size_t keep = st->nfifo > TRIM_KEEP_RECORDS ? st->nfifo : TRIM_KEEP_RECORDS;
  while (st->nfree_accs > keep) {
    pg_acc_t *a = st->free_accs;
    st->free_accs = a->fifo_next;
    st->nfree_accs--;
    a->fifo_next = spare;
    spare = a;
  }
  /* Idle events beyond the steady state, a bounded number per call (each destroy is a runtime
   * call; none inside a host function, where CUDA calls are forbidden). */
  while (!pg_t_in_hostfn && st->npool > TRIM_KEEP_EVENTS && nextra < TRIM_EVENTS) {
    extra[nextra++] = st->pool[--st->npool];
    st->nevents--;
  }
  ST(st->trim_pending, st->npool > TRIM_KEEP_EVENTS); /* the next host sync trims on */
  pg_unlock(&st->mu);
  while (spare) {
    pg_acc_t *next = spare->fifo_next;
    free(spare);
    spare = next;
  }
  for (size_t i = 0; i < nextra; i++) pg_ops.event_destroy(extra[i]);
}

/* Whether access a has completed, as far as the host or pinguard knows or its event says. */
static inline __attribute__((always_inline)) bool acc_completed(pg_acc_t *a) {
  return pg_acc_ordered(a) || pg_acc_done(a);
}

/* Whether a poll can ask access a about its own completion: it holds an event, or the host or an
 * earlier look already knows. (An access begun without an event, pg_event_every, completes with
 * the next one on its stream that can be asked.) */
static inline bool acc_answers(pg_acc_t *a) {
  return a->has_event || pg_acc_ordered(a) ||
         atomic_load_explicit(&a->done_stamp, memory_order_relaxed) != 0;
}

/* How many of acc[0, k), running accesses of one stream that can be asked (acc_answers), oldest
 * first, acc[0] known complete, have completed. A stream completes in order, so they are a
 * prefix, and an access found complete says so of every one before it: the newest is asked (a
 * device that caught up costs one event query however many completed), and a binary search
 * between them only where it has not completed. */
static size_t completed_prefix(pg_acc_t *const *acc, size_t k) {
  if (k == 1 || acc_completed(acc[k - 1])) return k;
  size_t lo = 1, hi = k - 1; /* acc[lo - 1] completed, acc[hi] did not */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (acc_completed(acc[mid])) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* st->mu held: the accesses from run_head on that have completed give their events back (up to
 * max, 0 = all). Only the accesses that can be asked count (acc_answers): the first of them is
 * asked first (a device still behind costs that one event query); when it has completed, the
 * ones after it a batch of COMPLETE_BATCH at a time (completed_prefix asks a few of them), and
 * every access up to the last one found complete has completed. Those no query answered for are
 * stamped as found complete now. Those the host is ordered after have completed without asking,
 * and need no stamp: they are never reported again. The batch is small because the fault
 * handler retires, perhaps on a program's small alternate signal stack; it covers a begin's poll
 * at the shortest gap (2 * POLL_GAP_MIN accesses, pg_inflight.c) when every access has its
 * event. */
enum { COMPLETE_BATCH = 16 };
size_t pg_stream_complete_locked(pg_stream_t *st, size_t max) {
  size_t n = 0;
  for (;;) {
    pg_acc_t *acc[COMPLETE_BATCH];
    size_t k = 0, walked = 0;
    /* Not ready: still being begun by another thread; it and those after it complete next
     * time. */
    for (pg_acc_t *a = st->run_head; a && k < COMPLETE_BATCH && (!max || n + walked < max);
         a = a->fifo_next) {
      if (!atomic_load_explicit(&a->ready, memory_order_acquire)) break;
      walked++;
      if (!acc_answers(a)) continue;
      if (!k && !acc_completed(a)) return n; /* the oldest that answers is still running */
      acc[k++] = a;
    }
    if (!k) break;
    size_t done = completed_prefix(acc, k);
    pg_acc_t *last = acc[done - 1];
    uint64_t now = 0;
    for (pg_acc_t *a = st->run_head;; a = a->fifo_next) {
      if (!pg_acc_ordered(a) && !atomic_load_explicit(&a->done_stamp, memory_order_relaxed)) {
        if (!now) now = done_stamp_of(pg_stamp());
        acc_mark_done(a, now);
      }
      if (a->has_event) {
        pg_stream_give_event(st, pg_acc_event(a));
        a->has_event = false;
      }
      st->ndone++;
      n++;
      if (a == last) break;
    }
    st->run_head = last->fifo_next;
    if (done < k || k < COMPLETE_BATCH) break;
  }
  return n;
}

size_t pg_stream_retire_locked(pg_stream_t *st, size_t max, pg_acc_t **later) {
  size_t done = 0, evicted = 0;
  pg_acc_t **tail = later;
  while (*tail) tail = &(*tail)->fifo_next;
  /* Every access here is st's: what the host is ordered after is one bound (read once; should it
   * move meanwhile, the rest retires next time). */
  uint64_t ordered = atomic_load_explicit(pg_host_clock_at(st->id), memory_order_relaxed);
  for (; !max || done < max; done++) {
    pg_acc_t *a = st->fifo_head;
    if (!a) break;
    /* The ones the host is ordered after (which have completed: those from run_head on complete
     * here, in the same pass, as a synchronize's retirement wants), and beyond the cap the
     * oldest of the completed others. A running one not ready is still being begun. */
    if (a == st->run_head) {
      if (a->pub.seq > ordered || !atomic_load_explicit(&a->ready, memory_order_acquire)) break;
      st->run_head = a->fifo_next;
    } else {
      if (a->pub.seq > ordered) {
        if (st->ndone <= pg_unordered_cap) break;
        evicted++;
      }
      st->ndone--;
    }
    st->fifo_head = a->fifo_next;
    if (!st->fifo_head) {
      st->fifo_tail = NULL;
      ST(st->busy, false);
    }
    st->nfifo--;
    int where = atomic_load_explicit(&a->where, memory_order_relaxed);
    if (where == PG_IN_OWN) {
      pg_inflight_own_unlink(a); /* st owns the region: its lock is the list's */
    } else if (where == PG_IN_NONE) {
      atomic_store_explicit(&a->hooked, false, memory_order_relaxed); /* its region went away */
    }
    if (where == PG_IN_SET || atomic_load_explicit(&a->hooked, memory_order_relaxed)) {
      /* needs the region's lock, or the hook: later */
      a->fifo_next = NULL;
      *tail = a;
      tail = &a->fifo_next;
    } else {
      recycle(st, a);
    }
  }
  st->evicted_pending += evicted;
  return done;
}

void pg_stream_retire_finish(pg_stream_t *st, pg_acc_t *later) {
  for (pg_acc_t *a = later; a; a = a->fifo_next) {
    /* Only while its region lives: a removed region's pages were forgotten with it, and its
     * address range may already belong to a new region whose counts are not this access's. */
    bool live = atomic_load_explicit(&a->where, memory_order_relaxed) != PG_IN_SET ||
                pg_inflight_remove(a);
    if (live && atomic_exchange_explicit(&a->hooked, false, memory_order_relaxed))
      pg_acc_hook_retire(a);
  }
  pg_lock(&st->mu);
  while (later) {
    pg_acc_t *next = later->fifo_next;
    recycle(st, later);
    later = next;
  }
  pg_unlock(&st->mu);
}

/* pg_stream_retire, saying how many accesses left the FIFO. */
static size_t retire_count(pg_stream_t *st, size_t max) {
  pg_acc_t *later = NULL;
  pg_lock(&st->mu);
  /* What the host is ordered after goes at once; then what completed is marked, and past the
   * cap the oldest of it goes too. */
  size_t done = pg_stream_retire_locked(st, max, &later);
  if (pg_stream_complete_locked(st, max) && st->ndone > pg_unordered_cap)
    done += pg_stream_retire_locked(st, max, &later);
  size_t evicted = st->evicted_pending;
  st->evicted_pending = 0;
  pg_unlock(&st->mu);
  if (later) pg_stream_retire_finish(st, later);
  pg_stream_retired(done, evicted);
  if (LD(st->dead)) maybe_recycle(st);
  return done;
}

void pg_stream_retire(pg_stream_t *st, size_t max) { (void)retire_count(st, max); }

void pg_stream_retired(size_t done, size_t evicted) {
  if (!done) return;
  atomic_fetch_sub_explicit(&pg_inflight_total, done, memory_order_relaxed);
  pg_tracker_count(PG_TRACKER_RETIRED, done - evicted);
  if (evicted) pg_tracker_count(PG_TRACKER_EVICTED, evicted);
}

void pg_tracker_retire(void) {
  unsigned n = atomic_load_explicit(&pg_nids, memory_order_acquire);
  for (unsigned id = 1; id < n; id++) {
    pg_stream_t *st = pg_stream_by_id(id);
    if (st) pg_stream_retire(st, 0);
  }
}

/* The host learned the entries p[0..n) (duplicates allowed): the host clock moves, and each
 * stream named retires once (also one whose entry had already moved: another thread's sync may
 * have learned it without retiring yet), its pools trimmed once its backlog drained. A stream
 * with nothing on its FIFO costs a few loads: a device sync over many idle streams stays O(S). */
static atomic_ulong g_learn_gen;
static void host_learn_pairs(const pg_clock_pair_t *p, size_t n) {
  unsigned nids = atomic_load_explicit(&pg_nids, memory_order_acquire);
  for (size_t i = 0; i < n; i++)
    if (p[i].seq && p[i].id && p[i].id < nids) pg_atomic_max(pg_host_clock_at(p[i].id), p[i].seq);
  unsigned long mark = atomic_fetch_add_explicit(&g_learn_gen, 1, memory_order_relaxed) + 1;
  for (size_t i = 0; i < n; i++) {
    pg_stream_t *st = pg_stream_by_id(p[i].id);
    if (!st || !p[i].seq) continue;
    bool busy = atomic_load_explicit(&st->busy, memory_order_acquire);
    if (!busy && !LD(st->trim_pending)) continue;
    if (atomic_exchange_explicit(&st->learn_mark, mark, memory_order_relaxed) == mark) continue;
    if ((busy && retire_count(st, 0)) || LD(st->trim_pending)) pg_stream_trim(st);
  }
}

/* ---- happens-before entry points ------------------------------------------------------------- */
void pg_hb_enqueue(cudaStream_t s) {
  pg_stream_t *st = pg_stream_get(s);
  if (!pg_stream_tracked(st) || !LD(st->blocking)) return;
  /* Nothing new on the other side of the implicit order since st last joined it: no lock. */
  if (implicit_version(st) == atomic_load_explicit(&st->joined_version, memory_order_acquire))
    return;
  pg_lock(&st->mu);
  pg_stream_legacy_sync(st);
  pg_unlock(&st->mu);
}

/* g_ev_mu held: e's record, made if new (NULL on out of memory). */
static ev_snap_t *event_get(cudaEvent_t e) {
  ev_snap_t *ev = NULL;
  HASH_FIND(hh, g_events, &e, sizeof(e), ev);
  if (!ev && (ev = calloc(1, sizeof(*ev)))) {
    ev->e = e;
    pg_hash_oom = 0;
    HASH_ADD(hh, g_events, e, sizeof(ev->e), ev);
    if (pg_hash_oom) {
      free(ev);
      ev = NULL;
    }
  }
  return ev;
}

/* The event's snapshot is the recording stream's clock, O(its entries): the streams it was
 * ordered after, not every live one. */
void pg_hb_event_record(cudaEvent_t e, cudaStream_t s) {
  if (!e) return;
  pg_stream_t *st = pg_stream_get(s);
  pthread_mutex_lock(&g_ev_mu);
  ev_snap_t *ev = event_get(e);
  if (ev && !pg_stream_tracked(st)) ev->len = 0; /* orders nothing: can only hide conflicts */
  if (ev && pg_stream_tracked(st)) {
    pg_lock(&st->mu);
    pg_stream_legacy_sync(st); /* recording is an op: under legacy rules it waits too */
    size_t need = pg_clock_len(st);
    if (need > ev->cap) {
      pg_clock_pair_t *c = realloc(ev->clock, need * sizeof *c);
      if (c) {
        ev->clock = c;
        ev->cap = need;
      }
    }
    /* Out of memory: the event orders nothing, which can only hide conflicts. */
    ev->len = need <= ev->cap ? pg_clock_copy(st, ev->clock, need) : 0;
    pg_unlock(&st->mu);
  }
  pthread_mutex_unlock(&g_ev_mu);
}

void pg_hb_stream_wait_event(cudaStream_t s, cudaEvent_t e) {
  pg_stream_t *st = pg_stream_get(s);
  if (!pg_stream_tracked(st)) return;
  pthread_mutex_lock(&g_ev_mu); /* the lock order: events, then a stream */
  ev_snap_t *ev = NULL;
  HASH_FIND(hh, g_events, &e, sizeof(e), ev);
  pg_lock(&st->mu);
  /* A wait is an op of the legacy stream's implicit order only on the legacy stream itself, and
   * only for an event with a record: on a blocking stream, or for an event never recorded, it
   * waits for nothing implicitly (measured on an H200: bench/gpu/legacy_order.cu). */
  if (ev && LD(st->legacy)) pg_stream_legacy_sync(st);
  if (ev) join_pairs(st, ev->clock, ev->len);
  pg_stream_clock_changed(st);
  pg_unlock(&st->mu);
  pthread_mutex_unlock(&g_ev_mu);
}

void pg_hb_event_completed(cudaEvent_t e) {
  thread_bufs_t *b = bufs();
  if (!b) return;
  b->tmp.n = 0;
  pthread_mutex_lock(&g_ev_mu);
  ev_snap_t *ev = NULL;
  HASH_FIND(hh, g_events, &e, sizeof(e), ev);
  if (ev && pairs_reserve(&b->tmp, ev->len)) {
    memcpy(b->tmp.p, ev->clock, ev->len * sizeof *ev->clock);
    b->tmp.n = ev->len;
  }
  pthread_mutex_unlock(&g_ev_mu);
  host_learn_pairs(b->tmp.p, b->tmp.n);
}

/* ---- flag protocols ---------------------------------------------------------------------------
 * A stream memory operation's write to a pinned host word, which the CPU polls: when the CPU sees
 * the value, everything its stream did before the write has happened. pinguard cannot see the
 * CPU's load (the word's page is never guarded), so it reads the word itself before each query,
 * and learns the write's position once the word holds the value. A later write on the same
 * stream replaces an earlier one (it orders more). */
static atomic_uint g_flags_pending;

void pg_hb_flag_written(cudaStream_t s, const void *addr, uint64_t value, unsigned width) {
  pg_stream_t *st = pg_stream_get(s);
  if (!pg_stream_tracked(st) || !addr || (width != 4 && width != 8)) return;
  pg_lock(&st->mu);
  pg_stream_legacy_sync(st);
  uint64_t seq = LD(st->own) + 1; /* the write's own position in the stream */
  ST(st->own, seq);
  pg_stream_clock_changed(st);
  st->flag_addr = addr;
  st->flag_value = value;
  st->flag_width = width;
  st->flag_seq = seq;
  if (!atomic_exchange_explicit(&st->flag_pending, true, memory_order_release))
    atomic_fetch_add_explicit(&g_flags_pending, 1, memory_order_release);
  pg_unlock(&st->mu);
}

static bool flag_holds(const void *addr, unsigned width, uint64_t value) {
  if (width == 4) return __atomic_load_n((const uint32_t *)addr, __ATOMIC_ACQUIRE) == (uint32_t)value;
  return __atomic_load_n((const uint64_t *)addr, __ATOMIC_ACQUIRE) == value;
}

void pg_hb_poll_flags(void) {
  if (!atomic_load_explicit(&g_flags_pending, memory_order_acquire)) return;
  unsigned n = atomic_load_explicit(&pg_nids, memory_order_acquire);
  for (unsigned id = 1; id < n; id++) {
    pg_stream_t *st = pg_stream_by_id(id);
    if (!st || !atomic_load_explicit(&st->flag_pending, memory_order_acquire)) continue;
    pg_lock(&st->mu);
    bool seen = atomic_load_explicit(&st->flag_pending, memory_order_relaxed) &&
                flag_holds(st->flag_addr, st->flag_width, st->flag_value);
    if (seen) {
      pg_host_learn(st->id, st->flag_seq);
      atomic_store_explicit(&st->flag_pending, false, memory_order_relaxed);
      atomic_fetch_sub_explicit(&g_flags_pending, 1, memory_order_release);
    }
    pg_unlock(&st->mu);
  }
}

void pg_hb_access_waited(const pg_access_t *a) {
  pg_stream_t *st = pg_stream_by_id(a->stream_id);
  if (!st) return;
  pg_host_learn(a->stream_id, a->seq); /* a stream completes in order */
  if (st) pg_stream_retire(st, 0);
}

void pg_hb_event_destroyed(cudaEvent_t e) {
  pthread_mutex_lock(&g_ev_mu);
  ev_snap_t *ev = NULL;
  HASH_FIND(hh, g_events, &e, sizeof(e), ev);
  if (ev) {
    HASH_DEL(g_events, ev);
    free(ev->clock);
    free(ev);
  }
  pthread_mutex_unlock(&g_ev_mu);
}

void pg_hb_stream_destroyed(cudaStream_t s) {
  if (s == 0 || s == cudaStreamLegacy || s == cudaStreamPerThread) return;
  pg_stream_t *st = NULL;
  pthread_rwlock_wrlock(&g_map_lock);
  HASH_FIND(hh, g_map, &s, sizeof(s), st);
  if (st) {
    HASH_DEL(g_map, st);
    ST(st->dead, true);
    atomic_fetch_add_explicit(&pg_stream_map_gen, 1, memory_order_release);
  }
  pthread_rwlock_unlock(&g_map_lock);
  if (st) pg_stream_retire(st, 0); /* recycles it once its work has drained */
}

/* Adds st's clock (its own entry and what it was ordered after) to what the sync in progress
 * will teach the host. Without st's lock: pg_clock_copy copies at most this many, lock or not.
 * False when out of memory (what was added so far is true). */
static bool sync_add_stream(thread_bufs_t *b, const pg_stream_t *st) {
  const pg_clock_tab_t *t = atomic_load_explicit(&st->clk, memory_order_acquire);
  if (!t) { /* the common stream, ordered after no other: its own entry */
    if (!pairs_reserve(&b->sync, 1)) return false;
    b->sync.p[b->sync.n++] = (pg_clock_pair_t){st->id, LD(st->own)};
    return true;
  }
  size_t len = 1 + t->mask + 1;
  if (!pairs_reserve(&b->sync, len)) return false;
  b->sync.n += pg_clock_copy(st, b->sync.p + b->sync.n, len);
  return true;
}

/* The legacy stream's synchronize (or query) covers the work already on its device's blocking
 * streams too: CUDA's text promises only the stream's own work, but an H200 waits for theirs
 * (bench/gpu/legacy_order.cu), so a program that relies on it races with nothing. */
static void sync_add_blocking(thread_bufs_t *b, const pg_stream_t *L) {
  unsigned n = atomic_load_explicit(&pg_nids, memory_order_acquire);
  for (unsigned id = 1; id < n; id++) {
    const pg_stream_t *t = pg_stream_by_id(id);
    if (legacy_peer(t, L) && !sync_add_stream(b, t)) return;
  }
}

void pg_hb_sync_prepare(cudaStream_t s) {
  thread_bufs_t *b = bufs();
  if (!b) return;
  b->sync.n = 0;
  pg_stream_t *st = pg_stream_get(s);
  if (!pg_stream_tracked(st)) return;
  pg_lock(&st->mu);
  if (pairs_reserve(&b->sync, pg_clock_len(st)))
    b->sync.n = pg_clock_copy(st, b->sync.p, b->sync.cap);
  pg_unlock(&st->mu);
  if (LD(st->legacy)) sync_add_blocking(b, st);
}

/* cudaDeviceSynchronize waits for the current device's streams only (its default streams and
 * destroyed ones with work left included): the host then knows their work complete, and what that
 * work was ordered after, on any device. O(streams + their clocks' entries). */
void pg_hb_sync_prepare_device(void) {
  thread_bufs_t *b = bufs();
  if (!b) return;
  b->sync.n = 0;
  unsigned n = atomic_load_explicit(&pg_nids, memory_order_acquire);
  int device = pg_current_device();
  for (unsigned id = 1; id < n; id++) {
    pg_stream_t *st = pg_stream_by_id(id);
    if (!st || LD(st->device) != device) continue;
    if (!sync_add_stream(b, st)) break;
  }
}

void pg_hb_sync_done(int succeeded) {
  thread_bufs_t *b = t_bufs;
  if (!b) return;
  size_t n = b->sync.n;
  b->sync.n = 0;
  if (succeeded && n) host_learn_pairs(b->sync.p, n);
}

/* ---- host functions -------------------------------------------------------------------------- */
__thread bool pg_t_in_hostfn;
__thread pg_hostfn_pos_t pg_t_hostfn;

cudaError_t pg_hb_hostfn_enqueue(cudaStream_t s, cudaError_t (*enqueue)(void *), void *arg,
                                 pg_hostfn_pos_t *pos) {
  *pos = (pg_hostfn_pos_t){0, 0, NULL};
  pg_stream_t *st = pg_stream_get(s);
  struct pg_hostfn_rec *rec = pg_stream_tracked(st) ? calloc(1, sizeof *rec) : NULL;
  if (!rec) return enqueue(arg);
  /* Under the lock that orders completion events too: an access recorded after this point gets
   * a later sequence number, exactly as the runtime queues it after the host function. */
  pg_lock(&st->mu);
  pg_stream_legacy_sync(st);
  cudaError_t err = enqueue(arg);
  if (err == cudaSuccess) {
    uint64_t seq = LD(st->own) + 1;
    ST(st->own, seq);
    pg_stream_clock_changed(st);
    rec->stream_id = st->id;
    rec->seq = seq;
    size_t n = pg_clock_len(st);
    if ((rec->clock = malloc(n * sizeof *rec->clock))) rec->nclock = pg_clock_copy(st, rec->clock, n);
    /* Pending before the stream's lock is released: no event recorded after it can be waited
     * on before the record is there to note it. */
    pthread_mutex_lock(&g_hf_mu);
    rec->next = g_hf_pending;
    rec->pprev = &g_hf_pending;
    if (g_hf_pending) g_hf_pending->pprev = &rec->next;
    g_hf_pending = rec;
    atomic_fetch_add_explicit(&g_hf_count, 1, memory_order_release);
    pthread_mutex_unlock(&g_hf_mu);
    *pos = (pg_hostfn_pos_t){st->id, seq, rec};
  }
  pg_unlock(&st->mu);
  if (err != cudaSuccess) free(rec);
  return err;
}

bool pg_hb_after_hostfn(const pg_hostfn_pos_t *pos, uint32_t stream_id, uint64_t seq) {
  if (!pos->stream_id) return false;
  if (stream_id == pos->stream_id) return seq > pos->seq;
  if (!pos->rec) return false;
  bool after = false;
  pthread_mutex_lock(&g_hf_mu);
  for (size_t i = 0; i < pos->rec->n && !after; i++)
    after = pos->rec->after[i].stream_id == stream_id && seq >= pos->rec->after[i].from_seq;
  pthread_mutex_unlock(&g_hf_mu);
  return after;
}

void pg_hb_hostfn_enter(const pg_hostfn_pos_t *pos) {
  pg_t_hostfn = *pos;
  pg_t_in_hostfn = true;
  pg_stream_t *st = pg_stream_by_id(pos->stream_id);
  if (!st) return;
  /* Everything it is ordered after (its stream's earlier work, and what that stream waited for
   * through events or the legacy stream) has completed: the host knows, and it retires. */
  if (pos->rec && pos->rec->clock) host_learn_pairs(pos->rec->clock, pos->rec->nclock);
  pg_host_learn(pos->stream_id, pos->seq);
  pg_stream_retire(st, 0);
}

void pg_hb_hostfn_leave(void) {
  struct pg_hostfn_rec *rec = pg_t_hostfn.rec;
  pg_t_in_hostfn = false;
  pg_t_hostfn = (pg_hostfn_pos_t){0, 0, NULL};
  if (!rec) return;
  pthread_mutex_lock(&g_hf_mu);
  *rec->pprev = rec->next;
  if (rec->next) rec->next->pprev = rec->pprev;
  atomic_fetch_sub_explicit(&g_hf_count, 1, memory_order_release);
  pthread_mutex_unlock(&g_hf_mu);
  free(rec->after);
  free(rec->clock);
  free(rec);
}

bool pg_hb_in_hostfn(void) { return pg_t_in_hostfn; }

/* ---- fork ------------------------------------------------------------------------------------- */
static void each_stream(void (*fn)(pg_stream_t *)) {
  unsigned n = atomic_load_explicit(&pg_nids, memory_order_acquire);
  for (unsigned id = 1; id < n; id++) {
    pg_stream_t *st = pg_stream_by_id(id);
    if (st) fn(st);
  }
}
static void lock_stream(pg_stream_t *st) { pg_lock(&st->mu); }
static void unlock_stream(pg_stream_t *st) { pg_unlock(&st->mu); }

/* The child has no GPU work in flight: every access is dropped (its event belongs to the
 * parent's context, so it is forgotten, not destroyed) and the host knows all of it complete. */
static void reset_stream(pg_stream_t *st) {
  pg_acc_t *a = st->fifo_head;
  while (a) {
    pg_acc_t *next = a->fifo_next;
    free(a);
    a = next;
  }
  st->fifo_head = st->fifo_tail = st->run_head = NULL;
  ST(st->busy, false);
  st->nfifo = st->ndone = st->evicted_pending = st->nfree_accs = 0;
  if (atomic_exchange_explicit(&st->flag_pending, false, memory_order_relaxed))
    atomic_fetch_sub_explicit(&g_flags_pending, 1, memory_order_relaxed);
  while (st->free_accs) {
    a = st->free_accs;
    st->free_accs = a->fifo_next;
    free(a);
  }
  st->npool = 0;
  st->nevents = 0;
  pg_atomic_max(pg_host_clock_at(st->id), LD(st->own));
  pg_unlock(&st->mu);
}

void pg_streams_lock_map(bool lock) {
  if (lock) pthread_rwlock_wrlock(&g_map_lock);
  else pthread_rwlock_unlock(&g_map_lock);
}

/* A fork child cannot unlock the map lock its parent's thread took: glibc recognises a rwlock's
 * writer by thread id, which changed with the fork, and would treat the unlock as a reader's,
 * leaving the lock held for good (the next fork of that child would hang). The child is alone,
 * so it starts over with a fresh lock. */
void pg_streams_reset_map_lock_child(void) {
  pthread_rwlock_t fresh = PTHREAD_RWLOCK_INITIALIZER;
  memcpy(&g_map_lock, &fresh, sizeof fresh);
}

void pg_streams_atfork(int phase) {
  if (phase == 0) {
    each_stream(lock_stream);
  } else {
    each_stream(phase == 2 ? reset_stream : unlock_stream);
    if (phase == 2) atomic_store_explicit(&pg_inflight_total, 0, memory_order_relaxed);
  }
}

void pg_events_atfork(int phase) {
  if (phase == 0) pthread_mutex_lock(&g_ev_mu);
  else pthread_mutex_unlock(&g_ev_mu);
}

/* A leaf lock: taken last before fork, released first after. */
void pg_hostfns_atfork(int phase) {
  if (phase == 0) {
    pthread_mutex_lock(&g_hf_mu);
    return;
  }
  if (phase == 2) { /* the child runs none of the parent's host functions */
    g_hf_pending = NULL;
    atomic_store_explicit(&g_hf_count, 0, memory_order_relaxed);
  }
  pthread_mutex_unlock(&g_hf_mu);
}
