/* fz_main.c: pgfuzz, pinguard's differential tester. The driver runs seeds in child processes
 * (several per child, a few children at once) under LD_PRELOAD=$PG_PRELOAD, with a per-seed
 * timeout so that a pinguard deadlock is a failure with its seed; it then shrinks each failing
 * seed's op list by delta debugging, replaying sub-lists in fresh children, and prints the seed
 * and the minimal op list (also written to --out DIR/fail-SEED.ops, replayable with --replay).
 *
 *   pgfuzz [--seeds A-B] [--time SECONDS] [--mode audit|enforce] [--threads N] [--streams N]
 *          [--events N] [--slots N] [--devices N] [--ops N] [--no-KIND ...] [--per-proc N] [--jobs N]
 *          [--timeout S] [--latency US|LO-HI] [--out DIR] [--no-shrink] [--print] [--replay FILE]
 * --print writes the seeds' op lists (op-file form) instead of running them.
 * KIND is an op name (hostfn, kern, cpu, ...). Exit status: 0 when every seed passed. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fz.h"

typedef struct opts {
  fz_cfg_t cfg;
  long seed_lo, seed_hi;
  double time_limit;
  int per_proc, jobs;
  double timeout;
  int lat_lo, lat_hi;
  const char *out;
  bool shrink;
  bool print;    /* --print: the op lists of the seeds, in op-file form, and nothing run */
  const char *replay;
  bool child;
  char self[4096];
  char argv_cfg[1024]; /* the configuration flags, passed on to children */
} opts_t;

static opts_t O;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void usage(void) {
  fprintf(stderr,
          "usage: pgfuzz [--seeds A-B] [--time S] [--mode audit|enforce] [--threads N] "
          "[--streams N] [--events N] [--slots N] [--devices N] [--ops N] [--blocking] [--no-KIND] "
          "[--per-proc N] "
          "[--jobs N] [--timeout S] [--latency US|LO-HI] [--out DIR] [--no-shrink] [--print] "
          "[--replay FILE]\n");
  exit(2);
}

static void cfg_defaults(fz_cfg_t *c) {
  memset(c, 0, sizeof *c);
  c->threads = 3, c->streams = 3, c->events = 3, c->slots = 4, c->ops = 80, c->devices = 1;
  c->guard_min = 4096;
}

static int clampi(long v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : (int)v; }

/* Parses one configuration flag (shared by driver and child); 1 if it was one. */
static int cfg_flag(fz_cfg_t *c, const char *f, const char *v, int *used) {
  *used = 1;
  if (!strcmp(f, "--mode")) {
    if (!v) usage();
    c->mode_enforce = !strcmp(v, "enforce");
  } else if (!strcmp(f, "--threads")) {
    c->threads = clampi(v ? atol(v) : 0, 1, FZ_MAXT);
  } else if (!strcmp(f, "--streams")) {
    c->streams = clampi(v ? atol(v) : 0, 1, FZ_MAXS);
  } else if (!strcmp(f, "--events")) {
    c->events = clampi(v ? atol(v) : 0, 1, FZ_MAXE);
  } else if (!strcmp(f, "--devices")) {
    c->devices = clampi(v ? atol(v) : 0, 1, FZ_MAXD);
  } else if (!strcmp(f, "--slots")) {
    c->slots = clampi(v ? atol(v) : 0, 1, FZ_MAXB);
  } else if (!strcmp(f, "--ops")) {
    c->ops = clampi(v ? atol(v) : 0, 1, 100000);
  } else if (!strcmp(f, "--guard-min")) {
    c->guard_min = (unsigned)(v ? atol(v) : 4096);
  } else if (!strcmp(f, "--no-malloc")) {
    c->no_malloc = true;
    *used = 0;
  } else if (!strcmp(f, "--concurrent")) {
    c->concurrent = true;
    *used = 0;
  } else if (!strcmp(f, "--roomy-stacks")) {
    c->roomy_stacks = true;
    *used = 0;
  } else if (!strcmp(f, "--no-mmap")) {
    c->no_mmap = true;
    *used = 0;
  } else if (!strcmp(f, "--blocking")) {
    c->blocking = true;
    *used = 0;
  } else if (!strncmp(f, "--no-", 5)) {
    int code = fz_code_from_name(f + 5);
    if (code < 0) {
      fprintf(stderr, "pgfuzz: unknown op kind in %s\n", f);
      exit(2);
    }
    c->excluded[code] = true;
    *used = 0;
  } else {
    return 0;
  }
  return 1;
}

