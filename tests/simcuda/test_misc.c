/* test_misc.c: versions, devices, error names and the last-error state, and fork: a child of a
 * process that started the runtime gets cudaErrorInitializationError from CUDA calls (and never
 * hangs), while a child that does not touch CUDA is unaffected. */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

Test(misc, versions) {
  unsetenv("SIMCUDA_RUNTIME_VERSION");
  int rt = 0, drv = 0;
  CK(cudaRuntimeGetVersion(&rt));
  CK(cudaDriverGetVersion(&drv));
  cr_assert_eq(rt, 13000);
  cr_assert_geq(drv, rt);
  CK_ERR(cudaRuntimeGetVersion(NULL), cudaErrorInvalidValue);
}

Test(misc, devices) {
  int n = 0, dev = -1;
  CK(cudaGetDeviceCount(&n));
  cr_assert_eq(n, 1);
  CK(cudaSetDevice(0));
  CK(cudaGetDevice(&dev));
  cr_assert_eq(dev, 0);
  CK_ERR(cudaSetDevice(1), cudaErrorInvalidDevice);
  struct cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  cr_assert_eq(prop.unifiedAddressing, 1);
}

Test(misc, error_names_and_last_error) {
  cr_assert_str_eq(cudaGetErrorName(cudaSuccess), "cudaSuccess");
  cr_assert_str_eq(cudaGetErrorName(cudaErrorHostMemoryAlreadyRegistered),
                   "cudaErrorHostMemoryAlreadyRegistered");
  cr_assert_str_eq(cudaGetErrorName(cudaErrorStreamCaptureInvalidated),
                   "cudaErrorStreamCaptureInvalidated");
  cr_assert_str_eq(cudaGetErrorString(cudaErrorInvalidValue), "invalid argument");
  cr_assert_str_eq(cudaGetErrorString((cudaError_t)12345), "unrecognized error code");
  CK(cudaGetLastError());
  CK_ERR(cudaSetDevice(7), cudaErrorInvalidDevice);
  cr_assert_eq(cudaPeekAtLastError(), cudaErrorInvalidDevice);
  cr_assert_eq(cudaGetLastError(), cudaErrorInvalidDevice);
  cr_assert_eq(cudaGetLastError(), cudaSuccess);
}

static void *child_sets_error(void *p) {
  /* The last error is per thread. */
  *(cudaError_t *)p = cudaSetDevice(3);
  return NULL;
}

Test(misc, last_error_is_per_thread) {
  cudaError_t e = cudaSuccess;
  pthread_t t;
  pthread_create(&t, NULL, child_sets_error, &e);
  pthread_join(t, NULL);
  cr_assert_eq(e, cudaErrorInvalidDevice);
  cr_assert_eq(cudaGetLastError(), cudaSuccess);
}

Test(misc, fork_child) {
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  void *h;
  CK(cudaHostAlloc(&h, 4096, 0));
  pid_t pid = fork();
  if (pid == 0) {
    /* A child that never touches CUDA is fine: it just exits. */
    _exit(0);
  }
  int status = -1;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  pid = fork();
  if (pid == 0) {
    /* A child that does: every call fails cleanly instead of waiting for a worker that does
     * not exist in the child. */
    int ok = cudaStreamSynchronize(s) == cudaErrorInitializationError &&
             cudaMemcpyAsync(h, h, 16, cudaMemcpyDefault, s) == cudaErrorInitializationError &&
             cudaDeviceSynchronize() == cudaErrorInitializationError;
    _exit(ok ? 0 : 1);
  }
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
  CK(cudaStreamSynchronize(s)); /* the parent is unaffected */
  CK(cudaFreeHost(h));
}

/* Every attribute CUDA 13.0's runtime names answers, with an H200's values: clients size their
 * launches from them (PyTorch divides by maxThreadsPerMultiProcessor), so none may read as 0
 * where an H200 reports a value. A number CUDA does not define is cudaErrorInvalidValue. */
