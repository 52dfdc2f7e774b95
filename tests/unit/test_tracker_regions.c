/* test_tracker_regions.c: the pinned-region index: interior pointers, range lookups across
 * adjacent and partially overlapping regions, 64 MiB pieces, duplicate registrations, and a
 * large randomized index. Addresses are synthetic: the index never touches the memory. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "pg_pinmap.h"
#include "pg_tracker.h"

#define MiB ((uintptr_t)1 << 20)
#define AT(x) ((const void *)(uintptr_t)(x))

static const uintptr_t B = 0x7f0000000000;

static void add(uintptr_t base, size_t size) {
  cr_assert_eq(pg_region_add(AT(base), size, PG_PIN_REGISTER, 0, NULL), 0);
}

static uintptr_t base_of(uintptr_t p) {
  pg_region_t r;
  return pg_region_find(AT(p), &r) ? r.base : 0;
}

/* The granule summary the kernel-parameter scan checks first: every byte of a region is in a
 * counted granule while the region is there; a granule two regions share stays counted until
 * both are gone; a granule without a region is not. */
Test(tracker_regions, pinmap_follows_the_index) {
  uintptr_t g = 64 * MiB, base = B + 10 * g;
  cr_assert_not(pg_pinmap_maybe(base));
  add(base + g - 4096, 2 * 4096); /* straddles two granules */
  add(base + g + 8192, 4096);
  cr_assert(pg_pinmap_maybe(base + g - 1));
  cr_assert(pg_pinmap_maybe(base + g + 4095));
  cr_assert_not(pg_pinmap_maybe(base + 3 * g), "no region there");
  cr_assert_eq(pg_region_remove(AT(base + g - 4096), NULL), 1);
  cr_assert_not(pg_pinmap_maybe(base), "the first granule had only that region");
  cr_assert(pg_pinmap_maybe(base + g), "the second still has one");
  cr_assert_eq(pg_region_remove(AT(base + g + 8192), NULL), 1);
  cr_assert_not(pg_pinmap_maybe(base + g));
}

Test(tracker_regions, interior_pointers) {
  add(B, 4 * 4096);
  pg_region_t r;
  cr_assert(pg_region_find(AT(B), &r));
  cr_assert_eq(r.base, B);
  cr_assert_eq(r.size, 4 * 4096);
  cr_assert_eq(r.how, PG_PIN_REGISTER);
  cr_assert_eq(base_of(B + 5000), B);
  cr_assert_eq(base_of(B + 4 * 4096 - 1), B);
  cr_assert_not(pg_region_find(AT(B + 4 * 4096), &r), "one past the end is outside");
  cr_assert_not(pg_region_find(AT(B - 1), &r));
  cr_assert_eq(pg_region_count(), 1);
}

Test(tracker_regions, adjacent_64mib_pieces) {
  for (int i = 0; i < 4; i++) add(B + i * 64 * MiB, 64 * MiB);
  for (int i = 0; i < 4; i++) {
    cr_assert_eq(base_of(B + i * 64 * MiB), B + i * 64 * MiB);
    cr_assert_eq(base_of(B + (i + 1) * 64 * MiB - 1), B + i * 64 * MiB);
  }
  /* a copy straddling the boundary of pieces 1 and 2 */
  pg_region_t out[8];
  size_t n = pg_region_find_range(AT(B + 64 * MiB + 100), 64 * MiB, out, 8);
  cr_assert_eq(n, 2);
  cr_assert_eq(out[0].base, B + 64 * MiB);
  cr_assert_eq(out[1].base, B + 128 * MiB);
  /* all four, ascending */
  n = pg_region_find_range(AT(B), 256 * MiB, out, 8);
  cr_assert_eq(n, 4);
  for (int i = 0; i < 4; i++) cr_assert_eq(out[i].base, B + i * 64 * MiB);
}

