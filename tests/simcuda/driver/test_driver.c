/* test_driver.c: simcuda's driver (libcuda.so.1), from a program that links it alone: one device
 * whose primary context is active, contexts, eight devices (SIMCUDA_DEVICES=8) with a primary
 * context each and a per-thread current context, a bad device count, error strings, modules and
 * libraries that find registered kernels by name, and the driver API over the engine: pinned and
 * device memory, async copies on streams ordered by events, 2D/3D copies, memsets, cuLaunchKernel
 * and cuLaunchKernelEx of a registered kernel, cuLaunchHostFunc, capture and graphs, both batch
 * ABIs, pointer attributes, and cuGetProcAddress's version and flag rules. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <simcuda_kernel.h>

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
  /* Every attribute CUDA 13.0 defines (1 to 147) answers; the others are invalid values. */
  for (int a = 1; a < CU_DEVICE_ATTRIBUTE_MAX; a++)
    cr_assert_eq(cuDeviceGetAttribute(&cc, (CUdevice_attribute)a, 0), CUDA_SUCCESS, "%d", a);
  CU(cuDeviceGetAttribute(&cc, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 0));
  cr_assert_eq(cc, 2048);
  cr_assert_eq(cuDeviceGetAttribute(&cc, (CUdevice_attribute)0, 0), CUDA_ERROR_INVALID_VALUE);
  cr_assert_eq(cuDeviceGetAttribute(&cc, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);

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
  /* Every code the engine's operations return has its name. */
  CU(cuGetErrorName(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, &s));
  cr_assert_str_eq(s, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED");
  CU(cuGetErrorName(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, &s));
  cr_assert_str_eq(s, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED");
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
  cr_assert_eq(cuGetProcAddress("cuNoSuchFunction", &fn, 13000, 0, &st), CUDA_ERROR_NOT_FOUND);
  cr_assert_eq(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  cr_assert_null(fn);
}

Test(driver, modules_accept_any_image_and_find_kernels_by_name) {
  CUmodule m = NULL;
  CUfunction f = NULL, g = NULL;
  CUlibrary lib = NULL;
  CUkernel k = NULL;
  CUlinkState ls = NULL;
  CU(cuModuleLoadData(&m, "not a cubin"));
  cr_assert_eq(cuModuleGetFunction(&f, m, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
  CU(cuModuleGetFunction(&f, m, "add_kernel"));
  CU(cuLibraryLoadData(&lib, "any image", NULL, NULL, 0, NULL, NULL, 0));
  CU(cuLibraryGetKernel(&k, lib, "add_kernel"));
  CU(cuKernelGetFunction(&g, k));
  cr_assert_eq(f, g, "a CUkernel and a CUfunction of one kernel are the same handle");
  size_t off = 1, size = 0;
  CU(cuFuncGetParamInfo(f, 1, &off, &size));
  cr_assert_eq(off, 8);
  cr_assert_eq(size, sizeof(int));
  cr_assert_eq(cuFuncGetParamInfo(f, 4, &off, &size), CUDA_ERROR_INVALID_VALUE);
  cr_assert_eq(cuFuncGetParamInfo((CUfunction)&off, 0, &off, &size), CUDA_ERROR_INVALID_HANDLE);
  int nb = 0;
  CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&nb, f, 128, 0));
  cr_assert_eq(nb, 16);
  CU(cuModuleUnload(m));
  cr_assert_eq(cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);
  CU(cuLibraryUnload(lib));
  cr_assert_eq(cuLinkCreate(0, NULL, NULL, &ls), CUDA_ERROR_NOT_SUPPORTED);
  cr_assert_eq(cuLaunchKernel((CUfunction)&off, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
               CUDA_ERROR_INVALID_HANDLE);
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

/* ---- the driver API over the engine ---------------------------------------------------------- */
/* dst[i] = src[i] + add, for n ints; dst and src are device or pinned memory. */
SIMCUDA_KERNEL(add_kernel, sizeof(void *), sizeof(int), sizeof(void *), sizeof(size_t)) {
  int *dst = simcuda_dma(*(int **)launch->args[0]);
  int add = *(int *)launch->args[1];
  const int *src = simcuda_dma(*(int **)launch->args[2]);
  size_t n = *(size_t *)launch->args[3];
  for (size_t i = 0; i < n; i++) dst[i] = src[i] + add;
}

static void slow(void) { setenv("SIMCUDA_LATENCY_US", "20000", 1); }

static void *proc(const char *name, int version, cuuint64_t flags) {
  void *fn = NULL;
  CUdriverProcAddressQueryResult st;
  cr_assert_eq(cuGetProcAddress(name, &fn, version, flags, &st), CUDA_SUCCESS, "%s", name);
  cr_assert_eq(st, CU_GET_PROC_ADDRESS_SUCCESS);
  return fn;
}

Test(driver, async_copies_on_streams_ordered_by_events, .init = slow) {
  enum { N = 1 << 16 };
  unsigned char *h_in = NULL, *h_out = NULL;
  CUdeviceptr d = 0;
  CUstream s1, s2;
  CUevent ev;
  CU(cuInit(0));
  CU(cuMemHostAlloc((void **)&h_in, N, CU_MEMHOSTALLOC_PORTABLE));
  CU(cuMemAllocHost((void **)&h_out, N));
  CU(cuMemAlloc(&d, N));
  CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  CU(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
  memset(h_in, 0x5a, N);
  memset(h_out, 0, N);
  CU(cuMemcpyHtoDAsync(d, h_in, N, s1));
  CU(cuEventRecord(ev, s1));
  CU(cuStreamWaitEvent(s2, ev, 0));
  CU(cuMemcpyDtoHAsync(h_out, d, N, s2));
  /* Both copies are still in flight: 20 ms latency each. */
  cr_assert_eq(cuEventQuery(ev), CUDA_ERROR_NOT_READY);
  cr_assert_eq(cuStreamQuery(s2), CUDA_ERROR_NOT_READY);
  cr_assert_eq(h_out[0], 0, "the device-to-host copy has not run yet");
  CU(cuStreamSynchronize(s2));
  CU(cuEventQuery(ev));
  for (size_t i = 0; i < N; i += 4093) cr_assert_eq(h_out[i], 0x5a);
  /* The generic copy and a memset, synchronously. */
  CU(cuMemsetD8(d, 0x11, N));
  CU(cuMemcpy((CUdeviceptr)h_out, d, N));
  cr_assert_eq(h_out[N - 1], 0x11);
  CU(cuCtxSynchronize());
  CU(cuEventDestroy(ev));
  CU(cuStreamDestroy(s1));
  CU(cuStreamDestroy(s2));
  CU(cuMemFree(d));
  CU(cuMemFreeHost(h_in));
  CU(cuMemFreeHost(h_out));
  cr_assert_eq(cuMemFreeHost(h_out), CUDA_ERROR_INVALID_VALUE);
}

Test(driver, registered_memory_and_pointer_attributes) {
  enum { N = 3 * 4096 };
  unsigned char *buf = aligned_alloc(4096, N);
  CUdeviceptr d = 0, dp = 0;
  CU(cuMemAlloc(&d, 4096));
  CU(cuMemHostRegister(buf, N, CU_MEMHOSTREGISTER_PORTABLE));
  cr_assert_eq(cuMemHostRegister(buf + 4096, 4096, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  CU(cuMemHostGetDevicePointer(&dp, buf, 0));
  cr_assert_eq(dp, (CUdeviceptr)buf, "unified addressing: the device uses the host address");
  unsigned int type = 0;
  int ordinal = -1;
  CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(buf + 10)));
  cr_assert_eq(type, CU_MEMORYTYPE_HOST);
  CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d));
  cr_assert_eq(type, CU_MEMORYTYPE_DEVICE);
  CU(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, d));
  cr_assert_eq(ordinal, 0);
  int local = 0;
  cr_assert_eq(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)&local),
               CUDA_ERROR_INVALID_VALUE, "a pointer CUDA does not know");
  /* cuPointerGetAttributes answers for it instead: type 0. */
  CUpointer_attribute which[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 CU_POINTER_ATTRIBUTE_DEVICE_POINTER};
  CUdeviceptr ptr = 1;
  void *data[] = {&type, &ptr};
  CU(cuPointerGetAttributes(2, which, data, (CUdeviceptr)&local));
  cr_assert_eq(type, 0);
  cr_assert_eq(ptr, 0);
  CU(cuMemHostUnregister(buf));
  cr_assert_eq(cuMemHostUnregister(buf), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  CU(cuMemFree(d));
  free(buf);
}

Test(driver, copies_2d_and_3d) {
  enum { W = 16, H = 8, PITCH = 32 };
  unsigned char *h = NULL, *back = NULL;
  CUdeviceptr d = 0;
  CU(cuMemHostAlloc((void **)&h, PITCH * H * 2, 0));
  CU(cuMemHostAlloc((void **)&back, PITCH * H * 2, 0));
  CU(cuMemAlloc(&d, PITCH * H * 2));
  for (int i = 0; i < PITCH * H * 2; i++) h[i] = (unsigned char)i;
  memset(back, 0, PITCH * H * 2);
  CUDA_MEMCPY2D p2 = {0};
  p2.srcMemoryType = CU_MEMORYTYPE_HOST, p2.srcHost = h, p2.srcPitch = PITCH;
  p2.dstMemoryType = CU_MEMORYTYPE_DEVICE, p2.dstDevice = d, p2.dstPitch = PITCH;
  p2.WidthInBytes = W, p2.Height = H;
  CU(cuMemcpy2DAsync(&p2, NULL));
  CUDA_MEMCPY3D p3 = {0};
  p3.srcMemoryType = CU_MEMORYTYPE_DEVICE, p3.srcDevice = d, p3.srcPitch = PITCH;
  p3.srcHeight = H;
  p3.dstMemoryType = CU_MEMORYTYPE_UNIFIED, p3.dstDevice = (CUdeviceptr)back;
  p3.dstPitch = PITCH, p3.dstHeight = H;
  p3.WidthInBytes = W, p3.Height = H, p3.Depth = 1;
  CU(cuMemcpy3D(&p3));
  for (int y = 0; y < H; y++)
    for (int x = 0; x < PITCH; x++)
      cr_assert_eq(back[y * PITCH + x], x < W ? h[y * PITCH + x] : 0, "(%d,%d)", x, y);
  p2.WidthInBytes = PITCH + 1; /* wider than the pitch */
  cr_assert_eq(cuMemcpy2D(&p2), CUDA_ERROR_INVALID_VALUE);
  CU(cuMemFree(d));
  CU(cuMemFreeHost(h));
  CU(cuMemFreeHost(back));
}

typedef struct order_log {
  int seen[4];
  int n;
} order_log;
static order_log g_log;
static void log_one(void *p) { g_log.seen[g_log.n++] = (int)(intptr_t)p; }

Test(driver, launch_kernel_and_host_functions_in_stream_order, .init = slow) {
  enum { N = 1024 };
  int *h = NULL, *out = NULL;
  CUdeviceptr d = 0;
  CUstream s;
  CUmodule m;
  CUfunction f;
  CU(cuModuleLoadData(&m, "image"));
  CU(cuModuleGetFunction(&f, m, "add_kernel"));
  CU(cuMemHostAlloc((void **)&h, N * sizeof(int), 0));
  CU(cuMemHostAlloc((void **)&out, N * sizeof(int), 0));
  CU(cuMemAlloc(&d, N * sizeof(int)));
  CU(cuStreamCreate(&s, 0));
  for (int i = 0; i < N; i++) h[i] = i;
  int add = 7;
  size_t n = N;
  void *dptr = (void *)d;
  void *args[] = {&dptr, &add, &h, &n};
  CU(cuLaunchHostFunc(s, log_one, (void *)1));
  CU(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
  add = 1000; /* parameters were copied at launch */
  CU(cuLaunchHostFunc(s, log_one, (void *)2));
  /* cuLaunchKernelEx: out = d + 1, on the same stream. */
  CUlaunchConfig cfg = {0};
  cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = s;
  int one = 1;
  void *args2[] = {&out, &one, &dptr, &n};
  CU(cuLaunchKernelEx(&cfg, f, args2, NULL));
  cr_assert_eq(g_log.n, 0, "nothing ran yet");
  CU(cuStreamSynchronize(s));
  cr_assert_eq(g_log.n, 2);
  cr_assert_eq(g_log.seen[0], 1);
  cr_assert_eq(g_log.seen[1], 2);
  for (int i = 0; i < N; i++) cr_assert_eq(out[i], i + 8, "out[%d] = %d", i, out[i]);
  cr_assert_eq(cuLaunchKernel(f, 0, 1, 1, 1, 1, 1, 0, s, args, NULL), CUDA_ERROR_INVALID_VALUE,
               "an empty grid");
  cr_assert_eq(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, args), CUDA_ERROR_NOT_SUPPORTED,
               "extra is not simulated");
  CU(cuStreamDestroy(s));
  CU(cuMemFree(d));
  CU(cuMemFreeHost(h));
  CU(cuMemFreeHost(out));
  CU(cuModuleUnload(m));
}

Test(driver, capture_records_and_the_graph_replays, .init = slow) {
  unsigned char *h = NULL, *back = NULL;
  CUdeviceptr d = 0;
  CUstream s;
  CUgraph g = NULL;
  CUgraphExec e = NULL;
  CUstreamCaptureStatus st;
  CU(cuMemHostAlloc((void **)&h, 64, 0));
  CU(cuMemHostAlloc((void **)&back, 64, 0));
  CU(cuMemAlloc(&d, 64));
  CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  memset(h, 1, 64);
  memset(back, 0, 64);
  CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CU(cuStreamIsCapturing(s, &st));
  cr_assert_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CU(cuMemcpyHtoDAsync(d, h, 64, s));
  CU(cuMemcpyDtoHAsync(back, d, 64, s));
  CU(cuStreamEndCapture(s, &g));
  CU(cuStreamSynchronize(s));
  cr_assert_eq(back[0], 0, "captured copies are recorded, not executed");
  memset(h, 2, 64); /* a captured copy reads its source at each launch */
  CU(cuGraphInstantiate(&e, g, 0));
  CU(cuGraphLaunch(e, s));
  CU(cuStreamSynchronize(s));
  cr_assert_eq(back[63], 2);
  /* A sync on a capturing stream fails and invalidates the capture. */
  CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  cr_assert_eq(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUgraph g2 = NULL;
  cr_assert_eq(cuStreamEndCapture(s, &g2), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  CU(cuGraphExecDestroy(e));
  CU(cuGraphDestroy(g));
  CU(cuStreamDestroy(s));
  CU(cuMemFree(d));
  CU(cuMemFreeHost(h));
  CU(cuMemFreeHost(back));
}

/* The batch copy's two ABIs, as cuGetProcAddress hands them out by version. */
Test(driver, batch_copies_in_both_abis) {
  enum { N = 256 };
  PFN_cuMemcpyBatchAsync_v12080 b12 = proc("cuMemcpyBatchAsync", 12080, 0);
  PFN_cuMemcpyBatchAsync_v13000 b13 = proc("cuMemcpyBatchAsync", 13000, 0);
  cr_assert_neq((void *)b12, (void *)b13, "two ABIs, two functions");
  cr_assert_eq((void *)b13, (void *)cuMemcpyBatchAsync_v2);
  unsigned char *h = NULL, *back = NULL;
  CUdeviceptr d = 0;
  CUstream s;
  CU(cuMemHostAlloc((void **)&h, N, 0));
  CU(cuMemHostAlloc((void **)&back, N, 0));
  CU(cuMemAlloc(&d, N));
  CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  memset(h, 0x33, N);
  memset(back, 0, N);
  CUmemcpyAttributes attr = {0};
  attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  size_t idx = 0, fail = 12345, size = N;
  CUdeviceptr dst = d, src = (CUdeviceptr)h;
  CU(b12(&dst, &src, &size, 1, &attr, &idx, 1, &fail, s));
  dst = (CUdeviceptr)back, src = d;
  CU(b13(&dst, &src, &size, 1, &attr, &idx, 1, s));
  CU(cuStreamSynchronize(s));
  cr_assert_eq(back[N - 1], 0x33);
  /* The 12.8 ABI reports which copy was bad. */
  CUdeviceptr dsts[2] = {d, 0}, srcs[2] = {(CUdeviceptr)h, (CUdeviceptr)h};
  size_t sizes[2] = {N, N};
  cr_assert_eq(b12(dsts, srcs, sizes, 2, &attr, &idx, 1, &fail, s), CUDA_ERROR_INVALID_VALUE);
  cr_assert_eq(fail, 1);
  /* Both refuse the legacy stream. */
  cr_assert_eq(b13(&dst, &src, &size, 1, &attr, &idx, 1, NULL), CUDA_ERROR_INVALID_VALUE);
  CU(cuStreamDestroy(s));
  CU(cuMemFree(d));
  CU(cuMemFreeHost(h));
  CU(cuMemFreeHost(back));
}

Test(driver, get_proc_address_versions_and_flags) {
  void *self = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  cr_assert_not_null(self);
  const cuuint64_t PT = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  /* Per-thread variants by flag, plain ones otherwise. */
  cr_assert_eq(proc("cuMemcpyAsync", 13000, PT), dlsym(self, "cuMemcpyAsync_ptsz"));
  cr_assert_eq(proc("cuMemcpyAsync", 13000, 0), dlsym(self, "cuMemcpyAsync"));
  cr_assert_eq(proc("cuMemcpyAsync", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM),
               dlsym(self, "cuMemcpyAsync"));
  cr_assert_eq(proc("cuMemcpyHtoDAsync", 3020, PT), dlsym(self, "cuMemcpyHtoDAsync_v2_ptsz"));
  cr_assert_eq(proc("cuMemcpyHtoDAsync", 13000, 0), dlsym(self, "cuMemcpyHtoDAsync_v2"));
  cr_assert_eq(proc("cuMemcpyDtoHAsync", 12000, PT), dlsym(self, "cuMemcpyDtoHAsync_v2_ptsz"));
  cr_assert_eq(proc("cuMemcpy2DAsync", 13000, PT), dlsym(self, "cuMemcpy2DAsync_v2_ptsz"));
  cr_assert_eq(proc("cuMemcpy3DAsync", 13000, 0), dlsym(self, "cuMemcpy3DAsync_v2"));
  cr_assert_eq(proc("cuMemcpyBatchAsync", 12080, PT), dlsym(self, "cuMemcpyBatchAsync_ptsz"));
  cr_assert_eq(proc("cuMemcpyBatchAsync", 13000, PT), dlsym(self, "cuMemcpyBatchAsync_v2_ptsz"));
  cr_assert_eq(proc("cuMemcpy", 13000, PT), dlsym(self, "cuMemcpy_ptds"));
  cr_assert_eq(proc("cuMemsetD8", 13000, PT), dlsym(self, "cuMemsetD8_v2_ptds"));
  cr_assert_eq(proc("cuLaunchKernel", 13000, PT), dlsym(self, "cuLaunchKernel_ptsz"));
  cr_assert_eq(proc("cuLaunchKernelEx", 13000, PT), dlsym(self, "cuLaunchKernelEx_ptsz"));
  cr_assert_eq(proc("cuStreamSynchronize", 13000, PT), dlsym(self, "cuStreamSynchronize_ptsz"));
  cr_assert_eq(proc("cuEventRecord", 13000, PT), dlsym(self, "cuEventRecord_ptsz"));
  cr_assert_eq(proc("cuLaunchHostFunc", 13000, PT), dlsym(self, "cuLaunchHostFunc_ptsz"));
  cr_assert_eq(proc("cuStreamBeginCapture", 13000, PT),
               dlsym(self, "cuStreamBeginCapture_v2_ptsz"));
  /* A function without a per-thread variant is the same under either flag. */
  cr_assert_eq(proc("cuMemHostAlloc", 13000, PT), (void *)cuMemHostAlloc);
  cr_assert_eq(proc("cuMemHostRegister", 13000, PT), (void *)cuMemHostRegister_v2);
  cr_assert_eq(proc("cuMemAlloc", 3020, 0), (void *)cuMemAlloc_v2);
  /* The ABI a version knows. */
  cr_assert_eq(proc("cuCtxSynchronize", 12080, 0), (void *)cuCtxSynchronize);
  cr_assert_eq(proc("cuCtxSynchronize", 13000, 0), (void *)cuCtxSynchronize_v2);
  cr_assert_eq(proc("cuEventElapsedTime", 12000, 0), dlsym(self, "cuEventElapsedTime"));
  cr_assert_eq(proc("cuEventElapsedTime", 12080, 0), (void *)cuEventElapsedTime_v2);
  cr_assert_eq(proc("cuGetProcAddress", 12000, 0), (void *)cuGetProcAddress_v2);
  /* Below the version that introduced a function: not found, and why. */
  struct {
    const char *name;
    int version;
  } early[] = {{"cuMemcpyBatchAsync", 12070}, {"cuMemHostRegister", 6000},
               {"cuMemcpyHtoDAsync", 3010},   {"cuLaunchHostFunc", 9020},
               {"cuFuncGetParamInfo", 12030}, {"cuStreamBeginCapture", 10000}};
  for (size_t i = 0; i < sizeof early / sizeof early[0]; i++) {
    void *fn = (void *)1;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
    cr_assert_eq(cuGetProcAddress(early[i].name, &fn, early[i].version, 0, &st),
                 CUDA_ERROR_NOT_FOUND, "%s at %d", early[i].name, early[i].version);
    cr_assert_eq(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    cr_assert_null(fn);
  }
  void *fn = NULL;
  cr_assert_eq(cuGetProcAddress("cuMemcpyAsync", &fn, 13000, 4, NULL), CUDA_ERROR_INVALID_VALUE,
               "unknown flags");
  dlclose(self);
}

/* A driver call's failure is the driver's: it does not become the runtime's last error, and
 * SIMCUDA_FAIL names driver functions by their base name (a _ptsz variant counts under it). */
static void fail_driver(void) { setenv("SIMCUDA_FAIL", "cuMemcpyAsync:2,cuMemHostAlloc:1=2", 1); }

Test(driver, fault_injection_by_driver_name, .init = fail_driver) {
  void *p = (void *)0x1;
  cr_assert_eq(cuMemHostAlloc(&p, 4096, 0), CUDA_ERROR_OUT_OF_MEMORY);
  cr_assert_eq(p, (void *)0x1, "no side effect");
  CU(cuMemHostAlloc(&p, 4096, 0));
  CUresult (*async_ptsz)(CUdeviceptr, CUdeviceptr, size_t, CUstream) =
      proc("cuMemcpyAsync", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  CU(cuMemcpyAsync((CUdeviceptr)p, (CUdeviceptr)p, 16, NULL));
  cr_assert_eq(async_ptsz((CUdeviceptr)p, (CUdeviceptr)p, 16, NULL), CUDA_ERROR_INVALID_VALUE);
  CU(async_ptsz((CUdeviceptr)p, (CUdeviceptr)p, 16, NULL));
  CU(cuCtxSynchronize());
  CU(cuMemFreeHost(p));
}

/* A stream keeps the device and flags it was created with (cuStreamGetDevice, CUDA 12.8, and
 * cuStreamGetFlags); the legacy handle means the current device's legacy stream. */
Test(driver, streams_know_their_device_and_flags, .init = eight) {
  CUcontext c2, c5;
  CU(cuInit(0));
  CU(cuDevicePrimaryCtxRetain(&c2, 2));
  CU(cuDevicePrimaryCtxRetain(&c5, 5));
  CU(cuCtxSetCurrent(c2));
  CUstream s;
  CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CU(cuCtxSetCurrent(c5));
  CUdevice dev = -1;
  unsigned flags = 99;
  CU(cuStreamGetDevice(s, &dev));
  CU(cuStreamGetFlags(s, &flags));
  cr_assert_eq(dev, 2, "the stream's device is the one current at its creation");
  cr_assert_eq(flags, CU_STREAM_NON_BLOCKING);
  CU(cuStreamGetDevice(0, &dev));
  CU(cuStreamGetFlags(0, &flags));
  cr_assert_eq(dev, 5, "handle 0 is the current device's legacy stream");
  cr_assert_eq(flags, 0);
  void *ptsz = proc("cuStreamGetDevice", 12080, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  cr_assert_not_null(ptsz);
  cr_assert_neq(ptsz, (void *)cuStreamGetDevice, "flags choose the per-thread variant");
  CU(((CUresult(*)(CUstream, CUdevice *))ptsz)(0, &dev));
  cr_assert_eq(dev, 5);
  void *fn = NULL;
  CUdriverProcAddressQueryResult st;
  cr_assert_eq(cuGetProcAddress("cuStreamGetDevice", &fn, 12070, 0, &st), CUDA_ERROR_NOT_FOUND,
               "cuStreamGetDevice came with 12.8");
  cr_assert_eq(cuStreamGetFlags(s, NULL), CUDA_ERROR_INVALID_VALUE);
  CU(cuStreamDestroy_v2(s));
}

/* Stream memory operations on registered private memory (cuMemHostRegister of an anonymous
 * private mapping, which stays private): they reach the words through the pins, as the device
 * does, while the CPU's view is PROT_NONE. */
Test(driver, stream_memops_on_registered_private_memory) {
  CU(cuInit(0));
  uint32_t *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(p, MAP_FAILED);
  p[1] = 5;
  CU(cuMemHostRegister(p, 4096, 0));
  CUstream s;
  CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  cr_assert_eq(mprotect(p, 4096, PROT_NONE), 0);
  /* The wait reads p[1] (5 >= 5) through the pin, then the write stores p[0]. */
  CU(cuStreamWaitValue32_v2(s, (CUdeviceptr)(uintptr_t)&p[1], 5, CU_STREAM_WAIT_VALUE_GEQ));
  CU(cuStreamWriteValue32_v2(s, (CUdeviceptr)(uintptr_t)&p[0], 0xabcd, 0));
  CU(cuStreamSynchronize(s));
  cr_assert_eq(mprotect(p, 4096, PROT_READ | PROT_WRITE), 0);
  cr_assert_eq(p[0], 0xabcd);
  CU(cuMemHostUnregister(p));
  CU(cuStreamDestroy(s));
  munmap(p, 4096);
}
