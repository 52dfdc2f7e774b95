/* test_tracker_hb.c: happens-before between streams and the host: stream order, events recorded
 * and waited, host syncs (stream, event, device), the legacy default stream's implicit
 * ordering, non-blocking and per-thread streams, and that correctly ordered code never
 * conflicts. Streams are held busy by gates, so every access is really in flight. */
#include <pthread.h>
#include <sched.h>

#include "test_tracker_support.h"

#define N 65536

static char *buf;
static void *dev;
static cudaStream_t s1, s2, s3;

static void setup(void) {
  tt_init_tracker();
  buf = tt_pinned(N);
  dev = tt_device(N);
  s1 = tt_stream(cudaStreamDefault);
  s2 = tt_stream(cudaStreamDefault);
  s3 = tt_stream(cudaStreamDefault);
}

static size_t conflicts(pg_dir_t dir, cudaStream_t s) {
  pg_access_t out[8];
  return pg_access_conflicts(buf, N, dir, s, out, 8);
}

TestSuite(tracker_hb, .init = setup, .fini = tt_teardown, .timeout = 30);

Test(tracker_hb, same_stream_is_ordered) {
  tt_close_gate(s1);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
  cr_assert_eq(conflicts(PG_DIR_WRITE, s1), 0);
  cr_assert_eq(conflicts(PG_DIR_READ, s1), 0);
}

Test(tracker_hb, unordered_cross_stream_write_write) {
  tt_close_gate(s1);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
  pg_access_t out[4];
  cr_assert_eq(pg_access_conflicts(buf + 100, 10, PG_DIR_WRITE, s2, out, 4), 1);
  cr_assert_eq(out[0].stream, s1);
  cr_assert_eq(pg_access_conflicts(buf + 4096, 10, PG_DIR_WRITE, s2, out, 4), 0,
               "disjoint bytes never conflict");
}

Test(tracker_hb, read_read_never_conflicts) {
  tt_close_gate(s1);
  cr_assert_eq(tt_copy_h2d(dev, buf, 4096, s1), 1);
  cr_assert_eq(conflicts(PG_DIR_READ, s2), 0);
  cr_assert_eq(conflicts(PG_DIR_WRITE, s2), 1, "write after read (WAR)");
  cr_assert_eq(conflicts(PG_DIR_UNKNOWN, s2), 1, "unknown counts as a write");
}

Test(tracker_hb, read_after_write_conflicts) {
  tt_close_gate(s1);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
  cr_assert_eq(conflicts(PG_DIR_READ, s2), 1);
}

Test(tracker_hb, event_record_and_wait_orders) {
  cudaEvent_t e;
  cr_assert_eq(cudaEventCreate(&e), cudaSuccess);
  tt_close_gate(s1);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
  tt_record(e, s1);
  tt_wait_event(s2, e);
  cr_assert_eq(conflicts(PG_DIR_WRITE, s2), 0, "s2 waits for the event after the copy");
  cr_assert_eq(conflicts(PG_DIR_WRITE, s3), 1, "s3 does not");
  /* transitively: s3 waits for an event recorded on s2 after s2's wait */
  cudaEvent_t e2;
  cr_assert_eq(cudaEventCreate(&e2), cudaSuccess);
  tt_record(e2, s2);
  tt_wait_event(s3, e2);
  cr_assert_eq(conflicts(PG_DIR_WRITE, s3), 0);
}

Test(tracker_hb, event_recorded_before_the_access_does_not_order_it) {
  cudaEvent_t e;
  cr_assert_eq(cudaEventCreate(&e), cudaSuccess);
  tt_close_gate(s1);
  tt_record(e, s1);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
  tt_wait_event(s2, e);
  cr_assert_eq(conflicts(PG_DIR_WRITE, s2), 1);
}

