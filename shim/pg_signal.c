/* pg_signal.c: the SIGSEGV/SIGBUS handler behind guard pages, and the sigaction/signal
 * interposers that keep it first. A fault on a page pinguard guards is settled (enforce: wait
 * for the GPU access; audit: report) and the instruction retried. Every other fault goes to the
 * handler the application installed, exactly as the kernel would have delivered it.
 *
 * With guard_shared_edges, a fault on the other data of a guarded shared edge page (bytes that are
 * no region's) is no conflict: the page is opened, the instruction single-stepped (the x86 trap
 * flag), and the SIGTRAP after it closes the page again. SIGTRAP is then handled here too, and
 * every trap that is not such a step goes to the application's disposition.
 *
 * While the handler is installed, the application's SIGSEGV/SIGBUS dispositions live in
 * app_action[]: its sigaction() calls read and write them there, so it sees what it expects
 * (its own handler, or what was there before pinguard) and becomes the handler chained to. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "pg_decide.h" /* pg_decide_cpu_fault: until the fault path moves behind the door */
#include "pg_guard.h"
#include "pg_intercept.h"
#include "pg_safeload.h"
#include "pg_shim.h"
#include "pg_tls.h"
#include "pg_page.h"

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static const int guarded_signals[] = {SIGSEGV, SIGBUS, SIGTRAP};
#define NSIG_GUARDED 3

static struct sigaction app_action[NSIG_GUARDED];
static atomic_bool installed;
static int nguarded; /* SIGTRAP (the last) only with guard_shared_edges */

static int slot_of(int sig) {
  for (int i = 0; i < nguarded; i++)
    if (guarded_signals[i] == sig) return i;
  return -1;
}

/* The real sigaction, through the hook table: one atomic load once resolved (which
 * pg_signal_install does, before the handler can run). */
static sigaction_fn real_sigaction(void) { return PG_REAL(sigaction); }

/* ---- chaining to the application's handler ---------------------------------------------------- */
/* A fault raised by the CPU (not by kill or raise) cannot be ignored: the kernel kills the
 * process when its handler is SIG_IGN or the signal is blocked. */
static bool is_hardware_fault(const siginfo_t *info) { return info->si_code > 0; }

static void die_by_default(int sig, const siginfo_t *info) {
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  real_sigaction()(sig, &dfl, NULL);
  /* Returning re-executes a faulting instruction, which now meets the default action: the
   * process dies exactly as it would have without pinguard (core dump included). A signal sent
   * by kill/raise is raised again instead, and so is a trap, which is reported after its
   * instruction and would not recur. */
  if (!is_hardware_fault(info) || sig == SIGTRAP) raise(sig);
}

