/* Intent: the annotation API. With a device->host copy in flight, pinguard_commit reports
 * commit-during-device-write and pinguard_release reports release-during-device-access (enforce
 * waits instead and the bytes are then complete). The fixed twin synchronizes first: no report.
 * Without the preload the same calls are no-ops returning 0. Usage: annotations bug|fixed [commit|release]. */
// SCENARIO: commit commit-during-device-write ARGS commit
// SCENARIO: release release-during-device-access ARGS release
// Enforce waits, so the annotated bytes are complete after the call; without the shim the
// annotations are no-ops.
// CASE: commit.enforce_waits MODE enforce EXPECT commit-during-device-write ARGS bug commit
//   STDOUT "first byte after the annotation: 0x44" ENV ${PG_WAIT_LATENCY}
// CASE: annotations.without_shim MODE none EXPECT none ARGS bug commit
//   STDOUT "in-flight accesses found: 0"

#include "e2e.h"
#include "pinguard.h"

int main(int argc, char **argv) {
  int bug = e2e_is_bug(argc, argv);
  int commit = argc < 3 || strcmp(argv[2], "release") != 0;
  unsigned char *host;
  void *dev;
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaHostAlloc((void **)&host, BUF_BYTES, cudaHostAllocDefault));
  CHECK(cudaMalloc(&dev, BUF_BYTES));
  memset(host, 0, BUF_BYTES);
  CHECK(cudaMemsetAsync(dev, 0x44, BUF_BYTES, s)); /* same stream: ordered before the copy */
  CHECK(cudaMemcpyAsync(host, dev, BUF_BYTES, cudaMemcpyDeviceToHost, s));
  if (!bug) CHECK(cudaStreamSynchronize(s));
  int found = commit ? pinguard_commit(host, BUF_BYTES) : pinguard_release(host, BUF_BYTES);
  /* After an enforce wait (or the twin's sync) the copy has landed. */
  printf("in-flight accesses found: %d; first byte after the annotation: 0x%02x\n", found, host[0]);
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaFreeHost(host));
  CHECK(cudaFree(dev));
  CHECK(cudaStreamDestroy(s));
  return 0;
}
