/* count_maps_opens.c: libe2e_count_maps_opens.so, preloaded after libpinguard.so by the
 * registration-scaling test. Counts every open of /proc/self/maps (or /proc/<pid>/maps) by any
 * code in the process, through open, openat and fopen and their 64-bit names, and forwards the
 * call. e2e_maps_opens() returns the count so far. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define API __attribute__((visibility("default")))

static atomic_ulong opens;

API unsigned long e2e_maps_opens(void) { return atomic_load(&opens); }

static void note(const char *path) {
  if (!path || strncmp(path, "/proc/", 6) != 0) return;
  const char *p = path + 6;
  if (strncmp(p, "self/", 5) == 0) {
    p += 5;
  } else {
    while (*p >= '0' && *p <= '9') p++;
    if (p == path + 6 || *p++ != '/') return;
  }
  if (strcmp(p, "maps") == 0) atomic_fetch_add(&opens, 1);
}

#define NEXT(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

static mode_t mode_arg(int flags, va_list ap) {
  return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

API int open(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t m = mode_arg(flags, ap);
  va_end(ap);
  note(path);
  return NEXT(open)(path, flags, m);
}

API int open64(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t m = mode_arg(flags, ap);
  va_end(ap);
  note(path);
  return NEXT(open64)(path, flags, m);
}

API int openat(int dir, const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t m = mode_arg(flags, ap);
  va_end(ap);
  note(path);
  return NEXT(openat)(dir, path, flags, m);
}

API int openat64(int dir, const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t m = mode_arg(flags, ap);
  va_end(ap);
  note(path);
  return NEXT(openat64)(dir, path, flags, m);
}

API FILE *fopen(const char *path, const char *mode) {
  note(path);
  return NEXT(fopen)(path, mode);
}

API FILE *fopen64(const char *path, const char *mode) {
  note(path);
  return NEXT(fopen64)(path, mode);
}
