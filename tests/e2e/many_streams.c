/* Intent: a process with more streams than any small table holds, spread over many devices (as
 * eight GPUs of PyTorch stream pools, NCCL's and the program's own streams are): every stream is
 * tracked. Run by many_streams.sh with SIMCUDA_DEVICES=8.
 * Each of NSTREAMS non-blocking streams (round-robin over the devices) copies its own 4 KiB of a
 * pinned pool to the device; then, on the last stream, a device-to-host copy into a pinned
 * buffer, and a CPU read of that buffer:
 *   "bug": no synchronization before the read (cpu-read-during-device-write, on the last stream);
 *   "fixed": cudaStreamSynchronize of the last stream first (no report).
 * Then every device is synchronized, so every tracked access is retired, and the program prints
 * "streams: N", "copies: N+1" and the byte it read.
 *   many_streams bug|fixed [NSTREAMS] */
#include "e2e.h"

#define SLICE 4096u
#define MAXDEV 16

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: many_streams bug|fixed [streams]\n");
    return 2;
  }
  int bug = strcmp(argv[1], "bug") == 0;
  int n = argc > 2 ? atoi(argv[2]) : 1200;
  int ndev = 0;
  CHECK(cudaGetDeviceCount(&ndev));
  if (ndev > MAXDEV) ndev = MAXDEV;
  cudaStream_t *s = calloc((size_t)n, sizeof *s);
  unsigned char *pool, *out;
  void *dev[MAXDEV];
  if (!s) return 2;
  CHECK(cudaHostAlloc((void **)&pool, (size_t)n * SLICE, cudaHostAllocPortable));
  CHECK(cudaHostAlloc((void **)&out, SLICE, cudaHostAllocPortable));
  memset(pool, 7, (size_t)n * SLICE);
  for (int d = 0; d < ndev; d++) {
    CHECK(cudaSetDevice(d));
    CHECK(cudaMalloc(&dev[d], (size_t)n * SLICE));
    CHECK(cudaMemset(dev[d], 9, (size_t)n * SLICE));
  }
  for (int d = 0; d < ndev; d++) { /* the memsets done: the host starts from a clean slate */
    CHECK(cudaSetDevice(d));
    CHECK(cudaDeviceSynchronize());
  }
  for (int i = 0; i < n; i++) {
    int d = i % ndev;
    CHECK(cudaSetDevice(d));
    CHECK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
    CHECK(cudaMemcpyAsync((char *)dev[d] + (size_t)i * SLICE, pool + (size_t)i * SLICE, SLICE,
                          cudaMemcpyHostToDevice, s[i]));
  }
  int last = n - 1, d = last % ndev;
  CHECK(cudaSetDevice(d));
  CHECK(cudaMemcpyAsync(out, (char *)dev[d] + (size_t)last * SLICE, SLICE,
                        cudaMemcpyDeviceToHost, s[last]));
  if (!bug) CHECK(cudaStreamSynchronize(s[last]));
  unsigned v = *(volatile unsigned char *)out;
  for (int k = 0; k < ndev; k++) {
    CHECK(cudaSetDevice(k));
    CHECK(cudaDeviceSynchronize());
  }
  printf("streams: %d\ncopies: %d\nread: %u\n", n, n + 1, v);
  return 0;
}
