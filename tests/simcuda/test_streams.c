/* test_streams.c: stream semantics: FIFO order within a stream, independence of non-blocking
 * streams, the legacy default stream's implicit synchronization, the per-thread default stream,
 * query/synchronize, stream creation parameters, destruction with pending work, and workers that
 * start only when a stream first gets work. */
#include <dirent.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "test_util.h"

/* ---- FIFO ----------------------------------------------------------------------------- */
typedef struct order_log {
  atomic_int n;
  int seen[256];
} order_log;

typedef struct order_item {
  order_log *log;
  int index;
} order_item;

static void hf_log(void *p) {
  order_item *it = p;
  int slot = atomic_fetch_add(&it->log->n, 1);
  it->log->seen[slot] = it->index;
}

static void low_latency(void) { sim_env("50"); }

Test(streams, fifo_order_within_a_stream, .init = low_latency) {
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  static order_log log;
  static order_item items[200];
  unsigned char *host, *dev;
  CK(cudaHostAlloc((void **)&host, 4096, 0));
  CK(cudaMalloc((void **)&dev, 4096));
  for (int i = 0; i < 200; i++) {
    items[i] = (order_item){&log, i};
    CK(cudaLaunchHostFunc(s, hf_log, &items[i]));
    /* Interleave copies: each later copy overwrites the earlier one's bytes. */
    memset(host, i & 0xff, 64);
    if (i % 20 == 0) CK(cudaMemcpyAsync(dev, host, 64, cudaMemcpyHostToDevice, s));
    if (i % 20 == 0) CK(cudaStreamSynchronize(s)); /* host buffer reuse needs the copy done */
  }
  CK(cudaStreamSynchronize(s));
  cr_assert_eq(atomic_load(&log.n), 200);
  for (int i = 0; i < 200; i++) cr_assert_eq(log.seen[i], i, "op %d ran at position %d", log.seen[i], i);
  unsigned char back[64];
  CK(cudaMemcpy(back, dev, 64, cudaMemcpyDeviceToHost));
  cr_assert_eq(back[0], 180);
  CK(cudaStreamDestroy(s));
}

/* Two copies to the same destination on one stream: the later one wins, always. */
Test(streams, fifo_order_of_copies, .init = low_latency) {
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  unsigned char *a, *b, *dev;
  CK(cudaHostAlloc((void **)&a, 1 << 16, 0));
  CK(cudaHostAlloc((void **)&b, 1 << 16, 0));
  CK(cudaMalloc((void **)&dev, 1 << 16));
  memset(a, 1, 1 << 16);
  memset(b, 2, 1 << 16);
  for (int i = 0; i < 50; i++) {
    CK(cudaMemcpyAsync(dev, a, 1 << 16, cudaMemcpyHostToDevice, s));
    CK(cudaMemcpyAsync(dev, b, 1 << 16, cudaMemcpyHostToDevice, s));
  }
  CK(cudaMemcpyAsync(a, dev, 1 << 16, cudaMemcpyDeviceToHost, s));
  CK(cudaStreamSynchronize(s));
  for (int i = 0; i < 1 << 16; i++) cr_assert_eq(a[i], 2);
}

/* ---- independence and the legacy stream --------------------------------------------------- */
Test(streams, nonblocking_streams_run_concurrently, .init = low_latency) {
  cudaStream_t a, b;
  CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  static gate g = GATE_INIT;
  /* a blocks until b opens the gate: only possible if b is not queued behind a. */
  CK(cudaLaunchHostFunc(a, hf_gate_wait, &g));
  CK(cudaLaunchHostFunc(b, hf_gate_open, &g));
  CK(cudaStreamSynchronize(a));
  cr_assert_eq(g.timed_out, 0, "stream a waited for stream b's later work");
}

typedef struct flag_check {
  atomic_int flag;
  atomic_int seen;
  gate g;
} flag_check;

