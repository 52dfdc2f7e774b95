/* rt_internal.h: simcuda's runtime layer (libcudart.so.13 and libcudart_static.a). It holds no
 * state of its own: it opens libcuda.so.1, takes cuGetProcAddress_v2 from it, and gets every
 * driver function it calls through that, with the runtime's version and, for the _ptsz/_ptds
 * entry points, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, as CUDA's runtime does (rt_init.c).
 * The tracked calls (rt_api.c, rt_batch_abi.c) are driver calls; the rest only forward to the
 * engine in libcuda.so.1 (rt_forward.S). */
#ifndef RT_INTERNAL_H
#define RT_INTERNAL_H

#include <stdbool.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "simcuda_ptsz.h"

#define SR_API __attribute__((visibility("default")))

/* The driver functions the runtime calls: field, base name, flags, the function whose type it
 * has. A _ptsz field is the same name asked with the per-thread flag. */
#define SR_PTSZ CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
#define SR_DRIVER(X)                                                                  \
  X(memAlloc, "cuMemAlloc", 0, cuMemAlloc_v2)                                         \
  X(memFree, "cuMemFree", 0, cuMemFree_v2)                                            \
  X(hostAlloc, "cuMemHostAlloc", 0, cuMemHostAlloc)                                   \
  X(freeHost, "cuMemFreeHost", 0, cuMemFreeHost)                                      \
  X(hostRegister, "cuMemHostRegister", 0, cuMemHostRegister_v2)                       \
  X(hostUnregister, "cuMemHostUnregister", 0, cuMemHostUnregister)                    \
  X(hostGetDevicePointer, "cuMemHostGetDevicePointer", 0, cuMemHostGetDevicePointer_v2) \
  X(pointerGetAttributes, "cuPointerGetAttributes", 0, cuPointerGetAttributes)        \
  X(memcpy, "cuMemcpy", 0, cuMemcpy)                                                  \
  X(memcpy_ptds, "cuMemcpy", SR_PTSZ, cuMemcpy)                                       \
  X(memcpyAsync, "cuMemcpyAsync", 0, cuMemcpyAsync)                                   \
  X(memcpyAsync_ptsz, "cuMemcpyAsync", SR_PTSZ, cuMemcpyAsync)                        \
  X(memcpy2D, "cuMemcpy2D", 0, cuMemcpy2D_v2)                                         \
  X(memcpy2D_ptds, "cuMemcpy2D", SR_PTSZ, cuMemcpy2D_v2)                              \
  X(memcpy2DAsync, "cuMemcpy2DAsync", 0, cuMemcpy2DAsync_v2)                          \
  X(memcpy2DAsync_ptsz, "cuMemcpy2DAsync", SR_PTSZ, cuMemcpy2DAsync_v2)               \
  X(memcpy3D, "cuMemcpy3D", 0, cuMemcpy3D_v2)                                         \
  X(memcpy3D_ptds, "cuMemcpy3D", SR_PTSZ, cuMemcpy3D_v2)                              \
  X(memcpy3DAsync, "cuMemcpy3DAsync", 0, cuMemcpy3DAsync_v2)                          \
  X(memcpy3DAsync_ptsz, "cuMemcpy3DAsync", SR_PTSZ, cuMemcpy3DAsync_v2)               \
  X(memsetD8, "cuMemsetD8", 0, cuMemsetD8_v2)                                         \
  X(memsetD8_ptds, "cuMemsetD8", SR_PTSZ, cuMemsetD8_v2)                              \
  X(memsetD8Async, "cuMemsetD8Async", 0, cuMemsetD8Async)                             \
  X(memsetD8Async_ptsz, "cuMemsetD8Async", SR_PTSZ, cuMemsetD8Async)                  \
  X(launchKernel, "cuLaunchKernel", 0, cuLaunchKernel)                                \
  X(launchKernel_ptsz, "cuLaunchKernel", SR_PTSZ, cuLaunchKernel)                     \
  X(launchKernelEx, "cuLaunchKernelEx", 0, cuLaunchKernelEx)                          \
  X(launchKernelEx_ptsz, "cuLaunchKernelEx", SR_PTSZ, cuLaunchKernelEx)               \
  X(launchCooperativeKernel, "cuLaunchCooperativeKernel", 0, cuLaunchCooperativeKernel) \
  X(launchHostFunc, "cuLaunchHostFunc", 0, cuLaunchHostFunc)                          \
  X(launchHostFunc_ptsz, "cuLaunchHostFunc", SR_PTSZ, cuLaunchHostFunc)               \
  X(streamCreate, "cuStreamCreate", 0, cuStreamCreate)                                \
  X(streamCreateWithPriority, "cuStreamCreateWithPriority", 0, cuStreamCreateWithPriority) \
  X(streamDestroy, "cuStreamDestroy", 0, cuStreamDestroy_v2)                          \
  X(streamSynchronize, "cuStreamSynchronize", 0, cuStreamSynchronize)                 \
  X(streamSynchronize_ptsz, "cuStreamSynchronize", SR_PTSZ, cuStreamSynchronize)      \
  X(streamQuery, "cuStreamQuery", 0, cuStreamQuery)                                   \
  X(streamQuery_ptsz, "cuStreamQuery", SR_PTSZ, cuStreamQuery)                        \
  X(streamWaitEvent, "cuStreamWaitEvent", 0, cuStreamWaitEvent)                       \
  X(streamWaitEvent_ptsz, "cuStreamWaitEvent", SR_PTSZ, cuStreamWaitEvent)            \
  X(eventCreate, "cuEventCreate", 0, cuEventCreate)                                   \
  X(eventDestroy, "cuEventDestroy", 0, cuEventDestroy_v2)                             \
  X(eventRecord, "cuEventRecord", 0, cuEventRecord)                                   \
  X(eventRecord_ptsz, "cuEventRecord", SR_PTSZ, cuEventRecord)                        \
  X(eventRecordWithFlags, "cuEventRecordWithFlags", 0, cuEventRecordWithFlags)        \
  X(eventRecordWithFlags_ptsz, "cuEventRecordWithFlags", SR_PTSZ, cuEventRecordWithFlags) \
  X(eventQuery, "cuEventQuery", 0, cuEventQuery)                                      \
  X(eventSynchronize, "cuEventSynchronize", 0, cuEventSynchronize)                    \
  X(eventElapsedTime, "cuEventElapsedTime", 0, cuEventElapsedTime_v2)                 \
  X(streamBeginCapture, "cuStreamBeginCapture", 0, cuStreamBeginCapture_v2)           \
  X(streamBeginCapture_ptsz, "cuStreamBeginCapture", SR_PTSZ, cuStreamBeginCapture_v2) \
  X(streamEndCapture, "cuStreamEndCapture", 0, cuStreamEndCapture)                    \
  X(streamEndCapture_ptsz, "cuStreamEndCapture", SR_PTSZ, cuStreamEndCapture)         \
  X(streamIsCapturing, "cuStreamIsCapturing", 0, cuStreamIsCapturing)                 \
  X(streamIsCapturing_ptsz, "cuStreamIsCapturing", SR_PTSZ, cuStreamIsCapturing)        \
  X(graphInstantiateWithFlags, "cuGraphInstantiateWithFlags", 0, cuGraphInstantiateWithFlags) \
  X(graphLaunch, "cuGraphLaunch", 0, cuGraphLaunch)                                   \
  X(graphLaunch_ptsz, "cuGraphLaunch", SR_PTSZ, cuGraphLaunch)                        \
  X(graphDestroy, "cuGraphDestroy", 0, cuGraphDestroy)                                \
  X(graphExecDestroy, "cuGraphExecDestroy", 0, cuGraphExecDestroy)

