/* pg_options.c: defaults, the key=value parser and the help text, expanded from pg_options.inc.
 * The parser walks the caller's string in place (no copy, no malloc), because it runs during
 * process start, possibly before malloc is usable, and must survive any bytes a user types. */
#include "pg_options.h"
#include "pg_sink.h"

#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "pg_fmt.h"
#include "pg_stack.h"

/* The log sink keeps any log_path this file accepts. */
_Static_assert(PG_OPT_STR_MAX <= PG_SINK_PATH_MAX, "pg_sink.h: PG_SINK_PATH_MAX too small");

/* ---- per-type defaults ------------------------------------------------------------------ */
static void default_bool(bool *d, bool v) { *d = v; }
static void default_uint(int *d, int v) { *d = v; }
static void default_u8(int *d, int v) { *d = v; }
static void default_depth(int *d, int v) { *d = v; }
static void default_size(uint64_t *d, uint64_t v) { *d = v; }
static void default_mode(pg_mode_t *d, pg_mode_t v) { *d = v; }
static void default_tristate(int *d, int v) { *d = v; }
static void default_format(pg_log_format_t *d, pg_log_format_t v) { *d = v; }
static void default_str(pg_optstr_t *d, const char *v) {
  size_t n = strlen(v);
  if (n >= sizeof d->s) n = sizeof d->s - 1;
  memcpy(d->s, v, n);
  d->s[n] = '\0';
}

void pg_options_set_defaults(pg_options_t *o) {
  memset(o, 0, sizeof *o);
#define OPT(type, name, def, desc) default_##type(&o->name, def);
#include "pg_options.inc"
#undef OPT
}

/* ---- per-type value parsers: return false and set *expected when the value is rejected ---- */
static bool span_eq_ci(const char *v, size_t n, const char *word) {
  size_t wn = strlen(word);
  if (n != wn) return false;
  for (size_t i = 0; i < n; i++) {
    char c = v[i];
    if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
    if (c != word[i]) return false;
  }
  return true;
}

/* Decimal digits only, no sign, rejecting anything above max (overflow-safe). */
static bool parse_dec(const char *v, size_t n, uint64_t max, uint64_t *out) {
  if (n == 0) return false;
  uint64_t x = 0;
  for (size_t i = 0; i < n; i++) {
    if (v[i] < '0' || v[i] > '9') return false;
    unsigned d = (unsigned)(v[i] - '0');
    if (x > (max - d) / 10) return false;
    x = x * 10 + d;
  }
  *out = x;
  return true;
}

static bool set_bool(bool *d, const char *v, size_t n, const char **expected) {
  static const char *yes[] = {"1", "true", "yes", "on"}, *no[] = {"0", "false", "no", "off"};
  for (size_t i = 0; i < 4; i++) {
    if (span_eq_ci(v, n, yes[i])) return *d = true, true;
    if (span_eq_ci(v, n, no[i])) return *d = false, true;
  }
  *expected = "1/0, true/false, yes/no or on/off";
  return false;
}

static bool set_int_range(int *d, const char *v, size_t n, uint64_t lo, uint64_t hi) {
  uint64_t x;
  if (!parse_dec(v, n, hi, &x) || x < lo) return false;
  *d = (int)x;
  return true;
}

static bool set_uint(int *d, const char *v, size_t n, const char **expected) {
  *expected = "a decimal number from 0 to 2147483647";
  return set_int_range(d, v, n, 0, INT_MAX);
}

static bool set_u8(int *d, const char *v, size_t n, const char **expected) {
  *expected = "an exit status from 0 to 255";
  return set_int_range(d, v, n, 0, 255);
}

static bool set_depth(int *d, const char *v, size_t n, const char **expected) {
  _Static_assert(PG_STACK_MAX == 16, "update the depth range text");
  *expected = "a frame count from 1 to 16";
  return set_int_range(d, v, n, 1, PG_STACK_MAX);
}

static bool set_size(uint64_t *d, const char *v, size_t n, const char **expected) {
  const uint64_t max = 1ull << 62;
  *expected = "a byte count up to 2^62, optionally with a k, m or g suffix";
  unsigned shift = 0;
  if (n > 0) {
    switch (v[n - 1]) {
      case 'k': case 'K': shift = 10; break;
      case 'm': case 'M': shift = 20; break;
      case 'g': case 'G': shift = 30; break;
      default: break;
    }
    if (shift) n--;
  }
  uint64_t x;
  if (!parse_dec(v, n, max >> shift, &x)) return false;
  *d = x << shift;
  return true;
}

static bool set_mode(pg_mode_t *d, const char *v, size_t n, const char **expected) {
  *expected = "off, audit or enforce";
  if (span_eq_ci(v, n, "off")) return *d = PG_MODE_OFF, true;
  if (span_eq_ci(v, n, "audit")) return *d = PG_MODE_AUDIT, true;
  if (span_eq_ci(v, n, "enforce")) return *d = PG_MODE_ENFORCE, true;
  return false;
}

