/* fz_exec.c: runs an op list under the preloaded pinguard and checks it against a model.
 *
 * The model is exact regardless of timing (README.md, "The model"):
 *  - Happens-before: vector clocks over streams, plus the host's clock (the application threads
 *    take turns in op-list order, so they are totally ordered among themselves). A query that
 *    answers success orders exactly what a sync would; its real answer is used. Whether the GPU
 *    has finished never matters: an access stays unordered until the program orders it.
 *  - The host's clock is known between two bounds: what the program's syncs taught (certain),
 *    and that joined with what every host function that may have started taught (pinguard's
 *    host learns a host function's place when it starts). A host function behind a closed gate
 *    (fz_gate.c, invisible to pinguard) has not started.
 *  - A report is allowed when every GPU access it names is, in the model, an access to the same
 *    bytes that the violating access is not ordered with by the certain clock (a false positive
 *    otherwise). A report is required when such an access is unordered even by the largest clock
 *    and pinguard can see the violation: for CPU accesses, on a page lying wholly inside the
 *    access, not let go after an earlier report (a false negative otherwise).
 *  - In enforce mode every device range is whole pages, so pinguard orders every conflict: each
 *    CPU read and every buffer's final bytes must equal program order's.
 * Several devices (--devices N): stream and event i belong to device i % N (counted per thread in
 * concurrent runs); each application thread has its own current device (SETDEV; a kernel launch
 * first makes its stream's device current, as CUDA requires); an event is recorded only on a
 * stream of its device; waits, queries and stream and event syncs work across devices, and a
 * device sync orders only the current device's streams.
 * Host functions run on stream workers: their CPU accesses are ordered after the stream's
 * earlier work and before its later work; their reports are checked for false positives only
 * (when they run, against the application threads' syncs, is timing). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <ucontext.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cuda_runtime_api.h>

#include "fz.h"
#include "fz_gate.h"
#include "simcuda_kernel.h"
#include "simcuda_ptsz.h"
#include "pinguard.h"

/* ---- the simulated kernel ------------------------------------------------------------------- */
/* kind 0: fill host[0,len) with val; 1: dev[0,len) = host; 2: host = dev. */
SIMCUDA_KERNEL(fz_kernel, sizeof(void *), sizeof(void *), sizeof(size_t), sizeof(int),
               sizeof(int)) {
  unsigned char *host = simcuda_dma(*(void **)launch->args[0]);
  unsigned char *dev = simcuda_dma(*(void **)launch->args[1]);
  size_t len = *(size_t *)launch->args[2];
  int val = *(int *)launch->args[3], kind = *(int *)launch->args[4];
  if (kind == 0) memset(host, val, len);
  else if (kind == 1) memcpy(dev, host, len);
  else memcpy(host, dev, len);
}

/* ---- model state ------------------------------------------------------------------------------ */
typedef struct vc {
  uint32_t c[FZ_MAXS];
} vc_t;

static void vc_join(vc_t *a, const vc_t *b) {
  for (int i = 0; i < FZ_MAXS; i++)
    if (b->c[i] > a->c[i]) a->c[i] = b->c[i];
}

enum { D_READ = 0, D_WRITE = 1, D_UNKNOWN = 2 };
static bool may_write(int dir) { return dir != D_READ; }

/* A device access as pinguard tracks it (one piece: a span inside one buffer). */
typedef struct dacc {
  int op;           /* index in the op list */
  int stream;
  uint32_t pos;     /* position on its stream */
  vc_t vc;          /* its clock (what precedes it) */
  uintptr_t lo, hi;
  size_t pitch, width; /* a pitched copy's side: rows of width bytes, pitch apart, from lo to hi
                          (pitch 0: every byte of [lo, hi)) */
  int dir;
  uint64_t buf;     /* buffer generation */
  bool live;        /* its buffer is still pinned */
  bool unguarded;   /* a CPU access's report named it: it guards its pages no more */
  uint64_t dsync0[FZ_MAXD]; /* --concurrent: other threads' device syncs, per device, done
                               before it was enqueued */
} dacc_t;

typedef struct hfn {
  int op, stream;
  uint32_t pos;
  vc_t vc;
  uint64_t gate;    /* the latest gate it waits behind: closed, it has not started */
  uintptr_t lo, hi;
  uint64_t buf;
} hfn_t;

typedef struct buf {
  bool alive;
  int how;
  bool read_only;       /* registered with cudaHostRegisterReadOnly: the device only reads it */
  unsigned char *p;
  size_t size;
  uint64_t gen;
  unsigned char *model;
} buf_t;

typedef struct event {
  bool recorded;
  vc_t vc;
  uint64_t gate;
  int stream;       /* where the latest record was made */
  uint32_t pos;     /* and its position there */
  bool waited;      /* a stream waits on the latest record */
} event_t;

/* A report parsed from pinguard's JSON log. */
#define MAXG 8
typedef struct rep {
  char kind[48];
  char what[32];     /* access.what */
  unsigned thread;   /* access.thread: pinguard's number of the violating thread */
  uintptr_t addr;
  size_t len;
  bool hostfn;
  unsigned ngpu, total;
  struct {
    uintptr_t addr, stream;
    size_t len;
    int device;      /* -1: not given */
  } g[MAXG];
} rep_t;

typedef struct hostfn_arg {
  unsigned char *p;
  size_t len;
} hostfn_arg_t;

/* The model of one application thread's world: all of it in turn-taking runs (one host clock,
 * shared), its own streams, events and buffers in --concurrent runs. */
typedef struct tmodel {
  vc_t host;
  dacc_t *d;
  size_t nd, capd;
  hfn_t *h;
  size_t nh, caph;
  hostfn_arg_t **hargs;
  size_t nhargs;
  rep_t q[64];     /* its reports, not yet checked (--concurrent) */
  size_t nq;
} tmodel_t;

static __thread tmodel_t *T;
static __thread int t_base_s, t_base_e, t_base_b; /* its first stream, event and slot */
static __thread int t_dev;                         /* its current device */
static __thread uint64_t t_opens0;   /* fz_gate_others_done() when the op began */
static __thread int t_app_thread; /* 1 + the application thread's index; 0 elsewhere */

static struct {
  tmodel_t tm[FZ_MAXT];
  /* Pinguard's number for each application thread, learned from a probe (each thread's
   * pinguard_release of a buffer a held copy reads); the probe's buffer while it runs. */
  _Atomic unsigned pgtid[FZ_MAXT];
  _Atomic uintptr_t probe[FZ_MAXT];
  size_t probed;                /* threads done probing */
  pthread_mutex_t logmu; /* the log reader (--concurrent) */
  const fz_cfg_t *cfg;
  const fz_ops_t *ops;
  cudaStream_t s[FZ_MAXS];
  vc_t svc[FZ_MAXS];
  uint64_t sgate[FZ_MAXS];
  cudaEvent_t e[FZ_MAXE];
  event_t ev[FZ_MAXE];
  unsigned char *dev[FZ_MAXS];
  /* Each stream's device scratch as program order says (legacy streams after the created
   * ones), allocated for the streams a seed has: FZ_MAXS of them would be 40 MiB to clear per
   * seed. */
  unsigned char (*devmodel)[FZ_DEVBYTES];
  buf_t b[FZ_MAXB];
  _Atomic uint64_t next_gen;
  /* the log */
  int logfd;
  off_t logoff;
  char pend[65536];
  size_t npend;
  rep_t *hrep; /* reports from host functions, checked at the end */
  size_t nhrep, caphrep;
  /* turn taking */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  size_t turn;
  bool failed;
  char *why;
  size_t whycap;
} M;

_Atomic unsigned long fz_stat_reports, fz_stat_required;

static bool g_trace; /* FZ_TRACE: each op and buffer address on stderr */

static pthread_mutex_t g_failmu = PTHREAD_MUTEX_INITIALIZER;

static void fail(const char *cls, int op, const char *fmt, ...) {
  pthread_mutex_lock(&g_failmu);
  if (M.failed) {
    pthread_mutex_unlock(&g_failmu);
    return;
  }
  M.failed = true;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  char line[160] = "";
  if (op >= 0) fz_op_format(&M.ops->v[op], line, sizeof line);
  snprintf(M.why, M.whycap, "%s op #%d [%s]: %s", cls, op, line, msg);
  pthread_mutex_unlock(&g_failmu);
}

/* ---- the log ---------------------------------------------------------------------------------- */
static const char *json_str(const char *s, const char *key, char *out, size_t cap) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":\"", key);
  const char *p = strstr(s, pat);
  if (!p) return NULL;
  p += strlen(pat);
  size_t n = 0;
  while (*p && *p != '"' && n + 1 < cap) out[n++] = *p++;
  out[n] = 0;
  return p;
}

static const char *json_num(const char *s, const char *key, uint64_t *v) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = strstr(s, pat);
  if (!p) return NULL;
  p += strlen(pat);
  if (*p == '"') p++;
  *v = strtoull(p, NULL, 0);
  return p;
}

