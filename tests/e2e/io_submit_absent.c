/* Intent: libpinguard.so defines io_submit for programs that use libaio; a program without libaio
 * that finds that definition through dlsym (probing for libaio) and calls it gets libaio's
 * failure convention, a negated errno (ENOSYS), not a call through a null pointer. */
// CASE: io_submit_absent MODE audit EXPECT none STDOUT "io_submit without libaio: -38 \(ENOSYS\)"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>

int main(void) {
  int (*submit)(unsigned long, long, void **) =
      (int (*)(unsigned long, long, void **))dlsym(RTLD_DEFAULT, "io_submit");
  if (!submit) {
    printf("no io_submit\n");
    return 0;
  }
  int r = submit(0, 0, NULL);
  printf("io_submit without libaio: %d%s\n", r, r == -ENOSYS ? " (ENOSYS)" : "");
  return 0;
}
