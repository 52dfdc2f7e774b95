/* sc_uring.c: the DMA engine for registered private memory (sc_uring.h), on raw io_uring system
 * calls (no liburing). One ring, a sparse table of fixed-buffer slots, and a staging memfd of
 * SC_STAGE bytes through which bytes pass between the pinned pages and ordinary memory. */
#include "sc_uring.h"

#include "sc_internal.h"

#include <errno.h>
#include <linux/io_uring.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define SC_SLOTS 16384u         /* fixed-buffer slots at most (io_uring's limit since 5.13) */
#define SC_SLOT_BYTES (1u << 30) /* io_uring's largest fixed buffer */
#define SC_STAGE (1u << 20)     /* staging buffer */

static struct {
  pthread_once_t once;
  const char *why; /* set when the engine is unavailable */
  int fd;
  unsigned *sq_head, *sq_tail, *sq_mask, *sq_array;
  unsigned *cq_head, *cq_tail, *cq_mask;
  struct io_uring_sqe *sqes;
  struct io_uring_cqe *cqes;
  int stage_fd;
  char *stage;
  pthread_mutex_t lock; /* the ring, the staging buffer and the slot table */
  unsigned slots; /* in the table */
  unsigned char used[SC_SLOTS];
} U = {.once = PTHREAD_ONCE_INIT, .fd = -1, .stage_fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER};

static long sc_ring_register(unsigned op, void *arg, unsigned nr) {
  return syscall(__NR_io_uring_register, U.fd, op, arg, nr);
}

/* An empty table of slots: sparse registration (Linux 5.19), else empty iovecs (accepted since
 * 5.13); SC_SLOTS slots, or 1024 where the kernel allows no more. */
static bool sc_ring_table(void) {
  static struct iovec empty[SC_SLOTS];
  static const unsigned sizes[] = {SC_SLOTS, 1024};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    struct io_uring_rsrc_register rr = {.nr = sizes[i], .flags = IORING_RSRC_REGISTER_SPARSE};
    if (sc_ring_register(IORING_REGISTER_BUFFERS2, &rr, sizeof rr) == 0 ||
        sc_ring_register(IORING_REGISTER_BUFFERS, empty, sizes[i]) == 0) {
      U.slots = sizes[i];
      return true;
    }
  }
  return false;
}

static bool sc_ring_map(const struct io_uring_params *p) {
  size_t sq_len = p->sq_off.array + p->sq_entries * sizeof(unsigned);
  size_t cq_len = p->cq_off.cqes + p->cq_entries * sizeof(struct io_uring_cqe);
  bool single = p->features & IORING_FEAT_SINGLE_MMAP;
  if (single) sq_len = cq_len = sq_len > cq_len ? sq_len : cq_len;
  char *sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, U.fd,
                  IORING_OFF_SQ_RING);
  if (sq == MAP_FAILED) return false;
  char *cq = single ? sq
                    : mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, U.fd,
                           IORING_OFF_CQ_RING);
  if (cq == MAP_FAILED) return false;
  void *sqes = mmap(NULL, p->sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_POPULATE, U.fd, IORING_OFF_SQES);
  if (sqes == MAP_FAILED) return false;
  U.sq_head = (unsigned *)(sq + p->sq_off.head);
  U.sq_tail = (unsigned *)(sq + p->sq_off.tail);
  U.sq_mask = (unsigned *)(sq + p->sq_off.ring_mask);
  U.sq_array = (unsigned *)(sq + p->sq_off.array);
  U.cq_head = (unsigned *)(cq + p->cq_off.head);
  U.cq_tail = (unsigned *)(cq + p->cq_off.tail);
  U.cq_mask = (unsigned *)(cq + p->cq_off.ring_mask);
  U.cqes = (struct io_uring_cqe *)(cq + p->cq_off.cqes);
  U.sqes = sqes;
  return true;
}

static void sc_ring_setup(void) {
  if (!sc_cfg.io_uring) {
    U.why = "SIMCUDA_IO_URING=0";
    return;
  }
  struct io_uring_params p;
  memset(&p, 0, sizeof p);
  long fd = syscall(__NR_io_uring_setup, 4, &p);
  if (fd < 0) {
    U.why = errno == ENOSYS ? "io_uring_setup: not in this kernel"
            : errno == EPERM ? "io_uring_setup: not permitted (kernel.io_uring_disabled, seccomp)"
                             : "io_uring_setup failed";
    return;
  }
  U.fd = (int)fd; /* io_uring descriptors are close-on-exec */
  if (!sc_ring_map(&p)) {
    U.why = "mapping the io_uring rings failed";
  } else if (!sc_ring_table()) {
    U.why = "registering an io_uring buffer table failed";
  } else if ((U.stage_fd = memfd_create("simcuda-dma-stage", MFD_CLOEXEC)) < 0 ||
             ftruncate(U.stage_fd, SC_STAGE) != 0 ||
             (U.stage = mmap(NULL, SC_STAGE, PROT_READ | PROT_WRITE, MAP_SHARED, U.stage_fd, 0)) ==
                 MAP_FAILED) {
    U.why = "the DMA staging memfd failed";
  }
  if (U.why) {
    close(U.fd);
    U.fd = -1;
  }
}

