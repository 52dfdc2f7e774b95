/* pg_dedup.c: open-addressing table of report identities, sized at build time so the report
 * path never allocates. Linear probing; entries are never removed (only cleared all at once). */
#include "pg_dedup.h"

#include <elf.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

/* Code ranges of the runtime modules. Written by pg_dedup_runtime_refresh and read by
 * pg_dedup_key_of, both under the report lock (or single-threaded configuration). */
#define RUNTIME_RANGES 64
static struct {
  uintptr_t lo, hi;
} ranges[RUNTIME_RANGES];
static unsigned n_ranges;

static bool runtime_name(const char *path) {
  static const char *const prefixes[] = {"libc.so", "libc-", "ld-linux", "libpthread",
                                         "libpinguard", "libcudart", "libcuda.so", "libasan",
                                         "libtsan", "libubsan", "libpython", "python"};
  return pg_module_named(path, prefixes, sizeof prefixes / sizeof prefixes[0]);
}

static int add_module(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  const char *name = info->dlpi_name;
  if (!name || !name[0]) name = (const char *)data; /* the main program */
  if (!runtime_name(name)) return 0;
  for (unsigned i = 0; i < info->dlpi_phnum && n_ranges < RUNTIME_RANGES; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    ranges[n_ranges].lo = info->dlpi_addr + ph->p_vaddr;
    ranges[n_ranges].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
    n_ranges++;
  }
  return 0;
}

void pg_dedup_runtime_refresh(void) {
  char exe[512];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  n_ranges = 0;
  dl_iterate_phdr(add_module, exe);
}

bool pg_dedup_is_runtime_pc(const void *pc) {
  /* A return address points after its call: look one byte back, inside the call. */
  uintptr_t a = (uintptr_t)pc - 1;
  for (unsigned i = 0; i < n_ranges; i++)
    if (a >= ranges[i].lo && a < ranges[i].hi) return true;
  return false;
}

static void site_of(const pg_stack_t *s, void **out) {
  if (!s) return;
  if (s->py_depth) { /* the Python frame: code object and instruction */
    out[0] = (void *)s->py_code[0];
    out[1] = (void *)(intptr_t)s->py_offset[0];
    return;
  }
  for (unsigned i = 0; i < s->depth; i++) {
    if (!pg_dedup_is_runtime_pc(s->pc[i])) {
      out[0] = s->pc[i];
      return;
    }
  }
  for (unsigned i = 0; i < PG_DEDUP_FRAMES && i < s->depth; i++) out[i] = s->pc[i];
}

void pg_dedup_key_of(const pg_report_t *r, pg_dedup_key_t *k) {
  memset(k, 0, sizeof *k);
  k->kind = (int)r->kind;
  site_of(r->access_stack, k->access);
  site_of(r->n_gpu && r->gpu ? r->gpu[0].stack : NULL, k->launch);
}

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

static uint64_t hash_key(const pg_dedup_key_t *k) {
  uint64_t h = (uint64_t)k->kind;
  for (unsigned i = 0; i < PG_DEDUP_FRAMES; i++) {
    h = mix(h, (uint64_t)(uintptr_t)k->access[i]);
    h = mix(h, (uint64_t)(uintptr_t)k->launch[i]);
  }
  return h * 0xff51afd7ed558ccdull;
}

static bool key_eq(const pg_dedup_key_t *a, const pg_dedup_key_t *b) {
  if (a->kind != b->kind) return false;
  for (unsigned i = 0; i < PG_DEDUP_FRAMES; i++)
    if (a->access[i] != b->access[i] || a->launch[i] != b->launch[i]) return false;
  return true;
}

pg_dedup_entry_t *pg_dedup_lookup(pg_dedup_t *d, const pg_dedup_key_t *k, bool *is_new) {
  *is_new = false;
  size_t mask = PG_DEDUP_SLOTS - 1;
  size_t i = (size_t)(hash_key(k) >> 32) & mask;
  for (size_t probes = 0; probes < PG_DEDUP_SLOTS; probes++, i = (i + 1) & mask) {
    pg_dedup_entry_t *e = &d->slots[i];
    if (e->used && key_eq(&e->key, k)) return e;
    if (!e->used) {
      /* Keep a quarter free so probe chains stay short; past that, stop folding. */
      if (d->used >= PG_DEDUP_SLOTS - PG_DEDUP_SLOTS / 4) return NULL;
      e->used = true;
      e->key = *k;
      e->count = 0;
      e->id = 0;
      e->rule = -1;
      d->used++;
      *is_new = true;
      return e;
    }
  }
  return NULL;
}

void pg_dedup_clear(pg_dedup_t *d) { memset(d, 0, sizeof *d); }
