/* Intent: the driver API's other ways to enqueue work are tracked like the runtime's:
 * cuLaunchKernelEx and cuLaunchCooperativeKernel, host functions (cuLaunchHostFunc) and stream
 * callbacks (cuStreamAddCallback), and stream
 * capture with graphs (cuStreamBeginCapture_v2 ... cuStreamEndCapture, cuGraphInstantiateWithFlags,
 * cuGraphLaunch), found by name or through cuGetProcAddress_v2, whose flags choose the _ptsz
 * variants.
 *   driver_launch HOW CASE bug|fixed
 * HOW: linked (cu* by name) or procaddr (dlopen("libcuda.so.1"), then cuGetProcAddress_v2 only,
 * as cuda-python and Triton do).
 * CASE (its fixed twin orders or synchronizes correctly):
 *   kernelex     cuMemFreeHost while a kernel launched with cuLaunchKernelEx (stream in its config,
 *                one launch attribute) writes the buffer through a raw pointer parameter;
 *   kernelex_cpu the CPU reads the buffer while that kernel writes it (guard pages; fixed: an
 *                event after the kernel is synchronized first);
 *   kernelex_ptsz the same free, the kernel on the per-thread default stream
 *                (cuLaunchKernelEx_ptsz; fixed: that stream is synchronized, through
 *                cuStreamSynchronize_ptsz);
 *   coop         the free, the kernel launched with cuLaunchCooperativeKernel;
 *   hostfn       a host function (cuLaunchHostFunc) reads the buffer. fixed: a device->host copy
 *                into it is queued after the host function on the same stream, so the host
 *                function must see the old bytes, with no report, and enforce must not wait (the
 *                copy waits behind the host function: a wait would never end). bug: the copy is
 *                on another stream, unordered: a real cpu-read-during-device-write, which enforce
 *                cannot wait for inside a host function;
 *   hostfn_ptsz  the same on the per-thread default stream (cuLaunchHostFunc_ptsz and the _ptsz
 *                copy);
 *   callback, callback_ptsz  the same with a stream callback (cuStreamAddCallback and its _ptsz
 *                twin) in place of the host function;
 *   graph        a host->device copy from the buffer captured into a graph on one stream; the
 *                CPU fills the buffer (guard pages: the captured copy has not run, so no
 *                report), the graph is launched on another stream, then the buffer is freed
 *                (fixed: the launch stream is synchronized first): the copy is in flight from
 *                cuGraphLaunch on, and only then;
 *   graph_ptsz   the same with capture, copy and launch on the per-thread default stream
 *                (the _ptsz variants);
 *   graph_hostfn a host function captured into a graph runs at each of two launches, reading
 *                the buffer; bug: while a copy on another stream writes it (a violation enforce
 *                cannot wait for inside a host function); fixed: after that copy is synchronized;
 *   capture      a device->host copy into the buffer is in flight while another stream captures a
 *                copy from it: captured, the copy does not run, so nothing is reported then. The
 *                bug launches the graph while the first copy is still in flight: the launch is
 *                checked, audit reports the conflict and enforce waits for the copy (fixed: the
 *                first copy is synchronized before the launch, and nothing is reported).
 * Prints what it read back, so that enforce runs can be told from corrupted ones. */
