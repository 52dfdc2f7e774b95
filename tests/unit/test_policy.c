/* test_policy.c: the decisions behind pg_policy_report: de-duplication by call sites with
 * counts, max_reports, mode=off, halt_on_error / abort_on_error, the exit summary, statistics
 * and the exit-status rule; plus concurrent reporting (run it under TSAN). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pg_policy.h"
#include "test_policy_helpers.h"

static char dir[128], logfile[200];
static char out[65536];

static void configure(const char *extra) {
  char opts[512];
  tp_tmpdir(dir);
  snprintf(opts, sizeof opts, "log_path=%s/log:%s", dir, extra ? extra : "");
  snprintf(logfile, sizeof logfile, "%s/log.%d", dir, (int)getpid());
  pg_policy_configure(NULL, opts);
}

static const char *read_log(void) {
  if (tp_read_file(logfile, out, sizeof out) < 0) out[0] = '\0';
  return out;
}

Test(dedup, same_sites_print_once_and_count) {
  configure(NULL);
  tp_report_t t;
  tp_report_init(&t, PG_KIND_FREE_DURING_DEVICE_ACCESS);
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED);
  for (int i = 0; i < 4; i++) cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_DUPLICATE);
  pg_policy_counts_t c = pg_policy_counts();
  cr_assert_eq(c.reports, 5);
  cr_assert_eq(c.unique, 1);
  cr_assert_eq(c.printed, 1);
  cr_assert_eq(pg_policy_finish(), 23);
  read_log();
  cr_assert_eq(tp_count(out, "pinguard: ERROR:"), 1, "%s", out);
  cr_assert(strstr(out, "pinguard: report #1 (free-during-device-access) happened 5 times\n"),
            "%s", out);
  cr_assert(strstr(out, "pinguard: 5 reports (0 suppressed), 0 waits totalling 0.000 ms\n"), "%s",
            out);
}

Test(dedup, identity_is_kind_access_site_and_launch_site) {
  configure(NULL);
  tp_report_t t;
  tp_report_init(&t, PG_KIND_FREE_DURING_DEVICE_ACCESS);
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED);
  t.r.kind = PG_KIND_UNREGISTER_DURING_DEVICE_ACCESS;
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED, "another kind");
  t.access.pc[0] = (void *)((uintptr_t)tp_other_site + 2);
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED, "another violating site");
  /* The site is the first frame outside the runtime (the test's own code here): who called it
   * is not part of the identity. */
  t.access.pc[1] = (void *)((uintptr_t)tp_alloc_site + 2);
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_DUPLICATE, "another caller of that site");
  t.launch.pc[0] = (void *)((uintptr_t)tp_other_site + 3);
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED, "another launching site");
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_DUPLICATE);
  /* Not part of the identity: addresses, threads, deeper frames, the action. */
  t.r.addr += 64;
  t.access.tid = 9;
  t.access.pc[2] = (void *)tp_copy_site;
  t.access.depth = 3;
  t.r.action = PG_ACTION_WAITED;
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_DUPLICATE);
  cr_assert_eq(pg_policy_counts().unique, 4);
}

Test(dedup, off_prints_every_occurrence) {
  configure("dedup=0");
  tp_report_t t;
  tp_report_init(&t, PG_KIND_COMMIT_DURING_DEVICE_WRITE);
  for (int i = 0; i < 3; i++) cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED);
  cr_assert_eq(tp_count(read_log(), "pinguard: ERROR: commit-during-device-write"), 3);
}

Test(dedup, table_full_still_reports) {
  configure("max_reports=0");
  tp_report_t t;
  tp_report_init(&t, PG_KIND_FREE_DURING_DEVICE_ACCESS);
  t.r.region.stack = NULL;
  t.r.n_gpu = 0;
  t.access.depth = 1;
  /* More distinct sites than the table folds: every one is still printed. */
  for (uintptr_t i = 0; i < 5000; i++) {
    t.access.pc[0] = (void *)(0x1000 + i);
    cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED);
  }
  cr_assert_eq(pg_policy_counts().printed, 5000);
}

