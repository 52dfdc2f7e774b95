/* test_kernels.c: simulated kernels: parameters are copied at launch (the caller may reuse its
 * argument storage at once), the body gets the launch geometry, cudaFuncGetParamInfo answers from
 * the registration, unknown functions and bad geometry fail with CUDA's codes, and a kernel with
 * a by-value struct of raw host pointers writes pinned memory over UVA. */
#include <stdatomic.h>
#include <string.h>

#include <simcuda_kernel.h>
#include <simcuda_ptsz.h>

#include "test_util.h"

static void race_latency(void) { sim_env("20000"); }
static void low_latency(void) { sim_env("50"); }

typedef struct seen {
  int a;
  double b;
  char tag[24];
  dim3 grid, block;
  size_t smem, nargs;
  cudaStream_t stream;
} seen;

static seen g_seen;

typedef struct tagged {
  char tag[24];
} tagged;

SIMCUDA_KERNEL(record_kernel, sizeof(int), sizeof(double), sizeof(tagged)) {
  g_seen.a = *(int *)launch->args[0];
  g_seen.b = *(double *)launch->args[1];
  memcpy(g_seen.tag, ((tagged *)launch->args[2])->tag, sizeof g_seen.tag);
  g_seen.grid = launch->grid;
  g_seen.block = launch->block;
  g_seen.smem = launch->shared_mem;
  g_seen.nargs = launch->nargs;
  g_seen.stream = launch->stream;
}

Test(kernels, parameters_are_copied_at_launch, .init = race_latency) {
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  int a = 7;
  double b = 2.5;
  tagged t;
  strcpy(t.tag, "launch-time");
  void *args[] = {&a, &b, &t};
  CK(cudaLaunchKernel((const void *)record_kernel, (dim3){4, 2, 1}, (dim3){128, 1, 1}, args, 256, s));
  /* The kernel has not run yet (20 ms latency); the caller reuses its storage. */
  a = -1;
  b = -1;
  strcpy(t.tag, "overwritten");
  CK(cudaStreamSynchronize(s));
  cr_assert_eq(g_seen.a, 7);
  cr_assert_eq(g_seen.b, 2.5);
  cr_assert_str_eq(g_seen.tag, "launch-time");
  cr_assert_eq(g_seen.grid.x, 4);
  cr_assert_eq(g_seen.grid.y, 2);
  cr_assert_eq(g_seen.block.x, 128);
  cr_assert_eq(g_seen.smem, 256);
  cr_assert_eq(g_seen.nargs, 3);
  cr_assert_eq(g_seen.stream, s);
}

Test(kernels, launch_ex_and_ptsz, .init = low_latency) {
  int a = 1;
  double b = 1;
  tagged t = {"ex"};
  void *args[] = {&a, &b, &t};
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  cudaLaunchConfig_t cfg = {.gridDim = {2, 1, 1}, .blockDim = {32, 1, 1}, .dynamicSmemBytes = 0,
                            .stream = s};
  CK(cudaLaunchKernelExC(&cfg, (const void *)record_kernel, args));
  CK(cudaStreamSynchronize(s));
  cr_assert_str_eq(g_seen.tag, "ex");
  cr_assert_eq(g_seen.grid.x, 2);
  strcpy(t.tag, "ex-ptsz");
  cfg.stream = 0; /* per-thread stream under _ptsz */
  CK(cudaLaunchKernelExC_ptsz(&cfg, (const void *)record_kernel, args));
  CK(cudaStreamSynchronize(cudaStreamPerThread));
  cr_assert_str_eq(g_seen.tag, "ex-ptsz");
  strcpy(t.tag, "plain-ptsz");
  CK(cudaLaunchKernel_ptsz((const void *)record_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, 0));
  CK(cudaStreamSynchronize_ptsz(0));
  cr_assert_str_eq(g_seen.tag, "plain-ptsz");
}

static void not_a_kernel(void) {}

Test(kernels, errors) {
  int a = 0;
  void *args[] = {&a};
  CK_ERR(cudaLaunchKernel((const void *)not_a_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, 0),
         cudaErrorInvalidDeviceFunction);
  cr_assert_eq(cudaPeekAtLastError(), cudaErrorInvalidDeviceFunction);
  cr_assert_eq(cudaGetLastError(), cudaErrorInvalidDeviceFunction);
  cr_assert_eq(cudaGetLastError(), cudaSuccess);
  double b = 0;
  tagged t = {""};
  void *args3[] = {&a, &b, &t};
  CK_ERR(cudaLaunchKernel((const void *)record_kernel, (dim3){0, 1, 1}, (dim3){1, 1, 1}, args3, 0, 0),
         cudaErrorInvalidConfiguration);
  size_t off, size;
  CK_ERR(cudaFuncGetParamInfo((const void *)not_a_kernel, 0, &off, &size),
         cudaErrorInvalidDeviceFunction);
  CK_ERR(cudaFuncGetParamInfo((const void *)record_kernel, 3, &off, &size), cudaErrorInvalidValue);
}

