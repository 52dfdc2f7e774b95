/* test_model.c: the block table and the verification pattern, on which every "N of M blocks
 * corrupted" verdict rests: the table must be a permutation, and the pattern check must catch a
 * single wrong byte and a segment that belongs elsewhere. */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "kv_model.h"

Test(kvxfer_model, block_table_is_a_scattered_permutation) {
  enum { N = 4096 };
  int32_t *ids = malloc(N * sizeof(*ids));
  char *seen = calloc(N, 1);
  cr_assert(ids && seen);
  kv_block_table(ids, N);
  int in_place = 0;
  for (int i = 0; i < N; i++) {
    cr_assert(ids[i] >= 0 && ids[i] < N);
    cr_assert_eq(seen[ids[i]], 0, "block %d appears twice", ids[i]);
    seen[ids[i]] = 1;
    in_place += ids[i] == i;
  }
  cr_expect_lt(in_place, N / 100, "the table should scatter the blocks");
  free(ids);
  free(seen);
}

Test(kvxfer_model, block_table_is_the_same_every_time) {
  int32_t a[256], b[256];
  kv_block_table(a, 256);
  kv_block_table(b, 256);
  cr_expect_eq(memcmp(a, b, sizeof(a)), 0);
}

Test(kvxfer_model, pattern_check_catches_one_wrong_byte) {
  enum { SEG = 4096 };
  uint8_t *seg = malloc(SEG);
  cr_assert_not_null(seg);
  kv_pattern_fill(seg, SEG, 3, 1, 77);
  cr_expect(kv_pattern_matches(seg, SEG, 3, 1, 77));
  seg[SEG - 1] ^= 0x01;
  cr_expect_not(kv_pattern_matches(seg, SEG, 3, 1, 77));
  free(seg);
}

Test(kvxfer_model, pattern_check_rejects_other_segments_and_zeros) {
  enum { SEG = 4096 };
  uint8_t *seg = malloc(SEG);
  cr_assert_not_null(seg);
  kv_pattern_fill(seg, SEG, 2, 0, 10);
  cr_expect_not(kv_pattern_matches(seg, SEG, 2, 0, 11), "another block");
  cr_expect_not(kv_pattern_matches(seg, SEG, 2, 1, 10), "the V of the same block");
  cr_expect_not(kv_pattern_matches(seg, SEG, 3, 0, 10), "another layer");
  memset(seg, 0, SEG);
  cr_expect_not(kv_pattern_matches(seg, SEG, 2, 0, 10), "a cleared segment");
  free(seg);
}

Test(kvxfer_model, llama3_8b_sizes) {
  const kv_model_t *m = kv_model_find("llama3-8b");
  cr_assert_not_null(m);
  kv_layout_t lay = kv_model_layout(m, 16);
  cr_expect_eq(kv_model_seg_bytes(m) * m->layers * 2, 2 << 20, "2 MiB per block");
  cr_expect_eq(kv_chunk_bytes(&lay), 32u << 20, "32 MiB per chunk");
  cr_expect_eq(m->blocks_per_chunk * m->block_tokens, 256, "256 tokens per chunk");
  cr_expect_null(kv_model_find("llama3-70b"));
}
