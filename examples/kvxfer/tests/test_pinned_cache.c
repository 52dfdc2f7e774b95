/* test_pinned_cache.c: the caching pinned allocator on its own: size classes, reuse with no CUDA
 * call, no double hand-out, and the pinguard_release() announcement on its free path. */
#include <criterion/criterion.h>
#include <signal.h>

#include <cuda_runtime_api.h>

#include "kv_pinned_cache.h"
#include "pinguard.h"

/* A strong definition replaces the header's weak reference, standing in for the shim: it records
 * what the allocator announced. The parentheses keep the header's guard macro from expanding. */
static const void *released_ptr;
static size_t released_len;
static int released_calls;
int(pinguard_release)(const void *p, size_t n) {
  released_ptr = p;
  released_len = n;
  released_calls++;
  return 0;
}

static kv_pcache_t *cache;
static void setup(void) {
  released_ptr = NULL;
  released_len = 0;
  released_calls = 0;
  cache = kv_pcache_create();
  cr_assert_not_null(cache);
}
static void teardown(void) { kv_pcache_destroy(cache); }

TestSuite(kvxfer_pinned_cache, .init = setup, .fini = teardown);

Test(kvxfer_pinned_cache, sizes_round_up_to_power_of_two_classes) {
  cr_expect_eq(kv_pcache_class_size(1), KV_PCACHE_MIN_CLASS);
  cr_expect_eq(kv_pcache_class_size(4096), 4096);
  cr_expect_eq(kv_pcache_class_size(4097), 8192);
  cr_expect_eq(kv_pcache_class_size((32u << 20) - 1), 32u << 20);
  cr_expect_eq(kv_pcache_class_size((32u << 20) + 1), 64u << 20);
}

Test(kvxfer_pinned_cache, blocks_are_pinned) {
  void *p = kv_pcache_alloc(cache, 10000);
  cr_assert_not_null(p);
  struct cudaPointerAttributes a;
  cr_assert_eq(cudaPointerGetAttributes(&a, p), cudaSuccess);
  cr_expect_eq(a.type, cudaMemoryTypeHost);
  kv_pcache_release(cache, p);
}

Test(kvxfer_pinned_cache, release_then_alloc_reuses_the_block_without_cuda) {
  void *a = kv_pcache_alloc(cache, 5000);
  cr_assert_not_null(a);
  kv_pcache_release(cache, a);
  /* Any request in the same class (8 KiB) gets the very same block back. */
  void *b = kv_pcache_alloc(cache, 8000);
  cr_expect_eq(b, a);
  kv_pcache_stats_t s = kv_pcache_stats(cache);
  cr_expect_eq(s.host_allocs, 1);
  cr_expect_eq(s.reuses, 1);
  cr_expect_eq(s.bytes, 8192);
  kv_pcache_release(cache, b);
}

Test(kvxfer_pinned_cache, held_blocks_are_never_handed_out_twice) {
  void *a = kv_pcache_alloc(cache, 4096), *b = kv_pcache_alloc(cache, 4096);
  cr_assert(a && b);
  cr_expect_neq(a, b);
  kv_pcache_stats_t s = kv_pcache_stats(cache);
  cr_expect_eq(s.host_allocs, 2);
  cr_expect_eq(s.in_use, 2);
  kv_pcache_release(cache, a);
  kv_pcache_release(cache, b);
  cr_expect_eq(kv_pcache_stats(cache).in_use, 0);
}

Test(kvxfer_pinned_cache, classes_do_not_mix) {
  void *small = kv_pcache_alloc(cache, 4096);
  kv_pcache_release(cache, small);
  void *big = kv_pcache_alloc(cache, 1 << 20);
  cr_expect_neq(big, small);
  cr_expect_eq(kv_pcache_stats(cache).host_allocs, 2);
  kv_pcache_release(cache, big);
}

Test(kvxfer_pinned_cache, free_path_announces_the_whole_block) {
  void *p = kv_pcache_alloc(cache, 3000);
  cr_assert_not_null(p);
  cr_expect_eq(released_calls, 0);
  kv_pcache_release(cache, p);
  cr_expect_eq(released_calls, 1);
  cr_expect_eq(released_ptr, p);
  cr_expect_eq(released_len, 4096);
}

Test(kvxfer_pinned_cache, double_release_aborts, .signal = SIGABRT) {
  void *p = kv_pcache_alloc(cache, 4096);
  kv_pcache_release(cache, p);
  kv_pcache_release(cache, p);
}
