/* pg_tracker.h: pinned regions, the in-flight table of asynchronous GPU accesses to them, and
 * the happens-before relation (vector clocks) that says which accesses are ordered or complete.
 * The tracker never links libcudart: the shim hands it the real CUDA functions it needs. */
#ifndef PG_TRACKER_H
#define PG_TRACKER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "pg_devops.h"
#include "pg_kinds.h"
#include "pg_shape.h"
#include "pg_stack.h"
#include "pg_stamp.h"

/* ---- setup ----------------------------------------------------------------------------------
 * The GPU operations the tracker performs come from the table the API layer fills
 * (pg_devops.h): events, and whether a stream is non-blocking. */

/* Copies *ops; call once, before any other thread uses the tracker. 0, or -1 if a required
 * operation (the event ones) is missing. */
int pg_tracker_init(const pg_devops_t *ops);

/* Guard-page hooks (optional, NULL to clear; set before tracking starts), called outside every
 * tracker lock. on_begin runs when an access piece starts being tracked: after it is indexed
 * (so a fault on the pages it protects finds the piece), before any thread can retire it; it is
 * given the region the piece lies in, as the tracker indexed it (so that it need not look it
 * up); it says whether it counted the piece; it may widen [*lo, *hi) to the range it
 * counted, which is what on_retire is then given. on_retire runs exactly once for each piece
 * on_begin counted: when it retires, or at once when its region went away before the piece could
 * be indexed. A piece whose region is removed while it is in flight gets no on_retire: removing a
 * region ends its bookkeeping (the guard code forgets the region's pages then). */
struct pg_region;
typedef bool (*pg_access_begin_fn)(uintptr_t *lo, uintptr_t *hi, pg_dir_t dir,
                                   const struct pg_region *reg, void *ctx);
typedef void (*pg_access_hook_fn)(uintptr_t lo, uintptr_t hi, pg_dir_t dir, void *ctx);
void pg_tracker_set_hooks(pg_access_begin_fn on_begin, pg_access_hook_fn on_retire, void *ctx);
/* Pieces in regions smaller than `bytes` never reach the hooks (0, the default: every piece
 * does): the guard code protects no region under its size threshold, so such a piece is tracked
 * without the hooks' bookkeeping (it is ready at once, as with no hooks). Set before tracking
 * starts, like the hooks. */
void pg_tracker_set_hook_min_region(size_t bytes);

/* Counters the tracker keeps for the stats (the policy's, which it does not link): retired,
 * ordered before the host and no longer tracked; evicted, completed but never ordered, dropped
 * beyond a stream's cap. The hook (optional) is called outside every tracker lock. */
/* untracked: a copy's (untracked_kernel: a kernel's, its origin naming a function) access not
 * begun because its stream has no state (past the stream limit, or out of memory) or no
 * completion event could be had; its conflict check still ran. Once per begin call. */
typedef enum pg_tracker_stat {
  PG_TRACKER_RETIRED,
  PG_TRACKER_EVICTED,
  PG_TRACKER_UNTRACKED,
  PG_TRACKER_UNTRACKED_KERNEL
} pg_tracker_stat_t;
void pg_tracker_set_stat_hook(void (*fn)(pg_tracker_stat_t what, uint64_t n));
/* How many accesses that completed without being ordered each stream keeps (default
 * PG_UNORDERED_CAP_DEFAULT; at least 1). Past it the oldest are evicted, which can hide a
 * report: counted, never silent. */
#define PG_UNORDERED_CAP_DEFAULT 4096
void pg_tracker_set_unordered_cap(size_t cap);
/* One completion event per `every` accesses of a stream (default 1, at least 1): each other
 * access completes when the next one on its stream that holds an event does (a stream runs in
 * order), and until one does its completion is not known (pg_access_cover). Pieces the begin
 * hook guards always hold their own. Set before any access begins. */
void pg_tracker_set_event_every(unsigned every);
/* At most this many streams alive at once (default and upper bound 1,048,576; tests lower it to
 * reach the limit). A stream past it is not tracked: warned about once, its accesses counted
 * (PG_TRACKER_UNTRACKED), its conflict checks made as for a stream ordered after nothing. */
