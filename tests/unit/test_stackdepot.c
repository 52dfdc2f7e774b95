/* test_stackdepot.c: the stack depot gives one id per unique stack (native frames, flags and
 * Python frames all count; the thread does not), gives the stack back whole, refuses new stacks
 * once full while keeping the old ones, agrees with itself across racing threads, a signal
 * handler interrupting puts, and a fork. Criterion runs each test in a fresh process, so each
 * starts with an empty depot. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pg_stackdepot.h"

/* A stack made from a seed: depth 1..16 native frames, and py Python frames. */
static void make(pg_stack_t *st, uint32_t seed, unsigned py) {
  memset(st, 0, sizeof *st);
  st->depth = (uint8_t)(1 + seed % PG_STACK_MAX);
  st->tid = seed;
  for (unsigned i = 0; i < st->depth; i++)
    st->pc[i] = (void *)(uintptr_t)(0x400000u + 0x10u * i + ((uintptr_t)seed << 20));
  st->py_depth = (uint8_t)py;
  for (unsigned i = 0; i < py; i++) {
    st->py_code[i] = (const void *)(uintptr_t)(0x7f0000000000ull + i * 64 + seed);
    st->py_offset[i] = (int32_t)(i * 2 - 1);
  }
}

static void assert_same(const pg_stack_t *a, const pg_stack_t *b) {
  cr_assert_eq(a->depth, b->depth);
  cr_assert_eq(a->flags, b->flags);
  cr_assert_eq(a->py_depth, b->py_depth);
  for (unsigned i = 0; i < a->depth; i++) cr_assert_eq(a->pc[i], b->pc[i], "pc[%u]", i);
  for (unsigned i = 0; i < a->py_depth; i++) {
    cr_assert_eq(a->py_code[i], b->py_code[i], "py_code[%u]", i);
    cr_assert_eq(a->py_offset[i], b->py_offset[i], "py_offset[%u]", i);
  }
}

Test(stackdepot, round_trip_and_thread_not_kept) {
  pg_stack_t st, back;
  make(&st, 7, 12);
  st.flags = PG_STACK_EXACT_PC0;
  pg_stack_id_t id = pg_stackdepot_put(&st);
  cr_assert_neq(id, PG_STACK_ID_NONE);
  cr_assert(pg_stackdepot_get(id, &back));
  assert_same(&st, &back);
  cr_assert_eq(back.tid, 0u, "the thread is the record's, not the depot's");
  st.tid = 99; /* another thread, same frames: same id */
  cr_assert_eq(pg_stackdepot_put(&st), id);
  unsigned depth;
  const void *const *pcs = pg_stackdepot_frames(id, &depth);
  cr_assert_eq(depth, st.depth);
  cr_assert_eq(pcs[depth - 1], st.pc[depth - 1]);
}

Test(stackdepot, every_field_tells_stacks_apart) {
  pg_stack_t base, st;
  make(&base, 3, 4);
  pg_stack_id_t id = pg_stackdepot_put(&base);
  st = base, st.pc[2] = (void *)0x1234;
  cr_assert_neq(pg_stackdepot_put(&st), id, "a return address");
  st = base, st.depth--;
  cr_assert_neq(pg_stackdepot_put(&st), id, "the depth");
  st = base, st.flags = PG_STACK_EXACT_PC0;
  cr_assert_neq(pg_stackdepot_put(&st), id, "the flags");
  st = base, st.py_offset[3] = 1000;
  cr_assert_neq(pg_stackdepot_put(&st), id, "a Python offset");
  st = base, st.py_code[0] = (void *)0x99;
  cr_assert_neq(pg_stackdepot_put(&st), id, "a Python code object");
  st = base, st.py_depth = 0;
  cr_assert_neq(pg_stackdepot_put(&st), id, "the Python depth");
  cr_assert_eq(pg_stackdepot_put(&base), id, "and the first one is still itself");
}

Test(stackdepot, none_for_nothing) {
  pg_stack_t st, back;
  memset(&st, 0, sizeof st);
  cr_assert_eq(pg_stackdepot_put(NULL), PG_STACK_ID_NONE);
  cr_assert_eq(pg_stackdepot_put(&st), PG_STACK_ID_NONE, "no frame at all");
  st.py_depth = 1; /* Python frames only (a native walk that found nothing) is a stack */
  st.py_code[0] = (void *)0x5000;
  cr_assert_neq(pg_stackdepot_put(&st), PG_STACK_ID_NONE);
  back.depth = 5;
  cr_assert_not(pg_stackdepot_get(PG_STACK_ID_NONE, &back));
  cr_assert_eq(back.depth, 0);
  cr_assert_not(pg_stackdepot_get(1u << 30, &back), "an id past the used arena");
}

Test(stackdepot, many_stacks_distinct_and_whole) {
  enum { N = 200000 };
  static pg_stack_id_t ids[N];
  pg_stack_t st, back;
  for (uint32_t i = 0; i < N; i++) {
    make(&st, i, i % 5);
    ids[i] = pg_stackdepot_put(&st);
    cr_assert_neq(ids[i], PG_STACK_ID_NONE);
  }
  for (uint32_t i = 0; i < N; i++) {
    make(&st, i, i % 5);
    cr_assert_eq(pg_stackdepot_put(&st), ids[i], "stack %u again", i);
    cr_assert(pg_stackdepot_get(ids[i], &back));
    assert_same(&st, &back);
  }
  pg_stackdepot_stats_t s;
  pg_stackdepot_stats(&s);
  cr_assert_eq(s.stacks, (size_t)N);
  cr_assert_eq(s.dropped, 0u);
}

