/* stress.c: a multi-threaded workout of simcuda without Criterion (which cannot run under
 * ThreadSanitizer), so the TSAN build checks the runtime's own synchronization. Threads copy and
 * launch on their own streams, order each other through events, use the legacy and per-thread
 * default streams, capture and replay graphs, and register/unregister host memory while copies
 * run. Every result is checked; exit status 0 means all of it was right (and, under TSAN, that
 * no report was printed: TSAN makes the process exit non-zero on a report). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <simcuda_kernel.h>

#define CHECK(cond)                                                              \
  do {                                                                           \
    if (!(cond)) {                                                               \
      fprintf(stderr, "stress: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)
#define CK(call) CHECK((call) == cudaSuccess)

enum { SZ = 16384, ITERS = 60 };

/* dst[i] = src[i] + add, for a pinned or device destination. */
SIMCUDA_KERNEL(add_kernel, sizeof(unsigned char *), sizeof(const unsigned char *), sizeof(size_t),
               sizeof(int)) {
  unsigned char *dst = simcuda_dma(*(unsigned char **)launch->args[0]);
  const unsigned char *src = simcuda_dma(*(const unsigned char **)launch->args[1]);
  size_t n = *(size_t *)launch->args[2];
  int add = *(int *)launch->args[3];
  for (size_t i = 0; i < n; i++) dst[i] = (unsigned char)(src[i] + add);
}

static void launch_add(void *dst, const void *src, size_t n, int add, cudaStream_t s) {
  void *args[] = {&dst, &src, &n, &add};
  CK(cudaLaunchKernel((const void *)add_kernel, (dim3){1, 1, 1}, (dim3){64, 1, 1}, args, 0, s));
}

static cudaEvent_t g_events[2];
static atomic_int g_hostfn_calls;

static void hf_count(void *p) {
  (void)p;
  atomic_fetch_add(&g_hostfn_calls, 1);
}

typedef struct worker {
  int id;
  pthread_barrier_t *barrier;
} worker;

static void *copy_worker(void *p) {
  worker *w = p;
  cudaStream_t s;
  unsigned char *h, *d, *d2;
  CK(cudaStreamCreateWithFlags(&s, w->id ? cudaStreamNonBlocking : 0));
  CK(cudaHostAlloc((void **)&h, SZ, 0));
  CK(cudaMalloc((void **)&d, SZ));
  CK(cudaMalloc((void **)&d2, SZ));
  pthread_barrier_wait(w->barrier);
  for (int it = 0; it < ITERS; it++) {
    unsigned char v = (unsigned char)(w->id * 64 + it);
    memset(h, v, SZ);
    CK(cudaMemcpyAsync(d, h, SZ, cudaMemcpyHostToDevice, s));
    launch_add(d2, d, SZ, 1, s);
    CK(cudaLaunchHostFunc(s, hf_count, NULL));
    CK(cudaEventRecord(g_events[w->id], s));
    /* Order against the other worker's latest record (a real cross-thread, cross-stream use). */
    CK(cudaStreamWaitEvent(s, g_events[1 - w->id], 0));
    CK(cudaMemcpyAsync(h, d2, SZ, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    for (int i = 0; i < SZ; i += 97) CHECK(h[i] == (unsigned char)(v + 1));
    cudaError_t q = cudaEventQuery(g_events[1 - w->id]);
    CHECK(q == cudaSuccess || q == cudaErrorNotReady);
  }
  /* Destroy with work still queued: the work completes. */
  launch_add(h, d2, SZ, 1, s);
  CK(cudaStreamDestroy(s));
  CK(cudaDeviceSynchronize());
  CHECK(h[0] == (unsigned char)(w->id * 64 + ITERS - 1 + 2));
  CK(cudaFree(d));
  CK(cudaFree(d2));
  CK(cudaFreeHost(h));
  return NULL;
}

/* Registers and unregisters host memory while the copy workers translate through aliases, and
 * uses the legacy and per-thread default streams. */
static void *register_worker(void *p) {
  worker *w = p;
  pthread_barrier_wait(w->barrier);
  unsigned char *d;
  CK(cudaMalloc((void **)&d, SZ));
  for (int it = 0; it < ITERS / 2; it++) {
    unsigned char *m = mmap(NULL, SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED);
    memset(m, it, SZ);
    CK(cudaHostRegister(m, SZ, 0));
    CK(cudaMemcpy(d, m, SZ, cudaMemcpyHostToDevice)); /* legacy stream */
    launch_add(m, d, SZ, 2, cudaStreamPerThread);
    CK(cudaStreamSynchronize(cudaStreamPerThread));
    CHECK(m[SZ - 1] == (unsigned char)(it + 2));
    CK(cudaHostUnregister(m));
    munmap(m, SZ);
  }
  CK(cudaFree(d));
  return NULL;
}

/* Captures a copy + kernel once and replays the graph from its own thread. */
static void *graph_worker(void *p) {
  worker *w = p;
  cudaStream_t s;
  unsigned char *h, *d;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaHostAlloc((void **)&h, SZ, 0));
  CK(cudaMalloc((void **)&d, SZ));
  pthread_barrier_wait(w->barrier);
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  CK(cudaMemcpyAsync(d, h, SZ, cudaMemcpyHostToDevice, s));
  launch_add(h, d, SZ, 3, s);
  cudaGraph_t g;
  cudaGraphExec_t e;
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&e, g, 0));
  memset(h, 0, SZ);
  for (int it = 0; it < ITERS / 2; it++) {
    CK(cudaGraphLaunch(e, s));
    CK(cudaStreamSynchronize(s));
    CHECK(h[it] == (unsigned char)(3 * (it + 1)));
  }
  CK(cudaGraphExecDestroy(e));
  CK(cudaGraphDestroy(g));
  CK(cudaStreamDestroy(s));
  CK(cudaFree(d));
  CK(cudaFreeHost(h));
  return NULL;
}

/* A thread that exits with work pending on its per-thread default stream. */
static void *exiting_worker(void *p) {
  (void)p;
  CK(cudaLaunchHostFunc(cudaStreamPerThread, hf_count, NULL));
  return NULL;
}

int main(void) {
  setenv("SIMCUDA_LATENCY_US", "20", 0);
  for (int i = 0; i < 2; i++) CK(cudaEventCreateWithFlags(&g_events[i], cudaEventDisableTiming));
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, 4);
  pthread_t t[5];
  worker w[4] = {{0, &barrier}, {1, &barrier}, {2, &barrier}, {3, &barrier}};
  pthread_create(&t[0], NULL, copy_worker, &w[0]);
  pthread_create(&t[1], NULL, copy_worker, &w[1]);
  pthread_create(&t[2], NULL, register_worker, &w[2]);
  pthread_create(&t[3], NULL, graph_worker, &w[3]);
  pthread_create(&t[4], NULL, exiting_worker, NULL);
  for (int i = 0; i < 5; i++) pthread_join(t[i], NULL);
  CK(cudaDeviceSynchronize());
  CHECK(atomic_load(&g_hostfn_calls) == 2 * ITERS + 1);
  for (int i = 0; i < 2; i++) CK(cudaEventDestroy(g_events[i]));
  pthread_barrier_destroy(&barrier);
  printf("stress: ok\n");
  return 0;
}
