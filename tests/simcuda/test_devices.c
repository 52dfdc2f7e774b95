/* test_devices.c: simcuda with SIMCUDA_DEVICES=8: the count and per-device properties, bad values,
 * the per-thread current device, one arena per device, pointer attributes, streams and events
 * bound to the device current at their creation (cross-device records, timings and launches
 * refused as by CUDA; cross-device waits, queries and synchronizations working; copies on
 * another device's stream working), peer copies and peer access, cudaDeviceSynchronize of the
 * current device only, and default streams per device (legacy) and per (thread, device). */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <simcuda_kernel.h>

#include "test_util.h"

#include <criterion/redirect.h>

#define NDEV 8

static void eight(void) {
  setenv("SIMCUDA_DEVICES", "8", 1);
  sim_env("50");
}

/* ---- count, properties, bad values -------------------------------------------------------- */
Test(devices, count_and_distinct_properties, .init = eight) {
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  cr_assert_eq(n, NDEV);
  char names[NDEV][256];
  for (int d = 0; d < NDEV; d++) {
    struct cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, d));
    cr_assert_eq(p.pciBusID, d);
    cr_assert_eq(p.major, 9);
    snprintf(names[d], sizeof names[d], "%s", p.name);
    for (int e = 0; e < d; e++) cr_assert_str_neq(names[e], names[d]);
    int bus = -1;
    CK(cudaDeviceGetAttribute(&bus, cudaDevAttrPciBusId, d));
    cr_assert_eq(bus, d);
    char id[32], want[32];
    CK(cudaDeviceGetPCIBusId(id, sizeof id, d));
    snprintf(want, sizeof want, "0000:%02x:00.0", d);
    cr_assert_str_eq(id, want);
  }
  cr_assert_str_eq(names[0], "simcuda simulated device"); /* as with one device */
  struct cudaDeviceProp p;
  int v;
  CK_ERR(cudaGetDeviceProperties(&p, NDEV), cudaErrorInvalidDevice);
  CK_ERR(cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, NDEV), cudaErrorInvalidDevice);
  CK_ERR(cudaSetDevice(NDEV), cudaErrorInvalidDevice);
  CK_ERR(cudaSetDevice(-1), cudaErrorInvalidDevice);
}

static void sixteen(void) { setenv("SIMCUDA_DEVICES", "16", 1); }
Test(devices, sixteen_is_the_maximum, .init = sixteen) {
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  cr_assert_eq(n, 16);
  CK(cudaSetDevice(15));
}

static void unset(void) { unsetenv("SIMCUDA_DEVICES"); }
Test(devices, unset_means_one, .init = unset) {
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  cr_assert_eq(n, 1);
  CK_ERR(cudaSetDevice(1), cudaErrorInvalidDevice);
}

/* A bad value is a configuration error: reported on stderr, and no device exists. */
#define BAD_VALUE_TEST(name, value)                                              \
  static void bad_##name(void) {                                                 \
    setenv("SIMCUDA_DEVICES", value, 1);                                         \
    cr_redirect_stderr();                                                        \
  }                                                                              \
  Test(devices, bad_value_##name, .init = bad_##name) {                          \
    int n = -1;                                                                  \
    CK_ERR(cudaGetDeviceCount(&n), cudaErrorNoDevice);                           \
    void *p = NULL;                                                              \
    CK_ERR(cudaMalloc(&p, 64), cudaErrorNoDevice);                               \
    fflush(stderr);                                                              \
    cr_assert_stderr_eq_str("simcuda: SIMCUDA_DEVICES='" value "' is invalid (want a whole " \
                            "number from 1 to 16); every CUDA call will fail with "          \
                            "cudaErrorNoDevice\n");                              \
  }
BAD_VALUE_TEST(zero, "0")
BAD_VALUE_TEST(seventeen, "17")
BAD_VALUE_TEST(word, "two")
BAD_VALUE_TEST(trailing, "8x")
BAD_VALUE_TEST(negative, "-1")

/* ---- the current device is per thread ----------------------------------------------------- */
/* Threads record what they saw; the test thread asserts. */
typedef struct dev_probe {
  int first, after;
  cudaError_t err;
} dev_probe;

static void *probe_thread(void *p) {
  dev_probe *r = p;
  cudaError_t e1 = cudaGetDevice(&r->first), e2 = cudaSetDevice(5), e3 = cudaGetDevice(&r->after);
  r->err = e1 ? e1 : e2 ? e2 : e3;
  return NULL;
}

