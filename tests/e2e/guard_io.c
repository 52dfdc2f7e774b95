/* Intent: every call that hands a user buffer to the kernel checks it before it runs, so a guarded
 * buffer never makes one fail with EFAULT or transfer short. CALL names one call of the family:
 *   - a call the kernel reads the buffer for gets the destination of an in-flight device->host
 *     copy: syscall-read-during-device-write; enforce waits, so the bytes sent are the copied
 *     ones (0x6b);
 *   - a call that fills the buffer gets the source of an in-flight host->device copy:
 *     syscall-write-during-device-access; enforce waits, so the device read the old bytes (0x11)
 *     and the buffer holds what the call brought in (0x3c).
 *   - a string (fputs, fprintf and dprintf of %s) is measured by libc before the kernel sees
 *     it: that CPU read faults on the guard page first, so the report is
 *     cpu-read-during-device-write, and these calls need no interposer of their own.
 * Either way the program prints "CALL transferred N of N bytes: ..." only for a full transfer.
 * "reader" hands a call of the first kind a buffer the device only reads: the kernel reading it
 * too is no conflict, so there is no report. Usage: bug|fixed|reader CALL. */
// The calls the kernel reads the buffer for; the string calls, which libc measures before the
// kernel is reached (its strlen faults on the guard first: a CPU read); the calls that fill it.
// LIST: sends write __write pwrite pwrite64 __pwrite64 writev pwritev pwritev64 pwritev2
// LIST: sends pwritev64v2 send __send sendto sendmsg sendmmsg fwrite fwrite_unlocked
// LIST: sends vmsplice.to_pipe process_vm_writev aio_write aio_write64 lio_listio.write
// LIST: sends lio_listio64.write io_submit.pwrite io_submit.pwritev mq_send mq_timedsend msgsnd
// LIST: strings fputs fputs_unlocked fprintf dprintf
// LIST: fills read __read __read_chk pread __pread_chk pread64 __pread64 __pread64_chk readv
// LIST: fills preadv preadv64 preadv2 preadv64v2 recv __recv_chk recvfrom __recvfrom_chk
// LIST: fills recvmsg recvmmsg fread fread_unlocked __fread_chk __fread_unlocked_chk
// LIST: fills vmsplice.from_pipe process_vm_readv aio_read aio_read64 lio_listio.read
// LIST: fills lio_listio64.read io_submit.pread io_submit.preadv mq_receive mq_timedreceive
// LIST: fills msgrcv getrandom getentropy
// Enforce's bug cases show the wait: the device access must still be in flight when the call
// runs, on a loaded machine too (GUARD_IO_ENV: 50 ms). The audit and twin cases run at the
// default latency of 0. ThreadSanitizer takes a second to start each of these ~220 runs, and the
// checks themselves are not instrumented: the TSAN build runs the enforce case of each call only
// (GUARD_IO_ALL is off there).
// CASE: guard_io.${call}.bug.enforce MODE enforce EXPECT syscall-read-during-device-write
//   ARGS bug ${call} STDOUT "^${call} transferred .*: 0x6b$" ENV ${GUARD_IO_ENV}
//   FOR call IN ${sends}
// CASE: guard_io.${call}.bug.enforce MODE enforce EXPECT cpu-read-during-device-write
//   ARGS bug ${call} STDOUT "^${call} transferred .*: 0x6b$" ENV ${GUARD_IO_ENV}
//   FOR call IN ${strings}
// CASE: guard_io.${call}.bug.audit MODE audit EXPECT syscall-read-during-device-write
//   ARGS bug ${call} STDOUT "^${call} transferred" ENV ${GUARD_ENV}
//   FOR call IN ${sends} IF GUARD_IO_ALL
// CASE: guard_io.${call}.bug.audit MODE audit EXPECT cpu-read-during-device-write
//   ARGS bug ${call} STDOUT "^${call} transferred" ENV ${GUARD_ENV}
//   FOR call IN ${strings} IF GUARD_IO_ALL
// CASE: guard_io.${call}.${twin} MODE audit EXPECT none ARGS ${twin} ${call}
//   STDOUT "^${call} transferred .*: 0x6b$" ENV ${GUARD_ENV}
//   FOR call IN ${sends} ${strings} FOR twin IN fixed reader IF GUARD_IO_ALL
// CASE: guard_io.${call}.bug.enforce MODE enforce EXPECT syscall-write-during-device-access
//   ARGS bug ${call} STDOUT "^${call} transferred .*: (0x3c|random), device read 0x11$"
//   ENV ${GUARD_IO_ENV} FOR call IN ${fills}
// CASE: guard_io.${call}.bug.audit MODE audit EXPECT syscall-write-during-device-access
//   ARGS bug ${call} STDOUT "^${call} transferred" ENV ${GUARD_ENV}
//   FOR call IN ${fills} IF GUARD_IO_ALL
// CASE: guard_io.${call}.fixed MODE audit EXPECT none ARGS fixed ${call}
//   STDOUT "^${call} transferred .*: (0x3c|random), device read 0x11$" ENV ${GUARD_ENV}
//   FOR call IN ${fills} IF GUARD_IO_ALL