// Every case in both modes, for both HOWs. The fixed twins' enforce runs must end within 30 s
// (TIMEOUT ${t}: 60 is the default).
// Kernels that write the buffer, which is then freed:
// CASE: driver.${how}.${c}.bug.${mode} MODE ${mode} EXPECT free-during-device-access
//   ARGS ${how} ${c} bug STDOUT freed
//   FOR how IN linked procaddr FOR c IN kernelex kernelex_ptsz coop FOR mode IN audit enforce
// CASE: driver.${how}.${c}.fixed.${mode} MODE ${mode} EXPECT none ARGS ${how} ${c} fixed
//   STDOUT freed TIMEOUT ${t}
//   FOR how IN linked procaddr FOR c IN kernelex kernelex_ptsz coop FOR mode/t IN audit/60 enforce/30
// The CPU reads while the kernel writes (the read must come while the kernel runs); enforce made
// the CPU read the kernel's 64 sampled 0x5a bytes.
// CASE: driver.${how}.kernelex_cpu.bug.${mode} MODE ${mode} EXPECT cpu-read-during-device-write
//   ARGS ${how} kernelex_cpu bug STDOUT ${out} ENV ${GUARD_ENV} SIMCUDA_LATENCY_US=100000
//   FOR how IN linked procaddr FOR mode/out IN audit/checksum "enforce/checksum 5760"
// CASE: driver.${how}.kernelex_cpu.fixed.${mode} MODE ${mode} EXPECT none
//   ARGS ${how} kernelex_cpu fixed STDOUT checksum ENV ${GUARD_ENV} SIMCUDA_LATENCY_US=100000
//   TIMEOUT ${t} FOR how IN linked procaddr FOR mode/t IN audit/60 enforce/30
// Host functions: enforce cannot wait inside a host function, so the violation happened: exitcode
// in both modes. The fixed twin must see the bytes stream order gives, and never wait.
// CASE: driver.${how}.${c}.bug.${mode} MODE ${mode} EXPECT cpu-read-during-device-write EXIT 23
//   ARGS ${how} ${c} bug STDOUT "host functions done" ENV ${GUARD_ENV}
//   FOR how IN linked procaddr FOR c IN hostfn hostfn_ptsz callback callback_ptsz
//   FOR mode IN audit enforce
// CASE: driver.${how}.${c}.fixed.${mode} MODE ${mode} EXPECT none ARGS ${how} ${c} fixed
//   STDOUT "the host function saw the bytes stream order gives" ENV ${GUARD_ENV} TIMEOUT ${t}
//   FOR how IN linked procaddr FOR c IN hostfn hostfn_ptsz callback callback_ptsz
//   FOR mode/t IN audit/60 enforce/30
// CASE: driver.${how}.graph_hostfn.bug.${mode} MODE ${mode} EXPECT cpu-read-during-device-write
//   EXIT 23 ARGS ${how} graph_hostfn bug STDOUT "the graph's host function ran 2 times"
//   ENV ${GUARD_ENV} FOR how IN linked procaddr FOR mode IN audit enforce
// CASE: driver.${how}.graph_hostfn.fixed.${mode} MODE ${mode} EXPECT none
//   ARGS ${how} graph_hostfn fixed STDOUT "the graph's host function ran 2 times"
//   ENV ${GUARD_ENV} TIMEOUT ${t} FOR how IN linked procaddr FOR mode/t IN audit/60 enforce/30
// Graphs whose captured copy reads the buffer, which is then freed:
// CASE: driver.${how}.${c}.bug.${mode} MODE ${mode} EXPECT free-during-device-access
//   ARGS ${how} ${c} bug STDOUT "graph launched" ENV ${GUARD_ENV}
//   FOR how IN linked procaddr FOR c IN graph graph_ptsz FOR mode IN audit enforce
// CASE: driver.${how}.${c}.fixed.${mode} MODE ${mode} EXPECT none ARGS ${how} ${c} fixed
//   STDOUT "graph launched" ENV ${GUARD_ENV} TIMEOUT ${t}
//   FOR how IN linked procaddr FOR c IN graph graph_ptsz FOR mode/t IN audit/60 enforce/30
// Capture: for enforce the conflicting work still runs at the launch, as before (a latency).
// CASE: driver.${how}.capture.bug.audit MODE audit EXPECT device-access-conflict
//   ARGS ${how} capture bug STDOUT "capture succeeded and the graph replayed"
//   FOR how IN linked procaddr
// CASE: driver.${how}.capture.bug.enforce MODE enforce EXPECT device-access-conflict
//   ARGS ${how} capture bug STDOUT "capture succeeded and the graph replayed"
//   ENV ${PG_WAIT_LATENCY} FOR how IN linked procaddr
// CASE: driver.${how}.capture.fixed.${mode} MODE ${mode} EXPECT none ARGS ${how} capture fixed
//   STDOUT "capture succeeded and the graph replayed" TIMEOUT ${t}
//   FOR how IN linked procaddr FOR mode/t IN audit/60 enforce/30

#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <simcuda_kernel.h>

#define BYTES (256u << 10)
#define OLD 0x11
#define FRESH 0x5a

