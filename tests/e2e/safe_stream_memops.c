/* Intent: stream memory operations are flag protocols, and their flag words are never guarded.
 *   wait:    cuStreamWaitValue32 holds a stream until the CPU sets a flag at the start of a
 *            1 MiB pinned buffer; a device->host copy into the whole buffer is queued behind it,
 *            so its guard covers the flag's page. The CPU's store to the flag must go through:
 *            were the page guarded, enforce would wait for the copy, which waits for the store.
 *   counter: a DeepEP-shaped loop. A kernel holding a pointer to the whole buffer writes data past
 *            its first page, then cuStreamWriteValue32 bumps a counter at the start of it; the CPU
 *            polls the counter and then reads the data written before the bump. No report: the
 *            counter's page is never guarded, and the data's guard belongs to a kernel that has
 *            completed when the counter moves.
 * Usage: safe_stream_memops wait|counter */
// "wait": the CPU's store that releases a cuStreamWaitValue32 goes through, in both modes, with
// no report; "counter": a DeepEP-shaped loop, no false positive.
// CASE: safe.stream_memops.wait.${mode} MODE ${mode} EXPECT none
//   STDOUT "^copy ran after the flag" ARGS wait
//   ENV PG_EXTRA_OPTIONS=guard=1 SIMCUDA_WAIT_VALUE_MAX_S=20 FOR mode IN audit enforce
// CASE: safe.stream_memops.counter.${mode} MODE ${mode} EXPECT none
//   STDOUT "^counter loop done" ARGS counter ENV PG_EXTRA_OPTIONS=guard=1
//   FOR mode IN audit enforce

#include <cuda.h>
#include <stdint.h>
#include <unistd.h>

#include "e2e.h"

#define BYTES (1u << 20)
#define DATA 4096u /* the data starts on the second page */

#define CU_CHECK(call)                                                                \
  do {                                                                                \
    CUresult r_ = (call);                                                             \
    if (r_ != CUDA_SUCCESS) {                                                         \
      fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, (int)r_);  \
      exit(2);                                                                        \
    }                                                                                 \
  } while (0)

typedef struct fill_args {
  unsigned char *base; /* the whole buffer: the kernel's access covers it all */
  size_t offset, len;
  unsigned char value;
} fill_args_t;

SIMCUDA_KERNEL(fill_after, sizeof(fill_args_t)) {
  const fill_args_t *a = launch->args[0];
  memset((unsigned char *)simcuda_dma(a->base) + a->offset, a->value, a->len);
}

static int run_wait(unsigned char *buf, cudaStream_t s) {
  void *dev;
  CHECK(cudaMalloc(&dev, BYTES));
  CHECK(cudaMemset(dev, 0x5a, BYTES));
  CHECK(cudaDeviceSynchronize());
  volatile uint32_t *flag = (volatile uint32_t *)buf;
  CU_CHECK(cuStreamWaitValue32_v2((CUstream)s, (CUdeviceptr)(uintptr_t)flag, 1,
                                  CU_STREAM_WAIT_VALUE_GEQ));
  CHECK(cudaMemcpyAsync(buf, dev, BYTES, cudaMemcpyDeviceToHost, s));
  usleep(20 * 1000);
  *flag = 1; /* releases the stream */
  CHECK(cudaStreamSynchronize(s));
  int ok = buf[DATA] == 0x5a && buf[BYTES - 1] == 0x5a;
  printf(ok ? "copy ran after the flag\n" : "copy did not run\n");
  return ok ? 0 : 1;
}

static int run_counter(unsigned char *buf, cudaStream_t s) {
  volatile uint32_t *counter = (volatile uint32_t *)buf;
  int bad = 0;
  for (unsigned round = 1; round <= 8; round++) {
    fill_args_t a = {.base = buf, .offset = DATA, .len = BYTES - DATA,
                     .value = (unsigned char)round};
    void *args[] = {&a};
    CHECK(cudaLaunchKernel((const void *)fill_after, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, s));
    CU_CHECK(cuStreamWriteValue32_v2((CUstream)s, (CUdeviceptr)(uintptr_t)counter, round, 0));
    while (*counter != round) usleep(100); /* the CPU polls the counter */
    if (buf[DATA + round * 1000] != round) bad = 1; /* data written before the bump */
  }
  CHECK(cudaStreamSynchronize(s));
  printf(bad ? "stale data after the counter moved\n" : "counter loop done\n");
  return bad;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  alarm(60);
  unsigned char *buf;
  CHECK(cudaHostAlloc((void **)&buf, BYTES, cudaHostAllocDefault));
  memset(buf, 0, BYTES);
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int rc = strcmp(argv[1], "wait") == 0 ? run_wait(buf, s) : run_counter(buf, s);
  CHECK(cudaFreeHost(buf));
  return rc;
}
