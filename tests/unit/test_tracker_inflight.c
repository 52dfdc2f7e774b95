/* test_tracker_inflight.c: the in-flight table on simcuda's real streams and events: what is
 * tracked, range queries with partial overlaps, accesses spanning adjacent regions, duplicate
 * registrations, retirement through the stream's events, event reuse, waits, and the hooks. */
#include "test_tracker_support.h"

#define N (1 << 20)

static void *buf, *dev;
static cudaStream_t s1;

static void setup(void) { tt_setup_one_stream(N, &buf, &dev, &s1); }

static size_t inflight(const void *p, size_t n) {
  pg_access_t out[8];
  return pg_inflight_query(p, n, 0, out, 8);
}

static size_t inflight_writes(const void *p, size_t n) {
  pg_access_t out[8];
  return pg_inflight_query(p, n, 1, out, 8);
}

TestSuite(tracker_inflight, .init = setup, .fini = tt_teardown, .timeout = 30);

Test(tracker_inflight, only_pinned_regions_are_tracked) {
  static char pageable[4096];
  pg_origin_t o = {"copy", NULL};
  cr_assert_eq(pg_access_begin(pageable, sizeof(pageable), PG_DIR_WRITE, s1, &o, NULL), 0);
  cr_assert_eq(pg_tracker_inflight_count(), 0);
  cr_assert_eq(pg_access_begin(buf, 0, PG_DIR_WRITE, s1, &o, NULL), 0, "empty access");
}

Test(tracker_inflight, device_write_in_flight_until_stream_completes) {
  tt_close_gate(s1);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
  pg_access_t out[4];
  cr_assert_eq(pg_inflight_query((char *)buf + 100, 1, 1, out, 4), 1);
  cr_assert_eq(out[0].lo, (uintptr_t)buf);
  cr_assert_eq(out[0].hi, (uintptr_t)buf + 4096);
  cr_assert_eq(out[0].dir, PG_DIR_WRITE);
  cr_assert_eq(out[0].stream, s1);
  cr_assert_eq(out[0].region_base, (uintptr_t)buf);
  cr_assert_eq(out[0].region_size, N);
  cr_assert_str_eq(out[0].origin.what, "copy device->host");
  pg_tracker_retire();
  cr_assert_eq(pg_tracker_inflight_count(), 1, "the stream is held: nothing retires");
  tt_open_gates();
  tt_stream_sync(s1);
  cr_assert_eq(pg_tracker_inflight_count(), 0, "the host sync retired it");
  cr_assert_eq(inflight(buf, N), 0);
}

Test(tracker_inflight, device_read_is_not_a_write) {
  tt_close_gate(s1);
  cr_assert_eq(tt_copy_h2d(dev, buf, 4096, s1), 1);
  cr_assert_eq(inflight(buf, 4096), 1);
  cr_assert_eq(inflight_writes(buf, 4096), 0);
  pg_origin_t o = {"kernel", (const void *)tt_gate_kernel};
  cr_assert_eq(pg_access_begin((char *)buf + 8192, 64, PG_DIR_UNKNOWN, s1, &o, NULL), 1);
  cr_assert_eq(inflight_writes(buf, N), 1, "unknown direction counts as a write");
}

Test(tracker_inflight, partial_overlaps) {
  tt_close_gate(s1);
  char *b = buf;
  cr_assert_eq(tt_copy_d2h(b + 4096, dev, 4096, s1), 1); /* [4096, 8192) */
  cr_assert_eq(inflight(b, 4097), 1, "overlaps its first byte");
  cr_assert_eq(inflight(b, 4096), 0, "ends just before it");
  cr_assert_eq(inflight(b + 8191, 1), 1, "its last byte");
  cr_assert_eq(inflight(b + 8192, 4096), 0, "just after it");
  cr_assert_eq(inflight(b + 5000, 10), 1, "inside it");
  cr_assert_eq(inflight(b, N), 1, "containing it");
}

