/* test_driver.c: simcuda's driver (libcuda.so.1): one device whose primary context is active,
 * contexts, eight devices (SIMCUDA_DEVICES=8) with a primary context each and a per-thread
 * current context, a bad device count, error strings, cuGetProcAddress's table and version rule, and clean failures for
 * everything that needs device code. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <cuda.h>

#define CU(call) cr_assert_eq((call), CUDA_SUCCESS, "%s", #call)

Test(driver, device_and_primary_context) {
  int n = 0, v = 0, cc = 0;
  CUdevice dev = -1;
  CU(cuInit(0));
  CU(cuDriverGetVersion(&v));
  cr_assert_geq(v, 13000);
  CU(cuDeviceGetCount(&n));
  cr_assert_eq(n, 1);
  CU(cuDeviceGet(&dev, 0));
  cr_assert_eq(dev, 0);
  cr_assert_eq(cuDeviceGet(&dev, 1), CUDA_ERROR_INVALID_DEVICE);
  CU(cuDeviceGetAttribute(&cc, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
  cr_assert_eq(cc, 9);
  CU(cuDeviceGetAttribute(&cc, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 0));
  cr_assert_eq(cc, 1);
  cr_assert_eq(cuDeviceGetAttribute(&cc, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 3),
               CUDA_ERROR_INVALID_DEVICE);

  /* What PyTorch's NVRTC stub asks first, with no cuInit of its own: it must succeed. */
  unsigned flags = 99;
  int active = -1;
  CU(cuDevicePrimaryCtxGetState(0, &flags, &active));
  cr_assert_eq(flags, 0);
  cr_assert_eq(active, 1);
  cr_assert_eq(cuDevicePrimaryCtxGetState(1, &flags, &active), CUDA_ERROR_INVALID_DEVICE);

  CUcontext primary = NULL, cur = NULL;
  CU(cuDevicePrimaryCtxRetain(&primary, 0));
  cr_assert_not_null(primary);
  CU(cuCtxGetCurrent(&cur));
  cr_assert_eq(cur, primary);
  CU(cuCtxSetCurrent(NULL));
  CU(cuCtxGetCurrent(&cur));
  cr_assert_null(cur);
  cr_assert_eq(cuCtxGetDevice(&dev), CUDA_ERROR_INVALID_CONTEXT);
  CU(cuCtxSetCurrent(primary));
  cr_assert_eq(cuCtxSetCurrent((CUcontext)&cur), CUDA_ERROR_INVALID_CONTEXT);
  CU(cuDevicePrimaryCtxRelease(0));
  cr_assert_eq(cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
}

Test(driver, error_strings) {
  const char *s = NULL;
  CU(cuGetErrorString(CUDA_ERROR_NOT_SUPPORTED, &s));
  cr_assert_str_eq(s, "operation not supported");
  CU(cuGetErrorName(CUDA_ERROR_INVALID_DEVICE, &s));
  cr_assert_str_eq(s, "CUDA_ERROR_INVALID_DEVICE");
  cr_assert_eq(cuGetErrorString((CUresult)123456, &s), CUDA_ERROR_INVALID_VALUE);
  cr_assert_null(s);
}