typedef struct sr_driver {
#define SR_FIELD(field, name, flags, proto) __typeof__(&proto) field;
  SR_DRIVER(SR_FIELD)
#undef SR_FIELD
  /* Functions whose type depends on the version asked (rt_api.c, rt_batch_abi.c). */
  void *ctxSynchronize; /* (void) before 13000, (CUcontext) from 13000 */
  void *memcpyBatchAsync, *memcpyBatchAsync_ptsz;
  void *memcpy3DBatchAsync, *memcpy3DBatchAsync_ptsz;
} sr_driver;

extern sr_driver sr_drv;

/* Opening of every tracked entry point: loads the driver once, then the engine's bookkeeping of a
 * runtime call (lazy init, the fork rule, SIMCUDA_FAIL by the runtime name). cudaSuccess, or the
 * error to return. */
cudaError_t sr_enter(const char *name);
#define SR_ENTER(name)                              \
  do {                                              \
    cudaError_t sr_enter_err_ = sr_enter(name);     \
    if (sr_enter_err_ != cudaSuccess) return sr_enter_err_; \
  } while (0)

/* Records err as the calling thread's last error (the engine keeps it) and returns it. */
cudaError_t sr_ret(cudaError_t err);
/* A driver result as the runtime reports it: the codes share their numbers. */
static inline cudaError_t sr_cu(CUresult r) { return sr_ret((cudaError_t)r); }

int sr_version(void); /* SIMCUDA_RUNTIME_VERSION: 13000 or 12080 */
bool sr_kernel_registered(const void *func);
CUfunction sr_kernel_handle(const void *func);
const void *sr_kernel_func(cudaKernel_t k);

#endif /* RT_INTERNAL_H */
