/* pg_statsfile.h: production counters (stats_path=): the counters of pg_stats.h, reports by kind
 * and two gauges, rewritten atomically (a temporary file, then rename) in the Prometheus text
 * format that node_exporter's textfile collector reads, every stats_interval_s seconds and once
 * at exit. No thread exists unless stats_path is set: the writer starts with tracking (the first
 * CUDA call that needs it, never a constructor) and again in a fork child, which inherits no
 * threads. */
#ifndef PG_STATSFILE_H
#define PG_STATSFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* From pg_policy_configure: the option values. An empty path turns the feature off. */
void pg_statsfile_configure(const char *path, unsigned interval_s);
/* Current values of the gauges (the tracker's region and in-flight counts); NULL reads 0. */
void pg_statsfile_gauges(size_t (*regions)(void), size_t (*inflight)(void));
/* Starts the writer thread once, if a path and an interval are set. Idempotent, thread-safe. */
void pg_statsfile_start(void);
bool pg_statsfile_running(void);
/* One unsuppressed report of kind k (repeats included). Lock-free. */
void pg_statsfile_count_report(unsigned kind);
/* The file's contents now, for the given pid; returns the length (cut at cap-1, NUL-ended). */
size_t pg_statsfile_format(char *out, size_t cap, int pid);
/* The file name for pid: "<path>.<pid>", "<path minus .prom>.<pid>.prom", or
 * "<dir>/pinguard.<pid>.prom" for a directory. Returns its length. Missing directories on the
 * way to it are created when it is written; a failure is warned about once, naming the file. */
size_t pg_statsfile_name(char *out, size_t cap, int pid);
/* Rewrites the file now (temporary file + rename). 0 on success, -1 (errno kept) otherwise. */
int pg_statsfile_write(void);
/* At exit: the last rewrite (when `active`, or when the writer ran), and no rewrite after it. */
void pg_statsfile_finish(bool active);

void pg_statsfile_atfork_prepare(void);
void pg_statsfile_atfork_parent(void);
void pg_statsfile_atfork_child(void); /* zero report counts; restart the writer if it ran */

#endif /* PG_STATSFILE_H */