static bool parse_report(const char *line, rep_t *r) {
  memset(r, 0, sizeof *r);
  if (!strstr(line, "\"type\":\"report\"")) return false;
  uint64_t v;
  json_str(line, "kind", r->kind, sizeof r->kind);
  if (json_num(line, "addr", &v)) r->addr = v;
  if (json_num(line, "len", &v)) r->len = v;
  const char *acc = strstr(line, "\"access\":{");
  const char *gpu = strstr(line, "\"gpu\":[");
  const char *tot = strstr(line, "\"gpu_total\":");
  if (!acc || !gpu || !tot) return false;
  json_str(acc, "what", r->what, sizeof r->what);
  if (json_num(acc, "thread", &v)) r->thread = (unsigned)v;
  const char *hf = strstr(acc, "fz_hostfn_touch");
  r->hostfn = hf && hf < gpu;
  if (json_num(tot, "gpu_total", &v)) r->total = (unsigned)v;
  const char *p = gpu;
  while (r->ngpu < MAXG) {
    const char *a = strstr(p, "\"direction\":");
    if (!a || a > tot) break;
    uint64_t addr = 0, len = 0, st = 0, dev = 0;
    json_num(a, "addr", &addr);
    json_num(a, "len", &len);
    const char *sp = json_num(a, "stream", &st);
    const char *dp = sp ? strstr(sp, "\"device\":") : NULL;
    const char *next = strstr(a + 1, "\"direction\":");
    bool has_dev = dp && (!next || dp < next) && json_num(dp, "device", &dev);
    r->g[r->ngpu].addr = addr, r->g[r->ngpu].len = len, r->g[r->ngpu].stream = st;
    r->g[r->ngpu].device = has_dev ? (int)dev : -1;
    r->ngpu++;
    p = sp ? sp : a + 1;
  }
  return true;
}

static void log_open(void) {
  if (M.logfd >= 0) return;
  const char *base = getenv("FZ_LOG");
  if (!base) return;
  char path[512];
  snprintf(path, sizeof path, "%s.%d", base, (int)getpid());
  M.logfd = open(path, O_RDONLY | O_CLOEXEC); /* pinguard makes it at its first report */
  M.logoff = 0;
}

static void hrep_push(const rep_t *r) {
  if (M.nhrep == M.caphrep) {
    M.caphrep = M.caphrep ? M.caphrep * 2 : 16;
    M.hrep = realloc(M.hrep, M.caphrep * sizeof *M.hrep);
    if (!M.hrep) abort();
  }
  M.hrep[M.nhrep++] = *r;
}

/* New complete report lines since the last call: those of host functions are kept for the end,
 * the others returned (at most cap). */
static void route(const rep_t *r, rep_t *out, size_t cap, size_t *n) {
  if (M.cfg->concurrent) {
    for (int t = 0; t < M.cfg->threads; t++) {
      tmodel_t *m = &M.tm[t];
      if (m != T && M.pgtid[t] && M.pgtid[t] == r->thread) {
        if (m->nq < sizeof m->q / sizeof *m->q) m->q[m->nq++] = *r;
        return;
      }
    }
  }
  if (*n < cap) out[(*n)++] = *r;
}

/* A probe's report (the thread's number learned), or not. */
static bool probe_report(const rep_t *r) {
  if (strcmp(r->kind, "release-during-device-access")) return false;
  for (int t = 0; t < M.cfg->threads; t++)
    if (M.probe[t] && r->addr == M.probe[t]) {
      M.pgtid[t] = r->thread;
      return true;
    }
  return false;
}

/* Made by a thread that is none of the application's: a host function on a stream worker. */
static bool from_worker(const rep_t *r) {
  if (r->hostfn) return true;
  if (M.probed < (size_t)M.cfg->threads) return false;
  for (int t = 0; t < M.cfg->threads; t++)
    if (!M.pgtid[t] || M.pgtid[t] == r->thread) return false;
  return true;
}

static size_t log_collect_locked(rep_t *out, size_t cap);
static size_t log_collect(rep_t *out, size_t cap) {
  if (!M.cfg->concurrent) return log_collect_locked(out, cap);
  pthread_mutex_lock(&M.logmu);
  size_t n = 0;
  for (; n < T->nq && n < cap; n++) out[n] = T->q[n];
  T->nq = 0;
  n += log_collect_locked(out + n, cap - n);
  pthread_mutex_unlock(&M.logmu);
  return n;
}

static size_t log_collect_locked(rep_t *out, size_t cap) {
  log_open();
  if (M.logfd < 0) return 0;
  size_t n = 0;
  for (;;) {
    ssize_t got = pread(M.logfd, M.pend + M.npend, sizeof M.pend - 1 - M.npend, M.logoff);
    if (got <= 0) break;
    M.logoff += got;
    M.npend += (size_t)got;
    M.pend[M.npend] = 0;
    char *start = M.pend, *nl;
    while ((nl = strchr(start, '\n'))) {
      *nl = 0;
      rep_t r;
      if (parse_report(start, &r) && !probe_report(&r)) {
        if (from_worker(&r)) {
          /* Its pages are let go only while it runs: it protects them again when it returns. */
          r.hostfn = true;
          hrep_push(&r);
        } else {
          route(&r, out, cap, &n);
        }
      }
      start = nl + 1;
    }
    M.npend -= (size_t)(start - M.pend);
    memmove(M.pend, start, M.npend);
    if (M.npend >= sizeof M.pend - 1) M.npend = 0; /* a line too long to be ours */
  }
  return n;
}

/* ---- model helpers ------------------------------------------------------------------------- */
/* Certainly ordered before the host: the program's own syncs and successful queries say so. */
static bool hb_before_host(const dacc_t *d) { return T->host.c[d->stream] >= d->pos; }

static bool pending(uint64_t gate, uint64_t opened) { return gate > opened; }

/* ---- the host's clock at its largest -----------------------------------------------------------
 * pinguard's host clock is one for the process. It learns what the program's syncs and
 * successful queries teach (the model's T->host: certain), and also, at a time the program does
 * not fix, a host function's place in its stream when the function starts, and in --concurrent
 * runs whatever another thread's device sync covered. A report is required only for an access
 * that even the largest clock leaves unordered. */

/* Device syncs per device, by all threads and by this one (--concurrent): begun before the call
 * (before pinguard's prepare snapshots the streams), done after it. */
static _Atomic uint64_t g_dsync_begun[FZ_MAXD], g_dsync_done[FZ_MAXD];
static __thread uint64_t t_dsync_begun[FZ_MAXD], t_dsync_done[FZ_MAXD];
static uint64_t others_dsync_done(int dev) { return g_dsync_done[dev] - t_dsync_done[dev]; }
static uint64_t others_dsync_begun(int dev) { return g_dsync_begun[dev] - t_dsync_begun[dev]; }

static int sdev(int s);
static int ndevices(void);

/* The gates that may be open now, as far as this op's requirements go: those opened when it
 * began, or (--concurrent) all, when another thread's opening may have overlapped it. */
static uint64_t op_opened(uint64_t opened) {
  if (M.cfg->concurrent && fz_gate_others_begun() != t_opens0) return UINT64_MAX;
  return opened;
}

/* The largest clock the host may have: the certain one, joined with the clock of every host
 * function that may have started (none behind a gate still closed: `opened`). */
static void host_most(vc_t *out, uint64_t opened) {
  *out = T->host;
  for (size_t k = 0; k < T->nh; k++)
    if (!pending(T->h[k].gate, opened)) vc_join(out, &T->h[k].vc);
}

/* --concurrent: whether another thread's device sync may have ordered d. Such a sync teaches
 * the host every clock of its device's streams: d's own, and any other (this thread's) that an
 * event wait has made cover d. Only one that began after d was enqueued can have seen it. */
static bool others_may_order(const dacc_t *d) {
  if (!M.cfg->concurrent) return false;
  for (int dev = 0; dev < ndevices(); dev++) {
    if (others_dsync_begun(dev) == d->dsync0[dev]) continue;
    if (dev == sdev(d->stream)) return true;
    for (int s = t_base_s; s < t_base_s + M.cfg->streams; s++)
      if (sdev(s) == dev && M.svc[s].c[d->stream] >= d->pos) return true;
  }
  return false;
}

/* Unordered with the host even by its largest clock `most`, and by no other thread's sync. */
static bool surely_unordered(const dacc_t *d, const vc_t *most) {
  return most->c[d->stream] < d->pos && !others_may_order(d);
}

static bool is_legacy(int s);
static int nstreams_created(void);
/* Whether created stream s is blocking (--blocking: those of odd index). */
static bool sblocking(int s) { return M.cfg->blocking && !is_legacy(s) && s % 2 == 1; }

/* Where ops use the legacy stream (fz_legacy) and some streams are blocking: the legacy
 * stream's implicit order joined into v, the clock of an op enqueued now on stream s. An op on
 * the legacy stream comes after the work already on its device's blocking streams; an op on a
 * blocking stream after the work already on its device's legacy stream. */
static void legacy_join(vc_t *v, int s) {
  if (!fz_legacy(M.cfg) || !M.cfg->blocking) return;
  if (is_legacy(s)) {
    for (int b = 0; b < nstreams_created(); b++)
      if (sblocking(b) && sdev(b) == sdev(s)) vc_join(v, &M.svc[b]);
  } else if (sblocking(s)) {
    vc_join(v, &M.svc[nstreams_created() + sdev(s)]);
  }
}

/* What a synchronize of stream s (or a query that finds it done) covers: its work, and on the
 * legacy stream its device's blocking streams' work too (as an H200 does, though CUDA's text
 * promises only the stream's own: bench/gpu/legacy_order.cu). */
