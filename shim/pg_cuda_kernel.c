/* pg_cuda_kernel.c: interceptors for kernel launches (cudaLaunchKernel, cudaLaunchKernelExC and
 * their _ptsz twins). A kernel reaches pinned host memory through raw pointers in its parameters
 * (problem.md), so every 8-byte-aligned word of every parameter that points into a tracked pinned
 * region becomes an in-flight access of unknown direction, up to the end of that region.
 *
 * Parameter sizes come from cudaFuncGetParamInfo (CUDA >= 12.4), asked once per function and
 * cached. A kernel for which the runtime gives no parameter information is launched untracked:
 * without sizes the args array cannot be read safely (it has no length). pinguard counts such
 * launches (print_stats) and says so once per function at verbosity >= 1. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pg_intercept.h"
#include "pg_policy.h"
#include "pg_shim.h"

#define PG_MAX_PARAMS 64
#define PG_FUNC_CACHE 1024 /* open addressing; a process with more kernels scans uncached */

typedef struct func_info {
  const void *func;
  const char *name;         /* from cudaFuncGetName (CUDA >= 12.3), else "kernel" */
  int nparams;              /* -1: the runtime gave no information */
  uint16_t offset[PG_MAX_PARAMS];
  uint16_t size[PG_MAX_PARAMS];
} func_info_t;

/* Published once per slot with a compare-and-swap; never freed, so readers need no lock. */
static _Atomic(func_info_t *) func_cache[PG_FUNC_CACHE];

/* Asks the runtime for a function's parameter layout. Asking past the last parameter leaves
 * cudaErrorInvalidValue in the runtime's per-thread last-error slot, which the application's
 * next cudaGetLastError must not see: we clear it afterwards. So that clearing cannot swallow an
 * error of the application's, we only ask when no error is pending (else: try at a later launch). */
/* Said once per function (describe runs once per function), at verbosity >= 1. */
static void note_unscanned(const void *func) {
  if (pg_policy_options()->verbosity >= 1)
    pg_shim_warn("kernel %p has no parameter information (cudaFuncGetParamInfo failed); "
                 "its launches are not scanned for host pointers", func);
}

static func_info_t *describe(const void *func) {
  __typeof__(&cudaPeekAtLastError) peek = PG_REAL(cudaPeekAtLastError);
  __typeof__(&cudaGetLastError) clear = PG_REAL(cudaGetLastError);
  if (!peek || !clear || peek() != cudaSuccess) return NULL; /* not cached: asked again later */
  func_info_t *fi = calloc(1, sizeof *fi);
  if (!fi) return NULL;
  fi->func = func;
  __typeof__(&cudaFuncGetParamInfo) info = PG_REAL(cudaFuncGetParamInfo);
  int n = 0;
  for (; info && n < PG_MAX_PARAMS; n++) {
    size_t off = 0, sz = 0;
    if (info(func, (size_t)n, &off, &sz) != cudaSuccess) break;
    if (off > UINT16_MAX || sz > UINT16_MAX) break;
    fi->offset[n] = (uint16_t)off;
    fi->size[n] = (uint16_t)sz;
  }
  fi->nparams = (info && n > 0) ? n : -1;
  __typeof__(&cudaFuncGetName) get_name = PG_REAL(cudaFuncGetName);
  const char *name = NULL;
  fi->name = (get_name && get_name(&name, func) == cudaSuccess && name) ? name : "kernel";
  clear();
  if (fi->nparams < 0) note_unscanned(func);
  return fi;
}

static const func_info_t *func_info(const void *func) {
  size_t h = ((uintptr_t)func >> 4) * 0x9E3779B97F4A7C15ull;
  for (size_t probe = 0; probe < 16; probe++) {
    size_t i = (h + probe) % PG_FUNC_CACHE;
    func_info_t *fi = atomic_load_explicit(&func_cache[i], memory_order_acquire);
    if (fi && fi->func == func) return fi;
    if (fi) continue;
    func_info_t *fresh = describe(func);
    if (!fresh) return NULL;
    func_info_t *expected = NULL;
    if (atomic_compare_exchange_strong(&func_cache[i], &expected, fresh)) return fresh;
    free(fresh); /* another thread filled the slot; look again */
    if (expected->func == func) return expected;
  }
  return NULL; /* cache full in this neighbourhood: caller scans nothing */
}