#define CK(call)                                                                           \
  do {                                                                                     \
    CUresult r_ = (call);                                                                  \
    if (r_ != CUDA_SUCCESS) {                                                              \
      fprintf(stderr, "driver_launch: %s failed: %d (line %d)\n", #call, (int)r_, __LINE__); \
      exit(3);                                                                             \
    }                                                                                      \
  } while (0)

typedef CUresult (*stream_fn)(CUstream);
typedef CUresult (*copy_htod_fn)(CUdeviceptr, const void *, size_t, CUstream);
typedef CUresult (*copy_dtoh_fn)(void *, CUdeviceptr, size_t, CUstream);
typedef CUresult (*launch_ex_fn)(const CUlaunchConfig *, CUfunction, void **, void **);
typedef CUresult (*host_func_fn)(CUstream, CUhostFn, void *);
typedef CUresult (*add_callback_fn)(CUstream, CUstreamCallback, void *, unsigned);
typedef CUresult (*begin_capture_fn)(CUstream, CUstreamCaptureMode);
typedef CUresult (*end_capture_fn)(CUstream, CUgraph *);
typedef CUresult (*graph_launch_fn)(CUgraphExec, CUstream);

/* The driver functions the cases use, found one of the ways above; each _ptsz one is the
 * per-thread-default-stream variant. */
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
  stream_fn stream_destroy, stream_sync, stream_sync_ptsz;
  copy_htod_fn htod, htod_ptsz;
  copy_dtoh_fn dtoh, dtoh_ptsz;
  CUresult (*memset)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*memset_ptsz)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*event_create)(CUevent *, unsigned);
  CUresult (*event_record)(CUevent, CUstream);
  CUresult (*event_sync)(CUevent);
  CUresult (*event_destroy)(CUevent);
  CUresult (*module_load_data)(CUmodule *, const void *);
  CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
  launch_ex_fn launch_ex, launch_ex_ptsz;
  CUresult (*launch_coop)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                          unsigned, CUstream, void **);
  host_func_fn host_func, host_func_ptsz;
  add_callback_fn add_callback, add_callback_ptsz;
  begin_capture_fn begin_capture, begin_capture_ptsz;
  end_capture_fn end_capture, end_capture_ptsz;
  CUresult (*instantiate)(CUgraphExec *, CUgraph, unsigned long long);
  graph_launch_fn graph_launch, graph_launch_ptsz;
  CUresult (*graph_exec_destroy)(CUgraphExec);
  CUresult (*graph_destroy)(CUgraph);
} drv;

/* A kernel that writes its buffer through the raw pointer it is given. */
SIMCUDA_KERNEL(fill_host, sizeof(void *), sizeof(size_t)) {
  unsigned char *p = simcuda_dma(*(void **)launch->args[0]);
  memset(p, FRESH, *(size_t *)launch->args[1]);
}

extern CUresult cuStreamSynchronize_ptsz(CUstream);
extern CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr, const void *, size_t, CUstream);
extern CUresult cuMemcpyDtoHAsync_v2_ptsz(void *, CUdeviceptr, size_t, CUstream);
extern CUresult cuMemsetD8Async_ptsz(CUdeviceptr, unsigned char, size_t, CUstream);
extern CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *, CUfunction, void **, void **);
extern CUresult cuLaunchHostFunc_ptsz(CUstream, CUhostFn, void *);
extern CUresult cuStreamAddCallback_ptsz(CUstream, CUstreamCallback, void *, unsigned);
extern CUresult cuStreamBeginCapture_v2_ptsz(CUstream, CUstreamCaptureMode);
extern CUresult cuStreamEndCapture_ptsz(CUstream, CUgraph *);
extern CUresult cuGraphLaunch_ptsz(CUgraphExec, CUstream);

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
  drv.stream_sync_ptsz = cuStreamSynchronize_ptsz;
  drv.htod = cuMemcpyHtoDAsync_v2;
  drv.htod_ptsz = cuMemcpyHtoDAsync_v2_ptsz;
  drv.dtoh = cuMemcpyDtoHAsync_v2;
  drv.dtoh_ptsz = cuMemcpyDtoHAsync_v2_ptsz;
  drv.memset = cuMemsetD8Async;
  drv.memset_ptsz = cuMemsetD8Async_ptsz;
  drv.event_create = cuEventCreate;
  drv.event_record = cuEventRecord;
  drv.event_sync = cuEventSynchronize;
  drv.event_destroy = cuEventDestroy_v2;
  drv.module_load_data = cuModuleLoadData;
  drv.module_get_function = cuModuleGetFunction;
  drv.launch_ex = cuLaunchKernelEx;
  drv.launch_ex_ptsz = cuLaunchKernelEx_ptsz;
  drv.launch_coop = cuLaunchCooperativeKernel;
  drv.host_func = cuLaunchHostFunc;
  drv.host_func_ptsz = cuLaunchHostFunc_ptsz;
  drv.add_callback = cuStreamAddCallback;
  drv.add_callback_ptsz = cuStreamAddCallback_ptsz;
  drv.begin_capture = cuStreamBeginCapture_v2;
  drv.begin_capture_ptsz = cuStreamBeginCapture_v2_ptsz;
  drv.end_capture = cuStreamEndCapture;
  drv.end_capture_ptsz = cuStreamEndCapture_ptsz;
  drv.instantiate = cuGraphInstantiateWithFlags;
  drv.graph_launch = cuGraphLaunch;
  drv.graph_launch_ptsz = cuGraphLaunch_ptsz;
  drv.graph_exec_destroy = cuGraphExecDestroy;
  drv.graph_destroy = cuGraphDestroy;
}

