/* bench_streams.c: what one call costs with many live streams (bench/instr.sh --case streams).
 * S non-blocking streams (--streams, default 1024) spread over the devices (SIMCUDA_DEVICES),
 * each made live by one copy from a pinned buffer, then every device synchronized; then N times
 * the measured op (--op):
 *   copy      a 4 KiB host->device copy on the last stream (a copy on the 1,000th stream costs
 *             what one on the first does), the stream synchronized every 1,024 copies;
 *   readers   a 4 KiB host->device copy of the same pinned bytes on stream i % S (S streams
 *             reading the same bytes), all N in one gated batch, every device synchronized
 *             after it; first, untimed, a warm-up batch of W copies (--warm, default 16,384) the
 *             same way, so that each stream's pools already hold what N copies take (N <= W) and
 *             the gates' host functions are as many at any N (their own cost, 7 allocator calls
 *             each in pinguard's host-function records, is not a copy's);
 *   sync      cudaStreamSynchronize of the last stream;
 *   record    cudaEventRecord on the last stream;
 *   devsync   cudaDeviceSynchronize of device 0 (S / devices of the streams).
 * With --record-event each copy also records an event (the floor instr.sh subtracts from the
 * copy ops). Prints one JSON line.
 *   bench_streams [--streams S] [--op copy|readers|sync|record|devsync] [--ops N]
 *                 [--warm W] [--record-event] */
#include "bench_util.h"

static void sync_all(int ndev) {
  for (int d = 0; d < ndev; d++) {
    BENCH_CHECK(cudaSetDevice(d));
    BENCH_CHECK(cudaDeviceSynchronize());
  }
  BENCH_CHECK(cudaSetDevice(0));
}

