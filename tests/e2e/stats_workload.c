/* Intent: a steady, correct workload for the production-counters test (stats_file.sh): copies
 * and kernels on pinned memory for SECONDS seconds, printing its thread count after the first
 * copy (pinguard's writer thread, if any, is running by then). With "fork", it then forks a child
 * that makes no CUDA call (a forked CUDA context is unusable) and prints its own thread count:
 * the child inherits no thread, so a writer there is one pinguard restarted.
 *   stats_workload SECONDS [fork] */
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"

static int threads(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  int n = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "Threads: %d", &n) == 1) break;
  if (f) fclose(f);
  return n;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 1.0;
  int do_fork = argc > 2 && strcmp(argv[2], "fork") == 0;
  void *host, *dev;
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  CHECK(cudaHostAlloc(&host, BUF_BYTES, cudaHostAllocDefault));
  CHECK(cudaMalloc(&dev, BUF_BYTES));
  CHECK(cudaMemcpyAsync(dev, host, BUF_BYTES, cudaMemcpyHostToDevice, s));
  CHECK(cudaStreamSynchronize(s));
  printf("threads=%d\n", threads());
  fflush(stdout);
  if (do_fork) {
    pid_t pid = fork();
    if (pid == 0) {
      usleep(100 * 1000); /* a restarted writer has had time to start */
      printf("child %d threads=%d\n", (int)getpid(), threads());
      fflush(stdout);
      usleep((useconds_t)(seconds * 1e6));
      return 0;
    }
    int st;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return 3;
  }
  for (double end = now() + seconds; now() < end;) {
    CHECK(cudaMemcpyAsync(dev, host, BUF_BYTES, cudaMemcpyHostToDevice, s));
    CHECK(e2e_launch_fill(&host, 1, BUF_BYTES, 1, s));
    CHECK(cudaStreamSynchronize(s));
    usleep(20 * 1000);
  }
  CHECK(cudaFreeHost(host));
  CHECK(cudaFree(dev));
  CHECK(cudaStreamDestroy(s));
  printf("done\n");
  return 0;
}
