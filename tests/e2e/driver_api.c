/* Intent: a program that reaches CUDA through the driver API is tracked like one that uses the
 * runtime, whichever way it finds the driver's functions, and a runtime call with the driver
 * call it makes underneath is tracked once.
 *   driver_api HOW CASE bug|fixed
 * HOW is how the program reaches the driver:
 *   linked    calls cu* by name (linked against libcuda.so.1);
 *   procaddr  dlopen("libcuda.so.1"), dlsym(handle, "cuGetProcAddress_v2") and nothing else:
 *             every other function comes from cuGetProcAddress_v2 (cuda-python, Triton);
 *   mixed     the runtime pins and copies, the driver copies too (one process, both layers).
 * CASE is the violation (its fixed twin orders or synchronizes correctly):
 *   free    cuMemFreeHost while a device->host copy into the buffer is in flight;
 *   cross   two non-blocking streams: one reads the buffer, the other writes it (fixed: an
 *           event orders them);
 *   cpu     the CPU reads the buffer while a copy writes it (guard pages; fixed: the event is
 *           synchronized first);
 *   ptsz    the per-thread default stream, chosen by the flags of cuGetProcAddress (procaddr) or
 *           by the _ptsz name (linked), writes the buffer while a non-blocking stream reads it;
 *   kernel  cuMemFreeHost while a kernel (cuLaunchKernel) holding a raw pointer to the buffer is
 *           in flight: its parameters are read by their layout (cuFuncGetParamInfo);
 *   once    (mixed) the runtime's copies and the driver's, each must be counted once.
 *   COPY_free, COPY_cpu (COPY: 2d, 3d, batch128, batch13) the free and cpu cases, with the copy
 *           into the buffer made by cuMemcpy2DAsync (rows at a pitch), cuMemcpy3DAsync (slices of
 *           rows) or a cuMemcpyBatchAsync of four pieces in the 12.8 ABI (failIdx) or the 13.0
 *           one (_v2). procaddr asks cuGetProcAddress_v2 for "cuMemcpyBatchAsync" with
 *           cudaVersion 12080 and 13000: two functions, each of its own ABI. COPYptsz_free is
 *           the free case with the _ptsz variant (by name, or by the flags of
 *           cuGetProcAddress_v2) on the per-thread default stream.
 *   ORDER_WHAT, a batch copy whose source is the buffer, with srcAccessOrder ORDER (during:
 *           DuringApiCall, any: Any, stream: Stream), in the 13.0 ABI (linked) or 12.8
 *           (procaddr). WHAT:
 *             free      the buffer is freed right after the call (fixed: after a sync);
 *             write     the CPU overwrites it right after the call (fixed: after a sync);
 *             producer  a device->host copy on the same stream writes the buffer just before
 *                       (fixed: synchronized first); then the device copy is read back.
 * Prints the checksum it read back, so that enforce runs can be told from corrupted ones. */
