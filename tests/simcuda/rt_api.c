/* rt_api.c: the runtime entry points simcuda tracks, each a driver call: copies (1D, 2D, 3D,
 * symbols; the batches are in rt_batch_abi.c), memsets, kernel launches, host functions, streams,
 * events, their waits, queries and syncs, device synchronization, device and pinned memory,
 * pointer attributes and capture. A _ptsz/_ptds entry point calls the driver function asked for
 * with the per-thread flag (rt_init.c). The runtime checks what only the runtime has an error code
 * for (a copy's kind, a 2D/3D pitch, a symbol, an unregistered kernel, a launch configuration),
 * then the driver does the rest; its CUresult is the runtime's error of the same number. */
#include <string.h>

#include "rt_internal.h"

static bool sr_kind_ok(enum cudaMemcpyKind kind) {
  return (unsigned)kind <= (unsigned)cudaMemcpyDefault;
}

/* ---- 1D copies and symbols ---------------------------------------------------------------- */
static cudaError_t sr_memcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                             cudaStream_t stream, bool ptsz, bool async) {
  if (!sr_kind_ok(kind)) return sr_ret(cudaErrorInvalidMemcpyDirection);
  CUdeviceptr d = (CUdeviceptr)dst, s = (CUdeviceptr)src;
  if (async)
    return sr_cu((ptsz ? sr_drv.memcpyAsync_ptsz : sr_drv.memcpyAsync)(d, s, count,
                                                                        (CUstream)stream));
  return sr_cu((ptsz ? sr_drv.memcpy_ptds : sr_drv.memcpy)(d, s, count));
}

SR_API cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
  SR_ENTER("cudaMemcpy");
  return sr_memcpy(dst, src, count, kind, NULL, false, false);
}

SR_API cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count,
                                   enum cudaMemcpyKind kind) {
  SR_ENTER("cudaMemcpy");
  return sr_memcpy(dst, src, count, kind, NULL, true, false);
}

SR_API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
                                   enum cudaMemcpyKind kind, cudaStream_t stream) {
  SR_ENTER("cudaMemcpyAsync");
  return sr_memcpy(dst, src, count, kind, stream, false, true);
}

SR_API cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count,
                                        enum cudaMemcpyKind kind, cudaStream_t stream) {
  SR_ENTER("cudaMemcpyAsync");
  return sr_memcpy(dst, src, count, kind, stream, true, true);
}

/* A "symbol" is a plain address (a device pointer or a host variable's). */
#define SR_TO_SYMBOL(fn, fault, ptsz, async, ...)                                             \
  SR_API cudaError_t fn(const void *symbol, const void *src, size_t count, size_t offset,    \
                        enum cudaMemcpyKind kind __VA_ARGS__) {                                \
    SR_ENTER(fault);                                                                           \
    if (!symbol) return sr_ret(cudaErrorInvalidSymbol);                                        \
    return sr_memcpy((char *)symbol + offset, src, count, kind, SR_STREAM, ptsz, async);       \
  }
#define SR_FROM_SYMBOL(fn, fault, ptsz, async, ...)                                           \
  SR_API cudaError_t fn(void *dst, const void *symbol, size_t count, size_t offset,          \
                        enum cudaMemcpyKind kind __VA_ARGS__) {                                \
    SR_ENTER(fault);                                                                           \
    if (!symbol) return sr_ret(cudaErrorInvalidSymbol);                                        \
    return sr_memcpy(dst, (const char *)symbol + offset, count, kind, SR_STREAM, ptsz, async); \
  }
#define SR_STREAM NULL
SR_TO_SYMBOL(cudaMemcpyToSymbol, "cudaMemcpyToSymbol", false, false)
SR_TO_SYMBOL(cudaMemcpyToSymbol_ptds, "cudaMemcpyToSymbol", true, false)
SR_FROM_SYMBOL(cudaMemcpyFromSymbol, "cudaMemcpyFromSymbol", false, false)
SR_FROM_SYMBOL(cudaMemcpyFromSymbol_ptds, "cudaMemcpyFromSymbol", true, false)
#undef SR_STREAM
#define SR_STREAM stream
SR_TO_SYMBOL(cudaMemcpyToSymbolAsync, "cudaMemcpyToSymbolAsync", false, true, , cudaStream_t stream)
SR_TO_SYMBOL(cudaMemcpyToSymbolAsync_ptsz, "cudaMemcpyToSymbolAsync", true, true, ,
             cudaStream_t stream)
