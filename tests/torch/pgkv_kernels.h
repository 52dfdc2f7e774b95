/* pgkv_kernels.h: the bodies of the paged-KV transfer kernels the torch suite launches, written
 * once for two builds: pgkv_sim.c (simcuda: a body runs every thread of the launch serially, on
 * the stream's worker) and pgkv_kernels.cu (nvcc: real __global__ kernels, for bench/gpu.sh).
 * They load and store host memory directly, through the raw pointers of pgkv_objects_t. */
#ifndef PGKV_KERNELS_H
#define PGKV_KERNELS_H

#include "pgkv_params.h"

#ifdef __CUDACC__
#define PGKV_DEVICE __device__ static inline
#define PGKV_DMA(p) (p)
typedef uint4 pgkv_word_t;
#else
#include "simcuda_kernel.h"
#define PGKV_DEVICE static inline
#define PGKV_DMA(p) simcuda_dma(p)
typedef struct pgkv_word {
  uint64_t lo, hi;
} pgkv_word_t;
#endif

typedef struct pgkv_thread {
  uint32_t block, nblocks, thread, nthreads;
} pgkv_thread_t;

/* Block b of the launch moves segments b, b + nblocks, ...; a segment is one cache block. */
PGKV_DEVICE void pgkv_move(pgkv_thread_t t, pgkv_objects_t obj, uint8_t *kv, const int32_t *ids,
                           pgkv_layout_t lay, int to_host) {
  int64_t nseg = (int64_t)obj.num_objects * lay.blocks_per_chunk;
  int64_t words = lay.block_bytes / (int64_t)sizeof(pgkv_word_t);
  const int32_t *ids_d = (const int32_t *)PGKV_DMA(ids);
  for (int64_t seg = t.block; seg < nseg; seg += t.nblocks) {
    int c = (int)(seg / lay.blocks_per_chunk);
    int64_t i = seg % lay.blocks_per_chunk;
    pgkv_word_t *host = (pgkv_word_t *)PGKV_DMA(obj.objects[c] + i * lay.block_bytes);
    pgkv_word_t *dev = (pgkv_word_t *)PGKV_DMA(kv + (int64_t)ids_d[seg] * lay.block_bytes);
    pgkv_word_t *dst = to_host ? host : dev;
    const pgkv_word_t *src = to_host ? dev : host;
    for (int64_t w = t.thread; w < words; w += t.nthreads) dst[w] = src[w];
  }
}

#endif /* PGKV_KERNELS_H */
