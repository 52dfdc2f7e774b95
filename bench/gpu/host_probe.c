/* host_probe.c: what this host's kernel and CUDA driver do to pinned memory under guard pages,
 * measured rather than assumed (README.md, "Safe on real hosts"). No pinguard involved: it does by
 * hand what a guard does, on each kind of pinned memory:
 *   hostalloc  cudaHostAlloc
 *   malloc     malloc + cudaHostRegister
 *   shared     mmap(MAP_SHARED | MAP_ANONYMOUS) + cudaHostRegister
 *   hugetlb    mmap(MAP_HUGETLB) + cudaHostRegister (skipped when no huge page can be mapped)
 * and prints one JSON line per kind: the mapping's line in /proc/self/maps; whether mprotect of a
 * page succeeds; whether copies proceed (both directions) while the pages are PROT_NONE; the
 * copy-on-write check (a CPU write after a guard round trip, then a device->host copy, then a
 * compare: "diverged" means the CPU now has a page of its own, as on Linux 5.9 to 5.18); the
 * mappings one guarded sub-range adds; and what a forked child inherits. Then the cost of a
 * protect and unprotect pair with 1, 8 and 32 busy threads. Plain C on the runtime API: built by
 * bench/gpu.sh against the real libcudart, and by CMake against simcuda (bench.gpu_probe).
 * Usage: host_probe [iterations for the timing, default 2000] */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cuda_runtime_api.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BYTES (4u << 20)
#define HUGE_BYTES (2u << 20)

static size_t page;

#define TRY(x) ((x) == cudaSuccess)

typedef struct kind {
  const char *name;
  unsigned char *p;
  size_t n;
  bool registered;
  const char *skip; /* why it could not be made */
} kind_t;

static void make(kind_t *k) {
  k->n = BYTES;
  if (!strcmp(k->name, "hostalloc")) {
    if (!TRY(cudaHostAlloc((void **)&k->p, k->n, cudaHostAllocDefault))) k->skip = "cudaHostAlloc";
    return;
  }
  if (!strcmp(k->name, "malloc")) {
    k->p = aligned_alloc(page, k->n);
  } else if (!strcmp(k->name, "shared")) {
    k->p = mmap(NULL, k->n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  } else {
    k->n = HUGE_BYTES;
    k->p = mmap(NULL, k->n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB,
                -1, 0);
  }
  if (!k->p || k->p == MAP_FAILED) {
    k->p = NULL;
    k->skip = "no memory of this kind (for hugetlb: sysctl vm.nr_hugepages)";
    return;
  }
  memset(k->p, 0, k->n);
  if (!TRY(cudaHostRegister(k->p, k->n, cudaHostRegisterDefault))) {
    k->skip = "cudaHostRegister failed";
    return;
  }
  k->registered = true;
}

static void unmake(kind_t *k) {
  if (!k->p) return;
  if (!strcmp(k->name, "hostalloc")) {
    cudaFreeHost(k->p);
    return;
  }
  if (k->registered) cudaHostUnregister(k->p);
  if (!strcmp(k->name, "malloc")) free(k->p);
  else munmap(k->p, k->n);
}

/* The /proc/self/maps line of the mapping holding p, without its newline. */
static void maps_line(const void *p, char *out, size_t cap) {
  snprintf(out, cap, "?");
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo <= (uintptr_t)p && (uintptr_t)p < hi) {
      line[strcspn(line, "\n")] = 0;
      snprintf(out, cap, "%s", line);
      break;
    }
  }
  fclose(f);
}

static long count_maps(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return -1;
  long n = 0;
  for (int c; (c = fgetc(f)) != EOF;) n += c == '\n';
  fclose(f);
  return n;
}

/* JSON-safe copy (maps lines hold paths). */
static void json_str(FILE *o, const char *s) {
  fputc('"', o);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', o);
    if ((unsigned char)*s >= 0x20) fputc(*s, o);
  }
  fputc('"', o);
}