static void cfg_header(FILE *f, const fz_cfg_t *c) {
  fprintf(f, "#cfg %s %d %d %d %d %u %d %d %d\n", c->mode_enforce ? "enforce" : "audit",
          c->threads, c->streams, c->events, c->slots, c->guard_min, c->concurrent, c->devices,
          c->blocking);
}

static void cfg_from_header(const char *path, fz_cfg_t *c) {
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[256], mode[16];
  int conc = 0, devices = 1, blocking = 0;
  if (fgets(line, sizeof line, f) &&
      sscanf(line, "#cfg %15s %d %d %d %d %u %d %d %d", mode, &c->threads, &c->streams,
             &c->events, &c->slots, &c->guard_min, &conc, &devices, &blocking) >= 6) {
    c->mode_enforce = !strcmp(mode, "enforce");
    c->concurrent = conc != 0;
    c->blocking = blocking != 0;
    c->devices = devices < 1 ? 1 : devices > FZ_MAXD ? FZ_MAXD : devices;
  }
  fclose(f);
}

/* ---- the child: runs seeds or an op file, one result line each ---------------------------- */
static int child_main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  fz_install_crash_handler();
  char why[1024];
  if (O.replay) {
    fz_cfg_t cfg = O.cfg;
    cfg_from_header(O.replay, &cfg);
    FILE *f = fopen(O.replay, "r");
    if (!f) {
      printf("FAIL 0 error cannot open %s\n", O.replay);
      return 1;
    }
    fz_ops_t ops = {0};
    if (fz_ops_read(f, &ops)) {
      printf("FAIL 0 error malformed op file\n");
      return 1;
    }
    fclose(f);
    int rc = fz_execute(&ops, &cfg, why, sizeof why);
    if (rc) printf("FAIL 0 %s\n", why);
    else printf("OK 0\n");
    fz_ops_free(&ops);
    return 0;
  }
  for (long s = O.seed_lo; s <= O.seed_hi; s++) {
    fz_ops_t ops = {0};
    fz_generate((uint64_t)s, &O.cfg, &ops);
    fz_stat_reports = fz_stat_required = 0;
    int rc = fz_execute(&ops, &O.cfg, why, sizeof why);
    if (rc) printf("FAIL %ld %s\n", s, why);
    else printf("OK %ld %lu %lu\n", s, (unsigned long)fz_stat_reports,
                (unsigned long)fz_stat_required);
    fz_ops_free(&ops);
  }
  return 0;
}

/* ---- the driver ----------------------------------------------------------------------------- */
typedef struct child {
  pid_t pid;
  int fd;
  long next, hi;    /* seeds next..hi still to report */
  long first;       /* the first seed it ran */
  double deadline;
  char buf[8192];
  size_t n;
  bool replay;
  char result[1100]; /* replay: the result line */
  char crash[400];   /* a CRASH line, if the child printed one */
} child_t;

static char g_logdir[256];
static int g_nchild;
static long g_failed_seeds[1024];
static long g_failed_from[1024]; /* first seed of the child process that ran it */
static char *g_failed_why[1024];
static int g_nfailed;
static bool g_quiet; /* re-running seeds: no FAIL lines */
static long g_seeds_run, g_ops_run;
static unsigned long g_reports, g_required; /* over the passing seeds */

