/* test_copies.c: the copy family: the device-to-host race is real, CUDA's host-synchronization
 * rules for pageable memory, 2D/3D copies, symbol copies, memsets, and cudaMemcpyBatchAsync
 * under both the 13.0 ABI (8 arguments) and the 12.8 ABI (9 arguments, with failIdx). */
#include <stdint.h>
#include <sys/mman.h>
#include <string.h>

#include "test_util.h"

static void race_latency(void) { sim_env("20000"); }
static void low_latency(void) { sim_env("50"); }

Test(copies, device_to_host_race_is_real, .init = race_latency) {
  enum { SZ = 1 << 20 };
  cudaStream_t s;
  unsigned char *h, *d;
  CK(cudaStreamCreate(&s));
  CK(cudaHostAlloc((void **)&h, SZ, 0));
  CK(cudaMalloc((void **)&d, SZ));
  memset(h, 0xAA, SZ);
  CK(cudaMemset(d, 0x55, SZ));
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpyAsync(h, d, SZ, cudaMemcpyDeviceToHost, s));
  unsigned char early = h[SZ / 2];
  CK(cudaStreamSynchronize(s));
  cr_assert_eq(early, 0xAA, "read right after the enqueue must see the old bytes");
  cr_assert_eq(h[SZ / 2], 0x55, "after the sync, the new bytes");
}

Test(copies, host_to_device_from_pinned_reads_late, .init = race_latency) {
  /* The mirror image: a pinned source overwritten right after the enqueue is read by the copy
   * in its new state (the hazard a caching allocator's reuse creates). */
  cudaStream_t s;
  unsigned char *h, *d, back;
  CK(cudaStreamCreate(&s));
  CK(cudaHostAlloc((void **)&h, 4096, 0));
  CK(cudaMalloc((void **)&d, 4096));
  memset(h, 1, 4096);
  CK(cudaMemcpyAsync(d, h, 4096, cudaMemcpyHostToDevice, s));
  memset(h, 2, 4096);
  CK(cudaStreamSynchronize(s));
  CK(cudaMemcpy(&back, d, 1, cudaMemcpyDeviceToHost));
  cr_assert_eq(back, 2);
}

Test(copies, pageable_source_is_staged, .init = race_latency) {
  cudaStream_t s;
  unsigned char h[4096], *d, back;
  CK(cudaStreamCreate(&s));
  CK(cudaMalloc((void **)&d, 4096));
  memset(h, 1, sizeof h);
  CK(cudaMemcpyAsync(d, h, 4096, cudaMemcpyHostToDevice, s));
  memset(h, 2, sizeof h); /* allowed: the pageable source was staged during the call */
  CK(cudaStreamSynchronize(s));
  CK(cudaMemcpy(&back, d, 1, cudaMemcpyDeviceToHost));
  cr_assert_eq(back, 1);
}

Test(copies, pageable_destination_is_synchronous, .init = race_latency) {
  cudaStream_t s;
  unsigned char h[4096], *d;
  CK(cudaStreamCreate(&s));
  CK(cudaMalloc((void **)&d, 4096));
  CK(cudaMemset(d, 9, 4096));
  memset(h, 0, sizeof h);
  CK(cudaMemcpyAsync(h, d, 4096, cudaMemcpyDeviceToHost, s));
  cr_assert_eq(h[100], 9, "a copy into pageable memory completes before the call returns");
}

Test(copies, memcpy_is_synchronous_for_host_memory, .init = race_latency) {
  unsigned char *h, *d;
  CK(cudaHostAlloc((void **)&h, 4096, 0));
  CK(cudaMalloc((void **)&d, 4096));
  CK(cudaMemset(d, 3, 4096));
  CK(cudaMemcpy(h, d, 4096, cudaMemcpyDefault));
  cr_assert_eq(h[4095], 3);
  memset(h, 4, 4096);
  CK(cudaMemcpy(d, h, 4096, cudaMemcpyHostToDevice));
  memset(h, 0, 4096);
  CK(cudaMemcpy(h, d, 4096, cudaMemcpyDeviceToHost));
  cr_assert_eq(h[0], 4);
  CK_ERR(cudaMemcpy(h, d, 16, (enum cudaMemcpyKind)7), cudaErrorInvalidMemcpyDirection);
  CK_ERR(cudaMemcpy(NULL, d, 16, cudaMemcpyDefault), cudaErrorInvalidValue);
}