/* A page-sized region in the middle of the buffer, the unit every check guards. */
static unsigned char *middle(const kind_t *k, size_t pages) {
  size_t span = pages * page;
  uintptr_t at = ((uintptr_t)k->p + k->n / 2 - span / 2) & ~(uintptr_t)(page - 1);
  return (unsigned char *)at;
}

/* Copies both ways through [p, p+n) while it is PROT_NONE; true when the device saw the host's
 * bytes and the host then holds the device's. */
static bool dma_while_protected(unsigned char *p, size_t n, void *dev, cudaStream_t s) {
  memset(p, 0x11, n);
  if (mprotect(p, n, PROT_NONE) != 0) return false;
  bool ok = TRY(cudaMemcpyAsync(dev, p, n, cudaMemcpyHostToDevice, s)) &&
            TRY(cudaStreamSynchronize(s)) && TRY(cudaMemsetAsync(dev, 0x22, n, s)) &&
            TRY(cudaMemcpyAsync(p, dev, n, cudaMemcpyDeviceToHost, s)) &&
            TRY(cudaStreamSynchronize(s));
  mprotect(p, n, PROT_READ | PROT_WRITE);
  return ok && p[0] == 0x22 && p[n - 1] == 0x22;
}

/* The copy-on-write check: a guard round trip, a CPU write, then a device->host copy of other
 * bytes. "same": the CPU sees the device's bytes; "diverged": it kept its own (its write went to
 * a copy of the page, which the device no longer reaches). */
static const char *cow_check(unsigned char *p, void *dev, cudaStream_t s) {
  p[0] = 1; /* the page is present and the CPU's */
  if (mprotect(p, page, PROT_READ) != 0 || mprotect(p, page, PROT_READ | PROT_WRITE) != 0)
    return "mprotect-failed";
  memset(p, 0xaa, page); /* the store after the round trip */
  if (!TRY(cudaMemsetAsync(dev, 0x5a, page, s)) ||
      !TRY(cudaMemcpyAsync(p, dev, page, cudaMemcpyDeviceToHost, s)) ||
      !TRY(cudaStreamSynchronize(s)))
    return "copy-failed";
  return p[0] == 0x5a && p[page - 1] == 0x5a ? "same" : p[0] == 0xaa ? "diverged" : "mixed";
}

static sigjmp_buf child_jump;
static void child_fault(int sig) { siglongjmp(child_jump, sig); }

/* Forks with [p, p+page) protected: what the child's view of the buffer is. */
static void fork_check(unsigned char *p, char *out, size_t cap) {
  p[page] = 0x7e; /* an unprotected page next to the protected one */
  mprotect(p, page, PROT_NONE);
  int fds[2];
  if (pipe(fds) != 0) {
    snprintf(out, cap, "pipe failed");
    return;
  }
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    char line[256], msg[600];
    maps_line(p, line, sizeof line);
    signal(SIGSEGV, child_fault);
    signal(SIGBUS, child_fault);
    int sig;
    volatile int b = -1, prot = -1;
    if (!(sig = sigsetjmp(child_jump, 1))) prot = p[0];
    else prot = -sig;
    if (!(sig = sigsetjmp(child_jump, 1))) b = p[page];
    else b = -sig;
    snprintf(msg, sizeof msg,
             "protected page: %s; next page: %s (0x7e expected); child's maps: %s",
             prot >= 0 ? "readable" : prot == -SIGSEGV ? "SIGSEGV" : "SIGBUS",
             b >= 0 ? (b == 0x7e ? "inherited" : "other bytes") : b == -SIGSEGV ? "SIGSEGV" : "SIGBUS",
             line);
    if (write(fds[1], msg, strlen(msg)) < 0) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  ssize_t got = pid > 0 ? read(fds[0], out, cap - 1) : -1;
  out[got > 0 ? got : 0] = 0;
  if (got <= 0) snprintf(out, cap, "no answer from the child");
  close(fds[0]);
  if (pid > 0) waitpid(pid, NULL, 0);
  mprotect(p, page, PROT_READ | PROT_WRITE);
}