static void set_child_env(int latency, const char *replay) {
  const char *pre = getenv("PG_PRELOAD");
  if (pre && *pre) setenv("LD_PRELOAD", pre, 1);
  char opts[600];
  char log[400];
  snprintf(log, sizeof log, "%s/pg%d", g_logdir, g_nchild);
  /* max_wait_ms=0: a gate holds its stream until a blocking call opens it (fz_gate.c), so
   * enforce must wait with the blocking synchronize, not poll the event until a deadline. */
  snprintf(opts, sizeof opts,
           "mode=%s:log_format=json:log_path=%s:dedup=0:max_reports=0:exitcode=0:guard=1:"
           "guard_min_bytes=%u:symbolize=0:print_summary=0:stack_depth=16:max_wait_ms=0",
           O.cfg.mode_enforce ? "enforce" : "audit", log, O.cfg.guard_min);
  setenv("PINGUARD_OPTIONS", opts, 1);
  setenv("FZ_LOG", log, 1);
  char lat[32];
  snprintf(lat, sizeof lat, "%d", latency);
  setenv("SIMCUDA_LATENCY_US", lat, 1);
  fz_cfg_t c = O.cfg;
  if (replay) cfg_from_header(replay, &c);
  char devs[16];
  snprintf(devs, sizeof devs, "%d", c.devices);
  setenv("SIMCUDA_DEVICES", devs, 1);
}

static unsigned g_rng = 12345;
static int pick_latency(void) {
  g_rng = g_rng * 1103515245u + 12345u;
  return O.lat_lo + (int)((g_rng >> 8) % (unsigned)(O.lat_hi - O.lat_lo + 1));
}

static void spawn(child_t *c, long lo, long hi, const char *replay) {
  int p[2];
  if (pipe(p)) {
    perror("pipe");
    exit(2);
  }
  g_nchild++;
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    dup2(p[1], 1);
    close(p[1]);
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0 && !getenv("FZ_VERBOSE")) dup2(devnull, 2);
    set_child_env(pick_latency(), replay);
    char a_lo[32], a_hi[32];
    snprintf(a_lo, sizeof a_lo, "%ld", lo);
    snprintf(a_hi, sizeof a_hi, "%ld", hi);
    char *args[64];
    int n = 0;
    args[n++] = O.self;
    args[n++] = "--child";
    if (replay) {
      args[n++] = "--replay";
      args[n++] = (char *)replay;
    } else {
      args[n++] = "--child-seeds";
      args[n++] = a_lo;
      args[n++] = a_hi;
    }
    char cfgbuf[1024];
    snprintf(cfgbuf, sizeof cfgbuf, "%s", O.argv_cfg);
    for (char *t = strtok(cfgbuf, " "); t && n < 62; t = strtok(NULL, " ")) args[n++] = t;
    args[n] = NULL;
    execv(O.self, args);
    _exit(127);
  }
  close(p[1]);
  memset(c, 0, sizeof *c);
  c->pid = pid;
  c->fd = p[0];
  c->next = lo;
  c->first = lo;
  c->hi = hi;
  c->replay = replay != NULL;
  c->deadline = now_s() + O.timeout;
}

static void record_failure(long seed, long from, const char *why) {
  if (g_nfailed < 1024) {
    g_failed_seeds[g_nfailed] = seed;
    g_failed_from[g_nfailed] = from;
    g_failed_why[g_nfailed] = strdup(why);
    g_nfailed++;
  }
  if (!O.replay && !g_quiet) {
    printf("FAIL seed %ld: %s\n", seed, why);
    fflush(stdout);
  }
}

/* Handles the complete lines in c's buffer. */
static void child_lines(child_t *c) {
  char *start = c->buf, *nl;
  while ((nl = memchr(start, '\n', c->n - (size_t)(start - c->buf)))) {
    *nl = 0;
    long seed;
    int off = 0;
    unsigned long nrep = 0, nreq = 0;
    if (!strncmp(start, "OK ", 3) && sscanf(start + 3, "%ld %lu %lu", &seed, &nrep, &nreq) >= 1) {
      g_reports += nrep;
      g_required += nreq;
      if (c->replay) snprintf(c->result, sizeof c->result, "OK");
      else g_seeds_run++;
      c->next = seed + 1;
    } else if (!strncmp(start, "FAIL ", 5) && sscanf(start + 5, "%ld %n", &seed, &off) == 1) {
      if (c->replay) snprintf(c->result, sizeof c->result, "%s", start + 5 + off);
      else {
        g_seeds_run++;
        record_failure(seed, c->first, start + 5 + off);
      }
      c->next = seed + 1;
    }
    if (!strncmp(start, "CRASH ", 6)) snprintf(c->crash, sizeof c->crash, "%s", start + 6);
    c->deadline = now_s() + O.timeout;
    start = nl + 1;
  }
  c->n -= (size_t)(start - c->buf);
  memmove(c->buf, start, c->n);
}

