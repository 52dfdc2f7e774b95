/* sc_copy.c: the memcpy/memset family: plain, 2D, 3D and batch copies and memsets (sc_engine.h,
 * sc_batch.h: what the driver's cuMemcpy* and cuMemsetD8* run, per-thread variants included), and
 * the peer copies. Every copy becomes one op of byte segments run through the DMA translator. */
#include <stdlib.h>
#include <string.h>

#include "sc_internal.h"
#include "sc_engine.h"

/* Host synchronization follows CUDA's rules:
 *   - pinned or device memory on both sides: asynchronous (the *Async calls return at once);
 *   - a pageable source is staged (copied) before the call returns, the DMA happens later;
 *   - a pageable destination makes the call synchronous (it returns once the copy completed);
 *   - cudaMemcpy (no Async) returns after the copy completed, except device-to-device which
 *     is asynchronous; cudaMemset is asynchronous for device memory, synchronous otherwise.
 * The cudaMemcpyKind is validated but the direction is inferred from the pointers (unified
 * addressing), so cudaMemcpyDefault works everywhere. "Symbols" are plain addresses: a device
 * (arena) pointer or a host variable's address, copied to/from at the given offset. */

typedef struct sc_segs {
  sc_seg *v;
  size_t n, cap;
  bool oom;
} sc_segs;

static void sc_segs_add(sc_segs *s, void *dst, const void *src, size_t n) {
  if (n == 0 || s->oom) return;
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 8;
    sc_seg *v = realloc(s->v, cap * sizeof *v);
    if (!v) {
      s->oom = true;
      return;
    }
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n++] = (sc_seg){.dst = dst, .src = src, .n = n};
}

/* Stage marks: which sources must be copied at enqueue time regardless of their kind. */
typedef struct sc_copy_opts {
  bool sync;            /* the call returns only when the copy completed */
  const bool *stage_at; /* optional per-segment "copy the source during the call" */
} sc_copy_opts;

/* Turns segs into a copy op on s, applying the host-synchronization rules. Consumes segs. */
static cudaError_t sc_copy_submit(sc_stream *s, sc_segs *segs, sc_copy_opts opts) {
  if (segs->oom) {
    free(segs->v);
    return cudaErrorMemoryAllocation;
  }
  if (segs->n == 0) {
    free(segs->v);
    return cudaSuccess;
  }
  bool capturing = sc_capture_status(s) != cudaStreamCaptureStatusNone;
  if (capturing && opts.sync) {
    /* A synchronous copy cannot be part of a capture: it breaks it, as in CUDA. */
    free(segs->v);
    return sc_capture_break(s);
  }
  bool sync = opts.sync;
  size_t stage_len = 0;
  bool *stage = calloc(segs->n, sizeof *stage);
  if (!stage) {
    free(segs->v);
    return cudaErrorMemoryAllocation;
  }
  for (size_t i = 0; i < segs->n; i++) {
    /* A captured copy runs at each graph launch: it reads its source then, never at capture. */
    if (capturing) break;
    if (sc_classify(segs->v[i].dst) == SC_MEM_PAGEABLE) sync = true;
    if ((opts.stage_at && opts.stage_at[i]) || sc_classify(segs->v[i].src) == SC_MEM_PAGEABLE) {
      stage[i] = true;
      stage_len += segs->v[i].n;
    }
  }
  sc_op *op = sc_op_new(SC_OP_COPY);
  char *staging = stage_len ? malloc(stage_len) : NULL;
  if (!op || (stage_len && !staging)) {
    free(op);
    free(staging);
    free(stage);
    free(segs->v);
    return cudaErrorMemoryAllocation;
  }
  size_t off = 0;
  for (size_t i = 0; i < segs->n; i++) {
    if (!stage[i]) continue;
    sc_dma_copy(staging + off, segs->v[i].src, segs->v[i].n);
    segs->v[i].src = staging + off;
    off += segs->v[i].n;
  }
  free(stage);
  op->u.copy.segs = segs->v;
  op->u.copy.nsegs = segs->n;
  op->u.copy.staging = staging;
  op->u.copy.staging_len = stage_len;
  if (sync && !capturing) return sc_submit_sync(s, op);
  return sc_submit(s, op, NULL);
}

static bool sc_kind_ok(enum cudaMemcpyKind kind) {
  return (unsigned)kind <= (unsigned)cudaMemcpyDefault;
}

