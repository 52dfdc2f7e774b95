/* kv_engine.c: the engine's setup and teardown, the pattern fill and the verification, and
 * kv_run() which strings them around the store and retrieve pipelines. */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "kv_bigbuf.h"
#include "kv_engine_internal.h"

int kv_cuda_ok(cudaError_t err, const char *what) {
  if (err == cudaSuccess) return 1;
  fprintf(stderr, "kvxfer: %s failed: %s\n", what, cudaGetErrorName(err));
  return 0;
}

void kv_config_default(kv_config_t *cfg) {
  memset(cfg, 0, sizeof(*cfg));
  cfg->model = kv_model_find("small");
  cfg->chunks = cfg->model->default_chunks;
  cfg->group = KV_MAX_CHUNKS_PER_LAUNCH;
  cfg->xfer = KV_XFER_KERNEL;
  cfg->transport = KV_TRANSPORT_SERIALIZE;
  cfg->sync = KV_SYNC_EVENT;
  cfg->bug = KV_BUG_NONE;
  cfg->compute_us = 2000;
  cfg->devices = 1;
}

static double kv_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The shm transport's segment: created and mapped before the fork, so the store inherits the
 * mapping; unlinked at once, so nothing is left behind whatever happens later. */
static int kv_shm_create(kv_engine_t *e, size_t len) {
  char name[64];
  snprintf(name, sizeof(name), "/kvxfer.%ld", (long)getpid());
  int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) {
    perror("kvxfer: shm_open");
    return 0;
  }
  shm_unlink(name);
  void *p = MAP_FAILED;
  if (ftruncate(fd, (off_t)len) == 0)
    p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    perror("kvxfer: shared segment");
    return 0;
  }
  e->shm = p;
  e->shm_len = len;
  return 1;
}

/* The part of the setup before any CUDA call: the shared segment, the store process, host
 * buffers; and the pinned allocator, unless several engines share one (shared). */
static int kv_setup_host(kv_engine_t *e, const kv_config_t *cfg, kv_pcache_t *shared) {
  const kv_model_t *m = cfg->model;
  int64_t num_blocks = (int64_t)cfg->chunks * m->blocks_per_chunk;
  e->cfg = cfg;
  e->x.lay = kv_model_layout(m, num_blocks);
  e->chunk_bytes = kv_chunk_bytes(&e->x.lay);
  e->ngroups = (cfg->chunks + cfg->group - 1) / cfg->group;
  size_t staging = 2 * (size_t)cfg->group * e->chunk_bytes;

  /* Before any CUDA call: the shared segment, then the store process. */
  if (cfg->transport == KV_TRANSPORT_SHM && !kv_shm_create(e, staging)) return 0;
  if (kv_store_start(&e->store, e->shm, e->shm_len, cfg->chunks) != 0) {
    perror("kvxfer: starting the store process");
    return 0;
  }
  e->store_started = 1;

  e->ids_host = malloc((size_t)num_blocks * sizeof(int32_t));
  e->sendbuf = kv_big_alloc(e->chunk_bytes);
  e->fetchbuf = kv_big_alloc(e->chunk_bytes);
  e->pcache = shared ? shared : kv_pcache_create();
  e->pcache_shared = shared != NULL;
  if (e->pcache && !shared) kv_pcache_set_release_annotation(e->pcache, !cfg->no_release_annotation);
  if (!e->ids_host || !e->sendbuf || !e->fetchbuf || !e->pcache) {
    fprintf(stderr, "kvxfer: out of memory\n");
    return 0;
  }
  kv_block_table(e->ids_host, num_blocks);
  e->x.ids_host = e->ids_host;
  return 1;
}