#include <stdbool.h>
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <mqueue.h>
#include <stdint.h>
#include <sys/msg.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"

#define PAGE 4096u
#define N (64u * 1024u) /* fits a pipe and a socket's buffer; stdio moves it directly */
#define SRC_BYTE 0x3c    /* what a filling call brings in */
#define DEV_BYTE 0x6b    /* what the device writes */
#define OLD_BYTE 0x11    /* what a filled buffer held before */

/* glibc's aliases and fortify entry points, which its headers leave out. */
extern ssize_t __write(int fd, const void *buf, size_t n);
extern ssize_t __pwrite64(int fd, const void *buf, size_t n, off64_t off);
extern ssize_t __send(int fd, const void *buf, size_t n, int flags);
extern ssize_t __read(int fd, void *buf, size_t n);
extern ssize_t __pread64(int fd, void *buf, size_t n, off64_t off);
extern ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
extern ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
extern ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen);
extern ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
extern ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
                              struct sockaddr *from, socklen_t *fromlen);
extern size_t __fread_chk(void *p, size_t plen, size_t size, size_t n, FILE *f);
extern size_t __fread_unlocked_chk(void *p, size_t plen, size_t size, size_t n, FILE *f);
/* libaio's, here from aio_stub.c. */
extern int io_submit(aio_context_t ctx, long nr, struct iocb **ios);

/* Where a call's bytes come from or go to, set up before the device access starts. */
typedef struct io {
  int fd;               /* a file holding N bytes of SRC_BYTE */
  FILE *f;              /* a stdio stream on it */
  int pipe[2], sock[2]; /* a pipe, a stream socket pair */
  mqd_t q;              /* a POSIX message queue */
  int msq;              /* a System V message queue */
  unsigned char *other; /* plain memory holding SRC_BYTE: the far side of process_vm_* */
  long *msgbuf;         /* mtype + text, for System V messages */
} io_t;

typedef enum { SENDS, FILLS } side_t;
typedef enum { TO_FILE, TO_SOCK, TO_PIPE, TO_OTHER, TO_MQ, TO_MSQ, NOWHERE } sink_t;
typedef ssize_t (*run_fn)(io_t *io, unsigned char *b, size_t n);

static ssize_t aio_wait(struct aiocb *cb) {
  const struct aiocb *l[1] = {cb};
  while (aio_error(cb) == EINPROGRESS) aio_suspend(l, 1, NULL);
  errno = aio_error(cb);
  return aio_return(cb);
}
static ssize_t aio_wait64(struct aiocb64 *cb) {
  const struct aiocb64 *l[1] = {cb};
  while (aio_error64(cb) == EINPROGRESS) aio_suspend64(l, 1, NULL);
  errno = aio_error64(cb);
  return aio_return64(cb);
}
#define IOV2(b, n) {{(b), (n) / 2}, {(b) + (n) / 2, (n) / 2}} /* two halves: a real vector */

/* One Linux AIO request (op) on the file, submitted through io_submit, the rest raw. */
static ssize_t kernel_aio(io_t *io, unsigned op, unsigned char *b, size_t n) {
  struct iovec v[2] = IOV2(b, n);
  int vec = op == IOCB_CMD_PREADV || op == IOCB_CMD_PWRITEV;
  struct iocb cb = {.aio_fildes = (uint32_t)io->fd, .aio_lio_opcode = (uint16_t)op,
                    .aio_buf = (uintptr_t)(vec ? (void *)v : (void *)b), .aio_nbytes = vec ? 2 : n};
  struct iocb *l[1] = {&cb};
  struct io_event ev;
  aio_context_t ctx = 0;
  if (syscall(SYS_io_setup, 1, &ctx)) return -1;
  int r = io_submit(ctx, 1, l);
  long got = r == 1 ? syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL) : -1;
  syscall(SYS_io_destroy, ctx);
  if (r != 1) errno = r < 0 ? -r : EIO;
  if (got != 1) return -1;
  if (ev.res < 0) errno = (int)-ev.res;
  return ev.res < 0 ? -1 : (ssize_t)ev.res;
}
#define AIOCB(b, n, op) {.aio_fildes = io->fd, .aio_buf = (b), .aio_nbytes = (n), .aio_lio_opcode = (op)}