Test(tracker_inflight, many_accesses_queries_are_exact) {
  tt_close_gate(s1);
  char *b = buf;
  /* 64 accesses of 4 KiB at 8 KiB strides, plus one long access over the first 64 KiB */
  for (int i = 0; i < 64; i++) cr_assert_eq(tt_copy_d2h(b + i * 8192, dev, 4096, s1), 1);
  cr_assert_eq(tt_copy_d2h(b, dev, 65536, s1), 1);
  cr_assert_eq(pg_tracker_inflight_count(), 65);
  pg_access_t out[128];
  cr_assert_eq(pg_inflight_query(b + 4096, 4096, 0, out, 128), 1, "a gap: only the long one");
  cr_assert_eq(pg_inflight_query(b + 4096, 8192, 0, out, 128), 2);
  cr_assert_eq(pg_inflight_query(b + 65536, 4096 * 3, 0, out, 128), 2, "past the long one");
  cr_assert_eq(pg_inflight_query(b, N, 0, out, 4), 65, "total beyond capacity");
  tt_open_gates();
  tt_stream_sync(s1);
  cr_assert_eq(pg_tracker_inflight_count(), 0);
}

Test(tracker_inflight, same_buffer_copied_repeatedly) {
  tt_close_gate(s1);
  for (int i = 0; i < 10; i++) cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
  cr_assert_eq(inflight(buf, 1), 10);
  tt_open_gates();
  tt_stream_sync(s1);
  cr_assert_eq(inflight(buf, 1), 0);
}

Test(tracker_inflight, access_spanning_adjacent_regions) {
  /* one allocation registered in two pieces, as an engine registers 64 MiB pieces */
  char *p = NULL;
  cr_assert_eq(cudaHostAlloc((void **)&p, 2 * 65536, 0), cudaSuccess);
  cr_assert_eq(pg_region_add(p, 65536, PG_PIN_REGISTER, 0, NULL), 0);
  cr_assert_eq(pg_region_add(p + 65536, 65536, PG_PIN_REGISTER, 0, NULL), 0);
  tt_close_gate(s1);
  cr_assert_eq(tt_copy_d2h(p + 60000, dev, 10000, s1), 2, "one piece per region");
  pg_access_t a[2], b[2];
  cr_assert_eq(pg_inflight_query(p + 60000, 1, 0, a, 2), 1);
  cr_assert_eq(pg_inflight_query(p + 65536, 1, 0, b, 2), 1);
  cr_assert_eq(a[0].hi, (uintptr_t)p + 65536, "clipped to its region");
  cr_assert_eq(b[0].lo, (uintptr_t)p + 65536);
  cr_assert_eq(a[0].op, b[0].op, "both pieces name the same operation");
  cr_assert_eq(pg_inflight_query(p, 2 * 65536, 0, a, 2), 2);
}

Test(tracker_inflight, duplicate_registration_tracks_once) {
  cr_assert_eq(pg_region_add(buf, N, PG_PIN_REGISTER, 0, NULL), 0); /* same pages again */
  tt_close_gate(s1);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
  cr_assert_eq(inflight(buf, 4096), 1, "reported once, not once per registration");
  cr_assert(pg_region_remove(buf, NULL));
  cr_assert(pg_region_remove(buf, NULL));
  tt_open_gates();
  tt_stream_sync(s1);
  cr_assert_eq(pg_tracker_inflight_count(), 0);
}

Test(tracker_inflight, region_removed_while_in_flight) {
  tt_close_gate(s1);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
  cr_assert(pg_region_remove(buf, NULL));
  cr_assert_eq(inflight(buf, 4096), 0, "no region, nothing to report");
  cr_assert_eq(pg_tracker_inflight_count(), 1, "but the access still retires from its stream");
  cr_assert_eq(pg_region_add(buf, N, PG_PIN_HOST_ALLOC, 0, NULL), 0);
  cr_assert_eq(inflight(buf, 4096), 0, "a new registration does not inherit it");
  tt_open_gates();
  tt_stream_sync(s1);
  cr_assert_eq(pg_tracker_inflight_count(), 0);
}

