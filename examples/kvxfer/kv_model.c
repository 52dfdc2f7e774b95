/* kv_model.c: model geometries, the block table and the verification pattern. */
#include "kv_model.h"

#include <string.h>

/* small: 4 layers x 2 KV heads x head_dim 64 -> 4 KiB segments, 32 KiB blocks, 512 KiB chunks.
 * llama3-8b: 32 layers x 8 KV heads x head_dim 128, bf16 -> 32 KiB segments, 2 MiB blocks,
 * 32 MiB chunks. */
static const kv_model_t kv_models[] = {
    {"small", 4, 2, 64, 16, 16, 16},
    {"llama3-8b", 32, 8, 128, 16, 16, 16},
};

const kv_model_t *kv_model_find(const char *name) {
  for (size_t i = 0; i < sizeof(kv_models) / sizeof(kv_models[0]); i++)
    if (strcmp(kv_models[i].name, name) == 0) return &kv_models[i];
  return NULL;
}

const char *kv_model_names(void) { return "small, llama3-8b"; }

int64_t kv_model_seg_bytes(const kv_model_t *m) {
  return (int64_t)m->block_tokens * m->kv_heads * m->head_dim * 2;
}

kv_layout_t kv_model_layout(const kv_model_t *m, int64_t num_blocks) {
  kv_layout_t lay = {m->layers, m->blocks_per_chunk, num_blocks, kv_model_seg_bytes(m)};
  return lay;
}

size_t kv_chunk_bytes(const kv_layout_t *lay) {
  return (size_t)lay->layers * 2 * (size_t)lay->blocks_per_chunk * (size_t)lay->seg_bytes;
}

/* A small fixed generator: the same table on every run and every build. */
static uint64_t kv_splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void kv_block_table(int32_t *ids, int64_t n) {
  uint64_t s = 42;
  for (int64_t i = 0; i < n; i++) ids[i] = (int32_t)i;
  for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
    int64_t j = (int64_t)(kv_splitmix(&s) % (uint64_t)(i + 1));
    int32_t t = ids[i];
    ids[i] = ids[j];
    ids[j] = t;
  }
}

/* Word w of a segment: a per-segment seed plus w times an odd constant, so every word of every
 * segment differs from its neighbours and from zero-filled memory. */
static uint64_t kv_seg_seed(int layer, int k_or_v, int64_t block) {
  uint64_t s = ((uint64_t)layer << 48) ^ ((uint64_t)k_or_v << 40) ^ (uint64_t)block;
  return kv_splitmix(&s) | 1;
}

void kv_pattern_fill(void *dst, int64_t seg_bytes, int layer, int k_or_v, int64_t block) {
  uint64_t seed = kv_seg_seed(layer, k_or_v, block), *w = dst;
  for (int64_t i = 0; i < seg_bytes / 8; i++) w[i] = seed + (uint64_t)i * 0xD6E8FEB86659FD93ull;
}

int kv_pattern_matches(const void *src, int64_t seg_bytes, int layer, int k_or_v, int64_t block) {
  uint64_t seed = kv_seg_seed(layer, k_or_v, block);
  const uint64_t *w = src;
  for (int64_t i = 0; i < seg_bytes / 8; i++)
    if (w[i] != seed + (uint64_t)i * 0xD6E8FEB86659FD93ull) return 0;
  return 1;
}