static void hf_wait_then_set(void *p) {
  flag_check *f = p;
  gate_wait(&f->g);
  atomic_store(&f->flag, 1);
}

static void hf_read_flag(void *p) {
  flag_check *f = p;
  atomic_store(&f->seen, atomic_load(&f->flag));
}

static void *open_later(void *p) {
  /* Opened from another thread after the test queued everything. Correct ordering never
   * depends on this delay; it only gives a broken implementation time to run the dependent op
   * early, so that the test catches it. */
  struct timespec ts = {0, 100 * 1000 * 1000};
  nanosleep(&ts, NULL);
  gate_open(p);
  return NULL;
}

Test(streams, legacy_stream_waits_for_blocking_streams, .init = low_latency) {
  cudaStream_t s;
  CK(cudaStreamCreate(&s)); /* blocking */
  static flag_check f = {.g = GATE_INIT};
  CK(cudaLaunchHostFunc(s, hf_wait_then_set, &f));
  CK(cudaLaunchHostFunc(0, hf_read_flag, &f)); /* legacy: must wait for s */
  pthread_t t;
  pthread_create(&t, NULL, open_later, &f.g);
  CK(cudaStreamSynchronize(0));
  pthread_join(t, NULL);
  cr_assert_eq(atomic_load(&f.seen), 1, "legacy-stream op ran before earlier work on a blocking stream");
}

Test(streams, blocking_stream_waits_for_legacy_stream, .init = low_latency) {
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  static flag_check f = {.g = GATE_INIT};
  CK(cudaLaunchHostFunc(cudaStreamLegacy, hf_wait_then_set, &f));
  CK(cudaLaunchHostFunc(s, hf_read_flag, &f));
  pthread_t t;
  pthread_create(&t, NULL, open_later, &f.g);
  CK(cudaStreamSynchronize(s));
  pthread_join(t, NULL);
  cr_assert_eq(atomic_load(&f.seen), 1, "blocking-stream op ran before earlier legacy-stream work");
}

