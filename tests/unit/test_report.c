/* test_report.c: the report renderings and where they go: the text layout (key lines
 * checked literally), the SUMMARY cap, JSON lines that stay valid when cut, the
 * bounded formatter, and <log_path>.<pid> creation (lazily, and per process after fork). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dlfcn.h>

#include "pg_dwarf_line.h"
#include "pg_fmt.h"
#include "pg_policy.h"
#include "pg_report_format.h"
#include "test_policy_helpers.h"

static char dir[128], logpath[160], logfile[200];
static char out[65536];

static void setup_log(void) {
  tp_tmpdir(dir);
  snprintf(logpath, sizeof logpath, "%s/pg", dir);
  snprintf(logfile, sizeof logfile, "%s.%d", logpath, (int)getpid());
}

static void configure(const char *extra) {
  char opts[512];
  snprintf(opts, sizeof opts, "log_path=%s:%s", logpath, extra ? extra : "");
  pg_policy_configure(NULL, opts);
}

/* The line of out that starts with prefix (copied into line), or NULL. */
static char *line_starting(const char *prefix, char *line, size_t cap) {
  size_t pn = strlen(prefix);
  for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
    if (strncmp(p, prefix, pn) == 0) {
      size_t n = strcspn(p, "\n");
      if (n >= cap) n = cap - 1;
      memcpy(line, p, n);
      line[n] = '\0';
      return line;
    }
  }
  return NULL;
}

Test(report_text, layout_of_an_audit_report, .init = setup_log) {
  configure(NULL);
  tp_report_t t;
  tp_report_init(&t, PG_KIND_CPU_READ_DURING_DEVICE_WRITE);
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED);
  cr_assert_gt(tp_read_file(logfile, out, sizeof out), 0, "no %s", logfile);

  char head[256], line[512];
  snprintf(head, sizeof head,
           "==%d==pinguard: ERROR: cpu-read-during-device-write on 0x7f2a10004000 (32 MiB pinned, "
           "offset 0x4000, 4096 bytes)\n",
           (int)getpid());
  cr_assert_eq(strncmp(out, head, strlen(head)), 0, "got:\n%s", out);
  cr_assert(strstr(out, "\n  CPU read (thread T3):\n    #0 0x"), "%s", out);
  cr_assert(line_starting("    #0 0x", line, sizeof line), "%s", out);
  cr_assert(strstr(line, " in tp_copy_site"), "frame #0: %s", line);
  cr_assert(line_starting("  in-flight GPU access: ", line, sizeof line), "%s", out);
  cr_assert_str_eq(line,
                   "  in-flight GPU access: kernel kv_gather (device access, direction unknown, "
                   "unknown extent) on stream 0x55e000001000 (device 0), enqueued 1.8 ms ago by "
                   "thread T1; still running:");
  cr_assert(strstr(out, "\n  buffer 0x7f2a10000000 (32 MiB) pinned by cudaHostAlloc (thread T1):\n"),
            "%s", out);
  cr_assert(strstr(out, " in tp_alloc_site"), "%s", out);
  cr_assert(strstr(out, "\n  audit: no wait; the read went ahead\n"), "%s", out);
  cr_assert(line_starting("SUMMARY: ", line, sizeof line), "%s", out);
  static const char want[] = "SUMMARY: pinguard: cpu-read-during-device-write ";
  cr_assert_eq(strncmp(line, want, strlen(want)), 0, "%s", line);
  cr_assert(strstr(line, " in tp_copy_site"), "%s", line);
  cr_assert_eq(tp_count(out, "SUMMARY: "), 1);
  cr_assert_eq(out[strlen(out) - 1], '\n');
}

