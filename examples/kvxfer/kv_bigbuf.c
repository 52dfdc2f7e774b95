/* kv_bigbuf.c: mmap-backed large buffers with MADV_HUGEPAGE (advice only: fine if refused). */
#include "kv_bigbuf.h"

#include <sys/mman.h>

void *kv_big_alloc(size_t n) {
  void *p = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  madvise(p, n ? n : 1, MADV_HUGEPAGE);
  return p;
}

void kv_big_free(void *p, size_t n) {
  if (p) munmap(p, n ? n : 1);
}
