/* fz_gate.c: libpgfuzz_gate.so, the fuzzer's stream gates. A gate is a host function that holds
 * its stream until the gates are opened: a slow device, as far as pinguard can tell. It is
 * enqueued with the driver's own cuLaunchHostFunc, found with the C library's dlsym in
 * libcuda's scope, so pinguard never sees it: its start teaches pinguard's host clock nothing
 * (a host function the program enqueues does), and the gates change when work runs, never what
 * is ordered. They hold work back so that enforce mode has running work to wait for, and so
 * that the fuzzer knows for certain that a host function behind a closed gate has not started.
 * Every call that can block on queued work (frees, unregistrations, stream, event and device
 * syncs: the application's and pinguard's own) opens every gate first, so nothing ever waits on
 * a closed gate.
 *
 * The library sits between pinguard and simcuda: the fuzzer links it before libcudart, so
 * pinguard's RTLD_NEXT lookup of a real function finds these definitions (carrying libcudart's
 * version node) first. pinguard's checks therefore run while the gates are still closed, and
 * each definition here opens them before it forwards to simcuda. Opening is an atomic store and
 * a futex wake: safe from pinguard's fault handler. A closed gate's host function sleeps on that
 * futex (polling instead cost a system call every 20 us per held stream, most of the fuzzer's
 * CPU time). */
#include <dlfcn.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime_api.h>

#include "fz_gate.h"

static atomic_uint_fast64_t g_last;    /* id of the latest gate made */
static atomic_uint_fast64_t g_opened;  /* gates with an id up to this are open */
static _Atomic uint32_t g_openings;    /* the futex: bumped after each opening that opened some */
/* Openings begun and done: an opening counts in g_begun before it opens anything and in g_done
 * after, so an op that reads g_done when it starts and g_begun when it ends (equal: no opening
 * overlapped it) never misses one that a preempted opener was halfway through. */
static atomic_uint_fast64_t g_begun;
static atomic_uint_fast64_t g_done;
/* The calling thread's own share of both (initial-exec: read from pinguard's fault handler too). */
static __thread __attribute__((tls_model("initial-exec"))) uint64_t t_begun, t_done;

uint64_t fz_gate_new(void) { return atomic_fetch_add(&g_last, 1) + 1; }

void fz_gate_open_all(void) {
  t_begun++;
  atomic_fetch_add(&g_begun, 1);
  uint64_t last = atomic_load(&g_last);
  uint64_t cur = atomic_load(&g_opened);
  while (cur < last && !atomic_compare_exchange_weak(&g_opened, &cur, last)) {
  }
  if (cur < last) {
    atomic_fetch_add(&g_openings, 1);
    syscall(SYS_futex, &g_openings, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
  }
  atomic_fetch_add(&g_done, 1);
  t_done++;
}

uint64_t fz_gate_opened(void) { return atomic_load(&g_opened); }
uint64_t fz_gate_others_done(void) { return atomic_load(&g_done) - t_done; }
uint64_t fz_gate_others_begun(void) { return atomic_load(&g_begun) - t_begun; }

/* Sleeps until gate id opens: the futex word is read before the gate, so an opening between the
 * two makes the wait return at once. Each wait is bounded (10 ms) all the same. */
void fz_gate_wait(uint64_t id) {
  for (;;) {
    uint32_t seen = atomic_load(&g_openings);
    if (atomic_load(&g_opened) >= id) return;
    struct timespec ts = {0, 10000000};
    syscall(SYS_futex, &g_openings, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
  }
}

static void gate_body(void *user) { fz_gate_wait((uint64_t)(uintptr_t)user); }

/* The driver's cuLaunchHostFunc, as libcuda itself defines it: looked up with the C library's
 * dlsym (pinguard defines dlsym, and answers a lookup of a driver name with its wrapper) on
 * libcuda's handle (whose scope has no preloaded object). */
typedef int (*launch_fn)(void *stream, void (*fn)(void *), void *user);
static launch_fn driver_launch(void) {
  static _Atomic(launch_fn) fn;
  launch_fn f = atomic_load(&fn);
  if (f) return f;
  void *(*libc_dlsym)(void *, const char *) =
      (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (!libc_dlsym)
    libc_dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!libc_dlsym || !h) return NULL;
  f = (launch_fn)libc_dlsym(h, "cuLaunchHostFunc");
  atomic_store(&fn, f);
  return f;
}

int fz_gate_launch(void *stream, uint64_t id) {
  launch_fn f = driver_launch();
  return f ? f(stream, gate_body, (void *)(uintptr_t)id) : -1;
}

static void *real(const char *name) {
  void *fn = dlvsym(RTLD_NEXT, name, "libcudart.so.13");
  return fn ? fn : dlsym(RTLD_NEXT, name);
}

#define FZ_FORWARD1(name, T1)                                                   \
  cudaError_t name(T1 a) {                                                      \
    static cudaError_t (*fn)(T1);                                               \
    if (!fn) fn = (cudaError_t(*)(T1))real(#name);                              \
    fz_gate_open_all();                                                         \
    return fn ? fn(a) : cudaErrorSharedObjectSymbolNotFound;                    \
  }

FZ_FORWARD1(cudaFreeHost, void *)
FZ_FORWARD1(cudaHostUnregister, void *)
FZ_FORWARD1(cudaStreamSynchronize, cudaStream_t)
FZ_FORWARD1(cudaStreamSynchronize_ptsz, cudaStream_t)
FZ_FORWARD1(cudaEventSynchronize, cudaEvent_t)

cudaError_t cudaDeviceSynchronize(void) {
  static cudaError_t (*fn)(void);
  if (!fn) fn = (cudaError_t(*)(void))real("cudaDeviceSynchronize");
  fz_gate_open_all();
  return fn ? fn() : cudaErrorSharedObjectSymbolNotFound;
}
