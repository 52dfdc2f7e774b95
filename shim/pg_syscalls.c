/* pg_syscalls.c: interposers for the calls that hand a user buffer to the kernel. A buffer the GPU
 * is still writing must not be sent (a KV store's commit path), and one it is still using
 * must not be filled; with guard pages on, the kernel would also return EFAULT on a protected
 * page instead of faulting, a short or failed transfer the program never asked for. So each call
 * checks its buffers first (pg_on_syscall: enforce waits, audit reports, the pages are let
 * through), then forwards its arguments unchanged, with errno as the check found it.
 *
 * These run in every process the shim is preloaded into, CUDA or not: until tracking has
 * started (the first tracked CUDA call), the check is one load and a branch; after, a buffer
 * outside pinned memory costs one region lookup.
 *
 * The whole family is the table below, one PG_IO row per exported name. The calls deliberately
 * not here (io_uring, ioctl, syscall(2), glibc's internal entry points, ...) are listed
 * with the reason in docs/GUARD.md. To add a call: one row here, its PG_HOOK(libc, ...) row in
 * pg_hooks.inc, its name in libpinguard.map and
 * in tests/e2e/check_exports.sh, and a case in tests/e2e/guard_io.c. */
/* glibc's fortified headers (a distribution's compiler may define _FORTIFY_SOURCE by default, as
 * Ubuntu's does) declare read, recv, fread and others as inline wrappers: this file defines the
 * real entry points, so it takes the plain declarations. */
#undef _FORTIFY_SOURCE
#include <aio.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <mqueue.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "pg_intercept.h"
#include "pg_shim.h"

/* With optimization, <stdio.h> makes these macros that inline small constant-size transfers. */
#undef fread_unlocked
#undef fwrite_unlocked

#define PG_INLINE static inline __attribute__((always_inline))

/* Checks [p, p+n) before the kernel reads it (kernel_writes false: only device writes conflict)
 * or fills it (true: any device access conflicts). It is never inlined and the helpers below
 * always are, so the stack it captures always starts at the interposer's caller. */
static __attribute__((noinline)) void check(const void *p, size_t n, bool kernel_writes,
                                            const char *call) {
  if (!p || n == 0) return;
  if (!pg_on_syscall_begin(p, n, kernel_writes)) return; /* it may share a guarded edge page */
  pg_stack_t st;
  pg_stack_capture(&st, 2, PG_STACK_MAX); /* past check and the interposer */
  pg_reentry_t g = pg_shim_enter();
  pg_on_syscall(p, n, kernel_writes, call, &st);
  pg_shim_leave(g);
}

/* The kernel reads an iovec array; the buffers it names are read or filled. */
PG_INLINE void check_iov(const struct iovec *iov, long cnt, bool kernel_writes, const char *call) {
  if (!iov || cnt <= 0) return;
  check(iov, (size_t)cnt * sizeof *iov, false, call);
  for (long i = 0; i < cnt; i++) check(iov[i].iov_base, iov[i].iov_len, kernel_writes, call);
}

/* sendmsg reads its msghdr, address, control data and buffers; recvmsg fills all of them (the
 * header's lengths and flags too). Only the iovec array is read either way. */
PG_INLINE void check_msg(const struct msghdr *m, bool kernel_writes, const char *call) {
  if (!m) return;
  check(m, sizeof *m, kernel_writes, call);
  check(m->msg_name, m->msg_namelen, kernel_writes, call);
  check(m->msg_control, m->msg_controllen, kernel_writes, call);
  check_iov(m->msg_iov, (long)m->msg_iovlen, kernel_writes, call);
}

/* Both mmsg calls store each message's msg_len into the vector. */
PG_INLINE void check_mmsg(const struct mmsghdr *v, unsigned n, bool kernel_writes,
                          const char *call) {
  if (!v) return;
  check(v, (size_t)n * sizeof *v, true, call);
  for (unsigned i = 0; i < n; i++) check_msg(&v[i].msg_hdr, kernel_writes, call);
}

/* A stdio transfer of n items of size bytes; an overflowing product is left to libc to refuse. */
PG_INLINE size_t items(size_t size, size_t n) {
  size_t b;
  return __builtin_mul_overflow(size, n, &b) ? 0 : b;
}