/* The CUDA part, on the current device: streams, events, the cache, the staging chunks. */
static int kv_setup_device(kv_engine_t *e) {
  const kv_config_t *cfg = e->cfg;
  int64_t num_blocks = e->x.lay.num_blocks;
  size_t kv_bytes = (size_t)e->x.lay.layers * 2 * (size_t)num_blocks * (size_t)e->x.lay.seg_bytes;
  if (!KV_CUDA(cudaStreamCreateWithFlags(&e->kv_stream, cudaStreamNonBlocking)) ||
      !KV_CUDA(cudaStreamCreateWithFlags(&e->xfer_stream, cudaStreamNonBlocking)) ||
      !KV_CUDA(cudaEventCreateWithFlags(&e->ev_compute, cudaEventDisableTiming)) ||
      !KV_CUDA(cudaEventCreateWithFlags(&e->ev_xfer[0], cudaEventDisableTiming)) ||
      !KV_CUDA(cudaEventCreateWithFlags(&e->ev_xfer[1], cudaEventDisableTiming)) ||
      !KV_CUDA(cudaMalloc((void **)&e->x.kv, kv_bytes)) ||
      !KV_CUDA(cudaMalloc((void **)&e->ids_dev, (size_t)num_blocks * sizeof(int32_t))) ||
      !KV_CUDA(cudaMemcpy(e->ids_dev, e->ids_host, (size_t)num_blocks * sizeof(int32_t),
                          cudaMemcpyHostToDevice)))
    return 0;
  e->x.ids_dev = e->ids_dev;
  for (int sl = 0; sl < 2; sl++)
    for (int i = 0; i < cfg->group; i++) {
      if (e->shm) {
        e->staging[sl][i] = e->shm + ((size_t)sl * (size_t)cfg->group + (size_t)i) * e->chunk_bytes;
        if (!KV_CUDA(cudaHostRegister(e->staging[sl][i], e->chunk_bytes, cudaHostRegisterDefault)))
          return 0;
      } else if (!KV_CUDA(cudaHostAlloc((void **)&e->staging[sl][i], e->chunk_bytes,
                                        cudaHostAllocDefault))) {
        return 0;
      }
      e->staging_pinned[sl][i] = 1;
    }
  return 1;
}

/* The CUDA part of the teardown, on the engine's device. */
static void kv_teardown_device(kv_engine_t *e) {
  /* Nothing may still be using a buffer we free: wait for the device first. */
  cudaDeviceSynchronize();
  if (!e->pcache_shared) {
    kv_pcache_destroy(e->pcache);
    e->pcache = NULL;
  }
  for (int sl = 0; sl < 2; sl++)
    for (int i = 0; i < KV_MAX_CHUNKS_PER_LAUNCH; i++) {
      if (!e->staging_pinned[sl][i]) continue;
      if (e->shm)
        cudaHostUnregister(e->staging[sl][i]);
      else
        cudaFreeHost(e->staging[sl][i]);
      e->staging_pinned[sl][i] = 0;
    }
  if (e->ids_dev) cudaFree(e->ids_dev);
  if (e->x.kv) cudaFree(e->x.kv);
  if (e->ev_xfer[1]) cudaEventDestroy(e->ev_xfer[1]);
  if (e->ev_xfer[0]) cudaEventDestroy(e->ev_xfer[0]);
  if (e->ev_compute) cudaEventDestroy(e->ev_compute);
  if (e->xfer_stream) cudaStreamDestroy(e->xfer_stream);
  if (e->kv_stream) cudaStreamDestroy(e->kv_stream);
  e->ids_dev = NULL;
  e->x.kv = NULL;
  e->ev_xfer[0] = e->ev_xfer[1] = e->ev_compute = NULL;
  e->xfer_stream = e->kv_stream = NULL;
}

static void kv_teardown_host(kv_engine_t *e) {
  if (e->store_started && kv_store_stop(&e->store) != 0)
    fprintf(stderr, "kvxfer: the store process did not exit cleanly\n");
  if (e->shm) munmap(e->shm, e->shm_len);
  kv_big_free(e->fetchbuf, e->chunk_bytes);
  kv_big_free(e->sendbuf, e->chunk_bytes);
  free(e->ids_host);
}

/* One (layer, K/V) row of the cache at a time: num_blocks segments, contiguous on the device. */
static int kv_fill(kv_engine_t *e) {
  const kv_layout_t *lay = &e->x.lay;
  size_t row = (size_t)lay->num_blocks * (size_t)lay->seg_bytes;
  uint8_t *buf = kv_big_alloc(row);
  int ok = buf != NULL;
  for (int l = 0; ok && l < lay->layers; l++)
    for (int h = 0; ok && h < 2; h++) {
      for (int64_t b = 0; b < lay->num_blocks; b++)
        kv_pattern_fill(buf + b * lay->seg_bytes, lay->seg_bytes, l, h, b);
      ok = KV_CUDA(cudaMemcpy(e->x.kv + ((size_t)l * 2 + (size_t)h) * row, buf, row,
                              cudaMemcpyHostToDevice));
    }
  kv_big_free(buf, row);
  return ok;
}