Test(limits, max_reports_bounds_what_is_printed) {
  configure("max_reports=2");
  tp_report_t t;
  tp_report_init(&t, PG_KIND_RELEASE_DURING_DEVICE_ACCESS);
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED);
  t.r.kind = PG_KIND_FREE_DURING_DEVICE_ACCESS;
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED);
  t.r.kind = PG_KIND_COMMIT_DURING_DEVICE_WRITE;
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_LIMITED);
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_LIMITED, "its repeats too");
  t.r.kind = PG_KIND_UNREGISTER_DURING_DEVICE_ACCESS;
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_LIMITED);
  pg_policy_counts_t c = pg_policy_counts();
  cr_assert_eq(c.printed, 2);
  cr_assert_eq(c.limited, 3);
  cr_assert_eq(c.reports, 5);
  cr_assert_eq(pg_policy_finish(), 23, "unprinted reports still count for the exit status");
  read_log();
  cr_assert_eq(tp_count(out, "pinguard: ERROR:"), 2, "%s", out);
  cr_assert_eq(tp_count(out, "pinguard: max_reports=2 reached"), 1, "%s", out);
  cr_assert(strstr(out, "pinguard: 3 reports not printed (max_reports=2)\n"), "%s", out);
}

Test(modes, off_ignores_reports_and_stays_silent) {
  configure("mode=off");
  tp_report_t t;
  tp_report_init(&t, PG_KIND_FREE_DURING_DEVICE_ACCESS);
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_IGNORED);
  pg_policy_note_wait(1000);
  cr_assert_eq(pg_policy_finish(), -1);
  cr_assert_eq(tp_read_file(logfile, out, sizeof out), -1, "no log file in mode=off");
}

Test(modes, enforcing) {
  configure("mode=enforce");
  cr_assert(pg_policy_enforcing());
  configure("mode=audit");
  cr_assert_not(pg_policy_enforcing());
}

Test(exit_status, clean_process_keeps_its_status_and_prints_nothing) {
  configure(NULL);
  cr_assert_eq(pg_policy_finish(), -1);
  cr_assert_eq(tp_read_file(logfile, out, sizeof out), -1);
}

Test(exit_status, exitcode_zero_keeps_the_program_status) {
  configure("exitcode=0");
  tp_report_t t;
  tp_report_init(&t, PG_KIND_FREE_DURING_DEVICE_ACCESS);
  pg_policy_report(&t.r);
  cr_assert_eq(pg_policy_finish(), -1);
}

Test(exit_status, finish_prints_once_and_repeats_its_answer) {
  configure("exitcode=42");
  tp_report_t t;
  tp_report_init(&t, PG_KIND_FREE_DURING_DEVICE_ACCESS);
  pg_policy_report(&t.r);
  cr_assert_eq(pg_policy_finish(), 42);
  cr_assert_eq(pg_policy_finish(), 42);
  cr_assert_eq(tp_count(read_log(), "pinguard: 1 report (0 suppressed)"), 1, "%s", out);
}

/* Enforce keeps the program's status for what a wait prevented, and only for that. */
Test(exit_status, enforce_keeps_the_status_of_prevented_violations) {
  configure("mode=enforce");
  tp_report_t t;
  tp_report_init(&t, PG_KIND_FREE_DURING_DEVICE_ACCESS);
  t.r.action = PG_ACTION_WAITED;
  t.r.waited_ns = 1000;
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED);
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_DUPLICATE);
  cr_assert_eq(pg_policy_counts().reports, 2);
  cr_assert_eq(pg_policy_counts().unprevented, 0);
  cr_assert_eq(pg_policy_finish(), -1);
  cr_assert_eq(tp_count(read_log(), "pinguard: ERROR:"), 1, "the wait is still reported: %s", out);
}