Test(report_text, enforce_wait_and_copy_access, .init = setup_log) {
  configure(NULL);
  tp_report_t t;
  tp_report_init(&t, PG_KIND_FREE_DURING_DEVICE_ACCESS);
  t.r.access_what = "cudaFreeHost";
  t.gpu.is_kernel = 0;
  t.gpu.what = "copy device->host";
  t.gpu.dir = PG_DIR_WRITE;
  t.gpu.len = 8192;
  t.r.action = PG_ACTION_WAITED;
  t.r.waited_ns = 1700000;
  pg_policy_report(&t.r);
  tp_read_file(logfile, out, sizeof out);
  cr_assert(strstr(out, "\n  cudaFreeHost (thread T3):\n"), "%s", out);
  cr_assert(strstr(out, "\n  in-flight GPU access: copy device->host (device write, 8192 bytes at "
                        "0x7f2a10004000) on stream 0x55e000001000"),
            "%s", out);
  cr_assert(strstr(out, "\n  enforce: waited 1.7 ms for that access, then allowed the free\n"),
            "%s", out);
}

Test(report_text, gpu_access_names_its_device, .init = setup_log) {
  configure(NULL);
  tp_report_t t;
  tp_report_init(&t, PG_KIND_DEVICE_ACCESS_CONFLICT);
  t.gpu.device = 3;
  pg_policy_report(&t.r);
  tp_read_file(logfile, out, sizeof out);
  cr_assert(strstr(out, ") on stream 0x55e000001000 (device 3), enqueued "), "%s", out);

  pg_symstack_t s = {0};
  pg_report_view_t v = {.r = &t.r, .id = 1, .pid = 42, .access = &s, .region = &s, .gpu = {&s}};
  static char json[16384];
  pg_buf_t b;
  pg_buf_init(&b, json, sizeof json);
  pg_report_format_json(&b, &v);
  cr_assert_not(b.overflow);
  cr_assert(strstr(json, "\"stream\":\"0x55e000001000\",\"device\":3,"), "%s", json);
}

Test(report_text, completed_but_unordered_access, .init = setup_log) {
  configure("mode=enforce");
  tp_report_t t;
  tp_report_init(&t, PG_KIND_DEVICE_ACCESS_CONFLICT);
  t.gpu.completed = true;
  t.gpu.completed_age_ns = 400000;
  t.r.action = PG_ACTION_COMPLETED;
  pg_policy_report(&t.r);
  tp_read_file(logfile, out, sizeof out);
  cr_assert(strstr(out, "by thread T1; completed 0.4 ms before this access, but nothing ordered "
                        "it: on a slower or busier device this access would race it:\n"),
            "%s", out);
  cr_assert(strstr(out, "\n  enforce: no wait needed, the conflicting GPU work had completed"),
            "%s", out);

  pg_symstack_t s = {0};
  pg_report_view_t v = {.r = &t.r, .id = 1, .pid = 42, .access = &s, .region = &s, .gpu = {&s}};
  static char json[16384];
  pg_buf_t b;
  pg_buf_init(&b, json, sizeof json);
  pg_report_format_json(&b, &v);
  cr_assert_not(b.overflow);
  cr_assert(strstr(json, "\"completed\":true,\"completed_ago_ms\":0.4"), "%s", json);
  cr_assert(strstr(json, "\"action\":\"completed\""), "%s", json);
  t.gpu.completed = false;
  pg_buf_init(&b, json, sizeof json);
  pg_report_format_json(&b, &v);
  cr_assert(strstr(json, "\"completed\":false,"), "%s", json);
}

Test(report_text, capture_action_unknown_region_and_missing_stacks, .init = setup_log) {
  configure(NULL);
  tp_report_t t;
  tp_report_init(&t, PG_KIND_WAIT_DURING_CAPTURE);
  t.r.region.size = 0;
  t.r.access_stack = NULL;
  t.r.access_what = "cudaStreamSynchronize";
  t.r.action = PG_ACTION_NOT_WAITED_CAPTURE;
  pg_policy_report(&t.r);
  tp_read_file(logfile, out, sizeof out);
  cr_assert(strstr(out, "(no known pinned region, 4096 bytes)\n"), "%s", out);
  cr_assert(strstr(out, "\n  cudaStreamSynchronize:\n    <no stack recorded>\n"), "%s", out);
  cr_assert(strstr(out, "the stream is capturing, so no wait was possible"), "%s", out);
  cr_assert_null(strstr(out, "pinned by"), "%s", out);
  /* No violating stack: the summary names the launching call site instead. */
  cr_assert(strstr(out, "SUMMARY: pinguard: wait-during-capture ") &&
                strstr(out, " in tp_launch_site\n"),
            "%s", out);
}

