/* pg_guard.h: guard pages. While a GPU access to pinned host memory is in flight, the pages lying
 * wholly inside it are protected (PROT_NONE for device writes and unknown direction, PROT_READ
 * for device reads), so a CPU access faults and pinguard can act before the bytes are harmed.
 * pg_guard.c keeps the per-page counts that decide each page's protection; the fault handler
 * lives in shim/pg_signal.c and what to do about a fault in pg_fault.c and pg_decide.c. */
#ifndef PG_GUARD_H
#define PG_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pg_engine_types.h" /* PG_REGION_FLAG_* */
#include "pg_kinds.h"

/* The kinds of pinned memory whose mprotect support is probed separately. */
typedef enum pg_guard_kind {
  PG_GUARD_HOST_ALLOC,      /* cudaHostAlloc / cudaMallocHost (driver-mapped) */
  PG_GUARD_REGISTERED_ANON, /* cudaHostRegister of private memory */
  PG_GUARD_REGISTERED_SHARED, /* cudaHostRegister of a MAP_SHARED mapping */
  PG_GUARD_KIND_COUNT
} pg_guard_kind_t;

/* Turns guarding on for buffers of at least min_bytes (and, with shared_edges, on the partial
 * edge pages registered buffers share with other heap data). Installs the tracker hooks. */
void pg_guard_enable(size_t min_bytes, bool shared_edges);

/* The mapping budget: guards may add at most `budget` mappings to those the process had when
 * they started (0: no such limit), and never bring it within an eighth of vm.max_map_count.
 * Past either, new guards are skipped (PG_STAT_GUARD_SKIPPED_MAPS, one warning). Call before
 * pg_guard_enable. */
void pg_guard_set_map_budget(size_t budget);
bool pg_guard_enabled(void);

/* Tracker hooks: an access piece [lo, hi) of region reg began (true: its pages are counted) /
 * retired. */
bool pg_guard_on_begin(uintptr_t *lo, uintptr_t *hi, pg_dir_t dir, const pg_region_t *reg,
                       void *ctx);
void pg_guard_on_retire(uintptr_t lo, uintptr_t hi, pg_dir_t dir, void *ctx);

/* The fault handler's first question, answered without a lock or a deep stack (it may run on a
 * tiny alternate signal stack): was the faulting page protected by pinguard? PROTECTED: it is
 * now. WAS_PROTECTED: it was once and is open now (another thread may have unprotected it
 * between the fault and this look: retrying the instruction is right). NOT_OURS: never. */
typedef enum pg_guard_claim {
  PG_GUARD_NOT_OURS,
  PG_GUARD_PROTECTED,
  PG_GUARD_WAS_PROTECTED,
} pg_guard_claim_t;
pg_guard_claim_t pg_guard_claims(uintptr_t addr);

/* For a fault taken while its thread was inside pinguard (a program's signal handler that
 * interrupted pinguard, which may hold any of its locks): opens the page holding addr with no
 * lock, until the accesses guarding it retire, and counts it (PG_STAT_GUARD_UNCHECKED). The
 * access goes unchecked; the retried instruction succeeds. False if the page is not one
 * pinguard recorded or mprotect failed. */
bool pg_guard_open_unlocked(uintptr_t addr);

/* True while the calling thread holds one of this file's locks (a stripe or the probe lock),
 * including outside pg_shim_enter (the system-call checks). */
bool pg_guard_thread_busy(void);

/* Is this page one pinguard may have protected (some access guards it, or it was released while
 * one still does)? Used by the fault handler to tell our faults from the program's own. */
bool pg_guard_owns(uintptr_t addr);

/* Whether the protection pinguard applied to the page holding addr lets the CPU read (or
 * write) it now. */
bool pg_guard_page_allows(uintptr_t addr, bool is_write);

/* Lets the CPU at [lo, hi) until the accesses guarding it retire: audit mode's "report, then
 * unprotect and retry", and the system-call checks (the kernel would return EFAULT). */
void pg_guard_release(uintptr_t lo, uintptr_t hi);

/* pg_guard_release for only those pages of [lo, hi) whose protection denies a read (or, with
 * is_write, a write), and only for that access: a read's pages let CPU reads through and stay
 * guarded against CPU writes while a device access counts on them. What a system call needs so
 * that the kernel never meets a guarded page, and what a fault that conflicts with nothing needs
 * so that its instruction can run. */
void pg_guard_release_denying(uintptr_t lo, uintptr_t hi, bool is_write);

/* How many device accesses have begun on the page holding addr (a wrapping count), for
 * pg_guard_release_page_since: a fault reads it before it looks for conflicts. */
unsigned pg_guard_page_begins(uintptr_t addr);

/* pg_guard_release_denying for the page holding addr, unless a device access began on it since
 * its count read `begins`: then the page is left as it is (false), so that the retried
 * instruction faults again and is judged with that access in view. */
bool pg_guard_release_page_since(uintptr_t addr, bool is_write, unsigned begins);

/* Undoes pg_guard_release on the whole pages of [lo, hi): the pages that accesses still guard are
 * protected again (after a host function, which may touch pages that later work on its own
 * stream will use, has returned). */
void pg_guard_rearm(uintptr_t lo, uintptr_t hi);

/* Re-applies the protection the counts call for on the page holding addr (after a wait retired
 * accesses, or a fault on an access that had already completed). */
void pg_guard_refresh(uintptr_t addr);

/* Drops every count on the pages of [lo, hi) and opens them (unless `unmapped`: the mapping is
 * already gone). Called before a region is freed or unregistered. */
void pg_guard_forget(uintptr_t lo, uintptr_t hi, bool unmapped);

/* Lock-free, for the fault handler: addr lies on a guarded shared edge page (guard_shared_edges),
 * on the bytes there that are not the region's. */
bool pg_guard_is_neighbour(uintptr_t addr);

/* A fault on a guarded page at bytes outside every region (the other data on a shared edge page):
 * step_begin opens the page (true) for the faulting thread to single-step one instruction, and
 * step_end, from the trap after it, lets the page's protection return. */
bool pg_guard_step_begin(uintptr_t addr);
void pg_guard_step_end(uintptr_t addr);

/* A system call's buffer [p, p+n) that lies outside every region may still share a guarded edge
 * page with one: the pages that would deny the kernel are let through, so it never gets EFAULT. */
void pg_guard_spare_neighbour(const void *p, size_t n, bool kernel_writes);

/* Marks whether the memory of a region is a MAP_SHARED mapping (decides its probe kind). */
pg_guard_kind_t pg_guard_kind_of(pg_pin_how_t how, unsigned region_flags);
/* The PG_REGION_FLAG_* a region carries: pg_engine_types.h. */

/* The words [p, p+n) are a flag protocol's (a stream memory operation names them: the device
 * writes or waits on them while the CPU polls or sets them): the pages holding them are never
 * protected again, and opened now if they are (until their region is forgotten). */
void pg_guard_never(const void *p, size_t n);

/* Fork child: the child inherits the protections but no GPU work; make every page accessible. */
void pg_guard_atfork_prepare(void);
void pg_guard_atfork_parent(void);
void pg_guard_atfork_child(void);

#endif /* PG_GUARD_H */
