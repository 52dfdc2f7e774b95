/* pg_decide.c: the audit/enforce decisions (see pg_decide.h). Asks the tracker what is in flight
 * around each intercepted call, then waits for exactly those accesses (enforce) and/or reports
 * them (audit, and enforce with the time it waited). Never waits while any stream capture is
 * active: a host wait there would invalidate the capture, so it reports wait-during-capture. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <execinfo.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "pg_decide.h"
#include "pg_capture.h"
#include "pg_guard.h"
#include "pg_guard_decide.h"
#include "pg_policy.h"
#include "pg_procmaps.h"
#include "pg_pystack.h"
#include "pg_report.h"
#include "pg_tls.h"
#include "pg_page.h"

static pg_devops_t dev; /* the API layer's GPU operations */

/* ---- small helpers ------------------------------------------------------------------------- */
static bool enforcing(void) { return pg_policy_enforcing(); }

/* Active captures, counted from cudaStreamBeginCapture/EndCapture. Zero almost always, so the
 * common path never asks the runtime about capture. */
static atomic_int active_captures;

static bool stream_capturing(cudaStream_t s) {
  if (atomic_load_explicit(&active_captures, memory_order_acquire) == 0) return false;
  pg_capture_status_t st = PG_CAPTURE_NONE;
  if (!dev.capture_status || dev.capture_status(s, &st) != PG_DEV_OK) return false;
  return st != PG_CAPTURE_NONE;
}

/* A host wait is unsafe while any capture runs (in global capture mode a sync from any thread
 * invalidates it), so pinguard then reports instead of waiting. */
static bool may_wait(void) { return atomic_load_explicit(&active_captures, memory_order_acquire) == 0; }

/* ---- pinned-memory classification ----------------------------------------------------------- */
/* Per-thread cache of pages known not to be pinned host memory (pageable or device). Regions are
 * always looked up first, so memory pinned later through a call we see is never misclassified;
 * only memory pinned behind our back after a negative answer is (documented in the README). */
#define NEG_CACHE 256 /* in a per-thread block mapped on first use (pg_tls.h); none: no cache */
static uintptr_t *neg_cache(void) {
  return pg_tls_get(PG_TLS_NEG_CACHE, NEG_CACHE * sizeof(uintptr_t));
}

static bool neg_cached(uintptr_t page) {
  uintptr_t *c = neg_cache();
  return c && c[page % NEG_CACHE] == page + 1;
}
static void neg_remember(uintptr_t page) {
  uintptr_t *c = neg_cache();
  if (c) c[page % NEG_CACHE] = page + 1;
}

/* True when [p, p+n), in no region the tracker knows, is pinned host memory all the same:
 * memory pinned before pinguard saw it (or through a path it cannot see), from the runtime's
 * pointer attributes. It then becomes a region. */
static bool discovered_pinned(const void *p, size_t n) {
  uintptr_t page = (uintptr_t)p >> 12;
  if (neg_cached(page)) return false;
  bool pinned = false;
  if (!dev.pointer_is_pinned_host || dev.pointer_is_pinned_host(p, &pinned) != PG_DEV_OK ||
      !pinned) {
    neg_remember(page);
    return false;
  }
  /* Pinned, but unknown to us: the runtime gives no allocation bounds, so the region is the
   * whole pages of this span. Later spans extend coverage with regions of their own. */
  uintptr_t lo = pg_page_down((uintptr_t)p);
  uintptr_t hi = pg_page_up((uintptr_t)p + n);
  pg_region_add((const void *)lo, hi - lo, PG_PIN_DISCOVERED, 0, NULL);
  pg_stat_inc(PG_STAT_REGIONS_DISCOVERED);
  return true;
}

/* True when [p, p+n) touches pinned host memory (lk, if given, is then its lookup for an access
 * of direction dir on stream s); only_tracked: regions the tracker knows only. */
static bool is_pinned(const void *p, size_t n, bool only_tracked, cudaStream_t s, pg_dir_t dir,
                      pg_lookup_t *lk) {
  if ((lk ? pg_region_lookup_on(p, n, s, dir, lk) : pg_region_find_range(p, n, NULL, 0)) > 0)
    return true;
  if (only_tracked || !discovered_pinned(p, n)) return false;
  if (lk) pg_region_lookup_on(p, n, s, dir, lk);
  return true;
}

/* ---- reports ------------------------------------------------------------------------------- */
#define MAX_FOUND 64
#define FAULT_FOUND 4

static void fill_gpu(pg_gpu_access_t *g, const pg_access_t *a) {
  memset(g, 0, sizeof *g);
  g->what = a->origin.what;
  g->is_kernel = a->origin.func != NULL;
  g->dir = a->dir;
  g->addr = a->lo;
  g->len = a->hi - a->lo;
  g->stream = (const void *)a->stream;
  g->device = a->device;
  g->age_ns = pg_stamp_age_ns(a->enqueue_stamp);
  g->completed = a->completed;
  g->completed_age_ns = a->completed ? pg_stamp_age_ns(a->completed_stamp) : 0;
  g->stack = &a->stack;
}

/* Reports `kind` for the violating access [p, p+n) against the first `have` of the `total`
 * accesses found; `waited_ns` and `action` say what enforce did. */
static void report(pg_report_kind_t kind, const void *p, size_t n, const char *access_what,
                   const pg_stack_t *access_stack, const pg_access_t *found, size_t have,
                   size_t total, pg_action_t action, uint64_t waited_ns, unsigned flags) {
  pg_gpu_access_t gpu[PG_REPORT_MAX_GPU];
  size_t shown = have < PG_REPORT_MAX_GPU ? have : PG_REPORT_MAX_GPU;
  for (size_t i = 0; i < shown; i++) fill_gpu(&gpu[i], &found[i]);

  pg_report_t r;
  memset(&r, 0, sizeof r);
  r.kind = kind;
  r.addr = (uintptr_t)p;
  r.len = n;
  pg_region_t reg;
  pg_stack_t alloc_stack;
  if (pg_region_find(p, &reg)) {
    r.region.base = reg.base;
    r.region.size = reg.size;
    r.region.how = reg.how;
    r.region.by_driver = (reg.flags & PG_REGION_FLAG_DRIVER) != 0;
    if (pg_region_stack(reg.id, &alloc_stack)) r.region.stack = &alloc_stack;
  }
  r.access_what = access_what;
  r.access_stack = access_stack;
  r.gpu = gpu;
  r.n_gpu = (unsigned)total;
  r.action = action;
  r.waited_ns = waited_ns;
  r.flags = flags;
  pg_policy_report(&r);
}

