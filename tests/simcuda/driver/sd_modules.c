/* sd_modules.c: device code through the driver: modules, the JIT linker, functions, launches,
 * occupancy, pointer attributes and tensor maps. simcuda cannot run device code, so nothing can be
 * loaded, and every call on a module or function returns CUDA_ERROR_NOT_SUPPORTED with no side
 * effect: a caller fails cleanly at the load, never at a launch. (simcuda's kernels are host
 * functions launched through the runtime: see simcuda_kernel.h.) */
#include <stddef.h>

#include "sd_internal.h"

/* ---- modules and the linker ---------------------------------------------------------------- */
SD_API CUresult CUDAAPI cuModuleLoad(CUmodule *module, const char *fname) {
  (void)fname;
  if (!module) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_ERROR_NOT_SUPPORTED;
}

SD_API CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image) {
  (void)image;
  if (!module) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_ERROR_NOT_SUPPORTED;
}

SD_API CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image,
                                           unsigned int numOptions, CUjit_option *options,
                                           void **optionValues) {
  (void)image, (void)numOptions, (void)options, (void)optionValues;
  if (!module) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_ERROR_NOT_SUPPORTED;
}

/* No module was ever loaded, so no handle is valid. */
SD_API CUresult CUDAAPI cuModuleUnload(CUmodule hmod) {
  (void)hmod;
  return CUDA_ERROR_INVALID_HANDLE;
}

SD_API CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name) {
  (void)hmod, (void)name;
  if (!hfunc) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_ERROR_INVALID_HANDLE;
}

SD_API CUresult CUDAAPI cuLinkCreate(unsigned int numOptions, CUjit_option *options,
                                     void **optionValues, CUlinkState *stateOut) {
  (void)numOptions, (void)options, (void)optionValues;
  if (!stateOut) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_ERROR_NOT_SUPPORTED;
}

SD_API CUresult CUDAAPI cuLinkAddData(CUlinkState state, CUjitInputType type, void *data,
                                      size_t size, const char *name, unsigned int numOptions,
                                      CUjit_option *options, void **optionValues) {
  (void)state, (void)type, (void)data, (void)size, (void)name, (void)numOptions, (void)options;
  (void)optionValues;
  return CUDA_ERROR_INVALID_HANDLE;
}

SD_API CUresult CUDAAPI cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut) {
  (void)state, (void)cubinOut, (void)sizeOut;
  return CUDA_ERROR_INVALID_HANDLE;
}

SD_API CUresult CUDAAPI cuLinkDestroy(CUlinkState state) {
  (void)state;
  return CUDA_ERROR_INVALID_HANDLE;
}

/* ---- functions and launches: no CUfunction can exist ---------------------------------------- */
SD_API CUresult CUDAAPI cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc) {
  (void)attrib, (void)hfunc;
  if (!pi) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_ERROR_INVALID_HANDLE;
}

SD_API CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  (void)hfunc, (void)attrib, (void)value;
  return CUDA_ERROR_INVALID_HANDLE;
}

SD_API CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config) {
  (void)hfunc, (void)config;
  return CUDA_ERROR_INVALID_HANDLE;
}

SD_API CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                       unsigned int gridDimZ, unsigned int blockDimX,
                                       unsigned int blockDimY, unsigned int blockDimZ,
                                       unsigned int sharedMemBytes, CUstream hStream,
                                       void **kernelParams, void **extra) {
  (void)f, (void)gridDimX, (void)gridDimY, (void)gridDimZ, (void)blockDimX, (void)blockDimY;
  (void)blockDimZ, (void)sharedMemBytes, (void)hStream, (void)kernelParams, (void)extra;
  return CUDA_ERROR_INVALID_HANDLE;
}

SD_API CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
                                                  unsigned int gridDimY, unsigned int gridDimZ,
                                                  unsigned int blockDimX, unsigned int blockDimY,
                                                  unsigned int blockDimZ,
                                                  unsigned int sharedMemBytes, CUstream hStream,
                                                  void **kernelParams) {
  (void)f, (void)gridDimX, (void)gridDimY, (void)gridDimZ, (void)blockDimX, (void)blockDimY;
  (void)blockDimZ, (void)sharedMemBytes, (void)hStream, (void)kernelParams;
  return CUDA_ERROR_INVALID_HANDLE;
}

SD_API CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func,
                                                                    int blockSize,
                                                                    size_t dynamicSMemSize) {
  (void)func, (void)blockSize, (void)dynamicSMemSize;
  if (!numBlocks) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_ERROR_INVALID_HANDLE;
}

/* ---- memory the driver does not own yet ---------------------------------------------------- */
/* The runtime's memory is not the driver's until the runtime is built on it. */
SD_API CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                                              CUdeviceptr ptr) {
  (void)attribute, (void)ptr;
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_ERROR_NOT_SUPPORTED;
}

SD_API CUresult CUDAAPI cuTensorMapEncodeTiled(
    CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
    void *globalAddress, const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
    const cuuint32_t *boxDim, const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
    CUtensorMapFloatOOBfill oobFill) {
  (void)tensorDataType, (void)tensorRank, (void)globalAddress, (void)globalDim;
  (void)globalStrides, (void)boxDim, (void)elementStrides, (void)interleave, (void)swizzle;
  (void)l2Promotion, (void)oobFill;
  if (!tensorMap) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_ERROR_NOT_SUPPORTED;
}
