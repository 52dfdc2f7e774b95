/* pg_cuda_copy.c: interceptors for asynchronous copies, plain and _ptsz.
 * Each one describes its host operands as spans (which way the device touches them, pg_op.h) and
 * brackets the real call with pg_decide_before_op / pg_decide_after_op (PG_TRACKED_CALL). Which
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
    PG_CAPTURE(&op.stack);                                                                    \
    pg_op_add_copy_spans(&op, dst, src, n, kind);                                             \
    return PG_TRACKED_CALL(&op, PG_FORWARD(name, dst, src, n, kind, s));                      \
  }
PG_MEMCPY_ASYNC(cudaMemcpyAsync, false)
PG_MEMCPY_ASYNC(cudaMemcpyAsync_ptsz, true)

/* ---- cudaMemcpy2DAsync: the host span covers every row, pitch gaps included --------------- */
static size_t span_2d(size_t pitch, size_t width, size_t height) {
  return height ? pitch * (height - 1) + width : 0;
}

#define PG_MEMCPY_2D_ASYNC(name, ptsz)                                                        \
  PG_INTERCEPT(cudaError_t, name, void *dst, size_t dpitch, const void *src, size_t spitch,   \
               size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t s) {       \
    if (!pg_shim_start_tracking() || kind == cudaMemcpyDeviceToDevice)                        \
      return PG_FORWARD(name, dst, dpitch, src, spitch, width, height, kind, s);              \
    pg_op_t op;                                                                               \
    pg_op_begin(&op, #name, kind_name(kind), s, ptsz);                                        \
    PG_CAPTURE(&op.stack);                                                                    \
    if (kind != cudaMemcpyDeviceToHost)                                                       \
      pg_op_add_span(&op, src, span_2d(spitch, width, height), PG_DIR_READ);                  \
    if (kind != cudaMemcpyHostToDevice)                                                       \
      pg_op_add_span(&op, dst, span_2d(dpitch, width, height), PG_DIR_WRITE);                 \
    return PG_TRACKED_CALL(&op, PG_FORWARD(name, dst, dpitch, src, spitch, width, height,     \
                                           kind, s));                                         \
  }
PG_MEMCPY_2D_ASYNC(cudaMemcpy2DAsync, false)
PG_MEMCPY_2D_ASYNC(cudaMemcpy2DAsync_ptsz, true)

/* ---- cudaMemcpy3DAsync: pitched pointers only (arrays are device memory) ------------------- */
static void add_pitched(pg_op_t *op, struct cudaPitchedPtr pp, struct cudaPos pos,
                        struct cudaExtent ext, pg_dir_t dir) {
  if (!pp.ptr || ext.width == 0 || ext.height == 0 || ext.depth == 0) return;
  size_t slice = pp.pitch * pp.ysize;
  const char *base = (const char *)pp.ptr + pos.z * slice + pos.y * pp.pitch + pos.x;
  pg_op_add_span(op, base, (ext.depth - 1) * slice + (ext.height - 1) * pp.pitch + ext.width, dir);
}

#define PG_MEMCPY_3D_ASYNC(name, ptsz)                                                        \
  PG_INTERCEPT(cudaError_t, name, const struct cudaMemcpy3DParms *p, cudaStream_t s) {        \
    if (!pg_shim_start_tracking() || !p || p->kind == cudaMemcpyDeviceToDevice)               \
      return PG_FORWARD(name, p, s);                                                          \
    pg_op_t op;                                                                               \
    pg_op_begin(&op, #name, kind_name(p->kind), s, ptsz);                                     \
    PG_CAPTURE(&op.stack);                                                                    \
    if (!p->srcArray && p->kind != cudaMemcpyDeviceToHost)                                    \
      add_pitched(&op, p->srcPtr, p->srcPos, p->extent, PG_DIR_READ);                         \
    if (!p->dstArray && p->kind != cudaMemcpyHostToDevice)                                    \
      add_pitched(&op, p->dstPtr, p->dstPos, p->extent, PG_DIR_WRITE);                        \
    return PG_TRACKED_CALL(&op, PG_FORWARD(name, p, s));                                      \
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
    PG_CAPTURE(&op.stack);                                                                    \
    pg_op_add_span(&op, src, n, PG_DIR_READ);                                                 \
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
    PG_CAPTURE(&op.stack);                                                                    \
    pg_op_add_span(&op, dst, n, PG_DIR_WRITE);                                                \
    return PG_TRACKED_CALL(&op, PG_FORWARD(name, dst, sym, n, off, kind, s));                 \
  }
PG_MEMCPY_FROM_SYMBOL_ASYNC(cudaMemcpyFromSymbolAsync, false)
PG_MEMCPY_FROM_SYMBOL_ASYNC(cudaMemcpyFromSymbolAsync_ptsz, true)

/* ---- cudaMemcpyBatchAsync: 9 arguments in 12.8, 8 in 13.0 (see pg_intercept.h) -------------- */
static bool batch_abi_is_128(void) {
  int v = pg_runtime_version();
  return v >= 12080 && v < 13000;
}

static cudaError_t batch_forward(enum pg_hook_id id, bool abi128, void *const *dsts,
                                 const void *const *srcs, const size_t *sizes, size_t count,
                                 struct cudaMemcpyAttributes *attrs, size_t *attrs_idxs,
                                 size_t num_attrs, size_t *fail_idx, cudaStream_t s) {
  void *real = pg_real(id);
  if (!real) return cudaErrorSharedObjectSymbolNotFound;
  if (abi128)
    return ((pg_batch_fn_128)real)(dsts, srcs, sizes, count, attrs, attrs_idxs, num_attrs,
                                   fail_idx, s);
  return ((pg_batch_fn_13)real)(dsts, srcs, sizes, count, attrs, attrs_idxs, num_attrs, s);
}

/* Copies are described in groups that fit one pg_op; every group is checked before the single
 * real call and recorded after it, all on the same stream. */
#define PG_BATCH_GROUP (PG_OP_MAX_SPANS / 2)

static cudaError_t batch_common(enum pg_hook_id id, const char *api, bool ptsz,
                                void *const *dsts, const void *const *srcs, const size_t *sizes,
                                size_t count, struct cudaMemcpyAttributes *attrs,
                                size_t *attrs_idxs, size_t num_attrs, size_t *fail_idx,
                                cudaStream_t s128, const pg_stack_t *st) {
  bool abi128 = batch_abi_is_128();
  /* In the 13.0 ABI the 8th argument is the stream; the 9th was never passed. */
  cudaStream_t s = abi128 ? s128 : (cudaStream_t)fail_idx;
  if (!pg_shim_start_tracking() || !dsts || !srcs || !sizes)
    return batch_forward(id, abi128, dsts, srcs, sizes, count, attrs, attrs_idxs, num_attrs,
                         fail_idx, s);
  size_t ngroups = (count + PG_BATCH_GROUP - 1) / PG_BATCH_GROUP;
  pg_reentry_t r = pg_shim_enter();
  pg_op_t op;
  for (size_t gi = 0; gi < ngroups; gi++) {
    pg_op_begin(&op, api, "batch copy", s, ptsz);
    pg_stack_copy(&op.stack, st);
    for (size_t i = gi * PG_BATCH_GROUP; i < count && i < (gi + 1) * PG_BATCH_GROUP; i++)
      pg_op_add_copy_spans(&op, dsts[i], srcs[i], sizes[i], cudaMemcpyDefault);
    pg_decide_before_op(&op);
  }
  cudaError_t err = batch_forward(id, abi128, dsts, srcs, sizes, count, attrs, attrs_idxs,
                                  num_attrs, fail_idx, s);
  if (err == cudaSuccess) {
    for (size_t gi = 0; gi < ngroups; gi++) {
      pg_op_begin(&op, api, "batch copy", s, ptsz);
      pg_stack_copy(&op.stack, st);
      for (size_t i = gi * PG_BATCH_GROUP; i < count && i < (gi + 1) * PG_BATCH_GROUP; i++)
        pg_op_add_copy_spans(&op, dsts[i], srcs[i], sizes[i], cudaMemcpyDefault);
      pg_decide_after_op(&op);
    }
  }
  pg_shim_leave(r);
  return err;
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
    return batch_common(PG_HOOK_ID_##name, #name, ptsz, dsts, srcs, sizes, count, attrs,      \
                        attrs_idxs, num_attrs, fail_idx, s, &st);                             \
  }
PG_MEMCPY_BATCH_ASYNC(cudaMemcpyBatchAsync, false)
PG_MEMCPY_BATCH_ASYNC(cudaMemcpyBatchAsync_ptsz, true)