/* Reaps c after EOF or a timeout; returns false when seeds remain unreported (c->next is the
 * culprit, recorded). */
static bool child_finish(child_t *c, bool timed_out) {
  if (timed_out) kill(c->pid, SIGKILL);
  int st = 0;
  waitpid(c->pid, &st, 0);
  close(c->fd);
  c->pid = 0;
  bool complete = c->replay ? c->result[0] != 0 : c->next > c->hi;
  if (complete) return true;
  char why[500];
  if (timed_out)
    snprintf(why, sizeof why, "timeout: no result within %.0f s (deadlock?)", O.timeout);
  else if (WIFSIGNALED(st) && c->crash[0])
    snprintf(why, sizeof why, "crash: %s", c->crash);
  else if (WIFSIGNALED(st))
    snprintf(why, sizeof why, "crash: killed by signal %d", WTERMSIG(st));
  else
    snprintf(why, sizeof why, "crash: exited with status %d", WEXITSTATUS(st));
  if (c->replay) snprintf(c->result, sizeof c->result, "%s", why);
  else {
    g_seeds_run++;
    record_failure(c->next, c->first, why);
  }
  return false;
}

/* Runs the seed range over O.jobs children of O.per_proc seeds each. */
static void run_range(long lo, long hi, double stop_at) {
  child_t kids[16];
  int nk = O.jobs > 16 ? 16 : O.jobs;
  memset(kids, 0, sizeof kids);
  long next = lo;
  for (;;) {
    for (int k = 0; k < nk; k++) {
      if (kids[k].pid || next > hi || (stop_at && now_s() > stop_at)) continue;
      long end = next + O.per_proc - 1;
      if (end > hi) end = hi;
      spawn(&kids[k], next, end, NULL);
      next = end + 1;
    }
    struct pollfd pf[16];
    int map[16], np = 0;
    double wait = 1.0;
    for (int k = 0; k < nk; k++) {
      if (!kids[k].pid) continue;
      pf[np].fd = kids[k].fd;
      pf[np].events = POLLIN;
      map[np++] = k;
      double left = kids[k].deadline - now_s();
      if (left < wait) wait = left;
    }
    if (!np) break;
    poll(pf, (nfds_t)np, wait > 0 ? (int)(wait * 1000) + 1 : 0);
    for (int j = 0; j < np; j++) {
      child_t *c = &kids[map[j]];
      if (pf[j].revents & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t got = read(c->fd, c->buf + c->n, sizeof c->buf - 1 - c->n);
        if (got > 0) {
          c->n += (size_t)got;
          child_lines(c);
          continue;
        }
        long h = c->hi;
        if (!child_finish(c, false) && c->next < h) spawn(c, c->next + 1, h, NULL);
      } else if (now_s() > c->deadline) {
        long h = c->hi;
        if (!child_finish(c, true) && c->next < h) spawn(c, c->next + 1, h, NULL);
      }
    }
  }
}

/* Replays an op file in one fresh child: NULL when it passed, else the failure (static). */
static const char *replay_once(const char *path) {
  static child_t c;
  spawn(&c, 0, 0, path);
  for (;;) {
    struct pollfd pf = {.fd = c.fd, .events = POLLIN};
    double left = c.deadline - now_s();
    int r = poll(&pf, 1, left > 0 ? (int)(left * 1000) + 1 : 0);
    if (r > 0) {
      ssize_t got = read(c.fd, c.buf + c.n, sizeof c.buf - 1 - c.n);
      if (got > 0) {
        c.n += (size_t)got;
        child_lines(&c);
        continue;
      }
      child_finish(&c, false);
      break;
    }
    if (now_s() > c.deadline) {
      child_finish(&c, true);
      break;
    }
  }
  return strcmp(c.result, "OK") ? c.result : NULL;
}

