/* test_tracker_devices.c: happens-before with several devices (SIMCUDA_DEVICES=4): the default
 * stream handles name a different stream on each device, the legacy stream's implicit ordering
 * holds within one device only, a device sync covers the current device only, events order work
 * across devices, completion events are created on their stream's device (with the thread's
 * device put back), and every access records its device. Streams are held busy by gates. */
#include "test_tracker_support.h"

#define N 65536

static char *buf;
static void *dev[4];
static cudaStream_t s[4]; /* a blocking stream on each device */

static void set_dev(int d) { cr_assert_eq(cudaSetDevice(d), cudaSuccess); }

static int cur_dev(void) {
  int d = -1;
  cr_assert_eq(cudaGetDevice(&d), cudaSuccess);
  return d;
}

static void setup(void) {
  pg_cudart_fns_t rt = sim_runtime_fns();
  rt.get_device = cudaGetDevice;
  rt.get_device_count = cudaGetDeviceCount;
  rt.set_device = cudaSetDevice;
  rt.stream_get_device = cudaStreamGetDevice;
  pg_devops_t ops = pg_devops_runtime(&rt);
  cr_assert_eq(pg_tracker_init(&ops), 0);
  int n = 0;
  cr_assert_eq(cudaGetDeviceCount(&n), cudaSuccess);
  cr_assert_eq(n, 4, "run with SIMCUDA_DEVICES=4");
  buf = tt_pinned(N);
  for (int d = 0; d < 4; d++) {
    set_dev(d);
    dev[d] = tt_device(N);
    s[d] = tt_stream(cudaStreamDefault);
  }
  set_dev(0);
}

static void teardown(void) {
  tt_open_gates();
  for (int d = 0; d < 4; d++) {
    cudaSetDevice(d);
    cudaDeviceSynchronize();
  }
  cudaSetDevice(0);
}

static size_t conflicts(cudaStream_t st, pg_access_t *out) {
  return pg_access_conflicts(buf, N, PG_DIR_WRITE, st, out, 4);
}

TestSuite(tracker_devices, .init = setup, .fini = teardown, .timeout = 30);

Test(tracker_devices, legacy_streams_are_per_device) {
  tt_close_gate(0); /* device 0's legacy stream */
  cr_assert_eq(tt_copy_d2h(buf, dev[0], 4096, 0), 1);
  pg_access_t out[4];
  cr_assert_eq(conflicts(0, out), 0, "the same legacy stream");
  set_dev(1);
  cr_assert_eq(conflicts(0, out), 1, "device 1's legacy stream is another stream");
  cr_assert_eq(out[0].device, 0);
  cr_assert_eq(conflicts(cudaStreamLegacy, out), 1);
}

Test(tracker_devices, legacy_orders_only_its_devices_blocking_streams) {
  tt_close_gate(s[0]);
  cr_assert_eq(tt_copy_d2h(buf, dev[0], 4096, s[0]), 1);
  pg_access_t out[4];
  cr_assert_eq(conflicts(0, out), 0, "device 0's legacy work waits for device 0's stream");
  set_dev(1);
  cr_assert_eq(conflicts(0, out), 1, "device 1's legacy work does not");
}

Test(tracker_devices, blocking_streams_of_another_device_do_not_wait_for_legacy_work) {
  tt_close_gate(0);
  cr_assert_eq(tt_copy_d2h(buf, dev[0], 4096, 0), 1);
  pg_access_t out[4];
  cudaStream_t s0b = tt_stream(cudaStreamDefault);
  cr_assert_eq(conflicts(s0b, out), 0, "a blocking stream of device 0 waits");
  cr_assert_eq(conflicts(s[1], out), 1, "a blocking stream of device 1 does not");
  cr_assert_eq(out[0].device, 0);
}

Test(tracker_devices, device_sync_covers_only_the_current_device) {
  tt_close_gate(s[0]); /* gate 0 */
  set_dev(1);
  tt_close_gate(s[1]); /* gate 1 */
  cr_assert_eq(tt_copy_d2h(buf, dev[0], 4096, s[0]), 1);
  cr_assert_eq(tt_copy_d2h(buf + 8192, dev[1], 4096, s[1]), 1);
  sem_post(&tt_gates[1].sem); /* device 1's stream runs; device 0's stays held */
  tt_device_sync();           /* device 1 */
  pg_access_t out[4];
  cr_assert_eq(conflicts(s[2], out), 1, "device 0's copy is still in flight");
  cr_assert_eq(out[0].lo, (uintptr_t)buf);
  cr_assert_eq(out[0].device, 0);
  cr_assert_eq(pg_tracker_inflight_count(), 1, "device 1's copy retired");
}

Test(tracker_devices, events_order_work_across_devices) {
  tt_close_gate(s[0]);
  cr_assert_eq(tt_copy_d2h(buf, dev[0], 4096, s[0]), 1);
  cudaEvent_t e;
  cr_assert_eq(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), cudaSuccess); /* device 0 */
  tt_record(e, s[0]);
  set_dev(1);
  tt_wait_event(s[1], e);
  pg_access_t out[4];
  cr_assert_eq(conflicts(s[1], out), 0, "device 1's stream waited for device 0's event");
  cr_assert_eq(conflicts(s[2], out), 1, "device 2's did not");
  tt_open_gates();
  pg_hb_sync_prepare(s[1]); /* a stream sync of another device's stream, from device 1 */
  cr_assert_eq(cudaStreamSynchronize(s[0]), cudaSuccess);
  pg_hb_sync_done(1);
  cr_assert_eq(conflicts(s[2], out), 0, "the host learned what s[1] was ordered after");
  cr_assert_eq(cudaEventDestroy(e), cudaSuccess);
}

Test(tracker_devices, completion_events_belong_to_the_streams_device) {
  /* Device 0 current, a copy on device 2's stream: its completion event must be device 2's,
   * else recording it fails and the copy goes untracked. */
  set_dev(2);
  tt_close_gate(s[2]);
  set_dev(0);
  cr_assert_eq(tt_copy_d2h(buf, dev[2], 4096, s[2]), 1, "tracked");
  cr_assert_eq(cur_dev(), 0, "the thread's device is put back");
  pg_access_t out[4];
  cr_assert_eq(pg_inflight_query(buf, N, 0, out, 4), 1);
  cr_assert_eq(out[0].device, 2);
  cr_assert_eq(out[0].stream, s[2]);
  /* The pool's next events too, and the device stays the thread's. */
  for (int i = 1; i < 20; i++) cr_assert_eq(tt_copy_d2h(buf + i * 512, dev[2], 512, s[2]), 1);
  cr_assert_eq(cur_dev(), 0);
}

Test(tracker_devices, per_thread_streams_are_per_device) {
  tt_close_gate(cudaStreamPerThread);
  cr_assert_eq(tt_copy_d2h(buf, dev[0], 4096, cudaStreamPerThread), 1);
  pg_access_t out[4];
  cr_assert_eq(conflicts(cudaStreamPerThread, out), 0, "this thread's stream on device 0");
  set_dev(3);
  cr_assert_eq(conflicts(cudaStreamPerThread, out), 1, "its stream on device 3 is another one");
  cr_assert_eq(out[0].device, 0);
}