Test(devices, current_device_is_per_thread, .init = eight) {
  int d = -1;
  CK(cudaGetDevice(&d));
  cr_assert_eq(d, 0);
  CK(cudaSetDevice(3));
  dev_probe r = {-1, -1, cudaSuccess};
  pthread_t t;
  pthread_create(&t, NULL, probe_thread, &r);
  pthread_join(t, NULL);
  CK(r.err);
  cr_assert_eq(r.first, 0, "a thread's first call uses device 0, not its creator's");
  cr_assert_eq(r.after, 5);
  CK(cudaGetDevice(&d));
  cr_assert_eq(d, 3, "another thread's cudaSetDevice changed this thread's device");
}

/* ---- arenas and pointer attributes -------------------------------------------------------- */
Test(devices, each_device_allocates_from_its_own_arena, .init = eight) {
  void *p[NDEV];
  size_t free_before[NDEV], total;
  for (int d = 0; d < NDEV; d++) {
    CK(cudaSetDevice(d));
    CK(cudaMemGetInfo(&free_before[d], &total));
  }
  for (int d = 0; d < NDEV; d++) {
    CK(cudaSetDevice(d));
    CK(cudaMalloc(&p[d], 1 << 20));
    memset(p[d], d, 1 << 20); /* simulated device memory is host-addressable */
  }
  CK(cudaSetDevice(0));
  for (int d = 0; d < NDEV; d++) {
    struct cudaPointerAttributes a;
    CK(cudaPointerGetAttributes(&a, (char *)p[d] + 4096));
    cr_assert_eq(a.type, cudaMemoryTypeDevice);
    cr_assert_eq(a.device, d);
    for (int e = 0; e < d; e++)
      cr_assert((char *)p[e] + (1 << 20) <= (char *)p[d] || (char *)p[d] + (1 << 20) <= (char *)p[e]);
  }
  /* Memory info is the current device's: one more allocation on device 2 shows there only. */
  void *q;
  CK(cudaSetDevice(2));
  CK(cudaMalloc(&q, 8 << 20));
  size_t f, t;
  CK(cudaMemGetInfo(&f, &t));
  cr_assert_eq(f, free_before[2] - (9 << 20));
  CK(cudaSetDevice(5));
  CK(cudaMemGetInfo(&f, &t));
  cr_assert_eq(f, free_before[5] - (1 << 20));
  /* cudaFree works from any device. */
  CK(cudaFree(q));
  for (int d = 0; d < NDEV; d++) CK(cudaFree(p[d]));
}

Test(devices, malloc_async_uses_the_streams_device, .init = eight) {
  cudaStream_t s4;
  CK(cudaSetDevice(4));
  CK(cudaStreamCreate(&s4));
  CK(cudaSetDevice(1));
  void *p;
  CK(cudaMallocAsync(&p, 4096, s4));
  struct cudaPointerAttributes a;
  CK(cudaPointerGetAttributes(&a, p));
  cr_assert_eq(a.device, 4);
  CK(cudaFreeAsync(p, s4));
  CK(cudaStreamSynchronize(s4));
}

