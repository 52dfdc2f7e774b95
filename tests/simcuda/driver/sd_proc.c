/* sd_proc.c: cuGetProcAddress, the way both the static and the dynamic runtime, cuda-python and
 * Triton reach every driver function after dlsym'ing this one. One table of what the simulated
 * driver implements; a name is found when the caller's cudaVersion is at least the version that
 * introduced the ABI listed (so "cuLinkCreate" at 6050 or later is cuLinkCreate_v2, as in CUDA).
 * None of these functions takes a stream, so the per-thread flag selects nothing. Grow the table
 * with the driver. */
#include <string.h>

#include "sd_internal.h"

typedef struct sd_proc {
  const char *name; /* the base name callers ask for */
  int version;      /* the first cudaVersion whose ABI is this entry's function */
  void *fn;
} sd_proc;

/* cuda.h maps each base name to its current ABI (cuLinkCreate -> cuLinkCreate_v2), so the
 * function named in each row is the one for `version` and later. */
#define SD_PROC(name, version) {#name, version, (void *)name}
static const sd_proc sd_procs[] = {
    SD_PROC(cuInit, 2000),
    SD_PROC(cuDriverGetVersion, 2020),
    SD_PROC(cuDeviceGetCount, 2000),
    SD_PROC(cuDeviceGet, 2000),
    SD_PROC(cuDeviceGetName, 2000),
    SD_PROC(cuDeviceTotalMem, 3020),
    SD_PROC(cuDeviceGetAttribute, 2000),
    SD_PROC(cuDevicePrimaryCtxGetState, 7000),
    SD_PROC(cuDevicePrimaryCtxRetain, 7000),
    SD_PROC(cuDevicePrimaryCtxRelease, 11000),
    SD_PROC(cuCtxGetCurrent, 4000),
    SD_PROC(cuCtxSetCurrent, 4000),
    SD_PROC(cuCtxGetDevice, 2000),
    SD_PROC(cuGetErrorName, 6000),
    SD_PROC(cuGetErrorString, 6000),
    SD_PROC(cuModuleLoad, 2000),
    SD_PROC(cuModuleLoadData, 2000),
    SD_PROC(cuModuleLoadDataEx, 2010),
    SD_PROC(cuModuleUnload, 2000),
    SD_PROC(cuModuleGetFunction, 2000),
    SD_PROC(cuLinkCreate, 6050),
    SD_PROC(cuLinkAddData, 6050),
    SD_PROC(cuLinkComplete, 5050),
    SD_PROC(cuLinkDestroy, 5050),
    SD_PROC(cuFuncGetAttribute, 2020),
    SD_PROC(cuFuncSetAttribute, 9000),
    SD_PROC(cuFuncSetCacheConfig, 3000),
    SD_PROC(cuLaunchKernel, 4000),
    SD_PROC(cuLaunchCooperativeKernel, 9000),
    SD_PROC(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050),
    SD_PROC(cuPointerGetAttribute, 4000),
    SD_PROC(cuTensorMapEncodeTiled, 12000),
    SD_PROC(cuGetProcAddress, 12000),
};
#undef SD_PROC

SD_API CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                         cuuint64_t flags,
                                         CUdriverProcAddressQueryResult *symbolStatus) {
  (void)flags;
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  *pfn = NULL;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  for (size_t i = 0; i < sizeof sd_procs / sizeof sd_procs[0]; i++) {
    if (strcmp(sd_procs[i].name, symbol) != 0) continue;
    if (cudaVersion < sd_procs[i].version) {
      status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
      break;
    }
    *pfn = sd_procs[i].fn;
    status = CU_GET_PROC_ADDRESS_SUCCESS;
    break;
  }
  if (symbolStatus) *symbolStatus = status;
  return status == CU_GET_PROC_ADDRESS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}
