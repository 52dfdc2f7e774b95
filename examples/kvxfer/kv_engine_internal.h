/* kv_engine_internal.h: the engine's state, shared by its setup (kv_engine.c) and its store and
 * retrieve pipelines (kv_pipeline.c). Not for users of the library. */
#ifndef KV_ENGINE_INTERNAL_H
#define KV_ENGINE_INTERNAL_H

#include <stdio.h>

#include <cuda_runtime_api.h>

#include "kv_engine.h"
#include "kv_pinned_cache.h"
#include "kv_store.h"

typedef struct kv_engine {
  const kv_config_t *cfg;
  kv_xfer_ctx_t x;
  size_t chunk_bytes;
  int ngroups;
  int32_t *ids_host, *ids_dev;
  cudaStream_t kv_stream;   /* model compute */
  cudaStream_t xfer_stream; /* every gather and scatter */
  cudaEvent_t ev_compute;   /* compute -> transfer ordering */
  cudaEvent_t ev_xfer[2];   /* the transfer of the group in slot 0 / 1 */
  kv_store_t store;
  int store_started;
  /* Store staging: 2 slots (double buffering) x group chunks. Each chunk is its own pinned
   * region (one cudaHostAlloc, or one cudaHostRegister'ed piece of the shm segment), so a kernel's
   * raw pointer into one slot can never be taken for an access to the other slot. */
  uint8_t *staging[2][KV_MAX_CHUNKS_PER_LAUNCH];
  int staging_pinned[2][KV_MAX_CHUNKS_PER_LAUNCH];
  uint8_t *shm; /* shm transport: the segment holding the staging chunks */
  size_t shm_len;
  uint8_t *sendbuf;  /* serialize: the pageable "pickled" copy of a chunk */
  uint8_t *fetchbuf; /* retrieve: pageable landing buffer for one fetched chunk */
  kv_pcache_t *pcache;
  int pcache_shared; /* several engines' allocator: not this engine's to destroy */
} kv_engine_t;

/* Prints "kvxfer: <what> failed: <error name>" and returns 0 unless err is cudaSuccess. */
int kv_cuda_ok(cudaError_t err, const char *what);
#define KV_CUDA(call) kv_cuda_ok((call), #call)

/* Chunk i of staging slot s. */
static inline uint8_t *kv_slot_chunk(const kv_engine_t *e, int s, int i) {
  return e->staging[s][i];
}

/* Store every chunk / retrieve every chunk. 0 or -1 (printed). */
int kv_store_all(kv_engine_t *e);
int kv_retrieve_all(kv_engine_t *e);

#endif /* KV_ENGINE_INTERNAL_H */
