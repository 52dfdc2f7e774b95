/* kv_store.h: the store process, a forked child that keeps committed chunks in its own memory,
 * and the parent's side of its socket protocol. The child never calls CUDA, so start it before
 * the parent's first CUDA call. */
#ifndef KV_STORE_H
#define KV_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct kv_store {
  pid_t pid;
  int fd; /* parent's end of the socketpair */
} kv_store_t;

/* Forks the store. shm/shm_len: a MAP_SHARED segment the child inherits, from which
 * kv_store_put_shm() copies (NULL/0 when the shm transport is not used). 0 or -1 (errno set). */
int kv_store_start(kv_store_t *s, const void *shm, size_t shm_len, int max_chunks);
/* serialize transport: sends n bytes as chunk `id`; the store keeps its own copy. */
int kv_store_put_bytes(kv_store_t *s, uint32_t id, const void *bytes, size_t n);
/* shm transport: publishes (offset, length, id); returns once the store has copied the bytes out
 * of the shared segment, so the caller may reuse that part of it. */
int kv_store_put_shm(kv_store_t *s, uint32_t id, size_t off, size_t n);
/* Fetches chunk `id` into dst (capacity cap); *n gets its length. */
int kv_store_get(kv_store_t *s, uint32_t id, void *dst, size_t cap, size_t *n);
/* Round trip: returns when the store has taken in everything sent before. */
int kv_store_flush(kv_store_t *s);
/* Asks the store to exit and reaps it. 0 when it exited cleanly. */
int kv_store_stop(kv_store_t *s);

#endif /* KV_STORE_H */