Test(report_text, more_gpu_accesses_than_printed, .init = setup_log) {
  configure(NULL);
  tp_report_t t;
  tp_report_init(&t, PG_KIND_RELEASE_DURING_DEVICE_ACCESS);
  pg_gpu_access_t g[PG_REPORT_MAX_GPU + 3];
  for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) g[i] = t.gpu;
  t.r.gpu = g;
  t.r.n_gpu = sizeof g / sizeof g[0];
  t.r.action = PG_ACTION_WAITED;
  pg_policy_report(&t.r);
  tp_read_file(logfile, out, sizeof out);
  cr_assert_eq(tp_count(out, "in-flight GPU access: "), PG_REPORT_MAX_GPU, "%s", out);
  cr_assert(strstr(out, "\n  ... and 3 more in-flight GPU accesses\n"), "%s", out);
  cr_assert(strstr(out, " for those accesses, then allowed the release\n"), "%s", out);
}

/* The file:line part of the line of out that starts with prefix ("" when it has none). */
static void location_of(const char *prefix, char *loc, size_t cap) {
  char line[512];
  loc[0] = '\0';
  if (!line_starting(prefix, line, sizeof line)) return;
  char *sp = strrchr(line, ' ');
  if (sp && strchr(sp, ':')) snprintf(loc, cap, "%s", sp + 1);
}

Test(report_text, signal_context_reads_the_line_table_not_addr2line, .init = setup_log) {
  configure(NULL);
  tp_report_t t;
  tp_report_init(&t, PG_KIND_CPU_WRITE_DURING_DEVICE_ACCESS);
  t.r.flags = PG_REPORT_FROM_SIGNAL;
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED);
  tp_read_file(logfile, out, sizeof out);
  /* The test's frames are static functions: dladdr cannot name them, the module's own symbol
   * table can (read with open and mmap, which a signal handler may call); file:line comes from
   * the module's own line table (the same calls), never from addr2line, a child process. */
  cr_assert(strstr(out, "\n    #0 0x") && strstr(out, " in tp_"), "%s", out);
  char from_signal[256], from_addr2line[256];
  location_of("    #0 0x", from_signal, sizeof from_signal);
  cr_assert(strstr(from_signal, "test_policy_helpers.h:"), "%s", out);

  setup_log();
  configure(NULL);
  t.r.flags = 0;
  t.r.kind = PG_KIND_RELEASE_DURING_DEVICE_ACCESS;
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED);
  tp_read_file(logfile, out, sizeof out);
  location_of("    #0 0x", from_addr2line, sizeof from_addr2line);
  /* The same line. (addr2line of binutils 2.40 names the including .c file for a function
   * defined in a header with DWARF 5, where the line table, as readelf decodes it, says the
   * header: only the lines are compared.) */
  cr_assert_str_eq(strrchr(from_signal, ':'), strrchr(from_addr2line, ':'),
                   "the line table and addr2line disagree:\n%s", out);
}