Test(driver, get_proc_address) {
  void *fn = NULL;
  CUdriverProcAddressQueryResult st = -1;
  CU(cuGetProcAddress("cuDevicePrimaryCtxGetState", &fn, 13000, 0, &st));
  cr_assert_eq(st, CU_GET_PROC_ADDRESS_SUCCESS);
  cr_assert_eq(fn, (void *)cuDevicePrimaryCtxGetState);
  /* A base name resolves to its current ABI, and only for callers new enough to know it. */
  CU(cuGetProcAddress("cuLinkCreate", &fn, 12000, 0, &st));
  cr_assert_eq(fn, (void *)cuLinkCreate_v2);
  cr_assert_eq(cuGetProcAddress("cuLinkCreate", &fn, 5000, 0, &st), CUDA_ERROR_NOT_FOUND);
  cr_assert_eq(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  cr_assert_null(fn);
  cr_assert_eq(cuGetProcAddress("cuMemAlloc", &fn, 13000, 0, &st), CUDA_ERROR_NOT_FOUND);
  cr_assert_eq(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  cr_assert_null(fn);
}

Test(driver, device_code_fails_cleanly) {
  CUmodule m = (CUmodule)0x1;
  CUfunction f = NULL;
  CUlinkState ls = NULL;
  int nb = -1;
  cr_assert_eq(cuModuleLoadData(&m, "not a cubin"), CUDA_ERROR_NOT_SUPPORTED);
  cr_assert_eq(cuModuleLoad(&m, "/nonexistent.cubin"), CUDA_ERROR_NOT_SUPPORTED);
  cr_assert_eq(cuModuleLoadDataEx(&m, "x", 0, NULL, NULL), CUDA_ERROR_NOT_SUPPORTED);
  cr_assert_eq(cuModuleGetFunction(&f, m, "k"), CUDA_ERROR_INVALID_HANDLE);
  cr_assert_eq(cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);
  cr_assert_eq(cuLinkCreate(0, NULL, NULL, &ls), CUDA_ERROR_NOT_SUPPORTED);
  cr_assert_eq(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
  cr_assert_eq(cuOccupancyMaxActiveBlocksPerMultiprocessor(&nb, f, 128, 0),
               CUDA_ERROR_INVALID_HANDLE);
  int data = 0;
  cr_assert_eq(cuPointerGetAttribute(&data, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)&data),
               CUDA_ERROR_NOT_SUPPORTED);
}

/* ---- several devices ------------------------------------------------------------------------ */
static void eight(void) { setenv("SIMCUDA_DEVICES", "8", 1); }

typedef struct ctx_probe {
  CUcontext first;
  CUdevice dev_after;
  CUresult err;
} ctx_probe;

static void *ctx_thread(void *p) {
  ctx_probe *r = p;
  CUcontext five = NULL;
  CUresult e1 = cuCtxGetCurrent(&r->first);
  CUresult e2 = cuDevicePrimaryCtxRetain(&five, 5);
  CUresult e3 = cuCtxSetCurrent(five);
  CUresult e4 = cuCtxGetDevice(&r->dev_after);
  r->err = e1 ? e1 : e2 ? e2 : e3 ? e3 : e4;
  cuDevicePrimaryCtxRelease(5);
  return NULL;
}

Test(driver, one_primary_context_per_device, .init = eight) {
  int n = 0;
  CU(cuInit(0));
  CU(cuDeviceGetCount(&n));
  cr_assert_eq(n, 8);
  CUdevice dev = -1;
  CU(cuDeviceGet(&dev, 7));
  cr_assert_eq(dev, 7);
  cr_assert_eq(cuDeviceGet(&dev, 8), CUDA_ERROR_INVALID_DEVICE);
  char name0[128], name3[128];
  CU(cuDeviceGetName(name0, sizeof name0, 0));
  CU(cuDeviceGetName(name3, sizeof name3, 3));
  cr_assert_str_eq(name0, "simcuda simulated device");
  cr_assert_str_eq(name3, "simcuda simulated device 3");
  int bus = -1;
  CU(cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 6));
  cr_assert_eq(bus, 6);

  CUcontext ctx[8];
  for (int d = 0; d < 8; d++) {
    CU(cuDevicePrimaryCtxRetain(&ctx[d], d));
    for (int e = 0; e < d; e++) cr_assert_neq(ctx[e], ctx[d]);
    CUcontext again = NULL;
    CU(cuDevicePrimaryCtxRetain(&again, d));
    cr_assert_eq(again, ctx[d], "a device's primary context is one context");
  }
  CUcontext cur = NULL;
  CU(cuCtxGetCurrent(&cur));
  cr_assert_eq(cur, ctx[0], "a thread starts on device 0's primary context");
  CU(cuCtxSetCurrent(ctx[4]));
  CU(cuCtxGetDevice(&dev));
  cr_assert_eq(dev, 4);

  /* The current context is per thread. */
  ctx_probe r = {NULL, -1, CUDA_SUCCESS};
  pthread_t t;
  pthread_create(&t, NULL, ctx_thread, &r);
  pthread_join(t, NULL);
  cr_assert_eq(r.err, CUDA_SUCCESS);
  cr_assert_eq(r.first, ctx[0]);
  cr_assert_eq(r.dev_after, 5);
  CU(cuCtxGetCurrent(&cur));
  cr_assert_eq(cur, ctx[4], "another thread's cuCtxSetCurrent changed this thread's context");

  /* Retains are counted per device. */
  for (int d = 0; d < 8; d++) {
    CU(cuDevicePrimaryCtxRelease(d));
    CU(cuDevicePrimaryCtxRelease(d));
  }
  cr_assert_eq(cuDevicePrimaryCtxRelease(2), CUDA_ERROR_INVALID_CONTEXT);
  cr_assert_eq(cuDevicePrimaryCtxRetain(&cur, 8), CUDA_ERROR_INVALID_DEVICE);
}

static void bad(void) {
  setenv("SIMCUDA_DEVICES", "17", 1);
  cr_redirect_stderr();
}

Test(driver, bad_device_count_means_no_device, .init = bad) {
  int n = -1;
  cr_assert_eq(cuInit(0), CUDA_ERROR_NO_DEVICE);
  CU(cuDeviceGetCount(&n));
  cr_assert_eq(n, 0);
  CUdevice dev;
  cr_assert_eq(cuDeviceGet(&dev, 0), CUDA_ERROR_INVALID_DEVICE);
}
