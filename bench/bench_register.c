/* bench_register.c: per-registration cost as the number of registered regions grows (issue 9,
 * defect 7). Registers N regions, each on its own mapping (4 pages, then an inaccessible page,
 * so the process's maps grow with N as they do with real pinned buffers), and times the
 * registrations in two windows of the same run: the W before the 1024th and the last W before
 * the Nth. Prints one JSON line with both per-call figures and their ratio: about 1 when a
 * registration costs O(log n), about N/1024 when it costs O(n). With libbench_stubpin.so preloaded
 * after libpinguard.so the registrations are acknowledged without simcuda (whose own bookkeeping
 * reads /proc/self/maps per call), so the figure is pinguard's alone plus a constant. */
#include <dlfcn.h>
#include <sys/mman.h>

#include "bench_util.h"

#define PAGE 4096
#define SLOT (5 * PAGE)
#define FIRST_AT 1024

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help")) {
      printf("usage: bench_register [--regions N] [--window W] [--reps R] [--shuffle 0|1]\n"
             "  registers N (default 4096, >= 2048) regions, each its own mapping, R times\n"
             "  (default 5); times the W (default 256) registrations before the 1024th and the\n"
             "  last W; --shuffle 1 registers in a fixed pseudo-random order (default: ascending\n"
             "  addresses). Prints one JSON line (medians over the repetitions).\n");
      return 0;
    }
  }
  long n = bench_opt(argc, argv, "--regions", 4096);
  long w = bench_opt(argc, argv, "--window", 256);
  long reps = bench_opt(argc, argv, "--reps", 5);
  long shuffle = bench_opt(argc, argv, "--shuffle", 0);
  if (n < 2 * FIRST_AT || w < 1 || w > FIRST_AT || reps < 1) {
    fprintf(stderr, "bench_register: regions >= %d, 1 <= window <= %d, reps >= 1\n",
            2 * FIRST_AT, FIRST_AT);
    return 2;
  }
  bench_watchdog(300);
  BENCH_CHECK(cudaFree(0));
  size_t len = (size_t)n * SLOT;
  char *base = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    perror("bench_register: mmap");
    return 3;
  }
  for (long i = 0; i < n; i++)
    if (mprotect(base + i * SLOT, 4 * PAGE, PROT_READ | PROT_WRITE) != 0) {
      perror("bench_register: mprotect");
      return 3;
    }
  void (*set_range)(void *, size_t) =
      (void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "bench_stubpin_set_range");
  if (set_range) set_range(base, len);

  long *order = malloc((size_t)n * sizeof *order);
  double *at_first = calloc((size_t)reps, sizeof(double)), *at_last = calloc((size_t)reps, sizeof(double));
  if (!order || !at_first || !at_last) return 3;
  for (long i = 0; i < n; i++) order[i] = i;
  uint64_t seed = 0x9e3779b97f4a7c15u;
  for (long i = n - 1; shuffle && i > 0; i--) { /* Fisher-Yates with a fixed seed */
    seed = seed * 6364136223846793005u + 1442695040888963407u;
    long j = (long)((seed >> 33) % (uint64_t)(i + 1));
    long t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  for (long r = 0; r < reps; r++) {
    uint64_t t_first = 0, t_last = 0, t0 = 0;
    for (long i = 0; i < n; i++) {
      if (i == FIRST_AT - w || i == n - w) t0 = bench_now_ns();
      BENCH_CHECK(cudaHostRegister(base + order[i] * SLOT, 4 * PAGE, cudaHostRegisterDefault));
      if (i == FIRST_AT - 1) t_first = bench_now_ns() - t0;
      if (i == n - 1) t_last = bench_now_ns() - t0;
    }
    for (long i = 0; i < n; i++) BENCH_CHECK(cudaHostUnregister(base + order[i] * SLOT));
    at_first[r] = (double)t_first / (double)w;
    at_last[r] = (double)t_last / (double)w;
  }
  double first = bench_median(at_first, (size_t)reps), last = bench_median(at_last, (size_t)reps);
  printf("{\"bench\":\"register\",\"regions\":%ld,\"window\":%ld,\"reps\":%ld,\"shuffle\":%ld,"
         "\"stub\":%s,\"ns_per_register_at_%d\":%.0f,\"ns_per_register_at_%ld\":%.0f,"
         "\"ratio\":%.2f}\n",
         n, w, reps, shuffle, set_range ? "true" : "false", FIRST_AT, first, n, last,
         first > 0 ? last / first : 0.0);
  free(order);
  free(at_first);
  free(at_last);
  munmap(base, len);
  return 0;
}
