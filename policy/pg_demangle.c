/* pg_demangle.c: see pg_demangle.h. A recursive-descent parser over the mangled name that writes
 * the result into a bounded buffer; every substitution candidate's text is copied into an arena,
 * so text can be cut from the output (a template function's return type) without invalidating
 * later back-references. Any construct outside the subset sets an error and the result is
 * discarded. */
#include "pg_demangle.h"

#include <string.h>

#define SUBS_MAX 192
#define ARENA_BYTES 16384
#define OUT_BYTES 4096
#define NEST_MAX 8 /* local names and &function arguments inside one another */

typedef struct span {
  unsigned short off, len;
  unsigned short fn; /* a function type: 1 + where its "(params)" start; 0 otherwise */
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
  /* The function type that ends at out[fn_end], if one does: its "(params)" start at fn_at, so
   * that a pointer to it is written "ret (*)(params)". fn_ptr_end: the end of such a pointer. */
  size_t fn_at, fn_end, fn_ptr_end;
  /* The template arguments of the encodings a nested one interrupts (saved, then restored). */
  span_t saved_tparams[NEST_MAX][SUBS_MAX];
  unsigned saved_n[NEST_MAX], depth;
} dm_t;

/* An encoding inside another (a local name's function, a &function argument) has template
 * arguments of its own: the outer ones are set aside while it is parsed. */
static bool push_tparams(dm_t *d) {
  if (d->depth >= NEST_MAX) return d->err = true, false;
  memcpy(d->saved_tparams[d->depth], d->tparams, d->ntparams * sizeof *d->tparams);
  d->saved_n[d->depth++] = d->ntparams;
  return true;
}
static void pop_tparams(dm_t *d) {
  d->ntparams = d->saved_n[--d->depth];
  memcpy(d->tparams, d->saved_tparams[d->depth], d->ntparams * sizeof *d->tparams);
}

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
  tab[*n].fn = d->fn_end == d->len && d->fn_at >= from ? (unsigned short)(d->fn_at - from + 1) : 0;
  tab[(*n)++].len = (unsigned short)len;
  d->arena_len += len;
  return true;
}
static void add_sub(dm_t *d, size_t from) { keep(d, d->subs, &d->nsubs, from); }

static void put_span(dm_t *d, span_t s) {
  size_t at = d->len;
  put(d, d->arena + s.off, s.len);
  if (s.fn) d->fn_at = at + s.fn - 1, d->fn_end = d->len;
}

static bool digit(char c) { return c >= '0' && c <= '9'; }

static void type(dm_t *d);
static void template_arg(dm_t *d);
static void address_of(dm_t *d);
static const char *encoding_name(dm_t *d, bool *special, bool *templated);
static bool push_tparams(dm_t *d);
static void pop_tparams(dm_t *d);
static const char *encoding(dm_t *d, bool nested);
static const char *local_name(dm_t *d, bool *special);
static void function_type(dm_t *d);
static void encoding_name_only(dm_t *d, size_t at, bool *special);

/* A list of parameter types, written "a, b", up to where `ends` says the list stops (not
 * consumed). A lone `v` is the empty list "()" and writes nothing. */
typedef bool (*list_end_t)(const char *p);
static bool ends_at_E(const char *p) { return *p == 'E'; }
/* A function type's list, which an optional ref-qualifier (R or O) may close before its E. */
static bool ends_at_ref_qualifier(const char *p) {
  return *p == 'E' || ((*p == 'R' || *p == 'O') && p[1] == 'E');
}
/* An encoding's list runs to the end of the name or to a clone suffix ('.')... */
static bool ends_at_suffix(const char *p) { return *p == '\0' || *p == '.'; }
/* ...and, inside a local name, to the local name's closing E. */
static bool ends_in_local_name(const char *p) { return ends_at_suffix(p) || *p == 'E'; }

