/* sd_api.c: the driver API for what pinguard tracks, implemented on simcuda's engine (the sc_*.c
 * files, linked into this library): device and pinned memory, copies (1D, 2D, 3D; the batch copies
 * are in sd_batch_abi.c), memsets, kernel launches, host functions, streams, events, their waits,
 * queries and syncs, and capture. Each _ptsz/_ptds variant is the same call with 0 meaning the
 * calling thread's per-thread stream. simcuda's runtime reaches every one of these through
 * cuGetProcAddress, as CUDA's runtime does. */
#include <string.h>

#include "sd_internal.h"

CUresult sd_enter(const char *name) {
  sc_init();
  if (atomic_load_explicit(&sc_forked_child, memory_order_relaxed)) return CUDA_ERROR_NOT_INITIALIZED;
  if (sc_cfg.devices == 0) return CUDA_ERROR_NO_DEVICE;
  cudaError_t err;
  if (sc_fault(name, &err)) return (CUresult)err;
  return CUDA_SUCCESS;
}

/* The runtime's codes that the driver does not have become the driver's nearest ones; the rest
 * share their numbers (cudaErrorInvalidResourceHandle is CUDA_ERROR_INVALID_HANDLE, ...). */
CUresult sd_result(cudaError_t err) {
  switch (err) {
  case cudaErrorInvalidConfiguration:
  case cudaErrorInvalidPitchValue:
  case cudaErrorInvalidSymbol:
  case cudaErrorInvalidHostPointer:
  case cudaErrorInvalidDevicePointer:
  case cudaErrorInvalidMemcpyDirection: return CUDA_ERROR_INVALID_VALUE;
  case cudaErrorInvalidDeviceFunction: return CUDA_ERROR_INVALID_HANDLE;
  default: return (CUresult)err;
  }
}

/* ---- device memory ------------------------------------------------------------------------ */
SD_API CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize) {
  SD_ENTER("cuMemAlloc");
  SD_RUN(sc_malloc((void **)dptr, bytesize, sc_device_current()));
}

SD_API CUresult CUDAAPI cuMemFree(CUdeviceptr dptr) {
  SD_ENTER("cuMemFree");
  SD_RUN(sc_free((void *)dptr));
}

/* ---- pinned memory ------------------------------------------------------------------------ */
SD_API CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags) {
  SD_ENTER("cuMemHostAlloc");
  SD_RUN(sc_host_alloc(pp, bytesize, Flags));
}

SD_API CUresult CUDAAPI cuMemAllocHost(void **pp, size_t bytesize) {
  SD_ENTER("cuMemAllocHost");
  SD_RUN(sc_host_alloc(pp, bytesize, 0));
}

SD_API CUresult CUDAAPI cuMemFreeHost(void *p) {
  SD_ENTER("cuMemFreeHost");
  SD_RUN(sc_free_host(p));
}

SD_API CUresult CUDAAPI cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags) {
  SD_ENTER("cuMemHostRegister");
  SD_RUN(sc_host_register(p, bytesize, Flags));
}

SD_API CUresult CUDAAPI cuMemHostUnregister(void *p) {
  SD_ENTER("cuMemHostUnregister");
  SD_RUN(sc_host_unregister(p));
}

SD_API CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int Flags) {
  SD_ENTER("cuMemHostGetDevicePointer");
  SD_RUN(sc_host_get_device_pointer((void **)pdptr, p, Flags));
}

/* ---- pointer attributes ------------------------------------------------------------------- */
/* One attribute of what the engine knows about ptr; false for an attribute not simulated. An
 * unregistered host pointer reads as memory type 0, device ordinal -2 and NULL pointers (what
 * cudaPointerGetAttributes reports for it). */