/* Which in-flight accesses a check is about. */
typedef enum probe_kind {
  PROBE_ANY,       /* every access to the range (free, release, CPU write) */
  PROBE_WRITES,    /* accesses that may write it (commit, CPU read) */
  PROBE_CONFLICTS, /* unordered accesses from other streams that race a new one */
} probe_kind_t;

typedef struct probe {
  probe_kind_t kind;
  const void *p;
  size_t n;
  pg_dir_t dir;         /* PROBE_CONFLICTS: the new access */
  cudaStream_t stream;  /* PROBE_CONFLICTS: its stream */
  const pg_lookup_t *lk; /* PROBE_CONFLICTS: the span's region lookup, if kept */
  bool guarding;        /* a fault's: only the accesses still guarding their pages */
  const pg_shape_t *shape; /* a pitched side: only these bytes of [p, p+n) (NULL: all) */
  uintptr_t at;         /* a fault's byte: a pitched copy in flight counts if it touches it */
} probe_t;

/* q's accesses that `flags` (PG_FIND_*) select: of its shape's bytes, or the fault's byte, or
 * all of [p, p+n). */
static size_t probe_find(const probe_t *q, unsigned flags, pg_access_t *out, size_t cap) {
  pg_query_kind_t kind = (pg_query_kind_t)q->kind;
  if (q->shape)
    return pg_access_find_shaped(kind, flags, q->shape, q->dir, q->stream, out, cap);
  if (q->at)
    return pg_access_find_at(kind, flags, q->p, q->n, q->at, q->dir, q->stream, out, cap);
  return pg_access_find(kind, flags, q->p, q->n, q->dir, q->stream, out, cap);
}

static size_t run_probe(const probe_t *q, pg_access_t *out, size_t cap) {
  if (q->shape || q->at || q->guarding)
    return probe_find(q, q->guarding ? PG_FIND_GUARDING : 0, out, cap);
  if (q->kind == PROBE_CONFLICTS)
    return q->lk ? pg_access_conflicts_at(q->lk, q->dir, q->stream, out, cap)
                 : pg_access_conflicts(q->p, q->n, q->dir, q->stream, out, cap);
  return pg_inflight_query(q->p, q->n, q->kind == PROBE_WRITES, out, cap);
}

/* The accesses of found[0, have) begun without a completion event of their own (audit records
 * one per audit_event_every accesses of a stream): each is given the event its completion can be
 * asked of (pg_access_cover), and whether it completed, for the report's wording and a silent
 * wait (the others count as running). Never in the fault handler: it finds only guarded
 * accesses, which hold their own. */
static void cover_found(pg_access_t *found, size_t have, unsigned flags) {
  if (flags & PG_REPORT_FROM_SIGNAL) return;
  for (size_t i = 0; i < have; i++)
    if (!found[i].event && !found[i].completed) (void)pg_access_cover(&found[i], may_wait());
}

/* The accesses of found[0, have) still running (the others completed: unordered all the same,
 * but there is nothing left to wait for). */
static bool any_running(const pg_access_t *found, size_t have) {
  for (size_t i = 0; i < have; i++)
    if (!found[i].completed) return true;
  return false;
}

typedef enum wait_result { WAIT_DONE, WAIT_FAILED, WAIT_TIMED_OUT } wait_result_t;

/* Waits for access a, started at t0 (pg_clock_ns), for at most max_wait_ms from t0 (0: no
 * limit, the blocking synchronize). A bounded wait polls the access's event, sleeping 20 us
 * doubling to 320 us between polls (nanosleep: safe in the fault handler). WAIT_FAILED: the
 * event itself answered an error, so the access may still be running. */
static wait_result_t wait_bounded(const pg_access_t *a, uint64_t t0) {
  if (!a->event) return WAIT_FAILED; /* none could be had (cover_found) */
  uint64_t limit_ms = pg_policy_options()->max_wait_ms;
  if (!limit_ms) return pg_access_wait(a) ? WAIT_DONE : WAIT_FAILED;
  uint64_t deadline = t0 + limit_ms * 1000000ull;
  long nap_ns = 20000;
  for (;;) {
    pg_dev_result_t r = dev.event_query(a->event);
    if (r == PG_DEV_OK) break;
    if (r != PG_DEV_NOT_READY) return WAIT_FAILED;
    uint64_t now = pg_clock_ns();
    if (now >= deadline) return WAIT_TIMED_OUT;
    uint64_t left = deadline - now;
    struct timespec ts = {0, (long)(left < (uint64_t)nap_ns ? left : (uint64_t)nap_ns)};
    nanosleep(&ts, NULL);
    if (nap_ns < 320000) nap_ns *= 2;
  }
  /* Complete: returns at once, and gives its event back; a failure here is a failed wait too. */
  return pg_access_wait(a) ? WAIT_DONE : WAIT_FAILED;
}

/* Enforce's wait: for every access of found[0, have) still running, then, while more were found
 * than found[] holds, for those still running among the rest (asked again; each round's accesses
 * have completed, so the rounds end). A wait that fails or times out leaves its access running:
 * nothing more is asked. *waited: the time it took. */
static wait_result_t wait_running(const probe_t *q, pg_access_t *found, size_t have,
                                  size_t total, size_t cap, uint64_t *waited) {
  uint64_t t0 = pg_clock_ns();
  wait_result_t r = WAIT_DONE;
  for (size_t i = 0; i < have && r == WAIT_DONE; i++)
    if (!found[i].completed) r = wait_bounded(&found[i], t0);
  for (size_t left = total; left > have && r == WAIT_DONE;) {
    left = probe_find(q, PG_FIND_RUNNING, found, cap);
    have = left < cap ? left : cap;
    cover_found(found, have, 0);
    for (size_t i = 0; i < have && r == WAIT_DONE; i++) r = wait_bounded(&found[i], t0);
  }
  *waited = pg_clock_ns() - t0;
  return r;
}

