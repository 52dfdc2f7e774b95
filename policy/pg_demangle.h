/* pg_demangle.h: a small Itanium C++ ABI demangler of pinguard's own, for names that dladdr and
 * the symbol table give mangled (addr2line -C demangles its own). It allocates nothing and takes
 * no lock, so reports from the guard-page fault handler use it too, and it keeps libstdc++
 * (whose __cxa_demangle allocates) out of the shim's dependencies. Not reentrant: callers serialize. It covers what stacks hold:
 * nested and std names, constructors and destructors, operators, template arguments (types, and
 * integer and bool literals), template parameters, substitutions, cv and ref qualifiers,
 * pointers and references, builtin types, ABI tags, and clone suffixes (.cold, .isra.0). On
 * anything else it fails and the caller prints the mangled name. */
#ifndef PG_DEMANGLE_H
#define PG_DEMANGLE_H

#include <stdbool.h>
#include <stddef.h>

/* The demangled form of `mangled` in out (NUL-terminated), as c++filt writes it; false and out
 * unchanged when the name is not mangled, not understood, or does not fit. */
bool pg_demangle(const char *mangled, char *out, size_t cap);

#endif /* PG_DEMANGLE_H */
