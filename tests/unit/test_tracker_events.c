/* test_tracker_events.c: completion events shared by several accesses (pg_tracker_set_event_every,
 * audit's audit_event_every) on simcuda's real streams: one event per K accesses, completion
 * learned from the next event on the stream, pg_access_cover finding or recording the event that
 * covers an access, guarded pieces keeping their own, and retirement unchanged. */
#include <pthread.h>
#include <stdlib.h>

#include "test_tracker_support.h"

#define N (1 << 20)

static void *buf, *dev;
static cudaStream_t s1;

static void setup(void) { tt_setup_one_stream(N, &buf, &dev, &s1); }

static void teardown(void) {
  tt_teardown();
  pg_tracker_set_event_every(1);
}

/* Queries answer in no set order: by address (the stream's order in these tests). */
static int by_address(const void *x, const void *y) {
  const pg_access_t *a = x, *b = y;
  return a->lo < b->lo ? -1 : a->lo > b->lo;
}
static size_t query_sorted(pg_access_t *out, size_t cap) {
  size_t n = pg_inflight_query(buf, N, 1, out, cap);
  qsort(out, n < cap ? n : cap, sizeof *out, by_address);
  return n;
}

TestSuite(tracker_events, .init = setup, .fini = teardown, .timeout = 30);

Test(tracker_events, one_event_per_k_accesses) {
  pg_tracker_set_event_every(4);
  tt_close_gate(s1); /* nothing completes: every event stays taken */
  for (int i = 0; i < 12; i++) cr_assert_eq(tt_copy_d2h((char *)buf + 4096 * i, dev, 4096, s1), 1);
  cr_assert_eq(atomic_load(&tt_events_created), 3, "the 4th, 8th and 12th copies record one");
  pg_access_t found[12];
  cr_assert_eq(query_sorted(found, 12), 12, "every copy is tracked all the same");
  for (int i = 0; i < 12; i++) {
    size_t page = (found[i].lo - (uintptr_t)buf) / 4096;
    cr_assert_eq(found[i].event != NULL, page % 4 == 3, "copy %zu", page);
    cr_assert(!found[i].completed);
  }
  tt_open_gates();
  tt_stream_sync(s1);
  cr_assert_eq(pg_tracker_inflight_count(), 0, "a synchronize retires them without events");
}

static bool hook_begin(uintptr_t *lo, uintptr_t *hi, pg_dir_t dir, const pg_region_t *reg,
                       void *ctx) {
  (void)lo, (void)hi, (void)dir, (void)reg, (void)ctx;
  return true;
}
static void hook_retire(uintptr_t lo, uintptr_t hi, pg_dir_t dir, void *ctx) {
  (void)lo, (void)hi, (void)dir, (void)ctx;
}

Test(tracker_events, guarded_pieces_keep_their_own_events) {
  pg_tracker_set_event_every(4);
  pg_tracker_set_hooks(hook_begin, hook_retire, NULL);
  pg_tracker_set_hook_min_region(N); /* buf is guarded, small is not */
  void *small = tt_pinned(4096 * 4);
  tt_close_gate(s1);
  for (int i = 0; i < 3; i++) cr_assert_eq(tt_copy_d2h((char *)buf + 4096 * i, dev, 4096, s1), 1);
  cr_assert_eq(atomic_load(&tt_events_created), 3, "a guarded piece records its own");
  for (int i = 0; i < 3; i++) cr_assert_eq(tt_copy_d2h((char *)small + 4096 * i, dev, 4096, s1), 1);
  cr_assert_eq(atomic_load(&tt_events_created), 3, "the others share the next one");
  cr_assert_eq(tt_copy_d2h(small, dev, 4096, s1), 1);
  cr_assert_eq(atomic_load(&tt_events_created), 4, "the 4th since the last event records one");
  tt_open_gates();
  tt_stream_sync(s1);
  cr_assert_eq(pg_tracker_inflight_count(), 0);
  pg_tracker_set_hook_min_region(0);
  pg_tracker_set_hooks(NULL, NULL, NULL);
}