SR_FROM_SYMBOL(cudaMemcpyFromSymbolAsync, "cudaMemcpyFromSymbolAsync", false, true, ,
               cudaStream_t stream)
SR_FROM_SYMBOL(cudaMemcpyFromSymbolAsync_ptsz, "cudaMemcpyFromSymbolAsync", true, true, ,
               cudaStream_t stream)
#undef SR_STREAM

/* ---- 2D and 3D ---------------------------------------------------------------------------- */
static cudaError_t sr_memcpy_2d(void *dst, size_t dpitch, const void *src, size_t spitch,
                                size_t width, size_t height, enum cudaMemcpyKind kind,
                                cudaStream_t stream, bool ptsz, bool async) {
  if (!sr_kind_ok(kind)) return sr_ret(cudaErrorInvalidMemcpyDirection);
  if (height > 1 && (width > dpitch || width > spitch)) return sr_ret(cudaErrorInvalidPitchValue);
  CUDA_MEMCPY2D p;
  memset(&p, 0, sizeof p);
  p.srcMemoryType = p.dstMemoryType = CU_MEMORYTYPE_UNIFIED; /* the driver finds out which */
  p.srcDevice = (CUdeviceptr)src;
  p.srcPitch = spitch;
  p.dstDevice = (CUdeviceptr)dst;
  p.dstPitch = dpitch;
  p.WidthInBytes = width;
  p.Height = height;
  if (async)
    return sr_cu((ptsz ? sr_drv.memcpy2DAsync_ptsz : sr_drv.memcpy2DAsync)(&p, (CUstream)stream));
  return sr_cu((ptsz ? sr_drv.memcpy2D_ptds : sr_drv.memcpy2D)(&p));
}

SR_API cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch,
                                size_t width, size_t height, enum cudaMemcpyKind kind) {
  SR_ENTER("cudaMemcpy2D");
  return sr_memcpy_2d(dst, dpitch, src, spitch, width, height, kind, NULL, false, false);
}

SR_API cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch,
                                     size_t width, size_t height, enum cudaMemcpyKind kind) {
  SR_ENTER("cudaMemcpy2D");
  return sr_memcpy_2d(dst, dpitch, src, spitch, width, height, kind, NULL, true, false);
}

SR_API cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                                     size_t width, size_t height, enum cudaMemcpyKind kind,
                                     cudaStream_t stream) {
  SR_ENTER("cudaMemcpy2DAsync");
  return sr_memcpy_2d(dst, dpitch, src, spitch, width, height, kind, stream, false, true);
}

SR_API cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch,
                                          size_t width, size_t height, enum cudaMemcpyKind kind,
                                          cudaStream_t stream) {
  SR_ENTER("cudaMemcpy2DAsync");
  return sr_memcpy_2d(dst, dpitch, src, spitch, width, height, kind, stream, true, true);
}

/* Pitched pointers only (CUDA arrays are not simulated). */
static cudaError_t sr_memcpy_3d(const struct cudaMemcpy3DParms *q, cudaStream_t stream, bool ptsz,
                                bool async) {
  if (!q || q->srcArray || q->dstArray) return sr_ret(cudaErrorInvalidValue);
  if (!sr_kind_ok(q->kind)) return sr_ret(cudaErrorInvalidMemcpyDirection);
  if (q->extent.width > q->srcPtr.pitch || q->extent.width > q->dstPtr.pitch)
    return sr_ret(cudaErrorInvalidPitchValue);
  CUDA_MEMCPY3D p;
  memset(&p, 0, sizeof p);
  p.srcMemoryType = p.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  p.srcDevice = (CUdeviceptr)q->srcPtr.ptr;
  p.srcPitch = q->srcPtr.pitch;
  p.srcHeight = q->srcPtr.ysize;
  p.srcXInBytes = q->srcPos.x;
  p.srcY = q->srcPos.y;
  p.srcZ = q->srcPos.z;
  p.dstDevice = (CUdeviceptr)q->dstPtr.ptr;
  p.dstPitch = q->dstPtr.pitch;
  p.dstHeight = q->dstPtr.ysize;
  p.dstXInBytes = q->dstPos.x;
  p.dstY = q->dstPos.y;
  p.dstZ = q->dstPos.z;
  p.WidthInBytes = q->extent.width;
  p.Height = q->extent.height;
  p.Depth = q->extent.depth;
  if (async)
    return sr_cu((ptsz ? sr_drv.memcpy3DAsync_ptsz : sr_drv.memcpy3DAsync)(&p, (CUstream)stream));
  return sr_cu((ptsz ? sr_drv.memcpy3D_ptds : sr_drv.memcpy3D)(&p));
}