static int run(int argc, char **argv) {
  long nstreams = bench_opt(argc, argv, "--streams", 1024);
  long ops = bench_opt(argc, argv, "--ops", 4096);
  long warm = bench_opt(argc, argv, "--warm", 16384);
  const char *op = "copy";
  int record = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--op") && i + 1 < argc) op = argv[i + 1];
    record |= !strcmp(argv[i], "--record-event");
    if (!strcmp(argv[i], "--help")) {
      printf("usage: bench_streams [--streams S] [--op copy|sync|record|devsync|readers] "
             "[--ops N] [--warm W] [--record-event]\n");
      return 0;
    }
  }
  if (nstreams < 1 || ops < 1 || warm < 0) return 2;
  bench_watchdog(300);
  int ndev = 1;
  BENCH_CHECK(cudaGetDeviceCount(&ndev));
  cudaStream_t *s = calloc((size_t)nstreams, sizeof *s);
  void **dev = calloc((size_t)ndev, sizeof *dev);
  char *host;
  if (!s || !dev) return 3;
  BENCH_CHECK(cudaHostAlloc((void **)&host, 1 << 20, cudaHostAllocPortable));
  memset(host, 1, 1 << 20);
  for (int d = 0; d < ndev; d++) {
    BENCH_CHECK(cudaSetDevice(d));
    BENCH_CHECK(cudaMalloc(&dev[d], 1 << 20));
  }
  for (long i = 0; i < nstreams; i++) {
    int d = (int)(i % ndev);
    BENCH_CHECK(cudaSetDevice(d));
    BENCH_CHECK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
    BENCH_CHECK(cudaMemcpyAsync(dev[d], host + (i % 256) * 4096, 4096, cudaMemcpyHostToDevice,
                                s[i]));
  }
  sync_all(ndev);
  /* The last stream, and the last one of device 0. */
  long last = nstreams - 1, last0 = (nstreams - 1) / ndev * ndev;
  int dlast = (int)(last % ndev);
  if (!strcmp(op, "devsync")) dlast = 0;
  /* The floor's event is recorded on a stream of its own device (an event recorded on another
   * device's stream is an invalid handle): one per device. */
  cudaEvent_t ev, *floor_ev = calloc((size_t)ndev, sizeof *floor_ev);
  if (!floor_ev) return 3;
  for (int d = 0; d < ndev; d++) {
    BENCH_CHECK(cudaSetDevice(d));
    BENCH_CHECK(cudaEventCreateWithFlags(&floor_ev[d], cudaEventDisableTiming));
  }
  BENCH_CHECK(cudaSetDevice(dlast));
  BENCH_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  /* The copy ops run in batches, each stream they use held by a gate (a host function) until
   * the batch is enqueued, so that no copy completes meanwhile and what pinguard does per copy
   * does not depend on how far the workers got (repeatable counts, as bench_copy --gate). */
  gate_t gate = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .open = 0};
  int readers = !strcmp(op, "readers");
  long batch = readers ? ops : 1024; /* readers: one batch, every stream gated */
  if (readers && warm > 0) {
    gate_set(&gate, 0);
    for (long k = 0; k < nstreams; k++) {
      if (ndev > 1) BENCH_CHECK(cudaSetDevice((int)(k % ndev)));
      BENCH_CHECK(cudaLaunchHostFunc(s[k], gate_wait, &gate));
    }
    for (long i = 0; i < warm; i++) {
      long k = i % nstreams;
      int d = (int)(k % ndev);
      if (ndev > 1) BENCH_CHECK(cudaSetDevice(d));
      BENCH_CHECK(cudaMemcpyAsync(dev[d], host, 4096, cudaMemcpyHostToDevice, s[k]));
      if (record) BENCH_CHECK(cudaEventRecord(floor_ev[d], s[k]));
    }
    gate_set(&gate, 1);
    sync_all(ndev);
  }
  uint64_t t0 = bench_now_ns();
  for (long i = 0; i < ops; i++) {
    if ((readers || !strcmp(op, "copy")) && i % batch == 0) {
      gate_set(&gate, 0);
      for (long k = readers ? 0 : last; k < nstreams; k++) {
        if (ndev > 1) BENCH_CHECK(cudaSetDevice((int)(k % ndev)));
        BENCH_CHECK(cudaLaunchHostFunc(s[k], gate_wait, &gate));
      }
    }
    if (readers) {
      long k = i % nstreams;
      int d = (int)(k % ndev);
      if (ndev > 1) BENCH_CHECK(cudaSetDevice(d));
      BENCH_CHECK(cudaMemcpyAsync(dev[d], host, 4096, cudaMemcpyHostToDevice, s[k]));
      if (record) BENCH_CHECK(cudaEventRecord(floor_ev[d], s[k]));
      if (i % batch == batch - 1 || i == ops - 1) {
        gate_set(&gate, 1);
        sync_all(ndev);
      }
      continue;
    }
    long k = !strcmp(op, "devsync") ? last0 : last;
    int d = (int)(k % ndev);
    if (ndev > 1) BENCH_CHECK(cudaSetDevice(d));
    if (!strcmp(op, "copy")) {
      BENCH_CHECK(cudaMemcpyAsync(dev[d], host + 8192, 4096, cudaMemcpyHostToDevice, s[k]));
      if (record) BENCH_CHECK(cudaEventRecord(floor_ev[d], s[k]));
      if (i % batch == batch - 1 || i == ops - 1) {
        gate_set(&gate, 1);
        BENCH_CHECK(cudaStreamSynchronize(s[k]));
      }
    } else if (!strcmp(op, "sync")) {
      BENCH_CHECK(cudaStreamSynchronize(s[k]));
    } else if (!strcmp(op, "record")) {
      BENCH_CHECK(cudaEventRecord(ev, s[k]));
    } else if (!strcmp(op, "devsync")) {
      BENCH_CHECK(cudaDeviceSynchronize());
    } else {
      fprintf(stderr, "bench_streams: unknown --op %s\n", op);
      return 2;
    }
  }
  uint64_t t1 = bench_now_ns();
  sync_all(ndev);
  printf("{\"bench\":\"streams\",\"op\":\"%s\",\"streams\":%ld,\"devices\":%d,\"ops\":%ld,"
         "\"ns_per_op\":%.1f}\n",
         op, nstreams, ndev, ops, (double)(t1 - t0) / (double)ops);
  return 0;
}

/* The loop runs on a thread of its own, as bench_copy's do: a stack capture then ends at the
 * thread's start, not in the C library's entry (bench_copy_nofp --inline measures that). */
typedef struct run_args {
  int argc;
  char **argv;
  int rc;
} run_args_t;

static void *run_thread(void *p) {
  run_args_t *a = p;
  a->rc = run(a->argc, a->argv);
  return NULL;
}

int main(int argc, char **argv) {
  run_args_t a = {argc, argv, 0};
  pthread_t t;
  if (pthread_create(&t, NULL, run_thread, &a) != 0) return 3;
  pthread_join(t, NULL);
  return a.rc;
}