Test(exit_status, enforce_fails_on_what_it_could_not_prevent) {
  static const pg_action_t not_waited[] = {PG_ACTION_NOT_WAITED_CAPTURE,
                                           PG_ACTION_NOT_WAITED_HOSTFN, PG_ACTION_NONE};
  for (size_t i = 0; i < sizeof not_waited / sizeof *not_waited; i++) {
    configure("mode=enforce");
    tp_report_t t;
    tp_report_init(&t, PG_KIND_WAIT_DURING_CAPTURE);
    t.r.action = PG_ACTION_WAITED;
    pg_policy_report(&t.r);
    t.r.action = not_waited[i]; /* a repeat of the same identity, not prevented this time */
    cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_DUPLICATE);
    cr_assert_eq(pg_policy_counts().unprevented, 1);
    cr_assert_eq(pg_policy_finish(), 23, "action %d", (int)not_waited[i]);
  }
}

Test(exit_status, enforce_fails_option_and_audit) {
  configure("mode=enforce:enforce_fails=1:exitcode=9");
  tp_report_t t;
  tp_report_init(&t, PG_KIND_FREE_DURING_DEVICE_ACCESS);
  t.r.action = PG_ACTION_WAITED;
  pg_policy_report(&t.r);
  cr_assert_eq(pg_policy_finish(), 9, "enforce_fails=1 fails on a prevented violation");
  configure("mode=audit:enforce_fails=0");
  tp_report_init(&t, PG_KIND_FREE_DURING_DEVICE_ACCESS);
  pg_policy_report(&t.r);
  cr_assert_eq(pg_policy_finish(), 23, "audit fails whatever enforce_fails says");
  configure("mode=enforce:enforce_fails=1");
  cr_assert_eq(pg_policy_finish(), -1, "no report, no failure");
}

Test(exit_status, summary_counts_waits_and_stats) {
  configure("print_stats=1");
  pg_stat_add(PG_STAT_COPIES_TRACKED, 3);
  pg_stat_inc(PG_STAT_KERNELS_TRACKED);
  pg_policy_note_wait(1500000);
  pg_policy_note_wait(1000000);
  cr_assert_eq(pg_stat_get(PG_STAT_WAITS), 2);
  cr_assert_eq(pg_stat_get(PG_STAT_WAIT_NS), 2500000);
  cr_assert_eq(pg_policy_finish(), -1, "waits alone are not errors");
  read_log();
  cr_assert(strstr(out, "pinguard: 0 reports (0 suppressed), 2 waits totalling 2.500 ms\n"), "%s",
            out);
  cr_assert(strstr(out, "pinguard: statistics:\n"), "%s", out);
  cr_assert(strstr(out, "  copies_tracked: 3 ("), "%s", out);
  cr_assert(strstr(out, "  kernels_tracked: 1 ("), "%s", out);
}

Test(exit_status, print_summary_0_silences_the_summary) {
  configure("print_summary=0");
  pg_policy_note_wait(10);
  pg_policy_finish();
  cr_assert_null(strstr(read_log(), "reports ("), "%s", out);
}

Test(exit_status, json_exit_lines) {
  configure("log_format=json:print_stats=1");
  tp_report_t t;
  tp_report_init(&t, PG_KIND_FREE_DURING_DEVICE_ACCESS);
  pg_policy_report(&t.r);
  pg_policy_report(&t.r);
  pg_policy_finish();
  read_log();
  cr_assert_eq(tp_count(out, "{\"type\":\"report\","), 1, "%s", out);
  cr_assert(strstr(out, "\"type\":\"repeat\","), "%s", out);
  cr_assert(strstr(out, ",\"count\":2}\n"), "%s", out);
  cr_assert(strstr(out, "{\"type\":\"stats\","), "%s", out);
  cr_assert(strstr(out, "{\"type\":\"summary\","), "%s", out);
  cr_assert(strstr(out, ",\"reports\":2,\"suppressed\":0,"), "%s", out);
  for (const char *p = out; *p; p = strchr(p, '\n') + 1)
    cr_assert_eq(*p, '{', "every line is a JSON object: %s", p);
}