static bool sd_pointer_attr(const struct cudaPointerAttributes *a, CUpointer_attribute attr,
                            void *data) {
  switch (attr) {
  case CU_POINTER_ATTRIBUTE_CONTEXT:
    *(CUcontext *)data = a->type == cudaMemoryTypeUnregistered ? NULL : sd_primary_ctx(a->device);
    return true;
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    *(unsigned int *)data = a->type == cudaMemoryTypeDevice ? CU_MEMORYTYPE_DEVICE
                            : a->type == cudaMemoryTypeHost ? CU_MEMORYTYPE_HOST
                                                            : 0;
    return true;
  case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    *(CUdeviceptr *)data = (CUdeviceptr)a->devicePointer;
    return true;
  case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    *(void **)data = a->hostPointer;
    return true;
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    *(int *)data = a->device;
    return true;
  default:
    return false;
  }
}

SD_API CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                                              CUdeviceptr ptr) {
  SD_ENTER("cuPointerGetAttribute");
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  struct cudaPointerAttributes a;
  cudaError_t saved = sc_last_error_get();
  cudaError_t err = sc_pointer_attributes(&a, (const void *)ptr);
  sc_last_error_set(saved);
  if (err != cudaSuccess) return sd_result(err);
  /* As the driver: a pointer CUDA does not know is an invalid value for this call. */
  if (a.type == cudaMemoryTypeUnregistered) return CUDA_ERROR_INVALID_VALUE;
  return sd_pointer_attr(&a, attribute, data) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SD_API CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes,
                                               CUpointer_attribute *attributes, void **data,
                                               CUdeviceptr ptr) {
  SD_ENTER("cuPointerGetAttributes");
  if (!numAttributes || !attributes || !data) return CUDA_ERROR_INVALID_VALUE;
  struct cudaPointerAttributes a;
  cudaError_t saved = sc_last_error_get();
  cudaError_t err = sc_pointer_attributes(&a, (const void *)ptr);
  sc_last_error_set(saved);
  if (err != cudaSuccess) return sd_result(err);
  for (unsigned i = 0; i < numAttributes; i++)
    if (data[i] && !sd_pointer_attr(&a, attributes[i], data[i])) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

/* ---- 1D copies and memsets ---------------------------------------------------------------- */
#define SD_COPY(fn, fault, ptsz, sync, DST, SRC)                                              \
  SD_API CUresult CUDAAPI fn(DST dst, SRC src, size_t n) {                                     \
    SD_ENTER(fault);                                                                           \
    SD_RUN(sc_memcpy_1d((void *)dst, (const void *)src, n, cudaMemcpyDefault, NULL, ptsz, sync)); \
  }
#define SD_COPY_ASYNC(fn, fault, ptsz, DST, SRC)                                              \
  SD_API CUresult CUDAAPI fn(DST dst, SRC src, size_t n, CUstream h) {                         \
    SD_ENTER(fault);                                                                           \
    SD_RUN(sc_memcpy_1d((void *)dst, (const void *)src, n, cudaMemcpyDefault, (cudaStream_t)h, \
                        ptsz, false));                                                         \
  }

SD_COPY(cuMemcpy, "cuMemcpy", false, true, CUdeviceptr, CUdeviceptr)
SD_COPY(cuMemcpy_ptds, "cuMemcpy", true, true, CUdeviceptr, CUdeviceptr)
SD_COPY(cuMemcpyHtoD_v2, "cuMemcpyHtoD", false, true, CUdeviceptr, const void *)
SD_COPY(cuMemcpyHtoD_v2_ptds, "cuMemcpyHtoD", true, true, CUdeviceptr, const void *)
SD_COPY(cuMemcpyDtoH_v2, "cuMemcpyDtoH", false, true, void *, CUdeviceptr)
SD_COPY(cuMemcpyDtoH_v2_ptds, "cuMemcpyDtoH", true, true, void *, CUdeviceptr)
SD_COPY(cuMemcpyDtoD_v2, "cuMemcpyDtoD", false, true, CUdeviceptr, CUdeviceptr)
SD_COPY(cuMemcpyDtoD_v2_ptds, "cuMemcpyDtoD", true, true, CUdeviceptr, CUdeviceptr)
SD_COPY_ASYNC(cuMemcpyAsync, "cuMemcpyAsync", false, CUdeviceptr, CUdeviceptr)
SD_COPY_ASYNC(cuMemcpyAsync_ptsz, "cuMemcpyAsync", true, CUdeviceptr, CUdeviceptr)
SD_COPY_ASYNC(cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync", false, CUdeviceptr, const void *)
SD_COPY_ASYNC(cuMemcpyHtoDAsync_v2_ptsz, "cuMemcpyHtoDAsync", true, CUdeviceptr, const void *)
SD_COPY_ASYNC(cuMemcpyDtoHAsync_v2, "cuMemcpyDtoHAsync", false, void *, CUdeviceptr)
SD_COPY_ASYNC(cuMemcpyDtoHAsync_v2_ptsz, "cuMemcpyDtoHAsync", true, void *, CUdeviceptr)
SD_COPY_ASYNC(cuMemcpyDtoDAsync_v2, "cuMemcpyDtoDAsync", false, CUdeviceptr, CUdeviceptr)
SD_COPY_ASYNC(cuMemcpyDtoDAsync_v2_ptsz, "cuMemcpyDtoDAsync", true, CUdeviceptr, CUdeviceptr)

SD_API CUresult CUDAAPI cuMemsetD8_v2(CUdeviceptr dst, unsigned char uc, size_t n) {
  SD_ENTER("cuMemsetD8");
  SD_RUN(sc_memset((void *)dst, uc, n, NULL, false, true));
}

SD_API CUresult CUDAAPI cuMemsetD8_v2_ptds(CUdeviceptr dst, unsigned char uc, size_t n) {
  SD_ENTER("cuMemsetD8");
  SD_RUN(sc_memset((void *)dst, uc, n, NULL, true, true));
}

SD_API CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char uc, size_t n, CUstream h) {
  SD_ENTER("cuMemsetD8Async");
  SD_RUN(sc_memset((void *)dst, uc, n, (cudaStream_t)h, false, false));
}

SD_API CUresult CUDAAPI cuMemsetD8Async_ptsz(CUdeviceptr dst, unsigned char uc, size_t n,
                                             CUstream h) {
  SD_ENTER("cuMemsetD8Async");
  SD_RUN(sc_memset((void *)dst, uc, n, (cudaStream_t)h, true, false));
}

/* ---- 2D and 3D copies --------------------------------------------------------------------- */
/* The address an operand names: host and device (or unified) pointers; arrays are not simulated. */
static bool sd_operand(CUmemorytype type, const void *host, CUdeviceptr dev, const void **out) {
  switch (type) {
  case CU_MEMORYTYPE_HOST: *out = host; return true;
  case CU_MEMORYTYPE_DEVICE:
  case CU_MEMORYTYPE_UNIFIED: *out = (const void *)dev; return true;
  default: return false;
  }
}

static CUresult sd_copy_2d(const CUDA_MEMCPY2D *p, CUstream h, bool ptsz, bool sync) {
  const void *src, *dst;
  if (!p || !sd_operand(p->srcMemoryType, p->srcHost, p->srcDevice, &src) ||
      !sd_operand(p->dstMemoryType, p->dstHost, p->dstDevice, &dst))
    return CUDA_ERROR_INVALID_VALUE;
  src = (const char *)src + p->srcY * p->srcPitch + p->srcXInBytes;
  dst = (const char *)dst + p->dstY * p->dstPitch + p->dstXInBytes;
  SD_RUN(sc_memcpy_2d((void *)dst, p->dstPitch, src, p->srcPitch, p->WidthInBytes, p->Height,
                      cudaMemcpyDefault, (cudaStream_t)h, ptsz, sync));
}

SD_API CUresult CUDAAPI cuMemcpy2D_v2(const CUDA_MEMCPY2D *p) {
  SD_ENTER("cuMemcpy2D");
  return sd_copy_2d(p, NULL, false, true);
}
SD_API CUresult CUDAAPI cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *p) {
  SD_ENTER("cuMemcpy2D");
  return sd_copy_2d(p, NULL, true, true);
}
SD_API CUresult CUDAAPI cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *p, CUstream h) {
  SD_ENTER("cuMemcpy2DAsync");
  return sd_copy_2d(p, h, false, false);
}
SD_API CUresult CUDAAPI cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *p, CUstream h) {
  SD_ENTER("cuMemcpy2DAsync");
  return sd_copy_2d(p, h, true, false);
}

