/* pg_demangle.c: see pg_demangle.h. A recursive-descent parser over the mangled name that writes
 * the result into a bounded buffer; every substitution candidate's text is copied into an arena,
 * so text can be cut from the output (a template function's return type) without invalidating
 * later back-references. Any construct outside the subset sets an error and the result is
 * discarded. */
#include "pg_demangle.h"

#include <string.h>

#define SUBS_MAX 96
#define ARENA_BYTES 8192
#define OUT_BYTES 2048

typedef struct span {
  unsigned short off, len;
} span_t;

typedef struct dm {
  const char *p;
  bool err;
  char out[OUT_BYTES];
  size_t len;
  char arena[ARENA_BYTES];
  size_t arena_len;
  span_t subs[SUBS_MAX];
  unsigned nsubs;
  span_t tparams[SUBS_MAX];
  unsigned ntparams;
  char last[160]; /* the last unqualified source name: a constructor's or destructor's name */
} dm_t;

static void put(dm_t *d, const char *s, size_t n) {
  if (d->len + n >= sizeof d->out) {
    d->err = true;
    return;
  }
  memcpy(d->out + d->len, s, n);
  d->len += n;
}
static void puts_(dm_t *d, const char *s) { put(d, s, strlen(s)); }

static bool keep(dm_t *d, span_t *tab, unsigned *n, size_t from) {
  size_t len = d->len - from;
  if (*n >= SUBS_MAX || d->arena_len + len > sizeof d->arena) return d->err = true, false;
  memcpy(d->arena + d->arena_len, d->out + from, len);
  tab[*n].off = (unsigned short)d->arena_len;
  tab[(*n)++].len = (unsigned short)len;
  d->arena_len += len;
  return true;
}
static void add_sub(dm_t *d, size_t from) { keep(d, d->subs, &d->nsubs, from); }

static void put_span(dm_t *d, span_t s) { put(d, d->arena + s.off, s.len); }

static bool digit(char c) { return c >= '0' && c <= '9'; }

static void type(dm_t *d);

/* <source-name> ::= <length> <identifier> */
static void source_name(dm_t *d) {
  size_t n = 0;
  if (!digit(*d->p)) return (void)(d->err = true);
  while (digit(*d->p)) n = n * 10 + (size_t)(*d->p++ - '0');
  if (n == 0 || strnlen(d->p, n) < n) return (void)(d->err = true);
  size_t from = d->len;
  if (n >= 10 && strncmp(d->p, "_GLOBAL__N", 10) == 0)
    puts_(d, "(anonymous namespace)");
  else
    put(d, d->p, n);
  size_t ln = d->len - from < sizeof d->last - 1 ? d->len - from : sizeof d->last - 1;
  memcpy(d->last, d->out + from, ln);
  d->last[ln] = '\0';
  d->p += n;
}

static void abi_tags(dm_t *d) {
  while (*d->p == 'B') {
    d->p++;
    char saved[sizeof d->last];
    memcpy(saved, d->last, sizeof saved);
    puts_(d, "[abi:");
    source_name(d);
    puts_(d, "]");
    memcpy(d->last, saved, sizeof saved);
  }
}

static const char *const operators[][2] = {
    {"nw", "new"},  {"na", "new[]"}, {"dl", "delete"}, {"da", "delete[]"}, {"ps", "+"},
    {"ng", "-"},    {"ad", "&"},     {"de", "*"},      {"co", "~"},        {"pl", "+"},
    {"mi", "-"},    {"ml", "*"},     {"dv", "/"},      {"rm", "%"},        {"an", "&"},
    {"or", "|"},    {"eo", "^"},     {"aS", "="},      {"pL", "+="},       {"mI", "-="},
    {"mL", "*="},   {"dV", "/="},    {"rM", "%="},     {"aN", "&="},       {"oR", "|="},
    {"eO", "^="},   {"ls", "<<"},    {"rs", ">>"},     {"lS", "<<="},      {"rS", ">>="},
    {"eq", "=="},   {"ne", "!="},    {"lt", "<"},      {"gt", ">"},        {"le", "<="},
    {"ge", ">="},   {"ss", "<=>"},   {"nt", "!"},      {"aa", "&&"},       {"oo", "||"},
    {"pp", "++"},   {"mm", "--"},    {"cm", ","},      {"pm", "->*"},      {"pt", "->"},
    {"cl", "()"},   {"ix", "[]"},
};

