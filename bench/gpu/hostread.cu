// hostread.cu: libhostread.so for torch_repro.py on a real GPU. A kernel that first spins for a
// given number of clock cycles (so the CPU certainly gets ahead of it), then copies between
// pinned host memory and device memory through raw pointers over UVA, as the incident's
// gather/scatter kernels did. Two launch paths, because pinguard sees them differently:
//   hostread_launch          cudaLaunchKernel, called explicitly (what pinguard interposes);
//   hostread_launch_chevron  kernel<<<...>>>, which CUDA 13's nvcc lowers to __cudaLaunchKernel.
// Build: nvcc -arch=sm_90 -shared -Xcompiler -fPIC -cudart shared -o libhostread.so hostread.cu
#include <cuda_runtime.h>
#include <stdint.h>

__device__ static void spin(long long cycles) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

// dst[i] = src[i]; either side may be a host pointer (UVA). One block: thread 0's spin and the
// barrier hold every thread, so no element is touched before the spin ends.
__global__ void hostread_copy(const float *src, float *dst, size_t n, long long cycles) {
  if (threadIdx.x == 0) spin(cycles);
  __syncthreads();
  for (size_t i = threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
}

extern "C" int hostread_launch(const void *src, void *dst, size_t n_floats, long long cycles,
                               void *stream) {
  const float *s = (const float *)src;
  float *d = (float *)dst;
  void *args[] = {&s, &d, &n_floats, &cycles};
  return (int)cudaLaunchKernel((const void *)hostread_copy, dim3(1), dim3(1024), args, 0,
                               (cudaStream_t)stream);
}

extern "C" int hostread_launch_chevron(const void *src, void *dst, size_t n_floats,
                                       long long cycles, void *stream) {
  hostread_copy<<<1, 1024, 0, (cudaStream_t)stream>>>((const float *)src, (float *)dst, n_floats,
                                                      cycles);
  return (int)cudaGetLastError();
}

// Spins on a stream: delays whatever is queued after it (a non_blocking copy, say).
__global__ void hostread_spin(long long cycles) { spin(cycles); }

extern "C" int hostread_delay(long long cycles, void *stream) {
  hostread_spin<<<1, 1, 0, (cudaStream_t)stream>>>(cycles);
  return (int)cudaGetLastError();
}