static void chain(int sig, siginfo_t *info, void *uctx) {
  int slot = slot_of(sig);
  struct sigaction act = app_action[slot];
  if (!(act.sa_flags & SA_SIGINFO) && act.sa_handler == SIG_IGN) {
    if (is_hardware_fault(info)) die_by_default(sig, info);
    return;
  }
  if (!(act.sa_flags & SA_SIGINFO) && act.sa_handler == SIG_DFL) {
    die_by_default(sig, info);
    return;
  }
  if (act.sa_flags & SA_RESETHAND) { /* the kernel resets the disposition on delivery */
    memset(&app_action[slot], 0, sizeof app_action[slot]);
    app_action[slot].sa_handler = SIG_DFL;
  }
  /* Block what the application's handler asked for, as the kernel would have. */
  sigset_t mask, old;
  mask = act.sa_mask;
  if (!(act.sa_flags & SA_NODEFER)) sigaddset(&mask, sig);
  pthread_sigmask(SIG_BLOCK, &mask, &old);
  if (act.sa_flags & SA_SIGINFO)
    act.sa_sigaction(sig, info, uctx);
  else
    act.sa_handler(sig);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* ---- pinguard's handler --------------------------------------------------------------------- */
/* Why this is safe to run in a signal handler: it acts only on a synchronous fault on a page
 * pinguard protected (pg_guard_owns), raised by an ordinary load or store of the program's.
 * pinguard never touches a guarded page while it holds one of its locks, so the faulting thread
 * holds none of the locks taken below (guard stripes, region and stream locks, the report lock);
 * other threads holding them are not blocked on this one. Nothing below allocates: the stack is
 * unwound by backtrace() (warmed up when the handler was installed), symbols come from dladdr and
 * an mmap of the module's symbol table, the report is formatted into a fixed buffer and written
 * with write(2). errno is preserved for the interrupted code. */
typedef struct fault {
  siginfo_t *info;
  ucontext_t *uc;
  pg_guard_claim_t claim; /* what the lock-free look said */
  bool handled;           /* out: the fault was pinguard's and is settled */
  bool step;              /* out: run the instruction once with the page open (a gap byte) */
} fault_t;

/* A fault on a page pinguard protected once but has opened since: another thread unprotected it
 * between the fault and the handler's look, and the retried instruction will succeed. A page the
 * program protects itself later faults for good, so the retries are counted per thread and per
 * page, and the fault goes to the application after a few. */
#define PG_STALE_RETRIES 3
static __thread uintptr_t stale_page;
static __thread unsigned stale_count;

static bool retry_stale(uintptr_t addr) {
  uintptr_t page = pg_page_down(addr);
  if (page != stale_page) {
    stale_page = page;
    stale_count = 0;
  }
  return ++stale_count <= PG_STALE_RETRIES;
}

/* ---- single steps over the other data of a shared edge page -------------------------------- */
/* The pages this thread opened for the instruction it is single-stepping (a few: one instruction
 * can fault on two pages, and a nested fault in pinguard's own handler on a third). */
#define PG_MAX_STEPS 4
#define PG_X86_TRAP_FLAG 0x100
static __thread uintptr_t step_pages[PG_MAX_STEPS];
static __thread unsigned nsteps;
static __thread bool trap_was_blocked; /* the stepped code had SIGTRAP blocked */

/* A thread may block SIGTRAP (runtime worker threads block every asynchronous signal), and a
 * blocked trap kills the process: the mask the interrupted code gets back lets it through for
 * the one instruction, and the trap puts it back. */
static bool step_page(uintptr_t addr, ucontext_t *uc) {
  if (nsteps == PG_MAX_STEPS || !pg_guard_step_begin(addr)) return false;
  if (nsteps++ == 0) trap_was_blocked = sigismember(&uc->uc_sigmask, SIGTRAP) == 1;
  step_pages[nsteps - 1] = addr;
  sigdelset(&uc->uc_sigmask, SIGTRAP);
  uc->uc_mcontext.gregs[REG_EFL] |= PG_X86_TRAP_FLAG;
  return true;
}

static bool step_over(uintptr_t addr, ucontext_t *uc) {
  return pg_guard_is_neighbour(addr) && step_page(addr, uc);
}

/* The trap after a stepped instruction: close the pages it opened. */
static bool end_steps(const siginfo_t *info, ucontext_t *uc) {
  if (!nsteps || info->si_code != TRAP_TRACE) return false;
  uc->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)PG_X86_TRAP_FLAG;
  if (trap_was_blocked) sigaddset(&uc->uc_sigmask, SIGTRAP);
  while (nsteps) pg_guard_step_end(step_pages[--nsteps]);
  return true;
}

/* Decides whether the fault is pinguard's and settles it. backtrace() inside unwinds back through
 * on_fault (its frame-pointer-based CFA survives the stack switch) and the signal frame. */
