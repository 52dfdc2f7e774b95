/* pg_kernel_params.c: the kernel parameter layout cache, the kernel handle table and the pointer
 * scan of a launch's arguments (pg_kernel_params.h). */
#include "pg_kernel_params.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "pg_pinmap.h"
#include "pg_stats.h"

/* ---- one lock-free table: pointer key -> entry --------------------------------------------- */
/* Every entry starts with its key. A slot is written once (NULL -> entry) and never again. */
typedef struct kp_entry {
  const void *key;
} kp_entry_t;

typedef struct kp_table {
  _Atomic(kp_entry_t *) *slots;
  size_t cap, probes;
} kp_table_t;

static size_t kp_hash(const void *key) { return (size_t)(((uintptr_t)key >> 4) * 0x9E3779B97F4A7C15ull); }

/* The entry for key, or NULL. *room (if given) says whether an empty slot was met within the
 * probe limit, i.e. whether inserting can succeed. */
static kp_entry_t *kp_find(const kp_table_t *t, const void *key, bool *room) {
  size_t h = kp_hash(key);
  if (room) *room = false;
  for (size_t probe = 0; probe < t->probes; probe++) {
    kp_entry_t *e = atomic_load_explicit(&t->slots[(h + probe) % t->cap], memory_order_acquire);
    if (!e) {
      if (room) *room = true;
      return NULL;
    }
    if (e->key == key) return e;
  }
  return NULL;
}

/* Publishes fresh (whose key is set) unless an entry for that key is already there: returns the
 * entry that holds the key afterwards, fresh or the other, or NULL when there is no room. */
static kp_entry_t *kp_insert(kp_table_t *t, kp_entry_t *fresh) {
  size_t h = kp_hash(fresh->key);
  for (size_t probe = 0; probe < t->probes; probe++) {
    _Atomic(kp_entry_t *) *slot = &t->slots[(h + probe) % t->cap];
    kp_entry_t *e = atomic_load_explicit(slot, memory_order_acquire);
    if (!e) {
      kp_entry_t *expected = NULL;
      if (atomic_compare_exchange_strong_explicit(slot, &expected, fresh, memory_order_acq_rel,
                                                  memory_order_acquire))
        return fresh;
      e = expected; /* another thread filled the slot first */
    }
    if (e->key == fresh->key) return e;
  }
  return NULL;
}

/* ---- function layouts ------------------------------------------------------------------------ */
#define KP_FUNCS 1024
typedef struct func_entry {
  kp_entry_t hdr; /* key: the function */
  pg_kparams_t kp;
} func_entry_t;

static _Atomic(kp_entry_t *) func_slots[KP_FUNCS];
static kp_table_t funcs = {func_slots, KP_FUNCS, 16};

/* The words the scan reads: each 8-aligned word (alignment relative to the argument buffer's
 * layout, as the device sees it) of each parameter. */
static void list_words(pg_kparams_t *kp) {
  int n = 0;
  bool each = true;
  for (int i = 0; i < kp->nparams; i++) {
    size_t off = kp->offset[i], sz = kp->size[i];
    each = each && sz == 8 && off % 8 == 0;
    for (size_t k = (8 - off % 8) % 8; k + 8 <= sz; k += 8) {
      if (n == PG_KP_MAX_WORDS) {
        kp->nwords = -1;
        return;
      }
      kp->word[n++] = (uint32_t)i << 16 | (uint32_t)k;
    }
  }
  kp->nwords = n;
  kp->one_word_each = each && n == kp->nparams;
}

__thread const pg_kparams_t *pg_kparams_last;

