/* Intent: every interposed entry point that no other scenario calls is tracked. Each case names
 * one entry point (the _ptsz twins pass stream 0, the calling thread's per-thread stream) and
 * runs as "bug" (the violation: a report of the case's kind in audit; in enforce a wait, so the
 * bytes printed are the right ones) or "fixed" (correctly ordered: no report).
 *
 * Guarded cases (run with guard=1): the entry point starts a GPU access and the CPU touches the
 * last row (2D), the last row of the last slice (3D), or the far end of the span (symbols,
 * kernels, graphs, batches) before it completes; the page lies wholly inside the span only if
 * the interceptor described the span to its end. "fixed" synchronizes first.
 *   reads (prints "read byte 0x5a": the device wrote 0x5a over 0x00):
 *     cudaMemcpy2DAsync[_ptsz].d2h, cudaMemcpy3DAsync[_ptsz].d2h, cudaMemcpyFromSymbolAsync[_ptsz],
 *     cudaMemcpyBatchAsync_ptsz, cudaLaunchKernelExC[_ptsz], cudaGetKernel (then
 *     __cudaLaunchKernel), __cudaLaunchKernel_ptsz, cudaGraphInstantiateWithFlags (a captured
 *     copy replayed), cudaGraphLaunch_ptsz (captured with the _ptsz capture calls);
 *   writes (prints "device got byte 0x11": the device read 0x11 before the CPU wrote 0x22):
 *     cudaMemcpy2DAsync[_ptsz].h2d, cudaMemcpy3DAsync[_ptsz].h2d, cudaMemcpyToSymbolAsync[_ptsz].
 * Ordering cases (no guard pages): a host->device copy from the buffer on one stream, then a
 * device->host copy into it on another; "fixed" orders them with the entry point, "bug" does not
 * (device-access-conflict; enforce waits, so "device got byte 0x11"):
 *     cudaEventRecordWithFlags[_ptsz], cudaEventRecord_ptsz, cudaStreamWaitEvent_ptsz.
 * Host functions (guard=1): a device->host copy on the per-thread stream, then a host function
 * reading its destination: on the same stream ("fixed": stream order, no report, it sees 0x5a)
 * or on another stream ("bug": cpu-read-during-device-write, which enforce cannot wait for
 * inside a host function): cudaLaunchHostFunc_ptsz, cudaStreamAddCallback_ptsz.
 * Completion queries: a device->host copy, then cudaFreeHost; "fixed" polls the entry point
 * until it answers cudaSuccess, "bug" asks once, gets cudaErrorNotReady, and frees
 * (free-during-device-access): cudaStreamQuery[_ptsz], cudaEventQuery.
 * The capture cases also check that cudaStreamIsCapturing[_ptsz] answers "active".
 * Usage: entry_points bug|fixed CASE */
