/* sc_register.c: the plumbing nvcc-compiled code calls behind the program's back: fat binary,
 * function and variable registration (run from the constructors of every CUDA library, e.g.
 * about 24,000 functions and 18,000 variables when PyTorch is imported), and the call
 * configuration stack that kernel<<<...>>> pushes and the launch stub pops. simcuda cannot run
 * device code, so a registered function stays unlaunchable (cudaErrorInvalidDeviceFunction); the
 * calls only have to succeed, cheaply, and hand out handles. */
#include <stdlib.h>

#include "sc_internal.h"

/* nvcc's host_runtime.h declares these for C++ only. */
SC_API void **__cudaRegisterFatBinary(void *fatCubin);
SC_API void __cudaRegisterFatBinaryEnd(void **fatCubinHandle);
SC_API void __cudaUnregisterFatBinary(void **fatCubinHandle);
SC_API void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                                   const char *deviceName, int thread_limit, uint3 *tid,
                                   uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize);
SC_API void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                              const char *deviceName, int ext, size_t size, int constant,
                              int global);
SC_API unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                            struct CUstream_st *stream);
SC_API cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                              void *stream);

/* A module handle: what __cudaRegisterFatBinary returns is a void ** that the generated code
 * stores and passes back; CUDA keeps its module behind it, simcuda only counts. */
typedef struct sc_module {
  void *fatbin; /* first member: the handle points here */
  size_t functions, variables;
} sc_module;

static atomic_size_t sc_registered_functions, sc_registered_variables;

SC_API void **__cudaRegisterFatBinary(void *fatCubin) {
  sc_module *m = calloc(1, sizeof *m);
  if (!m) return NULL; /* callers store the handle only; a NULL one is passed back harmlessly */
  m->fatbin = fatCubin;
  return &m->fatbin;
}

SC_API void __cudaRegisterFatBinaryEnd(void **fatCubinHandle) { (void)fatCubinHandle; }

SC_API void __cudaUnregisterFatBinary(void **fatCubinHandle) {
  /* Runs from atexit handlers, after the module's functions can no longer be launched. */
  free(fatCubinHandle); /* &m->fatbin == m */
}

SC_API void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                                   const char *deviceName, int thread_limit, uint3 *tid,
                                   uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize) {
  (void)hostFun, (void)deviceFun, (void)deviceName, (void)thread_limit, (void)tid, (void)bid;
  (void)bDim, (void)gDim, (void)wSize;
  if (fatCubinHandle) ((sc_module *)fatCubinHandle)->functions++;
  atomic_fetch_add_explicit(&sc_registered_functions, 1, memory_order_relaxed);
}

SC_API void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                              const char *deviceName, int ext, size_t size, int constant,
                              int global) {
  (void)hostVar, (void)deviceAddress, (void)deviceName, (void)ext, (void)size, (void)constant;
  (void)global;
  if (fatCubinHandle) ((sc_module *)fatCubinHandle)->variables++;
  atomic_fetch_add_explicit(&sc_registered_variables, 1, memory_order_relaxed);
}

SC_API size_t simcuda_registered_functions(void) {
  return atomic_load_explicit(&sc_registered_functions, memory_order_relaxed);
}

SC_API size_t simcuda_registered_variables(void) {
  return atomic_load_explicit(&sc_registered_variables, memory_order_relaxed);
}

/* ---- kernel<<<grid, block, smem, stream>>>: push, then the stub pops and launches ---------- */
typedef struct sc_call_config {
  dim3 grid, block;
  size_t shared_mem;
  void *stream;
} sc_call_config;

/* A launch stub pops right after its push, so nesting is bounded by the argument expressions'
 * own launches; 8 levels is far beyond what real code does. */
#define SC_CALL_CONFIG_DEPTH 8
static _Thread_local sc_call_config sc_configs[SC_CALL_CONFIG_DEPTH];
static _Thread_local unsigned sc_config_depth;

SC_API unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                            struct CUstream_st *stream) {
  if (sc_config_depth >= SC_CALL_CONFIG_DEPTH) return 1; /* nonzero: the stub is skipped */
  sc_configs[sc_config_depth++] =
      (sc_call_config){.grid = gridDim, .block = blockDim, .shared_mem = sharedMem,
                       .stream = stream};
  return 0;
}

SC_API cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                              void *stream) {
  if (sc_config_depth == 0) return sc_ret(cudaErrorMissingConfiguration);
  sc_call_config c = sc_configs[--sc_config_depth];
  if (gridDim) *gridDim = c.grid;
  if (blockDim) *blockDim = c.block;
  if (sharedMem) *sharedMem = c.shared_mem;
  if (stream) *(void **)stream = c.stream;
  return cudaSuccess;
}

/* ---- symbols ------------------------------------------------------------------------------ */
SC_API cudaError_t cudaGetSymbolAddress(void **devPtr, const void *symbol) {
  SC_ENTER("cudaGetSymbolAddress");
  if (!devPtr || !symbol) return sc_ret(cudaErrorInvalidSymbol);
  /* As for cudaMemcpyToSymbol: a "symbol" is a plain address that the device can reach. */
  *devPtr = (void *)symbol;
  return cudaSuccess;
}