SR_API cudaError_t cudaMemcpy3D(const struct cudaMemcpy3DParms *p) {
  SR_ENTER("cudaMemcpy3D");
  return sr_memcpy_3d(p, NULL, false, false);
}

SR_API cudaError_t cudaMemcpy3D_ptds(const struct cudaMemcpy3DParms *p) {
  SR_ENTER("cudaMemcpy3D");
  return sr_memcpy_3d(p, NULL, true, false);
}

SR_API cudaError_t cudaMemcpy3DAsync(const struct cudaMemcpy3DParms *p, cudaStream_t stream) {
  SR_ENTER("cudaMemcpy3DAsync");
  return sr_memcpy_3d(p, stream, false, true);
}

SR_API cudaError_t cudaMemcpy3DAsync_ptsz(const struct cudaMemcpy3DParms *p, cudaStream_t stream) {
  SR_ENTER("cudaMemcpy3DAsync");
  return sr_memcpy_3d(p, stream, true, true);
}

/* ---- memset ------------------------------------------------------------------------------- */
SR_API cudaError_t cudaMemset(void *devPtr, int value, size_t count) {
  SR_ENTER("cudaMemset");
  return sr_cu(sr_drv.memsetD8((CUdeviceptr)devPtr, (unsigned char)value, count));
}

SR_API cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count) {
  SR_ENTER("cudaMemset");
  return sr_cu(sr_drv.memsetD8_ptds((CUdeviceptr)devPtr, (unsigned char)value, count));
}

SR_API cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream) {
  SR_ENTER("cudaMemsetAsync");
  return sr_cu(sr_drv.memsetD8Async((CUdeviceptr)devPtr, (unsigned char)value, count,
                                    (CUstream)stream));
}

SR_API cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count,
                                        cudaStream_t stream) {
  SR_ENTER("cudaMemsetAsync");
  return sr_cu(sr_drv.memsetD8Async_ptsz((CUdeviceptr)devPtr, (unsigned char)value, count,
                                         (CUstream)stream));
}

/* ---- kernels ------------------------------------------------------------------------------ */
static cudaError_t sr_launch(const void *func, dim3 grid, dim3 block, void **args, size_t smem,
                             cudaStream_t stream, bool ptsz, bool cooperative) {
  if (!sr_kernel_registered(func)) return sr_ret(cudaErrorInvalidDeviceFunction);
  if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z)
    return sr_ret(cudaErrorInvalidConfiguration);
  CUfunction f = sr_kernel_handle(func);
  if (cooperative)
    return sr_cu(sr_drv.launchCooperativeKernel(f, grid.x, grid.y, grid.z, block.x, block.y,
                                                block.z, (unsigned)smem, (CUstream)stream, args));
  return sr_cu((ptsz ? sr_drv.launchKernel_ptsz : sr_drv.launchKernel)(
      f, grid.x, grid.y, grid.z, block.x, block.y, block.z, (unsigned)smem, (CUstream)stream, args,
      NULL));
}

SR_API cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                    size_t sharedMem, cudaStream_t stream) {
  SR_ENTER("cudaLaunchKernel");
  return sr_launch(func, gridDim, blockDim, args, sharedMem, stream, false, false);
}

SR_API cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim,
                                         void **args, size_t sharedMem, cudaStream_t stream) {
  SR_ENTER("cudaLaunchKernel");
  return sr_launch(func, gridDim, blockDim, args, sharedMem, stream, true, false);
}

SR_API cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 gridDim, dim3 blockDim,
                                               void **args, size_t sharedMem,
                                               cudaStream_t stream) {
  SR_ENTER("cudaLaunchCooperativeKernel");
  return sr_launch(func, gridDim, blockDim, args, sharedMem, stream, false, true);
}

/* The launch path nvcc 13 generates for kernel<<<...>>> (cudaKernel_t from __cudaGetKernel). */
SR_API cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                      void **args, size_t sharedMem, cudaStream_t stream) {
  SR_ENTER("__cudaLaunchKernel");
  return sr_launch(sr_kernel_func(kernel), gridDim, blockDim, args, sharedMem, stream, false,
                   false);
}

