/* kv_store.c: the store process and its protocol. Every message is a fixed header, optionally
 * followed by payload bytes; requests that need an answer get a header back (op KV_OP_ACK). */
#include "kv_store.h"

#include "kv_bigbuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

enum { KV_OP_PUT_BYTES = 1, KV_OP_PUT_SHM, KV_OP_GET, KV_OP_FLUSH, KV_OP_QUIT, KV_OP_ACK };

typedef struct kv_msg {
  uint32_t op, id;
  uint64_t off, len; /* len: payload bytes that follow (PUT_BYTES, ACK of GET), or shm length */
} kv_msg_t;

static int kv_write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int kv_read_all(int fd, void *buf, size_t n) {
  char *p = buf;
  while (n > 0) {
    ssize_t r = recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

/* ---- the child ---------------------------------------------------------------------------- */

typedef struct kv_stored {
  void *bytes;
  size_t len;
} kv_stored_t;

static int kv_store_put(kv_stored_t *slot, size_t len) {
  if (slot->bytes && slot->len == len) return 0;
  kv_big_free(slot->bytes, slot->len);
  slot->bytes = kv_big_alloc(len);
  slot->len = slot->bytes ? len : 0;
  return slot->bytes ? 0 : -1;
}

static int kv_store_serve(int fd, const char *shm, size_t shm_len, int max_chunks) {
  kv_stored_t *chunks = calloc((size_t)max_chunks, sizeof(*chunks));
  int rc = chunks ? 0 : 1;
  kv_msg_t m;
  while (rc == 0 && kv_read_all(fd, &m, sizeof(m)) == 0) {
    kv_msg_t ack = {KV_OP_ACK, m.id, 0, 0};
    if (m.op == KV_OP_QUIT) break;
    if ((m.op == KV_OP_PUT_BYTES || m.op == KV_OP_PUT_SHM || m.op == KV_OP_GET) &&
        m.id >= (uint32_t)max_chunks) {
      rc = 1;
      break;
    }
    switch (m.op) {
    case KV_OP_PUT_BYTES:
      if (kv_store_put(&chunks[m.id], m.len) || kv_read_all(fd, chunks[m.id].bytes, m.len)) rc = 1;
      break;
    case KV_OP_PUT_SHM: /* the bytes are in the shared segment: copy them out, then say so */
      if (m.off > shm_len || m.len > shm_len - m.off || kv_store_put(&chunks[m.id], m.len)) {
        rc = 1;
        break;
      }
      memcpy(chunks[m.id].bytes, shm + m.off, m.len);
      if (kv_write_all(fd, &ack, sizeof(ack))) rc = 1;
      break;
    case KV_OP_GET:
      ack.len = chunks[m.id].len;
      if (kv_write_all(fd, &ack, sizeof(ack)) ||
          (ack.len && kv_write_all(fd, chunks[m.id].bytes, ack.len)))
        rc = 1;
      break;
    case KV_OP_FLUSH:
      if (kv_write_all(fd, &ack, sizeof(ack))) rc = 1;
      break;
    default:
      rc = 1;
    }
  }
  for (int i = 0; chunks && i < max_chunks; i++) kv_big_free(chunks[i].bytes, chunks[i].len);
  free(chunks);
  return rc;
}

int kv_store_start(kv_store_t *s, const void *shm, size_t shm_len, int max_chunks) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return -1;
  /* Large socket buffers: a chunk crosses in a few big writes instead of ping-ponging between
   * the two processes every couple of hundred KiB. Advice only; the defaults also work. */
  int sz = 4 << 20;
  for (int i = 0; i < 2; i++) {
    setsockopt(sv[i], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
    setsockopt(sv[i], SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
  }
  pid_t pid = fork();
  if (pid < 0) {
    close(sv[0]);
    close(sv[1]);
    return -1;
  }
  if (pid == 0) {
    close(sv[0]);
    /* _exit: the parent's atexit handlers and stdio buffers are not the child's to run. */
    _exit(kv_store_serve(sv[1], shm, shm_len, max_chunks));
  }
  close(sv[1]);
  s->pid = pid;
  s->fd = sv[0];
  return 0;
}

/* ---- the parent's side -------------------------------------------------------------------- */

static int kv_expect_ack(kv_store_t *s, uint32_t id, kv_msg_t *out) {
  kv_msg_t a;
  if (kv_read_all(s->fd, &a, sizeof(a)) || a.op != KV_OP_ACK || a.id != id) return -1;
  if (out) *out = a;
  return 0;
}

int kv_store_put_bytes(kv_store_t *s, uint32_t id, const void *bytes, size_t n) {
  kv_msg_t m = {KV_OP_PUT_BYTES, id, 0, n};
  return kv_write_all(s->fd, &m, sizeof(m)) || kv_write_all(s->fd, bytes, n) ? -1 : 0;
}

int kv_store_put_shm(kv_store_t *s, uint32_t id, size_t off, size_t n) {
  kv_msg_t m = {KV_OP_PUT_SHM, id, off, n};
  return kv_write_all(s->fd, &m, sizeof(m)) || kv_expect_ack(s, id, NULL) ? -1 : 0;
}

int kv_store_get(kv_store_t *s, uint32_t id, void *dst, size_t cap, size_t *n) {
  kv_msg_t m = {KV_OP_GET, id, 0, 0}, a;
  if (kv_write_all(s->fd, &m, sizeof(m)) || kv_expect_ack(s, id, &a) || a.len > cap) return -1;
  if (kv_read_all(s->fd, dst, a.len)) return -1;
  *n = a.len;
  return 0;
}

int kv_store_flush(kv_store_t *s) {
  kv_msg_t m = {KV_OP_FLUSH, 0, 0, 0};
  return kv_write_all(s->fd, &m, sizeof(m)) || kv_expect_ack(s, 0, NULL) ? -1 : 0;
}

int kv_store_stop(kv_store_t *s) {
  kv_msg_t m = {KV_OP_QUIT, 0, 0, 0};
  int status = 0, rc = kv_write_all(s->fd, &m, sizeof(m));
  close(s->fd);
  s->fd = -1;
  while (waitpid(s->pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}