Test(streams, nonblocking_stream_ignores_legacy_stream, .init = low_latency) {
  cudaStream_t nb;
  CK(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
  static gate g = GATE_INIT;
  CK(cudaLaunchHostFunc(0, hf_gate_wait, &g)); /* legacy blocked until nb runs */
  CK(cudaLaunchHostFunc(nb, hf_gate_open, &g));
  CK(cudaStreamSynchronize(0));
  cr_assert_eq(g.timed_out, 0, "a non-blocking stream waited for the legacy stream");
}

/* What an H200 does where CUDA's text is silent (bench/gpu/legacy_order.cu): a wait on a blocking
 * stream is no op of the implicit order, nor a wait on the legacy stream for an event never
 * recorded; a query of the legacy stream counts its blocking streams' work. Each case holds one
 * side behind a gate and checks that the other did not wait for it (the gate would time out). */
Test(streams, wait_on_blocking_stream_does_not_wait_for_legacy_stream, .init = low_latency) {
  cudaStream_t s, nb;
  cudaEvent_t e;
  CK(cudaStreamCreate(&s));
  CK(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
  CK(cudaEventCreate(&e));
  CK(cudaEventRecord(e, nb));
  CK(cudaStreamSynchronize(nb));
  static gate g = GATE_INIT;
  CK(cudaLaunchHostFunc(0, hf_gate_wait, &g)); /* the legacy stream held */
  CK(cudaStreamWaitEvent(s, e, 0));
  CK(cudaStreamSynchronize(s));
  gate_open(&g);
  CK(cudaStreamSynchronize(0));
  cr_assert_eq(g.timed_out, 0, "a wait on a blocking stream waited for the legacy stream");
}

Test(streams, legacy_wait_for_unrecorded_event_does_not_wait_for_blocking, .init = low_latency) {
  cudaStream_t s, s2;
  cudaEvent_t never;
  CK(cudaStreamCreate(&s));
  CK(cudaStreamCreate(&s2));
  CK(cudaEventCreate(&never));
  static gate g = GATE_INIT;
  CK(cudaLaunchHostFunc(s, hf_gate_wait, &g)); /* a blocking stream held */
  CK(cudaStreamWaitEvent(0, never, 0));
  CK(cudaLaunchHostFunc(s2, hf_gate_open, &g)); /* after the legacy stream's work only */
  CK(cudaStreamSynchronize(s2));
  CK(cudaStreamSynchronize(s));
  cr_assert_eq(g.timed_out, 0, "a wait for an event never recorded ordered the legacy stream");
}

Test(streams, legacy_query_counts_blocking_streams_work, .init = low_latency) {
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  static gate g = GATE_INIT;
  CK(cudaLaunchHostFunc(s, hf_gate_wait, &g));
  CK_ERR(cudaStreamQuery(0), cudaErrorNotReady);
  gate_open(&g);
  CK(cudaStreamSynchronize(s));
  CK(cudaStreamQuery(0));
}

/* ---- per-thread default stream -------------------------------------------------------- */
Test(streams, per_thread_stream_is_handle_zero_under_ptsz, .init = low_latency) {
  static gate g = GATE_INIT;
  CK(cudaLaunchHostFunc_ptsz(0, hf_gate_wait, &g)); /* stream 0 here = per-thread stream */
  CK_ERR(cudaStreamQuery(cudaStreamPerThread), cudaErrorNotReady);
  /* The legacy stream's own queue is empty, but the per-thread stream is a blocking stream: a
   * query of the legacy stream counts its work, as an H200 does (bench/gpu/legacy_order.cu). */
  CK_ERR(cudaStreamQuery(cudaStreamLegacy), cudaErrorNotReady);
  gate_open(&g);
  CK(cudaStreamSynchronize(cudaStreamPerThread));
  CK(cudaStreamQuery_ptsz(0));
}

typedef struct thread_stream {
  cudaStream_t seen_query_before;
  cudaError_t other_query;
  gate *g;
} thread_stream;

static void *query_own_per_thread(void *p) {
  thread_stream *ts = p;
  /* Another thread's per-thread stream is a different stream: empty, hence ready. */
  ts->other_query = cudaStreamQuery(cudaStreamPerThread);
  return NULL;
}

Test(streams, per_thread_streams_are_distinct, .init = low_latency) {
  static gate g = GATE_INIT;
  CK(cudaLaunchHostFunc(cudaStreamPerThread, hf_gate_wait, &g));
  thread_stream ts = {.g = &g};
  pthread_t t;
  pthread_create(&t, NULL, query_own_per_thread, &ts);
  pthread_join(t, NULL);
  gate_open(&g);
  CK(cudaStreamSynchronize(cudaStreamPerThread));
  cr_assert_eq(ts.other_query, cudaSuccess);
}

/* ---- query, synchronize, create, destroy ------------------------------------------------- */
Test(streams, query_reports_not_ready_until_done, .init = low_latency) {
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  static gate g = GATE_INIT;
  CK(cudaStreamQuery(s));
  CK(cudaLaunchHostFunc(s, hf_gate_wait, &g));
  CK_ERR(cudaStreamQuery(s), cudaErrorNotReady);
  cr_assert_eq(cudaGetLastError(), cudaSuccess, "NotReady must not be recorded as an error");
  gate_open(&g);
  CK(cudaStreamSynchronize(s));
  CK(cudaStreamQuery(s));
}

Test(streams, device_synchronize_waits_for_every_stream, .init = low_latency) {
  cudaStream_t s[3];
  static order_log log;
  static order_item items[3];
  for (int i = 0; i < 3; i++) {
    CK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
    items[i] = (order_item){&log, i};
    CK(cudaLaunchHostFunc(s[i], hf_log, &items[i]));
  }
  CK(cudaDeviceSynchronize());
  cr_assert_eq(atomic_load(&log.n), 3);
}

Test(streams, create_parameters) {
  cudaStream_t s;
  unsigned flags = 99;
  int prio = 99, least, greatest;
  CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cr_assert(greatest <= least);
  CK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest - 10));
  CK(cudaStreamGetFlags(s, &flags));
  CK(cudaStreamGetPriority(s, &prio));
  cr_assert_eq(flags, cudaStreamNonBlocking);
  cr_assert_eq(prio, greatest, "priority is clamped into the device's range");
  CK(cudaStreamDestroy(s));
  CK_ERR(cudaStreamCreateWithFlags(&s, 0x80), cudaErrorInvalidValue);
  CK_ERR(cudaStreamCreate(NULL), cudaErrorInvalidValue);
  CK_ERR(cudaStreamDestroy(0), cudaErrorInvalidResourceHandle);
  CK_ERR(cudaStreamDestroy(cudaStreamPerThread), cudaErrorInvalidResourceHandle);
}