Test(tracker_events, cover_finds_the_next_event_or_records_one) {
  pg_tracker_set_event_every(4);
  tt_close_gate(s1);
  for (int i = 0; i < 6; i++) cr_assert_eq(tt_copy_d2h((char *)buf + 4096 * i, dev, 4096, s1), 1);
  pg_access_t first, last;
  cr_assert_eq(pg_inflight_query(buf, 4096, 1, &first, 1), 1);
  cr_assert_eq(pg_inflight_query((char *)buf + 4096 * 5, 4096, 1, &last, 1), 1);
  cr_assert_null(first.event);
  cr_assert_null(last.event);
  /* The first is covered by the 4th copy's event; the last (the 6th) by none yet. */
  cr_assert(pg_access_cover(&first, false));
  cr_assert_not_null(first.event);
  cr_assert(!first.completed, "behind the gate");
  pg_access_t fourth;
  cr_assert_eq(pg_inflight_query((char *)buf + 4096 * 3, 4096, 1, &fourth, 1), 1);
  cr_assert_eq(first.event, fourth.event);
  pg_access_t copy = last;
  cr_assert(!pg_access_cover(&copy, false), "none to find, and none may be recorded");
  cr_assert_null(copy.event);
  cr_assert(pg_access_cover(&last, true), "one recorded now");
  cr_assert_not_null(last.event);
  cr_assert(!last.completed);
  cr_assert_eq(atomic_load(&tt_events_created), 2);
  /* A query finds it from now on, and the 5th shares it. */
  pg_access_t fifth;
  cr_assert_eq(pg_inflight_query((char *)buf + 4096 * 4, 4096, 1, &fifth, 1), 1);
  cr_assert_null(fifth.event);
  cr_assert(pg_access_cover(&fifth, false));
  cr_assert_eq(fifth.event, last.event);
  /* The stream runs behind the tracker's back: the covering events answer, ordering nothing. */
  tt_open_gates();
  cr_assert_eq(cudaStreamSynchronize(s1), cudaSuccess);
  pg_access_t again = copy;
  cr_assert(pg_access_cover(&again, false));
  cr_assert(again.completed);
  cr_assert(pg_access_wait(&last));
  cr_assert_eq(pg_tracker_inflight_count(), 6, "completed, not ordered");
  pg_access_t found[6];
  cr_assert_eq(query_sorted(found, 6), 6);
  for (int i = 0; i < 6; i++) cr_assert(found[i].completed, "copy %d", i);
  tt_stream_sync(s1);
  cr_assert_eq(pg_tracker_inflight_count(), 0);
}

/* Random segments of copies, each behind its own gate, one event per K copies (K random). Every
 * copy not known complete is covered while the gates are all closed (the newest copies, which no
 * event follows, by one event recorded then); then some gates open. The model: a copy is found
 * complete exactly when the next copy holding an event (the K-th since the last one, or the one
 * a cover recorded for) is in an opened segment, and a cover gives each copy that copy's event.
 * Fails when a copy is taken for complete before its event, a completed one is missed, or a
 * cover names another event. */
