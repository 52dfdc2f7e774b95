/* sc_arena.c: simulated device memory. One large PROT_NONE, MAP_NORESERVE reservation made at
 * init, so device addresses can never collide with host memory, cut into one arena per device
 * (SIMCUDA_DEVICE_MB each, device d's at base + d * size, as UVA gives each GPU its own range);
 * cudaMalloc hands out page-aligned pieces of the current device's arena (made read-write),
 * cudaFree returns them (dropped and made PROT_NONE again, so a stale device pointer faults
 * instead of silently reading old data). */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sc_internal.h"
#include "sc_engine.h"

typedef struct sc_block {
  uintptr_t start;
  size_t len;       /* page-rounded */
  size_t requested; /* what the caller asked for */
} sc_block;

typedef struct sc_arena {
  uintptr_t base;
  pthread_mutex_t mu;
  sc_block *blocks; /* sorted by start */
  size_t nblocks, cap;
} sc_arena;

static uintptr_t sc_arena_base; /* of the whole reservation */
static size_t sc_arena_len;     /* of one device's arena */
static size_t sc_total_len;     /* of the reservation */
static sc_arena sc_arenas[SC_MAX_DEVICES];

void sc_arena_init(void) {
  for (int d = 0; d < SC_MAX_DEVICES; d++) pthread_mutex_init(&sc_arenas[d].mu, NULL);
  size_t n = sc_cfg.devices > 0 ? (size_t)sc_cfg.devices : 1;
  void *p = mmap(NULL, n * sc_cfg.device_bytes, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return; /* cudaMalloc will report cudaErrorMemoryAllocation */
  sc_arena_base = (uintptr_t)p;
  sc_arena_len = sc_cfg.device_bytes;
  sc_total_len = n * sc_cfg.device_bytes;
  for (size_t d = 0; d < n; d++) sc_arenas[d].base = sc_arena_base + d * sc_arena_len;
}

bool sc_arena_contains(const void *p) {
  return (uintptr_t)p - sc_arena_base < sc_total_len;
}

int sc_arena_device(const void *p) {
  if (!sc_arena_contains(p)) return -1;
  return (int)(((uintptr_t)p - sc_arena_base) / sc_arena_len);
}

static sc_arena *sc_arena_of(const void *p) {
  int d = sc_arena_device(p);
  return d < 0 ? NULL : &sc_arenas[d];
}

/* Index of the block of a containing p, or -1. Caller holds a->mu. */
static ptrdiff_t sc_block_find(sc_arena *a, uintptr_t p) {
  sc_block *blocks = a->blocks;
  size_t nblocks = a->nblocks;
  size_t lo = 0, hi = nblocks;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (blocks[mid].start + blocks[mid].len <= p)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < nblocks && blocks[lo].start <= p) return (ptrdiff_t)lo;
  return -1;
}

bool sc_arena_lookup(const void *p, void **base, size_t *size) {
  sc_arena *a = sc_arena_of(p);
  if (!a) return false;
  pthread_mutex_lock(&a->mu);
  ptrdiff_t i = sc_block_find(a, (uintptr_t)p);
  if (i >= 0) {
    if (base) *base = (void *)a->blocks[i].start;
    if (size) *size = a->blocks[i].requested;
  }
  pthread_mutex_unlock(&a->mu);
  return i >= 0;
}

/* First fit over the gaps between sorted blocks. Caller holds a->mu. */
static void *sc_arena_alloc_locked(sc_arena *a, size_t len, size_t requested) {
  if (a->nblocks == a->cap) {
    size_t cap = a->cap ? a->cap * 2 : 64;
    sc_block *nb = realloc(a->blocks, cap * sizeof *nb);
    if (!nb) return NULL;
    a->blocks = nb;
    a->cap = cap;
  }
  sc_block *blocks = a->blocks;
  size_t nblocks = a->nblocks;
  uintptr_t cursor = a->base;
  size_t i = 0;
  for (; i <= nblocks; i++) {
    uintptr_t gap_end = i < nblocks ? blocks[i].start : a->base + sc_arena_len;
    if (gap_end - cursor >= len) break;
    if (i < nblocks) cursor = blocks[i].start + blocks[i].len;
  }
  if (i > nblocks) return NULL;
  if (mprotect((void *)cursor, len, PROT_READ | PROT_WRITE) != 0) return NULL;
  memmove(&blocks[i + 1], &blocks[i], (nblocks - i) * sizeof *blocks);
  blocks[i] = (sc_block){.start = cursor, .len = len, .requested = requested};
  a->nblocks++;
  return (void *)cursor;
}