/* ---- calls the kernel reads the buffer for -------------------------------------------------- */
static ssize_t r_write(io_t *io, unsigned char *b, size_t n) { return write(io->fd, b, n); }
static ssize_t r___write(io_t *io, unsigned char *b, size_t n) { return __write(io->fd, b, n); }
static ssize_t r_pwrite(io_t *io, unsigned char *b, size_t n) { return pwrite(io->fd, b, n, 0); }
static ssize_t r_pwrite64(io_t *io, unsigned char *b, size_t n) {
  return pwrite64(io->fd, b, n, 0);
}
static ssize_t r___pwrite64(io_t *io, unsigned char *b, size_t n) {
  return __pwrite64(io->fd, b, n, 0);
}
static ssize_t r_writev(io_t *io, unsigned char *b, size_t n) {
  struct iovec v[2] = IOV2(b, n);
  return writev(io->fd, v, 2);
}
static ssize_t r_pwritev(io_t *io, unsigned char *b, size_t n) {
  struct iovec v[2] = IOV2(b, n);
  return pwritev(io->fd, v, 2, 0);
}
static ssize_t r_pwritev64(io_t *io, unsigned char *b, size_t n) {
  struct iovec v[2] = IOV2(b, n);
  return pwritev64(io->fd, v, 2, 0);
}
static ssize_t r_send(io_t *io, unsigned char *b, size_t n) { return send(io->sock[0], b, n, 0); }
static ssize_t r___send(io_t *io, unsigned char *b, size_t n) {
  return __send(io->sock[0], b, n, 0);
}
static ssize_t r_sendto(io_t *io, unsigned char *b, size_t n) {
  return sendto(io->sock[0], b, n, 0, NULL, 0);
}
static ssize_t r_sendmsg(io_t *io, unsigned char *b, size_t n) {
  struct iovec v[2] = IOV2(b, n);
  struct msghdr m = {.msg_iov = v, .msg_iovlen = 2};
  return sendmsg(io->sock[0], &m, 0);
}
static ssize_t r_pwritev2(io_t *io, unsigned char *b, size_t n) {
  struct iovec v[2] = IOV2(b, n);
  return pwritev2(io->fd, v, 2, 0, 0);
}
static ssize_t r_pwritev64v2(io_t *io, unsigned char *b, size_t n) {
  struct iovec v[2] = IOV2(b, n);
  return pwritev64v2(io->fd, v, 2, 0, 0);
}
static ssize_t r_sendmmsg(io_t *io, unsigned char *b, size_t n) {
  struct iovec v[2] = IOV2(b, n);
  struct mmsghdr m[2] = {{.msg_hdr = {.msg_iov = &v[0], .msg_iovlen = 1}},
                         {.msg_hdr = {.msg_iov = &v[1], .msg_iovlen = 1}}};
  return sendmmsg(io->sock[0], m, 2, 0) == 2 ? (ssize_t)(m[0].msg_len + m[1].msg_len) : -1;
}
static ssize_t r_fwrite(io_t *io, unsigned char *b, size_t n) {
  return (ssize_t)fwrite(b, 1, n, io->f);
}
static ssize_t r_fwrite_unlocked(io_t *io, unsigned char *b, size_t n) {
  return (ssize_t)fwrite_unlocked(b, 1, n, io->f);
}
static ssize_t r_vmsplice(io_t *io, unsigned char *b, size_t n) {
  struct iovec v[2] = IOV2(b, n);
  return vmsplice(io->pipe[1], v, 2, 0);
}
static ssize_t r_process_vm_writev(io_t *io, unsigned char *b, size_t n) {
  struct iovec l[2] = IOV2(b, n), r = {io->other, n};
  return process_vm_writev(getpid(), l, 2, &r, 1, 0);
}
static ssize_t r_aio_write(io_t *io, unsigned char *b, size_t n) {
  struct aiocb cb = AIOCB(b, n, 0);
  return aio_write(&cb) ? -1 : aio_wait(&cb);
}
static ssize_t r_aio_write64(io_t *io, unsigned char *b, size_t n) {
  struct aiocb64 cb = AIOCB(b, n, 0);
  return aio_write64(&cb) ? -1 : aio_wait64(&cb);
}
static ssize_t r_lio_listio(io_t *io, unsigned char *b, size_t n) {
  struct aiocb cb = AIOCB(b, n, LIO_WRITE), *l[1] = {&cb};
  return lio_listio(LIO_WAIT, l, 1, NULL) ? -1 : aio_wait(&cb);
}
static ssize_t r_lio_listio64(io_t *io, unsigned char *b, size_t n) {
  struct aiocb64 cb = AIOCB(b, n, LIO_WRITE), *l[1] = {&cb};
  return lio_listio64(LIO_WAIT, l, 1, NULL) ? -1 : aio_wait64(&cb);
}
static ssize_t r_mq_send(io_t *io, unsigned char *b, size_t n) {
  return mq_send(io->q, (const char *)b, n, 0) ? -1 : (ssize_t)n;
}
static ssize_t r_mq_timedsend(io_t *io, unsigned char *b, size_t n) {
  struct timespec t = {.tv_sec = time(NULL) + 10};
  return mq_timedsend(io->q, (const char *)b, n, 0, &t) ? -1 : (ssize_t)n;
}
static ssize_t r_io_submit_pwrite(io_t *io, unsigned char *b, size_t n) {
  return kernel_aio(io, IOCB_CMD_PWRITE, b, n);
}
static ssize_t r_io_submit_pwritev(io_t *io, unsigned char *b, size_t n) {
  return kernel_aio(io, IOCB_CMD_PWRITEV, b, n);
}
/* The message's mtype sits just before the buffer, on a page the device does not touch. */
static ssize_t r_msgsnd(io_t *io, unsigned char *b, size_t n) {
  return msgsnd(io->msq, b - sizeof(long), n, 0) ? -1 : (ssize_t)n;
}

