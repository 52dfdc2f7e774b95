/* kv_engine.h: the transfer engine as a library call: fill the paged KV cache with a pattern,
 * store every chunk (gather + commit to the store process), clear the cache, retrieve every
 * chunk (fetch + pin + scatter), and count the blocks that came back wrong. */
#ifndef KV_ENGINE_H
#define KV_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "kv_model.h"
#include "kv_xfer.h"

typedef enum { KV_TRANSPORT_SERIALIZE, KV_TRANSPORT_SHM } kv_transport_t;
typedef enum { KV_SYNC_EVENT, KV_SYNC_DEVICE } kv_sync_t;
typedef enum { KV_BUG_NONE, KV_BUG_STORE_NO_SYNC, KV_BUG_RETRIEVE_EARLY_RELEASE } kv_bug_t;

typedef struct kv_config {
  const kv_model_t *model;
  int chunks; /* chunks stored and retrieved; blocks = chunks * blocks_per_chunk */
  int group;  /* chunks per transfer (one kernel launch covers up to 4) */
  kv_xfer_t xfer;
  kv_transport_t transport;
  kv_sync_t sync;
  kv_bug_t bug;
  int compute_us;      /* simulated model compute before each transfer, on the KV stream */
  int annotate_commit; /* call pinguard_commit() on a staging chunk before committing it */
  int no_release_annotation; /* the pinned allocator does not call pinguard_release */
  int devices;         /* engines, one per device and thread, sharing one pinned allocator */
} kv_config_t;

typedef struct kv_result {
  int64_t blocks, corrupted;
  size_t bytes;               /* bytes stored (and retrieved) */
  double store_s, retrieve_s; /* wall time of each phase */
  size_t pin_host_allocs, pin_reuses;
} kv_result_t;

/* The defaults: model "small", its default chunk count, group 4, kernel, serialize, event. */
void kv_config_default(kv_config_t *cfg);

/* Runs store + retrieve + verify. Forks the store process first, so call it before any other
 * CUDA call in the process. With cfg->devices = N > 1, N engines run at once, engine k on its
 * own thread with device k current, each with its own cache, streams, staging and store process,
 * all of them sharing one caching pinned allocator; res then sums their blocks, corruptions and
 * bytes, and each phase's time runs from all engines starting it to the last one finishing. Returns 0 when it ran (res filled, corruption or not), -1 on an
 * error (already printed to stderr). */
int kv_run(const kv_config_t *cfg, kv_result_t *res);

/* The "pin copy" of the retrieve path: pageable chunk -> pinned temporary, a plain CPU memcpy,
 * as pin_memory() does. */
void kv_pin_chunk(void *pinned_dst, const void *pageable_src, size_t n);

#endif /* KV_ENGINE_H */
