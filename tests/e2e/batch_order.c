/* Intent: cudaMemcpyBatchAsync reads each copy's source as its attribute's srcAccessOrder says,
 * and pinguard tracks it so (attrs[a] applies to copies attrs_idxs[a] to attrs_idxs[a+1] - 1).
 *   batch_order bug|fixed ORDER_WHAT
 * A batch of four host->device copies, one quarter of a pinned buffer each, with ORDER (during:
 * DuringApiCall, any: Any, stream: Stream) for every copy, or mixed: Stream for copies 0-1 and
 * DuringApiCall for 2-3. WHAT, each with a fixed twin that synchronizes first:
 *   free      the buffer is freed right after the call;
 *   write     the CPU overwrites the buffer right after the call (mixed_during_write: only the
 *             half the DuringApiCall copies read; mixed_stream_write: only the other half);
 *   producer  a device->host copy on the same stream writes the buffer just before the batch;
 *             the device's copy is read back and its checksum printed (64 bytes sampled: 0x5a
 *             each if the batch read what the producer wrote, 0x11 if it read them before). */
// Each case runs on this program and on e2e_batch_order_static, the same program linked with
// simcuda's static runtime (libcudart_static.a), whose batches reach pinguard as the driver's
// cuMemcpyBatchAsync_v2 underneath, with the same source orders (its tests are named
// static_runtime.batch_order.*; the static runtime dlopens libcuda.so.1, which only
// LD_LIBRARY_PATH finds). Enforce's producer cases read back what the producer wrote (64 sampled
// bytes of 0x5a: 5760); whether audit sees stale bytes depends on the report being made within
// the producer's latency: not checked.
// LIST: variants batch_order/batch_order batch_order_static/static_runtime.batch_order
// LIST: env_batch_order
// LIST: env_batch_order_static LD_LIBRARY_PATH=${SIMCUDA_LIB_DIR}
// CASE: ${t}.during_free.${twin}.${mode} PROG ${p} MODE ${mode} EXPECT none
//   ARGS ${twin} during_free ENV ${env_${p}}
//   FOR p/t IN ${variants} FOR mode IN audit enforce FOR twin IN bug fixed
// CASE: ${t}.during_write.${twin}.${mode} PROG ${p} MODE ${mode} EXPECT none
//   ARGS ${twin} during_write STDOUT "checksum 1088$" ENV ${GUARD_ENV} ${env_${p}}
//   FOR p/t IN ${variants} FOR mode IN audit enforce FOR twin IN bug fixed
// CASE: ${t}.mixed_during_write.${twin}.${mode} PROG ${p} MODE ${mode} EXPECT none
//   ARGS ${twin} mixed_during_write ENV ${GUARD_ENV} ${env_${p}}
//   FOR p/t IN ${variants} FOR mode IN audit enforce FOR twin IN bug fixed
// CASE: ${t}.stream_producer.${twin}.${mode} PROG ${p} MODE ${mode} EXPECT none
//   ARGS ${twin} stream_producer STDOUT "checksum 5760$" ENV ${env_${p}}
//   FOR p/t IN ${variants} FOR mode IN audit enforce FOR twin IN bug fixed
// CASE: ${t}.mixed_stream_write.bug.${mode} PROG ${p} MODE ${mode}
//   EXPECT cpu-write-during-device-access ARGS bug mixed_stream_write
//   ENV ${GUARD_ENV} ${env_${p}} FOR p/t IN ${variants} FOR mode IN audit enforce
// CASE: ${t}.mixed_stream_write.fixed.${mode} PROG ${p} MODE ${mode} EXPECT none
//   ARGS fixed mixed_stream_write ENV ${GUARD_ENV} ${env_${p}}
//   FOR p/t IN ${variants} FOR mode IN audit enforce
// CASE: ${t}.${order}_producer.bug.${mode} PROG ${p} MODE ${mode} EXPECT device-access-conflict
//   ARGS bug ${order}_producer STDOUT ${ok} ENV SIMCUDA_LATENCY_US=300000 ${env_${p}}
//   FOR p/t IN ${variants} FOR mode/ok IN audit/checksum "enforce/checksum 5760$"
//   FOR order IN during any
// CASE: ${t}.${order}_producer.fixed.${mode} PROG ${p} MODE ${mode} EXPECT none
//   ARGS fixed ${order}_producer STDOUT "checksum 5760$" ENV ${env_${p}}
//   FOR p/t IN ${variants} FOR mode IN audit enforce FOR order IN during any
// CASE: ${t}.any_free.bug.${mode} PROG ${p} MODE ${mode} EXPECT free-during-device-access
//   ARGS bug any_free ENV ${env_${p}} FOR p/t IN ${variants} FOR mode IN audit enforce
// CASE: ${t}.any_free.fixed.${mode} PROG ${p} MODE ${mode} EXPECT none
//   ARGS fixed any_free ENV ${env_${p}} FOR p/t IN ${variants} FOR mode IN audit enforce

