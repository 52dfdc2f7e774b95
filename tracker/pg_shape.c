/* pg_shape.c: strided spans (pg_shape.h). */
#include "pg_shape.h"

#define NONE UINTPTR_MAX

static uintptr_t min_u(uintptr_t a, uintptr_t b) { return a < b ? a : b; }
static uintptr_t max_u(uintptr_t a, uintptr_t b) { return a > b ? a : b; }

/* Bytes from a slice's first byte to one past its last row's end. */
static size_t slice_len(const pg_shape_t *s) { return (s->rows - 1) * s->pitch + s->width; }

bool pg_shape_make(pg_shape_t *s, const void *p, size_t pitch, size_t slice, size_t width,
                   size_t height, size_t depth) {
  if (!p || !width || !height || !depth) return false;
  if (height == 1) { /* one row per slice: the slices are the rows */
    height = depth;
    pitch = slice;
    depth = 1;
  }
  if (height > 1 && pitch < width) return false;         /* rows overlap */
  if (height == 1) return false;                         /* one row: contiguous */
  if (depth > 1 && slice == height * pitch) {            /* slices follow row for row */
    height *= depth;
    depth = 1;
  }
  if (depth > 1 && slice < (height - 1) * pitch + width) return false; /* slices overlap */
  if (pitch == width && depth == 1) return false;        /* no gap */
  if (pitch == width) {                                  /* gaps only between slices */
    width = height * pitch;
    pitch = slice;
    height = depth;
    depth = 1;
    if (pitch == width) return false;
  }
  /* The hull must fit the address space. */
  uintptr_t b = (uintptr_t)p;
  size_t len = (depth - 1) * slice + (height - 1) * pitch + width;
  if ((depth > 1 && (depth - 1) > SIZE_MAX / slice) || (height - 1) > SIZE_MAX / pitch ||
      len < width || b + len < b)
    return false;
  *s = (pg_shape_t){.base = b, .width = width, .pitch = pitch, .rows = height,
                    .slice = depth > 1 ? slice : height * pitch, .slices = depth};
  return true;
}

uintptr_t pg_shape_next(const pg_shape_t *s, uintptr_t x) {
  if (x <= s->base) return s->base;
  uintptr_t off = x - s->base;
  size_t z = off / s->slice, r = off % s->slice;
  if (z >= s->slices) return NONE;
  size_t y = r / s->pitch, c = r % s->pitch;
  if (y < s->rows) {
    if (c < s->width) return x;
    if (y + 1 < s->rows) return s->base + z * s->slice + (y + 1) * s->pitch;
  }
  if (z + 1 >= s->slices) return NONE;
  return s->base + (z + 1) * s->slice;
}

/* ---- overlap ------------------------------------------------------------------------------- */
/* One slice of s, as a 2D shape (rows only). */
static pg_shape_t slice_of(const pg_shape_t *s, size_t z) {
  return (pg_shape_t){.base = s->base + z * s->slice, .width = s->width, .pitch = s->pitch,
                      .rows = s->rows, .slice = s->rows * s->pitch, .slices = 1};
}

/* The bytes of rows [g0, g1) of a grid of `pitch` from base, columns [c0, c1), meet [lo, hi). */
static bool rect_meets(intptr_t base, size_t pitch, intptr_t g0, intptr_t g1, size_t c0,
                       size_t c1, uintptr_t lo, uintptr_t hi) {
  if (g1 <= g0 || c1 <= c0) return false;
  pg_shape_t r = {.base = (uintptr_t)(base + g0 * (intptr_t)pitch) + c0, .width = c1 - c0,
                  .pitch = pitch, .rows = (size_t)(g1 - g0), .slices = 1};
  r.slice = r.rows * pitch;
  return pg_shape_intersects(&r, lo, hi);
}

/* Two 2D shapes of one pitch P, in a's grid (row g of a starts at a->base + g*P): b's row j
 * starts at column r of grid row q + j, where b->base - a->base = q*P + r, 0 <= r < P. So the
 * common bytes are those of two rectangles of the grid: columns [r, min(wa, r + wb)) of the
 * rows both have (g = q + j), and columns [0, r + wb - P) of the rows into which b's rows run
 * on (g = q + j + 1). O(1). */
static bool overlap_2d_same_pitch(const pg_shape_t *a, const pg_shape_t *b, uintptr_t lo,
                                  uintptr_t hi) {
  intptr_t P = (intptr_t)a->pitch;
  intptr_t d = (intptr_t)(b->base - a->base);
  intptr_t q = d >= 0 ? d / P : -((-d + P - 1) / P);
  size_t r = (size_t)(d - q * P);
  intptr_t ha = (intptr_t)a->rows, hb = (intptr_t)b->rows;
  intptr_t g0 = q > 0 ? q : 0, g1 = q + hb < ha ? q + hb : ha;
  size_t c1 = r + b->width < a->width ? r + b->width : a->width;
  if (rect_meets((intptr_t)a->base, a->pitch, g0, g1, r, c1, lo, hi)) return true;
  if (r + b->width <= a->pitch) return false;
  size_t w2 = r + b->width - a->pitch;
  g0 = q + 1 > 0 ? q + 1 : 0;
  g1 = q + 1 + hb < ha ? q + 1 + hb : ha;
  return rect_meets((intptr_t)a->base, a->pitch, g0, g1, 0, w2 < a->width ? w2 : a->width, lo,
                    hi);
}