/* The core decision. Finds the accesses `q` describes (into found[cap]): every access the host
 * is not ordered after, whether it still runs or not (a race is a race whether or not the GPU
 * won it). Enforce (or a silent wait) waits for those still running, and only for them; then
 * one report (unless silent) names what was found. While a capture is active nothing waits and
 * wait-during-capture is reported instead. Returns how many accesses were found at first. */
static int settle(pg_report_kind_t kind, const probe_t *q, const char *access_what,
                  const pg_stack_t *st, pg_access_t *found, size_t cap, bool silent,
                  unsigned flags) {
  size_t total = run_probe(q, found, cap);
  if (total == 0) return 0;
  pg_stat_add(PG_STAT_CONFLICTS, total);
  size_t have = total < cap ? total : cap;
  /* A silent wait waits for each; a report shows the first few. */
  cover_found(found, silent || have < PG_REPORT_MAX_GPU ? have : PG_REPORT_MAX_GPU, flags);
  for (size_t i = 0; i < have; i++)
    if (found[i].completed) pg_stat_inc(PG_STAT_CONFLICTS_COMPLETED);
  pg_action_t action = PG_ACTION_NONE;
  uint64_t waited = 0;
  if (enforcing() || silent) {
    bool running = total > have || any_running(found, have);
    if (running && !may_wait()) {
      pg_stat_inc(PG_STAT_CAPTURE_SKIPS);
      if (!silent)
        report(PG_KIND_WAIT_DURING_CAPTURE, q->p, q->n, access_what, st, found, have, total,
               PG_ACTION_NOT_WAITED_CAPTURE, 0, flags);
      return (int)total;
    }
    if (running && pg_hb_in_hostfn()) {
      if (!silent)
        report(kind, q->p, q->n, access_what, st, found, have, total, PG_ACTION_NOT_WAITED_HOSTFN,
               0, flags);
      return (int)total;
    }
    action = PG_ACTION_COMPLETED; /* nothing left running: prevented without a wait */
    if (running) {
      /* Keep the first batch for the report; the wait may ask again into found[]. */
      pg_access_t first[PG_REPORT_MAX_GPU];
      size_t kept = have < PG_REPORT_MAX_GPU ? have : PG_REPORT_MAX_GPU;
      memcpy(first, found, kept * sizeof *first);
      wait_result_t r = wait_running(q, found, have, total, cap, &waited);
      action = r == WAIT_FAILED      ? PG_ACTION_WAIT_FAILED
               : r == WAIT_TIMED_OUT ? PG_ACTION_WAIT_TIMED_OUT
                                     : PG_ACTION_WAITED;
      pg_policy_note_wait(waited);
      memcpy(found, first, kept * sizeof *first);
      have = kept;
      if (r == WAIT_TIMED_OUT) {
        /* The access goes ahead unprevented: a silent wait (an annotation's) says so too. */
        report(PG_KIND_WAIT_TIMEOUT, q->p, q->n, access_what, st, found, have, total, action,
               waited, flags);
        return (int)total;
      }
    }
  }
  if (!silent) report(kind, q->p, q->n, access_what, st, found, have, total, action, waited, flags);
  return (int)total;
}

/* ---- lifecycle ----------------------------------------------------------------------------- */
/* Set while an op other than the common one begins its spans, which then counts it tracked by
 * what began; the common op counts itself tracked ahead of its one begin (no work after its
 * tail call), so an untracked begin of it takes that count back. */
static __thread bool t_counting_begins;

static void count_tracker_stat(pg_tracker_stat_t what, uint64_t n) {
  switch (what) {
  case PG_TRACKER_RETIRED: pg_stat_add(PG_STAT_ACCESSES_RETIRED, n); break;
  case PG_TRACKER_EVICTED: pg_stat_add(PG_STAT_ACCESSES_EVICTED, n); break;
  case PG_TRACKER_UNTRACKED:
  case PG_TRACKER_UNTRACKED_KERNEL:
    pg_stat_add(PG_STAT_ACCESSES_UNTRACKED, n);
    if (!t_counting_begins) /* -n: unsigned arithmetic takes the ahead count back */
      pg_stat_add(what == PG_TRACKER_UNTRACKED ? PG_STAT_COPIES_TRACKED : PG_STAT_KERNELS_TRACKED,
                  (uint64_t)0 - n);
    break;
  }
}

bool pg_decide_start(const pg_devops_t *ops) {
  dev = *ops;
  if (pg_tracker_init(&dev) != 0) return false;
  int fu = pg_policy_options()->fast_unwind;
  pg_stack_set_fast_unwind(fu == PG_AUTO ? (pg_policy_mode() == PG_MODE_AUDIT ? PG_UNWIND_FP_REDO
                                                                              : PG_UNWIND_FP)
                           : fu ? PG_UNWIND_FP : PG_UNWIND_EXACT);
  pg_policy_python_stacks();
  pg_tracker_set_stat_hook(count_tracker_stat);
  pg_tracker_set_unordered_cap((size_t)pg_policy_options()->max_unordered);
  /* Enforce waits for exactly the conflicting work: an event per access. */
  pg_tracker_set_event_every(enforcing() ? 1 : (unsigned)pg_policy_options()->audit_event_every);
  if (pg_policy_guard()) {
    void *warm[4];
    backtrace(warm, 4); /* loads the unwinder now, never in the fault handler */
    pg_guard_set_map_budget((size_t)pg_policy_options()->guard_map_budget);
    pg_guard_enable((size_t)pg_policy_options()->guard_min_bytes,
                    pg_policy_options()->guard_shared_edges);
  }
  return true;
}

/* Lock order: captures (pg_capture.c), then the tracker, then guard stripes, then the report
 * lock. */
void pg_engine_atfork_prepare(void) {
  pg_capture_atfork_prepare();
  pg_tracker_atfork_prepare();
  pg_guard_atfork_prepare();
  pg_policy_atfork_prepare();
}
void pg_engine_atfork_parent(void) {
  pg_policy_atfork_parent();
  pg_guard_atfork_parent();
  pg_tracker_atfork_parent();
  pg_capture_atfork_parent();
}
void pg_engine_atfork_child(void) {
  pg_policy_atfork_child();
  pg_guard_atfork_child(); /* opens every inherited guarded page: the child has no GPU work */
  pg_tracker_atfork_child();
  atomic_store(&active_captures, 0);
  pg_capture_atfork_child();
}

