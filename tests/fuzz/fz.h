/* fz.h: what the differential tester's parts share: the op list (generated, written, read back),
 * the run configuration, and the entry points of the generator, the executor and the driver. */
#ifndef FZ_H
#define FZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define FZ_MAXT 8      /* application threads */
#define FZ_MAXS 640    /* streams (in all): past the few hundred a process may have */
#define FZ_MAXE 16     /* events (in all) */
#define FZ_MAXB 16     /* buffer slots (in all) */
#define FZ_MAXD 8      /* simulated devices */
#define FZ_PAGE 4096u
#define FZ_MAXPAGES 8  /* pages per pinned buffer */
#define FZ_DEVBYTES (FZ_MAXPAGES * FZ_PAGE * 2) /* device scratch per stream */
#define FZ_NARGS 7

/* Op codes: one line of an op file each ("thread NAME a0 .. a6"). */
#define FZ_OPS(X)                                                                           \
  X(ALLOC)   /* slot pages how(0 cudaHostAlloc, 1 malloc+register, 2 mmap+register) ro */   \
  X(FREE)    /* slot: cudaFreeHost, or cudaHostUnregister and free/munmap */                 \
  X(COPY)    /* dir(0 H2D,1 D2H) stream slot hoff doff len api(0 async,1 ptsz,2 batch,3 2D,4 3D)
                + 5*order (a batch's srcAccessOrder: 0 Stream, 1 DuringApiCall, 2 Any) */          \
  X(KERN)    /* kind(0 fill,1 host->dev,2 dev->host) stream slot hoff doff len val|api<<8 */ \
  X(EVREC)   /* event stream */                                                              \
  X(WAITEV)  /* stream event */                                                              \
  X(SSYNC)   /* stream */                                                                    \
  X(ESYNC)   /* event */                                                                     \
  X(DSYNC)   /* - */                                                                         \
  X(SQUERY)  /* stream */                                                                    \
  X(EQUERY)  /* event */                                                                     \
  X(GATE)    /* stream: a closed gate (host function) */                                     \
  X(OPEN)    /* - : opens every gate */                                                      \
  X(HOSTFN)  /* stream slot off len: a host function that reads the bytes */                \
  X(CPU)     /* write slot off len val: a CPU read (write=0) or write of the bytes */        \
  X(SETDEV)  /* device: cudaSetDevice (--devices N only) */                                \
  X(DEVOP)   /* stream api(0 kernel, 1 copy) src dst len: device bytes only (--blocking only) */

enum fz_code {
#define FZ_ENUM(n) FZ_##n,
  FZ_OPS(FZ_ENUM)
#undef FZ_ENUM
  FZ_NCODES
};

typedef struct fz_op {
  int t;                /* thread */
  int code;
  int a[FZ_NARGS];
} fz_op_t;

typedef struct fz_ops {
  fz_op_t *v;
  size_t n, cap;
} fz_ops_t;

typedef struct fz_cfg {
  int mode_enforce;     /* 0 audit, 1 enforce (data is checked) */
  int threads, streams, events, slots;
  int devices;          /* --devices N: SIMCUDA_DEVICES; stream and event i belong to device
                           i % N (counted per thread in concurrent runs) */
  int ops;              /* ops per seed */
  bool excluded[FZ_NCODES]; /* op kinds the generator leaves out (--no-KIND) */
  bool no_malloc, no_mmap;  /* pinning kinds left out (--no-malloc, --no-mmap) */
  bool roomy_stacks;
  bool concurrent;          /* --concurrent: threads run at once, each on its own streams,
                               events and buffers (counts above are then per thread) */        /* --roomy-stacks: no mapping within 2 MiB of a thread's stack */
  unsigned guard_min;   /* pinguard's guard_min_bytes, as the child was told */
  bool blocking;        /* --blocking: the created streams of odd index are blocking (made
                           without cudaStreamNonBlocking): where ops use the legacy stream
                           (fz_legacy), each of its ops waits for the device's blocking streams'
                           work before it, and each op of a blocking stream for the legacy
                           stream's */
} fz_cfg_t;

const char *fz_code_name(int code);
int fz_code_from_name(const char *s);
void fz_ops_push(fz_ops_t *ops, const fz_op_t *op);
void fz_ops_free(fz_ops_t *ops);
void fz_op_format(const fz_op_t *op, char *buf, size_t cap);
void fz_ops_write(FILE *f, const fz_ops_t *ops);
int fz_ops_read(FILE *f, fz_ops_t *ops); /* 0, or -1 on a malformed line */

/* Whether ops may use the current device's legacy stream (handle cudaStreamLegacy): with several
 * devices, in turn-taking runs (the legacy streams are every thread's), when the streams and one
 * legacy stream per device fit the model's clocks. A stream argument equal to cfg->streams names
 * it. */
static inline bool fz_legacy(const fz_cfg_t *c) {
  return c->devices > 1 && !c->concurrent && c->streams + c->devices <= FZ_MAXS;
}

/* The generator: a pure function of the seed and the configuration. */
void fz_generate(uint64_t seed, const fz_cfg_t *cfg, fz_ops_t *out);

/* The executor (child side): runs one op list under the preloaded pinguard and checks every
 * report against the model. 0 on success; else fills why[] with the class ("false-positive",
 * "false-negative", "data", "error") and a message. */
int fz_execute(const fz_ops_t *ops, const fz_cfg_t *cfg, char *why, size_t cap);

/* What the last fz_execute checked: reports seen (host functions' included) and ops whose
 * report was required. */
extern _Atomic unsigned long fz_stat_reports, fz_stat_required;

/* A SIGSEGV/SIGBUS handler that prints a "CRASH ..." line on stdout, then dies of the signal. */
void fz_install_crash_handler(void);

#endif /* FZ_H */