static CUresult sd_copy_3d(const CUDA_MEMCPY3D *p, CUstream h, bool ptsz, bool sync) {
  const void *src, *dst;
  if (!p || !sd_operand(p->srcMemoryType, p->srcHost, p->srcDevice, &src) ||
      !sd_operand(p->dstMemoryType, p->dstHost, p->dstDevice, &dst))
    return CUDA_ERROR_INVALID_VALUE;
  struct cudaMemcpy3DParms q;
  memset(&q, 0, sizeof q);
  q.srcPtr = (struct cudaPitchedPtr){(void *)src, p->srcPitch, p->WidthInBytes, p->srcHeight};
  q.dstPtr = (struct cudaPitchedPtr){(void *)dst, p->dstPitch, p->WidthInBytes, p->dstHeight};
  q.srcPos = (struct cudaPos){p->srcXInBytes, p->srcY, p->srcZ};
  q.dstPos = (struct cudaPos){p->dstXInBytes, p->dstY, p->dstZ};
  q.extent = (struct cudaExtent){p->WidthInBytes, p->Height, p->Depth};
  q.kind = cudaMemcpyDefault;
  SD_RUN(sc_memcpy_3d(&q, (cudaStream_t)h, ptsz, sync));
}

SD_API CUresult CUDAAPI cuMemcpy3D_v2(const CUDA_MEMCPY3D *p) {
  SD_ENTER("cuMemcpy3D");
  return sd_copy_3d(p, NULL, false, true);
}
SD_API CUresult CUDAAPI cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *p) {
  SD_ENTER("cuMemcpy3D");
  return sd_copy_3d(p, NULL, true, true);
}
SD_API CUresult CUDAAPI cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *p, CUstream h) {
  SD_ENTER("cuMemcpy3DAsync");
  return sd_copy_3d(p, h, false, false);
}
SD_API CUresult CUDAAPI cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *p, CUstream h) {
  SD_ENTER("cuMemcpy3DAsync");
  return sd_copy_3d(p, h, true, false);
}

