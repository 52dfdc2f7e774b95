/* pgkv_api.c: the C entry points the Python engine calls through ctypes (one build for simcuda,
 * one for real CUDA). Each launches a transfer kernel on the given stream (torch's
 * current_stream().cuda_stream) with cudaLaunchKernel and returns at once; the chunk pointers go
 * into the kernel by value. Returns the cudaError_t of the launch. */
#include <cuda_runtime_api.h>
#include <stdint.h>

#include "pgkv_params.h"

const void *pgkv_kernel_gather(void);
const void *pgkv_kernel_scatter(void);

static int pgkv_launch(const void *kernel, const uint64_t *chunks, int n, void *kv,
                       const int32_t *ids, int32_t blocks_per_chunk, int64_t block_bytes,
                       int64_t spin_ns, void *stream) {
  if (n < 1 || n > PGKV_MAX_OBJECTS || blocks_per_chunk < 1 || block_bytes <= 0 ||
      block_bytes % 16)
    return (int)cudaErrorInvalidValue;
  pgkv_objects_t obj = {{0}, n};
  for (int c = 0; c < n; c++) obj.objects[c] = (uint8_t *)(uintptr_t)chunks[c];
  pgkv_layout_t lay = {block_bytes, blocks_per_chunk, 0, spin_ns};
  uint8_t *kv_p = kv;
  const int32_t *ids_p = ids;
  void *args[] = {&obj, &kv_p, &ids_p, &lay};
  dim3 grid = {(unsigned)(n * blocks_per_chunk), 1, 1}, block = {PGKV_THREADS, 1, 1};
  return (int)cudaLaunchKernel(kernel, grid, block, args, 0, (cudaStream_t)stream);
}

/* Paged cache -> host chunks: the GPU writes host memory (the store path). */
int pgkv_gather(const uint64_t *chunks, int n, void *kv, const int32_t *ids,
                int32_t blocks_per_chunk, int64_t block_bytes, int64_t spin_ns, void *stream) {
  return pgkv_launch(pgkv_kernel_gather(), chunks, n, kv, ids, blocks_per_chunk, block_bytes,
                     spin_ns, stream);
}

/* Host chunks -> paged cache: the GPU reads host memory (the retrieve path). */
int pgkv_scatter(const uint64_t *chunks, int n, void *kv, const int32_t *ids,
                 int32_t blocks_per_chunk, int64_t block_bytes, int64_t spin_ns, void *stream) {
  return pgkv_launch(pgkv_kernel_scatter(), chunks, n, kv, ids, blocks_per_chunk, block_bytes,
                     spin_ns, stream);
}
