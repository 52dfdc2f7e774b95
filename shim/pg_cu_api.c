/* pg_cu_api.c: interceptors of the driver API, for the clients that reach CUDA without the
 * runtime pinguard interposes (a static runtime, cuda-python, CuPy, Triton): pinning, copies,
 * kernel launches, and what orders or completes them. Each is keyed by its exact ABI variant
 * (_v2, _ptsz, _v2_ptsz) and makes the same core calls as its runtime twin, through the same
 * helpers (pg_op.h, pg_shim.h). Handles are the runtime's (a CUstream is a cudaStream_t, a
 * CUevent a cudaEvent_t), and the flags of the pinning calls have the runtime's values.
 *
 * How clients get these wrappers is pg_cu_entry.c's business; that file also keeps the rule
 * that a runtime call and the driver call it makes underneath are tracked once. */
#include <cuda.h>
#undef cuGetProcAddress

#include "pg_op.h"

/* The per-thread-default-stream twins, which the header declares only in that build mode. */
#define PG_DECLARE_CU_PTSZ(name, twin) extern __typeof__(name) twin
PG_DECLARE_CU_PTSZ(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz);
PG_DECLARE_CU_PTSZ(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz);
PG_DECLARE_CU_PTSZ(cuMemcpyAsync, cuMemcpyAsync_ptsz);
PG_DECLARE_CU_PTSZ(cuMemcpy2DAsync_v2, cuMemcpy2DAsync_v2_ptsz);
PG_DECLARE_CU_PTSZ(cuMemcpy3DAsync_v2, cuMemcpy3DAsync_v2_ptsz);
PG_DECLARE_CU_PTSZ(cuLaunchKernel, cuLaunchKernel_ptsz);
PG_DECLARE_CU_PTSZ(cuEventRecord, cuEventRecord_ptsz);
PG_DECLARE_CU_PTSZ(cuEventRecordWithFlags, cuEventRecordWithFlags_ptsz);
PG_DECLARE_CU_PTSZ(cuStreamWaitEvent, cuStreamWaitEvent_ptsz);
PG_DECLARE_CU_PTSZ(cuStreamSynchronize, cuStreamSynchronize_ptsz);
PG_DECLARE_CU_PTSZ(cuStreamQuery, cuStreamQuery_ptsz);

_Static_assert(CU_MEMHOSTALLOC_PORTABLE == cudaHostAllocPortable &&
                   CU_MEMHOSTALLOC_DEVICEMAP == cudaHostAllocMapped &&
                   CU_MEMHOSTALLOC_WRITECOMBINED == cudaHostAllocWriteCombined,
               "driver and runtime host-allocation flags differ");
_Static_assert(CU_MEMHOSTREGISTER_PORTABLE == cudaHostRegisterPortable &&
                   CU_MEMHOSTREGISTER_DEVICEMAP == cudaHostRegisterMapped &&
                   CU_MEMHOSTREGISTER_IOMEMORY == cudaHostRegisterIoMemory &&
                   CU_MEMHOSTREGISTER_READ_ONLY == cudaHostRegisterReadOnly,
               "driver and runtime registration flags differ");

#define HOST(p) ((void *)(uintptr_t)(p)) /* a CUdeviceptr that may be a host address (UVA) */

/* ---- pinning --------------------------------------------------------------------------------- */
PG_INTERCEPT(CUresult, cuMemHostAlloc, void **pp, size_t n, unsigned int flags) {
  CUresult r = PG_FORWARD_CU(cuMemHostAlloc, pp, n, flags);
  if (r == CUDA_SUCCESS && pp && *pp) PG_NOTE_PINNED(*pp, n, PG_PIN_HOST_ALLOC, flags | PG_REGION_FLAG_DRIVER);
  return r;
}

PG_INTERCEPT(CUresult, cuMemAllocHost_v2, void **pp, size_t n) {
  CUresult r = PG_FORWARD_CU(cuMemAllocHost_v2, pp, n);
  if (r == CUDA_SUCCESS && pp && *pp) PG_NOTE_PINNED(*pp, n, PG_PIN_MALLOC_HOST, PG_REGION_FLAG_DRIVER);
  return r;
}

PG_INTERCEPT(CUresult, cuMemHostRegister_v2, void *p, size_t n, unsigned int flags) {
  unsigned kind = pg_shim_register_kind(p, n);
  CUresult r = PG_FORWARD_CU(cuMemHostRegister_v2, p, n, flags);
  if (r == CUDA_SUCCESS) PG_NOTE_PINNED(p, n, PG_PIN_REGISTER, flags | kind | PG_REGION_FLAG_DRIVER);
  return r;
}

