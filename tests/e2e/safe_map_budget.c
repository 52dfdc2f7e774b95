/* Intent: guard pages never run the process out of mappings. Each guarded sub-range of a pinned
 * buffer splits its mapping; with the budget lowered (guard_map_budget=40) a burst of 200 copies
 * into distinct pieces of one 32 MiB buffer guards about 20 of them and skips the rest (each
 * skip counted: print_stats' guard_skipped_maps), the mappings the burst added stay within the
 * budget, and the program's own mmap calls still succeed.
 * Usage: safe_map_budget */
#include <sys/mman.h>

#include "e2e.h"

#define BYTES (32u << 20)
#define PIECE (16u * 1024u)
#define STRIDE (128u * 1024u)
#define COPIES 200

static long count_maps(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return -1;
  long n = 0;
  int c;
  while ((c = fgetc(f)) != EOF) n += c == '\n';
  fclose(f);
  return n;
}

int main(void) {
  unsigned char *buf;
  CHECK(cudaHostAlloc((void **)&buf, BYTES, cudaHostAllocDefault));
  void *dev;
  CHECK(cudaMalloc(&dev, PIECE));
  CHECK(cudaMemset(dev, 0x5a, PIECE));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaDeviceSynchronize());
  long before = count_maps();
  for (unsigned i = 0; i < COPIES; i++)
    CHECK(cudaMemcpyAsync(buf + (size_t)i * STRIDE, dev, PIECE, cudaMemcpyDeviceToHost, s));
  long during = count_maps();
  /* The program's own mappings. */
  int own = 0;
  for (int i = 0; i < 100; i++) {
    void *p = mmap(NULL, 4096, i % 2 ? PROT_READ : PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) own++;
  }
  CHECK(cudaStreamSynchronize(s));
  printf("mappings added by the burst: %ld\n", during - before);
  printf("own mmaps: %d of 100\n", own);
  CHECK(cudaFreeHost(buf));
  return 0;
}
