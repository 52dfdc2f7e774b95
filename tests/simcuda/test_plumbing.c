/* test_plumbing.c: the entry points that libraries built by nvcc import (PyTorch's among them):
 * fat binary, function and variable registration, the <<<>>> call configuration stack, the
 * profiler switches, the driver entry point lookup, symbols, one device's peer and bus id
 * answers, function attributes, occupancy and cooperative launches of registered kernels, and
 * cudaErrorNotSupported (recorded as the last error, no side effect) for what is not simulated. */
#include <string.h>

#include <cuda_profiler_api.h>
#include <simcuda_kernel.h>

#include "test_util.h"

void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFatBinaryEnd(void **fatCubinHandle);
void __cudaUnregisterFatBinary(void **fatCubinHandle);
void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                            const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
                            dim3 *bDim, dim3 *gDim, int *wSize);
void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                       const char *deviceName, int ext, size_t size, int constant, int global);
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                     struct CUstream_st *stream);
cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                       void *stream);
size_t simcuda_registered_functions(void);
size_t simcuda_registered_variables(void);

static void host_stub(void) {}
static int shadow_var;

Test(plumbing, fat_binary_registration) {
  static const char fatbin[64] = "not really a fat binary";
  size_t f0 = simcuda_registered_functions(), v0 = simcuda_registered_variables();
  void **h = __cudaRegisterFatBinary((void *)fatbin);
  cr_assert_not_null(h);
  cr_assert_eq(*h, (void *)fatbin);
  for (int i = 0; i < 1000; i++)
    __cudaRegisterFunction(h, (const char *)host_stub, (char *)"_Z4stubv", "_Z4stubv", -1, NULL,
                           NULL, NULL, NULL, NULL);
  __cudaRegisterVar(h, (char *)&shadow_var, (char *)"var", "var", 0, sizeof shadow_var, 0, 0);
  __cudaRegisterFatBinaryEnd(h);
  cr_assert_eq(simcuda_registered_functions() - f0, 1000);
  cr_assert_eq(simcuda_registered_variables() - v0, 1);
  /* Device code cannot run: its host stub is not a launchable kernel. */
  CK_ERR(cudaLaunchKernel((const void *)host_stub, (dim3){1, 1, 1}, (dim3){1, 1, 1}, NULL, 0, 0),
         cudaErrorInvalidDeviceFunction);
  __cudaUnregisterFatBinary(h);
}

Test(plumbing, call_configuration_stack) {
  cudaStream_t s = (cudaStream_t)0x1234, got_s = NULL;
  dim3 g, b;
  size_t smem = 0;
  CK_ERR(__cudaPopCallConfiguration(&g, &b, &smem, &got_s), cudaErrorMissingConfiguration);
  cr_assert_eq(__cudaPushCallConfiguration((dim3){2, 3, 4}, (dim3){32, 1, 1}, 128, NULL), 0);
  cr_assert_eq(__cudaPushCallConfiguration((dim3){5, 1, 1}, (dim3){64, 1, 1}, 0, s), 0);
  CK(__cudaPopCallConfiguration(&g, &b, &smem, &got_s)); /* last in, first out */
  cr_assert(g.x == 5 && b.x == 64 && smem == 0 && got_s == s);
  CK(__cudaPopCallConfiguration(&g, &b, &smem, &got_s));
  cr_assert(g.x == 2 && g.y == 3 && g.z == 4 && b.x == 32 && smem == 128 && got_s == NULL);
}

Test(plumbing, profiler_driver_entry_and_symbols) {
  CK(cudaProfilerStart());
  CK(cudaProfilerStop());
  void *fn = (void *)0x1;
  enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSuccess;
  CK(cudaGetDriverEntryPointByVersion("cuMemCreate", &fn, 12000, cudaEnableDefault, &st));
  cr_assert_eq(st, cudaDriverEntryPointSymbolNotFound);
  cr_assert_null(fn);
  CK_ERR(cudaGetDriverEntryPointByVersion("cuMemCreate", &fn, 12000, cudaEnableDefault, NULL),
         cudaErrorSymbolNotFound);
  void *addr = NULL;
  CK(cudaGetSymbolAddress(&addr, &shadow_var));
  cr_assert_eq(addr, (void *)&shadow_var);
}

