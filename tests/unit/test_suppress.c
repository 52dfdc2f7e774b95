/* test_suppress.c: suppression rules: the pattern language (wildcards, anchors), file syntax
 * (comments, blanks, bad lines), matching against function, file and module names, and the
 * per-rule counts kept and printed at exit. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pg_policy.h"
#include "pg_suppress.h"
#include "test_policy_helpers.h"

static pg_suppressions_t s;
static int nwarn;
static char lastwarn[600];

static void collect(void *ctx, const char *line) {
  (void)ctx;
  nwarn++;
  snprintf(lastwarn, sizeof lastwarn, "%s", line);
}

static int parse(const char *text) {
  pg_supp_free(&s);
  nwarn = 0;
  return pg_supp_parse(&s, text, strlen(text), "test.supp", collect, NULL);
}

Test(suppress_pattern, unanchored_matches_anywhere) {
  cr_assert(pg_supp_pattern_match("foo", "foo"));
  cr_assert(pg_supp_pattern_match("foo", "xfooy"));
  cr_assert_not(pg_supp_pattern_match("foo", "fo"));
  cr_assert_not(pg_supp_pattern_match("foo", ""));
}

Test(suppress_pattern, anchors) {
  cr_assert(pg_supp_pattern_match("^foo", "foobar"));
  cr_assert_not(pg_supp_pattern_match("^foo", "xfoo"));
  cr_assert(pg_supp_pattern_match("bar$", "foobar"));
  cr_assert_not(pg_supp_pattern_match("bar$", "barx"));
  cr_assert(pg_supp_pattern_match("^exact$", "exact"));
  cr_assert_not(pg_supp_pattern_match("^exact$", "exactly"));
  cr_assert_not(pg_supp_pattern_match("^exact$", "inexact"));
}

Test(suppress_pattern, wildcards) {
  cr_assert(pg_supp_pattern_match("*", "anything"));
  cr_assert(pg_supp_pattern_match("^a*c$", "abc"));
  cr_assert(pg_supp_pattern_match("^a*c$", "ac"));
  cr_assert(pg_supp_pattern_match("^a*c$", "abcbc"));
  cr_assert_not(pg_supp_pattern_match("^a*c$", "abd"));
  cr_assert(pg_supp_pattern_match("kv*/commit.c$", "/src/kvxfer/commit.c"));
  cr_assert(pg_supp_pattern_match("^lib*.so*", "libtorch_cuda.so.2"));
  cr_assert(pg_supp_pattern_match("^*a*b*$", "xxaxxbxx"));
  cr_assert_not(pg_supp_pattern_match("^*a*b*$", "xxbxxaxx"));
}

Test(suppress_file, comments_blanks_and_kinds) {
  cr_assert_eq(parse("# a comment\n"
                     "\n"
                     "   \t\n"
                     "  # indented comment\n"
                     "free-during-device-access:^engine_free$\n"
                     "  cpu-read-during-device-write : serialize_*  \r\n"
                     "*:libfoo.so\n"
                     "wait-during-capture:graph"), /* no newline at the end */
               0);
  cr_assert_eq(s.n, 4);
  cr_assert_eq(s.rules[0].kind, PG_KIND_FREE_DURING_DEVICE_ACCESS);
  cr_assert_str_eq(s.rules[0].pattern, "^engine_free$");
  cr_assert_eq(s.rules[1].kind, PG_KIND_CPU_READ_DURING_DEVICE_WRITE);
  cr_assert_str_eq(s.rules[1].pattern, "serialize_*");
  cr_assert_str_eq(s.rules[1].text, "cpu-read-during-device-write:serialize_*");
  cr_assert_eq(s.rules[2].kind, -1);
  cr_assert_str_eq(s.rules[3].pattern, "graph");
}

Test(suppress_file, bad_lines_warn_and_are_skipped) {
  cr_assert_eq(parse("no colon here\n"
                     "not-a-kind:foo\n"
                     "free-during-device-access:\n"
                     "free-during-device-access:good\n"),
               3);
  cr_assert_eq(nwarn, 3);
  cr_assert_eq(s.n, 1);
  cr_assert_str_eq(s.rules[0].pattern, "good");
  cr_assert(strstr(lastwarn, "pinguard: WARNING: suppressions test.supp:3: empty pattern"),
            "%s", lastwarn);
}