const pg_kparams_t *pg_kparams_get_slow(const void *func, pg_kparams_describe_fn describe) {
  if (!func) return NULL;
  bool room;
  kp_entry_t *e = kp_find(&funcs, func, &room);
  if (e) return pg_kparams_last = &((func_entry_t *)e)->kp;
  if (!room || !describe) return NULL; /* full in this neighbourhood: the caller scans nothing */
  func_entry_t *fresh = calloc(1, sizeof *fresh);
  if (!fresh) return NULL;
  fresh->hdr.key = func;
  fresh->kp.func = func;
  fresh->kp.name = "kernel";
  if (!describe(func, &fresh->kp)) {
    free(fresh); /* not cached: asked again at a later launch */
    return NULL;
  }
  if (!fresh->kp.name) fresh->kp.name = "kernel";
  if (fresh->kp.nparams > PG_KP_MAX_PARAMS) fresh->kp.nparams = PG_KP_MAX_PARAMS;
  list_words(&fresh->kp);
  e = kp_insert(&funcs, &fresh->hdr);
  if (e != &fresh->hdr) free(fresh); /* another thread described it first, or no room left */
  return e ? (pg_kparams_last = &((func_entry_t *)e)->kp) : NULL;
}

/* ---- the pointer scan ------------------------------------------------------------------------- */
/* Each 8-aligned word (alignment relative to the argument buffer's layout, as the device sees
 * it) of each parameter; words below 4096 are counts, flags or NULL, never host addresses, and
 * a word in no granule of pinned memory (pg_pinmap.h: one load) cannot point into a region: the
 * launch then has no span for it, and a launch with none captures no stack and records nothing
 * (PG_LAUNCH_BODY, shim/pg_shim.h). */
/* Candidates: the words that may point into pinned memory (pg_pinmap_maybe), in parameter
 * order. A word is appended unconditionally and kept by advancing the count, so the common
 * word costs no store branch. */
typedef struct cands {
  uintptr_t *out;
  size_t n, cap;
} cands_t;

static inline __attribute__((always_inline)) void cand(cands_t *c, uintptr_t word) {
  if (__builtin_expect(pg_pinmap_maybe(word), 0) && c->n < c->cap) c->out[c->n++] = word;
}

/* Without a word list (a layout with more words than PG_KP_MAX_WORDS): the layout walked. */
__attribute__((noinline)) static void scan_layout(cands_t *c, const pg_kparams_t *kp,
                                                  void *const *args) {
  for (int i = 0; i < kp->nparams; i++) {
    const char *val = args[i];
    if (!val) continue;
    size_t off = kp->offset[i], sz = kp->size[i];
    for (size_t k = (8 - off % 8) % 8; k + 8 <= sz; k += 8) {
      uintptr_t word;
      memcpy(&word, val + k, sizeof word);
      cand(c, word);
    }
  }
}

/* A group of four words found to hold a candidate: each tested again and kept if it may point
 * into pinned memory (out of line: the scan's loop keeps no word live for it). */
__attribute__((noinline)) static void cand_group(cands_t *c, void *const *args) {
  for (int k = 0; k < 4; k++) cand(c, *(const uintptr_t *)args[k]);
}

/* The common kernel, all of whose parameters are pointer-sized words: four at a time, with one
 * branch for the four granule tests, taken only for a group holding a candidate. Only the
 * granule counts are kept (no word stays live), so a word costs its two loads, the granule's
 * shift and mask, the count's load and one OR. */
static inline __attribute__((always_inline)) void scan_each(cands_t *c, int n,
                                                            void *const *args) {
  const _Atomic uint16_t *map = pg_pinmap_count;
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    const uintptr_t *a = args[i], *b = args[i + 1], *d = args[i + 2], *e = args[i + 3];
    if (__builtin_expect(!a || !b || !d || !e, 0)) break;
    unsigned any = atomic_load_explicit(&map[pg_pinmap_granule(*a)], memory_order_relaxed) |
                   atomic_load_explicit(&map[pg_pinmap_granule(*b)], memory_order_relaxed) |
                   atomic_load_explicit(&map[pg_pinmap_granule(*d)], memory_order_relaxed) |
                   atomic_load_explicit(&map[pg_pinmap_granule(*e)], memory_order_relaxed);
    if (__builtin_expect(any != 0, 0)) cand_group(c, &args[i]);
  }
  /* The words after a group with a NULL argument, or past the last group of four, one by one. */
  for (; i < n; i++) {
    const uintptr_t *a = args[i];
    if (a) cand(c, *a);
  }
}

