/* pg_cu_launch.c: the driver API's other ways to enqueue work, and capture: cuLaunchKernelEx and
 * cuLaunchCooperativeKernel, host functions (cuLaunchHostFunc), stream capture and graphs
 * (cuStreamBeginCapture_v2, cuStreamEndCapture, cuGraphInstantiateWithFlags, cuGraphLaunch,
 * cuGraphExecDestroy), each with its _ptsz twin where the driver has one. They make the runtime
 * layer's core calls (pg_cuda_kernel.c, pg_cuda_sync.c) through the same bodies of pg_shim.h:
 * PG_LAUNCH_BODY for launches, and for the rest one interceptor macro per kind for both layers
 * (a CUgraph is a cudaGraph_t, a CUgraphExec a cudaGraphExec_t, a CUhostFn a cudaHostFn_t). How
 * clients get these wrappers is pg_cu_entry.c's business, as for pg_cu_api.c's. */
#include <cuda.h>
#undef cuGetProcAddress

#include "pg_op.h"

/* The per-thread-default-stream twins, which the header declares only in that build mode. */
extern __typeof__(cuLaunchKernelEx) cuLaunchKernelEx_ptsz;
extern __typeof__(cuLaunchCooperativeKernel) cuLaunchCooperativeKernel_ptsz;
extern __typeof__(cuLaunchHostFunc) cuLaunchHostFunc_ptsz;
extern __typeof__(cuStreamBeginCapture_v2) cuStreamBeginCapture_v2_ptsz;
extern __typeof__(cuStreamEndCapture) cuStreamEndCapture_ptsz;
extern __typeof__(cuGraphLaunch) cuGraphLaunch_ptsz;

/* ---- kernels --------------------------------------------------------------------------------- */
/* cuLaunchKernelEx: grid, block, shared memory and stream live in the config; its attributes
 * (cluster shape, priority, cooperative, ...) change how the kernel runs, not what memory its
 * parameters reach, and pass through untouched. */
typedef struct cu_launch_ex {
  enum pg_hook_id id;
  const CUlaunchConfig *config;
  CUfunction f;
  void **params, **extra;
} cu_launch_ex_t;

static int forward_launch_ex(void *ctx) {
  cu_launch_ex_t *a = ctx;
  __typeof__(&cuLaunchKernelEx) real = (__typeof__(&cuLaunchKernelEx))pg_real(a->id);
  return real ? real(a->config, a->f, a->params, a->extra) : CUDA_ERROR_NOT_FOUND;
}

/* As for cuLaunchKernel, arguments packed in `extra` are not scanned. */
#define PG_CU_LAUNCH_EX(name, ptsz)                                                           \
  PG_INTERCEPT(CUresult, name, const CUlaunchConfig *config, CUfunction f, void **params,     \
               void **extra) {                                                                \
    PG_LAUNCH_BODY(CUresult, !config, #name, ptsz, params ? (const void *)f : NULL,           \
                   pg_cu_describe_kernel, params, config->hStream,                            \
                   PG_FORWARD_CU(name, config, f, params, extra), forward_launch_ex,          \
                   cu_launch_ex_t, {PG_HOOK_ID_##name, config, f, params, extra});            \
  }
PG_CU_LAUNCH_EX(cuLaunchKernelEx, false)
PG_CU_LAUNCH_EX(cuLaunchKernelEx_ptsz, true)

/* cuLaunchCooperativeKernel: cuLaunchKernel's arguments without `extra`. */
typedef struct cu_launch_coop {
  enum pg_hook_id id;
  CUfunction f;
  unsigned grid[3], block[3], shmem;
  CUstream s;
  void **params;
} cu_launch_coop_t;

static int forward_launch_coop(void *ctx) {
  cu_launch_coop_t *a = ctx;
  __typeof__(&cuLaunchCooperativeKernel) real =
      (__typeof__(&cuLaunchCooperativeKernel))pg_real(a->id);
  return real ? real(a->f, a->grid[0], a->grid[1], a->grid[2], a->block[0], a->block[1],
                     a->block[2], a->shmem, a->s, a->params)
              : CUDA_ERROR_NOT_FOUND;
}

#define PG_CU_LAUNCH_COOP(name, ptsz)                                                         \
  PG_INTERCEPT(CUresult, name, CUfunction f, unsigned gx, unsigned gy, unsigned gz,           \
               unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream s,             \
               void **params) {                                                               \
    PG_LAUNCH_BODY(CUresult, false, #name, ptsz, params ? (const void *)f : NULL,             \
                   pg_cu_describe_kernel, params, s,                                          \
                   PG_FORWARD_CU(name, f, gx, gy, gz, bx, by, bz, shmem, s, params),          \
                   forward_launch_coop, cu_launch_coop_t,                                     \
                   {PG_HOOK_ID_##name, f, {gx, gy, gz}, {bx, by, bz}, shmem, s, params});     \
  }
PG_CU_LAUNCH_COOP(cuLaunchCooperativeKernel, false)
PG_CU_LAUNCH_COOP(cuLaunchCooperativeKernel_ptsz, true)

/* ---- host functions -------------------------------------------------------------------------- */
/* The runtime's cudaLaunchHostFunc, at the driver: the host function runs at a known place in
 * its stream (pg_shim_enqueue_hostfn), so that its CPU accesses are judged by stream order. */
PG_HOSTFN_INTERCEPTOR(CUresult, PG_FORWARD_CU, cuLaunchHostFunc, false)
PG_HOSTFN_INTERCEPTOR(CUresult, PG_FORWARD_CU, cuLaunchHostFunc_ptsz, true)

/* ---- capture and graphs ---------------------------------------------------------------------- */
/* While a capture is active pinguard never waits (core counts captures from these calls), and
 * what is enqueued on the capturing stream is kept with the capture, to become in flight at each
 * launch of the graph it turns into. */
PG_BEGIN_CAPTURE_INTERCEPTOR(CUresult, PG_FORWARD_CU, cuStreamBeginCapture_v2, false,
                             CUstreamCaptureMode)
PG_BEGIN_CAPTURE_INTERCEPTOR(CUresult, PG_FORWARD_CU, cuStreamBeginCapture_v2_ptsz, true,
                             CUstreamCaptureMode)
PG_END_CAPTURE_INTERCEPTOR(CUresult, PG_FORWARD_CU, cuStreamEndCapture, false)
PG_END_CAPTURE_INTERCEPTOR(CUresult, PG_FORWARD_CU, cuStreamEndCapture_ptsz, true)
/* Also what cuGetProcAddress("cuGraphInstantiate") answers from CUDA 12 on. */
PG_INSTANTIATE_INTERCEPTOR(CUresult, PG_FORWARD_CU, cuGraphInstantiateWithFlags)
PG_GRAPH_LAUNCH_INTERCEPTOR(CUresult, PG_FORWARD_CU, cuGraphLaunch, false)
PG_GRAPH_LAUNCH_INTERCEPTOR(CUresult, PG_FORWARD_CU, cuGraphLaunch_ptsz, true)
PG_GRAPH_EXEC_DESTROY_INTERCEPTOR(CUresult, PG_FORWARD_CU, cuGraphExecDestroy)
