/* Intent: CPU work that a stream itself orders is not a violation. A host function queued on a
 * stream runs after the work before it and before the work after it, so it may touch a pinned
 * buffer that a later copy on the same stream will write, or read what an earlier copy wrote.
 *   before: host function, then a device->host copy into the pages it reads. It must see the old
 *           bytes; no report; enforce must not wait (the copy waits behind the host function: a
 *           wait there would never end).
 *   after:  a device->host copy, then a host function reading its destination: it must see the
 *           copied bytes, with no report.
 *   callback: "before" through cudaStreamAddCallback.
 *   event:  the host function on one stream, an event recorded after it, another stream waits
 *           for the event and then copies into the pages the host function reads: ordered, as
 *           "before" (old bytes, no report, no wait).
 *   legacy: the host function on a blocking stream, then the copy on the legacy default stream,
 *           which waits for all earlier work on blocking streams: ordered likewise.
 *   after_event: a device->host copy on another stream, an event after it, the host function's
 *           stream waits for the event: the host function comes after the copy and must see its
 *           bytes, with no report (the copy completed before it ran).
 *   other:  the host function reads a buffer that a copy on ANOTHER stream is writing, with no
 *           ordering between them: a real cpu-read-during-device-write. Enforce cannot wait
 *           inside a host function (CUDA forbids it and it could deadlock), so it reports.
 * Each runs several rounds, so the host function also meets pages already protected again.
 * Usage: hostfn_order before|after|callback|event|legacy|after_event|other */
// Host functions before and after a copy touch its pages with no report, and enforce never
// waits inside a host function (the copy waits behind it).
// CASE: hostfn_order.${how}.${mode} MODE ${mode} EXPECT none ARGS ${how}
//   STDOUT "every host function saw the bytes stream order gives" ENV ${GUARD_ENV}
//   FOR mode IN audit enforce FOR how IN after after_event
// CASE: hostfn_order.${how}.${mode} MODE ${mode} EXPECT none ARGS ${how}
//   STDOUT "every host function saw the bytes stream order gives" ENV ${GUARD_ENV}
//   TIMEOUT ${timeout} FOR mode/timeout IN audit/60 enforce/30
//   FOR how IN before callback event legacy
// enforce cannot wait inside a host function, so the violation happened: exitcode in both modes.
// CASE: hostfn_order.other.${mode} MODE ${mode} EXPECT cpu-read-during-device-write EXIT 23
//   ARGS other STDOUT "host functions done" ENV ${GUARD_ENV} FOR mode IN audit enforce

#include <unistd.h>

#include "e2e.h"

#define ROUNDS 4

static unsigned char *buf;
static unsigned char seen[ROUNDS];
static int round_no;

static void CUDART_CB read_mid(void *unused) {
  (void)unused;
  seen[round_no] = buf[BUF_BYTES / 2];
}

static void CUDART_CB read_mid_cb(cudaStream_t s, cudaError_t status, void *unused) {
  (void)s;
  (void)status;
  read_mid(unused);
}

int main(int argc, char **argv) {
  const char *how = argc > 1 ? argv[1] : "";
  int before = !strcmp(how, "before"), after = !strcmp(how, "after");
  int callback = !strcmp(how, "callback"), other = !strcmp(how, "other");
  int event = !strcmp(how, "event"), legacy = !strcmp(how, "legacy");
  int after_event = !strcmp(how, "after_event");
  if (!before && !after && !callback && !other && !event && !legacy && !after_event) {
    fprintf(stderr, "usage: %s before|after|callback|event|legacy|after_event|other\n", argv[0]);
    return 2;
  }
  void *dev;
  cudaStream_t s, s2, blocking;
  cudaEvent_t ev;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CHECK(cudaStreamCreate(&blocking));
  CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  CHECK(cudaHostAlloc((void **)&buf, BUF_BYTES, cudaHostAllocDefault));
  CHECK(cudaMalloc(&dev, BUF_BYTES));
  int ok = 1;
  for (round_no = 0; round_no < ROUNDS; round_no++) {
    unsigned char old = (unsigned char)(0x10 + round_no), fresh = (unsigned char)(0x60 + round_no);
    memset(buf, old, BUF_BYTES);
    CHECK(cudaMemset(dev, fresh, BUF_BYTES));
    CHECK(cudaDeviceSynchronize());
    if (before || callback) {
      /* A gate keeps the copy queued behind the host function while the pages are guarded. */
      if (callback) CHECK(cudaStreamAddCallback(s, read_mid_cb, NULL, 0));
      else CHECK(cudaLaunchHostFunc(s, read_mid, NULL));
      CHECK(cudaMemcpyAsync(buf, dev, BUF_BYTES, cudaMemcpyDeviceToHost, s));
      CHECK(cudaStreamSynchronize(s));
      if (seen[round_no] != old) ok = 0;
    } else if (event) {
      CHECK(cudaLaunchHostFunc(s, read_mid, NULL));
      CHECK(cudaEventRecord(ev, s));
      CHECK(cudaStreamWaitEvent(s2, ev, 0));
      CHECK(cudaMemcpyAsync(buf, dev, BUF_BYTES, cudaMemcpyDeviceToHost, s2));
      CHECK(cudaStreamSynchronize(s2));
      if (seen[round_no] != old) ok = 0;
    } else if (after_event) {
      CHECK(cudaMemcpyAsync(buf, dev, BUF_BYTES, cudaMemcpyDeviceToHost, s2));
      CHECK(cudaEventRecord(ev, s2));
      CHECK(cudaStreamWaitEvent(s, ev, 0));
      CHECK(cudaLaunchHostFunc(s, read_mid, NULL));
      CHECK(cudaStreamSynchronize(s));
      if (seen[round_no] != fresh) ok = 0;
    } else if (legacy) {
      CHECK(cudaLaunchHostFunc(blocking, read_mid, NULL));
      CHECK(cudaMemcpyAsync(buf, dev, BUF_BYTES, cudaMemcpyDeviceToHost, 0));
      CHECK(cudaStreamSynchronize(0));
      if (seen[round_no] != old) ok = 0;
    } else if (after) {
      CHECK(cudaMemcpyAsync(buf, dev, BUF_BYTES, cudaMemcpyDeviceToHost, s));
      CHECK(cudaLaunchHostFunc(s, read_mid, NULL));
      CHECK(cudaStreamSynchronize(s));
      if (seen[round_no] != fresh) ok = 0;
    } else {
      CHECK(cudaMemcpyAsync(buf, dev, BUF_BYTES, cudaMemcpyDeviceToHost, s2));
      CHECK(cudaLaunchHostFunc(s, read_mid, NULL));
      CHECK(cudaStreamSynchronize(s));
      CHECK(cudaStreamSynchronize(s2));
    }
  }
  if (!other) printf(ok ? "every host function saw the bytes stream order gives\n"
                        : "a host function saw bytes out of stream order\n");
  else printf("host functions done\n");
  CHECK(cudaFreeHost(buf));
  CHECK(cudaFree(dev));
  return 0;
}
