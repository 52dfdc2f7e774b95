/* kv_kernel_handles.h: how host code names the engine's kernels. Each build (simcuda or nvcc)
 * defines these, so the host code that passes them to cudaLaunchKernel is the same in both.
 * Parameter lists (all by value):
 *   gather  (kv_chunk_ptrs_t dst, const uint8_t *kv, const int32_t *ids, kv_layout_t lay)
 *   scatter (kv_chunk_ptrs_t src, uint8_t *kv, const int32_t *ids, kv_layout_t lay)
 *   compute (int64_t ns) */
#ifndef KV_KERNEL_HANDLES_H
#define KV_KERNEL_HANDLES_H

#ifdef __cplusplus
extern "C" {
#endif

const void *kv_kernel_gather(void);
const void *kv_kernel_scatter(void);
const void *kv_kernel_compute(void);

#ifdef __cplusplus
}
#endif

#endif /* KV_KERNEL_HANDLES_H */
