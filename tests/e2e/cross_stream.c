/* Intent: a host->device copy from a pinned buffer on stream A, then a device->host copy into
 * the same buffer on stream B with nothing ordering them, is a device-access-conflict (WAR).
 * Twins that must produce no report: "event" orders B after A with cudaStreamWaitEvent, and
 * "same" issues both copies on stream A. Usage: cross_stream bug|fixed [event|same]. */
// SCENARIO: cross_stream.event device-access-conflict ARGS event
// SCENARIO: cross_stream.same device-access-conflict ARGS same

#include "e2e.h"

int main(int argc, char **argv) {
  int bug = e2e_is_bug(argc, argv);
  const char *how = argc > 2 ? argv[2] : "event";
  void *host, *dev_a, *dev_b;
  cudaStream_t a, b;
  cudaEvent_t e;
  CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  CHECK(cudaHostAlloc(&host, BUF_BYTES, cudaHostAllocDefault));
  CHECK(cudaMalloc(&dev_a, BUF_BYTES));
  CHECK(cudaMalloc(&dev_b, BUF_BYTES));
  memset(host, 1, BUF_BYTES);
  CHECK(cudaMemcpyAsync(dev_a, host, BUF_BYTES, cudaMemcpyHostToDevice, a));
  cudaStream_t second = b;
  if (!bug && strcmp(how, "same") == 0) {
    second = a;
  } else if (!bug) {
    CHECK(cudaEventRecord(e, a));
    CHECK(cudaStreamWaitEvent(b, e, 0));
  }
  CHECK(cudaMemcpyAsync(host, dev_b, BUF_BYTES, cudaMemcpyDeviceToHost, second));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFreeHost(host));
  CHECK(cudaFree(dev_a));
  CHECK(cudaFree(dev_b));
  CHECK(cudaEventDestroy(e));
  CHECK(cudaStreamDestroy(a));
  CHECK(cudaStreamDestroy(b));
  return 0;
}