/* Strings: libc measures them (a CPU read, which faults) before the kernel sees them. */
static ssize_t r_fputs(io_t *io, unsigned char *b, size_t n) {
  return fputs((const char *)b, io->f) < 0 ? -1 : (ssize_t)n;
}
static ssize_t r_fputs_unlocked(io_t *io, unsigned char *b, size_t n) {
  return fputs_unlocked((const char *)b, io->f) < 0 ? -1 : (ssize_t)n;
}
static ssize_t r_fprintf(io_t *io, unsigned char *b, size_t n) {
  (void)n;
  return fprintf(io->f, "%s", (const char *)b);
}
static ssize_t r_dprintf(io_t *io, unsigned char *b, size_t n) {
  return dprintf(io->fd, "%.*s", (int)n, (const char *)b);
}

/* ---- calls that fill the buffer --------------------------------------------------------------- */
static ssize_t w_read(io_t *io, unsigned char *b, size_t n) { return read(io->fd, b, n); }
static ssize_t w___read(io_t *io, unsigned char *b, size_t n) { return __read(io->fd, b, n); }
static ssize_t w___read_chk(io_t *io, unsigned char *b, size_t n) {
  return __read_chk(io->fd, b, n, n);
}
static ssize_t w_pread(io_t *io, unsigned char *b, size_t n) { return pread(io->fd, b, n, 0); }
static ssize_t w___pread_chk(io_t *io, unsigned char *b, size_t n) {
  return __pread_chk(io->fd, b, n, 0, n);
}
static ssize_t w_pread64(io_t *io, unsigned char *b, size_t n) {
  return pread64(io->fd, b, n, 0);
}
static ssize_t w___pread64(io_t *io, unsigned char *b, size_t n) {
  return __pread64(io->fd, b, n, 0);
}
static ssize_t w___pread64_chk(io_t *io, unsigned char *b, size_t n) {
  return __pread64_chk(io->fd, b, n, 0, n);
}
static ssize_t w_readv(io_t *io, unsigned char *b, size_t n) {
  struct iovec v[2] = IOV2(b, n);
  return readv(io->fd, v, 2);
}
static ssize_t w_recv(io_t *io, unsigned char *b, size_t n) {
  return recv(io->sock[1], b, n, MSG_WAITALL);
}
static ssize_t w___recv_chk(io_t *io, unsigned char *b, size_t n) {
  return __recv_chk(io->sock[1], b, n, n, MSG_WAITALL);
}
static ssize_t w_recvfrom(io_t *io, unsigned char *b, size_t n) {
  return recvfrom(io->sock[1], b, n, MSG_WAITALL, NULL, NULL);
}
static ssize_t w___recvfrom_chk(io_t *io, unsigned char *b, size_t n) {
  return __recvfrom_chk(io->sock[1], b, n, n, MSG_WAITALL, NULL, NULL);
}
static ssize_t w_recvmsg(io_t *io, unsigned char *b, size_t n) {
  struct iovec v[2] = IOV2(b, n);
  struct msghdr m = {.msg_iov = v, .msg_iovlen = 2};
  return recvmsg(io->sock[1], &m, MSG_WAITALL);
}
static ssize_t w_preadv(io_t *io, unsigned char *b, size_t n) {
  struct iovec v[2] = IOV2(b, n);
  return preadv(io->fd, v, 2, 0);
}
static ssize_t w_preadv64(io_t *io, unsigned char *b, size_t n) {
  struct iovec v[2] = IOV2(b, n);
  return preadv64(io->fd, v, 2, 0);
}
static ssize_t w_preadv2(io_t *io, unsigned char *b, size_t n) {
  struct iovec v[2] = IOV2(b, n);
  return preadv2(io->fd, v, 2, 0, 0);
}
static ssize_t w_preadv64v2(io_t *io, unsigned char *b, size_t n) {
  struct iovec v[2] = IOV2(b, n);
  return preadv64v2(io->fd, v, 2, 0, 0);
}
static ssize_t w_recvmmsg(io_t *io, unsigned char *b, size_t n) {
  struct iovec v[2] = IOV2(b, n);
  struct mmsghdr m[2] = {{.msg_hdr = {.msg_iov = &v[0], .msg_iovlen = 1}},
                         {.msg_hdr = {.msg_iov = &v[1], .msg_iovlen = 1}}};
  return recvmmsg(io->sock[1], m, 2, 0, NULL) == 2
             ? (ssize_t)(m[0].msg_len + m[1].msg_len) : -1;
}
static ssize_t w_fread(io_t *io, unsigned char *b, size_t n) {
  return (ssize_t)fread(b, 1, n, io->f);
}
static ssize_t w_fread_unlocked(io_t *io, unsigned char *b, size_t n) {
  return (ssize_t)fread_unlocked(b, 1, n, io->f);
}
static ssize_t w_fread_chk(io_t *io, unsigned char *b, size_t n) {
  return (ssize_t)__fread_chk(b, n, 1, n, io->f);
}
static ssize_t w_fread_unlocked_chk(io_t *io, unsigned char *b, size_t n) {
  return (ssize_t)__fread_unlocked_chk(b, n, 1, n, io->f);
}
static ssize_t w_vmsplice(io_t *io, unsigned char *b, size_t n) {
  struct iovec v[2] = IOV2(b, n);
  return vmsplice(io->pipe[0], v, 2, 0);
}
static ssize_t w_process_vm_readv(io_t *io, unsigned char *b, size_t n) {
  struct iovec l[2] = IOV2(b, n), r = {io->other, n};
  return process_vm_readv(getpid(), l, 2, &r, 1, 0);
}
static ssize_t w_aio_read(io_t *io, unsigned char *b, size_t n) {
  struct aiocb cb = AIOCB(b, n, 0);
  return aio_read(&cb) ? -1 : aio_wait(&cb);
}
static ssize_t w_aio_read64(io_t *io, unsigned char *b, size_t n) {
  struct aiocb64 cb = AIOCB(b, n, 0);
  return aio_read64(&cb) ? -1 : aio_wait64(&cb);
}
static ssize_t w_lio_listio(io_t *io, unsigned char *b, size_t n) {
  struct aiocb cb = AIOCB(b, n, LIO_READ), *l[1] = {&cb};
  return lio_listio(LIO_WAIT, l, 1, NULL) ? -1 : aio_wait(&cb);
}
static ssize_t w_lio_listio64(io_t *io, unsigned char *b, size_t n) {
  struct aiocb64 cb = AIOCB(b, n, LIO_READ), *l[1] = {&cb};
  return lio_listio64(LIO_WAIT, l, 1, NULL) ? -1 : aio_wait64(&cb);
}
static ssize_t w_io_submit_pread(io_t *io, unsigned char *b, size_t n) {
  return kernel_aio(io, IOCB_CMD_PREAD, b, n);
}
static ssize_t w_io_submit_preadv(io_t *io, unsigned char *b, size_t n) {
  return kernel_aio(io, IOCB_CMD_PREADV, b, n);
}
static ssize_t w_mq_receive(io_t *io, unsigned char *b, size_t n) {
  return mq_receive(io->q, (char *)b, n, NULL);
}
static ssize_t w_mq_timedreceive(io_t *io, unsigned char *b, size_t n) {
  struct timespec t = {.tv_sec = time(NULL) + 10};
  return mq_timedreceive(io->q, (char *)b, n, NULL, &t);
}
static ssize_t w_msgrcv(io_t *io, unsigned char *b, size_t n) {
  return msgrcv(io->msq, b - sizeof(long), n, 0, 0);
}
static ssize_t w_getrandom(io_t *io, unsigned char *b, size_t n) {
  (void)io;
  return getrandom(b, n, 0);
}
static ssize_t w_getentropy(io_t *io, unsigned char *b, size_t n) {
  (void)io;
  return getentropy(b, n) ? -1 : (ssize_t)n;
}