/* vmsplice moves user memory into a pipe opened for writing, or out of one opened for reading
 * (the kernel tests FMODE_WRITE first, so an O_RDWR FIFO is written to). */
PG_INLINE bool vmsplice_fills_user(int fd) {
  return (fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDONLY;
}

/* A POSIX aio request: glibc's helper threads perform it with internal calls no interposer sees,
 * so the buffer is checked at submission. */
#define CHECK_AIOCB(cb)                                                                \
  do {                                                                                 \
    if ((cb) && (cb)->aio_lio_opcode != LIO_NOP)                                       \
      check((const void *)(cb)->aio_buf, (cb)->aio_nbytes,                             \
            (cb)->aio_lio_opcode == LIO_READ, call_);                                  \
  } while (0)

/* A Linux AIO request, in the kernel's iocb layout (libaio's struct iocb is the same). */
PG_INLINE void check_kiocb(const struct iocb *cb, const char *call) {
  if (!cb) return;
  void *buf = (void *)(uintptr_t)cb->aio_buf;
  switch (cb->aio_lio_opcode) {
  case IOCB_CMD_PREAD: check(buf, cb->aio_nbytes, true, call); break;
  case IOCB_CMD_PWRITE: check(buf, cb->aio_nbytes, false, call); break;
  case IOCB_CMD_PREADV: check_iov(buf, (long)cb->aio_nbytes, true, call); break;
  case IOCB_CMD_PWRITEV: check_iov(buf, (long)cb->aio_nbytes, false, call); break;
  default: break; /* fsync, fdsync, poll, noop: no buffer */
  }
}

/* PG_IO(ret, name, label, (params), (args), checks): defines name(params), which runs `checks`
 * once tracking has started, keeping errno, then returns the real name(args), found through its
 * PG_HOOK(libc, name, 0) row of pg_hooks.inc (which every row here needs). In `checks`, the
 * kernel READS or FILLS the buffers named; `call_` is the label reports give the call. A libc
 * without the call (an older glibc keeps aio and message queues in librt) makes it fail with
 * ENOSYS, should a program that found our definition through dlsym call it. */
#define PG_IO(ret, name, label, params, args, checks)                                  \
  PG_EXPORT ret name params;                                                           \
  PG_WRAPPER(name, name);                                                              \
  PG_EXPORT ret name params {                                                          \
    if (pg_shim_tracking()) {                                                          \
      const char *call_ = label;                                                       \
      int errno_ = errno;                                                              \
      checks;                                                                          \
      errno = errno_;                                                                  \
    }                                                                                  \
    __typeof__(&name) fn_ = PG_REAL(name);                                             \
    if (__builtin_expect(!fn_, 0)) {                                                   \
      errno = ENOSYS;                                                                  \
      return (ret)-1;                                                                  \
    }                                                                                  \
    return fn_ args;                                                                   \
  }
#define READS(p, n) check((p), (n), false, call_)
#define FILLS(p, n) check((p), (n), true, call_)
#define READS_IOV(iov, cnt) check_iov((iov), (long)(cnt), false, call_)
#define FILLS_IOV(iov, cnt) check_iov((iov), (long)(cnt), true, call_)

/* Declarations glibc's headers leave out (aliases and fortify entry points). */
extern ssize_t __write(int fd, const void *buf, size_t n);
extern ssize_t __read(int fd, void *buf, size_t n);
extern ssize_t __send(int fd, const void *buf, size_t n, int flags);
extern ssize_t __pwrite64(int fd, const void *buf, size_t n, off64_t off);
extern ssize_t __pread64(int fd, void *buf, size_t n, off64_t off);
extern ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
extern ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
extern ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen);
extern ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
extern ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
                              struct sockaddr *from, socklen_t *fromlen);
extern size_t __fread_chk(void *p, size_t plen, size_t size, size_t n, FILE *f);
extern size_t __fread_unlocked_chk(void *p, size_t plen, size_t size, size_t n, FILE *f);
/* Linux AIO has no libc wrapper: this is libaio's, whose io_context_t is the kernel's handle. */
extern int io_submit(aio_context_t ctx, long nr, struct iocb **ios);
PG_WRAPPER(io_submit, io_submit);

/* ---- the kernel reads the buffer ----------------------------------------------------------- */
PG_IO(ssize_t, write, "write(2)", (int fd, const void *buf, size_t n), (fd, buf, n),
      READS(buf, n))
