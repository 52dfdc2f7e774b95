/* pg_statsfile.c: see pg_statsfile.h. The writer thread sleeps, takes file_lock (never the
 * report lock: a report can take seconds to symbolize), formats the counters, which are relaxed
 * atomics, into a static buffer and renames a temporary file over the old one, so a reader
 * (node_exporter, `pinguard report`) never sees a half-written file. */
#include "pg_statsfile.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pg_fmt.h"
#include "pg_options.h"
#include "pg_report.h"
#include "pg_sink.h" /* pg_write_all */
#include "pg_stats.h"

static char base_path[PG_OPT_STR_MAX];
static unsigned interval_s;
static size_t (*gauge_regions)(void), (*gauge_inflight)(void);
static atomic_uint_fast64_t by_kind[PG_KIND_COUNT];

static pthread_mutex_t file_lock = PTHREAD_MUTEX_INITIALIZER; /* the file and the buffer */
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool running;  /* the writer thread was started in this process */
static atomic_bool finished; /* the exit write happened: nothing rewrites the file after it */
static char text[16384];

void pg_statsfile_configure(const char *path, unsigned interval) {
  size_t n = path ? strlen(path) : 0;
  if (n >= sizeof base_path) n = sizeof base_path - 1;
  memcpy(base_path, path ? path : "", n);
  base_path[n] = '\0';
  interval_s = interval;
  atomic_store(&finished, false);
  for (unsigned k = 0; k < PG_KIND_COUNT; k++) atomic_store(&by_kind[k], 0);
}

void pg_statsfile_gauges(size_t (*regions)(void), size_t (*inflight)(void)) {
  gauge_regions = regions;
  gauge_inflight = inflight;
}

void pg_statsfile_count_report(unsigned kind) {
  if (kind < PG_KIND_COUNT) atomic_fetch_add_explicit(&by_kind[kind], 1, memory_order_relaxed);
}

/* ---- format -------------------------------------------------------------------------------- */
static void metric_head(pg_buf_t *b, const char *name, const char *type, const char *help) {
  pg_buf_puts(b, "# HELP ");
  pg_buf_puts(b, name);
  pg_buf_putc(b, ' ');
  pg_buf_puts(b, help);
  pg_buf_puts(b, "\n# TYPE ");
  pg_buf_puts(b, name);
  pg_buf_putc(b, ' ');
  pg_buf_puts(b, type);
  pg_buf_putc(b, '\n');
}

/* name{pid="N"[,kind="k"]} */
static void sample_head(pg_buf_t *b, const char *name, int pid, const char *kind) {
  pg_buf_puts(b, name);
  pg_buf_puts(b, "{pid=\"");
  pg_buf_u64(b, (uint64_t)pid);
  if (kind) {
    pg_buf_puts(b, "\",kind=\"");
    pg_buf_puts(b, kind); /* kind names are [a-z-]: nothing to escape */
  }
  pg_buf_puts(b, "\"} ");
}

static void metric_u64(pg_buf_t *b, const char *name, const char *type, const char *help,
                       int pid, uint64_t v) {
  metric_head(b, name, type, help);
  sample_head(b, name, pid, NULL);
  pg_buf_u64(b, v);
  pg_buf_putc(b, '\n');
}

