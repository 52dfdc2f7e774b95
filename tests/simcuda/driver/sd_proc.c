/* sd_proc.c: cuGetProcAddress, the way both the static and the dynamic runtime, cuda-python and
 * Triton reach every driver function after dlsym'ing this one. One table of what the simulated
 * driver implements, as the real driver answers:
 *   - a base name has one row per ABI, each with the cudaVersion that introduced it; a caller gets
 *     the newest ABI its cudaVersion knows ("cuMemcpyBatchAsync": the 12.8 function, with failIdx,
 *     from 12080, cuMemcpyBatchAsync_v2 from 13000), and below the first row
 *     CUDA_ERROR_NOT_FOUND with CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
 *   - CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM selects the _ptsz/_ptds variant of a function
 *     that has one; 0 (CU_GET_PROC_ADDRESS_DEFAULT, as the driver sees it) and
 *     CU_GET_PROC_ADDRESS_LEGACY_STREAM the plain one;
 *   - an unknown name is CUDA_ERROR_NOT_FOUND with CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
 *   - a row of pinguard's table of entry points this table lacks is answered under its exported
 *     name (sd_entries.c), so that tracking a new driver entry point needs no row here.
 * One simcuda-only name is answered too: "simcuda_driver_engine" (sd_engine.c). */
#include <string.h>

#include "sd_internal.h"

/* Undo cuda.h's renaming for the functions defined here under their first names. */
#undef cuGetProcAddress
#undef cuEventElapsedTime
#undef cuMemcpyBatchAsync
#undef cuMemcpy3DBatchAsync

/* The variants cuda.h declares only for per-thread builds, and the 12.8 batch ABI: addresses
 * only. */
#define SD_ADDR_ONLY(X)                                                                       \
  X(cuMemcpy_ptds) X(cuMemcpyAsync_ptsz) X(cuMemcpyHtoD_v2_ptds) X(cuMemcpyDtoH_v2_ptds)      \
  X(cuMemcpyDtoD_v2_ptds) X(cuMemcpyHtoDAsync_v2_ptsz) X(cuMemcpyDtoHAsync_v2_ptsz)           \
  X(cuMemcpyDtoDAsync_v2_ptsz) X(cuMemcpy2D_v2_ptds) X(cuMemcpy2DAsync_v2_ptsz)               \
  X(cuMemcpy3D_v2_ptds) X(cuMemcpy3DAsync_v2_ptsz) X(cuMemcpyBatchAsync)                      \
  X(cuMemcpyBatchAsync_ptsz) X(cuMemcpyBatchAsync_v2_ptsz)         \
  X(cuMemcpy3DBatchAsync) X(cuMemcpy3DBatchAsync_ptsz)           \
  X(cuMemcpy3DBatchAsync_v2_ptsz) X(cuMemsetD8_v2_ptds) X(cuMemsetD8Async_ptsz)               \
  X(cuLaunchKernel_ptsz) X(cuLaunchKernelEx_ptsz) X(cuLaunchCooperativeKernel_ptsz)           \
  X(cuStreamSynchronize_ptsz) X(cuStreamQuery_ptsz) X(cuStreamWaitEvent_ptsz)                 \
  X(cuLaunchHostFunc_ptsz) X(cuEventRecord_ptsz) X(cuEventRecordWithFlags_ptsz)               \
  X(cuStreamBeginCapture_v2_ptsz) X(cuStreamEndCapture_ptsz) X(cuStreamIsCapturing_ptsz)   \
  X(cuGraphLaunch_ptsz) X(cuStreamGetFlags_ptsz) X(cuStreamGetDevice_ptsz)
#define SD_DECLARE(name) extern void name(void);
SD_ADDR_ONLY(SD_DECLARE)
#undef SD_DECLARE

SD_API CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                         cuuint64_t flags);

/* The 2000 ABI of cuEventElapsedTime; _v2 (12080, sd_api.c) differs only in its errors on
 * real hardware. */
SD_API CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
  return cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
}

typedef struct sd_proc {
  const char *name; /* the base name callers ask for */
  int version;      /* the first cudaVersion whose ABI this row is */
  void *fn;
  void *fn_ptsz;    /* the per-thread-default-stream variant, or NULL when there is none */
} sd_proc;

