/* rt_batch_abi.c: the exported batch-copy entry points, which serve two ABIs. CUDA 12.8 declared
 *   cudaMemcpyBatchAsync(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, size_t *failIdx, stream)
 *   cudaMemcpy3DBatchAsync(numOps, opList, size_t *failIdx, flags, stream)
 * and 13.0 dropped failIdx. SIMCUDA_RUNTIME_VERSION=12080 makes simcuda a 12.8 runtime, so the
 * shim's run-time ABI dispatch can be tested. Each function is defined with the longer parameter
 * list; under the 13.0 ABI the extra trailing argument is never read (SysV passes it on the stack,
 * where a 13.0 caller simply did not put it). The driver function underneath is the one
 * cuGetProcAddress gave for the runtime's version: the 12.8 cuMemcpyBatchAsync (with failIdx) for
 * 12080, cuMemcpyBatchAsync_v2 for 13000 (rt_init.c). This file deliberately does not include the
 * CUDA headers, whose 13.0 prototypes would conflict. */
#include <stddef.h>
#include <stdint.h>

#define SR_API __attribute__((visibility("default")))

/* rt_init.c, in plain types */
int sr_batch_enter(const char *name);
int sr_batch_ret(int err);
int sr_version(void);
void *sr_batch_fn(int three_d, int ptsz);

typedef int (*sr_batch_v12080)(void *const *, const void *const *, const size_t *, size_t, void *,
                               size_t *, size_t, size_t *, void *);
typedef int (*sr_batch_v13000)(void *const *, const void *const *, const size_t *, size_t, void *,
                               size_t *, size_t, void *);
typedef int (*sr_batch3d_v12080)(size_t, void *, size_t *, unsigned long long, void *);
typedef int (*sr_batch3d_v13000)(size_t, void *, unsigned long long, void *);

static int sr_batch(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
                    void *attrs, size_t *attrsIdxs, size_t numAttrs, void *arg8, void *arg9,
                    int ptsz) {
  int err = sr_batch_enter("cudaMemcpyBatchAsync");
  if (err) return err;
  void *fn = sr_batch_fn(0, ptsz);
  if (sr_version() < 13000)
    return sr_batch_ret(((sr_batch_v12080)fn)(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs,
                                              (size_t *)arg8, arg9));
  return sr_batch_ret(
      ((sr_batch_v13000)fn)(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, arg8));
}

SR_API int cudaMemcpyBatchAsync(void *const *dsts, const void *const *srcs, const size_t *sizes,
                                size_t count, void *attrs, size_t *attrsIdxs, size_t numAttrs,
                                void *arg8, void *arg9) {
  return sr_batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, arg8, arg9, 0);
}

SR_API int cudaMemcpyBatchAsync_ptsz(void *const *dsts, const void *const *srcs,
                                     const size_t *sizes, size_t count, void *attrs,
                                     size_t *attrsIdxs, size_t numAttrs, void *arg8, void *arg9) {
  return sr_batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, arg8, arg9, 1);
}

/* 13.0: (numOps, opList, flags, stream); 12.8: (numOps, opList, failIdx, flags, stream). Both
 * orders fit in registers, so the third to fifth arguments are reinterpreted by mode. */
static int sr_batch_3d(size_t numOps, void *opList, unsigned long long arg3, void *arg4, void *arg5,
                       int ptsz) {
  int err = sr_batch_enter("cudaMemcpy3DBatchAsync");
  if (err) return err;
  void *fn = sr_batch_fn(1, ptsz);
  if (sr_version() < 13000)
    return sr_batch_ret(((sr_batch3d_v12080)fn)(numOps, opList, (size_t *)(uintptr_t)arg3,
                                                (unsigned long long)(uintptr_t)arg4, arg5));
  return sr_batch_ret(((sr_batch3d_v13000)fn)(numOps, opList, arg3, arg4));
}

SR_API int cudaMemcpy3DBatchAsync(size_t numOps, void *opList, unsigned long long arg3, void *arg4,
                                  void *arg5) {
  return sr_batch_3d(numOps, opList, arg3, arg4, arg5, 0);
}

SR_API int cudaMemcpy3DBatchAsync_ptsz(size_t numOps, void *opList, unsigned long long arg3,
                                       void *arg4, void *arg5) {
  return sr_batch_3d(numOps, opList, arg3, arg4, arg5, 1);
}