// e2e_driver_api has no runtime at all (pinguard's driver backend serves it); the mixed program
// (e2e_driver_api_mixed) pins and copies with the runtime too.
// LIST: all linked/driver_api procaddr/driver_api mixed/driver_api_mixed
// CASE: driver.${how}.${c}.bug.${mode} MODE ${mode} EXPECT ${kind} ARGS ${how} ${c} bug
//   STDOUT checksum FOR how IN linked procaddr
//   FOR c/kind IN free/free-during-device-access ptsz/device-access-conflict
//   kernel/free-during-device-access FOR mode IN audit enforce
// CASE: driver.${how}.${c}.fixed.${mode} MODE ${mode} EXPECT none ARGS ${how} ${c} fixed
//   FOR how IN linked procaddr FOR c IN free ptsz kernel FOR mode IN audit enforce
// CASE: driver.${how}.cross.bug.${mode} PROG ${p} MODE ${mode} EXPECT device-access-conflict
//   ARGS ${how} cross bug STDOUT checksum FOR how/p IN ${all} FOR mode IN audit enforce
// CASE: driver.${how}.cross.fixed.${mode} PROG ${p} MODE ${mode} EXPECT none
//   ARGS ${how} cross fixed FOR how/p IN ${all} FOR mode IN audit enforce
// The read must come while the copy is in flight; enforce makes the CPU read the bytes the
// device wrote: 64 sampled bytes of 0x5a.
// CASE: driver.${how}.cpu.bug.${mode} PROG ${p} MODE ${mode} EXPECT cpu-read-during-device-write
//   ARGS ${how} cpu bug STDOUT ${out} ENV ${GUARD_ENV} SIMCUDA_LATENCY_US=100000
//   FOR how/p IN ${all} FOR mode/out IN audit/checksum "enforce/checksum 5760"
// CASE: driver.${how}.cpu.fixed.${mode} PROG ${p} MODE ${mode} EXPECT none ARGS ${how} cpu fixed
//   ENV ${GUARD_ENV} SIMCUDA_LATENCY_US=100000 FOR how/p IN ${all} FOR mode IN audit enforce
// Reports name the driver calls the program made: the free, and the allocation.
// CASE: driver.linked.free.names.free MODE audit EXPECT free-during-device-access
//   ARGS linked free bug STDERR "^  cuMemFreeHost \(thread T[0-9]+\):$"
// CASE: driver.linked.free.names.pinned MODE audit EXPECT free-during-device-access
//   ARGS linked free bug STDERR "pinned by cuMemHostAlloc \(thread"
// The driver's 2D, 3D and batch copies (both ABIs; procaddr asks for the batch with cudaVersion
// 12080 and 13000), in the free and cpu cases. Enforce makes the CPU read what the device wrote:
// 64 sampled bytes of 0x5a, but for the 3D copy, which leaves the first row of each of its four
// slices alone (60). A 100 ms device latency: the CPU's read must come while the copy is in
// flight, also under ThreadSanitizer on a loaded machine.
// LIST: copies 2d/5760 3d/5400 batch128/5760 batch13/5760
// CASE: driver.${how}.${copy}.free.bug.${mode} MODE ${mode} EXPECT free-during-device-access
//   ARGS ${how} ${copy}_free bug
//   FOR how IN linked procaddr FOR copy/sum IN ${copies} FOR mode IN audit enforce
// CASE: driver.${how}.${copy}.free.fixed.${mode} MODE ${mode} EXPECT none
//   ARGS ${how} ${copy}_free fixed
//   FOR how IN linked procaddr FOR copy/sum IN ${copies} FOR mode IN audit enforce
// CASE: driver.${how}.${copy}.cpu.bug.audit MODE audit EXPECT cpu-read-during-device-write
//   ARGS ${how} ${copy}_cpu bug STDOUT checksum ENV ${GUARD_ENV} SIMCUDA_LATENCY_US=100000
//   FOR how IN linked procaddr FOR copy/sum IN ${copies}
// CASE: driver.${how}.${copy}.cpu.bug.enforce MODE enforce EXPECT cpu-read-during-device-write
//   ARGS ${how} ${copy}_cpu bug STDOUT "checksum ${sum}$"
//   ENV ${GUARD_ENV} SIMCUDA_LATENCY_US=100000
//   FOR how IN linked procaddr FOR copy/sum IN ${copies}
// CASE: driver.${how}.${copy}.cpu.fixed.${mode} MODE ${mode} EXPECT none
//   ARGS ${how} ${copy}_cpu fixed STDOUT "checksum ${sum}$" ENV ${GUARD_ENV}
//   FOR how IN linked procaddr FOR copy/sum IN ${copies} FOR mode IN audit enforce
// The _ptsz variant, on the per-thread default stream.
// CASE: driver.${how}.${copy}ptsz.free.bug.${mode} MODE ${mode}
//   EXPECT free-during-device-access ARGS ${how} ${copy}ptsz_free bug
//   FOR how IN linked procaddr FOR copy/sum IN ${copies} FOR mode IN audit enforce
// CASE: driver.${how}.${copy}ptsz.free.fixed.${mode} MODE ${mode} EXPECT none
//   ARGS ${how} ${copy}ptsz_free fixed
//   FOR how IN linked procaddr FOR copy/sum IN ${copies} FOR mode IN audit enforce
// srcAccessOrder of the driver's batch (linked: the 13.0 ABI, procaddr: 12.8). DuringApiCall:
// the call has read the source, so freeing or overwriting it right after is no conflict; a
// producer still writing it when the call is made is one. Any: a same-stream producer is a
// conflict too (enforce waits for it, so the device gets its bytes, 64 of 0x5a), and the read
// stays in flight. Stream: the producer is ordered before the read. (simcuda reads DuringApiCall
// and Any sources during the call: without enforce's wait the device would get 64 stale 0x11.)
// CASE: driver.${how}.order.during_free.${twin}.${mode} MODE ${mode} EXPECT none
//   ARGS ${how} during_free ${twin}
//   FOR how IN linked procaddr FOR mode IN audit enforce FOR twin IN bug fixed
// CASE: driver.${how}.order.during_write.${twin}.${mode} MODE ${mode} EXPECT none
//   ARGS ${how} during_write ${twin} ENV ${GUARD_ENV}
//   FOR how IN linked procaddr FOR mode IN audit enforce FOR twin IN bug fixed
// CASE: driver.${how}.order.stream_producer.${twin}.${mode} MODE ${mode} EXPECT none
//   ARGS ${how} stream_producer ${twin} STDOUT "checksum 5760$"
//   FOR how IN linked procaddr FOR mode IN audit enforce FOR twin IN bug fixed
// CASE: driver.${how}.order.${order}_producer.bug.${mode} MODE ${mode}
//   EXPECT device-access-conflict ARGS ${how} ${order}_producer bug STDOUT ${ok}
//   ENV SIMCUDA_LATENCY_US=300000 FOR how IN linked procaddr
//   FOR mode/ok IN audit/checksum "enforce/checksum 5760$" FOR order IN during any
// CASE: driver.${how}.order.${order}_producer.fixed.${mode} MODE ${mode} EXPECT none
//   ARGS ${how} ${order}_producer fixed STDOUT "checksum 5760$"
//   FOR how IN linked procaddr FOR mode IN audit enforce FOR order IN during any
// CASE: driver.${how}.order.any_free.bug.${mode} MODE ${mode} EXPECT free-during-device-access
//   ARGS ${how} any_free bug FOR how IN linked procaddr FOR mode IN audit enforce
// CASE: driver.${how}.order.any_free.fixed.${mode} MODE ${mode} EXPECT none
//   ARGS ${how} any_free fixed FOR how IN linked procaddr FOR mode IN audit enforce
// Track once: three runtime copies (each a driver copy underneath) and two driver copies are
// five tracked copies, not eight.
// CASE: driver.mixed.once PROG driver_api_mixed MODE audit EXPECT none ARGS mixed once fixed
//   STDERR "copies_tracked: 5 " ENV PG_EXTRA_OPTIONS=guard=0:print_stats=1