typedef CUresult (*gpa_t)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
static gpa_t gpa;

/* The variant cuGetProcAddress_v2 gives for version 12000 and these flags. */
static void *get(const char *name, cuuint64_t flags) {
  void *fn = NULL;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
  if (gpa(name, &fn, 12000, flags, &st) != CUDA_SUCCESS || !fn) {
    fprintf(stderr, "driver_launch: cuGetProcAddress_v2(%s) found nothing (%d)\n", name, (int)st);
    exit(3);
  }
  return fn;
}
#define LEGACY(name) get(name, CU_GET_PROC_ADDRESS_LEGACY_STREAM)
#define PTDS(name) get(name, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)

static void find_by_proc_address(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h || !(gpa = (gpa_t)dlsym(h, "cuGetProcAddress_v2"))) {
    fprintf(stderr, "driver_launch: no cuGetProcAddress_v2 (%s)\n", h ? "dlsym" : dlerror());
    exit(3);
  }
  drv.init = LEGACY("cuInit");
  drv.device_get = LEGACY("cuDeviceGet");
  drv.primary_ctx_retain = LEGACY("cuDevicePrimaryCtxRetain");
  drv.ctx_set_current = LEGACY("cuCtxSetCurrent");
  drv.mem_alloc = LEGACY("cuMemAlloc");
  drv.mem_free = LEGACY("cuMemFree");
  drv.host_alloc = LEGACY("cuMemHostAlloc");
  drv.free_host = LEGACY("cuMemFreeHost");
  drv.stream_create = LEGACY("cuStreamCreate");
  drv.stream_destroy = LEGACY("cuStreamDestroy");
  drv.stream_sync = LEGACY("cuStreamSynchronize");
  drv.stream_sync_ptsz = PTDS("cuStreamSynchronize");
  drv.htod = LEGACY("cuMemcpyHtoDAsync");
  drv.htod_ptsz = PTDS("cuMemcpyHtoDAsync");
  drv.dtoh = LEGACY("cuMemcpyDtoHAsync");
  drv.dtoh_ptsz = PTDS("cuMemcpyDtoHAsync");
  drv.memset = LEGACY("cuMemsetD8Async");
  drv.memset_ptsz = PTDS("cuMemsetD8Async");
  drv.event_create = LEGACY("cuEventCreate");
  drv.event_record = LEGACY("cuEventRecord");
  drv.event_sync = LEGACY("cuEventSynchronize");
  drv.event_destroy = LEGACY("cuEventDestroy");
  drv.module_load_data = LEGACY("cuModuleLoadData");
  drv.module_get_function = LEGACY("cuModuleGetFunction");
  drv.launch_ex = LEGACY("cuLaunchKernelEx");
  drv.launch_ex_ptsz = PTDS("cuLaunchKernelEx");
  drv.launch_coop = LEGACY("cuLaunchCooperativeKernel");
  drv.host_func = LEGACY("cuLaunchHostFunc");
  drv.host_func_ptsz = PTDS("cuLaunchHostFunc");
  drv.add_callback = LEGACY("cuStreamAddCallback");
  drv.add_callback_ptsz = PTDS("cuStreamAddCallback");
  drv.begin_capture = LEGACY("cuStreamBeginCapture");
  drv.begin_capture_ptsz = PTDS("cuStreamBeginCapture");
  drv.end_capture = LEGACY("cuStreamEndCapture");
  drv.end_capture_ptsz = PTDS("cuStreamEndCapture");
  drv.instantiate = LEGACY("cuGraphInstantiate"); /* cuGraphInstantiateWithFlags from 12.0 */
  drv.graph_launch = LEGACY("cuGraphLaunch");
  drv.graph_launch_ptsz = PTDS("cuGraphLaunch");
  drv.graph_exec_destroy = LEGACY("cuGraphExecDestroy");
  drv.graph_destroy = LEGACY("cuGraphDestroy");
}