static void handle_fault(void *arg) {
  fault_t *f = arg;
  uintptr_t addr = (uintptr_t)f->info->si_addr;
  if (!pg_guard_owns(addr)) {
    if (f->claim != PG_GUARD_NOT_OURS) f->handled = retry_stale(addr);
    return;
  }
  stale_page = 0;
  pg_reentry_t r = pg_shim_enter();
  bool is_write = (f->uc->uc_mcontext.gregs[REG_ERR] & 2) != 0; /* x86 page-fault error code */
  f->step = pg_decide_cpu_fault(addr, is_write, (void *)f->uc->uc_mcontext.gregs[REG_RIP],
                                (void *)f->uc->uc_mcontext.gregs[REG_RBP],
                                nguarded == 3 && nsteps < PG_MAX_STEPS);
  pg_shim_leave(r);
  f->handled = true;
}

/* Whether the faulting thread was inside pinguard: in an interceptor's own work (which holds
 * pinguard's locks at times; pg_shim_inside also covers the handler itself, so a fault nested
 * in it), or holding a guard lock outside one (the system-call checks). */
static bool interrupted_pinguard(void) { return pg_shim_inside || pg_guard_thread_busy(); }

/* Calls fn(arg) with the stack pointer at `top` (16-byte aligned), then comes back. */
static void run_on_stack(void *top, void (*fn)(void *), void *arg) {
  __asm__ volatile(
      "mov %%rsp, %%r12\n\t"
      "mov %[top], %%rsp\n\t"
      "call *%[fn]\n\t"
      "mov %%r12, %%rsp\n\t"
      : "+D"(arg)
      : [top] "r"(top), [fn] "r"(fn)
      : "r12", "rax", "rcx", "rdx", "rsi", "r8", "r9", "r10", "r11", "memory", "cc", "xmm0",
        "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
        "xmm12", "xmm13", "xmm14", "xmm15");
}

static bool on_alternate_stack(void) {
  stack_t ss;
  return sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK);
}

/* The stack pinguard settles a fault on: its own, per thread, mapped on the thread's first
 * guard fault (pg_tls.h; mmap only, so safe here), with a PROT_NONE page at its low end. Waiting
 * and reporting (stacks, symbols, formatting) take about 10 KiB, which a program's small thread
 * stack (32 KiB, say, half used when it faults) or alternate signal stack may not have. */
#define PG_FAULT_STACK_BYTES (256u * 1024u)
static void *fault_stack(void) {
  void *base = pg_tls_peek(PG_TLS_FAULT_STACK);
  if (base) return base;
  base = pg_tls_get(PG_TLS_FAULT_STACK, PG_FAULT_STACK_BYTES);
  if (base) mprotect(base, 4096, PROT_NONE); /* an overflow faults, it does not corrupt */
  return base;
}

/* Runs handle_fault(f) on pinguard's own stack; where it has none (no memory for it), or the
 * handler is already running on it (a fault nested in the handler), on the interrupted stack,
 * below the interrupted code's 128-byte red zone (a guard fault is an ordinary load or store,
 * so that stack is healthy), as before the switch. */
static void settle_on_own_stack(fault_t *f, uintptr_t interrupted_sp) {
  uintptr_t here = (uintptr_t)__builtin_frame_address(0);
  char *base = fault_stack();
  if (base && !(here > (uintptr_t)base && here <= (uintptr_t)base + PG_FAULT_STACK_BYTES)) {
    run_on_stack((void *)(((uintptr_t)base + PG_FAULT_STACK_BYTES - 64) & ~(uintptr_t)15),
                 handle_fault, f);
  } else if (on_alternate_stack()) {
    run_on_stack((void *)((interrupted_sp - 512) & ~(uintptr_t)15), handle_fault, f);
  } else {
    handle_fault(f);
  }
}