#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <simcuda_kernel.h>
#ifdef WITH_RUNTIME /* the mixed program; the others do not link the runtime at all */
#include <cuda_runtime_api.h>
#endif

#define BYTES (256u << 10)

#define CK(call)                                                                        \
  do {                                                                                  \
    CUresult r_ = (call);                                                               \
    if (r_ != CUDA_SUCCESS) {                                                           \
      fprintf(stderr, "driver_api: %s failed: %d (line %d)\n", #call, (int)r_, __LINE__); \
      exit(3);                                                                          \
    }                                                                                   \
  } while (0)

/* The driver functions the cases use, found one of the ways above. */
static struct {
  CUresult (*init)(unsigned);
  CUresult (*device_get)(CUdevice *, int);
  CUresult (*primary_ctx_retain)(CUcontext *, CUdevice);
  CUresult (*ctx_set_current)(CUcontext);
  CUresult (*mem_alloc)(CUdeviceptr *, size_t);
  CUresult (*mem_free)(CUdeviceptr);
  CUresult (*host_alloc)(void **, size_t, unsigned);
  CUresult (*free_host)(void *);
  CUresult (*stream_create)(CUstream *, unsigned);
  CUresult (*stream_destroy)(CUstream);
  CUresult (*stream_sync)(CUstream);
  CUresult (*stream_sync_ptsz)(CUstream);
  CUresult (*htod)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*dtoh)(void *, CUdeviceptr, size_t, CUstream);
  CUresult (*dtoh_ptsz)(void *, CUdeviceptr, size_t, CUstream);
  CUresult (*memset)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*event_create)(CUevent *, unsigned);
  CUresult (*event_record)(CUevent, CUstream);
  CUresult (*event_sync)(CUevent);
  CUresult (*event_destroy)(CUevent);
  CUresult (*stream_wait_event)(CUstream, CUevent, unsigned);
  CUresult (*module_load_data)(CUmodule *, const void *);
  CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                     unsigned, CUstream, void **, void **);
  CUresult (*copy_2d)(const CUDA_MEMCPY2D *, CUstream);
  CUresult (*copy_3d)(const CUDA_MEMCPY3D *, CUstream);
  CUresult (*batch128)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *,
                       size_t *, size_t, size_t *, CUstream);
  CUresult (*batch13)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *,
                      size_t *, size_t, CUstream);
  /* their per-thread-default-stream variants */
  CUresult (*copy_2d_ptsz)(const CUDA_MEMCPY2D *, CUstream);
  CUresult (*copy_3d_ptsz)(const CUDA_MEMCPY3D *, CUstream);
  CUresult (*batch128_ptsz)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *,
                            size_t *, size_t, size_t *, CUstream);
  CUresult (*batch13_ptsz)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *,
                           size_t *, size_t, CUstream);
} drv;

