/* pg_shape.h: the bytes one side of a pitched (2D or 3D) copy touches, as a strided span, and
 * the predicates the tracker asks of it. A plain copy has no shape: it touches its whole range.
 *
 * A shape touches `slices` slices `slice` bytes apart, each of `rows` rows `pitch` bytes apart,
 * each row `width` bytes from its start; row 0 of slice 0 starts at `base`:
 *   { base + z*slice + y*pitch + x : z < slices, y < rows, x < width }.
 * Every predicate costs O(1) arithmetic, whatever the row count, except pg_shape_overlap of two
 * shapes of different pitches (or a 3D shape against another): see there. */
#ifndef PG_SHAPE_H
#define PG_SHAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pg_shape {
  uintptr_t base;
  size_t width;  /* 0 < width < pitch (a shape with no gap is no shape) */
  size_t pitch;
  size_t rows;   /* >= 2, or 1 with slices >= 2 */
  size_t slice;  /* >= (rows - 1) * pitch + width; rows * pitch when slices == 1 */
  size_t slices; /* >= 1 */
} pg_shape_t;

/* Fills *s for the bytes of `depth` slices `slice` bytes apart of `height` rows `pitch` bytes
 * apart of `width` bytes from p, normalized (one row per slice becomes a 2D shape; slices that
 * follow each other row for row become rows). False when those bytes are one contiguous range
 * (no gap), or when the layout is not one CUDA accepts (rows or slices that overlap): the caller
 * then tracks the hull, [p, p + pg_shape_hull_len(...)), as a plain span. */
bool pg_shape_make(pg_shape_t *s, const void *p, size_t pitch, size_t slice, size_t width,
                   size_t height, size_t depth);

/* The end of the hull: one past the last touched byte. */
static inline uintptr_t pg_shape_end(const pg_shape_t *s) {
  return s->base + (s->slices - 1) * s->slice + (s->rows - 1) * s->pitch + s->width;
}

/* The first touched byte at or after x, or UINTPTR_MAX when there is none. O(1). */
uintptr_t pg_shape_next(const pg_shape_t *s, uintptr_t x);

/* Whether the shape touches byte a. O(1). */
static inline bool pg_shape_contains(const pg_shape_t *s, uintptr_t a) {
  return pg_shape_next(s, a) == a;
}

/* Whether the shape touches a byte of [lo, hi). O(1). */
static inline bool pg_shape_intersects(const pg_shape_t *s, uintptr_t lo, uintptr_t hi) {
  return lo < hi && pg_shape_next(s, lo) < hi;
}

/* Whether some byte of [lo, hi) is touched by both a and b (NULL: every byte of the window).
 * Exact. O(1) when one is NULL or both are 2D shapes of the same pitch; two shapes of the same
 * pitch with slices cost one such test per pair of slices whose hulls meet (not per row);
 * shapes of different pitches walk the rows of one of them inside the window. Both walks stop
 * after PG_SHAPE_WALK_MAX steps and then answer true (an overlap assumed: a report too many,
 * never one too few). */
#define PG_SHAPE_WALK_MAX 1024
bool pg_shape_overlap(const pg_shape_t *a, const pg_shape_t *b, uintptr_t lo, uintptr_t hi);

/* Page runs: calls fn(lo, hi, arg) for the first max_runs maximal runs of pages [lo, hi)
 * (page-aligned, clipped to [clip_lo, clip_hi)), in address order, that hold a touched byte;
 * pages holding only gap bytes are never in one. Returns how many fn was called for. Cost: O(1)
 * per run where rows are closer than a page (a slice, or the whole shape, is one run), else O(1)
 * per row looked at, at most 4 * max_runs + 4 rows. page is a power of two. */
size_t pg_shape_page_runs(const pg_shape_t *s, uintptr_t clip_lo, uintptr_t clip_hi,
                          uintptr_t page, size_t max_runs,
                          void (*fn)(uintptr_t lo, uintptr_t hi, void *arg), void *arg);

#endif /* PG_SHAPE_H */
