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
  op->nshapes = 0;
  op->nspans = 0;
  op->nlk = 0; /* no region lookups kept yet (pg_on_op_begin makes them) */
  op->site.ret = NULL; /* the stack is filled by the caller, unless PG_CAPTURE_SITE */
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

/* A source read as srcAccessOrder says (pg_src_order_t); dropped like pg_op_add_span's. */
static inline void pg_op_add_source(pg_op_t *op, const void *p, size_t n, pg_src_order_t order) {
  size_t k = op->nspans;
  pg_op_add_span(op, p, n, PG_DIR_READ);
  if (op->nspans > k) op->spans[k].order = order;
}

/* The hull of one side of a pitched copy: `depth` slices `slice` bytes apart, each of `height`
 * rows `pitch` bytes apart, each row `width` bytes, from the first row's start to the last row's
 * end. */
static inline size_t pg_pitched_span(size_t pitch, size_t slice, size_t width, size_t height,
                                     size_t depth) {
  if (!width || !height || !depth) return 0;
  return (depth - 1) * slice + (height - 1) * pitch + width;
}

/* One side of a 2D or 3D copy (the runtime's cudaMemcpy2D/3DAsync, the driver's CUDA_MEMCPY2D
 * and CUDA_MEMCPY3D): the rows from byte x of row y of slice z of `base`, whose slices are
 * `rows` rows of `pitch` bytes (any value for a 2D copy, which has one slice). The span is the
 * hull; when the rows leave gaps, the shape (pg_shape.h) says which bytes the copy touches, and
 * only those count. An op with shapes is forwarded with PG_TRACKED_SHAPED_CALL. */
static inline void pg_op_add_pitched(pg_op_t *op, const void *base, size_t pitch, size_t rows,
                                     size_t x, size_t y, size_t z, size_t width, size_t height,
                                     size_t depth, pg_dir_t dir) {
  if (!base) return;
  size_t slice = pitch * rows;
  const char *p = (const char *)base + z * slice + y * pitch + x;
  size_t n = pg_pitched_span(pitch, slice, width, height, depth);
  size_t k = op->nspans;
  pg_op_add_span(op, p, n, dir);
  if (op->nspans > k && op->nshapes < PG_OP_SHAPES &&
      pg_shape_make(&op->shapes[op->nshapes], p, pitch, slice, width, height, depth))
    op->nshapes++;
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
    pg_on_op_begin(op);                            \
    __typeof__(call) err_ = (call);                     \
    if (err_ == 0) pg_on_op_end(op);              \
    pg_shim_leave(r_);                                  \
    err_;                                               \
  })

/* PG_TRACKED_CALL for an op that may have pitched sides (pg_op_add_pitched). */
#define PG_TRACKED_SHAPED_CALL(op, call)                \
  __extension__({                                       \
    pg_reentry_t r_ = pg_shim_enter();                  \
    pg_on_op_begin(op);                            \
    __typeof__(call) err_ = (call);                     \
    if (err_ == 0) pg_on_shaped_op_end(op);       \
    pg_shim_leave(r_);                                  \
    err_;                                               \
  })

/* A batch of copies (cudaMemcpyBatchAsync, cuMemcpyBatchAsync in both ABIs), as its caller passed
 * it. attrs points to cudaMemcpyAttributes or CUmemcpyAttributes, which have one layout
 * (pg_cu_api.c checks). */
typedef struct pg_batch {
  enum pg_hook_id id; /* the real function's row */
  bool with_fail_idx; /* the 12.8 ABI: fail_idx comes before the stream */
  void *const *dsts;
  const void *const *srcs;
  const size_t *sizes;
  size_t count;
  void *attrs;
  size_t *attrs_idxs;
  size_t num_attrs;
  size_t *fail_idx;
  cudaStream_t stream;
} pg_batch_t;

/* Checks, forwards and records a batch (pg_cuda_copy.c): each copy's source as its attribute's
 * srcAccessOrder says, its destination in stream order. Returns the real call's status, or
 * `missing` when there is no real function. */
int pg_shim_batch(const pg_batch_t *b, const char *api, bool ptsz, const pg_stack_t *st,
                  int missing);

#endif /* PG_OP_H */