/* Issue 9: log_path=/dir/ wrote a hidden file named ".<pid>" in it. A directory, named with a
 * trailing slash or existing already, gets pinguard.<pid> inside it. */
static void check_log_in_dir(const char *log_path_suffix) {
  char opts[512], want[300];
  tp_tmpdir(dir);
  snprintf(opts, sizeof opts, "log_path=%s%s", dir, log_path_suffix);
  pg_policy_configure(NULL, opts);
  tp_report_t t;
  tp_report_init(&t, PG_KIND_FREE_DURING_DEVICE_ACCESS);
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED);
  snprintf(want, sizeof want, "%s/pinguard.%d", dir, (int)getpid());
  cr_assert_gt(tp_read_file(want, out, sizeof out), 0, "no %s (log_path=%s%s)", want, dir,
               log_path_suffix);
  cr_assert(strstr(out, "pinguard: ERROR: free-during-device-access"), "%s", out);
  snprintf(want, sizeof want, "%s/.%d", dir, (int)getpid());
  cr_assert_neq(access(want, F_OK), 0, "a hidden %s was written", want);
}

Test(log_path, trailing_slash_names_a_directory) { check_log_in_dir("/"); }

Test(log_path, existing_directory_without_slash) { check_log_in_dir(""); }

Test(log_path, a_prefix_still_gets_dot_pid) {
  configure(NULL);
  tp_report_t t;
  tp_report_init(&t, PG_KIND_FREE_DURING_DEVICE_ACCESS);
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED);
  cr_assert_gt(tp_read_file(logfile, out, sizeof out), 0, "no %s", logfile);
}

Test(halt, halt_on_error_exits_with_exitcode_after_the_first_report, .exit_code = 5) {
  configure("halt_on_error=1:exitcode=5");
  tp_report_t t;
  tp_report_init(&t, PG_KIND_FREE_DURING_DEVICE_ACCESS);
  pg_policy_report(&t.r);
  cr_assert_fail("halt_on_error did not stop the process");
}

/* Issue 9: exitcode=0 keeps the program's status at a normal exit, but a halted program has no
 * status of its own; halting must not look like success. */
Test(halt, halt_with_exitcode_zero_exits_non_zero, .exit_code = 1) {
  configure("halt_on_error=1:exitcode=0");
  tp_report_t t;
  tp_report_init(&t, PG_KIND_FREE_DURING_DEVICE_ACCESS);
  pg_policy_report(&t.r);
  cr_assert_fail("halt_on_error did not stop the process");
}

Test(halt, abort_on_error_aborts, .signal = SIGABRT) {
  configure("abort_on_error=1");
  tp_report_t t;
  tp_report_init(&t, PG_KIND_FREE_DURING_DEVICE_ACCESS);
  pg_policy_report(&t.r);
  cr_assert_fail("abort_on_error did not abort");
}

Test(halt, suppressed_reports_do_not_halt) {
  char path[200];
  configure(NULL);
  snprintf(path, sizeof path, "%s/rules", dir);
  FILE *f = fopen(path, "w");
  fprintf(f, "free-during-device-access:tp_copy_site\n");
  fclose(f);
  char opts[512];
  snprintf(opts, sizeof opts, "halt_on_error=1:suppressions=%s:log_path=%s/log", path, dir);
  pg_policy_configure(NULL, opts);
  tp_report_t t;
  tp_report_init(&t, PG_KIND_FREE_DURING_DEVICE_ACCESS);
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_SUPPRESSED);
}

Test(halt, halt_prints_the_summary_first) {
  configure("halt_on_error=1");
  pid_t pid = fork();
  if (pid == 0) {
    tp_report_t t;
    tp_report_init(&t, PG_KIND_FREE_DURING_DEVICE_ACCESS);
    pg_policy_report(&t.r);
    _exit(0); /* not reached */
  }
  int status;
  waitpid(pid, &status, 0);
  cr_assert(WIFEXITED(status));
  cr_assert_eq(WEXITSTATUS(status), 23);
  char childlog[220];
  snprintf(childlog, sizeof childlog, "%s/log.%d", dir, (int)pid);
  cr_assert_gt(tp_read_file(childlog, out, sizeof out), 0);
  cr_assert(strstr(out, "pinguard: 1 report (0 suppressed)"), "%s", out);
}