/* ---- kernels ------------------------------------------------------------------------------ */
/* A CUfunction is the handle cuModuleGetFunction, cuLibraryGetKernel and cudaGetFuncBySymbol hand
 * out for a registered kernel (sc_handle_of). The kernelParams form only: `extra` packing is not
 * simulated. */
static CUresult sd_launch(CUfunction f, dim3 grid, dim3 block, unsigned smem, CUstream h,
                          void **params, void **extra, bool ptsz) {
  const void *fn = sc_func_of((cudaKernel_t)f);
  if (!f || !sc_kernel_registered(fn)) return CUDA_ERROR_INVALID_HANDLE;
  if (extra) return CUDA_ERROR_NOT_SUPPORTED;
  SD_RUN(sc_launch(fn, grid, block, params, smem, (cudaStream_t)h, ptsz));
}

#define SD_LAUNCH_ARGS                                                                       \
  CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,          \
      unsigned int by, unsigned int bz, unsigned int smem, CUstream h, void **params

SD_API CUresult CUDAAPI cuLaunchKernel(SD_LAUNCH_ARGS, void **extra) {
  SD_ENTER("cuLaunchKernel");
  return sd_launch(f, (dim3){gx, gy, gz}, (dim3){bx, by, bz}, smem, h, params, extra, false);
}
SD_API CUresult CUDAAPI cuLaunchKernel_ptsz(SD_LAUNCH_ARGS, void **extra) {
  SD_ENTER("cuLaunchKernel");
  return sd_launch(f, (dim3){gx, gy, gz}, (dim3){bx, by, bz}, smem, h, params, extra, true);
}
/* Every simulated block runs in one body, so all of them are always co-resident. */
SD_API CUresult CUDAAPI cuLaunchCooperativeKernel(SD_LAUNCH_ARGS) {
  SD_ENTER("cuLaunchCooperativeKernel");
  return sd_launch(f, (dim3){gx, gy, gz}, (dim3){bx, by, bz}, smem, h, params, NULL, false);
}
SD_API CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(SD_LAUNCH_ARGS) {
  SD_ENTER("cuLaunchCooperativeKernel");
  return sd_launch(f, (dim3){gx, gy, gz}, (dim3){bx, by, bz}, smem, h, params, NULL, true);
}