/* <unqualified-name>: a source name, an operator, or (with `ctor_ok`) a constructor or
 * destructor. Sets *special for a constructor or destructor (no return type follows). */
static void unqualified_name(dm_t *d, bool *special) {
  char c = *d->p;
  if (c == 'L') d->p++, c = *d->p; /* internal linkage */
  if (digit(c)) {
    source_name(d);
  } else if (c == 'C' && (d->p[1] == '1' || d->p[1] == '2' || d->p[1] == '3') && d->last[0]) {
    d->p += 2;
    puts_(d, d->last);
    *special = true;
  } else if (c == 'D' && (d->p[1] == '0' || d->p[1] == '1' || d->p[1] == '2') && d->last[0]) {
    d->p += 2;
    puts_(d, "~");
    puts_(d, d->last);
    *special = true;
  } else if (c >= 'a' && c <= 'z' && d->p[1]) {
    for (size_t i = 0; i < sizeof operators / sizeof *operators; i++) {
      if (d->p[0] == operators[i][0][0] && d->p[1] == operators[i][0][1]) {
        d->p += 2;
        const char *sym = operators[i][1];
        puts_(d, "operator");
        if (sym[0] >= 'a' && sym[0] <= 'z') puts_(d, " ");
        puts_(d, sym);
        d->last[0] = '\0';
        abi_tags(d);
        return;
      }
    }
    d->err = true;
  } else {
    d->err = true;
  }
  abi_tags(d);
}

/* <template-args> ::= I <template-arg>+ E. `top`: the encoding's own, which T_ refers to. */
static void template_args(dm_t *d, bool top) {
  d->p++; /* I */
  if (top) d->ntparams = 0;
  if (d->len && d->out[d->len - 1] == '<') puts_(d, " "); /* operator<< <char> */
  puts_(d, "<");
  bool first = true;
  char saved[sizeof d->last];
  memcpy(saved, d->last, sizeof saved);
  while (!d->err && *d->p && *d->p != 'E') {
    if (!first) puts_(d, ", ");
    first = false;
    size_t from = d->len;
    if (*d->p == 'L') { /* a literal: integers and bools */
      d->p++;
      char t = *d->p++;
      bool neg = *d->p == 'n';
      if (neg) d->p++;
      const char *digits = d->p;
      while (digit(*d->p)) d->p++;
      if (*d->p != 'E' || d->p == digits) return (void)(d->err = true);
      if (t == 'b' && d->p - digits == 1) {
        puts_(d, *digits == '1' ? "true" : "false");
      } else if (strchr("ijlmsthcaxy", t) && t) {
        if (neg) puts_(d, "-");
        put(d, digits, (size_t)(d->p - digits));
        if (t == 'j') puts_(d, "u");
        if (t == 'l') puts_(d, "l");
        if (t == 'm') puts_(d, "ul");
      } else {
        return (void)(d->err = true);
      }
      d->p++; /* E */
    } else {
      type(d);
    }
    if (top) keep(d, d->tparams, &d->ntparams, from);
  }
  if (*d->p != 'E') return (void)(d->err = true);
  d->p++;
  if (d->len && d->out[d->len - 1] == '>') puts_(d, " ");
  puts_(d, ">");
  memcpy(d->last, saved, sizeof saved);
}

/* <substitution> ::= S_ | S <seq-id> _ | Sa | Sb | Ss | Si | So | Sd. True when the S was one
 * (St is std::, handled by the callers). */
