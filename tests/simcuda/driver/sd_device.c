/* sd_device.c: the simulated driver's devices and contexts: SIMCUDA_DEVICES devices (default 1),
 * with the same properties as simcuda's runtime reports, and one primary context per device. The
 * current context is per thread and starts as device 0's primary context.
 *
 * The driver counts as initialized from the start: in a real process the runtime calls cuInit
 * before anything else can ask, and simcuda's runtime does not go through this driver yet, so
 * callers that rely on the runtime having initialized it (PyTorch's NVRTC stub never calls
 * cuInit) must find it ready. For the same reason the primary context is reported active: the
 * runtime creates it at its first call. */
#include <errno.h>
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
static _Thread_local CUcontext sd_current = &sd_primary[0];

static int sd_ndevices;
static pthread_once_t sd_once = PTHREAD_ONCE_INIT;

/* SIMCUDA_DEVICES read as the runtime reads it: unset or empty is 1, a bad value means no device
 * (and a message). */
static void sd_read_devices(void) {
  const char *v = getenv("SIMCUDA_DEVICES");
  if (!v || !*v) {
    sd_ndevices = 1;
    return;
  }
  char *end = NULL;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (errno || end == v || *end || n < 1 || n > SD_MAX_DEVICES) {
    fprintf(stderr,
            "simcuda driver: SIMCUDA_DEVICES='%s' is invalid (want a whole number from 1 to %d); "
            "no device is available\n",
            v, SD_MAX_DEVICES);
    sd_ndevices = 0;
    return;
  }
  sd_ndevices = (int)n;
}

int sd_device_count(void) {
  pthread_once(&sd_once, sd_read_devices);
  return sd_ndevices;
}

CUresult sd_check_device(CUdevice dev) {
  return dev >= 0 && dev < sd_device_count() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

static bool sd_is_primary(CUcontext ctx) {
  return ctx >= &sd_primary[0] && ctx < &sd_primary[sd_device_count()];
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
  case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *pi = dev; break;
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
  *pctx = sd_current;
  return CUDA_SUCCESS;
}

SD_API CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  if (ctx && !sd_is_primary(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  sd_current = ctx;
  return CUDA_SUCCESS;
}

SD_API CUresult CUDAAPI cuCtxGetDevice(CUdevice *device) {
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (!sd_current) return CUDA_ERROR_INVALID_CONTEXT;
  *device = (CUdevice)(sd_current - sd_primary);
  return CUDA_SUCCESS;
}