Test(tracker_inflight, completion_seen_by_events_orders_nothing) {
  tt_close_gate(s1);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
  tt_open_gates();
  /* the application syncs behind the tracker's back: only the events can tell, and they tell
   * only that the copy finished, not that the program ordered anything after it */
  cr_assert_eq(cudaStreamSynchronize(s1), cudaSuccess);
  pg_tracker_retire();
  cr_assert_eq(pg_tracker_inflight_count(), 1, "completed, but still unordered");
  pg_access_t a;
  cr_assert_eq(pg_inflight_query(buf, 4096, 1, &a, 1), 1, "a race all the same");
  cr_assert(a.completed, "found as completed");
  cr_assert_neq(a.completed_stamp, 0);
  cr_assert_eq(pg_access_find(PG_QUERY_WRITES, PG_FIND_RUNNING, buf, 4096, PG_DIR_READ, 0, &a, 1), 0,
               "nothing left to wait for");
  tt_stream_sync(s1); /* the program orders it */
  cr_assert_eq(pg_tracker_inflight_count(), 0);
  cr_assert_eq(inflight(buf, 4096), 0);
}

Test(tracker_inflight, completed_accesses_give_their_events_back) {
  for (int i = 0; i < 50; i++) {
    cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
    cr_assert_eq(cudaStreamSynchronize(s1), cudaSuccess); /* unseen by the tracker */
    pg_tracker_retire();
  }
  cr_assert_eq(pg_tracker_inflight_count(), 50, "none of them ordered");
  cr_assert_leq(atomic_load(&tt_events_created), 2, "but their events are reused");
  tt_stream_sync(s1);
  cr_assert_eq(pg_tracker_inflight_count(), 0);
}

/* A stream completes in order, so a poll asks a few of its accesses' events, not each: random
 * segments of copies, each held behind its own gate, some of the gates opened; the model: the
 * copies of the opened segments (and only those) are found complete, with a handful of queries
 * per batch of 16. Fails when a completion poll asks each access (the queries), takes a running
 * access for complete (the flags), or leaves a completed one unmarked (the queries a later
 * lookup then makes). */