// Each case: the violation is reported in audit (the bytes there are whatever the race gave);
// enforce reports it and waits, so the bytes are right; the ordered twin gives no report and the
// same bytes. A 50 ms device latency keeps each access in flight past the program's next step,
// on a loaded machine and under sanitizers too.
// LIST: slow SIMCUDA_LATENCY_US=50000
// LIST: slow_guard SIMCUDA_LATENCY_US=50000 ${GUARD_ENV}
// The CPU reads what a copy or a kernel writes.
// LIST: reads cudaMemcpy2DAsync.d2h cudaMemcpy2DAsync_ptsz.d2h cudaMemcpy3DAsync.d2h
// LIST: reads cudaMemcpy3DAsync_ptsz.d2h cudaMemcpyFromSymbolAsync cudaMemcpyFromSymbolAsync_ptsz
// LIST: reads cudaMemcpyBatchAsync_ptsz cudaLaunchKernelExC cudaLaunchKernelExC_ptsz
// LIST: reads cudaGetKernel __cudaLaunchKernel_ptsz
// CASE: entry.${c}.bug.audit MODE audit EXPECT cpu-read-during-device-write ARGS bug ${c}
//   STDOUT "read byte" ENV ${slow_guard} FOR c IN ${reads}
// CASE: entry.${c}.bug.enforce MODE enforce EXPECT cpu-read-during-device-write ARGS bug ${c}
//   STDOUT "read byte 0x5a" ENV ${slow_guard} FOR c IN ${reads}
// CASE: entry.${c}.fixed.${mode} MODE ${mode} EXPECT none ARGS fixed ${c}
//   STDOUT "read byte 0x5a" ENV ${slow_guard} FOR c IN ${reads} FOR mode IN audit enforce
// The CPU reads what a graph writes.
// LIST: graphs cudaGraphInstantiateWithFlags cudaGraphLaunch_ptsz
// CASE: entry.${c}.bug.audit MODE audit EXPECT cpu-read-during-device-write ARGS bug ${c}
//   STDOUT "capturing: yes" ENV ${slow_guard} FOR c IN ${graphs}
// CASE: entry.${c}.bug.enforce MODE enforce EXPECT cpu-read-during-device-write ARGS bug ${c}
//   STDOUT "read byte 0x5a" ENV ${slow_guard} FOR c IN ${graphs}
// CASE: entry.${c}.fixed.${mode} MODE ${mode} EXPECT none ARGS fixed ${c}
//   STDOUT "read byte 0x5a" ENV ${slow_guard} FOR c IN ${graphs} FOR mode IN audit enforce
// The CPU writes what a copy reads.
// LIST: writes cudaMemcpy2DAsync.h2d cudaMemcpy2DAsync_ptsz.h2d cudaMemcpy3DAsync.h2d
// LIST: writes cudaMemcpy3DAsync_ptsz.h2d cudaMemcpyToSymbolAsync cudaMemcpyToSymbolAsync_ptsz
// CASE: entry.${c}.bug.audit MODE audit EXPECT cpu-write-during-device-access ARGS bug ${c}
//   STDOUT "device got byte" ENV ${slow_guard} FOR c IN ${writes}
// CASE: entry.${c}.bug.enforce MODE enforce EXPECT cpu-write-during-device-access ARGS bug ${c}
//   STDOUT "device got byte 0x11" ENV ${slow_guard} FOR c IN ${writes}
// CASE: entry.${c}.fixed.${mode} MODE ${mode} EXPECT none ARGS fixed ${c}
//   STDOUT "device got byte 0x11" ENV ${slow_guard} FOR c IN ${writes} FOR mode IN audit enforce
// Two streams, ordered (or not) by events.
// LIST: events cudaEventRecordWithFlags cudaEventRecordWithFlags_ptsz cudaEventRecord_ptsz
// LIST: events cudaStreamWaitEvent_ptsz
// CASE: entry.${c}.bug.audit MODE audit EXPECT device-access-conflict ARGS bug ${c}
//   STDOUT "device got byte" ENV ${slow} FOR c IN ${events}
// CASE: entry.${c}.bug.enforce MODE enforce EXPECT device-access-conflict ARGS bug ${c}
//   STDOUT "device got byte 0x11" ENV ${slow} FOR c IN ${events}
// CASE: entry.${c}.fixed.${mode} MODE ${mode} EXPECT none ARGS fixed ${c}
//   STDOUT "device got byte 0x11" ENV ${slow} FOR c IN ${events} FOR mode IN audit enforce
// A host function reads what a copy writes: enforce cannot wait inside it, so it cannot prevent
// the violation (exit status 23 in both modes).
// LIST: hostfns cudaLaunchHostFunc_ptsz cudaStreamAddCallback_ptsz
// CASE: entry.${c}.bug.audit MODE audit EXPECT cpu-read-during-device-write ARGS bug ${c}
//   STDOUT "host function read byte" ENV ${slow_guard} FOR c IN ${hostfns}
// CASE: entry.${c}.bug.enforce MODE enforce EXPECT cpu-read-during-device-write EXIT 23
//   ARGS bug ${c} STDOUT "host function read byte" ENV ${slow_guard} FOR c IN ${hostfns}
// CASE: entry.${c}.fixed.${mode} MODE ${mode} EXPECT none ARGS fixed ${c}
//   STDOUT "host function read byte 0x5a" ENV ${slow_guard} FOR c IN ${hostfns}
//   FOR mode IN audit enforce
// A query that answers "complete" orders; the free after a "not ready" is a violation.
// LIST: queries cudaStreamQuery cudaStreamQuery_ptsz cudaEventQuery
// CASE: entry.${c}.bug.audit MODE audit EXPECT free-during-device-access ARGS bug ${c}
//   STDOUT "first answer cudaErrorNotReady, not complete" ENV ${slow} FOR c IN ${queries}
// CASE: entry.${c}.bug.enforce MODE enforce EXPECT free-during-device-access ARGS bug ${c}
//   STDOUT "complete after" ENV ${slow} FOR c IN ${queries}
// CASE: entry.${c}.fixed.${mode} MODE ${mode} EXPECT none ARGS fixed ${c}
//   STDOUT "complete after" ENV ${slow} FOR c IN ${queries} FOR mode IN audit enforce

