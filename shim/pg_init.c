/* pg_init.c: the preload glue. Reads options in a constructor (no CUDA call there: libcudart may
 * not even be loaded yet), starts tracking lazily on the first CUDA call that needs it, keeps the
 * per-thread reentrancy flag, takes every lock around fork, and prints the exit summary. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pg_devops_driver.h"
#include "pg_devops_runtime.h"
#include "pg_intercept.h"
#include "pg_shim.h"

/* Three-state init: calls arriving before or during it pass straight through.
 * INIT_DUPLICATE: another copy of libpinguard.so is the process's pinguard; this one stays inert. */
enum { INIT_NONE, INIT_RUNNING, INIT_READY, INIT_DUPLICATE };
static atomic_int init_state = INIT_NONE;

/* Tracking starts on the first call that wants it: 0 not yet, 1 on, -1 inert for good. */
atomic_int pg_shim_tracking_state = 0;
#define tracking_state pg_shim_tracking_state
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;

__thread bool pg_shim_inside; /* pg_intercept.h: inside pinguard */
#define inside_pinguard pg_shim_inside

/* write(2) until all of it is written (or it fails); the system call itself, not pinguard's own
 * write interposer. */
static void write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    long w = syscall(SYS_write, fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    n -= (size_t)w;
  }
}

void pg_shim_warn(const char *fmt, ...) {
  char line[1536]; /* a path (up to 512 bytes) and a sentence about it fit whole */
  int n = snprintf(line, sizeof line, "pinguard: WARNING: ");
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  va_end(ap);
  size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
  if (len > sizeof line - 2) len = sizeof line - 2;
  line[len++] = '\n';
  write_all(STDERR_FILENO, line, len);
}

/* ---- lazy start ----------------------------------------------------------------------------- */
/* The device operations of the driver, for a process without a dynamic runtime; false if the
 * driver lacks one that tracking needs. */
static bool driver_ops(pg_devops_t *ops) {
  pg_cudrv_fns_t drv = {
      .event_create = PG_REAL(cuEventCreate),
      .event_record = PG_REAL(cuEventRecord),
      .event_query = PG_REAL(cuEventQuery),
      .event_synchronize = PG_REAL(cuEventSynchronize),
      .event_destroy = PG_REAL(cuEventDestroy_v2),
      .stream_get_flags = PG_REAL(cuStreamGetFlags),
      .stream_is_capturing = PG_REAL(cuStreamIsCapturing),
      .pointer_get_attribute = PG_REAL(cuPointerGetAttribute),
      .ctx_get_device = PG_REAL(cuCtxGetDevice),
      .device_get_count = PG_REAL(cuDeviceGetCount),
      .device_get = PG_REAL(cuDeviceGet),
      .primary_ctx_retain = PG_REAL(cuDevicePrimaryCtxRetain),
      .ctx_get_current = PG_REAL(cuCtxGetCurrent),
      .ctx_set_current = PG_REAL(cuCtxSetCurrent),
      .stream_get_device = PG_REAL(cuStreamGetDevice),
  };
  if (!drv.event_create || !drv.event_record || !drv.event_query || !drv.event_synchronize ||
      !drv.event_destroy)
    return false;
  *ops = pg_devops_driver(&drv);
  return true;
}

/* The device operations: the runtime's when the process has a dynamic runtime (pinguard's own
 * work then goes where the application's runtime calls go), else the driver's. */
static bool choose_ops(pg_devops_t *ops) {
  if (!pg_real_quiet(PG_HOOK_ID_cudaRuntimeGetVersion) && pg_real_quiet(PG_HOOK_ID_cuEventCreate))
    return driver_ops(ops);
  if (!pg_resolve_required()) return false;
  pg_cudart_fns_t rt = {
      .event_create_with_flags = PG_REAL(cudaEventCreateWithFlags),
      .event_record = PG_REAL(cudaEventRecord),
      .event_query = PG_REAL(cudaEventQuery),
      .event_synchronize = PG_REAL(cudaEventSynchronize),
      .event_destroy = PG_REAL(cudaEventDestroy),
      .stream_get_flags = PG_REAL(cudaStreamGetFlags),
      .stream_is_capturing = PG_REAL(cudaStreamIsCapturing),
      .pointer_get_attributes = PG_REAL(cudaPointerGetAttributes),
      .get_device = PG_REAL(cudaGetDevice),
      .get_device_count = PG_REAL(cudaGetDeviceCount),
      .set_device = PG_REAL(cudaSetDevice),
      .stream_get_device = PG_REAL(cudaStreamGetDevice),
  };
  *ops = pg_devops_runtime(&rt);
  return true;
}

