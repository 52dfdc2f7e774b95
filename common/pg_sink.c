/* pg_sink.c: the report destination. The log file is opened lazily (a process that never
 * reports never creates one) and reopened after fork, because its name carries the pid. */
#include "pg_sink.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pg_fmt.h"

static char path_prefix[PG_SINK_PATH_MAX];
static char file_name[PG_SINK_PATH_MAX + 24];
static int fd = 2;
static int file_pid;     /* pid the file was opened for; 0: not open */
static int use_file;

void pg_write_all(int to, const char *s, size_t n) {
  while (n) {
    long w = syscall(SYS_write, to, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    s += w;
    n -= (size_t)w;
  }
}

void pg_sink_configure(const char *log_path) {
  pg_sink_close();
  use_file = 0;
  fd = 2;
  if (!log_path || !*log_path || strcmp(log_path, "stderr") == 0) return;
  if (strcmp(log_path, "stdout") == 0) {
    fd = 1;
    return;
  }
  /* A directory (a trailing '/', or the name of one that exists) gets files named
   * pinguard.<pid> inside it, never a hidden ".<pid>" or a failed open. */
  size_t n = strlen(log_path);
  struct stat st;
  bool dir = log_path[n - 1] == '/' || (stat(log_path, &st) == 0 && S_ISDIR(st.st_mode));
  const char *leaf = dir ? (log_path[n - 1] == '/' ? "pinguard" : "/pinguard") : "";
  size_t ln = strlen(leaf);
  if (n + ln >= sizeof path_prefix) n = sizeof path_prefix - 1 - ln;
  memcpy(path_prefix, log_path, n);
  memcpy(path_prefix + n, leaf, ln + 1);
  use_file = 1;
}

static void open_file(void) {
  int pid = (int)getpid();
  if (file_pid == pid) return;
  if (file_pid && fd > 2) close(fd);
  pg_buf_t b;
  pg_buf_init(&b, file_name, sizeof file_name);
  pg_buf_puts(&b, path_prefix);
  pg_buf_putc(&b, '.');
  pg_buf_u64(&b, (uint64_t)pid);
  int f = open(file_name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  file_pid = pid;
  if (f >= 0) {
    fd = f;
    return;
  }
  char msg[PG_SINK_PATH_MAX + 128];
  pg_buf_init(&b, msg, sizeof msg);
  pg_buf_puts(&b, "pinguard: WARNING: cannot open log file '");
  pg_buf_puts(&b, file_name);
  pg_buf_puts(&b, "' (");
  pg_buf_puts(&b, strerror(errno));
  pg_buf_puts(&b, "); reporting to stderr\n");
  pg_write_all(2, msg, b.len);
  file_name[0] = '\0';
  fd = 2;
}

void pg_sink_write(const char *s, size_t n) {
  if (use_file) open_file();
  pg_write_all(fd, s, n);
}

void pg_sink_forget(void) {
  if (use_file && file_pid && fd > 2) close(fd);
  if (use_file) {
    file_pid = 0;
    fd = 2;
  }
}

void pg_sink_close(void) { pg_sink_forget(); }
