/* driver_dlopen.c: a program that reaches simcuda's driver the way cuda-python does: it is not
 * linked against libcuda.so.1; it dlopens it, dlsym's cuGetProcAddress_v2 alone, and takes every
 * other driver function from that, the per-thread-default-stream variants by flag (and the
 * simcuda-only simcuda_register_kernel and simcuda_dma, by dlsym on the same handle). Four threads
 * each copy host to device to host through their per-thread stream (handle 0 under the _ptsz
 * functions), launch a registered kernel and a host function, order work with an event, and check
 * every byte. Criterion-free, so it runs in the ThreadSanitizer build too. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cudaTypedefs.h>
#include <simcuda_kernel.h>

#define NTHREADS 4
#define N (1 << 16)

static PFN_cuGetProcAddress_v12000 gpa;
static int g_failures;

#define FAIL(...)                                 \
  do {                                            \
    fprintf(stderr, "driver_dlopen: " __VA_ARGS__); \
    fputc('\n', stderr);                          \
    __atomic_add_fetch(&g_failures, 1, __ATOMIC_RELAXED); \
  } while (0)

#define CALL(expr)                                                      \
  do {                                                                  \
    CUresult r_ = (expr);                                               \
    if (r_ != CUDA_SUCCESS) FAIL("%s failed: %d", #expr, (int)r_);      \
  } while (0)

static void *get(const char *name, cuuint64_t flags) {
  void *fn = NULL;
  CUdriverProcAddressQueryResult st;
  if (gpa(name, &fn, 13000, flags, &st) != CUDA_SUCCESS || st != CU_GET_PROC_ADDRESS_SUCCESS || !fn)
    FAIL("cuGetProcAddress(%s, flags %llu) failed", name, (unsigned long long)flags);
  return fn;
}

#define PT CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
static struct {
  PFN_cuInit_v2000 init;
  PFN_cuMemHostAlloc_v2020 hostAlloc;
  PFN_cuMemFreeHost_v2000 freeHost;
  PFN_cuMemAlloc_v3020 memAlloc;
  PFN_cuMemFree_v3020 memFree;
  PFN_cuMemcpyHtoDAsync_v7000_ptsz htod;
  PFN_cuMemcpyDtoHAsync_v7000_ptsz dtoh;
  PFN_cuStreamSynchronize_v7000_ptsz sync;
  PFN_cuEventCreate_v2000 eventCreate;
  PFN_cuEventRecord_v7000_ptsz eventRecord;
  PFN_cuEventSynchronize_v2000 eventSync;
  PFN_cuEventDestroy_v4000 eventDestroy;
  PFN_cuLaunchHostFunc_v10000_ptsz hostFunc;
  PFN_cuLaunchKernel_v7000_ptsz launch;
  PFN_cuLibraryLoadData_v12000 libLoad;
  PFN_cuLibraryGetKernel_v12000 libKernel;
  PFN_cuLibraryUnload_v12000 libUnload;
} d;

static void *(*g_dma)(const void *); /* simcuda_dma, from the same handle */

static void xor_body(const simcuda_launch_t *l) {
  unsigned char *p = g_dma(*(void **)l->args[0]);
  unsigned char x = *(unsigned char *)l->args[1];
  size_t n = *(size_t *)l->args[2];
  for (size_t i = 0; i < n; i++) p[i] ^= x;
}

static CUfunction g_xor;

static void count_done(void *p) { __atomic_add_fetch((int *)p, 1, __ATOMIC_RELAXED); }

