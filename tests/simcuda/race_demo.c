/* race_demo.c: a device-to-host race, shown with nothing but the CUDA runtime API (no simcuda
 * header), so the same source runs on a real GPU or, by LD_LIBRARY_PATH, on simcuda. It reads a
 * pinned destination right after cudaMemcpyAsync (too early: the old bytes) and again after
 * cudaStreamSynchronize (the new bytes). Exit 0 when it saw exactly that. On simcuda the race is
 * deterministic with SIMCUDA_LATENCY_US=20000; on real hardware a small copy may win the race. */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#define CHECK(call)                                                                \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_));           \
      return 2;                                                                    \
    }                                                                              \
  } while (0)

int main(void) {
  enum { N = 1 << 20 };
  unsigned char *host = NULL, *dev = NULL;
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CHECK(cudaHostAlloc((void **)&host, N, cudaHostAllocDefault));
  CHECK(cudaMalloc((void **)&dev, N));
  memset(host, 0xAA, N);                /* old bytes */
  CHECK(cudaMemset(dev, 0x55, N));      /* new bytes, on the device */
  CHECK(cudaDeviceSynchronize());

  CHECK(cudaMemcpyAsync(host, dev, N, cudaMemcpyDeviceToHost, stream));
  unsigned char before = host[N / 2];   /* the race: the copy is still in flight */
  CHECK(cudaStreamSynchronize(stream));
  unsigned char after = host[N / 2];

  printf("read right after cudaMemcpyAsync: 0x%02X (%s)\n", before,
         before == 0xAA ? "old bytes: the copy had not happened yet" : "new bytes");
  printf("read after cudaStreamSynchronize:  0x%02X (%s)\n", after,
         after == 0x55 ? "new bytes" : "unexpected");
  CHECK(cudaFree(dev));
  CHECK(cudaFreeHost(host));
  CHECK(cudaStreamDestroy(stream));
  return before == 0xAA && after == 0x55 ? 0 : 1;
}
