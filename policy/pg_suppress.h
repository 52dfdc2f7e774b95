/* pg_suppress.h: suppression rules ("kind:pattern", one per line) and their matching against the
 * symbolized stacks of a report. Loaded once at startup into storage that grows with mmap (no
 * malloc, no limit on the number of rules); matching only reads it. */
#ifndef PG_SUPPRESS_H
#define PG_SUPPRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pg_options.h"
#include "pg_symbolize.h"

#define PG_SUPP_PATTERN_MAX 256

/* Which of a report's stacks a rule looks at: "kind@access:pattern" and so on. The stacks are
 * passed to pg_supp_match in the report's order: the access stack, then the allocation stack,
 * then the launch stacks of the in-flight GPU accesses. */
typedef enum pg_supp_stack {
  PG_SUPP_ANY,    /* no '@', or "@any": every stack */
  PG_SUPP_ACCESS, /* "@access": the violating access (CPU read, free, system call, ...) */
  PG_SUPP_ALLOC,  /* "@alloc": the pinned buffer's allocation or registration */
  PG_SUPP_LAUNCH, /* "@launch": the in-flight GPU accesses' launches */
} pg_supp_stack_t;

typedef struct pg_supp_rule {
  int kind;                          /* pg_report_kind_t, or -1 for '*' (every kind) */
  pg_supp_stack_t stack;
  unsigned line;                     /* a file:line rule's line; 0 for a name pattern */
  char pattern[PG_SUPP_PATTERN_MAX]; /* the name pattern, or a file:line rule's file name */
  char text[PG_SUPP_PATTERN_MAX + 48]; /* the rule as written, for the exit counts */
  uint64_t hits;
} pg_supp_rule_t;

/* Zero-initialized is empty. Rules are added only while parsing (startup), never from a signal
 * handler or a report, so the storage never moves under a reader. */
typedef struct pg_suppressions {
  unsigned n;
  unsigned cap;
  pg_supp_rule_t *rules; /* mmap'ed, cap entries */
} pg_suppressions_t;

/* Releases the rules' storage and empties s. */
void pg_supp_free(pg_suppressions_t *s);

/* Adds the rules in text[0..n). Blank lines and lines starting with '#' (after blanks) are
 * skipped; a malformed line or an unknown kind gets one warning and is skipped, and so is a rule
 * that cannot be stored (out of memory). `source` names the file in warnings. Returns the number
 * of warnings. */
int pg_supp_parse(pg_suppressions_t *s, const char *text, size_t n, const char *source,
                  pg_warn_fn warn, void *ctx);
/* Reads and parses a file. Returns warnings, or -1 (with a warning) if it cannot be read. */
int pg_supp_load_file(pg_suppressions_t *s, const char *path, pg_warn_fn warn, void *ctx);

/* The suppression pattern language (as the sanitizers'): '*' matches any run of characters,
 * a leading '^' anchors at the start and a trailing '$' at the end; otherwise the pattern may
 * match anywhere in str. */
bool pg_supp_pattern_match(const char *pattern, const char *str);

/* The first rule matching this kind and, in the stacks its '@' names (all by default), either
 * (a name pattern) any function, source file or module (full path or base name), or (a pattern
 * "file:line", the line in decimal) a frame, native or Python, at that line of a file whose path
 * is that file name or ends with "/" and it ('*' wildcards allowed in the name). stacks[0] is the
 * access stack, stacks[1] the allocation stack, the rest launch stacks; any may be NULL. Returns
 * the rule's index or -1. Does not count the hit. */
int pg_supp_match(const pg_suppressions_t *s, int kind, const pg_symstack_t *const *stacks,
                  size_t nstacks);

#endif /* PG_SUPPRESS_H */
