/* test_kernel_params.c: core/pg_kernel_params.c linked directly, with a fake describer standing
 * in for the runtime. Covered: a layout is described once per function and cached, a describer
 * that declines is asked again, "no information" is cached and counted unscanned at each
 * launch; the scan takes each 8-aligned word of each parameter (offsets that are not a multiple
 * of 8 included), skips small words and NULL arguments, stops at PG_OP_MAX_SPANS, and names the
 * op after the kernel; handles map to the function they were made for, the first one wins;
 * threads racing on one function all get the same cached layout. Each Criterion test runs in
 * its own process, so each starts with empty caches. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "pg_kernel_params.h"
#include "pg_pinmap.h"
#include "pg_stats.h"

static int describes;
static bool decline;
static int layout_n = 2;                    /* parameters the fake runtime reports (-1: none) */
static uint16_t layout_off[PG_KP_MAX_PARAMS] = {0, 8};
static uint16_t layout_size[PG_KP_MAX_PARAMS] = {8, 8};

static bool fake_describe(const void *func, pg_kparams_t *kp) {
  (void)func;
  __atomic_fetch_add(&describes, 1, __ATOMIC_RELAXED);
  if (decline) return false;
  kp->nparams = layout_n;
  for (int i = 0; i < layout_n; i++) {
    kp->offset[i] = layout_off[i];
    kp->size[i] = layout_size[i];
  }
  kp->name = "fake_kernel";
  return true;
}

static int fn_a, fn_b; /* stand-ins for kernel functions: only their addresses matter */

static void op_init(pg_op_t *op) {
  memset(op, 0, sizeof *op);
  op->what = "kernel";
}

Test(kernel_params, described_once_and_cached) {
  const pg_kparams_t *a = pg_kparams_get(&fn_a, fake_describe);
  cr_assert_not_null(a);
  cr_expect_eq(a->func, &fn_a);
  cr_expect_eq(a->nparams, 2);
  cr_expect_str_eq(a->name, "fake_kernel");
  cr_expect_eq(pg_kparams_get(&fn_a, fake_describe), a);
  cr_expect_eq(describes, 1);
  const pg_kparams_t *b = pg_kparams_get(&fn_b, fake_describe);
  cr_expect_neq(b, a);
  cr_expect_eq(describes, 2);
  cr_expect_null(pg_kparams_get(NULL, fake_describe));
}

Test(kernel_params, declined_is_asked_again) {
  decline = true;
  cr_expect_null(pg_kparams_get(&fn_a, fake_describe));
  cr_expect_null(pg_kparams_get(&fn_a, fake_describe));
  cr_expect_eq(describes, 2);
  decline = false;
  cr_expect_not_null(pg_kparams_get(&fn_a, fake_describe));
  cr_expect_not_null(pg_kparams_get(&fn_a, fake_describe));
  cr_expect_eq(describes, 3);
}

Test(kernel_params, no_information_is_cached_and_counted_unscanned) {
  layout_n = -1;
  const pg_kparams_t *kp = pg_kparams_get(&fn_a, fake_describe);
  cr_assert_not_null(kp);
  cr_expect_eq(kp->nparams, -1);
  cr_expect_eq(pg_kparams_get(&fn_a, fake_describe), kp);
  cr_expect_eq(describes, 1);
  uint64_t before = pg_stat_get(PG_STAT_KERNELS_UNSCANNED);
  pg_op_t op;
  op_init(&op);
  int x = 0;
  void *args[] = {&x};
  pg_kparams_build_op(&op, kp, args);
  pg_kparams_build_op(&op, NULL, args); /* no layout at all: a handle never seen made */
  cr_expect_eq(op.nspans, 0);
  cr_expect_eq(pg_stat_get(PG_STAT_KERNELS_UNSCANNED), before + 2);
}

/* A runtime's parameter query: ends_with answers past the last parameter (PG_KP_END: the
 * runtime's invalid-value answer), or PG_KP_UNKNOWN (no information at all). */
static int query_n, query_end;
static int fake_param(const void *func, size_t i, size_t *off, size_t *sz) {
  (void)func;
  if ((int)i >= query_n) return query_end;
  *off = i * 8;
  *sz = 8;
  return PG_KP_PARAM;
}