Test(tracker_events, completion_comes_from_the_next_event_on_the_stream) {
  enum { SEGMENTS = 4, MAX_COPIES = 23, MAX = SEGMENTS * MAX_COPIES };
  unsigned since = 0; /* the model's copies since the last one holding an event */
  for (unsigned seed = 1; seed <= 40; seed++) {
    unsigned r = seed * 2654435761u;
#define NEXT(m) ((r = r * 1103515245u + 12345u) >> 8) % (m)
    unsigned k = 1 + NEXT(6);
    pg_tracker_set_event_every(k);
    size_t copies[SEGMENTS], total = 0;
    bool marked[MAX];
    cudaEvent_t after[SEGMENTS];
    for (int i = 0; i < SEGMENTS; i++) {
      tt_close_gate(s1);
      copies[i] = NEXT(MAX_COPIES + 1);
      for (size_t c = 0; c < copies[i]; c++, total++) {
        cr_assert_eq(tt_copy_d2h((char *)buf + 4096 * total, dev, 4096, s1), 1);
        marked[total] = since + 1 >= k;
        since = marked[total] ? 0 : since + 1;
      }
      /* recorded behind the tracker's back: it learns nothing from it */
      cr_assert_eq(cudaEventCreate(&after[i]), cudaSuccess);
      cr_assert_eq(cudaEventRecord(after[i], s1), cudaSuccess);
    }
    pg_access_t found[MAX];
    cr_assert_eq(query_sorted(found, MAX), total);
    for (size_t j = 0; j < total; j++) {
      cr_assert(!found[j].completed, "seed %u: copy %zu behind a closed gate", seed, j);
      cr_assert_eq(found[j].event != NULL, marked[j], "seed %u: copy %zu", seed, j);
    }
    cudaEvent_t recorded = NULL;
    for (size_t j = 0; j < total; j++) {
      if (marked[j]) continue;
      cr_assert(pg_access_cover(&found[j], true), "seed %u: copy %zu", seed, j);
      cr_assert(!found[j].completed, "seed %u: copy %zu", seed, j);
      size_t m = j;
      while (m < total && !marked[m]) m++;
      if (m < total) {
        cr_assert_eq(found[j].event, found[m].event, "seed %u: copy %zu, not copy %zu's", seed,
                     j, m);
      } else {
        if (!recorded) recorded = found[j].event;
        cr_assert_eq(found[j].event, recorded, "seed %u: copy %zu, one recorded event", seed, j);
      }
    }
    if (recorded) {
      marked[total - 1] = true;
      since = 0;
    }
    int opened = (int)NEXT(SEGMENTS + 1);
    size_t ran = 0; /* copies in the opened segments */
    for (int i = 0; i < opened; i++) {
      sem_post(&tt_gates[i].sem);
      ran += copies[i];
    }
    if (opened == SEGMENTS) cr_assert_eq(cudaStreamSynchronize(s1), cudaSuccess);
    else if (opened) cr_assert_eq(cudaEventSynchronize(after[opened - 1]), cudaSuccess);
    pg_tracker_retire();
    cr_assert_eq(query_sorted(found, MAX), total);
    for (size_t j = 0, m = 0; j < total; j++) {
      if (m < j) m = j;
      while (m < total && !marked[m]) m++;
      bool done = m < ran;
      cr_assert_eq(found[j].completed, done, "seed %u (one event per %u): copy %zu of %zu, %zu ran",
                   seed, k, j, total, ran);
    }
    cr_assert_eq(pg_tracker_inflight_count(), total, "seed %u: completed, not ordered", seed);
    tt_open_gates();
    tt_stream_sync(s1);
    cr_assert_eq(pg_tracker_inflight_count(), 0, "seed %u", seed);
    for (int i = 0; i < SEGMENTS; i++) cudaEventDestroy(after[i]);
#undef NEXT
  }
}

/* A cover records through the access's handle only where it names the same stream: another
 * thread's cudaStreamPerThread is its own stream, so from there nothing is recorded. */
static void *cover_elsewhere(void *arg) {
  pg_access_t *a = arg;
  return (void *)(uintptr_t)pg_access_cover(a, true);
}

Test(tracker_events, a_cover_records_only_through_a_handle_naming_the_stream) {
  pg_tracker_set_event_every(4);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, cudaStreamPerThread), 1);
  pg_access_t a;
  cr_assert_eq(pg_inflight_query(buf, 4096, 1, &a, 1), 1);
  cr_assert_null(a.event);
  int before = atomic_load(&tt_events_created);
  pthread_t t;
  void *covered;
  cr_assert_eq(pthread_create(&t, NULL, cover_elsewhere, &a), 0);
  cr_assert_eq(pthread_join(t, &covered), 0);
  cr_assert(!covered, "another thread's per-thread stream is not the copy's");
  cr_assert_null(a.event);
  cr_assert_eq(atomic_load(&tt_events_created), before, "nothing was recorded");
  cr_assert(pg_access_cover(&a, true), "this thread's handle names it");
  cr_assert_not_null(a.event);
  cr_assert_eq(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
  cr_assert_eq(cudaEventQuery(a.event), cudaSuccess, "recorded on the copy's stream");
  tt_stream_sync(cudaStreamPerThread);
  cr_assert_eq(pg_tracker_inflight_count(), 0);
}
