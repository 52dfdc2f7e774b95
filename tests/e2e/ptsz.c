/* Intent: code built with --default-stream per-thread calls only the _ptsz entry points; they
 * are tracked too. A device->host copy on the per-thread default stream followed by cudaFreeHost
 * is reported; the fixed twin synchronizes stream 0 (the per-thread stream here) first. */
// SCENARIO: ptsz free-during-device-access

#define CUDA_API_PER_THREAD_DEFAULT_STREAM 1
#include "e2e.h"

int main(int argc, char **argv) {
  int bug = e2e_is_bug(argc, argv);
  void *host, *dev;
  CHECK(cudaHostAlloc(&host, BUF_BYTES, cudaHostAllocDefault));
  CHECK(cudaMalloc(&dev, BUF_BYTES));
  CHECK(cudaMemcpyAsync(host, dev, BUF_BYTES, cudaMemcpyDeviceToHost, 0));
  void *bufs[] = {host};
  CHECK(e2e_launch_fill(bufs, 1, 4096, 0x33, 0));
  if (!bug) CHECK(cudaStreamSynchronize(0));
  CHECK(cudaFreeHost(host));
  CHECK(cudaStreamSynchronize(0));
  CHECK(cudaFree(dev));
  return 0;
}
