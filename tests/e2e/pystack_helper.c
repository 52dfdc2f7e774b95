/* pystack_helper.c: the C side of the Python-stack tests (pystack.py). Each entry point is one
 * CUDA event pinguard captures a stack for, called from Python through ctypes, which releases
 * the GIL around the call: the launch of a device->host copy, a CPU read of its buffer from C
 * (a guard-page fault, so the stack is taken in the fault handler), and a free of the buffer
 * while the copy is in flight (taken in the interposer). */
#include <cuda_runtime_api.h>
#include <string.h>

static void *dev;
static cudaStream_t stream;
static volatile unsigned char sink[4096];

void *pysh_setup(size_t n) {
  void *host = NULL;
  if (cudaHostAlloc(&host, n, cudaHostAllocDefault) != cudaSuccess) return NULL;
  memset(host, 0, n);
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) return NULL;
  if (cudaMalloc(&dev, n) != cudaSuccess || cudaMemsetAsync(dev, 0x5a, n, stream) != cudaSuccess)
    return NULL;
  return host;
}

int pysh_launch(void *host, size_t n) {
  return cudaMemcpyAsync(host, dev, n, cudaMemcpyDeviceToHost, stream);
}

/* A CPU read of the buffer (while the copy into it is in flight: a violation). */
int pysh_read(const void *host, size_t n) {
  if (n > sizeof sink) n = sizeof sink;
  memcpy((void *)sink, host, n);
  return sink[0];
}

int pysh_free(void *host) { return cudaFreeHost(host); }

int pysh_sync(void) { return cudaStreamSynchronize(stream); }