Test(tracker_hb, re_recording_an_event_moves_it) {
  cudaEvent_t e;
  cr_assert_eq(cudaEventCreate(&e), cudaSuccess);
  tt_close_gate(s1);
  tt_record(e, s1);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
  tt_record(e, s1);
  tt_wait_event(s2, e);
  cr_assert_eq(conflicts(PG_DIR_WRITE, s2), 0);
}

Test(tracker_hb, stream_sync_completes_and_retires) {
  tt_close_gate(s1);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
  tt_open_gates();
  tt_stream_sync(s1);
  cr_assert_eq(pg_tracker_inflight_count(), 0);
  cr_assert_eq(conflicts(PG_DIR_WRITE, s2), 0);
}

Test(tracker_hb, stream_query_success_completes) {
  tt_close_gate(s1);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
  pg_hb_sync_prepare(s1);
  cr_assert_eq(cudaStreamQuery(s1), cudaErrorNotReady);
  pg_hb_sync_done(0);
  cr_assert_eq(pg_tracker_inflight_count(), 1, "a failed query teaches nothing");
  tt_open_gates();
  cr_assert_eq(cudaStreamSynchronize(s1), cudaSuccess);
  pg_hb_sync_prepare(s1);
  cr_assert_eq(cudaStreamQuery(s1), cudaSuccess);
  pg_hb_sync_done(1);
  cr_assert_eq(pg_tracker_inflight_count(), 0);
}

Test(tracker_hb, event_sync_host_joins_its_clock) {
  cudaEvent_t e;
  cr_assert_eq(cudaEventCreate(&e), cudaSuccess);
  tt_close_gate(s1);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
  tt_record(e, s1);
  cr_assert_eq(tt_copy_d2h(buf + 8192, dev, 4096, s1), 1); /* after the event */
  cr_assert_eq(cudaStreamWaitEvent(s2, e, 0), cudaSuccess); /* (s2 just waits too) */
  tt_open_gates();
  cr_assert_eq(cudaEventSynchronize(e), cudaSuccess);
  pg_hb_event_completed(e);
  pg_access_t out[4];
  cr_assert_eq(pg_access_conflicts(buf, 4096, PG_DIR_WRITE, s3, out, 4), 0,
               "complete per the host clock");
  pg_hb_event_destroyed(e);
  cr_assert_eq(cudaEventDestroy(e), cudaSuccess);
}

Test(tracker_hb, device_sync_completes_everything) {
  tt_close_gate(s1);
  tt_close_gate(s2);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
  cr_assert_eq(tt_copy_d2h(buf + 8192, dev, 4096, s2), 1);
  tt_open_gates();
  tt_device_sync();
  cr_assert_eq(pg_tracker_inflight_count(), 0);
}

Test(tracker_hb, sync_covers_only_work_enqueued_before_it) {
  /* Another thread's work enqueued while a sync blocks is not covered by that sync. */
  pg_hb_sync_prepare_device();
  tt_close_gate(s1);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
  pg_hb_sync_done(1);
  cr_assert_eq(pg_tracker_inflight_count(), 1);
  cr_assert_eq(conflicts(PG_DIR_WRITE, s2), 1);
  /* A stream sync covers what was enqueued on it before the call, not what came after. */
  pg_hb_sync_prepare(s1);
  cr_assert_eq(tt_copy_d2h(buf + 8192, dev, 4096, s1), 1);
  pg_hb_sync_done(1);
  pg_access_t out[4];
  cr_assert_eq(pg_access_conflicts(buf, N, PG_DIR_WRITE, s2, out, 4), 1);
  cr_assert_eq(out[0].lo, (uintptr_t)buf + 8192);
}

Test(tracker_hb, legacy_stream_orders_blocking_streams) {
  tt_close_gate(s1);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
  cr_assert_eq(conflicts(PG_DIR_WRITE, 0), 0, "legacy work waits for prior blocking work");
  cr_assert_eq(conflicts(PG_DIR_WRITE, cudaStreamLegacy), 0);
}

