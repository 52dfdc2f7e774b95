/* Intent: cudaFreeHost while a device->host copy into the buffer is still in flight is reported
 * as free-during-device-access (audit) or waited for (enforce). The fixed twin synchronizes the
 * stream first and must produce no report. An optional second argument is the program's exit
 * status (the exit-status rule's tests). */
// SCENARIO: free_during_copy free-during-device-access
// The exit-status rule, on a program that exits 5: audit fails with exitcode; enforce prevented
// the violation, so the program's own 5 stands, unless enforce_fails=1 asks for exitcode.
// CASE: exit_status.audit MODE audit EXPECT free-during-device-access EXIT 23 ARGS bug 5
// CASE: exit_status.enforce MODE enforce EXPECT free-during-device-access EXIT 5 ARGS bug 5
//   STDERR "1 wait totalling" ENV ${PG_WAIT_LATENCY}
// CASE: exit_status.enforce_fails MODE enforce EXPECT free-during-device-access EXIT 23
//   ARGS bug 5 ENV PG_EXTRA_OPTIONS=guard=0:enforce_fails=1
// CASE: exit_status.fixed.enforce_fails MODE enforce EXPECT none EXIT 5 ARGS fixed 5
//   ENV PG_EXTRA_OPTIONS=guard=0:enforce_fails=1
// Enforce's own wait fails (the event synchronize returns an error): reported as a failed wait,
// not as "waited", and the exit status is that of a violation not prevented. The copy must
// still be running at the free, or there is no wait to fail.
// CASE: exit_status.enforce_wait_failed MODE enforce EXPECT free-during-device-access EXIT 23
//   ARGS bug STDERR "enforce: the wait failed .* went ahead unprevented"
//   ENV SIMCUDA_FAIL=cudaEventSynchronize:1 ${PG_WAIT_LATENCY}

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