Test(devices, pinned_memory_is_host_memory_of_the_allocating_device, .init = eight) {
  CK(cudaSetDevice(3));
  char *h;
  CK(cudaHostAlloc((void **)&h, 8192, cudaHostAllocPortable));
  CK(cudaSetDevice(5));
  static char reg[3 * 4096] __attribute__((aligned(4096)));
  CK(cudaHostRegister(reg, sizeof reg, cudaHostRegisterPortable));
  /* Asked from another device: the same answer, and the host address works on every device. */
  CK(cudaSetDevice(6));
  struct cudaPointerAttributes a;
  CK(cudaPointerGetAttributes(&a, h + 100));
  cr_assert_eq(a.type, cudaMemoryTypeHost);
  cr_assert_eq(a.device, 3, "the device current when it was allocated");
  cr_assert_eq(a.devicePointer, h + 100);
  cr_assert_eq(a.hostPointer, h + 100);
  CK(cudaPointerGetAttributes(&a, reg + 5000));
  cr_assert_eq(a.type, cudaMemoryTypeHost);
  cr_assert_eq(a.device, 5, "the device current when it was registered");
  cr_assert_eq(a.devicePointer, reg + 5000);
  unsigned fl = 0;
  CK(cudaHostGetFlags(&fl, h));
  cr_assert(fl & cudaHostAllocPortable);
  /* Any device copies through it. */
  char *d7;
  CK(cudaSetDevice(7));
  CK(cudaMalloc((void **)&d7, 8192));
  memset(h, 0x5a, 8192);
  CK(cudaMemcpy(d7, h, 8192, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(reg, d7, 8192, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 8192; i++) cr_assert_eq((unsigned char)reg[i], 0x5a);
  CK(cudaHostUnregister(reg));
  CK(cudaFreeHost(h));
}

/* ---- streams and events belong to their device ------------------------------------------ */
Test(devices, streams_belong_to_the_device_current_at_creation, .init = eight) {
  cudaStream_t s[NDEV];
  for (int d = 0; d < NDEV; d++) {
    CK(cudaSetDevice(d));
    CK(cudaStreamCreateWithFlags(&s[d], cudaStreamNonBlocking));
  }
  CK(cudaSetDevice(2));
  for (int d = 0; d < NDEV; d++) {
    int got = -1;
    CK(cudaStreamGetDevice(s[d], &got));
    cr_assert_eq(got, d);
  }
  int got = -1;
  CK(cudaStreamGetDevice(0, &got)); /* the legacy stream of the current device */
  cr_assert_eq(got, 2);
  CK(cudaStreamGetDevice(cudaStreamPerThread, &got));
  cr_assert_eq(got, 2);
  for (int d = 0; d < NDEV; d++) CK(cudaStreamDestroy(s[d]));
}

Test(devices, event_record_on_another_devices_stream_fails, .init = eight) {
  cudaEvent_t e0, e1;
  cudaStream_t s0, s1;
  CK(cudaSetDevice(0));
  CK(cudaEventCreate(&e0));
  CK(cudaStreamCreate(&s0));
  CK(cudaSetDevice(1));
  CK(cudaEventCreate(&e1));
  CK(cudaStreamCreate(&s1));
  /* Current device 1: e0 on s1, or on device 1's legacy stream, is refused. */
  CK_ERR(cudaEventRecord(e0, s1), cudaErrorInvalidResourceHandle);
  CK_ERR(cudaEventRecord(e0, 0), cudaErrorInvalidResourceHandle);
  CK_ERR(cudaEventRecord(e0, cudaStreamPerThread), cudaErrorInvalidResourceHandle);
  CK_ERR(cudaEventRecordWithFlags(e0, s1, 0), cudaErrorInvalidResourceHandle);
  /* Event and stream of the same device: fine, whatever device is current. */
  CK(cudaEventRecord(e0, s0));
  CK(cudaEventRecord(e1, s1));
  CK(cudaEventRecord(e1, 0));
  CK(cudaEventSynchronize(e0));
  CK(cudaEventSynchronize(e1));
  /* Timing two events of different devices is refused too. */
  float ms;
  CK_ERR(cudaEventElapsedTime(&ms, e0, e1), cudaErrorInvalidResourceHandle);
  CK(cudaEventElapsedTime(&ms, e1, e1));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaStreamDestroy(s0));
  CK(cudaStreamDestroy(s1));
}

typedef struct flag_item {
  atomic_int *counter;
  int *seen_at;
} flag_item;

static void hf_count(void *p) {
  flag_item *it = p;
  *it->seen_at = atomic_fetch_add(it->counter, 1);
}

static void hf_set(void *p) { atomic_store((atomic_int *)p, 1); }

Test(devices, cross_device_wait_query_and_synchronize_work, .init = eight) {
  static gate g = GATE_INIT;
  atomic_int counter = 0;
  int first = -1, second = -1;
  flag_item a = {&counter, &first}, b = {&counter, &second};
  cudaStream_t s0, s1;
  cudaEvent_t ev;
  CK(cudaSetDevice(0));
  CK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  CK(cudaEventCreate(&ev));
  CK(cudaLaunchHostFunc(s0, hf_gate_wait, &g));
  CK(cudaLaunchHostFunc(s0, hf_count, &a));
  CK(cudaEventRecord(ev, s0));
  CK(cudaSetDevice(1));
  CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CK(cudaStreamWaitEvent(s1, ev, 0)); /* device 0's event, device 1's stream */
  CK(cudaLaunchHostFunc(s1, hf_count, &b));
  /* Queried from device 1 while device 0 is held: not ready, and s1 waits. */
  CK_ERR(cudaEventQuery(ev), cudaErrorNotReady);
  CK_ERR(cudaStreamQuery(s1), cudaErrorNotReady);
  gate_open(&g);
  CK(cudaEventSynchronize(ev)); /* current device 1, event of device 0 */
  CK(cudaEventQuery(ev));
  CK(cudaStreamSynchronize(s1));
  cr_assert_not(g.timed_out);
  cr_assert_eq(first, 0);
  cr_assert_eq(second, 1, "device 1's stream ran before device 0's event completed");
  CK(cudaEventDestroy(ev));
  CK(cudaStreamDestroy(s0));
  CK(cudaStreamDestroy(s1));
}

static atomic_int g_kernel_runs;
SIMCUDA_KERNEL(count_kernel, sizeof(int)) {
  (void)launch;
  atomic_fetch_add(&g_kernel_runs, 1);
}

Test(devices, kernel_launch_on_another_devices_stream_fails, .init = eight) {
  cudaStream_t s0;
  CK(cudaSetDevice(0));
  CK(cudaStreamCreate(&s0));
  int x = 1;
  void *args[] = {&x};
  CK(cudaSetDevice(1));
  CK_ERR(cudaLaunchKernel((const void *)count_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, s0),
         cudaErrorInvalidResourceHandle);
  CK_ERR(cudaGetLastError(), cudaErrorInvalidResourceHandle);
  CK(cudaLaunchKernel((const void *)count_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, 0));
  CK(cudaSetDevice(0));
  CK(cudaLaunchKernel((const void *)count_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, s0));
  CK(cudaStreamSynchronize(s0));
  CK(cudaSetDevice(1));
  CK(cudaDeviceSynchronize());
  cr_assert_eq(atomic_load(&g_kernel_runs), 2, "the refused launch ran");
  CK(cudaStreamDestroy(s0));
}

Test(devices, copy_on_another_devices_stream_works, .init = eight) {
  cudaStream_t s3;
  char *h, *d3, *back;
  CK(cudaSetDevice(3));
  CK(cudaStreamCreate(&s3));
  CK(cudaMalloc((void **)&d3, 4096));
  CK(cudaSetDevice(0));
  CK(cudaHostAlloc((void **)&h, 4096, 0));
  CK(cudaHostAlloc((void **)&back, 4096, 0));
  memset(h, 0x3c, 4096);
  memset(back, 0, 4096);
  /* Current device 0, stream and memory of device 3. */
  CK(cudaMemcpyAsync(d3, h, 4096, cudaMemcpyHostToDevice, s3));
  CK(cudaMemcpyAsync(back, d3, 4096, cudaMemcpyDeviceToHost, s3));
  CK(cudaMemsetAsync(d3, 0, 16, s3));
  CK(cudaStreamSynchronize(s3));
  for (int i = 0; i < 4096; i++) cr_assert_eq((unsigned char)back[i], 0x3c);
  CK(cudaStreamDestroy(s3));
  CK(cudaFree(d3));
  CK(cudaFreeHost(h));
  CK(cudaFreeHost(back));
}

/* ---- peer copies and peer access ---------------------------------------------------------- */
Test(devices, peer_copies_between_arenas, .init = eight) {
  char *d[NDEV], *h;
  for (int i = 0; i < NDEV; i++) {
    CK(cudaSetDevice(i));
    CK(cudaMalloc((void **)&d[i], 65536));
  }
  CK(cudaSetDevice(0));
  CK(cudaHostAlloc((void **)&h, 65536, 0));
  for (int i = 0; i < 65536; i++) h[i] = (char)(i * 7);
  CK(cudaMemcpy(d[0], h, 65536, cudaMemcpyHostToDevice));
  /* A ring 0 -> 1 -> ... -> 7, each hop on the destination device's stream. */
  cudaStream_t s[NDEV];
  cudaEvent_t done[NDEV];
  for (int i = 1; i < NDEV; i++) {
    CK(cudaSetDevice(i));
    CK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&done[i], cudaEventDisableTiming));
    if (i > 1) CK(cudaStreamWaitEvent(s[i], done[i - 1], 0));
    CK(cudaMemcpyPeerAsync(d[i], i, d[i - 1], i - 1, 65536, s[i]));
    CK(cudaEventRecord(done[i], s[i]));
  }
  CK(cudaEventSynchronize(done[NDEV - 1]));
  memset(h, 0, 65536);
  CK(cudaMemcpy(h, d[NDEV - 1], 65536, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 65536; i++) cr_assert_eq(h[i], (char)(i * 7), "byte %d", i);
  /* The synchronous form, from a third device. */
  CK(cudaSetDevice(4));
  CK(cudaMemset(d[2], 0x11, 65536));
  /* cudaMemset may return before it ran (device 4's legacy stream), and cudaMemcpyPeer orders
   * only with the current, source and destination devices' work: wait for device 4. */
  CK(cudaDeviceSynchronize());
  CK(cudaSetDevice(5));
  CK(cudaMemcpyPeer(d[6], 6, d[2], 2, 65536));
  CK(cudaMemcpy(h, d[6], 65536, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 65536; i++) cr_assert_eq(h[i], 0x11);
  /* Errors: a device out of range, a pointer not on the device named, host memory. */
  CK_ERR(cudaMemcpyPeer(d[1], NDEV, d[0], 0, 16), cudaErrorInvalidDevice);
  CK_ERR(cudaMemcpyPeerAsync(d[1], 1, d[0], -1, 16, 0), cudaErrorInvalidDevice);
  CK_ERR(cudaMemcpyPeer(d[1], 2, d[0], 0, 16), cudaErrorInvalidValue);
  CK_ERR(cudaMemcpyPeerAsync(h, 1, d[0], 0, 16, 0), cudaErrorInvalidValue);
  CK(cudaMemcpyPeer(d[1], 1, d[0], 0, 0));
  for (int i = 1; i < NDEV; i++) {
    CK(cudaStreamDestroy(s[i]));
    CK(cudaEventDestroy(done[i]));
  }
  for (int i = 0; i < NDEV; i++) CK(cudaFree(d[i]));
  CK(cudaFreeHost(h));
}

Test(devices, peer_access, .init = eight) {
  int can = -1;
  CK(cudaDeviceCanAccessPeer(&can, 0, 1));
  cr_assert_eq(can, 1);
  CK(cudaDeviceCanAccessPeer(&can, 7, 2));
  cr_assert_eq(can, 1);
  CK(cudaDeviceCanAccessPeer(&can, 3, 3));
  cr_assert_eq(can, 0, "a device is not its own peer");
  CK_ERR(cudaDeviceCanAccessPeer(&can, 0, NDEV), cudaErrorInvalidDevice);
  CK(cudaSetDevice(2));
  CK_ERR(cudaDeviceEnablePeerAccess(2, 0), cudaErrorInvalidDevice);
  CK_ERR(cudaDeviceEnablePeerAccess(NDEV, 0), cudaErrorInvalidDevice);
  CK_ERR(cudaDeviceEnablePeerAccess(3, 1), cudaErrorInvalidValue);
  CK(cudaDeviceEnablePeerAccess(3, 0));
  CK_ERR(cudaDeviceEnablePeerAccess(3, 0), cudaErrorPeerAccessAlreadyEnabled);
  CK(cudaSetDevice(3));
  CK(cudaDeviceEnablePeerAccess(2, 0)); /* each direction is its own */
  CK_ERR(cudaDeviceDisablePeerAccess(4), cudaErrorPeerAccessNotEnabled);
  CK(cudaSetDevice(2));
  CK(cudaDeviceDisablePeerAccess(3));
  CK_ERR(cudaDeviceDisablePeerAccess(3), cudaErrorPeerAccessNotEnabled);
}

/* ---- device-wide synchronization ---------------------------------------------------------- */
Test(devices, device_synchronize_covers_the_current_device_only, .init = eight) {
  static gate g = GATE_INIT;
  atomic_int d0_done = 0, d1_done = 0;
  cudaStream_t s0, s1;
  CK(cudaSetDevice(1));
  CK(cudaStreamCreate(&s1));
  CK(cudaLaunchHostFunc(s1, hf_gate_wait, &g));
  CK(cudaLaunchHostFunc(s1, hf_set, &d1_done));
  CK(cudaSetDevice(0));
  CK(cudaStreamCreate(&s0));
  CK(cudaLaunchHostFunc(s0, hf_set, &d0_done));
  CK(cudaLaunchHostFunc(0, hf_set, &d0_done)); /* device 0's legacy stream too */
  CK(cudaDeviceSynchronize());
  cr_assert_eq(atomic_load(&d0_done), 1);
  cr_assert_not(g.timed_out, "device 0's synchronize waited for device 1");
  CK_ERR(cudaStreamQuery(s1), cudaErrorNotReady);
  cr_assert_eq(atomic_load(&d1_done), 0);
  gate_open(&g);
  /* Another device's stream can be synchronized from here. */
  CK(cudaStreamSynchronize(s1));
  cr_assert_eq(atomic_load(&d1_done), 1);
  CK(cudaStreamDestroy(s0));
  CK(cudaStreamDestroy(s1));
}

Test(devices, device_synchronize_waits_for_its_own_device, .init = eight) {
  static gate g = GATE_INIT;
  atomic_int done = 0;
  cudaStream_t s1;
  CK(cudaSetDevice(1));
  CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CK(cudaLaunchHostFunc(s1, hf_gate_wait, &g));
  CK(cudaLaunchHostFunc(s1, hf_set, &done));
  gate_open(&g);
  CK(cudaDeviceSynchronize());
  cr_assert_eq(atomic_load(&done), 1);
  CK(cudaStreamDestroy(s1));
}

/* ---- default streams per device ----------------------------------------------------------- */
Test(devices, legacy_stream_is_per_device, .init = eight) {
  static gate g = GATE_INIT;
  atomic_int on1 = 0, on0 = 0;
  cudaStream_t blocking0;
  CK(cudaSetDevice(0));
  CK(cudaStreamCreate(&blocking0)); /* a blocking stream of device 0, held */
  CK(cudaLaunchHostFunc(blocking0, hf_gate_wait, &g));
  /* Device 1's legacy stream does not wait for device 0's blocking stream. */
  CK(cudaSetDevice(1));
  CK(cudaLaunchHostFunc(0, hf_set, &on1));
  CK(cudaStreamSynchronize(0));
  cr_assert_eq(atomic_load(&on1), 1);
  cr_assert_not(g.timed_out, "device 1's legacy stream waited for device 0's blocking stream");
  /* Device 0's own legacy stream does wait for it. */
  CK(cudaSetDevice(0));
  CK(cudaLaunchHostFunc(0, hf_set, &on0));
  CK_ERR(cudaStreamQuery(0), cudaErrorNotReady);
  cr_assert_eq(atomic_load(&on0), 0);
  gate_open(&g);
  CK(cudaStreamSynchronize(0));
  cr_assert_eq(atomic_load(&on0), 1);
  CK(cudaStreamDestroy(blocking0));
}

typedef struct ptsz_probe {
  atomic_int done[2];
  cudaError_t err;
} ptsz_probe;

static void *ptsz_thread(void *p) {
  ptsz_probe *r = p;
  for (int d = 0; d < 2 && !r->err; d++) {
    if ((r->err = cudaSetDevice(d))) break;
    if ((r->err = cudaLaunchHostFunc_ptsz(0, hf_set, &r->done[d]))) break;
    r->err = cudaStreamSynchronize(cudaStreamPerThread);
  }
  return NULL;
}

Test(devices, per_thread_stream_is_per_thread_and_device, .init = eight) {
  static gate g = GATE_INIT;
  atomic_int on1 = 0;
  /* This thread's per-thread stream of device 0 is held; its per-thread stream of device 1 runs. */
  CK(cudaSetDevice(0));
  CK(cudaLaunchHostFunc(cudaStreamPerThread, hf_gate_wait, &g));
  CK(cudaSetDevice(1));
  CK(cudaLaunchHostFunc(cudaStreamPerThread, hf_set, &on1));
  CK(cudaStreamSynchronize_ptsz(0));
  cr_assert_eq(atomic_load(&on1), 1);
  cr_assert_not(g.timed_out, "device 1's per-thread stream waited for device 0's");
  int dev = -1;
  CK(cudaStreamGetDevice(cudaStreamPerThread, &dev));
  cr_assert_eq(dev, 1);
  /* Another thread's per-thread streams, on both devices, are its own. */
  ptsz_probe r = {{0, 0}, cudaSuccess};
  pthread_t t;
  pthread_create(&t, NULL, ptsz_thread, &r);
  pthread_join(t, NULL);
  CK(r.err);
  cr_assert_eq(atomic_load(&r.done[0]) + atomic_load(&r.done[1]), 2);
  cr_assert_not(g.timed_out, "another thread's per-thread stream waited for this thread's");
  CK(cudaSetDevice(0));
  CK_ERR(cudaStreamQuery(cudaStreamPerThread), cudaErrorNotReady);
  gate_open(&g);
  CK(cudaStreamSynchronize(cudaStreamPerThread));
}