Test(tracker_regions, partial_overlap_ranges) {
  add(B, 8192);
  add(B + 3 * 8192, 8192); /* a gap between them */
  pg_region_t out[4];
  cr_assert_eq(pg_region_find_range(AT(B - 100), 101, out, 4), 1, "ends on the first byte");
  cr_assert_eq(pg_region_find_range(AT(B - 100), 100, out, 4), 0, "ends just before");
  cr_assert_eq(pg_region_find_range(AT(B + 8191), 1, out, 4), 1);
  cr_assert_eq(pg_region_find_range(AT(B + 8192), 2 * 8192, out, 4), 0, "the gap");
  cr_assert_eq(pg_region_find_range(AT(B + 8000), 2 * 8192 + 500, out, 4), 2);
  cr_assert_eq(pg_region_find_range(AT(B + 8000), 0, out, 4), 0, "empty range");
}

Test(tracker_regions, range_count_beyond_capacity) {
  for (int i = 0; i < 10; i++) add(B + i * 4096, 4096);
  pg_region_t out[3];
  cr_assert_eq(pg_region_find_range(AT(B), 10 * 4096, out, 3), 10);
  cr_assert_eq(out[0].base, B);
  cr_assert_eq(out[2].base, B + 2 * 4096);
}

Test(tracker_regions, double_registration_same_pages) {
  add(B, 65536);
  add(B, 65536); /* a re-add after a missed remove */
  pg_region_t out[4], r;
  cr_assert_eq(pg_region_find_range(AT(B), 10, out, 4), 2);
  cr_assert(pg_region_remove(AT(B), &r));
  cr_assert_eq(r.size, 65536);
  cr_assert_eq(base_of(B + 100), B, "the other registration still covers the pages");
  cr_assert(pg_region_remove(AT(B), NULL));
  cr_assert_not(pg_region_find(AT(B + 100), &r));
  cr_assert_not(pg_region_remove(AT(B), NULL), "nothing left to remove");
  cr_assert_eq(pg_region_count(), 0);
}

Test(tracker_regions, overlapping_registrations) {
  add(B + 0x10000, 0x20000); /* A: [0x10000, 0x30000) */
  add(B + 0x20000, 0x20000); /* B: [0x20000, 0x40000) */
  cr_assert_eq(base_of(B + 0x15000), B + 0x10000);
  cr_assert_eq(base_of(B + 0x25000), B + 0x20000, "latest-based region wins");
  cr_assert_eq(base_of(B + 0x35000), B + 0x20000);
  cr_assert(pg_region_remove(AT(B + 0x20000), NULL));
  cr_assert_eq(base_of(B + 0x25000), B + 0x10000, "A shows through once B is gone");
  cr_assert_eq(base_of(B + 0x35000), 0);
}

Test(tracker_regions, nested_registration) {
  add(B, 1024 * 4096);            /* a big pool */
  add(B + 10 * 4096, 4096);       /* a slice registered on its own */
  add(B + 2000 * 4096, 4096);     /* a region after the pool */
  cr_assert_eq(base_of(B + 10 * 4096 + 5), B + 10 * 4096);
  cr_assert_eq(base_of(B + 11 * 4096), B, "past the slice, still in the pool");
  cr_assert_eq(base_of(B + 500 * 4096), B);
  cr_assert_eq(base_of(B + 1024 * 4096), 0);
  pg_region_t out[4];
  cr_assert_eq(pg_region_find_range(AT(B + 9 * 4096), 3 * 4096, out, 4), 2);
}

Test(tracker_regions, ids_and_allocation_stack) {
  pg_stack_t st = {.depth = 2, .tid = 7, .pc = {(void *)0x1234, (void *)0x5678}};
  cr_assert_eq(pg_region_add(AT(B), 4096, PG_PIN_HOST_ALLOC, 3, &st), 0);
  add(B + 8192, 4096);
  pg_region_t a, b;
  cr_assert(pg_region_find(AT(B), &a));
  cr_assert(pg_region_find(AT(B + 8192), &b));
  cr_assert_neq(a.id, 0);
  cr_assert_neq(a.id, b.id);
  cr_assert_eq(a.flags, 3);
  cr_assert_eq(a.how, PG_PIN_HOST_ALLOC);
  pg_stack_t got;
  cr_assert(pg_region_stack(a.id, &got));
  cr_assert_eq(got.depth, 2);
  cr_assert_eq(got.pc[1], (void *)0x5678);
  cr_assert(pg_region_remove(AT(B), NULL));
  cr_assert_not(pg_region_stack(a.id, &got), "a removed region has no stack");
}