/* Allocates on `device`'s arena. */
cudaError_t sc_malloc(void **devPtr, size_t size, int device) {
  if (!devPtr) return sc_ret(cudaErrorInvalidValue);
  if (size == 0) {
    *devPtr = NULL;
    return cudaSuccess;
  }
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (size > sc_arena_len) return sc_ret(cudaErrorMemoryAllocation);
  size_t len = (size + page - 1) & ~(page - 1);
  sc_arena *a = &sc_arenas[device];
  pthread_mutex_lock(&a->mu);
  void *p = sc_arena_base ? sc_arena_alloc_locked(a, len, size) : NULL;
  pthread_mutex_unlock(&a->mu);
  if (!p) return sc_ret(cudaErrorMemoryAllocation);
  *devPtr = p;
  return cudaSuccess;
}

/* Returns the block at base to the arena; false when base is not an allocation's start. */
static bool sc_arena_release(void *base) {
  sc_arena *a = sc_arena_of(base);
  if (!a) return false;
  pthread_mutex_lock(&a->mu);
  ptrdiff_t i = sc_block_find(a, (uintptr_t)base);
  if (i < 0 || a->blocks[i].start != (uintptr_t)base) {
    pthread_mutex_unlock(&a->mu);
    return false;
  }
  sc_block b = a->blocks[i];
  memmove(&a->blocks[i], &a->blocks[i + 1], (a->nblocks - (size_t)i - 1) * sizeof *a->blocks);
  a->nblocks--;
  madvise((void *)b.start, b.len, MADV_DONTNEED);
  mprotect((void *)b.start, b.len, PROT_NONE);
  pthread_mutex_unlock(&a->mu);
  return true;
}

cudaError_t sc_free(void *devPtr) {
  if (!devPtr) return cudaSuccess; /* cudaFree(0) is the classic "initialize the context" call */
  /* Like the real driver, freeing device memory waits for all work already queued, so no
   * in-flight copy or kernel runs into the freed range. */
  sc_device_sync_all();
  return sc_arena_release(devPtr) ? cudaSuccess : sc_ret(cudaErrorInvalidValue);
}

/* Stream-ordered allocation, simplified: the memory is handed out at once (usable by anything
 * ordered after the call, which is all CUDA promises), from the arena of the stream's device (its
 * default pool, as in CUDA); the free happens at its stream position. */
static cudaError_t sc_malloc_async(void **devPtr, size_t size, cudaStream_t h, bool ptsz) {
  cudaError_t err = cudaSuccess;
  sc_stream *s = sc_stream_get(h, ptsz, &err);
  if (!s) return sc_ret(err);
  return sc_malloc(devPtr, size, sc_stream_device(s));
}

SC_API cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream) {
  SC_ENTER("cudaMallocAsync");
  return sc_malloc_async(devPtr, size, hStream, false);
}

SC_API cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream) {
  SC_ENTER("cudaMallocAsync");
  return sc_malloc_async(devPtr, size, hStream, true);
}

static void sc_free_at_stream_position(void *base) { sc_arena_release(base); }

static cudaError_t sc_free_async(void *devPtr, cudaStream_t h, bool ptsz) {
  if (!devPtr) return cudaSuccess;
  void *base = NULL;
  if (!sc_arena_lookup(devPtr, &base, NULL) || base != devPtr) return sc_ret(cudaErrorInvalidValue);
  cudaError_t err = cudaSuccess;
  sc_stream *s = sc_stream_get(h, ptsz, &err);
  if (!s) return sc_ret(err);
  sc_op *op = sc_op_new(SC_OP_HOSTFN);
  if (!op) return sc_ret(cudaErrorMemoryAllocation);
  op->u.host.fn = sc_free_at_stream_position;
  op->u.host.data = devPtr;
  return sc_ret(sc_submit(s, op, NULL));
}

SC_API cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream) {
  SC_ENTER("cudaFreeAsync");
  return sc_free_async(devPtr, hStream, false);
}

SC_API cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream) {
  SC_ENTER("cudaFreeAsync");
  return sc_free_async(devPtr, hStream, true);
}

SC_API cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total) {
  SC_ENTER("cudaMemGetInfo");
  sc_arena *a = &sc_arenas[sc_device_current()];
  pthread_mutex_lock(&a->mu);
  size_t used = 0;
  for (size_t i = 0; i < a->nblocks; i++) used += a->blocks[i].len;
  pthread_mutex_unlock(&a->mu);
  if (free_bytes) *free_bytes = sc_arena_len - used;
  if (total) *total = sc_arena_len;
  return cudaSuccess;
}