/* Scans each parameter for words pointing into tracked regions. n == 0 in a span means "to the
 * end of the region", which the decision layer resolves. */
static void scan_params(pg_op_t *op, const func_info_t *fi, void **args) {
  for (int i = 0; i < fi->nparams && args; i++) {
    const char *val = args[i];
    if (!val) continue;
    size_t off = fi->offset[i], sz = fi->size[i];
    size_t first = (8 - off % 8) % 8; /* first 8-aligned word, relative to the parameter */
    for (size_t k = first; k + 8 <= sz; k += 8) {
      uintptr_t word;
      memcpy(&word, val + k, sizeof word);
      if (word < 4096) continue; /* cheap rejection of counts, flags and NULL */
      if (op->nspans >= PG_OP_MAX_SPANS) return;
      op->spans[op->nspans++] = (pg_span_t){.p = (const void *)word, .n = 0, .dir = PG_DIR_UNKNOWN};
    }
  }
}

static cudaError_t launch_tracked(const char *api, bool ptsz, const void *func, void **args,
                                  cudaStream_t s, const pg_stack_t *st, cudaError_t (*fwd)(void *),
                                  void *fwd_ctx) {
  pg_reentry_t g = pg_shim_enter();
  pg_op_t op;
  op.api = api;
  op.what = "kernel";
  op.func = func;
  op.stream = pg_stream_of(s, ptsz);
  op.only_tracked = true;
  op.nspans = 0;
  op.stack = *st;
  const func_info_t *fi = func ? func_info(func) : NULL; /* NULL: a handle we never saw made */
  if (fi) op.what = fi->name;
  if (fi && fi->nparams > 0)
    scan_params(&op, fi, args);
  else
    pg_stat_inc(PG_STAT_KERNELS_UNSCANNED);
  if (op.nspans) pg_decide_before_op(&op);
  cudaError_t err = fwd(fwd_ctx);
  if (err == cudaSuccess && op.nspans) pg_decide_after_op(&op);
  else if (err == cudaSuccess && op.stream == 0) pg_decide_untracked_op(0); /* legacy ordering */
  pg_shim_leave(g);
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

static cudaError_t forward_launch(void *ctx) {
  launch_args_t *a = ctx;
  __typeof__(&cudaLaunchKernel) real = (__typeof__(&cudaLaunchKernel))pg_real(a->id);
  if (!real) return cudaErrorSharedObjectSymbolNotFound;
  return real(a->func, a->grid, a->block, a->args, a->shmem, a->stream);
}

#define PG_LAUNCH_KERNEL(name, ptsz)                                                          \
  PG_INTERCEPT(cudaError_t, name, const void *func, dim3 grid, dim3 block, void **args,        \
               size_t shmem, cudaStream_t s) {                                                \
    if (!pg_shim_start_tracking()) return PG_FORWARD(name, func, grid, block, args, shmem, s); \
    pg_stack_t st;                                                                            \
    PG_CAPTURE(&st);                                                                          \
    launch_args_t a = {PG_HOOK_ID_##name, func, grid, block, args, shmem, s};                 \
    return launch_tracked(#name, ptsz, func, args, s, &st, forward_launch, &a);               \
  }
PG_LAUNCH_KERNEL(cudaLaunchKernel, false)
PG_LAUNCH_KERNEL(cudaLaunchKernel_ptsz, true)

/* ---- kernel<<<...>>> as nvcc 13 compiles it: __cudaGetKernel, then __cudaLaunchKernel --------
 * The launch names a cudaKernel_t handle, not the function; the parameter layout is asked of the
 * function. Handles are remembered when they are made: a table published slot by slot with a
 * compare-and-swap, never freed (one entry per kernel a process launches). */
#define PG_HANDLE_TABLE 4096

typedef struct handle_entry {
  _Atomic(cudaKernel_t) handle;
  _Atomic(const void *) func;
} handle_entry_t;

static handle_entry_t handles[PG_HANDLE_TABLE];

static size_t handle_slot(cudaKernel_t k) {
  return (size_t)(((uintptr_t)k >> 4) * 0x9E3779B97F4A7C15ull % PG_HANDLE_TABLE);
}

static void remember_handle(cudaKernel_t k, const void *func) {
  for (size_t probe = 0, i = handle_slot(k); probe < 64; probe++, i = (i + 1) % PG_HANDLE_TABLE) {
    cudaKernel_t seen = atomic_load_explicit(&handles[i].handle, memory_order_acquire);
    if (seen == k) return;
    cudaKernel_t empty = NULL;
    if (!seen && atomic_compare_exchange_strong(&handles[i].handle, &empty, k)) {
      atomic_store_explicit(&handles[i].func, func, memory_order_release);
      return;
    }
  }
}

static const void *func_of_handle(cudaKernel_t k) {
  for (size_t probe = 0, i = handle_slot(k); probe < 64; probe++, i = (i + 1) % PG_HANDLE_TABLE) {
    cudaKernel_t seen = atomic_load_explicit(&handles[i].handle, memory_order_acquire);
    if (!seen) return NULL;
    if (seen == k) return atomic_load_explicit(&handles[i].func, memory_order_acquire);
  }
  return NULL;
}

#define PG_GET_KERNEL(name)                                                                   \
  PG_INTERCEPT(cudaError_t, name, cudaKernel_t *kernel, const void *func) {                    \
    cudaError_t err = PG_FORWARD(name, kernel, func);                                         \
    if (err == cudaSuccess && kernel && *kernel) remember_handle(*kernel, func);              \
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

static cudaError_t forward_launch_handle(void *ctx) {
  launch_handle_args_t *a = ctx;
  __typeof__(&__cudaLaunchKernel) real = (__typeof__(&__cudaLaunchKernel))pg_real(a->id);
  if (!real) return cudaErrorSharedObjectSymbolNotFound;
  return real(a->kernel, a->grid, a->block, a->args, a->shmem, a->stream);
}

#define PG_LAUNCH_HANDLE(name, ptsz)                                                          \
  PG_INTERCEPT(cudaError_t, name, cudaKernel_t k, dim3 grid, dim3 block, void **args,          \
               size_t shmem, cudaStream_t s) {                                                \
    if (!pg_shim_start_tracking()) return PG_FORWARD(name, k, grid, block, args, shmem, s);   \
    pg_stack_t st;                                                                            \
    PG_CAPTURE(&st);                                                                          \
    launch_handle_args_t a = {PG_HOOK_ID_##name, k, grid, block, args, shmem, s};             \
    return launch_tracked(#name, ptsz, func_of_handle(k), args, s, &st,                       \
                          forward_launch_handle, &a);                                        \
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

static cudaError_t forward_launch_ex(void *ctx) {
  launch_ex_args_t *a = ctx;
  __typeof__(&cudaLaunchKernelExC) real = (__typeof__(&cudaLaunchKernelExC))pg_real(a->id);
  if (!real) return cudaErrorSharedObjectSymbolNotFound;
  return real(a->config, a->func, a->args);
}

#define PG_LAUNCH_KERNEL_EX(name, ptsz)                                                       \
  PG_INTERCEPT(cudaError_t, name, const cudaLaunchConfig_t *config, const void *func,          \
               void **args) {                                                                 \
    if (!pg_shim_start_tracking() || !config) return PG_FORWARD(name, config, func, args);    \
    pg_stack_t st;                                                                            \
    PG_CAPTURE(&st);                                                                          \
    launch_ex_args_t a = {PG_HOOK_ID_##name, config, func, args};                             \
    return launch_tracked(#name, ptsz, func, args, config->stream, &st, forward_launch_ex, &a); \
  }
PG_LAUNCH_KERNEL_EX(cudaLaunchKernelExC, false)
PG_LAUNCH_KERNEL_EX(cudaLaunchKernelExC_ptsz, true)
