/* Intent: a program linked against a static runtime (libcudart_static.a, nvcc's default) exports
 * no cuda* symbol for pinguard to interpose, yet it is tracked: its runtime reaches the driver
 * with dlsym(libcuda, "cuGetProcAddress_v2") and cuGetProcAddress, and pinguard hands it its
 * driver wrappers there. Each case's fixed twin synchronizes or orders correctly.
 *   static_runtime CASE bug|fixed
 *   free    cudaFreeHost while a device->host copy into the buffer is in flight;
 *   cross   two non-blocking streams: a device->host copy writes the buffer on one while a
 *           host->device copy reads it on the other (fixed: an event orders them);
 *   cpu     the CPU reads the buffer while a device->host copy writes it (guard pages);
 *   ptsz    built with the per-thread default stream (static_runtime_ptsz): a device->host copy
 *           on stream 0, which is then the thread's own stream (the runtime asks the driver for
 *           the per-thread variants), and a host->device copy from the buffer on a blocking
 *           stream: they are not ordered (stream 0 of a legacy-stream build would be the legacy
 *           stream, which orders blocking streams);
 *   kernel  cudaFreeHost while a kernel holding a raw pointer to the buffer is in flight.
 * Prints "done" and the byte read back (enforce must read the copied bytes). */
// The static runtime dlopens libcuda.so.1, which only LD_LIBRARY_PATH finds.
// LIST: static_env LD_LIBRARY_PATH=${SIMCUDA_LIB_DIR}
// LIST: cases free/free-during-device-access/static_runtime
// LIST: cases cross/device-access-conflict/static_runtime
// LIST: cases ptsz/device-access-conflict/static_runtime_ptsz
// LIST: cases kernel/free-during-device-access/static_runtime
// CASE: static_runtime.${c}.bug.${mode} PROG ${p} MODE ${mode} EXPECT ${kind} ARGS ${c} bug
//   STDOUT done ENV ${static_env} FOR mode IN audit enforce FOR c/kind/p IN ${cases}
// CASE: static_runtime.${c}.fixed.${mode} PROG ${p} MODE ${mode} EXPECT none ARGS ${c} fixed
//   STDOUT done ENV ${static_env} FOR mode IN audit enforce FOR c/kind/p IN ${cases}
// The CPU reads while the copy is in flight.
// CASE: static_runtime.cpu.${twin}.${mode} MODE ${mode} EXPECT ${kind} ARGS cpu ${twin}
//   STDOUT done ENV ${static_env} ${GUARD_ENV} SIMCUDA_LATENCY_US=100000
//   FOR mode IN audit enforce FOR twin/kind IN bug/cpu-read-during-device-write fixed/none
// With the runtime linked into the program, SUMMARY names the program's call site, not the
// runtime's code (cudaFreeHost in rt_api.c), in both the access's and the launch's stacks.
// CASE: static_runtime.summary MODE audit EXPECT free-during-device-access ARGS free bug
//   STDOUT done ENV ${static_env}
//   STDERR "^SUMMARY: pinguard: free-during-device-access .*static_runtime.c:[0-9]+ in main$"
// simcuda's libcudart_static.a carries the marker of CUDA's: the program is named, once.
// CASE: static_runtime.warning MODE audit EXPECT none ARGS free fixed STDOUT done
//   ENV ${static_env} STDERR "e2e_static_runtime contains a statically linked CUDA runtime"
// Enforce waits for the copy before the CPU reads: the byte is the device's.
// CASE: static_runtime.cpu.enforce_data MODE enforce EXPECT cpu-read-during-device-write
//   ARGS cpu bug STDOUT "byte 0x7f" ENV ${static_env} ${GUARD_ENV}

#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <simcuda_kernel.h>

#define BYTES (256u << 10)