/* ---- concurrency ------------------------------------------------------------------------------ */
#define THREADS 4
#define PER_THREAD 500

static void *reporter(void *arg) {
  uintptr_t id = (uintptr_t)arg;
  tp_report_t t;
  tp_report_init(&t, PG_KIND_CPU_WRITE_DURING_DEVICE_ACCESS);
  t.access.tid = (uint32_t)id;
  for (int i = 0; i < PER_THREAD; i++) {
    /* Two sites shared by all threads, so the same entries are hit concurrently. */
    t.access.pc[0] = (void *)((uintptr_t)tp_copy_site + 1 + (uintptr_t)(i & 1));
    pg_policy_report(&t.r);
    pg_policy_note_wait(1);
    pg_stat_inc(PG_STAT_COPIES_TRACKED);
  }
  return NULL;
}

Test(concurrency, reports_from_many_threads_are_counted_exactly) {
  configure(NULL);
  pthread_t th[THREADS];
  for (uintptr_t i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, reporter, (void *)i);
  for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
  pg_policy_counts_t c = pg_policy_counts();
  cr_assert_eq(c.reports, THREADS * PER_THREAD);
  cr_assert_eq(c.unique, 2);
  cr_assert_eq(c.printed, 2);
  cr_assert_eq(pg_stat_get(PG_STAT_WAITS), THREADS * PER_THREAD);
  cr_assert_eq(pg_stat_get(PG_STAT_COPIES_TRACKED), THREADS * PER_THREAD);
  cr_assert_eq(tp_count(read_log(), "pinguard: ERROR:"), 2);
}

Test(fork, child_starts_with_fresh_counts) {
  configure(NULL);
  tp_report_t t;
  tp_report_init(&t, PG_KIND_FREE_DURING_DEVICE_ACCESS);
  pg_policy_report(&t.r);
  pg_stat_inc(PG_STAT_COPIES_TRACKED);
  pg_policy_atfork_prepare();
  pid_t pid = fork();
  if (pid == 0) {
    pg_policy_atfork_child();
    pg_policy_counts_t c = pg_policy_counts();
    int ok = c.reports == 0 && c.printed == 0 && pg_stat_get(PG_STAT_COPIES_TRACKED) == 0 &&
             pg_policy_finish() == -1;
    _exit(ok ? 0 : 1);
  }
  pg_policy_atfork_parent();
  int status;
  waitpid(pid, &status, 0);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  cr_assert_eq(pg_policy_counts().reports, 1, "the parent keeps its own");
}

/* ---- production counters (stats_path) ----------------------------------------------------- */
#include "pg_statsfile.h"

static size_t three(void) { return 3; }

Test(stats_file, names_carry_the_pid_before_a_prom_suffix) {
  char name[256];
  configure("stats_path=/var/lib/pg/counters");
  pg_statsfile_name(name, sizeof name, 12);
  cr_assert_str_eq(name, "/var/lib/pg/counters.12");
  configure("stats_path=/var/lib/pg/pinguard.prom");
  pg_statsfile_name(name, sizeof name, 12);
  cr_assert_str_eq(name, "/var/lib/pg/pinguard.12.prom", "the collector reads *.prom only");
  char opt[256], want[256];
  tp_tmpdir(dir);
  snprintf(opt, sizeof opt, "stats_path=%s", dir);
  pg_policy_configure(NULL, opt);
  pg_statsfile_name(name, sizeof name, 12);
  snprintf(want, sizeof want, "%s/pinguard.12.prom", dir);
  cr_assert_str_eq(name, want, "an existing directory gets pinguard.<pid>.prom");
}

