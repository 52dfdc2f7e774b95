/* sd_device.c: the simulated driver's devices and contexts: SIMCUDA_DEVICES devices (default 1),
 * with the same properties as simcuda's runtime reports, and one primary context per device. The
 * current context is per thread, and it is the engine's current device: cuCtxSetCurrent of device
 * d's primary context makes d the runtime's current device, cudaSetDevice(d) makes d's primary
 * context current, and a thread starts with device 0's.
 *
 * The driver counts as initialized from the start (PyTorch's NVRTC stub never calls cuInit), and
 * the primary context is reported active: the runtime creates it at its first call. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "sd_internal.h"

/* A primary context is an opaque handle; only its address matters: device d's is sd_primary[d]. */
static struct CUctx_st {
  atomic_int retains;
} sd_primary[SD_MAX_DEVICES];

int sd_device_count(void) {
  sc_init();
  return sc_cfg.devices;
}

CUresult sd_check_device(CUdevice dev) {
  return dev >= 0 && dev < sd_device_count() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUcontext sd_primary_ctx(int device) {
  return device >= 0 && device < SD_MAX_DEVICES ? &sd_primary[device] : NULL;
}

int sd_ctx_device(CUcontext ctx) {
  if (ctx >= &sd_primary[0] && ctx < &sd_primary[sd_device_count()]) return (int)(ctx - sd_primary);
  return -1;
}

SD_API CUresult CUDAAPI cuInit(unsigned int Flags) {
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return sd_device_count() > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

SD_API CUresult CUDAAPI cuDriverGetVersion(int *driverVersion) {
  if (!driverVersion) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = 13000; /* as simcuda's cudaDriverGetVersion */
  return CUDA_SUCCESS;
}

SD_API CUresult CUDAAPI cuDeviceGetCount(int *count) {
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = sd_device_count();
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
  if (dev == 0)
    snprintf(name, (size_t)len, "simcuda simulated device");
  else
    snprintf(name, (size_t)len, "simcuda simulated device %d", dev);
  return CUDA_SUCCESS;
}

SD_API CUresult CUDAAPI cuDeviceTotalMem(size_t *bytes, CUdevice dev) {
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  if (sd_check_device(dev) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = sc_cfg.device_bytes; /* the arena's size (SIMCUDA_DEVICE_MB, default 16 GiB) */
  return CUDA_SUCCESS;
}

/* The same values as simcuda's cudaDeviceGetAttribute (the two enums share their numbers). */
SD_API CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
  if (!pi) return CUDA_ERROR_INVALID_VALUE;
  if (sd_check_device(dev) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_DEVICE;
  if (sc_device_attribute((int)attrib, dev, pi) != 0) return CUDA_ERROR_INVALID_VALUE;
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
  atomic_fetch_add(&sd_primary[dev].retains, 1);
  *pctx = &sd_primary[dev];
  return CUDA_SUCCESS;
}

SD_API CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
  if (sd_check_device(dev) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_DEVICE;
  atomic_int *retains = &sd_primary[dev].retains;
  int n = atomic_load(retains);
  while (n > 0 && !atomic_compare_exchange_weak(retains, &n, n - 1)) {
  }
  /* Releasing more often than retaining is an error; the context itself stays (runtime's). */
  return n > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

SD_API CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx) {
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  int dev = sc_ctx_bound_device();
  *pctx = dev < 0 ? NULL : &sd_primary[dev];
  return CUDA_SUCCESS;
}

SD_API CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  int dev = ctx ? sd_ctx_device(ctx) : -1;
  if (ctx && dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
  sc_ctx_bind(dev);
  return CUDA_SUCCESS;
}

SD_API CUresult CUDAAPI cuCtxGetDevice(CUdevice *device) {
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  int dev = sc_ctx_bound_device();
  if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
  *device = dev;
  return CUDA_SUCCESS;
}