static vc_t legacy_covers(int s) {
  vc_t v = M.svc[s];
  if (is_legacy(s)) legacy_join(&v, s);
  return v;
}

/* Ordered before an op enqueued now on stream s, given the host's clock `host`. */
static bool ordered_before_stream_by(const dacc_t *d, int s, const vc_t *host) {
  if (d->stream == s) return true;
  vc_t v = M.svc[s];
  vc_join(&v, host);
  legacy_join(&v, s);
  return v.c[d->stream] >= d->pos;
}
static bool ordered_before_stream(const dacc_t *d, int s) {
  return ordered_before_stream_by(d, s, &T->host);
}

static bool dacc_unordered_with_hfn(const dacc_t *d, const hfn_t *h) {
  if (h->vc.c[d->stream] >= d->pos) return false; /* d before h */
  if (d->vc.c[h->stream] >= h->pos) return false; /* h before d */
  return true;
}

static bool overlaps(uintptr_t a, uintptr_t b, uintptr_t c, uintptr_t d) { return a < d && c < b; }

/* The bytes a copy's host side touches, exactly: [lo, hi), or a pitched side's rows of width
 * bytes, pitch apart, from lo (its hull's end hi is the last row's end). */
typedef struct touch {
  uintptr_t lo, hi;
  size_t pitch, width;
} touch_t;

/* Whether t touches a byte of [a, b). A few rows: a walk. */
static bool touch_meets(const touch_t *t, uintptr_t a, uintptr_t b) {
  if (!t->pitch) return overlaps(t->lo, t->hi, a, b);
  for (uintptr_t r = t->lo; r < t->hi; r += t->pitch)
    if (overlaps(r, r + t->width, a, b)) return true;
  return false;
}

/* Whether t and u touch a common byte. */
static bool touches_overlap(const touch_t *t, const touch_t *u) {
  if (!t->pitch) return touch_meets(u, t->lo, t->hi);
  for (uintptr_t r = t->lo; r < t->hi; r += t->pitch)
    if (touch_meets(u, r, r + t->width)) return true;
  return false;
}

/* Whether every byte of [a, b) is touched by t (within one row: rows never abut). */
static bool touch_covers(const touch_t *t, uintptr_t a, uintptr_t b) {
  if (!t->pitch) return t->lo <= a && b <= t->hi;
  for (uintptr_t r = t->lo; r < t->hi; r += t->pitch)
    if (r <= a && b <= r + t->width) return true;
  return false;
}

static touch_t dacc_touch(const struct dacc *d) {
  return (touch_t){d->lo, d->hi, d->pitch, d->width};
}

static dacc_t *dacc_push(void) {
  if (T->nd == T->capd) {
    T->capd = T->capd ? T->capd * 2 : 64;
    T->d = realloc(T->d, T->capd * sizeof *T->d);
    if (!T->d) abort();
  }
  dacc_t *d = &T->d[T->nd++];
  memset(d, 0, sizeof *d);
  return d;
}

static int stream_index(uintptr_t stream, int device);

/* After a report of a CPU access (audit, and enforce once it has waited for what still ran), the
 * GPU accesses the report names stop guarding their pages (pinguard lets go exactly the accesses
 * its fault found, which are the ones it names); they stay unordered for every other check, and
 * the pages stay protected for every other access. */
static void release_pages_of(const rep_t *r) {
  for (unsigned g = 0; g < r->ngpu; g++) {
    int si = stream_index(r->g[g].stream, r->g[g].device);
    for (size_t k = 0; k < T->nd; k++) {
      dacc_t *d = &T->d[k];
      if (d->live && d->stream == si && d->lo == r->g[g].addr && d->hi - d->lo == r->g[g].len)
        d->unguarded = true;
    }
  }
}


/* Does gpu entry g of a report name a model access satisfying `ok`? */
typedef bool (*acc_pred)(const dacc_t *d, const void *ctx);
/* The device of stream s and of event e (global indices). Legacy streams (fz_legacy()) come
 * after the created ones, one per device: index nstreams + d is device d's. */
static int ndevices(void) { return M.cfg->devices > 1 ? M.cfg->devices : 1; }
static int nstreams_created(void) {
  return M.cfg->streams * (M.cfg->concurrent ? M.cfg->threads : 1);
}
static bool is_legacy(int s) { return s >= nstreams_created(); }
static int sdev(int s) {
  return is_legacy(s) ? s - nstreams_created() : (s % M.cfg->streams) % ndevices();
}
static int edev(int e) { return (e % M.cfg->events) % ndevices(); }
/* A report names a stream by its handle and device; the legacy handle is every device's. */
static int stream_index(uintptr_t stream, int device) {
  if (stream == (uintptr_t)cudaStreamLegacy)
    return fz_legacy(M.cfg) && device >= 0 && device < ndevices() ? nstreams_created() + device
                                                                   : -1;
  for (int k = 0; k < nstreams_created(); k++)
    if (M.s[k] && (uintptr_t)M.s[k] == stream) return k;
  return -1;
}

static bool gpu_entry_valid(uintptr_t addr, size_t len, uintptr_t stream, int device,
                            acc_pred ok, const void *ctx) {
  for (size_t i = 0; i < T->nd; i++) {
    const dacc_t *d = &T->d[i];
    uintptr_t h = is_legacy(d->stream) ? (uintptr_t)cudaStreamLegacy : (uintptr_t)M.s[d->stream];
    if (d->lo == addr && d->hi - d->lo == len && h == stream &&
        (device < 0 || sdev(d->stream) == device) &&
        ok(d, ctx))
      return true;
  }
  return false;
}

static size_t count_matching(acc_pred ok, const void *ctx) {
  size_t n = 0;
  for (size_t i = 0; i < T->nd; i++)
    if (ok(&T->d[i], ctx)) n++;
  return n;
}

/* Checks the reports of one op: each must be of an allowed kind and name only allowed accesses
 * (total included); `must` says one is required. */
typedef struct verdict {
  const char *kind;           /* the report kind this op may give */
  acc_pred ok;                /* which model accesses a report may name */
  const void *ctx;
  bool by_addr;               /* ctx is per-report: set from the report's addr (CPU pages) */
} verdict_t;

/* ---- CPU accesses ------------------------------------------------------------------------- */
__attribute__((noinline)) void fz_cpu_touch(unsigned char *p, size_t len, int write, int val);
__attribute__((noinline)) void fz_cpu_touch(unsigned char *p, size_t len, int write, int val) {
  volatile unsigned char *q = p;
  if (write) {
    for (size_t i = 0; i < len; i++) q[i] = (unsigned char)val;
  } else {
    unsigned s = 0;
    for (size_t i = 0; i < len; i++) s += q[i];
    (void)s;
  }
}

__attribute__((noinline)) void fz_hostfn_touch(unsigned char *p, size_t len);
__attribute__((noinline)) void fz_hostfn_touch(unsigned char *p, size_t len) {
  volatile unsigned char *q = p;
  unsigned s = 0;
  for (size_t i = 0; i < len; i++) s += q[i];
  (void)s;
}

static void CUDART_CB hostfn_body(void *user) {
  hostfn_arg_t *a = user;
  fz_hostfn_touch(a->p, a->len);
}


typedef struct cpu_ctx {
  const buf_t *b;
  uintptr_t page;
  bool write;
} cpu_ctx_t;

static bool cpu_ok(const dacc_t *d, const void *vctx) {
  const cpu_ctx_t *c = vctx;
  touch_t t = dacc_touch(d);
  return d->live && d->buf == c->b->gen && touch_meets(&t, c->page, c->page + FZ_PAGE) &&
         (c->write || may_write(d->dir)) && !hb_before_host(d);
}

/* A host function that may be running now (not behind a closed gate, not known complete). */
static bool hfn_may_run(const hfn_t *h, uint64_t opened) {
  return !pending(h->gate, opened) && T->host.c[h->stream] < h->pos;
}

/* Whether a running host function may have let the CPU through page pg of buffer b: a fault of
 * its opens the pages it touches and those of every access it met there, until it returns. */
static bool hfn_may_open(const buf_t *b, uintptr_t pg, uint64_t opened) {
  for (size_t k = 0; k < T->nh; k++) {
    const hfn_t *h = &T->h[k];
    if (h->buf != b->gen || !hfn_may_run(h, opened)) continue;
    uintptr_t lo = h->lo & ~(uintptr_t)(FZ_PAGE - 1);
    uintptr_t hi = (h->hi + FZ_PAGE - 1) & ~(uintptr_t)(FZ_PAGE - 1);
    if (overlaps(lo, hi, pg, pg + FZ_PAGE)) return true;
    for (size_t j = 0; j < T->nd; j++) {
      const dacc_t *d = &T->d[j];
      if (d->live && d->buf == b->gen && overlaps(d->lo, d->hi, lo, hi) &&
          overlaps(d->lo, d->hi, pg, pg + FZ_PAGE))
        return true;
    }
  }
  return false;
}

