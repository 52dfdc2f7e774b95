/* test_options_default.c: precedence of the three option sources. This program defines the
 * weak __pinguard_default_options hook (and is linked with exported symbols, as a program
 * using the hook under LD_PRELOAD must be): built-in defaults < the hook < PINGUARD_OPTIONS. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "pg_policy.h"

const char *__pinguard_default_options(void) {
  return "mode=enforce:verbosity=0:exitcode=7:max_reports=5";
}

Test(options_default, program_default_overrides_builtin) {
  unsetenv("PINGUARD_OPTIONS");
  pg_policy_init();
  cr_assert_eq(pg_policy_mode(), PG_MODE_ENFORCE);
  cr_assert_eq(pg_policy_options()->exitcode, 7);
  cr_assert_eq(pg_policy_options()->max_reports, 5);
  cr_assert(pg_policy_options()->dedup, "untouched options keep their built-in default");
}

Test(options_default, environment_overrides_program_default) {
  setenv("PINGUARD_OPTIONS", "mode=audit:exitcode=9", 1);
  pg_policy_init();
  cr_assert_eq(pg_policy_mode(), PG_MODE_AUDIT);
  cr_assert_eq(pg_policy_options()->exitcode, 9);
  cr_assert_eq(pg_policy_options()->max_reports, 5, "the program default still applies");
}

Test(options_default, init_is_idempotent) {
  setenv("PINGUARD_OPTIONS", "mode=off", 1);
  pg_policy_init();
  setenv("PINGUARD_OPTIONS", "mode=audit", 1);
  pg_policy_init();
  cr_assert_eq(pg_policy_mode(), PG_MODE_OFF);
}
