/* fz_ops.c: the op list: names, text form, and the seeded generator. */
#include <stdlib.h>
#include <string.h>

#include "fz.h"

static const char *const names[] = {
#define FZ_NAME(n) #n,
    FZ_OPS(FZ_NAME)
#undef FZ_NAME
};

const char *fz_code_name(int code) {
  return code >= 0 && code < FZ_NCODES ? names[code] : "?";
}

int fz_code_from_name(const char *s) {
  for (int i = 0; i < FZ_NCODES; i++)
    if (strcasecmp(names[i], s) == 0) return i;
  return -1;
}

void fz_ops_push(fz_ops_t *ops, const fz_op_t *op) {
  if (ops->n == ops->cap) {
    ops->cap = ops->cap ? ops->cap * 2 : 64;
    ops->v = realloc(ops->v, ops->cap * sizeof *ops->v);
    if (!ops->v) abort();
  }
  ops->v[ops->n++] = *op;
}

void fz_ops_free(fz_ops_t *ops) {
  free(ops->v);
  memset(ops, 0, sizeof *ops);
}

void fz_op_format(const fz_op_t *op, char *buf, size_t cap) {
  snprintf(buf, cap, "%d %s %d %d %d %d %d %d %d", op->t, fz_code_name(op->code), op->a[0],
           op->a[1], op->a[2], op->a[3], op->a[4], op->a[5], op->a[6]);
}

void fz_ops_write(FILE *f, const fz_ops_t *ops) {
  char line[160];
  for (size_t i = 0; i < ops->n; i++) {
    fz_op_format(&ops->v[i], line, sizeof line);
    fprintf(f, "%s\n", line);
  }
}

int fz_ops_read(FILE *f, fz_ops_t *ops) {
  char line[256];
  while (fgets(line, sizeof line, f)) {
    bool whole = strchr(line, '\n') || feof(f);
    if (line[0] == '#') { /* a comment (a failure's message) may be longer than the buffer */
      for (int c = whole ? '\n' : 0; c != '\n' && c != EOF;) c = fgetc(f);
      continue;
    }
    if (!whole) return -1; /* no op line is this long */
    if (line[0] == '\n') continue;
    fz_op_t op;
    char name[32];
    memset(&op, 0, sizeof op);
    int n = sscanf(line, "%d %31s %d %d %d %d %d %d %d", &op.t, name, &op.a[0], &op.a[1],
                   &op.a[2], &op.a[3], &op.a[4], &op.a[5], &op.a[6]);
    if (n < 2 || (op.code = fz_code_from_name(name)) < 0) return -1;
    fz_ops_push(ops, &op);
  }
  return 0;
}

/* ---- the generator -------------------------------------------------------------------------- */
typedef struct rng {
  uint64_t s;
} rng_t;