static CUresult sd_launch_ex(const CUlaunchConfig *c, CUfunction f, void **params, void **extra,
                             bool ptsz) {
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  return sd_launch(f, (dim3){c->gridDimX, c->gridDimY, c->gridDimZ},
                   (dim3){c->blockDimX, c->blockDimY, c->blockDimZ}, c->sharedMemBytes, c->hStream,
                   params, extra, ptsz);
}
SD_API CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                         void **kernelParams, void **extra) {
  SD_ENTER("cuLaunchKernelEx");
  return sd_launch_ex(config, f, kernelParams, extra, false);
}
SD_API CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                              void **kernelParams, void **extra) {
  SD_ENTER("cuLaunchKernelEx");
  return sd_launch_ex(config, f, kernelParams, extra, true);
}

SD_API CUresult CUDAAPI cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset,
                                           size_t *paramSize) {
  SD_ENTER("cuFuncGetParamInfo");
  SD_RUN(sc_kernel_param_info(sc_func_of((cudaKernel_t)func), paramIndex, paramOffset, paramSize));
}

/* ---- host functions, streams -------------------------------------------------------------- */
SD_API CUresult CUDAAPI cuLaunchHostFunc(CUstream h, CUhostFn fn, void *userData) {
  SD_ENTER("cuLaunchHostFunc");
  SD_RUN(sc_host_func((cudaStream_t)h, fn, userData, false));
}
SD_API CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream h, CUhostFn fn, void *userData) {
  SD_ENTER("cuLaunchHostFunc");
  SD_RUN(sc_host_func((cudaStream_t)h, fn, userData, true));
}

