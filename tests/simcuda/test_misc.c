/* test_misc.c: versions, devices, error names and the last-error state, and fork: a child of a
 * process that started the runtime gets cudaErrorInitializationError from CUDA calls (and never
 * hangs), while a child that does not touch CUDA is unaffected. */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

Test(misc, versions) {
  unsetenv("SIMCUDA_RUNTIME_VERSION");
  int rt = 0, drv = 0;
  CK(cudaRuntimeGetVersion(&rt));
  CK(cudaDriverGetVersion(&drv));
  cr_assert_eq(rt, 13000);
  cr_assert_geq(drv, rt);
  CK_ERR(cudaRuntimeGetVersion(NULL), cudaErrorInvalidValue);
}

Test(misc, devices) {
  int n = 0, dev = -1;
  CK(cudaGetDeviceCount(&n));
  cr_assert_eq(n, 1);
  CK(cudaSetDevice(0));
  CK(cudaGetDevice(&dev));
  cr_assert_eq(dev, 0);
  CK_ERR(cudaSetDevice(1), cudaErrorInvalidDevice);
  struct cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  cr_assert_eq(prop.unifiedAddressing, 1);
}

Test(misc, error_names_and_last_error) {
  cr_assert_str_eq(cudaGetErrorName(cudaSuccess), "cudaSuccess");
  cr_assert_str_eq(cudaGetErrorName(cudaErrorHostMemoryAlreadyRegistered),
                   "cudaErrorHostMemoryAlreadyRegistered");
  cr_assert_str_eq(cudaGetErrorName(cudaErrorStreamCaptureInvalidated),
                   "cudaErrorStreamCaptureInvalidated");
  cr_assert_str_eq(cudaGetErrorString(cudaErrorInvalidValue), "invalid argument");
  cr_assert_str_eq(cudaGetErrorString((cudaError_t)12345), "unrecognized error code");
  CK(cudaGetLastError());
  CK_ERR(cudaSetDevice(7), cudaErrorInvalidDevice);
  cr_assert_eq(cudaPeekAtLastError(), cudaErrorInvalidDevice);
  cr_assert_eq(cudaGetLastError(), cudaErrorInvalidDevice);
  cr_assert_eq(cudaGetLastError(), cudaSuccess);
}

static void *child_sets_error(void *p) {
  /* The last error is per thread. */
  *(cudaError_t *)p = cudaSetDevice(3);
  return NULL;
}

Test(misc, last_error_is_per_thread) {
  cudaError_t e = cudaSuccess;
  pthread_t t;
  pthread_create(&t, NULL, child_sets_error, &e);
  pthread_join(t, NULL);
  cr_assert_eq(e, cudaErrorInvalidDevice);
  cr_assert_eq(cudaGetLastError(), cudaSuccess);
}

Test(misc, fork_child) {
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  void *h;
  CK(cudaHostAlloc(&h, 4096, 0));
  pid_t pid = fork();
  if (pid == 0) {
    /* A child that never touches CUDA is fine: it just exits. */
    _exit(0);
  }
  int status = -1;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  pid = fork();
  if (pid == 0) {
    /* A child that does: every call fails cleanly instead of waiting for a worker that does
     * not exist in the child. */
    int ok = cudaStreamSynchronize(s) == cudaErrorInitializationError &&
             cudaMemcpyAsync(h, h, 16, cudaMemcpyDefault, s) == cudaErrorInitializationError &&
             cudaDeviceSynchronize() == cudaErrorInitializationError;
    _exit(ok ? 0 : 1);
  }
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
  CK(cudaStreamSynchronize(s)); /* the parent is unaffected */
  CK(cudaFreeHost(h));
}