/* n: the bytes one call moves (message queues are limited to 8 KiB, getentropy to 256 bytes). */
static const struct {
  const char *name;
  side_t side;
  sink_t where;
  size_t n;
  run_fn run;
} calls[] = {
    {"write", SENDS, TO_FILE, N, r_write},
    {"__write", SENDS, TO_FILE, N, r___write},
    {"pwrite", SENDS, TO_FILE, N, r_pwrite},
    {"pwrite64", SENDS, TO_FILE, N, r_pwrite64},
    {"__pwrite64", SENDS, TO_FILE, N, r___pwrite64},
    {"writev", SENDS, TO_FILE, N, r_writev},
    {"pwritev", SENDS, TO_FILE, N, r_pwritev},
    {"pwritev64", SENDS, TO_FILE, N, r_pwritev64},
    {"send", SENDS, TO_SOCK, N, r_send},
    {"__send", SENDS, TO_SOCK, N, r___send},
    {"sendto", SENDS, TO_SOCK, N, r_sendto},
    {"sendmsg", SENDS, TO_SOCK, N, r_sendmsg},
    {"pwritev2", SENDS, TO_FILE, N, r_pwritev2},
    {"pwritev64v2", SENDS, TO_FILE, N, r_pwritev64v2},
    {"sendmmsg", SENDS, TO_SOCK, N, r_sendmmsg},
    {"fwrite", SENDS, TO_FILE, N, r_fwrite},
    {"fwrite_unlocked", SENDS, TO_FILE, N, r_fwrite_unlocked},
    {"vmsplice.to_pipe", SENDS, TO_PIPE, N, r_vmsplice},
    {"process_vm_writev", SENDS, TO_OTHER, N, r_process_vm_writev},
    {"aio_write", SENDS, TO_FILE, N, r_aio_write},
    {"aio_write64", SENDS, TO_FILE, N, r_aio_write64},
    {"lio_listio.write", SENDS, TO_FILE, N, r_lio_listio},
    {"lio_listio64.write", SENDS, TO_FILE, N, r_lio_listio64},
    {"io_submit.pwrite", SENDS, TO_FILE, N, r_io_submit_pwrite},
    {"io_submit.pwritev", SENDS, TO_FILE, N, r_io_submit_pwritev},
    {"mq_send", SENDS, TO_MQ, 8192, r_mq_send},
    {"mq_timedsend", SENDS, TO_MQ, 8192, r_mq_timedsend},
    {"msgsnd", SENDS, TO_MSQ, 8192, r_msgsnd},
    {"fputs", SENDS, TO_FILE, N, r_fputs},
    {"fputs_unlocked", SENDS, TO_FILE, N, r_fputs_unlocked},
    {"fprintf", SENDS, TO_FILE, N, r_fprintf},
    {"dprintf", SENDS, TO_FILE, N, r_dprintf},
    {"read", FILLS, TO_FILE, N, w_read},
    {"__read", FILLS, TO_FILE, N, w___read},
    {"__read_chk", FILLS, TO_FILE, N, w___read_chk},
    {"pread", FILLS, TO_FILE, N, w_pread},
    {"__pread_chk", FILLS, TO_FILE, N, w___pread_chk},
    {"pread64", FILLS, TO_FILE, N, w_pread64},
    {"__pread64", FILLS, TO_FILE, N, w___pread64},
    {"__pread64_chk", FILLS, TO_FILE, N, w___pread64_chk},
    {"readv", FILLS, TO_FILE, N, w_readv},
    {"recv", FILLS, TO_SOCK, N, w_recv},
    {"__recv_chk", FILLS, TO_SOCK, N, w___recv_chk},
    {"recvfrom", FILLS, TO_SOCK, N, w_recvfrom},
    {"__recvfrom_chk", FILLS, TO_SOCK, N, w___recvfrom_chk},
    {"recvmsg", FILLS, TO_SOCK, N, w_recvmsg},
    {"preadv", FILLS, TO_FILE, N, w_preadv},
    {"preadv64", FILLS, TO_FILE, N, w_preadv64},
    {"preadv2", FILLS, TO_FILE, N, w_preadv2},
    {"preadv64v2", FILLS, TO_FILE, N, w_preadv64v2},
    {"recvmmsg", FILLS, TO_SOCK, N, w_recvmmsg},
    {"fread", FILLS, TO_FILE, N, w_fread},
    {"fread_unlocked", FILLS, TO_FILE, N, w_fread_unlocked},
    {"__fread_chk", FILLS, TO_FILE, N, w_fread_chk},
    {"__fread_unlocked_chk", FILLS, TO_FILE, N, w_fread_unlocked_chk},
    {"vmsplice.from_pipe", FILLS, TO_PIPE, N, w_vmsplice},
    {"process_vm_readv", FILLS, TO_OTHER, N, w_process_vm_readv},
    {"aio_read", FILLS, TO_FILE, N, w_aio_read},
    {"aio_read64", FILLS, TO_FILE, N, w_aio_read64},
    {"lio_listio.read", FILLS, TO_FILE, N, w_lio_listio},
    {"lio_listio64.read", FILLS, TO_FILE, N, w_lio_listio64},
    {"io_submit.pread", FILLS, TO_FILE, N, w_io_submit_pread},
    {"io_submit.preadv", FILLS, TO_FILE, N, w_io_submit_preadv},
    {"mq_receive", FILLS, TO_MQ, 8192, w_mq_receive},
    {"mq_timedreceive", FILLS, TO_MQ, 8192, w_mq_timedreceive},
    {"msgrcv", FILLS, TO_MSQ, 8192, w_msgrcv},
    {"getrandom", FILLS, NOWHERE, N, w_getrandom},
    {"getentropy", FILLS, NOWHERE, 256, w_getentropy},
};

