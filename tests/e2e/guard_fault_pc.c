/* Intent: a guard fault is reported in the function whose instruction faulted. The faulting load
 * is the first instruction of fault_first_byte_load, right after fault_neighbour_before (see
 * fault_pc.h): the report, its SUMMARY line and a suppression by function name must all name
 * fault_first_byte_load, never the neighbour. Reads the destination of an in-flight
 * device->host copy (cpu-read-during-device-write). Usage: bug|fixed. */
#include "e2e.h"
#include "fault_pc.h"

int main(int argc, char **argv) {
  int bug = e2e_is_bug(argc, argv);
  unsigned char *host;
  void *dev;
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaHostAlloc((void **)&host, BUF_BYTES, cudaHostAllocDefault));
  CHECK(cudaMalloc(&dev, BUF_BYTES));
  memset(host, 0, BUF_BYTES);
  CHECK(cudaMemsetAsync(dev, 0x5a, BUF_BYTES, s));
  CHECK(cudaMemcpyAsync(host, dev, BUF_BYTES, cudaMemcpyDeviceToHost, s));
  if (!bug) CHECK(cudaStreamSynchronize(s));
  fault_neighbour_before();
  printf("read byte 0x%02x\n", fault_first_byte_load(host + BUF_BYTES / 2));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaFreeHost(host));
  CHECK(cudaFree(dev));
  CHECK(cudaStreamDestroy(s));
  return 0;
}
