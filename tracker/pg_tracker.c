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
size_t pg_hook_min_region;
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

size_t pg_unordered_cap = PG_UNORDERED_CAP_DEFAULT;
static void (*_Atomic g_stat_hook)(pg_tracker_stat_t, uint64_t);

void pg_tracker_set_unordered_cap(size_t cap) { pg_unordered_cap = cap ? cap : 1; }

unsigned pg_event_every = 1;
void pg_tracker_set_event_every(unsigned every) { pg_event_every = every ? every : 1; }

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

void pg_tracker_set_hook_min_region(size_t bytes) { pg_hook_min_region = bytes; }

static void lock_rec(pg_region_rec_t *r) { pg_lock(&r->mu); }
static void unlock_rec(pg_region_rec_t *r) { pg_unlock(&r->mu); }
static void reset_rec(pg_region_rec_t *r) {
  pg_unlock(&r->mu);
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
