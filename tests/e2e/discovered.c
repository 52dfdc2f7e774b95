/* Intent: memory pinned behind pinguard's back (here through dlsym on libcudart's own handle,
 * which no preload can interpose) is discovered from cudaPointerGetAttributes the first time a
 * copy uses it, and then tracked like any other: freeing it with a device->host copy in flight
 * is reported. The fixed twin synchronizes first. */
// SCENARIO: discovered free-during-device-access

#include <dlfcn.h>

#include "e2e.h"

typedef cudaError_t (*host_alloc_fn)(void **, size_t, unsigned int);

int main(int argc, char **argv) {
  int bug = e2e_is_bug(argc, argv);
  void *cudart = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
  host_alloc_fn hidden_alloc = cudart ? (host_alloc_fn)dlsym(cudart, "cudaHostAlloc") : NULL;
  if (!hidden_alloc) {
    fprintf(stderr, "cannot reach libcudart's own cudaHostAlloc\n");
    return 2;
  }
  void *host, *dev;
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(hidden_alloc(&host, BUF_BYTES, cudaHostAllocDefault));
  CHECK(cudaMalloc(&dev, BUF_BYTES));
  CHECK(cudaMemcpyAsync(host, dev, BUF_BYTES, cudaMemcpyDeviceToHost, s));
  if (!bug) CHECK(cudaStreamSynchronize(s));
  CHECK(cudaFreeHost(host));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaFree(dev));
  CHECK(cudaStreamDestroy(s));
  return 0;
}
