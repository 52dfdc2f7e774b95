/* Intent: a process that looks like CPython but is not one pinguard can read never crashes it
 * and still gets full native reports. This program exports the symbols pinguard looks for
 * (Py_Version, PyGILState_GetThisThreadState and the type objects) itself:
 *   - built with FAKE_PY_VERSION 3.14 (not in pinguard's table): one notice at startup, and
 *     reports with native frames only;
 *   - built as 3.11, whose layout pinguard reads, with a thread state whose frame chain is
 *     garbage (pointers into unmapped and protected memory, a cycle, misaligned links): reports
 *     come out whole, from the interposer and from the guard-fault handler, with no Python frame
 *     and no crash;
 *   - built as 3.11 with FAKE_TORN: the chain leads into unmapped memory, so that pinguard's
 *     reads fault (recovered by its fault handler where its safe loads are armed). */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "e2e.h"

/* What pinguard's detection reads. PyType_Type's ob_type is itself, as in a real interpreter. */
__attribute__((visibility("default"))) const unsigned long Py_Version = FAKE_PY_VERSION;
__attribute__((visibility("default"))) void *PyType_Type[8] = {(void *)1, PyType_Type};
__attribute__((visibility("default"))) void *PyCode_Type[8];
__attribute__((visibility("default"))) void *PyUnicode_Type[8];
__attribute__((visibility("default"))) void *PyBytes_Type[8];

static uintptr_t tstate[64], cframe[4], frames[4][16];

__attribute__((visibility("default"))) void *PyGILState_GetThisThreadState(void) {
  return tstate;
}

/* 3.11: tstate+56 -> _PyCFrame, +8 -> current frame; a frame's code at +32, previous at +48. */
static void build_garbage(void) {
  char *gone = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(gone, 4096);
  char *locked = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  tstate[56 / 8] = (uintptr_t)cframe;
  cframe[1] = (uintptr_t)frames[0];
  for (int i = 0; i < 4; i++) memset(frames[i], 0xff, sizeof frames[i]);
  frames[0][32 / 8] = (uintptr_t)gone;      /* "code objects" that are not there */
  frames[0][48 / 8] = (uintptr_t)frames[1];
  frames[1][32 / 8] = (uintptr_t)locked;
  frames[1][48 / 8] = (uintptr_t)frames[2];
  frames[2][32 / 8] = (uintptr_t)frames[3] + 3;
  frames[2][48 / 8] = (uintptr_t)frames[0]; /* a cycle */
#ifdef FAKE_TORN
  /* A torn chain: the third frame's link and the thread's frame pointer lead into memory that
   * is not there and memory that may not be read. pinguard's reads of them fault, in the
   * interposer and inside its own guard-fault handler, and its handler recovers each. */
  frames[2][48 / 8] = (uintptr_t)gone;
  frames[1][48 / 8] = (uintptr_t)frames[2];
  (void)locked;
#endif
}

__attribute__((noinline)) static void free_early(void *host) { CHECK(cudaFreeHost(host)); }

__attribute__((noinline)) static int read_early(const volatile unsigned char *host) {
  return host[100];
}

int main(void) {
  build_garbage();
  void *host, *host2, *dev;
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  CHECK(cudaHostAlloc(&host, BUF_BYTES, cudaHostAllocDefault));
  CHECK(cudaHostAlloc(&host2, BUF_BYTES, cudaHostAllocDefault));
  CHECK(cudaMalloc(&dev, BUF_BYTES));
  CHECK(cudaMemcpyAsync(host2, dev, BUF_BYTES, cudaMemcpyDeviceToHost, s));
  int v = read_early(host2); /* a guard fault: the stack is taken in the handler */
  CHECK(cudaMemcpyAsync(host, dev, BUF_BYTES, cudaMemcpyDeviceToHost, s));
  free_early(host);
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaFreeHost(host2));
  CHECK(cudaFree(dev));
  CHECK(cudaStreamDestroy(s));
  return v == 256 ? 1 : 0;
}