#include <pthread.h>
#include <unistd.h>

#include "e2e.h"
#include "simcuda_ptsz.h"

#define OLD 0x00
#define NEW 0x5a
#define SRC_OLD 0x11
#define SRC_NEW 0x22

static unsigned char *host;
static unsigned char *dev;
static cudaStream_t own;   /* a non-blocking stream of the program's */
static int ptsz;           /* the case names a _ptsz entry point */
static cudaStream_t plain; /* the stream the case's copies use, for the plain calls */
static cudaStream_t arg;   /* ... and as the _ptsz entry point is given it */

static void sync_plain(void) { CHECK(cudaStreamSynchronize(plain)); }

/* Reads one guarded byte (a device write may be in flight there). */
static void read_probe(size_t off) {
  unsigned char b = ((volatile unsigned char *)host)[off];
  printf("read byte 0x%02x\n", b);
}

/* Writes one guarded byte of a copy's source; then, once the stream drained, prints what the
 * device received at dev_off. */
static void write_probe(size_t off, size_t dev_off) {
  ((volatile unsigned char *)host)[off] = SRC_NEW;
  sync_plain();
  unsigned char b;
  CHECK(cudaMemcpy(&b, dev + dev_off, 1, cudaMemcpyDeviceToHost));
  printf("device got byte 0x%02x\n", b);
}

/* Device memory NEW, host OLD, both settled: a device->host copy then changes the host bytes. */
static void setup_d2h(void) {
  memset(host, OLD, BUF_BYTES);
  CHECK(cudaMemset(dev, NEW, BUF_BYTES));
  CHECK(cudaDeviceSynchronize());
}

static void setup_h2d(void) {
  memset(host, SRC_OLD, BUF_BYTES);
  CHECK(cudaMemset(dev, 0, BUF_BYTES));
  CHECK(cudaDeviceSynchronize());
}

/* ---- 2D: 16 rows of 4 KiB with an 8 KiB host pitch (a gap between rows), device pitch 4 KiB */
#define ROW 4096
#define HPITCH 8192
#define ROWS 16
#define LAST_ROW_OFF ((ROWS - 1) * HPITCH + 100)
#define LAST_ROW_DEV ((ROWS - 1) * ROW + 100)

static cudaError_t copy_2d(int d2h) {
  if (d2h)
    return ptsz ? cudaMemcpy2DAsync_ptsz(host, HPITCH, dev, ROW, ROW, ROWS,
                                         cudaMemcpyDeviceToHost, arg)
                : cudaMemcpy2DAsync(host, HPITCH, dev, ROW, ROW, ROWS, cudaMemcpyDeviceToHost,
                                    arg);
  return ptsz ? cudaMemcpy2DAsync_ptsz(dev, ROW, host, HPITCH, ROW, ROWS, cudaMemcpyHostToDevice,
                                       arg)
              : cudaMemcpy2DAsync(dev, ROW, host, HPITCH, ROW, ROWS, cudaMemcpyHostToDevice, arg);
}