/* Where a GPU access named in a report comes from, in the model's terms. */
static void describe_access(uintptr_t addr, size_t len, uintptr_t stream, char *out, size_t cap) {
  int si = -1;
  for (int k = 0; k < FZ_MAXS; k++)
    if (M.s[k] && (uintptr_t)M.s[k] == stream) si = k;
  int owner = M.cfg->concurrent && si >= 0 ? si / M.cfg->streams : 0;
  const char *state = "the model has no such access";
  int op = -1;
  if (si >= 0) {
    tmodel_t *m = &M.tm[owner];
    for (size_t k = 0; k < m->nd; k++) {
      const dacc_t *d = &m->d[k];
      if (d->lo == addr && d->hi - d->lo == len && d->stream == si) {
        op = d->op;
        state = !d->live                            ? "its buffer was unpinned since"
                : m->host.c[d->stream] >= d->pos    ? "its thread's host has synchronized with it"
                                                    : "it overlaps, but not this op's bytes";
      }
    }
  }
  snprintf(out, cap, "stream %d%s%d, op #%d: %s", si, M.cfg->concurrent ? " of thread " : "",
           M.cfg->concurrent ? owner : 0, op, state);
}

/* ---- the ops ------------------------------------------------------------------------------- */
static void check_reports(int op, const rep_t *r, size_t n, const char *kind, acc_pred ok,
                          void *ctx, uintptr_t *page, uintptr_t span_lo, size_t span_len,
                          bool must, const char *must_why) {
  for (size_t i = 0; i < n; i++) {
    if (strcmp(r[i].kind, kind) != 0) {
      fail("false-positive", op, "unexpected %s report at 0x%lx (%s by pinguard's T%u)",
           r[i].kind, (unsigned long)r[i].addr, r[i].what, r[i].thread);
      return;
    }
    if (page) {
      *page = r[i].addr & ~(uintptr_t)(FZ_PAGE - 1);
    } else if (span_len && (r[i].addr != span_lo || r[i].len != span_len)) {
      continue; /* another span's report (checked with that span) */
    }
    for (unsigned g = 0; g < r[i].ngpu; g++) {
      if (!gpu_entry_valid(r[i].g[g].addr, r[i].g[g].len, r[i].g[g].stream, r[i].g[g].device,
                           ok, ctx)) {
        char where[200];
        describe_access(r[i].g[g].addr, r[i].g[g].len, r[i].g[g].stream, where, sizeof where);
        fail("false-positive", op,
             "%s names the access of %zu bytes at 0x%lx on stream 0x%lx, which the model "
             "orders before this op (or does not have): %s",
             kind, r[i].g[g].len, (unsigned long)r[i].g[g].addr,
             (unsigned long)r[i].g[g].stream, where);
        return;
      }
      int si = stream_index(r[i].g[g].stream, r[i].g[g].device);
      if (si >= 0 && r[i].g[g].device != sdev(si)) {
        fail("false-positive", op, "%s names the access on stream %d with device %d; it is %d's",
             kind, si, r[i].g[g].device, sdev(si));
        return;
      }
    }
    size_t allowed = count_matching(ok, ctx);
    if (r[i].total > allowed) {
      fail("false-positive", op, "%s counts %u in-flight accesses, the model allows %zu", kind,
           r[i].total, allowed);
      return;
    }
  }
  fz_stat_reports += n;
  if (must) fz_stat_required++;
  if (must) {
    bool seen = false;
    for (size_t i = 0; i < n; i++)
      if (!span_len || (r[i].addr == span_lo && r[i].len == span_len)) seen = true;
    if (!seen) fail("false-negative", op, "expected a %s report: %s", kind, must_why);
  }
}

static cudaStream_t S(int i) { return is_legacy(i) ? cudaStreamLegacy : M.s[i]; }

/* An op's stream argument: one of the thread's streams, or (fz_legacy) the current device's
 * legacy stream. */
static int sidx(int arg) {
  if (fz_legacy(M.cfg)) {
    int v = arg % (M.cfg->streams + 1);
    return v == M.cfg->streams ? nstreams_created() + t_dev : v + t_base_s;
  }
  return arg % M.cfg->streams + t_base_s;
}

/* Before an enqueue on stream s: the host's knowledge flows into the stream, and the legacy
 * stream's implicit order (legacy_join). */
static uint32_t stream_advance(int s) {
  vc_join(&M.svc[s], &T->host);
  legacy_join(&M.svc[s], s);
  return ++M.svc[s].c[s];
}

static void op_alloc(int i, const fz_op_t *o) {
  buf_t *b = &M.b[o->a[0] % M.cfg->slots + t_base_b];
  if (b->alive) return;
  size_t size = (size_t)(o->a[1] < 1 ? 1 : o->a[1] > FZ_MAXPAGES ? FZ_MAXPAGES : o->a[1]) * FZ_PAGE;
  void *p = NULL;
  int how = o->a[2] % 3;
  cudaError_t err;
  unsigned char fillv = (unsigned char)(0x30 + i);
  if (how == 0) {
    err = cudaHostAlloc(&p, size, cudaHostAllocDefault);
    if (err == cudaSuccess) memset(p, fillv, size);
  } else {
    if (how == 1) {
      if (posix_memalign(&p, FZ_PAGE, size)) p = NULL;
    } else {
      p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) p = NULL;
    }
    if (!p) {
      fail("error", i, "out of memory");
      return;
    }
    memset(p, fillv, size);
    err = cudaHostRegister(p, size, (o->a[3] & 1) ? cudaHostRegisterReadOnly
                                                   : cudaHostRegisterDefault);
  }
  if (err != cudaSuccess) {
    fail("error", i, "pinning failed: %s", cudaGetErrorName(err));
    return;
  }
  b->alive = true;
  b->how = how;
  b->read_only = how != 0 && (o->a[3] & 1);
  b->p = p;
  b->size = size;
  b->gen = ++M.next_gen;
  if (g_trace)
    fprintf(stderr, "pgfuzz:   slot %d = [%p, %p) (%s)\n", o->a[0] % M.cfg->slots, p,
            (void *)((char *)p + size), how == 0 ? "cudaHostAlloc" : how == 1 ? "malloc" : "mmap");
  if (g_trace && b->read_only) fprintf(stderr, "pgfuzz:   (registered read-only)\n");
  b->model = malloc(size);
  memset(b->model, fillv, size);
}

typedef struct free_ctx {
  uint64_t gen;
} free_ctx_t;
static bool free_ok(const dacc_t *d, const void *vctx) {
  const free_ctx_t *c = vctx;
  return d->live && d->buf == c->gen && !hb_before_host(d);
}

static void buf_release(buf_t *b) {
  if (b->how == 0) {
    cudaFreeHost(b->p);
  } else {
    cudaHostUnregister(b->p);
    if (b->how == 1) free(b->p);
    else munmap(b->p, b->size);
  }
}

static void op_free(int i, const fz_op_t *o, uint64_t opened) {
  buf_t *b = &M.b[o->a[0] % M.cfg->slots + t_base_b];
  if (!b->alive) return;
  free_ctx_t c = {b->gen};
  cudaError_t err;
  if (b->how == 0) {
    err = cudaFreeHost(b->p);
  } else {
    err = cudaHostUnregister(b->p);
  }
  rep_t r[16];
  size_t n = log_collect(r, 16);
  /* Required: an access to the buffer that even the largest host clock leaves unordered. */
  vc_t most;
  host_most(&most, op_opened(opened));
  bool must = false;
  char why[160] = "";
  for (size_t k = 0; k < T->nd && !must; k++)
    if (free_ok(&T->d[k], &c) && surely_unordered(&T->d[k], &most)) {
      must = true;
      snprintf(why, sizeof why, "op #%d's access to the buffer is unordered", T->d[k].op);
    }
  const char *kind = b->how == 0 ? "free-during-device-access" : "unregister-during-device-access";
  check_reports(i, r, n, kind, free_ok, &c, NULL, 0, 0, must, why);
  if (b->how == 1) free(b->p);
  else if (b->how == 2) munmap(b->p, b->size);
  if (err != cudaSuccess) fail("error", i, "unpinning failed: %s", cudaGetErrorName(err));
  for (size_t k = 0; k < T->nd; k++)
    if (T->d[k].buf == b->gen) T->d[k].live = false;
  b->alive = false;
  free(b->model);
  b->model = NULL;
}

/* A batch copy's srcAccessOrder (cudaMemcpySrcAccessOrder*, the op's api argument / 5). */
enum { ORDER_STREAM = 0, ORDER_DURING_CALL = 1, ORDER_ANY = 2 };

typedef struct span {
  uintptr_t lo, hi;
  int dir;
  int order; /* a batch source's ORDER_*: DURING_CALL and ANY are not ordered after their own
                stream's earlier work (like a host read), and DURING_CALL is over after the call */
  size_t pitch, width; /* a pitched copy's side (touch_t); 0: every byte */
} span_t;

typedef struct conf_ctx {
  uint64_t gen;
  span_t sp;
  int stream;
} conf_ctx_t;
static bool conf_ok(const dacc_t *d, const void *vctx) {
  const conf_ctx_t *c = vctx;
  touch_t dt = dacc_touch(d), st = {c->sp.lo, c->sp.hi, c->sp.pitch, c->sp.width};
  if (!d->live || d->buf != c->gen || !touches_overlap(&dt, &st)) return false;
  /* A source read out of stream order races every device write the host has not seen end. */
  if (c->sp.order != ORDER_STREAM) return may_write(d->dir) && !hb_before_host(d);
  return (may_write(d->dir) || may_write(c->sp.dir)) && !ordered_before_stream(d, c->stream);
}

