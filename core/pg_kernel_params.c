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

/* The last layout this thread used: a launch loop asks for one function over and over. Entries
 * are never freed, so the pointer stays valid. */
static __thread const pg_kparams_t *t_last_kp;

const pg_kparams_t *pg_kparams_get(const void *func, pg_kparams_describe_fn describe) {
  const pg_kparams_t *last = t_last_kp;
  if (last && last->func == func) return last;
  if (!func) return NULL;
  bool room;
  kp_entry_t *e = kp_find(&funcs, func, &room);
  if (e) return t_last_kp = &((func_entry_t *)e)->kp;
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
  return e ? (t_last_kp = &((func_entry_t *)e)->kp) : NULL;
}

/* ---- the pointer scan ------------------------------------------------------------------------- */
/* Each 8-aligned word (alignment relative to the argument buffer's layout, as the device sees
 * it) of each parameter; words below 4096 are counts, flags or NULL, never host addresses, and
 * a word in no granule of pinned memory (pg_pinmap.h: one load) cannot point into a region: the
 * launch then has no span for it, and a launch with none captures no stack and records nothing
 * (pg_shim_launch_tracked). */
/* The rare word that may point into pinned memory: becomes a span (false: no room left). */
__attribute__((noinline)) static bool add_word(pg_op_t *op, uintptr_t word) {
  if (word < 4096) return true;
  if (op->nspans >= PG_OP_MAX_SPANS) return false;
  op->spans[op->nspans++] = (pg_span_t){.p = (const void *)word, .n = 0, .dir = PG_DIR_UNKNOWN};
  return true;
}

/* A word that may point into pinned memory becomes a span (false: the op has no room left). */
static inline __attribute__((always_inline)) bool take_word(pg_op_t *op, const char *at) {
  uintptr_t word;
  memcpy(&word, at, sizeof word);
  if (__builtin_expect(!pg_pinmap_maybe(word), 1)) return true;
  return add_word(op, word);
}

/* Without a word list (a layout with more words than PG_KP_MAX_WORDS): the layout walked. */
__attribute__((noinline)) static void scan_layout(pg_op_t *op, const pg_kparams_t *kp,
                                                  void *const *args) {
  for (int i = 0; i < kp->nparams; i++) {
    const char *val = args[i];
    if (!val) continue;
    size_t off = kp->offset[i], sz = kp->size[i];
    for (size_t k = (8 - off % 8) % 8; k + 8 <= sz; k += 8)
      if (!take_word(op, val + k)) return;
  }
}

/* The common kernel, all of whose parameters are pointer-sized words: one granule test each,
 * two at a time. */
static void scan_each(pg_op_t *op, int n, void *const *args) {
  int i = 0;
  for (; i + 2 <= n; i += 2) {
    const uintptr_t *a = args[i], *b = args[i + 1];
    if (__builtin_expect(!a || !b, 0)) break;
    uintptr_t wa = *a, wb = *b;
    if (__builtin_expect(pg_pinmap_maybe(wa) | pg_pinmap_maybe(wb), 0)) {
      if (pg_pinmap_maybe(wa) && !add_word(op, wa)) return;
      if (pg_pinmap_maybe(wb) && !add_word(op, wb)) return;
    }
  }
  for (; i < n; i++) {
    const uintptr_t *a = args[i];
    if (a && pg_pinmap_maybe(*a) && !add_word(op, *a)) return;
  }
}

static void scan(pg_op_t *op, const pg_kparams_t *kp, void *const *args) {
  if (!args) return;
  if (kp->one_word_each) return scan_each(op, kp->nwords, args);
  if (kp->nwords < 0) return scan_layout(op, kp, args);
  int n = kp->nwords;
  for (int w = 0; w < n; w++) {
    const char *val = args[kp->word[w] >> 16];
    if (__builtin_expect(val != NULL, 1) && !take_word(op, val + (kp->word[w] & 0xffff)))
      return;
  }
}

void pg_kparams_fill_layout(pg_kparams_t *kp, pg_kparams_param_fn param) {
  int n = 0;
  for (; param && n < PG_KP_MAX_PARAMS; n++) {
    size_t off = 0, sz = 0;
    if (!param(kp->func, (size_t)n, &off, &sz) || off > UINT16_MAX || sz > UINT16_MAX) break;
    kp->offset[n] = (uint16_t)off;
    kp->size[n] = (uint16_t)sz;
  }
  kp->nparams = n > 0 ? n : -1;
}

void pg_kparams_build_op(pg_op_t *op, const pg_kparams_t *kp, void *const *args) {
  if (kp) op->what = kp->name;
  if (kp && kp->nparams > 0)
    scan(op, kp, args);
  else
    pg_stat_inc(PG_STAT_KERNELS_UNSCANNED);
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