void pg_tracker_set_max_streams(unsigned n);

/* ---- pinned regions (lock-free lookups) -------------------------------------------------- */
typedef struct pg_region {
  uintptr_t base;
  size_t size;
  pg_pin_how_t how;
  unsigned flags;       /* cudaHostAlloc / cudaHostRegister flags */
  uint64_t id;          /* unique for the life of the process; 0 never used */
} pg_region_t;

/* Adds [base, base+size). Overlapping or duplicate adds are kept side by side. 0, or -1 (OOM). */
int pg_region_add(const void *base, size_t size, pg_pin_how_t how, unsigned flags,
                  const pg_stack_t *alloc_stack);
/* Removes the most recently added region starting exactly at base; its in-flight accesses stop
 * being tracked. 1 and *out (if non-NULL) filled, or 0 if none starts there. */
int pg_region_remove(const void *base, pg_region_t *out);
/* The same, also copying the region's allocation stack to *stack (if non-NULL), so that a caller
 * can add the region back should the unpinning call fail. */
int pg_region_remove_keep_stack(const void *base, pg_region_t *out, pg_stack_t *stack);
/* The region containing p (the latest-based one if several do): 1 and *out, or 0. */
int pg_region_find(const void *p, pg_region_t *out);
/* Regions overlapping [p, p+n), ascending by base: fills min(total, cap), returns total. */
size_t pg_region_find_range(const void *p, size_t n, pg_region_t *out, size_t cap);
/* The allocation stack of region id (still registered): 1 and *out, or 0. */
int pg_region_stack(uint64_t id, pg_stack_t *out);
size_t pg_region_count(void);

/* One lookup of the regions overlapping a span, for a caller that asks about the same span
 * several times (is it pinned, its conflicts, its begin): the *_at calls below reuse it while no
 * region was pinned or unpinned since it was made, and look again otherwise (or when more than
 * PG_LOOKUP_HITS regions overlap). */
#define PG_LOOKUP_HITS 4
typedef struct pg_lookup {
  uintptr_t lo, hi;
  unsigned long version;  /* the region index's version it was made at */
  size_t total;           /* regions overlapping [lo, hi) */
  struct {
    void *rec;
    uint64_t gen;
    uintptr_t base, end;
  } hits[PG_LOOKUP_HITS];
  void *stream;           /* pg_region_lookup_on's stream record, kept for the begin (or NULL) */
  bool quiet;             /* pg_region_lookup_on: nothing there conflicts with the new access */
} pg_lookup_t;
/* Fills *lk for [p, p+n); returns how many regions overlap it. */
size_t pg_region_lookup(const void *p, size_t n, pg_lookup_t *lk);
/* The region index's sequence number: odd while a writer is changing it; every change moves
 * it, and it never repeats. */
extern atomic_ulong pg_regions_seq;
/* Whether lookup lk is still current: no region was pinned or unpinned since it was made, and
 * it holds every region it found. */
static inline bool pg_lookup_current(const pg_lookup_t *lk) {
  return lk->total <= PG_LOOKUP_HITS && !(lk->version & 1) &&
         lk->version == atomic_load_explicit(&pg_regions_seq, memory_order_acquire);
}
/* The same, for a new access of direction dir on `stream`, and in the same call whether the
 * regions' summaries say it conflicts with nothing in flight (lk->quiet: what
 * pg_access_quiet_at(lk, stream) answers, and for a read also where other streams only read
 * the range).
 * The stream's record is kept in lk, so that pg_access_begin_at does not look it up again: the
 * lookup is for an op on `stream`, begun on it. */
size_t pg_region_lookup_on(const void *p, size_t n, cudaStream_t stream, pg_dir_t dir,
                           pg_lookup_t *lk);
/* A kernel's pointer parameter p, whose span runs to the end of the region holding it (the one
 * pg_region_find gives): the span's length (0: p lies in no region, *lk untouched), and *lk as
 * pg_region_lookup_on makes it for that span. *dir becomes PG_DIR_READ when the region is
 * registered read-only (pg_pin_is_read_only: the device cannot write it). One index search,
 * none when the region answered this thread's last lookup. */