/* The 12.8 ABI under its own name (cuda.h 13 names the 13.0 function cuMemcpyBatchAsync). */
#undef cuMemcpyBatchAsync
extern CUresult cuMemcpyBatchAsync(CUdeviceptr *, CUdeviceptr *, size_t *, size_t,
                                   CUmemcpyAttributes *, size_t *, size_t, size_t *, CUstream);
extern __typeof__(cuMemcpyBatchAsync) cuMemcpyBatchAsync_ptsz;
extern __typeof__(cuMemcpyBatchAsync_v2) cuMemcpyBatchAsync_v2_ptsz;
extern __typeof__(cuMemcpy2DAsync_v2) cuMemcpy2DAsync_v2_ptsz;
extern __typeof__(cuMemcpy3DAsync_v2) cuMemcpy3DAsync_v2_ptsz;

/* A kernel that writes its buffer through the raw pointer it is given. */
SIMCUDA_KERNEL(fill_host, sizeof(void *), sizeof(size_t)) {
  unsigned char *p = simcuda_dma(*(void **)launch->args[0]);
  memset(p, 0x5a, *(size_t *)launch->args[1]);
}

static void find_linked(void) {
  drv.init = cuInit;
  drv.device_get = cuDeviceGet;
  drv.primary_ctx_retain = cuDevicePrimaryCtxRetain;
  drv.ctx_set_current = cuCtxSetCurrent;
  drv.mem_alloc = cuMemAlloc_v2;
  drv.mem_free = cuMemFree_v2;
  drv.host_alloc = cuMemHostAlloc;
  drv.free_host = cuMemFreeHost;
  drv.stream_create = cuStreamCreate;
  drv.stream_destroy = cuStreamDestroy_v2;
  drv.stream_sync = cuStreamSynchronize;
  extern CUresult cuStreamSynchronize_ptsz(CUstream);
  drv.stream_sync_ptsz = cuStreamSynchronize_ptsz;
  drv.htod = cuMemcpyHtoDAsync_v2;
  drv.dtoh = cuMemcpyDtoHAsync_v2;
  extern CUresult cuMemcpyDtoHAsync_v2_ptsz(void *, CUdeviceptr, size_t, CUstream);
  drv.dtoh_ptsz = cuMemcpyDtoHAsync_v2_ptsz;
  drv.memset = cuMemsetD8Async;
  drv.event_create = cuEventCreate;
  drv.event_record = cuEventRecord;
  drv.event_sync = cuEventSynchronize;
  drv.event_destroy = cuEventDestroy_v2;
  drv.stream_wait_event = cuStreamWaitEvent;
  drv.module_load_data = cuModuleLoadData;
  drv.module_get_function = cuModuleGetFunction;
  drv.launch = cuLaunchKernel;
  drv.copy_2d = cuMemcpy2DAsync_v2;
  drv.copy_3d = cuMemcpy3DAsync_v2;
  drv.batch128 = cuMemcpyBatchAsync;
  drv.batch13 = cuMemcpyBatchAsync_v2;
  drv.copy_2d_ptsz = cuMemcpy2DAsync_v2_ptsz;
  drv.copy_3d_ptsz = cuMemcpy3DAsync_v2_ptsz;
  drv.batch128_ptsz = cuMemcpyBatchAsync_ptsz;
  drv.batch13_ptsz = cuMemcpyBatchAsync_v2_ptsz;
}