static bool set_tristate(int *d, const char *v, size_t n, const char **expected) {
  bool b;
  if (span_eq_ci(v, n, "auto")) return *d = PG_AUTO, true;
  if (!set_bool(&b, v, n, expected)) {
    *expected = "auto, 1/0, true/false, yes/no or on/off";
    return false;
  }
  *d = b;
  return true;
}

static bool set_format(pg_log_format_t *d, const char *v, size_t n, const char **expected) {
  *expected = "text or json";
  if (span_eq_ci(v, n, "text")) return *d = PG_FORMAT_TEXT, true;
  if (span_eq_ci(v, n, "json")) return *d = PG_FORMAT_JSON, true;
  return false;
}

static bool set_str(pg_optstr_t *d, const char *v, size_t n, const char **expected) {
  *expected = "a string of at most 1023 bytes";
  _Static_assert(PG_OPT_STR_MAX == 1024, "update the string length text");
  if (n >= sizeof d->s) return false;
  memcpy(d->s, v, n);
  d->s[n] = '\0';
  return true;
}

/* ---- warnings ------------------------------------------------------------------------------ */
static void warn_stderr(void *ctx, const char *line) {
  (void)ctx;
  pg_write_all(2, line, strlen(line));
  pg_write_all(2, "\n", 1);
}

typedef struct warner {
  const char *source;
  pg_warn_fn fn;
  void *ctx;
  int count;
} warner_t;

/* One line: "pinguard: WARNING: <source>: <what> '<key>'[ = '<value>'][ (<expected>)]; ignored" */
static void warn(warner_t *w, const char *what, const char *key, size_t kn, const char *val,
                 size_t vn, const char *expected) {
  char line[512];
  pg_buf_t b;
  pg_buf_init(&b, line, sizeof line);
  pg_buf_puts(&b, "pinguard: WARNING: ");
  pg_buf_puts(&b, w->source ? w->source : "options");
  pg_buf_puts(&b, ": ");
  pg_buf_puts(&b, what);
  if (key) {
    pg_buf_puts(&b, " '");
    pg_buf_escaped(&b, key, kn, 64);
    pg_buf_putc(&b, '\'');
  }
  if (val) {
    pg_buf_puts(&b, " = '");
    pg_buf_escaped(&b, val, vn, 64);
    pg_buf_putc(&b, '\'');
  }
  if (expected) {
    pg_buf_puts(&b, " (expected ");
    pg_buf_puts(&b, expected);
    pg_buf_putc(&b, ')');
  }
  pg_buf_puts(&b, "; ignored");
  w->count++;
  (w->fn ? w->fn : warn_stderr)(w->ctx, line);
}