/* ---- pinning ------------------------------------------------------------------------------- */
/* Whether [p, p+n) lies in a MAP_SHARED mapping: guard pages probe such memory separately.
 * Asked once per cudaHostRegister while guard pages are on: one PROCMAP_QUERY ioctl, O(log n) in
 * the process's mappings (issue 9: reading all of /proc/self/maps made n registrations O(n^2)). */
/* Whether [lo, hi) is a block glibc's malloc mapped on its own (above its mmap threshold): the
 * chunk starts on a page 16 bytes before the block, its size word (just before the block) has
 * the IS_MMAPPED bit, and it spans whole pages covering the block. Only the block's own first page
 * is read, which is mapped since the block is. Not instrumented: under AddressSanitizer, whose
 * allocator is not glibc's, the word lies in a redzone (and the answer is simply no). */
__attribute__((no_sanitize("address"))) static bool glibc_mmapped_block(uintptr_t lo, uintptr_t hi,
                                                                       uintptr_t page) {
  if ((lo & (page - 1)) != 2 * sizeof(size_t)) return false;
  size_t word = *(const volatile size_t *)(lo - sizeof(size_t));
  size_t chunk = word & ~(size_t)7;
  uintptr_t start = lo - 2 * sizeof(size_t);
  return (word & 2) && !(word & 4) && chunk % page == 0 && start + chunk >= hi &&
         start + chunk - hi < page;
}

unsigned pg_on_register_begin(const void *p, size_t n) {
  if (!pg_guard_enabled() || !n) return 0; /* only guard pages need to know */
  pg_mapping_t m;
  if (pg_maps_query(p, &m) <= 0) return 0;
  unsigned flags = m.shared ? PG_REGION_FLAG_SHARED : 0;
  const char *release = pg_guard_kernel_release();
  pg_guard_verdict_t verdict = pg_guard_verdict(&m, release);
  if (verdict != PG_GUARD_YES) {
    pg_guard_warn_verdict(verdict, release);
    return flags | PG_REGION_FLAG_NO_GUARD;
  }
  uintptr_t page = pg_page_size();
  uintptr_t lo = (uintptr_t)p, hi = lo + n;
  uintptr_t hull_lo = lo & ~(page - 1), hull_hi = (hi + page - 1) & ~(page - 1);
  if (lo == hull_lo && hi == hull_hi) return flags; /* no partial page */
  /* The edges' other bytes are nobody's when the mapping is the block's hull (the kernel merges
   * neighbouring anonymous mappings, so that is rare), or when the block is a malloc block
   * mapped on its own (header and tail slack only). */
  if ((m.lo >= hull_lo && m.hi <= hull_hi) ||
      (m.lo <= hull_lo && m.hi >= hull_hi && glibc_mmapped_block(lo, hi, page)))
    flags |= PG_REGION_FLAG_OWNS_EDGES;
  return flags;
}

void pg_on_pin(void *p, size_t n, pg_pin_how_t how, unsigned flags, const pg_stack_t *st) {
  pg_region_add(p, n, how, flags, st);
  pg_stat_inc(PG_STAT_REGIONS_PINNED);
}

void pg_on_unpin_begin(void *p, bool is_free, const char *api, const pg_stack_t *st,
                       pg_unpin_t *saved) {
  saved->had_region = false;
  saved->kept = false;
  pg_region_t reg;
  if (!pg_region_find(p, &reg) || reg.base != (uintptr_t)p) return;
  pg_access_t found[MAX_FOUND];
  probe_t q = {.kind = PROBE_ANY, .p = p, .n = reg.size};
  settle(is_free ? PG_KIND_FREE_DURING_DEVICE_ACCESS : PG_KIND_UNREGISTER_DURING_DEVICE_ACCESS, &q,
         api, st, found, MAX_FOUND, false, 0);
  bool allocated = reg.how == PG_PIN_HOST_ALLOC || reg.how == PG_PIN_MALLOC_HOST;
  if ((is_free && reg.how == PG_PIN_REGISTER) || (!is_free && allocated)) {
    saved->kept = true; /* the call will fail: nothing of the region is let go */
    saved->region = reg;
    return;
  }
  /* The region goes first (its accesses still in flight, which audit lets through, are dropped
   * from the index and will retire without touching guard counts), then its pages are opened:
   * a freed range may be mapped again by anyone, an unregistered one is the program's again. */
  saved->had_region =
      pg_region_remove_keep_stack(p, &saved->region, &saved->stack) == 1;
  pg_guard_forget(reg.base, reg.base + reg.size, false);
}

void pg_on_unpin_end(const pg_unpin_t *saved, bool succeeded) {
  if (saved->kept) {
    if (succeeded) { /* against expectation: let it go now */
      const pg_region_t *r = &saved->region;
      pg_region_remove((const void *)r->base, NULL);
      pg_guard_forget(r->base, r->base + r->size, false);
    }
    return;
  }
  if (succeeded || !saved->had_region) return;
  /* The runtime kept the memory: so does pinguard (with a new id; accesses it dropped are not
   * tracked again, which can only hide a report). */
  const pg_region_t *r = &saved->region;
  pg_region_add((const void *)r->base, r->size, r->how, r->flags, &saved->stack);
}

/* ---- asynchronous operations --------------------------------------------------------------- */
/* Keeps the spans that lie in pinned memory; a kernel span of length 0 runs to its region's end,
 * and reads only when the region is registered read-only (the device cannot write it). */
