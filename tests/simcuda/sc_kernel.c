/* sc_kernel.c: simulated kernels. A kernel is a host function registered with its parameter
 * sizes (simcuda_kernel.h); a launch copies the parameters, exactly as CUDA does, and queues the
 * function to run on the stream's worker (sc_launch, under the driver's cuLaunchKernel).
 * cudaFuncGetParamInfo and cuFuncGetParamInfo answer from the registration. */
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#include "sc_internal.h"
#include "sc_engine.h"

#define SC_MAX_PARAMS 64

typedef struct sc_kernel {
  const void *fn; /* key: the handle launches name */
  simcuda_kernel_fn body; /* what runs: fn itself, or an emulation of well-known device code */
  char name[64];
  const char *stable_name; /* for cudaFuncGetName: never freed, so it outlives re-registration */
  size_t nparams;
  size_t sizes[SC_MAX_PARAMS];
  size_t offsets[SC_MAX_PARAMS];
  size_t params_len;
  UT_hash_handle hh;
} sc_kernel;

/* Static initializers only: kernels register from constructors, before simcuda initializes. */
static pthread_rwlock_t sc_kernels_lock = PTHREAD_RWLOCK_INITIALIZER;
static sc_kernel *sc_kernels;

/* Natural C layout: each parameter aligned to min(size, 8), rounded down to a power of two. */
static size_t sc_param_align(size_t size) {
  size_t a = size < 8 ? size : 8;
  while (a & (a - 1)) a &= a - 1;
  return a ? a : 1;
}

SC_API cudaError_t simcuda_register_kernel(simcuda_kernel_fn fn, const char *name, size_t nparams,
                                           const size_t *param_sizes) {
  return sc_register_kernel_as((const void *)fn, fn, name, nparams, param_sizes);
}

cudaError_t sc_register_kernel_as(const void *handle, simcuda_kernel_fn body, const char *name,
                                  size_t nparams, const size_t *param_sizes) {
  if (!handle || !body || nparams > SC_MAX_PARAMS || (nparams && !param_sizes))
    return cudaErrorInvalidValue;
  sc_kernel *k = calloc(1, sizeof *k);
  if (!k) return cudaErrorMemoryAllocation;
  k->fn = handle;
  k->body = body;
  if (name) strncpy(k->name, name, sizeof k->name - 1);
  k->stable_name = strdup(k->name);
  k->nparams = nparams;
  size_t off = 0;
  for (size_t i = 0; i < nparams; i++) {
    size_t a = sc_param_align(param_sizes[i]);
    off = (off + a - 1) & ~(a - 1);
    k->sizes[i] = param_sizes[i];
    k->offsets[i] = off;
    off += param_sizes[i];
  }
  k->params_len = off;

  pthread_rwlock_wrlock(&sc_kernels_lock);
  sc_kernel *old = NULL;
  HASH_FIND_PTR(sc_kernels, &k->fn, old);
  if (old) {
    HASH_DEL(sc_kernels, old);
    free(old);
  }
  HASH_ADD_PTR(sc_kernels, fn, k);
  sc_kernel *added = NULL;
  HASH_FIND_PTR(sc_kernels, &k->fn, added);
  pthread_rwlock_unlock(&sc_kernels_lock);
  if (!added) {
    free(k);
    return cudaErrorMemoryAllocation;
  }
  return cudaSuccess;
}

/* Copies the registration of func into *out; false when func is not a registered kernel. */
static bool sc_kernel_find(const void *func, sc_kernel *out) {
  pthread_rwlock_rdlock(&sc_kernels_lock);
  sc_kernel *k = NULL;
  HASH_FIND_PTR(sc_kernels, &func, k);
  if (k) memcpy(out, k, offsetof(sc_kernel, hh));
  pthread_rwlock_unlock(&sc_kernels_lock);
  return k != NULL;
}

