/* kv_pipeline.c: the pipelined store and retrieve loops, where the engine's synchronization
 * lives and where the two incident bugs are switched in. Chunks move in groups of cfg->group;
 * two staging slots let group g+1's gather run while group g is committed. */
#include <string.h>

#include "kv_engine_internal.h"
#include "pinguard.h"

/* The minimal wait for one transfer: its event (--sync=event), or the naive device-wide
 * synchronize (--sync=device). */
static int kv_wait_transfer(kv_engine_t *e, cudaEvent_t ev) {
  if (e->cfg->sync == KV_SYNC_DEVICE) return KV_CUDA(cudaDeviceSynchronize());
  return KV_CUDA(cudaEventSynchronize(ev));
}

/* Simulated model compute on the KV stream, then the transfer stream waits for it: the
 * cross-stream structure of a serving process. */
static int kv_after_compute(kv_engine_t *e) {
  return KV_CUDA(kv_compute(e->cfg->compute_us, e->kv_stream)) &&
         KV_CUDA(cudaEventRecord(e->ev_compute, e->kv_stream)) &&
         KV_CUDA(cudaStreamWaitEvent(e->xfer_stream, e->ev_compute, 0));
}

static void kv_group_span(const kv_engine_t *e, int g, int *first, int *n) {
  *first = g * e->cfg->group;
  *n = e->cfg->chunks - *first < e->cfg->group ? e->cfg->chunks - *first : e->cfg->group;
}

/* ---- store ---------------------------------------------------------------------------------- */

/* serialize: the CPU reads the pinned chunk into a byte string (pickle.dumps in the incident) and
 * sends the bytes. This memcpy is the read that races the gather when the wait is missing. */
/* noinline: reports and profiles should name this step, as they would pickle.dumps. */
__attribute__((noinline)) static int kv_commit_serialize(kv_engine_t *e, uint32_t id,
                                                         const uint8_t *chunk) {
  memcpy(e->sendbuf, chunk, e->chunk_bytes);
  if (kv_store_put_bytes(&e->store, id, e->sendbuf, e->chunk_bytes) == 0) return 1;
  fprintf(stderr, "kvxfer: sending chunk %u to the store failed\n", id);
  return 0;
}

/* shm: publish (offset, length, id); the store copies the bytes out of the shared segment. */
static int kv_commit_shm(kv_engine_t *e, uint32_t id, const uint8_t *chunk) {
  if (kv_store_put_shm(&e->store, id, (size_t)(chunk - e->shm), e->chunk_bytes) == 0) return 1;
  fprintf(stderr, "kvxfer: publishing chunk %u to the store failed\n", id);
  return 0;
}

static int kv_commit_group(kv_engine_t *e, int g) {
  int first, n;
  kv_group_span(e, g, &first, &n);
  /* The gather must be complete before the chunk's bytes are read. The shm transport always
   * waits (the incident's did too); --bug=store-no-sync drops the serialize transport's wait. */
  int no_sync = e->cfg->bug == KV_BUG_STORE_NO_SYNC && e->cfg->transport == KV_TRANSPORT_SERIALIZE;
  if (!no_sync && !kv_wait_transfer(e, e->ev_xfer[g & 1])) return 0;
  for (int i = 0; i < n; i++) {
    const uint8_t *chunk = kv_slot_chunk(e, g & 1, i);
    /* Opt-in annotation: tells pinguard (when preloaded) that these bytes are about to be read,
     * so it can check or wait without guard pages. A no-op otherwise. */
    if (e->cfg->annotate_commit) pinguard_commit(chunk, e->chunk_bytes);
    int ok = e->cfg->transport == KV_TRANSPORT_SHM
                 ? kv_commit_shm(e, (uint32_t)(first + i), chunk)
                 : kv_commit_serialize(e, (uint32_t)(first + i), chunk);
    if (!ok) return 0;
  }
  return 1;
}

