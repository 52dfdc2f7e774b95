/* pg_syscalls.c: interposers for the I/O calls that read or fill user buffers. A buffer the GPU
 * is still writing must not be sent (the commit path of problem.md), and one it is still using
 * must not be filled; with guard pages on, the kernel would also return EFAULT on a protected
 * page instead of faulting. So each call checks its buffers first (pg_decide_syscall), then
 * proceeds: pinguard never makes one of these calls fail.
 *
 * These run in every process the shim is preloaded into, CUDA or not: until tracking has
 * started (the first tracked CUDA call), the check is one load and a branch. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "pg_intercept.h"
#include "pg_shim.h"

/* The real libc function, looked up once (dlsym(RTLD_NEXT) skips our own definition). */
#define PG_LIBC(name)                                                                  \
  __extension__({                                                                      \
    static _Atomic(__typeof__(&name)) real_;                                           \
    __typeof__(&name) f_ = atomic_load_explicit(&real_, memory_order_acquire);         \
    if (!f_) {                                                                         \
      f_ = (__typeof__(&name))dlsym(RTLD_NEXT, #name);                                 \
      atomic_store_explicit(&real_, f_, memory_order_release);                         \
    }                                                                                  \
    f_;                                                                                \
  })

#define PG_EXPORT __attribute__((visibility("default")))

static void check(const void *p, size_t n, bool kernel_writes, const char *call) {
  if (!p || n == 0) return;
  pg_stack_t st;
  pg_stack_capture(&st, 1, PG_STACK_MAX);
  pg_guard_t g = pg_shim_enter();
  pg_decide_syscall(p, n, kernel_writes, call, &st);
  pg_shim_leave(g);
}

static void check_iov(const struct iovec *iov, int cnt, bool kernel_writes, const char *call) {
  for (int i = 0; iov && i < cnt; i++) check(iov[i].iov_base, iov[i].iov_len, kernel_writes, call);
}

/* ---- the kernel reads the buffer ----------------------------------------------------------- */
PG_EXPORT ssize_t write(int fd, const void *buf, size_t n) {
  if (pg_shim_tracking()) check(buf, n, false, "write(2)");
  return PG_LIBC(write)(fd, buf, n);
}

PG_EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
  if (pg_shim_tracking()) check(buf, n, false, "pwrite(2)");
  return PG_LIBC(pwrite)(fd, buf, n, off);
}

PG_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off) {
  if (pg_shim_tracking()) check(buf, n, false, "pwrite64(2)");
  return PG_LIBC(pwrite64)(fd, buf, n, off);
}

PG_EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt) {
  if (pg_shim_tracking()) check_iov(iov, cnt, false, "writev(2)");
  return PG_LIBC(writev)(fd, iov, cnt);
}

PG_EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off) {
  if (pg_shim_tracking()) check_iov(iov, cnt, false, "pwritev(2)");
  return PG_LIBC(pwritev)(fd, iov, cnt, off);
}

PG_EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off) {
  if (pg_shim_tracking()) check_iov(iov, cnt, false, "pwritev64(2)");
  return PG_LIBC(pwritev64)(fd, iov, cnt, off);
}

PG_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags) {
  if (pg_shim_tracking()) check(buf, n, false, "send(2)");
  return PG_LIBC(send)(fd, buf, n, flags);
}

PG_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags,
                         const struct sockaddr *to, socklen_t tolen) {
  if (pg_shim_tracking()) check(buf, n, false, "sendto(2)");
  return PG_LIBC(sendto)(fd, buf, n, flags, to, tolen);
}

PG_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags) {
  if (pg_shim_tracking() && msg) check_iov(msg->msg_iov, (int)msg->msg_iovlen, false, "sendmsg(2)");
  return PG_LIBC(sendmsg)(fd, msg, flags);
}

/* ---- the kernel fills the buffer ----------------------------------------------------------- */
PG_EXPORT ssize_t read(int fd, void *buf, size_t n) {
  if (pg_shim_tracking()) check(buf, n, true, "read(2)");
  return PG_LIBC(read)(fd, buf, n);
}

