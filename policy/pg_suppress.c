/* pg_suppress.c: parsing suppression files and matching their rules against report stacks.
 * Files are read with open/read into a fixed window and rules are stored in mmap'ed memory (no
 * stdio, no malloc) because they are loaded during startup, possibly before the program's
 * allocator is ready. */
#include "pg_sink.h"
#include "pg_suppress.h"

#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pg_fmt.h"
#include "pg_report.h"

static void supp_warn(pg_warn_fn warn, void *ctx, const char *source, unsigned lineno,
                      const char *what, const char *line, size_t n) {
  char buf[512];
  pg_buf_t b;
  pg_buf_init(&b, buf, sizeof buf);
  pg_buf_puts(&b, "pinguard: WARNING: suppressions ");
  pg_buf_puts(&b, source ? source : "(text)");
  if (lineno) {
    pg_buf_putc(&b, ':');
    pg_buf_u64(&b, lineno);
  }
  pg_buf_puts(&b, ": ");
  pg_buf_puts(&b, what);
  if (line) {
    pg_buf_puts(&b, " '");
    pg_buf_escaped(&b, line, n, 80);
    pg_buf_putc(&b, '\'');
  }
  pg_buf_puts(&b, "; ignored");
  if (warn) {
    warn(ctx, buf);
  } else {
    pg_buf_putc(&b, '\n');
    pg_write_all(2, buf, b.len);
  }
}

void pg_supp_free(pg_suppressions_t *s) {
  if (s->rules) munmap(s->rules, s->cap * sizeof *s->rules);
  s->rules = NULL;
  s->n = s->cap = 0;
}

