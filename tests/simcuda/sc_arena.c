/* sc_arena.c: simulated device memory. One large PROT_NONE, MAP_NORESERVE reservation made at
 * init, so device addresses can never collide with host memory; cudaMalloc hands out page-aligned
 * pieces (made read-write), cudaFree returns them (dropped and made PROT_NONE again, so a stale
 * device pointer faults instead of silently reading old data). */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sc_internal.h"

typedef struct sc_block {
  uintptr_t start;
  size_t len;       /* page-rounded */
  size_t requested; /* what the caller asked for */
} sc_block;

static uintptr_t sc_arena_base;
static size_t sc_arena_len;
static pthread_mutex_t sc_arena_mu = PTHREAD_MUTEX_INITIALIZER;
static sc_block *sc_blocks; /* sorted by start */
static size_t sc_nblocks, sc_cap;

void sc_arena_init(void) {
  void *p = mmap(NULL, sc_cfg.device_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) return; /* cudaMalloc will report cudaErrorMemoryAllocation */
  sc_arena_base = (uintptr_t)p;
  sc_arena_len = sc_cfg.device_bytes;
}

bool sc_arena_contains(const void *p) {
  return (uintptr_t)p - sc_arena_base < sc_arena_len;
}

/* Index of the block containing p, or -1. Caller holds sc_arena_mu. */
static ptrdiff_t sc_block_find(uintptr_t p) {
  size_t lo = 0, hi = sc_nblocks;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (sc_blocks[mid].start + sc_blocks[mid].len <= p)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < sc_nblocks && sc_blocks[lo].start <= p) return (ptrdiff_t)lo;
  return -1;
}

bool sc_arena_lookup(const void *p, void **base, size_t *size) {
  if (!sc_arena_contains(p)) return false;
  pthread_mutex_lock(&sc_arena_mu);
  ptrdiff_t i = sc_block_find((uintptr_t)p);
  if (i >= 0) {
    if (base) *base = (void *)sc_blocks[i].start;
    if (size) *size = sc_blocks[i].requested;
  }
  pthread_mutex_unlock(&sc_arena_mu);
  return i >= 0;
}

/* First fit over the gaps between sorted blocks. Caller holds sc_arena_mu. */
static void *sc_arena_alloc_locked(size_t len, size_t requested) {
  if (sc_nblocks == sc_cap) {
    size_t cap = sc_cap ? sc_cap * 2 : 64;
    sc_block *nb = realloc(sc_blocks, cap * sizeof *nb);
    if (!nb) return NULL;
    sc_blocks = nb;
    sc_cap = cap;
  }
  uintptr_t cursor = sc_arena_base;
  size_t i = 0;
  for (; i <= sc_nblocks; i++) {
    uintptr_t gap_end = i < sc_nblocks ? sc_blocks[i].start : sc_arena_base + sc_arena_len;
    if (gap_end - cursor >= len) break;
    if (i < sc_nblocks) cursor = sc_blocks[i].start + sc_blocks[i].len;
  }
  if (i > sc_nblocks) return NULL;
  if (mprotect((void *)cursor, len, PROT_READ | PROT_WRITE) != 0) return NULL;
  memmove(&sc_blocks[i + 1], &sc_blocks[i], (sc_nblocks - i) * sizeof *sc_blocks);
  sc_blocks[i] = (sc_block){.start = cursor, .len = len, .requested = requested};
  sc_nblocks++;
  return (void *)cursor;
}

static cudaError_t sc_malloc(void **devPtr, size_t size) {
  if (!devPtr) return sc_ret(cudaErrorInvalidValue);
  if (size == 0) {
    *devPtr = NULL;
    return cudaSuccess;
  }
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (size > sc_arena_len) return sc_ret(cudaErrorMemoryAllocation);
  size_t len = (size + page - 1) & ~(page - 1);
  pthread_mutex_lock(&sc_arena_mu);
  void *p = sc_arena_base ? sc_arena_alloc_locked(len, size) : NULL;
  pthread_mutex_unlock(&sc_arena_mu);
  if (!p) return sc_ret(cudaErrorMemoryAllocation);
  *devPtr = p;
  return cudaSuccess;
}

SC_API cudaError_t cudaMalloc(void **devPtr, size_t size) {
  SC_ENTER("cudaMalloc");
  return sc_malloc(devPtr, size);
}

/* Returns the block at base to the arena; false when base is not an allocation's start. */
static bool sc_arena_release(void *base) {
  pthread_mutex_lock(&sc_arena_mu);
  ptrdiff_t i = sc_block_find((uintptr_t)base);
  if (i < 0 || sc_blocks[i].start != (uintptr_t)base) {
    pthread_mutex_unlock(&sc_arena_mu);
    return false;
  }
  sc_block b = sc_blocks[i];
  memmove(&sc_blocks[i], &sc_blocks[i + 1], (sc_nblocks - (size_t)i - 1) * sizeof *sc_blocks);
  sc_nblocks--;
  madvise((void *)b.start, b.len, MADV_DONTNEED);
  mprotect((void *)b.start, b.len, PROT_NONE);
  pthread_mutex_unlock(&sc_arena_mu);
  return true;
}

SC_API cudaError_t cudaFree(void *devPtr) {
  SC_ENTER("cudaFree");
  if (!devPtr) return cudaSuccess; /* cudaFree(0) is the classic "initialize the context" call */
  /* Like the real driver, freeing device memory waits for all work already queued, so no
   * in-flight copy or kernel runs into the freed range. */
  sc_device_sync_all();
  return sc_arena_release(devPtr) ? cudaSuccess : sc_ret(cudaErrorInvalidValue);
}

/* Stream-ordered allocation, simplified: the memory is handed out at once (usable by anything
 * ordered after the call, which is all CUDA promises); the free happens at its stream position. */
static cudaError_t sc_malloc_async(void **devPtr, size_t size, cudaStream_t h, bool ptsz) {
  cudaError_t err = cudaSuccess;
  if (!sc_stream_get(h, ptsz, &err)) return sc_ret(err);
  return sc_malloc(devPtr, size);
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
  pthread_mutex_lock(&sc_arena_mu);
  size_t used = 0;
  for (size_t i = 0; i < sc_nblocks; i++) used += sc_blocks[i].len;
  pthread_mutex_unlock(&sc_arena_mu);
  if (free_bytes) *free_bytes = sc_arena_len - used;
  if (total) *total = sc_arena_len;
  return cudaSuccess;
}