static void keep_pinned_spans(pg_op_t *op) {
  size_t kept = 0;
  for (size_t i = 0; i < op->nspans; i++) {
    pg_span_t *s = &op->spans[i]; /* kept in place, moved down only after a dropped one */
    pg_lookup_t *lk = kept < PG_OP_LOOKUPS ? &op->lk[kept] : NULL;
    if (s->n == 0 && lk) {
      if (!(s->n = pg_region_lookup_rest_on(s->p, op->stream, &s->dir, lk))) continue;
    } else if (s->n == 0) {
      pg_region_t reg;
      if (!pg_region_find(s->p, &reg)) continue;
      s->n = reg.base + reg.size - (uintptr_t)s->p;
      if (pg_pin_is_read_only(reg.how, reg.flags)) s->dir = PG_DIR_READ;
    } else if (!is_pinned(s->p, s->n, op->only_tracked, op->stream, s->dir, lk)) {
      continue;
    }
    if (kept != i) op->spans[kept] = *s;
    kept++;
  }
  op->nspans = kept;
  op->nlk = kept < PG_OP_LOOKUPS ? kept : PG_OP_LOOKUPS;
}

/* The shape of a pitched side (the one whose hull is exactly the span), or NULL: a plain span. */
static const pg_shape_t *span_shape(const pg_op_t *op, const pg_span_t *s) {
  for (unsigned k = 0; k < op->nshapes; k++)
    if (op->shapes[k].base == (uintptr_t)s->p &&
        pg_shape_end(&op->shapes[k]) - op->shapes[k].base == s->n)
      return &op->shapes[k];
  return NULL;
}

/* Span i of op, looked up (lk, or NULL past PG_OP_LOOKUPS): the new access must not start
 * before the ones it races with. Enforce waits for them on the host (exactly those, never a
 * device-wide sync); during a capture it reports. */
__attribute__((noinline)) static void settle_span(const pg_op_t *op, size_t i,
                                                 const pg_lookup_t *lk);
static inline __attribute__((always_inline)) void check_span(const pg_op_t *op, size_t i,
                                                             const pg_lookup_t *lk) {
  /* Most spans lie in regions where only this stream has work in flight, or none: their
   * summaries say so, and settle would find nothing. (Not for a source read out of stream
   * order, which its own stream's work can race: settle_span.) */
  if (op->spans[i].order == PG_SRC_STREAM && lk && lk->quiet && pg_lookup_current(lk)) return;
  settle_span(op, i, lk);
}

static void settle_span(const pg_op_t *op, size_t i, const pg_lookup_t *lk) {
  /* A captured op does not run now, but at each launch of its graph, where it is checked
   * against what is in flight then (pg_on_graph_launch_begin). */
  if (stream_capturing(op->stream)) return;
  const pg_span_t *s = &op->spans[i];
  pg_access_t found[MAX_FOUND];
  probe_t q = {.kind = PROBE_CONFLICTS, .p = s->p, .n = s->n, .dir = s->dir,
               .stream = op->stream, .lk = lk, .shape = span_shape(op, s)};
  /* A source read out of stream order is not ordered after its own stream's earlier work:
   * like a host read, it races every device write still in flight. */
  if (s->order != PG_SRC_STREAM) q.kind = PROBE_WRITES;
  settle(PG_KIND_DEVICE_ACCESS_CONFLICT, &q, op->api, &op->stack, found, MAX_FOUND, false, 0);
}

/* The op touches pinned memory: its stack, from the interceptor's site (unless its caller
 * filled it). Never for an op that tracks nothing. */
static inline void take_stack(pg_op_t *op) {
  if (op->site.ret) {
    pg_stack_capture_site(&op->stack, &op->site);
    op->site.ret = NULL;
  }
}

/* The spans of any op: those in pinned memory kept, each checked. */
__attribute__((noinline)) static void before_op_spans(pg_op_t *op) {
  keep_pinned_spans(op);
  if (op->nspans) take_stack(op);
  for (size_t i = 0; i < op->nspans; i++) check_span(op, i, i < op->nlk ? &op->lk[i] : NULL);
}

/* The one span of an op, in no region the tracker knows: pinned all the same, or dropped. */
__attribute__((noinline)) static void before_op_unknown(pg_op_t *op) {
  const pg_span_t *s = &op->spans[0];
  if (op->only_tracked || !discovered_pinned(s->p, s->n) ||
      !pg_region_lookup_on(s->p, s->n, op->stream, s->dir, &op->lk[0])) {
    op->nspans = op->nlk = 0;
    return;
  }
  take_stack(op);
  check_span(op, 0, &op->lk[0]);
}

void pg_on_op_begin(pg_op_t *op) {
  /* The common op, one span (a copy's host side, or a kernel's one parameter in pinned memory):
   * before_op_spans for it alone, with the quiet answer of the lookup just made. */
  if (__builtin_expect(op->nspans == 1, 1)) {
    pg_span_t *s = &op->spans[0];
    pg_lookup_t *lk = &op->lk[0];
    op->nlk = 1;
    if (__builtin_expect(s->n != 0, 1)) {
      if (__builtin_expect(!pg_region_lookup_on(s->p, s->n, op->stream, s->dir, lk), 0))
        return before_op_unknown(op);
    } else if (!(s->n = pg_region_lookup_rest_on(s->p, op->stream, &s->dir, lk))) {
      op->nspans = op->nlk = 0; /* a kernel's word in no region (keep_pinned_spans) */
      return;
    }
    take_stack(op);
    if (__builtin_expect(lk->quiet && s->order == PG_SRC_STREAM, 1)) return;
    return settle_span(op, 0, lk);
  }
  before_op_spans(op);
}

/* Whether any of op's spans began to be tracked. */
static inline __attribute__((always_inline)) bool begin_accesses(const pg_op_t *op,
                                                                   cudaStream_t stream,
                                                                   const pg_stack_t *st) {
  pg_origin_t origin = {.what = op->what, .func = op->func};
  bool any = false;
  for (size_t i = 0; i < op->nspans; i++) {
    if (op->spans[i].order == PG_SRC_AT_CALL) continue; /* read during the call: done */
    const pg_shape_t *shape = op->nshapes ? span_shape(op, &op->spans[i]) : NULL;
    if (shape) any |= pg_access_begin_shaped(shape, op->spans[i].dir, stream, &origin, st) > 0;
    else if (i < op->nlk)
      any |= pg_access_begin_at(&op->lk[i], op->spans[i].dir, stream, origin, st) > 0;
    else
      any |= pg_access_begin(op->spans[i].p, op->spans[i].n, op->spans[i].dir, stream, &origin,
                             st) > 0;
  }
  return any;
}

