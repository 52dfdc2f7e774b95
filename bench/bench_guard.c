/* bench_guard.c: what guard pages cost. Raw operating-system figures on a 64 KiB buffer (one
 * protect/unprotect pair; one protect-fault-unprotect cycle through a SIGSEGV handler), and the
 * same cycle through pinguard: a device->host copy, then an immediate CPU read, which under
 * mode=enforce:guard=1 faults and waits for the copy. --sync reads only after
 * cudaStreamSynchronize (the hand-written fix, for comparison). Prints one JSON line. */
#include <signal.h>
#include <sys/mman.h>

#include "bench_util.h"

static char *g_page;   /* the buffer the raw handler unprotects */
static size_t g_len;

static void raw_handler(int sig, siginfo_t *si, void *uc) {
  (void)sig;
  (void)uc;
  char *a = si->si_addr;
  if (a >= g_page && a < g_page + g_len) {
    mprotect(g_page, g_len, PROT_READ | PROT_WRITE);
    return; /* the faulting load retries and succeeds */
  }
  signal(SIGSEGV, SIG_DFL); /* not ours: crash as usual */
}

static double raw_pair_ns(char *buf, size_t len, long iters) {
  double *v = calloc((size_t)iters, sizeof *v);
  for (long i = 0; i < iters; i++) {
    uint64_t t0 = bench_now_ns();
    mprotect(buf, len, PROT_NONE);
    mprotect(buf, len, PROT_READ | PROT_WRITE);
    v[i] = (double)(bench_now_ns() - t0);
  }
  double m = bench_median(v, (size_t)iters);
  free(v);
  return m;
}

static double raw_fault_ns(char *buf, size_t len, long iters) {
  struct sigaction sa = {0}, old;
  sa.sa_sigaction = raw_handler;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &old);
  g_page = buf;
  g_len = len;
  double *v = calloc((size_t)iters, sizeof *v);
  volatile char sink = 0;
  for (long i = 0; i < iters; i++) {
    uint64_t t0 = bench_now_ns();
    mprotect(buf, len, PROT_NONE);
    sink += ((volatile char *)buf)[i % (long)len]; /* faults; the handler unprotects */
    v[i] = (double)(bench_now_ns() - t0);
  }
  (void)sink;
  sigaction(SIGSEGV, &old, NULL);
  double m = bench_median(v, (size_t)iters);
  free(v);
  return m;
}

/* Copy then read, iters times: with guard pages the read is what waits for the copy. */
static double cuda_cycle_ns(size_t len, long iters, int sync) {
  char *host, *dev;
  cudaStream_t s;
  BENCH_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  BENCH_CHECK(cudaHostAlloc((void **)&host, len, cudaHostAllocDefault));
  BENCH_CHECK(cudaMalloc((void **)&dev, len));
  BENCH_CHECK(cudaMemsetAsync(dev, 7, len, s)); /* on s: a non-blocking stream is not ordered
                                                  * after the legacy one */
  double *v = calloc((size_t)iters, sizeof *v);
  volatile char sink = 0;
  for (long i = 0; i < iters; i++) {
    uint64_t t0 = bench_now_ns();
    BENCH_CHECK(cudaMemcpyAsync(host, dev, len, cudaMemcpyDeviceToHost, s));
    if (sync) BENCH_CHECK(cudaStreamSynchronize(s));
    sink += ((volatile char *)host)[len / 2];
    v[i] = (double)(bench_now_ns() - t0);
  }
  (void)sink;
  BENCH_CHECK(cudaStreamSynchronize(s));
  double m = bench_median(v, (size_t)iters);
  free(v);
  BENCH_CHECK(cudaFreeHost(host));
  BENCH_CHECK(cudaFree(dev));
  BENCH_CHECK(cudaStreamDestroy(s));
  return m;
}

int main(int argc, char **argv) {
  int sync = 0, raw = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--sync")) sync = 1;
    if (!strcmp(argv[i], "--raw")) raw = 1;
    if (!strcmp(argv[i], "--help")) {
      printf("usage: bench_guard [--raw] [--sync] [--bytes S] [--iters N]\n"
             "  --raw: mprotect pair and protect-fault-unprotect cycle on S bytes (no CUDA);\n"
             "  else: N cycles of a device->host copy of S bytes then a CPU read (--sync:\n"
             "  cudaStreamSynchronize before the read). Defaults S=65536, N=2000.\n");
      return 0;
    }
  }
  long bytes = bench_opt(argc, argv, "--bytes", 65536);
  long iters = bench_opt(argc, argv, "--iters", 2000);
  if (bytes < 1 || iters < 1) return 2;
  bench_watchdog(120);
  if (raw) {
    size_t len = ((size_t)bytes + 4095) & ~(size_t)4095;
    char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) return 3;
    memset(buf, 1, len);
    double pair = raw_pair_ns(buf, len, iters);
    double fault = raw_fault_ns(buf, len, iters);
    printf("{\"bench\":\"guard_raw\",\"bytes\":%zu,\"protect_unprotect_ns\":%.0f,"
           "\"protect_fault_unprotect_ns\":%.0f}\n", len, pair, fault);
    munmap(buf, len);
    return 0;
  }
  BENCH_CHECK(cudaFree(0));
  double cyc = cuda_cycle_ns((size_t)bytes, iters, sync);
  printf("{\"bench\":\"guard_cycle\",\"bytes\":%ld,\"sync\":%d,\"ns_per_cycle\":%.0f}\n", bytes,
         sync, cyc);
  return 0;
}
