/* pgkv_sim.c: the simcuda build of the kernels in pgkv_kernels.h: host functions registered with
 * their parameter sizes, each running every (block, thread) of the launch in order. */
#include <time.h>

#include "pgkv_kernels.h"

static void pgkv_spin(int64_t ns) {
  if (ns <= 0) return;
  struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

#define PGKV_SIM_BODY(to_host)                                                          \
  pgkv_objects_t obj = *(const pgkv_objects_t *)launch->args[0];                        \
  uint8_t *kv = *(uint8_t *const *)launch->args[1];                                     \
  const int32_t *ids = *(const int32_t *const *)launch->args[2];                        \
  pgkv_layout_t lay = *(const pgkv_layout_t *)launch->args[3];                          \
  pgkv_spin(lay.spin_ns);                                                               \
  for (pgkv_thread_t t = {0, launch->grid.x, 0, launch->block.x}; t.block < t.nblocks;  \
       t.block++)                                                                       \
    for (t.thread = 0; t.thread < t.nthreads; t.thread++) pgkv_move(t, obj, kv, ids, lay, to_host);

SIMCUDA_KERNEL(pgkv_gather_kernel, sizeof(pgkv_objects_t), sizeof(uint8_t *),
               sizeof(const int32_t *), sizeof(pgkv_layout_t)) {
  PGKV_SIM_BODY(1)
}

SIMCUDA_KERNEL(pgkv_scatter_kernel, sizeof(pgkv_objects_t), sizeof(uint8_t *),
               sizeof(const int32_t *), sizeof(pgkv_layout_t)) {
  PGKV_SIM_BODY(0)
}

const void *pgkv_kernel_gather(void) { return (const void *)pgkv_gather_kernel; }
const void *pgkv_kernel_scatter(void) { return (const void *)pgkv_scatter_kernel; }
