/* test_tracker_support.h: fixtures shared by the tracker suites that run on simcuda: the ops
 * table filled with the simulated runtime's functions, pinned buffers, and a "gate" kernel that
 * holds a stream busy until the test opens it, so in-flight states are exact, not timed. */
#ifndef TEST_TRACKER_SUPPORT_H
#define TEST_TRACKER_SUPPORT_H

#include <criterion/criterion.h>
#include <errno.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <time.h>

#include "pg_devops_runtime.h"
#include "sim_runtime_fns.h"
#include "pg_tracker.h"
#include "simcuda_kernel.h"

static atomic_int tt_events_created;

static atomic_int tt_events_destroyed;

/* The tracker's event queries (its completion polls), counted. */
static atomic_int tt_event_queries;

static cudaError_t tt_count_query(cudaEvent_t e) {
  atomic_fetch_add(&tt_event_queries, 1);
  return cudaEventQuery(e);
}

static cudaError_t tt_count_create(cudaEvent_t *e, unsigned flags) {
  atomic_fetch_add(&tt_events_created, 1);
  return cudaEventCreateWithFlags(e, flags);
}

static cudaError_t tt_count_destroy(cudaEvent_t e) {
  atomic_fetch_add(&tt_events_destroyed, 1);
  return cudaEventDestroy(e);
}

/* The tracker on the simulated runtime, through the shim's runtime backend. */
static inline void tt_init_tracker(void) {
  pg_cudart_fns_t rt = sim_runtime_fns();
  rt.event_create_with_flags = tt_count_create;
  rt.event_destroy = tt_count_destroy;
  rt.event_query = tt_count_query;
  pg_devops_t ops = pg_devops_runtime(&rt);
  cr_assert_eq(pg_tracker_init(&ops), 0);
}

/* ---- gates: a kernel that blocks its stream until opened (bounded: 20 s) --------------- */
typedef struct tt_gate {
  sem_t sem;
} tt_gate_t;

SIMCUDA_KERNEL(tt_gate_kernel, sizeof(tt_gate_t *)) {
  tt_gate_t *g = *(tt_gate_t **)launch->args[0];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += 20;
  while (sem_timedwait(&g->sem, &ts) == -1 && errno == EINTR) {
  }
}

#define TT_MAX_GATES 16
static tt_gate_t tt_gates[TT_MAX_GATES];
static int tt_ngates;

/* Holds every later operation on s until tt_open_gates(). */
static inline void tt_close_gate(cudaStream_t s) {
  cr_assert_lt(tt_ngates, TT_MAX_GATES);
  tt_gate_t *g = &tt_gates[tt_ngates++];
  sem_init(&g->sem, 0, 0);
  void *args[] = {&g};
  dim3 one = {1, 1, 1};
  cr_assert_eq(cudaLaunchKernel((const void *)tt_gate_kernel, one, one, args, 0, s), cudaSuccess);
}

static inline void tt_open_gates(void) {
  for (int i = 0; i < tt_ngates; i++) sem_post(&tt_gates[i].sem);
  tt_ngates = 0;
}

/* ---- helpers ------------------------------------------------------------------------- */
/* Pinned host memory, registered with the tracker as the shim would. */
static inline void *tt_pinned(size_t n) {
  void *p = NULL;
  cr_assert_eq(cudaHostAlloc(&p, n, cudaHostAllocDefault), cudaSuccess);
  cr_assert_eq(pg_region_add(p, n, PG_PIN_HOST_ALLOC, 0, NULL), 0);
  return p;
}

static inline void *tt_device(size_t n) {
  void *d = NULL;
  cr_assert_eq(cudaMalloc(&d, n), cudaSuccess);
  return d;
}

static inline cudaStream_t tt_stream(unsigned flags) {
  cudaStream_t s;
  cr_assert_eq(cudaStreamCreateWithFlags(&s, flags), cudaSuccess);
  return s;
}

/* A real device->host copy into [h, h+n) on s, tracked as the shim tracks it. */
static inline int tt_copy_d2h(void *h, const void *d, size_t n, cudaStream_t s) {
  cr_assert_eq(cudaMemcpyAsync(h, d, n, cudaMemcpyDeviceToHost, s), cudaSuccess);
  pg_origin_t o = {"copy device->host", NULL};
  return pg_access_begin(h, n, PG_DIR_WRITE, s, &o, NULL);
}

static inline int tt_copy_h2d(void *d, const void *h, size_t n, cudaStream_t s) {
  cr_assert_eq(cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, s), cudaSuccess);
  pg_origin_t o = {"copy host->device", NULL};
  return pg_access_begin(h, n, PG_DIR_READ, s, &o, NULL);
}

static inline void tt_stream_sync(cudaStream_t s) {
  pg_hb_sync_prepare(s);
  cr_assert_eq(cudaStreamSynchronize(s), cudaSuccess);
  pg_hb_sync_done(1);
}

static inline void tt_device_sync(void) {
  pg_hb_sync_prepare_device();
  cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
  pg_hb_sync_done(1);
}

static inline void tt_record(cudaEvent_t e, cudaStream_t s) {
  cr_assert_eq(cudaEventRecord(e, s), cudaSuccess);
  pg_hb_event_record(e, s);
}

static inline void tt_wait_event(cudaStream_t s, cudaEvent_t e) {
  cr_assert_eq(cudaStreamWaitEvent(s, e, 0), cudaSuccess);
  pg_hb_stream_wait_event(s, e);
}

/* The common fixture: the tracker, n pinned bytes, n device bytes and one blocking stream. */
static inline void tt_setup_one_stream(size_t n, void **buf, void **dev, cudaStream_t *s) {
  tt_init_tracker();
  *buf = tt_pinned(n);
  *dev = tt_device(n);
  *s = tt_stream(cudaStreamDefault);
}

/* Teardown: lets every held stream finish, so no worker is left blocked. */
static inline void tt_teardown(void) {
  tt_open_gates();
  cudaDeviceSynchronize();
}

#endif /* TEST_TRACKER_SUPPORT_H */