static int free_host(void *p) { return PG_FORWARD_CU(cuMemFreeHost, p); }
static int unregister(void *p) { return PG_FORWARD_CU(cuMemHostUnregister, p); }

#define PG_CU_UNPIN(name, is_free, forward)                              \
  PG_INTERCEPT(CUresult, name, void *p) {                                \
    if (!p || !pg_shim_start_tracking()) return PG_FORWARD_CU(name, p);  \
    pg_stack_t st;                                                       \
    PG_CAPTURE(&st);                                                     \
    return (CUresult)pg_shim_unpin(p, is_free, #name, &st, forward);            \
  }
PG_CU_UNPIN(cuMemFreeHost, true, free_host)
PG_CU_UNPIN(cuMemHostUnregister, false, unregister)

/* ---- copies ---------------------------------------------------------------------------------- */
#define PG_CU_COPY(name, ptsz, what, dst_t, src_t, add_spans)                                 \
  PG_INTERCEPT(CUresult, name, dst_t dst, src_t src, size_t n, CUstream s) {                  \
    if (!pg_shim_start_tracking()) return PG_FORWARD_CU(name, dst, src, n, s);                \
    pg_op_t op;                                                                               \
    pg_op_begin(&op, #name, what, (cudaStream_t)s, ptsz);                                     \
    add_spans;                                                                                \
    PG_CAPTURE_SITE(&op);                                                                      \
    return PG_TRACKED_CALL(&op, PG_FORWARD_CU(name, dst, src, n, s));                         \
  }
#define HTOD_SPANS pg_op_add_span(&op, src, n, PG_DIR_READ)
#define DTOH_SPANS pg_op_add_span(&op, dst, n, PG_DIR_WRITE)
/* Unified addressing: either side may be pinned host memory; core keeps the ones that are. */
#define UVA_SPANS pg_op_add_copy_spans(&op, HOST(dst), HOST(src), n, cudaMemcpyDefault)
PG_CU_COPY(cuMemcpyHtoDAsync_v2, false, "copy host->device", CUdeviceptr, const void *, HTOD_SPANS)
PG_CU_COPY(cuMemcpyHtoDAsync_v2_ptsz, true, "copy host->device", CUdeviceptr, const void *,
           HTOD_SPANS)
PG_CU_COPY(cuMemcpyDtoHAsync_v2, false, "copy device->host", void *, CUdeviceptr, DTOH_SPANS)
PG_CU_COPY(cuMemcpyDtoHAsync_v2_ptsz, true, "copy device->host", void *, CUdeviceptr, DTOH_SPANS)
PG_CU_COPY(cuMemcpyAsync, false, "copy (unified addressing)", CUdeviceptr, CUdeviceptr, UVA_SPANS)
PG_CU_COPY(cuMemcpyAsync_ptsz, true, "copy (unified addressing)", CUdeviceptr, CUdeviceptr,
           UVA_SPANS)

/* ---- 2D and 3D copies: host or unified-address operands (arrays are device memory) ---------- */
/* The host address one side of a CUDA_MEMCPY2D/3D names, if it may be one. */
static const void *host_operand(CUmemorytype type, const void *host, CUdeviceptr dev) {
  if (type == CU_MEMORYTYPE_HOST) return host;
  if (type == CU_MEMORYTYPE_UNIFIED) return HOST(dev); /* core keeps it if it is pinned host */
  return NULL;
}

static const char *pitched_what(CUmemorytype src, CUmemorytype dst) {
  if (src == CU_MEMORYTYPE_HOST)
    return dst == CU_MEMORYTYPE_HOST ? "copy host->host" : "copy host->device";
  if (dst == CU_MEMORYTYPE_HOST) return "copy device->host";
  return "copy (unified addressing)";
}

#define PG_CU_COPY_PITCHED(name, ptsz, params_t, add_sides)                                   \
  PG_INTERCEPT(CUresult, name, const params_t *p, CUstream s) {                               \
    if (!pg_shim_start_tracking() || !p) return PG_FORWARD_CU(name, p, s);                    \
    const void *src = host_operand(p->srcMemoryType, p->srcHost, p->srcDevice);               \
    const void *dst = host_operand(p->dstMemoryType, p->dstHost, p->dstDevice);               \
    if (!src && !dst) return PG_FORWARD_CU(name, p, s);                                       \
    pg_op_t op;                                                                               \
    pg_op_begin(&op, #name, pitched_what(p->srcMemoryType, p->dstMemoryType), (cudaStream_t)s, \
                ptsz);                                                                        \
    add_sides;                                                                                \
    PG_CAPTURE_SITE(&op);                                                                      \
    return PG_TRACKED_SHAPED_CALL(&op, PG_FORWARD_CU(name, p, s));                            \
  }
#define SIDES_2D                                                                              \
  pg_op_add_pitched(&op, src, p->srcPitch, 1, p->srcXInBytes, p->srcY, 0, p->WidthInBytes,    \
                    p->Height, 1, PG_DIR_READ);                                               \
  pg_op_add_pitched(&op, dst, p->dstPitch, 1, p->dstXInBytes, p->dstY, 0, p->WidthInBytes,    \
                    p->Height, 1, PG_DIR_WRITE)
#define SIDES_3D                                                                              \
  pg_op_add_pitched(&op, src, p->srcPitch, p->srcHeight, p->srcXInBytes, p->srcY, p->srcZ,    \
                    p->WidthInBytes, p->Height, p->Depth, PG_DIR_READ);                       \
  pg_op_add_pitched(&op, dst, p->dstPitch, p->dstHeight, p->dstXInBytes, p->dstY, p->dstZ,    \
                    p->WidthInBytes, p->Height, p->Depth, PG_DIR_WRITE)
PG_CU_COPY_PITCHED(cuMemcpy2DAsync_v2, false, CUDA_MEMCPY2D, SIDES_2D)
PG_CU_COPY_PITCHED(cuMemcpy2DAsync_v2_ptsz, true, CUDA_MEMCPY2D, SIDES_2D)
PG_CU_COPY_PITCHED(cuMemcpy3DAsync_v2, false, CUDA_MEMCPY3D, SIDES_3D)
PG_CU_COPY_PITCHED(cuMemcpy3DAsync_v2_ptsz, true, CUDA_MEMCPY3D, SIDES_3D)

/* ---- batches: cuMemcpyBatchAsync (12.8, with failIdx) and _v2 (13.0, without) --------------- */
/* The runtime's batch code describes the copies (pg_shim_batch), from the runtime's types. */
_Static_assert((int)CU_MEMCPY_SRC_ACCESS_ORDER_STREAM == (int)cudaMemcpySrcAccessOrderStream &&
                   (int)CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL ==
                       (int)cudaMemcpySrcAccessOrderDuringApiCall &&
                   (int)CU_MEMCPY_SRC_ACCESS_ORDER_ANY == (int)cudaMemcpySrcAccessOrderAny,
               "driver and runtime source access orders differ");
_Static_assert(sizeof(CUmemcpyAttributes) == sizeof(struct cudaMemcpyAttributes) &&
                   offsetof(CUmemcpyAttributes, srcAccessOrder) ==
                       offsetof(struct cudaMemcpyAttributes, srcAccessOrder),
               "driver and runtime copy attributes differ");
_Static_assert(sizeof(CUdeviceptr) == sizeof(void *), "a CUdeviceptr is not an address");

/* cuda.h names the 13.0 function cuMemcpyBatchAsync; the 12.8 one keeps its own name here. */
#undef cuMemcpyBatchAsync

#define PG_CU_BATCH(name, ptsz, with_fail_idx, ...)                                           \
  PG_INTERCEPT(CUresult, name, CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,           \
               size_t count, CUmemcpyAttributes *attrs, size_t *attrs_idxs, size_t num_attrs, \
               __VA_ARGS__) {                                                                 \
    pg_batch_t b = {PG_HOOK_ID_##name, with_fail_idx, (void *const *)dsts,                    \
                    (const void *const *)srcs, sizes, count, attrs, attrs_idxs, num_attrs,     \
                    FAIL_IDX_##with_fail_idx, (cudaStream_t)s};                               \
    pg_stack_t st;                                                                            \
    PG_CAPTURE(&st);                                                                          \
    return (CUresult)pg_shim_batch(&b, #name, ptsz, &st, CUDA_ERROR_NOT_FOUND);              \
  }
#define FAIL_IDX_true fail_idx
#define FAIL_IDX_false NULL
PG_CU_BATCH(cuMemcpyBatchAsync, false, true, size_t *fail_idx, CUstream s)
PG_CU_BATCH(cuMemcpyBatchAsync_ptsz, true, true, size_t *fail_idx, CUstream s)
PG_CU_BATCH(cuMemcpyBatchAsync_v2, false, false, CUstream s)
PG_CU_BATCH(cuMemcpyBatchAsync_v2_ptsz, true, false, CUstream s)

/* ---- kernels --------------------------------------------------------------------------------- */
/* A CUfunction's parameter layout, from cuFuncGetParamInfo (driver 12.4 and later); the driver
 * has no sticky last error, so asking past the last parameter leaves nothing behind. */
static int param_info(const void *func, size_t i, size_t *off, size_t *sz) {
  CUresult e = PG_REAL(cuFuncGetParamInfo)((CUfunction)func, i, off, sz);
  return e == CUDA_SUCCESS ? PG_KP_PARAM : e == CUDA_ERROR_INVALID_VALUE ? PG_KP_END : PG_KP_UNKNOWN;
}

/* pg_shim.h; cuLaunchKernelEx and cuLaunchCooperativeKernel too (pg_cu_launch.c). */
bool pg_cu_describe_kernel(const void *func, pg_kparams_t *kp) {
  pg_kparams_fill_layout(kp, PG_REAL(cuFuncGetParamInfo) ? param_info : NULL);
  __typeof__(&cuFuncGetName) get_name = PG_REAL(cuFuncGetName);
  const char *name = NULL;
  kp->name = (get_name && get_name(&name, (CUfunction)func) == CUDA_SUCCESS && name) ? name
                                                                                      : "kernel";
  if (kp->nparams < 0) pg_shim_note_unscanned(func, "cuFuncGetParamInfo");
  return true;
}

typedef struct cu_launch {
  enum pg_hook_id id;
  CUfunction f;
  unsigned grid[3], block[3], shmem;
  CUstream s;
  void **params, **extra;
} cu_launch_t;

static int forward_launch(void *ctx) {
  cu_launch_t *a = ctx;
  __typeof__(&cuLaunchKernel) real = (__typeof__(&cuLaunchKernel))pg_real(a->id);
  if (!real) return CUDA_ERROR_NOT_FOUND;
  return real(a->f, a->grid[0], a->grid[1], a->grid[2], a->block[0], a->block[1], a->block[2],
              a->shmem, a->s, a->params, a->extra);
}

/* Arguments packed in `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER) are not scanned: their buffer
 * has no layout to read it by. */
#define PG_CU_LAUNCH(name, ptsz)                                                              \
  PG_INTERCEPT(CUresult, name, CUfunction f, unsigned gx, unsigned gy, unsigned gz,           \
               unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream s,             \
               void **params, void **extra) {                                                 \
    PG_LAUNCH_BODY(CUresult, false, #name, ptsz, params ? (const void *)f : NULL,             \
                   pg_cu_describe_kernel, params, s,                                          \
                   PG_FORWARD_CU(name, f, gx, gy, gz, bx, by, bz, shmem, s, params, extra),   \
                   forward_launch, cu_launch_t,                                               \
                   {PG_HOOK_ID_##name, f, {gx, gy, gz}, {bx, by, bz}, shmem, s, params, extra}); \
  }
PG_CU_LAUNCH(cuLaunchKernel, false)
PG_CU_LAUNCH(cuLaunchKernel_ptsz, true)

/* ---- ordering and completion ----------------------------------------------------------------- */
#define PG_CU_STREAM_SYNC(name, ptsz)                                                         \
  static int real_##name(cudaStream_t s) { return PG_FORWARD_CU(name, (CUstream)s); }         \
  PG_INTERCEPT(CUresult, name, CUstream s) {                                                  \
    cudaStream_t h = (cudaStream_t)s;                                                         \
    return (CUresult)pg_shim_host_sync(h, pg_stream_of(h, ptsz), false, real_##name);         \
  }
PG_CU_STREAM_SYNC(cuStreamSynchronize, false)
PG_CU_STREAM_SYNC(cuStreamSynchronize_ptsz, true)
PG_CU_STREAM_SYNC(cuStreamQuery, false)
PG_CU_STREAM_SYNC(cuStreamQuery_ptsz, true)

/* The current context's device: what the runtime's cudaDeviceSynchronize is to its device. */
static int real_ctx_sync(cudaStream_t unused) {
  (void)unused;
  return PG_FORWARD_CU(cuCtxSynchronize);
}
PG_INTERCEPT(CUresult, cuCtxSynchronize, void) {
  return (CUresult)pg_shim_host_sync(0, 0, true, real_ctx_sync);
}

/* CUDA 13's twin (cuGetProcAddress("cuCtxSynchronize", 13000) answers it) names its context; NULL
 * is the current one. Another context is made current around the call, so that the sync is
 * judged for its device, and the thread's own is put back before returning. The context rides
 * in pg_shim_host_sync's handle argument, which a device sync passes to its call untouched. */
static int real_ctx_sync_v2(cudaStream_t ctx) {
  return PG_FORWARD_CU(cuCtxSynchronize_v2, (CUcontext)ctx);
}
PG_INTERCEPT(CUresult, cuCtxSynchronize_v2, CUcontext ctx) {
  CUcontext cur = NULL;
  __typeof__(&cuCtxGetCurrent) get = PG_REAL(cuCtxGetCurrent);
  __typeof__(&cuCtxSetCurrent) set = PG_REAL(cuCtxSetCurrent);
  bool other = ctx && get && set && get(&cur) == CUDA_SUCCESS && cur != ctx &&
               set(ctx) == CUDA_SUCCESS;
  CUresult r = (CUresult)pg_shim_host_sync((cudaStream_t)ctx, 0, true, real_ctx_sync_v2);
  if (other) set(cur);
  return r;
}

#define PG_CU_EVENT_RECORD(name, ptsz)                                                        \
  PG_INTERCEPT(CUresult, name, CUevent e, CUstream s) {                                       \
    return PG_AFTER_SUCCESS(PG_FORWARD_CU(name, e, s),                                        \
                            pg_on_event_record((cudaEvent_t)e,                          \
                                                     pg_stream_of((cudaStream_t)s, ptsz)));   \
  }
PG_CU_EVENT_RECORD(cuEventRecord, false)
PG_CU_EVENT_RECORD(cuEventRecord_ptsz, true)

#define PG_CU_EVENT_RECORD_FLAGS(name, ptsz)                                                  \
  PG_INTERCEPT(CUresult, name, CUevent e, CUstream s, unsigned int flags) {                   \
    return PG_AFTER_SUCCESS(PG_FORWARD_CU(name, e, s, flags),                                 \
                            pg_on_event_record((cudaEvent_t)e,                          \
                                                     pg_stream_of((cudaStream_t)s, ptsz)));   \
  }
PG_CU_EVENT_RECORD_FLAGS(cuEventRecordWithFlags, false)
PG_CU_EVENT_RECORD_FLAGS(cuEventRecordWithFlags_ptsz, true)

#define PG_CU_STREAM_WAIT_EVENT(name, ptsz)                                                   \
  PG_INTERCEPT(CUresult, name, CUstream s, CUevent e, unsigned int flags) {                   \
    return PG_AFTER_SUCCESS(PG_FORWARD_CU(name, s, e, flags),                                 \
                            pg_on_stream_wait_event(pg_stream_of((cudaStream_t)s, ptsz), \
                                                          (cudaEvent_t)e));                   \
  }
PG_CU_STREAM_WAIT_EVENT(cuStreamWaitEvent, false)
PG_CU_STREAM_WAIT_EVENT(cuStreamWaitEvent_ptsz, true)

PG_INTERCEPT(CUresult, cuEventSynchronize, CUevent e) {
  return PG_AFTER_SUCCESS(PG_FORWARD_CU(cuEventSynchronize, e),
                          pg_on_event_complete((cudaEvent_t)e));
}

PG_INTERCEPT(CUresult, cuEventQuery, CUevent e) {
  return PG_AFTER_SUCCESS(PG_FORWARD_CU(cuEventQuery, e),
                          pg_on_event_complete((cudaEvent_t)e));
}

PG_INTERCEPT(CUresult, cuEventDestroy_v2, CUevent e) {
  return PG_AFTER_SUCCESS(PG_FORWARD_CU(cuEventDestroy_v2, e),
                          pg_on_event_destroy((cudaEvent_t)e));
}

PG_INTERCEPT(CUresult, cuStreamDestroy_v2, CUstream s) {
  return PG_AFTER_SUCCESS(PG_FORWARD_CU(cuStreamDestroy_v2, s),
                          pg_on_stream_destroy((cudaStream_t)s));
}