static void *worker(void *arg) {
  int id = (int)(intptr_t)arg;
  unsigned char *h = NULL;
  CUdeviceptr dev = 0;
  CUevent ev;
  int done = 0;
  CALL(d.hostAlloc((void **)&h, N, 0));
  CALL(d.memAlloc(&dev, N));
  CALL(d.eventCreate(&ev, CU_EVENT_DISABLE_TIMING));
  for (int round = 0; round < 8; round++) {
    unsigned char v = (unsigned char)(id * 16 + round);
    memset(h, v, N);
    /* Handle 0 with the _ptsz functions: this thread's per-thread stream. */
    CALL(d.htod(dev, h, N, NULL));
    void *dp = (void *)dev;
    unsigned char x = 0xff;
    size_t n = N;
    void *args[] = {&dp, &x, &n};
    CALL(d.launch(g_xor, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    CALL(d.dtoh(h, dev, N, NULL));
    CALL(d.hostFunc(NULL, count_done, &done));
    CALL(d.eventRecord(ev, NULL));
    CALL(d.eventSync(ev));
    for (size_t i = 0; i < N; i += 97)
      if (h[i] != (unsigned char)~v) {
        FAIL("thread %d round %d: byte %zu is %d, want %d", id, round, i, h[i], (unsigned char)~v);
        break;
      }
  }
  CALL(d.sync(NULL));
  if (__atomic_load_n(&done, __ATOMIC_RELAXED) != 8) FAIL("thread %d: %d host functions ran", id, done);
  CALL(d.eventDestroy(ev));
  CALL(d.memFree(dev));
  CALL(d.freeHost(h));
  return NULL;
}

int main(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "driver_dlopen: %s\n", dlerror());
    return 1;
  }
  gpa = (PFN_cuGetProcAddress_v12000)dlsym(lib, "cuGetProcAddress_v2");
  cudaError_t (*reg)(simcuda_kernel_fn, const char *, size_t, const size_t *) =
      (cudaError_t (*)(simcuda_kernel_fn, const char *, size_t, const size_t *))dlsym(
          lib, "simcuda_register_kernel");
  g_dma = (void *(*)(const void *))dlsym(lib, "simcuda_dma");
  if (!gpa || !reg || !g_dma) {
    fprintf(stderr, "driver_dlopen: missing cuGetProcAddress_v2 or a simcuda_* name\n");
    return 1;
  }
  d.init = get("cuInit", 0);
  d.hostAlloc = get("cuMemHostAlloc", 0);
  d.freeHost = get("cuMemFreeHost", 0);
  d.memAlloc = get("cuMemAlloc", 0);
  d.memFree = get("cuMemFree", 0);
  d.htod = get("cuMemcpyHtoDAsync", PT);
  d.dtoh = get("cuMemcpyDtoHAsync", PT);
  d.sync = get("cuStreamSynchronize", PT);
  d.eventCreate = get("cuEventCreate", 0);
  d.eventRecord = get("cuEventRecord", PT);
  d.eventSync = get("cuEventSynchronize", 0);
  d.eventDestroy = get("cuEventDestroy", 0);
  d.hostFunc = get("cuLaunchHostFunc", PT);
  d.launch = get("cuLaunchKernel", PT);
  d.libLoad = get("cuLibraryLoadData", 0);
  d.libKernel = get("cuLibraryGetKernel", 0);
  d.libUnload = get("cuLibraryUnload", 0);
  if (g_failures) return 1;
  /* The _ptsz pointers are the per-thread variants, not the legacy-stream ones. */
  if ((void *)d.htod != dlsym(lib, "cuMemcpyHtoDAsync_v2_ptsz")) FAIL("htod is not the _ptsz variant");
  CALL(d.init(0));
  static const size_t sizes[] = {sizeof(void *), sizeof(unsigned char), sizeof(size_t)};
  if (reg(xor_body, "xor_kernel", 3, sizes) != cudaSuccess) FAIL("registration failed");
  CUlibrary l;
  CALL(d.libLoad(&l, "any image", NULL, NULL, 0, NULL, NULL, 0));
  CALL(d.libKernel((CUkernel *)&g_xor, l, "xor_kernel"));
  pthread_t t[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
  for (int i = 0; i < NTHREADS; i++) pthread_join(t[i], NULL);
  CALL(d.libUnload(l));
  if (g_failures) return 1;
  printf("driver_dlopen: %d threads, every byte right\n", NTHREADS);
  return 0;
}
