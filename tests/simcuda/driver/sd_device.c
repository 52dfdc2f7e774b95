/* sd_device.c: the simulated driver's devices and contexts: one device, ordinal 0, with the same
 * properties as simcuda's runtime reports, and its primary context.
 *
 * The driver counts as initialized from the start: in a real process the runtime calls cuInit
 * before anything else can ask, and simcuda's runtime does not go through this driver yet, so
 * callers that rely on the runtime having initialized it (PyTorch's NVRTC stub never calls
 * cuInit) must find it ready. For the same reason the primary context is reported active: the
 * runtime creates it at its first call. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "sd_internal.h"

/* The primary context is an opaque handle; only its address matters. */
static struct CUctx_st {
  int device;
} sd_primary = {0};
static atomic_int sd_primary_retains;
static _Thread_local CUcontext sd_current = &sd_primary;

CUresult sd_check_device(CUdevice dev) {
  return dev >= 0 && dev < SD_DEVICE_COUNT ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

SD_API CUresult CUDAAPI cuInit(unsigned int Flags) {
  return Flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SD_API CUresult CUDAAPI cuDriverGetVersion(int *driverVersion) {
  if (!driverVersion) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = 13000; /* as simcuda's cudaDriverGetVersion */
  return CUDA_SUCCESS;
}

SD_API CUresult CUDAAPI cuDeviceGetCount(int *count) {
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = SD_DEVICE_COUNT;
  return CUDA_SUCCESS;
}

SD_API CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (sd_check_device(ordinal) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

SD_API CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev) {
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (sd_check_device(dev) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_DEVICE;
  snprintf(name, (size_t)len, "simcuda simulated device");
  return CUDA_SUCCESS;
}

SD_API CUresult CUDAAPI cuDeviceTotalMem(size_t *bytes, CUdevice dev) {
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  if (sd_check_device(dev) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_DEVICE;
  /* The runtime's arena size (SIMCUDA_DEVICE_MB, default 16 GiB). */
  const char *mb = getenv("SIMCUDA_DEVICE_MB");
  unsigned long long n = mb && *mb ? strtoull(mb, NULL, 10) : 16384;
  *bytes = (size_t)(n << 20);
  return CUDA_SUCCESS;
}

/* The same values as simcuda's cudaDeviceGetAttribute (the two enums share their numbers); an
 * attribute that is not simulated reads as 0, as there. */
SD_API CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
  if (!pi) return CUDA_ERROR_INVALID_VALUE;
  if (sd_check_device(dev) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_DEVICE;
  switch (attrib) {
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *pi = 32; break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *pi = 1; break;
  case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: *pi = 2; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = 9; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *pi = 0; break;
  case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
  case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
  case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *pi = 1; break;
  default: *pi = 0; break;
  }
  return CUDA_SUCCESS;
}

/* ---- the primary context ------------------------------------------------------------------- */
SD_API CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
  if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
  if (sd_check_device(dev) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_DEVICE;
  *flags = 0;
  *active = 1; /* see the top of this file */
  return CUDA_SUCCESS;
}

SD_API CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (sd_check_device(dev) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_DEVICE;
  atomic_fetch_add(&sd_primary_retains, 1);
  *pctx = &sd_primary;
  return CUDA_SUCCESS;
}

SD_API CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
  if (sd_check_device(dev) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_DEVICE;
  int n = atomic_load(&sd_primary_retains);
  while (n > 0 && !atomic_compare_exchange_weak(&sd_primary_retains, &n, n - 1)) {
  }
  /* Releasing more often than retaining is an error; the context itself stays (runtime's). */
  return n > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

SD_API CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx) {
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  *pctx = sd_current;
  return CUDA_SUCCESS;
}

SD_API CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  if (ctx && ctx != &sd_primary) return CUDA_ERROR_INVALID_CONTEXT;
  sd_current = ctx;
  return CUDA_SUCCESS;
}

SD_API CUresult CUDAAPI cuCtxGetDevice(CUdevice *device) {
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (!sd_current) return CUDA_ERROR_INVALID_CONTEXT;
  *device = sd_current->device;
  return CUDA_SUCCESS;
}
