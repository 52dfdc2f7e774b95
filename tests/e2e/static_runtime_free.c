/* Intent: a program linked against a static runtime (libcudart_static.a, nvcc's default) exports
 * no cuda* symbol for pinguard to interpose, yet it is tracked: its runtime reaches the driver
 * with dlsym(libcuda, "cuGetProcAddress_v2") and cuGetProcAddress, and pinguard hands it its
 * driver wrappers there. cudaFreeHost while a device->host copy into the buffer is in flight is
 * reported (audit) or waited for (enforce); the fixed twin synchronizes first.
 *   static_runtime_free bug|fixed */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#define BYTES (256u << 10)

#define CK(call)                                                                     \
  do {                                                                               \
    cudaError_t e_ = (call);                                                         \
    if (e_ != cudaSuccess) {                                                         \
      fprintf(stderr, "static_runtime_free: %s -> %d\n", #call, (int)e_);            \
      return 3;                                                                      \
    }                                                                                \
  } while (0)

int main(int argc, char **argv) {
  int bug = argc > 1 && strcmp(argv[1], "bug") == 0;
  void *host, *dev;
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaHostAlloc(&host, BYTES, cudaHostAllocDefault));
  CK(cudaMalloc(&dev, BYTES));
  CK(cudaMemsetAsync(dev, 0x7f, BYTES, s));
  CK(cudaMemcpyAsync(host, dev, BYTES, cudaMemcpyDeviceToHost, s));
  if (!bug) CK(cudaStreamSynchronize(s));
  CK(cudaFreeHost(host));
  CK(cudaStreamSynchronize(s));
  CK(cudaFree(dev));
  CK(cudaStreamDestroy(s));
  printf("static_runtime_free: done\n");
  return 0;
}
