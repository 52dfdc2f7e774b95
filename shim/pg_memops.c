/* pg_memops.c: the driver's stream memory operations (cuStreamWriteValue32/64_v2,
 * cuStreamWaitValue32/64_v2, cuStreamBatchMemOp_v2, each with its _ptsz twin; CUDA 13's runtime
 * has no form of them). They are flag protocols: the device writes a word the CPU polls, or
 * waits for a word the CPU sets, ordering work in a way CUDA itself does not see. A flag word
 * on a guarded page would make enforce wait for GPU work that waits for the CPU: the pages of
 * every word they name are never guarded (pg_on_flag_word), from before the operation is queued.
 * A write to a pinned host word is also an ordering edge: the CPU that polls the word and sees
 * the value is ordered after the work its stream did before the write (pg_on_flag_write).
 * The call is forwarded unchanged; what it returns is the driver's. */
#include "pg_intercept.h"
#include "pg_shim.h"

/* pg_shim.h. Only once tracking runs (guard pages need it); never tracked as an access itself. */
void pg_shim_never_guard(CUdeviceptr addr, size_t n) {
  if (!addr || !pg_shim_start_tracking()) return;
  pg_reentry_t g = pg_shim_enter();
  pg_on_flag_word((const void *)(uintptr_t)addr, n);
  pg_shim_leave(g);
}

/* pg_shim.h. A write the CPU may poll orders the host after its stream's earlier work once it
 * shows. */
void pg_shim_flag_written(cudaStream_t s, bool ptsz, CUdeviceptr addr, uint64_t value,
                          unsigned width) {
  if (!addr || !pg_shim_start_tracking()) return;
  pg_reentry_t g = pg_shim_enter();
  pg_on_flag_write(pg_stream_of(s, ptsz), (const void *)(uintptr_t)addr, value, width);
  pg_shim_leave(g);
}

/* pg_shim.h */
void pg_shim_never_guard_batch(unsigned count, const CUstreamBatchMemOpParams *ops) {
  for (unsigned i = 0; ops && i < count; i++) {
    switch (ops[i].operation) {
      case CU_STREAM_MEM_OP_WAIT_VALUE_32: pg_shim_never_guard(ops[i].waitValue.address, 4); break;
      case CU_STREAM_MEM_OP_WAIT_VALUE_64: pg_shim_never_guard(ops[i].waitValue.address, 8); break;
      case CU_STREAM_MEM_OP_WRITE_VALUE_32: pg_shim_never_guard(ops[i].writeValue.address, 4); break;
      case CU_STREAM_MEM_OP_WRITE_VALUE_64: pg_shim_never_guard(ops[i].writeValue.address, 8); break;
      default: break; /* barriers and flushes name no word */
    }
  }
}

/* pg_shim.h. The batch's last write is its latest flag: the ops run in order. */
void pg_shim_batch_written(cudaStream_t s, bool ptsz, unsigned count,
                           const CUstreamBatchMemOpParams *ops) {
  for (unsigned i = count; ops && i-- > 0;) {
    if (ops[i].operation == CU_STREAM_MEM_OP_WRITE_VALUE_32) {
      pg_shim_flag_written(s, ptsz, ops[i].writeValue.address, ops[i].writeValue.value, 4);
      return;
    }
    if (ops[i].operation == CU_STREAM_MEM_OP_WRITE_VALUE_64) {
      pg_shim_flag_written(s, ptsz, ops[i].writeValue.address, ops[i].writeValue.value64, 8);
      return;
    }
  }
}
