/* pg_op.h: how every interceptor describes its call to core/ (a pg_op_t: the entry point, the
 * stream, the host spans and the call site) and brackets the forward with the two decisions.
 * Copies and kernel launches build their ops with these helpers only. */
#ifndef PG_OP_H
#define PG_OP_H

#include "pg_intercept.h"
#include "pg_shim.h"

/* Starts describing a call of `api` on stream s (stream 0 of a _ptsz call is the per-thread
 * default stream). Spans and the stack are added afterwards. */
static inline void pg_op_begin(pg_op_t *op, const char *api, const char *what, cudaStream_t s,
                               bool ptsz) {
  op->api = api;
  op->what = what;
  op->func = NULL;
  op->stream = pg_stream_of(s, ptsz);
  op->only_tracked = false;
  op->nspans = 0;
  op->nlk = 0; /* no region lookups kept yet (pg_decide_before_op makes them) */
}

/* A kernel launch: only spans inside tracked regions count (its pointer words are guesses). */
static inline void pg_op_begin_kernel(pg_op_t *op, const char *api, const void *func,
                                      cudaStream_t s, bool ptsz) {
  pg_op_begin(op, api, "kernel", s, ptsz);
  op->func = func;
  op->only_tracked = true;
}

/* One host operand; empty ones and those past PG_OP_MAX_SPANS are dropped. */
static inline void pg_op_add_span(pg_op_t *op, const void *p, size_t n, pg_dir_t dir) {
  if (!p || n == 0 || op->nspans >= PG_OP_MAX_SPANS) return;
  op->spans[op->nspans++] = (pg_span_t){.p = p, .n = n, .dir = dir};
}

/* The host operands a cudaMemcpyKind implies. For cudaMemcpyDefault either side may be host
 * memory; core drops the one that is not pinned host memory. */
static inline void pg_op_add_copy_spans(pg_op_t *op, void *dst, const void *src, size_t n,
                                        enum cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToDevice: pg_op_add_span(op, src, n, PG_DIR_READ); break;
    case cudaMemcpyDeviceToHost: pg_op_add_span(op, dst, n, PG_DIR_WRITE); break;
    case cudaMemcpyHostToHost:
    case cudaMemcpyDefault:
      pg_op_add_span(op, src, n, PG_DIR_READ);
      pg_op_add_span(op, dst, n, PG_DIR_WRITE);
      break;
    default: break; /* device to device: no host memory */
  }
}

/* Runs `call` (the real forward: a cudaError_t or CUresult expression, 0 on success) between
 * the two decisions, inside pinguard (its own calls are not tracked), once the op is described. */
#define PG_TRACKED_CALL(op, call)                       \
  __extension__({                                       \
    pg_reentry_t r_ = pg_shim_enter();                  \
    pg_decide_before_op(op);                            \
    __typeof__(call) err_ = (call);                     \
    if (err_ == 0) pg_decide_after_op(op);              \
    pg_shim_leave(r_);                                  \
    err_;                                               \
  })

#endif /* PG_OP_H */