/* ---- the parser ---------------------------------------------------------------------------- */
static bool is_sep(char c) {
  return c == ':' || c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void apply(pg_options_t *o, warner_t *w, const char *k, size_t kn, const char *v,
                  size_t vn) {
  const char *expected = NULL;
#define OPT(type, name, def, desc)                                   \
  if (kn == sizeof(#name) - 1 && memcmp(k, #name, kn) == 0) {        \
    if (!set_##type(&o->name, v, vn, &expected))                      \
      warn(w, "bad value for option", k, kn, v, vn, expected);        \
    return;                                                           \
  }
#include "pg_options.inc"
#undef OPT
  warn(w, "unknown option", k, kn, NULL, 0, NULL);
}

int pg_options_parse(pg_options_t *o, const char *str, const char *source, pg_warn_fn fn,
                     void *ctx) {
  warner_t w = {source, fn, ctx, 0};
  const char *s = str ? str : "";
  while (*s) {
    if (is_sep(*s)) { /* repeated or leading separators are harmless */
      s++;
      continue;
    }
    const char *k = s;
    while (*s && *s != '=' && !is_sep(*s)) s++;
    size_t kn = (size_t)(s - k);
    if (*s != '=') {
      warn(&w, "option without a value (expected key=value)", k, kn, NULL, 0, NULL);
      continue;
    }
    s++;
    const char *v = s;
    size_t vn;
    if (*s == '"' || *s == '\'') { /* quoted: may hold separators; '=' needs no quoting */
      char q = *s++;
      v = s;
      while (*s && *s != q) s++;
      vn = (size_t)(s - v);
      if (!*s) {
        warn(&w, "unterminated quote in the value of", k, kn, v, vn, NULL);
        break;
      }
      s++;
      if (*s && !is_sep(*s)) {
        warn(&w, "text after the closing quote of", k, kn, v, vn, NULL);
        while (*s && !is_sep(*s)) s++;
        continue;
      }
    } else {
      while (*s && !is_sep(*s)) s++; /* everything to the separator, '=' included */
      vn = (size_t)(s - v);
    }
    if (kn == 0) {
      warn(&w, "empty option name before the value", NULL, 0, v, vn, NULL);
      continue;
    }
    apply(o, &w, k, kn, v, vn);
  }
  return w.count;
}

/* ---- help and docs ------------------------------------------------------------------------- */
static void fmt_bool(const bool *v, pg_buf_t *b) { pg_buf_puts(b, *v ? "1" : "0"); }
static void fmt_uint(const int *v, pg_buf_t *b) { pg_buf_i64(b, *v); }
static void fmt_u8(const int *v, pg_buf_t *b) { pg_buf_i64(b, *v); }
static void fmt_depth(const int *v, pg_buf_t *b) { pg_buf_i64(b, *v); }
static void fmt_size(const uint64_t *v, pg_buf_t *b) { pg_buf_u64(b, *v); }
static void fmt_str(const pg_optstr_t *v, pg_buf_t *b) { pg_buf_puts(b, v->s); }
static void fmt_mode(const pg_mode_t *v, pg_buf_t *b) { pg_buf_puts(b, pg_mode_name(*v)); }
static void fmt_tristate(const int *v, pg_buf_t *b) {
  pg_buf_puts(b, *v == PG_AUTO ? "auto" : *v ? "1" : "0");
}
static void fmt_format(const pg_log_format_t *v, pg_buf_t *b) {
  pg_buf_puts(b, pg_log_format_name(*v));
}

static const pg_option_info_t infos[] = {
#define OPT(type, name, def, desc) {#name, #type, desc},
#include "pg_options.inc"
#undef OPT
};

size_t pg_options_count(void) { return sizeof infos / sizeof infos[0]; }

pg_option_info_t pg_options_info(size_t i) {
  if (i >= pg_options_count()) return (pg_option_info_t){NULL, NULL, NULL};
  return infos[i];
}

/* Option i's value in *o, as it would be written in PINGUARD_OPTIONS. */
static void fmt_value(const pg_options_t *o, size_t i, pg_buf_t *b) {
  size_t idx = 0;
#define OPT(type, name, def, desc) \
  if (idx++ == i) fmt_##type(&o->name, b);
#include "pg_options.inc"
#undef OPT
}

static void fmt_default(size_t i, pg_buf_t *b) {
  pg_options_t defaults; /* ~2 KiB: fine on any thread stack, and thread-safe unlike a static */
  pg_options_set_defaults(&defaults);
  fmt_value(&defaults, i, b);
}

size_t pg_options_default_text(size_t i, char *out, size_t cap) {
  pg_buf_t b;
  pg_buf_init(&b, out, cap);
  fmt_default(i, &b);
  return b.len;
}

/* "name=<in force> (default)" or "name=<in force> (default <default>)". */
static void help_value(const pg_options_t *in_force, size_t i, pg_buf_t *b) {
  char now[PG_OPT_STR_MAX + 8], def[PG_OPT_STR_MAX + 8];
  pg_buf_t nb, db;
  pg_buf_init(&nb, now, sizeof now);
  pg_buf_init(&db, def, sizeof def);
  fmt_default(i, &db);
  if (in_force)
    fmt_value(in_force, i, &nb);
  else
    fmt_default(i, &nb);
  pg_buf_puts(b, now[0] ? now : "\"\"");
  if (strcmp(now, def) == 0) {
    pg_buf_puts(b, " (default)");
  } else {
    pg_buf_puts(b, " (default ");
    pg_buf_puts(b, def[0] ? def : "\"\"");
    pg_buf_putc(b, ')');
  }
}

size_t pg_options_help(const pg_options_t *in_force, char *out, size_t cap) {
  pg_buf_t b;
  pg_buf_init(&b, out, cap);
  pg_buf_puts(&b, "pinguard: options in force, each with its default "
                  "(PINGUARD_OPTIONS=key=value:key=value...):\n");
  for (size_t i = 0; i < pg_options_count(); i++) {
    pg_buf_puts(&b, "  ");
    pg_buf_puts(&b, infos[i].name);
    pg_buf_putc(&b, '=');
    help_value(in_force, i, &b);
    pg_buf_puts(&b, "  ");
    pg_buf_puts(&b, infos[i].description);
    pg_buf_putc(&b, '\n');
  }
  if (b.overflow && cap > 16) { /* make the cut visible */
    b.len = cap - 16;
    b.overflow = false;
    pg_buf_puts(&b, "\n[truncated]\n");
  }
  return b.len;
}

const char *pg_mode_name(pg_mode_t m) {
  switch (m) {
    case PG_MODE_OFF: return "off";
    case PG_MODE_AUDIT: return "audit";
    case PG_MODE_ENFORCE: return "enforce";
  }
  return "?";
}

const char *pg_log_format_name(pg_log_format_t f) { return f == PG_FORMAT_JSON ? "json" : "text"; }
