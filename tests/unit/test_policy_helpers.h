/* test_policy_helpers.h: hand-built reports and stacks for the policy unit tests.
 * Stacks hold real code addresses of this test program so that symbolization has something
 * to find, without needing tracker/'s stack capture. */
#ifndef TEST_POLICY_HELPERS_H
#define TEST_POLICY_HELPERS_H

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pg_report.h"

/* Distinct functions whose addresses serve as frames. noinline + used: they must exist. */
__attribute__((noinline, used)) static void tp_copy_site(void) { __asm__ volatile(""); }
__attribute__((noinline, used)) static void tp_launch_site(void) { __asm__ volatile(""); }
__attribute__((noinline, used)) static void tp_alloc_site(void) { __asm__ volatile(""); }
__attribute__((noinline, used)) static void tp_other_site(void) { __asm__ volatile(""); }

static inline pg_stack_t tp_stack(uint32_t tid, void (*f0)(void), void (*f1)(void)) {
  pg_stack_t s;
  memset(&s, 0, sizeof s);
  s.tid = tid;
  s.pc[0] = (void *)((uintptr_t)f0 + 1); /* +1: a "return address" inside the function */
  s.pc[1] = (void *)((uintptr_t)f1 + 1);
  s.depth = 2;
  return s;
}

/* A report of `kind` on a 32 MiB region at 0x7f2a10000000, offset 0x4000, 4096 bytes, with one
 * in-flight kernel. The stacks are owned by the caller (they must outlive the report call). */
typedef struct tp_report {
  pg_stack_t access, launch, alloc;
  pg_gpu_access_t gpu;
  pg_report_t r;
} tp_report_t;

static inline void tp_report_init(tp_report_t *t, pg_report_kind_t kind) {
  memset(t, 0, sizeof *t);
  t->access = tp_stack(3, tp_copy_site, tp_other_site);
  t->launch = tp_stack(1, tp_launch_site, tp_other_site);
  t->alloc = tp_stack(1, tp_alloc_site, tp_other_site);
  t->gpu.what = "kv_gather";
  t->gpu.is_kernel = 1;
  t->gpu.dir = PG_DIR_UNKNOWN;
  t->gpu.addr = 0x7f2a10004000;
  t->gpu.len = 0;
  t->gpu.stream = (const void *)0x55e000001000;
  t->gpu.age_ns = 1800000;
  t->gpu.stack = &t->launch;
  t->r.kind = kind;
  t->r.addr = 0x7f2a10004000;
  t->r.len = 4096;
  t->r.region.base = 0x7f2a10000000;
  t->r.region.size = 32u << 20;
  t->r.region.how = PG_PIN_HOST_ALLOC;
  t->r.region.stack = &t->alloc;
  t->r.access_what = "CPU read";
  t->r.access_stack = &t->access;
  t->r.gpu = &t->gpu;
  t->r.n_gpu = 1;
  t->r.action = PG_ACTION_NONE;
}

/* Reads a whole file into buf (NUL-terminated). Returns the length, or -1. */
static inline long tp_read_file(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return -1;
  size_t len = 0;
  ssize_t n;
  while (len + 1 < cap && (n = read(fd, buf + len, cap - 1 - len)) > 0) len += (size_t)n;
  close(fd);
  buf[len] = '\0';
  return (long)len;
}

/* Redirects fd 2 into a temporary file until tp_stderr_end(), which returns what was written.
 * pinguard writes warnings with the raw write system call, so only an fd-level capture sees them. */
typedef struct tp_capture {
  int saved_fd;
  char path[64];
} tp_capture_t;

static inline void tp_stderr_begin(tp_capture_t *c) {
  strcpy(c->path, "/tmp/pg_test_stderr_XXXXXX");
  int fd = mkstemp(c->path);
  fflush(stderr);
  c->saved_fd = dup(2);
  dup2(fd, 2);
  close(fd);
}

static inline long tp_stderr_end(tp_capture_t *c, char *buf, size_t cap) {
  fflush(stderr);
  dup2(c->saved_fd, 2);
  close(c->saved_fd);
  long n = tp_read_file(c->path, buf, cap);
  unlink(c->path);
  return n;
}

/* Removes what tp_tmpdir made, at exit. Tests that leave by _exit (halting on purpose) skip
 * this; CTest points PG_TEST_TMPDIR into the build tree so those leftovers stay out of /tmp. */
static char tp_dir_made[128];

static inline int tp_rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static inline void tp_rm_dir_made(void) {
  if (tp_dir_made[0]) nftw(tp_dir_made, tp_rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* A fresh directory for log files; its path is returned in dir (>= 128 bytes). */
static inline void tp_tmpdir(char *dir) {
  const char *base = getenv("PG_TEST_TMPDIR");
  if (!base || !*base) base = "/tmp";
  mkdir(base, 0755);
  snprintf(dir, 128, "%s/pg_test_log_XXXXXX", base);
  if (!mkdtemp(dir)) abort();
  if (!tp_dir_made[0]) atexit(tp_rm_dir_made);
  else tp_rm_dir_made(); /* a test that makes a second one drops the first */
  snprintf(tp_dir_made, sizeof tp_dir_made, "%s", dir);
}

/* Counts non-overlapping occurrences of needle in hay. */
static inline int tp_count(const char *hay, const char *needle) {
  int n = 0;
  size_t nl = strlen(needle);
  for (const char *p = strstr(hay, needle); p; p = strstr(p + nl, needle)) n++;
  return n;
}

#endif /* TEST_POLICY_HELPERS_H */