SR_API cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                           void **args, size_t sharedMem, cudaStream_t stream) {
  SR_ENTER("__cudaLaunchKernel_ptsz");
  return sr_launch(sr_kernel_func(kernel), gridDim, blockDim, args, sharedMem, stream, true,
                   false);
}

/* Through cuLaunchKernelEx; launch attributes are accepted and ignored, as before. */
static cudaError_t sr_launch_ex(const cudaLaunchConfig_t *config, const void *func, void **args,
                                bool ptsz) {
  if (!config) return sr_ret(cudaErrorInvalidValue);
  if (!sr_kernel_registered(func)) return sr_ret(cudaErrorInvalidDeviceFunction);
  dim3 g = config->gridDim, b = config->blockDim;
  if (!g.x || !g.y || !g.z || !b.x || !b.y || !b.z) return sr_ret(cudaErrorInvalidConfiguration);
  CUlaunchConfig c;
  memset(&c, 0, sizeof c);
  c.gridDimX = g.x, c.gridDimY = g.y, c.gridDimZ = g.z;
  c.blockDimX = b.x, c.blockDimY = b.y, c.blockDimZ = b.z;
  c.sharedMemBytes = (unsigned)config->dynamicSmemBytes;
  c.hStream = (CUstream)config->stream;
  return sr_cu((ptsz ? sr_drv.launchKernelEx_ptsz : sr_drv.launchKernelEx)(
      &c, sr_kernel_handle(func), args, NULL));
}

SR_API cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func,
                                       void **args) {
  SR_ENTER("cudaLaunchKernelExC");
  return sr_launch_ex(config, func, args, false);
}

SR_API cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func,
                                            void **args) {
  SR_ENTER("cudaLaunchKernelExC");
  return sr_launch_ex(config, func, args, true);
}

/* ---- host functions and streams ----------------------------------------------------------- */
SR_API cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData) {
  SR_ENTER("cudaLaunchHostFunc");
  return sr_cu(sr_drv.launchHostFunc((CUstream)stream, fn, userData));
}

SR_API cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData) {
  SR_ENTER("cudaLaunchHostFunc");
  return sr_cu(sr_drv.launchHostFunc_ptsz((CUstream)stream, fn, userData));
}

SR_API cudaError_t cudaStreamCreate(cudaStream_t *pStream) {
  SR_ENTER("cudaStreamCreate");
  return sr_cu(sr_drv.streamCreate((CUstream *)pStream, 0));
}

SR_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags) {
  SR_ENTER("cudaStreamCreateWithFlags");
  return sr_cu(sr_drv.streamCreate((CUstream *)pStream, flags));
}

SR_API cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags,
                                                int priority) {
  SR_ENTER("cudaStreamCreateWithPriority");
  return sr_cu(sr_drv.streamCreateWithPriority((CUstream *)pStream, flags, priority));
}

SR_API cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  SR_ENTER("cudaStreamDestroy");
  return sr_cu(sr_drv.streamDestroy((CUstream)stream));
}

SR_API cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  SR_ENTER("cudaStreamSynchronize");
  return sr_cu(sr_drv.streamSynchronize((CUstream)stream));
}

SR_API cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) {
  SR_ENTER("cudaStreamSynchronize");
  return sr_cu(sr_drv.streamSynchronize_ptsz((CUstream)stream));
}

SR_API cudaError_t cudaStreamQuery(cudaStream_t stream) {
  SR_ENTER("cudaStreamQuery");
  return sr_cu(sr_drv.streamQuery((CUstream)stream));
}

SR_API cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream) {
  SR_ENTER("cudaStreamQuery");
  return sr_cu(sr_drv.streamQuery_ptsz((CUstream)stream));
}

SR_API cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  SR_ENTER("cudaStreamWaitEvent");
  return sr_cu(sr_drv.streamWaitEvent((CUstream)stream, (CUevent)event, flags));
}

SR_API cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event,
                                            unsigned int flags) {
  SR_ENTER("cudaStreamWaitEvent");
  return sr_cu(sr_drv.streamWaitEvent_ptsz((CUstream)stream, (CUevent)event, flags));
}