Test(suppress_file, load_from_disk_with_an_overlong_line) {
  char path[] = "/tmp/pg_test_supp_XXXXXX";
  int fd = mkstemp(path);
  FILE *f = fdopen(fd, "w");
  fprintf(f, "# rules\nfree-during-device-access:first\ncpu-write-during-device-access:");
  for (int i = 0; i < 10000; i++) fputc('x', f);
  fprintf(f, "\nrelease-during-device-access:after_the_long_one\n");
  fclose(f);
  pg_supp_free(&s);
  nwarn = 0;
  cr_assert_eq(pg_supp_load_file(&s, path, collect, NULL), 1);
  unlink(path);
  cr_assert(strstr(lastwarn, ":3: line longer than 4096 bytes"), "%s", lastwarn);
  cr_assert_eq(s.n, 2);
  cr_assert_str_eq(s.rules[0].pattern, "first");
  cr_assert_str_eq(s.rules[1].pattern, "after_the_long_one");
}

Test(suppress_file, missing_file_warns) {
  pg_supp_free(&s);
  nwarn = 0;
  cr_assert_eq(pg_supp_load_file(&s, "/nonexistent/pg.supp", collect, NULL), -1);
  cr_assert_eq(nwarn, 1);
  cr_assert(strstr(lastwarn, "cannot open"), "%s", lastwarn);
}

static pg_symstack_t frames(const char *module, const char *function, const char *file) {
  pg_symstack_t st;
  memset(&st, 0, sizeof st);
  st.present = true;
  st.depth = 1;
  strcpy(st.f[0].module, module);
  strcpy(st.f[0].function, function);
  strcpy(st.f[0].file, file);
  st.f[0].line = file[0] ? 10 : 0;
  return st;
}

Test(suppress_match, function_file_and_module) {
  parse("cpu-read-during-device-write:^serialize_chunk$\n"
        "free-during-device-access:^commit.c$\n"
        "*:^libtorch_cuda.so\n");
  pg_symstack_t a = frames("/opt/app/bin", "serialize_chunk", "/src/kvxfer/commit.c");
  pg_symstack_t b = frames("/usr/lib/libtorch_cuda.so.2", "", "");
  pg_symstack_t none = frames("/opt/app/bin", "other", "/src/other.c");
  const pg_symstack_t *sa[] = {&a}, *sb[] = {&none, &b}, *sn[] = {&none, NULL};
  cr_assert_eq(pg_supp_match(&s, PG_KIND_CPU_READ_DURING_DEVICE_WRITE, sa, 1), 0);
  cr_assert_eq(pg_supp_match(&s, PG_KIND_FREE_DURING_DEVICE_ACCESS, sa, 1), 1,
               "a file's base name matches an anchored pattern");
  cr_assert_eq(pg_supp_match(&s, PG_KIND_DEVICE_ACCESS_CONFLICT, sa, 1), -1, "kind must match");
  cr_assert_eq(pg_supp_match(&s, PG_KIND_DEVICE_ACCESS_CONFLICT, sb, 2), 2,
               "'*' kind, module base name, any stack of the report");
  cr_assert_eq(pg_supp_match(&s, PG_KIND_CPU_READ_DURING_DEVICE_WRITE, sn, 2), -1);
}

