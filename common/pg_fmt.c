/* pg_fmt.c: the bounded text builder used by reports, warnings and the help text.
 * Deliberately hand-rolled instead of snprintf: it must be async-signal-safe and malloc-free. */
#include "pg_fmt.h"

#include <string.h>

void pg_buf_init(pg_buf_t *b, char *storage, size_t cap) {
  b->p = storage;
  b->cap = cap;
  b->len = 0;
  b->overflow = cap == 0;
  if (cap) storage[0] = '\0';
}

void pg_buf_putn(pg_buf_t *b, const char *s, size_t n) {
  if (b->cap == 0) return;
  size_t room = b->cap - 1 - b->len;
  if (n > room) {
    n = room;
    b->overflow = true;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

void pg_buf_putc(pg_buf_t *b, char c) { pg_buf_putn(b, &c, 1); }

void pg_buf_puts(pg_buf_t *b, const char *s) {
  if (!s) s = "(null)";
  pg_buf_putn(b, s, strlen(s));
}

void pg_buf_u64(pg_buf_t *b, uint64_t v) {
  char tmp[24];
  size_t i = sizeof tmp;
  do {
    tmp[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  pg_buf_putn(b, tmp + i, sizeof tmp - i);
}

void pg_buf_i64(pg_buf_t *b, int64_t v) {
  if (v < 0) {
    pg_buf_putc(b, '-');
    pg_buf_u64(b, (uint64_t)0 - (uint64_t)v);
  } else {
    pg_buf_u64(b, (uint64_t)v);
  }
}

void pg_buf_hex(pg_buf_t *b, uint64_t v) {
  static const char digits[] = "0123456789abcdef";
  char tmp[18];
  size_t i = sizeof tmp;
  do {
    tmp[--i] = digits[v & 15];
    v >>= 4;
  } while (v);
  tmp[--i] = 'x';
  tmp[--i] = '0';
  pg_buf_putn(b, tmp + i, sizeof tmp - i);
}

/* v / div with `decimals` digits after the point, rounded half up. */
static void put_fixed(pg_buf_t *b, uint64_t v, uint64_t div, unsigned decimals) {
  uint64_t scale = 1;
  for (unsigned i = 0; i < decimals; i++) scale *= 10;
  uint64_t whole = v / div;
  uint64_t frac = ((v % div) * scale + div / 2) / div;
  if (frac >= scale) {
    whole++;
    frac -= scale;
  }
  pg_buf_u64(b, whole);
  if (!decimals) return;
  pg_buf_putc(b, '.');
  char tmp[20];
  for (unsigned i = decimals; i-- > 0;) {
    tmp[i] = (char)('0' + frac % 10);
    frac /= 10;
  }
  pg_buf_putn(b, tmp, decimals);
}

void pg_buf_duration(pg_buf_t *b, uint64_t ns) {
  if (ns < 100000) {
    put_fixed(b, ns, 1000, 0);
    pg_buf_puts(b, " us");
  } else {
    put_fixed(b, ns, 1000000, 1);
    pg_buf_puts(b, " ms");
  }
}

void pg_buf_ms_number(pg_buf_t *b, uint64_t ns) { put_fixed(b, ns, 1000000, 3); }

void pg_buf_size(pg_buf_t *b, uint64_t bytes) {
  static const struct { uint64_t unit; const char *name; } units[] = {
      {1ull << 30, " GiB"}, {1ull << 20, " MiB"}, {1ull << 10, " KiB"}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (bytes >= units[i].unit && bytes % units[i].unit == 0) {
      pg_buf_u64(b, bytes / units[i].unit);
      pg_buf_puts(b, units[i].name);
      return;
    }
  }
  pg_buf_u64(b, bytes);
  pg_buf_puts(b, bytes == 1 ? " byte" : " bytes");
}

void pg_buf_json_str(pg_buf_t *b, const char *s) {
  static const char digits[] = "0123456789abcdef";
  pg_buf_putc(b, '"');
  for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
    if (*c == '"' || *c == '\\') {
      pg_buf_putc(b, '\\');
      pg_buf_putc(b, (char)*c);
    } else if (*c < 0x20 || *c >= 0x7f) {
      char esc[6] = {'\\', 'u', '0', '0', digits[*c >> 4], digits[*c & 15]};
      pg_buf_putn(b, esc, sizeof esc);
    } else {
      pg_buf_putc(b, (char)*c);
    }
  }
  pg_buf_putc(b, '"');
}

void pg_buf_escaped(pg_buf_t *b, const char *s, size_t n, size_t max) {
  static const char digits[] = "0123456789abcdef";
  size_t shown = n < max ? n : max;
  for (size_t i = 0; i < shown; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c < 0x20 || c >= 0x7f || c == '\\') {
      char esc[4] = {'\\', 'x', digits[c >> 4], digits[c & 15]};
      pg_buf_putn(b, esc, sizeof esc);
    } else {
      pg_buf_putc(b, (char)c);
    }
  }
  if (shown < n) {
    pg_buf_puts(b, "...(");
    pg_buf_u64(b, n);
    pg_buf_puts(b, " bytes)");
  }
}
