/* pg_launch.c: what the kernel-launch interceptors of both layers share (pg_entry_kinds.h: cudaLaunchKernel,
 * cudaLaunchKernelExC, nvcc 13's __cudaLaunchKernel, cuLaunchKernel, cuLaunchKernelEx,
 * cuLaunchCooperativeKernel, and their _ptsz twins). A kernel reaches pinned host memory
 * through raw pointers in its parameters, so every 8-byte-aligned word of every
 * parameter that points into a tracked pinned region becomes an in-flight access of unknown
 * direction, up to the end of that region: the scan and the caches are core's
 * (core/pg_kernel_params.h); this file asks the runtime and forwards.
 *
 * Parameter sizes come from cudaFuncGetParamInfo (CUDA >= 12.4), asked once per function and
 * cached. A kernel for which the runtime gives no parameter information is launched untracked:
 * without sizes the args array cannot be read safely (it has no length). pinguard counts such
 * launches (print_stats) and says so once per function at verbosity >= 1. */
#include <stdint.h>

#include "pg_op.h"

/* pg_shim.h */
void pg_shim_note_unscanned(const void *func, const char *query) {
  if (pg_engine_verbosity() >= 1)
    pg_shim_warn("kernel %p has no parameter information (%s failed); its launches are not "
                 "scanned for host pointers", func, query);
}

/* Asks the runtime for a function's parameter layout (core/pg_kernel_params.c caches it).
 * Asking past the last parameter leaves cudaErrorInvalidValue in the runtime's per-thread
 * last-error slot, which the application's next cudaGetLastError must not see: we clear it
 * afterwards. So that clearing cannot swallow an error of the application's, we only ask when
 * no error is pending (else: decline, and core asks again at a later launch). */
static int rt_param_info(const void *func, size_t i, size_t *off, size_t *sz) {
  cudaError_t e = PG_REAL(cudaFuncGetParamInfo)(func, i, off, sz);
  return e == cudaSuccess ? PG_KP_PARAM : e == cudaErrorInvalidValue ? PG_KP_END : PG_KP_UNKNOWN;
}

bool pg_rt_describe_kernel(const void *func, pg_kparams_t *kp) {
  __typeof__(&cudaPeekAtLastError) peek = PG_REAL(cudaPeekAtLastError);
  __typeof__(&cudaGetLastError) clear = PG_REAL(cudaGetLastError);
  if (!peek || !clear || peek() != cudaSuccess) return false;
  pg_kparams_fill_layout(kp, PG_REAL(cudaFuncGetParamInfo) ? rt_param_info : NULL);
  __typeof__(&cudaFuncGetName) get_name = PG_REAL(cudaFuncGetName);
  const char *name = NULL;
  kp->name = (get_name && get_name(&name, func) == cudaSuccess && name) ? name : "kernel";
  clear();
  if (kp->nparams < 0) pg_shim_note_unscanned(func, "cudaFuncGetParamInfo");
  return true;
}

/* A launch found untracked after all (no parameter in pinned memory): its place in the legacy
 * stream's order. Out of line, off the tracked launch's path. */
__attribute__((noinline, cold)) static void untracked_launch_done(cudaStream_t s) {
  pg_untracked_op(s, false);
}

/* A launch that may touch pinned memory (or whose parameters are unknown): the op, its
 * decisions and the forward. Out of line, so that the common launch (PG_LAUNCH_BODY's scan,
 * which finds no candidate) does not set up the op, a few kilobytes. */
int pg_shim_launch_op(const char *api, bool ptsz, const void *func, const pg_kparams_t *kp,
                      const uintptr_t *words, size_t nwords, void **args, cudaStream_t s,
                      const pg_stack_site_t *site, int (*fwd)(void *), void *fwd_ctx) {
  pg_op_t op;
  pg_op_begin_kernel(&op, api, func, s, ptsz);
  op.site = *site; /* captured only if a parameter points into pinned memory */
  if (kp && kp->nparams > 0) {
    op.what = kp->name;
    pg_kparams_add_spans(&op, words, nwords);
  } else {
    pg_kparams_build_op(&op, kp, args); /* no layout: counted unscanned */
  }
  if (op.nspans) pg_on_op_begin(&op);
  int err = fwd(fwd_ctx);
  if (err == 0 && op.nspans) pg_on_op_end(&op);
  else if (err == 0) untracked_launch_done(op.stream); /* pg_stream_of made it a plain handle */
  return err;
}

/* A CUfunction's parameter layout, from cuFuncGetParamInfo (driver 12.4 and later); the driver
 * has no sticky last error, so asking past the last parameter leaves nothing behind. */
static int cu_param_info(const void *func, size_t i, size_t *off, size_t *sz) {
  CUresult e = PG_REAL(cuFuncGetParamInfo)((CUfunction)func, i, off, sz);
  return e == CUDA_SUCCESS ? PG_KP_PARAM : e == CUDA_ERROR_INVALID_VALUE ? PG_KP_END : PG_KP_UNKNOWN;
}

/* pg_shim.h */
bool pg_cu_describe_kernel(const void *func, pg_kparams_t *kp) {
  pg_kparams_fill_layout(kp, PG_REAL(cuFuncGetParamInfo) ? cu_param_info : NULL);
  __typeof__(&cuFuncGetName) get_name = PG_REAL(cuFuncGetName);
  const char *name = NULL;
  kp->name = (get_name && get_name(&name, (CUfunction)func) == CUDA_SUCCESS && name) ? name
                                                                                      : "kernel";
  if (kp->nparams < 0) pg_shim_note_unscanned(func, "cuFuncGetParamInfo");
  return true;
}
