/* pg_dedup.c: open-addressing table of report identities, sized at build time so the report
 * path never allocates. Linear probing; entries are never removed (only cleared all at once). */
#include "pg_dedup.h"

#include <string.h>

void pg_dedup_key_of(const pg_report_t *r, pg_dedup_key_t *k) {
  memset(k, 0, sizeof *k);
  k->kind = (int)r->kind;
  const pg_stack_t *a = r->access_stack;
  for (unsigned i = 0; a && i < PG_DEDUP_FRAMES && i < a->depth; i++) k->access[i] = a->pc[i];
  const pg_stack_t *l = r->n_gpu && r->gpu ? r->gpu[0].stack : NULL;
  for (unsigned i = 0; l && i < PG_DEDUP_FRAMES && i < l->depth; i++) k->launch[i] = l->pc[i];
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