typedef CUresult (*gpa_t)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static void *get(gpa_t gpa, const char *name, int version, cuuint64_t flags) {
  void *fn = NULL;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
  if (gpa(name, &fn, version, flags, &st) != CUDA_SUCCESS || !fn) {
    fprintf(stderr, "driver_api: cuGetProcAddress_v2(%s, %d) found nothing (%d)\n", name, version,
            (int)st);
    exit(3);
  }
  return fn;
}

static void find_by_proc_address(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "driver_api: %s\n", dlerror());
    exit(3);
  }
  gpa_t gpa = (gpa_t)dlsym(h, "cuGetProcAddress_v2");
  if (!gpa) exit(3);
  const cuuint64_t legacy = CU_GET_PROC_ADDRESS_LEGACY_STREAM;
  const cuuint64_t ptds = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  drv.init = get(gpa, "cuInit", 2000, legacy);
  drv.device_get = get(gpa, "cuDeviceGet", 2000, legacy);
  drv.primary_ctx_retain = get(gpa, "cuDevicePrimaryCtxRetain", 7000, legacy);
  drv.ctx_set_current = get(gpa, "cuCtxSetCurrent", 4000, legacy);
  drv.mem_alloc = get(gpa, "cuMemAlloc", 3020, legacy);
  drv.mem_free = get(gpa, "cuMemFree", 3020, legacy);
  drv.host_alloc = get(gpa, "cuMemHostAlloc", 2020, legacy);
  drv.free_host = get(gpa, "cuMemFreeHost", 2000, legacy);
  drv.stream_create = get(gpa, "cuStreamCreate", 2000, legacy);
  drv.stream_destroy = get(gpa, "cuStreamDestroy", 4000, legacy);
  drv.stream_sync = get(gpa, "cuStreamSynchronize", 2000, legacy);
  drv.stream_sync_ptsz = get(gpa, "cuStreamSynchronize", 7000, ptds);
  drv.htod = get(gpa, "cuMemcpyHtoDAsync", 3020, legacy);
  drv.dtoh = get(gpa, "cuMemcpyDtoHAsync", 3020, legacy);
  drv.dtoh_ptsz = get(gpa, "cuMemcpyDtoHAsync", 7000, ptds);
  drv.memset = get(gpa, "cuMemsetD8Async", 3020, legacy);
  drv.event_create = get(gpa, "cuEventCreate", 2000, legacy);
  drv.event_record = get(gpa, "cuEventRecord", 2000, legacy);
  drv.event_sync = get(gpa, "cuEventSynchronize", 2000, legacy);
  drv.event_destroy = get(gpa, "cuEventDestroy", 4000, legacy);
  drv.stream_wait_event = get(gpa, "cuStreamWaitEvent", 3020, legacy);
  drv.module_load_data = get(gpa, "cuModuleLoadData", 2000, legacy);
  drv.module_get_function = get(gpa, "cuModuleGetFunction", 2000, legacy);
  drv.launch = get(gpa, "cuLaunchKernel", 4000, legacy);
  drv.copy_2d = get(gpa, "cuMemcpy2DAsync", 3020, legacy);
  drv.copy_3d = get(gpa, "cuMemcpy3DAsync", 3020, legacy);
  drv.batch128 = get(gpa, "cuMemcpyBatchAsync", 12080, legacy);
  drv.batch13 = get(gpa, "cuMemcpyBatchAsync", 13000, legacy);
  drv.copy_2d_ptsz = get(gpa, "cuMemcpy2DAsync", 7000, ptds);
  drv.copy_3d_ptsz = get(gpa, "cuMemcpy3DAsync", 7000, ptds);
  drv.batch128_ptsz = get(gpa, "cuMemcpyBatchAsync", 12080, ptds);
  drv.batch13_ptsz = get(gpa, "cuMemcpyBatchAsync", 13000, ptds);
  if ((void *)drv.batch128 == (void *)drv.batch13) {
    fprintf(stderr, "driver_api: one function for both batch ABIs\n");
    exit(3);
  }
}

