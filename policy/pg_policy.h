/* pg_policy.h: the decision API the shim calls: what mode pinguard is in, whether and how a
 * violation is reported, the exit summary and the exit status. It knows nothing about CUDA or
 * the tracker's regions and in-flight accesses; core/ decides which accesses conflict and waits
 * for them, then tells policy.
 *
 * Life cycle, as the shim uses it:
 *   pg_policy_init()            once, from the shim's constructor (it reads the environment and
 *                               makes no CUDA call). Options come from built-in defaults <
 *                               __pinguard_default_options() < PINGUARD_OPTIONS.
 *   pg_policy_mode()            on every interposed call (a plain load).
 *   pg_policy_report(&r)        per violation; returns what became of it.
 *   pg_policy_note_wait(ns)     after each enforce wait.
 *   pg_policy_atfork_*()        from the shim's pthread_atfork handlers.
 *   pg_policy_finish()          from the shim's exit hook; see the exit-status rule below.
 *
 * Exit status rule. A library cannot change the status a program passes to exit(), so the shim
 * registers an atexit handler (or a late destructor) that calls pg_policy_finish(). It prints
 * the summary (print_summary), statistics (print_stats), suppression counts and repeat counts,
 * and returns the status to use: `exitcode` (when != 0) if at least one unsuppressed report was
 * made, in audit; in enforce only if one was made whose violation enforce could not prevent by
 * waiting (action other than PG_ACTION_WAITED: a capture, a host function), or any with
 * enforce_fails=1. Else -1. On a value >= 0 the shim calls _exit(value), which replaces the
 * program's own status (as LeakSanitizer does); on -1 it returns and the program exits as it
 * would have. Only the first call prints; later calls return the same value. A process killed
 * by a signal or by _exit() never reaches the hook: reports were still printed as they came.
 *
 * halt_on_error / abort_on_error: after the first unsuppressed report is printed,
 * pg_policy_report itself calls pg_policy_finish() and then _exit(exitcode) (halt_on_error) or
 * abort() (abort_on_error, which wins if both are set). */
#ifndef PG_POLICY_H
#define PG_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pg_options.h"
#include "pg_report.h"
#include "pg_stats.h"

/* Reads the options, opens nothing yet (the log file is created on the first report), loads
 * the suppressions file and prints help=1. Idempotent and thread-safe. */
void pg_policy_init(void);
/* The work of pg_policy_init with explicit strings (either may be NULL), replacing any earlier
 * configuration and clearing all counts. For tests and the launcher; not thread-safe. */
void pg_policy_configure(const char *program_defaults, const char *env);

const pg_options_t *pg_policy_options(void);
/* Whether guard pages are on: the guard option, with auto decided by the mode. */
bool pg_policy_guard(void);
/* Turns Python frames in stacks on or off (python_stacks, auto decided by the mode) and, once
 * per process, says on stderr when the process runs a CPython this build cannot read. Not from a
 * signal handler (it looks the interpreter up with dlsym). */
void pg_policy_python_stacks(void);
pg_mode_t pg_policy_mode(void);
static inline bool pg_policy_enforcing(void) { return pg_policy_mode() == PG_MODE_ENFORCE; }

typedef enum pg_verdict {
  PG_VERDICT_PRINTED,     /* a new report, printed */
  PG_VERDICT_DUPLICATE,   /* same identity as an earlier report: counted, not printed */
  PG_VERDICT_SUPPRESSED,  /* matched a suppression rule: counted per rule, not printed */
  PG_VERDICT_LIMITED,     /* max_reports already printed: counted, not printed */
  PG_VERDICT_IGNORED,     /* mode=off, or a report from a signal handler that interrupted
                             the report path on the same thread */
} pg_verdict_t;

/* Counts, de-duplicates, matches suppressions and prints one violation. Thread-safe; the
 * report's pointers need to live only for the call. Set PG_REPORT_FROM_SIGNAL in r->flags from
 * a signal handler: symbolization then uses dladdr, the symbol tables and the line tables only
 * (no addr2line, no fork, no malloc). */
pg_verdict_t pg_policy_report(const pg_report_t *r);

/* Enforce waits: counted in the summary ("K waits totalling T ms") and in the stats. */
void pg_policy_note_wait(uint64_t ns);

/* Counts so far (for tests and the launcher). */
typedef struct pg_policy_counts {
  uint64_t reports;     /* unsuppressed violations, repeats included */
  uint64_t unprevented; /* of those, the ones enforce did not wait for (all of them in audit) */
  uint64_t suppressed;
  uint64_t unique;      /* distinct unsuppressed identities */
  uint64_t printed;
  uint64_t limited;     /* not printed because of max_reports */
  uint64_t ignored;
} pg_policy_counts_t;
pg_policy_counts_t pg_policy_counts(void);
/* Hits of suppression rule i (in file order), or 0. */
uint64_t pg_policy_suppression_hits(unsigned i);
unsigned pg_policy_suppression_count(void);

/* Production counters (stats_path): the gauges' sources, and the writer thread, started here
 * (when the option is set) because tracking has just started; never from a constructor. */
void pg_policy_stats_start(size_t (*regions)(void), size_t (*inflight)(void));

/* See the exit status rule above. */
int pg_policy_finish(void);

void pg_policy_atfork_prepare(void);
void pg_policy_atfork_parent(void);
void pg_policy_atfork_child(void); /* fresh counts, log file and symbolizer in the child */

#endif /* PG_POLICY_H */