size_t pg_region_lookup_rest_on(const void *p, cudaStream_t stream, pg_dir_t *dir,
                                pg_lookup_t *lk);

/* ---- the access table ------------------------------------------------------------------------
 * An access is recorded per region it touches ("piece"), each with its own completion event.
 * It is tracked until the host is ordered after it (a sync, a successful query, an event chain,
 * a host function's position: the happens-before relation below), not until it finishes:
 * a conflict with an access that finished but that nothing ordered is a race all the same. Its
 * completion only gives its event back, and decides what enforce waits for. */
typedef struct pg_origin {
  const char *what;     /* static text, e.g. "copy device->host" or the kernel's name */
  const void *func;     /* kernel function, NULL for copies */
} pg_origin_t;

typedef struct pg_access {
  uint64_t id;          /* unique per piece */
  uint64_t op;          /* id of the first piece of the same GPU operation */
  uintptr_t lo, hi;     /* host range [lo, hi), clipped to the region */
  pg_dir_t dir;
  cudaStream_t stream;  /* as passed to pg_access_begin */
  uint32_t stream_id;   /* dense id (vector clock index) */
  int device;           /* the stream's device */
  uint64_t seq;         /* position in the stream's order */
  cudaEvent_t event;    /* recorded on the stream right after the access was enqueued (once it
                         * completed, the stream may have recorded it again for a later access:
                         * waiting on it still covers this one); NULL for an access begun without
                         * one (pg_tracker_set_event_every) until pg_access_cover finds one */
  uint64_t enqueue_stamp; /* pg_stamp() at the begin: pg_stamp_age_ns gives its age */
  uintptr_t region_base;
  size_t region_size;
  pg_origin_t origin;
  /* Filled by the queries: whether it had physically completed when found (unordered all the
   * same), and since when (pg_stamp(); 0 if not). */
  bool completed;
  uint64_t completed_stamp;
  pg_stack_t stack;     /* the enqueuing call site */
} pg_access_t;

/* After the real call enqueued the access on stream (never a capturing stream): records a pool
 * event on it and tracks the parts of [p, p+n) that lie in regions. Returns pieces tracked
 * (0: no region there), or -1 when no event could be had (the access is then not tracked). */
int pg_access_begin(const void *p, size_t n, pg_dir_t dir, cudaStream_t stream,
                    const pg_origin_t *origin, const pg_stack_t *stack);
/* The same, for the span of lookup *lk (made by pg_region_lookup). */
int pg_access_begin_at(const pg_lookup_t *lk, pg_dir_t dir, cudaStream_t stream,
                       pg_origin_t origin, const pg_stack_t *stack);
/* Unordered accesses overlapping [p, p+n) (the host not ordered after them: running, or
 * completed without an order): all of them, or only those that may write (writes_only). Fills
 * min(total, cap) of out, returns total. */
size_t pg_inflight_query(const void *p, size_t n, int writes_only, pg_access_t *out, size_t cap);
/* Before enqueuing an access (dir) to [p, p+n) on stream: the accesses from other streams it
 * would race with (RAW/WAR/WAW; read/read never), i.e. not ordered before it, running or not. */
size_t pg_access_conflicts(const void *p, size_t n, pg_dir_t dir, cudaStream_t stream,
                           pg_access_t *out, size_t cap);
size_t pg_access_conflicts_at(const pg_lookup_t *lk, pg_dir_t dir, cudaStream_t stream,
                              pg_access_t *out, size_t cap);
/* The common case of pg_access_conflicts_at, from the regions' summaries alone (no lock): true
 * when it would certainly return 0 (nothing in flight in lk's regions but stream's own
 * accesses); false when the full check must run. */
bool pg_access_quiet_at(const pg_lookup_t *lk, cudaStream_t stream);
/* What pg_inflight_query (PG_QUERY_ANY, PG_QUERY_WRITES) or pg_access_conflicts
 * (PG_QUERY_CONFLICTS, with dir and stream) would find, less what flags leave out. */
