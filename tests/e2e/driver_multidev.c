/* Intent: a process that uses only the driver API (no runtime: pinguard's driver backend serves
 * it) on several devices (SIMCUDA_DEVICES >= 4) gets the runtime's multi-device rules:
 *   other   with device 0's context current, a device->host copy on a stream of device 1 (so
 *           pinguard's completion event must be device 1's, or the driver refuses to record it),
 *           then cuMemFreeHost of its buffer: free-during-device-access, naming device 1;
 *   legacy  a device->host copy on device 2's legacy stream (handle 0, device 2 current), then a
 *           host->device copy from the same buffer on device 3's legacy stream: the legacy streams
 *           of two devices are not ordered with each other, so device-access-conflict.
 *   ctxsync the legacy case, whose fixed twin synchronizes device 2 with CUDA 13's
 *           cuCtxSynchronize_v2(device 2's context) while device 3's is current (pinguard makes
 *           device 2's context current around the call and must put device 3's back).
 * The fixed twins synchronize first (cuStreamSynchronize; cuCtxSynchronize on device 2).
 * After every call the program checks that the current context is the one it set, and prints
 * "context changes: N" (pinguard switches to another device only around its own event creation,
 * and must put the program's context back).
 *   driver_multidev other|legacy|ctxsync bug|fixed */
// CASE: driver.multidev.other.bug.${mode} MODE ${mode} EXPECT free-during-device-access
//   ARGS other bug STDOUT "context changes: 0" STDERR "device 1" ENV SIMCUDA_DEVICES=4
//   FOR mode IN audit enforce
// CASE: driver.multidev.${c}.bug.${mode} MODE ${mode} EXPECT device-access-conflict
//   ARGS ${c} bug STDOUT "context changes: 0" STDERR "device 2" ENV SIMCUDA_DEVICES=4
//   FOR mode IN audit enforce FOR c IN legacy ctxsync
// CASE: driver.multidev.${c}.fixed.${mode} MODE ${mode} EXPECT none ARGS ${c} fixed
//   STDOUT "context changes: 0" ENV SIMCUDA_DEVICES=4
//   FOR mode IN audit enforce FOR c IN other legacy ctxsync

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#define BYTES (256u << 10)

#define CK(call)                                                                            \
  do {                                                                                      \
    CUresult r_ = (call);                                                                   \
    if (r_ != CUDA_SUCCESS) {                                                               \
      fprintf(stderr, "driver_multidev: %s failed: %d (line %d)\n", #call, (int)r_, __LINE__); \
      exit(3);                                                                              \
    }                                                                                       \
  } while (0)

static CUcontext ctx[4], expected;
static int changes;

static void set_ctx(int d) {
  CK(cuCtxSetCurrent(ctx[d]));
  expected = ctx[d];
}

/* Runs a driver call, then checks the thread's context is still the program's. */
#define CALL(call)                    \
  do {                                \
    CK(call);                         \
    CUcontext now_ = NULL;            \
    CK(cuCtxGetCurrent(&now_));       \
    if (now_ != expected) changes++;  \
  } while (0)

int main(int argc, char **argv) {
  if (argc < 3 || (strcmp(argv[1], "other") && strcmp(argv[1], "legacy") &&
                    strcmp(argv[1], "ctxsync")) ||
      (strcmp(argv[2], "bug") && strcmp(argv[2], "fixed"))) {
    fprintf(stderr, "usage: %s other|legacy|ctxsync bug|fixed\n", argv[0]);
    return 2;
  }
  int bug = !strcmp(argv[2], "bug");
  int count = 0;
  CK(cuInit(0));
  CK(cuDeviceGetCount(&count));
  if (count < 4) {
    fprintf(stderr, "driver_multidev: needs 4 devices (SIMCUDA_DEVICES=4), has %d\n", count);
    return 2;
  }
  for (int d = 0; d < 4; d++) {
    CUdevice dev;
    CK(cuDeviceGet(&dev, d));
    CK(cuDevicePrimaryCtxRetain(&ctx[d], dev));
  }
  set_ctx(0);
  void *host;
  CALL(cuMemHostAlloc(&host, BYTES, CU_MEMHOSTALLOC_PORTABLE));
  memset(host, 0, BYTES);
  if (!strcmp(argv[1], "other")) {
    set_ctx(1);
    CUstream s1;
    CUdeviceptr dev1;
    CALL(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CALL(cuMemAlloc_v2(&dev1, BYTES));
    set_ctx(0);
    CALL(cuMemcpyDtoHAsync_v2(host, dev1, BYTES, s1));
    if (!bug) CALL(cuStreamSynchronize(s1));
    CALL(cuMemFreeHost(host));
    CALL(cuStreamSynchronize(s1));
    set_ctx(1);
    CALL(cuMemFree_v2(dev1));
    CALL(cuStreamDestroy_v2(s1));
  } else {
    CUdeviceptr dev2, dev3;
    set_ctx(2);
    CALL(cuMemAlloc_v2(&dev2, BYTES));
    CALL(cuMemcpyDtoHAsync_v2(host, dev2, BYTES, 0));
    int v2 = !strcmp(argv[1], "ctxsync");
    if (!bug && !v2) CALL(cuCtxSynchronize());
    set_ctx(3);
    if (!bug && v2) CALL(cuCtxSynchronize_v2(ctx[2]));
    CALL(cuMemAlloc_v2(&dev3, BYTES));
    CALL(cuMemcpyHtoDAsync_v2(dev3, host, BYTES, 0));
    CALL(cuCtxSynchronize());
    set_ctx(2);
    CALL(cuCtxSynchronize());
    CALL(cuMemFree_v2(dev2));
    set_ctx(3);
    CALL(cuMemFree_v2(dev3));
    set_ctx(0);
    CALL(cuMemFreeHost(host));
  }
  printf("context changes: %d\n", changes);
  return changes ? 1 : 0;
}