/* A rule also matches a stack's Python frames: their function, file and file's base name. */
Test(suppress_match, python_frames) {
  parse("cpu-read-during-device-write:^commit_store$\n"
        "free-during-device-access:^kv_engine.py$\n");
  pg_symstack_t a = frames("/usr/lib/libpython3.11.so", "_PyEval_EvalFrameDefault", "");
  a.py_depth = 1;
  strcpy(a.py[0].file, "/app/kv_engine.py");
  strcpy(a.py[0].function, "commit_store");
  a.py[0].line = 104;
  pg_symstack_t none = a;
  none.py_depth = 0;
  const pg_symstack_t *sa[] = {&a}, *sn[] = {&none};
  cr_assert_eq(pg_supp_match(&s, PG_KIND_CPU_READ_DURING_DEVICE_WRITE, sa, 1), 0, "function");
  cr_assert_eq(pg_supp_match(&s, PG_KIND_FREE_DURING_DEVICE_ACCESS, sa, 1), 1, "file base name");
  cr_assert_eq(pg_supp_match(&s, PG_KIND_CPU_READ_DURING_DEVICE_WRITE, sn, 1), -1,
               "no Python frame, no match");
}

/* "file:line": a frame, native or Python, at that line of a file whose path ends with the name
 * (at a '/', so "engine.py" is not "kv_engine.py"). */
Test(suppress_match, file_and_line) {
  cr_assert_eq(parse("cpu-read-during-device-write:kv_engine.py:104\n"
                     "free-during-device-access:kvxfer/commit.c:10\n"
                     "free-during-device-access:^commit.c:11\n"
                     "*:engine.py:104\n"
                     "device-access-conflict:/app/*_engine.py:104\n"),
               0, "%s", lastwarn);
  cr_assert_eq(s.rules[0].line, 104);
  cr_assert_str_eq(s.rules[0].pattern, "kv_engine.py");
  cr_assert_str_eq(s.rules[0].text, "cpu-read-during-device-write:kv_engine.py:104");
  pg_symstack_t py = frames("/usr/lib/libpython3.11.so", "_PyEval_EvalFrameDefault", "");
  py.py_depth = 2;
  strcpy(py.py[0].file, "/app/lib/pool.py");
  py.py[0].line = 104;
  strcpy(py.py[1].file, "/app/kv_engine.py");
  py.py[1].line = 104;
  pg_symstack_t other_line = py;
  other_line.py[1].line = 105;
  pg_symstack_t native = frames("/opt/app/bin", "commit", "/src/kvxfer/commit.c"); /* line 10 */
  const pg_symstack_t *sp[] = {&py}, *so[] = {&other_line}, *sn[] = {&native};
  cr_assert_eq(pg_supp_match(&s, PG_KIND_CPU_READ_DURING_DEVICE_WRITE, sp, 1), 0, "Python frame");
  cr_assert_eq(pg_supp_match(&s, PG_KIND_CPU_READ_DURING_DEVICE_WRITE, so, 1), -1,
               "another line of the file");
  cr_assert_eq(pg_supp_match(&s, PG_KIND_FREE_DURING_DEVICE_ACCESS, sn, 1), 1, "native frame");
  native.f[0].line = 11;
  cr_assert_eq(pg_supp_match(&s, PG_KIND_FREE_DURING_DEVICE_ACCESS, sn, 1), -1,
               "'^commit.c' is not a file name ending: no match at line 11");
  cr_assert_eq(pg_supp_match(&s, PG_KIND_COMMIT_DURING_DEVICE_WRITE, sp, 1), -1,
               "engine.py is not kv_engine.py");
  cr_assert_eq(pg_supp_match(&s, PG_KIND_DEVICE_ACCESS_CONFLICT, sp, 1), 4, "a wildcard name");
  /* A name pattern's meaning is unchanged: a function named like a file:line is still a name. */
  cr_assert_eq(parse("cpu-read-during-device-write:^commit_store$\n"), 0);
  cr_assert_eq(s.rules[0].line, 0);
}

/* "kind@stack:pattern" matches only that stack of the report: the access (stacks[0]), the
 * allocation (stacks[1]) or a launch (stacks[2...]); "@any" and no '@' match all of them. */
