/* py_kernel_helper.c: the C side of `bench/py_launch.py --kernel P`. A kernel with P pointer
 * parameters, every one a device pointer (none points into pinned memory), launched with
 * cudaLaunchKernel on a non-blocking stream: the launch a serving engine makes thousands of
 * times per step from Python, and which pinguard tracks nothing for. Built as a shared library
 * (libbench_pykernel.so) that Python loads through ctypes. */
#include <cuda_runtime_api.h>

#include "simcuda_kernel.h"

#define PYK_MAX_PARAMS 64

static void empty_kernel(const simcuda_launch_t *launch) { (void)launch; }

static cudaStream_t stream;
static void *vals[PYK_MAX_PARAMS], *args[PYK_MAX_PARAMS];

/* Registers the kernel with P pointer parameters and allocates their device buffers.
 * Returns 0, or -1 for a P out of range, or the failing call's CUDA error. */
int pyk_setup(int params) {
  if (params < 1 || params > PYK_MAX_PARAMS) return -1;
  size_t sizes[PYK_MAX_PARAMS];
  for (int i = 0; i < params; i++) sizes[i] = sizeof(void *);
  cudaError_t e = simcuda_register_kernel(empty_kernel, "py_empty_kernel", (size_t)params, sizes);
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  for (int i = 0; i < params && e == cudaSuccess; i++) {
    e = cudaMalloc(&vals[i], 4096);
    args[i] = &vals[i];
  }
  return (int)e;
}

int pyk_launch(void) {
  return (int)cudaLaunchKernel((const void *)empty_kernel, (dim3){1, 1, 1}, (dim3){32, 1, 1},
                               args, 0, stream);
}

int pyk_sync(void) { return (int)cudaStreamSynchronize(stream); }