#define CK(call)                                                                     \
  do {                                                                               \
    cudaError_t e_ = (call);                                                         \
    if (e_ != cudaSuccess) {                                                         \
      fprintf(stderr, "static_runtime: %s -> %d\n", #call, (int)e_);                 \
      return 3;                                                                      \
    }                                                                                \
  } while (0)

typedef struct fill_args {
  unsigned char *p;
  size_t n;
  unsigned char value;
} fill_args_t;

SIMCUDA_KERNEL(sr_fill_host, sizeof(fill_args_t)) {
  const fill_args_t *a = launch->args[0];
  memset(simcuda_dma(a->p), a->value, a->n);
}

int main(int argc, char **argv) {
  const char *c = argc > 1 ? argv[1] : "";
  if (argc < 3 || (strcmp(argv[2], "bug") && strcmp(argv[2], "fixed")) ||
      (strcmp(c, "free") && strcmp(c, "cross") && strcmp(c, "cpu") && strcmp(c, "ptsz") &&
       strcmp(c, "kernel"))) {
    fprintf(stderr, "usage: %s free|cross|cpu|ptsz|kernel bug|fixed\n", argv[0]);
    return 2;
  }
  int bug = strcmp(argv[2], "bug") == 0;
  unsigned char *host, seen = 0;
  void *dev;
  cudaStream_t s, s2;
  cudaEvent_t ev;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  CK(cudaHostAlloc((void **)&host, BYTES, cudaHostAllocDefault));
  CK(cudaMalloc(&dev, BYTES));
  memset(host, 0, BYTES);
  CK(cudaMemsetAsync(dev, 0x7f, BYTES, s));
  CK(cudaStreamSynchronize(s));
  if (!strcmp(c, "free")) {
    CK(cudaMemcpyAsync(host, dev, BYTES, cudaMemcpyDeviceToHost, s));
    if (!bug) CK(cudaStreamSynchronize(s));
    CK(cudaFreeHost(host));
    host = NULL;
  } else if (!strcmp(c, "cross")) {
    CK(cudaMemcpyAsync(host, dev, BYTES, cudaMemcpyDeviceToHost, s));
    CK(cudaEventRecord(ev, s));
    if (!bug) CK(cudaStreamWaitEvent(s2, ev, 0));
    CK(cudaMemcpyAsync((char *)dev + BYTES / 2, host, BYTES / 2, cudaMemcpyHostToDevice, s2));
  } else if (!strcmp(c, "cpu")) {
    CK(cudaMemcpyAsync(host, dev, BYTES, cudaMemcpyDeviceToHost, s));
    if (!bug) {
      CK(cudaEventRecord(ev, s));
      CK(cudaEventSynchronize(ev));
    }
    seen = host[BYTES / 2]; /* the serializer's read */
  } else if (!strcmp(c, "ptsz")) {
    cudaStream_t blocking;
    CK(cudaStreamCreate(&blocking));
    CK(cudaMemcpyAsync(host, dev, BYTES, cudaMemcpyDeviceToHost, 0));
    if (!bug) CK(cudaStreamSynchronize(0));
    CK(cudaMemcpyAsync((char *)dev + BYTES / 2, host, BYTES / 2, cudaMemcpyHostToDevice,
                       blocking));
    CK(cudaStreamSynchronize(blocking));
    CK(cudaStreamDestroy(blocking));
  } else {
    fill_args_t a = {host, BYTES, 0x7f};
    void *args[] = {&a};
    CK(cudaLaunchKernel((const void *)sr_fill_host, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, s));
    if (!bug) CK(cudaStreamSynchronize(s));
    CK(cudaFreeHost(host));
    host = NULL;
  }
  CK(cudaDeviceSynchronize());
  if (host) {
    if (strcmp(c, "cpu")) seen = host[BYTES / 2];
    CK(cudaFreeHost(host));
  }
  CK(cudaFree(dev));
  CK(cudaEventDestroy(ev));
  CK(cudaStreamDestroy(s));
  CK(cudaStreamDestroy(s2));
  printf("static_runtime: done, byte 0x%02x\n", seen);
  return 0;
}