Test(suppress_match, one_stack) {
  cr_assert_eq(parse("cpu-read-during-device-write@access:^pool_alloc$\n"
                     "cpu-read-during-device-write@launch:^pool_alloc$\n"
                     "free-during-device-access@alloc:^pool_alloc$\n"
                     "*@any:^pool_alloc$\n"),
               0, "%s", lastwarn);
  cr_assert_str_eq(s.rules[0].text, "cpu-read-during-device-write@access:^pool_alloc$");
  cr_assert_str_eq(s.rules[3].text, "*@any:^pool_alloc$");
  pg_symstack_t alloc = frames("/opt/app/bin", "pool_alloc", "/src/pool.c");
  pg_symstack_t other = frames("/opt/app/bin", "serialize", "/src/ser.c");
  const pg_symstack_t *as_alloc[] = {&other, &alloc, &other};
  const pg_symstack_t *as_launch[] = {&other, &other, &other, &alloc};
  const pg_symstack_t *as_access[] = {&alloc, &other};
  cr_assert_eq(pg_supp_match(&s, PG_KIND_CPU_READ_DURING_DEVICE_WRITE, as_alloc, 3), 3,
               "only the @any rule looks at the allocation stack for this kind");
  cr_assert_eq(pg_supp_match(&s, PG_KIND_CPU_READ_DURING_DEVICE_WRITE, as_launch, 4), 1);
  cr_assert_eq(pg_supp_match(&s, PG_KIND_CPU_READ_DURING_DEVICE_WRITE, as_access, 2), 0);
  cr_assert_eq(pg_supp_match(&s, PG_KIND_FREE_DURING_DEVICE_ACCESS, as_alloc, 3), 2);
  cr_assert_eq(pg_supp_match(&s, PG_KIND_FREE_DURING_DEVICE_ACCESS, as_launch, 4), 3);
  cr_assert_eq(parse("cpu-read-during-device-write@stack:x\n"), 1);
  cr_assert(strstr(lastwarn, "unknown stack"), "%s", lastwarn);
  cr_assert_eq(s.n, 0);
}

/* Through the report path: a rule naming the allocation frame no longer mutes every report on
 * the buffer when it says @alloc for one kind only, and its hits are printed as written. */
Test(suppress_policy, per_stack_rule_counts_and_prints) {
  char dir[128], path[200], opts[512];
  tp_tmpdir(dir);
  snprintf(path, sizeof path, "%s/rules", dir);
  FILE *f = fopen(path, "w");
  fprintf(f, "cpu-read-during-device-write@access:tp_alloc_site\n"
             "free-during-device-access@alloc:tp_alloc_site\n");
  fclose(f);
  snprintf(opts, sizeof opts, "suppressions=%s:log_path=%s/log", path, dir);
  pg_policy_configure(NULL, opts);
  tp_report_t t;
  tp_report_init(&t, PG_KIND_CPU_READ_DURING_DEVICE_WRITE);
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED,
               "tp_alloc_site is in the allocation stack, not the access stack");
  t.r.kind = PG_KIND_FREE_DURING_DEVICE_ACCESS;
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_SUPPRESSED);
  pg_policy_finish();
  char log[220], out[16384];
  snprintf(log, sizeof log, "%s/log.%d", dir, (int)getpid());
  cr_assert_gt(tp_read_file(log, out, sizeof out), 0);
  cr_assert(strstr(out, "pinguard: suppression 'cpu-read-during-device-write@access:tp_alloc_site'"
                        " matched 0 times\n"), "%s", out);
  cr_assert(strstr(out, "pinguard: suppression 'free-during-device-access@alloc:tp_alloc_site' "
                        "matched 1 time\n"), "%s", out);
}