Test(streams, destroy_lets_queued_work_finish, .init = low_latency) {
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  static gate g = GATE_INIT;
  static order_log log;
  static order_item item = {&log, 7};
  CK(cudaLaunchHostFunc(s, hf_gate_wait, &g));
  CK(cudaLaunchHostFunc(s, hf_log, &item));
  CK(cudaStreamDestroy(s)); /* returns at once; the work still runs */
  gate_open(&g);
  CK(cudaDeviceSynchronize());
  cr_assert_eq(atomic_load(&log.n), 1);
  cr_assert_eq(log.seen[0], 7);
}

/* Two threads, each with its own stream and buffers, copying round trips concurrently: the data
 * must come back intact (this is also what the TSAN build exercises). */
typedef struct worker_arg {
  int id;
  int bad;
} worker_arg;

static void *round_trips(void *p) {
  worker_arg *w = p;
  cudaStream_t s;
  unsigned char *h, *d;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) || cudaHostAlloc((void **)&h, 8192, 0) ||
      cudaMalloc((void **)&d, 8192)) {
    w->bad = 1;
    return NULL;
  }
  for (int i = 0; i < 100; i++) {
    memset(h, (w->id * 100 + i) & 0xff, 8192);
    cudaMemcpyAsync(d, h, 8192, cudaMemcpyHostToDevice, s);
    cudaMemsetAsync(h, 0, 8192, s);
    cudaMemcpyAsync(h, d, 8192, cudaMemcpyDeviceToHost, s);
    cudaStreamSynchronize(s);
    for (int k = 0; k < 8192; k++)
      if (h[k] != ((w->id * 100 + i) & 0xff)) w->bad = 1;
  }
  cudaFree(d);
  cudaFreeHost(h);
  cudaStreamDestroy(s);
  return NULL;
}

Test(streams, two_threads_two_streams, .init = low_latency) {
  pthread_t t[2];
  worker_arg w[2] = {{1, 0}, {2, 0}};
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, round_trips, &w[i]);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  cr_assert_eq(w[0].bad + w[1].bad, 0);
}

static gate g_exit_gate = GATE_INIT;
static order_log g_exit_log;
static order_item g_exit_item = {&g_exit_log, 3};

static void *queue_and_exit(void *p) {
  (void)p;
  cudaLaunchHostFunc(cudaStreamPerThread, hf_gate_wait, &g_exit_gate);
  cudaLaunchHostFunc(cudaStreamPerThread, hf_log, &g_exit_item);
  return NULL; /* exits with work pending on its per-thread stream */
}

Test(streams, per_thread_stream_work_survives_thread_exit, .init = low_latency) {
  pthread_t t;
  pthread_create(&t, NULL, queue_and_exit, NULL);
  pthread_join(t, NULL);
  gate_open(&g_exit_gate);
  CK(cudaDeviceSynchronize());
  cr_assert_eq(atomic_load(&g_exit_log.n), 1);
  cr_assert_eq(g_exit_log.seen[0], 3);
}

