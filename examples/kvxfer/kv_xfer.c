/* kv_xfer.c: gather and scatter by kernel launch, per-segment cudaMemcpyAsync, or one
 * cudaMemcpyBatchAsync. All three touch the same bytes in the same layout (kv_params.h). */
#include "kv_xfer.h"

#include <stdlib.h>
#include <string.h>

#include "kv_kernel_handles.h"

/* Direction of a transfer, seen from the host chunk. */
typedef enum { KV_TO_HOST, KV_TO_DEVICE } kv_dir_t;

static cudaError_t kv_launch(const kv_xfer_ctx_t *x, kv_dir_t dir, void *const *chunks, int first,
                             int n, cudaStream_t stream) {
  /* Zeroed whole, padding included: the 4 bytes after n would otherwise keep stale stack bytes,
   * and a checker that reads every 8-byte word of the parameters (pinguard does) may take n and
   * those bytes together for a pointer into a pinned chunk. */
  kv_chunk_ptrs_t ptrs;
  memset(&ptrs, 0, sizeof ptrs);
  ptrs.n = n;
  for (int c = 0; c < n; c++) ptrs.chunks[c] = chunks[c];
  uint8_t *kv = x->kv;
  const int32_t *ids = x->ids_dev + (int64_t)first * x->lay.blocks_per_chunk;
  kv_layout_t lay = x->lay;
  void *args[] = {&ptrs, &kv, &ids, &lay};
  unsigned nseg = (unsigned)((int64_t)n * lay.layers * 2 * lay.blocks_per_chunk);
  dim3 grid = {nseg, 1, 1}, block = {KV_THREADS_PER_BLOCK, 1, 1};
  const void *fn = dir == KV_TO_HOST ? kv_kernel_gather() : kv_kernel_scatter();
  return cudaLaunchKernel(fn, grid, block, args, 0, stream);
}

/* Calls visit(dev, host) for every segment of chunks first..first+n-1, in chunk layout order. */
typedef struct kv_seg_iter {
  const kv_xfer_ctx_t *x;
  void *const *chunks;
  int first, n;
  int64_t at; /* next segment */
} kv_seg_iter_t;

static int kv_seg_next(kv_seg_iter_t *it, uint8_t **dev, uint8_t **host) {
  const kv_layout_t *lay = &it->x->lay;
  int64_t per_chunk = (int64_t)lay->layers * 2 * lay->blocks_per_chunk;
  if (it->at >= per_chunk * it->n) return 0;
  int c = (int)(it->at / per_chunk);
  int64_t in_chunk = it->at % per_chunk, lh = in_chunk / lay->blocks_per_chunk,
          i = in_chunk % lay->blocks_per_chunk;
  int64_t b = it->x->ids_host[(int64_t)(it->first + c) * lay->blocks_per_chunk + i];
  *dev = it->x->kv + (lh * lay->num_blocks + b) * lay->seg_bytes;
  *host = (uint8_t *)it->chunks[c] + in_chunk * lay->seg_bytes;
  it->at++;
  return 1;
}

static cudaError_t kv_memcpy_each(const kv_xfer_ctx_t *x, kv_dir_t dir, void *const *chunks,
                                  int first, int n, cudaStream_t stream) {
  kv_seg_iter_t it = {x, chunks, first, n, 0};
  uint8_t *dev, *host;
  while (kv_seg_next(&it, &dev, &host)) {
    cudaError_t e =
        dir == KV_TO_HOST
            ? cudaMemcpyAsync(host, dev, (size_t)x->lay.seg_bytes, cudaMemcpyDeviceToHost, stream)
            : cudaMemcpyAsync(dev, host, (size_t)x->lay.seg_bytes, cudaMemcpyHostToDevice, stream);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

static cudaError_t kv_memcpy_batch(const kv_xfer_ctx_t *x, kv_dir_t dir, void *const *chunks,
                                   int first, int n, cudaStream_t stream) {
  size_t count = (size_t)n * (size_t)x->lay.layers * 2 * (size_t)x->lay.blocks_per_chunk;
  void **dsts = malloc(count * sizeof(*dsts));
  const void **srcs = malloc(count * sizeof(*srcs));
  size_t *sizes = malloc(count * sizeof(*sizes));
  cudaError_t e = cudaErrorMemoryAllocation;
  if (dsts && srcs && sizes) {
    kv_seg_iter_t it = {x, chunks, first, n, 0};
    uint8_t *dev, *host;
    for (size_t k = 0; kv_seg_next(&it, &dev, &host); k++) {
      dsts[k] = dir == KV_TO_HOST ? (void *)host : (void *)dev;
      srcs[k] = dir == KV_TO_HOST ? (const void *)dev : (const void *)host;
      sizes[k] = (size_t)x->lay.seg_bytes;
    }
    /* One attribute for all copies: sources are read in stream order, as the other methods do. */
    struct cudaMemcpyAttributes attr = {0};
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    size_t attr_idx = 0;
#if CUDART_VERSION >= 13000
    e = cudaMemcpyBatchAsync(dsts, srcs, sizes, count, &attr, &attr_idx, 1, stream);
#else /* 12.8's prototype has a failIdx out-parameter */
    size_t fail_idx = 0;
    e = cudaMemcpyBatchAsync(dsts, (void **)srcs, sizes, count, &attr, &attr_idx, 1, &fail_idx,
                             stream);
#endif
  }
  free(dsts);
  free(srcs);
  free(sizes);
  return e;
}

static cudaError_t kv_transfer(const kv_xfer_ctx_t *x, kv_xfer_t how, kv_dir_t dir,
                               void *const *chunks, int first, int n, cudaStream_t stream) {
  if (n < 1 || n > KV_MAX_CHUNKS_PER_LAUNCH) return cudaErrorInvalidValue;
  switch (how) {
  case KV_XFER_KERNEL:
    return kv_launch(x, dir, chunks, first, n, stream);
  case KV_XFER_MEMCPY:
    return kv_memcpy_each(x, dir, chunks, first, n, stream);
  case KV_XFER_BATCH:
    return kv_memcpy_batch(x, dir, chunks, first, n, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t kv_gather(const kv_xfer_ctx_t *x, kv_xfer_t how, void *const *chunks, int first, int n,
                      cudaStream_t stream) {
  return kv_transfer(x, how, KV_TO_HOST, chunks, first, n, stream);
}

cudaError_t kv_scatter(const kv_xfer_ctx_t *x, kv_xfer_t how, void *const *chunks, int first, int n,
                       cudaStream_t stream) {
  return kv_transfer(x, how, KV_TO_DEVICE, chunks, first, n, stream);
}

cudaError_t kv_compute(int us, cudaStream_t stream) {
  int64_t ns = (int64_t)us * 1000;
  void *args[] = {&ns};
  dim3 one = {1, 1, 1};
  return cudaLaunchKernel(kv_kernel_compute(), one, one, args, 0, stream);
}