/* ---- 3D: the host box starts at (x 0, y 1, z 1) in 4 slices of 4 rows with an 8 KiB pitch; it
 * is 3 slices of 2 rows of 4 KiB. The device box is dense (pitch 4 KiB, 2 rows a slice). */
#define H_YSIZE 4
#define H_SLICE (HPITCH * H_YSIZE)
#define BOX_DEPTH 3
#define BOX_ROWS 2
/* The last row of the last slice: z = 1 + 2, y = 1 + 1. */
#define BOX_LAST_OFF (3 * H_SLICE + 2 * HPITCH + 100)
#define BOX_LAST_DEV ((BOX_DEPTH - 1) * BOX_ROWS * ROW + (BOX_ROWS - 1) * ROW + 100)

static cudaError_t copy_3d(int d2h) {
  struct cudaMemcpy3DParms p;
  memset(&p, 0, sizeof p);
  struct cudaPitchedPtr h = {.ptr = host, .pitch = HPITCH, .xsize = ROW, .ysize = H_YSIZE};
  struct cudaPitchedPtr d = {.ptr = dev, .pitch = ROW, .xsize = ROW, .ysize = BOX_ROWS};
  struct cudaPos hpos = {.x = 0, .y = 1, .z = 1}, dpos = {0, 0, 0};
  p.extent = (struct cudaExtent){.width = ROW, .height = BOX_ROWS, .depth = BOX_DEPTH};
  if (d2h) {
    p.srcPtr = d, p.srcPos = dpos, p.dstPtr = h, p.dstPos = hpos;
    p.kind = cudaMemcpyDeviceToHost;
  } else {
    p.srcPtr = h, p.srcPos = hpos, p.dstPtr = d, p.dstPos = dpos;
    p.kind = cudaMemcpyHostToDevice;
  }
  return ptsz ? cudaMemcpy3DAsync_ptsz(&p, arg) : cudaMemcpy3DAsync(&p, arg);
}

/* ---- symbols: a "symbol" is a device address on simcuda; 64 KiB at offset 4 KiB into it ---- */
#define SYM_BYTES (64u * 1024u)
#define SYM_OFF 4096u
#define SYM_PROBE (SYM_BYTES - 100)

/* ---- kernels: e2e_fill_host writes NEW over the whole buffer ------------------------------- */
static cudaError_t launch_ex(void) {
  host_ptrs_t a = {.p = {host}, .n = 1, .len = BUF_BYTES, .value = NEW};
  void *args[] = {&a};
  cudaLaunchConfig_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDim = (dim3){1, 1, 1};
  cfg.blockDim = (dim3){32, 1, 1};
  cfg.stream = arg;
  return ptsz ? cudaLaunchKernelExC_ptsz(&cfg, (const void *)e2e_fill_host, args)
              : cudaLaunchKernelExC(&cfg, (const void *)e2e_fill_host, args);
}

static cudaError_t launch_handle(int public_get) {
  cudaKernel_t k = NULL;
  cudaError_t err = public_get ? cudaGetKernel(&k, (const void *)e2e_fill_host)
                               : __cudaGetKernel(&k, (const void *)e2e_fill_host);
  if (err != cudaSuccess) return err;
  host_ptrs_t a = {.p = {host}, .n = 1, .len = BUF_BYTES, .value = NEW};
  void *args[] = {&a};
  return ptsz ? __cudaLaunchKernel_ptsz(k, (dim3){1, 1, 1}, (dim3){32, 1, 1}, args, 0, arg)
              : __cudaLaunchKernel(k, (dim3){1, 1, 1}, (dim3){32, 1, 1}, args, 0, arg);
}

/* ---- graphs: a captured device->host copy, instantiated and launched ----------------------- */
static void check_capturing(cudaStream_t s) {
  enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  CHECK(ptsz ? cudaStreamIsCapturing_ptsz(s, &st) : cudaStreamIsCapturing(s, &st));
  printf("capturing: %s\n", st == cudaStreamCaptureStatusActive ? "yes" : "no");
}

