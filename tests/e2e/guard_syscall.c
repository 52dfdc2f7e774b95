/* Intent: a system call given an in-flight buffer is checked before it runs: write(2) to a pipe
 * and send(2) on a socket of the destination of an in-flight device->host copy are reported as
 * syscall-read-during-device-write, and neither fails with EFAULT although the pages are guarded.
 * Enforce waits, so the bytes sent are the copied ones. Usage: bug|fixed write|send. */
// SCENARIO: guard_syscall_write syscall-read-during-device-write ARGS write ENV ${GUARD_ENV}
// SCENARIO: guard_send syscall-read-during-device-write ARGS send ENV ${GUARD_ENV}
// Enforce waits before the call, so the bytes sent are the copied ones.
// CASE: guard_send.enforce_data MODE enforce EXPECT syscall-read-during-device-write
//   ARGS bug send STDOUT "first byte 0x6b" ENV ${GUARD_ENV} ${PG_WAIT_LATENCY}
// The system-call checks work without guard pages too.
// CASE: syscall_no_guard MODE audit EXPECT syscall-read-during-device-write ARGS bug send

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include "e2e.h"

int main(int argc, char **argv) {
  int bug = e2e_is_bug(argc, argv);
  int use_send = argc > 2 && strcmp(argv[2], "send") == 0;
  unsigned char *host, *got = malloc(BUF_BYTES);
  void *dev;
  cudaStream_t s;
  int fds[2];
  if (use_send ? socketpair(AF_UNIX, SOCK_STREAM, 0, fds) : pipe(fds)) return 2;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaHostAlloc((void **)&host, BUF_BYTES, cudaHostAllocDefault));
  CHECK(cudaMalloc(&dev, BUF_BYTES));
  memset(host, 0, BUF_BYTES);
  CHECK(cudaMemsetAsync(dev, 0x6b, BUF_BYTES, s)); /* same stream: ordered before the copy */
  CHECK(cudaMemcpyAsync(host, dev, BUF_BYTES, cudaMemcpyDeviceToHost, s));
  if (!bug) CHECK(cudaStreamSynchronize(s));
  /* 64 KiB fits a pipe's or a socket's buffer, so one call sends it without a reader. */
  size_t n = 64 * 1024;
  ssize_t sent = use_send ? send(fds[0], host + 4096, n, 0) : write(fds[1], host + 4096, n);
  if (sent != (ssize_t)n) {
    printf("%s failed: %zd (%s)\n", use_send ? "send" : "write", sent, strerror(errno));
    return 1;
  }
  size_t have = 0;
  while (have < n) {
    ssize_t r = read(use_send ? fds[1] : fds[0], got + have, n - have);
    if (r <= 0) return 1;
    have += (size_t)r;
  }
  printf("sent %zu bytes, first byte 0x%02x\n", n, got[0]);
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaFreeHost(host));
  CHECK(cudaFree(dev));
  CHECK(cudaStreamDestroy(s));
  free(got);
  return 0;
}
