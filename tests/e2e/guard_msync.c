/* Intent: msync of a registered MAP_SHARED file mapping publishes its bytes to the file, like a
 * write(2) of them. With a device->host copy into the mapping in flight: audit reports
 * syscall-read-during-device-write; enforce waits first, so the file holds the device's bytes.
 * The fixed twin synchronizes the copy first. Prints "file holds the device's bytes" when every
 * byte of the file is the device's. Usage: bug|fixed. */
// CASE: guard_msync.bug.${mode} MODE ${mode} EXPECT syscall-read-during-device-write ARGS bug
//   ENV SIMCUDA_LATENCY_US=20000 FOR mode IN audit enforce
// CASE: guard_msync.fixed.${mode} MODE ${mode} EXPECT none ARGS fixed
//   STDOUT "file holds the device's bytes" FOR mode IN audit enforce
// CASE: guard_msync.enforce_data MODE enforce EXPECT syscall-read-during-device-write ARGS bug
//   STDOUT "file holds the device's bytes" ENV SIMCUDA_LATENCY_US=20000

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "e2e.h"

#define N (64u * 1024u)
enum { OLD = 0x11, DEV = 0x6b };

int main(int argc, char **argv) {
  int bug = e2e_is_bug(argc, argv);
  char path[] = "/tmp/pg_guard_msync.XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0 || unlink(path) || ftruncate(fd, N)) return 2;
  unsigned char *m = mmap(NULL, N, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) return 2;
  memset(m, OLD, N);
  CHECK(cudaHostRegister(m, N, cudaHostRegisterDefault));
  void *dev;
  CHECK(cudaMalloc(&dev, N));
  CHECK(cudaMemset(dev, DEV, N));
  CHECK(cudaDeviceSynchronize());
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaMemcpyAsync(m, dev, N, cudaMemcpyDeviceToHost, s));
  if (!bug) CHECK(cudaStreamSynchronize(s));
  if (msync(m, N, MS_SYNC) != 0) return 3; /* the file now holds what the mapping held */
  static unsigned char file[N];
  if (pread(fd, file, N, 0) != (ssize_t)N) return 4;
  CHECK(cudaStreamSynchronize(s));
  size_t devs = 0;
  for (size_t i = 0; i < N; i++) devs += file[i] == DEV;
  if (devs == N) puts("file holds the device's bytes");
  else printf("file holds %zu of the device's bytes\n", devs);
  CHECK(cudaHostUnregister(m));
  munmap(m, N);
  close(fd);
  CHECK(cudaFree(dev));
  CHECK(cudaStreamDestroy(s));
  return 0;
}
