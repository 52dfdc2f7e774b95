/* kv_xfer.h: the three ways to move a group of chunks between the paged device KV cache and
 * pinned host chunks (kernel, cudaMemcpyAsync per segment, cudaMemcpyBatchAsync). Each call only
 * enqueues work on `stream`; nothing here waits. */
#ifndef KV_XFER_H
#define KV_XFER_H

#include <cuda_runtime_api.h>

#include "kv_params.h"

typedef enum { KV_XFER_KERNEL, KV_XFER_MEMCPY, KV_XFER_BATCH } kv_xfer_t;

/* What a transfer works on: the cache, its layout, and the block table in both memories. */
typedef struct kv_xfer_ctx {
  uint8_t *kv; /* device: the paged cache */
  kv_layout_t lay;
  const int32_t *ids_host; /* physical block ids, blocks_per_chunk per chunk, chunk 0 first */
  const int32_t *ids_dev;  /* the same table in device memory, for the kernels */
} kv_xfer_ctx_t;

/* Enqueues device KV -> host chunks[0..n) for chunks first..first+n-1 (n <= 4). */
cudaError_t kv_gather(const kv_xfer_ctx_t *x, kv_xfer_t how, void *const *chunks, int first, int n,
                      cudaStream_t stream);
/* Enqueues host chunks[0..n) -> device KV for chunks first..first+n-1 (n <= 4). */
cudaError_t kv_scatter(const kv_xfer_ctx_t *x, kv_xfer_t how, void *const *chunks, int first, int n,
                       cudaStream_t stream);
/* Enqueues the simulated model compute: the stream stays busy for `us` microseconds. */
cudaError_t kv_compute(int us, cudaStream_t stream);

#endif /* KV_XFER_H */