SC_API cudaError_t cudaFuncGetParamInfo(const void *func, size_t paramIndex, size_t *paramOffset,
                                        size_t *paramSize) {
  SC_ENTER("cudaFuncGetParamInfo");
  sc_kernel k;
  if (!sc_kernel_find(func, &k)) return sc_ret(cudaErrorInvalidDeviceFunction);
  if (paramIndex >= k.nparams) return sc_ret(cudaErrorInvalidValue);
  if (paramOffset) *paramOffset = k.offsets[paramIndex];
  if (paramSize) *paramSize = k.sizes[paramIndex];
  return cudaSuccess;
}

SC_API cudaError_t cudaFuncGetName(const char **name, const void *func) {
  SC_ENTER("cudaFuncGetName");
  if (!name) return sc_ret(cudaErrorInvalidValue);
  sc_kernel k;
  if (!sc_kernel_find(func, &k)) return sc_ret(cudaErrorInvalidDeviceFunction);
  *name = k.stable_name ? k.stable_name : "(kernel)";
  return cudaSuccess;
}

void sc_kernel_run(sc_op *op) {
  op->u.kernel.fn(&op->u.kernel.launch);
  sc_dma_views_flush();
}

cudaError_t sc_launch(const void *func, dim3 grid, dim3 block, void **args, size_t smem,
                             cudaStream_t h, bool ptsz) {
  sc_kernel k;
  if (!sc_kernel_find(func, &k)) return sc_ret(cudaErrorInvalidDeviceFunction);
  if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z)
    return sc_ret(cudaErrorInvalidConfiguration);
  if (k.nparams && !args) return sc_ret(cudaErrorInvalidValue);
  cudaError_t err = cudaSuccess;
  sc_stream *s = sc_stream_get(h, ptsz, &err);
  if (!s) return sc_ret(err);
  /* A kernel runs on the current device: a stream of another device is refused, as by CUDA
   * (the programming guide: "a kernel launch will fail if it is issued to a stream that is not
   * associated to the current device"; the runtime reports an invalid resource handle). */
  if (sc_stream_device(s) != sc_device_current()) return sc_ret(cudaErrorInvalidResourceHandle);
  sc_op *op = sc_op_new(SC_OP_KERNEL);
  if (!op) return sc_ret(cudaErrorMemoryAllocation);
  /* One block: the args pointer array, then the parameter copies at their offsets. */
  size_t head = k.nparams * sizeof(void *);
  size_t len = head + k.params_len;
  char *blk = calloc(1, len ? len : 1);
  if (!blk) {
    sc_op_free(op);
    return sc_ret(cudaErrorMemoryAllocation);
  }
  void **copies = (void **)blk;
  /* head is a multiple of 8, so the parameter area keeps the offsets' alignment. */
  for (size_t i = 0; i < k.nparams; i++) {
    copies[i] = blk + head + k.offsets[i];
    memcpy(copies[i], args[i], k.sizes[i]);
  }
  op->u.kernel.fn = k.body;
  op->u.kernel.block = blk;
  op->u.kernel.block_len = len;
  op->u.kernel.launch = (simcuda_launch_t){
      .args = copies, .nargs = k.nparams, .grid = grid, .block = block, .shared_mem = smem,
      .stream = h};
  return sc_ret(sc_submit(s, op, NULL));
}

/* ---- function attributes and occupancy, for registered kernels ---------------------------
 * A body runs the whole grid on one host thread: no limit but the CUDA maxima applies. Anything
 * else (device code registered through __cudaRegisterFunction) cannot run on simcuda and gets
 * cudaErrorInvalidDeviceFunction, as an unloadable kernel would. */
SC_API cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func) {
  SC_ENTER("cudaFuncGetAttributes");
  sc_kernel k;
  if (!attr) return sc_ret(cudaErrorInvalidValue);
  if (!sc_kernel_find(func, &k)) return sc_ret(cudaErrorInvalidDeviceFunction);
  memset(attr, 0, sizeof *attr);
  attr->maxThreadsPerBlock = 1024;
  attr->numRegs = 32;
  attr->ptxVersion = 90;
  attr->binaryVersion = 90;
  attr->maxDynamicSharedSizeBytes = 48 * 1024;
  return cudaSuccess;
}