Test(copies, copy_2d_and_3d, .init = low_latency) {
  enum { W = 16, H = 8, P = 32 };
  unsigned char *h, *d;
  CK(cudaHostAlloc((void **)&h, P * H * 2, 0));
  CK(cudaMalloc((void **)&d, P * H * 2));
  for (int i = 0; i < P * H; i++) h[i] = (unsigned char)i;
  CK(cudaMemset(d, 0, P * H * 2));
  CK(cudaMemcpy2DAsync(d, P, h, P, W, H, cudaMemcpyHostToDevice, 0));
  unsigned char back[P * H];
  CK(cudaMemcpy(back, d, sizeof back, cudaMemcpyDeviceToHost));
  for (int y = 0; y < H; y++)
    for (int x = 0; x < P; x++)
      cr_assert_eq(back[y * P + x], x < W ? (unsigned char)(y * P + x) : 0);
  CK_ERR(cudaMemcpy2DAsync(d, 8, h, P, W, H, cudaMemcpyHostToDevice, 0), cudaErrorInvalidPitchValue);

  /* 3D: two layers of H rows; copy a W x 2 x 2 box starting at (x=1, y=3, z=0). */
  struct cudaMemcpy3DParms p = {0};
  for (int i = 0; i < P * H * 2; i++) h[i] = (unsigned char)(i * 3);
  CK(cudaMemset(d, 0, P * H * 2));
  p.srcPtr = (struct cudaPitchedPtr){h, P, W, H};
  p.dstPtr = (struct cudaPitchedPtr){d, P, W, H};
  p.srcPos = (struct cudaPos){1, 3, 0};
  p.dstPos = (struct cudaPos){1, 3, 0};
  p.extent = (struct cudaExtent){W, 2, 2};
  p.kind = cudaMemcpyHostToDevice;
  CK(cudaMemcpy3DAsync(&p, cudaStreamPerThread));
  CK(cudaStreamSynchronize(cudaStreamPerThread));
  unsigned char back3[P * H * 2];
  CK(cudaMemcpy(back3, d, sizeof back3, cudaMemcpyDeviceToHost));
  for (int z = 0; z < 2; z++)
    for (int y = 0; y < H; y++)
      for (int x = 0; x < P; x++) {
        int i = (z * H + y) * P + x;
        bool in = y >= 3 && y < 5 && x >= 1 && x < 1 + W;
        cr_assert_eq(back3[i], in ? (unsigned char)(i * 3) : 0, "z%d y%d x%d", z, y, x);
      }
}

static int host_symbol[16];

Test(copies, symbols, .init = low_latency) {
  int src[4] = {1, 2, 3, 4}, dst[4] = {0};
  /* A host variable's address as the symbol. */
  CK(cudaMemcpyToSymbol(host_symbol, src, sizeof src, 4 * sizeof(int), cudaMemcpyHostToDevice));
  cr_assert_eq(host_symbol[5], 2);
  CK(cudaMemcpyFromSymbol(dst, host_symbol, sizeof dst, 4 * sizeof(int), cudaMemcpyDeviceToHost));
  cr_assert_eq(dst[3], 4);
  /* A device pointer as the symbol, asynchronously. */
  int *dsym, *pinned;
  CK(cudaMalloc((void **)&dsym, 64));
  CK(cudaHostAlloc((void **)&pinned, 64, 0));
  memcpy(pinned, src, sizeof src);
  CK(cudaMemcpyToSymbolAsync(dsym, pinned, sizeof src, 0, cudaMemcpyHostToDevice, 0));
  CK(cudaMemcpyFromSymbolAsync_ptsz(pinned + 8, dsym, sizeof src, 0, cudaMemcpyDeviceToHost, 0));
  CK(cudaDeviceSynchronize());
  cr_assert_eq(pinned[8 + 2], 3);
  CK_ERR(cudaMemcpyToSymbolAsync(NULL, pinned, 4, 0, cudaMemcpyHostToDevice, 0), cudaErrorInvalidSymbol);
}

