/* pg_suppress.h: suppression rules ("kind:pattern", one per line) and their matching against the
 * symbolized stacks of a report. Fixed-size storage: loaded once at startup, no malloc. */
#ifndef PG_SUPPRESS_H
#define PG_SUPPRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pg_options.h"
#include "pg_symbolize.h"

#define PG_SUPP_MAX_RULES 256
#define PG_SUPP_PATTERN_MAX 256

typedef struct pg_supp_rule {
  int kind;                          /* pg_report_kind_t, or -1 for '*' (every kind) */
  char pattern[PG_SUPP_PATTERN_MAX];
  char text[PG_SUPP_PATTERN_MAX + 48]; /* the rule as written, for the exit counts */
  uint64_t hits;
} pg_supp_rule_t;

typedef struct pg_suppressions {
  unsigned n;
  pg_supp_rule_t rules[PG_SUPP_MAX_RULES];
} pg_suppressions_t;

/* Adds the rules in text[0..n). Blank lines and lines starting with '#' (after blanks) are
 * skipped; a malformed line or an unknown kind gets one warning and is skipped. `source` names
 * the file in warnings. Returns the number of warnings. */
int pg_supp_parse(pg_suppressions_t *s, const char *text, size_t n, const char *source,
                  pg_warn_fn warn, void *ctx);
/* Reads and parses a file. Returns warnings, or -1 (with a warning) if it cannot be read. */
int pg_supp_load_file(pg_suppressions_t *s, const char *path, pg_warn_fn warn, void *ctx);

/* The suppression pattern language (as the sanitizers'): '*' matches any run of characters,
 * a leading '^' anchors at the start and a trailing '$' at the end; otherwise the pattern may
 * match anywhere in str. */
bool pg_supp_pattern_match(const char *pattern, const char *str);

/* The first rule matching this kind and any function, source file or module (full path or base
 * name) in the given stacks, or -1. Does not count the hit. */
int pg_supp_match(const pg_suppressions_t *s, int kind, const pg_symstack_t *const *stacks,
                  size_t nstacks);

#endif /* PG_SUPPRESS_H */
