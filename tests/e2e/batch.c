/* Intent: cudaMemcpyBatchAsync is tracked in both of its ABIs: 8 arguments (CUDA 13.0) and 9
 * (12.8, with size_t *failIdx), chosen at run time from cudaRuntimeGetVersion. A batch of
 * device->host copies into four pinned buffers, then freeing one, is reported; the fixed twin
 * synchronizes first. Usage: batch bug|fixed [13|128]; run "128" with SIMCUDA_RUNTIME_VERSION=12080. */
// SCENARIO: batch13 free-during-device-access ARGS 13
// SCENARIO: batch128 free-during-device-access ARGS 128 ENV SIMCUDA_RUNTIME_VERSION=12080

#include "e2e.h"

typedef cudaError_t (*batch_128_fn)(void *const *, const void *const *, const size_t *, size_t,
                                    struct cudaMemcpyAttributes *, size_t *, size_t, size_t *,
                                    cudaStream_t);

int main(int argc, char **argv) {
  int bug = e2e_is_bug(argc, argv);
  int abi128 = argc > 2 && strcmp(argv[2], "128") == 0;
  int version = 0;
  CHECK(cudaRuntimeGetVersion(&version));
  if (abi128 != (version < 13000)) {
    fprintf(stderr, "runtime reports %d; the %s ABI needs the matching runtime\n", version,
            abi128 ? "12.8" : "13.0");
    return 2;
  }
  enum { N = 4 };
  void *host[N], *dev[N];
  size_t sizes[N];
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (int i = 0; i < N; i++) {
    CHECK(cudaHostAlloc(&host[i], BUF_BYTES, cudaHostAllocDefault));
    CHECK(cudaMalloc(&dev[i], BUF_BYTES));
    sizes[i] = BUF_BYTES;
  }
  struct cudaMemcpyAttributes attr;
  memset(&attr, 0, sizeof attr);
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  size_t attr_idx = 0;
  if (abi128) {
    size_t fail_idx = 0;
    batch_128_fn batch = (batch_128_fn)(void (*)(void))cudaMemcpyBatchAsync;
    CHECK(batch(host, (const void *const *)dev, sizes, N, &attr, &attr_idx, 1, &fail_idx, s));
  } else {
    CHECK(cudaMemcpyBatchAsync(host, (const void *const *)dev, sizes, N, &attr, &attr_idx, 1, s));
  }
  if (!bug) CHECK(cudaStreamSynchronize(s));
  CHECK(cudaFreeHost(host[2]));
  CHECK(cudaStreamSynchronize(s));
  for (int i = 0; i < N; i++) {
    if (i != 2) CHECK(cudaFreeHost(host[i]));
    CHECK(cudaFree(dev[i]));
  }
  CHECK(cudaStreamDestroy(s));
  return 0;
}