static void graph_case(int bug) {
  cudaGraph_t g;
  cudaGraphExec_t exec;
  /* Captured on the program's own stream (the _ptsz capture calls with an explicit stream);
   * the _ptsz case launches the graph on the per-thread stream. */
  CHECK(ptsz ? cudaStreamBeginCapture_ptsz(own, cudaStreamCaptureModeGlobal)
             : cudaStreamBeginCapture(own, cudaStreamCaptureModeGlobal));
  check_capturing(own);
  CHECK(cudaMemcpyAsync(host, dev, BUF_BYTES, cudaMemcpyDeviceToHost, own));
  CHECK(ptsz ? cudaStreamEndCapture_ptsz(own, &g) : cudaStreamEndCapture(own, &g));
  if (ptsz) CHECK(cudaGraphInstantiate(&exec, g, 0));
  else CHECK(cudaGraphInstantiateWithFlags(&exec, g, cudaGraphInstantiateFlagAutoFreeOnLaunch));
  CHECK(ptsz ? cudaGraphLaunch_ptsz(exec, arg) : cudaGraphLaunch(exec, arg));
  if (!bug) sync_plain();
  read_probe(BUF_BYTES - 100);
  sync_plain();
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(g));
}

/* ---- ordering: a copy from the buffer on stream a, one into it on stream b ----------------- */
static void order_case(int bug, const char *name) {
  cudaStream_t b;
  cudaEvent_t e;
  CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  unsigned char *dev_b = dev + BUF_BYTES;
  memset(host, SRC_OLD, BUF_BYTES);
  CHECK(cudaMemset(dev, 0, BUF_BYTES));
  CHECK(cudaMemset(dev_b, 0x77, BUF_BYTES));
  CHECK(cudaDeviceSynchronize());
  /* cudaStreamWaitEvent_ptsz makes the per-thread stream the waiting one; the record entry
   * points record on it. */
  int waits = !strcmp(name, "cudaStreamWaitEvent_ptsz");
  cudaStream_t first = waits ? own : plain, second = waits ? plain : b;
  CHECK(cudaMemcpyAsync(dev, host, BUF_BYTES, cudaMemcpyHostToDevice, first));
  if (!bug) {
    if (!strcmp(name, "cudaEventRecordWithFlags"))
      CHECK(cudaEventRecordWithFlags(e, arg, cudaEventRecordDefault));
    else if (!strcmp(name, "cudaEventRecordWithFlags_ptsz"))
      CHECK(cudaEventRecordWithFlags_ptsz(e, arg, cudaEventRecordDefault));
    else if (!strcmp(name, "cudaEventRecord_ptsz"))
      CHECK(cudaEventRecord_ptsz(e, arg));
    else
      CHECK(cudaEventRecord(e, first));
    if (waits) CHECK(cudaStreamWaitEvent_ptsz(arg, e, 0));
    else CHECK(cudaStreamWaitEvent(second, e, 0));
  }
  CHECK(cudaMemcpyAsync(host, dev_b, BUF_BYTES, cudaMemcpyDeviceToHost, second));
  CHECK(cudaDeviceSynchronize());
  unsigned char got;
  CHECK(cudaMemcpy(&got, dev + BUF_BYTES / 2, 1, cudaMemcpyDeviceToHost));
  printf("device got byte 0x%02x\n", got);
  CHECK(cudaEventDestroy(e));
  CHECK(cudaStreamDestroy(b));
}

/* ---- host functions on the per-thread stream ----------------------------------------------- */
static unsigned char hostfn_seen;
static void CUDART_CB hostfn_read(void *unused) {
  (void)unused;
  hostfn_seen = ((volatile unsigned char *)host)[BUF_BYTES / 2];
}
static void CUDART_CB callback_read(cudaStream_t s, cudaError_t status, void *unused) {
  (void)s;
  (void)status;
  hostfn_read(unused);
}

/* The gate holds the copy queued on its stream until the main thread opens it, so that in "bug"
 * the reading host function on the other stream surely runs while the copy is in flight. */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_open;
