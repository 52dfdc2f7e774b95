/* pg_signal.c: the SIGSEGV/SIGBUS handler behind guard pages, and the sigaction/signal
 * interposers that keep it first. The handler tells the engine each fault (pg_on_fault): a
 * fault on a page pinguard guards is settled there (enforce: wait for the GPU access; audit:
 * report) and the instruction retried. Every other fault goes to the handler the application
 * installed, exactly as the kernel would have delivered it.
 *
 * With guard_shared_edges, a fault on the other data of a guarded shared edge page (bytes that are
 * no region's) is no conflict: the engine opens the page, the handler single-steps the
 * instruction (the x86 trap flag), and the SIGTRAP after it closes the page again. SIGTRAP is
 * then handled here too, and every trap that is not such a step goes to the application's
 * disposition.
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
#include <ucontext.h>
#include <unistd.h>

#include "pg_intercept.h"
#include "pg_shim.h"

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
/* The handler describes the fault, makes one call (pg_on_fault: whether it is pinguard's,
 * settling it, letting the page go) and acts on the answer: return (the instruction runs
 * again), set the trap flag (one instruction with the page open), or chain to the application.
 * Nothing here allocates or takes a lock; errno is preserved for the interrupted code. */
#define PG_X86_TRAP_FLAG 0x100
static __thread bool stepping;         /* the trap flag is set for an instruction of this thread */
static __thread bool trap_was_blocked; /* the stepped code had SIGTRAP blocked */

/* A thread may block SIGTRAP (runtime worker threads block every asynchronous signal), and a
 * blocked trap kills the process: the mask the interrupted code gets back lets it through for
 * the one instruction, and the trap puts it back. */
static void set_trap_flag(ucontext_t *uc) {
  if (!stepping) trap_was_blocked = sigismember(&uc->uc_sigmask, SIGTRAP) == 1;
  stepping = true;
  sigdelset(&uc->uc_sigmask, SIGTRAP);
  uc->uc_mcontext.gregs[REG_EFL] |= PG_X86_TRAP_FLAG;
}

/* The trap after the stepped instruction(s): pinguard's pages are closed again. */
static void clear_trap_flag(ucontext_t *uc) {
  uc->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)PG_X86_TRAP_FLAG;
  if (trap_was_blocked) sigaddset(&uc->uc_sigmask, SIGTRAP);
  stepping = false;
}

static pg_fault_t describe(int sig, const siginfo_t *info, ucontext_t *uc) {
  const greg_t *r = uc->uc_mcontext.gregs;
  return (pg_fault_t){
      .kind = sig == SIGTRAP ? PG_FAULT_TRAP : PG_FAULT_ACCESS,
      .hardware = is_hardware_fault(info),
      .access_error = sig == SIGSEGV && info->si_code == SEGV_ACCERR,
      .trace = sig == SIGTRAP && info->si_code == TRAP_TRACE,
      .is_write = (r[REG_ERR] & 2) != 0, /* x86 page-fault error code */
      .inside_pinguard = pg_shim_inside,
      .can_step = nguarded == 3,
      .addr = (uintptr_t)info->si_addr,
      .pc = (void *)r[REG_RIP],
      .fp = (void *)r[REG_RBP],
      .sp = (void *)r[REG_RSP],
      .context = uc,
  };
}

/* The engine unwinds the CPU stack of a report back through this frame and the signal frame. */
__attribute__((optimize("no-omit-frame-pointer"))) static void on_fault(int sig, siginfo_t *info,
                                                                        void *uctx) {
  int saved_errno = errno;
  ucontext_t *uc = uctx;
  pg_fault_t f = describe(sig, info, uc);
  pg_reentry_t g = pg_shim_enter(); /* a fault nested in the handler finds it inside pinguard */
  pg_fault_action_t action = pg_on_fault(&f);
  pg_shim_leave(g);
  errno = saved_errno;
  switch (action) {
    case PG_FAULT_RETRY:
      if (sig == SIGTRAP) clear_trap_flag(uc);
      return;
    case PG_FAULT_STEP: set_trap_flag(uc); return;
    case PG_FAULT_CHAIN: chain(sig, info, uctx); return;
  }
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
  pg_engine_fault_handler_installed(); /* pg_on_fault resumes safe loads first */
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