Test(suppress_policy, counts_per_rule_and_prints_them_at_exit) {
  char dir[128], path[200], opts[512];
  tp_tmpdir(dir);
  snprintf(path, sizeof path, "%s/rules", dir);
  FILE *f = fopen(path, "w");
  fprintf(f, "# the first rule matches the report below, by function name\n"
             "cpu-read-during-device-write:tp_copy_site\n"
             "free-during-device-access:^never_matches$\n");
  fclose(f);
  snprintf(opts, sizeof opts, "suppressions=%s:log_path=%s/log", path, dir);
  pg_policy_configure(NULL, opts);
  cr_assert_eq(pg_policy_suppression_count(), 2);

  tp_report_t t;
  tp_report_init(&t, PG_KIND_CPU_READ_DURING_DEVICE_WRITE);
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_SUPPRESSED);
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_SUPPRESSED, "a repeat stays suppressed");
  t.r.kind = PG_KIND_FREE_DURING_DEVICE_ACCESS;
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED);
  cr_assert_eq(pg_policy_suppression_hits(0), 2);
  cr_assert_eq(pg_policy_suppression_hits(1), 0);
  pg_policy_counts_t c = pg_policy_counts();
  cr_assert_eq(c.suppressed, 2);
  cr_assert_eq(c.reports, 1);

  cr_assert_eq(pg_policy_finish(), 23);
  char log[220], out[16384];
  snprintf(log, sizeof log, "%s/log.%d", dir, (int)getpid());
  cr_assert_gt(tp_read_file(log, out, sizeof out), 0);
  cr_assert(strstr(out, "pinguard: suppression 'cpu-read-during-device-write:tp_copy_site' "
                        "matched 2 times\n"),
            "%s", out);
  cr_assert(strstr(out, "pinguard: suppression 'free-during-device-access:^never_matches$' "
                        "matched 0 times\n"),
            "%s", out);
  cr_assert(strstr(out, "pinguard: 1 report (2 suppressed), 0 waits totalling 0.000 ms\n"), "%s",
            out);
  cr_assert_null(strstr(out, "cpu-read-during-device-write on"), "suppressed: not printed");
}

Test(suppress_policy, only_suppressed_reports_keep_the_exit_status) {
  char dir[128], path[200], opts[512];
  tp_tmpdir(dir);
  snprintf(path, sizeof path, "%s/rules", dir);
  FILE *f = fopen(path, "w");
  fprintf(f, "*:tp_launch_site\n");
  fclose(f);
  snprintf(opts, sizeof opts, "suppressions=%s:log_path=%s/log", path, dir);
  pg_policy_configure(NULL, opts);
  tp_report_t t;
  tp_report_init(&t, PG_KIND_DEVICE_ACCESS_CONFLICT);
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_SUPPRESSED, "launch stack matched");
  cr_assert_eq(pg_policy_finish(), -1);
}

/* Issue 9: rules past the 256th were dropped with a warning (an undocumented cap). There is no
 * cap now: a file of 1000 rules keeps all of them, and the last one matches and is counted. */
Test(suppress_policy, more_than_256_rules) {
  char dir[128], path[200], opts[512];
  tp_tmpdir(dir);
  snprintf(path, sizeof path, "%s/rules", dir);
  FILE *f = fopen(path, "w");
  for (int i = 0; i < 999; i++) fprintf(f, "cpu-read-during-device-write:^never_%d$\n", i);
  fprintf(f, "cpu-read-during-device-write:tp_copy_site\n");
  fclose(f);
  snprintf(opts, sizeof opts, "suppressions=%s:log_path=%s/log", path, dir);
  pg_policy_configure(NULL, opts);
  cr_assert_eq(pg_policy_suppression_count(), 1000);
  tp_report_t t;
  tp_report_init(&t, PG_KIND_CPU_READ_DURING_DEVICE_WRITE);
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_SUPPRESSED, "the 1000th rule matched");
  cr_assert_eq(pg_policy_suppression_hits(999), 1);
  cr_assert_eq(pg_policy_finish(), -1);
  char log[220];
  static char out[256 * 1024];
  snprintf(log, sizeof log, "%s/log.%d", dir, (int)getpid());
  cr_assert_gt(tp_read_file(log, out, sizeof out), 0);
  cr_assert_null(strstr(out, "WARNING"), "%s", out);
  cr_assert(strstr(out, "pinguard: suppression 'cpu-read-during-device-write:tp_copy_site' "
                        "matched 1 time\n"), "the last rule's count is printed");
  cr_assert_eq(tp_count(out, "pinguard: suppression '"), 1000);
}