Test(dwarf_line, agrees_with_addr2line_and_survives_bad_files) {
  char file[256] = "", path[200];
  unsigned line = 0;
  /* tp_copy_site is defined in test_policy_helpers.h; its first byte belongs to that line. */
  uintptr_t base = 0;
  Dl_info di;
  cr_assert(dladdr((void *)tp_copy_site, &di));
  base = (uintptr_t)di.dli_fbase;
  cr_assert(pg_dwarf_line("/proc/self/exe", (uintptr_t)tp_copy_site - base, file, sizeof file,
                          &line));
  cr_assert(strstr(file, "test_policy_helpers.h"), "%s", file);
  cr_assert_gt(line, 0);
  cr_assert_not(pg_dwarf_line("/proc/self/exe", 0, file, sizeof file, &line), "no code at 0");
  /* A file cut in the middle of its line table, and one of garbage: no answer, no crash. */
  tp_tmpdir(dir);
  snprintf(path, sizeof path, "%s/cut", dir);
  char cmd[512];
  struct stat st;
  cr_assert_eq(stat("/proc/self/exe", &st), 0);
  snprintf(cmd, sizeof cmd, "head -c %lld /proc/%d/exe > %s", (long long)st.st_size * 9 / 10,
           (int)getpid(), path);
  cr_assert_eq(system(cmd), 0);
  pg_dwarf_line(path, (uintptr_t)tp_copy_site - base, file, sizeof file, &line);
  snprintf(path, sizeof path, "%s/garbage", dir);
  FILE *f = fopen(path, "w");
  for (int i = 0; i < 100000; i++) fputc((i * 7919) & 0xff, f);
  fclose(f);
  cr_assert_not(pg_dwarf_line(path, 0x1000, file, sizeof file, &line));
  cr_assert_not(pg_dwarf_line("/nonexistent", 0x1000, file, sizeof file, &line));
}

Test(report_text, symbolize_0_prints_no_file_line, .init = setup_log) {
  configure("symbolize=0");
  tp_report_t t;
  tp_report_init(&t, PG_KIND_RELEASE_DURING_DEVICE_ACCESS);
  pg_policy_report(&t.r);
  tp_read_file(logfile, out, sizeof out);
  cr_assert(strstr(out, "\n    #0 0x"), "%s", out);
  cr_assert_null(strstr(out, ".c:"), "%s", out);
  cr_assert_null(strstr(out, ".h:"), "%s", out);
}

Test(report_text, symbolize_1_finds_file_and_line, .init = setup_log) {
  configure(NULL);
  tp_report_t t;
  tp_report_init(&t, PG_KIND_RELEASE_DURING_DEVICE_ACCESS);
  pg_policy_report(&t.r);
  pg_policy_finish(); /* stops the helper processes */
  tp_read_file(logfile, out, sizeof out);
  /* Test frames are in this program, built with debug info: addr2line names their source. */
  cr_assert(strstr(out, " in tp_copy_site /") && strstr(out, "/tests/unit/"), "%s", out);
}

Test(report_text, log_file_is_created_lazily, .init = setup_log) {
  configure(NULL);
  struct stat st;
  cr_assert_neq(stat(logfile, &st), 0, "no report yet, so no file");
  cr_assert_eq(pg_policy_finish(), -1);
  cr_assert_neq(stat(logfile, &st), 0, "a silent process leaves no file");
}

Test(report_text, fork_child_writes_its_own_log, .init = setup_log) {
  configure(NULL);
  tp_report_t t;
  tp_report_init(&t, PG_KIND_COMMIT_DURING_DEVICE_WRITE);
  pg_policy_report(&t.r); /* opens <path>.<parent pid> */
  pg_policy_atfork_prepare();
  pid_t pid = fork();
  if (pid == 0) {
    pg_policy_atfork_child();
    pg_policy_counts_t c = pg_policy_counts();
    pg_verdict_t v = pg_policy_report(&t.r); /* new process: not a duplicate of the parent's */
    _exit(c.reports == 0 && v == PG_VERDICT_PRINTED ? 0 : 1);
  }
  pg_policy_atfork_parent();
  int status;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  char child_file[220];
  snprintf(child_file, sizeof child_file, "%s.%d", logpath, (int)pid);
  cr_assert_gt(tp_read_file(child_file, out, sizeof out), 0, "no %s", child_file);
  char head[64];
  snprintf(head, sizeof head, "==%d==pinguard: ERROR: commit-during-device-write", (int)pid);
  cr_assert_eq(strncmp(out, head, strlen(head)), 0, "%s", out);
  cr_assert_gt(tp_read_file(logfile, out, sizeof out), 0);
  cr_assert_eq(tp_count(out, "pinguard: ERROR:"), 1, "the parent's file has only its own");
}

