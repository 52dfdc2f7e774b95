/* A preloadable stand-in for mprotect that refuses to take write access away, as a kernel or a
 * driver mapping might for pinned memory: for the test that guard pages turn themselves off, with
 * one warning, when they cannot protect a kind of memory. Requests that keep PROT_WRITE (the
 * simulated runtime committing its device arena) go through. */
#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((visibility("default"))) int mprotect(void *addr, size_t len, int prot) {
  if (!(prot & PROT_WRITE)) {
    errno = EACCES;
    return -1;
  }
  return (int)syscall(SYS_mprotect, addr, len, prot);
}