Test(kernels, param_info) {
  size_t off, size;
  CK(cudaFuncGetParamInfo((const void *)record_kernel, 0, &off, &size));
  cr_assert_eq(off, 0);
  cr_assert_eq(size, sizeof(int));
  CK(cudaFuncGetParamInfo((const void *)record_kernel, 1, &off, &size));
  cr_assert_eq(off, 8, "a double is 8-aligned after an int");
  cr_assert_eq(size, sizeof(double));
  CK(cudaFuncGetParamInfo((const void *)record_kernel, 2, &off, &size));
  cr_assert_eq(off, 16);
  cr_assert_eq(size, sizeof(tagged));
}

/* The incident's shape: a by-value struct of up to 4 raw host pointers (pinned chunks). */
typedef struct chunk_ptrs {
  unsigned char *objects[4];
  int n;
} chunk_ptrs;

SIMCUDA_KERNEL(gather_kernel, sizeof(chunk_ptrs), sizeof(const unsigned char *), sizeof(size_t)) {
  const chunk_ptrs *c = launch->args[0];
  const unsigned char *src = *(const unsigned char **)launch->args[1];
  size_t chunk = *(size_t *)launch->args[2];
  for (int i = 0; i < c->n; i++) memcpy(simcuda_dma(c->objects[i]), src + (size_t)i * chunk, chunk);
}

Test(kernels, raw_host_pointers_in_a_struct, .init = race_latency) {
  enum { CH = 8192 };
  unsigned char *pool, *dev;
  CK(cudaHostAlloc((void **)&pool, 4 * CH, 0));
  CK(cudaMalloc((void **)&dev, 4 * CH));
  for (int i = 0; i < 4; i++) CK(cudaMemset(dev + i * CH, 0x10 + i, CH));
  CK(cudaDeviceSynchronize());
  memset(pool, 0, 4 * CH);
  chunk_ptrs c = {{pool + 3 * CH, pool + 2 * CH, pool + CH, pool}, 4};
  const unsigned char *src = dev;
  size_t chunk = CH;
  void *args[] = {&c, &src, &chunk};
  CK(cudaLaunchKernel((const void *)gather_kernel, (dim3){4, 1, 1}, (dim3){256, 1, 1}, args, 0, 0));
  cr_assert_eq(pool[0], 0, "the kernel has not run yet");
  CK(cudaDeviceSynchronize());
  cr_assert_eq(pool[3 * CH], 0x10);
  cr_assert_eq(pool[0], 0x13);
}

Test(kernels, register_validation) {
  size_t sizes[1] = {4};
  cr_assert_eq(simcuda_register_kernel(NULL, "x", 1, sizes), cudaErrorInvalidValue);
  cr_assert_eq(simcuda_register_kernel((simcuda_kernel_fn)record_kernel, "x", 65, sizes),
               cudaErrorInvalidValue);
}

Test(kernels, func_get_name) {
  const char *name = NULL;
  CK(cudaFuncGetName(&name, (const void *)record_kernel));
  cr_assert_str_eq(name, "record_kernel");
  CK_ERR(cudaFuncGetName(&name, (const void *)not_a_kernel), cudaErrorInvalidDeviceFunction);
}

/* nvcc 13 compiles kernel<<<...>>> into __cudaGetKernel + __cudaLaunchKernel. */
Test(kernels, nvcc_launch_path) {
  cudaKernel_t k = NULL;
  CK(__cudaGetKernel(&k, (const void *)record_kernel));
  cr_assert_neq((const void *)k, (const void *)record_kernel, "a handle, not the function");
  int a = 7;
  double b = 2.5;
  tagged t = {"nvcc"};
  void *args[] = {&a, &b, &t};
  CK(__cudaLaunchKernel(k, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, 0));
  CK(cudaDeviceSynchronize());
  cr_assert_eq(g_seen.a, 7);
  cr_assert_str_eq(g_seen.tag, "nvcc");
  CK_ERR(cudaGetKernel(&k, (const void *)not_a_kernel), cudaErrorInvalidDeviceFunction);
}