static bool substitution(dm_t *d) {
  static const char *const abbrev[][2] = {
      {"a", "std::allocator"}, {"b", "std::basic_string"},
      {"s", "std::basic_string<char, std::char_traits<char>, std::allocator<char> >"},
      {"i", "std::basic_istream<char, std::char_traits<char> >"},
      {"o", "std::basic_ostream<char, std::char_traits<char> >"},
      {"d", "std::basic_iostream<char, std::char_traits<char> >"}};
  char c = d->p[1];
  for (size_t i = 0; i < sizeof abbrev / sizeof *abbrev; i++) {
    if (c == abbrev[i][0][0]) {
      d->p += 2;
      puts_(d, abbrev[i][1]);
      const char *leaf = abbrev[i][1] + 5; /* past "std::", up to any '<' */
      size_t n = strcspn(leaf, "<");
      memcpy(d->last, leaf, n);
      d->last[n] = '\0';
      return true;
    }
  }
  unsigned id = 0;
  d->p++;
  if (*d->p != '_') {
    while (digit(*d->p) || (*d->p >= 'A' && *d->p <= 'Z'))
      id = id * 36 + (unsigned)(digit(*d->p) ? *d->p - '0' : *d->p - 'A' + 10), d->p++;
    id++;
  }
  if (*d->p != '_' || id >= d->nsubs) return d->err = true, true;
  d->p++;
  put_span(d, d->subs[id]);
  d->last[0] = '\0';
  return true;
}

/* <nested-name> ::= N [<CV-qualifiers>] [<ref-qualifier>] <prefix> <unqualified-name> E.
 * `is_type`: the whole name is a type (a substitution candidate). Returns the qualifiers of a
 * member function (" const", ...), written by the caller after the parameters. */
static const char *nested_name(dm_t *d, bool is_type, bool *special, bool *templated) {
  d->p++; /* N */
  static const char *const quals[] = {"", " const", " volatile", " const volatile",
                                      " &", " const &", " volatile &", " const volatile &",
                                      " &&", " const &&", " volatile &&", " const volatile &&"};
  unsigned q = 0;
  while (*d->p == 'r' || *d->p == 'V' || *d->p == 'K') {
    if (*d->p == 'K') q |= 1;
    if (*d->p == 'V') q |= 2;
    d->p++;
  }
  unsigned ref = 0;
  if (*d->p == 'R' || *d->p == 'O') ref = *d->p++ == 'R' ? 4 : 8; /* a & or && member */
  size_t from = d->len;
  bool first = true, was_sub = false; /* a substitution is no new candidate */
  while (!d->err && *d->p && *d->p != 'E') {
    *templated = false;
    if (*d->p == 'I') {
      if (first) return d->err = true, "";
      if (!was_sub) add_sub(d, from);
      template_args(d, !is_type);
      *templated = true;
      was_sub = false;
    } else {
      if (!first) {
        if (!was_sub) add_sub(d, from);
        puts_(d, "::");
      }
      was_sub = false;
      if (*d->p == 'S' && d->p[1] == 't') {
        d->p += 2;
        puts_(d, "std::");
        unqualified_name(d, special);
      } else if (*d->p == 'S') {
        substitution(d);
        was_sub = true;
      } else if (*d->p == 'T') {
        return d->err = true, "";
      } else {
        unqualified_name(d, special);
      }
    }
    first = false;
  }
  if (*d->p != 'E') return d->err = true, "";
  d->p++;
  if (is_type && !was_sub) add_sub(d, from);
  return quals[q | ref];
}

static const char *builtin(char c) {
  switch (c) {
    case 'v': return "void";
    case 'w': return "wchar_t";
    case 'b': return "bool";
    case 'c': return "char";
    case 'a': return "signed char";
    case 'h': return "unsigned char";
    case 's': return "short";
    case 't': return "unsigned short";
    case 'i': return "int";
    case 'j': return "unsigned int";
    case 'l': return "long";
    case 'm': return "unsigned long";
    case 'x': return "long long";
    case 'y': return "unsigned long long";
    case 'n': return "__int128";
    case 'o': return "unsigned __int128";
    case 'f': return "float";
    case 'd': return "double";
    case 'e': return "long double";
    case 'g': return "__float128";
    case 'z': return "...";
    default: return NULL;
  }
}

/* <type>: builtins, qualified, pointer and reference types, class names, substitutions and
 * template parameters. Function, array and member-pointer types are not understood. */