static unsigned char *host;
static unsigned char seen;

static void CUDA_CB read_mid(void *unused) {
  (void)unused;
  seen = host[BYTES / 2];
}

/* The same read as a stream callback, which also gets its stream and a status. */
static bool callbacks; /* the host function cases enqueue stream callbacks instead */
static void CUDA_CB read_mid_callback(CUstream s, CUresult status, void *unused) {
  (void)s;
  if (status == CUDA_SUCCESS) read_mid(unused);
}

static int runs;
static void CUDA_CB count_and_read(void *unused) {
  runs++;
  read_mid(unused);
}

static unsigned long checksum(const unsigned char *p) {
  unsigned long sum = 0;
  for (size_t i = 0; i < BYTES; i += 4096) sum += p[i];
  return sum;
}

/* Launches fill_host on s with cuLaunchKernelEx, with one launch attribute. */
static void launch_fill(CUfunction f, CUstream s) {
  size_t n = BYTES;
  void *args[] = {&host, &n};
  CUlaunchAttribute attr;
  memset(&attr, 0, sizeof attr);
  attr.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
  attr.value.priority = 0;
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = s;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  CK(drv.launch_ex(&cfg, f, args, NULL));
}

/* A host function on s reads the buffer; a device->host copy of fresh bytes into it is queued
 * after the host function on s (fixed), or is in flight on `other` (bug). */
static bool hostfn_round(CUdeviceptr d, CUstream s, CUstream other, bool bug) {
  memset(host, OLD, BYTES);
  CK(drv.memset(d, FRESH, BYTES, other));
  CK(drv.stream_sync(other));
  if (bug)
    CK(drv.dtoh(host, d, BYTES, other));
  else /* device work ahead of the host function keeps it queued until the copy is in flight */
    CK(drv.memset(d + BYTES, 0, BYTES, s));
  if (callbacks)
    CK(drv.add_callback(s, read_mid_callback, NULL, 0));
  else
    CK(drv.host_func(s, read_mid, NULL));
  if (!bug) CK(drv.dtoh(host, d, BYTES, s));
  CK(drv.stream_sync(s));
  CK(drv.stream_sync(other));
  return seen == OLD;
}