/* A report required for span c: access d conflicts with it even by the host's largest clock. */
static bool conf_must(const dacc_t *d, const conf_ctx_t *c, const vc_t *most) {
  if (!conf_ok(d, c) || others_may_order(d)) return false;
  if (c->sp.order != ORDER_STREAM) return most->c[d->stream] < d->pos;
  return !ordered_before_stream_by(d, c->stream, most);
}

/* The checks and bookkeeping around one enqueue with host spans sp[0..n) on stream s. */
typedef struct enq {
  int op, s;
  buf_t *b;
  span_t sp[4];
  int n;
  uint64_t opened;  /* the gates open when the op began */
  uint64_t dsync0[FZ_MAXD]; /* --concurrent: other threads' device syncs done by then */
} enq_t;

static void enq_before(enq_t *q, uint64_t opened) {
  q->opened = opened;
  for (int dev = 0; dev < FZ_MAXD; dev++)
    q->dsync0[dev] = M.cfg->concurrent ? others_dsync_done(dev) : 0;
}

static void enq_after(enq_t *q, cudaError_t err) {
  rep_t r[32];
  size_t n = log_collect(r, 32);
  uint64_t opened = op_opened(q->opened);
  for (int k = 0; k < q->n && !M.failed; k++) {
    conf_ctx_t c = {q->b->gen, q->sp[k], q->s};
    vc_t most;
    host_most(&most, opened);
    bool must = false, candidate = false;
    int culprit = -1;
    for (size_t j = 0; j < T->nd; j++) {
      if (conf_ok(&T->d[j], &c)) candidate = true;
      if (!must && conf_must(&T->d[j], &c, &most)) must = true, culprit = T->d[j].op;
    }
    char why[160];
    snprintf(why, sizeof why,
             q->sp[k].order == ORDER_STREAM
                 ? "op #%d's access to the same bytes on another stream is unordered with it"
                 : "op #%d's device write of a batch source read out of stream order is unordered",
             culprit);
    check_reports(q->op, r, n, "device-access-conflict", conf_ok, &c, NULL, q->sp[k].lo,
                  q->sp[k].hi - q->sp[k].lo, must, why);
    /* In enforce mode this span's check may have waited, which opens the gates: the later
     * spans' host functions may have started. */
    if (candidate && M.cfg->mode_enforce) opened = UINT64_MAX;
  }
  if (err != cudaSuccess) {
    fail("error", q->op, "enqueue failed: %s", cudaGetErrorName(err));
    return;
  }
  uint32_t pos = stream_advance(q->s);
  for (int k = 0; k < q->n; k++) {
    if (q->sp[k].order == ORDER_DURING_CALL) continue; /* read by the call: nothing in flight */
    dacc_t *d = dacc_push();
    d->op = q->op;
    d->stream = q->s;
    d->pos = pos;
    d->vc = M.svc[q->s];
    d->lo = q->sp[k].lo;
    d->hi = q->sp[k].hi;
    d->pitch = q->sp[k].pitch;
    d->width = q->sp[k].width;
    d->dir = q->sp[k].dir;
    d->buf = q->b->gen;
    d->live = true;
    memcpy(d->dsync0, q->dsync0, sizeof d->dsync0);
  }
}

static bool range_ok(const buf_t *b, long off, long len) {
  return b->alive && off >= 0 && len > 0 && (size_t)(off + len) <= b->size;
}

static void op_copy(int i, const fz_op_t *o, uint64_t opened) {
  int d2h = o->a[0] & 1, s = sidx(o->a[1]), api = o->a[6] % 5;
  buf_t *b = &M.b[o->a[2] % M.cfg->slots + t_base_b];
  long hoff = o->a[3], doff = o->a[4], len = o->a[5];
  /* A 2D or 3D copy: `rows` host rows of len/2 bytes at a pitch of len (a gap of len/2 after
   * each row but the last), packed on the device. */
  long rows = api >= 3 ? 2 + (o->a[6] / 5) % 3 : 1;
  long hull = api >= 3 ? (rows - 1) * len + len / 2 : len;
  long dlen = api >= 3 ? rows * (len / 2) : len;
  if (!range_ok(b, hoff, hull) || doff < 0 || doff + dlen > FZ_DEVBYTES) return;
  if (d2h && b->read_only) return; /* the device cannot write a read-only registration */
  if (api >= 2 && (len < 2 || len % 2)) api = 0;
  if (api == 2 && is_legacy(s)) api = 0; /* the batch calls refuse the legacy stream */
  /* A host->device batch's srcAccessOrder (a device source is read as its order says too, but
   * device memory is not pinguard's: the model keeps those in stream order). */
  int order = api == 2 && !d2h ? (o->a[6] / 5) % 3 : ORDER_STREAM;
  unsigned char *h = b->p + hoff, *dv = M.dev[s] + doff;
  enq_t q = {.op = i, .s = s, .b = b};
  int dir = d2h ? D_WRITE : D_READ;
  if (api == 2) {
    q.n = 2;
    q.sp[0] = (span_t){(uintptr_t)h, (uintptr_t)h + (size_t)len / 2, dir, order, 0, 0};
    q.sp[1] = (span_t){(uintptr_t)h + (size_t)len / 2, (uintptr_t)h + (size_t)len, dir, order, 0,
                       0};
  } else {
    q.n = 1;
    q.sp[0] = (span_t){(uintptr_t)h, (uintptr_t)h + (size_t)hull, dir, ORDER_STREAM, 0, 0};
    if (api >= 3) q.sp[0].pitch = (size_t)len, q.sp[0].width = (size_t)len / 2;
  }
  enq_before(&q, opened);
  cudaError_t err;
  enum cudaMemcpyKind kind = d2h ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice;
  size_t w = (size_t)len / 2;
  switch (api) {
    case 0: err = d2h ? cudaMemcpyAsync(h, dv, (size_t)len, kind, S(s))
                      : cudaMemcpyAsync(dv, h, (size_t)len, kind, S(s)); break;
    case 1: err = d2h ? cudaMemcpyAsync_ptsz(h, dv, (size_t)len, kind, S(s))
                      : cudaMemcpyAsync_ptsz(dv, h, (size_t)len, kind, S(s)); break;
    case 2: {
      void *dsts[2], *srcs[2];
      size_t sizes[2] = {w, w};
      for (int k = 0; k < 2; k++) {
        dsts[k] = d2h ? (void *)(h + k * w) : (void *)(dv + k * w);
        srcs[k] = d2h ? (void *)(dv + k * w) : (void *)(h + k * w);
      }
      struct cudaMemcpyAttributes attr;
      memset(&attr, 0, sizeof attr);
      attr.srcAccessOrder = order == ORDER_DURING_CALL ? cudaMemcpySrcAccessOrderDuringApiCall
                            : order == ORDER_ANY       ? cudaMemcpySrcAccessOrderAny
                                                       : cudaMemcpySrcAccessOrderStream;
      size_t idx = 0;
      err = (i & 1) ? cudaMemcpyBatchAsync(dsts, (const void *const *)srcs, sizes, 2, &attr, &idx, 1, S(s))
                    : cudaMemcpyBatchAsync_ptsz(dsts, (const void *const *)srcs, sizes, 2, &attr,
                                                &idx, 1, S(s));
      break;
    }
    case 3: /* host rows of w bytes at a pitch of len; device rows packed */
      err = d2h ? cudaMemcpy2DAsync(h, (size_t)len, dv, w, w, (size_t)rows, kind, S(s))
                : cudaMemcpy2DAsync(dv, w, h, (size_t)len, w, (size_t)rows, kind, S(s));
      break;
    default: {
      struct cudaMemcpy3DParms p;
      memset(&p, 0, sizeof p);
      struct cudaPitchedPtr hp = {.ptr = h, .pitch = (size_t)len, .xsize = w,
                                  .ysize = (size_t)rows};
      struct cudaPitchedPtr dp = {.ptr = dv, .pitch = w, .xsize = w, .ysize = (size_t)rows};
      p.srcPtr = d2h ? dp : hp;
      p.dstPtr = d2h ? hp : dp;
      p.extent = (struct cudaExtent){.width = w, .height = (size_t)rows, .depth = 1};
      p.kind = kind;
      err = (i & 1) ? cudaMemcpy3DAsync(&p, S(s)) : cudaMemcpy3DAsync_ptsz(&p, S(s));
      break;
    }
  }
  enq_after(&q, err);
  if (err != cudaSuccess) return;
  /* data, in program order */
  unsigned char *hm = b->model + hoff, *dm = M.devmodel[s] + doff;
  if (api >= 3) {
    for (long row = 0; row < rows; row++) {
      if (d2h) memcpy(hm + row * len, dm + row * (long)w, w);
      else memcpy(dm + row * (long)w, hm + row * len, w);
    }
  } else if (d2h) {
    memcpy(hm, dm, (size_t)len);
  } else {
    memcpy(dm, hm, (size_t)len);
  }
}

/* A kernel runs on the current device: before op i launches one on stream s, its stream's
 * device is made current. False (op i failed) when it cannot be. */
static bool to_stream_device(int i, int s) {
  if (t_dev == sdev(s)) return true;
  cudaError_t err = cudaSetDevice(sdev(s));
  if (err != cudaSuccess) {
    fail("error", i, "cudaSetDevice failed: %s", cudaGetErrorName(err));
    return false;
  }
  t_dev = sdev(s);
  return true;
}