Test(copies, memsets, .init = race_latency) {
  unsigned char *d, *h, back[64];
  CK(cudaMalloc((void **)&d, 64));
  CK(cudaHostAlloc((void **)&h, 64, 0));
  CK(cudaMemset(d, 0x11, 64));
  CK(cudaMemcpy(back, d, 64, cudaMemcpyDeviceToHost));
  cr_assert_eq(back[63], 0x11);
  memset(h, 0, 64);
  CK(cudaMemsetAsync(h, 0x22, 64, cudaStreamPerThread)); /* pinned host memory: asynchronous */
  unsigned char early = h[0];
  CK(cudaStreamSynchronize(cudaStreamPerThread));
  cr_assert_eq(early, 0, "an async memset of pinned memory happens later");
  cr_assert_eq(h[0], 0x22);
  CK(cudaMemset(h, 0x33, 64)); /* synchronous for host memory */
  cr_assert_eq(h[10], 0x33);
  CK(cudaMemsetAsync_ptsz(d, 0x44, 64, 0));
  CK(cudaMemcpyAsync_ptsz(h, d, 64, cudaMemcpyDeviceToHost, 0));
  CK(cudaStreamSynchronize(cudaStreamPerThread));
  cr_assert_eq(h[10], 0x44);
}

#if CUDART_VERSION >= 13000 /* the batch calls below use the 13.0 prototypes */
/* ---- batches ---------------------------------------------------------------------------- */
typedef cudaError_t (*batch128_fn)(void *const *dsts, const void *const *srcs, const size_t *sizes,
                                   size_t count, struct cudaMemcpyAttributes *attrs,
                                   size_t *attrsIdxs, size_t numAttrs, size_t *failIdx,
                                   cudaStream_t stream);

typedef struct batch_fixture {
  cudaStream_t s;
  unsigned char *h, *d;
  void *dsts[3];
  const void *srcs[3];
  size_t sizes[3];
} batch_fixture;

static void batch_setup(batch_fixture *f) {
  CK(cudaStreamCreateWithFlags(&f->s, cudaStreamNonBlocking));
  CK(cudaHostAlloc((void **)&f->h, 3 * 4096, 0));
  CK(cudaMalloc((void **)&f->d, 3 * 4096));
  for (int i = 0; i < 3; i++) {
    memset(f->h + i * 4096, 10 + i, 4096);
    f->dsts[i] = f->d + i * 4096;
    f->srcs[i] = f->h + i * 4096;
    f->sizes[i] = 4096;
  }
}