/* ---- the copies of the COPY_ and ORDER_ cases ---------------------------------------------- */
enum { PITCH = 4096, ROWS = BYTES / PITCH, WIDTH = PITCH / 2, SLICES = 4 };
static bool per_thread; /* the copies below are the _ptsz variants (given stream 0) */

/* device->host into `host`: 2D, ROWS rows of WIDTH bytes at PITCH (device rows packed). */
static void copy_2d_to_host(void *host, CUdeviceptr d, CUstream s) {
  CUDA_MEMCPY2D p;
  memset(&p, 0, sizeof p);
  p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  p.srcDevice = d;
  p.srcPitch = WIDTH;
  p.dstMemoryType = CU_MEMORYTYPE_HOST;
  p.dstHost = host;
  p.dstPitch = PITCH;
  p.WidthInBytes = WIDTH;
  p.Height = ROWS;
  CK((per_thread ? drv.copy_2d_ptsz : drv.copy_2d)(&p, s));
}

/* The same as 3D: SLICES slices of ROWS / SLICES rows; the host side, a unified address, starts
 * one row in (srcY-style offsets: dstY = 1), so its last row ends a row before the buffer. */
static void copy_3d_to_host(void *host, CUdeviceptr d, CUstream s) {
  CUDA_MEMCPY3D p;
  memset(&p, 0, sizeof p);
  p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  p.srcDevice = d;
  p.srcPitch = WIDTH;
  p.srcHeight = ROWS / SLICES;
  p.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  p.dstDevice = (CUdeviceptr)(uintptr_t)host;
  p.dstPitch = PITCH;
  p.dstHeight = ROWS / SLICES;
  p.dstY = 1;
  p.WidthInBytes = WIDTH;
  p.Height = ROWS / SLICES - 1;
  p.Depth = SLICES;
  CK((per_thread ? drv.copy_3d_ptsz : drv.copy_3d)(&p, s));
}

/* A batch of four copies between host and device (to_host: device->host), all with `order`. */
static void batch(bool abi128, bool to_host, void *host, CUdeviceptr d, CUmemcpySrcAccessOrder order,
                  CUstream s) {
  enum { N = 4 };
  CUdeviceptr hp[N], dp[N];
  size_t sizes[N];
  for (int i = 0; i < N; i++) {
    hp[i] = (CUdeviceptr)(uintptr_t)host + i * (BYTES / N);
    dp[i] = d + i * (BYTES / N);
    sizes[i] = BYTES / N;
  }
  CUmemcpyAttributes attr;
  memset(&attr, 0, sizeof attr);
  attr.srcAccessOrder = order;
  size_t idx = 0, fail = 0;
  if (abi128)
    CK((per_thread ? drv.batch128_ptsz : drv.batch128)(to_host ? hp : dp, to_host ? dp : hp, sizes,
                                                       N, &attr, &idx, 1, &fail, s));
  else
    CK((per_thread ? drv.batch13_ptsz : drv.batch13)(to_host ? hp : dp, to_host ? dp : hp, sizes, N,
                                                     &attr, &idx, 1, s));
}

static unsigned long checksum(const unsigned char *p) {
  unsigned long sum = 0;
  for (size_t i = 0; i < BYTES; i += 4096) sum += p[i];
  return sum;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: driver_api linked|procaddr|mixed CASE bug|fixed\n");
    return 2;
  }
  const char *how = argv[1], *c = argv[2];
  bool bug = strcmp(argv[3], "bug") == 0;
  if (strcmp(how, "procaddr") == 0)
    find_by_proc_address();
  else
    find_linked();

  CUdevice dev;
  CUcontext ctx;
  CK(drv.init(0));
  CK(drv.device_get(&dev, 0));
  CK(drv.primary_ctx_retain(&ctx, dev));
  CK(drv.ctx_set_current(ctx));
  CUstream s1, s2;
  CK(drv.stream_create(&s1, CU_STREAM_NON_BLOCKING));
  CK(drv.stream_create(&s2, CU_STREAM_NON_BLOCKING));
  CUdeviceptr d;
  CK(drv.mem_alloc(&d, BYTES));
  CK(drv.memset(d, 0x5a, BYTES, s1));
  CK(drv.stream_sync(s1));
  unsigned char *host = NULL;
  bool mixed = strcmp(how, "mixed") == 0;
