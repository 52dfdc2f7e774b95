/* pg_fmt.h: a bounded, allocation-free text builder for the report path.
 * Reports may be printed from a signal handler or while malloc is unusable, so nothing here calls
 * stdio or malloc; overflow is recorded (never silent) and the caller marks the output truncated. */
#ifndef PG_FMT_H
#define PG_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pg_buf {
  char *p;         /* storage, always NUL-terminated */
  size_t cap;      /* bytes in p, including room for the NUL */
  size_t len;      /* bytes used, excluding the NUL */
  bool overflow;   /* something did not fit */
} pg_buf_t;

void pg_buf_init(pg_buf_t *b, char *storage, size_t cap);
void pg_buf_putc(pg_buf_t *b, char c);
void pg_buf_puts(pg_buf_t *b, const char *s);                   /* NULL prints "(null)" */
void pg_buf_putn(pg_buf_t *b, const char *s, size_t n);
void pg_buf_u64(pg_buf_t *b, uint64_t v);
void pg_buf_i64(pg_buf_t *b, int64_t v);
void pg_buf_hex(pg_buf_t *b, uint64_t v);                       /* "0x1f" */
/* Nanoseconds as "1.8 ms" (or "45 us" below 0.1 ms): humans compare waits in milliseconds. */
void pg_buf_duration(pg_buf_t *b, uint64_t ns);
/* Nanoseconds as a JSON number of milliseconds with 3 decimals ("1.834"). */
void pg_buf_ms_number(pg_buf_t *b, uint64_t ns);
/* Sizes as "32 MiB" when a whole number of KiB/MiB/GiB, else "4097 bytes". */
void pg_buf_size(pg_buf_t *b, uint64_t bytes);
/* A JSON string literal with quotes; bytes >= 0x80 and controls become \u00XX so the line is
 * always valid JSON, whatever a symbol name or path contains. */
void pg_buf_json_str(pg_buf_t *b, const char *s);
/* Printable form of untrusted input for warnings: at most max bytes, non-printables as \xNN,
 * and "...(N bytes)" when cut, so a truncation is always visible. */
void pg_buf_escaped(pg_buf_t *b, const char *s, size_t n, size_t max);

#endif /* PG_FMT_H */
