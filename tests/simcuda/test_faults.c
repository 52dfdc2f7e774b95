/* test_faults.c: fault injection. SIMCUDA_FAIL="name:N[=code],..." makes the Nth call of a
 * function fail with a realistic error code (or the given one) and no side effect; every other
 * call behaves normally. */
#include <string.h>

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
