/* bench_copy.c: the per-copy microbenchmark. T threads, each with its own non-blocking stream
 * and pinned buffer, enqueue N host->device cudaMemcpyAsync of S bytes (with --driver, the
 * driver's cuMemcpyHtoDAsync_v2, called as a program linked against libcuda calls it). The same
 * binary runs with and without libpinguard.so preloaded (bench/run.sh chooses), so the difference
 * between runs is what pinguard adds to one call. Prints one JSON line. */
#include <cuda.h>
#include <pthread.h>

#include "bench_util.h"

typedef struct worker {
  int index;
  long copies, bytes, batch;
  int record_event;   /* also cudaEventRecord after each copy: the floor of one event per copy */
  int gate;           /* hold each batch behind a host function until it is enqueued */
  int driver;         /* copy with cuMemcpyHtoDAsync_v2 instead of cudaMemcpyAsync */
  long regions;       /* > 1: rotate over this many pinned buffers (one region each), as a
                       * model's per-layer buffers are copied, instead of SLOTS offsets of one */
  pthread_barrier_t *start;
  double *batch_ns;   /* per-call ns of each timed batch */
  size_t nbatches;
} worker_t;

/* Distinct offsets per buffer: each copy starts at a new address, as a transfer engine's copies
 * into a pool do, instead of hitting one slot of the in-flight table over and over. */
#define SLOTS 64

/* The gate (--gate): a host function at the head of each batch that blocks the stream until the
 * whole batch is enqueued, so no copy completes while the batch is being enqueued. What the
 * caller then does per copy no longer depends on how far the stream's worker got, which is what
 * makes instruction counts repeatable (bench/instr.sh). */