Test(tracker_inflight, completion_polls_ask_a_few_events_and_find_exactly_what_completed) {
  enum { SEGMENTS = 4, MAX_COPIES = 45 };
  for (unsigned seed = 1; seed <= 40; seed++) {
    unsigned r = seed * 2654435761u;
#define NEXT(m) ((r = r * 1103515245u + 12345u) >> 8) % (m)
    size_t copies[SEGMENTS], total = 0;
    cudaEvent_t after[SEGMENTS];
    for (int i = 0; i < SEGMENTS; i++) {
      tt_close_gate(s1);
      copies[i] = NEXT(MAX_COPIES + 1);
      for (size_t c = 0; c < copies[i]; c++)
        cr_assert_eq(tt_copy_d2h((char *)buf + 4096 * (total + c), dev, 4096, s1), 1);
      total += copies[i];
      /* recorded behind the tracker's back: it learns nothing from it */
      cr_assert_eq(cudaEventCreate(&after[i]), cudaSuccess);
      cr_assert_eq(cudaEventRecord(after[i], s1), cudaSuccess);
    }
    int opened = (int)NEXT(SEGMENTS + 1);
    size_t expect = 0;
    for (int i = 0; i < opened; i++) {
      sem_post(&tt_gates[i].sem);
      expect += copies[i];
    }
    if (opened) cr_assert_eq(cudaEventSynchronize(after[opened - 1]), cudaSuccess);
    atomic_store(&tt_event_queries, 0);
    pg_tracker_retire();
    int queries = atomic_load(&tt_event_queries);
    size_t batches = expect / 16 + 1;
    cr_assert_leq((size_t)queries, 2 * batches + 5,
                  "seed %u: %d queries for %zu completed of %zu", seed, queries, expect, total);
    /* The query asks each access not marked complete once: exactly the running ones, if the
     * poll marked every completed one. */
    atomic_store(&tt_event_queries, 0);
    pg_access_t found[SEGMENTS * MAX_COPIES];
    cr_assert_eq(pg_inflight_query(buf, N, 1, found, SEGMENTS * MAX_COPIES), total);
    cr_assert_eq((size_t)atomic_load(&tt_event_queries), total - expect,
                 "seed %u: the poll left a completed access unmarked (%d queries, %zu running)",
                 seed, atomic_load(&tt_event_queries), total - expect);
    for (size_t i = 0; i < total; i++) {
      bool behind_gate = found[i].lo >= (uintptr_t)buf + 4096 * expect;
      cr_assert_eq(found[i].completed, !behind_gate, "seed %u: copy at page %zu %s", seed,
                   (size_t)(found[i].lo - (uintptr_t)buf) / 4096,
                   behind_gate ? "found complete behind a closed gate" : "not found complete");
    }
    cr_assert_eq(pg_tracker_inflight_count(), total, "seed %u: completed, not ordered", seed);
    tt_open_gates();
    tt_stream_sync(s1);
    cr_assert_eq(pg_tracker_inflight_count(), 0);
    for (int i = 0; i < SEGMENTS; i++) cudaEventDestroy(after[i]);
#undef NEXT
  }
}

Test(tracker_inflight, pools_give_memory_back_when_a_backlog_drains) {
  tt_close_gate(s1);
  for (int i = 0; i < 3000; i++) cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
  int created = atomic_load(&tt_events_created);
  cr_assert_geq(created, 3000, "a backlog holds an event per copy");
  tt_open_gates();
  tt_stream_sync(s1);
  cr_assert_eq(pg_tracker_inflight_count(), 0);
  /* Each host sync gives back up to 256 idle events past 1024, and every idle record past 4096. */
  for (int i = 0; i < 20; i++) tt_stream_sync(s1);
  cr_assert_geq(atomic_load(&tt_events_destroyed), created - 1024,
                "idle events beyond the steady state go back to the runtime (%d of %d)",
                atomic_load(&tt_events_destroyed), created);
}

Test(tracker_inflight, unordered_accesses_are_capped_per_stream) {
  pg_tracker_set_unordered_cap(8);
  for (int i = 0; i < 40; i++) {
    cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
    cr_assert_eq(cudaStreamSynchronize(s1), cudaSuccess); /* unseen by the tracker */
    pg_tracker_retire();
  }
  cr_assert_leq(pg_tracker_inflight_count(), 9, "the oldest were evicted");
  cr_assert_eq(inflight(buf, 4096), pg_tracker_inflight_count(), "the newest still reported");
  pg_tracker_set_unordered_cap(PG_UNORDERED_CAP_DEFAULT);
  tt_stream_sync(s1);
  cr_assert_eq(pg_tracker_inflight_count(), 0);
}

Test(tracker_inflight, events_come_from_a_pool) {
  for (int i = 0; i < 50; i++) {
    cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
    tt_stream_sync(s1);
  }
  cr_assert_leq(atomic_load(&tt_events_created), 2, "retired events are reused");
}

Test(tracker_inflight, wait_blocks_until_complete) {
  tt_close_gate(s1);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
  pg_access_t a;
  cr_assert_eq(pg_inflight_query(buf, 1, 1, &a, 1), 1);
  tt_open_gates();
  cr_assert(pg_access_wait(&a));
  cr_assert_eq(cudaEventQuery(a.event), cudaSuccess);
  cr_assert_eq(pg_tracker_inflight_count(), 1, "pinguard's own wait orders nothing");
  cr_assert_eq(pg_inflight_query(buf, 1, 1, &a, 1), 1);
  cr_assert(a.completed);
}