Test(stats_file, exit_writes_every_counter_without_a_thread) {
  char opt[400], path[300];
  tp_tmpdir(dir);
  snprintf(opt, sizeof opt, "log_path=%s/log:stats_path=%s/s.prom:stats_interval_s=0", dir, dir);
  pg_policy_configure(NULL, opt);
  pg_policy_stats_start(three, NULL);
  cr_assert_not(pg_statsfile_running(), "stats_interval_s=0: no writer thread");
  pg_stat_add(PG_STAT_COPIES_TRACKED, 7);
  pg_stat_add(PG_STAT_KERNELS_TRACKED, 2);
  pg_policy_note_wait(1500000000ull);
  pg_stat_inc(PG_STAT_GUARD_FAULTS);
  tp_report_t t;
  tp_report_init(&t, PG_KIND_FREE_DURING_DEVICE_ACCESS);
  pg_policy_report(&t.r);
  pg_policy_report(&t.r); /* a repeat counts too */
  pg_policy_finish();
  snprintf(path, sizeof path, "%s/s.%d.prom", dir, (int)getpid());
  cr_assert_gt(tp_read_file(path, out, sizeof out), 0, "no %s", path);
  char want[256];
  int pid = (int)getpid();
#define HAS(fmt, ...)                                          \
  snprintf(want, sizeof want, fmt "\n", pid, ##__VA_ARGS__);   \
  cr_assert(strstr(out, want), "lacks %s in:\n%s", want, out)
  HAS("pinguard_copies_tracked_total{pid=\"%d\"} 7");
  HAS("pinguard_kernels_tracked_total{pid=\"%d\"} 2");
  HAS("pinguard_waits_total{pid=\"%d\"} 1");
  HAS("pinguard_wait_seconds_total{pid=\"%d\"} 1.500000000");
  HAS("pinguard_reports_total{pid=\"%d\",kind=\"free-during-device-access\"} 2");
  HAS("pinguard_reports_total{pid=\"%d\",kind=\"wait-during-capture\"} 0");
  HAS("pinguard_guard_faults_total{pid=\"%d\"} 1");
  HAS("pinguard_regions{pid=\"%d\"} 3");
  HAS("pinguard_inflight{pid=\"%d\"} 0");
#undef HAS
  cr_assert(strstr(out, "# TYPE pinguard_regions gauge\n"), "%s", out);
  cr_assert(strstr(out, "# TYPE pinguard_waits_total counter\n"), "%s", out);
  cr_assert_eq(pg_statsfile_write(), 0);
  char again[sizeof out];
  tp_read_file(path, again, sizeof again);
  pg_stat_add(PG_STAT_COPIES_TRACKED, 1);
  cr_assert_eq(pg_statsfile_write(), 0);
  tp_read_file(path, out, sizeof out);
  cr_assert_str_eq(out, again, "nothing rewrites the file after the exit write");
}

Test(stats_file, silent_process_writes_no_file) {
  char opt[400], path[300];
  tp_tmpdir(dir);
  snprintf(opt, sizeof opt, "stats_path=%s/s.prom", dir);
  pg_policy_configure(NULL, opt);
  pg_policy_finish();
  snprintf(path, sizeof path, "%s/s.%d.prom", dir, (int)getpid());
  cr_assert_eq(tp_read_file(path, out, sizeof out), -1, "a process that did nothing has no file");
}

/* ---- de-duplication by the first frame outside the runtime --------------------------------- */
#include <dlfcn.h>

#include "pg_dedup.h"

/* One bug whose innermost frame is libc's memcpy at varying offsets (the copy's length picks the
 * path through memcpy) is one report; the same memcpy called from elsewhere is another. */
Test(dedup_site, libc_frames_do_not_split_one_bug) {
  configure(NULL);
  void *libc_memcpy = dlsym(RTLD_DEFAULT, "memcpy");
  cr_assert(libc_memcpy && pg_dedup_is_runtime_pc((char *)libc_memcpy + 16),
            "memcpy is in libc, a runtime module");
  cr_assert_not(pg_dedup_is_runtime_pc((char *)tp_copy_site + 1), "the test is not runtime");
  tp_report_t t;
  tp_report_init(&t, PG_KIND_CPU_READ_DURING_DEVICE_WRITE);
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED); /* copy_site itself */
  for (int off = 8; off < 64; off += 8) {
    t.access.pc[0] = (char *)libc_memcpy + off;
    t.access.pc[1] = (char *)tp_copy_site + 1;
    t.access.pc[2] = (char *)tp_other_site + off; /* deeper frames do not count either */
    t.access.depth = 3;
    pg_verdict_t v = pg_policy_report(&t.r);
    cr_assert_eq(v, PG_VERDICT_DUPLICATE, "memcpy+%d called from copy_site is copy_site", off);
  }
  t.access.pc[1] = (char *)tp_alloc_site + 1; /* memcpy from another function: another bug */
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED);
  pg_policy_counts_t c = pg_policy_counts();
  cr_assert_eq(c.unique, 2, "memcpy from copy_site, memcpy from alloc_site");
  pg_policy_finish();
  cr_assert(strstr(read_log(), "happened 8 times"), "the repeat count: %s", out);
  cr_assert_eq(tp_count(out, "pinguard: ERROR:"), 2, "%s", out);
}

