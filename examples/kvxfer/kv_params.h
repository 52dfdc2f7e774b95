/* kv_params.h: the parameter types the transfer kernels take, shared by the host code, the
 * simcuda kernels and the nvcc kernels. Plain C that also compiles as CUDA C++, so both builds
 * agree on every size and offset. */
#ifndef KV_PARAMS_H
#define KV_PARAMS_H

#include <stdint.h>

/* One kernel launch covers at most this many chunks, as in the incident's engine. */
#define KV_MAX_CHUNKS_PER_LAUNCH 4

/* Threads per CUDA block for the transfer kernels: each block copies one segment. */
#define KV_THREADS_PER_BLOCK 128

/* Raw host chunk pointers, passed to the kernel by value: the GPU loads/stores them over UVA. */
typedef struct kv_chunk_ptrs {
  void *chunks[KV_MAX_CHUNKS_PER_LAUNCH];
  int n;
} kv_chunk_ptrs_t;

/* Where a chunk's bytes live in the paged KV cache. The cache is
 *   kv[layer][k_or_v][num_blocks][seg_bytes]
 * and a host chunk is
 *   chunk[layer][k_or_v][blocks_per_chunk][seg_bytes],
 * where a segment is one block of one layer's K or V: block_tokens * kv_heads * head_dim * 2 B. */
typedef struct kv_layout {
  int32_t layers;
  int32_t blocks_per_chunk;
  int64_t num_blocks;
  int64_t seg_bytes; /* a multiple of 16: the kernels move 16-byte words */
} kv_layout_t;

#endif /* KV_PARAMS_H */