SD_API CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags) {
  SD_ENTER("cuStreamCreate");
  SD_RUN(sc_stream_create((cudaStream_t *)phStream, Flags, 0));
}
SD_API CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags,
                                                   int priority) {
  SD_ENTER("cuStreamCreateWithPriority");
  SD_RUN(sc_stream_create((cudaStream_t *)phStream, flags, priority));
}
SD_API CUresult CUDAAPI cuStreamDestroy(CUstream h) {
  SD_ENTER("cuStreamDestroy");
  SD_RUN(sc_stream_destroy((cudaStream_t)h));
}
SD_API CUresult CUDAAPI cuStreamSynchronize(CUstream h) {
  SD_ENTER("cuStreamSynchronize");
  SD_RUN(sc_stream_sync((cudaStream_t)h, false));
}
SD_API CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream h) {
  SD_ENTER("cuStreamSynchronize");
  SD_RUN(sc_stream_sync((cudaStream_t)h, true));
}
SD_API CUresult CUDAAPI cuStreamQuery(CUstream h) {
  SD_ENTER("cuStreamQuery");
  SD_RUN(sc_stream_query((cudaStream_t)h, false));
}
SD_API CUresult CUDAAPI cuStreamQuery_ptsz(CUstream h) {
  SD_ENTER("cuStreamQuery");
  SD_RUN(sc_stream_query((cudaStream_t)h, true));
}
SD_API CUresult CUDAAPI cuStreamGetFlags(CUstream h, unsigned int *flags) {
  SD_ENTER("cuStreamGetFlags");
  SD_RUN(sc_stream_get_flags((cudaStream_t)h, flags, false));
}
SD_API CUresult CUDAAPI cuStreamGetFlags_ptsz(CUstream h, unsigned int *flags) {
  SD_ENTER("cuStreamGetFlags");
  SD_RUN(sc_stream_get_flags((cudaStream_t)h, flags, true));
}
/* A CUdevice is the device's ordinal here, as cuDeviceGet gives it. */
SD_API CUresult CUDAAPI cuStreamGetDevice(CUstream h, CUdevice *device) {
  SD_ENTER("cuStreamGetDevice");
  SD_RUN(sc_stream_get_device((cudaStream_t)h, (int *)device, false));
}
SD_API CUresult CUDAAPI cuStreamGetDevice_ptsz(CUstream h, CUdevice *device) {
  SD_ENTER("cuStreamGetDevice");
  SD_RUN(sc_stream_get_device((cudaStream_t)h, (int *)device, true));
}
SD_API CUresult CUDAAPI cuStreamWaitEvent(CUstream h, CUevent ev, unsigned int Flags) {
  SD_ENTER("cuStreamWaitEvent");
  SD_RUN(sc_wait_event((cudaStream_t)h, (cudaEvent_t)ev, Flags, false));
}
SD_API CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream h, CUevent ev, unsigned int Flags) {
  SD_ENTER("cuStreamWaitEvent");
  SD_RUN(sc_wait_event((cudaStream_t)h, (cudaEvent_t)ev, Flags, true));
}

/* ---- events ------------------------------------------------------------------------------- */
SD_API CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags) {
  SD_ENTER("cuEventCreate");
  SD_RUN(sc_event_create((cudaEvent_t *)phEvent, Flags));
}
SD_API CUresult CUDAAPI cuEventDestroy(CUevent ev) {
  SD_ENTER("cuEventDestroy");
  SD_RUN(sc_event_destroy((cudaEvent_t)ev));
}
SD_API CUresult CUDAAPI cuEventRecord(CUevent ev, CUstream h) {
  SD_ENTER("cuEventRecord");
  SD_RUN(sc_event_record((cudaEvent_t)ev, (cudaStream_t)h, 0, false));
}
SD_API CUresult CUDAAPI cuEventRecord_ptsz(CUevent ev, CUstream h) {
  SD_ENTER("cuEventRecord");
  SD_RUN(sc_event_record((cudaEvent_t)ev, (cudaStream_t)h, 0, true));
}
SD_API CUresult CUDAAPI cuEventRecordWithFlags(CUevent ev, CUstream h, unsigned int flags) {
  SD_ENTER("cuEventRecordWithFlags");
  SD_RUN(sc_event_record((cudaEvent_t)ev, (cudaStream_t)h, flags, false));
}
SD_API CUresult CUDAAPI cuEventRecordWithFlags_ptsz(CUevent ev, CUstream h, unsigned int flags) {
  SD_ENTER("cuEventRecordWithFlags");
  SD_RUN(sc_event_record((cudaEvent_t)ev, (cudaStream_t)h, flags, true));
}
SD_API CUresult CUDAAPI cuEventQuery(CUevent ev) {
  SD_ENTER("cuEventQuery");
  SD_RUN(sc_event_query((cudaEvent_t)ev));
}
SD_API CUresult CUDAAPI cuEventSynchronize(CUevent ev) {
  SD_ENTER("cuEventSynchronize");
  SD_RUN(sc_event_sync((cudaEvent_t)ev));
}
/* cuda.h names this cuEventElapsedTime_v2 (12080); the 2000 one is in sd_proc.c. */
SD_API CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
  SD_ENTER("cuEventElapsedTime");
  SD_RUN(sc_event_elapsed(pMilliseconds, (cudaEvent_t)hStart, (cudaEvent_t)hEnd));
}