Test(tracker_hb, blocking_streams_wait_for_legacy_work) {
  tt_close_gate(0);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, 0), 1);
  cr_assert_eq(conflicts(PG_DIR_WRITE, s2), 0, "blocking work waits for prior legacy work");
}

Test(tracker_hb, legacy_orders_transitively) {
  tt_close_gate(s1);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
  /* an untracked op on the legacy stream (waits for s1) then work on s2 (waits for it) */
  cr_assert_eq(cudaMemsetAsync(dev, 0, 16, 0), cudaSuccess);
  pg_hb_enqueue(0);
  cr_assert_eq(conflicts(PG_DIR_WRITE, s2), 0);
}

/* The legacy stream joins its device's blocking streams at each of its ops only when one of
 * their clocks moved since its last join: rounds in which blocking stream s1's clock moves by
 * its own work (a copy) or only by waiting for an event after a non-blocking stream's copy, each
 * followed by legacy work, then by work on blocking stream s2: s2 is ordered after the round's
 * copy through the legacy stream. Fails from the second round on when such a move goes unseen
 * (a path that changes a blocking stream's clock without moving the version). */
Test(tracker_hb, legacy_stream_joins_each_move_of_a_blocking_stream) {
  cudaStream_t nb = tt_stream(cudaStreamNonBlocking);
  cudaEvent_t e;
  cr_assert_eq(cudaEventCreate(&e), cudaSuccess);
  tt_close_gate(s1);
  tt_close_gate(nb);
  for (int round = 0; round < 6; round++) {
    char *p = buf + 4096 * round;
    if (round % 2 == 0) {
      cr_assert_eq(tt_copy_d2h(p, dev, 4096, s1), 1);
    } else {
      cr_assert_eq(tt_copy_d2h(p, dev, 4096, nb), 1);
      cr_assert_eq(cudaEventRecord(e, nb), cudaSuccess);
      pg_hb_event_record(e, nb);
      cr_assert_eq(cudaStreamWaitEvent(s1, e, 0), cudaSuccess);
      pg_hb_stream_wait_event(s1, e);
    }
    pg_access_t out[4];
    cr_assert_eq(pg_access_conflicts(p, 4096, PG_DIR_WRITE, s2, out, 4), 1,
                 "round %d: s2 not yet ordered after the copy", round);
    cr_assert_eq(cudaMemsetAsync(dev, 0, 16, 0), cudaSuccess); /* legacy work: after s1's */
    pg_hb_enqueue(0);
    pg_hb_enqueue(s2); /* s2's work: after the legacy work */
    cr_assert_eq(pg_access_conflicts(p, 4096, PG_DIR_WRITE, s2, out, 4), 0,
                 "round %d: s2 ordered after the %s copy through the legacy stream", round,
                 round % 2 ? "waited-for" : "blocking stream's");
  }
  tt_open_gates();
  tt_device_sync();
  cudaEventDestroy(e);
}

/* A conflict check comes before the enqueue that applies the legacy stream's implicit order: it
 * must see that order as the enqueue will. The joined clock counts whole, not only the work on
 * the joined stream: here it holds a non-blocking stream's copy, learned by an event wait. */
static cudaEvent_t record_after_copy(cudaStream_t nb) {
  cudaEvent_t e;
  cr_assert_eq(cudaEventCreate(&e), cudaSuccess);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, nb), 1);
  cr_assert_eq(cudaEventRecord(e, nb), cudaSuccess);
  pg_hb_event_record(e, nb);
  return e;
}

Test(tracker_hb, blocking_stream_checks_see_what_the_legacy_stream_waited_for) {
  cudaStream_t nb = tt_stream(cudaStreamNonBlocking);
  tt_close_gate(nb);
  cudaEvent_t e = record_after_copy(nb);
  cr_assert_eq(conflicts(PG_DIR_WRITE, s2), 1, "nothing orders s2 after the copy yet");
  cr_assert_eq(cudaStreamWaitEvent(0, e, 0), cudaSuccess);
  pg_hb_stream_wait_event(0, e);
  cr_assert_eq(conflicts(PG_DIR_WRITE, s2), 0, "s2's next op waits for the legacy stream's wait");
  cr_assert_eq(conflicts(PG_DIR_WRITE, tt_stream(cudaStreamNonBlocking)), 1,
               "a non-blocking stream's does not");
  tt_open_gates();
  tt_device_sync();
  cudaEventDestroy(e);
}

