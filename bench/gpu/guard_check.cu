// guard_check.cu: do guard pages catch CPU accesses to in-flight pinned memory on a real GPU,
// for each kind of pinned memory? For cudaHostAlloc, malloc + cudaHostRegister and
// mmap(MAP_SHARED) + cudaHostRegister: a device->host copy queued behind a spinning kernel, then
// an immediate CPU read (fresh bytes only if something made the read wait); a host->device copy
// likewise, then an immediate CPU write (the device keeps the old bytes only if the write
// waited). Prints one JSON line per kind and direction. Run with and without pinguard.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define CHECK(x)                                                                  \
  do {                                                                            \
    cudaError_t e_ = (x);                                                         \
    if (e_ != cudaSuccess) {                                                      \
      fprintf(stderr, "guard_check: %s: %s\n", #x, cudaGetErrorString(e_));       \
      exit(3);                                                                    \
    }                                                                             \
  } while (0)

static const size_t kBytes = 4 << 20;

__global__ void spin(long long cycles) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

static unsigned char *pin(const char *kind) {
  void *p = NULL;
  if (!strcmp(kind, "cudaHostAlloc")) {
    CHECK(cudaHostAlloc(&p, kBytes, cudaHostAllocDefault));
  } else if (!strcmp(kind, "register-private")) {
    if (posix_memalign(&p, 4096, kBytes)) exit(3);
    memset(p, 0, kBytes);
    CHECK(cudaHostRegister(p, kBytes, cudaHostRegisterDefault));
  } else {
    p = mmap(NULL, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) exit(3);
    CHECK(cudaHostRegister(p, kBytes, cudaHostRegisterDefault));
  }
  return (unsigned char *)p;
}

int main(int argc, char **argv) {
  long long cycles = argc > 1 ? atoll(argv[1]) : 400000000LL; // about 0.2 s at 1.98 GHz
  const char *kinds[] = {"cudaHostAlloc", "register-private", "register-shared"};
  unsigned char *dev;
  CHECK(cudaMalloc((void **)&dev, kBytes));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (int k = 0; k < 3; k++) {
    unsigned char *host = pin(kinds[k]);
    // Device -> host, then a CPU read: stale (0) unless the read waited for the copy.
    memset(host, 0, kBytes);
    CHECK(cudaMemset(dev, 0x5a, kBytes));
    CHECK(cudaDeviceSynchronize());
    spin<<<1, 1, 0, s>>>(cycles);
    CHECK(cudaMemcpyAsync(host, dev, kBytes, cudaMemcpyDeviceToHost, s));
    unsigned char seen = ((volatile unsigned char *)host)[kBytes / 2];
    CHECK(cudaStreamSynchronize(s));
    printf("{\"kind\":\"%s\",\"case\":\"read-during-d2h\",\"waited\":%s}\n", kinds[k],
           seen == 0x5a ? "true" : "false");
    // Host -> device, then a CPU write: the device gets 0x11 unless the write waited.
    memset(host, 0x22, kBytes);
    spin<<<1, 1, 0, s>>>(cycles);
    CHECK(cudaMemcpyAsync(dev, host, kBytes, cudaMemcpyHostToDevice, s));
    ((volatile unsigned char *)host)[kBytes / 2] = 0x11;
    CHECK(cudaStreamSynchronize(s));
    unsigned char got;
    CHECK(cudaMemcpy(&got, dev + kBytes / 2, 1, cudaMemcpyDeviceToHost));
    printf("{\"kind\":\"%s\",\"case\":\"write-during-h2d\",\"waited\":%s}\n", kinds[k],
           got == 0x22 ? "true" : "false");
    fflush(stdout);
    if (k == 0) CHECK(cudaFreeHost(host));
    else {
      CHECK(cudaHostUnregister(host));
      if (k == 1) free(host);
      else munmap(host, kBytes);
    }
  }
  CHECK(cudaFree(dev));
  return 0;
}