static void *run_worker(void *arg) {
  worker_t *w = arg;
  cudaStream_t s;
  BENCH_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  char *host, *dev;
  BENCH_CHECK(cudaHostAlloc((void **)&host, (size_t)w->bytes * SLOTS, cudaHostAllocDefault));
  char **region = NULL; /* --regions: the buffer each copy k % regions reads */
  if (w->regions > 1) {
    region = calloc((size_t)w->regions, sizeof *region);
    for (long r = 0; r < w->regions; r++)
      BENCH_CHECK(cudaHostAlloc((void **)&region[r], (size_t)w->bytes, cudaHostAllocDefault));
  }
  BENCH_CHECK(cudaMalloc((void **)&dev, (size_t)w->bytes * SLOTS));
  memset(host, w->index + 1, (size_t)w->bytes * SLOTS);
  cudaEvent_t ev[SLOTS];
  for (int i = 0; i < SLOTS; i++)
    BENCH_CHECK(cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming));

  /* One untimed batch first: first-touch faults, lazy symbol resolution, pool growth. Gated as
   * the timed ones are: ungated, how many of its copies completed while it was being enqueued
   * (which pinguard's polls see, and which decides how far its pools grow) depended on the
   * scheduler, and that fixed cost, different in each run, moved the marginal count per copy by
   * a few instructions at 8,192 copies, and by twice that at 4,096. */
  gate_t gate = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .open = 0};
  long warm = region && w->regions > w->batch ? w->regions : w->batch;
  if (w->gate) BENCH_CHECK(cudaLaunchHostFunc(s, gate_wait, &gate));
  for (long i = 0; i < warm; i++)
    BENCH_CHECK(cudaMemcpyAsync(dev + (i % SLOTS) * w->bytes,
                                region ? region[i % w->regions] : host + (i % SLOTS) * w->bytes,
                                (size_t)w->bytes, cudaMemcpyHostToDevice, s));
  if (w->gate) gate_set(&gate, 1);
  BENCH_CHECK(cudaStreamSynchronize(s));

  pthread_barrier_wait(w->start);
  long done = 0;
  while (done < w->copies) {
    long n = w->copies - done < w->batch ? w->copies - done : w->batch;
    if (w->gate) {
      gate_set(&gate, 0);
      BENCH_CHECK(cudaLaunchHostFunc(s, gate_wait, &gate));
    }
    uint64_t t0 = bench_now_ns();
    for (long i = 0; i < n; i++) {
      long k = (done + i) % SLOTS;
      const char *src = region ? region[(done + i) % w->regions] : host + k * w->bytes;
      if (w->driver) {
        if (cuMemcpyHtoDAsync_v2((CUdeviceptr)(uintptr_t)(dev + k * w->bytes),
                                 src, (size_t)w->bytes, (CUstream)s) !=
            CUDA_SUCCESS) {
          fprintf(stderr, "bench_copy: cuMemcpyHtoDAsync_v2 failed\n");
          exit(3);
        }
      } else {
        BENCH_CHECK(cudaMemcpyAsync(dev + k * w->bytes, src, (size_t)w->bytes,
                                    cudaMemcpyHostToDevice, s));
      }
      if (w->record_event) BENCH_CHECK(cudaEventRecord(ev[k], s));
    }
    uint64_t t1 = bench_now_ns();
    w->batch_ns[w->nbatches++] = (double)(t1 - t0) / (double)n;
    if (w->gate) gate_set(&gate, 1);
    /* Bounded queue: the stream drains between batches (not timed per call, but part of the
     * wall time that the throughput figure uses). */
    BENCH_CHECK(cudaStreamSynchronize(s));
    done += n;
  }
  for (int i = 0; i < SLOTS; i++) BENCH_CHECK(cudaEventDestroy(ev[i]));
  BENCH_CHECK(cudaFree(dev));
  BENCH_CHECK(cudaFreeHost(host));
  for (long r = 0; region && r < w->regions; r++) BENCH_CHECK(cudaFreeHost(region[r]));
  free(region);
  BENCH_CHECK(cudaStreamDestroy(s));
  return NULL;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help")) {
      printf("usage: bench_copy [--threads T] [--copies N] [--bytes S] [--batch B] "
             "[--record-event] [--gate] [--driver] [--inline] [--regions R]\n"
             "  T threads (default 1), each N (default 100000) host->device cudaMemcpyAsync of\n"
             "  S bytes (default 4096) on its own stream, timed in batches of B (default 1024);\n"
             "  prints one JSON line: median ns per call over batches, and calls per second.\n"
             "  --record-event: also cudaEventRecord after each copy (what one completion\n"
             "  event per tracked copy costs the runtime; the call figure covers both).\n"
             "  --gate: hold each batch behind a host function until it is enqueued, so that\n"
             "  no copy completes meanwhile (repeatable instruction counts).\n"
             "  --driver: copy with the driver's cuMemcpyHtoDAsync_v2 (the event record and\n"
             "  everything else stay runtime calls).\n"
             "  --inline: one worker, run on the main thread instead of a thread of its own.\n"
             "  --regions R: each copy reads the next of R pinned buffers of S bytes (one\n"
             "  region each), as a model's per-layer buffers are copied.\n");
      return 0;
    }
  }
  long threads = bench_opt(argc, argv, "--threads", 1);
  long copies = bench_opt(argc, argv, "--copies", 100000);
  long bytes = bench_opt(argc, argv, "--bytes", 4096);
  long batch = bench_opt(argc, argv, "--batch", 1024);
  long regions = bench_opt(argc, argv, "--regions", 1);
  int record_event = 0, gate = 0, driver = 0, inline_loop = 0;
  for (int i = 1; i < argc; i++) {
    inline_loop |= !strcmp(argv[i], "--inline");
    record_event |= !strcmp(argv[i], "--record-event");
    gate |= !strcmp(argv[i], "--gate");
    driver |= !strcmp(argv[i], "--driver");
  }
  if (threads < 1 || threads > 64 || copies < 1 || bytes < 1 || batch < 1) {
    fprintf(stderr, "bench_copy: threads 1..64, copies, bytes and batch >= 1\n");
    return 2;
  }
  bench_watchdog(120);
  BENCH_CHECK(cudaFree(0)); /* runtime start-up outside the timed part */

  pthread_barrier_t start;
  if (inline_loop) threads = 1;
  pthread_barrier_init(&start, NULL, inline_loop ? 1u : (unsigned)threads + 1);
  worker_t *w = calloc((size_t)threads, sizeof *w);
  pthread_t *tid = calloc((size_t)threads, sizeof *tid);
  size_t per = (size_t)((copies + batch - 1) / batch);
  double *all = calloc(per * (size_t)threads, sizeof *all);
  if (!w || !tid || !all) return 3;
  for (long t = 0; t < threads; t++) {
    w[t] = (worker_t){.index = (int)t, .copies = copies, .bytes = bytes, .batch = batch,
                      .record_event = record_event, .gate = gate, .driver = driver,
                      .regions = regions, .start = &start,
                      .batch_ns = all + per * (size_t)t};
    if (!inline_loop && pthread_create(&tid[t], NULL, run_worker, &w[t]) != 0) return 3;
  }
  uint64_t t0 = bench_now_ns();
  if (inline_loop) {
    run_worker(&w[0]); /* the loop in main's thread: its stack ends in the C library's entry */
  } else {
    pthread_barrier_wait(&start);
    t0 = bench_now_ns();
    for (long t = 0; t < threads; t++) pthread_join(tid[t], NULL);
  }
  double wall = (double)(bench_now_ns() - t0) / 1e9;

  size_t n = 0;
  for (long t = 0; t < threads; t++)
    for (size_t b = 0; b < w[t].nbatches; b++) all[n++] = w[t].batch_ns[b];
  double mean = 0;
  for (size_t i = 0; i < n; i++) mean += all[i];
  mean /= (double)(n ? n : 1);
  double med = bench_median(all, n);
  printf("{\"bench\":\"copy\",\"api\":\"%s\",\"threads\":%ld,\"bytes\":%ld,\"copies\":%ld,\"batch\":%ld,"
         "\"ns_per_call\":%.1f,\"mean_ns_per_call\":%.1f,\"wall_s\":%.6f,\"calls_per_s\":%.0f}\n",
         driver ? "driver" : "runtime", threads, bytes, copies * threads, batch, med, mean, wall,
         (double)(copies * threads) / wall);
  free(all);
  free(tid);
  free(w);
  pthread_barrier_destroy(&start);
  return 0;
}