static void op_kern(int i, const fz_op_t *o, uint64_t opened) {
  int kind = o->a[0] % 3, s = sidx(o->a[1]), val = o->a[6] & 0xff;
  int api = (o->a[6] >> 8) % 3;
  buf_t *b = &M.b[o->a[2] % M.cfg->slots + t_base_b];
  long hoff = o->a[3], doff = o->a[4], len = o->a[5];
  if (!range_ok(b, hoff, len) || doff < 0 || doff + len > FZ_DEVBYTES) return;
  if (b->read_only && kind != 1) return; /* only reading kernels may touch read-only memory */
  unsigned char *h = b->p + hoff, *dv = M.dev[s] + doff;
  /* pinguard sees a host pointer parameter: unknown direction, up to the region's end (a read
   * in a read-only registration, which the device cannot write) */
  enq_t q = {.op = i, .s = s, .b = b, .n = 1};
  q.sp[0] = (span_t){(uintptr_t)h, (uintptr_t)b->p + b->size, b->read_only ? D_READ : D_UNKNOWN,
                     ORDER_STREAM, 0, 0};
  enq_before(&q, opened);
  size_t n = (size_t)len;
  void *args[] = {&h, &dv, &n, &val, &kind};
  cudaError_t err;
  if (!to_stream_device(i, s)) return;
  if (api == 0) {
    err = cudaLaunchKernel((const void *)fz_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, S(s));
  } else if (api == 1) {
    err = cudaLaunchKernel_ptsz((const void *)fz_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0,
                                S(s));
  } else {
    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDim = (dim3){1, 1, 1};
    cfg.blockDim = (dim3){1, 1, 1};
    cfg.stream = S(s);
    err = cudaLaunchKernelExC(&cfg, (const void *)fz_kernel, args);
  }
  enq_after(&q, err);
  if (err != cudaSuccess) return;
  unsigned char *hm = b->model + hoff, *dm = M.devmodel[s] + doff;
  if (kind == 0) memset(hm, val, n);
  else if (kind == 1) memcpy(dm, hm, n);
  else memcpy(hm, dm, n);
}

/* An op of stream s on device bytes only (a kernel between two device ranges, or a
 * device-to-device copy): pinguard tracks nothing, and the legacy stream's implicit order places
 * it all the same. */
static void op_devop(int i, const fz_op_t *o) {
  int s = sidx(o->a[0]), api = o->a[1] % 2;
  long src = o->a[2], dst = o->a[3], len = o->a[4];
  if (src < 0 || dst < 0 || len <= 0 || src + len > FZ_DEVBYTES || dst + len > FZ_DEVBYTES ||
      (src < dst + len && dst < src + len))
    return;
  unsigned char *from = M.dev[s] + src, *to = M.dev[s] + dst;
  cudaError_t err;
  if (api == 0) {
    if (!to_stream_device(i, s)) return;
    size_t n = (size_t)len;
    int val = 0, kind = 1; /* dev = "host": here another device range */
    void *args[] = {&from, &to, &n, &val, &kind};
    err = cudaLaunchKernel((const void *)fz_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0,
                           S(s));
  } else {
    err = cudaMemcpyAsync(to, from, (size_t)len, cudaMemcpyDeviceToDevice, S(s));
  }
  if (err != cudaSuccess) {
    fail("error", i, "a device-only op failed: %s", cudaGetErrorName(err));
    return;
  }
  stream_advance(s);
  memcpy(M.devmodel[s] + dst, M.devmodel[s] + src, (size_t)len);
}

static void op_cpu(int i, const fz_op_t *o, uint64_t opened) {
  bool write = o->a[0] & 1;
  buf_t *b = &M.b[o->a[1] % M.cfg->slots + t_base_b];
  long off = o->a[2], len = o->a[3];
  if (!range_ok(b, off, len)) return;
  uintptr_t lo = (uintptr_t)b->p + (uintptr_t)off, hi = lo + (uintptr_t)len;
  fz_cpu_touch(b->p + off, (size_t)len, write, o->a[4]);
  rep_t r[64];
  size_t n = log_collect(r, 64);
  /* Required: a page it touches lies wholly inside an access (a writing one, for a read) that
   * even the host's largest clock leaves unordered, pages are guarded in a buffer this size, no
   * earlier report let the page go, and no host function that may be running let it go. (In
   * enforce mode a first fault may wait, which opens the gates; but that fault was reported.) */
  uint64_t op_open = op_opened(opened);
  vc_t most;
  host_most(&most, op_open);
  bool must = false;
  char why[160] = "";
  bool guarded = b->size >= M.cfg->guard_min;
  /* A pitched copy whose guarded page this op first touches on a gap byte (the page also holds
   * its rows) is no conflict there, and without single steps pinguard lets that copy's guard go
   * (enforce waits for it first): from that page on it requires no report. */
  size_t *gap_from = calloc(T->nd ? T->nd : 1, sizeof *gap_from); /* 1 + the page index, 0: none */
  for (size_t k = 0; k < T->nd && gap_from; k++) {
    const dacc_t *d = &T->d[k];
    touch_t t = dacc_touch(d);
    if (!d->pitch || !d->live || d->buf != b->gen) continue;
    for (uintptr_t pg = lo & ~(uintptr_t)(FZ_PAGE - 1); pg < hi && !gap_from[k]; pg += FZ_PAGE) {
      uintptr_t first = pg > lo ? pg : lo;
      if (touch_meets(&t, pg, pg + FZ_PAGE) && !touch_meets(&t, first, first + 1))
        gap_from[k] = 1 + (pg - (uintptr_t)b->p) / FZ_PAGE;
    }
  }
  for (uintptr_t pg = lo & ~(uintptr_t)(FZ_PAGE - 1); pg < hi && guarded && !must; pg += FZ_PAGE) {
    size_t pi = (pg - (uintptr_t)b->p) / FZ_PAGE;
    if (hfn_may_open(b, pg, op_open)) continue;
    for (size_t k = 0; k < T->nd && !must; k++) {
      const dacc_t *d = &T->d[k];
      touch_t t = dacc_touch(d);
      if (gap_from && gap_from[k] && gap_from[k] - 1 <= pi) continue;
      if (d->live && !d->unguarded && d->buf == b->gen && touch_covers(&t, pg, pg + FZ_PAGE) &&
          (write || may_write(d->dir)) && surely_unordered(d, &most)) {
        must = true;
        snprintf(why, sizeof why, "page %zu lies wholly inside op #%d's unordered access's bytes", pi,
                 d->op);
      }
    }
  }
  cpu_ctx_t c = {.b = b, .write = write};
  check_reports(i, r, n, write ? "cpu-write-during-device-access" : "cpu-read-during-device-write",
                cpu_ok, &c, &c.page, 0, 0, must, why);
  for (size_t k = 0; k < n; k++) release_pages_of(&r[k]);
  for (size_t k = 0; k < T->nd && gap_from; k++)
    if (gap_from[k]) T->d[k].unguarded = true;
  free(gap_from);
  if (write) {
    memset(b->model + off, o->a[4], (size_t)len);
  } else if (M.cfg->mode_enforce && !M.failed) {
    for (long k = 0; k < len; k++)
      if (b->p[off + k] != b->model[off + k]) {
        fail("data", i, "byte %ld of the buffer reads 0x%02x, program order says 0x%02x",
             off + k, b->p[off + k], b->model[off + k]);
        break;
      }
  }
}

static void op_hostfn(int i, const fz_op_t *o) {
  int s = sidx(o->a[0]);
  buf_t *b = &M.b[o->a[1] % M.cfg->slots + t_base_b];
  long off = o->a[2], len = o->a[3];
  if (!range_ok(b, off, len)) return;
  hostfn_arg_t *a = malloc(sizeof *a);
  a->p = b->p + off;
  a->len = (size_t)len;
  T->hargs = realloc(T->hargs, (T->nhargs + 1) * sizeof *T->hargs);
  T->hargs[T->nhargs++] = a;
  cudaError_t err = (i & 1) ? cudaLaunchHostFunc(S(s), hostfn_body, a)
                            : cudaLaunchHostFunc_ptsz(S(s), hostfn_body, a);
  if (err != cudaSuccess) {
    fail("error", i, "cudaLaunchHostFunc failed: %s", cudaGetErrorName(err));
    return;
  }
  if (T->nh == T->caph) {
    T->caph = T->caph ? T->caph * 2 : 16;
    T->h = realloc(T->h, T->caph * sizeof *T->h);
  }
  hfn_t *h = &T->h[T->nh++];
  h->op = i;
  h->stream = s;
  h->pos = stream_advance(s);
  h->vc = M.svc[s];
  h->gate = M.sgate[s];
  h->lo = (uintptr_t)a->p;
  h->hi = h->lo + a->len;
  h->buf = b->gen;
}

static void learn(const vc_t *v) { vc_join(&T->host, v); }

