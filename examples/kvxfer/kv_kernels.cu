/* kv_kernels.cu: the real-CUDA build of the kernels in kv_kernels.h, for nvcc. The __global__
 * wrappers only supply the thread coordinates; the bodies are the ones simcuda runs. */
#include "kv_kernel_handles.h"
#include "kv_kernels.h"

__device__ static inline kv_thread_t kv_this_thread(void) {
  kv_thread_t t;
  t.block = blockIdx.x;
  t.nblocks = gridDim.x;
  t.thread = threadIdx.x;
  t.nthreads = blockDim.x;
  return t;
}

__global__ void kv_gather_kernel(kv_chunk_ptrs_t dst, const uint8_t *kv, const int32_t *ids,
                                 kv_layout_t lay) {
  kv_gather_thread(kv_this_thread(), dst, kv, ids, lay);
}

__global__ void kv_scatter_kernel(kv_chunk_ptrs_t src, uint8_t *kv, const int32_t *ids,
                                  kv_layout_t lay) {
  kv_scatter_thread(kv_this_thread(), src, kv, ids, lay);
}

__global__ void kv_compute_kernel(int64_t ns) { kv_compute_thread(kv_this_thread(), ns); }

extern "C" const void *kv_kernel_gather(void) { return (const void *)kv_gather_kernel; }
extern "C" const void *kv_kernel_scatter(void) { return (const void *)kv_scatter_kernel; }
extern "C" const void *kv_kernel_compute(void) { return (const void *)kv_compute_kernel; }
