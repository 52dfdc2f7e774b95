/* pg_cuda_copy.c: interceptors for asynchronous copies, plain and _ptsz.
 * Each one describes its host operands as spans (which way the device touches them, pg_op.h) and
 * brackets the real call with pg_on_op_begin / pg_on_op_end (PG_TRACKED_CALL). Which
 * spans are really pinned is decided in core/, from the tracker's regions and the runtime's
 * pointer attributes. */
#include <string.h>

#include "pg_op.h"

/* ---- cudaMemcpyAsync ------------------------------------------------------------------------ */
static const char *kind_name(enum cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToDevice: return "copy host->device";
    case cudaMemcpyDeviceToHost: return "copy device->host";
    case cudaMemcpyHostToHost: return "copy host->host";
    case cudaMemcpyDefault: return "copy (cudaMemcpyDefault)";
    default: return "copy device->device";
  }
}

#define PG_MEMCPY_ASYNC(name, ptsz)                                                           \
  PG_INTERCEPT(cudaError_t, name, void *dst, const void *src, size_t n,                       \
               enum cudaMemcpyKind kind, cudaStream_t s) {                                    \
    if (!pg_shim_start_tracking() || kind == cudaMemcpyDeviceToDevice)                        \
      return PG_FORWARD(name, dst, src, n, kind, s);                                          \
    pg_op_t op;                                                                               \
    pg_op_begin(&op, #name, kind_name(kind), s, ptsz);                                        \
    pg_op_add_copy_spans(&op, dst, src, n, kind);                                             \
    PG_CAPTURE_SITE(&op);                                                                      \
    return PG_TRACKED_CALL(&op, PG_FORWARD(name, dst, src, n, kind, s));                      \
  }
PG_MEMCPY_ASYNC(cudaMemcpyAsync, false)
PG_MEMCPY_ASYNC(cudaMemcpyAsync_ptsz, true)

/* ---- cudaMemcpy2DAsync: the host side touches its rows only, not the gaps between them ------- */
#define PG_MEMCPY_2D_ASYNC(name, ptsz)                                                        \
  PG_INTERCEPT(cudaError_t, name, void *dst, size_t dpitch, const void *src, size_t spitch,   \
               size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t s) {       \
    if (!pg_shim_start_tracking() || kind == cudaMemcpyDeviceToDevice)                        \
      return PG_FORWARD(name, dst, dpitch, src, spitch, width, height, kind, s);              \
    pg_op_t op;                                                                               \
    pg_op_begin(&op, #name, kind_name(kind), s, ptsz);                                        \
    if (kind != cudaMemcpyDeviceToHost)                                                       \
      pg_op_add_pitched(&op, src, spitch, 1, 0, 0, 0, width, height, 1, PG_DIR_READ);         \
    if (kind != cudaMemcpyHostToDevice)                                                       \
      pg_op_add_pitched(&op, dst, dpitch, 1, 0, 0, 0, width, height, 1, PG_DIR_WRITE);        \
    PG_CAPTURE_SITE(&op);                                                                      \
    return PG_TRACKED_SHAPED_CALL(&op, PG_FORWARD(name, dst, dpitch, src, spitch, width,      \
                                                  height, kind, s));                          \
  }
PG_MEMCPY_2D_ASYNC(cudaMemcpy2DAsync, false)
PG_MEMCPY_2D_ASYNC(cudaMemcpy2DAsync_ptsz, true)

/* ---- cudaMemcpy3DAsync: pitched pointers only (arrays are device memory) ------------------- */
static void add_pitched(pg_op_t *op, struct cudaPitchedPtr pp, struct cudaPos pos,
                        struct cudaExtent ext, pg_dir_t dir) {
  pg_op_add_pitched(op, pp.ptr, pp.pitch, pp.ysize, pos.x, pos.y, pos.z, ext.width, ext.height,
                    ext.depth, dir);
}

#define PG_MEMCPY_3D_ASYNC(name, ptsz)                                                        \
  PG_INTERCEPT(cudaError_t, name, const struct cudaMemcpy3DParms *p, cudaStream_t s) {        \
    if (!pg_shim_start_tracking() || !p || p->kind == cudaMemcpyDeviceToDevice)               \
      return PG_FORWARD(name, p, s);                                                          \
    pg_op_t op;                                                                               \
    pg_op_begin(&op, #name, kind_name(p->kind), s, ptsz);                                     \
    if (!p->srcArray && p->kind != cudaMemcpyDeviceToHost)                                    \
      add_pitched(&op, p->srcPtr, p->srcPos, p->extent, PG_DIR_READ);                         \
    if (!p->dstArray && p->kind != cudaMemcpyHostToDevice)                                    \
      add_pitched(&op, p->dstPtr, p->dstPos, p->extent, PG_DIR_WRITE);                        \
    PG_CAPTURE_SITE(&op);                                                                      \
    return PG_TRACKED_SHAPED_CALL(&op, PG_FORWARD(name, p, s));                               \
  }
PG_MEMCPY_3D_ASYNC(cudaMemcpy3DAsync, false)
PG_MEMCPY_3D_ASYNC(cudaMemcpy3DAsync_ptsz, true)

/* ---- symbols: the host side is src (to symbol) or dst (from symbol) ------------------------- */
#define PG_MEMCPY_TO_SYMBOL_ASYNC(name, ptsz)                                                 \
  PG_INTERCEPT(cudaError_t, name, const void *sym, const void *src, size_t n, size_t off,     \
               enum cudaMemcpyKind kind, cudaStream_t s) {                                    \
    if (!pg_shim_start_tracking() || kind == cudaMemcpyDeviceToDevice)                        \
      return PG_FORWARD(name, sym, src, n, off, kind, s);                                     \
    pg_op_t op;                                                                               \
    pg_op_begin(&op, #name, "copy host->symbol", s, ptsz);                                    \
    pg_op_add_span(&op, src, n, PG_DIR_READ);                                                 \
    PG_CAPTURE_SITE(&op);                                                                      \
    return PG_TRACKED_CALL(&op, PG_FORWARD(name, sym, src, n, off, kind, s));                 \
  }
PG_MEMCPY_TO_SYMBOL_ASYNC(cudaMemcpyToSymbolAsync, false)
PG_MEMCPY_TO_SYMBOL_ASYNC(cudaMemcpyToSymbolAsync_ptsz, true)

#define PG_MEMCPY_FROM_SYMBOL_ASYNC(name, ptsz)                                               \
  PG_INTERCEPT(cudaError_t, name, void *dst, const void *sym, size_t n, size_t off,           \
               enum cudaMemcpyKind kind, cudaStream_t s) {                                    \
    if (!pg_shim_start_tracking() || kind == cudaMemcpyDeviceToDevice)                        \
      return PG_FORWARD(name, dst, sym, n, off, kind, s);                                     \
    pg_op_t op;                                                                               \
    pg_op_begin(&op, #name, "copy symbol->host", s, ptsz);                                    \
    pg_op_add_span(&op, dst, n, PG_DIR_WRITE);                                                \
    PG_CAPTURE_SITE(&op);                                                                      \
    return PG_TRACKED_CALL(&op, PG_FORWARD(name, dst, sym, n, off, kind, s));                 \
  }
PG_MEMCPY_FROM_SYMBOL_ASYNC(cudaMemcpyFromSymbolAsync, false)
PG_MEMCPY_FROM_SYMBOL_ASYNC(cudaMemcpyFromSymbolAsync_ptsz, true)

/* ---- cudaMemcpyBatchAsync: 9 arguments in 12.8, 8 in 13.0 (see pg_intercept.h) -------------- */
static bool batch_abi_is_128(void) {
  int v = pg_runtime_version();
  return v >= 12080 && v < 13000;
}

static int batch_forward(const pg_batch_t *b, int missing) {
  void *real = pg_real(b->id);
  if (!real) return missing;
  struct cudaMemcpyAttributes *attrs = b->attrs;
  if (b->with_fail_idx)
    return ((pg_batch_fn_128)real)(b->dsts, b->srcs, b->sizes, b->count, attrs, b->attrs_idxs,
                                   b->num_attrs, b->fail_idx, b->stream);
  return ((pg_batch_fn_13)real)(b->dsts, b->srcs, b->sizes, b->count, attrs, b->attrs_idxs,
                                b->num_attrs, b->stream);
}

/* When copy i reads its source: attrs[a] applies to copies attrs_idxs[a] to attrs_idxs[a+1] - 1.
 * *a is the attribute of the copy before i (copies are described in increasing order). */
static pg_src_order_t batch_order(const pg_batch_t *b, size_t i, size_t *a) {
  if (!b->attrs || !b->attrs_idxs || !b->num_attrs) return PG_SRC_STREAM;
  while (*a + 1 < b->num_attrs && b->attrs_idxs[*a + 1] <= i) (*a)++;
  switch (((const struct cudaMemcpyAttributes *)b->attrs)[*a].srcAccessOrder) {
    case cudaMemcpySrcAccessOrderDuringApiCall: return PG_SRC_AT_CALL;
    case cudaMemcpySrcAccessOrderAny: return PG_SRC_EARLY;
    default: return PG_SRC_STREAM;
  }
}

/* Copies are described in groups that fit one pg_op; every group is checked before the single
 * real call and recorded after it, all on the same stream. Like cudaMemcpyDefault, either side
 * of each copy may be host memory. */
#define PG_BATCH_GROUP (PG_OP_MAX_SPANS / 2)

static void batch_group(pg_op_t *op, const pg_batch_t *b, const char *api, bool ptsz,
                        const pg_stack_t *st, size_t gi, size_t *a) {
  pg_op_begin(op, api, "batch copy", b->stream, ptsz);
  pg_stack_copy(&op->stack, st);
  for (size_t i = gi * PG_BATCH_GROUP; i < b->count && i < (gi + 1) * PG_BATCH_GROUP; i++) {
    pg_op_add_source(op, b->srcs[i], b->sizes[i], batch_order(b, i, a));
    pg_op_add_span(op, b->dsts[i], b->sizes[i], PG_DIR_WRITE);
  }
}

int pg_shim_batch(const pg_batch_t *b, const char *api, bool ptsz, const pg_stack_t *st,
                  int missing) {
  if (!pg_shim_start_tracking() || !b->dsts || !b->srcs || !b->sizes)
    return batch_forward(b, missing);
  size_t ngroups = (b->count + PG_BATCH_GROUP - 1) / PG_BATCH_GROUP, a = 0;
  pg_reentry_t r = pg_shim_enter();
  pg_op_t op;
  for (size_t gi = 0; gi < ngroups; gi++) {
    batch_group(&op, b, api, ptsz, st, gi, &a);
    pg_on_op_begin(&op);
  }
  int err = batch_forward(b, missing);
  if (err == 0) {
    a = 0;
    for (size_t gi = 0; gi < ngroups; gi++) {
      batch_group(&op, b, api, ptsz, st, gi, &a);
      pg_on_op_end(&op);
    }
  }
  pg_shim_leave(r);
  return err;
}

/* Reads the arguments in the ABI the runtime has. Not inlined: a 13.0 caller passed no 9th
 * argument, so the entry point must never write to that stack slot (the caller's), which the
 * compiler may do with a parameter it rewrites in place; here they are this function's own
 * copies. */
__attribute__((noinline)) static cudaError_t runtime_batch(
    enum pg_hook_id id, const char *api, bool ptsz, void *const *dsts, const void *const *srcs,
    const size_t *sizes, size_t count, struct cudaMemcpyAttributes *attrs, size_t *attrs_idxs,
    size_t num_attrs, size_t *fail_idx, cudaStream_t s128, const pg_stack_t *st) {
  bool abi128 = batch_abi_is_128();
  /* In the 13.0 ABI the 8th argument is the stream; the 9th was never passed. */
  pg_batch_t b = {id, abi128, dsts, srcs, sizes, count, attrs, attrs_idxs, num_attrs,
                  abi128 ? fail_idx : NULL, abi128 ? s128 : (cudaStream_t)fail_idx};
  return (cudaError_t)pg_shim_batch(&b, api, ptsz, st, cudaErrorSharedObjectSymbolNotFound);
}

/* The exported definitions take the 12.8 shape, so they cannot share a C name with the 13.0
 * prototype in cuda_runtime_api.h: an assembler label gives them the runtime's symbol name. */
#define PG_MEMCPY_BATCH_ASYNC(name, ptsz)                                                     \
  PG_EXPORT cudaError_t pg_entry_##name(                                                      \
      void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,          \
      struct cudaMemcpyAttributes *attrs, size_t *attrs_idxs, size_t num_attrs,               \
      size_t *fail_idx, cudaStream_t s) __asm__(#name);                                       \
  PG_WRAPPER(name, pg_entry_##name);                                                          \
  cudaError_t pg_entry_##name(void *const *dsts, const void *const *srcs,                     \
                              const size_t *sizes, size_t count,                              \
                              struct cudaMemcpyAttributes *attrs, size_t *attrs_idxs,         \
                              size_t num_attrs, size_t *fail_idx, cudaStream_t s) {           \
    pg_stack_t st;                                                                            \
    PG_CAPTURE(&st);                                                                          \
    return runtime_batch(PG_HOOK_ID_##name, #name, ptsz, dsts, srcs, sizes, count, attrs,     \
                         attrs_idxs, num_attrs, fail_idx, s, &st);                            \
  }
PG_MEMCPY_BATCH_ASYNC(cudaMemcpyBatchAsync, false)
PG_MEMCPY_BATCH_ASYNC(cudaMemcpyBatchAsync_ptsz, true)
