/* test_fault_alloc.c: nothing the fault path reaches allocates or frees. The program defines
 * malloc, calloc, realloc, free and the aligned allocators itself (forwarding to glibc's), and
 * they abort while this thread is inside its SIGSEGV handler. The handler does what the shim's
 * (shim/pg_signal.c) does: it describes the fault and calls pg_on_fault, which claims it,
 * switches to pinguard's own stack, settles (enforce: waits; audit: reports; the fault stack
 * unwound for a report), retires what completed, and opens the page. Several threads, each on its own stream of the simulated runtime, copy
 * from their guarded buffers and touch them, both while the copies are in flight (a conflict)
 * and after they completed but before anything retired them (a benign fault that retires them,
 * from the handler). Sixteen distinct starts per region exercise the in-flight set's sorted
 * array and its hash; fresh streams exercise the event pools' first growth.
 *   unit_fault_alloc audit|enforce
 * Sanitizer builds keep their own allocator: there the program runs the same faults without the
 * allocator check. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "pg_engine.h"
#include "pg_devops_runtime.h"
#include "sim_runtime_fns.h"
#include "pg_policy.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CHECK_ALLOC 0
#else
#define CHECK_ALLOC 1
#endif

static __thread int t_in_fault;
static atomic_long g_faults, g_checked_allocs;

#if CHECK_ALLOC
/* ---- the allocator: glibc's, refused inside the fault handler ---------------------------- */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

static void refuse(const char *what) {
  if (!t_in_fault) {
    atomic_fetch_add_explicit(&g_checked_allocs, 1, memory_order_relaxed);
    return;
  }
  static const char pre[] = "FAIL: the fault handler called ";
  ssize_t r = write(2, pre, sizeof pre - 1);
  r = write(2, what, strlen(what));
  r = write(2, "\n", 1);
  (void)r;
  abort();
}

void *malloc(size_t n) {
  refuse("malloc");
  return __libc_malloc(n);
}
void *calloc(size_t k, size_t n) {
  refuse("calloc");
  return __libc_calloc(k, n);
}
void *realloc(void *p, size_t n) {
  refuse("realloc");
  return __libc_realloc(p, n);
}
void free(void *p) {
  if (p) refuse("free");
  __libc_free(p);
}
void *memalign(size_t a, size_t n) {
  refuse("memalign");
  return __libc_memalign(a, n);
}
void *aligned_alloc(size_t a, size_t n) {
  refuse("aligned_alloc");
  return __libc_memalign(a, n);
}
int posix_memalign(void **out, size_t a, size_t n) {
  refuse("posix_memalign");
  void *p = __libc_memalign(a, n);
  if (!p) return 12; /* ENOMEM */
  *out = p;
  return 0;
}
#endif

/* ---- the handler ---------------------------------------------------------------------------- */
static void on_fault(int sig, siginfo_t *info, void *uctx) {
  ucontext_t *uc = uctx;
  const greg_t *r = uc->uc_mcontext.gregs;
  pg_fault_t f = {.kind = PG_FAULT_ACCESS,
                  .hardware = info->si_code > 0,
                  .access_error = sig == SIGSEGV && info->si_code == SEGV_ACCERR,
                  .is_write = (r[REG_ERR] & 2) != 0,
                  .addr = (uintptr_t)info->si_addr,
                  .pc = (void *)r[REG_RIP],
                  .fp = (void *)r[REG_RBP],
                  .sp = (void *)r[REG_RSP],
                  .context = uc};
  t_in_fault = 1;
  pg_fault_action_t action = pg_on_fault(&f);
  t_in_fault = 0;
  if (action != PG_FAULT_RETRY) {
    static const char msg[] = "FAIL: a fault on a page pinguard does not guard\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(3);
  }
  atomic_fetch_add_explicit(&g_faults, 1, memory_order_relaxed);
}

/* ---- the workload --------------------------------------------------------------------------- */
#define THREADS 4
#define ROUNDS 40
#define SPANS 16
#define SPAN_BYTES (16 * 4096)

static void die(const char *what) {
  fprintf(stderr, "FAIL: %s\n", what);
  exit(1);
}

