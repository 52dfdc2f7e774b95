/* test_options.c: the option parser: defaults, every accepted spelling, precedence of the
 * environment, and hostile input (huge strings, missing '=', empty keys and values, repeated
 * separators, out-of-range numbers, embedded '=', quotes, non-UTF-8), which must warn, apply
 * the rest, and never crash or truncate silently. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "pg_options.h"
#include "pg_policy.h"
#include "test_policy_helpers.h"

/* Collects warnings instead of printing them. */
typedef struct warnings {
  int n;
  char last[600];
  char all[8192];
} warnings_t;

static void collect(void *ctx, const char *line) {
  warnings_t *w = ctx;
  w->n++;
  snprintf(w->last, sizeof w->last, "%s", line);
  size_t used = strlen(w->all);
  snprintf(w->all + used, sizeof w->all - used, "%s\n", line);
}

static pg_options_t o;
static warnings_t w;

static int parse(const char *s) {
  pg_options_set_defaults(&o);
  memset(&w, 0, sizeof w);
  return pg_options_parse(&o, s, "PINGUARD_OPTIONS", collect, &w);
}

Test(options, defaults_are_documented_values) {
  cr_assert_eq(parse(NULL), 0);
  cr_assert_eq(o.mode, PG_MODE_AUDIT);
  cr_assert_eq(o.log_format, PG_FORMAT_TEXT);
  cr_assert_str_empty(o.log_path.s);
  cr_assert_eq(o.exitcode, 23);
  cr_assert_eq(o.stack_depth, 16);
  cr_assert(o.dedup);
  cr_assert(o.print_summary);
  cr_assert_not(o.print_stats);
  cr_assert_not(o.halt_on_error);
  cr_assert_eq(o.max_reports, 1000);
  cr_assert_eq(o.guard_min_bytes, 65536);
}

Test(options, every_boolean_spelling) {
  static const char *yes[] = {"1", "true", "yes", "on", "TRUE", "Yes", "ON"};
  static const char *no[] = {"0", "false", "no", "off", "FALSE", "No", "Off"};
  char buf[64];
  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
    snprintf(buf, sizeof buf, "print_stats=%s:print_summary=%s", yes[i], no[i]);
    cr_assert_eq(parse(buf), 0, "%s", buf);
    cr_assert(o.print_stats, "%s", buf);
    cr_assert_not(o.print_summary, "%s", buf);
  }
  cr_assert_eq(parse("halt_on_error=maybe"), 1);
  cr_assert_not(o.halt_on_error);
  cr_assert(strstr(w.last, "expected 1/0, true/false, yes/no or on/off"), "%s", w.last);
}

Test(options, both_separators_and_repeats) {
  cr_assert_eq(parse("::,mode=enforce,,:verbosity=2: ,exitcode=9,,"), 0, "%s", w.all);
  cr_assert_eq(o.mode, PG_MODE_ENFORCE);
  cr_assert_eq(o.verbosity, 2);
  cr_assert_eq(o.exitcode, 9);
}

Test(options, later_pairs_win) {
  parse("mode=enforce:mode=off:mode=audit");
  cr_assert_eq(o.mode, PG_MODE_AUDIT);
}

Test(options, enums) {
  cr_assert_eq(parse("mode=off:log_format=json"), 0);
  cr_assert_eq(o.mode, PG_MODE_OFF);
  cr_assert_eq(o.log_format, PG_FORMAT_JSON);
  cr_assert_eq(parse("mode=enforcee:log_format=xml"), 2);
  cr_assert_eq(o.mode, PG_MODE_AUDIT);
  cr_assert_eq(o.log_format, PG_FORMAT_TEXT);
}

Test(options, unknown_key_warns_and_the_rest_applies) {
  cr_assert_eq(parse("mode=enforce:no_such_option=1:verbosity=3"), 1);
  cr_assert_eq(o.mode, PG_MODE_ENFORCE);
  cr_assert_eq(o.verbosity, 3);
  cr_assert_str_eq(w.last,
                   "pinguard: WARNING: PINGUARD_OPTIONS: unknown option 'no_such_option'; ignored");
}

Test(options, pair_without_equals) {
  cr_assert_eq(parse("halt_on_error:mode=enforce"), 1);
  cr_assert_not(o.halt_on_error);
  cr_assert_eq(o.mode, PG_MODE_ENFORCE);
  cr_assert(strstr(w.last, "without a value") && strstr(w.last, "'halt_on_error'"), "%s", w.last);
}

