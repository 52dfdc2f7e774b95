/* rt_init.c: how simcuda's runtime finds its driver, as CUDA's runtime does: it opens libcuda.so.1
 * (no DT_NEEDED: the one already loaded, else the one beside this library, else the loader's
 * search), dlsym's only cuGetProcAddress_v2, and asks it for every driver function it calls with
 * the runtime's version (SIMCUDA_RUNTIME_VERSION) and, for the per-thread variants, the flag
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM. The engine's private entry
 * (simcuda_driver_engine) comes through cuGetProcAddress too. Done once, at the first call. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "rt_internal.h"

sr_driver sr_drv;

/* CUDA's runtime names its shared-memory objects "/cudart.shm.<...>", so the string sits in the
 * read-only data of every object that links libcudart_static.a; tools (pinguard) recognise a
 * statically linked runtime by it. simcuda's archive carries it too, in rt_init.o, which every
 * program that calls the runtime links. */
__attribute__((used)) static const char sr_shm_name_prefix[] = "/cudart.shm.";

typedef void *(*sr_engine_fn)(const char *name);
typedef CUresult (*sr_gpa_fn)(const char *, void **, int, cuuint64_t,
                              CUdriverProcAddressQueryResult *);

static pthread_once_t sr_once = PTHREAD_ONCE_INIT;
static pthread_once_t sr_driver_once = PTHREAD_ONCE_INIT;
static sr_gpa_fn sr_gpa;
static sr_engine_fn sr_engine;
static cudaError_t (*sr_engine_enter)(const char *name);
static cudaError_t (*sr_engine_ret)(cudaError_t err);
static int (*sr_engine_version)(void);
static bool (*sr_engine_kernel_registered)(const void *func);
static cudaKernel_t (*sr_engine_kernel_handle)(const void *func);
static const void *(*sr_engine_kernel_func)(cudaKernel_t k);
static int sr_runtime_version;

static void *sr_open_driver(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (h) return h;
  Dl_info info;
  if (dladdr((void *)sr_open_driver, &info) && info.dli_fname) {
    const char *slash = strrchr(info.dli_fname, '/');
    if (slash) {
      char path[4096];
      snprintf(path, sizeof path, "%.*s/libcuda.so.1", (int)(slash - info.dli_fname),
               info.dli_fname);
      if ((h = dlopen(path, RTLD_NOW))) return h;
    }
  }
  return dlopen("libcuda.so.1", RTLD_NOW);
}

