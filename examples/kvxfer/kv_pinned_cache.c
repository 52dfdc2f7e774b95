/* kv_pinned_cache.c: the caching pinned allocator. Blocks live in one array; each class keeps a
 * LIFO free list, so the most recently released block is the next one handed out, which is what
 * makes an early release show up at once as an overwrite. */
#include "kv_pinned_cache.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "pinguard.h"

#define KV_PCACHE_CLASSES 48 /* 4 KiB << 47 is far beyond any host */

typedef struct kv_pblock {
  void *ptr;
  size_t size;
  int in_use;
  struct kv_pblock *next_free;
} kv_pblock_t;

struct kv_pcache {
  pthread_mutex_t lock;
  kv_pblock_t **blocks; /* every block ever allocated, for lookup and destroy */
  size_t nblocks, cap;
  kv_pblock_t *free_list[KV_PCACHE_CLASSES];
  kv_pcache_stats_t stats;
  int annotate_release; /* call pinguard_release on the free path (on by default) */
};

static int kv_class_index(size_t size) {
  int i = 0;
  for (size_t s = KV_PCACHE_MIN_CLASS; s < size; s <<= 1) i++;
  return i;
}

size_t kv_pcache_class_size(size_t n) {
  size_t s = KV_PCACHE_MIN_CLASS;
  while (s < n) s <<= 1;
  return s;
}

kv_pcache_t *kv_pcache_create(void) {
  kv_pcache_t *c = calloc(1, sizeof(*c));
  if (c) {
    pthread_mutex_init(&c->lock, NULL);
    c->annotate_release = 1;
  }
  return c;
}

void kv_pcache_set_release_annotation(kv_pcache_t *c, int on) { c->annotate_release = on; }

static kv_pblock_t *kv_find_block(kv_pcache_t *c, const void *p) {
  for (size_t i = 0; i < c->nblocks; i++)
    if (c->blocks[i]->ptr == p) return c->blocks[i];
  return NULL;
}

void *kv_pcache_alloc(kv_pcache_t *c, size_t n) {
  size_t size = kv_pcache_class_size(n ? n : 1);
  int cls = kv_class_index(size);
  if (cls >= KV_PCACHE_CLASSES) return NULL;
  pthread_mutex_lock(&c->lock);
  kv_pblock_t *b = c->free_list[cls];
  if (b) { /* reuse: no CUDA call, exactly as the caching allocator does */
    c->free_list[cls] = b->next_free;
    c->stats.reuses++;
  } else {
    void *p = NULL;
    if (c->nblocks == c->cap) {
      size_t cap = c->cap ? 2 * c->cap : 16;
      kv_pblock_t **nb = realloc(c->blocks, cap * sizeof(*nb));
      if (!nb) goto fail;
      c->blocks = nb;
      c->cap = cap;
    }
    b = calloc(1, sizeof(*b));
    if (!b) goto fail;
    /* Portable: with several engines (devices) sharing the allocator, any device may copy to or
     * from a block, whichever device allocated it. */
    if (cudaHostAlloc(&p, size, cudaHostAllocPortable) != cudaSuccess) {
      free(b);
      goto fail;
    }
    b->ptr = p;
    b->size = size;
    c->blocks[c->nblocks++] = b;
    c->stats.host_allocs++;
    c->stats.bytes += size;
  }
  b->in_use = 1;
  b->next_free = NULL;
  c->stats.in_use++;
  pthread_mutex_unlock(&c->lock);
  return b->ptr;
fail:
  pthread_mutex_unlock(&c->lock);
  return NULL;
}

void kv_pcache_release(kv_pcache_t *c, void *p) {
  if (!p) return;
  pthread_mutex_lock(&c->lock);
  kv_pblock_t *b = kv_find_block(c, p);
  if (!b || !b->in_use) { /* a foreign or double release would corrupt the free list */
    pthread_mutex_unlock(&c->lock);
    abort();
  }
  b->in_use = 0;
  c->stats.in_use--;
  pthread_mutex_unlock(&c->lock);
  /* The block is about to become someone else's: pinguard (when preloaded) checks, and in
   * enforce mode waits for, any GPU access still in flight on it. Outside our lock, since it may
   * wait for the GPU. */
  if (c->annotate_release) pinguard_release(b->ptr, b->size);
  pthread_mutex_lock(&c->lock);
  int cls = kv_class_index(b->size);
  b->next_free = c->free_list[cls];
  c->free_list[cls] = b;
  pthread_mutex_unlock(&c->lock);
}

kv_pcache_stats_t kv_pcache_stats(kv_pcache_t *c) {
  pthread_mutex_lock(&c->lock);
  kv_pcache_stats_t s = c->stats;
  pthread_mutex_unlock(&c->lock);
  return s;
}

void kv_pcache_destroy(kv_pcache_t *c) {
  if (!c) return;
  for (size_t i = 0; i < c->nblocks; i++) {
    cudaFreeHost(c->blocks[i]->ptr);
    free(c->blocks[i]);
  }
  free(c->blocks);
  pthread_mutex_destroy(&c->lock);
  free(c);
}
