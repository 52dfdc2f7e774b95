/* pg_guard_decide.c: the guard decision per range (pg_guard_decide.h). */
#include "pg_guard_decide.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "pg_policy.h"
#include "pg_sink.h"
#include "pg_page.h"

bool pg_guard_release_copies_on_write(const char *release) {
  unsigned major = 0, minor = 0;
  if (!release || sscanf(release, "%u.%u", &major, &minor) != 2) return false;
  if (major == 5) return minor >= 9 && minor <= 18;
  if (major == 4) return minor == 14 || minor == 19;
  return false;
}

pg_guard_verdict_t pg_guard_verdict(const pg_mapping_t *m, const char *release) {
  if (m->page_size && m->page_size != (uint64_t)pg_page_size()) return PG_GUARD_NO_HUGETLB;
  if (!m->shared && pg_guard_release_copies_on_write(release)) return PG_GUARD_NO_COW;
  return PG_GUARD_YES;
}

const char *pg_guard_kernel_release(void) {
  static char cached[65];
  static atomic_int state; /* 0 unknown, 1 filled (any thread may fill it: same bytes) */
  const char *opt = pg_policy_options()->kernel_release.s;
  if (*opt) return opt;
  if (atomic_load_explicit(&state, memory_order_acquire)) return cached;
  struct utsname u;
  if (uname(&u) == 0) {
    snprintf(cached, sizeof cached, "%s", u.release);
    atomic_store_explicit(&state, 1, memory_order_release);
  }
  return cached;
}

void pg_guard_warn_verdict(pg_guard_verdict_t v, const char *release) {
  static atomic_bool warned[3];
  if (v == PG_GUARD_YES || (unsigned)v >= 3 || atomic_exchange(&warned[v], true)) return;
  char line[400];
  int n = 0;
  if (v == PG_GUARD_NO_COW)
    n = snprintf(line, sizeof line,
                 "pinguard: WARNING: Linux %s: cudaHostRegister'ed private memory (malloc, "
                 "MAP_PRIVATE) is not guarded (on 5.9 to 5.18 a protection round trip can make "
                 "the CPU write a copy of a pinned page); CPU accesses to it are not checked, "
                 "every other check still is\n",
                 release);
  else
    n = snprintf(line, sizeof line,
                 "pinguard: WARNING: hugetlb memory is not guarded (mprotect works only on whole "
                 "huge pages there); CPU accesses to it are not checked, every other check "
                 "still is\n");
  if (n > 0) pg_write_all(STDERR_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}