PG_IO(ssize_t, __write, "write(2)", (int fd, const void *buf, size_t n), (fd, buf, n),
      READS(buf, n))
PG_IO(ssize_t, pwrite, "pwrite(2)", (int fd, const void *buf, size_t n, off_t off),
      (fd, buf, n, off), READS(buf, n))
PG_IO(ssize_t, pwrite64, "pwrite64(2)", (int fd, const void *buf, size_t n, off64_t off),
      (fd, buf, n, off), READS(buf, n))
PG_IO(ssize_t, __pwrite64, "pwrite64(2)", (int fd, const void *buf, size_t n, off64_t off),
      (fd, buf, n, off), READS(buf, n))
PG_IO(ssize_t, writev, "writev(2)", (int fd, const struct iovec *iov, int cnt), (fd, iov, cnt),
      READS_IOV(iov, cnt))
PG_IO(ssize_t, pwritev, "pwritev(2)", (int fd, const struct iovec *iov, int cnt, off_t off),
      (fd, iov, cnt, off), READS_IOV(iov, cnt))
PG_IO(ssize_t, pwritev64, "pwritev64(2)",
      (int fd, const struct iovec *iov, int cnt, off64_t off), (fd, iov, cnt, off),
      READS_IOV(iov, cnt))
PG_IO(ssize_t, pwritev2, "pwritev2(2)",
      (int fd, const struct iovec *iov, int cnt, off_t off, int flags), (fd, iov, cnt, off, flags),
      READS_IOV(iov, cnt))
PG_IO(ssize_t, pwritev64v2, "pwritev64v2(2)",
      (int fd, const struct iovec *iov, int cnt, off64_t off, int flags),
      (fd, iov, cnt, off, flags), READS_IOV(iov, cnt))
PG_IO(ssize_t, send, "send(2)", (int fd, const void *buf, size_t n, int flags),
      (fd, buf, n, flags), READS(buf, n))
PG_IO(ssize_t, __send, "send(2)", (int fd, const void *buf, size_t n, int flags),
      (fd, buf, n, flags), READS(buf, n))
PG_IO(ssize_t, sendto, "sendto(2)",
      (int fd, const void *buf, size_t n, int flags, const struct sockaddr *to, socklen_t tolen),
      (fd, buf, n, flags, to, tolen), READS(buf, n); READS(to, tolen))
PG_IO(ssize_t, sendmsg, "sendmsg(2)", (int fd, const struct msghdr *msg, int flags),
      (fd, msg, flags), check_msg(msg, false, call_))
PG_IO(int, sendmmsg, "sendmmsg(2)", (int fd, struct mmsghdr *vec, unsigned n, int flags),
      (fd, vec, n, flags), check_mmsg(vec, n, false, call_))
PG_IO(int, mq_send, "mq_send(3)", (mqd_t q, const char *msg, size_t n, unsigned prio),
      (q, msg, n, prio), READS(msg, n))
PG_IO(int, mq_timedsend, "mq_timedsend(3)",
      (mqd_t q, const char *msg, size_t n, unsigned prio, const struct timespec *t),
      (q, msg, n, prio, t), READS(msg, n))
PG_IO(int, msgsnd, "msgsnd(2)", (int id, const void *msg, size_t n, int flags),
      (id, msg, n, flags), READS(msg, sizeof(long) + n))
PG_IO(size_t, fwrite, "fwrite(3)", (const void *p, size_t size, size_t n, FILE *f),
      (p, size, n, f), READS(p, items(size, n)))
PG_IO(size_t, fwrite_unlocked, "fwrite_unlocked(3)",
      (const void *p, size_t size, size_t n, FILE *f), (p, size, n, f), READS(p, items(size, n)))
PG_IO(int, aio_write, "aio_write(3)", (struct aiocb *cb), (cb),
      READS((const void *)cb->aio_buf, cb->aio_nbytes))
PG_IO(int, aio_write64, "aio_write64(3)", (struct aiocb64 *cb), (cb),
      READS((const void *)cb->aio_buf, cb->aio_nbytes))
PG_IO(ssize_t, process_vm_writev, "process_vm_writev(2)",
      (pid_t pid, const struct iovec *local, unsigned long nl, const struct iovec *remote,
       unsigned long nr, unsigned long flags), (pid, local, nl, remote, nr, flags),
      READS_IOV(local, nl); READS(remote, nr * sizeof *remote);
      if (pid == getpid()) FILLS_IOV(remote, nr))