static void parameter_types(dm_t *d, list_end_t ends) {
  if (d->p[0] == 'v' && ends(d->p + 1)) {
    d->p++;
    return;
  }
  for (bool first = true; !d->err && *d->p && !ends(d->p); first = false) {
    if (!first) puts_(d, ", ");
    type(d);
  }
}

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
  } else if (c == 'U' && (d->p[1] == 'l' || d->p[1] == 't')) {
    /* <closure-type-name> ::= Ul <lambda-sig> E [<number>] _ ; <unnamed-type-name> ::= Ut ... */
    bool lambda = d->p[1] == 'l';
    d->p += 2;
    puts_(d, lambda ? "{lambda(" : "{unnamed type#");
    if (lambda) {
      parameter_types(d, ends_at_E);
      if (*d->p != 'E') return (void)(d->err = true);
      d->p++;
      puts_(d, ")#");
    }
    unsigned n = 1;
    if (digit(*d->p)) {
      n = 0;
      while (digit(*d->p)) n = n * 10 + (unsigned)(*d->p++ - '0');
      n += 2;
    }
    if (*d->p != '_') return (void)(d->err = true);
    d->p++;
    char num[12];
    int k = 0;
    char rev[12];
    do rev[k++] = (char)('0' + n % 10); while ((n /= 10) && k < 11);
    for (int i = 0; i < k; i++) num[i] = rev[k - 1 - i];
    put(d, num, (size_t)k);
    puts_(d, "}");
    d->last[0] = '\0';
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
    size_t sep = d->len;
    if (!first) puts_(d, ", ");
    first = false;
    size_t from = d->len;
    if (*d->p == 'J') { /* an argument pack: its arguments, inline; nothing when empty */
      d->p++;
      for (bool f1 = true; !d->err && *d->p && *d->p != 'E'; f1 = false) {
        if (!f1) puts_(d, ", ");
        template_arg(d);
      }
      if (*d->p != 'E') return (void)(d->err = true);
      d->p++;
      if (d->len == from) {
        d->len = sep;
        from = sep;
        first = sep == 0 || d->out[sep - 1] == '<';
      }
      if (top) keep(d, d->tparams, &d->ntparams, from);
      continue;
    }
    template_arg(d);
    if (top) keep(d, d->tparams, &d->ntparams, from);
  }
  if (*d->p != 'E') return (void)(d->err = true);
  d->p++;
  if (d->len && d->out[d->len - 1] == '>') puts_(d, " ");
  puts_(d, ">");
  memcpy(d->last, saved, sizeof saved);
}

/* The operand of &: a function or object's name; a template function's as c++filt writes it,
 * with its return type and parameters, "(void f<int>(int))". */
static void address_of(dm_t *d) {
  if (!push_tparams(d)) return;
  bool special = false, templated = false;
  size_t open = d->len;
  encoding_name(d, &special, &templated);
  if (templated && !special && *d->p != 'E') {
    size_t name_end = d->len;
    type(d); /* the return type, moved in front below */
    size_t ret_len = d->len - name_end;
    char ret[256];
    if (ret_len + 2 > sizeof ret) return (void)(d->err = true);
    memcpy(ret, d->out + name_end, ret_len);
    d->len = name_end;
    puts_(d, "(");
    parameter_types(d, ends_at_E);
    puts_(d, "))");
    size_t n = ret_len + 2; /* "(" ret " " before the name */
    if (d->len + n >= sizeof d->out) return (void)(d->err = true);
    memmove(d->out + open + n, d->out + open, d->len - open);
    d->out[open] = '(';
    memcpy(d->out + open + 1, ret, ret_len);
    d->out[open + 1 + ret_len] = ' ';
    d->len += n;
  } else {
    size_t end = d->len;
    while (!d->err && *d->p && *d->p != 'E') type(d); /* parameters: parsed, not written */
    d->len = end;
  }
  pop_tparams(d);
}