static int hook_begins, hook_retires;
static uintptr_t hook_lo, hook_hi;
static pg_dir_t hook_dir;
static bool hook_counts = true;
static pg_region_t hook_reg;
static bool on_begin(uintptr_t *lo, uintptr_t *hi, pg_dir_t dir, const pg_region_t *reg,
                     void *ctx) {
  cr_assert_eq(ctx, &hook_begins);
  hook_begins++;
  hook_lo = *lo;
  hook_hi = *hi;
  hook_dir = dir;
  hook_reg = *reg;
  return hook_counts;
}
static void on_retire(uintptr_t lo, uintptr_t hi, pg_dir_t dir, void *ctx) {
  (void)ctx;
  cr_assert_eq(lo, hook_lo);
  cr_assert_eq(hi, hook_hi);
  cr_assert_eq(dir, hook_dir);
  hook_retires++;
}

Test(tracker_inflight, guard_hooks_see_begin_and_retire) {
  pg_tracker_set_hooks(on_begin, on_retire, &hook_begins);
  tt_close_gate(s1);
  cr_assert_eq(tt_copy_h2d(dev, (char *)buf + 4096, 8192, s1), 1);
  cr_assert_eq(hook_begins, 1);
  cr_assert_eq(hook_lo, (uintptr_t)buf + 4096);
  cr_assert_eq(hook_hi, (uintptr_t)buf + 4096 + 8192);
  cr_assert_eq(hook_dir, PG_DIR_READ);
  /* The region the piece lies in comes with it, as the tracker indexed it. */
  pg_region_t found;
  cr_assert(pg_region_find(buf, &found));
  cr_assert_eq(hook_reg.base, (uintptr_t)buf);
  cr_assert_eq(hook_reg.size, found.size);
  cr_assert_eq(hook_reg.how, found.how);
  cr_assert_eq(hook_reg.flags, found.flags);
  cr_assert_eq(hook_reg.id, found.id);
  cr_assert_eq(hook_retires, 0);
  tt_open_gates();
  tt_stream_sync(s1);
  cr_assert_eq(hook_retires, 1);
  pg_tracker_set_hooks(NULL, NULL, NULL);
}

/* Removing a region ends its accesses' bookkeeping: their retirement must not reach the hook,
 * which would take counts from whatever region is pinned at that address next. */
Test(tracker_inflight, removed_region_accesses_skip_the_retire_hook) {
  pg_tracker_set_hooks(on_begin, on_retire, &hook_begins);
  tt_close_gate(s1);
  cr_assert_eq(tt_copy_h2d(dev, buf, 8192, s1), 1);
  cr_assert_eq(hook_begins, 1);
  cr_assert(pg_region_remove(buf, NULL));
  cr_assert_eq(pg_region_add(buf, N, PG_PIN_HOST_ALLOC, 0, NULL), 0); /* pinned again */
  tt_open_gates();
  tt_stream_sync(s1);
  cr_assert_eq(hook_retires, 0, "the old region's access must not retire into the new one");
  pg_tracker_set_hooks(NULL, NULL, NULL);
}

/* A piece the begin hook did not count (too small to guard, say) owes the hook nothing. */
Test(tracker_inflight, uncounted_pieces_skip_the_retire_hook) {
  hook_counts = false;
  pg_tracker_set_hooks(on_begin, on_retire, &hook_begins);
  cr_assert_eq(tt_copy_h2d(dev, buf, 8192, s1), 1);
  tt_stream_sync(s1);
  cr_assert_eq(hook_begins, 1);
  cr_assert_eq(hook_retires, 0);
  pg_tracker_set_hooks(NULL, NULL, NULL);
  hook_counts = true;
}

/* A piece in a region under the hooks' minimum size never reaches them, and is ready at once
 * (its stream's sync retires it); one in a region of that size does. */
