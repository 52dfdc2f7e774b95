/* pg_sink.h: where reports go: stderr, stdout, <log_path>.<pid> or <dir>/pinguard.<pid>,
 * opened on first use. Callers serialize (the report lock). Writes use the raw write system call so that the shim's
 * own write(2) interceptor never sees pinguard's output. */
#ifndef PG_SINK_H
#define PG_SINK_H

#include <stddef.h>

/* The longest log path kept, with its NUL (policy's option strings are no longer: pg_options.c
 * checks that at compile time); a longer one is cut. */
#define PG_SINK_PATH_MAX 1024

/* "" or "stderr": fd 2; "stdout": fd 1; a directory (a trailing '/', or an existing one):
 * <dir>/pinguard.<pid>; anything else: <path>.<pid>. Files are created lazily. */
void pg_sink_configure(const char *log_path);
void pg_sink_write(const char *s, size_t n);
/* In a fork child: drop the parent's file so the child opens its own <path>.<childpid>. */
void pg_sink_forget(void);
void pg_sink_close(void);
/* Writes n bytes to fd, retrying short writes and EINTR: pinguard's one way to write output. It
 * makes the write system call itself, so pinguard's own write(2) interposer never sees it. */
void pg_write_all(int fd, const char *s, size_t n);

#endif /* PG_SINK_H */