Test(plumbing, one_device_has_no_peer) {
  int can = -1;
  CK(cudaDeviceCanAccessPeer(&can, 0, 0));
  cr_assert_eq(can, 0);
  CK_ERR(cudaDeviceCanAccessPeer(&can, 0, 1), cudaErrorInvalidDevice);
  CK_ERR(cudaDeviceEnablePeerAccess(0, 0), cudaErrorInvalidDevice);
  char bus[32];
  CK(cudaDeviceGetPCIBusId(bus, sizeof bus, 0));
  cr_assert_str_eq(bus, "0000:00:00.0");
  CK_ERR(cudaDeviceGetPCIBusId(bus, sizeof bus, 1), cudaErrorInvalidDevice);
}

static int g_ran;
SIMCUDA_KERNEL(plumbing_kernel, sizeof(int)) { g_ran = *(int *)launch->args[0]; }

Test(plumbing, registered_kernel_attributes_and_cooperative_launch) {
  struct cudaFuncAttributes fa;
  CK(cudaFuncGetAttributes(&fa, (const void *)plumbing_kernel));
  cr_assert_eq(fa.maxThreadsPerBlock, 1024);
  CK_ERR(cudaFuncGetAttributes(&fa, (const void *)host_stub), cudaErrorInvalidDeviceFunction);
  CK(cudaFuncSetAttribute((const void *)plumbing_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          1024));
  int nb = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, (const void *)plumbing_kernel, 256, 0));
  cr_assert_eq(nb, 8);
  CK_ERR(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&nb, (const void *)host_stub, 256,
                                                                0, 0),
         cudaErrorInvalidDeviceFunction);
  int v = 42;
  void *args[] = {&v};
  CK(cudaLaunchCooperativeKernel((const void *)plumbing_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1},
                                 args, 0, 0));
  CK(cudaDeviceSynchronize());
  cr_assert_eq(g_ran, 42);
}

Test(plumbing, unsimulated_calls_are_not_supported) {
  CK(cudaGetLastError());
  void *p = (void *)0x1;
  CK_ERR(cudaMallocManaged(&p, 4096, cudaMemAttachGlobal), cudaErrorNotSupported);
  cr_assert_eq(p, (void *)0x1, "no side effect");
  cr_assert_eq(cudaGetLastError(), cudaErrorNotSupported);
  cudaMemPool_t pool;
  CK_ERR(cudaDeviceGetDefaultMemPool(&pool, 0), cudaErrorNotSupported);
  cudaIpcMemHandle_t ih;
  CK_ERR(cudaIpcGetMemHandle(&ih, p), cudaErrorNotSupported);
  cudaLibrary_t lib;
  CK_ERR(cudaLibraryLoadFromFile(&lib, "/nonexistent", NULL, NULL, 0, NULL, NULL, 0),
         cudaErrorNotSupported);
  cudaGraphNode_t node = NULL;
  CK_ERR(cudaGraphAddNode(&node, NULL, NULL, NULL, 0, NULL), cudaErrorNotSupported);
  cr_assert_eq(cudaGetLastError(), cudaErrorNotSupported);
  CK(cudaGetLastError());
}

/* The runtime answers driver entry points from the driver, as CUDA's does: found, too new for
 * the version asked, or unknown. */
