/* pg_cu_memops.c: the driver's stream memory operations (cuStreamWriteValue32/64_v2,
 * cuStreamWaitValue32/64_v2, cuStreamBatchMemOp_v2, each with its _ptsz twin; CUDA 13's runtime
 * has no form of them). They are flag protocols: the device writes a word the CPU polls, or
 * waits for a word the CPU sets, ordering work in a way CUDA itself does not see. A flag word
 * on a guarded page would make enforce wait for GPU work that waits for the CPU: the pages of
 * every word they name are never guarded (pg_on_flag_word), from before the operation is queued.
 * A write to a pinned host word is also an ordering edge: the CPU that polls the word and sees
 * the value is ordered after the work its stream did before the write (pg_on_flag_write).
 * The call is forwarded unchanged; what it returns is the driver's. */
#include <cuda.h>

#include "pg_intercept.h"
#include "pg_shim.h"

#undef cuStreamWaitValue32
#undef cuStreamWaitValue64
#undef cuStreamWriteValue32
#undef cuStreamWriteValue64
#undef cuStreamBatchMemOp

/* Only once tracking runs (guard pages need it); never tracked as an access itself. */
static void never_guard(CUdeviceptr addr, size_t n) {
  if (!addr || !pg_shim_start_tracking()) return;
  pg_reentry_t g = pg_shim_enter();
  pg_on_flag_word((const void *)(uintptr_t)addr, n);
  pg_shim_leave(g);
}

/* A write the CPU may poll orders the host after its stream's earlier work once it shows. */
static void flag_written(CUstream s, bool ptsz, CUdeviceptr addr, uint64_t value, unsigned width) {
  if (!addr || !pg_shim_start_tracking()) return;
  pg_reentry_t g = pg_shim_enter();
  pg_on_flag_write(pg_stream_of((cudaStream_t)s, ptsz), (const void *)(uintptr_t)addr,
                         value, width);
  pg_shim_leave(g);
}

#define PG_MEMOP(name, vtype, writes, ptsz)                                                   \
  PG_INTERCEPT(CUresult, name, CUstream s, CUdeviceptr addr, vtype value, unsigned int flags) { \
    never_guard(addr, sizeof(vtype));                                                         \
    CUresult r = PG_FORWARD_CU(name, s, addr, value, flags);                                  \
    if (writes && r == CUDA_SUCCESS) flag_written(s, ptsz, addr, value, sizeof(vtype));       \
    return r;                                                                                 \
  }
PG_MEMOP(cuStreamWriteValue32_v2, cuuint32_t, true, false)
PG_MEMOP(cuStreamWriteValue32_v2_ptsz, cuuint32_t, true, true)
PG_MEMOP(cuStreamWriteValue64_v2, cuuint64_t, true, false)
PG_MEMOP(cuStreamWriteValue64_v2_ptsz, cuuint64_t, true, true)
PG_MEMOP(cuStreamWaitValue32_v2, cuuint32_t, false, false)
PG_MEMOP(cuStreamWaitValue32_v2_ptsz, cuuint32_t, false, true)
PG_MEMOP(cuStreamWaitValue64_v2, cuuint64_t, false, false)
PG_MEMOP(cuStreamWaitValue64_v2_ptsz, cuuint64_t, false, true)

static void never_guard_batch(unsigned count, const CUstreamBatchMemOpParams *ops) {
  for (unsigned i = 0; ops && i < count; i++) {
    switch (ops[i].operation) {
      case CU_STREAM_MEM_OP_WAIT_VALUE_32: never_guard(ops[i].waitValue.address, 4); break;
      case CU_STREAM_MEM_OP_WAIT_VALUE_64: never_guard(ops[i].waitValue.address, 8); break;
      case CU_STREAM_MEM_OP_WRITE_VALUE_32: never_guard(ops[i].writeValue.address, 4); break;
      case CU_STREAM_MEM_OP_WRITE_VALUE_64: never_guard(ops[i].writeValue.address, 8); break;
      default: break; /* barriers and flushes name no word */
    }
  }
}

/* The batch's last write is its latest flag: the ops run in order. */
static void batch_written(CUstream s, bool ptsz, unsigned count,
                          const CUstreamBatchMemOpParams *ops) {
  for (unsigned i = count; ops && i-- > 0;) {
    if (ops[i].operation == CU_STREAM_MEM_OP_WRITE_VALUE_32) {
      flag_written(s, ptsz, ops[i].writeValue.address, ops[i].writeValue.value, 4);
      return;
    }
    if (ops[i].operation == CU_STREAM_MEM_OP_WRITE_VALUE_64) {
      flag_written(s, ptsz, ops[i].writeValue.address, ops[i].writeValue.value64, 8);
      return;
    }
  }
}

#define PG_BATCH_MEMOP(name, ptsz)                                                            \
  PG_INTERCEPT(CUresult, name, CUstream s, unsigned int count, CUstreamBatchMemOpParams *ops,  \
               unsigned int flags) {                                                          \
    never_guard_batch(count, ops);                                                            \
    CUresult r = PG_FORWARD_CU(name, s, count, ops, flags);                                   \
    if (r == CUDA_SUCCESS) batch_written(s, ptsz, count, ops);                                \
    return r;                                                                                 \
  }
PG_BATCH_MEMOP(cuStreamBatchMemOp_v2, false)
PG_BATCH_MEMOP(cuStreamBatchMemOp_v2_ptsz, true)
