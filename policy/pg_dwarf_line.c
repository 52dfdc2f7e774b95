/* pg_dwarf_line.c: see pg_dwarf_line.h. The file is mapped for the lookup only; every read goes
 * through a cursor bounded by its section, so a truncated or hostile table ends the lookup, never
 * the process. The line program of each unit is run until a row past the address closes the row
 * that covers it (DWARF 5, section 6.2). No table is kept: a report is rare, and the lookup is a
 * linear pass over .debug_line. */
#include "pg_dwarf_line.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct cursor {
  const uint8_t *p, *end;
  bool bad;
} cursor_t;

typedef struct span {
  const uint8_t *p;
  size_t n;
} span_t;

typedef struct sections {
  span_t line, line_str, str;
} sections_t;

static bool need(cursor_t *c, size_t n) {
  if (c->bad || (size_t)(c->end - c->p) < n) return c->bad = true, false;
  return true;
}

static uint64_t fixed(cursor_t *c, size_t n) {
  if (!need(c, n)) return 0;
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) v |= (uint64_t)c->p[i] << (8 * i); /* x86-64: little-endian */
  c->p += n;
  return v;
}

static uint64_t uleb(cursor_t *c) {
  uint64_t v = 0;
  for (unsigned shift = 0; need(c, 1); shift += 7) {
    uint8_t b = *c->p++;
    if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  return 0;
}

/* A signed LEB128 number, as its two's-complement bits (the caller adds it modulo 2^64). */
static uint64_t sleb(cursor_t *c) {
  uint64_t v = 0;
  unsigned shift = 0;
  while (need(c, 1)) {
    uint8_t b = *c->p++;
    if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
    if (!(b & 0x80)) {
      if (shift < 64 && (b & 0x40)) v |= ~0ull << shift;
      return v;
    }
  }
  return 0;
}

/* A NUL-terminated string inside the cursor's range, or NULL (and the cursor is bad). */
static const char *cstr(cursor_t *c) {
  const uint8_t *nul = c->bad ? NULL : memchr(c->p, 0, (size_t)(c->end - c->p));
  if (!nul) return c->bad = true, NULL;
  const char *s = (const char *)c->p;
  c->p = nul + 1;
  return s;
}

/* The string at offset `off` of a string section, or NULL. */
static const char *str_at(span_t sec, uint64_t off) {
  if (!sec.p || off >= sec.n) return NULL;
  return memchr(sec.p + off, 0, sec.n - off) ? (const char *)sec.p + off : NULL;
}

/* ---- the ELF file ---------------------------------------------------------------------------- */
static bool find_sections(const uint8_t *m, size_t len, sections_t *out) {
  memset(out, 0, sizeof *out);
  const ElfW(Ehdr) *eh = (const void *)m;
  if (len < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
      eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(ElfW(Shdr)) ||
      !eh->e_shoff || eh->e_shstrndx >= eh->e_shnum ||
      eh->e_shoff + (size_t)eh->e_shnum * sizeof(ElfW(Shdr)) > len)
    return false;
  const ElfW(Shdr) *sh = (const void *)(m + eh->e_shoff);
  const ElfW(Shdr) *names = &sh[eh->e_shstrndx];
  if (names->sh_offset + names->sh_size > len) return false;
  span_t strtab = {m + names->sh_offset, names->sh_size};
  for (unsigned i = 0; i < eh->e_shnum; i++) {
    const char *name = str_at(strtab, sh[i].sh_name);
    if (!name || sh[i].sh_type != SHT_PROGBITS || (sh[i].sh_flags & SHF_COMPRESSED) ||
        sh[i].sh_offset + sh[i].sh_size > len)
      continue;
    span_t s = {m + sh[i].sh_offset, sh[i].sh_size};
    if (strcmp(name, ".debug_line") == 0) out->line = s;
    else if (strcmp(name, ".debug_line_str") == 0) out->line_str = s;
    else if (strcmp(name, ".debug_str") == 0) out->str = s;
  }
  return out->line.p != NULL;
}

/* ---- a unit's header ------------------------------------------------------------------------- */
typedef struct unit {
  unsigned version, offsz;
  uint8_t min_inst, default_is_stmt, line_range, opcode_base;
  int8_t line_base;
  const uint8_t *std_lens; /* opcode_base - 1 argument counts */
  const uint8_t *dirs, *files; /* the directory and file tables (v5: their format first) */
  const uint8_t *program, *end;
} unit_t;

enum { FORM_block = 0x09, FORM_data1 = 0x0b, FORM_data2 = 0x05, FORM_data4 = 0x06,
       FORM_data8 = 0x07, FORM_data16 = 0x1e, FORM_line_strp = 0x1f, FORM_string = 0x08,
       FORM_strp = 0x0e, FORM_udata = 0x0f };
enum { LNCT_path = 1, LNCT_directory_index = 2 };

/* One attribute value of a v5 entry: a string (*s) or a number (*v). False on a form this reader
 * does not know. */
static bool read_form(cursor_t *c, uint64_t form, const unit_t *u, const sections_t *secs,
                      const char **s, uint64_t *v) {
  *s = NULL;
  *v = 0;
  switch (form) {
    case FORM_string: *s = cstr(c); break;
    case FORM_line_strp: *s = str_at(secs->line_str, fixed(c, u->offsz)); break;
    case FORM_strp: *s = str_at(secs->str, fixed(c, u->offsz)); break;
    case FORM_udata: *v = uleb(c); break;
    case FORM_data1: *v = fixed(c, 1); break;
    case FORM_data2: *v = fixed(c, 2); break;
    case FORM_data4: *v = fixed(c, 4); break;
    case FORM_data8: *v = fixed(c, 8); break;
    case FORM_data16: fixed(c, 8), fixed(c, 8); break;
    case FORM_block: {
      uint64_t n = uleb(c);
      if (need(c, n)) c->p += n;
      break;
    }
    default: return false;
  }
  return !c->bad;
}

/* Entry `index` of a v5 directory or file table at t: its path and directory index. */
static bool v5_entry(const unit_t *u, const sections_t *secs, const uint8_t *t, uint64_t index,
                     const char **path, uint64_t *dir, const uint8_t **after) {
  cursor_t c = {t, u->end, false};
  unsigned nformats = (unsigned)fixed(&c, 1);
  const uint8_t *formats = c.p;
  for (unsigned i = 0; i < nformats; i++) uleb(&c), uleb(&c);
  uint64_t count = uleb(&c);
  *path = NULL;
  *dir = 0;
  for (uint64_t e = 0; e < count && !c.bad; e++) {
    cursor_t f = {formats, u->end, false};
    for (unsigned i = 0; i < nformats; i++) {
      uint64_t type = uleb(&f), form = uleb(&f), v;
      const char *s;
      if (!read_form(&c, form, u, secs, &s, &v)) return false;
      if (e != index) continue;
      if (type == LNCT_path) *path = s;
      else if (type == LNCT_directory_index) *dir = v;
    }
  }
  if (after) *after = c.p;
  return !c.bad && (after || *path);
}

static bool read_unit(cursor_t *c, unit_t *u) {
  memset(u, 0, sizeof *u);
  uint64_t len = fixed(c, 4);
  u->offsz = 4;
  if (len == 0xffffffffu) len = fixed(c, 8), u->offsz = 8;
  if (c->bad || len > (uint64_t)(c->end - c->p)) return c->bad = true, false;
  u->end = c->p + len;
  cursor_t h = {c->p, u->end, false};
  c->p = u->end; /* the next unit */
  u->version = (unsigned)fixed(&h, 2);
  if (u->version < 2 || u->version > 5) return false;
  if (u->version >= 5) fixed(&h, 2); /* address and segment selector sizes */
  uint64_t header_len = fixed(&h, u->offsz);
  if (h.bad || header_len > (uint64_t)(u->end - h.p)) return false;
  u->program = h.p + header_len;
  u->min_inst = (uint8_t)fixed(&h, 1);
  if (u->version >= 4) fixed(&h, 1); /* maximum operations per instruction */
  u->default_is_stmt = (uint8_t)fixed(&h, 1);
  u->line_base = (int8_t)fixed(&h, 1);
  u->line_range = (uint8_t)fixed(&h, 1);
  u->opcode_base = (uint8_t)fixed(&h, 1);
  if (h.bad || !u->line_range || !u->opcode_base || !need(&h, u->opcode_base - 1u)) return false;
  u->std_lens = h.p;
  h.p += u->opcode_base - 1;
  u->dirs = h.p;
  return !h.bad;
}

/* The path of file `index` (joined to its directory) into out. */
static bool file_name(const unit_t *u, const sections_t *secs, uint64_t index, char *out,
                      size_t cap) {
  const char *name = NULL, *dir = NULL;
  if (u->version >= 5) {
    const uint8_t *files;
    const char *unused;
    uint64_t d;
    if (!v5_entry(u, secs, u->dirs, (uint64_t)-1, &unused, &d, &files)) return false;
    if (!v5_entry(u, secs, files, index, &name, &d, NULL)) return false;
    if (name[0] != '/') v5_entry(u, secs, u->dirs, d, &dir, &d, NULL);
  } else {
    cursor_t c = {u->dirs, u->program, false};
    const char *dirs_start = (const char *)c.p;
    while (!c.bad && c.p < c.end && *c.p) cstr(&c); /* include_directories, to an empty one */
    if (!need(&c, 1)) return false;
    c.p++;
    uint64_t d = 0;
    for (uint64_t i = 1; !c.bad && c.p < c.end && *c.p; i++) { /* files count from 1 */
      const char *n = cstr(&c);
      uint64_t di = uleb(&c);
      uleb(&c), uleb(&c); /* time, size */
      if (i == index) name = n, d = di;
    }
    if (!name) return false;
    cursor_t dc = {(const uint8_t *)dirs_start, u->program, false};
    for (uint64_t i = 1; d && name[0] != '/' && !dc.bad && dc.p < dc.end && *dc.p; i++) {
      const char *s = cstr(&dc);
      if (i == d) dir = s;
    }
  }
  if (!name) return false;
  size_t n = 0;
  if (dir && dir[0]) {
    size_t dn = strlen(dir);
    if (dn + 2 > cap) return false;
    memcpy(out, dir, dn);
    n = dn;
    out[n++] = '/';
  }
  size_t nn = strlen(name);
  if (n + nn + 1 > cap) nn = cap - n - 1;
  memcpy(out + n, name, nn);
  out[n + nn] = '\0';
  return true;
}

/* ---- the line program ------------------------------------------------------------------------ */
typedef struct row {
  uint64_t address, file;
  uint64_t line; /* modulo 2^64: a garbage table cannot overflow anything */
  bool valid;
} row_t;

/* Runs the unit's program; true with *hit set when a row covers addr. */
static bool run_program(const unit_t *u, uint64_t addr, row_t *hit) {
  cursor_t c = {u->program, u->end, false};
  row_t reg = {0, 1, 1, true}, prev = {0, 0, 0, false}; /* the file register starts at 1 */
#define EMIT(end_seq)                                                               \
  do {                                                                              \
    if (prev.valid && prev.address <= addr && addr < reg.address) {                 \
      *hit = prev;                                                                  \
      return true;                                                                  \
    }                                                                               \
    prev = reg;                                                                     \
    if (end_seq) prev.valid = false, reg = (row_t){0, 1, 1, true};                  \
  } while (0)
  while (!c.bad && c.p < c.end) {
    uint8_t op = (uint8_t)fixed(&c, 1);
    if (op >= u->opcode_base) {
      unsigned adj = op - u->opcode_base;
      reg.address += (uint64_t)(adj / u->line_range) * u->min_inst;
      reg.line += (uint64_t)(int64_t)(u->line_base + (int)(adj % u->line_range));
      EMIT(false);
      continue;
    }
    switch (op) {
      case 0: { /* extended */
        uint64_t len = uleb(&c);
        if (!len || !need(&c, len)) return false;
        const uint8_t *next = c.p + len;
        uint8_t sub = (uint8_t)fixed(&c, 1);
        if (sub == 1) {
          EMIT(true);
        } else if (sub == 2 && len == 9) {
          reg.address = fixed(&c, 8);
        }
        c.p = next;
        break;
      }
      case 1: EMIT(false); break;                                  /* copy */
      case 2: reg.address += uleb(&c) * u->min_inst; break;        /* advance_pc */
      case 3: reg.line += sleb(&c); break;                         /* advance_line */
      case 4: reg.file = uleb(&c); break;                          /* set_file */
      case 8: reg.address += (uint64_t)((255 - u->opcode_base) / u->line_range) * u->min_inst;
        break;                                                     /* const_add_pc */
      case 9: reg.address += fixed(&c, 2); break;                  /* fixed_advance_pc */
      default:                                                     /* the rest: skip args */
        for (unsigned i = 0; i < u->std_lens[op - 1]; i++) uleb(&c);
        break;
    }
  }
#undef EMIT
  return false;
}

bool pg_dwarf_line(const char *path, uintptr_t addr, char *file, size_t cap, unsigned *line) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  bool found = false;
  if (fstat(fd, &st) == 0 && st.st_size > (off_t)sizeof(ElfW(Ehdr))) {
    size_t len = (size_t)st.st_size;
    const uint8_t *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m != MAP_FAILED) {
      sections_t secs;
      if (find_sections(m, len, &secs)) {
        cursor_t c = {secs.line.p, secs.line.p + secs.line.n, false};
        unit_t u;
        row_t hit;
        while (!found && !c.bad && c.p < c.end) {
          if (!read_unit(&c, &u)) continue;
          if (!run_program(&u, addr, &hit) || !hit.line || hit.line > 0xffffffffu) continue;
          found = file_name(&u, &secs, hit.file, file, cap);
          if (found) *line = (unsigned)hit.line;
        }
      }
      munmap((void *)m, len);
    }
  }
  close(fd);
  return found;
}