/* ---- context-wide sync -------------------------------------------------------------------- */
SD_API CUresult CUDAAPI cuCtxSynchronize(void) {
  SD_ENTER("cuCtxSynchronize");
  if (sc_ctx_bound_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  SD_RUN(sc_device_synchronize());
}

/* 13.0: the context named (NULL: the current one). */
SD_API CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx) {
  SD_ENTER("cuCtxSynchronize");
  int dev = ctx ? sd_ctx_device(ctx) : sc_ctx_bound_device();
  if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
  int was = sc_ctx_bound_device();
  sc_ctx_bind(dev);
  cudaError_t saved = sc_last_error_get();
  cudaError_t err = sc_device_synchronize();
  sc_last_error_set(saved);
  sc_ctx_bind(was);
  return sd_result(err);
}

/* ---- capture ------------------------------------------------------------------------------ */
SD_API CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream h, CUstreamCaptureMode mode) {
  SD_ENTER("cuStreamBeginCapture");
  SD_RUN(sc_begin((cudaStream_t)h, (enum cudaStreamCaptureMode)mode, false));
}
SD_API CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream h, CUstreamCaptureMode mode) {
  SD_ENTER("cuStreamBeginCapture");
  SD_RUN(sc_begin((cudaStream_t)h, (enum cudaStreamCaptureMode)mode, true));
}
SD_API CUresult CUDAAPI cuStreamEndCapture(CUstream h, CUgraph *phGraph) {
  SD_ENTER("cuStreamEndCapture");
  SD_RUN(sc_end((cudaStream_t)h, (cudaGraph_t *)phGraph, false));
}
SD_API CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream h, CUgraph *phGraph) {
  SD_ENTER("cuStreamEndCapture");
  SD_RUN(sc_end((cudaStream_t)h, (cudaGraph_t *)phGraph, true));
}
SD_API CUresult CUDAAPI cuStreamIsCapturing(CUstream h, CUstreamCaptureStatus *captureStatus) {
  SD_ENTER("cuStreamIsCapturing");
  SD_RUN(sc_is_capturing((cudaStream_t)h, (enum cudaStreamCaptureStatus *)captureStatus, false));
}
SD_API CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream h, CUstreamCaptureStatus *captureStatus) {
  SD_ENTER("cuStreamIsCapturing");
  SD_RUN(sc_is_capturing((cudaStream_t)h, (enum cudaStreamCaptureStatus *)captureStatus, true));
}

/* ---- for sd_batch_abi.c, which cannot see the CUDA prototypes ----------------------------- */
int sd_plain_enter(const char *name) { return (int)sd_enter(name); }
int sd_plain_save(void) { return (int)sc_last_error_get(); }
int sd_plain_finish(int saved, int err) {
  sc_last_error_set((cudaError_t)saved);
  return (int)sd_result((cudaError_t)err);
}

/* ---- graphs: what a capture records, instantiated and launched ---------------------------- */
SD_API CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                    unsigned long long flags) {
  SD_ENTER("cuGraphInstantiate");
  (void)flags; /* none changes what a launch replays */
  SD_RUN(sc_graph_instantiate((cudaGraphExec_t *)phGraphExec, (cudaGraph_t)hGraph));
}
SD_API CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream h) {
  SD_ENTER("cuGraphLaunch");
  SD_RUN(sc_graph_launch((cudaGraphExec_t)hGraphExec, (cudaStream_t)h, false));
}
SD_API CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream h) {
  SD_ENTER("cuGraphLaunch");
  SD_RUN(sc_graph_launch((cudaGraphExec_t)hGraphExec, (cudaStream_t)h, true));
}
SD_API CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph) {
  SD_ENTER("cuGraphDestroy");
  SD_RUN(sc_graph_destroy((cudaGraph_t)hGraph));
}
SD_API CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec) {
  SD_ENTER("cuGraphExecDestroy");
  SD_RUN(sc_graph_exec_destroy((cudaGraphExec_t)hGraphExec));
}