static void exec_op(int i) {
  const fz_op_t *o = &M.ops->v[i];
  t_opens0 = fz_gate_others_done();
  uint64_t opened = fz_gate_opened();
  if (g_trace) {
    char line[160];
    fz_op_format(o, line, sizeof line);
    fprintf(stderr, "pgfuzz: op #%d [%s] gates open up to %lu\n", i, line, (unsigned long)opened);
  }
  cudaError_t err = cudaSuccess;
  switch (o->code) {
    case FZ_ALLOC: op_alloc(i, o); break;
    case FZ_FREE: op_free(i, o, opened); break;
    case FZ_COPY: op_copy(i, o, opened); break;
    case FZ_KERN: op_kern(i, o, opened); break;
    case FZ_DEVOP: op_devop(i, o); break;
    case FZ_CPU: op_cpu(i, o, opened); break;
    case FZ_HOSTFN: op_hostfn(i, o); break;
    case FZ_EVREC: {
      int e = (o->a[0] % M.cfg->events + t_base_e), s = sidx(o->a[1]);
      /* Only a stream of the event's device records it: the next such stream of the thread. */
      for (int k = 0; k < M.cfg->streams && sdev(s) != edev(e) && !is_legacy(s); k++)
        s = t_base_s + (s - t_base_s + 1) % M.cfg->streams;
      if (sdev(s) != edev(e)) break;
      event_t *ev = &M.ev[e];
      /* simcuda keeps only an event's latest record, and a newer record that completes first
       * may release the waiters of an older one early. Not re-recorded, then, while a stream
       * waits on a record that may not have completed. */
      if (ev->recorded && ev->waited && T->host.c[ev->stream] < ev->pos) break;
      err = (i & 1) ? cudaEventRecord(M.e[e], S(s)) : cudaEventRecord_ptsz(M.e[e], S(s));
      if (err == cudaSuccess) {
        ev->pos = stream_advance(s);
        ev->stream = s;
        ev->recorded = true;
        ev->waited = false;
        ev->vc = M.svc[s];
        ev->gate = M.sgate[s];
      }
      break;
    }
    case FZ_WAITEV: {
      int s = sidx(o->a[0]), e = (o->a[1] % M.cfg->events + t_base_e);
      err = (i & 1) ? cudaStreamWaitEvent(S(s), M.e[e], 0) : cudaStreamWaitEvent_ptsz(S(s), M.e[e], 0);
      if (err == cudaSuccess && M.ev[e].recorded) {
        /* An op of the legacy stream's implicit order on the legacy stream only, and only for
         * an event with a record (as an H200 does: bench/gpu/legacy_order.cu). */
        if (is_legacy(s)) legacy_join(&M.svc[s], s);
        M.ev[e].waited = true;
        vc_join(&M.svc[s], &M.ev[e].vc);
        if (M.ev[e].gate > M.sgate[s]) M.sgate[s] = M.ev[e].gate;
      }
      break;
    }
    case FZ_SSYNC: {
      int s = sidx(o->a[0]);
      vc_t snap = legacy_covers(s);
      err = (i & 1) ? cudaStreamSynchronize(S(s)) : cudaStreamSynchronize_ptsz(S(s));
      if (err == cudaSuccess) learn(&snap);
      break;
    }
    case FZ_SQUERY: {
      int s = sidx(o->a[0]);
      vc_t snap = legacy_covers(s);
      err = (i & 1) ? cudaStreamQuery(S(s)) : cudaStreamQuery_ptsz(S(s));
      if (err == cudaSuccess) learn(&snap);
      else if (err == cudaErrorNotReady) err = cudaSuccess;
      break;
    }
    case FZ_ESYNC: {
      int e = (o->a[0] % M.cfg->events + t_base_e);
      err = cudaEventSynchronize(M.e[e]);
      if (err == cudaSuccess && M.ev[e].recorded) learn(&M.ev[e].vc);
      break;
    }
    case FZ_EQUERY: {
      int e = (o->a[0] % M.cfg->events + t_base_e);
      err = cudaEventQuery(M.e[e]);
      if (err == cudaSuccess && M.ev[e].recorded) learn(&M.ev[e].vc);
      else if (err == cudaErrorNotReady) err = cudaSuccess;
      break;
    }
    case FZ_DSYNC: { /* the current device's streams only (this thread's, in concurrent runs) */
      int nsnap = nstreams_created() + (fz_legacy(M.cfg) ? ndevices() : 0);
      vc_t *snap = malloc((size_t)nsnap * sizeof *snap); /* too large for a stack */
      if (!snap) {
        err = cudaErrorMemoryAllocation;
        break;
      }
      memcpy(snap, M.svc, (size_t)nsnap * sizeof *snap);
      t_dsync_begun[t_dev]++;
      g_dsync_begun[t_dev]++;
      err = cudaDeviceSynchronize();
      g_dsync_done[t_dev]++;
      t_dsync_done[t_dev]++;
      if (err == cudaSuccess)
        for (int s = t_base_s; s < t_base_s + M.cfg->streams; s++)
          if (sdev(s) == t_dev) learn(&snap[s]);
      if (err == cudaSuccess && fz_legacy(M.cfg)) learn(&snap[nstreams_created() + t_dev]);
      free(snap);
      break;
    }
    case FZ_SETDEV: {
      int d = o->a[0] % ndevices();
      err = cudaSetDevice(d);
      if (err == cudaSuccess) t_dev = d;
      break;
    }
    case FZ_GATE: {
      int s = sidx(o->a[0]);
      uint64_t g = fz_gate_new();
      if (fz_gate_launch(S(s), g) == 0) M.sgate[s] = g;
      else err = cudaErrorUnknown;
      break;
    }
    case FZ_OPEN: fz_gate_open_all(); break;
  }
  if (err != cudaSuccess) fail("error", i, "%s failed: %s", fz_code_name(o->code), cudaGetErrorName(err));
  /* Reports outside the ops that may make them (none expected) */
  if (o->code != FZ_FREE && o->code != FZ_COPY && o->code != FZ_KERN && o->code != FZ_CPU) {
    rep_t r[8];
    size_t n = log_collect(r, 8);
    if (n)
      fail("false-positive", i, "unexpected %s report at 0x%lx (%s by pinguard's T%u; this is T%u)",
           r[0].kind, (unsigned long)r[0].addr, r[0].what, r[0].thread,
           t_app_thread ? M.pgtid[t_app_thread - 1] : 0);
  }
}

/* ---- host functions' reports ------------------------------------------------------------------ */
typedef struct hctx {
  const hfn_t *h;
  uintptr_t page;
} hctx_t;
static bool hfn_ok(const dacc_t *d, const void *vctx) {
  const hctx_t *c = vctx;
  touch_t t = dacc_touch(d);
  return d->buf == c->h->buf && touch_meets(&t, c->page, c->page + FZ_PAGE) &&
         dacc_unordered_with_hfn(d, c->h);
}

static void check_hostfn_reports(void) {
  for (size_t k = 0; k < M.nhrep && !M.failed; k++) {
    const rep_t *r = &M.hrep[k];
    uintptr_t page = r->addr & ~(uintptr_t)(FZ_PAGE - 1);
    bool explained = false;
    int culprit = -1;
    for (int t = 0; t < FZ_MAXT && !explained; t++)
    for (size_t j = 0; (T = &M.tm[t]) && j < T->nh && !explained; j++) {
      const hfn_t *h = &T->h[j];
      if (!overlaps(h->lo, h->hi, page, page + FZ_PAGE)) continue;
      if (culprit < 0) culprit = h->op;
      hctx_t c = {h, page};
      bool all = strcmp(r->kind, "cpu-read-during-device-write") == 0;
      for (unsigned g = 0; g < r->ngpu && all; g++)
        if (!gpu_entry_valid(r->g[g].addr, r->g[g].len, r->g[g].stream, r->g[g].device, hfn_ok,
                             &c))
          all = false;
      if (all) explained = true;
    }
    if (!explained)
      fail("false-positive", culprit,
           "a host function's %s report at 0x%lx names %u access(es) (first: %zu bytes at 0x%lx) "
           "that stream order places before or after it",
           r->kind, (unsigned long)r->addr, r->ngpu, r->ngpu ? r->g[0].len : 0,
           (unsigned long)(r->ngpu ? r->g[0].addr : 0));
  }
}

/* ---- crashes -------------------------------------------------------------------------------- */
/* A SIGSEGV that pinguard did not take as its own reaches this handler (pinguard chains to the
 * application's handler): says where it hit, relative to the buffers and the stack pointer, then
 * dies of the signal. */
static void on_crash(int sig, siginfo_t *info, void *uctx) {
  ucontext_t *uc = uctx;
  uintptr_t a = (uintptr_t)info->si_addr;
  uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
  char line[300];
  int slot = -1;
  for (int k = 0; k < FZ_MAXB; k++)
    if (M.b[k].alive && a >= (uintptr_t)M.b[k].p && a < (uintptr_t)M.b[k].p + M.b[k].size) slot = k;
  int n = snprintf(line, sizeof line,
                   "CRASH signal %d (si_code %d) at 0x%lx, %s %d, %ld bytes from the faulting "
                   "thread's stack pointer, on %s %d\n",
                   sig, info->si_code, (unsigned long)a, slot >= 0 ? "in the buffer of slot" : "slot",
                   slot, (long)(a - sp), t_app_thread ? "application thread" : "a runtime thread (host function)",
                   t_app_thread - 1);
  ssize_t w = write(1, line, (size_t)n);
  (void)w;
  signal(sig, SIG_DFL);
  raise(sig);
}

void fz_install_crash_handler(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_crash;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &sa, NULL);
  sigaction(SIGBUS, &sa, NULL);
}

/* ---- threads -------------------------------------------------------------------------------- */
typedef struct thr {
  int id;
} thr_t;

/* Learns pinguard's number for this thread from the report of a release annotation on a buffer
 * that a held copy reads. One thread at a time (each opens the gates), all before any op. */