PG_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off) {
  if (pg_shim_tracking()) check(buf, n, true, "pread(2)");
  return PG_LIBC(pread)(fd, buf, n, off);
}

PG_EXPORT ssize_t pread64(int fd, void *buf, size_t n, off64_t off) {
  if (pg_shim_tracking()) check(buf, n, true, "pread64(2)");
  return PG_LIBC(pread64)(fd, buf, n, off);
}

PG_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt) {
  if (pg_shim_tracking()) check_iov(iov, cnt, true, "readv(2)");
  return PG_LIBC(readv)(fd, iov, cnt);
}

PG_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags) {
  if (pg_shim_tracking()) check(buf, n, true, "recv(2)");
  return PG_LIBC(recv)(fd, buf, n, flags);
}

PG_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *from,
                           socklen_t *fromlen) {
  if (pg_shim_tracking()) check(buf, n, true, "recvfrom(2)");
  return PG_LIBC(recvfrom)(fd, buf, n, flags, from, fromlen);
}

PG_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags) {
  if (pg_shim_tracking() && msg) check_iov(msg->msg_iov, (int)msg->msg_iovlen, true, "recvmsg(2)");
  return PG_LIBC(recvmsg)(fd, msg, flags);
}

/* ---- the double-underscore aliases glibc exports, which some libraries call directly ------- */
extern ssize_t __write(int fd, const void *buf, size_t n);
extern ssize_t __read(int fd, void *buf, size_t n);
extern ssize_t __send(int fd, const void *buf, size_t n, int flags);
extern ssize_t __pwrite64(int fd, const void *buf, size_t n, off64_t off);
extern ssize_t __pread64(int fd, void *buf, size_t n, off64_t off);

PG_EXPORT ssize_t __write(int fd, const void *buf, size_t n) {
  if (pg_shim_tracking()) check(buf, n, false, "write(2)");
  return PG_LIBC(__write)(fd, buf, n);
}

PG_EXPORT ssize_t __read(int fd, void *buf, size_t n) {
  if (pg_shim_tracking()) check(buf, n, true, "read(2)");
  return PG_LIBC(__read)(fd, buf, n);
}

PG_EXPORT ssize_t __send(int fd, const void *buf, size_t n, int flags) {
  if (pg_shim_tracking()) check(buf, n, false, "send(2)");
  return PG_LIBC(__send)(fd, buf, n, flags);
}

PG_EXPORT ssize_t __pwrite64(int fd, const void *buf, size_t n, off64_t off) {
  if (pg_shim_tracking()) check(buf, n, false, "pwrite64(2)");
  return PG_LIBC(__pwrite64)(fd, buf, n, off);
}

PG_EXPORT ssize_t __pread64(int fd, void *buf, size_t n, off64_t off) {
  if (pg_shim_tracking()) check(buf, n, true, "pread64(2)");
  return PG_LIBC(__pread64)(fd, buf, n, off);
}

/* ---- _FORTIFY_SOURCE variants: glibc calls read internally from these, past our read ------- */
extern ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
extern ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
extern ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen);
extern ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
extern ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
                              struct sockaddr *from, socklen_t *fromlen);

PG_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen) {
  if (pg_shim_tracking()) check(buf, n, true, "read(2)");
  return PG_LIBC(__read_chk)(fd, buf, n, buflen);
}

PG_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen) {
  if (pg_shim_tracking()) check(buf, n, true, "pread(2)");
  return PG_LIBC(__pread_chk)(fd, buf, n, off, buflen);
}

PG_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen) {
  if (pg_shim_tracking()) check(buf, n, true, "pread64(2)");
  return PG_LIBC(__pread64_chk)(fd, buf, n, off, buflen);
}

PG_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags) {
  if (pg_shim_tracking()) check(buf, n, true, "recv(2)");
  return PG_LIBC(__recv_chk)(fd, buf, n, buflen, flags);
}

PG_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
                                 struct sockaddr *from, socklen_t *fromlen) {
  if (pg_shim_tracking()) check(buf, n, true, "recvfrom(2)");
  return PG_LIBC(__recvfrom_chk)(fd, buf, n, buflen, flags, from, fromlen);
}
