/* pg_page.h: the CPU's page size, the one place every layer gets it from. It is read from the
 * kernel once (sysconf, which reads the auxiliary vector and takes no lock) and kept; after that
 * the call is one relaxed load, safe in a signal handler. */
#ifndef PG_PAGE_H
#define PG_PAGE_H

#include <stdint.h>

uintptr_t pg_page_size(void);

/* The start of the page holding a, and the end of the page holding a - 1. */
static inline uintptr_t pg_page_down(uintptr_t a) { return a & ~(pg_page_size() - 1); }
static inline uintptr_t pg_page_up(uintptr_t a) {
  return (a + pg_page_size() - 1) & ~(pg_page_size() - 1);
}

#endif