/* Room for one more rule: the storage doubles, so a file of N rules costs O(N) copying. */
static bool reserve_one(pg_suppressions_t *s) {
  if (s->n < s->cap) return true;
  unsigned ncap = s->cap ? 2 * s->cap : 64;
  if (ncap <= s->cap) return false;
  void *m = mmap(NULL, ncap * sizeof *s->rules, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return false;
  if (s->rules) {
    memcpy(m, s->rules, s->n * sizeof *s->rules);
    munmap(s->rules, s->cap * sizeof *s->rules);
  }
  s->rules = m;
  s->cap = ncap;
  return true;
}

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

static const char *const stack_names[] = {"any", "access", "alloc", "launch"};

/* "@access" and the like after a kind: the stack it names, or -1. */
static int stack_from_name(const char *s, size_t n) {
  for (int i = 0; i < (int)(sizeof stack_names / sizeof stack_names[0]); i++)
    if (strlen(stack_names[i]) == n && memcmp(s, stack_names[i], n) == 0) return i;
  return -1;
}

/* A pattern "name:line": its line (1 or more), with *name_len set to the name's length; 0 when
 * the pattern is not of that form (then it is a name pattern). */
static unsigned file_line_of(const char *pat, size_t pn, size_t *name_len) {
  size_t i = pn;
  while (i > 0 && pat[i - 1] >= '0' && pat[i - 1] <= '9') i--;
  if (i == pn || i < 2 || pat[i - 1] != ':' || pn - i > 9) return 0;
  unsigned line = 0;
  for (size_t k = i; k < pn; k++) line = line * 10 + (unsigned)(pat[k] - '0');
  *name_len = i - 1;
  return line;
}

/* One line, without its newline. Returns 1 if it produced a warning. */
static int parse_line(pg_suppressions_t *s, const char *line, size_t n, const char *source,
                      unsigned lineno, pg_warn_fn warn, void *ctx) {
  while (n && is_blank(*line)) line++, n--;
  while (n && is_blank(line[n - 1])) n--;
  if (n == 0 || line[0] == '#') return 0;
  const char *colon = memchr(line, ':', n);
  if (!colon) {
    supp_warn(warn, ctx, source, lineno, "expected kind:pattern, got", line, n);
    return 1;
  }
  size_t kn = (size_t)(colon - line);
  while (kn && is_blank(line[kn - 1])) kn--;
  const char *pat = colon + 1;
  size_t pn = n - (size_t)(pat - line);
  while (pn && is_blank(*pat)) pat++, pn--;
  int stack = PG_SUPP_ANY;
  const char *at = memchr(line, '@', kn);
  if (at) {
    if ((stack = stack_from_name(at + 1, kn - (size_t)(at + 1 - line))) < 0) {
      supp_warn(warn, ctx, source, lineno, "unknown stack (expected @access, @launch, @alloc or "
                "@any) in", line, n);
      return 1;
    }
    kn = (size_t)(at - line);
  }
  int kind;
  if (kn == 1 && line[0] == '*') {
    kind = -1;
  } else if ((kind = pg_report_kind_from_name(line, kn)) < 0) {
    supp_warn(warn, ctx, source, lineno, "unknown report kind in", line, n);
    return 1;
  }
  if (pn == 0) {
    supp_warn(warn, ctx, source, lineno, "empty pattern in", line, n);
    return 1;
  }
  if (pn >= PG_SUPP_PATTERN_MAX) {
    supp_warn(warn, ctx, source, lineno, "pattern longer than 255 bytes in", line, n);
    return 1;
  }
  if (!reserve_one(s)) {
    supp_warn(warn, ctx, source, lineno, "out of memory for the rule", line, n);
    return 1;
  }
  pg_supp_rule_t *r = &s->rules[s->n++];
  r->kind = kind;
  r->stack = (pg_supp_stack_t)stack;
  r->hits = 0;
  size_t name_len = pn;
  r->line = file_line_of(pat, pn, &name_len);
  memcpy(r->pattern, pat, name_len);
  r->pattern[name_len] = '\0';
  pg_buf_t b;
  pg_buf_init(&b, r->text, sizeof r->text);
  pg_buf_puts(&b, kind < 0 ? "*" : pg_report_kind_name(kind));
  if (at) {
    pg_buf_putc(&b, '@');
    pg_buf_puts(&b, stack_names[stack]);
  }
  pg_buf_putc(&b, ':');
  pg_buf_puts(&b, r->pattern);
  if (r->line) {
    pg_buf_putc(&b, ':');
    pg_buf_u64(&b, r->line);
  }
  return 0;
}

int pg_supp_parse(pg_suppressions_t *s, const char *text, size_t n, const char *source,
                  pg_warn_fn warn, void *ctx) {
  int warnings = 0;
  unsigned lineno = 0;
  size_t i = 0;
  while (i < n) {
    const char *nl = memchr(text + i, '\n', n - i);
    size_t len = nl ? (size_t)(nl - (text + i)) : n - i;
    warnings += parse_line(s, text + i, len, source, ++lineno, warn, ctx);
    i += len + 1;
  }
  return warnings;
}

int pg_supp_load_file(pg_suppressions_t *s, const char *path, pg_warn_fn warn, void *ctx) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    supp_warn(warn, ctx, path, 0, "cannot open the file", NULL, 0);
    return -1;
  }
  /* Lines are parsed from a sliding window; a line longer than the window is reported. */
  char win[4096];
  size_t have = 0;
  unsigned lineno = 0;
  int warnings = 0;
  bool eof = false, skipping = false;
  while (!eof || have) {
    if (!eof && have < sizeof win) {
      ssize_t r = read(fd, win + have, sizeof win - have);
      if (r < 0) {
        supp_warn(warn, ctx, path, lineno, "read error", NULL, 0);
        warnings++;
        break;
      }
      if (r == 0) eof = true;
      have += (size_t)r;
    }
    char *nl = memchr(win, '\n', have);
    size_t len;
    if (nl) {
      len = (size_t)(nl - win);
    } else if (eof || have == sizeof win) {
      len = have;
    } else {
      continue;
    }
    if (!nl && !eof) { /* no newline in a full window: the line is too long */
      if (!skipping) {
        supp_warn(warn, ctx, path, lineno + 1, "line longer than 4096 bytes:", win, 60);
        warnings++;
      }
      skipping = true;
      have = 0;
      continue;
    }
    if (skipping) {
      skipping = false;
      lineno++;
    } else {
      warnings += parse_line(s, win, len, path, ++lineno, warn, ctx);
    }
    size_t used = nl ? len + 1 : len;
    memmove(win, win + used, have - used);
    have -= used;
  }
  close(fd);
  return warnings;
}

/* Glob with '*' only, over p[0..pn) and str; both ends anchored (callers add the '*'s). */
static bool glob(const char *p, size_t pn, const char *str) {
  size_t pi = 0, star_p = (size_t)-1;
  const char *si = str, *star_s = NULL;
  while (*si) {
    if (pi < pn && p[pi] == '*') {
      star_p = pi++;
      star_s = si;
    } else if (pi < pn && p[pi] == *si) {
      pi++;
      si++;
    } else if (star_s) {
      pi = star_p + 1;
      si = ++star_s;
    } else {
      return false;
    }
  }
  while (pi < pn && p[pi] == '*') pi++;
  return pi == pn;
}