static void sr_do_init(void) {
  void *h = sr_open_driver();
  sr_gpa_fn gpa = h ? (sr_gpa_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
  void *p = NULL;
  CUdriverProcAddressQueryResult st;
  if (!gpa || gpa("simcuda_driver_engine", &p, 0, 0, &st) != CUDA_SUCCESS || !p) {
    fprintf(stderr, "simcuda: runtime: no simcuda libcuda.so.1 (%s)\n",
            h ? "it has no simcuda_driver_engine" : dlerror());
    return;
  }
  sr_engine = (sr_engine_fn)p;
  sr_engine_enter = (cudaError_t (*)(const char *))sr_engine("simcuda_rt_enter");
  sr_engine_ret = (cudaError_t (*)(cudaError_t))sr_engine("simcuda_rt_ret");
  sr_engine_version = (int (*)(void))sr_engine("simcuda_rt_version");
  sr_engine_kernel_registered = (bool (*)(const void *))sr_engine("simcuda_rt_kernel_registered");
  sr_engine_kernel_handle = (cudaKernel_t (*)(const void *))sr_engine("simcuda_rt_kernel_handle");
  sr_engine_kernel_func = (const void *(*)(cudaKernel_t))sr_engine("simcuda_rt_kernel_func");
  sr_gpa = gpa;
}

/* The driver functions, asked for with the runtime's version: at the first tracked call, after
 * the engine read the environment (a kernel registered from a constructor loads the driver
 * earlier, and SIMCUDA_* must still be read at the first CUDA call). */
static void sr_do_driver_init(void) {
  sr_gpa_fn gpa = sr_gpa;
  CUdriverProcAddressQueryResult st;
  int v = sr_runtime_version = sr_engine_version();
#define SR_GET(field, name, flags, proto) gpa(name, (void **)&sr_drv.field, v, flags, &st);
  SR_DRIVER(SR_GET)
#undef SR_GET
  gpa("cuCtxSynchronize", &sr_drv.ctxSynchronize, v, 0, &st);
  gpa("cuMemcpyBatchAsync", &sr_drv.memcpyBatchAsync, v, 0, &st);
  gpa("cuMemcpyBatchAsync", &sr_drv.memcpyBatchAsync_ptsz, v, SR_PTSZ, &st);
  gpa("cuMemcpy3DBatchAsync", &sr_drv.memcpy3DBatchAsync, v, 0, &st);
  gpa("cuMemcpy3DBatchAsync", &sr_drv.memcpy3DBatchAsync_ptsz, v, SR_PTSZ, &st);
}

static bool sr_init(void) {
  pthread_once(&sr_once, sr_do_init);
  return sr_engine != NULL;
}

cudaError_t sr_enter(const char *name) {
  if (!sr_init()) return cudaErrorInsufficientDriver;
  cudaError_t err = sr_engine_enter(name);
  pthread_once(&sr_driver_once, sr_do_driver_init);
  return err;
}

cudaError_t sr_ret(cudaError_t err) { return sr_engine_ret(err); }

int sr_version(void) {
  if (sr_init()) pthread_once(&sr_driver_once, sr_do_driver_init);
  return sr_runtime_version ? sr_runtime_version : 13000;
}

bool sr_kernel_registered(const void *func) { return sr_engine_kernel_registered(func); }
CUfunction sr_kernel_handle(const void *func) { return (CUfunction)sr_engine_kernel_handle(func); }
const void *sr_kernel_func(cudaKernel_t k) { return sr_engine_kernel_func(k); }

/* The first call of a forwarded entry point (rt_forward.S): its engine function, kept in its slot.
 * Without a driver, a function that returns cudaErrorInsufficientDriver stands in. */
static int sr_no_driver(void) { return cudaErrorInsufficientDriver; }

__attribute__((visibility("hidden"))) void *sr_forward_resolve(const char *name, void **slot) {
  void *fn = sr_init() ? sr_engine(name) : NULL;
  if (!fn) {
    if (sr_engine) fprintf(stderr, "simcuda: runtime: the engine has no %s\n", name);
    return (void *)sr_no_driver;
  }
  __atomic_store_n(slot, fn, __ATOMIC_RELEASE);
  return fn;
}

/* For rt_batch_abi.c, which cannot see the CUDA prototypes. */
int sr_batch_enter(const char *name) { return (int)sr_enter(name); }
int sr_batch_ret(int err) { return (int)sr_ret((cudaError_t)err); }
void *sr_batch_fn(int three_d, int ptsz) {
  if (three_d) return ptsz ? sr_drv.memcpy3DBatchAsync_ptsz : sr_drv.memcpy3DBatchAsync;
  return ptsz ? sr_drv.memcpyBatchAsync_ptsz : sr_drv.memcpyBatchAsync;
}

/* ---- driver entry points, answered by the driver -------------------------------------------
 * As CUDA's runtime does: the driver's cuGetProcAddress is asked, with the version and stream
 * flavour given, and its status is the answer. cudaEnableDefault asks for the legacy-stream
 * function, as a runtime compiled without per-thread default streams (this one). */
static cudaError_t sr_entry_point(const char *symbol, void **funcPtr, int version,
                                  unsigned long long flags,
                                  enum cudaDriverEntryPointQueryResult *status) {
  if (!symbol || !funcPtr) return sr_ret(cudaErrorInvalidValue);
  cuuint64_t cu_flags;
  switch (flags) {
  case cudaEnableDefault:
  case cudaEnableLegacyStream: cu_flags = CU_GET_PROC_ADDRESS_LEGACY_STREAM; break;
  case cudaEnablePerThreadDefaultStream: cu_flags = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM; break;
  default: return sr_ret(cudaErrorInvalidValue);
  }
  *funcPtr = NULL;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  (void)sr_gpa(symbol, funcPtr, version, cu_flags, &st);
  enum cudaDriverEntryPointQueryResult q =
      st == CU_GET_PROC_ADDRESS_SUCCESS ? cudaDriverEntryPointSuccess
      : st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT ? cudaDriverEntryPointVersionNotSufficent
                                                         : cudaDriverEntryPointSymbolNotFound;
  if (q != cudaDriverEntryPointSuccess) *funcPtr = NULL;
  if (status) {
    *status = q;
    return cudaSuccess;
  }
  return q == cudaDriverEntryPointSuccess ? cudaSuccess : sr_ret(cudaErrorSymbolNotFound);
}

SR_API cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr,
                                                    unsigned int cudaVersion,
                                                    unsigned long long flags,
                                                    enum cudaDriverEntryPointQueryResult *status) {
  SR_ENTER("cudaGetDriverEntryPointByVersion");
  return sr_entry_point(symbol, funcPtr, (int)cudaVersion, flags, status);
}

/* The deprecated form asks with the runtime's own version. */
SR_API cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr,
                                           unsigned long long flags,
                                           enum cudaDriverEntryPointQueryResult *status) {
  SR_ENTER("cudaGetDriverEntryPoint");
  return sr_entry_point(symbol, funcPtr, sr_version(), flags, status);
}
