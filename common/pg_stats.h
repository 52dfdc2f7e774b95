/* pg_stats.h: process-wide counters that the shim, tracker and guard code bump and that policy
 * prints at exit (print_stats=1). Relaxed atomics, one cache line each, so bumping a counter on
 * the per-copy path costs no lock and no false sharing. */
#ifndef PG_STATS_H
#define PG_STATS_H

#include <stdatomic.h>
#include <stdint.h>

/* X(ID, "name", "description"). Append only: names appear in JSON stats lines. */
#define PG_STATS(X)                                                                     \
  X(REGIONS_PINNED, "regions_pinned", "pinned regions registered")                      \
  X(REGIONS_DISCOVERED, "regions_discovered", "regions found by cudaPointerGetAttributes") \
  X(COPIES_TRACKED, "copies_tracked", "asynchronous copies touching pinned host memory")   \
  X(KERNELS_TRACKED, "kernels_tracked", "kernel launches holding pinned host pointers")   \
  X(KERNELS_UNSCANNED, "kernels_unscanned", "kernel launches without parameter info")     \
  X(ACCESSES_RETIRED, "accesses_retired", "GPU accesses retired: the host was ordered after them") \
  X(CONFLICTS, "conflicts", "conflicting accesses found (reported or not)")              \
  X(WAITS, "waits", "enforce waits on conflicting GPU work")                              \
  X(WAIT_NS, "wait_ns", "total time spent in enforce waits, in ns")                      \
  X(CAPTURE_SKIPS, "capture_skips", "waits skipped because the stream was capturing")     \
  X(GUARD_PROTECTS, "guard_protects", "guard-page protections applied")                   \
  X(GUARD_FAULTS, "guard_faults", "CPU accesses caught by guard pages")                   \
  X(ACCESSES_EVICTED, "accesses_evicted", "completed, never-ordered GPU accesses dropped past max_unordered") \
  X(CONFLICTS_COMPLETED, "conflicts_completed", "conflicts with GPU work that had completed, but that nothing ordered") \
  X(GUARD_UNCHECKED, "guard_unchecked", "guard faults let through unchecked (a signal handler interrupted pinguard)") \
  X(GUARD_SKIPPED_MAPS, "guard_skipped_maps", "guards skipped to stay within the mapping budget") \
  X(ACCESSES_UNTRACKED, "accesses_untracked", "GPU accesses checked but not tracked: no stream state (past the stream limit, out of memory) or no completion event")

typedef enum pg_stat {
#define PG_STAT_ENUM(id, name, desc) PG_STAT_##id,
  PG_STATS(PG_STAT_ENUM)
#undef PG_STAT_ENUM
  PG_STAT_COUNT
} pg_stat_t;

void pg_stat_add(pg_stat_t s, uint64_t n);
/* The counters (pg_stats.c), one cache line each: pg_stat_inc is inline, on every tracked copy. */
typedef struct {
  _Alignas(64) atomic_uint_fast64_t v;
} pg_stat_counter_t;
extern pg_stat_counter_t pg_stat_counters[PG_STAT_COUNT];
static inline void pg_stat_inc(pg_stat_t s) {
  if ((unsigned)s < PG_STAT_COUNT)
    atomic_fetch_add_explicit(&pg_stat_counters[s].v, 1, memory_order_relaxed);
}
uint64_t pg_stat_get(pg_stat_t s);
const char *pg_stat_name(pg_stat_t s);
const char *pg_stat_description(pg_stat_t s);
/* True when any counter is non-zero, i.e. the process did something pinguard tracks. */
int pg_stats_any(void);
void pg_stats_reset(void); /* fork child, tests */

#endif /* PG_STATS_H */
