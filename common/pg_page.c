/* pg_page.c: the page size (pg_page.h). */
#include "pg_page.h"

#include <stdatomic.h>
#include <unistd.h>

static _Atomic uintptr_t page_size;

uintptr_t pg_page_size(void) {
  /* Several threads may ask at once: any of them stores the same value. */
  uintptr_t p = atomic_load_explicit(&page_size, memory_order_relaxed);
  if (!p) {
    p = (uintptr_t)sysconf(_SC_PAGESIZE);
    atomic_store_explicit(&page_size, p, memory_order_relaxed);
  }
  return p;
}
