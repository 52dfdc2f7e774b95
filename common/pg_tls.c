/* pg_tls.c: per-thread blocks mapped on first use (pg_tls.h). One pointer per block is all the
 * static TLS they cost. A pthread key, created by the constructor (a process's first keys never
 * need memory of their own in glibc), unmaps them at thread exit. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pg_tls.h"
#include "pg_page.h"

__thread pg_tls_block_t pg_tls_blocks[PG_TLS_COUNT];
#define t_blocks pg_tls_blocks
static pthread_key_t g_key;
static bool g_key_ok;

/* At thread exit: every block goes (the value is only a marker that the thread has some). */
static void release_blocks(void *unused) {
  (void)unused;
  for (int i = 0; i < PG_TLS_COUNT; i++) {
    if (t_blocks[i].p) munmap(t_blocks[i].p, t_blocks[i].len);
    t_blocks[i].p = NULL;
  }
}

__attribute__((constructor)) static void tls_setup(void) {
  /* Keys 0..31 live in the thread descriptor itself: setting one never allocates, so it is safe
   * from the fault handler. A later key (unlikely this early) is not used, and a thread's blocks
   * then stay mapped after it exits. */
  g_key_ok = pthread_key_create(&g_key, release_blocks) == 0 && g_key < 32;
}

void *pg_tls_map(pg_tls_id_t id, size_t bytes) {
  if (t_blocks[id].p) return t_blocks[id].p;
  size_t page = (size_t)pg_page_size();
  size_t len = (bytes + page - 1) & ~(page - 1);
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  t_blocks[id].len = len;
  t_blocks[id].p = p;
  if (g_key_ok) pthread_setspecific(g_key, (void *)1);
  return p;
}