/* Whether the rows first_row .. last_row of a pitched operand, `width` bytes from column x, lie
 * in memory a copy may touch (sc_range_ok over their hull); false when the arithmetic overflows. */
static bool sc_pitched_ok(const void *ptr, size_t pitch, size_t first_row, size_t last_row,
                          size_t x, size_t width) {
  size_t start, end;
  if (__builtin_mul_overflow(first_row, pitch, &start) || __builtin_add_overflow(start, x, &start) ||
      __builtin_mul_overflow(last_row, pitch, &end) || __builtin_add_overflow(end, x, &end) ||
      __builtin_add_overflow(end, width, &end) ||
      (uintptr_t)ptr + end < (uintptr_t)ptr)
    return false;
  return sc_range_ok((const char *)ptr + start, end - start);
}

/* First and last row of a 3D operand's extent (in rows of its pitch); false on overflow. */
static bool sc_rows_3d(const struct cudaPos *pos, size_t ysize, const struct cudaExtent *e,
                       size_t *first, size_t *last) {
  size_t zf, zl;
  return !__builtin_mul_overflow(pos->z, ysize, &zf) && !__builtin_add_overflow(zf, pos->y, first) &&
         !__builtin_mul_overflow(pos->z + e->depth - 1, ysize, &zl) &&
         !__builtin_add_overflow(zl, pos->y + e->height - 1, last) && pos->z + e->depth > pos->z &&
         pos->y + e->height > pos->y;
}

/* ---- 1D ------------------------------------------------------------------------------- */
cudaError_t sc_memcpy_1d(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                                cudaStream_t h, bool ptsz, bool sync_api) {
  if (!sc_kind_ok(kind)) return sc_ret(cudaErrorInvalidMemcpyDirection);
  if (count && (!dst || !src)) return sc_ret(cudaErrorInvalidValue);
  if (!sc_range_ok(dst, count) || !sc_range_ok(src, count)) return sc_ret(cudaErrorInvalidValue);
  cudaError_t err = cudaSuccess;
  sc_stream *s = sc_stream_get(h, ptsz, &err);
  if (!s) return sc_ret(err);
  sc_segs segs = {0};
  sc_segs_add(&segs, dst, src, count);
  bool d2d = sc_classify(dst) == SC_MEM_DEVICE && sc_classify(src) == SC_MEM_DEVICE;
  return sc_ret(sc_copy_submit(s, &segs, (sc_copy_opts){.sync = sync_api && !d2d}));
}

/* ---- peer copies ---------------------------------------------------------------------- */
/* Both pointers must be device memory of the devices named. cudaMemcpyPeerAsync is an ordinary
 * copy on its stream (of any device: a copy may be queued on another device's stream, as in
 * CUDA). cudaMemcpyPeer is ordered after all work queued on the current, source and destination
 * devices and returns once the copy completed (CUDA only promises the ordering; returning later
 * is a superset). */
static cudaError_t sc_memcpy_peer(void *dst, int dst_dev, const void *src, int src_dev,
                                  size_t count, cudaStream_t h, bool ptsz, bool sync_api) {
  if (!sc_device_valid(dst_dev) || !sc_device_valid(src_dev)) return sc_ret(cudaErrorInvalidDevice);
  if (!count) return cudaSuccess;
  if (!dst || !src) return sc_ret(cudaErrorInvalidValue);
  if (sc_arena_device(dst) != dst_dev || sc_arena_device(src) != src_dev ||
      !sc_range_ok(dst, count) || !sc_range_ok(src, count))
    return sc_ret(cudaErrorInvalidValue);
  cudaError_t err = cudaSuccess;
  sc_stream *s = sc_stream_get(h, ptsz, &err);
  if (!s) return sc_ret(err);
  if (sync_api) {
    if ((err = sc_capture_break(s)) != cudaSuccess) return sc_ret(err);
    sc_device_sync(src_dev);
    if (dst_dev != src_dev) sc_device_sync(dst_dev);
    if (sc_device_current() != src_dev && sc_device_current() != dst_dev)
      sc_device_sync(sc_device_current());
  }
  sc_segs segs = {0};
  sc_segs_add(&segs, dst, src, count);
  return sc_ret(sc_copy_submit(s, &segs, (sc_copy_opts){.sync = sync_api}));
}

