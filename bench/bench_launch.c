/* bench_launch.c: the per-launch microbenchmark. One thread launches N kernels with P 8-byte
 * pointer parameters (--params: 4, 16 or 64) on its own non-blocking stream: every parameter a
 * device pointer, or with --pinned the first one a pointer into a pinned buffer (a kernel that
 * reads host memory, which pinguard tracks). The same binary runs with and without
 * libpinguard.so preloaded; bench/instr.sh --case launch counts the instructions each launch
 * costs. --gate and --record-event as for bench_copy. Prints one JSON line. */
#include <pthread.h>

#include "bench_util.h"
#include "simcuda_kernel.h"

#define MAX_PARAMS 64

static void empty_kernel(const simcuda_launch_t *launch) { (void)launch; }

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help")) {
      printf("usage: bench_launch [--params P] [--launches N] [--batch B] [--pinned] "
             "[--gate] [--record-event]\n"
             "  N (default 100000) launches of a kernel with P (default 16, at most 64) pointer\n"
             "  parameters, all device pointers, or with --pinned the first into pinned memory;\n"
             "  prints one JSON line: median ns per launch over batches of B (default 1024).\n");
      return 0;
    }
  }
  long params = bench_opt(argc, argv, "--params", 16);
  long launches = bench_opt(argc, argv, "--launches", 100000);
  long batch = bench_opt(argc, argv, "--batch", 1024);
  int pinned = 0, gate_on = 0, record = 0;
  for (int i = 1; i < argc; i++) {
    pinned |= !strcmp(argv[i], "--pinned");
    gate_on |= !strcmp(argv[i], "--gate");
    record |= !strcmp(argv[i], "--record-event");
  }
  if (params < 1 || params > MAX_PARAMS || launches < 1 || batch < 1) {
    fprintf(stderr, "bench_launch: params 1..64, launches and batch >= 1\n");
    return 2;
  }
  bench_watchdog(120);
  size_t sizes[MAX_PARAMS];
  for (long i = 0; i < params; i++) sizes[i] = sizeof(void *);
  BENCH_CHECK(simcuda_register_kernel(empty_kernel, "empty_kernel", (size_t)params, sizes));
  BENCH_CHECK(cudaFree(0));
  cudaStream_t s;
  BENCH_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void *dev[MAX_PARAMS], *host;
  for (long i = 0; i < params; i++) BENCH_CHECK(cudaMalloc(&dev[i], 4096));
  BENCH_CHECK(cudaHostAlloc(&host, 4096 * 64, cudaHostAllocDefault));
  cudaEvent_t ev;
  BENCH_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  void *vals[MAX_PARAMS], *args[MAX_PARAMS];
  for (long i = 0; i < params; i++) {
    vals[i] = dev[i];
    args[i] = &vals[i];
  }
  gate_t gate = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .open = 0};
  size_t nb = (size_t)((launches + batch - 1) / batch), got = 0;
  double *per = calloc(nb + 1, sizeof *per);
  /* One untimed batch first (lazy resolution, the parameter layout's first query). */
  for (long pass = -1, done = 0; done < launches; pass++) {
    long n = pass < 0 ? batch : (launches - done < batch ? launches - done : batch);
    if (gate_on) {
      gate_set(&gate, 0);
      BENCH_CHECK(cudaLaunchHostFunc(s, gate_wait, &gate));
    }
    uint64_t t0 = bench_now_ns();
    for (long i = 0; i < n; i++) {
      if (pinned) vals[0] = (char *)host + (i % 64) * 4096;
      BENCH_CHECK(cudaLaunchKernel((const void *)empty_kernel, (dim3){1, 1, 1}, (dim3){32, 1, 1},
                                   args, 0, s));
      if (record) BENCH_CHECK(cudaEventRecord(ev, s));
    }
    uint64_t t1 = bench_now_ns();
    if (gate_on) gate_set(&gate, 1);
    BENCH_CHECK(cudaStreamSynchronize(s));
    if (pass >= 0) {
      per[got++] = (double)(t1 - t0) / (double)n;
      done += n;
    }
  }
  printf("{\"bench\":\"launch\",\"params\":%ld,\"pinned\":%d,\"launches\":%ld,"
         "\"ns_per_launch\":%.1f}\n",
         params, pinned, launches, bench_median(per, got));
  BENCH_CHECK(cudaEventDestroy(ev));
  BENCH_CHECK(cudaFreeHost(host));
  for (long i = 0; i < params; i++) BENCH_CHECK(cudaFree(dev[i]));
  BENCH_CHECK(cudaStreamDestroy(s));
  return 0;
}