Test(tracker_hb, legacy_stream_checks_see_what_blocking_streams_waited_for) {
  cudaStream_t nb = tt_stream(cudaStreamNonBlocking);
  tt_close_gate(nb);
  cudaEvent_t e = record_after_copy(nb);
  cr_assert_eq(conflicts(PG_DIR_WRITE, 0), 1, "nothing orders the legacy stream after the copy");
  cr_assert_eq(cudaStreamWaitEvent(s1, e, 0), cudaSuccess);
  pg_hb_stream_wait_event(s1, e);
  cr_assert_eq(conflicts(PG_DIR_WRITE, 0), 0, "the legacy stream's next op waits for s1's wait");
  cr_assert_eq(conflicts(PG_DIR_WRITE, cudaStreamLegacy), 0);
  cr_assert_eq(conflicts(PG_DIR_WRITE, s2), 1, "s2's next op waits for the legacy stream's "
               "work before it, and there was none after s1's wait");
  tt_open_gates();
  tt_device_sync();
  cudaEventDestroy(e);
}

/* What an H200 does (bench/gpu/legacy_order.cu), where CUDA's text is silent or promises less:
 * a synchronize of the legacy stream covers the work already on its device's blocking streams;
 * a wait on a blocking stream is no op of the implicit order, nor is a wait on the legacy
 * stream for an event never recorded. */
Test(tracker_hb, legacy_sync_covers_the_blocking_streams_work) {
  cudaStream_t nb = tt_stream(cudaStreamNonBlocking);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
  cr_assert_eq(tt_copy_d2h(buf + 8192, dev, 4096, nb), 1);
  tt_stream_sync(0);
  pg_access_t out[4];
  cr_assert_eq(pg_access_conflicts(buf, 4096, PG_DIR_WRITE, nb, out, 4), 0,
               "the host is ordered after the blocking stream's copy");
  cr_assert_eq(pg_access_conflicts(buf + 8192, 4096, PG_DIR_WRITE, s2, out, 4), 1,
               "not after the non-blocking stream's");
  tt_device_sync();
}

Test(tracker_hb, legacy_query_success_covers_the_blocking_streams_work) {
  cudaStream_t nb = tt_stream(cudaStreamNonBlocking);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
  cr_assert_eq(cudaStreamSynchronize(s1), cudaSuccess); /* done, but the host not told */
  pg_hb_sync_prepare(0);
  cr_assert_eq(cudaStreamQuery(0), cudaSuccess);
  pg_hb_sync_done(1);
  cr_assert_eq(conflicts(PG_DIR_WRITE, nb), 0);
}

Test(tracker_hb, a_wait_on_a_blocking_stream_does_not_join_the_legacy_stream) {
  cudaEvent_t e;
  cr_assert_eq(cudaEventCreate(&e), cudaSuccess);
  tt_record(e, s3);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, 0), 1);
  tt_wait_event(s1, e);
  tt_stream_sync(s1);
  cr_assert_eq(conflicts(PG_DIR_WRITE, tt_stream(cudaStreamNonBlocking)), 1,
               "the host is not ordered after the legacy stream's copy");
  tt_device_sync();
  cudaEventDestroy(e);
}