Test(report_text, unwritable_log_path_falls_back_to_stderr, .init = setup_log) {
  pg_policy_configure(NULL, "log_path=/nonexistent-dir/pg");
  tp_report_t t;
  tp_report_init(&t, PG_KIND_FREE_DURING_DEVICE_ACCESS);
  tp_capture_t c;
  tp_stderr_begin(&c);
  pg_policy_report(&t.r);
  tp_stderr_end(&c, out, sizeof out);
  cr_assert(strstr(out, "pinguard: WARNING: cannot open log file '/nonexistent-dir/pg."), "%s", out);
  cr_assert(strstr(out, "pinguard: ERROR: free-during-device-access"), "%s", out);
}

/* ---- direct formatter tests ------------------------------------------------------------------ */
static pg_symstack_t big_stack(void) {
  pg_symstack_t s;
  memset(&s, 0, sizeof s);
  s.present = true;
  s.depth = PG_STACK_MAX;
  for (unsigned i = 0; i < PG_STACK_MAX; i++) {
    pg_frame_t *f = &s.f[i];
    f->pc = (void *)(uintptr_t)(0x400000 + i);
    memset(f->module, 'm', sizeof f->module - 1);
    memset(f->function, 'f', sizeof f->function - 1);
    memset(f->file, 'c', sizeof f->file - 1);
    f->line = 4000000000u;
  }
  return s;
}

Test(report_format, summary_never_exceeds_1024_chars) {
  tp_report_t t;
  tp_report_init(&t, PG_KIND_SYSCALL_WRITE_DURING_DEVICE_ACCESS);
  pg_symstack_t s = big_stack();
  pg_report_view_t v = {.r = &t.r, .access = &s};
  char sum[4096];
  size_t n = pg_report_summary(&v, sum, sizeof sum);
  cr_assert_eq(n, strlen(sum));
  cr_assert_leq(n, PG_SUMMARY_MAX);
  cr_assert_eq(strncmp(sum, "SUMMARY: pinguard: syscall-write-during-device-access ccc", 57), 0);
  cr_assert(strstr(sum, ":4000000000 in fff"), "%s", sum);
}

Test(report_format, summary_cut_is_visible) {
  tp_report_t t;
  tp_report_init(&t, PG_KIND_FREE_DURING_DEVICE_ACCESS);
  pg_symstack_t s = big_stack();
  pg_report_view_t v = {.r = &t.r, .access = &s};
  char sum[80];
  size_t n = pg_report_summary(&v, sum, sizeof sum);
  cr_assert_eq(n, sizeof sum - 1);
  cr_assert_str_eq(sum + n - 3, "...");
}

Test(report_format, summary_skips_runtime_frames) {
  tp_report_t t;
  tp_report_init(&t, PG_KIND_CPU_READ_DURING_DEVICE_WRITE);
  pg_symstack_t s;
  memset(&s, 0, sizeof s);
  s.present = true;
  s.depth = 2;
  strcpy(s.f[0].module, "/lib/x86_64-linux-gnu/libc.so.6");
  strcpy(s.f[0].function, "memcpy");
  strcpy(s.f[1].module, "/opt/app/kvxfer");
  strcpy(s.f[1].function, "serialize_chunk");
  strcpy(s.f[1].file, "kvxfer/commit.c");
  s.f[1].line = 88;
  pg_report_view_t v = {.r = &t.r, .access = &s};
  char sum[256];
  pg_report_summary(&v, sum, sizeof sum);
  cr_assert_str_eq(sum, "SUMMARY: pinguard: cpu-read-during-device-write kvxfer/commit.c:88 in "
                        "serialize_chunk");
}

/* Without Python frames (enforce's launches, a thread the interpreter does not know), a SUMMARY
 * names the innermost frame outside the interpreter, torch and pinguard: the user's own library,
 * not _Pickler_Write, a copy kernel, a pybind11 lambda or libffi; with only such frames, the
 * innermost of them that is not the runtime. */
