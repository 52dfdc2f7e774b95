/* sc_register.c: the plumbing nvcc-compiled code calls behind the program's back: fat binary,
 * function and variable registration (run from the constructors of every CUDA library, e.g.
 * about 24,000 functions and 18,000 variables when PyTorch is imported), and the call
 * configuration stack that kernel<<<...>>> pushes and the launch stub pops. simcuda cannot run
 * device code, so a registered function stays unlaunchable (cudaErrorInvalidDeviceFunction),
 * except the few well-known kernels below, emulated; the calls only have to succeed, cheaply, and
 * hand out handles. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sc_internal.h"

/* nvcc's crt/host_runtime.h declares these for C++ only. */
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

/* ---- well-known device kernels, emulated on the worker ---------------------------------------
 * simcuda cannot run device code, but a few kernels that test suites use for their effect on
 * time, not on data, are recognised by their registered (mangled) device name and run as host
 * bodies. Only these; every other device function stays unlaunchable. */

/* PyTorch's torch.cuda._sleep: at::cuda::(anonymous)::spin_kernel(int64_t cycles) spins for that
 * many clock cycles. Here a timed wait of cycles at the reported clock rate
 * (cudaDevAttrClockRate, kHz), so that torch.cuda.get_cycles_per_ms() calibrates as on a GPU. */
static void sc_spin_kernel(const simcuda_launch_t *launch) {
  int64_t cycles;
  memcpy(&cycles, launch->args[0], sizeof cycles);
  int khz = 0;
  if (cycles <= 0 || sc_device_attribute(13 /* clock rate */, 0, &khz) != 0 || khz <= 0) return;
  uint64_t ns = (uint64_t)((double)cycles * 1e6 / khz);
  struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

typedef struct sc_known_kernel {
  const char *prefix, *suffix; /* of the mangled device name (the middle names a build hash) */
  simcuda_kernel_fn body;
  size_t nparams;
  size_t sizes[2];
} sc_known_kernel;

static const sc_known_kernel sc_known_kernels[] = {
    {"_ZN2at4cuda", "11spin_kernelEl", sc_spin_kernel, 1, {sizeof(int64_t)}},
};

static const sc_known_kernel *sc_known_kernel_of(const char *name) {
  if (!name || strncmp(name, "_ZN2at4cuda", 11) != 0) return NULL; /* the cheap filter first */
  size_t n = strlen(name);
  for (size_t i = 0; i < sizeof sc_known_kernels / sizeof sc_known_kernels[0]; i++) {
    const sc_known_kernel *k = &sc_known_kernels[i];
    size_t p = strlen(k->prefix), sfx = strlen(k->suffix);
    if (n >= p + sfx && strncmp(name, k->prefix, p) == 0 &&
        strcmp(name + n - sfx, k->suffix) == 0)
      return k;
  }
  return NULL;
}

SC_API void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                                   const char *deviceName, int thread_limit, uint3 *tid,
                                   uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize) {
  (void)deviceFun, (void)thread_limit, (void)tid, (void)bid;
  (void)bDim, (void)gDim, (void)wSize;
  if (fatCubinHandle) ((sc_module *)fatCubinHandle)->functions++;
  atomic_fetch_add_explicit(&sc_registered_functions, 1, memory_order_relaxed);
  const sc_known_kernel *k = sc_known_kernel_of(deviceName);
  if (k && hostFun)
    (void)sc_register_kernel_as(hostFun, k->body, deviceName, k->nparams, k->sizes);
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