static void probe(kind_t *k, void *dev, cudaStream_t s, const char *release) {
  make(k);
  printf("{\"kind\":\"%s\",\"uname_r\":", k->name);
  json_str(stdout, release);
  if (k->skip) {
    printf(",\"skipped\":");
    json_str(stdout, k->skip);
    printf("}\n");
    unmake(k);
    return;
  }
  char line[512];
  maps_line(k->p, line, sizeof line);
  unsigned char *mid = middle(k, 1);
  bool mp = mprotect(mid, page, PROT_READ) == 0;
  int mp_errno = mp ? 0 : errno;
  if (mp) mprotect(mid, page, PROT_READ | PROT_WRITE);
  long before = count_maps();
  bool split_ok = mprotect(middle(k, 4), 4 * page, PROT_READ) == 0;
  long added = count_maps() - before;
  if (split_ok) mprotect(middle(k, 4), 4 * page, PROT_READ | PROT_WRITE);
  long after_unprotect = count_maps() - before;
  bool dma = mp && dma_while_protected(middle(k, 8), 8 * page, dev, s);
  const char *cow = mp ? cow_check(middle(k, 2), dev, s) : "not-tried";
  char forked[700];
  if (mp) fork_check(middle(k, 2), forked, sizeof forked);
  else snprintf(forked, sizeof forked, "not tried");
  printf(",\"maps\":");
  json_str(stdout, line);
  printf(",\"mprotect\":%s,\"mprotect_errno\":", mp ? "true" : "false");
  json_str(stdout, mp_errno ? strerror(mp_errno) : "");
  printf(",\"dma_while_protected\":%s,\"cow\":\"%s\",\"maps_added_per_guard\":%ld,"
         "\"maps_left_after_unprotect\":%ld,\"fork\":",
         dma ? "true" : "false", cow, added, after_unprotect);
  json_str(stdout, forked);
  printf("}\n");
  fflush(stdout);
  unmake(k);
}

/* ---- the cost of a protect and unprotect with busy threads ----------------------------------- */
static atomic_bool stop;
static void *busy(void *arg) {
  volatile unsigned char *mine = arg; /* each thread keeps its own pages hot in its TLB */
  while (!atomic_load_explicit(&stop, memory_order_relaxed))
    for (size_t i = 0; i < 64 * 4096; i += 4096) mine[i]++;
  return NULL;
}

static double ns_per_pair(unsigned char *p, int threads, int iterations) {
  pthread_t t[32];
  unsigned char *mem = malloc((size_t)threads * 64 * 4096 + 1);
  atomic_store(&stop, false);
  for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, busy, mem + (size_t)i * 64 * 4096);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < iterations; i++) {
    mprotect(p, 16 * page, PROT_NONE);
    mprotect(p, 16 * page, PROT_READ | PROT_WRITE);
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  atomic_store(&stop, true);
  for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
  free(mem);
  return ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / iterations;
}

int main(int argc, char **argv) {
  int iterations = argc > 1 ? atoi(argv[1]) : 2000;
  page = (size_t)sysconf(_SC_PAGESIZE);
  struct utsname u;
  uname(&u);
  void *dev;
  cudaStream_t s;
  if (!TRY(cudaMalloc(&dev, BYTES)) || !TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking))) {
    fprintf(stderr, "host_probe: no CUDA device\n");
    return 2;
  }
  kind_t kinds[] = {{.name = "hostalloc"}, {.name = "malloc"}, {.name = "shared"}, {.name = "hugetlb"}};
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) probe(&kinds[i], dev, s, u.release);
  unsigned char *p;
  if (TRY(cudaHostAlloc((void **)&p, BYTES, cudaHostAllocDefault))) {
    static const int threads[] = {1, 8, 32};
    printf("{\"protect_unprotect_ns\":{");
    for (int i = 0; i < 3; i++)
      printf("%s\"%d_busy_threads\":%.0f", i ? "," : "", threads[i],
             ns_per_pair(middle(&(kind_t){.p = p, .n = BYTES}, 16), threads[i], iterations));
    printf("},\"pages\":16,\"iterations\":%d}\n", iterations);
    cudaFreeHost(p);
  }
  cudaFree(dev);
  return 0;
}