static void type(dm_t *d) {
  if (d->err) return;
  size_t from = d->len;
  char c = *d->p;
  const char *b = builtin(c);
  if (b) {
    d->p++;
    puts_(d, b);
    return;
  }
  bool special = false, templated = false;
  switch (c) {
    case 'D':
      if (d->p[1] == 'n') puts_(d, "decltype(nullptr)");
      else if (d->p[1] == 's') puts_(d, "char16_t");
      else if (d->p[1] == 'i') puts_(d, "char32_t");
      else if (d->p[1] == 'u') puts_(d, "char8_t");
      else return (void)(d->err = true);
      d->p += 2;
      return;
    case 'P': case 'R': case 'O':
      d->p++;
      type(d);
      if (c == 'P') {
        puts_(d, "*");
      } else if (d->len && d->out[d->len - 1] == '&') {
        /* reference collapsing: & & and && & are &, & && is &, && && is && */
        if (c == 'R' && d->len >= 2 && d->out[d->len - 2] == '&') d->len--;
      } else {
        puts_(d, c == 'R' ? "&" : "&&");
      }
      break;
    case 'K': case 'V': case 'r':
      d->p++;
      type(d);
      puts_(d, c == 'K' ? " const" : c == 'V' ? " volatile" : " restrict");
      break;
    case 'N':
      nested_name(d, true, &special, &templated);
      return; /* nested_name kept it */
    case 'S':
      if (d->p[1] == 't') {
        d->p += 2;
        puts_(d, "std::");
        unqualified_name(d, &special);
        add_sub(d, from);
      } else {
        substitution(d);
        if (*d->p != 'I') return; /* a substitution is not a new candidate */
      }
      if (*d->p == 'I') {
        template_args(d, false);
        add_sub(d, from);
      }
      return;
    case 'T': {
      d->p++;
      unsigned id = 0;
      if (*d->p != '_') {
        while (digit(*d->p)) id = id * 10 + (unsigned)(*d->p++ - '0');
        id++;
      }
      if (*d->p != '_' || id >= d->ntparams) return (void)(d->err = true);
      d->p++;
      put_span(d, d->tparams[id]);
      break;
    }
    default:
      if (!digit(c)) return (void)(d->err = true);
      source_name(d);
      add_sub(d, from);
      if (*d->p == 'I') {
        template_args(d, false);
        add_sub(d, from);
      }
      return;
  }
  add_sub(d, from);
}

bool pg_demangle(const char *mangled, char *out, size_t cap) {
  if (!mangled || strncmp(mangled, "_Z", 2) != 0 || !cap) return false;
  /* ~12 KiB, off the stack (which may be a small signal stack); callers serialize (pinguard
   * symbolizes under its report lock). */
  static dm_t d;
  d.p = mangled + 2;
  d.err = false;
  d.len = d.arena_len = 0;
  d.nsubs = d.ntparams = 0;
  d.last[0] = '\0';
  bool special = false, templated = false;
  const char *quals = "";
  if (*d.p == 'N') {
    quals = nested_name(&d, false, &special, &templated);
  } else if (*d.p == 'S' && d.p[1] == 't') {
    d.p += 2;
    puts_(&d, "std::");
    unqualified_name(&d, &special);
    if (*d.p == 'I') add_sub(&d, 0), template_args(&d, true), templated = true;
  } else if (*d.p == 'Z') {
    return false; /* local names */
  } else {
    unqualified_name(&d, &special);
    if (*d.p == 'I') add_sub(&d, 0), template_args(&d, true), templated = true;
  }
  if (d.err) return false;
  if (*d.p && *d.p != '.') {
    /* A template function's encoding starts with its return type: parsed (it may be referred
     * back to) and cut, as the frame needs only the name and parameters. */
    if (templated && !special) {
      size_t at = d.len;
      type(&d);
      d.len = at;
    }
    puts_(&d, "(");
    if (d.p[0] == 'v' && (d.p[1] == '\0' || d.p[1] == '.')) {
      d.p++;
    } else {
      for (bool first = true; !d.err && *d.p && *d.p != '.'; first = false) {
        if (!first) puts_(&d, ", ");
        type(&d);
      }
    }
    puts_(&d, ")");
    puts_(&d, quals);
  }
  if (*d.p == '.') { /* a clone: .cold, .isra.0, .constprop.0 */
    puts_(&d, " [clone ");
    puts_(&d, d.p);
    puts_(&d, "]");
    d.p += strlen(d.p);
  }
  if (d.err || *d.p || d.len + 1 > cap) return false;
  memcpy(out, d.out, d.len);
  out[d.len] = '\0';
  return true;
}
