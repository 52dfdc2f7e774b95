/* Intent: two cudaHostRegister flags change what pinguard may do with a range.
 *   iomem | normal: a device->host copy into a registered range is in flight, with guard pages
 *     on. A range registered with cudaHostRegisterIoMemory (a device's PCIe BAR) must keep its
 *     protection (pinguard never mprotects I/O memory); a normal registration is guarded. The
 *     program prints the protection /proc/self/maps shows for the range's first page then.
 *   readonly | readwrite: a kernel holding a raw pointer to a registered range runs on one stream
 *     while a host->device copy reads the range on another. Registered with
 *     cudaHostRegisterReadOnly the kernel can only read it, so both only read: no conflict. A
 *     normal registration leaves the kernel's direction unknown, which counts as a write.
 * Usage: register_flags bug|fixed iomem|normal|readonly|readwrite ("fixed" synchronizes first). */
// I/O memory is never guarded (its protection stays rw- while a copy into it is in flight; a
// normal registration's is ---); a read-only registration makes a kernel's raw pointer a read,
// which a concurrent host->device copy does not conflict with.
// CASE: register_flags.iomem.${mode} MODE ${mode} EXPECT none ARGS bug iomem
//   STDOUT "protection rw-" ENV ${GUARD_ENV} FOR mode IN audit enforce
// CASE: register_flags.normal.${mode} MODE ${mode} EXPECT none ARGS bug normal
//   STDOUT "protection ---" ENV ${GUARD_ENV} FOR mode IN audit enforce
// SCENARIO: register_flags.readonly none ARGS readonly
// SCENARIO: register_flags.readwrite device-access-conflict ARGS readwrite

#include <stdint.h>
#include <unistd.h>

#include "e2e.h"

static unsigned char sink;
SIMCUDA_KERNEL(rf_sum_host, sizeof(host_ptrs_t)) {
  const host_ptrs_t *a = launch->args[0];
  const unsigned char *p = simcuda_dma(a->p[0]);
  unsigned char x = 0;
  for (size_t i = 0; i < a->len; i++) x ^= p[i];
  sink = x;
}

/* The protection of the mapping that holds p, as /proc/self/maps spells it ("rw-", "---"...). */
static void print_protection(const void *p) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[512];
  uintptr_t a = (uintptr_t)p;
  while (f && fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    char perms[8];
    if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && a >= lo && a < hi) {
      printf("protection %.3s\n", perms);
      fclose(f);
      return;
    }
  }
  if (f) fclose(f);
  printf("protection unknown\n");
}

int main(int argc, char **argv) {
  int bug = e2e_is_bug(argc, argv);
  const char *what = argc > 2 ? argv[2] : "";
  int iomem = !strcmp(what, "iomem"), normal = !strcmp(what, "normal");
  int readonly = !strcmp(what, "readonly"), readwrite = !strcmp(what, "readwrite");
  if (!iomem && !normal && !readonly && !readwrite) {
    fprintf(stderr, "usage: %s bug|fixed iomem|normal|readonly|readwrite\n", argv[0]);
    return 2;
  }
  long page = sysconf(_SC_PAGESIZE);
  unsigned char *host = aligned_alloc((size_t)page, BUF_BYTES);
  memset(host, 0x33, BUF_BYTES);
  void *dev;
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CHECK(cudaMalloc(&dev, BUF_BYTES));
  unsigned flags = iomem ? cudaHostRegisterIoMemory
                   : readonly ? cudaHostRegisterReadOnly : cudaHostRegisterDefault;
  CHECK(cudaHostRegister(host, BUF_BYTES, flags));
  if (iomem || normal) {
    CHECK(cudaMemcpyAsync(host, dev, BUF_BYTES, cudaMemcpyDeviceToHost, s1));
    if (!bug) CHECK(cudaStreamSynchronize(s1));
    print_protection(host); /* still in flight in "bug" */
  } else {
    host_ptrs_t a = {.p = {host}, .n = 1, .len = BUF_BYTES};
    void *args[] = {&a};
    CHECK(cudaLaunchKernel((const void *)rf_sum_host, (dim3){1, 1, 1}, (dim3){32, 1, 1}, args, 0,
                           s1));
    if (!bug) CHECK(cudaStreamSynchronize(s1));
    CHECK(cudaMemcpyAsync(dev, host, BUF_BYTES, cudaMemcpyHostToDevice, s2));
  }
  CHECK(cudaStreamSynchronize(s1));
  CHECK(cudaStreamSynchronize(s2));
  CHECK(cudaHostUnregister(host));
  CHECK(cudaFree(dev));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  free(host);
  return 0;
}