Test(report_format, summary_skips_interpreter_and_torch_frames) {
  tp_report_t t;
  tp_report_init(&t, PG_KIND_CPU_READ_DURING_DEVICE_WRITE);
  static const char *const modules[] = {
      "/usr/lib/libpinguard.so",
      "/usr/lib/x86_64-linux-gnu/libc.so.6",
      "/usr/lib/python3.11/lib-dynload/_pickle.cpython-311-x86_64-linux-gnu.so",
      "/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so",
      "/venv/lib/python3.11/site-packages/torch/lib/libtorch_python.so",
      "/usr/lib/x86_64-linux-gnu/libffi.so.8",
      "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0",
      "/app/libkvengine.so"};
  static const char *const functions[] = {"cudaMemcpyAsync", "memcpy", "_Pickler_Write",
                                          "direct_copy_kernel", "pybind11_lambda", "ffi_call",
                                          "_PyEval_EvalFrameDefault", "kv_stage"};
  pg_symstack_t s;
  memset(&s, 0, sizeof s);
  s.present = true;
  s.depth = 8;
  for (unsigned i = 0; i < 8; i++) {
    strcpy(s.f[i].module, modules[i]);
    strcpy(s.f[i].function, functions[i]);
  }
  strcpy(s.f[7].file, "/app/kv/stage.c");
  s.f[7].line = 31;
  pg_report_view_t v = {.r = &t.r, .access = &s};
  char sum[256];
  pg_report_summary(&v, sum, sizeof sum);
  cr_assert_str_eq(sum, "SUMMARY: pinguard: cpu-read-during-device-write /app/kv/stage.c:31 in "
                        "kv_stage");
  s.depth = 7; /* nothing of the program's own: the innermost outside the runtime */
  pg_report_summary(&v, sum, sizeof sum);
  cr_assert_str_eq(sum, "SUMMARY: pinguard: cpu-read-during-device-write "
                        "_pickle.cpython-311-x86_64-linux-gnu.so+0x0 in _Pickler_Write");
}

Test(report_format, text_overflow_is_marked) {
  tp_report_t t;
  tp_report_init(&t, PG_KIND_FREE_DURING_DEVICE_ACCESS);
  pg_symstack_t s = big_stack();
  pg_report_view_t v = {.r = &t.r, .access = &s, .region = &s, .gpu = {&s}};
  static char small[2048];
  pg_buf_t b;
  pg_buf_init(&b, small, sizeof small);
  pg_report_format_text(&b, &v);
  cr_assert(b.overflow);
  cr_assert_eq(strlen(small), b.len);
  cr_assert_str_eq(small + b.len - strlen("\n[report truncated]\n"), "\n[report truncated]\n");
}

Test(report_format, json_is_one_line_and_stays_valid_when_cut) {
  tp_report_t t;
  tp_report_init(&t, PG_KIND_DEVICE_ACCESS_CONFLICT);
  pg_symstack_t s = big_stack();
  pg_report_view_t v = {.r = &t.r, .id = 7, .pid = 42, .access = &s, .region = &s, .gpu = {&s}};
  static char big[256 * 1024], small[4096];
  pg_buf_t b;
  pg_buf_init(&b, big, sizeof big);
  pg_report_format_json(&b, &v);
  cr_assert_not(b.overflow);
  cr_assert_eq(strncmp(big, "{\"type\":\"report\",\"pid\":42,\"id\":7,\"kind\":\"device-access-conflict\"", 64), 0, "%.200s", big);
  cr_assert_eq(strchr(big, '\n'), big + b.len - 1, "exactly one line");
  cr_assert_null(strstr(big, "\"truncated\""));
  cr_assert(strstr(big, "\"line\":4000000000}"));

  pg_buf_init(&b, small, sizeof small);
  pg_report_format_json(&b, &v);
  cr_assert_not(b.overflow, "the fallback without stacks fits");
  cr_assert(strstr(small, ",\"truncated\":true}\n"), "%s", small);
  cr_assert(strstr(small, "\"stack\":[]"), "%s", small);
}

