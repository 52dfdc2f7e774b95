/* kv_kernels_sim.c: the simcuda build of the kernels in kv_kernels.h. Each kernel is a host
 * function registered with its parameter sizes; it runs the shared body once per thread of the
 * launch geometry, serially, on the stream's worker thread. */
#include "kv_kernel_handles.h"
#include "kv_kernels.h"

/* Every (block, thread) of a 1-D launch, in order; the other dimensions repeat it, as on a GPU
 * the extra blocks/threads would find no work left. */
#define KV_FOR_EACH_THREAD(launch, t)                                                              \
  for (uint32_t kv_rep_ = 0;                                                                       \
       kv_rep_ < (launch)->grid.y * (launch)->grid.z * (launch)->block.y * (launch)->block.z;      \
       kv_rep_++)                                                                                  \
    for (kv_thread_t t = {0, (launch)->grid.x, 0, (launch)->block.x}; t.block < t.nblocks;         \
         t.block++)                                                                                \
      for (t.thread = 0; t.thread < t.nthreads; t.thread++)

SIMCUDA_KERNEL(kv_gather_kernel, sizeof(kv_chunk_ptrs_t), sizeof(const uint8_t *),
               sizeof(const int32_t *), sizeof(kv_layout_t)) {
  kv_chunk_ptrs_t dst = *(const kv_chunk_ptrs_t *)launch->args[0];
  const uint8_t *kv = *(const uint8_t *const *)launch->args[1];
  const int32_t *ids = *(const int32_t *const *)launch->args[2];
  kv_layout_t lay = *(const kv_layout_t *)launch->args[3];
  KV_FOR_EACH_THREAD(launch, t) kv_gather_thread(t, dst, kv, ids, lay);
}

SIMCUDA_KERNEL(kv_scatter_kernel, sizeof(kv_chunk_ptrs_t), sizeof(uint8_t *),
               sizeof(const int32_t *), sizeof(kv_layout_t)) {
  kv_chunk_ptrs_t src = *(const kv_chunk_ptrs_t *)launch->args[0];
  uint8_t *kv = *(uint8_t *const *)launch->args[1];
  const int32_t *ids = *(const int32_t *const *)launch->args[2];
  kv_layout_t lay = *(const kv_layout_t *)launch->args[3];
  KV_FOR_EACH_THREAD(launch, t) kv_scatter_thread(t, src, kv, ids, lay);
}

SIMCUDA_KERNEL(kv_compute_kernel, sizeof(int64_t)) {
  int64_t ns = *(const int64_t *)launch->args[0];
  KV_FOR_EACH_THREAD(launch, t) kv_compute_thread(t, ns);
}

const void *kv_kernel_gather(void) { return (const void *)kv_gather_kernel; }
const void *kv_kernel_scatter(void) { return (const void *)kv_scatter_kernel; }
const void *kv_kernel_compute(void) { return (const void *)kv_compute_kernel; }
