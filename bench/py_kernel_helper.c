/* py_kernel_helper.c: the C side of `bench/py_launch.py --kernel P`. A kernel with P pointer
 * parameters, every one a device pointer (none points into pinned memory), launched with
 * cudaLaunchKernel on a non-blocking stream: the launch a serving engine makes thousands of
 * times per step from Python, and which pinguard tracks nothing for. With pyk_setup_ex's flags:
 * the first parameter a pointer into a pinned buffer instead (a launch pinguard tracks: a stack
 * with the caller's Python frames, a completion event), an event recorded after each launch
 * (the baseline pinguard's completion event is measured against, as bench_launch's
 * --record-event), and a gate at the head of each batch (bench_launch's --gate: the stream
 * waits behind a host function until the batch is enqueued). Built as a shared library
 * (libbench_pykernel.so) that Python loads through ctypes. */
#include <cuda_runtime_api.h>
#include <pthread.h>

#include "simcuda_kernel.h"

#define PYK_MAX_PARAMS 64
enum { PYK_PINNED = 1, PYK_RECORD = 2, PYK_GATE = 4, PYK_SMALL = 8 };

static void empty_kernel(const simcuda_launch_t *launch) { (void)launch; }

static cudaStream_t stream;
static cudaEvent_t event;
static void *vals[PYK_MAX_PARAMS], *args[PYK_MAX_PARAMS], *host;
static int flags;
static unsigned long launched, pages;

static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int open;
} gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 1};

static void CUDART_CB gate_wait(void *arg) {
  (void)arg;
  pthread_mutex_lock(&gate.mu);
  while (!gate.open) pthread_cond_wait(&gate.cv, &gate.mu);
  pthread_mutex_unlock(&gate.mu);
}

static void gate_set(int open) {
  pthread_mutex_lock(&gate.mu);
  gate.open = open;
  pthread_cond_broadcast(&gate.cv);
  pthread_mutex_unlock(&gate.mu);
}

/* Registers the kernel with P pointer parameters and allocates their device buffers (and with
 * PYK_PINNED a 256 KiB pinned buffer, the first parameter pointing at the next of its 64 pages
 * at each launch, as bench_launch's; with PYK_SMALL too, 32 KiB and 8 pages: under pinguard's
 * default guard_min_bytes, so no guard pages). Returns 0, or -1 for a P out of range, or the
 * failing call's CUDA error. */
int pyk_setup_ex(int params, int options) {
  if (params < 1 || params > PYK_MAX_PARAMS) return -1;
  flags = options;
  size_t sizes[PYK_MAX_PARAMS] = {0};
  for (int i = 0; i < params; i++) sizes[i] = sizeof(void *);
  cudaError_t e = simcuda_register_kernel(empty_kernel, "py_empty_kernel", (size_t)params, sizes);
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  for (int i = 0; i < params && e == cudaSuccess; i++) {
    e = cudaMalloc(&vals[i], 4096);
    args[i] = &vals[i];
  }
  pages = flags & PYK_SMALL ? 8 : 64;
  if (e == cudaSuccess && (flags & PYK_PINNED))
    e = cudaHostAlloc(&host, 4096 * pages, cudaHostAllocDefault);
  if (e == cudaSuccess && (flags & PYK_RECORD))
    e = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
  return (int)e;
}

int pyk_setup(int params) { return pyk_setup_ex(params, 0); }

int pyk_launch(void) {
  if (flags & PYK_PINNED) vals[0] = (char *)host + (launched++ % pages) * 4096;
  cudaError_t e = cudaLaunchKernel((const void *)empty_kernel, (dim3){1, 1, 1}, (dim3){32, 1, 1},
                                   args, 0, stream);
  if (e == cudaSuccess && (flags & PYK_RECORD)) e = cudaEventRecord(event, stream);
  return (int)e;
}

/* The head of a batch: with PYK_GATE, the stream waits behind the gate until pyk_sync. */
int pyk_begin(void) {
  if (!(flags & PYK_GATE)) return 0;
  gate_set(0);
  return (int)cudaLaunchHostFunc(stream, gate_wait, NULL);
}

int pyk_sync(void) {
  if (flags & PYK_GATE) gate_set(1);
  return (int)cudaStreamSynchronize(stream);
}
