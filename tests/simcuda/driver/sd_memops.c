/* sd_memops.c: the stream memory operations (cuStreamWriteValue32/64_v2, cuStreamWaitValue32/64_v2,
 * cuStreamBatchMemOp_v2, and their _ptsz variants). Each runs in its stream's order as the device
 * would: a write stores its value when the work before it is done; a wait holds the stream until
 * the word at its address satisfies the condition, which another stream, a kernel or the CPU
 * may bring about. Both reach host memory as a DMA engine does (sc_dma_load_word and
 * sc_dma_store_word: through the pinned range's alias or its pins, whatever protection the CPU's
 * view has). A wait polls every 50 us and gives up
 * after SIMCUDA_WAIT_VALUE_MAX_S seconds (default 60; a real device would wait forever), so that
 * a broken test ends. Not in cuGetProcAddress's table: reached by name (dlsym) only. */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "sd_internal.h"
#include "sc_engine.h"
#include "simcuda_kernel.h"

#undef cuStreamWaitValue32
#undef cuStreamWaitValue64
#undef cuStreamWriteValue32
#undef cuStreamWriteValue64
#undef cuStreamBatchMemOp

typedef struct memop {
  int write; /* else a wait */
  int wide;  /* 64-bit */
  CUdeviceptr addr;
  uint64_t value;
  unsigned flags;
} memop_t;

static int satisfied(const memop_t *m, uint64_t now) {
  switch (m->flags & 0xf) {
    case CU_STREAM_WAIT_VALUE_EQ: return now == m->value;
    case CU_STREAM_WAIT_VALUE_AND: return (now & m->value) != 0;
    case CU_STREAM_WAIT_VALUE_NOR: return ~(now | m->value) != 0;
    default: /* GEQ, cyclic */
      return m->wide ? (int64_t)(now - m->value) >= 0 : (int32_t)(uint32_t)(now - m->value) >= 0;
  }
}

static void run_memop(void *arg) {
  memop_t *m = arg;
  void *p = (void *)(uintptr_t)m->addr;
  size_t size = m->wide ? 8 : 4;
  if (m->write) {
    sc_dma_store_word(p, m->value, size);
  } else {
    const char *env = getenv("SIMCUDA_WAIT_VALUE_MAX_S");
    long max_s = env ? atol(env) : 60;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!satisfied(m, sc_dma_load_word(p, size))) {
      clock_gettime(CLOCK_MONOTONIC, &now);
      if (now.tv_sec - t0.tv_sec >= max_s) break;
      usleep(50);
    }
  }
  free(m);
}

static cudaError_t enqueue(CUstream h, const memop_t *m, bool ptsz) {
  if (!m->addr || (m->addr & (m->wide ? 7 : 3))) return cudaErrorInvalidValue;
  memop_t *copy = malloc(sizeof *copy);
  if (!copy) return cudaErrorMemoryAllocation;
  *copy = *m;
  cudaError_t err = sc_host_func((cudaStream_t)h, run_memop, copy, ptsz);
  if (err != cudaSuccess) free(copy);
  return err;
}

#define SD_MEMOP(name, write_, wide_, vtype, ptsz)                                            \
  SD_API CUresult CUDAAPI name(CUstream h, CUdeviceptr addr, vtype value, unsigned int flags) { \
    SD_ENTER(#name);                                                                        \
    memop_t m = {.write = write_, .wide = wide_, .addr = addr, .value = value, .flags = flags}; \
    SD_RUN(enqueue(h, &m, ptsz));                                                           \
  }
SD_MEMOP(cuStreamWaitValue32_v2, 0, 0, cuuint32_t, false)
SD_MEMOP(cuStreamWaitValue32_v2_ptsz, 0, 0, cuuint32_t, true)
SD_MEMOP(cuStreamWaitValue64_v2, 0, 1, cuuint64_t, false)
SD_MEMOP(cuStreamWaitValue64_v2_ptsz, 0, 1, cuuint64_t, true)
SD_MEMOP(cuStreamWriteValue32_v2, 1, 0, cuuint32_t, false)
SD_MEMOP(cuStreamWriteValue32_v2_ptsz, 1, 0, cuuint32_t, true)
SD_MEMOP(cuStreamWriteValue64_v2, 1, 1, cuuint64_t, false)
SD_MEMOP(cuStreamWriteValue64_v2_ptsz, 1, 1, cuuint64_t, true)

static cudaError_t batch(CUstream h, unsigned count, const CUstreamBatchMemOpParams *ops,
                         bool ptsz) {
  if (count && !ops) return cudaErrorInvalidValue;
  for (unsigned i = 0; i < count; i++) {
    const CUstreamBatchMemOpParams *o = &ops[i];
    memop_t m = {0};
    switch (o->operation) {
      case CU_STREAM_MEM_OP_WAIT_VALUE_32:
      case CU_STREAM_MEM_OP_WAIT_VALUE_64:
        m = (memop_t){0, o->operation == CU_STREAM_MEM_OP_WAIT_VALUE_64, o->waitValue.address,
                      o->operation == CU_STREAM_MEM_OP_WAIT_VALUE_64 ? o->waitValue.value64
                                                                     : o->waitValue.value,
                      o->waitValue.flags};
        break;
      case CU_STREAM_MEM_OP_WRITE_VALUE_32:
      case CU_STREAM_MEM_OP_WRITE_VALUE_64:
        m = (memop_t){1, o->operation == CU_STREAM_MEM_OP_WRITE_VALUE_64, o->writeValue.address,
                      o->operation == CU_STREAM_MEM_OP_WRITE_VALUE_64 ? o->writeValue.value64
                                                                      : o->writeValue.value,
                      o->writeValue.flags};
        break;
      default: continue; /* barriers and flushes: the simulated device is always coherent */
    }
    cudaError_t err = enqueue(h, &m, ptsz);
    if (err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

SD_API CUresult CUDAAPI cuStreamBatchMemOp_v2(CUstream h, unsigned int count,
                                              CUstreamBatchMemOpParams *paramArray,
                                              unsigned int flags) {
  SD_ENTER("cuStreamBatchMemOp_v2");
  (void)flags;
  SD_RUN(batch(h, count, paramArray, false));
}
SD_API CUresult CUDAAPI cuStreamBatchMemOp_v2_ptsz(CUstream h, unsigned int count,
                                                   CUstreamBatchMemOpParams *paramArray,
                                                   unsigned int flags) {
  SD_ENTER("cuStreamBatchMemOp_v2");
  (void)flags;
  SD_RUN(batch(h, count, paramArray, true));
}
