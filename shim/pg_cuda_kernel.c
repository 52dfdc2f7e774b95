/* pg_cuda_kernel.c: interceptors for kernel launches (cudaLaunchKernel, cudaLaunchKernelExC,
 * nvcc 13's __cudaLaunchKernel, and their _ptsz twins). A kernel reaches pinned host memory
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

/* pg_shim.h; also the driver layer's (pg_cu_api.c). */
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
static int param_info(const void *func, size_t i, size_t *off, size_t *sz) {
  cudaError_t e = PG_REAL(cudaFuncGetParamInfo)(func, i, off, sz);
  return e == cudaSuccess ? PG_KP_PARAM : e == cudaErrorInvalidValue ? PG_KP_END : PG_KP_UNKNOWN;
}

static bool describe(const void *func, pg_kparams_t *kp) {
  __typeof__(&cudaPeekAtLastError) peek = PG_REAL(cudaPeekAtLastError);
  __typeof__(&cudaGetLastError) clear = PG_REAL(cudaGetLastError);
  if (!peek || !clear || peek() != cudaSuccess) return false;
  pg_kparams_fill_layout(kp, PG_REAL(cudaFuncGetParamInfo) ? param_info : NULL);
  __typeof__(&cudaFuncGetName) get_name = PG_REAL(cudaFuncGetName);
  const char *name = NULL;
  kp->name = (get_name && get_name(&name, func) == cudaSuccess && name) ? name : "kernel";
  clear();
  if (kp->nparams < 0) pg_shim_note_unscanned(func, "cudaFuncGetParamInfo");
  return true;
}

/* A launch that may touch pinned memory (or whose parameters are unknown): the op, its
 * decisions and the forward. Out of line, so that the common launch (PG_LAUNCH_BODY's quick
 * reject) keeps a small frame. */
int pg_shim_launch_op(const char *api, bool ptsz, const void *func, const pg_kparams_t *kp,
                      int first, void **args, cudaStream_t s, const pg_stack_site_t *site,
                      int (*fwd)(void *), void *fwd_ctx) {
  pg_op_t op;
  pg_op_begin_kernel(&op, api, func, s, ptsz);
  op.site = *site; /* captured only if a parameter points into pinned memory */
  if (kp && kp->nparams > 0) {
    uintptr_t words[PG_OP_MAX_SPANS];
    op.what = kp->name;
    pg_kparams_add_spans(&op, words,
                         pg_kparams_candidates_from(kp, args, first, words, PG_OP_MAX_SPANS));
  } else {
    pg_kparams_build_op(&op, kp, args); /* no layout: counted unscanned */
  }
  if (op.nspans) pg_on_op_begin(&op);
  int err = fwd(fwd_ctx);
  if (err == 0 && op.nspans) pg_on_op_end(&op);
  else if (err == 0 && op.stream == 0) pg_on_untracked_op(0); /* legacy ordering */
  return err;
}

/* ---- cudaLaunchKernel ---------------------------------------------------------------------- */
typedef struct launch_args {
  enum pg_hook_id id;
  const void *func;
  dim3 grid, block;
  void **args;
  size_t shmem;
  cudaStream_t stream;
} launch_args_t;

static int forward_launch(void *ctx) {
  launch_args_t *a = ctx;
  __typeof__(&cudaLaunchKernel) real = (__typeof__(&cudaLaunchKernel))pg_real(a->id);
  if (!real) return cudaErrorSharedObjectSymbolNotFound;
  return real(a->func, a->grid, a->block, a->args, a->shmem, a->stream);
}

