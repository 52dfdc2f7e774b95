/* Intent: host pointers inside a by-value struct kernel parameter are found (the incident's
 * path): freeing the second of four chunks while the kernel may still write them is reported
 * as free-during-device-access. The fixed twin synchronizes first. "nvcc" launches the way
 * nvcc 13 compiles kernel<<<...>>>: a cudaKernel_t from __cudaGetKernel, then
 * __cudaLaunchKernel. Usage: kernel_struct bug|fixed [api|nvcc] */
// SCENARIO: kernel_struct free-during-device-access
// SCENARIO: kernel_nvcc_launch free-during-device-access ARGS nvcc

#include "e2e.h"
#include "simcuda_ptsz.h"

static cudaError_t launch_fill_nvcc(void **bufs, int n, size_t len, unsigned char value,
                                    cudaStream_t s) {
  static cudaKernel_t handle;
  if (!handle && __cudaGetKernel(&handle, (const void *)e2e_fill_host) != cudaSuccess)
    return cudaErrorInvalidDeviceFunction;
  host_ptrs_t a = {.n = n, .len = len, .value = value};
  for (int i = 0; i < n; i++) a.p[i] = bufs[i];
  void *args[] = {&a};
  return __cudaLaunchKernel(handle, (dim3){1, 1, 1}, (dim3){32, 1, 1}, args, 0, s);
}

int main(int argc, char **argv) {
  int bug = e2e_is_bug(argc, argv);
  void *chunks[4];
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  for (int i = 0; i < 4; i++) CHECK(cudaHostAlloc(&chunks[i], BUF_BYTES, cudaHostAllocDefault));
  int nvcc = argc > 2 && strcmp(argv[2], "nvcc") == 0;
  CHECK(nvcc ? launch_fill_nvcc(chunks, 4, BUF_BYTES, 0x22, s)
             : e2e_launch_fill(chunks, 4, BUF_BYTES, 0x22, s));
  if (!bug) CHECK(cudaStreamSynchronize(s));
  CHECK(cudaFreeHost(chunks[1]));
  CHECK(cudaStreamSynchronize(s));
  for (int i = 0; i < 4; i++)
    if (i != 1) CHECK(cudaFreeHost(chunks[i]));
  CHECK(cudaStreamDestroy(s));
  return 0;
}