static void CUDART_CB gate_wait(void *unused) {
  (void)unused;
  pthread_mutex_lock(&gate_mu);
  while (!gate_open) pthread_cond_wait(&gate_cv, &gate_mu);
  pthread_mutex_unlock(&gate_mu);
}

static void hostfn_case(int bug, int callback) {
  setup_d2h();
  CHECK(cudaLaunchHostFunc(cudaStreamPerThread, gate_wait, NULL));
  CHECK(cudaMemcpyAsync_ptsz(host, dev, BUF_BYTES, cudaMemcpyDeviceToHost, 0));
  cudaStream_t where = bug ? own : 0; /* bug: a stream with nothing ordering it after the copy */
  if (callback) CHECK(cudaStreamAddCallback_ptsz(where, callback_read, NULL, 0));
  else CHECK(cudaLaunchHostFunc_ptsz(where, hostfn_read, NULL));
  if (bug) CHECK(cudaStreamSynchronize(own)); /* the read is done, the copy still gated */
  pthread_mutex_lock(&gate_mu);
  gate_open = 1;
  pthread_cond_broadcast(&gate_cv);
  pthread_mutex_unlock(&gate_mu);
  CHECK(cudaDeviceSynchronize());
  printf("host function read byte 0x%02x\n", hostfn_seen);
}

/* ---- completion queries -------------------------------------------------------------------- */
static void query_case(int bug, const char *name) {
  cudaEvent_t e;
  CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  setup_d2h();
  unsigned char *buf;
  CHECK(cudaHostAlloc((void **)&buf, BUF_BYTES, cudaHostAllocDefault));
  CHECK(cudaMemcpyAsync(buf, dev, BUF_BYTES, cudaMemcpyDeviceToHost, plain));
  CHECK(cudaEventRecord(e, plain));
  cudaError_t q;
  int polls = 0;
  do {
    if (!strcmp(name, "cudaEventQuery")) q = cudaEventQuery(e);
    else if (ptsz) q = cudaStreamQuery_ptsz(arg);
    else q = cudaStreamQuery(arg);
    if (q != cudaSuccess && q != cudaErrorNotReady) CHECK(q);
    polls++;
    if (q == cudaErrorNotReady && !bug) usleep(1000);
  } while (q != cudaSuccess && !bug);
  printf("first answer %s, %s after %d queries\n", polls == 1 ? cudaGetErrorName(q) : "NotReady",
         q == cudaSuccess ? "complete" : "not complete", polls);
  CHECK(cudaFreeHost(buf));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaEventDestroy(e));
}

