/* kv_kernels.h: the bodies of the engine's kernels, written once for two builds. kv_kernels_sim.c
 * includes it for simcuda (each body runs serially for every thread of the launch geometry, on the
 * stream's worker) and kv_kernels.cu for nvcc (real __global__ kernels). Only the macro layer
 * below differs; a body reaches host memory only through KV_DMA(). */
#ifndef KV_KERNELS_H
#define KV_KERNELS_H

#include "kv_params.h"

#ifdef __CUDACC__
/* ---- real CUDA: device code; a host pointer is valid on the device (UVA) ---- */
#define KV_DEVICE __device__ static inline
#define KV_DMA(p) (p)
typedef uint4 kv_word_t;
#else
/* ---- simcuda: host code on the stream worker; host memory goes through the DMA alias, which
 * ignores CPU page protections as a real copy engine does ---- */
#include "simcuda_kernel.h"
#include <time.h>
#define KV_DEVICE static inline
#define KV_DMA(p) simcuda_dma(p)
typedef struct kv_word {
  uint64_t lo, hi;
} kv_word_t;
#endif

/* Which thread of the launch is running: blockIdx.x/gridDim.x/threadIdx.x/blockDim.x. */
typedef struct kv_thread {
  uint32_t block, nblocks, thread, nthreads;
} kv_thread_t;

/* The threads of one CUDA block copy one segment together, 16 bytes per thread per step. */
KV_DEVICE void kv_copy_segment(void *dst, const void *src, int64_t bytes, kv_thread_t t) {
  kv_word_t *d = (kv_word_t *)dst;
  const kv_word_t *s = (const kv_word_t *)src;
  for (int64_t i = t.thread; i < bytes / (int64_t)sizeof(kv_word_t); i += t.nthreads) d[i] = s[i];
}

/* Segment `seg` of a launch: chunk c, then (layer, k_or_v) row lh, then block i of the chunk. */
typedef struct kv_seg {
  int c;
  int64_t lh, i, in_chunk;
} kv_seg_t;

KV_DEVICE kv_seg_t kv_seg_of(int64_t seg, kv_layout_t lay) {
  int64_t per_chunk = (int64_t)lay.layers * 2 * lay.blocks_per_chunk;
  kv_seg_t s;
  s.c = (int)(seg / per_chunk);
  s.in_chunk = seg % per_chunk;
  s.lh = s.in_chunk / lay.blocks_per_chunk;
  s.i = s.in_chunk % lay.blocks_per_chunk;
  return s;
}

/* Store: paged device KV -> pinned host chunks (the GPU writes host memory). ids holds the
 * physical block ids of the launch's chunks, blocks_per_chunk per chunk. */
KV_DEVICE void kv_gather_thread(kv_thread_t t, kv_chunk_ptrs_t dst, const uint8_t *kv,
                                const int32_t *ids, kv_layout_t lay) {
  int64_t nseg = (int64_t)dst.n * lay.layers * 2 * lay.blocks_per_chunk;
  for (int64_t seg = t.block; seg < nseg; seg += t.nblocks) {
    kv_seg_t s = kv_seg_of(seg, lay);
    int64_t b = ids[s.c * lay.blocks_per_chunk + s.i];
    const uint8_t *src = kv + (s.lh * lay.num_blocks + b) * lay.seg_bytes;
    uint8_t *host = (uint8_t *)dst.chunks[s.c] + s.in_chunk * lay.seg_bytes;
    kv_copy_segment(KV_DMA(host), src, lay.seg_bytes, t);
  }
}

/* Retrieve: pinned host chunks -> paged device KV (the GPU reads host memory). */
KV_DEVICE void kv_scatter_thread(kv_thread_t t, kv_chunk_ptrs_t src, uint8_t *kv,
                                 const int32_t *ids, kv_layout_t lay) {
  int64_t nseg = (int64_t)src.n * lay.layers * 2 * lay.blocks_per_chunk;
  for (int64_t seg = t.block; seg < nseg; seg += t.nblocks) {
    kv_seg_t s = kv_seg_of(seg, lay);
    int64_t b = ids[s.c * lay.blocks_per_chunk + s.i];
    uint8_t *dst = kv + (s.lh * lay.num_blocks + b) * lay.seg_bytes;
    const uint8_t *host = (const uint8_t *)src.chunks[s.c] + s.in_chunk * lay.seg_bytes;
    kv_copy_segment(dst, KV_DMA(host), lay.seg_bytes, t);
  }
}

/* Simulated model compute: keeps the KV stream busy for `ns` nanoseconds. One thread waits; a
 * real forward pass would keep every SM busy, but only the stream's timeline matters here. */
KV_DEVICE void kv_compute_thread(kv_thread_t t, int64_t ns) {
  if (t.block != 0 || t.thread != 0 || ns <= 0) return;
#ifdef __CUDACC__
  uint64_t start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while ((int64_t)(now - start) < ns);
#else
  struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
  while (nanosleep(&ts, &ts) != 0) {
  }
#endif
}

#endif /* KV_KERNELS_H */