bool sc_uring_available(const char **why) {
  pthread_once(&U.once, sc_ring_setup);
  if (U.fd < 0 && why) *why = U.why;
  return U.fd >= 0;
}

/* One operation, submitted and waited for. Returns the completion's result (bytes, or -errno).
 * Caller holds U.lock. */
static int sc_ring_op(unsigned char opcode, int fd, uint64_t off, uintptr_t addr, unsigned len,
                      unsigned slot) {
  unsigned tail = *U.sq_tail, idx = tail & *U.sq_mask;
  struct io_uring_sqe *e = &U.sqes[idx];
  memset(e, 0, sizeof *e);
  e->opcode = opcode;
  e->fd = fd;
  e->off = off;
  e->addr = addr;
  e->len = len;
  e->buf_index = (uint16_t)slot;
  U.sq_array[idx] = idx;
  __atomic_store_n(U.sq_tail, tail + 1, __ATOMIC_RELEASE);
  for (;;) {
    unsigned head = *U.cq_head;
    if (head != __atomic_load_n(U.cq_tail, __ATOMIC_ACQUIRE)) {
      int res = U.cqes[head & *U.cq_mask].res;
      __atomic_store_n(U.cq_head, head + 1, __ATOMIC_RELEASE);
      return res;
    }
    unsigned pending = *U.sq_tail - __atomic_load_n(U.sq_head, __ATOMIC_ACQUIRE);
    long r = syscall(__NR_io_uring_enter, U.fd, pending, 1, IORING_ENTER_GETEVENTS, NULL, 0);
    if (r < 0 && errno != EINTR && errno != EAGAIN) return -errno;
  }
}

/* Moves n bytes between the pinned bytes at addr and fd at off (to_host: from the file into the
 * pinned pages), slot by slot. Caller holds U.lock. */
static bool sc_ring_xfer(const sc_pin *pin, uintptr_t addr, int fd, uint64_t off, size_t n,
                         bool to_host) {
  if (pin->slot < 0 || addr < pin->base || n > pin->base + pin->len - addr) return false;
  while (n) {
    size_t in = (addr - pin->base) / SC_SLOT_BYTES;
    size_t slot_end = pin->base + (in + 1) * (size_t)SC_SLOT_BYTES;
    size_t k = n < slot_end - addr ? n : slot_end - addr;
    int r = sc_ring_op(to_host ? IORING_OP_READ_FIXED : IORING_OP_WRITE_FIXED, fd, off, addr,
                       (unsigned)k, (unsigned)pin->slot + (unsigned)in);
    if (r <= 0) return false;
    addr += (size_t)r, off += (size_t)r, n -= (size_t)r;
  }
  return true;
}

bool sc_uring_pin(uintptr_t base, size_t len, sc_pin *out) {
  out->slot = -1;
  if (!sc_uring_available(NULL)) {
    errno = ENOSYS;
    return false;
  }
  unsigned need = (unsigned)((len + SC_SLOT_BYTES - 1) / SC_SLOT_BYTES);
  struct iovec iov[64];
  if (need == 0 || need > 64) {
    errno = EINVAL;
    return false;
  }
  for (unsigned i = 0; i < need; i++) {
    size_t at = (size_t)i * SC_SLOT_BYTES;
    iov[i] = (struct iovec){(void *)(base + at), len - at < SC_SLOT_BYTES ? len - at : SC_SLOT_BYTES};
  }
  pthread_mutex_lock(&U.lock);
  unsigned first = 0, run = 0;
  for (unsigned s = 0; s < U.slots && run < need; s++) {
    if (U.used[s]) run = 0;
    else if (run++ == 0) first = s;
  }
  bool ok = false;
  if (run < need) {
    errno = ENOSPC;
  } else {
    struct io_uring_rsrc_update2 up = {.offset = first, .data = (uintptr_t)iov, .nr = need};
    long r = sc_ring_register(IORING_REGISTER_BUFFERS_UPDATE, &up, sizeof up);
    if (r == (long)need) {
      memset(&U.used[first], 1, need);
      *out = (sc_pin){.slot = (int)first, .base = base, .len = len};
      ok = true;
    } else {
      int e = r < 0 ? errno : EFAULT;
      static struct iovec empty[64];
      up.data = (uintptr_t)empty; /* undo a partial update */
      sc_ring_register(IORING_REGISTER_BUFFERS_UPDATE, &up, sizeof up);
      errno = e;
    }
  }
  pthread_mutex_unlock(&U.lock);
  return ok;
}