static void batch_verify(batch_fixture *f) {
  unsigned char back[3 * 4096];
  CK(cudaMemcpy(back, f->d, sizeof back, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 3; i++) cr_assert_eq(back[i * 4096 + 5], 10 + i, "copy %d", i);
}

Test(copies, batch_13_0_abi, .init = low_latency) {
  int v;
  CK(cudaRuntimeGetVersion(&v));
  cr_assert_eq(v, 13000);
  batch_fixture f;
  batch_setup(&f);
  struct cudaMemcpyAttributes attr = {.srcAccessOrder = cudaMemcpySrcAccessOrderStream};
  size_t idx = 0;
  CK(cudaMemcpyBatchAsync(f.dsts, f.srcs, f.sizes, 3, &attr, &idx, 1, f.s));
  CK(cudaStreamSynchronize(f.s));
  batch_verify(&f);
  CK_ERR(cudaMemcpyBatchAsync(f.dsts, f.srcs, f.sizes, 3, &attr, &idx, 1, 0), cudaErrorInvalidValue);
  CK_ERR(cudaMemcpyBatchAsync(f.dsts, f.srcs, f.sizes, 0, &attr, &idx, 1, f.s), cudaErrorInvalidValue);
  CK(cudaMemcpyBatchAsync_ptsz(f.dsts, f.srcs, f.sizes, 3, &attr, &idx, 1, 0));
  CK(cudaStreamSynchronize(cudaStreamPerThread));
}

Test(copies, batch_source_during_api_call_is_staged, .init = race_latency) {
  batch_fixture f;
  batch_setup(&f);
  struct cudaMemcpyAttributes attrs[2] = {{.srcAccessOrder = cudaMemcpySrcAccessOrderStream},
                                          {.srcAccessOrder = cudaMemcpySrcAccessOrderDuringApiCall}};
  size_t idx[2] = {0, 1};
  CK(cudaMemcpyBatchAsync(f.dsts, f.srcs, f.sizes, 3, attrs, idx, 2, f.s));
  memset(f.h, 0, 3 * 4096); /* copy 0 reads in stream order (late), copies 1-2 were staged */
  CK(cudaStreamSynchronize(f.s));
  unsigned char back[3 * 4096];
  CK(cudaMemcpy(back, f.d, sizeof back, cudaMemcpyDeviceToHost));
  cr_assert_eq(back[5], 0);
  cr_assert_eq(back[4096 + 5], 11);
  cr_assert_eq(back[2 * 4096 + 5], 12);
}

/* Any: the source may be read before earlier work on the stream completed; simcuda reads it
 * during the call, so a producer queued before it on the same stream is not seen. */
Test(copies, batch_source_any_order_is_read_early, .init = race_latency) {
  batch_fixture f;
  batch_setup(&f);
  unsigned char *dev_src;
  CK(cudaMalloc((void **)&dev_src, 4096));
  CK(cudaMemset(dev_src, 0x77, 4096));
  CK(cudaDeviceSynchronize());
  /* The producer: a device->host copy into the first source, queued first on the stream. */
  CK(cudaMemcpyAsync(f.h, dev_src, 4096, cudaMemcpyDeviceToHost, f.s));
  struct cudaMemcpyAttributes attrs[2] = {{.srcAccessOrder = cudaMemcpySrcAccessOrderAny},
                                          {.srcAccessOrder = cudaMemcpySrcAccessOrderStream}};
  size_t idx[2] = {0, 1};
  CK(cudaMemcpyBatchAsync(f.dsts, f.srcs, f.sizes, 3, attrs, idx, 2, f.s));
  memset(f.h + 4096, 0, 2 * 4096); /* copies 1-2 read in stream order (late) */
  CK(cudaStreamSynchronize(f.s));
  unsigned char back[3 * 4096];
  CK(cudaMemcpy(back, f.d, sizeof back, cudaMemcpyDeviceToHost));
  cr_assert_eq(back[5], 10, "the Any source was read before its producer ran");
  cr_assert_eq(f.h[5], 0x77);
  cr_assert_eq(back[4096 + 5], 0);
  cr_assert_eq(back[2 * 4096 + 5], 0);
}

static void abi_12_8(void) {
  sim_env("50");
  setenv("SIMCUDA_RUNTIME_VERSION", "12080", 1);
}

Test(copies, batch_12_8_abi, .init = abi_12_8) {
  int v;
  CK(cudaRuntimeGetVersion(&v));
  cr_assert_eq(v, 12080);
  batch_fixture f;
  batch_setup(&f);
  batch128_fn batch = (batch128_fn)(void (*)(void))cudaMemcpyBatchAsync;
  struct cudaMemcpyAttributes attr = {.srcAccessOrder = cudaMemcpySrcAccessOrderStream};
  size_t idx = 0, fail = 12345;
  CK(batch(f.dsts, f.srcs, f.sizes, 3, &attr, &idx, 1, &fail, f.s));
  CK(cudaStreamSynchronize(f.s));
  batch_verify(&f);
  /* failIdx names the offending copy. */
  f.srcs[1] = NULL;
  CK_ERR(batch(f.dsts, f.srcs, f.sizes, 3, &attr, &idx, 1, &fail, f.s), cudaErrorInvalidValue);
  cr_assert_eq(fail, 1);
  batch128_fn batch_ptsz = (batch128_fn)(void (*)(void))cudaMemcpyBatchAsync_ptsz;
  f.srcs[1] = f.h + 4096;
  CK(batch_ptsz(f.dsts, f.srcs, f.sizes, 3, &attr, &idx, 1, &fail, 0));
  CK(cudaStreamSynchronize(cudaStreamPerThread));
}

#endif

static void slow_copies(void) {
  sim_env("0");
  setenv("SIMCUDA_GBPS", "0.5", 1);
}

Test(copies, bandwidth_model_keeps_results, .init = slow_copies) {
  enum { SZ = 4 << 20 };
  unsigned char *h, *d;
  CK(cudaHostAlloc((void **)&h, SZ, 0));
  CK(cudaMalloc((void **)&d, SZ));
  memset(h, 0x3c, SZ);
  CK(cudaMemcpyAsync(d, h, SZ, cudaMemcpyHostToDevice, cudaStreamPerThread));
  CK(cudaMemsetAsync(h, 0, SZ, cudaStreamPerThread));
  CK(cudaMemcpyAsync(h, d, SZ, cudaMemcpyDeviceToHost, cudaStreamPerThread));
  CK(cudaStreamSynchronize(cudaStreamPerThread));
  cr_assert_eq(h[SZ - 1], 0x3c);
}

#if CUDART_VERSION >= 13000
Test(copies, batch_3d_pointer_operands, .init = low_latency) {
  enum { W = 8, H = 4, D = 2, ROW = 16 };
  unsigned char *h, *d;
  CK(cudaHostAlloc((void **)&h, ROW * H * D, 0));
  CK(cudaMalloc((void **)&d, W * H * D));
  for (int i = 0; i < ROW * H * D; i++) h[i] = (unsigned char)i;
  struct cudaMemcpy3DBatchOp op = {0};
  op.src.type = cudaMemcpyOperandTypePointer;
  op.src.op.ptr.ptr = h;
  op.src.op.ptr.rowLength = ROW;
  op.dst.type = cudaMemcpyOperandTypePointer;
  op.dst.op.ptr.ptr = d; /* tightly packed */
  op.extent = (struct cudaExtent){W, H, D};
  op.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  CK(cudaMemcpy3DBatchAsync(1, &op, 0, s));
  CK(cudaStreamSynchronize(s));
  unsigned char back[W * H * D];
  CK(cudaMemcpy(back, d, sizeof back, cudaMemcpyDeviceToHost));
  for (int z = 0; z < D; z++)
    for (int y = 0; y < H; y++)
      for (int x = 0; x < W; x++)
        cr_assert_eq(back[(z * H + y) * W + x], (unsigned char)((z * H + y) * ROW + x));
  op.src.type = cudaMemcpyOperandTypeArray;
  CK_ERR(cudaMemcpy3DBatchAsync(1, &op, 0, s), cudaErrorInvalidValue);
}
#endif

/* Sizes CUDA refuses with cudaErrorInvalidValue, before queueing anything: past the end of the
 * address space, past a device allocation's end, into unmapped host memory. None may crash the
 * process, and the memory stays as it was. */
Test(copies, huge_and_overrunning_sizes_are_invalid_values, .init = low_latency) {
  enum { N = 8192 };
  unsigned char *h, *d;
  CK(cudaHostAlloc((void **)&h, N, 0));
  CK(cudaMalloc((void **)&d, N));
  memset(h, 0x5a, N);
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  CK_ERR(cudaMemcpyAsync(h, d, SIZE_MAX, cudaMemcpyDeviceToHost, s), cudaErrorInvalidValue);
  CK_ERR(cudaMemcpyAsync(h, d, SIZE_MAX / 2, cudaMemcpyDeviceToHost, s), cudaErrorInvalidValue);
  CK_ERR(cudaMemcpyAsync(d, h, (size_t)1 << 40, cudaMemcpyHostToDevice, s), cudaErrorInvalidValue);
  CK_ERR(cudaMemcpyAsync(h, d, N + 1, cudaMemcpyDeviceToHost, s), cudaErrorInvalidValue);
  CK_ERR(cudaMemcpy(h, d, SIZE_MAX, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  CK_ERR(cudaMemsetAsync(d, 1, N + 1, s), cudaErrorInvalidValue);
  CK_ERR(cudaMemsetAsync(h, 1, SIZE_MAX, s), cudaErrorInvalidValue);
  CK_ERR(cudaMemcpy2DAsync(h, N, d, N, N, SIZE_MAX / N, cudaMemcpyDeviceToHost, s),
         cudaErrorInvalidValue);
  CK_ERR(cudaMemcpy2DAsync(h, 1024, d, 1024, 1024, 9, cudaMemcpyDeviceToHost, s),
         cudaErrorInvalidValue); /* one row past both ends */
  CK_ERR(cudaMemcpy2DAsync(h, SIZE_MAX / 2, d, 16, 16, 3, cudaMemcpyDeviceToHost, s),
         cudaErrorInvalidValue);
  struct cudaMemcpy3DParms p = {0};
  p.srcPtr = (struct cudaPitchedPtr){d, 1024, 1024, 4};
  p.dstPtr = (struct cudaPitchedPtr){h, 1024, 1024, 4};
  p.extent = (struct cudaExtent){1024, 4, SIZE_MAX / 4096};
  p.kind = cudaMemcpyDeviceToHost;
  CK_ERR(cudaMemcpy3DAsync(&p, s), cudaErrorInvalidValue);
  p.extent = (struct cudaExtent){1024, 4, 3}; /* 12 rows of 1,024 bytes in 8,192 */
  CK_ERR(cudaMemcpy3DAsync(&p, s), cudaErrorInvalidValue);
  p.extent = (struct cudaExtent){1024, 4, 2};
  p.dstPos = (struct cudaPos){0, 0, 1};
  CK_ERR(cudaMemcpy3DAsync(&p, s), cudaErrorInvalidValue);
#if CUDART_VERSION >= 13000
  void *dsts[1] = {h};
  const void *srcs[1] = {d};
  size_t sizes[1] = {SIZE_MAX}, idx = 0;
  struct cudaMemcpyAttributes attr = {0};
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  CK_ERR(cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &attr, &idx, 1, s), cudaErrorInvalidValue);
  struct cudaMemcpy3DBatchOp op = {0};
  op.src.type = op.dst.type = cudaMemcpyOperandTypePointer;
  op.src.op.ptr.ptr = d;
  op.dst.op.ptr.ptr = h;
  op.extent = (struct cudaExtent){1024, 1024, SIZE_MAX / 1024};
  op.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  CK_ERR(cudaMemcpy3DBatchAsync(1, &op, 0, s), cudaErrorInvalidValue);
#endif
  CK_ERR(cudaMemcpyAsync(h + 1, d, N, cudaMemcpyDeviceToHost, s), cudaErrorInvalidValue);
  p.dstPos = (struct cudaPos){0, 0, 0};
  p.dstPtr.ptr = h + 1024; /* past the pinned buffer's end by 1,024 bytes */
  CK_ERR(cudaMemcpy3DAsync(&p, s), cudaErrorInvalidValue);
  /* Past a pinned range, and from pageable memory into unmapped memory. */
  unsigned char *m = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(m, MAP_FAILED);
  CK(cudaHostRegister(m, 4096, 0)); /* first: registering maps an alias, maybe at the hole */
  munmap(m + 2 * 4096, 4096);
  CK_ERR(cudaMemcpyAsync(m, d, 2 * 4096, cudaMemcpyDeviceToHost, s), cudaErrorInvalidValue);
  CK_ERR(cudaMemcpyAsync(d, m + 4096, 2 * 4096, cudaMemcpyHostToDevice, s), cudaErrorInvalidValue);
  CK_ERR(cudaMemcpy(m + 4096, d, 2 * 4096, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  CK(cudaMemcpyAsync(m, d, 4096, cudaMemcpyDeviceToHost, s));
  CK(cudaMemcpy(m + 4096, d, 4096, cudaMemcpyDeviceToHost));
  CK(cudaStreamSynchronize(s));
  CK(cudaHostUnregister(m));
  (void)cudaGetLastError();
  for (int i = 0; i < N; i++) cr_assert_eq(h[i], 0x5a, "byte %d changed", i);
  CK(cudaStreamDestroy(s));
  CK(cudaFreeHost(h));
  CK(cudaFree(d));
}
