/* simcuda_kernel.h: how a program defines "kernels" that the simulated CUDA runtime can launch.
 * simcuda-only: real CUDA builds never include this header. A kernel is a host function that runs
 * on the stream's worker thread; it reaches pinned host memory only through simcuda_dma(). */
#ifndef SIMCUDA_KERNEL_H
#define SIMCUDA_KERNEL_H

#include <stddef.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a kernel body receives. args[i] points at simcuda's copy of parameter i, taken at launch
 * time exactly as CUDA copies kernel parameters: the caller may reuse its argument storage as soon
 * as cudaLaunchKernel returns. */
typedef struct simcuda_launch {
  void **args;
  size_t nargs;
  dim3 grid;
  dim3 block;
  size_t shared_mem;
  cudaStream_t stream;
} simcuda_launch_t;

typedef void (*simcuda_kernel_fn)(const simcuda_launch_t *launch);

/* Registers fn as a kernel whose parameters have the given sizes (nparams <= 64). The function's
 * address is the handle passed to cudaLaunchKernel / cudaLaunchKernelExC / cudaFuncGetParamInfo.
 * Parameter offsets follow the natural C layout: each parameter aligned to min(size, 8).
 * Registering the same fn twice replaces the earlier description. Returns cudaSuccess, or
 * cudaErrorInvalidValue for bad arguments. */
cudaError_t simcuda_register_kernel(simcuda_kernel_fn fn, const char *name, size_t nparams,
                                    const size_t *param_sizes);

/* Translates a host pointer as the simulated device sees it (UVA) into the address the device's
 * "DMA engine" uses: the pinned range's second mapping, which CPU page protections on the
 * original mapping do not affect. Device (arena) pointers and unpinned memory come back unchanged.
 * Every kernel body must pass each host pointer through this before touching it. */
void *simcuda_dma(const void *host_ptr);

/* Defines and registers a kernel at load time:
 *   SIMCUDA_KERNEL(my_kernel, sizeof(struct args), sizeof(int)) { ... uses launch->args ... }
 * expands to a function `void my_kernel(const simcuda_launch_t *launch)`. */
#define SIMCUDA_KERNEL(fn, ...)                                                              \
  void fn(const simcuda_launch_t *launch);                                                   \
  __attribute__((constructor)) static void simcuda_register_##fn(void) {                    \
    static const size_t sizes_[] = {__VA_ARGS__};                                            \
    simcuda_register_kernel(fn, #fn, sizeof(sizes_) / sizeof(sizes_[0]), sizes_);            \
  }                                                                                          \
  void fn(const simcuda_launch_t *launch)

#ifdef __cplusplus
}
#endif

#endif /* SIMCUDA_KERNEL_H */
