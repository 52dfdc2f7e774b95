/* Intent: a fork child inherits its parent's guard-page protections but none of its GPU work.
 * With device->host copies in flight into a cudaHostAlloc buffer and into a MAP_SHARED segment
 * registered with cudaHostRegister (the transfer engine's shm transport), the parent forks and
 * the child reads both buffers: it must not crash or report (pinguard's atfork child handler
 * opened the pages). The parent then reads them too, which the guard catches as usual. */
// The child reads inherited guarded buffers without faulting; the parent's read is caught. A
// fork can take milliseconds: a long device latency keeps the copies in flight past it.
// CASE: guard_fork.${mode} MODE ${mode} EXPECT cpu-read-during-device-write ARGS bug
//   STDOUT "child read its inherited buffers cleanly" ENV ${GUARD_ENV} SIMCUDA_LATENCY_US=200000
//   FOR mode IN audit enforce

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"

int main(int argc, char **argv) {
  e2e_is_bug(argc, argv);
  void *host, *dev;
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaHostAlloc(&host, BUF_BYTES, cudaHostAllocDefault));
  unsigned char *shm = mmap(NULL, BUF_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                            -1, 0);
  if (shm == MAP_FAILED) return 2;
  CHECK(cudaHostRegister(shm, BUF_BYTES, cudaHostRegisterDefault));
  CHECK(cudaMalloc(&dev, BUF_BYTES));
  CHECK(cudaMemcpyAsync(host, dev, BUF_BYTES, cudaMemcpyDeviceToHost, s));
  CHECK(cudaMemcpyAsync(shm, dev, BUF_BYTES, cudaMemcpyDeviceToHost, s));

  pid_t child = fork();
  if (child == 0) {
    /* The store process: reads what it inherited, never calls CUDA. */
    volatile unsigned sum = 0;
    for (size_t i = 0; i < BUF_BYTES; i += 4096)
      sum += ((volatile unsigned char *)host)[i] + ((volatile unsigned char *)shm)[i];
    _exit(0);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child) return 2;
  unsigned char b = ((volatile unsigned char *)shm)[8192]; /* the parent's own race: caught */
  printf("child %s; parent read 0x%02x\n",
         WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "read its inherited buffers cleanly"
                                                       : "FAILED",
         b);
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaHostUnregister(shm));
  munmap(shm, BUF_BYTES);
  CHECK(cudaFreeHost(host));
  CHECK(cudaFree(dev));
  CHECK(cudaStreamDestroy(s));
  return 0;
}
