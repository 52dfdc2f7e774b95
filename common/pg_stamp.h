/* pg_stamp.h: the enqueue time of every tracked access, taken on the per-copy path. A clock
 * read costs a call into the vDSO and some twenty instructions; the CPU's counter costs one.
 * Stamps are converted to nanoseconds only when a report prints an age (pg_stamp_age_ns), at
 * the rate measured between pg_tracker_init and that report. */
#ifndef PG_STAMP_H
#define PG_STAMP_H

#include <stdint.h>
#include <time.h>

static inline uint64_t pg_clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A counter that moves at a constant rate, the same on every core: the time-stamp counter on
 * x86-64 (invariant on every CPU a CUDA 13 driver supports), the virtual counter on arm64;
 * elsewhere the clock itself. */
static inline uint64_t pg_stamp(void) {
#if defined(__x86_64__)
  uint32_t lo, hi;
  __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
  uint64_t v;
  __asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v));
  return v;
#else
  return pg_clock_ns();
#endif
}

/* Starts the rate measurement (pg_tracker_init). */
void pg_stamp_calibrate(void);
/* Nanoseconds since pg_stamp() returned `then` (0 if it is in the future). Async-signal-safe. */
uint64_t pg_stamp_age_ns(uint64_t then);

#endif /* PG_STAMP_H */