#include <stdbool.h>

#include "e2e.h"

enum { N = 4, PIECE = BUF_BYTES / N };

static unsigned long checksum(const unsigned char *p) {
  unsigned long sum = 0;
  for (size_t i = 0; i < BUF_BYTES; i += 4096) sum += p[i];
  return sum;
}

int main(int argc, char **argv) {
  int bug = e2e_is_bug(argc, argv);
  if (argc < 3) return 2;
  const char *c = argv[2];
  struct cudaMemcpyAttributes attrs[2];
  memset(attrs, 0, sizeof attrs);
  size_t idxs[2] = {0, 2}, nattrs = 1;
  if (strncmp(c, "during_", 7) == 0) {
    attrs[0].srcAccessOrder = cudaMemcpySrcAccessOrderDuringApiCall;
  } else if (strncmp(c, "any_", 4) == 0) {
    attrs[0].srcAccessOrder = cudaMemcpySrcAccessOrderAny;
  } else if (strncmp(c, "stream_", 7) == 0) {
    attrs[0].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  } else if (strncmp(c, "mixed_", 6) == 0) {
    attrs[0].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    attrs[1].srcAccessOrder = cudaMemcpySrcAccessOrderDuringApiCall;
    nattrs = 2;
  } else {
    fprintf(stderr, "batch_order: unknown case %s\n", c);
    return 2;
  }
  const char *what = strchr(c, '_') + 1;

  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  unsigned char *host, *dev, *prod;
  CHECK(cudaHostAlloc((void **)&host, BUF_BYTES, cudaHostAllocDefault));
  CHECK(cudaMalloc((void **)&dev, BUF_BYTES));
  CHECK(cudaMalloc((void **)&prod, BUF_BYTES));
  CHECK(cudaMemset(prod, 0x5a, BUF_BYTES));
  CHECK(cudaDeviceSynchronize());
  memset(host, 0x11, BUF_BYTES);
  void *dsts[N];
  const void *srcs[N];
  size_t sizes[N];
  for (int i = 0; i < N; i++) {
    dsts[i] = dev + i * PIECE;
    srcs[i] = host + i * PIECE;
    sizes[i] = PIECE;
  }
  bool producer = strcmp(what, "producer") == 0;
  if (producer) {
    CHECK(cudaMemcpyAsync(host, prod, BUF_BYTES, cudaMemcpyDeviceToHost, s));
    if (!bug) CHECK(cudaStreamSynchronize(s));
  }
  CHECK(cudaMemcpyBatchAsync(dsts, srcs, sizes, N, attrs, idxs, nattrs, s));
  if (!producer && !bug) CHECK(cudaStreamSynchronize(s));
  if (strcmp(what, "free") == 0) {
    CHECK(cudaFreeHost(host));
    host = NULL;
  } else if (strcmp(what, "write") == 0) {
    memset(host, 0x22, BUF_BYTES);
  } else if (strcmp(what, "during_write") == 0) {
    memset(host + 2 * PIECE, 0x22, 2 * PIECE); /* what the DuringApiCall copies read */
  } else if (strcmp(what, "stream_write") == 0) {
    memset(host, 0x22, 2 * PIECE); /* what the Stream copies read */
  } else if (!producer) {
    fprintf(stderr, "batch_order: unknown case %s\n", c);
    return 2;
  }
  CHECK(cudaStreamSynchronize(s));
  unsigned char *back = malloc(BUF_BYTES);
  if (!back) return 3;
  CHECK(cudaMemcpy(back, dev, BUF_BYTES, cudaMemcpyDeviceToHost));
  printf("checksum %lu\n", checksum(back));
  free(back);
  if (host) CHECK(cudaFreeHost(host));
  CHECK(cudaFree(dev));
  CHECK(cudaFree(prod));
  CHECK(cudaStreamDestroy(s));
  return 0;
}