/* ---- events ------------------------------------------------------------------------------- */
SR_API cudaError_t cudaEventCreate(cudaEvent_t *event) {
  SR_ENTER("cudaEventCreate");
  return sr_cu(sr_drv.eventCreate((CUevent *)event, 0));
}

SR_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags) {
  SR_ENTER("cudaEventCreateWithFlags");
  return sr_cu(sr_drv.eventCreate((CUevent *)event, flags));
}

SR_API cudaError_t cudaEventDestroy(cudaEvent_t event) {
  SR_ENTER("cudaEventDestroy");
  return sr_cu(sr_drv.eventDestroy((CUevent)event));
}

SR_API cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  SR_ENTER("cudaEventRecord");
  return sr_cu(sr_drv.eventRecord((CUevent)event, (CUstream)stream));
}

SR_API cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream) {
  SR_ENTER("cudaEventRecord");
  return sr_cu(sr_drv.eventRecord_ptsz((CUevent)event, (CUstream)stream));
}

SR_API cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream,
                                            unsigned int flags) {
  SR_ENTER("cudaEventRecordWithFlags");
  return sr_cu(sr_drv.eventRecordWithFlags((CUevent)event, (CUstream)stream, flags));
}

SR_API cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream,
                                                 unsigned int flags) {
  SR_ENTER("cudaEventRecordWithFlags");
  return sr_cu(sr_drv.eventRecordWithFlags_ptsz((CUevent)event, (CUstream)stream, flags));
}

SR_API cudaError_t cudaEventQuery(cudaEvent_t event) {
  SR_ENTER("cudaEventQuery");
  return sr_cu(sr_drv.eventQuery((CUevent)event));
}

SR_API cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  SR_ENTER("cudaEventSynchronize");
  return sr_cu(sr_drv.eventSynchronize((CUevent)event));
}

SR_API cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
  SR_ENTER("cudaEventElapsedTime");
  return sr_cu(sr_drv.eventElapsedTime(ms, (CUevent)start, (CUevent)end));
}

/* ---- device synchronization --------------------------------------------------------------- */
SR_API cudaError_t cudaDeviceSynchronize(void) {
  SR_ENTER("cudaDeviceSynchronize");
  /* 13.0 asks for cuCtxSynchronize_v2, which names the context (NULL: the current one). */
  if (sr_version() >= 13000)
    return sr_cu(((CUresult (*)(CUcontext))sr_drv.ctxSynchronize)(NULL));
  return sr_cu(((CUresult (*)(void))sr_drv.ctxSynchronize)());
}

/* ---- device and pinned memory ------------------------------------------------------------- */
SR_API cudaError_t cudaMalloc(void **devPtr, size_t size) {
  SR_ENTER("cudaMalloc");
  return sr_cu(sr_drv.memAlloc((CUdeviceptr *)devPtr, size));
}

SR_API cudaError_t cudaFree(void *devPtr) {
  SR_ENTER("cudaFree");
  if (!devPtr) return cudaSuccess; /* cudaFree(0) is the classic "initialize the context" call */
  return sr_cu(sr_drv.memFree((CUdeviceptr)devPtr));
}

SR_API cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags) {
  SR_ENTER("cudaHostAlloc");
  return sr_cu(sr_drv.hostAlloc(pHost, size, flags));
}

/* As CUDA's runtime: cuMemHostAlloc, never cuMemAllocHost. */
SR_API cudaError_t cudaMallocHost(void **ptr, size_t size) {
  SR_ENTER("cudaMallocHost");
  return sr_cu(sr_drv.hostAlloc(ptr, size, 0));
}

SR_API cudaError_t cudaFreeHost(void *ptr) {
  SR_ENTER("cudaFreeHost");
  if (!ptr) return cudaSuccess;
  return sr_cu(sr_drv.freeHost(ptr));
}

SR_API cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags) {
  SR_ENTER("cudaHostRegister");
  return sr_cu(sr_drv.hostRegister(ptr, size, flags));
}

SR_API cudaError_t cudaHostUnregister(void *ptr) {
  SR_ENTER("cudaHostUnregister");
  return sr_cu(sr_drv.hostUnregister(ptr));
}

SR_API cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags) {
  SR_ENTER("cudaHostGetDevicePointer");
  return sr_cu(sr_drv.hostGetDevicePointer((CUdeviceptr *)pDevice, pHost, flags));
}

