/* Intent: guard pages never run the process out of mappings. Each guarded sub-range of a pinned
 * buffer splits its mapping; with the budget lowered (guard_map_budget=40) a burst of 200 copies
 * into distinct pieces of one 32 MiB buffer guards about 20 of them and skips the rest (each
 * skip counted: print_stats' guard_skipped_maps), the mappings the burst added stay within the
 * budget, and the program's own mmap calls still succeed. It prints two counts: the mappings the
 * whole process gained (a sanitizer's allocator adds its own there) and those inside the buffer
 * (only guards split it).
 * Usage: safe_map_budget */
// With guard_map_budget=40, a burst of 200 guarded sub-range copies adds at most 40 mappings
// (guard_map_budget counts from when guards started; up to 4 more are the stream's worker
// thread, started by the first copy), 180 guards or more are skipped and counted, one warning
// says so, and the program's own mmap calls succeed. Inside the buffer only guards split
// mappings, so that count is held to the budget in every build; the process-wide count is
// PG_E2E_MAP_BUDGET_BURST (a sanitizer's allocator maps memory of its own while the burst runs).
// SAFE: map_budget
//   OPTIONS mode=audit:guard=1:guard_min_bytes=4096:guard_map_budget=40:print_stats=1
//   ENV SIMCUDA_LATENCY_US=200000
//   CHECK --stdout "mappings added by the burst: ${PG_E2E_MAP_BUDGET_BURST}$"
//   --stdout "mappings added inside the buffer: ([1-9]|[1-3][0-9]|40)$"
//   --stdout "own mmaps: 100 of 100"
//   --stderr "guard_skipped_maps: 1[89][0-9] " --count "reached the mapping budget" 1

#include <stdint.h>
#include <sys/mman.h>

#include "e2e.h"

#define BYTES (32u << 20)
#define PIECE (16u * 1024u)
#define STRIDE (128u * 1024u)
#define COPIES 200

/* The process's mappings that overlap [lo, hi); all of them when hi is 0. */
static long count_maps(uintptr_t lo, uintptr_t hi) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return -1;
  long n = 0;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    unsigned long start, end;
    if (sscanf(line, "%lx-%lx", &start, &end) != 2) continue;
    n += !hi || (start < hi && end > lo);
  }
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
  uintptr_t lo = (uintptr_t)buf, hi = lo + BYTES;
  long before = count_maps(0, 0), inside_before = count_maps(lo, hi);
  for (unsigned i = 0; i < COPIES; i++)
    CHECK(cudaMemcpyAsync(buf + (size_t)i * STRIDE, dev, PIECE, cudaMemcpyDeviceToHost, s));
  long during = count_maps(0, 0), inside_during = count_maps(lo, hi);
  /* The program's own mappings. */
  int own = 0;
  for (int i = 0; i < 100; i++) {
    void *p = mmap(NULL, 4096, i % 2 ? PROT_READ : PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) own++;
  }
  CHECK(cudaStreamSynchronize(s));
  printf("mappings added by the burst: %ld\n", during - before);
  printf("mappings added inside the buffer: %ld\n", inside_during - inside_before);
  printf("own mmaps: %d of 100\n", own);
  CHECK(cudaFreeHost(buf));
  return 0;
}
