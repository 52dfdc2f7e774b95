/* kv_pinned_cache.h: a caching pinned-host allocator in the manner of PyTorch's
 * CachingHostAllocator: power-of-two size classes, blocks from cudaHostAlloc, and a released
 * block handed to the next request of its class with no CUDA call. It knows nothing of the GPU
 * work that may still use a block: deciding when to release is the caller's job. */
#ifndef KV_PINNED_CACHE_H
#define KV_PINNED_CACHE_H

#include <stddef.h>

typedef struct kv_pcache kv_pcache_t;

typedef struct kv_pcache_stats {
  size_t host_allocs; /* blocks obtained from cudaHostAlloc */
  size_t reuses;      /* requests served from a released block, with no CUDA call */
  size_t in_use;      /* blocks currently handed out */
  size_t bytes;       /* pinned bytes held, in use or cached */
} kv_pcache_stats_t;

/* The smallest class; requests round up to a power of two no smaller than this. */
#define KV_PCACHE_MIN_CLASS 4096u

kv_pcache_t *kv_pcache_create(void);
/* Whether release calls pinguard_release (default on). Off shows what guard pages catch in an
 * allocator nobody annotated. */
void kv_pcache_set_release_annotation(kv_pcache_t *c, int on);
/* A pinned block of at least n bytes (its class size), or NULL if cudaHostAlloc fails. */
void *kv_pcache_alloc(kv_pcache_t *c, size_t n);
/* The size class (block size) a request of n bytes gets. */
size_t kv_pcache_class_size(size_t n);
/* Returns a block to its class's free list; announces the recycling with pinguard_release(). */
void kv_pcache_release(kv_pcache_t *c, void *p);
kv_pcache_stats_t kv_pcache_stats(kv_pcache_t *c);
/* cudaFreeHost()s every block; the caller makes sure no GPU work still uses one. */
void kv_pcache_destroy(kv_pcache_t *c);

#endif /* KV_PINNED_CACHE_H */