/* ---- workers start with a stream's first op ------------------------------------------- */
static int thread_count(void) {
  int n = 0;
  DIR *d = opendir("/proc/self/task");
  cr_assert_not_null(d);
  for (struct dirent *e; (e = readdir(d));)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

static void hf_count(void *p) { atomic_fetch_add((atomic_int *)p, 1); }

Test(streams, idle_streams_cost_no_thread, .init = low_latency) {
  /* PyTorch creates a pool of 128 streams at its first torch.cuda.Stream() and uses a few. */
  enum { N = 128 };
  static cudaStream_t s[N];
  CK(cudaDeviceSynchronize()); /* the runtime's own start-up is not counted */
  int before = thread_count();
  for (int i = 0; i < N; i++) CK(cudaStreamCreateWithPriority(&s[i], cudaStreamNonBlocking, 0));
  cr_assert_eq(thread_count(), before, "creating streams started threads");
  static atomic_int ran;
  CK(cudaLaunchHostFunc(s[3], hf_count, &ran));
  CK(cudaLaunchHostFunc(s[3], hf_count, &ran));
  CK(cudaLaunchHostFunc(s[77], hf_count, &ran));
  cr_assert_eq(thread_count(), before + 2, "one worker per stream that got work");
  CK(cudaStreamSynchronize(s[3]));
  CK(cudaStreamSynchronize(s[77]));
  cr_assert_eq(atomic_load(&ran), 3);
  /* Idle streams synchronize, query and destroy like any other. */
  CK(cudaStreamSynchronize(s[0]));
  CK(cudaStreamQuery(s[1]));
  for (int i = 0; i < N; i++) CK(cudaStreamDestroy(s[i]));
  CK(cudaDeviceSynchronize());
}

/* A signal handler may query the stream its thread was enqueueing on when the signal came: the
 * query must not wait for the stream's lock, which the interrupted enqueue holds. Another thread
 * signals the enqueueing thread thousands of times; a deadlock is this test's timeout. */
static cudaStream_t sigq_stream;
static atomic_long sigq_answers;
static void sigq_handler(int sig) {
  (void)sig;
  cudaError_t e = cudaStreamQuery(sigq_stream);
  if (e == cudaSuccess || e == cudaErrorNotReady) atomic_fetch_add(&sigq_answers, 1);
}
static atomic_int sigq_stop;
static void *sigq_signaller(void *arg) {
  pthread_t target = *(pthread_t *)arg;
  while (!atomic_load(&sigq_stop)) pthread_kill(target, SIGUSR1);
  return NULL;
}
static void sigq_noop(void *p) { (void)p; }

Test(streams, signal_handler_queries_the_interrupted_stream, .init = low_latency, .timeout = 30) {
  CK(cudaStreamCreateWithFlags(&sigq_stream, cudaStreamNonBlocking));
  struct sigaction sa = {0};
  sa.sa_handler = sigq_handler;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
  pthread_t self = pthread_self(), t;
  cr_assert_eq(pthread_create(&t, NULL, sigq_signaller, &self), 0);
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (long i = 0;; i++) {
    CK(cudaLaunchHostFunc(sigq_stream, sigq_noop, NULL));
    if (i % 4096 == 0) {
      CK(cudaStreamSynchronize(sigq_stream));
      clock_gettime(CLOCK_MONOTONIC, &now);
      if ((now.tv_sec - t0.tv_sec) * 1000000000L + (now.tv_nsec - t0.tv_nsec) >= 2000000000L) break;
    }
  }
  atomic_store(&sigq_stop, 1);
  pthread_join(t, NULL);
  signal(SIGUSR1, SIG_IGN);
  CK(cudaStreamSynchronize(sigq_stream));
  cr_assert_gt(atomic_load(&sigq_answers), 5, "only %ld signals answered",
               atomic_load(&sigq_answers));
  CK(cudaStreamDestroy(sigq_stream));
}