Test(dedup_site, a_stack_inside_the_runtime_keeps_its_first_frames) {
  configure(NULL);
  char *libc_memcpy = dlsym(RTLD_DEFAULT, "memcpy");
  tp_report_t t;
  tp_report_init(&t, PG_KIND_CPU_READ_DURING_DEVICE_WRITE);
  t.access.pc[0] = libc_memcpy + 8;
  t.access.pc[1] = libc_memcpy + 16;
  t.access.depth = 2;
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED);
  t.access.pc[0] = libc_memcpy + 24;
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED, "nothing else tells them apart");
}

/* With Python frames the innermost one is the call site (issue 14): different native frames under
 * one Python line (torch's internals, memcpy at any offset) are one bug; two lines are two. */
Test(dedup_site, the_python_frame_is_the_call_site) {
  configure(NULL);
  static char code_a[64], code_b[64]; /* stand-ins for code objects (never resolved here) */
  tp_report_t t;
  tp_report_init(&t, PG_KIND_CPU_READ_DURING_DEVICE_WRITE);
  t.access.py_depth = 1;
  t.access.py_code[0] = code_a;
  t.access.py_offset[0] = 10;
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED);
  t.access.pc[0] = (char *)tp_alloc_site + 1; /* another native caller, the same Python line */
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_DUPLICATE);
  t.access.py_offset[0] = 20; /* another instruction: another line */
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED);
  t.access.py_code[0] = code_b;
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED);
  cr_assert_eq(pg_policy_counts().unique, 3);
}

/* stack_depth counts frames outside the runtime: a libc frame does not push the user's out. */
Test(dedup_site, stack_depth_counts_frames_outside_the_runtime) {
  configure("stack_depth=1");
  char *libc_memcpy = dlsym(RTLD_DEFAULT, "memcpy");
  tp_report_t t;
  tp_report_init(&t, PG_KIND_CPU_READ_DURING_DEVICE_WRITE);
  t.access.pc[0] = libc_memcpy + 8;
  t.access.pc[1] = (char *)tp_copy_site + 1;
  t.access.pc[2] = (char *)tp_other_site + 1;
  t.access.depth = 3;
  pg_policy_report(&t.r);
  pg_policy_finish();
  read_log();
  cr_assert(strstr(out, " in tp_copy_site "), "the user's frame is printed: %s", out);
  cr_assert(strstr(out, "    #0 ") && strstr(out, "    #1 "), "after memcpy's: %s", out);
  cr_assert_null(strstr(out, "    #2 "), "and no deeper frame: %s", out);
  cr_assert_null(strstr(out, "tp_other_site"), "%s", out);
}
