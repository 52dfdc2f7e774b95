/* pg_engine.c: the entries of the engine's door (pg_engine.h) that are the process's own or
 * pass a fact straight on: options, start, exit, flag words, the system-call filter. The
 * decisions are in pg_decide.c, the fault path in pg_fault.c. */
#include "pg_engine.h"
#include "pg_decide.h"
#include "pg_guard.h"
#include "pg_policy.h"
#include "pg_safeload.h"

void pg_engine_init(void) { pg_policy_init(); }

bool pg_engine_off(void) { return pg_policy_options()->mode == PG_MODE_OFF; }

int pg_engine_verbosity(void) { return pg_policy_options()->verbosity; }

bool pg_engine_guards(bool *single_steps) {
  *single_steps = pg_policy_options()->guard_shared_edges;
  return pg_policy_guard();
}

void pg_engine_fault_handler_installed(void) { pg_safeload_arm(); }

bool pg_engine_start(const pg_devops_t *ops) {
  if (!pg_decide_start(ops)) return false;
  pg_policy_stats_start(pg_region_count, pg_tracker_inflight_count); /* stats_path= only */
  return true;
}

int pg_engine_finish(void) { return pg_policy_finish(); }

void pg_on_flag_word(const void *p, size_t n) { pg_guard_never(p, n); }

bool pg_on_syscall_begin(const void *p, size_t n, bool kernel_writes) {
  if (pg_region_find_range(p, n, NULL, 0) > 0) return true;
  pg_guard_spare_neighbour(p, n, kernel_writes); /* it may share a guarded edge page */
  return false;
}
