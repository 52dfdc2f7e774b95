/* Intent: the guard decision on registered private memory as the driver leaves it: a
 * MAP_PRIVATE|MAP_ANONYMOUS buffer stays private anonymous after cudaHostRegister (simcuda pins
 * it and its device reaches it through the pins, as a copy engine does). A device-to-host copy
 * into it is in flight while the CPU reads it, and again while write(2) reads it. On a fixed
 * kernel (kernel_release=6.8.0) the buffer is guarded and the read is reported by its guard
 * fault; on an affected one (5.15.0) it is not guarded, and the write(2) is still reported by the
 * system-call check. Either way, after the guard round trips and a CPU store, a later copy lands
 * in the page the CPU reads (no copy-on-write split between CPU and device).
 * Usage: safe_private_dma */
// On a fixed kernel the CPU read is reported by its guard fault; on an affected one the memory
// is not guarded, and a write(2) of it during a copy is still reported by the system-call check.
// SAFE: private_dma.fixed_kernel OPTIONS mode=audit:guard=1:exitcode=0:kernel_release=6.8.0
//   CHECK --stdout "mapping private anonymous, data arrived in the user's pages"
//   --count "ERROR: cpu-read-during-device-write" 1
//   --stderr "syscall-read-during-device-write" --no-stderr "private memory"
// SAFE: private_dma.affected
//   OPTIONS mode=audit:guard=1:exitcode=0:kernel_release=5.15.0-91-generic
//   CHECK --stdout "mapping private anonymous, data arrived in the user's pages"
//   --count "cudaHostRegister'ed private memory" 1
//   --stderr "syscall-read-during-device-write"
//   --no-stderr "cpu-read-during-device-write"

#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "e2e.h"

#define BYTES (256u * 1024u)

/* "private anonymous" when the mapping holding p is (perms ...p, inode 0), else its maps line. */
static const char *mapping_kind(const void *p) {
  static char line[512];
  FILE *f = fopen("/proc/self/maps", "re");
  if (!f) return "unknown";
  const char *kind = "unmapped";
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi, off, inode;
    char perms[8], dev[16];
    if (sscanf(line, "%lx-%lx %7s %lx %15s %lu", &lo, &hi, perms, &off, dev, &inode) != 6) continue;
    if (lo <= (uintptr_t)p && (uintptr_t)p < hi) {
      line[strcspn(line, "\n")] = 0;
      kind = perms[3] == 'p' && inode == 0 ? "private anonymous" : line;
      break;
    }
  }
  fclose(f);
  return kind;
}

static __attribute__((noipa)) unsigned char read_private(const unsigned char *p) {
  return ((volatile const unsigned char *)p)[BYTES / 2];
}

int main(void) {
  unsigned char *p = mmap(NULL, BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 2;
  memset(p, 0, BYTES);
  CHECK(cudaHostRegister(p, BYTES, cudaHostRegisterDefault));
  const char *kind = mapping_kind(p);
  void *dev;
  CHECK(cudaMalloc(&dev, BYTES));
  CHECK(cudaMemset(dev, 0x5a, BYTES));
  CHECK(cudaDeviceSynchronize());
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  CHECK(cudaMemcpyAsync(p, dev, BYTES, cudaMemcpyDeviceToHost, s));
  unsigned char a = read_private(p); /* the CPU read */
  CHECK(cudaStreamSynchronize(s));

  CHECK(cudaMemcpyAsync(p, dev, BYTES, cudaMemcpyDeviceToHost, s));
  int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write(fd, p, BYTES) != (ssize_t)BYTES) return 2; /* the system call's read */
  close(fd);
  CHECK(cudaStreamSynchronize(s));

  p[4096] = 1; /* the store that would copy the pinned page on an affected kernel, if guarded */
  p[BYTES - 1] = 1;
  CHECK(cudaMemset(dev, 0x77, BYTES));
  CHECK(cudaMemcpy(p, dev, BYTES, cudaMemcpyDeviceToHost));
  int ok = p[4096] == 0x77 && p[BYTES - 1] == 0x77 && p[0] == 0x77;
  printf("read 0x%02x, mapping %s, data %s the user's pages (0x%02x 0x%02x)\n", a, kind,
         ok ? "arrived in" : "MISSED", p[4096], p[BYTES - 1]);
  CHECK(cudaHostUnregister(p));
  CHECK(cudaFree(dev));
  munmap(p, BYTES);
  return ok ? 0 : 1;
}
