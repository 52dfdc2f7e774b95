/* Intent: an access the program never ordered is reported even when the GPU work has certainly
 * finished. Each shape enqueues its GPU work, then sleeps with no CUDA call (run at
 * SIMCUDA_LATENCY_US=0, the work is long done when the sleep ends), then does the harmful thing.
 * Only the program's own synchronization orders GPU work before the host; pinguard's own
 * completion polls order nothing, so every "bug" run reports and every "fixed" twin, which
 * synchronizes the way the shape calls for, reports nothing.
 *   d2h_read     a CPU read of the destination of a device->host copy (guard pages)
 *   h2d_write    a CPU write to the source of a host->device copy (guard pages)
 *   free_host    cudaFreeHost of a device->host copy's destination
 *   unregister   cudaHostUnregister of a registered device->host copy's destination
 *   pool_reuse   a tiny caching pool hands a block out again while the copy into it is
 *                unordered, and its new owner writes it (fixed: the pool records an event at
 *                release and synchronizes it before handing the block out, as torch's does)
 *   other_stream a host->device copy on a second stream reads what a copy on the first stream
 *                wrote (fixed: an event recorded on the first stream, waited on by the second)
 *   kernel_ptr   a CPU read of a buffer a kernel wrote through a raw host pointer
 *   hostfn_cond  the main thread reads after waiting on a condition variable: fixed, a host
 *                function queued behind the copy signals it (the host function's position in
 *                its stream orders the copy, and the host's clock is process-wide); bug, a plain
 *                thread signals it after a sleep, which orders nothing
 * Usage: bug|fixed SHAPE [sleep_ms]. Prints "SHAPE done: byte 0xNN" (the byte the CPU saw, or
 * the device got) on success. */
// LIST: finished_env ${GUARD_ENV} SIMCUDA_LATENCY_US=0
// SCENARIO: finished.d2h_read cpu-read-during-device-write ARGS d2h_read ENV ${finished_env}
// SCENARIO: finished.h2d_write cpu-write-during-device-access ARGS h2d_write ENV ${finished_env}
// SCENARIO: finished.free_host free-during-device-access ARGS free_host ENV ${finished_env}
// SCENARIO: finished.unregister unregister-during-device-access ARGS unregister ENV ${finished_env}
// SCENARIO: finished.pool_reuse cpu-write-during-device-access ARGS pool_reuse ENV ${finished_env}
// SCENARIO: finished.other_stream device-access-conflict ARGS other_stream ENV ${finished_env}
// SCENARIO: finished.kernel_ptr cpu-read-during-device-write ARGS kernel_ptr ENV ${finished_env}
// SCENARIO: finished.hostfn_cond cpu-read-during-device-write ARGS hostfn_cond ENV ${finished_env}

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"

static int sleep_ms = 100;

