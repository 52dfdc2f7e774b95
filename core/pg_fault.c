/* pg_fault.c: a fault, end to end (pg_on_fault, pg_engine.h). The signal handler describes what
 * the kernel delivered and makes one call; this file decides whether the fault is pinguard's,
 * settles it, lets the page go or keeps it guarded, and answers retry, step or chain.
 *
 * Why this is safe to run in a signal handler: it acts only on a synchronous fault on a page
 * pinguard protected (pg_guard_claims, pg_guard_owns), raised by an ordinary load or store of
 * the program's. pinguard never touches a guarded page while it holds one of its locks, so the
 * faulting thread holds none of the locks taken below (guard stripes, region and stream locks,
 * the report lock); other threads holding them are not blocked on this one. A thread that was
 * inside pinguard when the fault came (a handler of the program's interrupted it) may hold any
 * of them: its fault takes none. Nothing below allocates: the stack is unwound by backtrace()
 * (warmed up at start), symbols come from dladdr and an mmap of the module's symbol table, the
 * report is formatted into a fixed buffer and written with write(2), and the stack the fault is
 * settled on is mapped (mmap only) on the thread's first guard fault. */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>

#include "pg_decide.h"
#include "pg_guard.h"
#include "pg_page.h"
#include "pg_safeload.h"
#include "pg_tls.h"

/* ---- stale faults --------------------------------------------------------------------------- */
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
 * can fault on two pages, and a nested fault in pinguard's own handler on a third). The handler
 * sets the trap flag (PG_FAULT_STEP); the trap after the instruction closes them. */
#define PG_MAX_STEPS 4
static __thread uintptr_t step_pages[PG_MAX_STEPS];
static __thread unsigned nsteps;

static bool step_page(uintptr_t addr) {
  if (nsteps == PG_MAX_STEPS || !pg_guard_step_begin(addr)) return false;
  step_pages[nsteps++] = addr;
  return true;
}

/* The trap after a stepped instruction: close the pages it opened. */
static pg_fault_action_t end_steps(const pg_fault_t *f) {
  if (!nsteps || !f->trace) return PG_FAULT_CHAIN;
  while (nsteps) pg_guard_step_end(step_pages[--nsteps]);
  return PG_FAULT_RETRY;
}

/* ---- settling, on a stack of pinguard's own ------------------------------------------------- */
typedef struct settling {
  const pg_fault_t *f;
  bool handled; /* out: the fault was pinguard's and is settled */
  bool step;    /* out: run the instruction once with the page open (a gap byte) */
} settling_t;

/* Decides whether the fault is pinguard's and settles it. backtrace() inside unwinds back through
 * settle_on_own_stack (its frame-pointer-based CFA survives the stack switch) and the signal
 * frame. */
static void settle_fault(void *arg) {
  settling_t *s = arg;
  const pg_fault_t *f = s->f;
  if (!pg_guard_owns(f->addr)) {
    s->handled = retry_stale(f->addr);
    return;
  }
  stale_page = 0;
  s->step = pg_decide_cpu_fault(f->addr, f->is_write, f->pc, f->fp,
                                f->can_step && nsteps < PG_MAX_STEPS);
  s->handled = true;
}

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

/* Runs settle_fault(s) on pinguard's own stack; where it has none (no memory for it), or the
 * handler is already running on it (a fault nested in the handler), on the interrupted stack,
 * below the interrupted code's 128-byte red zone (a guard fault is an ordinary load or store,
 * so that stack is healthy), as before the switch. A frame pointer of its own, and never
 * inlined: the unwinder finds its way back from the other stack through it. */
__attribute__((noinline, optimize("no-omit-frame-pointer"))) static void
settle_on_own_stack(settling_t *s) {
  uintptr_t here = (uintptr_t)__builtin_frame_address(0);
  char *base = fault_stack();
  if (base && !(here > (uintptr_t)base && here <= (uintptr_t)base + PG_FAULT_STACK_BYTES)) {
    run_on_stack((void *)(((uintptr_t)base + PG_FAULT_STACK_BYTES - 64) & ~(uintptr_t)15),
                 settle_fault, s);
  } else if (on_alternate_stack()) {
    run_on_stack((void *)(((uintptr_t)s->f->sp - 512) & ~(uintptr_t)15), settle_fault, s);
  } else {
    settle_fault(s);
  }
}

/* ---- the door ------------------------------------------------------------------------------- */
/* Whether the faulting thread was inside pinguard: in an interceptor's own work (which holds
 * pinguard's locks at times; this covers the handler itself too, so a fault nested in it), or
 * holding a guard lock outside one (the system-call checks). */
static bool interrupted_pinguard(const pg_fault_t *f) {
  return f->inside_pinguard || pg_guard_thread_busy();
}

__attribute__((optimize("no-omit-frame-pointer"))) pg_fault_action_t
pg_on_fault(const pg_fault_t *f) {
  if (f->kind == PG_FAULT_TRAP) return end_steps(f);
  /* A safe load's fault (pg_safeload.h: pinguard reading another runtime's data, a Python
   * frame chain) resumes at the load's failure label: first, before anything else is asked. */
  if (f->hardware && pg_safeload_fixup(f->context)) return PG_FAULT_RETRY;
  /* Only a page pinguard protected can be pinguard's fault. A stack overflow faults in the
   * thread's own guard area, which pinguard never protects, however close the pinned buffers
   * lie to the stack: asking the page, not the distance to the stack pointer, tells them apart.
   * The look takes no lock and little stack, so it is safe on the smallest alternate stack. */
  pg_guard_claim_t claim = f->access_error ? pg_guard_claims(f->addr) : PG_GUARD_NOT_OURS;
  if (claim == PG_GUARD_NOT_OURS) return PG_FAULT_CHAIN;
  /* The other data on a shared edge page: no conflict, and nothing to look up (the handler may
   * have interrupted pinguard itself, reading its own heap data there under one of its locks). */
  bool inside = interrupted_pinguard(f);
  if (claim == PG_GUARD_PROTECTED && !inside && pg_guard_is_neighbour(f->addr) &&
      step_page(f->addr))
    return PG_FAULT_STEP;
  /* The thread was inside pinguard when the fault came (a signal handler of the program's
   * interrupted it and touched a guarded page): it may hold any of pinguard's locks, so nothing
   * below that takes one may run. The page is opened without a lock and the access goes
   * unchecked (counted); the instruction runs again. */
  if (inside) {
    bool retry = claim == PG_GUARD_PROTECTED ? pg_guard_open_unlocked(f->addr)
                                             : retry_stale(f->addr);
    return retry ? PG_FAULT_RETRY : PG_FAULT_CHAIN;
  }
  settling_t s = {.f = f, .handled = false, .step = false};
  settle_on_own_stack(&s);
  if (!s.handled) return PG_FAULT_CHAIN;
  /* A gap byte between a pitched copy's rows, on a page its rows keep guarded: no conflict. */
  if (s.step && step_page(f->addr)) return PG_FAULT_STEP;
  return PG_FAULT_RETRY; /* the faulting instruction runs again */
}