/* Sets up every sink; a filling call's source (where) already holds n bytes of SRC_BYTE. */
static int g_msq = -1;
static void remove_msq(void) {
  if (g_msq >= 0) msgctl(g_msq, IPC_RMID, NULL);
}

static void setup(io_t *io, side_t side, sink_t where, size_t n) {
  char path[] = "/tmp/pg_guard_io.XXXXXX";
  io->other = malloc(N);
  io->msgbuf = malloc(sizeof(long) + N);
  memset(io->other, side == FILLS ? SRC_BYTE : 0, N);
  io->fd = mkstemp(path);
  if (io->fd < 0 || unlink(path) ||
      (side == FILLS && (write(io->fd, io->other, N) != (ssize_t)N || lseek(io->fd, 0, SEEK_SET))))
    exit(2);
  io->f = fdopen(dup(io->fd), "r+");
  struct mq_attr a = {.mq_maxmsg = 1, .mq_msgsize = 8192};
  char qname[64];
  snprintf(qname, sizeof qname, "/pg_guard_io.%d", (int)getpid());
  io->q = mq_open(qname, O_CREAT | O_EXCL | O_RDWR, 0600, &a);
  bool unlinked = io->q == (mqd_t)-1 || mq_unlink(qname) == 0; /* whatever fails below */
  io->msq = msgget(IPC_PRIVATE, 0600);
  /* A System V queue outlives its process: removed at exit, or runs would use up msgmni. */
  if (io->msq >= 0) {
    g_msq = io->msq;
    atexit(remove_msq);
  }
  if (!io->f || io->q == (mqd_t)-1 || !unlinked || io->msq < 0 || pipe(io->pipe) ||
      socketpair(AF_UNIX, SOCK_STREAM, 0, io->sock)) {
    perror("setup");
    exit(2);
  }
  io->msgbuf[0] = 1;
  memcpy(io->msgbuf + 1, io->other, n);
  int bad = 0;
  if (side == FILLS && where == TO_PIPE) bad = write(io->pipe[1], io->other, n) != (ssize_t)n;
  if (side == FILLS && where == TO_SOCK)
    bad = send(io->sock[0], io->other, n / 2, 0) != (ssize_t)(n / 2) ||
          send(io->sock[0], io->other, n / 2, 0) != (ssize_t)(n / 2);
  if (side == FILLS && where == TO_MQ) bad = mq_send(io->q, (const char *)io->other, n, 0);
  if (side == FILLS && where == TO_MSQ) bad = msgsnd(io->msq, io->msgbuf, n, 0);
  if (bad) {
    perror("setup of the source");
    exit(2);
  }
}