/* Rows of one name are in increasing version order. */
#define P(name, version, fn) {#name, version, (void *)fn, NULL}
#define PT(name, version, fn, ptsz) {#name, version, (void *)fn, (void *)ptsz}
static const sd_proc sd_procs[] = {
    P(cuInit, 2000, cuInit),
    P(cuDriverGetVersion, 2020, cuDriverGetVersion),
    P(cuDeviceGetCount, 2000, cuDeviceGetCount),
    P(cuDeviceGet, 2000, cuDeviceGet),
    P(cuDeviceGetName, 2000, cuDeviceGetName),
    P(cuDeviceTotalMem, 3020, cuDeviceTotalMem_v2),
    P(cuDeviceGetAttribute, 2000, cuDeviceGetAttribute),
    P(cuDevicePrimaryCtxGetState, 7000, cuDevicePrimaryCtxGetState),
    P(cuDevicePrimaryCtxRetain, 7000, cuDevicePrimaryCtxRetain),
    P(cuDevicePrimaryCtxRelease, 11000, cuDevicePrimaryCtxRelease_v2),
    P(cuCtxGetCurrent, 4000, cuCtxGetCurrent),
    P(cuCtxSetCurrent, 4000, cuCtxSetCurrent),
    P(cuCtxGetDevice, 2000, cuCtxGetDevice),
    P(cuCtxSynchronize, 2000, cuCtxSynchronize),
    P(cuCtxSynchronize, 13000, cuCtxSynchronize_v2),
    P(cuGetErrorName, 6000, cuGetErrorName),
    P(cuGetErrorString, 6000, cuGetErrorString),
    P(cuGetProcAddress, 11030, cuGetProcAddress),
    P(cuGetProcAddress, 12000, cuGetProcAddress_v2),
    /* modules, libraries, functions */
    P(cuModuleLoad, 2000, cuModuleLoad),
    P(cuModuleLoadData, 2000, cuModuleLoadData),
    P(cuModuleLoadDataEx, 2010, cuModuleLoadDataEx),
    P(cuModuleUnload, 2000, cuModuleUnload),
    P(cuModuleGetFunction, 2000, cuModuleGetFunction),
    P(cuLibraryLoadData, 12000, cuLibraryLoadData),
    P(cuLibraryUnload, 12000, cuLibraryUnload),
    P(cuLibraryGetKernel, 12000, cuLibraryGetKernel),
    P(cuKernelGetFunction, 12000, cuKernelGetFunction),
    P(cuLinkCreate, 6050, cuLinkCreate_v2),
    P(cuLinkAddData, 6050, cuLinkAddData_v2),
    P(cuLinkComplete, 5050, cuLinkComplete),
    P(cuLinkDestroy, 5050, cuLinkDestroy),
    P(cuFuncGetAttribute, 2020, cuFuncGetAttribute),
    P(cuFuncSetAttribute, 9000, cuFuncSetAttribute),
    P(cuFuncSetCacheConfig, 3000, cuFuncSetCacheConfig),
    P(cuFuncGetParamInfo, 12040, cuFuncGetParamInfo),
    P(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050, cuOccupancyMaxActiveBlocksPerMultiprocessor),
    P(cuTensorMapEncodeTiled, 12000, cuTensorMapEncodeTiled),
    PT(cuLaunchKernel, 4000, cuLaunchKernel, cuLaunchKernel_ptsz),
    PT(cuLaunchKernelEx, 11060, cuLaunchKernelEx, cuLaunchKernelEx_ptsz),
    PT(cuLaunchCooperativeKernel, 9000, cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz),
    /* memory */
    P(cuMemAlloc, 3020, cuMemAlloc_v2),
    P(cuMemFree, 3020, cuMemFree_v2),
    P(cuMemHostAlloc, 2020, cuMemHostAlloc),
    P(cuMemAllocHost, 3020, cuMemAllocHost_v2),
    P(cuMemFreeHost, 2000, cuMemFreeHost),
    P(cuMemHostRegister, 6050, cuMemHostRegister_v2),
    P(cuMemHostUnregister, 4000, cuMemHostUnregister),
    P(cuMemHostGetDevicePointer, 3020, cuMemHostGetDevicePointer_v2),
    P(cuPointerGetAttribute, 4000, cuPointerGetAttribute),
    P(cuPointerGetAttributes, 7000, cuPointerGetAttributes),
    /* copies and memsets */
    PT(cuMemcpy, 4000, cuMemcpy, cuMemcpy_ptds),
    PT(cuMemcpyAsync, 4000, cuMemcpyAsync, cuMemcpyAsync_ptsz),
    PT(cuMemcpyHtoD, 3020, cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds),
    PT(cuMemcpyDtoH, 3020, cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds),
    PT(cuMemcpyDtoD, 3020, cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds),
    PT(cuMemcpyHtoDAsync, 3020, cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz),
    PT(cuMemcpyDtoHAsync, 3020, cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz),
    PT(cuMemcpyDtoDAsync, 3020, cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz),
    PT(cuMemcpy2D, 3020, cuMemcpy2D_v2, cuMemcpy2D_v2_ptds),
    PT(cuMemcpy2DAsync, 3020, cuMemcpy2DAsync_v2, cuMemcpy2DAsync_v2_ptsz),
    PT(cuMemcpy3D, 3020, cuMemcpy3D_v2, cuMemcpy3D_v2_ptds),
    PT(cuMemcpy3DAsync, 3020, cuMemcpy3DAsync_v2, cuMemcpy3DAsync_v2_ptsz),
    PT(cuMemcpyBatchAsync, 12080, cuMemcpyBatchAsync, cuMemcpyBatchAsync_ptsz),
    PT(cuMemcpyBatchAsync, 13000, cuMemcpyBatchAsync_v2, cuMemcpyBatchAsync_v2_ptsz),
    PT(cuMemcpy3DBatchAsync, 12080, cuMemcpy3DBatchAsync, cuMemcpy3DBatchAsync_ptsz),
    PT(cuMemcpy3DBatchAsync, 13000, cuMemcpy3DBatchAsync_v2, cuMemcpy3DBatchAsync_v2_ptsz),
    PT(cuMemsetD8, 3020, cuMemsetD8_v2, cuMemsetD8_v2_ptds),
    PT(cuMemsetD8Async, 3020, cuMemsetD8Async, cuMemsetD8Async_ptsz),
    /* streams, host functions, events */
    P(cuStreamCreate, 2000, cuStreamCreate),
    P(cuStreamCreateWithPriority, 5050, cuStreamCreateWithPriority),
    P(cuStreamDestroy, 4000, cuStreamDestroy_v2),
    PT(cuStreamSynchronize, 2000, cuStreamSynchronize, cuStreamSynchronize_ptsz),
    PT(cuStreamQuery, 2000, cuStreamQuery, cuStreamQuery_ptsz),
    PT(cuStreamWaitEvent, 3020, cuStreamWaitEvent, cuStreamWaitEvent_ptsz),
    PT(cuStreamGetFlags, 5050, cuStreamGetFlags, cuStreamGetFlags_ptsz),
    PT(cuStreamGetDevice, 12080, cuStreamGetDevice, cuStreamGetDevice_ptsz),
    PT(cuLaunchHostFunc, 10000, cuLaunchHostFunc, cuLaunchHostFunc_ptsz),
    P(cuEventCreate, 2000, cuEventCreate),
    P(cuEventDestroy, 4000, cuEventDestroy_v2),
    PT(cuEventRecord, 2000, cuEventRecord, cuEventRecord_ptsz),
    PT(cuEventRecordWithFlags, 11010, cuEventRecordWithFlags, cuEventRecordWithFlags_ptsz),
    P(cuEventQuery, 2000, cuEventQuery),
    P(cuEventSynchronize, 2000, cuEventSynchronize),
    P(cuEventElapsedTime, 2000, cuEventElapsedTime),
    P(cuEventElapsedTime, 12080, cuEventElapsedTime_v2),
    /* capture and graphs */
    P(cuGraphInstantiate, 12000, cuGraphInstantiateWithFlags),
    P(cuGraphInstantiateWithFlags, 11040, cuGraphInstantiateWithFlags),
    PT(cuGraphLaunch, 10000, cuGraphLaunch, cuGraphLaunch_ptsz),
    P(cuGraphDestroy, 10000, cuGraphDestroy),
    P(cuGraphExecDestroy, 10000, cuGraphExecDestroy),
    PT(cuStreamBeginCapture, 10010, cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz),
    PT(cuStreamEndCapture, 10000, cuStreamEndCapture, cuStreamEndCapture_ptsz),
    PT(cuStreamIsCapturing, 10000, cuStreamIsCapturing, cuStreamIsCapturing_ptsz),
};
#undef P
#undef PT

