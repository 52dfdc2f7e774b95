/* sc_batch.h: the seam between the ABI-neutral batch-copy entry points (driver/sd_batch_abi.c, which
 * must not see the CUDA prototypes) and the implementation (sc_copy.c). Plain C types only. */
#ifndef SC_BATCH_H
#define SC_BATCH_H

#include <stddef.h>

/* Returns a cudaError_t. fail_idx is NULL under the 13.0 ABI. */
int sc_memcpy_batch(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
                    void *attrs, size_t *attrs_idxs, size_t num_attrs, size_t *fail_idx,
                    void *stream, int ptsz);

/* Same for cudaMemcpy3DBatchAsync; fail_idx is NULL under the 13.0 ABI. */
int sc_memcpy_3d_batch(size_t num_ops, void *op_list, size_t *fail_idx, unsigned long long flags,
                       void *stream, int ptsz);

/* The runtime version simcuda reports (SIMCUDA_RUNTIME_VERSION, default 13000). */
int sc_runtime_version(void);

#endif /* SC_BATCH_H */
