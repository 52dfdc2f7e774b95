/* pg_op.h: how every interceptor describes its call to core/ (a pg_op_t: the entry point, the
 * stream, the host spans and the call site) and brackets the forward with the two decisions.
 * Copies and kernel launches build their ops with these helpers only. */
#ifndef PG_OP_H
#define PG_OP_H

#include <stdint.h>

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

/* What a runtime copy does, for reports. */
static inline const char *pg_copy_what(enum cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToDevice: return "copy host->device";
    case cudaMemcpyDeviceToHost: return "copy device->host";
    case cudaMemcpyHostToHost: return "copy host->host";
    case cudaMemcpyDefault: return "copy (cudaMemcpyDefault)";
    default: return "copy device->device";
  }
}

/* cudaMemcpy2DAsync's host sides: their rows only, not the gaps between them. */
static inline void pg_op_add_copy_2d(pg_op_t *op, void *dst, size_t dpitch, const void *src,
                                     size_t spitch, size_t width, size_t height,
                                     enum cudaMemcpyKind kind) {
  if (kind != cudaMemcpyDeviceToHost)
    pg_op_add_pitched(op, src, spitch, 1, 0, 0, 0, width, height, 1, PG_DIR_READ);
  if (kind != cudaMemcpyHostToDevice)
    pg_op_add_pitched(op, dst, dpitch, 1, 0, 0, 0, width, height, 1, PG_DIR_WRITE);
}

/* cudaMemcpy3DAsync's host sides: pitched pointers only (arrays are device memory). */
static inline void pg_op_add_copy_3d(pg_op_t *op, const struct cudaMemcpy3DParms *p) {
  const struct cudaExtent e = p->extent;
  if (!p->srcArray && p->kind != cudaMemcpyDeviceToHost)
    pg_op_add_pitched(op, p->srcPtr.ptr, p->srcPtr.pitch, p->srcPtr.ysize, p->srcPos.x,
                      p->srcPos.y, p->srcPos.z, e.width, e.height, e.depth, PG_DIR_READ);
  if (!p->dstArray && p->kind != cudaMemcpyHostToDevice)
    pg_op_add_pitched(op, p->dstPtr.ptr, p->dstPtr.pitch, p->dstPtr.ysize, p->dstPos.x,
                      p->dstPos.y, p->dstPos.z, e.width, e.height, e.depth, PG_DIR_WRITE);
}

/* A CUdeviceptr that may be a host address (unified addressing). */
#define PG_HOST(p) ((void *)(uintptr_t)(p))

/* The host address one side of a CUDA_MEMCPY2D or CUDA_MEMCPY3D names, if it may be one: host
 * memory, or a unified address (core keeps it if it is pinned host memory). */
static inline const void *pg_cu_host_side(CUmemorytype type, const void *host, CUdeviceptr dev) {
  if (type == CU_MEMORYTYPE_HOST) return host;
  if (type == CU_MEMORYTYPE_UNIFIED) return PG_HOST(dev);
  return NULL;
}
#define PG_CU_SRC(p) pg_cu_host_side((p)->srcMemoryType, (p)->srcHost, (p)->srcDevice)
#define PG_CU_DST(p) pg_cu_host_side((p)->dstMemoryType, (p)->dstHost, (p)->dstDevice)
/* Whether a CUDA_MEMCPY2D/3D (NULL: no) may touch host memory, and what it does, for reports. */
#define PG_CU_COPY_HAS_HOST(p) ((p) && (PG_CU_SRC(p) || PG_CU_DST(p)))
#define PG_CU_COPY_WHAT(p) pg_cu_copy_what((p)->srcMemoryType, (p)->dstMemoryType)
static inline const char *pg_cu_copy_what(CUmemorytype src, CUmemorytype dst) {
  if (src == CU_MEMORYTYPE_HOST)
    return dst == CU_MEMORYTYPE_HOST ? "copy host->host" : "copy host->device";
  if (dst == CU_MEMORYTYPE_HOST) return "copy device->host";
  return "copy (unified addressing)";
}

/* The driver's CUDA_MEMCPY2D and CUDA_MEMCPY3D: each side that may be host memory. */
static inline void pg_op_add_cu_copy_2d(pg_op_t *op, const CUDA_MEMCPY2D *p) {
  pg_op_add_pitched(op, PG_CU_SRC(p), p->srcPitch, 1, p->srcXInBytes, p->srcY, 0,
                    p->WidthInBytes, p->Height, 1, PG_DIR_READ);
  pg_op_add_pitched(op, PG_CU_DST(p), p->dstPitch, 1, p->dstXInBytes, p->dstY, 0,
                    p->WidthInBytes, p->Height, 1, PG_DIR_WRITE);
}
static inline void pg_op_add_cu_copy_3d(pg_op_t *op, const CUDA_MEMCPY3D *p) {
  pg_op_add_pitched(op, PG_CU_SRC(p), p->srcPitch, p->srcHeight, p->srcXInBytes, p->srcY,
                    p->srcZ, p->WidthInBytes, p->Height, p->Depth, PG_DIR_READ);
  pg_op_add_pitched(op, PG_CU_DST(p), p->dstPitch, p->dstHeight, p->dstXInBytes, p->dstY,
                    p->dstZ, p->WidthInBytes, p->Height, p->Depth, PG_DIR_WRITE);
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
 * (pg_copy.c checks). */
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

/* Checks, forwards and records a batch (pg_copy.c): each copy's source as its attribute's
 * srcAccessOrder says, its destination in stream order. Returns the real call's status, or
 * `missing` when there is no real function. */
int pg_shim_batch(const pg_batch_t *b, const char *api, bool ptsz, const pg_stack_t *st,
                  int missing);

/* The runtime's cudaMemcpyBatchAsync (pg_entry_kinds.h): reads the arguments in the ABI the runtime
 * has (12.8's nine, or 13.0's eight, where `fail_idx` is the stream) and calls pg_shim_batch. */
int pg_shim_runtime_batch(enum pg_hook_id id, const char *api, bool ptsz, void *const *dsts,
                          const void *const *srcs, const size_t *sizes, size_t count,
                          struct cudaMemcpyAttributes *attrs, size_t *attrs_idxs,
                          size_t num_attrs, size_t *fail_idx, cudaStream_t s128,
                          const pg_stack_t *st);

#endif /* PG_OP_H */