static void copies(cudaStream_t s, char *buf, void *dev, pg_dir_t dir) {
  for (int i = 0; i < SPANS; i++) {
    char *p = buf + (size_t)i * SPAN_BYTES;
    cudaError_t e = dir == PG_DIR_READ
                        ? cudaMemcpyAsync(dev, p, SPAN_BYTES, cudaMemcpyHostToDevice, s)
                        : cudaMemcpyAsync(p, dev, SPAN_BYTES, cudaMemcpyDeviceToHost, s);
    if (e != cudaSuccess) die("cudaMemcpyAsync");
    pg_op_t op = {.api = "cudaMemcpyAsync", .what = "copy", .stream = s, .nspans = 1};
    op.spans[0] = (pg_span_t){.p = p, .n = SPAN_BYTES, .dir = dir};
    pg_on_op_begin(&op);
    pg_on_op_end(&op);
  }
}

static void touch(char *buf, bool write) {
  for (int i = 0; i < SPANS; i++) {
    volatile char *p = buf + (size_t)i * SPAN_BYTES + 100;
    if (write) *p = (char)i;
    else (void)*p;
  }
}

static void sync_stream(cudaStream_t s) {
  pg_on_sync_begin(s);
  bool ok = cudaStreamSynchronize(s) == cudaSuccess;
  pg_on_sync_end(ok);
  if (!ok) die("cudaStreamSynchronize");
}

static void *worker(void *arg) {
  (void)arg;
  cudaStream_t s;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) die("stream");
  size_t n = (size_t)SPANS * SPAN_BYTES;
  char *buf = NULL;
  void *dev = NULL;
  if (cudaHostAlloc((void **)&buf, n, cudaHostAllocDefault) != cudaSuccess) die("cudaHostAlloc");
  if (cudaMalloc(&dev, SPAN_BYTES) != cudaSuccess) die("cudaMalloc");
  pg_on_pin(buf, n, PG_PIN_HOST_ALLOC, 0, NULL);
  struct timespec later = {0, 8 * 1000 * 1000}; /* beyond the copies' latency */
  for (int round = 0; round < ROUNDS; round++) {
    /* While in flight: device reads against CPU writes, device writes against CPU reads. */
    copies(s, buf, dev, PG_DIR_READ);
    touch(buf, true);
    sync_stream(s);
    copies(s, buf, dev, PG_DIR_WRITE);
    touch(buf, false);
    sync_stream(s);
    /* Completed but not retired: the fault finds no conflict and retires them itself. */
    copies(s, buf, dev, round % 2 ? PG_DIR_WRITE : PG_DIR_READ);
    nanosleep(&later, NULL);
    touch(buf, true);
    sync_stream(s);
  }
  cudaFree(dev);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 2 || (strcmp(argv[1], "audit") && strcmp(argv[1], "enforce"))) {
    fprintf(stderr, "usage: %s audit|enforce\n", argv[0]);
    return 2;
  }
  char opts[128];
  snprintf(opts, sizeof opts, "mode=%s:guard=1:guard_min_bytes=4096:print_summary=0", argv[1]);
  pg_policy_configure(NULL, opts);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, NULL);
  sigaction(SIGBUS, &sa, NULL);
  pg_cudart_fns_t rt = sim_runtime_fns();
  pg_devops_t ops = pg_devops_runtime(&rt);
  if (!pg_engine_start(&ops)) die("pg_engine_start");

  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, worker, NULL);
  for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);

  long faults = atomic_load(&g_faults);
  /* Every round's first in-flight touch faults at least (a wait or a retirement may open the
   * other pages before they are touched). */
  if (faults < (long)THREADS * ROUNDS) {
    fprintf(stderr, "FAIL: only %ld faults\n", faults);
    return 1;
  }
  if (CHECK_ALLOC && atomic_load(&g_checked_allocs) == 0) die("the allocator is not this one");
  printf("ok: %ld faults (%s), no allocation inside the handler%s\n", faults, argv[1],
         CHECK_ALLOC ? "" : " (not checked: sanitizer build)");
  return 0;
}