/* Any op but the common one. */
__attribute__((noinline)) static void after_op_spans(pg_op_t *op) {
  if (op->nspans == 0) {
    pg_hb_enqueue(op->stream);
    return;
  }
  if (stream_capturing(op->stream)) {
    /* Recorded into the capture, not run: it becomes in-flight at each cudaGraphLaunch. */
    pg_capture_add(op->stream, op);
    return;
  }
  /* Counted tracked only when something began (an untracked stream's op is counted by the
   * tracker's accesses_untracked). */
  t_counting_begins = true;
  bool any = begin_accesses(op, op->stream, &op->stack);
  t_counting_begins = false;
  if (any) pg_stat_inc(op->func ? PG_STAT_KERNELS_TRACKED : PG_STAT_COPIES_TRACKED);
  /* Nothing begun (a batch whose sources were all read during the call, say): the op was
   * still enqueued, and the legacy stream's implicit order holds for it all the same. */
  else pg_hb_enqueue(op->stream);
}

void pg_on_op_end(pg_op_t *op) {
  /* The common op, one span begun in stream order with no capture anywhere: the begin is the
   * tail call. */
  if (__builtin_expect(op->nspans == 1 && op->nlk == 1 && op->spans[0].order != PG_SRC_AT_CALL &&
                           atomic_load_explicit(&active_captures, memory_order_acquire) == 0,
                       1)) {
    /* Counted ahead; a begin that fails takes the count back (count_tracker_stat). */
    pg_stat_inc(op->func ? PG_STAT_KERNELS_TRACKED : PG_STAT_COPIES_TRACKED);
    pg_access_begin_at(&op->lk[0], op->spans[0].dir, op->stream,
                       (pg_origin_t){.what = op->what, .func = op->func}, &op->stack);
    return;
  }
  after_op_spans(op);
}

void pg_on_shaped_op_end(pg_op_t *op) { after_op_spans(op); }

void pg_on_untracked_op(cudaStream_t s) { pg_hb_enqueue(s); }

/* ---- capture and graphs -------------------------------------------------------------------- */
void pg_on_capture_begin(cudaStream_t s) {
  pg_capture_begin(s);
  atomic_fetch_add(&active_captures, 1);
}

void pg_on_capture_end(cudaStream_t s, cudaGraph_t graph) {
  /* An end call on a stream that was not capturing fails and ends no capture: the count stays
   * (else enforce would wait during a live capture, which can invalidate it). */
  if (pg_capture_end(s, graph) && atomic_load(&active_captures) > 0)
    atomic_fetch_sub(&active_captures, 1);
}

void pg_on_graph_instantiate(cudaGraphExec_t exec, cudaGraph_t graph) {
  pg_capture_instantiate(exec, graph);
}

void pg_on_graph_launch_begin(cudaGraphExec_t exec, cudaStream_t s, const char *api,
                                  const pg_stack_t *st) {
  pg_op_t *ops;
  size_t n = pg_capture_launch_ops(exec, &ops);
  pg_access_t found[MAX_FOUND];
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < ops[i].nspans; k++) {
      const pg_span_t *sp = &ops[i].spans[k];
      /* Checked on the launch stream, against what is in flight now (the capture's lookup was
       * for the capture's stream, and stale). The graph's own ops share the launch stream. */
      probe_t q = {.kind = PROBE_CONFLICTS, .p = sp->p, .n = sp->n, .dir = sp->dir, .stream = s,
                   .shape = span_shape(&ops[i], sp)};
      settle(PG_KIND_DEVICE_ACCESS_CONFLICT, &q, api, st, found, MAX_FOUND, false, 0);
    }
  free(ops);
}

void pg_on_graph_launch_end(cudaGraphExec_t exec, cudaStream_t s, const pg_stack_t *st) {
  pg_op_t *ops;
  size_t n = pg_capture_launch_ops(exec, &ops);
  for (size_t i = 0; i < n; i++) {
    /* Begun on the launch's stream, not the capture's whose record the lookups kept. */
    for (size_t k = 0; k < ops[i].nlk; k++) ops[i].lk[k].stream = NULL;
    t_counting_begins = true; /* a graph's ops are not counted tracked: none taken back */
    begin_accesses(&ops[i], s, st);
    t_counting_begins = false;
  }
  free(ops);
}

void pg_on_graph_exec_destroy(cudaGraphExec_t exec) { pg_capture_exec_destroyed(exec); }

/* ---- ordering ------------------------------------------------------------------------------ */
void pg_on_event_record(cudaEvent_t e, cudaStream_t s) { pg_hb_event_record(e, s); }
void pg_on_stream_wait_event(cudaStream_t s, cudaEvent_t e) { pg_hb_stream_wait_event(s, e); }
void pg_on_event_complete(cudaEvent_t e) { pg_hb_event_completed(e); }
void pg_on_event_destroy(cudaEvent_t e) { pg_hb_event_destroyed(e); }
void pg_on_sync_begin(cudaStream_t s) { pg_hb_sync_prepare(s); }
void pg_on_device_sync_begin(void) { pg_hb_sync_prepare_device(); }
void pg_on_sync_end(bool succeeded) { pg_hb_sync_done(succeeded); }
void pg_on_stream_destroy(cudaStream_t s) { pg_hb_stream_destroyed(s); }

void pg_on_flag_write(cudaStream_t s, const void *addr, uint64_t value, unsigned width) {
  if (pg_region_find_range(addr, width, NULL, 0) == 0) return; /* not host memory pinguard knows */
  pg_hb_flag_written(s, addr, value, width);
}

/* ---- CPU accesses ------------------------------------------------------------------------ */
/* The CPU stack of a fault: backtrace() unwinds through the signal frame with the unwind
 * tables, so a fault inside a leaf such as memcpy still names its caller. It was called once
 * when the handler was installed, so it no longer loads anything (the only unsafe part). The
 * frames up to the faulting instruction are pinguard's and the kernel's: dropped. */
/* Not instrumented: it may run on an 8 KiB alternate signal stack, where AddressSanitizer's
 * redzones around buf[] would not fit. */
