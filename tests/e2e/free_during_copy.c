/* Intent: cudaFreeHost while a device->host copy into the buffer is still in flight is reported
 * as free-during-device-access (audit) or waited for (enforce). The fixed twin synchronizes the
 * stream first and must produce no report. An optional second argument is the program's exit
 * status (the exit-status rule's tests). */
#include "e2e.h"

int main(int argc, char **argv) {
  int bug = e2e_is_bug(argc, argv);
  void *host, *dev;
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  CHECK(cudaHostAlloc(&host, BUF_BYTES, cudaHostAllocDefault));
  CHECK(cudaMalloc(&dev, BUF_BYTES));
  CHECK(cudaMemsetAsync(dev, 0x7f, BUF_BYTES, s));
  CHECK(cudaMemcpyAsync(host, dev, BUF_BYTES, cudaMemcpyDeviceToHost, s));
  if (!bug) CHECK(cudaStreamSynchronize(s));
  CHECK(cudaFreeHost(host));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaFree(dev));
  CHECK(cudaStreamDestroy(s));
  return argc > 2 ? atoi(argv[2]) : 0;
}