/* Reads back into out what a sending call delivered. */
static int collect(io_t *io, sink_t where, unsigned char *out, size_t n) {
  size_t have = 0;
  switch (where) {
  case TO_FILE:
    return fflush(io->f) || pread(io->fd, out, n, 0) != (ssize_t)n;
  case TO_SOCK:
    while (have < n) {
      ssize_t r = recv(io->sock[1], out + have, n - have, 0);
      if (r <= 0) return 1;
      have += (size_t)r;
    }
    return 0;
  case TO_PIPE:
    while (have < n) {
      ssize_t r = read(io->pipe[0], out + have, n - have);
      if (r <= 0) return 1;
      have += (size_t)r;
    }
    return 0;
  case TO_OTHER:
    memcpy(out, io->other, n);
    return 0;
  case TO_MQ:
    return mq_receive(io->q, (char *)out, 8192, NULL) != (ssize_t)n;
  case TO_MSQ:
    if (msgrcv(io->msq, io->msgbuf, n, 0, 0) != (ssize_t)n) return 1;
    memcpy(out, io->msgbuf + 1, n);
    return 0;
  case NOWHERE:
    break;
  }
  return 1;
}

/* "0xNN" when all n bytes are NN, else "mixed". */
static const char *uniform(const unsigned char *p, size_t n, char *text) {
  for (size_t i = 1; i < n; i++)
    if (p[i] != p[0]) return "mixed";
  snprintf(text, 8, "0x%02x", p[0]);
  return text;
}