/* A failure's class: its kind and the name of the op it failed at ("false-positive HOSTFN"), so
 * that shrinking keeps to the same failure. */
static void class_of(const char *why, char *out, size_t cap) {
  size_t n = strcspn(why, " :");
  char name[32] = "";
  const char *br = strchr(why, '[');
  if (br) sscanf(br + 1, "%*d %31[A-Z]", name);
  snprintf(out, cap, "%.*s %s", (int)n, why, name);
}

static void write_ops(const char *path, const fz_op_t *v, size_t n, const char *comment) {
  FILE *f = fopen(path, "w");
  if (!f) return;
  cfg_header(f, &O.cfg);
  if (comment) fprintf(f, "# %s\n", comment);
  fz_ops_t ops = {(fz_op_t *)v, n, n};
  fz_ops_write(f, &ops);
  fclose(f);
}

/* Whether ops v[0..n) still fail with the same class (class "" accepts any failure). */
static bool still_fails(const fz_op_t *v, size_t n, const char *cls, char *why_out, size_t cap) {
  char path[300];
  snprintf(path, sizeof path, "%s/shrink.ops", g_logdir);
  write_ops(path, v, n, NULL);
  const char *why = replay_once(path);
  if (!why) return false;
  char c2[64];
  class_of(why, c2, sizeof c2);
  if (cls[0] && strcmp(c2, cls)) return false;
  if (why_out) snprintf(why_out, cap, "%s", why);
  return true;
}

/* ddmin over the op list: removes ever smaller chunks while the failure persists. */
static size_t shrink(fz_op_t *v, size_t n, const char *cls, char *why, size_t cap,
                     double budget_s) {
  double stop = now_s() + budget_s;
  fz_op_t *tmp = malloc(n * sizeof *tmp);
  size_t gran = 2;
  int tests = 0;
  while (n >= 2 && now_s() < stop) {
    size_t chunk = (n + gran - 1) / gran;
    bool reduced = false;
    for (size_t start = 0; start < n && now_s() < stop; start += chunk) {
      size_t end = start + chunk < n ? start + chunk : n;
      size_t m = 0;
      for (size_t i = 0; i < n; i++)
        if (i < start || i >= end) tmp[m++] = v[i];
      tests++;
      if (m && still_fails(tmp, m, cls, why, cap)) {
        memcpy(v, tmp, m * sizeof *v);
        n = m;
        gran = gran > 2 ? gran - 1 : 2;
        reduced = true;
        break;
      }
    }
    if (!reduced) {
      if (gran >= n) break;
      gran = gran * 2 < n ? gran * 2 : n;
    }
  }
  free(tmp);
  return n;
}

