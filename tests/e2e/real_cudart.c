/* Intent: under the toolkit's real libcudart with no GPU, every call fails; with pinguard
 * preloaded the same errors come back unchanged and nothing crashes. The program prints each
 * call's result; the test compares the output with and without the preload. */
#include <stdio.h>
#include <cuda_runtime_api.h>

#define SHOW(call) printf("%-40s -> %s\n", #call, cudaGetErrorName(call))

int main(void) {
  void *host = NULL, *dev = NULL;
  static char pageable[1 << 16];
  cudaStream_t s = 0;
  cudaEvent_t e = 0;
  SHOW(cudaHostAlloc(&host, 1 << 16, cudaHostAllocDefault));
  SHOW(cudaMallocHost(&host, 1 << 16));
  SHOW(cudaHostRegister(pageable, sizeof pageable, cudaHostRegisterDefault));
  SHOW(cudaMalloc(&dev, 1 << 16));
  SHOW(cudaStreamCreate(&s));
  SHOW(cudaEventCreate(&e));
  SHOW(cudaMemcpyAsync(pageable, (void *)0x1000, 4096, cudaMemcpyDeviceToHost, s));
  SHOW(cudaMemcpyAsync((void *)0x1000, pageable, 4096, cudaMemcpyDefault, s));
  SHOW(cudaEventRecord(e, s));
  SHOW(cudaStreamSynchronize(s));
  SHOW(cudaDeviceSynchronize());
  SHOW(cudaHostUnregister(pageable));
  SHOW(cudaFreeHost(host));
  SHOW(cudaGetLastError());
  return 0;
}
