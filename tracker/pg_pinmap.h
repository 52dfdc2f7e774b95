/* pg_pinmap.h: a coarse summary of where pinned regions lie, for the quick reject of a kernel
 * parameter word (core/pg_kernel_params.c): most words of most launches are device pointers,
 * counts or floats, and one load says they cannot point into a pinned region, before the region
 * index is asked (tracker/pg_regions.c keeps the summary up to date).
 *
 * The address space below 2^47 is cut into 64 MiB granules, each with a count of the regions
 * that overlap it (counts saturate at 65535 and then stay). A granule with count 0 holds no
 * pinned byte. An address at or above 2^47 (and any 64-bit word) is taken modulo 2^47: a
 * region up there counts in the granules its addresses fold onto, so the test stays one shift,
 * one mask and one load; a word that folds onto a pinned granule only costs the exact check.
 * Readers take no lock: a region being added or removed concurrently with a launch that uses it
 * may or may not be seen, as with the index itself (added before the index publishes it, removed
 * after the index forgets it). */
#ifndef PG_PINMAP_H
#define PG_PINMAP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PG_PINMAP_SHIFT 26
#define PG_PINMAP_TOP 47
#define PG_PINMAP_GRANULES ((size_t)1 << (PG_PINMAP_TOP - PG_PINMAP_SHIFT))

extern _Atomic uint16_t pg_pinmap_count[PG_PINMAP_GRANULES];

static inline size_t pg_pinmap_granule(uintptr_t p) {
  return (p >> PG_PINMAP_SHIFT) & (PG_PINMAP_GRANULES - 1);
}

/* Whether p may lie inside a pinned region (false: certainly not). Four instructions, no branch
 * but the caller's. */
static inline bool pg_pinmap_maybe(uintptr_t p) {
  return atomic_load_explicit(&pg_pinmap_count[pg_pinmap_granule(p)], memory_order_relaxed) != 0;
}

/* [lo, hi) became (add) or stopped being (remove) a region. Callers serialize them (the region
 * index's writer lock); remove only what was added. */
void pg_pinmap_add(uintptr_t lo, uintptr_t hi);
void pg_pinmap_remove(uintptr_t lo, uintptr_t hi);

#endif /* PG_PINMAP_H */
