/* Intent: stream capture. A device->host copy into a pinned buffer is in flight on stream A;
 * stream B then captures a host->device copy from the same buffer, unordered with it. pinguard
 * must not wait (a host sync would invalidate the capture): enforce reports wait-during-capture,
 * audit reports device-access-conflict, and the capture still succeeds and replays. The fixed
 * twin lets A finish before capturing: no report. */
#include "e2e.h"

int main(int argc, char **argv) {
  int bug = e2e_is_bug(argc, argv);
  void *host, *dev_src, *dev_dst;
  cudaStream_t a, b;
  CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  CHECK(cudaHostAlloc(&host, BUF_BYTES, cudaHostAllocDefault));
  CHECK(cudaMalloc(&dev_src, BUF_BYTES));
  CHECK(cudaMalloc(&dev_dst, BUF_BYTES));
  CHECK(cudaMemcpyAsync(host, dev_src, BUF_BYTES, cudaMemcpyDeviceToHost, a));
  if (!bug) CHECK(cudaStreamSynchronize(a));

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(b, cudaStreamCaptureModeGlobal));
  CHECK(cudaMemcpyAsync(dev_dst, host, BUF_BYTES, cudaMemcpyHostToDevice, b));
  CHECK(cudaStreamEndCapture(b, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaStreamSynchronize(a));
  CHECK(cudaGraphLaunch(exec, b));
  CHECK(cudaStreamSynchronize(b));
  puts("capture succeeded and the graph replayed");

  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaFreeHost(host));
  CHECK(cudaFree(dev_src));
  CHECK(cudaFree(dev_dst));
  CHECK(cudaStreamDestroy(a));
  CHECK(cudaStreamDestroy(b));
  return 0;
}
