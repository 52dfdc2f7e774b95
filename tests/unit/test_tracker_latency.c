/* test_tracker_latency.c: completion on simcuda's simulated latency (SIMCUDA_LATENCY_US=300000,
 * set by CTest): a copy is running while the stream has not reached it, completed once the
 * stream did, and tracked until the program orders it. The margin is large on purpose: the check right after the enqueue must
 * come well within the latency even on a loaded machine. */
#include "test_tracker_support.h"

static void setup(void) { tt_init_tracker(); }

TestSuite(tracker_latency, .init = setup, .fini = tt_teardown, .timeout = 30);

Test(tracker_latency, in_flight_until_the_stream_completes) {
  void *buf = tt_pinned(65536), *dev = tt_device(65536);
  cudaStream_t s = tt_stream(cudaStreamDefault);
  cr_assert_eq(tt_copy_d2h(buf, dev, 65536, s), 1);
  pg_tracker_retire();
  pg_access_t a;
  cr_assert_eq(pg_inflight_query(buf, 65536, 1, &a, 1), 1, "enqueued, not yet executed");
  cr_assert_eq(pg_tracker_inflight_count(), 1);
  cr_assert(!a.completed, "still running");
  cr_assert_eq(cudaStreamSynchronize(s), cudaSuccess); /* the tracker is not told */
  pg_tracker_retire();
  cr_assert_eq(pg_tracker_inflight_count(), 1, "its event completed, but nothing ordered it");
  cr_assert_eq(pg_inflight_query(buf, 65536, 0, &a, 1), 1);
  cr_assert(a.completed);
  tt_stream_sync(s);
  cr_assert_eq(pg_tracker_inflight_count(), 0, "ordered: retired");
  cr_assert_eq(pg_inflight_query(buf, 65536, 0, &a, 1), 0);
}

Test(tracker_latency, wait_on_the_access) {
  void *buf = tt_pinned(65536), *dev = tt_device(65536);
  cudaStream_t s = tt_stream(cudaStreamDefault);
  cr_assert_eq(tt_copy_h2d(dev, buf, 65536, s), 1);
  pg_access_t a;
  cr_assert_eq(pg_inflight_query(buf, 1, 0, &a, 1), 1);
  cr_assert(!a.completed);
  cr_assert(pg_access_wait(&a));
  cr_assert_eq(pg_access_find(PG_QUERY_ANY, PG_FIND_RUNNING, buf, 1, PG_DIR_READ, 0, &a, 1), 0,
               "the wait saw it complete");
  cr_assert_eq(pg_tracker_inflight_count(), 1, "and ordered nothing");
}
