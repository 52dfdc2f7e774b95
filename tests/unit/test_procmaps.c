/* test_procmaps.c: the mapping-kind question cudaHostRegister asks (issue 9, defect 7). Shared,
 * private and unmapped addresses get the right answer from the ioctl and from the maps-text
 * fallback alike; many questions open /proc/self/maps once and scan it never (where the kernel
 * has PROCMAP_QUERY), so registering n regions no longer reads the maps n times; a fork child
 * asks about its own address space. Deterministic: counts, not timings. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pg_procmaps.h"

static char *map(int flags) {
  char *p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, flags | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(p, MAP_FAILED);
  return p;
}

/* Whether this kernel has PROCMAP_QUERY (6.11 and later). */
static bool kernel_has_query(void) {
  struct utsname u;
  int major = 0, minor = 0;
  if (uname(&u) != 0 || sscanf(u.release, "%d.%d", &major, &minor) != 2) return false;
  return major > 6 || (major == 6 && minor >= 11);
}

Test(procmaps, shared_private_and_unmapped) {
  char *sh = map(MAP_SHARED), *pr = map(MAP_PRIVATE), *gone = map(MAP_PRIVATE);
  munmap(gone, 3 * 4096);
  int (*ask[])(const void *) = {pg_maps_is_shared, pg_maps_scan_is_shared};
  for (int i = 0; i < 2; i++) {
    cr_assert_eq(ask[i](sh), 1, "way %d: shared", i);
    cr_assert_eq(ask[i](sh + 3 * 4096 - 1), 1, "way %d: shared, last byte", i);
    cr_assert_eq(ask[i](pr + 4096), 0, "way %d: private", i);
    cr_assert_eq(ask[i](gone + 4096), -1, "way %d: unmapped", i);
  }
  munmap(sh, 3 * 4096);
  munmap(pr, 3 * 4096);
}

Test(procmaps, many_questions_open_the_maps_once) {
  /* 4000 mappings of alternating kinds (adjacent ones would merge), each asked about. */
  enum { N = 4000 };
  static char *m[N];
  for (int i = 0; i < N; i++) m[i] = map(i % 2 ? MAP_SHARED : MAP_PRIVATE);
  pg_maps_counts_t before = pg_maps_counts();
  for (int i = 0; i < N; i++) cr_assert_eq(pg_maps_is_shared(m[i] + 100), i % 2, "mapping %d", i);
  pg_maps_counts_t after = pg_maps_counts();
  if (kernel_has_query()) {
    cr_assert_leq(after.opens - before.opens, 1, "opened %llu times",
                  (unsigned long long)(after.opens - before.opens));
    cr_assert_eq(after.scans, before.scans, "the maps text was read");
    cr_assert_eq(after.queries - before.queries, N);
  } else {
    cr_log_warn("kernel without PROCMAP_QUERY: the fallback scans (%llu)",
                (unsigned long long)(after.scans - before.scans));
  }
  for (int i = 0; i < N; i++) munmap(m[i], 3 * 4096);
}

Test(procmaps, a_fork_child_asks_about_its_own_mappings) {
  char *pr = map(MAP_PRIVATE);
  cr_assert_eq(pg_maps_is_shared(pr), 0); /* opens the descriptor in the parent */
  pid_t pid = fork();
  if (pid == 0) {
    /* The parent's mapping goes away in the child only: the inherited descriptor would still
     * see it; the child's own answer must be "unmapped". */
    char *sh = map(MAP_SHARED);
    munmap(pr, 3 * 4096);
    _exit(pg_maps_is_shared(pr) == -1 && pg_maps_is_shared(sh) == 1 ? 0 : 1);
  }
  int status;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
  cr_assert_eq(pg_maps_is_shared(pr), 0, "the parent's answer is unchanged");
  munmap(pr, 3 * 4096);
}
