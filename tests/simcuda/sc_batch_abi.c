/* sc_batch_abi.c: the exported batch-copy entry points, which serve two ABIs. CUDA 12.8 declared
 *   cudaMemcpyBatchAsync(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, size_t *failIdx, stream)
 *   cudaMemcpy3DBatchAsync(numOps, opList, size_t *failIdx, flags, stream)
 * and 13.0 dropped failIdx. SIMCUDA_RUNTIME_VERSION=12080 makes simcuda a 12.8 runtime, so the
 * shim's run-time ABI dispatch can be tested. Each function is defined with the longer parameter
 * list; under the 13.0 ABI the extra trailing argument is never read (SysV passes it on the stack,
 * where a 13.0 caller simply did not put it). This file deliberately does not include the CUDA
 * headers, whose 13.0 prototypes would conflict. */
#include <stddef.h>
#include <stdint.h>

#include "sc_batch.h"

#define SC_API __attribute__((visibility("default")))

SC_API int cudaMemcpyBatchAsync(void *const *dsts, const void *const *srcs, const size_t *sizes,
                                size_t count, void *attrs, size_t *attrsIdxs, size_t numAttrs,
                                void *arg8, void *arg9) {
  if (sc_runtime_version() < 13000)
    return sc_memcpy_batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, (size_t *)arg8,
                           arg9, 0);
  return sc_memcpy_batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, NULL, arg8, 0);
}

SC_API int cudaMemcpyBatchAsync_ptsz(void *const *dsts, const void *const *srcs,
                                     const size_t *sizes, size_t count, void *attrs,
                                     size_t *attrsIdxs, size_t numAttrs, void *arg8, void *arg9) {
  if (sc_runtime_version() < 13000)
    return sc_memcpy_batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, (size_t *)arg8,
                           arg9, 1);
  return sc_memcpy_batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, NULL, arg8, 1);
}

/* 13.0: (numOps, opList, flags, stream); 12.8: (numOps, opList, failIdx, flags, stream). Both
 * orders fit in registers, so the third to fifth arguments are reinterpreted by mode. */
SC_API int cudaMemcpy3DBatchAsync(size_t numOps, void *opList, unsigned long long arg3, void *arg4,
                                  void *arg5) {
  if (sc_runtime_version() < 13000)
    return sc_memcpy_3d_batch(numOps, opList, (size_t *)(uintptr_t)arg3, (unsigned long long)(uintptr_t)arg4,
                              arg5, 0);
  return sc_memcpy_3d_batch(numOps, opList, NULL, arg3, arg4, 0);
}

SC_API int cudaMemcpy3DBatchAsync_ptsz(size_t numOps, void *opList, unsigned long long arg3,
                                       void *arg4, void *arg5) {
  if (sc_runtime_version() < 13000)
    return sc_memcpy_3d_batch(numOps, opList, (size_t *)(uintptr_t)arg3, (unsigned long long)(uintptr_t)arg4,
                              arg5, 1);
  return sc_memcpy_3d_batch(numOps, opList, NULL, arg3, arg4, 1);
}