/* Four attributes in one cuPointerGetAttributes, which (unlike cuPointerGetAttribute) succeeds
 * for memory CUDA does not know: memory type 0 is cudaMemoryTypeUnregistered. */
SR_API cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes,
                                            const void *ptr) {
  SR_ENTER("cudaPointerGetAttributes");
  if (!attributes) return sr_ret(cudaErrorInvalidValue);
  unsigned int type = 0;
  int device = -2;
  CUdeviceptr dptr = 0;
  void *hptr = NULL;
  CUpointer_attribute which[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                 CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                 CU_POINTER_ATTRIBUTE_HOST_POINTER};
  void *data[] = {&type, &device, &dptr, &hptr};
  memset(attributes, 0, sizeof *attributes);
  CUresult r = sr_drv.pointerGetAttributes(4, which, data, (CUdeviceptr)ptr);
  if (r != CUDA_SUCCESS) return sr_cu(r);
  attributes->type = type == CU_MEMORYTYPE_DEVICE ? cudaMemoryTypeDevice
                     : type == CU_MEMORYTYPE_HOST ? cudaMemoryTypeHost
                                                  : cudaMemoryTypeUnregistered;
  attributes->device = device;
  attributes->devicePointer = (void *)dptr;
  attributes->hostPointer = hptr;
  return cudaSuccess;
}

/* ---- capture ------------------------------------------------------------------------------ */
SR_API cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  SR_ENTER("cudaStreamBeginCapture");
  return sr_cu(sr_drv.streamBeginCapture((CUstream)stream, (CUstreamCaptureMode)mode));
}

SR_API cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream,
                                               enum cudaStreamCaptureMode mode) {
  SR_ENTER("cudaStreamBeginCapture");
  return sr_cu(sr_drv.streamBeginCapture_ptsz((CUstream)stream, (CUstreamCaptureMode)mode));
}

SR_API cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph) {
  SR_ENTER("cudaStreamEndCapture");
  return sr_cu(sr_drv.streamEndCapture((CUstream)stream, (CUgraph *)pGraph));
}

SR_API cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph) {
  SR_ENTER("cudaStreamEndCapture");
  return sr_cu(sr_drv.streamEndCapture_ptsz((CUstream)stream, (CUgraph *)pGraph));
}

SR_API cudaError_t cudaStreamIsCapturing(cudaStream_t stream,
                                         enum cudaStreamCaptureStatus *pCaptureStatus) {
  SR_ENTER("cudaStreamIsCapturing");
  return sr_cu(
      sr_drv.streamIsCapturing((CUstream)stream, (CUstreamCaptureStatus *)pCaptureStatus));
}

SR_API cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream,
                                              enum cudaStreamCaptureStatus *pCaptureStatus) {
  SR_ENTER("cudaStreamIsCapturing");
  return sr_cu(
      sr_drv.streamIsCapturing_ptsz((CUstream)stream, (CUstreamCaptureStatus *)pCaptureStatus));
}

/* ---- graphs ----------------------------------------------------------------------------------- */
/* The two instantiations are one driver call each; neither calls the other through its exported
 * name, so an interposer sees each call once. */
SR_API cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                        unsigned long long flags) {
  SR_ENTER("cudaGraphInstantiate");
  return sr_cu(sr_drv.graphInstantiateWithFlags((CUgraphExec *)pGraphExec, (CUgraph)graph, flags));
}

SR_API cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                                 unsigned long long flags) {
  SR_ENTER("cudaGraphInstantiateWithFlags");
  return sr_cu(sr_drv.graphInstantiateWithFlags((CUgraphExec *)pGraphExec, (CUgraph)graph, flags));
}

SR_API cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
  SR_ENTER("cudaGraphLaunch");
  return sr_cu(sr_drv.graphLaunch((CUgraphExec)graphExec, (CUstream)stream));
}

SR_API cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream) {
  SR_ENTER("cudaGraphLaunch");
  return sr_cu(sr_drv.graphLaunch_ptsz((CUgraphExec)graphExec, (CUstream)stream));
}

SR_API cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  SR_ENTER("cudaGraphDestroy");
  return sr_cu(sr_drv.graphDestroy((CUgraph)graph));
}

SR_API cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  SR_ENTER("cudaGraphExecDestroy");
  return sr_cu(sr_drv.graphExecDestroy((CUgraphExec)graphExec));
}
