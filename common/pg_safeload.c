/* pg_safeload.c: the recovery side of pg_safeload.h's loads. */
#include "pg_safeload.h"

#include <signal.h>
#include <ucontext.h>

atomic_bool pg_safeload_armed;

#if PG_SAFELOAD_AVAILABLE
/* One entry per PG_SAFELOAD in the object: the load instruction and its failure label, each as
 * an offset from the entry's own field. */
typedef struct entry {
  int32_t insn, fail;
} entry_t;

/* Defined by the linker around the section (its name is a C identifier). Every object that
 * holds a PG_SAFELOAD contributes; the reference here keeps the section in the link. A
 * placeholder entry that matches no instruction makes sure the section exists. */
extern const entry_t __start_pg_safeload_table[] __attribute__((visibility("hidden")));
extern const entry_t __stop_pg_safeload_table[] __attribute__((visibility("hidden")));
__asm__(".pushsection pg_safeload_table, \"a\"\n\t"
        ".balign 4\n\t"
        ".long 0, 0\n\t"
        ".popsection");

void pg_safeload_arm(void) { atomic_store_explicit(&pg_safeload_armed, true, memory_order_release); }

bool pg_safeload_fixup(void *uctx) {
  ucontext_t *uc = uctx;
  uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
  for (const entry_t *e = __start_pg_safeload_table; e < __stop_pg_safeload_table; e++) {
    if (!e->insn) continue; /* the placeholder */
    if ((uintptr_t)&e->insn + (uintptr_t)(intptr_t)e->insn != pc) continue;
    uc->uc_mcontext.gregs[REG_RIP] = (greg_t)((uintptr_t)&e->fail + (uintptr_t)(intptr_t)e->fail);
    return true;
  }
  return false;
}
#else
void pg_safeload_arm(void) {}
bool pg_safeload_fixup(void *uctx) {
  (void)uctx;
  return false;
}
#endif