Test(misc, device_attributes_are_an_h200s) {
  static const enum cudaDeviceAttr all[] = {
      cudaDevAttrMaxThreadsPerBlock, cudaDevAttrMaxBlockDimX, cudaDevAttrMaxBlockDimY, 
      cudaDevAttrMaxBlockDimZ, cudaDevAttrMaxGridDimX, cudaDevAttrMaxGridDimY, 
      cudaDevAttrMaxGridDimZ, cudaDevAttrMaxSharedMemoryPerBlock, cudaDevAttrTotalConstantMemory, 
      cudaDevAttrWarpSize, cudaDevAttrMaxPitch, cudaDevAttrMaxRegistersPerBlock, 
      cudaDevAttrClockRate, cudaDevAttrTextureAlignment, cudaDevAttrGpuOverlap, 
      cudaDevAttrMultiProcessorCount, cudaDevAttrKernelExecTimeout, cudaDevAttrIntegrated, 
      cudaDevAttrCanMapHostMemory, cudaDevAttrComputeMode, cudaDevAttrMaxTexture1DWidth, 
      cudaDevAttrMaxTexture2DWidth, cudaDevAttrMaxTexture2DHeight, cudaDevAttrMaxTexture3DWidth, 
      cudaDevAttrMaxTexture3DHeight, cudaDevAttrMaxTexture3DDepth, 
      cudaDevAttrMaxTexture2DLayeredWidth, cudaDevAttrMaxTexture2DLayeredHeight, 
      cudaDevAttrMaxTexture2DLayeredLayers, cudaDevAttrSurfaceAlignment, 
      cudaDevAttrConcurrentKernels, cudaDevAttrEccEnabled, cudaDevAttrPciBusId, 
      cudaDevAttrPciDeviceId, cudaDevAttrTccDriver, cudaDevAttrMemoryClockRate, 
      cudaDevAttrGlobalMemoryBusWidth, cudaDevAttrL2CacheSize, 
      cudaDevAttrMaxThreadsPerMultiProcessor, cudaDevAttrAsyncEngineCount, 
      cudaDevAttrUnifiedAddressing, cudaDevAttrMaxTexture1DLayeredWidth, 
      cudaDevAttrMaxTexture1DLayeredLayers, cudaDevAttrMaxTexture2DGatherWidth, 
      cudaDevAttrMaxTexture2DGatherHeight, cudaDevAttrMaxTexture3DWidthAlt, 
      cudaDevAttrMaxTexture3DHeightAlt, cudaDevAttrMaxTexture3DDepthAlt, cudaDevAttrPciDomainId, 
      cudaDevAttrTexturePitchAlignment, cudaDevAttrMaxTextureCubemapWidth, 
      cudaDevAttrMaxTextureCubemapLayeredWidth, cudaDevAttrMaxTextureCubemapLayeredLayers, 
      cudaDevAttrMaxSurface1DWidth, cudaDevAttrMaxSurface2DWidth, cudaDevAttrMaxSurface2DHeight, 
      cudaDevAttrMaxSurface3DWidth, cudaDevAttrMaxSurface3DHeight, cudaDevAttrMaxSurface3DDepth, 
      cudaDevAttrMaxSurface1DLayeredWidth, cudaDevAttrMaxSurface1DLayeredLayers, 
      cudaDevAttrMaxSurface2DLayeredWidth, cudaDevAttrMaxSurface2DLayeredHeight, 
      cudaDevAttrMaxSurface2DLayeredLayers, cudaDevAttrMaxSurfaceCubemapWidth, 
      cudaDevAttrMaxSurfaceCubemapLayeredWidth, cudaDevAttrMaxSurfaceCubemapLayeredLayers, 
      cudaDevAttrMaxTexture1DLinearWidth, cudaDevAttrMaxTexture2DLinearWidth, 
      cudaDevAttrMaxTexture2DLinearHeight, cudaDevAttrMaxTexture2DLinearPitch, 
      cudaDevAttrMaxTexture2DMipmappedWidth, cudaDevAttrMaxTexture2DMipmappedHeight, 
      cudaDevAttrComputeCapabilityMajor, cudaDevAttrComputeCapabilityMinor, 
      cudaDevAttrMaxTexture1DMipmappedWidth, cudaDevAttrStreamPrioritiesSupported, 
      cudaDevAttrGlobalL1CacheSupported, cudaDevAttrLocalL1CacheSupported, 
      cudaDevAttrMaxSharedMemoryPerMultiprocessor, cudaDevAttrMaxRegistersPerMultiprocessor, 
      cudaDevAttrManagedMemory, cudaDevAttrIsMultiGpuBoard, cudaDevAttrMultiGpuBoardGroupID, 
      cudaDevAttrHostNativeAtomicSupported, cudaDevAttrSingleToDoublePrecisionPerfRatio, 
      cudaDevAttrPageableMemoryAccess, cudaDevAttrConcurrentManagedAccess, 
      cudaDevAttrComputePreemptionSupported, cudaDevAttrCanUseHostPointerForRegisteredMem, 
      cudaDevAttrCooperativeLaunch, cudaDevAttrMaxSharedMemoryPerBlockOptin, 
      cudaDevAttrCanFlushRemoteWrites, cudaDevAttrHostRegisterSupported, 
      cudaDevAttrPageableMemoryAccessUsesHostPageTables, cudaDevAttrDirectManagedMemAccessFromHost, 
      cudaDevAttrMaxBlocksPerMultiprocessor, cudaDevAttrMaxPersistingL2CacheSize, 
      cudaDevAttrMaxAccessPolicyWindowSize, cudaDevAttrSparseCudaArraySupported, 
      cudaDevAttrHostRegisterReadOnlySupported, cudaDevAttrTimelineSemaphoreInteropSupported, 
      cudaDevAttrMemoryPoolsSupported, cudaDevAttrGPUDirectRDMASupported, 
      cudaDevAttrGPUDirectRDMAFlushWritesOptions, cudaDevAttrGPUDirectRDMAWritesOrdering, 
      cudaDevAttrMemoryPoolSupportedHandleTypes, cudaDevAttrClusterLaunch, 
      cudaDevAttrDeferredMappingCudaArraySupported, cudaDevAttrIpcEventSupport, 
      cudaDevAttrMemSyncDomainCount, cudaDevAttrNumaConfig, cudaDevAttrNumaId, 
      cudaDevAttrMpsEnabled, cudaDevAttrHostNumaId, cudaDevAttrD3D12CigSupported, 
      cudaDevAttrVulkanCigSupported, cudaDevAttrGpuPciDeviceId, cudaDevAttrGpuPciSubsystemId, 
      cudaDevAttrHostNumaMemoryPoolsSupported, cudaDevAttrHostNumaMultinodeIpcSupported, 
      cudaDevAttrHostMemoryPoolsSupported, cudaDevAttrOnlyPartialHostNativeAtomicSupported, 
  };
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    int v = -12345;
    cr_assert_eq(cudaDeviceGetAttribute(&v, all[i], 0), cudaSuccess, "attribute %d", (int)all[i]);
    cr_assert_neq(v, -12345, "attribute %d left unset", (int)all[i]);
  }
  static const struct { enum cudaDeviceAttr a; int v; } h200[] = {
      {cudaDevAttrMaxThreadsPerBlock, 1024}, {cudaDevAttrMaxBlockDimX, 1024},
      {cudaDevAttrMaxBlockDimZ, 64}, {cudaDevAttrMaxGridDimX, 2147483647},
      {cudaDevAttrMaxSharedMemoryPerBlock, 49152}, {cudaDevAttrWarpSize, 32},
      {cudaDevAttrMultiProcessorCount, 132}, {cudaDevAttrMaxThreadsPerMultiProcessor, 2048},
      {cudaDevAttrMaxRegistersPerMultiprocessor, 65536}, {cudaDevAttrL2CacheSize, 52428800},
      {cudaDevAttrMaxSharedMemoryPerMultiprocessor, 233472},
      {cudaDevAttrMaxSharedMemoryPerBlockOptin, 232448}, {cudaDevAttrMaxBlocksPerMultiprocessor, 32},
      {cudaDevAttrComputeCapabilityMajor, 9}, {cudaDevAttrComputeCapabilityMinor, 0},
      {cudaDevAttrClockRate, 1980000}, {cudaDevAttrGlobalMemoryBusWidth, 6144},
      {cudaDevAttrConcurrentKernels, 1}, {cudaDevAttrCooperativeLaunch, 1},
  };
  for (size_t i = 0; i < sizeof h200 / sizeof h200[0]; i++) {
    int v = 0;
    CK(cudaDeviceGetAttribute(&v, h200[i].a, 0));
    cr_assert_eq(v, h200[i].v, "attribute %d: %d, an H200 has %d", (int)h200[i].a, v, h200[i].v);
  }
  struct cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  cr_assert_eq(p.maxThreadsPerMultiProcessor, 2048);
  cr_assert_eq(p.multiProcessorCount, 132);
  cr_assert_eq(p.regsPerMultiprocessor, 65536);
  cr_assert_eq(p.sharedMemPerMultiprocessor, 233472);
  cr_assert_eq(p.maxGridSize[1], 65535);
  cr_assert_eq(p.maxThreadsDim[2], 64);
  cr_assert_eq(p.l2CacheSize, 52428800);
  int v = 7;
  CK_ERR(cudaDeviceGetAttribute(&v, (enum cudaDeviceAttr)0, 0), cudaErrorInvalidValue);
  CK_ERR(cudaDeviceGetAttribute(&v, cudaDevAttrMax, 0), cudaErrorInvalidValue);
  CK_ERR(cudaDeviceGetAttribute(&v, (enum cudaDeviceAttr)100000, 0), cudaErrorInvalidValue);
  (void)cudaGetLastError();
}
