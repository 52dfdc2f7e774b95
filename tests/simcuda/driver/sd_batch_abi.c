/* sd_batch_abi.c: the driver's batch copies, in both ABIs. CUDA 12.8 introduced
 *   cuMemcpyBatchAsync(dsts, srcs, sizes, count, attrs, attrIdxs, numAttrs, size_t *failIdx, stream)
 *   cuMemcpy3DBatchAsync(numOps, opList, size_t *failIdx, flags, stream)
 * and 13.0 added cuMemcpyBatchAsync_v2 and cuMemcpy3DBatchAsync_v2 without failIdx; cuda.h 13
 * declares only the _v2 forms under the plain names, so this file does not include it.
 * cuGetProcAddress hands out the 12.8 functions to callers asking with a cudaVersion from 12080,
 * and the _v2 ones from 13000 (sd_proc.c). The attribute and operation structures are the
 * runtime's (cudaMemcpyAttributes, cudaMemcpy3DBatchOp), which have the same layout. */
#include <stddef.h>

#include "sc_batch.h"

#define SD_API __attribute__((visibility("default")))

int sd_plain_enter(const char *name);
int sd_plain_save(void);
int sd_plain_finish(int saved, int err);

static int sd_batch(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
                    void *attrs, size_t *attrIdxs, size_t numAttrs, size_t *failIdx, void *stream,
                    int ptsz) {
  int err = sd_plain_enter("cuMemcpyBatchAsync");
  if (err) return err;
  int saved = sd_plain_save();
  err = sc_memcpy_batch(dsts, srcs, sizes, count, attrs, attrIdxs, numAttrs, failIdx, stream, ptsz);
  return sd_plain_finish(saved, err);
}

static int sd_batch_3d(size_t numOps, void *opList, size_t *failIdx, unsigned long long flags,
                       void *stream, int ptsz) {
  int err = sd_plain_enter("cuMemcpy3DBatchAsync");
  if (err) return err;
  int saved = sd_plain_save();
  err = sc_memcpy_3d_batch(numOps, opList, failIdx, flags, stream, ptsz);
  return sd_plain_finish(saved, err);
}

/* 12.8 */
SD_API int cuMemcpyBatchAsync(void *const *dsts, const void *const *srcs, const size_t *sizes,
                              size_t count, void *attrs, size_t *attrIdxs, size_t numAttrs,
                              size_t *failIdx, void *hStream) {
  return sd_batch(dsts, srcs, sizes, count, attrs, attrIdxs, numAttrs, failIdx, hStream, 0);
}
SD_API int cuMemcpyBatchAsync_ptsz(void *const *dsts, const void *const *srcs, const size_t *sizes,
                                   size_t count, void *attrs, size_t *attrIdxs, size_t numAttrs,
                                   size_t *failIdx, void *hStream) {
  return sd_batch(dsts, srcs, sizes, count, attrs, attrIdxs, numAttrs, failIdx, hStream, 1);
}
SD_API int cuMemcpy3DBatchAsync(size_t numOps, void *opList, size_t *failIdx,
                                unsigned long long flags, void *hStream) {
  return sd_batch_3d(numOps, opList, failIdx, flags, hStream, 0);
}
SD_API int cuMemcpy3DBatchAsync_ptsz(size_t numOps, void *opList, size_t *failIdx,
                                     unsigned long long flags, void *hStream) {
  return sd_batch_3d(numOps, opList, failIdx, flags, hStream, 1);
}

/* 13.0 */
SD_API int cuMemcpyBatchAsync_v2(void *const *dsts, const void *const *srcs, const size_t *sizes,
                                 size_t count, void *attrs, size_t *attrIdxs, size_t numAttrs,
                                 void *hStream) {
  return sd_batch(dsts, srcs, sizes, count, attrs, attrIdxs, numAttrs, NULL, hStream, 0);
}
SD_API int cuMemcpyBatchAsync_v2_ptsz(void *const *dsts, const void *const *srcs,
                                      const size_t *sizes, size_t count, void *attrs,
                                      size_t *attrIdxs, size_t numAttrs, void *hStream) {
  return sd_batch(dsts, srcs, sizes, count, attrs, attrIdxs, numAttrs, NULL, hStream, 1);
}
SD_API int cuMemcpy3DBatchAsync_v2(size_t numOps, void *opList, unsigned long long flags,
                                   void *hStream) {
  return sd_batch_3d(numOps, opList, NULL, flags, hStream, 0);
}
SD_API int cuMemcpy3DBatchAsync_v2_ptsz(size_t numOps, void *opList, unsigned long long flags,
                                        void *hStream) {
  return sd_batch_3d(numOps, opList, NULL, flags, hStream, 1);
}
