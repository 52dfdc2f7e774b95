/* kv_engine.c: the engine's setup and teardown, the pattern fill and the verification, and
 * kv_run() which strings them around the store and retrieve pipelines. */
#include <fcntl.h>
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

static int kv_setup(kv_engine_t *e, const kv_config_t *cfg) {
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
  e->pcache = kv_pcache_create();
  if (e->pcache) kv_pcache_set_release_annotation(e->pcache, !cfg->no_release_annotation);
  if (!e->ids_host || !e->sendbuf || !e->fetchbuf || !e->pcache) {
    fprintf(stderr, "kvxfer: out of memory\n");
    return 0;
  }
  kv_block_table(e->ids_host, num_blocks);
  e->x.ids_host = e->ids_host;
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

static void kv_teardown(kv_engine_t *e) {
  /* Nothing may still be using a buffer we free: wait for the device first. */
  cudaDeviceSynchronize();
  kv_pcache_destroy(e->pcache);
  for (int sl = 0; sl < 2; sl++)
    for (int i = 0; i < KV_MAX_CHUNKS_PER_LAUNCH; i++) {
      if (!e->staging_pinned[sl][i]) continue;
      if (e->shm)
        cudaHostUnregister(e->staging[sl][i]);
      else
        cudaFreeHost(e->staging[sl][i]);
    }
  if (e->ids_dev) cudaFree(e->ids_dev);
  if (e->x.kv) cudaFree(e->x.kv);
  if (e->ev_xfer[1]) cudaEventDestroy(e->ev_xfer[1]);
  if (e->ev_xfer[0]) cudaEventDestroy(e->ev_xfer[0]);
  if (e->ev_compute) cudaEventDestroy(e->ev_compute);
  if (e->xfer_stream) cudaStreamDestroy(e->xfer_stream);
  if (e->kv_stream) cudaStreamDestroy(e->kv_stream);
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

int kv_run(const kv_config_t *cfg, kv_result_t *res) {
  kv_engine_t e;
  memset(&e, 0, sizeof(e));
  memset(res, 0, sizeof(*res));
  int rc = -1;
  if (!kv_setup(&e, cfg) || !kv_fill(&e) || !KV_CUDA(cudaDeviceSynchronize())) goto out;

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
  kv_teardown(&e);
  return rc;
}