Test(options, empty_key_and_empty_values) {
  cr_assert_eq(parse("=1:==:mode=enforce"), 2, "%s", w.all);
  cr_assert_eq(o.mode, PG_MODE_ENFORCE);
  cr_assert(strstr(w.all, "empty option name"), "%s", w.all);
  /* An empty value is a bad number or enum, but a valid (reset) string. */
  cr_assert_eq(parse("verbosity=:mode=:log_path="), 2, "%s", w.all);
  cr_assert_eq(o.verbosity, 0);
  cr_assert_eq(o.mode, PG_MODE_AUDIT);
  cr_assert_str_empty(o.log_path.s);
}

Test(options, numbers_out_of_range_keep_the_old_value) {
  static const char *bad[] = {"exitcode=256", "exitcode=-1", "exitcode=+3", "exitcode=0x10",
                              "verbosity=99999999999999999999999999", "verbosity=2147483648",
                              "stack_depth=0", "stack_depth=17", "max_reports=1e3",
                              "guard_min_bytes=5000000000g", "guard_min_bytes=k",
                              "guard_min_bytes=12kb", "exitcode= 1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cr_assert_geq(parse(bad[i]), 1, "%s", bad[i]);
    cr_assert_eq(o.exitcode, 23, "%s", bad[i]);
    cr_assert_eq(o.verbosity, 0, "%s", bad[i]);
    cr_assert_eq(o.stack_depth, 16, "%s", bad[i]);
    cr_assert_eq(o.max_reports, 1000, "%s", bad[i]);
    cr_assert_eq(o.guard_min_bytes, 65536, "%s", bad[i]);
    cr_assert(strstr(w.all, "pinguard: WARNING: PINGUARD_OPTIONS: "), "%s", w.all);
  }
}

Test(options, numbers_at_the_limits) {
  cr_assert_eq(parse("exitcode=255:verbosity=2147483647:stack_depth=1:max_reports=0"), 0);
  cr_assert_eq(o.exitcode, 255);
  cr_assert_eq(o.verbosity, 2147483647);
  cr_assert_eq(o.stack_depth, 1);
  cr_assert_eq(o.max_reports, 0);
  cr_assert_eq(parse("guard_min_bytes=4k"), 0);
  cr_assert_eq(o.guard_min_bytes, 4096);
  cr_assert_eq(parse("guard_min_bytes=2M"), 0);
  cr_assert_eq(o.guard_min_bytes, 2u << 20);
  cr_assert_eq(parse("guard_min_bytes=1g"), 0);
  cr_assert_eq(o.guard_min_bytes, 1ull << 30);
}

Test(options, embedded_equals_belongs_to_the_value) {
  cr_assert_eq(parse("log_path=/tmp/a=b=c:mode=enforce"), 0);
  cr_assert_str_eq(o.log_path.s, "/tmp/a=b=c");
  cr_assert_eq(o.mode, PG_MODE_ENFORCE);
}

Test(options, quoted_values_hold_separators) {
  cr_assert_eq(parse("suppressions='/tmp/x:y,z':log_path=\"/a b\""), 0, "%s", w.all);
  cr_assert_str_eq(o.suppressions.s, "/tmp/x:y,z");
  cr_assert_str_eq(o.log_path.s, "/a b");
  cr_assert_eq(parse("mode=enforce:log_path='/never/closed"), 1);
  cr_assert_eq(o.mode, PG_MODE_ENFORCE);
  cr_assert_str_empty(o.log_path.s);
  cr_assert(strstr(w.last, "unterminated quote"), "%s", w.last);
  cr_assert_eq(parse("log_path='/a'junk:verbosity=1"), 1);
  cr_assert_str_empty(o.log_path.s);
  cr_assert_eq(o.verbosity, 1);
}

Test(options, non_utf8_is_escaped_in_the_warning) {
  cr_assert_eq(parse("\xff\xfe\x01=1:mode=enforce:verbosity=\xc3\x28"), 2);
  cr_assert_eq(o.mode, PG_MODE_ENFORCE);
  cr_assert(strstr(w.all, "unknown option '\\xff\\xfe\\x01'"), "%s", w.all);
  cr_assert(strstr(w.all, "'verbosity' = '\\xc3('"), "%s", w.all);
}

Test(options, huge_input_is_parsed_completely) {
  /* 1 MiB of valid pairs: nothing is copied, so the last pair still counts. */
  const size_t n = 1 << 20;
  char *s = malloc(n + 64);
  size_t len = 0;
  while (len + 16 < n) len += (size_t)sprintf(s + len, "verbosity=1:");
  strcpy(s + len, "mode=enforce");
  cr_assert_eq(parse(s), 0);
  cr_assert_eq(o.mode, PG_MODE_ENFORCE);
  free(s);
}

