// legacy_order.cu: what the legacy default stream's implicit order covers on a real device, for
// the calls whose reading CUDA's text leaves open. pinguard (and pgfuzz's model) follow this
// reading: an action on the legacy stream (a launch, a copy, an event record, a cudaStreamWaitEvent,
// even for an event never recorded) waits for the work already on the device's blocking streams,
// and an action on a blocking stream for the legacy stream's; a synchronize or a query is no
// action, and covers only the work on its own stream. Each case puts a kernel that spins for
// 200 ms on one stream, makes the calls, then asks whether the spinning stream is done: one JSON
// line per case, "covered" (the call ordered the host after the spin) and the milliseconds it
// took. "expect" is the reading above; "agrees" compares.
// Build: nvcc -arch=sm_90 -o legacy_order legacy_order.cu
#include <cuda_runtime.h>
#include <stdio.h>
#include <time.h>

static const unsigned long long kSpinNs = 200ull * 1000 * 1000;

__global__ void spin_ns(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}
__global__ void nop() {}

static double now_ms() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int failures;
#define CK(x)                                                                  \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess && e_ != cudaErrorNotReady) {                        \
      printf("{\"error\":\"%s: %s\"}\n", #x, cudaGetErrorName(e_));            \
      failures++;                                                              \
    }                                                                          \
  } while (0)

static cudaStream_t blk, blk2, nonblk;
static const cudaStream_t legacy = cudaStreamLegacy;

// One case: spin on `spin`, then `act` (the calls under test), then whether `spin` is done.
template <typename F>
static void run_case(const char *name, cudaStream_t spin, bool expect, F act) {
  CK(cudaDeviceSynchronize());
  spin_ns<<<1, 1, 0, spin>>>(kSpinNs);
  CK(cudaGetLastError());
  double t0 = now_ms();
  const char *extra = act();
  double ms = now_ms() - t0;
  bool covered = cudaStreamQuery(spin) == cudaSuccess;
  printf("{\"case\":\"%s\",\"covered\":%s,\"expect\":%s,\"agrees\":%s,\"ms\":%.1f%s}\n", name,
         covered ? "true" : "false", expect ? "true" : "false",
         covered == expect ? "true" : "false", ms, extra);
  fflush(stdout);
  CK(cudaDeviceSynchronize());
}