Test(kernel_params, a_kernel_without_parameters_is_not_unscanned) {
  pg_kparams_t kp = {.func = &fn_a};
  query_n = 0, query_end = PG_KP_END;
  pg_kparams_fill_layout(&kp, fake_param);
  cr_expect_eq(kp.nparams, 0, "known to take none");
  query_end = PG_KP_UNKNOWN;
  pg_kparams_fill_layout(&kp, fake_param);
  cr_expect_eq(kp.nparams, -1, "no information");
  query_n = 3, query_end = PG_KP_END;
  pg_kparams_fill_layout(&kp, fake_param);
  cr_expect_eq(kp.nparams, 3);
  pg_kparams_fill_layout(&kp, NULL);
  cr_expect_eq(kp.nparams, -1);

  layout_n = 0;
  const pg_kparams_t *none = pg_kparams_get(&fn_a, fake_describe);
  cr_assert_not_null(none);
  uint64_t before = pg_stat_get(PG_STAT_KERNELS_UNSCANNED);
  pg_op_t op;
  op_init(&op);
  pg_kparams_build_op(&op, none, NULL);
  cr_expect_eq(op.nspans, 0);
  cr_expect_eq(pg_stat_get(PG_STAT_KERNELS_UNSCANNED), before, "nothing was missed");
}

Test(kernel_params, scan_takes_aligned_pointer_words) {
  /* param 0: a pointer; param 1: a 4-byte int at offset 8; param 2: a 20-byte struct at offset
   * 12 whose 8-aligned word (device offset 16, i.e. 4 bytes in) holds a pointer. */
  layout_n = 3;
  layout_off[0] = 0, layout_size[0] = 8;
  layout_off[1] = 8, layout_size[1] = 4;
  layout_off[2] = 12, layout_size[2] = 20;
  const pg_kparams_t *kp = pg_kparams_get(&fn_a, fake_describe);
  cr_assert_not_null(kp);
  char host[64];
  void *p0 = host;
  int count = 7;
  unsigned char st[20];
  memset(st, 0, sizeof st);
  uintptr_t p2 = (uintptr_t)(host + 32);
  memcpy(st + 4, &p2, sizeof p2);
  void *args[] = {&p0, &count, st};
  pg_op_t op;
  op_init(&op);
  pg_pinmap_add((uintptr_t)host, (uintptr_t)host + sizeof host); /* as if pinned */
  pg_kparams_build_op(&op, kp, args);
  cr_expect_str_eq(op.what, "fake_kernel");
  cr_assert_eq(op.nspans, 2);
  cr_expect_eq(op.spans[0].p, host);
  cr_expect_eq(op.spans[0].n, 0);
  cr_expect_eq(op.spans[0].dir, PG_DIR_UNKNOWN);
  cr_expect_eq(op.spans[1].p, host + 32);
}

Test(kernel_params, scan_skips_small_words_and_null_arguments) {
  layout_n = 2;
  const pg_kparams_t *kp = pg_kparams_get(&fn_a, fake_describe);
  uintptr_t small = 4095, big = 4096;
  void *args[] = {&small, &big};
  pg_op_t op;
  op_init(&op);
  pg_pinmap_add(0, 8192); /* as if the low pages were pinned */
  pg_kparams_build_op(&op, kp, args);
  cr_assert_eq(op.nspans, 1);
  cr_expect_eq(op.spans[0].p, (const void *)4096);
  void *nulls[] = {NULL, &big};
  op_init(&op);
  pg_kparams_build_op(&op, kp, nulls);
  cr_expect_eq(op.nspans, 1);
  op_init(&op);
  pg_kparams_build_op(&op, kp, NULL);
  cr_expect_eq(op.nspans, 0);
}

Test(kernel_params, scan_stops_at_max_spans) {
  layout_n = 1;
  layout_off[0] = 0, layout_size[0] = (PG_OP_MAX_SPANS + 8) * 8;
  const pg_kparams_t *kp = pg_kparams_get(&fn_a, fake_describe);
  static uintptr_t words[PG_OP_MAX_SPANS + 8];
  for (size_t i = 0; i < PG_OP_MAX_SPANS + 8; i++) words[i] = 0x10000 + i * 64;
  void *args[] = {words};
  pg_op_t op;
  op_init(&op);
  pg_pinmap_add(0x10000, 0x10000 + sizeof words * 8);
  pg_kparams_build_op(&op, kp, args);
  cr_expect_eq(op.nspans, PG_OP_MAX_SPANS);
  cr_expect_eq(op.spans[PG_OP_MAX_SPANS - 1].p, (const void *)words[PG_OP_MAX_SPANS - 1]);
}

