/* Intent: registering n regions costs pinguard O(log n) each, not a read of the whole
 * /proc/self/maps (issue 9, defect 7: that made n registrations O(n^2)). Deterministic, not
 * timed: with guard pages on (where pinguard asks whether registered memory is MAP_SHARED),
 * 2000 cudaHostRegister calls, each on its own mapping, may open /proc/self/maps at most twice
 * in all. The counting library (libe2e_count_maps_opens.so) and libbench_stubpin.so (which
 * acknowledges the registrations without simcuda, whose own bookkeeping reads the maps) are
 * preloaded after libpinguard.so. Usage: register_many N. */
// Counted, not timed; the preload list adds the counting library and bench/'s stub runtime.
// TEST: register_many TIMEOUT 120
//   COMMAND ${RUN_CASE} --mode audit --expect none
//   --stdout "registered 2000 regions; /proc/self/maps opened [0-2] times"
//   -- $<TARGET_FILE:e2e_register_many> 2000
//   ENV PG_EXTRA_OPTIONS=guard=1
//   PG_PRELOAD=${PG_PRELOAD}:$<TARGET_FILE:bench_stubpin>:$<TARGET_FILE:e2e_count_maps_opens>

#include <dlfcn.h>
#include <sys/mman.h>

#include "e2e.h"

#define SLOT (5 * 4096) /* 4 registered pages, then an inaccessible one: a mapping each */

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 2000;
  unsigned long (*opens)(void) = (unsigned long (*)(void))dlsym(RTLD_DEFAULT, "e2e_maps_opens");
  void (*set_range)(void *, size_t) =
      (void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "bench_stubpin_set_range");
  if (!opens || !set_range) {
    fprintf(stderr, "register_many: preload libe2e_count_maps_opens.so and libbench_stubpin.so\n");
    return 2;
  }
  CHECK(cudaFree(0));
  size_t len = (size_t)n * SLOT;
  char *base = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) return 3;
  for (long i = 0; i < n; i++)
    if (mprotect(base + i * SLOT, 4 * 4096, PROT_READ | PROT_WRITE) != 0) return 3;
  set_range(base, len);
  unsigned long before = opens();
  for (long i = 0; i < n; i++)
    CHECK(cudaHostRegister(base + i * SLOT, 4 * 4096, cudaHostRegisterDefault));
  unsigned long during = opens() - before;
  for (long i = 0; i < n; i++) CHECK(cudaHostUnregister(base + i * SLOT));
  printf("registered %ld regions; /proc/self/maps opened %lu times meanwhile\n", n, during);
  return during <= 2 ? 0 : 1;
}