/* Returns whether the failure reproduced (alone, or after the seeds before it). */
static bool report_failure(long seed, long from, const char *why0) {
  char cls[64];
  class_of(why0, cls, sizeof cls);
  fz_ops_t ops = {0};
  fz_generate((uint64_t)seed, &O.cfg, &ops);
  char why[1100];
  snprintf(why, sizeof why, "%s", why0);
  /* Reproduce it alone first (a failure may need earlier seeds' leftovers or timing). */
  int reproduced = 0;
  for (int k = 0; k < 3 && !reproduced; k++)
    if (still_fails(ops.v, ops.n, cls, why, sizeof why)) reproduced = 1;
  printf("\n==== seed %ld (%s mode) failed: %s\n", seed, O.cfg.mode_enforce ? "enforce" : "audit",
         why0);
  if (!reproduced && from < seed) {
    /* Again after the seeds that ran before it in the same process. */
    child_t c;
    g_quiet = true;
    spawn(&c, from, seed, NULL);
    while (c.pid) {
      struct pollfd pf = {.fd = c.fd, .events = POLLIN};
      double left = c.deadline - now_s();
      if (poll(&pf, 1, left > 0 ? (int)(left * 1000) + 1 : 0) > 0) {
        ssize_t got = read(c.fd, c.buf + c.n, sizeof c.buf - 1 - c.n);
        if (got > 0) {
          c.n += (size_t)got;
          int before = g_nfailed;
          child_lines(&c);
          for (int k = before; k < g_nfailed; k++)
            if (g_failed_seeds[k] == seed) reproduced = 2;
          g_nfailed = before;
          continue;
        }
        child_finish(&c, false);
      } else if (now_s() > c.deadline) {
        child_finish(&c, true);
      }
    }
  }
  g_quiet = false;
  if (reproduced == 2) {
    printf("     reproduced only after the seeds before it in one process: pgfuzz --seeds %ld-%ld "
           "--per-proc %ld (same flags)\n", from, seed, seed - from + 1);
    fz_ops_free(&ops);
    return true;
  }
  if (!reproduced) {
    printf("     not reproduced when the seed runs alone (3 tries) or after its predecessors: its "
           "verdict depends on timing, which the model's never may (a defect in pinguard or in "
           "the model)\n");
    fz_ops_free(&ops);
    return false;
  }
  size_t n = ops.n;
  if (O.shrink) n = shrink(ops.v, ops.n, cls, why, sizeof why, 60);
  char path[300];
  snprintf(path, sizeof path, "%s/fail-%ld.ops", O.out, seed);
  char comment[1200];
  snprintf(comment, sizeof comment, "seed %ld: %s", seed, why);
  write_ops(path, ops.v, n, comment);
  printf("     shrunk to %zu of %zu ops (replay: pgfuzz --replay %s):\n     %s\n", n, ops.n,
         path, why);
  char line[160];
  for (size_t i = 0; i < n; i++) {
    fz_op_format(&ops.v[i], line, sizeof line);
    printf("       %s\n", line);
  }
  fflush(stdout);
  fz_ops_free(&ops);
  return true;
}

static void append_cfg_arg(const char *a) {
  size_t l = strlen(O.argv_cfg);
  snprintf(O.argv_cfg + l, sizeof O.argv_cfg - l, "%s%s", l ? " " : "", a);
}