Test(tracker_inflight, hooks_skip_regions_under_their_minimum) {
  pg_tracker_set_hooks(on_begin, on_retire, &hook_begins);
  pg_tracker_set_hook_min_region(N + 1);
  tt_close_gate(s1);
  cr_assert_eq(tt_copy_h2d(dev, buf, 8192, s1), 1);
  cr_assert_eq(hook_begins, 0, "a region under the minimum is not the hooks' business");
  pg_access_t out[4];
  cr_assert_eq(pg_inflight_query(buf, 8192, 0, out, 4), 1, "tracked all the same");
  tt_open_gates();
  tt_stream_sync(s1);
  cr_assert_eq(hook_retires, 0);
  cr_assert_eq(pg_tracker_inflight_count(), 0, "ready, so the sync retired it");
  pg_tracker_set_hook_min_region(N);
  cr_assert_eq(tt_copy_h2d(dev, buf, 8192, s1), 1);
  cr_assert_eq(hook_begins, 1, "a region of the minimum size is");
  tt_stream_sync(s1);
  cr_assert_eq(hook_retires, 1);
  pg_tracker_set_hook_min_region(0);
  pg_tracker_set_hooks(NULL, NULL, NULL);
}

/* A kernel parameter's span runs from it to its region's end: pg_region_lookup_rest_on gives
 * what pg_region_find then pg_region_lookup_on give, whether or not the region answered the
 * thread's last lookup, over random nested, overlapping, read-only and removed regions (synthetic
 * addresses: lookups never touch the memory). */
Test(tracker_inflight, rest_of_region_lookup_matches_find_then_lookup) {
  const uintptr_t base = (uintptr_t)0x6e0000000000;
  enum { R = 200, PROBES = 4000 };
  srand(4242);
  /* Slots of 16 pages: most hold one region alone (a lookup's memo answers for it), every
   * fifth a second one inside or across it. */
  for (int i = 0; i < R; i++) {
    int slot = i % 5 == 4 ? rand() % 256 : i;
    uintptr_t at = base + (uintptr_t)slot * 16 * 4096 + (uintptr_t)(rand() % 4) * 4096;
    size_t size = (size_t)(1 + rand() % 16) * 4096 - (size_t)(rand() % 2) * 100;
    unsigned flags = rand() % 5 == 0 ? PG_REGISTER_READ_ONLY : 0;
    cr_assert_eq(pg_region_add((void *)at, size, PG_PIN_REGISTER, flags, NULL), 0);
  }
  uintptr_t x = base;
  for (int k = 0; k < PROBES; k++) {
    if (k % 40 == 39) { /* the last probe's region removed: no memo may answer for it */
      pg_region_t last;
      if (pg_region_find((void *)x, &last)) pg_region_remove((void *)last.base, NULL);
    } else if (rand() % 4) {
      x = base + (uintptr_t)(rand() % (260 * 16 * 4096));
    }
    if (rand() % 4 == 0) { /* some probes after a lookup elsewhere, most right after their own */
      pg_lookup_t other;
      uintptr_t y = base + (uintptr_t)(rand() % (260 * 16 * 4096));
      pg_region_lookup_on((void *)y, 64, s1, PG_DIR_READ, &other);
    }
    pg_dir_t dir0 = (pg_dir_t)(rand() % 3), want_dir = dir0, got_dir = dir0;
    pg_lookup_t want, got;
    size_t got_n = pg_region_lookup_rest_on((void *)x, s1, &got_dir, &got);
    pg_region_t reg; /* the model: the region pg_region_find names, then its lookup */
    size_t want_n = 0;
    if (pg_region_find((void *)x, &reg)) {
      want_n = reg.base + reg.size - x;
      if (pg_pin_is_read_only(reg.how, reg.flags)) want_dir = PG_DIR_READ;
      pg_region_lookup_on((void *)x, want_n, s1, want_dir, &want);
    }
    cr_assert_eq(got_n, want_n, "probe %d", k);
    cr_assert_eq(got_dir, want_dir, "probe %d", k);
    if (!want_n) continue;
    cr_assert_eq(got.lo, want.lo, "probe %d", k);
    cr_assert_eq(got.hi, want.hi, "probe %d", k);
    cr_assert_eq(got.total, want.total, "probe %d", k);
    cr_assert_eq(got.quiet, want.quiet, "probe %d", k);
    cr_assert_eq(got.stream, want.stream, "probe %d", k);
    for (size_t h = 0; h < want.total && h < PG_LOOKUP_HITS; h++) {
      cr_assert_eq(got.hits[h].base, want.hits[h].base, "probe %d hit %zu", k, h);
      cr_assert_eq(got.hits[h].end, want.hits[h].end, "probe %d hit %zu", k, h);
      cr_assert_eq(got.hits[h].rec, want.hits[h].rec, "probe %d hit %zu", k, h);
    }
  }
}