Test(options, huge_key_and_value_are_reported_not_truncated) {
  const size_t n = 100000;
  char *s = malloc(n + 64);
  memset(s, 'k', n);
  strcpy(s + n, "=1:mode=enforce");
  cr_assert_eq(parse(s), 1);
  cr_assert_eq(o.mode, PG_MODE_ENFORCE);
  cr_assert(strstr(w.last, "...(100000 bytes)"), "the cut must be visible: %s", w.last);
  cr_assert_lt(strlen(w.last), 512);

  strcpy(s, "log_path=");
  memset(s + 9, 'p', 5000);
  strcpy(s + 9 + 5000, ":verbosity=2");
  cr_assert_eq(parse(s), 1);
  cr_assert_str_empty(o.log_path.s, "an over-long path must not be applied cut short");
  cr_assert_eq(o.verbosity, 2);
  cr_assert(strstr(w.last, "at most 1023 bytes"), "%s", w.last);
  free(s);
}

Test(options, longest_string_value_is_kept_whole) {
  char s[PG_OPT_STR_MAX + 16];
  strcpy(s, "log_path=");
  memset(s + 9, 'q', PG_OPT_STR_MAX - 1);
  s[9 + PG_OPT_STR_MAX - 1] = '\0';
  cr_assert_eq(parse(s), 0);
  cr_assert_eq(strlen(o.log_path.s), PG_OPT_STR_MAX - 1);
}

Test(options, help_lists_every_option_with_its_default) {
  char help[8192];
  size_t n = pg_options_help(NULL, help, sizeof help);
  cr_assert_eq(n, strlen(help));
  cr_assert_gt(pg_options_count(), 15);
  for (size_t i = 0; i < pg_options_count(); i++) {
    pg_option_info_t info = pg_options_info(i);
    char def[64], line[128];
    pg_options_default_text(i, def, sizeof def);
    snprintf(line, sizeof line, "\n  %s=%s (default)  ", info.name, def[0] ? def : "\"\"");
    cr_assert(strstr(help, line), "missing '%s' in:\n%s", line, help);
    cr_assert(strstr(help, info.description), "%s", info.name);
  }
  cr_assert(strstr(help, "\n  mode=audit (default)  "));
  cr_assert(strstr(help, "\n  exitcode=23 (default)  "));
}

Test(options, help_is_cut_visibly_in_a_small_buffer) {
  char help[200];
  size_t n = pg_options_help(NULL, help, sizeof help);
  cr_assert_lt(n, sizeof help);
  cr_assert(strstr(help, "[truncated]"), "%s", help);
}

Test(options, help_1_prints_at_startup_and_continues) {
  tp_capture_t c;
  tp_stderr_begin(&c);
  pg_policy_configure(NULL, "help=1:mode=enforce");
  char out[16384];
  tp_stderr_end(&c, out, sizeof out);
  cr_assert_eq(pg_policy_mode(), PG_MODE_ENFORCE);
  for (size_t i = 0; i < pg_options_count(); i++) {
    char key[80];
    snprintf(key, sizeof key, "  %s=", pg_options_info(i).name);
    cr_assert(strstr(out, key), "help=1 output lacks %s", key);
  }
}

Test(options, help_1_prints_the_values_in_force_beside_the_defaults) {
  tp_capture_t c;
  tp_stderr_begin(&c);
  pg_policy_configure("exitcode=7", "help=1:mode=enforce:log_path='/tmp/pg dir/x'");
  char out[16384];
  tp_stderr_end(&c, out, sizeof out);
  cr_assert(strstr(out, "\n  mode=enforce (default audit)  "), "%s", out);
  cr_assert(strstr(out, "\n  exitcode=7 (default 23)  "), "%s", out);
  cr_assert(strstr(out, "\n  log_path=/tmp/pg dir/x (default \"\")  "), "%s", out);
  cr_assert(strstr(out, "\n  help=1 (default 0)  "), "%s", out);
  cr_assert(strstr(out, "\n  max_reports=1000 (default)  "), "%s", out);
}

Test(options, environment_applies_without_a_program_default) {
  setenv("PINGUARD_OPTIONS", "mode=enforce:bogus=1:exitcode=3", 1);
  tp_capture_t c;
  tp_stderr_begin(&c);
  pg_policy_init();
  char out[4096];
  tp_stderr_end(&c, out, sizeof out);
  cr_assert_eq(pg_policy_mode(), PG_MODE_ENFORCE);
  cr_assert_eq(pg_policy_options()->exitcode, 3);
  cr_assert_eq(tp_count(out, "pinguard: WARNING: PINGUARD_OPTIONS: unknown option 'bogus'"), 1,
               "%s", out);
}

Test(options, names_of_enums) {
  cr_assert_str_eq(pg_mode_name(PG_MODE_OFF), "off");
  cr_assert_str_eq(pg_mode_name(PG_MODE_ENFORCE), "enforce");
  cr_assert_str_eq(pg_log_format_name(PG_FORMAT_JSON), "json");
}
