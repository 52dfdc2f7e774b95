/* test_tracker_concurrency.c: several threads begin, query and retire accesses on their own
 * streams and regions, or all on one shared region, while another thread adds and removes
 * regions and a reader looks regions up without locks. A plain program rather than a Criterion
 * suite so that it also runs under ThreadSanitizer, where Criterion cannot start: it exits 0 when
 * every check held. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "pg_devops_runtime.h"
#include "sim_runtime_fns.h"
#include "pg_tracker.h"

#define WORKERS 3
#define ITERS 1000
#define BUF 65536

static atomic_int failures;
static atomic_int stop;

#define CHECK(cond)                                                         \
  do {                                                                      \
    if (!(cond)) {                                                          \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      atomic_fetch_add(&failures, 1);                                       \
    }                                                                       \
  } while (0)

static void sync_stream(cudaStream_t s) {
  pg_hb_sync_prepare(s);
  cudaError_t err = cudaStreamSynchronize(s);
  pg_hb_sync_done(err == cudaSuccess);
  CHECK(err == cudaSuccess);
}

static void sync_device(void) {
  pg_hb_sync_prepare_device();
  cudaError_t err = cudaDeviceSynchronize();
  pg_hb_sync_done(err == cudaSuccess);
  CHECK(err == cudaSuccess);
}

static char *pinned(size_t n) {
  void *p = NULL;
  if (cudaHostAlloc(&p, n, 0) != cudaSuccess) abort();
  if (pg_region_add(p, n, PG_PIN_HOST_ALLOC, 0, NULL) != 0) abort();
  return p;
}

/* ---- each worker on its own stream and region, regions churning beside them ---------- */
typedef struct worker {
  char *buf;
  void *dev;
  cudaStream_t s;
} worker_t;

static void *own_region_worker(void *arg) {
  worker_t *w = arg;
  pg_access_t out[4];
  for (int i = 0; i < ITERS; i++) {
    size_t off = (size_t)(i % 16) * 4096;
    CHECK(cudaMemcpyAsync(w->buf + off, w->dev, 4096, cudaMemcpyDeviceToHost, w->s) ==
          cudaSuccess);
    CHECK(pg_access_begin(w->buf + off, 4096, PG_DIR_WRITE, w->s, NULL, NULL) == 1);
    CHECK(pg_access_conflicts(w->buf, BUF, PG_DIR_WRITE, w->s, out, 4) == 0); /* own stream */
    pg_inflight_query(w->buf, BUF, 1, out, 4);
    if (i % 32 == 31) {
      sync_stream(w->s);
      CHECK(pg_inflight_query(w->buf, BUF, 0, out, 4) == 0);
    }
  }
  return NULL;
}

static void *churn_regions(void *arg) {
  (void)arg;
  uintptr_t base = 0x600000000000;
  for (unsigned n = 0; !atomic_load(&stop); n++) {
    uintptr_t b = base + (uintptr_t)(n % 512) * 65536;
    pg_region_add((void *)b, 65536, PG_PIN_REGISTER, 0, NULL);
    if (n % 2) pg_region_remove((void *)(b - 65536), NULL);
  }
  return NULL;
}

static void *read_regions(void *arg) {
  char *stable = arg;
  while (!atomic_load(&stop)) {
    pg_region_t r;
    CHECK(pg_region_find(stable + 1000, &r) && r.base == (uintptr_t)stable);
  }
  return NULL;
}

static void own_regions_with_churn(void) {
  worker_t w[WORKERS];
  pthread_t t[WORKERS], churn, reader;
  for (int i = 0; i < WORKERS; i++) {
    w[i].buf = pinned(BUF);
    CHECK(cudaMalloc(&w[i].dev, 4096) == cudaSuccess);
    CHECK(cudaStreamCreateWithFlags(&w[i].s, cudaStreamNonBlocking) == cudaSuccess);
  }
  w[WORKERS - 1].s = cudaStreamPerThread; /* each thread its own per-thread stream */
  atomic_store(&stop, 0);
  pthread_create(&churn, NULL, churn_regions, NULL);
  pthread_create(&reader, NULL, read_regions, w[0].buf);
  for (int i = 0; i < WORKERS; i++) pthread_create(&t[i], NULL, own_region_worker, &w[i]);
  for (int i = 0; i < WORKERS; i++) pthread_join(t[i], NULL);
  atomic_store(&stop, 1);
  pthread_join(churn, NULL);
  pthread_join(reader, NULL);
  sync_device();
  pg_tracker_retire();
  CHECK(pg_tracker_inflight_count() == 0);
}

/* ---- all workers reading one shared region from their own streams ------------------------ */
static char *shared_buf;

static void *shared_region_worker(void *arg) {
  cudaStream_t s = *(cudaStream_t *)arg;
  void *dev = NULL;
  CHECK(cudaMalloc(&dev, 4096) == cudaSuccess);
  pg_access_t out[8];
  for (int i = 0; i < 300; i++) {
    /* the device only reads the shared bytes: concurrent device writes would be a real race */
    CHECK(cudaMemcpyAsync(dev, shared_buf, 4096, cudaMemcpyHostToDevice, s) == cudaSuccess);
    CHECK(pg_access_begin(shared_buf, 4096, PG_DIR_READ, s, NULL, NULL) == 1);
    pg_access_conflicts(shared_buf, 4096, PG_DIR_WRITE, s, out, 8);
    if (i % 8 == 0) pg_tracker_retire();
    if (i % 64 == 0 && pg_inflight_query(shared_buf, 1, 0, out, 1) > 0)
      CHECK(pg_access_wait(&out[0]));
  }
  return NULL;
}

static void shared_region(void) {
  shared_buf = pinned(BUF);
  cudaStream_t s[WORKERS];
  pthread_t t[WORKERS];
  for (int i = 0; i < WORKERS; i++)
    CHECK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking) == cudaSuccess);
  for (int i = 0; i < WORKERS; i++) pthread_create(&t[i], NULL, shared_region_worker, &s[i]);
  for (int i = 0; i < WORKERS; i++) pthread_join(t[i], NULL);
  sync_device();
  CHECK(pg_tracker_inflight_count() == 0);
}

static cudaError_t create_event(cudaEvent_t *e, unsigned flags) {
  return cudaEventCreateWithFlags(e, flags);
}

int main(void) {
  pg_cudart_fns_t rt = sim_runtime_fns();
  rt.event_create_with_flags = create_event;
  pg_devops_t ops = pg_devops_runtime(&rt);
  if (pg_tracker_init(&ops) != 0) return 2;
  own_regions_with_churn();
  shared_region();
  int f = atomic_load(&failures);
  printf("tracker concurrency: %s (%d failed checks)\n", f ? "FAIL" : "ok", f);
  return f ? 1 : 0;
}