size_t pg_kparams_candidates(const pg_kparams_t *kp, void *const *args, uintptr_t *out,
                             size_t cap) {
  cands_t c = {out, 0, cap};
  if (__builtin_expect(!args || kp->nparams <= 0, 0)) return 0; /* nothing to read */
  if (__builtin_expect(kp->one_word_each, 1)) {
    scan_each(&c, kp->nwords, args);
  } else if (kp->nwords < 0) {
    scan_layout(&c, kp, args);
  } else {
    for (int w = 0; w < kp->nwords; w++) {
      const char *val = args[kp->word[w] >> 16];
      if (__builtin_expect(val == NULL, 0)) continue;
      uintptr_t word;
      memcpy(&word, val + (kp->word[w] & 0xffff), sizeof word);
      cand(&c, word);
    }
  }
  return c.n;
}

void pg_kparams_add_spans(pg_op_t *op, const uintptr_t *words, size_t n) {
  for (size_t i = 0; i < n && op->nspans < PG_OP_MAX_SPANS; i++)
    if (words[i] >= 4096)
      op->spans[op->nspans++] =
          (pg_span_t){.p = (const void *)words[i], .n = 0, .dir = PG_DIR_UNKNOWN};
}

void pg_kparams_fill_layout(pg_kparams_t *kp, pg_kparams_param_fn param) {
  int n = 0, r = PG_KP_UNKNOWN;
  for (; param && n < PG_KP_MAX_PARAMS; n++) {
    size_t off = 0, sz = 0;
    if ((r = param(kp->func, (size_t)n, &off, &sz)) != PG_KP_PARAM || off > UINT16_MAX ||
        sz > UINT16_MAX)
      break;
    kp->offset[n] = (uint16_t)off;
    kp->size[n] = (uint16_t)sz;
  }
  kp->nparams = n > 0 ? n : r == PG_KP_END ? 0 : -1; /* a kernel without parameters is known */
}

void pg_kparams_build_op(pg_op_t *op, const pg_kparams_t *kp, void *const *args) {
  if (kp) op->what = kp->name;
  if (kp && kp->nparams > 0) {
    uintptr_t words[PG_OP_MAX_SPANS];
    pg_kparams_add_spans(op, words, pg_kparams_candidates(kp, args, words, PG_OP_MAX_SPANS));
  } else if (!kp || kp->nparams < 0) { /* none taken (0): nothing to scan, nothing missed */
    pg_stat_inc(PG_STAT_KERNELS_UNSCANNED);
  }
}

/* ---- kernel handles ---------------------------------------------------------------------------- */
#define KP_HANDLES 4096
typedef struct handle_entry {
  kp_entry_t hdr; /* key: the handle */
  const void *func;
} handle_entry_t;

static _Atomic(kp_entry_t *) handle_slots[KP_HANDLES];
static kp_table_t handles = {handle_slots, KP_HANDLES, 64};

void pg_kparams_remember_handle(const void *handle, const void *func) {
  if (!handle) return;
  bool room;
  if (kp_find(&handles, handle, &room) || !room) return;
  handle_entry_t *fresh = malloc(sizeof *fresh);
  if (!fresh) return;
  fresh->hdr.key = handle;
  fresh->func = func;
  if (kp_insert(&handles, &fresh->hdr) != &fresh->hdr) free(fresh);
}

const void *pg_kparams_func_of_handle(const void *handle) {
  kp_entry_t *e = handle ? kp_find(&handles, handle, NULL) : NULL;
  return e ? ((handle_entry_t *)e)->func : NULL;
}