/* Same pitch, slices on either side: each pair of slices whose hulls meet inside [lo, hi). */
static bool overlap_slices(const pg_shape_t *a, const pg_shape_t *b, uintptr_t lo, uintptr_t hi) {
  if (a->slices > b->slices) { const pg_shape_t *t = a; a = b; b = t; }
  size_t steps = 0;
  size_t z0 = lo > a->base ? (lo - a->base) / a->slice : 0;
  for (size_t z = z0; z < a->slices; z++) {
    if (++steps > PG_SHAPE_WALK_MAX) return true;
    pg_shape_t as = slice_of(a, z);
    uintptr_t alo = max_u(as.base, lo), ahi = min_u(pg_shape_end(&as), hi);
    if (as.base >= hi) break;
    if (alo >= ahi) continue;
    /* b's slices whose hull meets [alo, ahi): starts in (alo - slice_len(b), ahi). */
    uintptr_t from = alo > b->base + slice_len(b) ? alo - slice_len(b) - b->base : 0;
    size_t j0 = from / b->slice;
    for (size_t j = j0; j < b->slices && b->base + j * b->slice < ahi; j++) {
      if (++steps > PG_SHAPE_WALK_MAX) return true;
      pg_shape_t bs = slice_of(b, j);
      if (overlap_2d_same_pitch(&as, &bs, alo, ahi)) return true;
    }
  }
  return false;
}

/* Any two shapes: a's rows inside [lo, hi), each a contiguous window for b. */
static bool overlap_walk(const pg_shape_t *a, const pg_shape_t *b, uintptr_t lo, uintptr_t hi) {
  if (a->pitch < b->pitch) { const pg_shape_t *t = a; a = b; b = t; } /* fewer rows to walk */
  size_t steps = 0;
  for (uintptr_t x = pg_shape_next(a, lo); x < hi; steps++) {
    if (steps >= PG_SHAPE_WALK_MAX) return true;
    size_t col = (x - a->base) % a->slice % a->pitch;
    uintptr_t end = x + (a->width - col);
    if (pg_shape_intersects(b, x, min_u(end, hi))) return true;
    x = pg_shape_next(a, end);
  }
  return false;
}

bool pg_shape_overlap(const pg_shape_t *a, const pg_shape_t *b, uintptr_t lo, uintptr_t hi) {
  if (a) {
    lo = max_u(lo, a->base);
    hi = min_u(hi, pg_shape_end(a));
  }
  if (b) {
    lo = max_u(lo, b->base);
    hi = min_u(hi, pg_shape_end(b));
  }
  if (lo >= hi) return false;
  if (!a && !b) return true;
  if (!a || !b) return pg_shape_intersects(a ? a : b, lo, hi);
  if (a->pitch == b->pitch) {
    if (a->slices == 1 && b->slices == 1) return overlap_2d_same_pitch(a, b, lo, hi);
    return overlap_slices(a, b, lo, hi);
  }
  return overlap_walk(a, b, lo, hi);
}

/* ---- page runs ----------------------------------------------------------------------------- */
/* The end of the unit of s holding touched byte x: its row when the gap between rows spans a
 * page, else its slice when the gap between slices does, else the whole shape. Units closer
 * than a page share or abut pages, so they are one run anyway. */
static uintptr_t unit_end(const pg_shape_t *s, uintptr_t x, uintptr_t page) {
  uintptr_t off = x - s->base;
  size_t z = off / s->slice;
  if (s->pitch - s->width >= page) return x + (s->width - off % s->slice % s->pitch);
  if (s->slices > 1 && s->slice - slice_len(s) >= page)
    return s->base + z * s->slice + slice_len(s);
  return pg_shape_end(s);
}

size_t pg_shape_page_runs(const pg_shape_t *s, uintptr_t clip_lo, uintptr_t clip_hi,
                          uintptr_t page, size_t max_runs,
                          void (*fn)(uintptr_t lo, uintptr_t hi, void *arg), void *arg) {
  size_t n = 0, looked = 0;
  uintptr_t mask = ~(page - 1);
  uintptr_t x = pg_shape_next(s, clip_lo);
  while (x < clip_hi && n < max_runs && looked++ < 4 * max_runs + 4) {
    uintptr_t lo = max_u(x & mask, clip_lo);
    uintptr_t end = min_u(unit_end(s, x, page), clip_hi);
    uintptr_t hi = min_u((end + page - 1) & mask, clip_hi);
    /* Units whose pages touch this run's join it. */
    for (x = pg_shape_next(s, end); x < clip_hi && (x & mask) <= hi && looked++ < 4 * max_runs + 4;
         x = pg_shape_next(s, end)) {
      end = min_u(unit_end(s, x, page), clip_hi);
      hi = min_u((end + page - 1) & mask, clip_hi);
    }
    fn(lo, hi, arg);
    n++;
  }
  return n;
}