int main() {
  CK(cudaStreamCreate(&blk));
  CK(cudaStreamCreate(&blk2));
  CK(cudaStreamCreateWithFlags(&nonblk, cudaStreamNonBlocking));
  cudaEvent_t never, done, rec;
  CK(cudaEventCreate(&never));
  CK(cudaEventCreate(&done));
  CK(cudaEventCreate(&rec));
  CK(cudaEventRecord(done, blk2));
  CK(cudaStreamSynchronize(blk2));
  static char q[64];
  static void *scratch;
  CK(cudaMalloc(&scratch, 64));

  // A synchronize or a query of the legacy stream, nothing enqueued on it.
  run_case("sync_legacy_after_blocking", blk, false, [] {
    CK(cudaStreamSynchronize(legacy));
    return "";
  });
  run_case("sync_stream0_after_blocking", blk, false, [] {
    CK(cudaStreamSynchronize(0));
    return "";
  });
  run_case("query_legacy_after_blocking", blk, false, [] {
    snprintf(q, sizeof q, ",\"query\":\"%s\"", cudaGetErrorName(cudaStreamQuery(legacy)));
    return (const char *)q;
  });
  // A wait on the legacy stream, then its synchronize.
  run_case("wait_never_recorded_on_legacy_then_sync", blk, true, [&] {
    CK(cudaStreamWaitEvent(legacy, never, 0));
    CK(cudaStreamSynchronize(legacy));
    return "";
  });
  run_case("wait_completed_on_legacy_then_sync", blk, true, [&] {
    CK(cudaStreamWaitEvent(legacy, done, 0));
    CK(cudaStreamSynchronize(legacy));
    return "";
  });
  run_case("kernel_on_legacy_then_sync", blk, true, [] {
    nop<<<1, 1, 0, legacy>>>();
    CK(cudaStreamSynchronize(legacy));
    return "";
  });
  run_case("record_on_legacy_then_event_sync", blk, true, [&] {
    CK(cudaEventRecord(rec, legacy));
    CK(cudaEventSynchronize(rec));
    return "";
  });
  // The other way: work on the legacy stream, then a blocking stream with nothing on it.
  run_case("sync_blocking_after_legacy", legacy, false, [] {
    CK(cudaStreamSynchronize(blk));
    return "";
  });
  run_case("wait_never_recorded_on_blocking_then_sync", legacy, true, [&] {
    CK(cudaStreamWaitEvent(blk, never, 0));
    CK(cudaStreamSynchronize(blk));
    return "";
  });
  run_case("kernel_on_blocking_then_sync", legacy, true, [] {
    nop<<<1, 1, 0, blk>>>();
    CK(cudaStreamSynchronize(blk));
    return "";
  });
  run_case("wait_completed_on_blocking_then_sync", legacy, true, [&] {
    CK(cudaStreamWaitEvent(blk, done, 0));
    CK(cudaStreamSynchronize(blk));
    return "";
  });
  run_case("record_on_blocking_then_sync", legacy, true, [&] {
    CK(cudaEventRecord(rec, blk));
    CK(cudaStreamSynchronize(blk));
    return "";
  });
  run_case("record_on_blocking_then_event_sync", legacy, true, [&] {
    CK(cudaEventRecord(rec, blk));
    CK(cudaEventSynchronize(rec));
    return "";
  });
  run_case("memset_on_blocking_then_sync", legacy, true, [&] {
    CK(cudaMemsetAsync(scratch, 0, 64, blk));
    CK(cudaStreamSynchronize(blk));
    return "";
  });
  // Through the legacy stream, from one blocking stream to another (blk2 has no direct order).
  run_case("blocking_to_blocking_direct", blk, false, [] {
    nop<<<1, 1, 0, blk2>>>();
    CK(cudaStreamSynchronize(blk2));
    return "";
  });
  run_case("kernel_on_legacy_orders_next_blocking", blk, true, [] {
    nop<<<1, 1, 0, legacy>>>();
    nop<<<1, 1, 0, blk2>>>();
    CK(cudaStreamSynchronize(blk2));
    return "";
  });
  run_case("wait_never_recorded_on_legacy_orders_next_blocking", blk, true, [&] {
    CK(cudaStreamWaitEvent(legacy, never, 0));
    nop<<<1, 1, 0, blk2>>>();
    CK(cudaStreamSynchronize(blk2));
    return "";
  });
  run_case("wait_completed_on_legacy_orders_next_blocking", blk, true, [&] {
    CK(cudaStreamWaitEvent(legacy, done, 0));
    nop<<<1, 1, 0, blk2>>>();
    CK(cudaStreamSynchronize(blk2));
    return "";
  });
  run_case("sync_legacy_orders_next_blocking", blk, false, [] {
    snprintf(q, sizeof q, ",\"query\":\"%s\"", cudaGetErrorName(cudaStreamQuery(legacy)));
    nop<<<1, 1, 0, blk2>>>();
    CK(cudaStreamSynchronize(blk2));
    return (const char *)q;
  });
  // Controls: a non-blocking stream is ordered by none of it.
  run_case("kernel_on_legacy_after_nonblocking", nonblk, false, [] {
    nop<<<1, 1, 0, legacy>>>();
    CK(cudaStreamSynchronize(legacy));
    return "";
  });
  run_case("device_sync_after_nonblocking", nonblk, true, [] {
    CK(cudaDeviceSynchronize());
    return "";
  });
  printf("{\"failures\":%d}\n", failures);
  return failures ? 1 : 0;
}
