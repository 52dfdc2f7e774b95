/* test_util.h: helpers shared by simcuda's Criterion suites: a CUDA-call assertion, a bounded
 * "gate" host functions can block on (so a test controls exactly when a stream proceeds, without
 * sleeping as synchronization), and setting simcuda's environment before it initializes. */
#ifndef SIMCUDA_TEST_UTIL_H
#define SIMCUDA_TEST_UTIL_H

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include <criterion/criterion.h>
#include <cuda_runtime_api.h>

#include "simcuda_ptsz.h"

#define CK(call)                                                                  \
  do {                                                                            \
    cudaError_t ck_err_ = (call);                                                 \
    cr_assert_eq(ck_err_, cudaSuccess, "%s -> %s", #call, cudaGetErrorName(ck_err_)); \
  } while (0)

#define CK_ERR(call, expected)                                                    \
  do {                                                                            \
    cudaError_t ck_err_ = (call);                                                 \
    cr_assert_eq(ck_err_, (expected), "%s -> %s, expected %s", #call,             \
                 cudaGetErrorName(ck_err_), cudaGetErrorName(expected));          \
  } while (0)

/* Every wait in a test is bounded: a gate that never opens times out and is reported. */
#define GATE_TIMEOUT_S 20

typedef struct gate {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int open;
  int timed_out;
} gate;

#define GATE_INIT {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0}

static inline void gate_open(gate *g) {
  pthread_mutex_lock(&g->mu);
  g->open = 1;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
}

static inline void gate_wait(gate *g) {
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += GATE_TIMEOUT_S;
  pthread_mutex_lock(&g->mu);
  while (!g->open) {
    if (pthread_cond_timedwait(&g->cv, &g->mu, &deadline) == ETIMEDOUT) {
      g->timed_out = 1;
      break;
    }
  }
  pthread_mutex_unlock(&g->mu);
}

/* Host-function adapters. */
static inline void hf_gate_wait(void *g) { gate_wait(g); }
static inline void hf_gate_open(void *g) { gate_open(g); }

/* simcuda reads its environment once, at the first CUDA call of the process; Criterion runs
 * each test in its own process, so a test's .init can choose the configuration. */
static inline void sim_env(const char *latency_us) {
  setenv("SIMCUDA_LATENCY_US", latency_us, 1);
}

#endif /* SIMCUDA_TEST_UTIL_H */
