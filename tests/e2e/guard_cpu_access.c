/* Intent: guard pages catch plain CPU accesses to in-flight pinned buffers, with no CUDA call at
 * the moment of harm. "read": memcpy out of the destination of an in-flight device->host copy
 * (cpu-read-during-device-write). "write": memset into the source of an in-flight host->device
 * copy (cpu-write-during-device-access). Enforce waits, so the read sees the copied bytes and
 * the device reads the old ones. The fixed twin synchronizes first. "write_after_io": the same
 * write, after the buffer was first handed to write(2), which only reads it as the device does
 * (no conflict, and the buffer must stay guarded against the store).
 * Usage: bug|fixed read|write|write_after_io. */
// SCENARIO: guard_read cpu-read-during-device-write ARGS read ENV ${GUARD_ENV}
// SCENARIO: guard_write cpu-write-during-device-access ARGS write ENV ${GUARD_ENV}
// A write(2) that only reads a buffer the device is reading leaves it guarded.
// SCENARIO: guard_write_after_io cpu-write-during-device-access ARGS write_after_io ENV ${GUARD_ENV}
// Enforce waits before the access, so the bytes are the new ones.
// CASE: guard_read.enforce_data MODE enforce EXPECT cpu-read-during-device-write ARGS bug read
//   STDOUT "read byte 0x5a" ENV ${GUARD_ENV} ${PG_WAIT_LATENCY}
// CASE: guard_write.enforce_data MODE enforce EXPECT cpu-write-during-device-access
//   ARGS bug write STDOUT "device got byte 0x11" ENV ${GUARD_ENV} ${PG_WAIT_LATENCY}
// One memcpy over many guarded pages is one CPU access, so one violation in the exit summary.
// CASE: guard_read.one_violation MODE audit EXPECT cpu-read-during-device-write ARGS bug read
//   STDERR "pinguard: 1 report [(]" ENV ${GUARD_ENV}

#include <fcntl.h>
#include <unistd.h>

#include "e2e.h"

int main(int argc, char **argv) {
  int bug = e2e_is_bug(argc, argv);
  int after_io = argc > 2 && strcmp(argv[2], "write_after_io") == 0;
  int do_read = argc < 3 || (strcmp(argv[2], "write") != 0 && !after_io);
  unsigned char *host, *check = malloc(BUF_BYTES);
  void *dev;
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaHostAlloc((void **)&host, BUF_BYTES, cudaHostAllocDefault));
  CHECK(cudaMalloc(&dev, BUF_BYTES));
  if (do_read) {
    memset(host, 0, BUF_BYTES);
    CHECK(cudaMemsetAsync(dev, 0x5a, BUF_BYTES, s)); /* same stream: ordered before the copy */
    CHECK(cudaMemcpyAsync(host, dev, BUF_BYTES, cudaMemcpyDeviceToHost, s));
    if (!bug) CHECK(cudaStreamSynchronize(s));
    memcpy(check, host, BUF_BYTES); /* the serializer's read */
    printf("read byte 0x%02x\n", check[BUF_BYTES / 2]);
  } else {
    memset(host, 0x11, BUF_BYTES);
    CHECK(cudaMemcpyAsync(dev, host, BUF_BYTES, cudaMemcpyHostToDevice, s));
    if (!bug) CHECK(cudaStreamSynchronize(s));
    if (after_io) { /* the kernel reads the buffer too: no conflict with the device's read */
      int fd = open("/dev/null", O_WRONLY);
      if (fd < 0 || write(fd, host, BUF_BYTES) != (ssize_t)BUF_BYTES) return 2;
      close(fd);
    }
    memset(host, 0x22, BUF_BYTES); /* the next user's overwrite */
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaMemcpy(check, dev, BUF_BYTES, cudaMemcpyDeviceToHost));
    printf("device got byte 0x%02x\n", check[BUF_BYTES / 2]);
  }
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaFreeHost(host));
  CHECK(cudaFree(dev));
  CHECK(cudaStreamDestroy(s));
  free(check);
  return 0;
}
