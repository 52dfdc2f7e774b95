/* pg_safeload.h: a load from an address that may not be mapped or readable (another runtime's
 * data structures, read where a pointer in them may be stale or garbage), without a system call
 * on the path that does not fault.
 *
 * PG_SAFELOAD(addr, out, fail) is one move instruction, inline (its address operand any of the
 * instruction's addressing modes). The instruction's address and
 * the address of the C label `fail` are recorded in a table (the pg_safeload_table section, as
 * offsets relative to themselves: no relocation). When the load faults, the SIGSEGV/SIGBUS
 * handler asks pg_safeload_fixup, which finds the faulting instruction in the table and resumes
 * the thread at `fail`; registers are as they were before the load (the fault happens before
 * the move retires), so the code at `fail` runs as if the load had branched there. No
 * per-thread state, no sigsetjmp, no lock, no allocation: the faulting instruction's address
 * names its recovery point, in whichever thread it faults.
 *
 * The loads may only be used while a handler that calls pg_safeload_fixup first is installed
 * for SIGSEGV and SIGBUS and those signals are not blocked: pg_safeload_armed says so (the shim
 * arms it when it installs its fault handler). Otherwise callers take another way (for Python
 * frames, process_vm_readv). Available on x86-64 with a compiler that has asm goto with outputs
 * (GCC 11, Clang 16), outside ThreadSanitizer (which defers synchronous signals it does not
 * expect) and AddressSanitizer (under which a recovered fault resumed at a wild address, in
 * e2e.pystack.fake_torn; not yet understood); PG_SAFELOAD_AVAILABLE says whether this build has
 * them. */
#ifndef PG_SAFELOAD_H
#define PG_SAFELOAD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__) && \
    ((defined(__clang__) && __clang_major__ >= 16) ||        \
     (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 11))
#define PG_SAFELOAD_AVAILABLE 1
#else
#define PG_SAFELOAD_AVAILABLE 0
#endif

/* True once a fault handler that calls pg_safeload_fixup is installed (pg_safeload_arm). */
extern atomic_bool pg_safeload_armed;

/* Says a handler that calls pg_safeload_fixup first is installed for SIGSEGV and SIGBUS (no-op
 * where PG_SAFELOAD_AVAILABLE is 0). */
void pg_safeload_arm(void);

/* From a SIGSEGV or SIGBUS handler (uctx: its third argument): if the fault is a safe load's,
 * moves the interrupted context to the load's failure label and returns true (the handler then
 * returns at once); false otherwise, touching nothing. Async-signal-safe: reads a constant
 * table, no lock, no allocation, no system call. */
bool pg_safeload_fixup(void *uctx);

static inline bool pg_safeload_ready(void) {
  return PG_SAFELOAD_AVAILABLE && atomic_load_explicit(&pg_safeload_armed, memory_order_relaxed);
}

#if PG_SAFELOAD_AVAILABLE
/* out = *(const uint64_t *)(addr), or a jump to the C label `fail` (in the calling function)
 * when that load faults. addr need not be aligned. Only while pg_safeload_ready(). */
#define PG_SAFELOAD(addr, out, fail)                                           \
  __asm__ goto("1: movq %1, %0\n\t"                                            \
               ".pushsection pg_safeload_table, \"a\"\n\t"                     \
               ".balign 4\n\t"                                                 \
               ".long 1b - .\n\t"                                              \
               ".long %l[" #fail "] - .\n\t"                                   \
               ".popsection"                                                   \
               : "=r"(out)                                                     \
               : "m"(*(const uint64_t *)(uintptr_t)(addr))                     \
               :                                                               \
               : fail)
#endif

#endif /* PG_SAFELOAD_H */