bool pg_supp_pattern_match(const char *pattern, const char *str) {
  if (!pattern || !str) return false;
  size_t pn = strlen(pattern);
  bool start = pn && pattern[0] == '^';
  if (start) pattern++, pn--;
  bool end = pn && pattern[pn - 1] == '$';
  if (end) pn--;
  if (start && end) return glob(pattern, pn, str);
  /* Unanchored sides behave as if the pattern had a '*' there. */
  char tmp[PG_SUPP_PATTERN_MAX + 2];
  if (pn > PG_SUPP_PATTERN_MAX - 1) return false;
  size_t tn = 0;
  if (!start) tmp[tn++] = '*';
  memcpy(tmp + tn, pattern, pn);
  tn += pn;
  if (!end) tmp[tn++] = '*';
  return glob(tmp, tn, str);
}

static bool frame_matches(const char *pat, const pg_frame_t *f) {
  if (f->function[0] && pg_supp_pattern_match(pat, f->function)) return true;
  if (f->file[0]) {
    const char *base = strrchr(f->file, '/');
    if (pg_supp_pattern_match(pat, f->file)) return true;
    if (base && pg_supp_pattern_match(pat, base + 1)) return true;
  }
  if (f->module[0]) {
    if (pg_supp_pattern_match(pat, f->module)) return true;
    const char *base = pg_frame_module_base(f);
    if (base != f->module && pg_supp_pattern_match(pat, base)) return true;
  }
  return false;
}

static bool pyframe_matches(const char *pat, const pg_pyframe_t *f) {
  if (f->function[0] && pg_supp_pattern_match(pat, f->function)) return true;
  if (!f->file[0]) return false;
  const char *base = strrchr(f->file, '/');
  return pg_supp_pattern_match(pat, f->file) || (base && pg_supp_pattern_match(pat, base + 1));
}

/* A file:line rule's file name against a frame's file: the whole path, or its end after a '/'. */
static bool file_ends_with(const char *path, const char *name) {
  if (!path[0]) return false;
  size_t nn = strlen(name);
  if (glob(name, nn, path)) return true;
  char tail[PG_SUPP_PATTERN_MAX + 2] = "*/";
  memcpy(tail + 2, name, nn);
  return glob(tail, nn + 2, path);
}

static bool rule_matches_stack(const pg_supp_rule_t *rule, const pg_symstack_t *st) {
  if (rule->line) {
    for (unsigned f = 0; f < st->depth; f++)
      if (st->f[f].line == rule->line && file_ends_with(st->f[f].file, rule->pattern))
        return true;
    for (unsigned f = 0; f < st->py_depth; f++)
      if (st->py[f].line == rule->line && file_ends_with(st->py[f].file, rule->pattern))
        return true;
    return false;
  }
  for (unsigned f = 0; f < st->depth; f++)
    if (frame_matches(rule->pattern, &st->f[f])) return true;
  for (unsigned f = 0; f < st->py_depth; f++) /* Python frames: function, file */
    if (pyframe_matches(rule->pattern, &st->py[f])) return true;
  return false;
}

/* The role of the report's i-th stack (pg_supp_match's order). */
static pg_supp_stack_t stack_role(size_t i) {
  return i == 0 ? PG_SUPP_ACCESS : i == 1 ? PG_SUPP_ALLOC : PG_SUPP_LAUNCH;
}

int pg_supp_match(const pg_suppressions_t *s, int kind, const pg_symstack_t *const *stacks,
                  size_t nstacks) {
  for (unsigned r = 0; r < s->n; r++) {
    const pg_supp_rule_t *rule = &s->rules[r];
    if (rule->kind >= 0 && rule->kind != kind) continue;
    for (size_t i = 0; i < nstacks; i++) {
      const pg_symstack_t *st = stacks[i];
      if (!st || !st->present) continue;
      if (rule->stack != PG_SUPP_ANY && rule->stack != stack_role(i)) continue;
      if (rule_matches_stack(rule, st)) return (int)r;
    }
  }
  return -1;
}