Test(tracker_hb, a_legacy_wait_joins_blocking_streams_only_for_a_recorded_event) {
  cudaEvent_t never, e;
  cr_assert_eq(cudaEventCreate(&never), cudaSuccess);
  cr_assert_eq(cudaEventCreate(&e), cudaSuccess);
  tt_record(e, s3);
  tt_close_gate(s1);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
  tt_wait_event(0, never);
  cr_assert_eq(conflicts(PG_DIR_WRITE, s2), 1, "s2 not ordered through a wait on nothing");
  tt_wait_event(0, e);
  cr_assert_eq(conflicts(PG_DIR_WRITE, s2), 0, "s2 ordered through the legacy stream's wait");
  tt_open_gates();
  tt_device_sync();
  cudaEventDestroy(never);
  cudaEventDestroy(e);
}

Test(tracker_hb, legacy_work_enqueued_before_does_not_order_later_work) {
  cr_assert_eq(cudaMemsetAsync(dev, 0, 16, 0), cudaSuccess);
  pg_hb_enqueue(0);
  tt_close_gate(s1);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
  /* s2 is ordered after the legacy op, which came before s1's copy: no order between them */
  cr_assert_eq(conflicts(PG_DIR_WRITE, s2), 1);
}

Test(tracker_hb, non_blocking_stream_not_ordered_by_legacy) {
  cudaStream_t nb = tt_stream(cudaStreamNonBlocking);
  tt_close_gate(nb);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, nb), 1);
  cr_assert_eq(conflicts(PG_DIR_WRITE, 0), 1, "legacy does not wait for non-blocking work");
  tt_open_gates();
  tt_device_sync();
  tt_close_gate(0);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, 0), 1);
  cr_assert_eq(conflicts(PG_DIR_WRITE, nb), 1, "non-blocking work does not wait for legacy");
}

Test(tracker_hb, flags_given_by_the_shim) {
  cudaStream_t nb = tt_stream(cudaStreamNonBlocking);
  pg_hb_stream_flags(nb, cudaStreamNonBlocking);
  tt_close_gate(nb);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, nb), 1);
  cr_assert_eq(conflicts(PG_DIR_WRITE, 0), 1);
}

static void *other_thread_conflicts(void *arg) {
  *(size_t *)arg = conflicts(PG_DIR_WRITE, cudaStreamPerThread);
  return NULL;
}

Test(tracker_hb, per_thread_default_streams_are_distinct) {
  tt_close_gate(cudaStreamPerThread);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, cudaStreamPerThread), 1);
  cr_assert_eq(conflicts(PG_DIR_WRITE, cudaStreamPerThread), 0, "this thread's own stream");
  size_t other = 0;
  pthread_t t;
  pthread_create(&t, NULL, other_thread_conflicts, &other);
  pthread_join(t, NULL);
  cr_assert_eq(other, 1, "another thread's per-thread stream is another stream");
}

/* Correctly ordered code never conflicts: a ping-pong of host->device and device->host copies of
 * the same buffer on two streams, each ordered after the other by events. */
Test(tracker_hb, correctly_ordered_code_never_conflicts) {
  cudaEvent_t e1, e2;
  cr_assert_eq(cudaEventCreateWithFlags(&e1, cudaEventDisableTiming), cudaSuccess);
  cr_assert_eq(cudaEventCreateWithFlags(&e2, cudaEventDisableTiming), cudaSuccess);
  cudaStream_t a = tt_stream(cudaStreamNonBlocking), b = tt_stream(cudaStreamNonBlocking);
  for (int i = 0; i < 200; i++) {
    cr_assert_eq(pg_access_conflicts(buf, 4096, PG_DIR_READ, a, NULL, 0), 0, "iter %d", i);
    cr_assert_eq(tt_copy_h2d(dev, buf, 4096, a), 1);
    tt_record(e1, a);
    tt_wait_event(b, e1);
    cr_assert_eq(pg_access_conflicts(buf, 4096, PG_DIR_WRITE, b, NULL, 0), 0, "iter %d", i);
    cr_assert_eq(tt_copy_d2h(buf, dev, 4096, b), 1);
    tt_record(e2, b);
    tt_wait_event(a, e2);
    if (i % 50 == 49) tt_device_sync();
  }
}

