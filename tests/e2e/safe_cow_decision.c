/* Intent: the guard decision per range, on the real kinds of mapping. A private anonymous buffer
 * and a MAP_SHARED one are registered, a device->host copy into each is in flight, and the CPU
 * reads each. On a kernel whose protection round trip copies private pages (5.9 to 5.18: the
 * test fakes one with kernel_release=5.15.0) only the shared buffer is guarded, so only its read
 * is reported, and a warning names the private memory; elsewhere both reads are reported.
 * Usage: safe_cow_decision */
// With a faked affected kernel, registered private memory is not guarded (one warning),
// MAP_SHARED memory is; on this kernel both are.
// SAFE: cow_decision.affected
//   OPTIONS mode=audit:guard=1:exitcode=0:kernel_release=5.15.0-91-generic
//   CHECK --stdout "after the sync 0x5a 0x5a" --count "ERROR: cpu-read-during-device-write" 1
//   --stderr "in read_shared" --no-stderr "in read_private"
//   --stderr "Linux 5.15.0-91-generic: cudaHostRegister'ed private memory"
// SAFE: cow_decision.fixed_kernel OPTIONS mode=audit:guard=1:exitcode=0:kernel_release=6.8.0
//   CHECK --stdout "after the sync 0x5a 0x5a" --count "ERROR: cpu-read-during-device-write" 2
//   --no-stderr "private memory"

#include <sys/mman.h>

#include "e2e.h"

#define BYTES (256u * 1024u)

static unsigned char *registered(int share) {
  unsigned char *p = mmap(NULL, BYTES, PROT_READ | PROT_WRITE, share | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) exit(2);
  memset(p, 0, BYTES);
  CHECK(cudaHostRegister(p, BYTES, cudaHostRegisterDefault));
  return p;
}

/* noipa: two functions, named apart in the reports (not folded into one). */
static __attribute__((noipa)) unsigned char read_private(const unsigned char *p) {
  return ((volatile const unsigned char *)p)[BYTES / 2];
}
static __attribute__((noipa)) unsigned char read_shared(const unsigned char *p) {
  return ((volatile const unsigned char *)p)[BYTES / 2 + 1];
}

int main(void) {
  unsigned char *priv = registered(MAP_PRIVATE), *shared = registered(MAP_SHARED);
  void *dev;
  CHECK(cudaMalloc(&dev, BYTES));
  CHECK(cudaMemset(dev, 0x5a, BYTES));
  CHECK(cudaDeviceSynchronize());
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaMemcpyAsync(priv, dev, BYTES, cudaMemcpyDeviceToHost, s));
  CHECK(cudaMemcpyAsync(shared, dev, BYTES, cudaMemcpyDeviceToHost, s));
  unsigned char a = read_private(priv), b = read_shared(shared);
  CHECK(cudaStreamSynchronize(s));
  printf("read 0x%02x 0x%02x; after the sync 0x%02x 0x%02x\n", a, b, priv[0], shared[0]);
  CHECK(cudaHostUnregister(priv));
  CHECK(cudaHostUnregister(shared));
  return 0;
}
