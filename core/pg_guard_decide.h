/* pg_guard_decide.h: whether a pinned range may be guarded at all, decided once, when it is
 * registered, from the kernel release and the mapping that holds it. Guard pages must never be
 * the cause of harm (README.md, "Safe on real hosts"):
 *   - Linux 5.9 to 5.18 (and 4.14 and 4.19 stable kernels with the same change): a protect then
 *     unprotect round trip leaves a private page's entry read-only; the CPU's next store copies
 *     the page, since the pin holds extra references, and from then on the CPU and the GPU use
 *     different pages. Private memory registered there is never guarded.
 *   - hugetlb: mprotect of a range not aligned to the huge page fails with EINVAL. Guards work
 *     in 4 KiB pages, so hugetlb memory is never guarded (the "nothing" of whole huge pages or
 *     nothing).
 * Each reason is said once, in one warning line naming what loses CPU-access checking; every
 * other check (frees, I/O, conflicts, annotations) still applies to that memory. */
#ifndef PG_GUARD_DECIDE_H
#define PG_GUARD_DECIDE_H

#include <stdbool.h>
#include <stdint.h>

#include "pg_procmaps.h"

typedef enum pg_guard_verdict {
  PG_GUARD_YES,         /* guard as usual */
  PG_GUARD_NO_COW,      /* private memory on a kernel whose protection round trip copies pages */
  PG_GUARD_NO_HUGETLB,  /* hugetlb memory */
} pg_guard_verdict_t;

/* Whether a protect/unprotect round trip can make the next CPU store copy a pinned private page
 * on this kernel release ("5.15.0-91-generic"): 5.9 up to 5.18, and 4.14 and 4.19. An
 * unparsable release counts as safe. */
bool pg_guard_release_copies_on_write(const char *release);

/* The verdict for registered memory in mapping m on kernel `release`. */
pg_guard_verdict_t pg_guard_verdict(const pg_mapping_t *m, const char *release);

/* The kernel release pinguard decides for: the kernel_release option when set (tests), else
 * uname's. */
const char *pg_guard_kernel_release(void);

/* Says, once per verdict, which memory goes unguarded and why (no-op for PG_GUARD_YES). */
void pg_guard_warn_verdict(pg_guard_verdict_t v, const char *release);

#endif /* PG_GUARD_DECIDE_H */