#ifdef WITH_RUNTIME
  if (mixed && cudaHostAlloc((void **)&host, BYTES, cudaHostAllocDefault) != cudaSuccess) return 3;
#else
  if (mixed) {
    fprintf(stderr, "driver_api: this build has no runtime (mixed is e2e_driver_api_mixed)\n");
    return 2;
  }
#endif
  if (!mixed) CK(drv.host_alloc((void **)&host, BYTES, 0));
  memset(host, 0, BYTES); /* what the copies into it do not write reads back as 0 */
  CUevent e;
  CK(drv.event_create(&e, CU_EVENT_DISABLE_TIMING));
  unsigned long sum = 0;

  /* COPY_free and COPY_cpu: the free and cpu cases with another copy into the buffer. */
  const char *copy = "dtoh";
  char base[16];
  const char *under = strchr(c, '_');
  if (under && (size_t)(under - c) < sizeof base) {
    memcpy(base, c, (size_t)(under - c));
    base[under - c] = 0;
    size_t k = strlen(base);
    if (k > 4 && strcmp(base + k - 4, "ptsz") == 0) { /* COPYptsz_free: the _ptsz variant */
      per_thread = true;
      base[k - 4] = 0;
    }
    if (strcmp(base, "2d") == 0 || strcmp(base, "3d") == 0 || strcmp(base, "batch128") == 0 ||
        strcmp(base, "batch13") == 0) {
      copy = base;
      c = under + 1;
    } else {
      per_thread = false;
    }
  }
  /* The stream the copy into the buffer goes on: the per-thread default stream for _ptsz. */
  CUstream cs = per_thread ? NULL : s1;