__attribute__((no_sanitize_address)) void pg_decide_fault_stack(pg_stack_t *out, void *pc,
                                                                 void *fp) {
  void *buf[PG_STACK_MAX + 16];
  int n = backtrace(buf, (int)(sizeof buf / sizeof *buf));
  int start = -1;
  for (int i = 0; i < n && start < 0; i++)
    if (buf[i] == pc) start = i;
  if (start < 0) {
    pg_stack_capture_from(out, pc, fp, PG_STACK_MAX);
    return;
  }
  out->tid = pg_thread_number();
  out->depth = 0;
  out->flags = PG_STACK_EXACT_PC0; /* buf[start] is the faulting instruction, not a return */
  for (int i = start; i < n && out->depth < PG_STACK_MAX; i++) out->pc[out->depth++] = buf[i];
  pg_pystack_capture(out); /* signal-safe: pg_pystack.h */
}

/* ---- host functions ------------------------------------------------------------------------ */
/* The pages a running host function was let through, protected again when it returns. */
/* The ranges a running host function was let through, protected again when it returns: those
 * ranges (touching ones merged, as a memcpy opens page after page), not a bounding box, which
 * would also re-protect pages other threads were let through (a system call filling its buffer
 * would then fail with EFAULT). Should the slots run out, the last one grows to cover the rest:
 * every page the host function opened is protected again. */
#define HOSTFN_OPEN_MAX 16
typedef struct hostfn_range { uintptr_t lo, hi; } hostfn_range_t;
static __thread unsigned hostfn_nopen;
/* The ranges live in a per-thread block mapped on first use (pg_tls.h). Without one, the
 * host function's opened pages stay open until their accesses retire (fewer checks, no harm). */
static hostfn_range_t *hostfn_ranges(void) {
  return pg_tls_get(PG_TLS_HOSTFN_OPEN, HOSTFN_OPEN_MAX * sizeof(hostfn_range_t));
}

static void note_opened(uintptr_t lo, uintptr_t hi) {
  if (!pg_hb_in_hostfn()) return;
  hostfn_range_t *hostfn_open = hostfn_ranges();
  if (!hostfn_open) return;
  for (unsigned i = 0; i < hostfn_nopen; i++) {
    if (lo <= hostfn_open[i].hi && hi >= hostfn_open[i].lo) { /* touches: merge */
      if (lo < hostfn_open[i].lo) hostfn_open[i].lo = lo;
      if (hi > hostfn_open[i].hi) hostfn_open[i].hi = hi;
      return;
    }
  }
  if (hostfn_nopen == HOSTFN_OPEN_MAX) {
    unsigned last = HOSTFN_OPEN_MAX - 1;
    if (lo < hostfn_open[last].lo) hostfn_open[last].lo = lo;
    if (hi > hostfn_open[last].hi) hostfn_open[last].hi = hi;
    return;
  }
  hostfn_open[hostfn_nopen].lo = lo;
  hostfn_open[hostfn_nopen].hi = hi;
  hostfn_nopen++;
}

bool pg_engine_capturing(cudaStream_t s) { return stream_capturing(s); }

cudaError_t pg_on_hostfn_enqueue(cudaStream_t s, cudaError_t (*enqueue)(void *), void *arg,
                                     pg_hostfn_pos_t *pos) {
  return pg_hb_hostfn_enqueue(s, enqueue, arg, pos);
}

void pg_on_hostfn_enter(const pg_hostfn_pos_t *pos) {
  hostfn_nopen = 0;
  pg_hb_hostfn_enter(pos);
}

void pg_on_hostfn_leave(void) {
  pg_hb_hostfn_leave();
  const hostfn_range_t *hostfn_open = pg_tls_peek(PG_TLS_HOSTFN_OPEN);
  for (unsigned i = 0; hostfn_open && i < hostfn_nopen; i++)
    pg_guard_rearm(hostfn_open[i].lo, hostfn_open[i].hi);
  hostfn_nopen = 0;
}

