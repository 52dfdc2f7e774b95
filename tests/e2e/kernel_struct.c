/* Intent: host pointers inside a by-value struct kernel parameter are found (the incident's
 * path): freeing the second of four chunks while the kernel may still write them is reported
 * as free-during-device-access. The fixed twin synchronizes first. */
#include "e2e.h"

int main(int argc, char **argv) {
  int bug = e2e_is_bug(argc, argv);
  void *chunks[4];
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  for (int i = 0; i < 4; i++) CHECK(cudaHostAlloc(&chunks[i], BUF_BYTES, cudaHostAllocDefault));
  CHECK(e2e_launch_fill(chunks, 4, BUF_BYTES, 0x22, s));
  if (!bug) CHECK(cudaStreamSynchronize(s));
  CHECK(cudaFreeHost(chunks[1]));
  CHECK(cudaStreamSynchronize(s));
  for (int i = 0; i < 4; i++)
    if (i != 1) CHECK(cudaFreeHost(chunks[i]));
  CHECK(cudaStreamDestroy(s));
  return 0;
}