/* The begin hook protects the piece's pages: from then on a CPU access faults, and the fault
 * handler asks the in-flight table about the page. The piece must already be there, or the
 * handler finds nothing and opens the page while the device access is in flight (a false
 * negative for that access and every later one to the page). The hook queries as the handler
 * would at that moment. */
static size_t seen_at_begin;
static bool query_at_begin(uintptr_t *lo, uintptr_t *hi, pg_dir_t dir, const pg_region_t *reg,
                           void *ctx) {
  (void)dir;
  (void)reg;
  (void)ctx;
  pg_access_t out[4];
  seen_at_begin = pg_inflight_query((const void *)*lo, *hi - *lo, 0, out, 4);
  return true;
}
static void retire_nothing(uintptr_t lo, uintptr_t hi, pg_dir_t dir, void *ctx) {
  (void)lo, (void)hi, (void)dir, (void)ctx;
}

Test(tracker_inflight, piece_is_indexed_before_the_begin_hook_protects_it) {
  pg_tracker_set_hooks(query_at_begin, retire_nothing, NULL);
  tt_close_gate(s1);
  seen_at_begin = 99;
  cr_assert_eq(tt_copy_h2d(dev, buf, 8192, s1), 1);
  cr_assert_eq(seen_at_begin, 1, "a fault right after the protection must find the access");
  tt_open_gates();
  tt_stream_sync(s1);
  pg_tracker_set_hooks(NULL, NULL, NULL);
}

/* A region used by one stream keeps that stream's accesses on an owner list and answers the
 * owner's conflict checks from a summary without looking; another stream's check must still
 * find them, and the owner's checks must find another stream's accesses once there are some. */
static size_t conflicts(const void *p, size_t n, pg_dir_t dir, cudaStream_t s) {
  pg_access_t out[8];
  return pg_access_conflicts(p, n, dir, s, out, 8);
}