size_t pg_statsfile_format(char *out, size_t cap, int pid) {
  pg_buf_t b;
  pg_buf_init(&b, out, cap);
  /* The pid label keeps the series of processes sharing a textfile directory apart: the
   * collector rejects the same name and labels from two files. */
  metric_u64(&b, "pinguard_copies_tracked_total", "counter",
             "Asynchronous copies touching pinned host memory.", pid,
             pg_stat_get(PG_STAT_COPIES_TRACKED));
  metric_u64(&b, "pinguard_kernels_tracked_total", "counter",
             "Kernel launches holding pinned host pointers.", pid,
             pg_stat_get(PG_STAT_KERNELS_TRACKED));
  metric_u64(&b, "pinguard_waits_total", "counter", "Enforce waits on conflicting GPU work.", pid,
             pg_stat_get(PG_STAT_WAITS));
  uint64_t ns = pg_stat_get(PG_STAT_WAIT_NS);
  metric_head(&b, "pinguard_wait_seconds_total", "counter", "Time spent in enforce waits.");
  sample_head(&b, "pinguard_wait_seconds_total", pid, NULL);
  char frac[16];
  snprintf(frac, sizeof frac, ".%09llu\n", (unsigned long long)(ns % 1000000000u));
  pg_buf_u64(&b, ns / 1000000000u);
  pg_buf_puts(&b, frac);
  metric_head(&b, "pinguard_reports_total", "counter",
              "Unsuppressed violation reports, repeats included, by kind.");
  for (unsigned k = 0; k < PG_KIND_COUNT; k++) {
    sample_head(&b, "pinguard_reports_total", pid, pg_report_kind_name((pg_report_kind_t)k));
    pg_buf_u64(&b, atomic_load_explicit(&by_kind[k], memory_order_relaxed));
    pg_buf_putc(&b, '\n');
  }
  metric_u64(&b, "pinguard_guard_faults_total", "counter", "CPU accesses caught by guard pages.",
             pid, pg_stat_get(PG_STAT_GUARD_FAULTS));
  metric_u64(&b, "pinguard_guard_skipped_maps_total", "counter",
             "Guards skipped to stay within the mapping budget (guard_map_budget).", pid,
             pg_stat_get(PG_STAT_GUARD_SKIPPED_MAPS));
  metric_u64(&b, "pinguard_accesses_untracked_total", "counter",
             "GPU accesses checked but not tracked (no stream state: past the stream limit, or "
             "out of memory; or no completion event).",
             pid, pg_stat_get(PG_STAT_ACCESSES_UNTRACKED));
  metric_u64(&b, "pinguard_guard_unchecked_total", "counter",
             "Guard faults let through unchecked (a signal handler interrupted pinguard).", pid,
             pg_stat_get(PG_STAT_GUARD_UNCHECKED));
  metric_u64(&b, "pinguard_regions", "gauge", "Pinned host regions registered now.", pid,
             gauge_regions ? gauge_regions() : 0);
  metric_u64(&b, "pinguard_inflight", "gauge", "GPU accesses to pinned memory in flight now.", pid,
             gauge_inflight ? gauge_inflight() : 0);
  return b.len;
}

size_t pg_statsfile_name(char *out, size_t cap, int pid) {
  pg_buf_t b;
  pg_buf_init(&b, out, cap);
  size_t n = strlen(base_path);
  struct stat st;
  if (n && (base_path[n - 1] == '/' || (stat(base_path, &st) == 0 && S_ISDIR(st.st_mode)))) {
    pg_buf_puts(&b, base_path);
    if (base_path[n - 1] != '/') pg_buf_putc(&b, '/');
    pg_buf_puts(&b, "pinguard.");
    pg_buf_u64(&b, (uint64_t)pid);
    pg_buf_puts(&b, ".prom");
  } else if (n > 5 && strcmp(base_path + n - 5, ".prom") == 0) {
    /* The collector reads *.prom only: the pid goes before the suffix. */
    for (size_t i = 0; i < n - 5; i++) pg_buf_putc(&b, base_path[i]);
    pg_buf_putc(&b, '.');
    pg_buf_u64(&b, (uint64_t)pid);
    pg_buf_puts(&b, ".prom");
  } else {
    pg_buf_puts(&b, base_path);
    pg_buf_putc(&b, '.');
    pg_buf_u64(&b, (uint64_t)pid);
  }
  return b.len;
}

/* ---- write --------------------------------------------------------------------------------- */
/* Creates the directories leading to the file `path` (mkdir -p of its dirname). Returns 0 when
 * they exist afterwards, -1 with errno set otherwise. */
static int make_parents(const char *path) {
  char dir[PG_OPT_STR_MAX + 64];
  size_t n = strlen(path);
  if (n >= sizeof dir) return errno = ENAMETOOLONG, -1;
  memcpy(dir, path, n + 1);
  char *last = strrchr(dir, '/');
  if (!last || last == dir) return 0; /* a file in the working directory, or in / */
  *last = '\0';
  for (char *p = dir + 1; ; p++) {
    if (*p == '/' || *p == '\0') {
      char c = *p;
      *p = '\0';
      if (mkdir(dir, 0755) != 0 && errno != EEXIST) return -1;
      *p = c;
      if (!c) break;
    }
  }
  return 0;
}

static int open_creating_parents(const char *tmp) {
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0 || errno != ENOENT) return fd;
  if (make_parents(tmp) != 0) return -1;
  return open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

