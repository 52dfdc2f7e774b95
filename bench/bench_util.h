/* bench_util.h: what every benchmark program shares: the clock, CUDA error checks, medians,
 * integer options, and a watchdog so that no benchmark can hang a CI run. Header-only: each
 * program is one translation unit. */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

static inline uint64_t bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define BENCH_CHECK(call)                                                                  \
  do {                                                                                     \
    cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess) {                                                               \
      fprintf(stderr, "bench: %s failed: %s (%s:%d)\n", #call, cudaGetErrorName(e_),       \
              __FILE__, __LINE__);                                                         \
      exit(3);                                                                             \
    }                                                                                      \
  } while (0)

static inline int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts v). */
static inline double bench_median(double *v, size_t n) {
  if (n == 0) return 0;
  qsort(v, n, sizeof *v, bench_cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* "--name=value" or "--name value": the value of option name in argv, else def. */
static inline long bench_opt(int argc, char **argv, const char *name, long def) {
  size_t len = strlen(name);
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], name, len) != 0) continue;
    const char *v = NULL;
    if (argv[i][len] == '=') v = argv[i] + len + 1;
    else if (argv[i][len] == '\0' && i + 1 < argc) v = argv[i + 1];
    if (!v) continue;
    char *end;
    long x = strtol(v, &end, 0);
    if (*end == 'k' || *end == 'K') x <<= 10, end++;
    else if (*end == 'm' || *end == 'M') x <<= 20, end++;
    if (*end || x < 0) {
      fprintf(stderr, "bench: bad value for %s: '%s'\n", name, v);
      exit(2);
    }
    return x;
  }
  return def;
}

/* A benchmark that stops making progress (a tracker bug turning into a wait on work that can
 * never complete, say) dies loudly instead of holding up the run. */
static void bench_watchdog_fired(int sig) {
  (void)sig;
  static const char msg[] = "bench: watchdog: no result in time, aborting\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  _exit(4);
}

static inline void bench_watchdog(unsigned seconds) {
  signal(SIGALRM, bench_watchdog_fired);
  alarm(seconds);
}

/* The gate (--gate): a host function at the head of each batch that blocks the stream until the
 * whole batch is enqueued, so no copy completes while the batch is being enqueued. What the
 * caller then does per copy no longer depends on how far the stream's worker got, which is what
 * makes instruction counts repeatable (bench/instr.sh). */
typedef struct gate {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int open;
} gate_t;

static inline void CUDART_CB gate_wait(void *arg) {
  gate_t *g = arg;
  pthread_mutex_lock(&g->mu);
  while (!g->open) pthread_cond_wait(&g->cv, &g->mu);
  pthread_mutex_unlock(&g->mu);
}

static inline void gate_set(gate_t *g, int open) {
  pthread_mutex_lock(&g->mu);
  g->open = open;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
}

#endif /* BENCH_UTIL_H */
