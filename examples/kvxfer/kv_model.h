/* kv_model.h: model geometries (how big a block and a chunk are), the paged block table, and the
 * deterministic per-(layer, block) pattern the engine stores and later verifies. */
#ifndef KV_MODEL_H
#define KV_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "kv_params.h"

typedef struct kv_model {
  const char *name;
  int layers, kv_heads, head_dim, block_tokens, blocks_per_chunk;
  int default_chunks;
} kv_model_t;

/* The named model, or NULL. Known: "small" (the CI default) and "llama3-8b". */
const kv_model_t *kv_model_find(const char *name);
/* A comma-separated list of the known names, for messages. */
const char *kv_model_names(void);

/* Bytes of one block of one layer's K or V (one "segment"). */
int64_t kv_model_seg_bytes(const kv_model_t *m);
/* The kernel layout of a paged cache holding num_blocks blocks. */
kv_layout_t kv_model_layout(const kv_model_t *m, int64_t num_blocks);
/* Bytes of one chunk: layers * 2 * blocks_per_chunk segments. */
size_t kv_chunk_bytes(const kv_layout_t *lay);

/* Fills ids[0..n) with a fixed permutation of 0..n-1, so a chunk's blocks are scattered over the
 * paged cache as a serving engine's are. */
void kv_block_table(int32_t *ids, int64_t n);

/* The pattern of segment (layer, k_or_v, block): fills seg_bytes bytes at dst. */
void kv_pattern_fill(void *dst, int64_t seg_bytes, int layer, int k_or_v, int64_t block);
/* Non-zero when src holds exactly that segment's pattern. */
int kv_pattern_matches(const void *src, int64_t seg_bytes, int layer, int k_or_v, int64_t block);

#endif /* KV_MODEL_H */
