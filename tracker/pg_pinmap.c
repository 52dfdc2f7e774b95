/* pg_pinmap.c: the granule counts of pg_pinmap.h. Writers are serialized by their caller, so a
 * count is read and written back without a read-modify-write instruction. */
#include "pg_pinmap.h"

_Atomic uint16_t pg_pinmap_count[PG_PINMAP_GRANULES];

static void change(uintptr_t lo, uintptr_t hi, int by) {
  if (hi <= lo) return;
  uintptr_t first = lo >> PG_PINMAP_SHIFT, last = (hi - 1) >> PG_PINMAP_SHIFT;
  if (last - first >= PG_PINMAP_GRANULES) last = first + PG_PINMAP_GRANULES - 1; /* all */
  for (uintptr_t k = first; k <= last; k++) {
    size_t g = k & (PG_PINMAP_GRANULES - 1); /* addresses past 2^47 fold (pg_pinmap.h) */
    uint16_t c = atomic_load_explicit(&pg_pinmap_count[g], memory_order_relaxed);
    if (c == UINT16_MAX) continue; /* saturated: stays set */
    if (by < 0 && c == 0) continue;
    atomic_store_explicit(&pg_pinmap_count[g], (uint16_t)(c + by), memory_order_relaxed);
  }
}

void pg_pinmap_add(uintptr_t lo, uintptr_t hi) { change(lo, hi, 1); }
void pg_pinmap_remove(uintptr_t lo, uintptr_t hi) { change(lo, hi, -1); }