Test(tracker_hb, destroyed_stream_work_stays_in_flight) {
  cudaStream_t s = tt_stream(cudaStreamNonBlocking);
  tt_close_gate(s);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s), 1);
  cr_assert_eq(cudaStreamDestroy(s), cudaSuccess);
  pg_hb_stream_destroyed(s);
  cudaStream_t t = tt_stream(cudaStreamNonBlocking); /* may reuse the handle */
  cr_assert_eq(conflicts(PG_DIR_WRITE, t), 1, "a new stream is not ordered after it");
  tt_open_gates();
  tt_device_sync();
  cr_assert_eq(pg_tracker_inflight_count(), 0);
}

Test(tracker_hb, stream_states_are_recycled) {
  /* many short-lived streams: ids are reused once each one's work drained */
  for (int i = 0; i < 600; i++) { /* more than PG_MAX_STREAMS (512) */
    cudaStream_t s = tt_stream(cudaStreamNonBlocking);
    cr_assert_eq(tt_copy_d2h(buf, dev, 64, s), 1, "stream %d", i);
    tt_stream_sync(s);
    cr_assert_eq(cudaStreamDestroy(s), cudaSuccess);
    pg_hb_stream_destroyed(s);
  }
  cr_assert_eq(pg_tracker_inflight_count(), 0);
}

/* Past the stream limit (lowered here; 1,048,576 by default) a new stream gets no state: never
 * silently. Its copies are counted untracked, and checked as a stream ordered after nothing. */
static _Atomic uint64_t untracked_count;
static void count_untracked(pg_tracker_stat_t what, uint64_t n) {
  if (what == PG_TRACKER_UNTRACKED) atomic_fetch_add(&untracked_count, n);
}

Test(tracker_hb, past_the_stream_limit_is_counted_and_checked) {
  pg_tracker_set_stat_hook(count_untracked);
  tt_close_gate(s1);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
  pg_tracker_set_max_streams(1); /* s1 holds the one id */
  cudaStream_t over = tt_stream(cudaStreamNonBlocking);
  cr_assert_eq(conflicts(PG_DIR_READ, over), 1,
               "an untracked stream's read still conflicts with an unordered write");
  cr_assert_eq(conflicts(PG_DIR_WRITE, s2), 1);
  cr_assert_eq(tt_copy_d2h(buf + 8192, dev, 4096, over), -1, "its own copy is not tracked");
  cr_assert_eq(atomic_load(&untracked_count), 1, "and counted");
  tt_open_gates();
  tt_stream_sync(s1);
  cr_assert_eq(conflicts(PG_DIR_READ, over), 0, "once the host is ordered after the write");
  pg_tracker_set_max_streams(UINT32_MAX);
  pg_tracker_set_stat_hook(NULL);
}

/* Many streams reading the same bytes: a read checks only against what may write (the reads are
 * kept apart), a write against all of them. */
Test(tracker_hb, many_readers_and_one_writer) {
  enum { READERS = 64 };
  static cudaStream_t rs[READERS];
  for (int i = 0; i < READERS; i++) {
    rs[i] = tt_stream(cudaStreamNonBlocking);
    if (i == 0) tt_close_gate(rs[0]);
    cr_assert_eq(tt_copy_h2d(dev, buf, 4096, rs[i]), 1);
  }
  pg_access_t out[READERS + 4];
  cudaStream_t w = tt_stream(cudaStreamNonBlocking);
  cr_assert_eq(pg_access_conflicts(buf, 4096, PG_DIR_READ, w, out, READERS + 4), 0,
               "reads never conflict with reads");
  cr_assert_eq(pg_access_conflicts(buf, 4096, PG_DIR_WRITE, w, out, READERS + 4), READERS,
               "a write conflicts with every unordered read");
  cr_assert_eq(tt_copy_d2h(buf + 1024, dev, 16, s1), 1);
  cr_assert_eq(pg_access_conflicts(buf, 4096, PG_DIR_READ, w, out, READERS + 4), 1,
               "a read finds the one write among the reads");
  cr_assert_eq(out[0].stream, s1);
  cr_assert_eq(pg_access_conflicts(buf + 2048, 16, PG_DIR_READ, w, out, READERS + 4), 0,
               "not where the write is not");
  tt_open_gates();
  tt_device_sync();
  cr_assert_eq(pg_tracker_inflight_count(), 0);
}