SD_API CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                            cuuint64_t flags,
                                            CUdriverProcAddressQueryResult *symbolStatus) {
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  if (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                            CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
    return CUDA_ERROR_INVALID_VALUE;
  *pfn = NULL;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (strcmp(symbol, "simcuda_driver_engine") == 0) {
    *pfn = (void *)simcuda_driver_engine;
    status = CU_GET_PROC_ADDRESS_SUCCESS;
  }
  bool ptsz = flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  for (size_t i = 0; i < sizeof sd_procs / sizeof sd_procs[0] && !*pfn; i++) {
    if (strcmp(sd_procs[i].name, symbol) != 0) continue;
    status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    /* the newest row of this name that the caller's version knows */
    for (size_t j = i; j < sizeof sd_procs / sizeof sd_procs[0] &&
                       strcmp(sd_procs[j].name, symbol) == 0;
         j++) {
      if (cudaVersion < sd_procs[j].version) break;
      *pfn = ptsz && sd_procs[j].fn_ptsz ? sd_procs[j].fn_ptsz : sd_procs[j].fn;
      status = CU_GET_PROC_ADDRESS_SUCCESS;
    }
    break;
  }
  /* A row of pinguard's table of entry points that this table lacks (sd_entries.c): answered
   * under its exported name, at any version, unless the name is one of this table's functions
   * under another name (the driver answers base names only). */
  if (status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND) {
    void *fn = sd_entry_address(symbol, ptsz);
    for (size_t i = 0; fn && i < sizeof sd_procs / sizeof sd_procs[0]; i++)
      if (sd_procs[i].fn == fn || sd_procs[i].fn_ptsz == fn) fn = NULL;
    if (fn) {
      *pfn = fn;
      status = CU_GET_PROC_ADDRESS_SUCCESS;
    }
  }
  if (symbolStatus) *symbolStatus = status;
  return status == CU_GET_PROC_ADDRESS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

/* The 11.3 form, without the status. */
SD_API CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                         cuuint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}