#define PG_LAUNCH_KERNEL(name, ptsz)                                                          \
  PG_INTERCEPT(cudaError_t, name, const void *func, dim3 grid, dim3 block, void **args,       \
               size_t shmem, cudaStream_t s) {                                                \
    PG_LAUNCH_BODY(cudaError_t, false, #name, ptsz, func, describe, args, s,                  \
                   PG_FORWARD(name, func, grid, block, args, shmem, s), forward_launch,       \
                   launch_args_t, {PG_HOOK_ID_##name, func, grid, block, args, shmem, s});    \
  }
PG_LAUNCH_KERNEL(cudaLaunchKernel, false)
PG_LAUNCH_KERNEL(cudaLaunchKernel_ptsz, true)

/* ---- kernel<<<...>>> as nvcc 13 compiles it: __cudaGetKernel, then __cudaLaunchKernel --------
 * The launch names a cudaKernel_t handle, not the function; the parameter layout is asked of the
 * function. Handles are remembered in core when they are made (pg_kparams_remember_handle). */
#define PG_GET_KERNEL(name)                                                                   \
  PG_INTERCEPT(cudaError_t, name, cudaKernel_t *kernel, const void *func) {                   \
    cudaError_t err = PG_FORWARD(name, kernel, func);                                         \
    if (err == cudaSuccess && kernel && *kernel) pg_kparams_remember_handle(*kernel, func);   \
    return err;                                                                               \
  }
PG_GET_KERNEL(__cudaGetKernel)
PG_GET_KERNEL(cudaGetKernel)

typedef struct launch_handle_args {
  enum pg_hook_id id;
  cudaKernel_t kernel;
  dim3 grid, block;
  void **args;
  size_t shmem;
  cudaStream_t stream;
} launch_handle_args_t;

static int forward_launch_handle(void *ctx) {
  launch_handle_args_t *a = ctx;
  __typeof__(&__cudaLaunchKernel) real = (__typeof__(&__cudaLaunchKernel))pg_real(a->id);
  if (!real) return cudaErrorSharedObjectSymbolNotFound;
  return real(a->kernel, a->grid, a->block, a->args, a->shmem, a->stream);
}

#define PG_LAUNCH_HANDLE(name, ptsz)                                                          \
  PG_INTERCEPT(cudaError_t, name, cudaKernel_t k, dim3 grid, dim3 block, void **args,         \
               size_t shmem, cudaStream_t s) {                                                \
    PG_LAUNCH_BODY(cudaError_t, false, #name, ptsz, pg_kparams_func_of_handle(k), describe,   \
                   args, s, PG_FORWARD(name, k, grid, block, args, shmem, s),                 \
                   forward_launch_handle, launch_handle_args_t,                               \
                   {PG_HOOK_ID_##name, k, grid, block, args, shmem, s});                      \
  }
PG_LAUNCH_HANDLE(__cudaLaunchKernel, false)
PG_LAUNCH_HANDLE(__cudaLaunchKernel_ptsz, true)

/* ---- cudaLaunchKernelExC: the stream lives in the launch config ---------------------------- */
typedef struct launch_ex_args {
  enum pg_hook_id id;
  const cudaLaunchConfig_t *config;
  const void *func;
  void **args;
} launch_ex_args_t;

static int forward_launch_ex(void *ctx) {
  launch_ex_args_t *a = ctx;
  __typeof__(&cudaLaunchKernelExC) real = (__typeof__(&cudaLaunchKernelExC))pg_real(a->id);
  if (!real) return cudaErrorSharedObjectSymbolNotFound;
  return real(a->config, a->func, a->args);
}

#define PG_LAUNCH_KERNEL_EX(name, ptsz)                                                       \
  PG_INTERCEPT(cudaError_t, name, const cudaLaunchConfig_t *config, const void *func,         \
               void **args) {                                                                 \
    PG_LAUNCH_BODY(cudaError_t, !config, #name, ptsz, func, describe, args, config->stream,   \
                   PG_FORWARD(name, config, func, args), forward_launch_ex, launch_ex_args_t, \
                   {PG_HOOK_ID_##name, config, func, args});                                  \
  }
PG_LAUNCH_KERNEL_EX(cudaLaunchKernelExC, false)
PG_LAUNCH_KERNEL_EX(cudaLaunchKernelExC_ptsz, true)
