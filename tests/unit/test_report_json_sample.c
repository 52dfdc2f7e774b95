/* test_report_json_sample.c: prints reports of every kind, with every action and awkward names
 * (quotes, backslashes, control and non-UTF-8 bytes), in log_format=json on stdout, then the
 * exit lines. CTest pipes it into policy/check_json_lines.py, which parses each line. */
#include <stdio.h>

#include "pg_policy.h"
#include "test_policy_helpers.h"

int main(void) {
  pg_policy_configure(NULL,
                      "log_format=json:log_path=stdout:print_stats=1:exitcode=0:dedup=1");
  for (int k = 0; k < PG_KIND_COUNT; k++) {
    tp_report_t t;
    tp_report_init(&t, (pg_report_kind_t)k);
    t.r.action = (pg_action_t)(k % 3);
    t.r.waited_ns = 1234567;
    t.access.pc[0] = (void *)((uintptr_t)t.access.pc[0] + (uintptr_t)k); /* distinct sites */
    if (k == 1) t.gpu.what = "weird \"name\" \\ with \x01 control and \xff\xfe bytes";
    if (k == 2) t.r.region.size = 0; /* no known region */
    if (k == 3) t.r.access_stack = NULL;
    if (k == 4) t.r.n_gpu = 0;
    pg_policy_report(&t.r);
    pg_policy_report(&t.r); /* a repeat, for the exit "repeat" line */
  }
  pg_policy_note_wait(2500000);
  return pg_policy_finish() == -1 ? 0 : 1;
}
