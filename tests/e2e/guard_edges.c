/* Intent: a pinned buffer that does not start or end on a page boundary is guarded to its first
 * and last byte when its mapping is its own. A large malloc block is such a buffer: glibc maps it
 * by itself, 16 bytes past a page boundary, which is how PyTorch's
 * pinned_use_cuda_host_register mode pins its blocks. The buffer is registered, a
 * device->host copy is enqueued over all of it, and then:
 *   first:  the CPU reads its first byte (on the partial first page): cpu-read-during-device-write;
 *           enforce waits, so the byte read is the copied one (0x5a);
 *   last:   the same with its last byte;
 *   header: malloc_usable_size() reads the block's header, on that same partial page but outside
 *           the buffer: nobody's data, so no report and no wait;
 *   fixed:  reads the first byte after synchronizing: no report.
 * Usage: guard_edges first|last|header|fixed */
// A buffer off page boundaries whose mapping is its own (a large malloc block) is guarded to its
// edges; the block's header on the same page is nobody's data. AddressSanitizer's and
// ThreadSanitizer's allocators are not glibc's: their large blocks are not mappings of their
// own, so only the header and fixed cases run there (PG_E2E_EDGES_GUARDED is off); and
// ThreadSanitizer's allocator hands out page-aligned blocks: no partial page to test at all.
// CASE: guard_edges.${edge}.${mode} MODE ${mode} EXPECT cpu-read-during-device-write
//   ARGS ${edge} ENV ${GUARD_ENV} FOR mode IN audit enforce FOR edge IN first last
//   IF PG_E2E_EDGES_GUARDED
// CASE: guard_edges.header.${mode} MODE ${mode} EXPECT none ARGS header
//   STDOUT "usable size covers the buffer: yes" ENV ${GUARD_ENV} FOR mode IN audit enforce
//   IF NOT PG_E2E_TSAN
// CASE: guard_edges.fixed.${mode} MODE ${mode} EXPECT none ARGS fixed STDOUT "edge byte 0x5a"
//   ENV ${GUARD_ENV} FOR mode IN audit enforce IF NOT PG_E2E_TSAN
// CASE: guard_edges.${edge}.enforce_data MODE enforce EXPECT cpu-read-during-device-write
//   ARGS ${edge} STDOUT "edge byte 0x5a" ENV ${GUARD_ENV} SIMCUDA_LATENCY_US=50000
//   FOR edge IN first last IF PG_E2E_EDGES_GUARDED

#include <malloc.h>
#include <stdint.h>

#include "e2e.h"

#define LEN (1u << 20)

int main(int argc, char **argv) {
  const char *how = argc > 1 ? argv[1] : "";
  int first = !strcmp(how, "first"), last = !strcmp(how, "last");
  int header = !strcmp(how, "header"), fixed = !strcmp(how, "fixed");
  if (!first && !last && !header && !fixed) {
    fprintf(stderr, "usage: %s first|last|header|fixed\n", argv[0]);
    return 2;
  }
  unsigned char *h = malloc(LEN); /* above the mmap threshold: a mapping of its own */
  if (!h || ((uintptr_t)h & 4095) == 0) {
    fprintf(stderr, "malloc gave a page-aligned block: nothing to test\n");
    return 2;
  }
  memset(h, 0, LEN);
  void *dev;
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaMalloc(&dev, LEN));
  CHECK(cudaMemset(dev, 0x5a, LEN));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaHostRegister(h, LEN, cudaHostRegisterDefault));
  CHECK(cudaMemcpyAsync(h, dev, LEN, cudaMemcpyDeviceToHost, s));
  if (fixed) CHECK(cudaStreamSynchronize(s));
  if (header) {
    size_t usable = malloc_usable_size(h);
    printf("usable size covers the buffer: %s\n", usable >= LEN ? "yes" : "no");
  } else {
    volatile unsigned char b = last ? h[LEN - 1] : h[0];
    printf("edge byte 0x%02x\n", b);
  }
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaHostUnregister(h));
  free(h);
  return 0;
}
