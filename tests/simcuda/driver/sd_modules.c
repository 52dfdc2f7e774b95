/* sd_modules.c: device code through the driver: modules, libraries, functions, the JIT linker,
 * occupancy and tensor maps. simcuda cannot run device code: its kernels are host functions
 * registered by name (simcuda_register_kernel, simcuda_kernel.h). So a module or library accepts
 * any image, and a function is looked up in it by the name a kernel was registered under
 * (cuModuleGetFunction, cuLibraryGetKernel). The JIT linker still fails cleanly
 * (CUDA_ERROR_NOT_SUPPORTED). */
#include <pthread.h>
#include <stdlib.h>

#include "sd_internal.h"

/* A module and a library are the same object: a handle that names no code. The live ones are
 * listed, so a stale or made-up handle is recognized without touching it. */
typedef struct sd_module {
  struct sd_module *next;
} sd_module;

static pthread_mutex_t sd_modules_mu = PTHREAD_MUTEX_INITIALIZER;
static sd_module *sd_modules;

static CUresult sd_module_new(void **out, const void *image) {
  if (!out || !image) return CUDA_ERROR_INVALID_VALUE;
  sd_module *m = calloc(1, sizeof *m);
  if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&sd_modules_mu);
  m->next = sd_modules;
  sd_modules = m;
  pthread_mutex_unlock(&sd_modules_mu);
  *out = m;
  return CUDA_SUCCESS;
}

static bool sd_module_valid(const void *h) {
  pthread_mutex_lock(&sd_modules_mu);
  const sd_module *m = sd_modules;
  while (m && m != h) m = m->next;
  pthread_mutex_unlock(&sd_modules_mu);
  return h && m;
}

static CUresult sd_module_free(void *h) {
  pthread_mutex_lock(&sd_modules_mu);
  sd_module **pp = &sd_modules;
  while (*pp && *pp != h) pp = &(*pp)->next;
  sd_module *m = *pp;
  if (m) *pp = m->next;
  pthread_mutex_unlock(&sd_modules_mu);
  if (!h || !m) return CUDA_ERROR_INVALID_HANDLE;
  free(m);
  return CUDA_SUCCESS;
}

/* The handle of the kernel registered under name. */
static CUresult sd_module_function(CUfunction *out, const void *h, const char *name) {
  if (!out || !name) return CUDA_ERROR_INVALID_VALUE;
  if (!sd_module_valid(h)) return CUDA_ERROR_INVALID_HANDLE;
  const void *fn = sc_kernel_by_name(name);
  if (!fn) return CUDA_ERROR_NOT_FOUND;
  *out = (CUfunction)sc_handle_of(fn);
  return CUDA_SUCCESS;
}

/* ---- modules ------------------------------------------------------------------------------ */
SD_API CUresult CUDAAPI cuModuleLoad(CUmodule *module, const char *fname) {
  return sd_module_new((void **)module, fname);
}

SD_API CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image) {
  return sd_module_new((void **)module, image);
}

SD_API CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image,
                                           unsigned int numOptions, CUjit_option *options,
                                           void **optionValues) {
  (void)numOptions, (void)options, (void)optionValues;
  return sd_module_new((void **)module, image);
}

SD_API CUresult CUDAAPI cuModuleUnload(CUmodule hmod) { return sd_module_free(hmod); }

SD_API CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name) {
  return sd_module_function(hfunc, hmod, name);
}

/* ---- libraries: a CUkernel is the same handle as the CUfunction ---------------------------- */
SD_API CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library, const void *code,
                                          CUjit_option *jitOptions, void **jitOptionsValues,
                                          unsigned int numJitOptions,
                                          CUlibraryOption *libraryOptions,
                                          void **libraryOptionValues,
                                          unsigned int numLibraryOptions) {
  (void)jitOptions, (void)jitOptionsValues, (void)numJitOptions, (void)libraryOptions;
  (void)libraryOptionValues, (void)numLibraryOptions;
  return sd_module_new((void **)library, code);
}

SD_API CUresult CUDAAPI cuLibraryUnload(CUlibrary library) { return sd_module_free(library); }

SD_API CUresult CUDAAPI cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name) {
  return sd_module_function((CUfunction *)pKernel, library, name);
}

SD_API CUresult CUDAAPI cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel) {
  if (!pFunc) return CUDA_ERROR_INVALID_VALUE;
  if (!sc_kernel_registered(sc_func_of((cudaKernel_t)kernel))) return CUDA_ERROR_INVALID_HANDLE;
  *pFunc = (CUfunction)kernel;
  return CUDA_SUCCESS;
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

/* ---- functions: attributes of registered kernels ----------------------------------------- */
static bool sd_function_valid(CUfunction f) {
  return f && sc_kernel_registered(sc_func_of((cudaKernel_t)f));
}

SD_API CUresult CUDAAPI cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc) {
  if (!pi) return CUDA_ERROR_INVALID_VALUE;
  if (!sd_function_valid(hfunc)) return CUDA_ERROR_INVALID_HANDLE;
  switch (attrib) { /* the runtime's cudaFuncGetAttributes values */
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
  case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = 32; break;
  case CU_FUNC_ATTRIBUTE_PTX_VERSION:
  case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = 90; break;
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = 48 * 1024; break;
  default: *pi = 0; break;
  }
  return CUDA_SUCCESS;
}

SD_API CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  (void)attrib, (void)value; /* accepted and ignored, as by the runtime */
  return sd_function_valid(hfunc) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

SD_API CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config) {
  (void)config;
  return sd_function_valid(hfunc) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

SD_API CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func,
                                                                    int blockSize,
                                                                    size_t dynamicSMemSize) {
  (void)dynamicSMemSize;
  if (!numBlocks || blockSize <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!sd_function_valid(func)) return CUDA_ERROR_INVALID_HANDLE;
  *numBlocks = blockSize > 1024 ? 0 : 2048 / blockSize; /* as the runtime's occupancy calls */
  return CUDA_SUCCESS;
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