Test(fmt, numbers_sizes_durations) {
  char s[128];
  pg_buf_t b;
  pg_buf_init(&b, s, sizeof s);
  pg_buf_u64(&b, 0);
  pg_buf_putc(&b, ' ');
  pg_buf_u64(&b, UINT64_MAX);
  pg_buf_putc(&b, ' ');
  pg_buf_i64(&b, INT64_MIN);
  pg_buf_putc(&b, ' ');
  pg_buf_hex(&b, 0);
  pg_buf_putc(&b, ' ');
  pg_buf_hex(&b, 0xdeadbeef);
  cr_assert_str_eq(s, "0 18446744073709551615 -9223372036854775808 0x0 0xdeadbeef");
  static const struct { uint64_t v; const char *want; } sizes[] = {
      {32u << 20, "32 MiB"}, {4096, "4 KiB"}, {4097, "4097 bytes"}, {1, "1 byte"},
      {3ull << 30, "3 GiB"}, {0, "0 bytes"}};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    pg_buf_init(&b, s, sizeof s);
    pg_buf_size(&b, sizes[i].v);
    cr_assert_str_eq(s, sizes[i].want);
  }
  static const struct { uint64_t ns; const char *want; } durs[] = {
      {1800000, "1.8 ms"}, {45000, "45 us"}, {99999, "100 us"}, {100000, "0.1 ms"},
      {1960000, "2.0 ms"}, {0, "0 us"}};
  for (size_t i = 0; i < sizeof durs / sizeof durs[0]; i++) {
    pg_buf_init(&b, s, sizeof s);
    pg_buf_duration(&b, durs[i].ns);
    cr_assert_str_eq(s, durs[i].want, "%llu", (unsigned long long)durs[i].ns);
  }
  pg_buf_init(&b, s, sizeof s);
  pg_buf_ms_number(&b, 2500000);
  cr_assert_str_eq(s, "2.500");
}

Test(fmt, overflow_is_recorded_and_bounded) {
  char s[8];
  pg_buf_t b;
  pg_buf_init(&b, s, sizeof s);
  pg_buf_puts(&b, "0123456789");
  cr_assert(b.overflow);
  cr_assert_eq(b.len, 7);
  cr_assert_str_eq(s, "0123456");
}

Test(fmt, json_string_escapes_everything_unsafe) {
  char s[128];
  pg_buf_t b;
  pg_buf_init(&b, s, sizeof s);
  pg_buf_json_str(&b, "a\"b\\c\n\x01\xff");
  cr_assert_str_eq(s, "\"a\\\"b\\\\c\\u000a\\u0001\\u00ff\"");
}

/* The pytest test that was running when the report was made: PYTEST_CURRENT_TEST, read at report
 * time, as a "test:" line in text and as "test" (the node id, no phase) in JSON; absent without
 * the variable. */
Test(report_test_name, pytest_current_test_in_text_and_json, .init = setup_log) {
  configure(NULL);
  tp_report_t t;
  tp_report_init(&t, PG_KIND_CPU_READ_DURING_DEVICE_WRITE);
  setenv("PYTEST_CURRENT_TEST", "tests/test_kv.py::test_store[2-serialize] (call)", 1);
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED);
  tp_read_file(logfile, out, sizeof out);
  cr_assert(strstr(out, "\n  test: tests/test_kv.py::test_store[2-serialize] (call)\nSUMMARY: "),
            "%s", out);

  setup_log();
  configure("log_format=json");
  t.r.kind = PG_KIND_FREE_DURING_DEVICE_ACCESS;
  setenv("PYTEST_CURRENT_TEST", "tests/test_kv.py::test_free (teardown)", 1);
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED);
  tp_read_file(logfile, out, sizeof out);
  cr_assert(strstr(out, ",\"test\":\"tests/test_kv.py::test_free\",\"summary\":"), "%s", out);

  setup_log();
  configure("log_format=json");
  unsetenv("PYTEST_CURRENT_TEST");
  t.r.kind = PG_KIND_RELEASE_DURING_DEVICE_ACCESS;
  cr_assert_eq(pg_policy_report(&t.r), PG_VERDICT_PRINTED);
  tp_read_file(logfile, out, sizeof out);
  cr_assert_null(strstr(out, "\"test\""), "%s", out);
}