SC_API cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice,
                                  size_t count) {
  SC_ENTER("cudaMemcpyPeer");
  return sc_memcpy_peer(dst, dstDevice, src, srcDevice, count, NULL, false, true);
}

SC_API cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice,
                                       size_t count, cudaStream_t stream) {
  SC_ENTER("cudaMemcpyPeerAsync");
  return sc_memcpy_peer(dst, dstDevice, src, srcDevice, count, stream, false, false);
}

/* ---- 2D and 3D ------------------------------------------------------------------------- */
cudaError_t sc_memcpy_2d(void *dst, size_t dpitch, const void *src, size_t spitch,
                                size_t width, size_t height, enum cudaMemcpyKind kind,
                                cudaStream_t h, bool ptsz, bool sync_api) {
  if (!sc_kind_ok(kind)) return sc_ret(cudaErrorInvalidMemcpyDirection);
  if (height > 1 && (width > dpitch || width > spitch)) return sc_ret(cudaErrorInvalidPitchValue);
  if (width && height && (!dst || !src)) return sc_ret(cudaErrorInvalidValue);
  if (width && height &&
      (!sc_pitched_ok(dst, dpitch, 0, height - 1, 0, width) ||
       !sc_pitched_ok(src, spitch, 0, height - 1, 0, width)))
    return sc_ret(cudaErrorInvalidValue);
  cudaError_t err = cudaSuccess;
  sc_stream *s = sc_stream_get(h, ptsz, &err);
  if (!s) return sc_ret(err);
  sc_segs segs = {0};
  for (size_t y = 0; y < height; y++)
    sc_segs_add(&segs, (char *)dst + y * dpitch, (const char *)src + y * spitch, width);
  bool d2d = sc_classify(dst) == SC_MEM_DEVICE && sc_classify(src) == SC_MEM_DEVICE;
  return sc_ret(sc_copy_submit(s, &segs, (sc_copy_opts){.sync = sync_api && !d2d}));
}

/* Pitched pointers only (CUDA arrays are not simulated); widths and positions in bytes. */
cudaError_t sc_memcpy_3d(const struct cudaMemcpy3DParms *p, cudaStream_t h, bool ptsz,
                                bool sync_api) {
  if (!p) return sc_ret(cudaErrorInvalidValue);
  if (p->srcArray || p->dstArray) return sc_ret(cudaErrorInvalidValue);
  if (!sc_kind_ok(p->kind)) return sc_ret(cudaErrorInvalidMemcpyDirection);
  const struct cudaPitchedPtr *sp = &p->srcPtr, *dp = &p->dstPtr;
  if (p->extent.width > sp->pitch || p->extent.width > dp->pitch)
    return sc_ret(cudaErrorInvalidPitchValue);
  cudaError_t err = cudaSuccess;
  sc_stream *s = sc_stream_get(h, ptsz, &err);
  if (!s) return sc_ret(err);
  size_t sys = sp->ysize ? sp->ysize : p->extent.height;
  size_t dys = dp->ysize ? dp->ysize : p->extent.height;
  if (p->extent.width && p->extent.height && p->extent.depth) {
    size_t sf, sl, df, dl;
    if (!sc_rows_3d(&p->srcPos, sys, &p->extent, &sf, &sl) ||
        !sc_rows_3d(&p->dstPos, dys, &p->extent, &df, &dl) ||
        !sc_pitched_ok(sp->ptr, sp->pitch, sf, sl, p->srcPos.x, p->extent.width) ||
        !sc_pitched_ok(dp->ptr, dp->pitch, df, dl, p->dstPos.x, p->extent.width))
      return sc_ret(cudaErrorInvalidValue);
  }
  sc_segs segs = {0};
  for (size_t z = 0; z < p->extent.depth; z++)
    for (size_t y = 0; y < p->extent.height; y++) {
      const char *src = (const char *)sp->ptr +
                        ((p->srcPos.z + z) * sys + p->srcPos.y + y) * sp->pitch + p->srcPos.x;
      char *dst = (char *)dp->ptr + ((p->dstPos.z + z) * dys + p->dstPos.y + y) * dp->pitch +
                  p->dstPos.x;
      sc_segs_add(&segs, dst, src, p->extent.width);
    }
  bool d2d = sc_classify(dp->ptr) == SC_MEM_DEVICE && sc_classify(sp->ptr) == SC_MEM_DEVICE;
  return sc_ret(sc_copy_submit(s, &segs, (sc_copy_opts){.sync = sync_api && !d2d}));
}