/* The quick reject: a word in no 64 MiB granule that holds pinned memory makes no span (the
 * launch then tracks nothing and captures no stack); one in such a granule does, until the
 * region there is removed again. */
Test(kernel_params, scan_rejects_words_outside_pinned_granules) {
  layout_n = 2;
  layout_off[0] = 0, layout_size[0] = 8;
  layout_off[1] = 8, layout_size[1] = 8;
  const pg_kparams_t *kp = pg_kparams_get(&fn_a, fake_describe);
  uintptr_t pinned = (uintptr_t)7 << 40, far = ((uintptr_t)7 << 40) + ((uintptr_t)1 << 30);
  uintptr_t high = (uintptr_t)1 << 50; /* past 2^47: one shared flag */
  void *args[] = {&pinned, &far};
  void *high_args[] = {&high, &high};
  pg_op_t op;
  op_init(&op);
  pg_kparams_build_op(&op, kp, args);
  cr_expect_eq(op.nspans, 0, "nothing pinned yet");
  pg_pinmap_add(pinned, pinned + 4096);
  op_init(&op);
  pg_kparams_build_op(&op, kp, args);
  cr_assert_eq(op.nspans, 1, "only the word in a pinned granule");
  cr_expect_eq(op.spans[0].p, (const void *)pinned);
  op_init(&op);
  pg_kparams_build_op(&op, kp, high_args);
  cr_expect_eq(op.nspans, 0, "no region above 2^47");
  pg_pinmap_remove(pinned, pinned + 4096);
  op_init(&op);
  pg_kparams_build_op(&op, kp, args);
  cr_expect_eq(op.nspans, 0, "removed");
  pg_pinmap_add(high, high + 4096);
  op_init(&op);
  pg_kparams_build_op(&op, kp, high_args);
  cr_expect_eq(op.nspans, 2, "a region above 2^47 lets every such word through");
}

/* The scan, which is also the launch's quick reject, against a model: for kernels of 1 to 19
 * pointer parameters (the four-at-a-time groups and the tail), each parameter in turn pinned,
 * a NULL argument in turn, and random sets of pinned and NULL arguments (seeded), the
 * candidates are exactly the non-NULL arguments whose words lie in a pinned granule, in
 * parameter order; and a layout with a parameter that is not one word (the word list). */
static int fns_q[20];
static void check_scan(const pg_kparams_t *kp, void **args, const char *what, int round) {
  uintptr_t got[PG_OP_MAX_SPANS], want[PG_OP_MAX_SPANS];
  size_t n = pg_kparams_candidates(kp, args, got, PG_OP_MAX_SPANS), m = 0;
  for (int i = 0; i < kp->nparams; i++) {
    if (!args[i]) continue;
    for (int k = 0; k < kp->size[i] / 8; k++) {
      uintptr_t w;
      memcpy(&w, (const char *)args[i] + 8 * k, sizeof w);
      if (pg_pinmap_maybe(w)) want[m++] = w;
    }
  }
  cr_assert_eq(n, m, "%s (round %d, %d parameters): %zu candidates, the model %zu", what, round,
               kp->nparams, n, m);
  cr_assert_arr_eq(got, want, n * sizeof *got, "%s (round %d)", what, round);
}