/* Sleeps with no CUDA call: whatever was enqueued has finished, and nothing ordered it. */
static void settle(void) {
  struct timespec ts = {sleep_ms / 1000, (long)(sleep_ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

typedef struct env {
  cudaStream_t s, s2;
  unsigned char *dev;
} env_t;

/* Fills dev with `value` and enqueues a device->host copy of it into host, on e->s. */
static void d2h(env_t *e, void *host, unsigned char value) {
  CHECK(cudaMemsetAsync(e->dev, value, BUF_BYTES, e->s));
  CHECK(cudaMemcpyAsync(host, e->dev, BUF_BYTES, cudaMemcpyDeviceToHost, e->s));
}

static unsigned char device_byte(env_t *e) {
  unsigned char b = 0;
  CHECK(cudaMemcpy(&b, e->dev + BUF_BYTES / 2, 1, cudaMemcpyDeviceToHost));
  return b;
}

static unsigned char shape_d2h_read(env_t *e, int bug) {
  unsigned char *host, check;
  CHECK(cudaHostAlloc((void **)&host, BUF_BYTES, cudaHostAllocDefault));
  d2h(e, host, 0x5a);
  if (!bug) CHECK(cudaStreamSynchronize(e->s));
  settle();
  check = host[BUF_BYTES / 2]; /* the serializer's read */
  CHECK(cudaStreamSynchronize(e->s));
  CHECK(cudaFreeHost(host));
  return check;
}

static unsigned char shape_h2d_write(env_t *e, int bug) {
  unsigned char *host;
  CHECK(cudaHostAlloc((void **)&host, BUF_BYTES, cudaHostAllocDefault));
  memset(host, 0x11, BUF_BYTES);
  CHECK(cudaMemcpyAsync(e->dev, host, BUF_BYTES, cudaMemcpyHostToDevice, e->s));
  if (!bug) CHECK(cudaStreamSynchronize(e->s));
  settle();
  memset(host, 0x22, BUF_BYTES); /* the next user's overwrite */
  CHECK(cudaStreamSynchronize(e->s));
  CHECK(cudaFreeHost(host));
  return device_byte(e);
}

static unsigned char shape_free_host(env_t *e, int bug) {
  void *host;
  CHECK(cudaHostAlloc(&host, BUF_BYTES, cudaHostAllocDefault));
  d2h(e, host, 0x5a);
  if (!bug) CHECK(cudaStreamSynchronize(e->s));
  settle();
  CHECK(cudaFreeHost(host));
  CHECK(cudaStreamSynchronize(e->s));
  return 0x5a;
}

static unsigned char shape_unregister(env_t *e, int bug) {
  void *host = aligned_alloc(4096, BUF_BYTES);
  if (!host) exit(2);
  CHECK(cudaHostRegister(host, BUF_BYTES, cudaHostRegisterDefault));
  d2h(e, host, 0x5a);
  if (!bug) CHECK(cudaStreamSynchronize(e->s));
  settle();
  CHECK(cudaHostUnregister(host));
  CHECK(cudaStreamSynchronize(e->s));
  unsigned char b = ((unsigned char *)host)[BUF_BYTES / 2];
  free(host);
  return b;
}

/* ---- a tiny caching pool of pinned blocks: a LIFO free list, one block size --------------- */
#define POOL_BLOCKS 2
typedef struct pool {
  void *free_list[POOL_BLOCKS];
  cudaEvent_t done[POOL_BLOCKS]; /* fixed pool: recorded at release, synchronized before reuse */
  int nfree;
  int use_events;
} pool_t;

static void pool_init(pool_t *p, int use_events) {
  p->use_events = use_events;
  p->nfree = 0;
  for (int i = 0; i < POOL_BLOCKS; i++) {
    CHECK(cudaHostAlloc(&p->free_list[i], BUF_BYTES, cudaHostAllocDefault));
    CHECK(cudaEventCreateWithFlags(&p->done[i], cudaEventDisableTiming));
    p->nfree++;
  }
}

static void *pool_get(pool_t *p) {
  if (p->nfree == 0) exit(2);
  p->nfree--;
  if (p->use_events) CHECK(cudaEventSynchronize(p->done[p->nfree]));
  return p->free_list[p->nfree];
}

/* Gives a block back; s is the stream that last used it. */
static void pool_put(pool_t *p, void *block, cudaStream_t s) {
  if (p->use_events) CHECK(cudaEventRecord(p->done[p->nfree], s));
  p->free_list[p->nfree++] = block;
}

static void pool_destroy(pool_t *p) {
  for (int i = 0; i < p->nfree; i++) {
    CHECK(cudaEventSynchronize(p->done[i]));
    CHECK(cudaFreeHost(p->free_list[i]));
  }
  for (int i = 0; i < POOL_BLOCKS; i++) CHECK(cudaEventDestroy(p->done[i]));
}

static unsigned char shape_pool_reuse(env_t *e, int bug) {
  pool_t pool;
  pool_init(&pool, !bug);
  unsigned char *a = pool_get(&pool);
  d2h(e, a, 0x5a);
  pool_put(&pool, a, e->s); /* the first owner is done with it, as far as the CPU knows */
  settle();
  unsigned char *b = pool_get(&pool);
  if (b != a) exit(2); /* LIFO: the same block */
  memset(b, 0x33, BUF_BYTES); /* the new owner's first write */
  unsigned char seen = b[BUF_BYTES / 2];
  CHECK(cudaStreamSynchronize(e->s));
  pool_put(&pool, b, e->s);
  pool_destroy(&pool);
  return seen;
}

static unsigned char shape_other_stream(env_t *e, int bug) {
  void *host;
  cudaEvent_t written;
  CHECK(cudaEventCreateWithFlags(&written, cudaEventDisableTiming));
  CHECK(cudaHostAlloc(&host, BUF_BYTES, cudaHostAllocDefault));
  d2h(e, host, 0x5a); /* the device writes host on s */
  if (!bug) {
    CHECK(cudaEventRecord(written, e->s));
    CHECK(cudaStreamWaitEvent(e->s2, written, 0));
  }
  settle();
  /* ... and reads it back on s2 into the second half of dev */
  CHECK(cudaMemcpyAsync(e->dev, host, BUF_BYTES, cudaMemcpyHostToDevice, e->s2));
  CHECK(cudaStreamSynchronize(e->s2));
  CHECK(cudaStreamSynchronize(e->s));
  CHECK(cudaFreeHost(host));
  CHECK(cudaEventDestroy(written));
  return device_byte(e);
}

static unsigned char shape_kernel_ptr(env_t *e, int bug) {
  unsigned char *host, check;
  CHECK(cudaHostAlloc((void **)&host, BUF_BYTES, cudaHostAllocDefault));
  void *bufs[] = {host};
  CHECK(e2e_launch_fill(bufs, 1, BUF_BYTES, 0x5a, e->s));
  if (!bug) CHECK(cudaStreamSynchronize(e->s));
  settle();
  check = host[BUF_BYTES / 2];
  CHECK(cudaStreamSynchronize(e->s));
  CHECK(cudaFreeHost(host));
  return check;
}

/* ---- hostfn_cond ------------------------------------------------------------------------- */
static pthread_mutex_t cond_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond_cv = PTHREAD_COND_INITIALIZER;
static int cond_done;

static void signal_done(void *arg) {
  (void)arg;
  pthread_mutex_lock(&cond_mu);
  cond_done = 1;
  pthread_cond_signal(&cond_cv);
  pthread_mutex_unlock(&cond_mu);
}

static void *late_signaller(void *arg) {
  settle();
  signal_done(arg);
  return NULL;
}

static unsigned char shape_hostfn_cond(env_t *e, int bug) {
  unsigned char *host, check;
  pthread_t t;
  CHECK(cudaHostAlloc((void **)&host, BUF_BYTES, cudaHostAllocDefault));
  d2h(e, host, 0x5a);
  if (bug) {
    if (pthread_create(&t, NULL, late_signaller, NULL) != 0) exit(2);
  } else {
    CHECK(cudaLaunchHostFunc(e->s, signal_done, NULL));
  }
  pthread_mutex_lock(&cond_mu);
  while (!cond_done) pthread_cond_wait(&cond_cv, &cond_mu);
  pthread_mutex_unlock(&cond_mu);
  check = host[BUF_BYTES / 2];
  if (bug) pthread_join(t, NULL);
  CHECK(cudaStreamSynchronize(e->s));
  CHECK(cudaFreeHost(host));
  return check;
}

typedef struct shape {
  const char *name;
  unsigned char (*run)(env_t *, int);
} shape_t;

static const shape_t shapes[] = {
    {"d2h_read", shape_d2h_read},     {"h2d_write", shape_h2d_write},
    {"free_host", shape_free_host},   {"unregister", shape_unregister},
    {"pool_reuse", shape_pool_reuse}, {"other_stream", shape_other_stream},
    {"kernel_ptr", shape_kernel_ptr}, {"hostfn_cond", shape_hostfn_cond},
};

int main(int argc, char **argv) {
  int bug = e2e_is_bug(argc, argv);
  const shape_t *shape = NULL;
  for (size_t i = 0; argc > 2 && i < sizeof(shapes) / sizeof(shapes[0]); i++)
    if (strcmp(argv[2], shapes[i].name) == 0) shape = &shapes[i];
  if (!shape) {
    fprintf(stderr, "usage: %s bug|fixed SHAPE [sleep_ms]\n", argv[0]);
    return 2;
  }
  if (argc > 3) sleep_ms = atoi(argv[3]);
  env_t e;
  CHECK(cudaStreamCreateWithFlags(&e.s, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&e.s2, cudaStreamNonBlocking));
  CHECK(cudaMalloc((void **)&e.dev, BUF_BYTES));
  unsigned char b = shape->run(&e, bug);
  CHECK(cudaFree(e.dev));
  CHECK(cudaStreamDestroy(e.s2));
  CHECK(cudaStreamDestroy(e.s));
  printf("%s done: byte 0x%02x\n", shape->name, b);
  return 0;
}
