/* pg_stamp.c: the enqueue stamps' rate (pg_stamp.h), calibrated when the tracker starts
 * (pg_tracker_init). The counter's rate is the ratio of counter to clock over the longest
 * interval at hand: from tracker start to the report asking. */
#include "pg_stamp.h"

#include <stdatomic.h>

static _Atomic uint64_t g_cal_stamp, g_cal_ns;

void pg_stamp_calibrate(void) {
  if (atomic_load(&g_cal_ns)) return;
  atomic_store(&g_cal_stamp, pg_stamp());
  atomic_store(&g_cal_ns, pg_clock_ns());
}

uint64_t pg_stamp_age_ns(uint64_t then) {
  uint64_t now = pg_stamp();
  if (then >= now) return 0;
#if defined(__x86_64__) || defined(__aarch64__)
  uint64_t ns = pg_clock_ns(), s0 = atomic_load(&g_cal_stamp), n0 = atomic_load(&g_cal_ns);
  if (!n0 || now <= s0 || ns <= n0) return 0; /* not calibrated yet */
  return (uint64_t)((double)(now - then) * ((double)(ns - n0) / (double)(now - s0)));
#else
  return now - then;
#endif
}
