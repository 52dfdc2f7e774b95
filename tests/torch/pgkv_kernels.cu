// pgkv_kernels.cu: the real-CUDA build of the kernels in pgkv_kernels.h, for nvcc (sm_90). The
// __global__ wrappers supply the thread coordinates and the initial wait; the bodies are the ones
// simcuda runs. Built by bench/gpu.sh together with pgkv_api.c into libpgkv.so:
//   nvcc -arch=sm_90 -shared -Xcompiler -fPIC -cudart shared -o libpgkv.so pgkv_kernels.cu pgkv_api.c
#include "pgkv_kernels.h"

__device__ static inline pgkv_thread_t pgkv_this_thread(void) {
  pgkv_thread_t t;
  t.block = blockIdx.x;
  t.nblocks = gridDim.x;
  t.thread = threadIdx.x;
  t.nthreads = blockDim.x;
  return t;
}

// Every block waits until spin_ns after its own start: the CPU certainly gets ahead.
__device__ static inline void pgkv_spin(int64_t ns) {
  if (ns <= 0) return;
  if (threadIdx.x == 0) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < (unsigned long long)ns);
  }
  __syncthreads();
}

__global__ void pgkv_gather_kernel(pgkv_objects_t obj, uint8_t *kv, const int32_t *ids,
                                   pgkv_layout_t lay) {
  pgkv_spin(lay.spin_ns);
  pgkv_move(pgkv_this_thread(), obj, kv, ids, lay, 1);
}

__global__ void pgkv_scatter_kernel(pgkv_objects_t obj, uint8_t *kv, const int32_t *ids,
                                    pgkv_layout_t lay) {
  pgkv_spin(lay.spin_ns);
  pgkv_move(pgkv_this_thread(), obj, kv, ids, lay, 0);
}

extern "C" const void *pgkv_kernel_gather(void) { return (const void *)pgkv_gather_kernel; }
extern "C" const void *pgkv_kernel_scatter(void) { return (const void *)pgkv_scatter_kernel; }