int kv_store_all(kv_engine_t *e) {
  for (int g = 0; g < e->ngroups; g++) {
    int first, n;
    kv_group_span(e, g, &first, &n);
    void *chunks[KV_MAX_CHUNKS_PER_LAUNCH];
    for (int i = 0; i < n; i++) chunks[i] = kv_slot_chunk(e, g & 1, i);
    /* Slot g&1 was last used by group g-2, whose commit (a CPU read, or the store's copy for
     * shm, acknowledged) finished in an earlier iteration: it is free to be written again. */
    if (!kv_after_compute(e) ||
        !KV_CUDA(kv_gather(&e->x, e->cfg->xfer, chunks, first, n, e->xfer_stream)) ||
        !KV_CUDA(cudaEventRecord(e->ev_xfer[g & 1], e->xfer_stream)))
      return -1;
    /* Pipelining: commit the previous group while this group's gather is in flight. */
    if (g > 0 && !kv_commit_group(e, g - 1)) return -1;
  }
  if (e->ngroups > 0 && !kv_commit_group(e, e->ngroups - 1)) return -1;
  if (kv_store_flush(&e->store) != 0) {
    fprintf(stderr, "kvxfer: the store process did not answer\n");
    return -1;
  }
  return 0;
}

/* ---- retrieve ------------------------------------------------------------------------------- */

__attribute__((noinline)) void kv_pin_chunk(void *pinned_dst, const void *pageable_src,
                                            size_t n) {
  memcpy(pinned_dst, pageable_src, n);
  __asm__ volatile("" ::: "memory"); /* no tail call: this frame must appear in stacks */
}

static void kv_release_group(kv_engine_t *e, void **temps, int n) {
  for (int i = 0; i < n; i++) {
    kv_pcache_release(e->pcache, temps[i]);
    temps[i] = NULL;
  }
}

/* Fetch each chunk of group g from the store into pageable memory, then pin it into a temporary
 * from the caching allocator. */
static int kv_fetch_and_pin(kv_engine_t *e, int first, int n, void **temps) {
  for (int i = 0; i < n; i++) {
    size_t len = 0;
    if (kv_store_get(&e->store, (uint32_t)(first + i), e->fetchbuf, e->chunk_bytes, &len) != 0 ||
        len != e->chunk_bytes) {
      fprintf(stderr, "kvxfer: fetching chunk %d from the store failed\n", first + i);
      return 0;
    }
    temps[i] = kv_pcache_alloc(e->pcache, e->chunk_bytes);
    if (!temps[i]) {
      fprintf(stderr, "kvxfer: pinned allocation of %zu bytes failed\n", e->chunk_bytes);
      return 0;
    }
    kv_pin_chunk(temps[i], e->fetchbuf, e->chunk_bytes);
  }
  return 1;
}

int kv_retrieve_all(kv_engine_t *e) {
  void *temps[2][KV_MAX_CHUNKS_PER_LAUNCH] = {{NULL}};
  int held[2] = {0, 0}; /* temporaries still held by slot 0 / 1 */
  int early = e->cfg->bug == KV_BUG_RETRIEVE_EARLY_RELEASE;
  for (int g = 0; g < e->ngroups; g++) {
    int first, n, s = g & 1;
    kv_group_span(e, g, &first, &n);
    /* While group g-1's scatter is in flight, group g is fetched and pinned. */
    if (!kv_fetch_and_pin(e, first, n, temps[s])) return -1;
    held[s] = n;
    if (!kv_after_compute(e) ||
        !KV_CUDA(kv_scatter(&e->x, e->cfg->xfer, temps[s], first, n, e->xfer_stream)) ||
        !KV_CUDA(cudaEventRecord(e->ev_xfer[s], e->xfer_stream)))
      return -1;
    if (early) {
      /* The incident's bug: the scatter only read the temporaries through raw pointers, so
       * nothing keeps them alive; back to the allocator they go, and the next pin overwrites
       * them while the scatter has yet to read them. */
      kv_release_group(e, temps[s], held[s]);
      held[s] = 0;
    } else if (g > 0) {
      /* Recycle group g-1's temporaries only once its scatter has completed. */
      if (!kv_wait_transfer(e, e->ev_xfer[s ^ 1])) return -1;
      kv_release_group(e, temps[s ^ 1], held[s ^ 1]);
      held[s ^ 1] = 0;
    }
  }
  if (e->ngroups > 0 && held[(e->ngroups - 1) & 1]) {
    int s = (e->ngroups - 1) & 1;
    if (!kv_wait_transfer(e, e->ev_xfer[s])) return -1;
    kv_release_group(e, temps[s], held[s]);
  }
  return 0;
}