int main(int argc, char **argv) {
  cfg_defaults(&O.cfg);
  O.seed_lo = 1, O.seed_hi = 100;
  O.per_proc = 50, O.jobs = 2, O.timeout = 10, O.lat_lo = 50, O.lat_hi = 200;
  O.out = ".";
  O.shrink = true;
  ssize_t sl = readlink("/proc/self/exe", O.self, sizeof O.self - 1);
  if (sl <= 0) snprintf(O.self, sizeof O.self, "%s", argv[0]);
  for (int i = 1; i < argc; i++) {
    const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int used;
    if (!strcmp(f, "--no-shrink")) {
      O.shrink = false;
      continue;
    }
    if (!strcmp(f, "--print")) {
      O.print = true;
      continue;
    }
    if (cfg_flag(&O.cfg, f, v, &used)) {
      append_cfg_arg(f);
      if (used) append_cfg_arg(v), i++;
      continue;
    }
    if (!strcmp(f, "--child")) O.child = true;
    else if (!strcmp(f, "--child-seeds") && i + 2 < argc) {
      O.seed_lo = atol(argv[i + 1]);
      O.seed_hi = atol(argv[i + 2]);
      i += 2;
    } else if (!strcmp(f, "--seeds") && v) {
      if (sscanf(v, "%ld-%ld", &O.seed_lo, &O.seed_hi) != 2) O.seed_lo = O.seed_hi = atol(v);
      i++;
    } else if (!strcmp(f, "--time") && v) O.time_limit = atof(v), i++;
    else if (!strcmp(f, "--per-proc") && v) O.per_proc = clampi(atol(v), 1, 100000), i++;
    else if (!strcmp(f, "--jobs") && v) O.jobs = clampi(atol(v), 1, 16), i++;
    else if (!strcmp(f, "--timeout") && v) O.timeout = atof(v), i++;
    else if (!strcmp(f, "--latency") && v) {
      if (sscanf(v, "%d-%d", &O.lat_lo, &O.lat_hi) != 2) O.lat_lo = O.lat_hi = atoi(v);
      if (O.lat_lo < 0) O.lat_lo = 0; /* 0: every op completes as soon as it is due */
      if (O.lat_hi < O.lat_lo) O.lat_hi = O.lat_lo;
      i++;
    } else if (!strcmp(f, "--out") && v) O.out = v, i++;
    else if (!strcmp(f, "--no-shrink")) O.shrink = false;
    else if (!strcmp(f, "--replay") && v) O.replay = v, i++;
    else usage();
  }
  if (O.cfg.concurrent) { /* per-thread counts: all of them must fit */
    if (O.cfg.streams * O.cfg.threads > FZ_MAXS) O.cfg.streams = FZ_MAXS / O.cfg.threads;
    if (O.cfg.events * O.cfg.threads > FZ_MAXE) O.cfg.events = FZ_MAXE / O.cfg.threads;
    if (O.cfg.slots * O.cfg.threads > FZ_MAXB) O.cfg.slots = FZ_MAXB / O.cfg.threads;
  }
  if (O.child) return child_main();
  if (O.print) {
    for (long seed = O.seed_lo; seed <= O.seed_hi; seed++) {
      fz_ops_t ops = {0};
      fz_generate((uint64_t)seed, &O.cfg, &ops);
      cfg_header(stdout, &O.cfg);
      printf("# seed %ld\n", seed);
      fz_ops_write(stdout, &ops);
      fz_ops_free(&ops);
    }
    return 0;
  }

  if (!getenv("PG_PRELOAD"))
    fprintf(stderr, "pgfuzz: PG_PRELOAD is not set: running without pinguard (every expected "
                    "report will be missing)\n");
  snprintf(g_logdir, sizeof g_logdir, "%s/pgfuzz.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(g_logdir)) {
    perror("mkdtemp");
    return 2;
  }
  mkdir(O.out, 0777);
  double t0 = now_s();
  if (O.replay) {
    cfg_from_header(O.replay, &O.cfg);
    const char *why = replay_once(O.replay);
    printf("%s: %s\n", O.replay, why ? why : "passed");
    return why ? 1 : 0;
  }
  if (O.time_limit > 0) {
    /* soak: consecutive blocks of seeds until the time is up */
    double stop = t0 + O.time_limit;
    long lo = O.seed_lo;
    while (now_s() < stop) {
      long hi = lo + (long)O.per_proc * O.jobs - 1;
      run_range(lo, hi, stop);
      lo = hi + 1;
    }
  } else {
    run_range(O.seed_lo, O.seed_hi, 0);
  }
  double t1 = now_s();
  g_ops_run = g_seeds_run * O.cfg.ops;
  char lat[48];
  if (O.lat_lo == O.lat_hi) snprintf(lat, sizeof lat, "%d us", O.lat_lo);
  else snprintf(lat, sizeof lat, "%d-%d us", O.lat_lo, O.lat_hi);
  printf("pgfuzz: %ld seeds (%d ops each, %d threads, %d streams%s, %s mode, device latency %s) "
         "in %.1f s: %d failed\n", g_seeds_run, O.cfg.ops, O.cfg.threads, O.cfg.streams,
         O.cfg.concurrent ? " per thread, concurrent" : "", O.cfg.mode_enforce ? "enforce" : "audit",
         lat, t1 - t0, g_nfailed);
  printf("pgfuzz: the passing seeds made %lu reports, each one checked against the model, and %lu "
         "ops required one\n", g_reports, g_required);
  fflush(stdout);
  /* The first three failures are analysed (reproduced, shrunk); every failure fails the run,
   * whether it replays or not: the model's verdict does not depend on timing. */
  for (int k = 0; k < g_nfailed && k < 3; k++)
    report_failure(g_failed_seeds[k], g_failed_from[k], g_failed_why[k]);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_logdir);
  if (system(cmd)) {
  }
  return g_nfailed ? 1 : 0;
}
