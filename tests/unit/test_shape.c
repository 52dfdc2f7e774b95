/* test_shape.c: the strided span predicates (tracker/pg_shape.h) against a byte map of the same
 * shapes, over random 2D and 3D layouts. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "pg_shape.h"

#define SPACE 4096
static unsigned char map_a[SPACE], map_b[SPACE];

typedef struct layout {
  size_t off, pitch, slice, width, height, depth;
} layout_t;

/* Marks the bytes the layout touches; returns the hull's length. */
static size_t mark(unsigned char *m, const layout_t *l) {
  memset(m, 0, SPACE);
  size_t end = 0;
  for (size_t z = 0; z < l->depth; z++)
    for (size_t y = 0; y < l->height; y++)
      for (size_t x = 0; x < l->width; x++) {
        size_t o = l->off + z * l->slice + y * l->pitch + x;
        m[o] = 1;
        if (o + 1 > end) end = o + 1;
      }
  return end - l->off;
}

static layout_t random_layout(unsigned *seed) {
  layout_t l;
  l.width = 1 + (size_t)rand_r(seed) % 24;
  l.pitch = l.width + (size_t)rand_r(seed) % 24 * (rand_r(seed) % 4 != 0);
  l.height = 1 + (size_t)rand_r(seed) % 8;
  l.depth = rand_r(seed) % 3 ? 1 : 1 + (size_t)rand_r(seed) % 4;
  l.slice = l.pitch * (l.height + (size_t)rand_r(seed) % 3);
  l.off = (size_t)rand_r(seed) % 512;
  /* Pitches shared now and then, as two copies into one buffer have. */
  return l;
}

/* The shape for a layout, or NULL when it is contiguous (its hull then stands for it). */
static const pg_shape_t *shape_of(const layout_t *l, const unsigned char *base, pg_shape_t *s,
                                  size_t hull) {
  bool shaped = pg_shape_make(s, base + l->off, l->pitch, l->slice, l->width, l->height,
                              l->depth);
  if (shaped) cr_assert_eq(pg_shape_end(s) - s->base, hull);
  return shaped ? s : NULL;
}

Test(shape, predicates_match_the_bytes) {
  static unsigned char space[SPACE];
  unsigned seed = 12345;
  for (int iter = 0; iter < 4000; iter++) {
    layout_t la = random_layout(&seed), lb = random_layout(&seed);
    if (rand_r(&seed) % 2) { /* the same pitch and slice: interleaved rows */
      lb.pitch = la.pitch;
      lb.slice = la.slice;
      if (lb.width > lb.pitch) lb.width = lb.pitch;
    }
    size_t ha = mark(map_a, &la), hb = mark(map_b, &lb);
    pg_shape_t sa, sb;
    const pg_shape_t *pa = shape_of(&la, space, &sa, ha), *pb = shape_of(&lb, space, &sb, hb);
    uintptr_t base = (uintptr_t)space;
    /* A contiguous layout has no gap: its bytes are its hull. */
    if (!pa)
      for (size_t i = la.off; i < la.off + ha; i++) cr_assert(map_a[i], "iter %d", iter);
    for (size_t i = 0; i < SPACE && pa; i++)
      cr_assert_eq(pg_shape_contains(pa, base + i), map_a[i] != 0, "iter %d byte %zu", iter, i);
    /* Random windows: intersects and overlap. */
    for (int w = 0; w < 8; w++) {
      size_t lo = (size_t)rand_r(&seed) % 1200, hi = lo + (size_t)rand_r(&seed) % 600;
      if (hi > SPACE) hi = SPACE;
      bool any_a = false, both = false;
      for (size_t i = lo; i < hi; i++) {
        bool ia = pa ? map_a[i] : (i >= la.off && i < la.off + ha);
        bool ib = pb ? map_b[i] : (i >= lb.off && i < lb.off + hb);
        any_a |= ia;
        both |= ia && ib;
      }
      if (pa) cr_assert_eq(pg_shape_intersects(pa, base + lo, base + hi), any_a, "iter %d", iter);
      /* The hulls bound the plain sides. */
      uintptr_t wlo = base + lo, whi = base + hi;
      if (!pa) {
        wlo = wlo > base + la.off ? wlo : base + la.off;
        whi = whi < base + la.off + ha ? whi : base + la.off + ha;
      }
      if (!pb) {
        wlo = wlo > base + lb.off ? wlo : base + lb.off;
        whi = whi < base + lb.off + hb ? whi : base + lb.off + hb;
      }
      cr_assert_eq(pg_shape_overlap(pa, pb, wlo, whi), both, "iter %d window %zu-%zu", iter, lo,
                   hi);
    }
  }
}

