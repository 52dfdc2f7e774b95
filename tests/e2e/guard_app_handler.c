/* Intent: pinguard's fault handler stays first when the application installs its own SIGSEGV
 * handler, before the first CUDA call ("early") or after ("late"): guard pages still catch the
 * CPU read of an in-flight buffer, and a genuine NULL dereference still reaches the
 * application's handler, which recovers with siglongjmp. "resethand": a faulthandler-like
 * handler (SA_RESETHAND | SA_NODEFER) prints a dump and returns; the fault repeats under the
 * default action and the process dies of SIGSEGV, exactly as it would without pinguard.
 * "altstack": the application's handler runs on an 8 KiB alternate signal stack (SA_ONSTACK, as
 * Python's faulthandler sets up), so pinguard's handler runs there too: it must fit, and a guard
 * page under that stack turns an overflow into a crash instead of silent heap damage.
 * Usage: guard_app_handler bug early|late|resethand|altstack */
// The application must find SIG_DFL where it installs its handler: APP_HANDLER_ENV turns
// AddressSanitizer's own SIGSEGV handler off for these runs.
// CASE: guard_app_handler.${how} MODE audit EXPECT cpu-read-during-device-write ARGS bug ${how}
//   STDOUT "application handler caught the NULL dereference" ENV ${APP_HANDLER_ENV}
//   FOR how IN early late altstack
// faulthandler-like: the dump runs, then the process dies of SIGSEGV (status 139 from the shell).
// CASE: guard_app_handler.resethand MODE audit EXPECT cpu-read-during-device-write
//   ARGS bug resethand EXIT 139 STDOUT "faulthandler-like dump" ENV ${APP_HANDLER_ENV}

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "e2e.h"

static sigjmp_buf recover;

static void app_handler(int sig, siginfo_t *info, void *uctx) {
  (void)sig, (void)uctx;
  if (info->si_addr == NULL) siglongjmp(recover, 1);
  _exit(3); /* a fault the test did not plan */
}

static void dump_handler(int sig) {
  static const char msg[] = "faulthandler-like dump\n";
  ssize_t w = write(STDOUT_FILENO, msg, sizeof msg - 1);
  (void)w, (void)sig;
}

/* The fault must reach the signal handler: the undefined-behaviour sanitizer would stop it first. */
__attribute__((noinline, no_sanitize_undefined)) static void store_through(volatile int *p) {
  *p = 1;
}

static void install(const char *how) {
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sigemptyset(&sa.sa_mask);
  if (strcmp(how, "resethand") == 0) {
    sa.sa_handler = dump_handler;
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
  } else {
    sa.sa_sigaction = app_handler;
    sa.sa_flags = SA_SIGINFO;
  }
  if (strcmp(how, "altstack") == 0) {
    enum { ALT = 8192 };
    long page = sysconf(_SC_PAGESIZE);
    char *m = mmap(NULL, (size_t)page + ALT, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (m == MAP_FAILED || mprotect(m, (size_t)page, PROT_NONE) != 0) exit(2);
    stack_t ss = {.ss_sp = m + page, .ss_size = ALT, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0) exit(2);
    sa.sa_flags |= SA_ONSTACK;
  }
  if (sigaction(SIGSEGV, &sa, &old) != 0) exit(2);
  /* What was there before must look like what the application expects: no handler of its own. */
  if (old.sa_handler != SIG_DFL) {
    printf("unexpected previous SIGSEGV disposition\n");
    exit(2);
  }
}

int main(int argc, char **argv) {
  e2e_is_bug(argc, argv);
  const char *how = argc > 2 ? argv[2] : "early";
  if (strcmp(how, "late") != 0) install(how);

  unsigned char *host, copy[64];
  void *dev;
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaHostAlloc((void **)&host, BUF_BYTES, cudaHostAllocDefault));
  CHECK(cudaMalloc(&dev, BUF_BYTES));
  if (strcmp(how, "late") == 0) install(how);

  CHECK(cudaMemcpyAsync(host, dev, BUF_BYTES, cudaMemcpyDeviceToHost, s));
  memcpy(copy, host + 8192, sizeof copy); /* caught by the guard, not by the application */
  __asm__ volatile("" : : "r"(copy) : "memory"); /* the read must happen */
  CHECK(cudaStreamSynchronize(s));
  printf("guard survived the application's handler\n");
  fflush(stdout);

  if (sigsetjmp(recover, 1) == 0) {
    store_through(NULL); /* a genuine bug of the application's */
    printf("no fault?\n");
    return 1;
  }
  printf("application handler caught the NULL dereference\n");
  CHECK(cudaFreeHost(host));
  CHECK(cudaFree(dev));
  CHECK(cudaStreamDestroy(s));
  return 0;
}
