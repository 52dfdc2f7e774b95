/* static_runtime.c: a program linked against simcuda's libcudart_static.a the way nvcc links
 * CUDA's static runtime (-lcudart_static -ldl -lrt -lpthread, no -lcuda), built with the toolkit's
 * headers. The runtime finds libcuda.so.1 at run time, as CUDA's does. It copies host to device
 * to host on a stream, launches a registered kernel between the copies, checks every byte, and
 * shows that the device-to-host copy is still in flight right after it was queued (so the copy
 * really runs on the engine's workers). Criterion-free, so it runs in the ThreadSanitizer build
 * too. check_static.cmake checks that it exports no cuda* symbol and needs neither library. */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <simcuda_kernel.h>

#define N (1 << 20)

#define CK(call)                                                                   \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "static_runtime: %s -> %s\n", #call, cudaGetErrorName(e_)); \
      return 1;                                                                    \
    }                                                                              \
  } while (0)

SIMCUDA_KERNEL(plus_one, sizeof(void *), sizeof(size_t)) {
  unsigned char *p = simcuda_dma(*(void **)launch->args[0]);
  size_t n = *(size_t *)launch->args[1];
  for (size_t i = 0; i < n; i++) p[i]++;
}

int main(void) {
  int count = 0, version = 0;
  CK(cudaGetDeviceCount(&count));
  CK(cudaRuntimeGetVersion(&version));
  unsigned char *h = NULL, *d = NULL;
  cudaStream_t s;
  CK(cudaHostAlloc((void **)&h, N, cudaHostAllocDefault));
  CK(cudaMalloc((void **)&d, N));
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  memset(h, 41, N);
  CK(cudaMemcpyAsync(d, h, N, cudaMemcpyHostToDevice, s));
  size_t n = N;
  void *args[] = {&d, &n};
  CK(cudaLaunchKernel((const void *)plus_one, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, s));
  CK(cudaMemcpyAsync(h, d, N, cudaMemcpyDeviceToHost, s));
  int in_flight = h[0] == 41 && cudaStreamQuery(s) == cudaErrorNotReady;
  CK(cudaStreamSynchronize(s));
  for (size_t i = 0; i < N; i++)
    if (h[i] != 42) {
      fprintf(stderr, "static_runtime: byte %zu is %d, want 42\n", i, h[i]);
      return 1;
    }
  if (!in_flight) {
    fprintf(stderr, "static_runtime: the copy had completed before the stream was queried\n");
    return 1;
  }
  unsigned char row[8] = {0};
  CK(cudaMemcpy2D(row, 4, d, 16, 4, 2, cudaMemcpyDeviceToHost));
  if (row[0] != 42 || row[7] != 42) return fprintf(stderr, "static_runtime: 2D copy\n"), 1;
  CK(cudaStreamDestroy(s));
  CK(cudaFree(d));
  CK(cudaFreeHost(h));
  CK(cudaGetLastError());
  printf("static_runtime: %d device(s), runtime %d, copies and a kernel right\n", count, version);
  return 0;
}