int main(int argc, char **argv) {
  int bug = e2e_is_bug(argc, argv);
  if (argc < 3) {
    fprintf(stderr, "usage: %s bug|fixed CASE (the cases are listed at the top of %s)\n", argv[0],
            __FILE__);
    return 2;
  }
  const char *name = argv[2];
  char base[64];
  snprintf(base, sizeof base, "%s", name);
  char *dot = strchr(base, '.');
  const char *dir = dot ? dot + 1 : "";
  if (dot) *dot = '\0';
  size_t n = strlen(base);
  ptsz = n > 5 && !strcmp(base + n - 5, "_ptsz");
  int d2h = strcmp(dir, "h2d") != 0;

  CHECK(cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking));
  plain = ptsz ? cudaStreamPerThread : own;
  arg = ptsz ? 0 : own;
  CHECK(cudaHostAlloc((void **)&host, BUF_BYTES, cudaHostAllocDefault));
  CHECK(cudaMalloc((void **)&dev, 2 * BUF_BYTES));

  if (!strcmp(base, "cudaMemcpy2DAsync") || !strcmp(base, "cudaMemcpy2DAsync_ptsz") ||
      !strcmp(base, "cudaMemcpy3DAsync") || !strcmp(base, "cudaMemcpy3DAsync_ptsz")) {
    int three = base[10] == '3';
    d2h ? setup_d2h() : setup_h2d();
    CHECK(three ? copy_3d(d2h) : copy_2d(d2h));
    if (!bug) sync_plain();
    if (d2h) read_probe(three ? BOX_LAST_OFF : LAST_ROW_OFF);
    else write_probe(three ? BOX_LAST_OFF : LAST_ROW_OFF, three ? BOX_LAST_DEV : LAST_ROW_DEV);
  } else if (!strcmp(base, "cudaMemcpyFromSymbolAsync") ||
             !strcmp(base, "cudaMemcpyFromSymbolAsync_ptsz")) {
    setup_d2h();
    CHECK(ptsz ? cudaMemcpyFromSymbolAsync_ptsz(host, dev, SYM_BYTES, SYM_OFF,
                                                cudaMemcpyDeviceToHost, arg)
               : cudaMemcpyFromSymbolAsync(host, dev, SYM_BYTES, SYM_OFF, cudaMemcpyDeviceToHost,
                                           arg));
    if (!bug) sync_plain();
    read_probe(SYM_PROBE);
  } else if (!strcmp(base, "cudaMemcpyToSymbolAsync") ||
             !strcmp(base, "cudaMemcpyToSymbolAsync_ptsz")) {
    setup_h2d();
    CHECK(ptsz ? cudaMemcpyToSymbolAsync_ptsz(dev, host, SYM_BYTES, SYM_OFF,
                                              cudaMemcpyHostToDevice, arg)
               : cudaMemcpyToSymbolAsync(dev, host, SYM_BYTES, SYM_OFF, cudaMemcpyHostToDevice,
                                         arg));
    if (!bug) sync_plain();
    write_probe(SYM_PROBE, SYM_OFF + SYM_PROBE);
  } else if (!strcmp(base, "cudaMemcpyBatchAsync_ptsz")) {
    setup_d2h();
    void *dsts[] = {host, host + BUF_BYTES / 2};
    const void *srcs[] = {dev, dev + BUF_BYTES / 2};
    size_t sizes[] = {BUF_BYTES / 2, BUF_BYTES / 2};
    struct cudaMemcpyAttributes attr;
    memset(&attr, 0, sizeof attr);
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    size_t attr_idx = 0;
    CHECK(cudaMemcpyBatchAsync_ptsz(dsts, srcs, sizes, 2, &attr, &attr_idx, 1, arg));
    if (!bug) sync_plain();
    read_probe(BUF_BYTES - 100);
  } else if (!strcmp(base, "cudaLaunchKernelExC") || !strcmp(base, "cudaLaunchKernelExC_ptsz") ||
             !strcmp(base, "cudaGetKernel") || !strcmp(base, "__cudaLaunchKernel_ptsz")) {
    setup_d2h();
    if (!strncmp(base, "cudaLaunchKernelExC", 19)) CHECK(launch_ex());
    else CHECK(launch_handle(!strcmp(base, "cudaGetKernel")));
    if (!bug) sync_plain();
    read_probe(BUF_BYTES - 100);
  } else if (!strcmp(base, "cudaGraphInstantiateWithFlags") ||
             !strcmp(base, "cudaGraphLaunch_ptsz")) {
    setup_d2h();
    graph_case(bug);
  } else if (!strcmp(base, "cudaEventRecordWithFlags") ||
             !strcmp(base, "cudaEventRecordWithFlags_ptsz") ||
             !strcmp(base, "cudaEventRecord_ptsz") || !strcmp(base, "cudaStreamWaitEvent_ptsz")) {
    order_case(bug, base);
  } else if (!strcmp(base, "cudaLaunchHostFunc_ptsz") ||
             !strcmp(base, "cudaStreamAddCallback_ptsz")) {
    hostfn_case(bug, base[10] == 'A');
  } else if (!strcmp(base, "cudaStreamQuery") || !strcmp(base, "cudaStreamQuery_ptsz") ||
             !strcmp(base, "cudaEventQuery")) {
    query_case(bug, base);
  } else {
    fprintf(stderr, "entry_points: unknown case %s\n", name);
    return 2;
  }

  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFreeHost(host));
  CHECK(cudaFree(dev));
  CHECK(cudaStreamDestroy(own));
  return 0;
}
