/* Intent: hugetlb memory is guarded in whole huge pages or not at all, and no EINVAL from a
 * misaligned mprotect ever reaches anyone. A MAP_HUGETLB buffer (2 MiB) is registered and a
 * device->host copy into it is in flight while the CPU reads it; then an ordinary private buffer
 * gets the same, and its read must still be caught (a failed probe on the huge pages must not
 * turn guarding off for all registered private memory).
 * Exits 77 (skipped) when no huge page can be mapped. Usage: safe_hugetlb */
// Skipped where no huge page can be mapped (as root: vm.nr_hugepages).
// SAFE: hugetlb OPTIONS mode=audit:guard=1:exitcode=0 SKIP_RETURN_CODE 77
//   CHECK --stdout "after the syncs 0x5a 0x5a" --stderr "hugetlb memory is not guarded"
//   --no-stderr "mprotect fails|Invalid argument|in read_huge"
//   --count "ERROR: cpu-read-during-device-write" 1

#include <errno.h>
#include <sys/mman.h>

#include "e2e.h"

#define HUGE (2u << 20)
#define SMALL (256u * 1024u)

static __attribute__((noipa)) unsigned char read_huge(const unsigned char *p) {
  return ((volatile const unsigned char *)p)[HUGE / 2];
}
static __attribute__((noipa)) unsigned char read_small(const unsigned char *p) {
  return ((volatile const unsigned char *)p)[SMALL / 2 + 1];
}

int main(void) {
  unsigned char *huge = mmap(NULL, HUGE, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
  if (huge == MAP_FAILED) {
    printf("skipped: no huge page can be mapped (%s); as root: sysctl vm.nr_hugepages=2\n",
           strerror(errno));
    return 77;
  }
  memset(huge, 0, HUGE);
  unsigned char *small = mmap(NULL, SMALL, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                              -1, 0);
  if (small == MAP_FAILED) return 2;
  memset(small, 0, SMALL);
  CHECK(cudaHostRegister(huge, HUGE, cudaHostRegisterDefault));
  CHECK(cudaHostRegister(small, SMALL, cudaHostRegisterDefault));
  void *dev;
  CHECK(cudaMalloc(&dev, HUGE));
  CHECK(cudaMemset(dev, 0x5a, HUGE));
  CHECK(cudaDeviceSynchronize());
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaMemcpyAsync(huge, dev, HUGE, cudaMemcpyDeviceToHost, s));
  unsigned char a = read_huge(huge);
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaMemcpyAsync(small, dev, SMALL, cudaMemcpyDeviceToHost, s));
  unsigned char b = read_small(small);
  CHECK(cudaStreamSynchronize(s));
  printf("read 0x%02x 0x%02x; after the syncs 0x%02x 0x%02x\n", a, b, huge[HUGE - 1],
         small[SMALL - 1]);
  CHECK(cudaHostUnregister(huge));
  CHECK(cudaHostUnregister(small));
  munmap(huge, HUGE);
  return 0;
}