Test(stackdepot, full_depot_refuses_new_keeps_old) {
  pg_stackdepot_test_limit(4096);
  pg_stack_t st, back;
  pg_stack_id_t first = PG_STACK_ID_NONE, id;
  uint32_t seed = 0;
  make(&st, 15, 0); /* 16 frames: 144 bytes */
  first = pg_stackdepot_put(&st);
  cr_assert_neq(first, PG_STACK_ID_NONE);
  do {
    seed += PG_STACK_MAX; /* depth 16 each time */
    make(&st, 15 + seed, 0);
    id = pg_stackdepot_put(&st);
  } while (id != PG_STACK_ID_NONE && seed < 100000);
  cr_assert_eq(id, PG_STACK_ID_NONE, "a 4 KiB depot fills");
  pg_stackdepot_stats_t s;
  pg_stackdepot_stats(&s);
  cr_assert_eq(s.dropped, 1u);
  cr_assert_leq(s.bytes, 4096u);
  cr_assert_eq(s.stacks, 4096u / 144u, "as many 144-byte stacks as fit: %zu", s.stacks);
  make(&st, 15, 0);
  cr_assert_eq(pg_stackdepot_put(&st), first, "an old stack keeps its id");
  cr_assert(pg_stackdepot_get(first, &back));
  assert_same(&st, &back);
}

/* ---- races ----------------------------------------------------------------------------------- */
enum { RACE_STACKS = 5000, RACE_THREADS = 8 };
static pg_stack_id_t race_ids[RACE_THREADS][RACE_STACKS];
static atomic_int race_go;

static void *race_thread(void *arg) {
  int t = (int)(intptr_t)arg;
  while (!atomic_load(&race_go)) {
  }
  pg_stack_t st;
  for (int k = 0; k < RACE_STACKS; k++) {
    int i = (t % 2) ? RACE_STACKS - 1 - k : k; /* half of them from the other end */
    make(&st, (uint32_t)i, (unsigned)i % 3);
    race_ids[t][i] = pg_stackdepot_put(&st);
  }
  return NULL;
}

Test(stackdepot, racing_threads_agree) {
  pthread_t th[RACE_THREADS];
  for (int t = 0; t < RACE_THREADS; t++)
    pthread_create(&th[t], NULL, race_thread, (void *)(intptr_t)t);
  atomic_store(&race_go, 1);
  for (int t = 0; t < RACE_THREADS; t++) pthread_join(th[t], NULL);
  pg_stack_t st, back;
  for (int i = 0; i < RACE_STACKS; i++) {
    cr_assert_neq(race_ids[0][i], PG_STACK_ID_NONE);
    for (int t = 1; t < RACE_THREADS; t++)
      cr_assert_eq(race_ids[t][i], race_ids[0][i], "stack %d, thread %d", i, t);
    make(&st, (uint32_t)i, (unsigned)i % 3);
    cr_assert(pg_stackdepot_get(race_ids[0][i], &back));
    assert_same(&st, &back);
  }
  pg_stackdepot_stats_t s;
  pg_stackdepot_stats(&s);
  cr_assert_eq(s.stacks, (size_t)RACE_STACKS, "one entry per stack");
}

/* A signal handler puts stacks (of its own seeds) while the thread it interrupts puts others,
 * some the same: every id gives its own stack back. */
enum { SIG_SEEDS = 300 };
static atomic_uint sig_count;
static pg_stack_id_t sig_ids[SIG_SEEDS];

static void on_usr1(int sig) {
  (void)sig;
  unsigned k = atomic_fetch_add(&sig_count, 1) % SIG_SEEDS;
  pg_stack_t st;
  make(&st, 1000000 + k, 2);
  pg_stack_id_t id = pg_stackdepot_put(&st);
  if (sig_ids[k] == PG_STACK_ID_NONE) sig_ids[k] = id;
  else if (sig_ids[k] != id) abort();
}

static atomic_int sig_stop;
static void *sig_sender(void *arg) {
  pthread_t target = *(pthread_t *)arg;
  while (!atomic_load(&sig_stop)) pthread_kill(target, SIGUSR1);
  return NULL;
}

Test(stackdepot, signal_handler_puts_while_interrupted_put) {
  signal(SIGUSR1, on_usr1);
  pthread_t self = pthread_self(), th;
  pthread_create(&th, NULL, sig_sender, &self);
  pg_stack_t st, back;
  for (uint32_t round = 0; round < 40 || atomic_load(&sig_count) < 2000; round++) {
    for (uint32_t i = 0; i < 1000; i++) {
      make(&st, round % 2 ? 1000000 + i % SIG_SEEDS : i, 2); /* half the handler's stacks */
      pg_stack_id_t id = pg_stackdepot_put(&st);
      cr_assert(pg_stackdepot_get(id, &back));
      assert_same(&st, &back);
    }
    if (round > 100000) break;
  }
  atomic_store(&sig_stop, 1);
  pthread_join(th, NULL);
  signal(SIGUSR1, SIG_IGN);
  cr_assert_geq(atomic_load(&sig_count), 2000u);
  for (unsigned k = 0; k < SIG_SEEDS; k++) {
    if (sig_ids[k] == PG_STACK_ID_NONE) continue;
    make(&st, 1000000 + k, 2);
    cr_assert_eq(pg_stackdepot_put(&st), sig_ids[k]);
  }
}

Test(stackdepot, fork_child_keeps_ids) {
  pg_stack_t st;
  make(&st, 42, 3);
  pg_stack_id_t id = pg_stackdepot_put(&st);
  pid_t pid = fork();
  if (pid == 0) {
    pg_stack_t back, other;
    make(&other, 43, 3);
    bool ok = pg_stackdepot_get(id, &back) && back.depth == st.depth &&
              pg_stackdepot_put(&st) == id && pg_stackdepot_put(&other) != id &&
              pg_stackdepot_put(&other) != PG_STACK_ID_NONE;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