int main(int argc, char **argv) {
  if (argc < 3 || (strcmp(argv[1], "bug") && strcmp(argv[1], "fixed") &&
                   strcmp(argv[1], "reader"))) {
    fprintf(stderr, "usage: %s bug|fixed|reader CALL\n", argv[0]);
    return 2;
  }
  int bug = strcmp(argv[1], "fixed") != 0, reader = strcmp(argv[1], "reader") == 0;
  size_t c = 0;
  while (c < sizeof calls / sizeof calls[0] && strcmp(calls[c].name, argv[2])) c++;
  if (c == sizeof calls / sizeof calls[0]) {
    fprintf(stderr, "unknown call %s\n", argv[2]);
    return 2;
  }
  side_t side = calls[c].side;
  size_t n = calls[c].n, span = n < PAGE ? PAGE : n;
  io_t io;
  setup(&io, side, calls[c].where, n);

  /* The device access covers the buffer b (at least a page of it); the page before it stays
   * the CPU's (a System V message's mtype lives there), and so does the NUL after it that ends
   * a string. */
  unsigned char *host, *b, *out = malloc(N), *dev_saw = malloc(N);
  void *dev;
  cudaStream_t s;
  char t1[8], t2[8];
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaHostAlloc((void **)&host, BUF_BYTES, cudaHostAllocDefault));
  CHECK(cudaMalloc(&dev, BUF_BYTES));
  b = host + PAGE;
  ((long *)b)[-1] = 1;
  b[span] = 0;
  if (side == SENDS && !reader) {
    memset(b, ' ', span); /* not 0: a string's length must not depend on the race */
    CHECK(cudaMemsetAsync(dev, DEV_BYTE, span, s)); /* same stream: ordered before the copy */
    CHECK(cudaMemcpyAsync(b, dev, span, cudaMemcpyDeviceToHost, s));
  } else {
    memset(b, side == SENDS ? DEV_BYTE : OLD_BYTE, span);
    CHECK(cudaMemcpyAsync(dev, b, span, cudaMemcpyHostToDevice, s));
  }
  if (!bug) CHECK(cudaStreamSynchronize(s));

  errno = 0;
  ssize_t got = calls[c].run(&io, b, n);
  if (got != (ssize_t)n) {
    printf("%s failed: %zd of %zu bytes (%s)\n", argv[2], got, n, strerror(errno));
    return 1;
  }
  CHECK(cudaStreamSynchronize(s));
  if (side == SENDS) {
    if (collect(&io, calls[c].where, out, n)) {
      printf("%s: the bytes sent did not arrive\n", argv[2]);
      return 1;
    }
    printf("%s transferred %zu of %zu bytes: %s\n", argv[2], n, n, uniform(out, n, t1));
  } else {
    CHECK(cudaMemcpy(dev_saw, dev, n, cudaMemcpyDeviceToHost));
    printf("%s transferred %zu of %zu bytes: %s, device read %s\n", argv[2], n, n,
           calls[c].where == NOWHERE ? "random" : uniform(b, n, t1), uniform(dev_saw, n, t2));
  }
  CHECK(cudaFreeHost(host));
  CHECK(cudaFree(dev));
  CHECK(cudaStreamDestroy(s));
  return 0;
}
