/* pg_dwarf_line.h: file:line of an address from a module's own DWARF line table (.debug_line,
 * versions 2 to 5), read without a child process: the guard-fault handler's reports cannot run
 * addr2line, and a program built with debug info still gets file:line there. Signal-safe: open,
 * fstat, mmap, munmap, close and plain reads of the mapping; no allocation, no lock. */
#ifndef PG_DWARF_LINE_H
#define PG_DWARF_LINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The source file (as the compiler recorded it, joined to its directory) and line of `addr`, a
 * link-time address in the ELF file at `path` (a module offset for a shared object or a PIE).
 * False when the file has no line table (no debug info, compressed sections) or no row covers
 * the address; *file and *line are then unchanged. */
bool pg_dwarf_line(const char *path, uintptr_t addr, char *file, size_t cap, unsigned *line);

#endif /* PG_DWARF_LINE_H */