Test(kernel_params, scan_agrees_with_a_model) {
  uintptr_t pinned = (uintptr_t)9 << 40, device = (uintptr_t)3 << 40;
  pg_pinmap_add(pinned, pinned + 4096);
  pg_pinmap_add(pinned, pinned + 4096);
  uintptr_t vals[20];
  void *args[20];
  for (int np = 1; np < 20; np++) {
    layout_n = np;
    for (int i = 0; i < np; i++) layout_off[i] = (uint16_t)(8 * i), layout_size[i] = 8;
    const pg_kparams_t *kp = pg_kparams_get(&fns_q[np], fake_describe);
    cr_assert(kp && kp->one_word_each && kp->nwords == np);
    for (int i = 0; i < np; i++) vals[i] = device + 4096u * (unsigned)i, args[i] = &vals[i];
    check_scan(kp, args, "device pointers", 0);
    for (int p = 0; p < np; p++) {
      vals[p] = pinned + 64;
      check_scan(kp, args, "one pinned", p);
      args[p] = NULL; /* a NULL argument is skipped, the rest still read */
      check_scan(kp, args, "one pinned, NULL", p);
      args[p] = &vals[p];
      vals[p] = device;
    }
    /* Each parameter pinned with probability 1/4, NULL with 1/8. */
    unsigned r = 12345u + (unsigned)np;
    for (int round = 0; round < 200; round++) {
      for (int i = 0; i < np; i++) {
        r = r * 1103515245u + 12345u;
        unsigned x = (r >> 16) % 8;
        vals[i] = x < 2 ? pinned + 8u * (unsigned)i : device + 4096u * (unsigned)i;
        args[i] = x == 7 ? NULL : &vals[i];
      }
      check_scan(kp, args, "random", round);
    }
  }
  /* Not one word each: a 16-byte parameter between two pointers (the word list). */
  layout_n = 3;
  layout_off[0] = 0, layout_size[0] = 8;
  layout_off[1] = 8, layout_size[1] = 16;
  layout_off[2] = 24, layout_size[2] = 8;
  const pg_kparams_t *kp = pg_kparams_get(&fn_b, fake_describe);
  cr_assert(kp && !kp->one_word_each && kp->nwords == 4);
  uintptr_t a = device, pair[2] = {device, pinned}, c = device;
  void *mixed[] = {&a, pair, &c};
  check_scan(kp, mixed, "word list", 0);
  uintptr_t out[4];
  cr_expect_eq(pg_kparams_candidates(kp, mixed, out, 4), 1);
  pair[1] = device;
  check_scan(kp, mixed, "word list, none", 0);
  cr_expect_eq(pg_kparams_candidates(kp, NULL, out, 4), 0, "no argument array: nothing to read");
}

Test(kernel_params, handles_map_to_their_function) {
  static int h1, h2, h3;
  pg_kparams_remember_handle(&h1, &fn_a);
  pg_kparams_remember_handle(&h2, &fn_b);
  pg_kparams_remember_handle(&h1, &fn_b); /* the first function remembered wins */
  cr_expect_eq(pg_kparams_func_of_handle(&h1), &fn_a);
  cr_expect_eq(pg_kparams_func_of_handle(&h2), &fn_b);
  cr_expect_null(pg_kparams_func_of_handle(&h3));
  cr_expect_null(pg_kparams_func_of_handle(NULL));
}

Test(kernel_params, many_handles_and_functions) {
  static uint64_t fns[2000], hs[2000]; /* 8 bytes apart, like code and handle addresses */
  for (int i = 0; i < 2000; i++) pg_kparams_remember_handle(&hs[i], &fns[i]);
  int found = 0;
  for (int i = 0; i < 2000; i++) found += pg_kparams_func_of_handle(&hs[i]) == &fns[i];
  cr_expect_eq(found, 2000);
  int cached = 0;
  for (int i = 0; i < 2000; i++) cached += pg_kparams_get(&fns[i], fake_describe) != NULL;
  cr_expect_geq(cached, 512); /* 1024 slots: most fit, the rest are launched unscanned */
  cr_expect_leq(cached, 1024);
  int again = describes;
  for (int i = 0; i < 2000; i++) {
    const pg_kparams_t *kp = pg_kparams_get(&fns[i], NULL); /* cached ones need no describer */
    if (kp) cr_expect_eq(kp->func, &fns[i]);
  }
  cr_expect_eq(describes, again);
}

#define NTHREADS 8
static const pg_kparams_t *seen[NTHREADS];
static void *racer(void *arg) {
  seen[(intptr_t)arg] = pg_kparams_get(&fn_a, fake_describe);
  return NULL;
}

Test(kernel_params, racing_threads_share_one_layout) {
  pthread_t t[NTHREADS];
  for (intptr_t i = 0; i < NTHREADS; i++) pthread_create(&t[i], NULL, racer, (void *)i);
  for (int i = 0; i < NTHREADS; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < NTHREADS; i++) {
    cr_assert_not_null(seen[i]);
    cr_expect_eq(seen[i], seen[0]);
  }
  cr_expect_eq(pg_kparams_get(&fn_a, fake_describe), seen[0]);
}