typedef enum pg_query_kind { PG_QUERY_ANY, PG_QUERY_WRITES, PG_QUERY_CONFLICTS } pg_query_kind_t;
/* PG_FIND_RUNNING: leave out those that completed. PG_FIND_GUARDING: leave out those whose guard
 * pages pg_access_unguard let go (a fault's question: which accesses make this page fault). */
enum { PG_FIND_RUNNING = 1, PG_FIND_GUARDING = 2 };
size_t pg_access_find(pg_query_kind_t kind, unsigned flags, const void *p, size_t n,
                      pg_dir_t dir, cudaStream_t stream, pg_access_t *out, size_t cap);
/* After a CPU access that faulted on a's guard pages was reported (and, in enforce, a waited
 * for): a stops guarding its pages, which open unless another access still guards them. It stays
 * tracked, unordered, for every other check. */
void pg_access_unguard(const pg_access_t *a);
/* Blocks until the access *a completed (its event; at once when a->completed). Orders nothing:
 * the access stays unordered for the host. False: the event could not be waited for (none:
 * pg_access_cover first). */
bool pg_access_wait(const pg_access_t *a);
/* For a found access that holds no event (event NULL, not completed; pg_tracker_set_event_every):
 * sets a->event to the event of the next access on its stream that has one, whose completion
 * implies a's. With none yet and may_record (never in a signal handler, a host function or while
 * any stream captures), records one now on a's stream, for the newest access there: it also
 * covers whatever the stream enqueued since, so its completion may come later than a's. Then
 * asks it, and sets a->completed when it completed (or a has retired meanwhile). True when
 * a->event or a->completed is set. */
bool pg_access_cover(pg_access_t *a, bool may_record);
/* Each stream: gives back the events of accesses that completed (asks the oldest running one,
 * and when it completed, a few more: pg_stream_complete_locked), and retires those the host is
 * ordered after. */
void pg_tracker_retire(void);
size_t pg_tracker_inflight_count(void);

/* ---- pitched copies: strided accesses (pg_shape.h) -------------------------------------------
 * One side of a 2D or 3D copy touches only its rows, not the gaps between them. These calls are
 * the ones above for such a span: its hull is [shape->base, pg_shape_end(shape)), and only the
 * shape's bytes count, on either side of a check (an access begun shaped is tested against every
 * later query by its shape, and its guard pages are only the pages holding its bytes). */
int pg_access_begin_shaped(const pg_shape_t *shape, pg_dir_t dir, cudaStream_t stream,
                           const pg_origin_t *origin, const pg_stack_t *stack);
/* pg_access_find for the bytes of shape. */
size_t pg_access_find_shaped(pg_query_kind_t kind, unsigned flags, const pg_shape_t *shape,
                             pg_dir_t dir, cudaStream_t stream, pg_access_t *out, size_t cap);
/* A CPU fault at byte `at`: pg_access_find over [p, p+n) (the page around it), except that a
 * shaped access counts only when it touches `at` itself (the CPU touched a gap byte of a page that
 * also holds rows: no conflict). A shaped access guards every page holding one of its bytes: the
 * guard-page hooks are called run by run, never for a page of gap bytes only. */
size_t pg_access_find_at(pg_query_kind_t kind, unsigned flags, const void *p, size_t n,
                         uintptr_t at, pg_dir_t dir, cudaStream_t stream, pg_access_t *out,
                         size_t cap);

/* ---- happens-before: call after each successful real call ---------------------------------- */
/* Optional: the flags a stream was created with (else stream_get_flags is asked once). */
void pg_hb_stream_flags(cudaStream_t s, unsigned flags);
void pg_hb_event_record(cudaEvent_t e, cudaStream_t s);        /* cudaEventRecord[WithFlags] */
void pg_hb_stream_wait_event(cudaStream_t s, cudaEvent_t e);   /* cudaStreamWaitEvent */
void pg_hb_event_completed(cudaEvent_t e);    /* cudaEventSynchronize, or query == success */
/* A stream memory operation wrote `value` (width 4 or 8 bytes) to the pinned host word at addr,
 * after the work enqueued on s before it: a flag protocol, invisible to CUDA, that the CPU polls.
 * Once the word is seen to hold the value (pinguard reads it, as the polling CPU does), the host
 * is ordered after that work. Each stream keeps its latest such write. */