/* ---- the kernel fills the buffer ----------------------------------------------------------- */
PG_IO(ssize_t, read, "read(2)", (int fd, void *buf, size_t n), (fd, buf, n), FILLS(buf, n))
PG_IO(ssize_t, __read, "read(2)", (int fd, void *buf, size_t n), (fd, buf, n), FILLS(buf, n))
PG_IO(ssize_t, __read_chk, "read(2)", (int fd, void *buf, size_t n, size_t buflen),
      (fd, buf, n, buflen), FILLS(buf, n))
PG_IO(ssize_t, pread, "pread(2)", (int fd, void *buf, size_t n, off_t off), (fd, buf, n, off),
      FILLS(buf, n))
PG_IO(ssize_t, __pread_chk, "pread(2)", (int fd, void *buf, size_t n, off_t off, size_t buflen),
      (fd, buf, n, off, buflen), FILLS(buf, n))
PG_IO(ssize_t, pread64, "pread64(2)", (int fd, void *buf, size_t n, off64_t off),
      (fd, buf, n, off), FILLS(buf, n))
PG_IO(ssize_t, __pread64, "pread64(2)", (int fd, void *buf, size_t n, off64_t off),
      (fd, buf, n, off), FILLS(buf, n))
PG_IO(ssize_t, __pread64_chk, "pread64(2)",
      (int fd, void *buf, size_t n, off64_t off, size_t buflen), (fd, buf, n, off, buflen),
      FILLS(buf, n))
PG_IO(ssize_t, readv, "readv(2)", (int fd, const struct iovec *iov, int cnt), (fd, iov, cnt),
      FILLS_IOV(iov, cnt))
PG_IO(ssize_t, preadv, "preadv(2)", (int fd, const struct iovec *iov, int cnt, off_t off),
      (fd, iov, cnt, off), FILLS_IOV(iov, cnt))
PG_IO(ssize_t, preadv64, "preadv64(2)", (int fd, const struct iovec *iov, int cnt, off64_t off),
      (fd, iov, cnt, off), FILLS_IOV(iov, cnt))
PG_IO(ssize_t, preadv2, "preadv2(2)",
      (int fd, const struct iovec *iov, int cnt, off_t off, int flags), (fd, iov, cnt, off, flags),
      FILLS_IOV(iov, cnt))
PG_IO(ssize_t, preadv64v2, "preadv64v2(2)",
      (int fd, const struct iovec *iov, int cnt, off64_t off, int flags),
      (fd, iov, cnt, off, flags), FILLS_IOV(iov, cnt))
PG_IO(ssize_t, recv, "recv(2)", (int fd, void *buf, size_t n, int flags), (fd, buf, n, flags),
      FILLS(buf, n))
PG_IO(ssize_t, __recv_chk, "recv(2)", (int fd, void *buf, size_t n, size_t buflen, int flags),
      (fd, buf, n, buflen, flags), FILLS(buf, n))
PG_IO(ssize_t, recvfrom, "recvfrom(2)",
      (int fd, void *buf, size_t n, int flags, struct sockaddr *from, socklen_t *fromlen),
      (fd, buf, n, flags, from, fromlen), FILLS(buf, n); if (fromlen) FILLS(from, *fromlen))
PG_IO(ssize_t, __recvfrom_chk, "recvfrom(2)",
      (int fd, void *buf, size_t n, size_t buflen, int flags, struct sockaddr *from,
       socklen_t *fromlen), (fd, buf, n, buflen, flags, from, fromlen),
      FILLS(buf, n); if (fromlen) FILLS(from, *fromlen))
PG_IO(ssize_t, recvmsg, "recvmsg(2)", (int fd, struct msghdr *msg, int flags), (fd, msg, flags),
      check_msg(msg, true, call_))
PG_IO(int, recvmmsg, "recvmmsg(2)",
      (int fd, struct mmsghdr *vec, unsigned n, int flags, struct timespec *t),
      (fd, vec, n, flags, t), check_mmsg(vec, n, true, call_))
PG_IO(ssize_t, mq_receive, "mq_receive(3)", (mqd_t q, char *msg, size_t n, unsigned *prio),
      (q, msg, n, prio), FILLS(msg, n))