/* ---- batches (entered from rt_batch_abi.c, which picks the ABI) ------------------------ */
#if CUDART_VERSION >= 12080
int sc_memcpy_batch(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
                    void *attrs_v, size_t *attrs_idxs, size_t num_attrs, size_t *fail_idx,
                    void *stream, int ptsz) {
  const struct cudaMemcpyAttributes *attrs = attrs_v;
  if (fail_idx) *fail_idx = SIZE_MAX;
  if (!count || !dsts || !srcs || !sizes || !attrs || !attrs_idxs || !num_attrs ||
      num_attrs > count || attrs_idxs[0] != 0)
    return sc_ret(cudaErrorInvalidValue);
  for (size_t j = 1; j < num_attrs; j++)
    if (attrs_idxs[j] <= attrs_idxs[j - 1] || attrs_idxs[j] >= count)
      return sc_ret(cudaErrorInvalidValue);
  /* The batch API refuses the legacy default stream. */
  if (stream == cudaStreamLegacy || (!stream && !ptsz)) return sc_ret(cudaErrorInvalidValue);
  cudaError_t err = cudaSuccess;
  sc_stream *s = sc_stream_get((cudaStream_t)stream, ptsz, &err);
  if (!s) return sc_ret(err);
  bool *stage = calloc(count, sizeof *stage);
  if (!stage) return sc_ret(cudaErrorMemoryAllocation);
  sc_segs segs = {0};
  size_t a = 0;
  for (size_t i = 0; i < count; i++) {
    while (a + 1 < num_attrs && attrs_idxs[a + 1] <= i) a++;
    enum cudaMemcpySrcAccessOrder order = attrs[a].srcAccessOrder;
    if ((order != cudaMemcpySrcAccessOrderStream && order != cudaMemcpySrcAccessOrderDuringApiCall &&
         order != cudaMemcpySrcAccessOrderAny) ||
        (sizes[i] && (!dsts[i] || !srcs[i])) || !sc_range_ok(dsts[i], sizes[i]) ||
        !sc_range_ok(srcs[i], sizes[i])) {
      if (fail_idx) *fail_idx = i;
      free(stage);
      free(segs.v);
      return sc_ret(cudaErrorInvalidValue);
    }
    if (sizes[i]) {
      /* Any lets the source be read out of stream order, before earlier work on the stream
       * completed: simcuda reads it during the call, as for DuringApiCall. */
      stage[segs.n] = order == cudaMemcpySrcAccessOrderDuringApiCall ||
                      order == cudaMemcpySrcAccessOrderAny;
      sc_segs_add(&segs, dsts[i], srcs[i], sizes[i]);
    }
  }
  err = sc_copy_submit(s, &segs, (sc_copy_opts){.stage_at = stage});
  free(stage);
  return sc_ret(err);
}

