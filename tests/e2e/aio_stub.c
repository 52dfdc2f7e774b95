/* aio_stub.c: a stand-in for libaio's io_submit, which is not a build dependency. guard_io calls
 * io_submit through this shared object's dynamic symbol, as a program calls libaio's: the same
 * name, signature and return convention (the request count, or a negated errno). */
#include <errno.h>
#include <linux/aio_abi.h>
#include <sys/syscall.h>
#include <unistd.h>

int io_submit(aio_context_t ctx, long nr, struct iocb **ios) {
  long r = syscall(SYS_io_submit, ctx, nr, ios);
  return r < 0 ? -errno : (int)r;
}