Test(suppress_file, parse_keeps_every_rule) {
  static char text[64 * 1024];
  size_t n = 0;
  for (int i = 0; i < 2000; i++)
    n += (size_t)snprintf(text + n, sizeof text - n, "*:^rule_%d$\n", i);
  cr_assert_eq(parse(text), 0, "%s", lastwarn);
  cr_assert_eq(s.n, 2000);
  cr_assert_str_eq(s.rules[1999].pattern, "^rule_1999$");
  pg_symstack_t a = frames("/opt/app/bin", "rule_1999", "");
  const pg_symstack_t *sa[] = {&a};
  cr_assert_eq(pg_supp_match(&s, PG_KIND_FREE_DURING_DEVICE_ACCESS, sa, 1), 1999);
  pg_supp_free(&s);
  cr_assert_eq(s.n, 0);
}

/* ---- exact pcs (issue 9, defect 5) -------------------------------------------------------------
 * A guard fault's pc is the faulting instruction, not a return address. Symbolized as a return
 * address (pc - 1), a fault on a function's first instruction named the function before it, and
 * a suppression written for the right function missed. */
#include "../e2e/fault_pc.h"

static pg_stack_t one_frame(void *pc, unsigned flags) {
  pg_stack_t st;
  memset(&st, 0, sizeof st);
  st.depth = 1;
  st.flags = (uint8_t)flags;
  st.pc[0] = pc;
  return st;
}

Test(suppress_exact_pc, a_fault_on_a_first_byte_names_that_function) {
  pg_stack_t st = one_frame((void *)fault_first_byte_load, PG_STACK_EXACT_PC0);
  static pg_symstack_t sym;
  for (int a2l = 0; a2l < 2; a2l++) {
    pg_symbolize_stack(&st, 1, a2l, &sym);
    cr_assert_eq(sym.depth, 1);
    cr_assert_str_eq(sym.f[0].function, "fault_first_byte_load", "addr2line=%d", a2l);
    cr_assert_eq(sym.f[0].pc, (void *)fault_first_byte_load, "the pc itself is printed");
  }
  pg_symbolize_shutdown();
}

Test(suppress_exact_pc, a_return_address_is_looked_up_inside_its_call) {
  /* The same address as a return address: the call that returns there is the neighbour's last
   * instruction, so the neighbour is the calling function. */
  pg_stack_t st = one_frame((void *)fault_first_byte_load, 0);
  static pg_symstack_t sym;
  pg_symbolize_stack(&st, 1, false, &sym);
  cr_assert_str_eq(sym.f[0].function, "fault_neighbour_before");
  /* Only frame 0 is exact: deeper frames of a fault stack are return addresses. */
  st = one_frame((void *)fault_first_byte_load, PG_STACK_EXACT_PC0);
  st.depth = 2;
  st.pc[1] = (void *)fault_first_byte_load;
  pg_symbolize_stack(&st, 2, false, &sym);
  cr_assert_str_eq(sym.f[0].function, "fault_first_byte_load");
  cr_assert_str_eq(sym.f[1].function, "fault_neighbour_before");
}

Test(suppress_exact_pc, suppression_by_function_matches_the_faulting_frame) {
  char dir[128], path[200], opts[512];
  tp_tmpdir(dir);
  snprintf(path, sizeof path, "%s/rules", dir);
  FILE *f = fopen(path, "w");
  fprintf(f, "cpu-read-during-device-write:^fault_neighbour_before$\n"
             "cpu-read-during-device-write:^fault_first_byte_load$\n");
  fclose(f);
  snprintf(opts, sizeof opts, "suppressions=%s:log_path=%s/log", path, dir);
  pg_policy_configure(NULL, opts);
  tp_report_t t;
  tp_report_init(&t, PG_KIND_CPU_READ_DURING_DEVICE_WRITE);
  t.access = one_frame((void *)fault_first_byte_load, PG_STACK_EXACT_PC0);
  t.r.flags |= PG_REPORT_FROM_SIGNAL; /* as a guard fault: dladdr and the symbol table only */
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_SUPPRESSED);
  cr_assert_eq(pg_policy_suppression_hits(0), 0, "the neighbour's rule must not match");
  cr_assert_eq(pg_policy_suppression_hits(1), 1);
}