bool pg_decide_cpu_fault(uintptr_t addr, bool is_write, void *pc, void *fp, bool can_step) {
  uintptr_t page_size = pg_page_size();
  uintptr_t page = addr & ~(page_size - 1);
  /* This may run on a program's small alternate signal stack (SA_ONSTACK): keep the frame small.
   * Conflicts beyond these few are settled when the retried instruction faults again. */
  pg_access_t found[FAULT_FOUND];
  /* A read races only with device writes; a write with any device access. The probe is the
   * whole page, since the instruction (a memcpy, say) may go on across it, onto bytes of
   * accesses too short to guard the page themselves; but only the page's bytes of the pinned
   * region the fault hit. A pitched copy's side counts only when its rows hold the faulting byte
   * itself: a touch of the gap between its rows is no conflict. On a guarded edge page (PG_REGION_FLAG_OWNS_EDGES) the bytes outside
   * the region are nobody's (a malloc header): touching them is no conflict. */
  probe_t q = {.kind = is_write ? PROBE_ANY : PROBE_WRITES, .p = (const void *)page,
               .n = page_size, .guarding = true, .at = addr};
  pg_region_t reg;
  if (!pg_region_find((const void *)addr, &reg)) {
    q.n = 0; /* outside every region: no conflict */
  } else if (reg.base > page || reg.base + reg.size < page + page_size) {
    uintptr_t lo = reg.base > page ? reg.base : page;
    uintptr_t hi = reg.base + reg.size < page + page_size ? reg.base + reg.size : page + page_size;
    q.p = (const void *)lo;
    q.n = hi - lo;
  }
  pg_report_kind_t kind =
      is_write ? PG_KIND_CPU_WRITE_DURING_DEVICE_ACCESS : PG_KIND_CPU_READ_DURING_DEVICE_WRITE;
  /* Before the look: a page let go below must have met no access the look could not see. */
  unsigned begins = pg_guard_page_begins(page);
  /* Decide first, unwind only for a report: a fault that conflicts with nothing costs no stack.
   * (Should an access begin in between, the page stays protected for it and the retried
   * instruction faults again.) */
  int total = 0;
  if (q.n && run_probe(&q, found, FAULT_FOUND) > 0) {
    pg_stack_t st;
    pg_decide_fault_stack(&st, pc, fp);
    total = settle(kind, &q, is_write ? "CPU write" : "CPU read", &st, found, FAULT_FOUND, false,
                   PG_REPORT_FROM_SIGNAL);
  }
  if (total > 0) pg_stat_inc(PG_STAT_GUARD_FAULTS);
  /* The access went ahead (audit), or what it conflicted with has completed (enforce waited, or
   * nothing was left running): either way the GPU accesses it conflicted with stop guarding
   * their pages (they stay tracked, unordered, for every other check), and the pages open unless
   * another access still guards them: it then faults the retried instruction again, and is
   * settled in turn. One memcpy across a guarded buffer is one CPU access, so it makes one
   * report, not one per page it goes on to touch. A host function's CPU accesses instead open
   * the pages until it returns (pg_on_hostfn_leave protects them again): the accesses keep
   * guarding them against every other thread. */
  size_t have = total > 0 ? ((size_t)total < FAULT_FOUND ? (size_t)total : FAULT_FOUND) : 0;
  for (size_t i = 0; i < have; i++) {
    if (pg_hb_in_hostfn()) {
      pg_guard_release(found[i].lo, found[i].hi);
      note_opened(found[i].lo, found[i].hi);
    } else {
      pg_access_unguard(&found[i]);
    }
  }
  /* Nothing conflicted: the accesses guarding the page were ordered since (another thread's
   * synchronize), and retire now; should the page still deny the access (nothing found guards
   * it: another thread may be retiring those accesses at this moment, their counts not yet
   * dropped), it is let go for this kind of access only, so that the instruction can run when
   * retried. A read's page stays guarded against CPU writes: a device read still running there,
   * unordered, must still catch them. Unless a device access began on the page since the look
   * (FINDINGS.md, F11): the page then stays as it is, and the retried instruction faults again
   * and finds it. */
  if (total == 0) {
    pg_tracker_retire();
    pg_guard_refresh(page);
    if (!pg_guard_page_allows(page, is_write)) {
      /* A gap byte of pitched copies whose rows share the page (the accesses the page probe
       * finds but the byte's did not): with single steps the page stays guarded for them and
       * this one instruction runs with it open; without, they stop guarding (as after a report:
       * they stay tracked for every other check) and the page is looked at again. Enforce
       * first waits for them, without a report, since their rows' later CPU accesses will not
       * fault. */
      probe_t page_q = q;
      page_q.at = 0;
      size_t gap = q.n && !pg_hb_in_hostfn() ? run_probe(&page_q, found, FAULT_FOUND) : 0;
      if (gap && can_step) return true;
      if (gap) {
        size_t have = gap < FAULT_FOUND ? gap : FAULT_FOUND;
        uint64_t t0 = pg_clock_ns();
        for (size_t i = 0; i < have && enforcing() && may_wait(); i++)
          if (!found[i].completed) (void)wait_bounded(&found[i], t0);
        for (size_t i = 0; i < have; i++) pg_access_unguard(&found[i]);
        pg_guard_refresh(page);
        if (pg_guard_page_allows(page, is_write)) return false;
      }
      if (pg_guard_release_page_since(page, is_write, begins)) note_opened(page, page + page_size);
    }
  }
  return false;
}

void pg_on_syscall(const void *p, size_t n, bool kernel_writes, const char *call,
                       const pg_stack_t *st) {
  if (pg_region_find_range(p, n, NULL, 0) == 0) return;
  pg_access_t found[MAX_FOUND];
  probe_t q = {.kind = kernel_writes ? PROBE_ANY : PROBE_WRITES, .p = p, .n = n};
  int total = settle(kernel_writes ? PG_KIND_SYSCALL_WRITE_DURING_DEVICE_ACCESS
                                   : PG_KIND_SYSCALL_READ_DURING_DEVICE_WRITE,
                     &q, call, st, found, MAX_FOUND, false, 0);
  if (!pg_guard_enabled()) return;
  /* The kernel meets no fault handler: a page it cannot access would make the call fail with
   * EFAULT. Accesses that completed but were not retired yet may still hold pages: retire them
   * first. Then only pages that still deny the kernel's access are let through (until the
   * accesses guarding them retire): a write(2) of a buffer a device read is using leaves it
   * guarded against CPU stores. */
  if (total == 0) pg_tracker_retire();
  uintptr_t lo = (uintptr_t)p, hi = lo + n;
  pg_guard_release_denying(lo, hi, kernel_writes);
  note_opened(lo, hi);
}

/* ---- annotations --------------------------------------------------------------------------- */
/* pinguard_wait: the program asked to wait for the accesses q finds, which orders it after them
 * as a synchronize would. Those that completed (settle waited for the others, unless no wait was
 * possible: a capture, a host function) are learned; each round orders what it found, so the
 * next finds only the rest. */
static void order_host_after(const probe_t *q, pg_access_t *found, size_t cap) {
  for (int round = 0; round < 64; round++) {
    size_t n = run_probe(q, found, cap), have = n < cap ? n : cap, learned = 0;
    for (size_t i = 0; i < have; i++) {
      if (!found[i].completed) continue; /* still running: nothing waited for it */
      pg_hb_access_waited(&found[i]);
      learned++;
    }
    if (!learned || n <= cap) return;
  }
}

int pg_on_annotation(pg_annotation_t what, const void *p, size_t n, const pg_stack_t *st) {
  pg_access_t found[MAX_FOUND];
  probe_t any = {.kind = PROBE_ANY, .p = p, .n = n};
  probe_t writes = {.kind = PROBE_WRITES, .p = p, .n = n};
  switch (what) {
    case PG_ANN_RELEASE:
      return settle(PG_KIND_RELEASE_DURING_DEVICE_ACCESS, &any, "pinguard_release", st, found,
                    MAX_FOUND, false, 0);
    case PG_ANN_COMMIT:
      return settle(PG_KIND_COMMIT_DURING_DEVICE_WRITE, &writes, "pinguard_commit", st, found,
                    MAX_FOUND, false, 0);
    case PG_ANN_WAIT: {
      int total = settle(PG_KIND_RELEASE_DURING_DEVICE_ACCESS, &any, "pinguard_wait", st, found,
                         MAX_FOUND, true, 0);
      if (total > 0) order_host_after(&any, found, MAX_FOUND);
      return total;
    }
  }
  return 0;
}
