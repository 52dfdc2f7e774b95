/* Intent: cudaHostUnregister while a kernel holding a raw pointer to the range is in flight is
 * reported as unregister-during-device-access. The fixed twin waits on an event recorded after
 * the kernel and must produce no report. */
// SCENARIO: unregister_during_kernel unregister-during-device-access

#include "e2e.h"

int main(int argc, char **argv) {
  int bug = e2e_is_bug(argc, argv);
  void *host = aligned_alloc(4096, BUF_BYTES);
  cudaStream_t s;
  cudaEvent_t done;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  CHECK(cudaHostRegister(host, BUF_BYTES, cudaHostRegisterDefault));
  void *bufs[] = {(char *)host + 4096};
  CHECK(e2e_launch_fill(bufs, 1, 8192, 0x11, s));
  CHECK(cudaEventRecord(done, s));
  if (!bug) CHECK(cudaEventSynchronize(done));
  CHECK(cudaHostUnregister(host));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaEventDestroy(done));
  CHECK(cudaStreamDestroy(s));
  free(host);
  return 0;
}
