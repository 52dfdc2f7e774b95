/* pg_report_format.h: a report rendered as text (for people) or one JSON line (for machines),
 * from the report plus its already-symbolized stacks. Pure formatting into a caller's buffer. */
#ifndef PG_REPORT_FORMAT_H
#define PG_REPORT_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "pg_fmt.h"
#include "pg_report.h"
#include "pg_symbolize.h"

/* Longest SUMMARY line, as the sanitizers cap theirs. */
#define PG_SUMMARY_MAX 1024
/* Longest test name kept (longer ones are cut). */
#define PG_REPORT_TEST_MAX 512

typedef struct pg_report_view {
  const pg_report_t *r;
  uint32_t id;                                /* report number in this process */
  int pid;
  const pg_symstack_t *access;                /* each may be NULL or !present */
  const pg_symstack_t *region;
  const pg_symstack_t *gpu[PG_REPORT_MAX_GPU];
  /* The test that was running (pytest's PYTEST_CURRENT_TEST at report time,
   * "path::name (phase)"), or NULL: printed as a "test:" line, and in JSON as "test" (the node id,
   * without the phase). */
  const char *test;
} pg_report_view_t;

/* "SUMMARY: pinguard: <kind> <file:line> in <func>", at most PG_SUMMARY_MAX bytes, no newline.
 * The frame is the first one of the violating stack outside libc, the loader, pinguard and the
 * CUDA runtime (the program's own call site), else the first one. */
size_t pg_report_summary(const pg_report_view_t *v, char *out, size_t cap);

/* The Python frame that stands for a stack: its innermost frame in the program's own files (not
 * the standard library's or an installed package's), else its innermost; NULL without any. */
const pg_pyframe_t *pg_report_user_pyframe(const pg_symstack_t *s);

/* The multi-line text report, newline-terminated. A report that does not fit ends with a
 * "[report truncated]" line. */
void pg_report_format_text(pg_buf_t *b, const pg_report_view_t *v);

/* One JSON object and a newline. If the stacks do not fit, they are dropped and
 * "truncated":true is set, so the line is always valid JSON. */
void pg_report_format_json(pg_buf_t *b, const pg_report_view_t *v);

#endif /* PG_REPORT_FORMAT_H */