static int write_locked(void) {
  if (!base_path[0]) return 0;
  int pid = (int)getpid();
  char name[PG_OPT_STR_MAX + 48], tmp[PG_OPT_STR_MAX + 64];
  pg_statsfile_name(name, sizeof name, pid);
  /* Same directory (rename is atomic only there), a name the collector skips (not *.prom). */
  snprintf(tmp, sizeof tmp, "%s.tmp", name);
  size_t len = pg_statsfile_format(text, sizeof text, pid);
  int fd = open_creating_parents(tmp);
  if (fd < 0) return -1;
  pg_write_all(fd, text, len);
  int err = close(fd);
  if (err == 0) err = rename(tmp, name);
  if (err != 0) {
    int e = errno;
    unlink(tmp);
    errno = e;
  }
  return err;
}

int pg_statsfile_write(void) {
  pthread_mutex_lock(&file_lock);
  int r = atomic_load(&finished) ? 0 : write_locked();
  pthread_mutex_unlock(&file_lock);
  return r;
}

/* "pinguard: WARNING: stats_path: <what> <file> (<errno text>)...", once per process. */
static void warn_once(const char *what, const char *then) {
  static atomic_bool warned;
  if (atomic_exchange(&warned, true)) return;
  int e = errno;
  char name[PG_OPT_STR_MAX + 48];
  pg_statsfile_name(name, sizeof name, (int)getpid());
  char line[2 * PG_OPT_STR_MAX + 160];
  pg_buf_t b;
  pg_buf_init(&b, line, sizeof line);
  pg_buf_puts(&b, "pinguard: WARNING: stats_path: ");
  pg_buf_puts(&b, what);
  pg_buf_putc(&b, ' ');
  pg_buf_puts(&b, name);
  pg_buf_puts(&b, " (");
  pg_buf_puts(&b, strerror(e));
  pg_buf_puts(&b, then);
  pg_write_all(2, line, b.len);
}

static void *writer(void *arg) {
  (void)arg;
  for (;;) {
    struct timespec ts = {.tv_sec = (time_t)interval_s, .tv_nsec = 0};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    if (atomic_load(&finished)) return NULL;
    if (pg_statsfile_write() != 0)
      warn_once("cannot rewrite the counters file", "); retrying each interval\n");
  }
}

static void start_thread(void) {
  /* Every signal blocked: the program's signals go to its own threads, never to this one. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  int err = pthread_create(&t, &attr, writer, NULL);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (err == 0) {
    atomic_store(&running, true);
  } else {
    errno = err;
    warn_once("cannot start the writer thread for", "); the file is written at exit only\n");
  }
}

void pg_statsfile_start(void) {
  if (!base_path[0] || interval_s == 0 || atomic_load(&running)) return;
  pthread_mutex_lock(&start_lock);
  if (!atomic_load(&running) && !atomic_load(&finished)) start_thread();
  pthread_mutex_unlock(&start_lock);
}

bool pg_statsfile_running(void) { return atomic_load(&running); }

void pg_statsfile_finish(bool active) {
  if (!base_path[0]) return;
  pthread_mutex_lock(&file_lock);
  if (!atomic_load(&finished) && (active || atomic_load(&running))) {
    if (write_locked() != 0) warn_once("cannot write the counters file at exit:", ")\n");
  }
  atomic_store(&finished, true);
  pthread_mutex_unlock(&file_lock);
}

/* ---- fork ---------------------------------------------------------------------------------- */
void pg_statsfile_atfork_prepare(void) {
  pthread_mutex_lock(&start_lock);
  pthread_mutex_lock(&file_lock);
}

void pg_statsfile_atfork_parent(void) {
  pthread_mutex_unlock(&file_lock);
  pthread_mutex_unlock(&start_lock);
}

void pg_statsfile_atfork_child(void) {
  pthread_mutex_unlock(&file_lock);
  pthread_mutex_unlock(&start_lock);
  for (unsigned k = 0; k < PG_KIND_COUNT; k++) atomic_store(&by_kind[k], 0);
  /* The child inherits no thread: it gets its own writer (and its own file, by its pid) when the
   * parent had one. glibc has reclaimed the parent's thread stacks and unlocked malloc before
   * fork handlers run in the child, so creating a thread here is safe there. */
  bool had = atomic_exchange(&running, false);
  if (had && !atomic_load(&finished)) start_thread();
}