Test(tracker_regions, rejects_empty_and_wrapping) {
  cr_assert_eq(pg_region_add(AT(B), 0, PG_PIN_REGISTER, 0, NULL), -1);
  cr_assert_eq(pg_region_add(AT(UINTPTR_MAX - 10), 100, PG_PIN_REGISTER, 0, NULL), -1);
  cr_assert_eq(pg_region_count(), 0);
}

/* 20000 regions of random sizes in random order, then every other one removed: every interior
 * pointer resolves to its own region, and gaps to none. */
Test(tracker_regions, large_random_index) {
  enum { N = 20000 };
  static uintptr_t base[N];
  static size_t size[N];
  static int order[N];
  srand(12345);
  uintptr_t cur = B;
  for (int i = 0; i < N; i++) {
    size[i] = (size_t)(1 + rand() % 16) * 4096;
    base[i] = cur;
    cur += size[i] + (size_t)(rand() % 3) * 4096;
    order[i] = i;
  }
  for (int i = N - 1; i > 0; i--) {
    int j = rand() % (i + 1), t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  for (int i = 0; i < N; i++) add(base[order[i]], size[order[i]]);
  cr_assert_eq(pg_region_count(), N);
  for (int i = 0; i < N; i++) {
    cr_assert_eq(base_of(base[i] + size[i] / 2), base[i]);
    cr_assert_eq(base_of(base[i] + size[i] - 1), base[i]);
  }
  for (int i = 0; i < N; i += 2) cr_assert(pg_region_remove(AT(base[i]), NULL));
  for (int i = 0; i < N; i++)
    cr_assert_eq(base_of(base[i] + 1), i % 2 ? base[i] : 0, "region %d", i);
  cr_assert_eq(pg_region_count(), N / 2);
}

/* Inserts at the front (mmap's descending addresses) and at the back, mixed with removals of a
 * big region that overlaps many small ones: the overlap bound must shrink back. */
Test(tracker_regions, front_back_inserts_and_overlap_bound) {
  enum { N = 3000 };
  const uintptr_t mid = B + (uintptr_t)N * 8192;
  for (int i = 0; i < N; i++) {
    add(mid - (uintptr_t)(i + 1) * 8192, 4096); /* descending */
    add(mid + (uintptr_t)i * 8192, 4096);       /* ascending */
  }
  add(B, 2 * N * 8192); /* one region over all of them */
  cr_assert_eq(base_of(mid + 4096 + 10), B, "a gap between small regions: the big one");
  cr_assert_eq(base_of(mid + 10), mid, "a small region wins over the big one");
  cr_assert(pg_region_remove(AT(B), NULL));
  cr_assert_eq(base_of(mid + 4096 + 10), 0, "gone with the big region");
  for (int i = 0; i < N; i++) {
    cr_assert_eq(base_of(mid - (uintptr_t)(i + 1) * 8192 + 5), mid - (uintptr_t)(i + 1) * 8192);
    cr_assert_eq(base_of(mid + (uintptr_t)i * 8192 + 4095), mid + (uintptr_t)i * 8192);
    cr_assert_eq(base_of(mid + (uintptr_t)i * 8192 + 4096), 0);
  }
  pg_region_t out[4];
  cr_assert_eq(pg_region_find_range(AT(mid - 8192), 3 * 8192, out, 4), 3);
}

/* Against a brute-force model: many overlapping and duplicate registrations in random order, then
 * random removals (which drop the newest registration of a base). Every lookup must name the
 * region the model names (largest base containing the point, newest among equal bases), and every
 * range count must match. Guards the balanced index's rotations and subtree bounds (issue 9). */
Test(tracker_regions, random_overlaps_match_a_model) {
  enum { N = 3000, PROBES = 3000 };
  static struct { uintptr_t base, end; uint64_t id; int live; } m[N];
  srand(777);
  for (int i = 0; i < N; i++) {
    m[i].base = B + (uintptr_t)(rand() % 512) * 4096;
    m[i].end = m[i].base + (uintptr_t)(1 + rand() % 64) * 4096;
    add(m[i].base, m[i].end - m[i].base);
    pg_region_t r;
    cr_assert(pg_region_find(AT(m[i].base), &r));
    m[i].id = r.id; /* the newest at its own base is itself */
    cr_assert_eq(r.base, m[i].base);
    m[i].live = 1;
  }
  for (int round = 0; round < 2; round++) {
    for (int k = 0; k < PROBES; k++) {
      uintptr_t x = B + (uintptr_t)(rand() % (600 * 4096));
      int best = -1;
      size_t count = 0;
      uintptr_t lo = x, hi = x + (uintptr_t)(rand() % 8) * 4096 + 1;
      for (int i = 0; i < N; i++) {
        if (!m[i].live) continue;
        if (m[i].base < hi && m[i].end > lo) count++;
        if (m[i].base <= x && m[i].end > x &&
            (best < 0 || m[i].base > m[best].base ||
             (m[i].base == m[best].base && m[i].id > m[best].id)))
          best = i;
      }
      pg_region_t r;
      int found = pg_region_find(AT(x), &r);
      cr_assert_eq(found, best >= 0, "round %d probe %d", round, k);
      if (found) cr_assert_eq(r.id, m[best].id, "round %d probe %d", round, k);
      cr_assert_eq(pg_region_find_range(AT(lo), hi - lo, NULL, 0), count, "range probe %d", k);
    }
    for (int k = 0; round == 0 && k < N / 2; k++) { /* remove half, by base */
      int i = rand() % N;
      if (!m[i].live) continue;
      int newest = i;
      for (int j = 0; j < N; j++)
        if (m[j].live && m[j].base == m[i].base && m[j].id > m[newest].id) newest = j;
      cr_assert(pg_region_remove(AT(m[i].base), NULL));
      m[newest].live = 0;
    }
  }
}

/* The per-thread memo of regions found alone holds a model's worth of buffers: lookups rotating
 * over more regions than it holds (some sharing 64 KiB, at varying offsets) answer right, and
 * an add or a remove in between is seen at once. */
Test(tracker_regions, lookup_memo_many_regions) {
  enum { R = 300 };
  uintptr_t base = B + 0x100000000;
  for (int i = 0; i < R; i++) add(base + (uintptr_t)i * 8192, 4096);
  for (int round = 0; round < 3; round++)
    for (int i = 0; i < R; i++) {
      pg_lookup_t lk;
      uintptr_t p = base + (uintptr_t)i * 8192 + (uintptr_t)((i + round) % 8) * 512;
      cr_assert_eq(pg_region_lookup(AT(p), 256, &lk), 1, "region %d", i);
      cr_assert_eq(lk.hits[0].base,
                   base + (uintptr_t)i * 8192, "region %d round %d", i, round);
      cr_assert_eq(pg_region_lookup(AT(base + (uintptr_t)i * 8192 + 4096), 16, &lk), 0,
                   "the gap after region %d", i);
    }
  pg_lookup_t lk;
  add(base + 5 * 8192 + 1024, 8192); /* over region 5 and its gap */
  cr_assert_eq(pg_region_lookup(AT(base + 5 * 8192 + 2048), 16, &lk), 2);
  cr_assert_eq(pg_region_lookup(AT(base + 5 * 8192 + 4096), 16, &lk), 1);
  cr_assert_eq(pg_region_remove(AT(base + 7 * 8192), NULL), 1);
  cr_assert_eq(pg_region_lookup(AT(base + 7 * 8192), 16, &lk), 0, "removed");
  cr_assert_eq(pg_region_lookup(AT(base + 9 * 8192), 16, &lk), 1);
}
