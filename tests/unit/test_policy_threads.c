/* test_policy_threads.c: a plain program (no Criterion, whose process arena cannot start under
 * ThreadSanitizer) that drives policy from many threads at once: concurrent first-use
 * initialization, reports hitting the same and different de-duplication entries, waits and
 * counters, then the exit summary. Exit status 0 when every count is exact; run it under
 * PG_SANITIZE=thread to check the locking. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pg_policy.h"
#include "test_policy_helpers.h"

#define THREADS 6
#define PER_THREAD 400

static pthread_barrier_t start;

static void *worker(void *arg) {
  uintptr_t id = (uintptr_t)arg;
  pthread_barrier_wait(&start);
  /* Every thread races into lazy initialization through the hot-path query. */
  if (pg_policy_mode() != PG_MODE_ENFORCE) return (void *)1;
  tp_report_t t;
  tp_report_init(&t, (id & 1) ? PG_KIND_CPU_WRITE_DURING_DEVICE_ACCESS
                              : PG_KIND_FREE_DURING_DEVICE_ACCESS);
  t.access.tid = (uint32_t)id + 1;
  for (int i = 0; i < PER_THREAD; i++) {
    t.access.pc[0] = (void *)((uintptr_t)tp_copy_site + 1 + (uintptr_t)(i % 3));
    t.r.action = PG_ACTION_WAITED;
    t.r.waited_ns = 1000;
    pg_policy_report(&t.r);
    pg_policy_note_wait(1000);
    pg_stat_inc(PG_STAT_COPIES_TRACKED);
    if (pg_policy_options()->stack_depth != 16) return (void *)1;
  }
  return NULL;
}

int main(void) {
  char dir[128], env[256], log[200], out[65536];
  tp_tmpdir(dir);
  snprintf(env, sizeof env, "mode=enforce:enforce_fails=1:log_path=%s/log", dir);
  setenv("PINGUARD_OPTIONS", env, 1);
  pthread_barrier_init(&start, NULL, THREADS);
  pthread_t th[THREADS];
  for (uintptr_t i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, worker, (void *)i);
  int failed = 0;
  for (int i = 0; i < THREADS; i++) {
    void *r;
    pthread_join(th[i], &r);
    failed |= r != NULL;
  }
  pg_policy_counts_t c = pg_policy_counts();
  int status = pg_policy_finish();
  snprintf(log, sizeof log, "%s/log.%d", dir, (int)getpid());
  long n = tp_read_file(log, out, sizeof out);
  /* 2 kinds x 3 violating sites = 6 distinct reports; every one waited for (prevented), and
   * enforce_fails=1 makes them fail the status all the same. */
  if (failed || c.reports != THREADS * PER_THREAD || c.unique != 6 || c.printed != 6 ||
      c.unprevented != 0 ||
      pg_stat_get(PG_STAT_WAITS) != THREADS * PER_THREAD || status != 23 || n <= 0 ||
      tp_count(out, "pinguard: ERROR:") != 6 ||
      !strstr(out, "pinguard: 2400 reports (0 suppressed), 2400 waits totalling 2.400 ms\n")) {
    fprintf(stderr, "FAIL: reports=%llu unique=%llu printed=%llu status=%d\n%s\n",
            (unsigned long long)c.reports, (unsigned long long)c.unique,
            (unsigned long long)c.printed, status, n > 0 ? out : "(no log)");
    return 1;
  }
  printf("ok\n");
  return 0;
}
