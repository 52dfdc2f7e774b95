/* test_tracker_fork.c: the fork handlers. The child of a process with GPU work in flight starts
 * with an empty in-flight table but keeps every pinned region; the parent is unchanged. */
#include <sys/wait.h>
#include <unistd.h>

#include "test_tracker_support.h"

static void setup(void) { tt_init_tracker(); }

TestSuite(tracker_fork, .init = setup, .fini = tt_teardown, .timeout = 30);

Test(tracker_fork, child_forgets_in_flight_work_keeps_regions) {
  char *buf = tt_pinned(65536);
  void *dev = tt_device(65536);
  cudaStream_t s = tt_stream(cudaStreamDefault);
  tt_close_gate(s);
  cr_assert_eq(tt_copy_d2h(buf, dev, 4096, s), 1);
  cr_assert_eq(tt_copy_d2h(buf + 8192, dev, 4096, s), 1);

  pg_tracker_atfork_prepare();
  pid_t pid = fork();
  if (pid == 0) {
    pg_tracker_atfork_child();
    int bad = 0;
    pg_access_t a;
    pg_region_t r;
    if (pg_tracker_inflight_count() != 0) bad |= 1;
    if (pg_inflight_query(buf, 65536, 0, &a, 1) != 0) bad |= 2;
    if (!pg_region_find(buf + 100, &r) || r.base != (uintptr_t)buf) bad |= 4;
    /* the child's own bookkeeping still works: regions come and go */
    if (pg_region_add((void *)0x1000, 4096, PG_PIN_REGISTER, 0, NULL) != 0) bad |= 8;
    if (!pg_region_remove((void *)0x1000, NULL)) bad |= 16;
    _exit(bad);
  }
  pg_tracker_atfork_parent();
  cr_assert_gt(pid, 0);
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status));
  cr_assert_eq(WEXITSTATUS(status), 0, "child check bits: %d", WEXITSTATUS(status));

  cr_assert_eq(pg_tracker_inflight_count(), 2, "the parent still has its work in flight");
  tt_open_gates();
  tt_stream_sync(s);
  cr_assert_eq(pg_tracker_inflight_count(), 0);
}