void pg_hb_flag_written(cudaStream_t s, const void *addr, uint64_t value, unsigned width);
/* Learns what the pending flag writes say (each stream's latest): cheap while there are none.
 * Called before every query. */
void pg_hb_poll_flags(void);
/* The program itself waited for access a (through pinguard: the pinguard_wait annotation), and it
 * completed: the host is ordered after it and after what its stream did before it. */
void pg_hb_access_waited(const pg_access_t *a);
void pg_hb_event_destroyed(cudaEvent_t e);
void pg_hb_stream_destroyed(cudaStream_t s);
/* Untracked work enqueued on s (a kernel with no host pointer, a device-to-device copy): needed
 * only for the legacy default stream's implicit ordering, on the legacy stream or a blocking
 * stream. */
void pg_hb_enqueue(cudaStream_t s);
/* Set once pinguard met some device's legacy stream (an op, a synchronize or a query there):
 * until then it holds no work pinguard knows of, an untracked op on another stream has nothing
 * to join there, and costs only this load (pg_untracked_op). */
extern _Atomic bool pg_hb_legacy_used;
/* Host syncs come in two halves, because other threads may enqueue while the call blocks: the
 * snapshot (thread-local) is taken before the real call and learned after it succeeded. */
void pg_hb_sync_prepare(cudaStream_t s);      /* before cudaStreamSynchronize / cudaStreamQuery */
void pg_hb_sync_prepare_device(void);  /* before cudaDeviceSynchronize: the current device's */
void pg_hb_sync_done(int succeeded);          /* after either */

/* ---- host functions: CPU work a stream runs in its own order -------------------------------
 * A host function runs after the work enqueued on its stream before it, and the work after it
 * waits for it to return. Its position in the stream's order is fixed when it is enqueued. */
typedef struct pg_hostfn_pos {
  uint32_t stream_id;   /* 0: unknown (no position; nothing is ordered by it) */
  uint64_t seq;
  struct pg_hostfn_rec *rec; /* which other streams' work is ordered after it (tracker-owned) */
} pg_hostfn_pos_t;
/* Calls enqueue(arg) (the real cudaLaunchHostFunc) under the stream's lock, so that its position
 * is exactly where the runtime put it, and fills *pos. Returns what enqueue returned. On
 * success, pg_hb_hostfn_leave must follow pg_hb_hostfn_enter once (it frees pos->rec). */
cudaError_t pg_hb_hostfn_enqueue(cudaStream_t s, cudaError_t (*enqueue)(void *), void *arg,
                                 pg_hostfn_pos_t *pos);
/* On the thread that runs the host function, around it. While inside: the accesses enqueued on
 * its stream before it are known complete; accesses after it in stream order are not in flight
 * for this thread's CPU accesses (queries leave them out); and the tracker makes no CUDA call
 * (CUDA forbids them in a host function). */
void pg_hb_hostfn_enter(const pg_hostfn_pos_t *pos);
void pg_hb_hostfn_leave(void);
/* Whether access a (on another stream, or later on the same one) is ordered after the host
 * function at pos: a stream that waited, through events or the legacy stream, for work queued
 * after it, and then enqueued a. */
bool pg_hb_after_hostfn(const pg_hostfn_pos_t *pos, uint32_t stream_id, uint64_t seq);
bool pg_hb_in_hostfn(void);

/* ---- fork ------------------------------------------------------------------------------------ */
void pg_tracker_atfork_prepare(void);   /* takes every tracker lock */
void pg_tracker_atfork_parent(void);    /* releases them */
void pg_tracker_atfork_child(void);     /* releases them; forgets in-flight work, keeps regions */

#endif /* PG_TRACKER_H */
