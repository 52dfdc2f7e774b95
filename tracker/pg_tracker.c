/* pg_tracker.c: the tracker's setup (its device-operations table, guard-page hooks) and its fork
 * handlers, which take every lock in the documented order and reset the child's in-flight
 * state. */
#include <string.h>

#include "pg_stamp.h"
#include "pg_tracker_internal.h"

pg_devops_t pg_ops;
pg_access_begin_fn pg_hook_begin;
pg_access_hook_fn pg_hook_retire;
void *pg_hook_ctx;
atomic_size_t pg_inflight_total;
__thread int pg_hash_oom;

int pg_tracker_init(const pg_devops_t *ops) {
  if (!ops || !ops->event_create || !ops->event_record || !ops->event_query ||
      !ops->event_synchronize || !ops->event_destroy)
    return -1;
  pg_ops = *ops;
  pg_stamp_calibrate();
  return 0;
}

/* ---- enqueue stamps (pg_stamp.h) --------------------------------------------------------------
 * The counter's rate is the ratio of counter to clock over the longest interval at hand: from
 * tracker start to the report asking. */
static _Atomic uint64_t g_cal_stamp, g_cal_ns;

void pg_stamp_calibrate(void) {
  if (atomic_load(&g_cal_ns)) return;
  atomic_store(&g_cal_stamp, pg_stamp());
  atomic_store(&g_cal_ns, pg_clock_ns());
}

uint64_t pg_stamp_age_ns(uint64_t then) {
  uint64_t now = pg_stamp();
  if (then >= now) return 0;
#if defined(__x86_64__) || defined(__aarch64__)
  uint64_t ns = pg_clock_ns(), s0 = atomic_load(&g_cal_stamp), n0 = atomic_load(&g_cal_ns);
  if (!n0 || now <= s0 || ns <= n0) return 0; /* not calibrated yet */
  return (uint64_t)((double)(now - then) * ((double)(ns - n0) / (double)(now - s0)));
#else
  return now - then;
#endif
}

size_t pg_unordered_cap = PG_UNORDERED_CAP_DEFAULT;
static void (*_Atomic g_stat_hook)(pg_tracker_stat_t, uint64_t);

void pg_tracker_set_unordered_cap(size_t cap) { pg_unordered_cap = cap ? cap : 1; }

void pg_tracker_set_stat_hook(void (*fn)(pg_tracker_stat_t what, uint64_t n)) {
  atomic_store_explicit(&g_stat_hook, fn, memory_order_release);
}

void pg_tracker_count(pg_tracker_stat_t what, uint64_t n) {
  void (*fn)(pg_tracker_stat_t, uint64_t) = atomic_load_explicit(&g_stat_hook,
                                                                 memory_order_acquire);
  if (fn && n) fn(what, n);
}

void pg_tracker_set_hooks(pg_access_begin_fn on_begin, pg_access_hook_fn on_retire, void *ctx) {
  pg_hook_ctx = ctx;
  pg_hook_begin = on_begin;
  pg_hook_retire = on_retire;
}

static void lock_rec(pg_region_rec_t *r) { pthread_mutex_lock(&r->mu); }
static void unlock_rec(pg_region_rec_t *r) { pthread_mutex_unlock(&r->mu); }
static void reset_rec(pg_region_rec_t *r) {
  pthread_mutex_unlock(&r->mu);
  pg_inflight_clear_region_child(r); /* the child inherited the parent's in-flight pieces */
}

void pg_tracker_atfork_prepare(void) {
  pg_events_atfork(0);
  pg_streams_lock_map(true);
  pg_regions_lock_writer();
  pg_regions_for_each_rec(lock_rec);
  pg_streams_atfork(0);
  pg_hostfns_atfork(0);
}

void pg_tracker_atfork_parent(void) {
  pg_hostfns_atfork(1);
  pg_streams_atfork(1);
  pg_regions_for_each_rec(unlock_rec);
  pg_regions_unlock_writer();
  pg_streams_lock_map(false);
  pg_events_atfork(1);
}

void pg_tracker_atfork_child(void) {
  pg_hostfns_atfork(2);
  pg_regions_for_each_rec(reset_rec); /* before the streams free the access records */
  pg_streams_atfork(2);
  pg_regions_unlock_writer();
  pg_streams_reset_map_lock_child();
  pg_events_atfork(1);
}