static bool start_tracking(void) {
  pg_shim_check_static_runtimes(); /* objects dlopen()ed since start-up */
  pg_devops_t ops;
  if (!choose_ops(&ops)) return false;
  /* The fault handler goes in before the first page can be protected. */
  bool single_steps;
  if (pg_engine_guards(&single_steps)) pg_signal_install(single_steps);
  return pg_engine_start(&ops);
}

bool pg_shim_start_tracking_slow(void) {
  if (inside_pinguard) return false;
  if (atomic_load_explicit(&init_state, memory_order_acquire) != INIT_READY) return false;
  int t = atomic_load_explicit(&tracking_state, memory_order_acquire);
  if (t != 0) return t > 0;
  if (pg_engine_off()) {
    atomic_store(&tracking_state, -1);
    return false;
  }
  /* First tracked call: resolve and start once, with the reentrancy flag held so that nothing
   * the start does is itself tracked. */
  pthread_mutex_lock(&start_lock);
  if (atomic_load(&tracking_state) == 0) {
    pg_reentry_t g = pg_shim_enter();
    bool ok = start_tracking();
    pg_shim_leave(g);
    if (!ok) pg_shim_warn("pinguard stays inert in this process: every call is forwarded");
    atomic_store_explicit(&tracking_state, ok ? 1 : -1, memory_order_release);
  }
  pthread_mutex_unlock(&start_lock);
  return atomic_load_explicit(&tracking_state, memory_order_acquire) > 0;
}

bool pg_shim_tracking(void) {
  return !inside_pinguard && atomic_load_explicit(&tracking_state, memory_order_acquire) > 0;
}

/* ---- fork: every lock is taken before and released after, in both processes ----------------- */
static void atfork_prepare(void) {
  pthread_mutex_lock(&start_lock);
  pg_engine_atfork_prepare();
}
static void atfork_parent(void) {
  pg_engine_atfork_parent();
  pthread_mutex_unlock(&start_lock);
}
static void atfork_child(void) {
  pg_engine_atfork_child(); /* the child has no GPU work in flight */
  pthread_mutex_unlock(&start_lock);
}

/* ---- constructor and exit ------------------------------------------------------------------- */
/* One pinguard per process. Two copies under different paths (two builds in LD_PRELOAD, one
 * preloaded and one dlopen'ed) would each print a banner and a summary, and the first copy's
 * "real" functions would resolve to the second copy's wrappers. The copy the process's symbol
 * lookup binds pinguard_release to is the pinguard; any other stays inert, forwarding every call. */
static bool another_copy_is_first(void) {
  Dl_info mine, bound;
  void *global = dlsym(RTLD_DEFAULT, "pinguard_release");
  if (!global || !dladdr((void *)&another_copy_is_first, &mine) || !dladdr(global, &bound))
    return false; /* not globally visible (dlopen'ed RTLD_LOCAL): nothing to defer to */
  if (mine.dli_fbase == bound.dli_fbase) return false;
  pg_shim_warn("libpinguard.so is loaded twice: %s is active, %s stays inert",
               bound.dli_fname ? bound.dli_fname : "?", mine.dli_fname ? mine.dli_fname : "?");
  return true;
}

__attribute__((constructor)) static void pg_shim_init(void) {
  int expected = INIT_NONE;
  if (!atomic_compare_exchange_strong(&init_state, &expected, INIT_RUNNING)) return;
  if (another_copy_is_first()) {
    atomic_store_explicit(&init_state, INIT_DUPLICATE, memory_order_release);
    return;
  }
  pg_reentry_t g = pg_shim_enter();
  pg_engine_init(); /* options: defaults < __pinguard_default_options < PINGUARD_OPTIONS */
  /* A static runtime's calls never reach pinguard: the first chance to say so is now. */
  if (!pg_engine_off()) pg_shim_check_static_runtimes();
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
  pg_shim_leave(g);
  atomic_store_explicit(&init_state, INIT_READY, memory_order_release);
}

__attribute__((destructor)) static void pg_shim_fini(void) {
  if (atomic_load(&init_state) != INIT_READY) return;
  pg_reentry_t g = pg_shim_enter();
  if (!pg_engine_off()) pg_shim_check_static_runtimes(); /* dlopen()ed */
  int status = pg_engine_finish(); /* prints the summary; non-negative: exit with this status */
  pg_shim_leave(g);
  if (status >= 0) {
    /* As the sanitizers do: the reported errors decide the status. Flush what the program
     * buffered, since _exit skips the rest of exit(). */
    fflush(NULL);
    _exit(status);
  }
}