#define SYNC_COPY_STREAM() CK(per_thread ? drv.stream_sync_ptsz(NULL) : drv.stream_sync(s1))
#define COPY_TO_HOST()                                                                          \
  do {                                                                                          \
    if (strcmp(copy, "2d") == 0) copy_2d_to_host(host, d, cs);                                  \
    else if (strcmp(copy, "3d") == 0) copy_3d_to_host(host, d, cs);                             \
    else if (strncmp(copy, "batch", 5) == 0)                                                    \
      batch(strcmp(copy, "batch128") == 0, true, host, d, CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, cs); \
    else CK(drv.dtoh(host, d, BYTES, s1));                                                      \
  } while (0)
  /* ORDER_WHAT */
  CUmemcpySrcAccessOrder order = CU_MEMCPY_SRC_ACCESS_ORDER_INVALID;
  if (strncmp(c, "during_", 7) == 0) order = CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
  if (strncmp(c, "any_", 4) == 0) order = CU_MEMCPY_SRC_ACCESS_ORDER_ANY;
  if (strncmp(c, "stream_", 7) == 0) order = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  const char *what = order ? strchr(c, '_') + 1 : "";
  bool abi128 = strcmp(how, "procaddr") == 0;

  if (order && strcmp(what, "free") == 0) {
    memset(host, 0x11, BYTES);
    batch(abi128, false, host, d, order, s1);
    if (!bug) CK(drv.stream_sync(s1));
    CK(drv.free_host(host));
    host = NULL;
    CK(drv.stream_sync(s1));
  } else if (order && strcmp(what, "write") == 0) {
    memset(host, 0x11, BYTES);
    batch(abi128, false, host, d, order, s1);
    if (!bug) CK(drv.stream_sync(s1));
    memset(host, 0x22, BYTES); /* the CPU overwrites the source */
    CK(drv.stream_sync(s1));
  } else if (order && strcmp(what, "producer") == 0) {
    /* d holds 0x5a; the producer copies it into host (0x11 until then), the batch copies host
     * to a second device buffer, which is read back: 0x5a if the batch read after the
     * producer. */
    CUdeviceptr d2;
    CK(drv.mem_alloc(&d2, BYTES));
    memset(host, 0x11, BYTES);
    CK(drv.dtoh(host, d, BYTES, s1));
    if (!bug) CK(drv.stream_sync(s1));
    batch(abi128, false, host, d2, order, s1);
    CK(drv.stream_sync(s1));
    unsigned char *back = malloc(BYTES);
    if (!back) return 3;
    CK(drv.dtoh(back, d2, BYTES, s2));
    CK(drv.stream_sync(s2));
    sum = checksum(back);
    free(back);
    CK(drv.mem_free(d2));
  } else if (order) {
    fprintf(stderr, "driver_api: unknown case %s\n", argv[2]);
    return 2;
  } else if (strcmp(c, "free") == 0) {
    COPY_TO_HOST();
    if (!bug) SYNC_COPY_STREAM();
    CK(drv.free_host(host));
    host = NULL;
    SYNC_COPY_STREAM();
  } else if (strcmp(c, "cross") == 0) { /* also the mixed program's (runtime-pinned) case */
    CK(drv.htod(d, host, BYTES, s1)); /* reads host */
    if (!bug) {
      CK(drv.event_record(e, s1));
      CK(drv.stream_wait_event(s2, e, 0));
    }
    CK(drv.dtoh(host, d, BYTES, s2)); /* writes it */
    CK(drv.stream_sync(s1));
    CK(drv.stream_sync(s2));
    sum = checksum(host);
  } else if (strcmp(c, "cpu") == 0) {
    COPY_TO_HOST();
    CK(drv.event_record(e, s1));
    if (!bug) CK(drv.event_sync(e));
    sum = checksum(host); /* the CPU reads what the copy writes */
    CK(drv.stream_sync(s1));
  } else if (strcmp(c, "ptsz") == 0) {
    CK(drv.dtoh_ptsz(host, d, BYTES, 0)); /* the per-thread default stream writes host */
    if (!bug) CK(drv.stream_sync_ptsz(0));
    CK(drv.htod(d, host, BYTES, s2)); /* a non-blocking stream reads it */
    CK(drv.stream_sync_ptsz(0));
    CK(drv.stream_sync(s2));
    sum = checksum(host);
  } else if (strcmp(c, "kernel") == 0) {
    CUmodule m;
    CUfunction f;
    CK(drv.module_load_data(&m, "any image")); /* simcuda finds kernels by name */
    CK(drv.module_get_function(&f, m, "fill_host"));
    size_t n = BYTES;
    void *args[] = {&host, &n};
    CK(drv.launch(f, 1, 1, 1, 1, 1, 1, 0, s1, args, NULL));
    if (!bug) CK(drv.stream_sync(s1));
    CK(drv.free_host(host));
    host = NULL;
    CK(drv.stream_sync(s1));
#ifdef WITH_RUNTIME
  } else if (strcmp(c, "once") == 0) {
    /* Three runtime copies (each a driver copy underneath) and two driver copies. */
    cudaStream_t rs = (cudaStream_t)s1;
    for (int i = 0; i < 3; i++)
      if (cudaMemcpyAsync((void *)d, host, BYTES, cudaMemcpyHostToDevice, rs) != cudaSuccess)
        return 3;
    CK(drv.htod(d, host, BYTES, s1));
    CK(drv.dtoh(host, d, BYTES, s1));
    if (!bug) CK(drv.stream_sync(s1));
    sum = checksum(host);
    CK(drv.stream_sync(s1));
#endif
  } else {
    fprintf(stderr, "driver_api: unknown case %s\n", c);
    return 2;
  }

  printf("checksum %lu\n", sum);
  if (host) {
#ifdef WITH_RUNTIME
    if (mixed) cudaFreeHost(host);
#endif
    if (!mixed) CK(drv.free_host(host));
  }
  CK(drv.event_destroy(e));
  CK(drv.mem_free(d));
  CK(drv.stream_destroy(s1));
  CK(drv.stream_destroy(s2));
  return 0;
}
