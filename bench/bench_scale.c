/* bench_scale.c: per-copy cost as the tables grow. Registers R pinned regions and holds F
 * device->host copies in flight behind a gate (a host function that blocks their stream), then
 * times N host->device cudaMemcpyAsync on another stream into the same regions, at offsets
 * disjoint from the held copies (so no conflict and no wait: only the lookups cost). Prints one
 * JSON line. With R > 10 it needs libbench_stubpin.so preloaded after libpinguard.so. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>

#include "bench_util.h"

#define REAL_REGIONS 10   /* backed by simcuda; the copies go here */
#define SLOTS 64          /* offsets the timed copies cycle through, per region */
#define FILLER_BYTES (64 << 10)

/* ---- the gate (bench_util.h), here bounded: holds every operation queued after it -------------- */
static void CUDART_CB gate_fn(void *arg) {
  gate_t *g = arg;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 60; /* bounded: a benchmark that lost its way still ends */
  pthread_mutex_lock(&g->mu);
  while (!g->open)
    if (pthread_cond_timedwait(&g->cv, &g->mu, &until) == ETIMEDOUT) break;
  pthread_mutex_unlock(&g->mu);
}


/* ---- filler regions: only pinguard's index holds them ------------------------------------- */
static void register_fillers(long n) {
  if (n <= 0) return;
  void (*set_range)(void *, size_t) =
      (void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "bench_stubpin_set_range");
  if (!set_range) {
    fprintf(stderr, "bench_scale: more than %d regions needs LD_PRELOAD of libbench_stubpin.so "
                    "(after libpinguard.so)\n", REAL_REGIONS);
    exit(2);
  }
  size_t len = (size_t)n * FILLER_BYTES;
  char *base = mmap(NULL, len, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    perror("bench_scale: mmap");
    exit(3);
  }
  set_range(base, len);
  for (long i = 0; i < n; i++)
    BENCH_CHECK(cudaHostRegister(base + (size_t)i * FILLER_BYTES, FILLER_BYTES,
                                 cudaHostRegisterDefault));
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help")) {
      printf("usage: bench_scale [--regions R] [--inflight F] [--copies N] [--bytes S] "
             "[--batch B] [--record-event] [--gate]\n"
             "  R pinned regions (default 10; %d real, the rest address-only via\n"
             "  libbench_stubpin.so), F device->host copies held in flight (default 10), then N\n"
             "  (default 50000) host->device copies of S bytes (default 4096) timed in batches\n"
             "  of B (default 1024); prints one JSON line. --record-event: also cudaEventRecord\n"
             "  after each timed copy (the runtime's cost of one completion event per copy).\n"
             "  --gate: hold each timed batch behind a host function until it is enqueued, so\n"
             "  that none of its copies completes meanwhile (repeatable instruction counts).\n",
             REAL_REGIONS);
      return 0;
    }
  }
  long regions = bench_opt(argc, argv, "--regions", 10);
  long inflight = bench_opt(argc, argv, "--inflight", 10);
  long copies = bench_opt(argc, argv, "--copies", 50000);
  long bytes = bench_opt(argc, argv, "--bytes", 4096);
  long batch = bench_opt(argc, argv, "--batch", 1024);
  int record_event = 0, gate_batches = 0;
  for (int i = 1; i < argc; i++) {
    record_event |= !strcmp(argv[i], "--record-event");
    gate_batches |= !strcmp(argv[i], "--gate");
  }
  if (regions < REAL_REGIONS || copies < 1 || bytes < 1 || batch < 1) {
    fprintf(stderr, "bench_scale: regions >= %d, copies, bytes and batch >= 1\n", REAL_REGIONS);
    return 2;
  }
  bench_watchdog(120);
  BENCH_CHECK(cudaFree(0));

  /* Real regions: the held copies' slots first, then the timed copies' slots. */
  long held_slots = (inflight + REAL_REGIONS - 1) / REAL_REGIONS;
  size_t region_bytes = (size_t)(held_slots + SLOTS) * (size_t)bytes;
  char *real[REAL_REGIONS];
  for (int r = 0; r < REAL_REGIONS; r++) {
    BENCH_CHECK(cudaHostAlloc((void **)&real[r], region_bytes, cudaHostAllocDefault));
    memset(real[r], r + 1, region_bytes);
  }
  register_fillers(regions - REAL_REGIONS);
  char *dev;
  BENCH_CHECK(cudaMalloc((void **)&dev, (size_t)bytes * SLOTS));
  cudaEvent_t ev[SLOTS];
  for (int i = 0; i < SLOTS; i++)
    BENCH_CHECK(cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming));

  /* Held copies: queued behind the gate, so none of them can complete before it opens. */
  gate_t gate = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .open = 0};
  gate_t batch_gate = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
  cudaStream_t held, timed;
  BENCH_CHECK(cudaStreamCreateWithFlags(&held, cudaStreamNonBlocking));
  BENCH_CHECK(cudaStreamCreateWithFlags(&timed, cudaStreamNonBlocking));
  BENCH_CHECK(cudaLaunchHostFunc(held, gate_fn, &gate));
  for (long i = 0; i < inflight; i++)
    BENCH_CHECK(cudaMemcpyAsync(real[i % REAL_REGIONS] + (i / REAL_REGIONS) * bytes, dev,
                                (size_t)bytes, cudaMemcpyDeviceToHost, held));

  size_t nb = (size_t)((copies + batch - 1) / batch);
  double *per_call = calloc(nb, sizeof *per_call);
  if (!per_call) return 3;
  size_t done_batches = 0;
  for (int warm = 1; warm >= 0; warm--) { /* one untimed pass over a batch first */
    long total = warm ? batch : copies, done = 0;
    while (done < total) {
      long n = total - done < batch ? total - done : batch;
      if (gate_batches) {
        gate_set(&batch_gate, 0);
        BENCH_CHECK(cudaLaunchHostFunc(timed, gate_fn, &batch_gate));
      }
      uint64_t t0 = bench_now_ns();
      for (long i = 0; i < n; i++) {
        long k = done + i;
        char *src = real[k % REAL_REGIONS] + (held_slots + (k / REAL_REGIONS) % SLOTS) * bytes;
        BENCH_CHECK(cudaMemcpyAsync(dev + (k % SLOTS) * bytes, src, (size_t)bytes,
                                    cudaMemcpyHostToDevice, timed));
        if (record_event) BENCH_CHECK(cudaEventRecord(ev[k % SLOTS], timed));
      }
      uint64_t t1 = bench_now_ns();
      if (!warm) per_call[done_batches++] = (double)(t1 - t0) / (double)n;
      if (gate_batches) gate_set(&batch_gate, 1);
      BENCH_CHECK(cudaStreamSynchronize(timed));
      done += n;
    }
  }

  /* What the figure claims: every held copy was still in flight during the timed copies. */
  cudaError_t q = cudaStreamQuery(held);
  int held_ok = inflight == 0 || q == cudaErrorNotReady;
  gate_set(&gate, 1);
  BENCH_CHECK(cudaStreamSynchronize(held));
  if (!held_ok) {
    fprintf(stderr, "bench_scale: the held copies completed early (cudaStreamQuery: %s)\n",
            cudaGetErrorName(q));
    return 3;
  }

  double med = bench_median(per_call, done_batches);
  printf("{\"bench\":\"scale\",\"regions\":%ld,\"inflight\":%ld,\"bytes\":%ld,\"copies\":%ld,"
         "\"ns_per_call\":%.1f}\n", regions, inflight, bytes, copies, med);
  free(per_call);
  for (int i = 0; i < SLOTS; i++) BENCH_CHECK(cudaEventDestroy(ev[i]));
  for (int r = 0; r < REAL_REGIONS; r++) BENCH_CHECK(cudaFreeHost(real[r]));
  BENCH_CHECK(cudaFree(dev));
  BENCH_CHECK(cudaStreamDestroy(held));
  BENCH_CHECK(cudaStreamDestroy(timed));
  return 0;
}