/* Captures a host->device copy from the buffer on s into a graph, and instantiates it. */
static void capture_copy(CUdeviceptr d, CUstream s, CUgraph *g, CUgraphExec *x) {
  CK(drv.begin_capture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CK(drv.htod(d, host, BYTES, s));
  CK(drv.end_capture(s, g));
  CK(drv.instantiate(x, *g, 0));
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: driver_launch linked|procaddr CASE bug|fixed\n");
    return 2;
  }
  const char *c = argv[2];
  bool bug = strcmp(argv[3], "bug") == 0;
  if (strcmp(argv[1], "procaddr") == 0)
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
  CK(drv.mem_alloc(&d, 2 * BYTES));
  CK(drv.host_alloc((void **)&host, BYTES, 0));
  memset(host, 0, BYTES);
  CUevent e;
  CK(drv.event_create(&e, CU_EVENT_DISABLE_TIMING));
  CUmodule m;
  CUfunction f;
  CK(drv.module_load_data(&m, "any image")); /* simcuda finds kernels by name */
  CK(drv.module_get_function(&f, m, "fill_host"));
  /* A _ptsz case uses the per-thread-default-stream variants throughout, and stream 0 (the
   * per-thread default stream with them) as its own stream; for a stream it names they are the
   * plain functions. */
  bool ptsz = strstr(c, "_ptsz") != NULL;
  if (ptsz) {
    drv.stream_sync = drv.stream_sync_ptsz;
    drv.htod = drv.htod_ptsz;
    drv.dtoh = drv.dtoh_ptsz;
    drv.memset = drv.memset_ptsz;
    drv.launch_ex = drv.launch_ex_ptsz;
    drv.host_func = drv.host_func_ptsz;
    drv.add_callback = drv.add_callback_ptsz;
    drv.begin_capture = drv.begin_capture_ptsz;
    drv.end_capture = drv.end_capture_ptsz;
    drv.graph_launch = drv.graph_launch_ptsz;
  }
  CUstream own = ptsz ? 0 : s1;

  if (strcmp(c, "kernelex") == 0 || strcmp(c, "kernelex_ptsz") == 0 || strcmp(c, "coop") == 0) {
    if (strcmp(c, "coop") == 0) {
      size_t n = BYTES;
      void *args[] = {&host, &n};
      CK(drv.launch_coop(f, 1, 1, 1, 1, 1, 1, 0, own, args));
    } else {
      launch_fill(f, own);
    }
    if (!bug) CK(drv.stream_sync(own));
    CK(drv.free_host(host));
    host = NULL;
    CK(drv.stream_sync(own));
    puts("freed");
  } else if (strcmp(c, "kernelex_cpu") == 0) {
    launch_fill(f, own);
    CK(drv.event_record(e, own));
    if (!bug) CK(drv.event_sync(e));
    printf("checksum %lu\n", checksum(host)); /* the CPU reads what the kernel writes */
    CK(drv.stream_sync(own));
  } else if (strncmp(c, "hostfn", 6) == 0 || strncmp(c, "callback", 8) == 0) {
    callbacks = c[0] == 'c';
    bool ok = true;
    for (int round = 0; round < 2; round++) ok = hostfn_round(d, own, s2, bug) && ok;
    if (!bug) puts(ok ? "the host function saw the bytes stream order gives"
                      : "the host function saw bytes out of stream order");
    else puts("host functions done");
  } else if (strcmp(c, "graph") == 0 || strcmp(c, "graph_ptsz") == 0) {
    /* Captured on s1 and launched on s2, or both on the per-thread default stream. */
    CUgraph g;
    CUgraphExec x;
    CUstream launch = ptsz ? 0 : s2;
    capture_copy(d, own, &g, &x);
    memset(host, OLD, BYTES); /* what the graph will copy: nothing reads it before the launch */
    CK(drv.graph_launch(x, launch));
    if (!bug) CK(drv.stream_sync(launch));
    CK(drv.free_host(host));
    host = NULL;
    CK(drv.stream_sync(launch));
    CK(drv.graph_exec_destroy(x));
    CK(drv.graph_destroy(g));
    puts("graph launched");
  } else if (strcmp(c, "graph_hostfn") == 0) {
    CUgraph g;
    CUgraphExec x;
    CK(drv.memset(d, FRESH, BYTES, s2));
    CK(drv.stream_sync(s2));
    CK(drv.begin_capture(own, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CK(drv.host_func(own, count_and_read, NULL));
    CK(drv.end_capture(own, &g));
    CK(drv.instantiate(&x, g, 0));
    for (int round = 0; round < 2; round++) {
      CK(drv.dtoh(host, d, BYTES, s2)); /* writes what the graph's host function reads */
      if (!bug) CK(drv.stream_sync(s2));
      CK(drv.graph_launch(x, own));
      CK(drv.stream_sync(own));
      CK(drv.stream_sync(s2));
    }
    CK(drv.graph_exec_destroy(x));
    CK(drv.graph_destroy(g));
    printf("the graph's host function ran %d times\n", runs);
  } else if (strcmp(c, "capture") == 0) {
    CUgraph g;
    CUgraphExec x;
    CK(drv.memset(d + BYTES, FRESH, BYTES, s1));
    CK(drv.dtoh(host, d + BYTES, BYTES, s1)); /* writes host */
    capture_copy(d, s2, &g, &x); /* reads it, captured: not run, so no conflict yet */
    if (!bug) CK(drv.stream_sync(s1));
    CK(drv.graph_launch(x, s2)); /* bug: runs while the write is in flight */
    CK(drv.stream_sync(s1));
    CK(drv.stream_sync(s2));
    CK(drv.graph_exec_destroy(x));
    CK(drv.graph_destroy(g));
    printf("capture succeeded and the graph replayed, checksum %lu\n", checksum(host));
  } else {
    fprintf(stderr, "driver_launch: unknown case %s\n", c);
    return 2;
  }

  if (host) CK(drv.free_host(host));
  CK(drv.event_destroy(e));
  CK(drv.mem_free(d));
  CK(drv.stream_destroy(s1));
  CK(drv.stream_destroy(s2));
  return 0;
}