static uint64_t next(rng_t *r) { /* splitmix64 */
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static int below(rng_t *r, int n) { return n > 0 ? (int)(next(r) % (uint64_t)n) : 0; }

/* A byte range [off, off+len) inside a buffer of `size` bytes. In enforce runs (data checked)
 * device ranges are whole pages, so that every byte a device access touches is guarded; `unit`
 * is the granule (bytes) and len a multiple of `mult` granules. */
static void pick_range(rng_t *r, int size, int unit, int mult, int *off, int *len) {
  int units = size / unit;
  int n = mult * (1 + below(r, units / mult > 0 ? units / mult : 1));
  if (n > units) n = units - units % mult;
  if (n <= 0) n = mult <= units ? mult : units;
  *off = below(r, units - n + 1) * unit;
  *len = n * unit;
}

void fz_generate(uint64_t seed, const fz_cfg_t *cfg, fz_ops_t *out) {
  rng_t r = {seed * 0x2545F4914F6CDD1Dull + 1};
  int pages_all[FZ_MAXB] = {0}; /* 0: slot free (per thread in concurrent runs) */
  /* Weights per op kind; the excluded kinds get none. */
  int w[FZ_NCODES] = {0};
  w[FZ_ALLOC] = 6, w[FZ_FREE] = 4, w[FZ_COPY] = 16, w[FZ_KERN] = 6, w[FZ_EVREC] = 5,
  w[FZ_WAITEV] = 5, w[FZ_SSYNC] = 3, w[FZ_ESYNC] = 2, w[FZ_DSYNC] = 1, w[FZ_SQUERY] = 3,
  w[FZ_EQUERY] = 3, w[FZ_GATE] = 6, w[FZ_OPEN] = 3, w[FZ_HOSTFN] = 4, w[FZ_CPU] = 14;
  /* Several devices: threads switch devices, and each device's synchronize orders only its own
   * streams, so it gets more weight. One device draws exactly the sequences it always did. */
  if (cfg->devices > 1) w[FZ_SETDEV] = 4, w[FZ_DSYNC] = 4;
  /* Blocking streams: ops that touch no pinned memory, which pinguard tracks nothing for but the
   * legacy stream's implicit order still places (only then, so other runs draw as they did). */
  if (cfg->blocking) w[FZ_DEVOP] = 5;
  int total = 0;
  for (int i = 0; i < FZ_NCODES; i++) {
    if (cfg->excluded[i]) w[i] = 0;
    total += w[i];
  }
  bool data = cfg->mode_enforce;
  for (int k = 0; k < cfg->ops; k++) {
    fz_op_t op;
    memset(&op, 0, sizeof op);
    op.t = below(&r, cfg->threads);
    int *pages = pages_all + (cfg->concurrent ? op.t * cfg->slots : 0);
    int x = below(&r, total), code = 0;
    while (x >= w[code]) x -= w[code++];
    /* Ops on buffers need one: allocate first when none is live. */
    int live[FZ_MAXB], nlive = 0, nfree = 0, freeslot[FZ_MAXB];
    for (int i = 0; i < cfg->slots; i++) {
      if (pages[i]) live[nlive++] = i;
      else freeslot[nfree++] = i;
    }
    bool needs_buf = code == FZ_FREE || code == FZ_COPY || code == FZ_KERN ||
                     code == FZ_HOSTFN || code == FZ_CPU;
    if (needs_buf && nlive == 0) code = FZ_ALLOC;
    if (code == FZ_ALLOC && nfree == 0) code = cfg->excluded[FZ_CPU] ? FZ_SQUERY : FZ_CPU;
    op.code = code;
    int s = below(&r, cfg->streams + fz_legacy(cfg)), slot = nlive ? live[below(&r, nlive)] : 0;
    int size = (int)(pages[slot] * FZ_PAGE);
    switch (code) {
      case FZ_ALLOC:
        op.a[0] = freeslot[below(&r, nfree)];
        op.a[1] = 1 + below(&r, FZ_MAXPAGES);
        op.a[2] = below(&r, 3);
        if (op.a[2] == 1 && cfg->no_malloc) op.a[2] = cfg->no_mmap ? 0 : 2;
        if (op.a[2] == 2 && cfg->no_mmap) op.a[2] = cfg->no_malloc ? 0 : 1;
        op.a[3] = op.a[2] != 0 && below(&r, 4) == 0; /* 1: registered read-only */
        pages[op.a[0]] = op.a[1];
        break;
      case FZ_FREE:
        op.a[0] = slot;
        pages[slot] = 0;
        break;
      case FZ_COPY: {
        int api = below(&r, 5);
        /* batch halves and 2D/3D rows of half the length: two granules at least */
        int mult = api >= 2 ? 2 : 1;
        int unit = data || below(&r, 2) ? (int)FZ_PAGE : 256;
        int off, len, rows = 2;
        if (api >= 3) {
          /* `rows` rows of len/2 at a host pitch of len: the hull is (rows - 1/2) len, with a gap
           * of len/2 after each row but the last. Half the time the start is a multiple of
           * len/2 (when that keeps the unit), so that two such copies interleave their rows. */
          rows = 2 + below(&r, 3);
          int room = size * 2 / (2 * rows - 1);
          if (room < mult * unit) api = 0, mult = 1;
          else {
            pick_range(&r, room, unit, mult, &off, &len);
            int hull = (rows - 1) * len + len / 2;
            int step = (len / 2) % unit == 0 && below(&r, 2) ? len / 2 : unit;
            off = below(&r, (size - hull) / step + 1) * step;
          }
        }
        if (api < 3) pick_range(&r, size, unit, mult, &off, &len);
        if (len < mult * unit) api = 0;
        op.a[0] = below(&r, 2), op.a[1] = s, op.a[2] = slot, op.a[3] = off;
        int dlen = api >= 3 ? rows * (len / 2) : len; /* device rows are packed */
        op.a[4] = below(&r, (FZ_DEVBYTES - dlen) / (int)FZ_PAGE + 1) * (int)FZ_PAGE;
        op.a[5] = len, op.a[6] = api;
        if (api == 2) op.a[6] += 5 * below(&r, 3); /* the batch's srcAccessOrder */
        if (api >= 3) op.a[6] += 5 * (rows - 2);   /* a 2D or 3D copy's rows */
        break;
      }
      case FZ_KERN: {
        int off, len;
        pick_range(&r, size, data || below(&r, 2) ? (int)FZ_PAGE : 512, 1, &off, &len);
        op.a[0] = below(&r, 3), op.a[1] = s, op.a[2] = slot, op.a[3] = off;
        op.a[4] = below(&r, (FZ_DEVBYTES - len) / (int)FZ_PAGE + 1) * (int)FZ_PAGE;
        op.a[5] = len, op.a[6] = (1 + below(&r, 255)) | (below(&r, 3) << 8);
        break;
      }
      case FZ_EVREC: op.a[0] = below(&r, cfg->events), op.a[1] = s; break;
      case FZ_WAITEV: op.a[0] = s, op.a[1] = below(&r, cfg->events); break;
      case FZ_SSYNC: case FZ_SQUERY: case FZ_GATE: op.a[0] = s; break;
      case FZ_ESYNC: case FZ_EQUERY: op.a[0] = below(&r, cfg->events); break;
      case FZ_DSYNC: case FZ_OPEN: break;
      case FZ_SETDEV: op.a[0] = below(&r, cfg->devices); break;
      case FZ_DEVOP: { /* two disjoint ranges of the stream's device scratch */
        int len = (int)FZ_PAGE * (1 + below(&r, 2)), half = FZ_DEVBYTES / 2;
        op.a[0] = s, op.a[1] = below(&r, 2);
        op.a[2] = below(&r, (half - len) / (int)FZ_PAGE + 1) * (int)FZ_PAGE;
        op.a[3] = half + below(&r, (half - len) / (int)FZ_PAGE + 1) * (int)FZ_PAGE;
        if (below(&r, 2)) { int t = op.a[2]; op.a[2] = op.a[3], op.a[3] = t; }
        op.a[4] = len;
        break;
      }
      case FZ_HOSTFN: {
        int off, len;
        pick_range(&r, size, below(&r, 2) ? (int)FZ_PAGE : 64, 1, &off, &len);
        op.a[0] = s, op.a[1] = slot, op.a[2] = off, op.a[3] = len;
        break;
      }
      case FZ_CPU: {
        int off, len;
        pick_range(&r, size, below(&r, 2) ? (int)FZ_PAGE : 64, 1, &off, &len);
        op.a[0] = below(&r, 2), op.a[1] = slot, op.a[2] = off, op.a[3] = len;
        op.a[4] = 1 + below(&r, 255);
        break;
      }
    }
    fz_ops_push(out, &op);
  }
}