static uintptr_t runs_lo[64], runs_hi[64];
static size_t nruns;
static void note_run(uintptr_t lo, uintptr_t hi, void *arg) {
  (void)arg;
  runs_lo[nruns] = lo;
  runs_hi[nruns++] = hi;
}

Test(shape, page_runs_skip_gap_pages) {
  /* 3 rows of one page, 3 pages apart: 3 runs; the gap pages are in none. */
  pg_shape_t s;
  uintptr_t base = 0x100000;
  cr_assert(pg_shape_make(&s, (void *)base, 3 * 4096, 0, 4096, 3, 1));
  nruns = 0;
  cr_assert_eq(pg_shape_page_runs(&s, base, pg_shape_end(&s), 4096, 64, note_run, NULL), 3);
  for (size_t i = 0; i < 3; i++) {
    cr_assert_eq(runs_lo[i], base + i * 3 * 4096);
    cr_assert_eq(runs_hi[i], base + i * 3 * 4096 + 4096);
  }
  /* Rows of 100 bytes at a pitch of 9000: the pages holding a row's bytes (and gap bytes) stay
   * in, clipped to the hull; the page between holds only gap bytes. */
  cr_assert(pg_shape_make(&s, (void *)(base + 4000), 9000, 0, 100, 2, 1));
  nruns = 0;
  cr_assert_eq(pg_shape_page_runs(&s, s.base, pg_shape_end(&s), 4096, 64, note_run, NULL), 2);
  cr_assert_eq(runs_lo[0], base + 4000);
  cr_assert_eq(runs_hi[0], base + 8192);
  cr_assert_eq(runs_lo[1], base + 12288);
  cr_assert_eq(runs_hi[1], base + 13100);
  /* At a pitch of 5000 the second row's page abuts the first's: one run. */
  cr_assert(pg_shape_make(&s, (void *)(base + 4000), 5000, 0, 100, 2, 1));
  nruns = 0;
  cr_assert_eq(pg_shape_page_runs(&s, s.base, pg_shape_end(&s), 4096, 64, note_run, NULL), 1);
  /* Gaps shorter than a page: one run, whatever the row count. */
  cr_assert(pg_shape_make(&s, (void *)base, 256, 0, 128, 1000, 1));
  nruns = 0;
  cr_assert_eq(pg_shape_page_runs(&s, s.base, pg_shape_end(&s), 4096, 64, note_run, NULL), 1);
  cr_assert_eq(runs_hi[0], pg_shape_end(&s));
  /* More runs than allowed: the first ones. */
  cr_assert(pg_shape_make(&s, (void *)base, 8192, 0, 128, 1000, 1));
  nruns = 0;
  cr_assert_eq(pg_shape_page_runs(&s, s.base, pg_shape_end(&s), 4096, 64, note_run, NULL), 64);
  cr_assert_eq(runs_lo[63], base + 63 * 8192);
}

Test(shape, overlap_is_flat_in_the_row_count) {
  /* Interleaved rows: a million rows each, same pitch: answered without a walk. */
  pg_shape_t a, b;
  uintptr_t base = 0x10000000;
  cr_assert(pg_shape_make(&a, (void *)base, 2048, 0, 1024, 1000000, 1));
  cr_assert(pg_shape_make(&b, (void *)(base + 1024), 2048, 0, 1024, 1000000, 1));
  cr_assert(!pg_shape_overlap(&a, &b, 0, UINTPTR_MAX));
  cr_assert(pg_shape_make(&b, (void *)(base + 1023), 2048, 0, 1024, 1000000, 1));
  cr_assert(pg_shape_overlap(&a, &b, 0, UINTPTR_MAX));
}