__attribute__((optimize("no-omit-frame-pointer"))) static void on_fault(int sig, siginfo_t *info,
                                                                        void *uctx) {
  /* A safe load's fault (pg_safeload.h: pinguard reading another runtime's data, a Python
   * frame chain) resumes at the load's failure label: first, before anything else is asked. */
  if (sig != SIGTRAP && info->si_code > 0 && pg_safeload_fixup(uctx)) return;
  int saved_errno = errno;
  ucontext_t *uc = uctx;
  if (sig == SIGTRAP) {
    bool ours = end_steps(info, uc);
    errno = saved_errno;
    if (!ours) chain(sig, info, uctx);
    return;
  }
  fault_t f = {.info = info, .uc = uc, .claim = PG_GUARD_NOT_OURS, .handled = false};
  /* Only a page pinguard protected can be pinguard's fault. A stack overflow faults in the
   * thread's own guard area, which pinguard never protects, however close the pinned buffers
   * lie to the stack: asking the page, not the distance to the stack pointer, tells them apart.
   * The look takes no lock and little stack, so it is safe on the smallest alternate stack. */
  if (sig == SIGSEGV && info->si_code == SEGV_ACCERR)
    f.claim = pg_guard_claims((uintptr_t)info->si_addr);
  /* The other data on a shared edge page: no conflict, and nothing to look up (the handler may
   * have interrupted pinguard itself, reading its own heap data there under one of its locks). */
  if (f.claim == PG_GUARD_PROTECTED && !interrupted_pinguard() &&
      step_over((uintptr_t)info->si_addr, uc)) {
    errno = saved_errno;
    return;
  }
  /* The thread was inside pinguard when the fault came (a signal handler of the program's
   * interrupted it and touched a guarded page): it may hold any of pinguard's locks, so nothing
   * below that takes one may run. The page is opened without a lock and the access goes
   * unchecked (counted); the instruction runs again. */
  if (f.claim != PG_GUARD_NOT_OURS && interrupted_pinguard()) {
    errno = saved_errno;
    if (f.claim == PG_GUARD_PROTECTED ? pg_guard_open_unlocked((uintptr_t)info->si_addr)
                                      : retry_stale((uintptr_t)info->si_addr))
      return;
    chain(sig, info, uctx);
    return;
  }
  if (f.claim != PG_GUARD_NOT_OURS)
    settle_on_own_stack(&f, (uintptr_t)uc->uc_mcontext.gregs[REG_RSP]);
  /* A gap byte between a pitched copy's rows, on a page its rows keep guarded: no conflict. */
  if (f.handled && f.step) step_page((uintptr_t)info->si_addr, uc);
  errno = saved_errno;
  if (f.handled) return; /* the faulting instruction runs again */
  chain(sig, info, uctx);
}

void pg_signal_install(bool single_steps) {
  if (atomic_exchange(&installed, true)) return;
  nguarded = single_steps ? 3 : 2;
  struct sigaction ours;
  memset(&ours, 0, sizeof ours);
  ours.sa_sigaction = on_fault;
  /* SA_NODEFER: the application's own handler decides what it blocks (see chain). SA_ONSTACK:
   * a stack-overflow fault must still reach a handler that expects the alternate stack. */
  ours.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK | SA_RESTART;
  sigemptyset(&ours.sa_mask);
  for (int i = 0; i < nguarded; i++)
    real_sigaction()(guarded_signals[i], &ours, &app_action[i]);
  pg_engine_fault_handler_installed(); /* on_fault asks pg_safeload_fixup first */
}

/* ---- interposers ------------------------------------------------------------------------------ */
PG_WRAPPER(sigaction, sigaction);
PG_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *oldact) {
  int slot = slot_of(sig);
  if (slot < 0 || !atomic_load_explicit(&installed, memory_order_acquire))
    return real_sigaction()(sig, act, oldact);
  if (oldact) *oldact = app_action[slot];
  if (act) app_action[slot] = *act;
  return 0;
}

PG_WRAPPER(signal, signal);
PG_EXPORT sighandler_t signal(int sig, sighandler_t handler) {
  /* glibc's signal() has BSD semantics: SA_RESTART, handler kept after delivery. */
  struct sigaction act, old;
  memset(&act, 0, sizeof act);
  act.sa_handler = handler;
  act.sa_flags = SA_RESTART;
  sigemptyset(&act.sa_mask);
  sigaddset(&act.sa_mask, sig);
  if (sigaction(sig, &act, &old) != 0) return SIG_ERR;
  return old.sa_handler;
}