PG_IO(ssize_t, mq_timedreceive, "mq_timedreceive(3)",
      (mqd_t q, char *msg, size_t n, unsigned *prio, const struct timespec *t),
      (q, msg, n, prio, t), FILLS(msg, n))
PG_IO(ssize_t, msgrcv, "msgrcv(2)", (int id, void *msg, size_t n, long type, int flags),
      (id, msg, n, type, flags), FILLS(msg, sizeof(long) + n))
PG_IO(size_t, fread, "fread(3)", (void *p, size_t size, size_t n, FILE *f), (p, size, n, f),
      FILLS(p, items(size, n)))
PG_IO(size_t, fread_unlocked, "fread_unlocked(3)", (void *p, size_t size, size_t n, FILE *f),
      (p, size, n, f), FILLS(p, items(size, n)))
PG_IO(size_t, __fread_chk, "fread(3)", (void *p, size_t plen, size_t size, size_t n, FILE *f),
      (p, plen, size, n, f), FILLS(p, items(size, n)))
PG_IO(size_t, __fread_unlocked_chk, "fread_unlocked(3)",
      (void *p, size_t plen, size_t size, size_t n, FILE *f), (p, plen, size, n, f),
      FILLS(p, items(size, n)))
PG_IO(int, aio_read, "aio_read(3)", (struct aiocb *cb), (cb),
      FILLS((void *)cb->aio_buf, cb->aio_nbytes))
PG_IO(int, aio_read64, "aio_read64(3)", (struct aiocb64 *cb), (cb),
      FILLS((void *)cb->aio_buf, cb->aio_nbytes))
PG_IO(ssize_t, getrandom, "getrandom(2)", (void *buf, size_t n, unsigned flags), (buf, n, flags),
      FILLS(buf, n))
PG_IO(int, getentropy, "getentropy(3)", (void *buf, size_t n), (buf, n), FILLS(buf, n))
PG_IO(ssize_t, process_vm_readv, "process_vm_readv(2)",
      (pid_t pid, const struct iovec *local, unsigned long nl, const struct iovec *remote,
       unsigned long nr, unsigned long flags), (pid, local, nl, remote, nr, flags),
      FILLS_IOV(local, nl); READS(remote, nr * sizeof *remote);
      if (pid == getpid()) READS_IOV(remote, nr))

/* msync writes a MAP_SHARED file mapping's pages back to its file: it publishes the bytes, as a
 * write(2) of them would (the kernel reads them; no EFAULT, protections do not stop it). */
PG_IO(int, msync, "msync(2)", (void *addr, size_t n, int flags), (addr, n, flags), READS(addr, n))

/* ---- either way: the direction is in the arguments ------------------------------------------ */
PG_IO(ssize_t, vmsplice, "vmsplice(2)",
      (int fd, const struct iovec *iov, size_t cnt, unsigned flags), (fd, iov, cnt, flags),
      check_iov(iov, (long)cnt, vmsplice_fills_user(fd), call_))
PG_IO(int, lio_listio, "lio_listio(3)",
      (int mode, struct aiocb *const list[], int n, struct sigevent *sev), (mode, list, n, sev),
      for (int i = 0; i < n; i++) CHECK_AIOCB(list[i]))
PG_IO(int, lio_listio64, "lio_listio64(3)",
      (int mode, struct aiocb64 *const list[], int n, struct sigevent *sev),
      (mode, list, n, sev), for (int i = 0; i < n; i++) CHECK_AIOCB(list[i]))

/* ---- libaio's io_submit: the one row not in libc ---------------------------------------------
 * Found through the dynamic lookup without libaio loaded (a program probing for it with dlsym),
 * it must not call a null pointer: it fails as libaio would, with a negated errno. Requests
 * made through syscall(2) are not seen (docs/GUARD.md). */
PG_EXPORT int io_submit(aio_context_t ctx, long nr, struct iocb **ios) {
  if (pg_shim_tracking()) {
    int errno_ = errno;
    for (long i = 0; ios && i < nr; i++) check_kiocb(ios[i], "io_submit(2)");
    errno = errno_;
  }
  __typeof__(&io_submit) real = PG_REAL(io_submit);
  return real ? real(ctx, nr, ios) : -ENOSYS;
}