/* A block is corrupted when any of its layers' K or V segments differs from its pattern. */
static int64_t kv_verify(kv_engine_t *e) {
  const kv_layout_t *lay = &e->x.lay;
  size_t row = (size_t)lay->num_blocks * (size_t)lay->seg_bytes;
  uint8_t *buf = kv_big_alloc(row), *bad = calloc((size_t)lay->num_blocks, 1);
  int64_t corrupted = -1;
  if (buf && bad) {
    int ok = 1;
    for (int l = 0; ok && l < lay->layers; l++)
      for (int h = 0; ok && h < 2; h++) {
        ok = KV_CUDA(cudaMemcpy(buf, e->x.kv + ((size_t)l * 2 + (size_t)h) * row, row,
                                cudaMemcpyDeviceToHost));
        for (int64_t b = 0; ok && b < lay->num_blocks; b++)
          if (!bad[b] && !kv_pattern_matches(buf + b * lay->seg_bytes, lay->seg_bytes, l, h, b))
            bad[b] = 1;
      }
    if (ok) {
      corrupted = 0;
      for (int64_t b = 0; b < lay->num_blocks; b++) corrupted += bad[b];
    }
  }
  kv_big_free(buf, row);
  free(bad);
  return corrupted;
}

/* Barriers between the phases: every engine starts a phase together; the slowest one ends it.
 * An engine that failed still comes to every barrier, so no other waits for it forever. */
typedef struct kv_multi {
  const kv_config_t *cfg;
  kv_engine_t *engines;
  pthread_barrier_t barrier;
  double t[4];
  atomic_int failed;
} kv_multi_t;

typedef struct kv_worker {
  kv_multi_t *m;
  int k;
  int64_t corrupted;
} kv_worker_t;

static void kv_phase(kv_multi_t *m, int ok, int mark) {
  if (!ok) atomic_store(&m->failed, 1);
  if (pthread_barrier_wait(&m->barrier) == PTHREAD_BARRIER_SERIAL_THREAD && mark >= 0)
    m->t[mark] = kv_now();
}

static void *kv_worker_main(void *arg) {
  kv_worker_t *w = arg;
  kv_multi_t *m = w->m;
  kv_engine_t *e = &m->engines[w->k];
  int ok = KV_CUDA(cudaSetDevice(w->k)) && kv_setup_device(e) && kv_fill(e) &&
           KV_CUDA(cudaDeviceSynchronize());
  kv_phase(m, ok, 0);
  ok = !atomic_load(&m->failed) && kv_store_all(e) == 0 && KV_CUDA(cudaDeviceSynchronize());
  kv_phase(m, ok, 1);
  size_t kv_bytes =
      (size_t)e->x.lay.layers * 2 * (size_t)e->x.lay.num_blocks * (size_t)e->x.lay.seg_bytes;
  ok = !atomic_load(&m->failed) && KV_CUDA(cudaMemset(e->x.kv, 0, kv_bytes)) &&
       KV_CUDA(cudaDeviceSynchronize());
  kv_phase(m, ok, 2);
  ok = !atomic_load(&m->failed) && kv_retrieve_all(e) == 0 && KV_CUDA(cudaDeviceSynchronize());
  kv_phase(m, ok, 3);
  w->corrupted = atomic_load(&m->failed) ? -1 : kv_verify(e);
  kv_phase(m, w->corrupted >= 0, -1); /* nobody still uses the shared allocator's blocks */
  kv_teardown_device(e);
  return NULL;
}

