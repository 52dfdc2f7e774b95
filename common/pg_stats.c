/* pg_stats.c: storage for the counters declared in pg_stats.h. */
#include "pg_stats.h"

#include <stdatomic.h>
#include <stddef.h>

pg_stat_counter_t pg_stat_counters[PG_STAT_COUNT];

static const char *const names[] = {
#define PG_STAT_NAME(id, name, desc) name,
    PG_STATS(PG_STAT_NAME)
#undef PG_STAT_NAME
};

static const char *const descriptions[] = {
#define PG_STAT_DESC(id, name, desc) desc,
    PG_STATS(PG_STAT_DESC)
#undef PG_STAT_DESC
};

void pg_stat_add(pg_stat_t s, uint64_t n) {
  if ((unsigned)s < PG_STAT_COUNT)
    atomic_fetch_add_explicit(&pg_stat_counters[s].v, n, memory_order_relaxed);
}

uint64_t pg_stat_get(pg_stat_t s) {
  if ((unsigned)s >= PG_STAT_COUNT) return 0;
  return atomic_load_explicit(&pg_stat_counters[s].v, memory_order_relaxed);
}

const char *pg_stat_name(pg_stat_t s) { return (unsigned)s < PG_STAT_COUNT ? names[s] : NULL; }

const char *pg_stat_description(pg_stat_t s) {
  return (unsigned)s < PG_STAT_COUNT ? descriptions[s] : NULL;
}

int pg_stats_any(void) {
  for (unsigned i = 0; i < PG_STAT_COUNT; i++)
    if (pg_stat_get((pg_stat_t)i)) return 1;
  return 0;
}

void pg_stats_reset(void) {
  for (unsigned i = 0; i < PG_STAT_COUNT; i++)
    atomic_store_explicit(&pg_stat_counters[i].v, 0, memory_order_relaxed);
}