static void probe_thread_number(int me) {
  pthread_mutex_lock(&M.mu);
  while (M.probed != (size_t)me) pthread_cond_wait(&M.cv, &M.mu);
  pthread_mutex_unlock(&M.mu);
  void *p = NULL;
  if (cudaHostAlloc(&p, FZ_PAGE, cudaHostAllocDefault) == cudaSuccess) {
    cudaStream_t s = M.s[t_base_s];
    M.probe[me] = (uintptr_t)p;
    uint64_t g = fz_gate_new();
    fz_gate_launch(s, g);
    cudaMemcpyAsync(M.dev[t_base_s], p, FZ_PAGE, cudaMemcpyHostToDevice, s);
    pinguard_release(p, FZ_PAGE);
    rep_t r[8];
    log_collect(r, 8);
    fz_gate_open_all();
    cudaStreamSynchronize(s);
    M.probe[me] = 0;
    cudaFreeHost(p);
    if (g_trace) fprintf(stderr, "pgfuzz: thread %d is pinguard's T%u\n", me, M.pgtid[me]);
  }
  pthread_mutex_lock(&M.mu);
  M.probed++;
  pthread_cond_broadcast(&M.cv);
  while (M.probed < (size_t)M.cfg->threads) pthread_cond_wait(&M.cv, &M.mu);
  pthread_mutex_unlock(&M.mu);
}

static void *thread_main(void *arg) {
  int me = ((thr_t *)arg)->id;
  t_app_thread = me + 1;
  t_dev = 0; /* a new thread starts on device 0 */
  if (M.cfg->concurrent) {
    T = &M.tm[me];
    t_base_s = me * M.cfg->streams;
    t_base_e = me * M.cfg->events;
    t_base_b = me * M.cfg->slots;
    probe_thread_number(me);
    for (size_t i = 0; i < M.ops->n && !M.failed; i++)
      if (M.ops->v[i].t % M.cfg->threads == me) exec_op((int)i);
    /* Another thread's free or sync may wait for a gate this one made after that call opened
     * the gates: opening them here lets every such wait end. */
    fz_gate_open_all();
    return NULL;
  }
  T = &M.tm[0];
  probe_thread_number(me);
  pthread_mutex_lock(&M.mu);
  for (;;) {
    while (M.turn < M.ops->n && !M.failed && M.ops->v[M.turn].t % M.cfg->threads != me)
      pthread_cond_wait(&M.cv, &M.mu);
    if (M.turn >= M.ops->n || M.failed) break;
    size_t i = M.turn;
    pthread_mutex_unlock(&M.mu);
    exec_op((int)i);
    pthread_mutex_lock(&M.mu);
    M.turn++;
    pthread_cond_broadcast(&M.cv);
  }
  pthread_mutex_unlock(&M.mu);
  return NULL;
}

int fz_execute(const fz_ops_t *ops, const fz_cfg_t *cfg, char *why, size_t cap) {
  int keepfd = M.logfd;
  off_t keepoff = M.logoff;
  bool first = M.cfg == NULL;
  memset(&M, 0, sizeof M);
  M.cfg = cfg;
  M.ops = ops;
  M.why = why;
  M.whycap = cap;
  M.logfd = first ? -1 : keepfd;
  M.logoff = keepoff;
  g_trace = getenv("FZ_TRACE") != NULL;
  why[0] = 0;
  pthread_mutex_init(&M.mu, NULL);
  pthread_mutex_init(&M.logmu, NULL);
  pthread_cond_init(&M.cv, NULL);
  int nstreams = cfg->streams * (cfg->concurrent ? cfg->threads : 1);
  int nevents = cfg->events * (cfg->concurrent ? cfg->threads : 1);
  int nlegacy = fz_legacy(cfg) ? ndevices() : 0;
  if (!(M.devmodel = calloc((size_t)(nstreams + nlegacy), sizeof *M.devmodel))) {
    snprintf(why, cap, "error: out of memory");
    return 1;
  }
  for (int d = 0; d < nlegacy; d++) { /* device d's legacy stream: its device memory */
    if (cudaSetDevice(d) != cudaSuccess ||
        cudaMalloc((void **)&M.dev[nstreams + d], FZ_DEVBYTES) != cudaSuccess) {
      snprintf(why, cap, "error: legacy stream setup failed");
      return 1;
    }
    cudaMemset(M.dev[nstreams + d], 0, FZ_DEVBYTES);
  }
  for (int s = 0; s < nstreams; s++) {
    if (cudaSetDevice(sdev(s)) != cudaSuccess ||
        cudaStreamCreateWithFlags(&M.s[s], sblocking(s) ? cudaStreamDefault
                                                       : cudaStreamNonBlocking) != cudaSuccess ||
        cudaMalloc((void **)&M.dev[s], FZ_DEVBYTES) != cudaSuccess) {
      snprintf(why, cap, "error: stream setup failed");
      return 1;
    }
    cudaMemset(M.dev[s], 0, FZ_DEVBYTES);
  }
  for (int d = ndevices() - 1; d >= 0; d--) {
    cudaSetDevice(d);
    cudaDeviceSynchronize();
  }
  /* Many streams: pinguard meets each one now (a query of a stream with nothing on it orders
   * nothing), so that the few the ops use are far from its first ones. */
  for (int s = 0; nstreams > 64 && s < nstreams; s++) {
    cudaSetDevice(sdev(s));
    cudaStreamQuery(M.s[s]);
  }
  for (int e = 0; e < nevents; e++) {
    cudaSetDevice(edev(e));
    cudaEventCreateWithFlags(&M.e[e], cudaEventDisableTiming);
  }
  cudaSetDevice(0);
  T = &M.tm[0];
  rep_t junk[4];
  log_collect(junk, 4); /* skip whatever an earlier run left */
  M.nhrep = 0;

  pthread_t th[FZ_MAXT];
  thr_t ids[FZ_MAXT];
  /* --roomy-stacks: each thread's stack between two 2 MiB inaccessible gaps, so that no buffer
   * is ever mapped close to a stack pointer (F4 in FINDINGS.md). */
  const size_t stack_bytes = 8u << 20, gap = 2u << 20;
  void *stacks[FZ_MAXT] = {0};
  for (int t = 0; t < cfg->threads; t++) {
    ids[t].id = t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (cfg->roomy_stacks) {
      void *m = mmap(NULL, stack_bytes + 2 * gap, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m != MAP_FAILED &&
          mprotect((char *)m + gap, stack_bytes, PROT_READ | PROT_WRITE) == 0) {
        stacks[t] = m;
        pthread_attr_setstack(&attr, (char *)m + gap, stack_bytes);
      }
    }
    pthread_create(&th[t], &attr, thread_main, &ids[t]);
    pthread_attr_destroy(&attr);
  }
  for (int t = 0; t < cfg->threads; t++) {
    pthread_join(th[t], NULL);
    if (stacks[t]) munmap(stacks[t], stack_bytes + 2 * gap);
  }

  /* The end: everything completes, then the buffers must hold program order's bytes. */
  fz_gate_open_all();
  for (int d = ndevices() - 1; d >= 0; d--) {
    cudaSetDevice(d);
    cudaDeviceSynchronize();
  }
  T = &M.tm[0];
  rep_t r[8];
  size_t n = log_collect(r, 8);
  for (int t = 1; t < FZ_MAXT && !n; t++)
    if (M.tm[t].nq) n = 1, r[0] = M.tm[t].q[0];
  if (n && !M.failed)
    fail("false-positive", -1, "unexpected %s report at 0x%lx after the last op", r[0].kind,
         (unsigned long)r[0].addr);
  fz_stat_reports += M.nhrep;
  check_hostfn_reports();
  for (int k = 0; k < FZ_MAXB; k++) {
    buf_t *b = &M.b[k];
    if (!b->alive) continue;
    if (cfg->mode_enforce && !M.failed)
      for (size_t j = 0; j < b->size; j++)
        if (b->p[j] != b->model[j]) {
          fail("data", -1, "slot %d: final byte %zu is 0x%02x, program order says 0x%02x", k, j,
               b->p[j], b->model[j]);
          break;
        }
    buf_release(b);
    free(b->model);
    b->alive = false;
  }
  for (int s = 0; s < nstreams; s++) {
    cudaSetDevice(sdev(s));
    cudaFree(M.dev[s]);
    cudaStreamDestroy(M.s[s]);
  }
  for (int d = 0; d < nlegacy; d++) {
    cudaSetDevice(d);
    cudaFree(M.dev[nstreams + d]);
  }
  for (int e = 0; e < nevents; e++) cudaEventDestroy(M.e[e]);
  free(M.devmodel);
  cudaSetDevice(0);
  T = &M.tm[0];
  log_collect(junk, 4);
  for (int t = 0; t < FZ_MAXT; t++) {
    tmodel_t *m = &M.tm[t];
    for (size_t k = 0; k < m->nhargs; k++) free(m->hargs[k]);
    free(m->hargs);
    free(m->d);
    free(m->h);
  }
  free(M.hrep);
  keepfd = M.logfd;
  keepoff = M.logoff;
  bool failed = M.failed;
  pthread_mutex_destroy(&M.logmu);
  pthread_mutex_destroy(&M.mu);
  pthread_cond_destroy(&M.cv);
  M.logfd = keepfd;
  M.logoff = keepoff;
  return failed ? 1 : 0;
}
