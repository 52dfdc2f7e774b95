/* unit.guard_decide: the guard decision per range (core/pg_guard_decide.h): which kernel releases
 * copy a pinned private page after a protection round trip, and the verdict per mapping kind. */
#include <criterion/criterion.h>
#include <unistd.h>

#include "pg_guard_decide.h"

Test(guard_decide, affected_releases) {
  static const char *const affected[] = {"5.9.0", "5.10.0-28-amd64", "5.15.0-91-generic",
                                         "5.18.19", "4.14.330", "4.19.0-26-cloud-amd64"};
  for (size_t i = 0; i < sizeof affected / sizeof *affected; i++)
    cr_assert(pg_guard_release_copies_on_write(affected[i]), "%s", affected[i]);
  static const char *const safe[] = {"5.19.0", "6.8.0-45-generic", "6.18.44", "5.4.0-150",
                                     "4.9.337", "3.10.0-1160.el7", "", "garbage"};
  for (size_t i = 0; i < sizeof safe / sizeof *safe; i++)
    cr_assert_not(pg_guard_release_copies_on_write(safe[i]), "%s", safe[i]);
  cr_assert_not(pg_guard_release_copies_on_write(NULL));
}

Test(guard_decide, verdict_per_mapping) {
  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  pg_mapping_t private_anon = {.shared = 0, .anon = 1, .page_size = page};
  pg_mapping_t private_file = {.shared = 0, .anon = 0, .page_size = page};
  pg_mapping_t shared = {.shared = 1, .anon = 1, .page_size = page};
  pg_mapping_t huge = {.shared = 0, .anon = 1, .page_size = 2u << 20};
  pg_mapping_t huge_shared = {.shared = 1, .anon = 0, .page_size = 1u << 30};
  cr_assert_eq(pg_guard_verdict(&private_anon, "5.15.0"), PG_GUARD_NO_COW);
  cr_assert_eq(pg_guard_verdict(&private_file, "5.10.0"), PG_GUARD_NO_COW);
  cr_assert_eq(pg_guard_verdict(&shared, "5.15.0"), PG_GUARD_YES);
  cr_assert_eq(pg_guard_verdict(&private_anon, "6.8.0"), PG_GUARD_YES);
  cr_assert_eq(pg_guard_verdict(&huge, "6.8.0"), PG_GUARD_NO_HUGETLB);
  cr_assert_eq(pg_guard_verdict(&huge_shared, "5.15.0"), PG_GUARD_NO_HUGETLB);
}