Test(tracker_inflight, owner_summary_falls_back_for_a_second_stream) {
  cudaStream_t s2 = tt_stream(cudaStreamNonBlocking);
  tt_close_gate(s1);
  tt_close_gate(s2);
  char *b = buf;
  cr_assert_eq(tt_copy_d2h(b, dev, 4096, s1), 1);
  cr_assert_eq(tt_copy_d2h(b + 8192, dev, 4096, s1), 1);
  cr_assert_eq(conflicts(b, 4096, PG_DIR_WRITE, s1), 0, "its own stream is ordered");
  cr_assert_eq(inflight(b, N), 2, "queries see the owner's accesses");
  cr_assert_eq(conflicts(b + 100, 10, PG_DIR_READ, s2), 1, "another stream races the first");
  cr_assert_eq(conflicts(b, N, PG_DIR_WRITE, s2), 2);
  cr_assert_eq(conflicts(b + 4096, 4096, PG_DIR_WRITE, s2), 0, "between the two");
  /* The second stream's own access: the first stream's checks must see it now. */
  cr_assert_eq(tt_copy_h2d(dev, b + 16384, 4096, s2), 1);
  cr_assert_eq(conflicts(b + 16384, 4096, PG_DIR_WRITE, s1), 1);
  cr_assert_eq(conflicts(b + 16384, 4096, PG_DIR_READ, s1), 0, "read/read never races");
  cr_assert_eq(conflicts(b, 4096, PG_DIR_WRITE, s1), 0);
  cr_assert_eq(tt_copy_d2h(b + 32768, dev, 4096, s1), 1);
  cr_assert_eq(conflicts(b + 32768, 4096, PG_DIR_READ, s2), 1, "a later access of the first");
  cr_assert_eq(inflight(b, N), 4);
  tt_open_gates();
  tt_stream_sync(s1);
  tt_stream_sync(s2);
  cr_assert_eq(pg_tracker_inflight_count(), 0);
  cr_assert_eq(inflight(b, N), 0);
  cr_assert_eq(conflicts(b, N, PG_DIR_WRITE, s2), 0);
  /* Ownership passes on: the second stream's accesses alone now, seen by the first. */
  tt_close_gate(s2);
  cr_assert_eq(tt_copy_d2h(b, dev, 4096, s2), 1);
  cr_assert_eq(conflicts(b, 4096, PG_DIR_WRITE, s2), 0);
  cr_assert_eq(conflicts(b, 4096, PG_DIR_READ, s1), 1);
  tt_open_gates();
  tt_stream_sync(s2);
}

/* A region removed while its owner's accesses are in flight: they stop being tracked, retire from
 * their stream, and a new region at the same address starts empty. */
Test(tracker_inflight, owner_list_dropped_with_its_region) {
  tt_close_gate(s1);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s1), 1);
  cr_assert(pg_region_remove(buf, NULL));
  cr_assert_eq(pg_region_add(buf, N, PG_PIN_HOST_ALLOC, 0, NULL), 0);
  cudaStream_t s2 = tt_stream(cudaStreamNonBlocking);
  cr_assert_eq(inflight(buf, N), 0);
  cr_assert_eq(conflicts(buf, 4096, PG_DIR_WRITE, s2), 0);
  tt_open_gates();
  tt_stream_sync(s1);
  cr_assert_eq(pg_tracker_inflight_count(), 0);
}

Test(tracker_inflight, stack_and_time_are_kept) {
  pg_stack_t st = {.depth = 1, .tid = 3, .pc = {(void *)0xabc}};
  tt_close_gate(s1);
  cr_assert_eq(cudaMemcpyAsync(buf, dev, 64, cudaMemcpyDeviceToHost, s1), cudaSuccess);
  cr_assert_eq(pg_access_begin(buf, 64, PG_DIR_WRITE, s1, NULL, &st), 1);
  pg_access_t a;
  cr_assert_eq(pg_inflight_query(buf, 64, 0, &a, 1), 1);
  cr_assert_eq(a.stack.depth, 1);
  cr_assert_eq(a.stack.pc[0], (void *)0xabc);
  cr_assert_neq(a.enqueue_stamp, 0);
  cr_assert_null(a.origin.what);
  /* The stamp's age, in nanoseconds: at least the 20 ms slept since, and not wildly more. */
  struct timespec nap = {0, 20 * 1000 * 1000};
  nanosleep(&nap, NULL);
  uint64_t age = pg_stamp_age_ns(a.enqueue_stamp);
  cr_assert_geq(age, 19u * 1000 * 1000, "age %llu ns", (unsigned long long)age);
  cr_assert_lt(age, 5ull * 1000 * 1000 * 1000, "age %llu ns", (unsigned long long)age);
  cr_assert_eq(pg_stamp_age_ns(pg_stamp() + (1ull << 40)), 0, "a stamp not yet reached");
}