int sc_memcpy_3d_batch(size_t num_ops, void *op_list, size_t *fail_idx, unsigned long long flags,
                       void *stream, int ptsz) {
  const struct cudaMemcpy3DBatchOp *ops = op_list;
  if (fail_idx) *fail_idx = SIZE_MAX;
  if (!num_ops || !ops || flags) return sc_ret(cudaErrorInvalidValue);
  if (stream == cudaStreamLegacy || (!stream && !ptsz)) return sc_ret(cudaErrorInvalidValue);
  cudaError_t err = cudaSuccess;
  sc_stream *s = sc_stream_get((cudaStream_t)stream, ptsz, &err);
  if (!s) return sc_ret(err);
  sc_segs segs = {0};
  bool *stage = NULL;
  size_t nstage = 0;
  for (size_t i = 0; i < num_ops; i++) {
    const struct cudaMemcpy3DBatchOp *o = &ops[i];
    /* Pointer operands only; rows are extent.width bytes, rowLength/layerHeight in bytes/rows
     * (0 means tightly packed). */
    if (o->src.type != cudaMemcpyOperandTypePointer || o->dst.type != cudaMemcpyOperandTypePointer ||
        !o->extent.width || !o->extent.height || !o->extent.depth) {
      if (fail_idx) *fail_idx = i;
      free(segs.v);
      free(stage);
      return sc_ret(cudaErrorInvalidValue);
    }
    size_t w = o->extent.width, hgt = o->extent.height;
    size_t srow = o->src.op.ptr.rowLength ? o->src.op.ptr.rowLength : w;
    size_t drow = o->dst.op.ptr.rowLength ? o->dst.op.ptr.rowLength : w;
    size_t slayer = o->src.op.ptr.layerHeight ? o->src.op.ptr.layerHeight : hgt;
    size_t dlayer = o->dst.op.ptr.layerHeight ? o->dst.op.ptr.layerHeight : hgt;
    struct cudaPos origin = {0, 0, 0};
    size_t sf, sl, df, dl;
    if (!sc_rows_3d(&origin, slayer, &o->extent, &sf, &sl) ||
        !sc_rows_3d(&origin, dlayer, &o->extent, &df, &dl) ||
        !sc_pitched_ok(o->src.op.ptr.ptr, srow, sf, sl, 0, w) ||
        !sc_pitched_ok(o->dst.op.ptr.ptr, drow, df, dl, 0, w)) {
      if (fail_idx) *fail_idx = i;
      free(segs.v);
      free(stage);
      return sc_ret(cudaErrorInvalidValue);
    }
    for (size_t z = 0; z < o->extent.depth; z++)
      for (size_t y = 0; y < hgt; y++) {
        size_t before = segs.n;
        sc_segs_add(&segs, (char *)o->dst.op.ptr.ptr + (z * dlayer + y) * drow,
                    (const char *)o->src.op.ptr.ptr + (z * slayer + y) * srow, w);
        if (segs.n > before) {
          bool *ns = realloc(stage, segs.n * sizeof *ns);
          if (!ns) {
            free(segs.v);
            free(stage);
            return sc_ret(cudaErrorMemoryAllocation);
          }
          stage = ns;
          stage[segs.n - 1] = o->srcAccessOrder == cudaMemcpySrcAccessOrderDuringApiCall ||
                              o->srcAccessOrder == cudaMemcpySrcAccessOrderAny;
          nstage = segs.n;
        }
      }
  }
  (void)nstage;
  err = sc_copy_submit(s, &segs, (sc_copy_opts){.stage_at = stage});
  free(stage);
  return sc_ret(err);
}
#else
int sc_memcpy_batch(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
                    void *attrs_v, size_t *attrs_idxs, size_t num_attrs, size_t *fail_idx,
                    void *stream, int ptsz) {
  (void)dsts, (void)srcs, (void)sizes, (void)count, (void)attrs_v, (void)attrs_idxs;
  (void)num_attrs, (void)fail_idx, (void)stream, (void)ptsz;
  return sc_ret(cudaErrorNotSupported); /* headers older than 12.8 lack the batch types */
}

int sc_memcpy_3d_batch(size_t num_ops, void *op_list, size_t *fail_idx, unsigned long long flags,
                       void *stream, int ptsz) {
  (void)num_ops, (void)op_list, (void)fail_idx, (void)flags, (void)stream, (void)ptsz;
  return sc_ret(cudaErrorNotSupported);
}
#endif

/* ---- memset ---------------------------------------------------------------------------- */
cudaError_t sc_memset(void *dst, int value, size_t count, cudaStream_t h, bool ptsz,
                             bool sync_api) {
  if (count && !dst) return sc_ret(cudaErrorInvalidValue);
  if (!count) return cudaSuccess;
  if (!sc_range_ok(dst, count)) return sc_ret(cudaErrorInvalidValue);
  cudaError_t err = cudaSuccess;
  sc_stream *s = sc_stream_get(h, ptsz, &err);
  if (!s) return sc_ret(err);
  sc_op *op = sc_op_new(SC_OP_MEMSET);
  if (!op) return sc_ret(cudaErrorMemoryAllocation);
  op->u.set.dst = dst;
  op->u.set.value = value;
  op->u.set.n = count;
  bool host_target = sc_classify(dst) != SC_MEM_DEVICE;
  if ((sync_api || sc_classify(dst) == SC_MEM_PAGEABLE) && host_target &&
      sc_capture_status(s) == cudaStreamCaptureStatusNone)
    return sc_ret(sc_submit_sync(s, op));
  return sc_ret(sc_submit(s, op, NULL));
}
