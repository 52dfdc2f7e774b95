/* A tiny CUDA library for the Python guard test: ctypes cannot call the runtime itself (its
 * dlsym on libcudart's handle would bypass the preloaded shim), so the enqueue goes through here. */
#include <cuda_runtime_api.h>
#include <string.h>

static void *dev;
static cudaStream_t stream;

/* Pins n bytes, zeroed, and returns them; the device buffer holds `value` in every byte. */
void *pyh_setup(size_t n, int value) {
  void *host = NULL;
  if (cudaHostAlloc(&host, n, cudaHostAllocDefault) != cudaSuccess) return NULL;
  memset(host, 0, n);
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) return NULL;
  if (cudaMalloc(&dev, n) != cudaSuccess || cudaMemsetAsync(dev, value, n, stream) != cudaSuccess)
    return NULL;
  return host;
}

int pyh_start_d2h(void *host, size_t n) {
  return cudaMemcpyAsync(host, dev, n, cudaMemcpyDeviceToHost, stream);
}

int pyh_sync(void) { return cudaStreamSynchronize(stream); }
