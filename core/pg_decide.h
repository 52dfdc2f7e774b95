/* pg_decide.h: the audit/enforce decisions behind the engine's door (pg_engine.h, which
 * pg_decide.c implements for operations, pinning, ordering, captures, host functions, system
 * calls and annotations). This layer asks the tracker what is in flight, then waits (enforce) or
 * reports (audit) through the policy's report machinery. What follows is core's own: the other
 * engine files call it, the shim never does. */
#ifndef PG_DECIDE_H
#define PG_DECIDE_H

#include <stdbool.h>
#include <stdint.h>

#include "pg_engine.h"

/* The decisions' half of pg_engine_start: keeps the device operations, starts the tracker,
 * guard pages and stack options. False: pinguard stays inert. */
bool pg_decide_start(const pg_devops_t *ops);

/* ---- CPU faults (pg_fault.c calls these from the signal handler) --------------------------- */
/* The CPU stack of a fault, from the handler: pc and frame pointer of the faulting instruction.
 * Unwinds through the signal frame, so it must run on the stack the handler was entered on (or
 * one switched to from it with a frame-pointer chain back). */
void pg_decide_fault_stack(pg_stack_t *out, void *pc, void *fp);
/* A fault on a guarded page (pc and fp: the faulting instruction's): settles the conflicting
 * accesses (enforce waits, audit reports; the CPU stack is unwound only once a conflict is
 * found, through pg_decide_fault_stack) and leaves the page so that the instruction can run
 * when retried. True when the instruction is to be single-stepped with the page open (the
 * caller can step: can_step): it touched a byte no access in flight touches (a gap between a
 * pitched copy's rows) on a page that stays guarded for the bytes they do touch. Without
 * can_step those copies stop guarding their pages instead (they stay tracked), as after a
 * report. */
bool pg_decide_cpu_fault(uintptr_t addr, bool is_write, void *pc, void *fp, bool can_step);

#endif /* PG_DECIDE_H */