static int kv_run_devices(const kv_config_t *cfg, kv_result_t *res) {
  int n = cfg->devices, have = 0;
  kv_multi_t m;
  memset(&m, 0, sizeof(m));
  m.cfg = cfg;
  kv_engine_t *engines = calloc((size_t)n, sizeof(*engines));
  kv_worker_t *w = calloc((size_t)n, sizeof(*w));
  pthread_t *th = calloc((size_t)n, sizeof(*th));
  kv_pcache_t *pool = kv_pcache_create();
  int rc = -1, started = 0, hosts = 0;
  if (!engines || !w || !th || !pool) {
    fprintf(stderr, "kvxfer: out of memory\n");
    goto out;
  }
  kv_pcache_set_release_annotation(pool, !cfg->no_release_annotation);
  m.engines = engines;
  /* Every store process is forked before the first CUDA call. */
  while (hosts < n)
    if (!kv_setup_host(&engines[hosts++], cfg, pool)) goto out;
  if (!KV_CUDA(cudaGetDeviceCount(&have))) goto out;
  if (have < n) {
    fprintf(stderr, "kvxfer: --devices %d, but the runtime has %d\n", n, have);
    goto out;
  }
  pthread_barrier_init(&m.barrier, NULL, (unsigned)n);
  for (; started < n; started++) {
    w[started] = (kv_worker_t){.m = &m, .k = started};
    if (pthread_create(&th[started], NULL, kv_worker_main, &w[started]) != 0) {
      fprintf(stderr, "kvxfer: cannot start engine thread %d\n", started);
      abort(); /* the others would wait at the barrier for it */
    }
  }
  for (int k = 0; k < n; k++) pthread_join(th[k], NULL);
  pthread_barrier_destroy(&m.barrier);
  if (atomic_load(&m.failed)) goto out;
  for (int k = 0; k < n; k++) {
    res->corrupted += w[k].corrupted;
    res->blocks += engines[k].x.lay.num_blocks;
    res->bytes += (size_t)cfg->chunks * engines[k].chunk_bytes;
  }
  res->store_s = m.t[1] - m.t[0];
  res->retrieve_s = m.t[3] - m.t[2];
  kv_pcache_stats_t ps = kv_pcache_stats(pool);
  res->pin_host_allocs = ps.host_allocs;
  res->pin_reuses = ps.reuses;
  rc = 0;
out:
  if (pool) kv_pcache_destroy(pool);
  for (int k = 0; k < hosts; k++) kv_teardown_host(&engines[k]);
  free(th);
  free(w);
  free(engines);
  return rc;
}

int kv_run(const kv_config_t *cfg, kv_result_t *res) {
  memset(res, 0, sizeof(*res));
  if (cfg->devices > 1) return kv_run_devices(cfg, res);
  kv_engine_t e;
  memset(&e, 0, sizeof(e));
  int rc = -1;
  if (!kv_setup_host(&e, cfg, NULL) || !kv_setup_device(&e) || !kv_fill(&e) ||
      !KV_CUDA(cudaDeviceSynchronize()))
    goto out;

  double t0 = kv_now();
  /* A phase ends when the device is idle: the next phase must not meet its leftovers. */
  if (kv_store_all(&e) != 0 || !KV_CUDA(cudaDeviceSynchronize())) goto out;
  double t1 = kv_now();
  size_t kv_bytes =
      (size_t)e.x.lay.layers * 2 * (size_t)e.x.lay.num_blocks * (size_t)e.x.lay.seg_bytes;
  if (!KV_CUDA(cudaMemset(e.x.kv, 0, kv_bytes)) || !KV_CUDA(cudaDeviceSynchronize())) goto out;
  double t2 = kv_now();
  if (kv_retrieve_all(&e) != 0 || !KV_CUDA(cudaDeviceSynchronize())) goto out;
  double t3 = kv_now();

  res->corrupted = kv_verify(&e);
  if (res->corrupted < 0) goto out;
  res->blocks = e.x.lay.num_blocks;
  res->bytes = (size_t)cfg->chunks * e.chunk_bytes;
  res->store_s = t1 - t0;
  res->retrieve_s = t3 - t2;
  kv_pcache_stats_t ps = kv_pcache_stats(e.pcache);
  res->pin_host_allocs = ps.host_allocs;
  res->pin_reuses = ps.reuses;
  rc = 0;
out:
  kv_teardown_device(&e);
  kv_teardown_host(&e);
  return rc;
}
