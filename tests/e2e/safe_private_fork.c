/* Intent: fork with registered private memory guarded and in flight. A MAP_PRIVATE|MAP_ANONYMOUS
 * buffer registered with cudaHostRegister (private anonymous, as the driver leaves it) has a
 * device-to-host copy in flight, so pinguard guards it (on a fixed kernel), when the process
 * forks. The child, which never calls CUDA, reads every page it inherited and stores into it:
 * no crash, no report (pinguard's atfork child handler opened the pages), and its mapping is
 * private. The parent's pages stay its own: neither that store nor one by a second child, forked
 * after the copy completed, shows in the parent; the copy and a later one land in the pages the
 * parent reads.
 * Usage: safe_private_fork */
// SAFE: private_fork.${mode} OPTIONS mode=${mode}:guard=1:exitcode=0:kernel_release=6.8.0
//   CHECK --stdout "read and wrote their own copies, parent.s pages its own, later copy landed"
//   --no-stderr "ERROR" FOR mode IN audit enforce

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"

#define BYTES (256u * 1024u)

/* A child that reads every page of p, stores 0xee at p[at], and exits 0 if that went well. */
static int child_touches(unsigned char *p, size_t at) {
  pid_t child = fork();
  if (child == 0) {
    volatile unsigned sum = 0;
    for (size_t i = 0; i < BYTES; i += 4096) sum += ((volatile unsigned char *)p)[i];
    p[at] = 0xee;
    _exit(p[at] == 0xee ? 0 : 3);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child) return 0;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(void) {
  unsigned char *p = mmap(NULL, BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 2;
  memset(p, 1, BYTES);
  CHECK(cudaHostRegister(p, BYTES, cudaHostRegisterDefault));
  void *dev;
  CHECK(cudaMalloc(&dev, BYTES));
  CHECK(cudaMemset(dev, 0x5a, BYTES));
  CHECK(cudaDeviceSynchronize());
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  CHECK(cudaMemcpyAsync(p, dev, BYTES, cudaMemcpyDeviceToHost, s));
  int first = child_touches(p, 0); /* forked while the copy is in flight */
  CHECK(cudaStreamSynchronize(s));
  int second = child_touches(p, 1); /* forked after it */
  int own = p[0] == 0x5a && p[1] == 0x5a && p[BYTES - 1] == 0x5a;

  CHECK(cudaMemset(dev, 0x77, BYTES));
  CHECK(cudaMemcpy(p, dev, BYTES, cudaMemcpyDeviceToHost));
  int later = p[0] == 0x77 && p[BYTES - 1] == 0x77;
  printf("children %s, parent's pages %s, later copy %s\n",
         first && second ? "read and wrote their own copies" : "FAILED",
         own ? "its own" : "CHANGED", later ? "landed" : "MISSED");
  CHECK(cudaHostUnregister(p));
  CHECK(cudaFree(dev));
  munmap(p, BYTES);
  return first && second && own && later ? 0 : 1;
}
