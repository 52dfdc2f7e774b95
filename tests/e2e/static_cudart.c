/* Intent: a program linked with the static CUDA runtime (libcudart_static.a, nvcc's default) is
 * told about once: its calls never reach libcudart.so, so pinguard sees none of them. Built as a
 * program (static_cudart) and as a shared object that another program dlopen()s
 * (libe2e_static_cudart_ext.so, entry point ext_device_count). No GPU is needed: the call only
 * has to run; its error is printed and ignored. */
#include <stdio.h>
#include <cuda_runtime_api.h>

__attribute__((visibility("default"))) int ext_device_count(void) {
  int n = -1;
  cudaError_t e = cudaGetDeviceCount(&n);
  printf("cudaGetDeviceCount returned %d (%s)\n", n, e == cudaSuccess ? "ok" : "error");
  return n;
}

#ifndef STATIC_CUDART_EXT
int main(void) {
  ext_device_count();
  return 0;
}
#endif
