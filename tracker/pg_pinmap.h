/* pg_pinmap.h: a coarse summary of where pinned regions lie, for the quick reject of a kernel
 * parameter word (core/pg_kernel_params.c): most words of most launches are device pointers,
 * counts or floats, and one load says they cannot point into a pinned region, before the region
 * index is asked (tracker/pg_regions.c keeps the summary up to date).
 *
 * The address space below 2^47 is cut into 64 MiB granules, each with a count of the regions
 * that overlap it (counts saturate at 65535 and then stay). A granule with count 0 holds no
 * pinned byte. Addresses at or above 2^47 share one last count, as if one granule.
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

/* [PG_PINMAP_GRANULES]: every address at or above 2^47. */
extern _Atomic uint16_t pg_pinmap_count[PG_PINMAP_GRANULES + 1];

/* Whether p may lie inside a pinned region (false: certainly not). Five instructions, no branch
 * but the caller's. */
static inline bool pg_pinmap_maybe(uintptr_t p) {
  uintptr_t g = p >> PG_PINMAP_SHIFT;
  g = g < PG_PINMAP_GRANULES ? g : PG_PINMAP_GRANULES;
  return atomic_load_explicit(&pg_pinmap_count[g], memory_order_relaxed) != 0;
}

/* [lo, hi) became (add) or stopped being (remove) a region. Callers serialize them (the region
 * index's writer lock); remove only what was added. */
void pg_pinmap_add(uintptr_t lo, uintptr_t hi);
void pg_pinmap_remove(uintptr_t lo, uintptr_t hi);

#endif /* PG_PINMAP_H */