/* Thousands of streams alive at once, each tracked (the first id chunk holds 1,024). */
Test(tracker_hb, thousands_of_streams_are_tracked) {
  enum { MANY = 1100 };
  static cudaStream_t many[MANY];
  for (int i = 0; i < MANY; i++) {
    many[i] = tt_stream(cudaStreamNonBlocking);
    cr_assert_eq(tt_copy_h2d(dev, buf + (i % 16) * 4096, 4096, many[i]), 1, "stream %d", i);
  }
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, many[MANY - 1]), 1);
  cr_assert_eq(conflicts(PG_DIR_READ, s1), 1, "the last stream's write, unordered");
  cudaEvent_t e;
  cr_assert_eq(cudaEventCreate(&e), cudaSuccess);
  tt_record(e, many[MANY - 1]);
  tt_wait_event(s1, e);
  cr_assert_eq(conflicts(PG_DIR_READ, s1), 0, "ordered through an event");
  tt_device_sync();
  cr_assert_eq(pg_tracker_inflight_count(), 0);
}

/* ---- host functions: CPU work in a stream's order ---------------------------------------- */
typedef struct hostfn_probe {
  pg_hostfn_pos_t pos;
  _Atomic int ready, ran;
  size_t seen;          /* in-flight accesses overlapping buf, as the host function sees them */
} hostfn_probe_t;

static void CUDART_CB probe_hostfn(void *arg) {
  hostfn_probe_t *p = arg;
  while (!atomic_load(&p->ready)) sched_yield();
  pg_hb_hostfn_enter(&p->pos);
  pg_access_t out[8];
  p->seen = pg_inflight_query(buf, N, 0, out, 8);
  pg_hb_hostfn_leave();
  atomic_store(&p->ran, 1);
}

static cudaError_t launch_probe(void *arg) {
  void **a = arg;
  return cudaLaunchHostFunc((cudaStream_t)a[0], probe_hostfn, a[1]);
}

static void enqueue_probe(cudaStream_t s, hostfn_probe_t *p) {
  void *a[2] = {s, p};
  cr_assert_eq(pg_hb_hostfn_enqueue(s, launch_probe, a, &p->pos), cudaSuccess);
  cr_assert_neq(p->pos.stream_id, 0);
  atomic_store(&p->ready, 1);
}

/* A copy queued after the host function on its stream cannot have started: not in flight for
 * the host function. One queued before it has completed by the time it runs. */
Test(tracker_hb, host_function_sees_only_what_its_stream_leaves_unordered) {
  static hostfn_probe_t after;
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);  /* before `after` on s1: complete then */
  enqueue_probe(s1, &after);
  cr_assert_eq(tt_copy_d2h(buf + 4096, dev, 4096, s1), 1); /* after it: not started */
  tt_stream_sync(s1);
  cr_assert(atomic_load(&after.ran));
  cr_assert_eq(after.seen, 0, "the earlier copy completed, the later one waits behind it");
}

/* Work on another stream with no ordering is in flight for the host function. */
Test(tracker_hb, host_function_sees_unordered_work_on_other_streams) {
  static hostfn_probe_t p;
  tt_close_gate(s2);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s2), 1);
  enqueue_probe(s1, &p);
  tt_stream_sync(s1);
  cr_assert(atomic_load(&p.ran));
  cr_assert_eq(p.seen, 1);
  cr_assert_not(pg_hb_in_hostfn(), "the context ends with the host function");
}
