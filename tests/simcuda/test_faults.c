/* test_faults.c: fault injection. SIMCUDA_FAIL="name:N[=code],..." makes the Nth call of a
 * function fail with a realistic error code (or the given one) and no side effect; every other
 * call behaves normally. Naming a driver function makes the runtime calls built on it fail: the
 * runtime's tracked calls are driver calls underneath. */
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include <simcuda_kernel.h>

#include "test_util.h"

static int g_kernel_runs;

SIMCUDA_KERNEL(bump_kernel, sizeof(int)) { g_kernel_runs += *(int *)launch->args[0]; }

static void faults(void) {
  sim_env("50");
  setenv("SIMCUDA_FAIL", "cudaMemcpyAsync:3,cudaHostAlloc:1,cudaLaunchKernel:2=719", 1);
}

Test(faults, nth_host_alloc_fails_without_side_effect, .init = faults) {
  void *p = (void *)0x1234;
  CK_ERR(cudaHostAlloc(&p, 4096, 0), cudaErrorMemoryAllocation);
  cr_assert_eq(p, (void *)0x1234, "a failed call leaves its outputs alone");
  cr_assert_eq(cudaGetLastError(), cudaErrorMemoryAllocation);
  CK(cudaHostAlloc(&p, 4096, 0));
  CK(cudaFreeHost(p));
}

Test(faults, nth_memcpy_async_fails_without_side_effect, .init = faults) {
  unsigned char *h, *d;
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  CK(cudaMallocHost((void **)&h, 4096)); /* cudaMallocHost is counted separately */
  CK(cudaMalloc((void **)&d, 4096));
  CK(cudaMemset(d, 0, 4096));
  for (int call = 1; call <= 4; call++) {
    memset(h, call, 4096);
    cudaError_t err = cudaMemcpyAsync(d, h, 4096, cudaMemcpyHostToDevice, s);
    CK(cudaStreamSynchronize(s));
    unsigned char back;
    CK(cudaMemcpy(&back, d, 1, cudaMemcpyDeviceToHost));
    if (call == 3) {
      cr_assert_eq(err, cudaErrorInvalidValue);
      cr_assert_eq(back, 2, "the failed copy did not happen");
    } else {
      cr_assert_eq(err, cudaSuccess, "call %d", call);
      cr_assert_eq(back, call);
    }
  }
}

Test(faults, explicit_error_code, .init = faults) {
  int one = 1;
  void *args[] = {&one};
  for (int call = 1; call <= 3; call++) {
    cudaError_t err =
        cudaLaunchKernel((const void *)bump_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, 0);
    cr_assert_eq(err, call == 2 ? cudaErrorLaunchFailure : cudaSuccess, "call %d: %s", call,
                 cudaGetErrorName(err));
  }
  CK(cudaDeviceSynchronize());
  cr_assert_eq(g_kernel_runs, 2);
}

Test(faults, no_injection_without_the_variable) {
  unsetenv("SIMCUDA_FAIL");
  void *p;
  CK(cudaHostAlloc(&p, 4096, 0));
  CK(cudaFreeHost(p));
}

/* Each runtime call below fails because the driver call it is made of (obtained through
 * cuGetProcAddress, with the per-thread flag for a _ptsz entry point) was told to fail. */
static void driver_faults(void) {
  sim_env("50");
  setenv("SIMCUDA_FAIL",
         "cuMemHostAlloc:1,cuMemcpyAsync:1,cuLaunchKernel:1=719,cuCtxSynchronize:1=700,"
         "cuStreamSynchronize:1,cuEventRecord:1,cuMemHostRegister:1,cuMemcpy2DAsync:1,"
         "cuMemsetD8Async:1,cuStreamBeginCapture:1=1,cuMemAlloc:1",
         1);
}

Test(faults, runtime_calls_are_driver_calls, .init = driver_faults) {
  void *p = (void *)0x1, *d = NULL;
  /* cudaMallocHost is cuMemHostAlloc, as in CUDA's runtime. */
  CK_ERR(cudaMallocHost(&p, 4096), cudaErrorMemoryAllocation);
  cr_assert_eq(p, (void *)0x1);
  cr_assert_eq(cudaGetLastError(), cudaErrorMemoryAllocation, "the runtime records it");
  CK(cudaHostAlloc(&p, 4096, 0));
  CK_ERR(cudaMalloc(&d, 4096), cudaErrorMemoryAllocation);
  CK(cudaMalloc(&d, 4096));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  /* The per-thread entry point reaches the driver's cuMemcpyAsync_ptsz, counted as cuMemcpyAsync. */
  CK_ERR(cudaMemcpyAsync_ptsz(d, p, 16, cudaMemcpyHostToDevice, 0), cudaErrorInvalidValue);
  CK(cudaMemcpyAsync(d, p, 16, cudaMemcpyHostToDevice, s));
  CK_ERR(cudaMemcpy2DAsync(d, 16, p, 16, 16, 1, cudaMemcpyDefault, s), cudaErrorInvalidValue);
  CK_ERR(cudaMemsetAsync(d, 0, 16, s), cudaErrorInvalidValue);
  int one = 1;
  void *args[] = {&one};
  CK_ERR(cudaLaunchKernel((const void *)bump_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, s),
         cudaErrorLaunchFailure);
  cudaEvent_t ev;
  CK(cudaEventCreate(&ev));
  CK_ERR(cudaEventRecord(ev, s), cudaErrorInvalidResourceHandle);
  CK_ERR(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
  CK_ERR(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
  CK_ERR(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaErrorInvalidValue);
  void *reg = aligned_alloc(4096, 4096);
  CK_ERR(cudaHostRegister(reg, 4096, 0), cudaErrorMemoryAllocation);
  /* Every second call goes through. */
  CK(cudaHostRegister(reg, 4096, 0));
  CK(cudaHostUnregister(reg));
  CK(cudaEventRecord(ev, s));
  CK(cudaStreamSynchronize(s));
  CK(cudaDeviceSynchronize());
  cr_assert_eq(g_kernel_runs, 0, "the failed launch did not run");
  CK(cudaEventDestroy(ev));
  CK(cudaStreamDestroy(s));
  CK(cudaFree(d));
  CK(cudaFreeHost(p));
  free(reg);
}

/* A driver call made by the program itself leaves the runtime's last error alone. */
Test(faults, driver_errors_are_not_the_runtime_last_error) {
  int local;
  void *p;
  CK(cudaHostAlloc(&p, 4096, 0));
  cr_assert_eq(cuMemFreeHost(&local), CUDA_ERROR_INVALID_VALUE);
  cr_assert_eq(cuMemcpyAsync((CUdeviceptr)p, 0, 16, NULL), CUDA_ERROR_INVALID_VALUE);
  cr_assert_eq(cudaGetLastError(), cudaSuccess);
  CK_ERR(cudaFreeHost(&local), cudaErrorInvalidValue);
  cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue);
  CK(cudaFreeHost(p));
}