/* <template-arg>: a type, a literal, or the address of a function or object. */
static void template_arg(dm_t *d) {
  if (d->p[0] == 'X' && d->p[1] == 'a' && d->p[2] == 'd' && d->p[3] == 'L' && d->p[4] == '_' &&
      d->p[5] == 'Z') { /* X ad L _Z <encoding> E E: the address of a function or object */
    d->p += 6;
    puts_(d, "&");
    address_of(d);
    if (d->p[0] != 'E' || d->p[1] != 'E') return (void)(d->err = true);
    d->p += 2;
  } else if (d->p[0] == 'L' && d->p[1] == '_' && d->p[2] == 'Z') { /* L _Z <encoding> E */
    d->p += 3;
    bool special = false;
    encoding_name_only(d, d->len, &special);
    if (*d->p != 'E') return (void)(d->err = true);
    d->p++;
  } else if (*d->p == 'L') { /* a literal: integers and bools */
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
    case 'F':
      function_type(d);
      return; /* function_type kept it */
    case 'Z':
      local_name(d, &special);
      break;
    case 'P': case 'R': case 'O':
      d->p++;
      type(d);
      if (d->fn_ptr_end == d->len && d->len > from) return (void)(d->err = true); /* (**) */
      if (d->fn_end == d->len && d->fn_at >= from && d->fn_at < d->len) {
        /* a pointer or reference to a function: void (*)(int) */
        const char *decl = c == 'P' ? "(*)" : c == 'R' ? "(&)" : "(&&)";
        size_t n = strlen(decl);
        if (d->len + n >= sizeof d->out) return (void)(d->err = true);
        memmove(d->out + d->fn_at + n, d->out + d->fn_at, d->len - d->fn_at);
        memcpy(d->out + d->fn_at, decl, n);
        d->len += n;
        d->fn_end = 0;
        d->fn_ptr_end = d->len;
      } else if (c == 'P') {
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

/* <function-type> ::= F [Y] <return type> <parameter types> [<ref-qualifier>] E, written
 * "ret (params)" (type() puts a pointer's "(*)" before the parameters). A candidate. */
static void function_type(dm_t *d) {
  size_t from = d->len;
  d->p++; /* F */
  if (*d->p == 'Y') d->p++;
  type(d);
  puts_(d, " ");
  size_t params_at = d->len;
  puts_(d, "(");
  parameter_types(d, ends_at_ref_qualifier);
  const char *ref = "";
  if (*d->p == 'R' || *d->p == 'O') ref = *d->p++ == 'R' ? " &" : " &&";
  if (*d->p != 'E') return (void)(d->err = true);
  d->p++;
  puts_(d, ")");
  puts_(d, ref);
  d->fn_at = params_at;
  d->fn_end = d->len;
  add_sub(d, from);
}

/* <name> of an encoding: nested, std::, local or unqualified, with its template arguments.
 * Returns the member qualifiers; *templated tells whether a return type follows. */
static const char *encoding_name(dm_t *d, bool *special, bool *templated) {
  const char *quals = "";
  *templated = false;
  if (*d->p == 'N') {
    quals = nested_name(d, false, special, templated);
  } else if (*d->p == 'Z') {
    quals = local_name(d, special);
  } else {
    size_t from = d->len;
    if (*d->p == 'S' && d->p[1] == 't') {
      d->p += 2;
      puts_(d, "std::");
    }
    unqualified_name(d, special);
    if (*d->p == 'I') add_sub(d, from), template_args(d, true), *templated = true;
  }
  return quals;
}

/* <encoding> ::= <name> [<return type>] <parameter types>: a function, written with its
 * parameters and qualifiers; a data name alone. Parameters run to the end, a clone suffix
 * ('.'), or, `nested` inside a local name, its closing E. */
static const char *encoding(dm_t *d, bool nested) {
  bool special = false, templated = false;
  const char *quals = encoding_name(d, &special, &templated);
  if (d->err || !*d->p || *d->p == '.' || (nested && *d->p == 'E')) return "";
  /* A template function's encoding starts with its return type: parsed (it may be referred
   * back to) and cut, as the frame needs only the name and parameters. */
  if (templated && !special) {
    size_t at = d->len;
    type(d);
    d->len = at;
  }
  puts_(d, "(");
  parameter_types(d, nested ? ends_in_local_name : ends_at_suffix);
  puts_(d, ")");
  puts_(d, quals);
  return "";
}

/* An encoding inside a template argument (&function): its name only, as c++filt writes it; the
 * parameter types are parsed for their substitutions and dropped. */
static void encoding_name_only(dm_t *d, size_t at, bool *special) {
  if (!push_tparams(d)) return;
  bool templated = false;
  encoding_name(d, special, &templated);
  size_t end = d->len;
  if (templated && !*special && *d->p != 'E') type(d);
  while (!d->err && *d->p && *d->p != 'E') type(d);
  d->len = end;
  pop_tparams(d);
  (void)at;
}

/* <local-name> ::= Z <encoding> E <entity name> [<discriminator>] | Z <encoding> E s [...]:
 * "function(args)::entity". Returns the entity's member qualifiers. */
static const char *local_name(dm_t *d, bool *special) {
  d->p++; /* Z */
  if (!push_tparams(d)) return "";
  encoding(d, true);
  pop_tparams(d);
  if (*d->p != 'E') return d->err = true, "";
  d->p++;
  puts_(d, "::");
  const char *quals = "";
  if (*d->p == 's') {
    d->p++;
    puts_(d, "string literal");
  } else {
    bool templated = false;
    quals = encoding_name(d, special, &templated);
  }
  if (*d->p == '_') { /* <discriminator> ::= _ <digit> | __ <number> _ */
    d->p++;
    if (*d->p == '_') {
      d->p++;
      while (digit(*d->p)) d->p++;
      if (*d->p != '_') return d->err = true, "";
      d->p++;
    } else if (digit(*d->p)) {
      d->p++;
    } else {
      return d->err = true, "";
    }
  }
  return quals;
}

bool pg_demangle(const char *mangled, char *out, size_t cap) {
  if (!mangled || strncmp(mangled, "_Z", 2) != 0 || !cap) return false;
  /* ~32 KiB, off the stack (which may be a small signal stack); callers serialize (pinguard
   * symbolizes under its report lock). */
  static dm_t d;
  d.p = mangled + 2;
  d.err = false;
  d.len = d.arena_len = 0;
  d.nsubs = d.ntparams = 0;
  d.last[0] = '\0';
  d.fn_at = d.fn_end = d.fn_ptr_end = 0;
  d.depth = 0;
  encoding(&d, false);
  /* Clones, each in its own brackets as c++filt writes them: ".isra.0", "._omp_fn.0.cold" is
   * [clone ._omp_fn.0] [clone .cold]. */
  while (!d.err && *d.p == '.') {
    const char *q = d.p + 1;
    while ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || *q == '_') q++;
    while (q[0] == '.' && digit(q[1]))
      for (q++; digit(*q); q++) {
      }
    if (q == d.p + 1) break;
    puts_(&d, " [clone ");
    put(&d, d.p, (size_t)(q - d.p));
    puts_(&d, "]");
    d.p = q;
  }  if (d.err || *d.p || d.len + 1 > cap) return false;
  memcpy(out, d.out, d.len);
  out[d.len] = '\0';
  return true;
}
