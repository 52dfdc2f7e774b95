/* e2e.h: what the end-to-end scenario programs share: a checked-call macro, buffer setup, and
 * two simulated kernels that reach host memory through raw pointers in a by-value struct. */
#ifndef PG_E2E_H
#define PG_E2E_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>

#include "simcuda_kernel.h"

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t err_ = (call);                                                        \
    if (err_ != cudaSuccess) {                                                        \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,            \
              cudaGetErrorName(err_));                                                \
      exit(2);                                                                        \
    }                                                                                 \
  } while (0)

#define BUF_BYTES (256u * 1024u)

/* Host pointers travel inside a struct passed by value, as in the incident's engine. */
typedef struct host_ptrs {
  void *p[4];
  int n;
  size_t len;
  unsigned char value;
} host_ptrs_t;

/* Writes `value` into each host buffer (a device write of host memory). */
SIMCUDA_KERNEL(e2e_fill_host, sizeof(host_ptrs_t)) {
  const host_ptrs_t *a = launch->args[0];
  for (int i = 0; i < a->n; i++) memset(simcuda_dma(a->p[i]), a->value, a->len);
}

/* Launches e2e_fill_host over the given buffers on stream s. */
static inline cudaError_t e2e_launch_fill(void **bufs, int n, size_t len, unsigned char value,
                                          cudaStream_t s) {
  host_ptrs_t a = {.n = n, .len = len, .value = value};
  for (int i = 0; i < n; i++) a.p[i] = bufs[i];
  void *args[] = {&a};
  return cudaLaunchKernel((const void *)e2e_fill_host, (dim3){1, 1, 1}, (dim3){32, 1, 1}, args,
                          0, s);
}

/* Scenario programs take "bug" or "fixed" as argv[1]: the same steps with and without the
 * synchronization that makes them correct. */
static inline int e2e_is_bug(int argc, char **argv) {
  if (argc < 2 || (strcmp(argv[1], "bug") && strcmp(argv[1], "fixed"))) {
    fprintf(stderr, "usage: %s bug|fixed\n", argv[0]);
    exit(2);
  }
  return strcmp(argv[1], "bug") == 0;
}

#endif /* PG_E2E_H */