SC_API cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value) {
  SC_ENTER("cudaFuncSetAttribute");
  sc_kernel k;
  (void)attr, (void)value; /* accepted and ignored: nothing in a host body depends on them */
  if (!sc_kernel_find(func, &k)) return sc_ret(cudaErrorInvalidDeviceFunction);
  return cudaSuccess;
}

SC_API cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int *numBlocks, const void *func, int blockSize, size_t dynamicSMemSize, unsigned int flags) {
  SC_ENTER("cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  sc_kernel k;
  (void)dynamicSMemSize, (void)flags;
  if (!numBlocks || blockSize <= 0) return sc_ret(cudaErrorInvalidValue);
  if (!sc_kernel_find(func, &k)) return sc_ret(cudaErrorInvalidDeviceFunction);
  *numBlocks = blockSize > 1024 ? 0 : 2048 / blockSize; /* 2048 threads per SM, as on sm_90 */
  return cudaSuccess;
}

SC_API cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, const void *func,
                                                                int blockSize,
                                                                size_t dynamicSMemSize) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize,
                                                                dynamicSMemSize, 0);
}

/* ---- the launch path nvcc 13 generates for kernel<<<...>>> ----------------------------------
 * Generated code asks __cudaGetKernel once for a cudaKernel_t and launches through
 * __cudaLaunchKernel. The handle is deliberately not the function's address (as in CUDA), so a
 * layer that needs the function (pinguard, for cudaFuncGetParamInfo) must map it back. */
#define SC_KERNEL_HANDLE_XOR ((uintptr_t)0x5C00000000000000ull)

cudaKernel_t sc_handle_of(const void *func) {
  return (cudaKernel_t)((uintptr_t)func ^ SC_KERNEL_HANDLE_XOR);
}
const void *sc_func_of(cudaKernel_t k) {
  return (const void *)((uintptr_t)k ^ SC_KERNEL_HANDLE_XOR);
}

SC_API cudaError_t cudaGetKernel(cudaKernel_t *kernel, const void *func) {
  SC_ENTER("cudaGetKernel");
  sc_kernel k;
  if (!kernel) return sc_ret(cudaErrorInvalidValue);
  if (!sc_kernel_find(func, &k)) return sc_ret(cudaErrorInvalidDeviceFunction);
  *kernel = sc_handle_of(func);
  return cudaSuccess;
}

SC_API cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *func) {
  return cudaGetKernel(kernel, func);
}

/* ---- what the driver asks about kernels (driver/sd_modules.c, driver/sd_api.c) --------------
 * A CUfunction, a CUkernel and a cudaKernel_t are the same handle (sc_handle_of), as the real
 * driver lets a CUkernel stand for a CUfunction; cudaGetFuncBySymbol hands it out too. */
bool sc_kernel_registered(const void *func) {
  sc_kernel k;
  return sc_kernel_find(func, &k);
}

cudaError_t sc_kernel_param_info(const void *func, size_t index, size_t *offset, size_t *size) {
  sc_kernel k;
  if (!sc_kernel_find(func, &k)) return cudaErrorInvalidDeviceFunction;
  if (index >= k.nparams) return cudaErrorInvalidValue;
  if (offset) *offset = k.offsets[index];
  if (size) *size = k.sizes[index];
  return cudaSuccess;
}

/* The kernel last registered under name, or NULL. */
const void *sc_kernel_by_name(const char *name) {
  const void *fn = NULL;
  if (!name) return NULL;
  pthread_rwlock_rdlock(&sc_kernels_lock);
  for (sc_kernel *k = sc_kernels; k; k = k->hh.next)
    if (strcmp(k->name, name) == 0) fn = k->fn;
  pthread_rwlock_unlock(&sc_kernels_lock);
  return fn;
}

SC_API cudaError_t cudaGetFuncBySymbol(cudaFunction_t *functionPtr, const void *symbolPtr) {
  SC_ENTER("cudaGetFuncBySymbol");
  sc_kernel k;
  if (!functionPtr) return sc_ret(cudaErrorInvalidValue);
  if (!sc_kernel_find(symbolPtr, &k)) return sc_ret(cudaErrorInvalidDeviceFunction);
  *functionPtr = (cudaFunction_t)sc_handle_of(symbolPtr);
  return cudaSuccess;
}