Test(plumbing, driver_entry_points_come_from_the_driver) {
  void *fn = NULL;
  enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
  CK(cudaGetDriverEntryPointByVersion("cuDriverGetVersion", &fn, 12000, cudaEnableDefault, &st));
  cr_assert_eq(st, cudaDriverEntryPointSuccess);
  cr_assert_not_null(fn);
  int v = 0;
  cr_assert_eq(((int (*)(int *))fn)(&v), 0);
  cr_assert_geq(v, 13000);
  fn = NULL;
  CK(cudaGetDriverEntryPointByVersion("cuMemcpyHtoDAsync", &fn, 13000,
                                      cudaEnablePerThreadDefaultStream, &st));
  cr_assert_eq(st, cudaDriverEntryPointSuccess);
  cr_assert_not_null(fn);
  void *legacy = NULL;
  CK(cudaGetDriverEntryPointByVersion("cuMemcpyHtoDAsync", &legacy, 13000, cudaEnableDefault,
                                      &st));
  cr_assert_not_null(legacy);
  cr_assert_neq(fn, legacy, "the per-thread flavour is another function");
  fn = (void *)0x1;
  CK(cudaGetDriverEntryPointByVersion("cuMemcpyBatchAsync", &fn, 12000, cudaEnableDefault, &st));
  cr_assert_eq(st, cudaDriverEntryPointVersionNotSufficent);
  cr_assert_null(fn);
  CK(cudaGetDriverEntryPointByVersion("cuNoSuchFunction", &fn, 13000, cudaEnableDefault, &st));
  cr_assert_eq(st, cudaDriverEntryPointSymbolNotFound);
  CK_ERR(cudaGetDriverEntryPointByVersion("cuDriverGetVersion", &fn, 13000, 7, &st),
         cudaErrorInvalidValue);
  fn = NULL;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  CK(cudaGetDriverEntryPoint("cuStreamSynchronize", &fn, cudaEnableDefault, &st));
#pragma GCC diagnostic pop
  cr_assert_eq(st, cudaDriverEntryPointSuccess);
  cr_assert_not_null(fn);
  (void)cudaGetLastError();
}

/* PyTorch's spin kernel (torch.cuda._sleep), recognised by its registered device name whatever
 * the build hash in it, runs as a timed wait of its cycles at the reported clock rate: the stream
 * is busy meanwhile, and events around it measure the wait. */
static void spin_stub(void) {}
static void unknown_stub(void) {}
Test(plumbing, torch_spin_kernel_is_emulated) {
  setenv("SIMCUDA_LATENCY_US", "0", 1);
  static const char fatbin[64] = "torch";
  void **h = __cudaRegisterFatBinary((void *)fatbin);
  static const char spin[] = "_ZN2at4cuda40_GLOBAL__N__b51f33dc_8_Sleep_cu_088d913f11spin_kernelEl";
  __cudaRegisterFunction(h, (const char *)spin_stub, (char *)spin, spin, -1, NULL, NULL, NULL,
                         NULL, NULL);
  __cudaRegisterFunction(h, (const char *)unknown_stub, (char *)"_ZN2at4cuda6other_kernelEl",
                         "_ZN2at4cuda6other_kernelEl", -1, NULL, NULL, NULL, NULL, NULL);
  int khz = 0;
  CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
  int64_t cycles = (int64_t)khz * 150; /* 150 ms */
  void *args[] = {&cycles};
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  CK(cudaEventRecord(a, s));
  CK(cudaLaunchKernel((const void *)spin_stub, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, s));
  CK(cudaEventRecord(b, s));
  struct timespec ms50 = {0, 50 * 1000 * 1000};
  nanosleep(&ms50, NULL);
  CK_ERR(cudaStreamQuery(s), cudaErrorNotReady);
  CK(cudaStreamSynchronize(s));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, a, b));
  cr_assert(ms >= 140 && ms < 5000, "the spin took %.1f ms, 150 were asked", ms);
  CK_ERR(cudaLaunchKernel((const void *)unknown_stub, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, s),
         cudaErrorInvalidDeviceFunction);
  (void)cudaGetLastError();
  CK(cudaStreamDestroy(s));
}