void sc_uring_unpin(const sc_pin *pin) {
  if (pin->slot < 0) return;
  unsigned need = (unsigned)((pin->len + SC_SLOT_BYTES - 1) / SC_SLOT_BYTES);
  static struct iovec empty[64];
  struct io_uring_rsrc_update2 up = {.offset = (unsigned)pin->slot, .data = (uintptr_t)empty,
                                     .nr = need};
  pthread_mutex_lock(&U.lock);
  sc_ring_register(IORING_REGISTER_BUFFERS_UPDATE, &up, sizeof up); /* drops the pins */
  memset(&U.used[pin->slot], 0, need);
  pthread_mutex_unlock(&U.lock);
}

bool sc_uring_read(const sc_pin *pin, uintptr_t addr, void *dst, size_t n) {
  bool ok = true;
  pthread_mutex_lock(&U.lock);
  for (size_t done = 0; ok && done < n;) {
    size_t k = n - done < SC_STAGE ? n - done : SC_STAGE;
    ok = sc_ring_xfer(pin, addr + done, U.stage_fd, 0, k, false);
    if (ok) memcpy((char *)dst + done, U.stage, k);
    done += k;
  }
  pthread_mutex_unlock(&U.lock);
  return ok;
}

bool sc_uring_write(const sc_pin *pin, uintptr_t addr, const void *src, size_t n) {
  bool ok = true;
  pthread_mutex_lock(&U.lock);
  for (size_t done = 0; ok && done < n;) {
    size_t k = n - done < SC_STAGE ? n - done : SC_STAGE;
    memcpy(U.stage, (const char *)src + done, k);
    ok = sc_ring_xfer(pin, addr + done, U.stage_fd, 0, k, true);
    done += k;
  }
  pthread_mutex_unlock(&U.lock);
  return ok;
}

bool sc_uring_fill(const sc_pin *pin, uintptr_t addr, int value, size_t n) {
  bool ok = true;
  pthread_mutex_lock(&U.lock);
  memset(U.stage, value, n < SC_STAGE ? n : SC_STAGE);
  for (size_t done = 0; ok && done < n;) {
    size_t k = n - done < SC_STAGE ? n - done : SC_STAGE;
    ok = sc_ring_xfer(pin, addr + done, U.stage_fd, 0, k, true);
    done += k;
  }
  pthread_mutex_unlock(&U.lock);
  return ok;
}

bool sc_uring_copy(const sc_pin *dpin, uintptr_t daddr, const sc_pin *spin, uintptr_t saddr,
                   size_t n) {
  bool ok = true;
  pthread_mutex_lock(&U.lock);
  /* Overlapping ranges copy as memmove does: backwards when the destination is above. */
  bool back = dpin->base == spin->base && daddr > saddr && daddr < saddr + n;
  for (size_t done = 0; ok && done < n;) {
    size_t k = n - done < SC_STAGE ? n - done : SC_STAGE;
    size_t at = back ? n - done - k : done;
    ok = sc_ring_xfer(spin, saddr + at, U.stage_fd, 0, k, false) &&
         sc_ring_xfer(dpin, daddr + at, U.stage_fd, 0, k, true);
    done += k;
  }
  pthread_mutex_unlock(&U.lock);
  return ok;
}

bool sc_uring_to_fd(const sc_pin *pin, uintptr_t addr, int fd, off_t off, size_t n) {
  pthread_mutex_lock(&U.lock);
  bool ok = sc_ring_xfer(pin, addr, fd, (uint64_t)off, n, false);
  pthread_mutex_unlock(&U.lock);
  return ok;
}

bool sc_uring_from_fd(const sc_pin *pin, uintptr_t addr, int fd, off_t off, size_t n) {
  pthread_mutex_lock(&U.lock);
  bool ok = sc_ring_xfer(pin, addr, fd, (uint64_t)off, n, true);
  pthread_mutex_unlock(&U.lock);
  return ok;
}
