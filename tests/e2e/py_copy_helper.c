/* py_copy_helper.c: a tiny CUDA library for the Python tests (the guard-page test here, the
 * annotation module's in tools/). It starts a device->host copy into a pinned buffer through the
 * CUDA runtime: ctypes cannot make these calls itself, since its dlsym on libcudart's own handle
 * would bypass the preloaded shim. */
#include <cuda_runtime_api.h>
#include <string.h>

static void *dev;
static cudaStream_t stream;

/* Pins n zeroed bytes and fills an n-byte device buffer with `value`; NULL on failure. */
void *pyh_setup(size_t n, int value) {
  void *host = NULL;
  if (cudaHostAlloc(&host, n, cudaHostAllocDefault) != cudaSuccess) return NULL;
  memset(host, 0, n);
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) return NULL;
  if (cudaMalloc(&dev, n) != cudaSuccess || cudaMemsetAsync(dev, value, n, stream) != cudaSuccess)
    return NULL;
  return host;
}

/* Enqueues the device->host copy into `host` and returns at once. */
int pyh_start_d2h(void *host, size_t n) {
  return cudaMemcpyAsync(host, dev, n, cudaMemcpyDeviceToHost, stream);
}

int pyh_sync(void) { return cudaStreamSynchronize(stream); }

/* Waits for the copy, then frees everything pyh_setup made. */
int pyh_finish(void *host) {
  int err = cudaStreamSynchronize(stream);
  cudaFreeHost(host);
  cudaFree(dev);
  cudaStreamDestroy(stream);
  return err;
}
