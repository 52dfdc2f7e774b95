/* test_core.c: core/'s decisions, linked directly and driven through a fake device-operations
 * table (no preload, no runtime). The fake device keeps every recorded event pending until the
 * test completes its stream, or until core waits for it (a wait completes the stream's work up
 * to that event, as a device finishing it would), and counts the waits, so each test can say
 * exactly what core waited for. Covered: conflicts and their report or wait, ordering through
 * events and host syncs, capture (report, never wait), unpinning, annotations, system calls,
 * and the guard-page bookkeeping behind a copy. Each Criterion test runs in its own process,
 * so each starts core afresh. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "pg_engine.h"
#include "pg_guard.h"
#include "pg_policy.h"
#include "pg_tracker.h"
#include "test_policy_helpers.h"

/* ---- the fake device ------------------------------------------------------------------------ */
#define MAX_EVENTS 256
typedef struct fake_event {
  cudaStream_t stream; /* recorded on */
  unsigned seq;        /* the stream's work count when recorded */
  bool recorded;
} fake_event_t;

typedef struct fake_stream {
  unsigned enqueued, done; /* records so far; records completed */
  bool capturing;
} fake_stream_t;

static fake_event_t events[MAX_EVENTS];
static int nevents;
static fake_stream_t streams[4];
static int waits, queries;

#define S(i) ((cudaStream_t)(uintptr_t)(0x1000 + (i)))
static fake_stream_t *fs(cudaStream_t s) {
  uintptr_t i = (uintptr_t)s - 0x1000;
  cr_assert_lt(i, 4, "core used a stream the test never made");
  return &streams[i];
}
static fake_event_t *fe(cudaEvent_t e) { return (fake_event_t *)e; }

static pg_dev_result_t ev_create(cudaEvent_t *e) {
  cr_assert_lt(nevents, MAX_EVENTS);
  *e = (cudaEvent_t)&events[nevents++];
  return PG_DEV_OK;
}
static pg_dev_result_t ev_record(cudaEvent_t e, cudaStream_t s) {
  fe(e)->stream = s;
  fe(e)->seq = ++fs(s)->enqueued;
  fe(e)->recorded = true;
  return PG_DEV_OK;
}
static bool ev_done(cudaEvent_t e) { return !fe(e)->recorded || fs(fe(e)->stream)->done >= fe(e)->seq; }
static pg_dev_result_t ev_query(cudaEvent_t e) {
  queries++;
  return ev_done(e) ? PG_DEV_OK : PG_DEV_NOT_READY;
}
static pg_dev_result_t ev_sync(cudaEvent_t e) {
  waits++;
  if (!ev_done(e)) fs(fe(e)->stream)->done = fe(e)->seq;
  return PG_DEV_OK;
}
static pg_dev_result_t ev_destroy(cudaEvent_t e) {
  (void)e;
  return PG_DEV_OK;
}
static pg_dev_result_t nonblocking(cudaStream_t s, bool *nb) {
  (void)s;
  *nb = true;
  return PG_DEV_OK;
}
static pg_dev_result_t capture_status(cudaStream_t s, pg_capture_status_t *st) {
  *st = fs(s)->capturing ? PG_CAPTURE_ACTIVE : PG_CAPTURE_NONE;
  return PG_DEV_OK;
}

/* The device finishes everything queued on stream i so far. */
static void complete(int i) { streams[i].done = streams[i].enqueued; }

/* ---- setup ---------------------------------------------------------------------------------- */
static char dir[128], logfile[200], out[65536];
static unsigned char *buf; /* the pinned buffer: 4 pages, page-aligned */
#define BUF_BYTES (4 * 4096)

static void start(const char *mode, const char *extra) {
  char opts[512];
  tp_tmpdir(dir);
  /* max_wait_ms=0: this fake device completes work only when synchronized (ev_sync), never by
   * itself, so enforce's waits must be the blocking kind that counts them. */
  snprintf(opts, sizeof opts, "mode=%s:log_path=%s/log:dedup=0:max_wait_ms=0:guard=%s", mode, dir,
           extra ? extra : "0");
  snprintf(logfile, sizeof logfile, "%s/log.%d", dir, (int)getpid());
  pg_policy_configure(NULL, opts);
  pg_devops_t ops = {.event_create = ev_create,
                     .event_record = ev_record,
                     .event_query = ev_query,
                     .event_synchronize = ev_sync,
                     .event_destroy = ev_destroy,
                     .stream_nonblocking = nonblocking,
                     .capture_status = capture_status};
  cr_assert(pg_engine_start(&ops));
  buf = mmap(NULL, BUF_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(buf, MAP_FAILED);
  pg_stack_t st;
  pg_stack_capture(&st, 0, PG_STACK_MAX);
  pg_on_pin(buf, BUF_BYTES, PG_PIN_HOST_ALLOC, 0, &st);
}

static const char *log_text(void) {
  if (tp_read_file(logfile, out, sizeof out) < 0) out[0] = '\0';
  return out;
}

/* One asynchronous copy between the pinned buffer at [off, off+n) and the device, on stream i. */
static void copy(int i, size_t off, size_t n, bool d2h) {
  pg_op_t op;
  memset(&op, 0, sizeof op);
  op.api = "cudaMemcpyAsync";
  op.what = d2h ? "copy device->host" : "copy host->device";
  op.stream = S(i);
  op.nspans = 1;
  op.spans[0] = (pg_span_t){.p = buf + off, .n = n, .dir = d2h ? PG_DIR_WRITE : PG_DIR_READ};
  pg_stack_capture(&op.stack, 0, PG_STACK_MAX);
  pg_on_op_begin(&op);
  pg_on_op_end(&op);
}

/* A batch copy on stream i reading [off, off+n) of the buffer with a srcAccessOrder. */
static void batch_read(int i, size_t off, size_t n, pg_src_order_t order) {
  pg_op_t op;
  memset(&op, 0, sizeof op);
  op.api = "cudaMemcpyBatchAsync";
  op.what = "batch copy";
  op.stream = S(i);
  op.nspans = 1;
  op.spans[0] = (pg_span_t){.p = buf + off, .n = n, .dir = PG_DIR_READ, .order = order};
  pg_stack_capture(&op.stack, 0, PG_STACK_MAX);
  pg_on_op_begin(&op);
  pg_on_op_end(&op);
}

/* ---- a batch source's srcAccessOrder -------------------------------------------------------- */
Test(core, a_stream_ordered_source_follows_its_own_streams_producer) {
  start("enforce", NULL);
  copy(0, 0, 4096, true);
  batch_read(0, 0, 4096, PG_SRC_STREAM);
  cr_assert_eq(waits, 0);
  cr_assert_eq(tp_count(log_text(), "ERROR:"), 0, "%s", out);
}

Test(core, an_any_order_source_races_its_own_streams_producer) {
  start("enforce", NULL);
  copy(0, 0, 4096, true);
  copy(2, 8192, 4096, true); /* other bytes: left alone */
  batch_read(0, 0, 4096, PG_SRC_EARLY);
  cr_assert_eq(waits, 1);
  cr_assert_eq(streams[0].done, 1, "the producer was waited for");
  cr_assert_eq(streams[2].done, 0);
  cr_assert_eq(tp_count(log_text(), "ERROR: device-access-conflict"), 1, "%s", out);
  /* The read stays in flight: another stream's write of those bytes races it. */
  copy(1, 0, 4096, true);
  cr_assert_eq(tp_count(log_text(), "ERROR: device-access-conflict"), 2, "%s", out);
}

Test(core, a_during_call_source_is_a_host_read_at_call_time) {
  start("audit", NULL);
  copy(0, 0, 4096, true);
  batch_read(0, 0, 4096, PG_SRC_AT_CALL); /* its own stream's producer is still writing */
  cr_assert_eq(tp_count(log_text(), "ERROR: device-access-conflict"), 1, "%s", out);
  complete(0);
  batch_read(1, 4096, 4096, PG_SRC_AT_CALL);
  /* Nothing of the batch is in flight after the call: another stream may write the bytes. */
  copy(2, 4096, 4096, true);
  cr_assert_eq(tp_count(log_text(), "ERROR: device-access-conflict"), 1, "%s", out);
}

/* ---- conflicts between device accesses ------------------------------------------------------ */
Test(core, audit_reports_an_unordered_conflict_and_does_not_wait) {
  start("audit", NULL);
  copy(0, 0, 4096, true);
  copy(1, 0, 4096, false); /* reads what stream 0 is still writing */
  cr_assert_eq(waits, 0);
  cr_assert_eq(tp_count(log_text(), "ERROR: device-access-conflict"), 1, "%s", out);
}

Test(core, enforce_waits_for_exactly_the_conflicting_access) {
  start("enforce", NULL);
  copy(2, 8192, 4096, false); /* another stream, other bytes: no conflict, never waited for */
  copy(0, 0, 4096, true);
  copy(1, 0, 4096, false);
  cr_assert_eq(waits, 1);
  cr_assert_eq(streams[0].done, 1, "stream 0's copy was waited for");
  cr_assert_eq(streams[2].done, 0, "stream 2's copy was left alone");
  cr_assert_eq(tp_count(log_text(), "ERROR: device-access-conflict"), 1, "enforce still says so: %s", out);
}

Test(core, two_device_reads_do_not_conflict) {
  start("audit", NULL);
  copy(0, 0, 4096, false);
  copy(1, 0, 4096, false);
  cr_assert_eq(tp_count(log_text(), "ERROR:"), 0, "%s", out);
}

Test(core, an_event_wait_orders_the_second_access) {
  start("audit", NULL);
  copy(0, 0, 4096, true);
  cudaEvent_t e = (cudaEvent_t)&events[MAX_EVENTS - 1]; /* the application's event */
  ev_record(e, S(0));
  pg_on_event_record(e, S(0));
  pg_on_stream_wait_event(S(1), e);
  copy(1, 0, 4096, false);
  cr_assert_eq(tp_count(log_text(), "ERROR:"), 0, "%s", out);
}

Test(core, a_completed_unordered_access_is_reported_without_a_wait) {
  start("enforce", NULL);
  copy(0, 0, 4096, true);
  complete(0);
  copy(1, 0, 4096, false);
  cr_assert_eq(waits, 0, "nothing is left running to wait for");
  cr_assert_gt(queries, 0, "completion is learned by a query");
  cr_assert_eq(tp_count(log_text(), "ERROR: device-access-conflict"), 1,
               "a race whether or not the GPU won it:\n%s", out);
  cr_assert(strstr(out, "but nothing ordered it"), "%s", out);
  cr_assert(strstr(out, "enforce: no wait needed"), "%s", out);
}

/* Audit records a completion event after one copy in audit_event_every: a report on the others
 * asks the event that covers them (the next copy's), so it still says whether the GPU won. */
Test(core, audit_words_a_report_by_the_event_that_covers_an_access) {
  start("audit", "0:audit_event_every=4");
  for (int i = 0; i < 4; i++) copy(0, 0, 4096, true); /* the 4th records the stream's event */
  cr_assert_eq(nevents, 1);
  complete(0);
  copy(1, 0, 4096, false);
  cr_assert_eq(tp_count(log_text(), "ERROR: device-access-conflict"), 1, "%s", out);
  cr_assert_eq(tp_count(out, "; completed "), 4, "each of the four copies had completed: %s", out);
  cr_assert_eq(tp_count(out, "still running"), 0, "%s", out);
  cr_assert_eq(nevents, 1, "the covering event was found, none recorded: %d", nevents);
}

/* Copies after the stream's last event: the report records one to ask (behind every copy). */
Test(core, audit_records_an_event_for_a_report_on_the_newest_copies) {
  start("audit", "0:audit_event_every=4");
  copy(0, 0, 4096, true);
  cr_assert_eq(nevents, 0, "the first copy records no event");
  copy(1, 0, 4096, false);
  cr_assert_eq(tp_count(log_text(), "ERROR: device-access-conflict"), 1, "%s", out);
  cr_assert_eq(tp_count(out, "still running"), 1, "%s", out);
  cr_assert_eq(nevents, 1, "one recorded for the report");
  cr_assert_eq(events[0].stream, S(0), "on the copy's stream");
  cr_assert_eq(waits, 0, "audit waits for nothing");
}

/* pinguard_wait in audit: an access without an event of its own is waited for through the one
 * recorded for it, and the host is then ordered after it. */
Test(core, pinguard_wait_in_audit_waits_for_a_copy_without_its_own_event) {
  start("audit", "0:audit_event_every=4");
  copy(0, 0, 4096, true);
  pg_stack_t st;
  pg_stack_capture(&st, 0, PG_STACK_MAX);
  cr_assert_eq(pg_on_annotation(PG_ANN_WAIT, buf, 4096, &st), 1);
  cr_assert_eq(waits, 1, "waited for the copy");
  cr_assert_eq(streams[0].done, 1);
  copy(1, 0, 4096, false); /* ordered after the wait */
  cr_assert_eq(tp_count(log_text(), "ERROR:"), 0, "%s", out);
}

Test(core, a_completed_access_the_host_ordered_is_no_conflict) {
  start("enforce", NULL);
  copy(0, 0, 4096, true);
  pg_on_sync_begin(S(0));
  complete(0);
  pg_on_sync_end(true);
  copy(1, 0, 4096, false);
  cr_assert_eq(waits, 0);
  cr_assert_eq(tp_count(log_text(), "ERROR:"), 0, "%s", out);
}

Test(core, a_host_sync_orders_everything_before_it) {
  start("audit", NULL);
  copy(0, 0, 4096, true);
  pg_on_sync_begin(S(0));
  complete(0); /* the real cudaStreamSynchronize returned */
  pg_on_sync_end(true);
  copy(1, 0, 4096, false);
  cr_assert_eq(tp_count(log_text(), "ERROR:"), 0, "%s", out);
}

/* ---- capture: never a host wait while a stream captures ------------------------------------ */
Test(core, enforce_reports_instead_of_waiting_while_a_stream_captures) {
  start("enforce", NULL);
  copy(0, 0, 4096, true);
  streams[2].capturing = true;
  pg_on_capture_begin(S(2));
  copy(1, 0, 4096, false);
  cr_assert_eq(waits, 0, "a wait during capture would invalidate it");
  cr_assert_eq(tp_count(log_text(), "ERROR: wait-during-capture"), 1, "%s", out);
}

/* A device->host copy of buf's first page captured on stream 2 into graph, instantiated as exec:
 * recorded into the capture, not run. */
static void capture_a_copy(cudaGraph_t graph, cudaGraphExec_t exec) {
  streams[2].capturing = true;
  pg_on_capture_begin(S(2));
  copy(2, 0, 4096, true);
  streams[2].capturing = false;
  pg_on_capture_end(S(2), graph);
  pg_on_graph_instantiate(exec, graph);
}

Test(core, a_captured_copy_is_in_flight_at_each_graph_launch_only) {
  start("audit", NULL);
  cudaGraphExec_t exec = (cudaGraphExec_t)0x78;
  capture_a_copy((cudaGraph_t)0x77, exec);
  copy(1, 0, 4096, false);
  cr_assert_eq(tp_count(log_text(), "ERROR:"), 0, "nothing ran yet: %s", out);
  pg_stack_t st;
  pg_stack_capture(&st, 0, PG_STACK_MAX);
  pg_on_graph_launch_end(exec, S(3), &st); /* the captured copy runs on stream 3 */
  copy(1, 0, 4096, false);
  cr_assert_eq(tp_count(log_text(), "ERROR: device-access-conflict"), 1, "%s", out);
  pg_on_graph_exec_destroy(exec);
  pg_on_device_sync_begin(); /* cudaDeviceSynchronize: everything completes */
  for (int i = 0; i < 4; i++) complete(i);
  pg_on_sync_end(true);
  pg_on_graph_launch_end(exec, S(3), &st); /* destroyed: runs nothing pinguard knows */
  copy(1, 0, 4096, false);
  cr_assert_eq(tp_count(log_text(), "ERROR: device-access-conflict"), 1, "%s", out);
}

/* The captured op's lookup kept the capture stream's record: the launch must begin the access on
 * its own stream, so that later work on that stream is ordered after it and other streams' is
 * not. */
Test(core, a_graph_launch_begins_on_the_launch_stream_not_the_capture_stream) {
  start("audit", NULL);
  cudaGraphExec_t exec = (cudaGraphExec_t)0x7a;
  capture_a_copy((cudaGraph_t)0x79, exec); /* a device->host write */
  pg_stack_t st;
  pg_stack_capture(&st, 0, PG_STACK_MAX);
  pg_on_graph_launch_end(exec, S(3), &st);
  copy(3, 0, 4096, false); /* stream 3 reads after its own write: ordered */
  cr_assert_eq(tp_count(log_text(), "ERROR:"), 0, "%s", out);
  copy(2, 0, 4096, false); /* the capture's stream is not ordered after stream 3's write */
  cr_assert_eq(tp_count(log_text(), "ERROR: device-access-conflict"), 1, "%s", out);
  pg_on_graph_exec_destroy(exec);
}

/* An end call on a stream that was not capturing fails and ends nothing: the capture still
 * running on another stream keeps enforce from waiting. */
Test(core, a_failed_end_capture_on_another_stream_ends_no_capture) {
  start("enforce", NULL);
  copy(0, 0, 4096, true);
  streams[2].capturing = true;
  pg_on_capture_begin(S(2));
  pg_on_capture_end(S(3), NULL); /* stream 3 was not capturing: the call failed */
  copy(1, 0, 4096, false);
  cr_assert_eq(waits, 0, "a wait during the live capture would invalidate it");
  cr_assert_eq(tp_count(log_text(), "ERROR: wait-during-capture"), 1, "%s", out);
}

/* A copy captured while an unordered access to its bytes is in flight is not checked then: it
 * runs only at the graph's launch. */
Test(core, a_captured_copy_is_not_checked_at_capture_time) {
  start("audit", NULL);
  copy(0, 0, 4096, true); /* in flight on stream 0 */
  streams[2].capturing = true;
  pg_on_capture_begin(S(2));
  copy(2, 0, 4096, false); /* captured: reads the bytes at each launch, not now */
  streams[2].capturing = false;
  pg_on_capture_end(S(2), (cudaGraph_t)0x81);
  cr_assert_eq(tp_count(log_text(), "ERROR:"), 0, "%s", out);
}

/* A launch is checked against the work in flight at the launch: audit reports it, enforce waits
 * for exactly that access before the graph runs. */
Test(core, a_graph_launch_is_checked_against_work_in_flight) {
  start("enforce", NULL);
  cudaGraphExec_t exec = (cudaGraphExec_t)0x84;
  capture_a_copy((cudaGraph_t)0x83, exec); /* writes buf's first page at each launch */
  copy(0, 0, 4096, true);                  /* another write of it, in flight on stream 0 */
  copy(1, 8192, 4096, true);               /* other bytes */
  pg_stack_t st;
  pg_stack_capture(&st, 0, PG_STACK_MAX);
  pg_on_graph_launch_begin(exec, S(3), "cudaGraphLaunch", &st);
  cr_assert_eq(waits, 1);
  cr_assert_eq(streams[0].done, 1, "stream 0's copy was waited for");
  cr_assert_eq(streams[1].done, 0);
  cr_assert_eq(tp_count(log_text(), "ERROR: device-access-conflict"), 1, "%s", out);
  pg_on_graph_launch_end(exec, S(3), &st);
  /* The same graph launched again on another stream, unordered with the first launch. */
  pg_on_graph_launch_begin(exec, S(2), "cudaGraphLaunch", &st);
  cr_assert_eq(waits, 2);
  cr_assert_eq(tp_count(log_text(), "ERROR: device-access-conflict"), 2, "%s", out);
  pg_on_graph_exec_destroy(exec);
}

/* ---- unpinning, annotations, system calls --------------------------------------------------- */
Test(core, enforce_waits_before_unpinning) {
  start("enforce", NULL);
  copy(0, 0, 4096, true);
  pg_stack_t st;
  pg_stack_capture(&st, 0, PG_STACK_MAX);
  pg_unpin_t saved;
  pg_on_unpin_begin(buf, true, "cudaFreeHost", &st, &saved);
  cr_assert(saved.had_region);
  cr_assert_eq(waits, 1);
  cr_assert_eq(streams[0].done, 1);
  pg_on_unpin_end(&saved, true);
  cr_assert_eq(tp_count(log_text(), "ERROR: free-during-device-access"), 1, "%s", out);
}

/* An unpinning call the runtime refuses (unregistering memory cudaHostAlloc gave, freeing
 * registered memory) fails: the region keeps its in-flight accesses, so the owner's own
 * unordered use right after is still reported. */
Test(core, a_refused_unpin_keeps_the_accesses_in_flight) {
  start("audit", NULL);
  copy(0, 0, 4096, true);
  pg_stack_t st;
  pg_stack_capture(&st, 0, PG_STACK_MAX);
  pg_unpin_t saved;
  pg_on_unpin_begin(buf, false, "cudaHostUnregister", &st, &saved); /* cudaHostUnregister of allocated memory */
  pg_on_unpin_end(&saved, false);
  cr_assert_eq(tp_count(log_text(), "ERROR: unregister-during-device-access"), 1, "%s", out);
  copy(1, 0, 4096, false); /* races stream 0's write, still in flight */
  cr_assert_eq(tp_count(log_text(), "ERROR: device-access-conflict"), 1, "%s", out);
}

Test(core, audit_reports_a_release_annotation_on_an_in_flight_buffer) {
  start("audit", NULL);
  copy(0, 0, 4096, false);
  pg_stack_t st;
  pg_stack_capture(&st, 0, PG_STACK_MAX);
  cr_assert_gt(pg_on_annotation(PG_ANN_RELEASE, buf, 4096, &st), 0);
  cr_assert_eq(pg_on_annotation(PG_ANN_RELEASE, buf + 4096, 4096, &st), 0,
               "other bytes are not in flight");
  cr_assert_eq(tp_count(log_text(), "ERROR: release-during-device-access"), 1, "%s", out);
}

Test(core, a_system_call_reading_a_buffer_the_device_writes_is_reported) {
  start("audit", NULL);
  copy(0, 4096, 4096, true);
  pg_stack_t st;
  pg_stack_capture(&st, 0, PG_STACK_MAX);
  pg_on_syscall(buf + 4096, 100, false, "write(2)", &st);
  pg_on_syscall(buf, 100, false, "write(2)", &st); /* bytes no access touches */
  cr_assert_eq(tp_count(log_text(), "ERROR: syscall-read-during-device-write"), 1, "%s", out);
}

/* ---- guard-page bookkeeping ------------------------------------------------------------------ */
Test(core, a_guarded_copy_protects_its_pages_until_it_retires) {
  start("audit", "1:guard_min_bytes=4096");
  copy(0, 4096, 8192, true); /* a device write of pages 1 and 2 */
  cr_assert_eq(pg_guard_claims((uintptr_t)buf + 4096), PG_GUARD_PROTECTED);
  cr_assert_eq(pg_guard_claims((uintptr_t)buf + 8192), PG_GUARD_PROTECTED);
  cr_assert_eq(pg_guard_claims((uintptr_t)buf), PG_GUARD_NOT_OURS, "page 0 is not in the copy");
  cr_assert(!pg_guard_page_allows((uintptr_t)buf + 4096, false), "a device write denies reads");
  pg_on_sync_begin(S(0)); /* cudaStreamSynchronize: the access completes and retires */
  complete(0);
  pg_on_sync_end(true);
  cr_assert_eq(pg_guard_claims((uintptr_t)buf + 4096), PG_GUARD_WAS_PROTECTED);
  cr_assert(pg_guard_page_allows((uintptr_t)buf + 4096, true));
  buf[4096] = 1; /* open again: this store would fault otherwise */
}

Test(core, a_device_read_leaves_its_pages_readable) {
  start("audit", "1:guard_min_bytes=4096");
  copy(0, 0, 8192, false);
  cr_assert_eq(pg_guard_claims((uintptr_t)buf), PG_GUARD_PROTECTED);
  cr_assert(pg_guard_page_allows((uintptr_t)buf, false));
  cr_assert(!pg_guard_page_allows((uintptr_t)buf, true));
  cr_assert_eq(buf[0], 0, "reading is allowed");
}

/* ---- the fault door: pg_on_fault, given what a handler saw ---------------------------------- */
/* A SIGSEGV on addr for a denied access (SEGV_ACCERR), as the shim's handler describes it; the
 * instruction is this test's own code (the CPU stack of a report starts here), which is no safe
 * load of pinguard's. */
static ucontext_t fault_context;
static pg_fault_t access_fault(uintptr_t addr, bool is_write) {
  getcontext(&fault_context);
  return (pg_fault_t){.kind = PG_FAULT_ACCESS,
                      .hardware = true,
                      .access_error = true,
                      .is_write = is_write,
                      .addr = addr,
                      .pc = __builtin_return_address(0),
                      .fp = __builtin_frame_address(0),
                      .sp = __builtin_frame_address(0),
                      .context = &fault_context};
}

Test(core, a_fault_on_a_page_pinguard_never_guarded_goes_to_the_application) {
  start("audit", "1:guard_min_bytes=4096");
  copy(0, 4096, 8192, true); /* pages 1 and 2 guarded; page 0 not */
  pg_fault_t f = access_fault((uintptr_t)buf, false);
  cr_assert_eq(pg_on_fault(&f), PG_FAULT_CHAIN);
  f = access_fault((uintptr_t)buf + 4096, false);
  f.access_error = false; /* SEGV_MAPERR, or a SIGBUS: never a guard page's */
  cr_assert_eq(pg_on_fault(&f), PG_FAULT_CHAIN);
  pg_fault_t trap = {.kind = PG_FAULT_TRAP, .hardware = true, .trace = true};
  cr_assert_eq(pg_on_fault(&trap), PG_FAULT_CHAIN, "no single step of pinguard's is running");
  cr_assert_eq(tp_count(log_text(), "ERROR:"), 0, "%s", out);
}

Test(core, a_fault_on_a_guarded_page_is_settled_and_retried) {
  start("audit", "1:guard_min_bytes=4096");
  copy(0, 4096, 8192, true); /* a device write of pages 1 and 2, in flight */
  pg_fault_t f = access_fault((uintptr_t)buf + 4096, false);
  cr_assert_eq(pg_on_fault(&f), PG_FAULT_RETRY);
  cr_assert_eq(tp_count(log_text(), "ERROR: cpu-read-during-device-write"), 1, "%s", out);
  /* Reported: the access stops guarding its pages, so the retried read goes through. */
  cr_assert(pg_guard_page_allows((uintptr_t)buf + 4096, false));
  cr_assert_eq(buf[4096], 0);
}

Test(core, a_fault_of_a_thread_inside_pinguard_opens_the_page_unchecked) {
  start("audit", "1:guard_min_bytes=4096");
  copy(0, 4096, 8192, true);
  pg_fault_t f = access_fault((uintptr_t)buf + 4096, true);
  f.inside_pinguard = true; /* it may hold any of pinguard's locks: nothing is looked up */
  cr_assert_eq(pg_on_fault(&f), PG_FAULT_RETRY);
  buf[4096] = 1; /* the page is open (unlocked, uncounted): the retried store goes through */
  cr_assert_eq(tp_count(log_text(), "ERROR:"), 0, "%s", out);
}

/* ---- a fault that conflicts with nothing (tests/fuzz/FINDINGS.md, F11) ---------------------- */
/* Another thread's retirement of an ordered device write, held in its retire hook: the access is
 * off its stream (no one else retires it) and its page count not yet dropped. */
static pthread_mutex_t hold_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cv = PTHREAD_COND_INITIALIZER;
static bool holding, in_hook, let_go;

/* Ten seconds from now: a failing test must not hang. */
static struct timespec hold_deadline(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  t.tv_sec += 10;
  return t;
}

static void held_retire(uintptr_t lo, uintptr_t hi, pg_dir_t dir, void *ctx) {
  pthread_mutex_lock(&hold_mu);
  if (holding && dir == PG_DIR_WRITE) {
    in_hook = true;
    pthread_cond_broadcast(&hold_cv);
    struct timespec until = hold_deadline();
    while (!let_go && pthread_cond_timedwait(&hold_cv, &hold_mu, &until) == 0) {}
  }
  pthread_mutex_unlock(&hold_mu);
  pg_guard_on_retire(lo, hi, dir, ctx);
}

static void *sync_stream_1(void *arg) {
  (void)arg;
  pg_on_sync_begin(S(1)); /* cudaStreamSynchronize: the host orders the write, then retires it */
  complete(1);
  pg_on_sync_end(true);
  return NULL;
}

Test(core, a_read_fault_that_conflicts_with_nothing_keeps_the_page_guarded_against_writes) {
  start("audit", "1:guard_min_bytes=4096");
  pg_tracker_set_hooks(pg_guard_on_begin, held_retire, NULL);
  uintptr_t page = (uintptr_t)buf + 4096;
  copy(0, 4096, 4096, false); /* stream 0: a device read of page 1, never ordered */
  copy(1, 4096, 4096, true);  /* stream 1: a device write of page 1, ordered below */
  holding = true;
  pthread_t t;
  pthread_create(&t, NULL, sync_stream_1, NULL);
  pthread_mutex_lock(&hold_mu);
  struct timespec until = hold_deadline();
  while (!in_hook && pthread_cond_timedwait(&hold_cv, &hold_mu, &until) == 0) {}
  bool held = in_hook;
  pthread_mutex_unlock(&hold_mu);
  cr_assert(held, "the stream sync never retired the ordered write");
  /* A CPU read now: no unordered device write to report, yet the page still denies reads. */
  cr_assert(!pg_guard_page_allows(page, false));
  pg_fault_t f = access_fault(page, false);
  cr_assert_eq(pg_on_fault(&f), PG_FAULT_RETRY);
  /* (The log's one report so far is the two copies' device-access-conflict.) */
  cr_assert_eq(tp_count(log_text(), "ERROR: cpu-"), 0, "%s", out);
  cr_assert(pg_guard_page_allows(page, false), "the retried read must run");
  cr_assert(!pg_guard_page_allows(page, true), "the device read still guards against writes");
  pthread_mutex_lock(&hold_mu);
  let_go = true;
  pthread_cond_broadcast(&hold_cv);
  pthread_mutex_unlock(&hold_mu);
  pthread_join(t, NULL);
  cr_assert(!pg_guard_page_allows(page, true), "the device read still guards against writes");
  /* The CPU write conflicts with the unordered device read: it faults and is reported. */
  f = access_fault(page, true);
  cr_assert_eq(pg_on_fault(&f), PG_FAULT_RETRY);
  cr_assert_eq(tp_count(log_text(), "ERROR: cpu-write-during-device-access"), 1, "%s", out);
}

/* ---- stacks are captured only for ops that touch pinned memory ------------------------------ */
/* An op keeps only its site; pg_on_op_begin captures its stack from there once a span is
 * known to be pinned, and never for an op whose spans all lie elsewhere. */
__attribute__((noinline)) static void site_op(pg_op_t *op, const void *p, size_t n) {
  memset(op, 0, sizeof *op);
  op->api = "cudaMemcpyAsync";
  op->what = "copy host->device";
  op->stream = S(0);
  op->nspans = 1;
  op->spans[0] = (pg_span_t){.p = p, .n = n, .dir = PG_DIR_READ};
  op->stack.depth = 0xee; /* a mark: still there if nothing was captured */
  pg_stack_site_here(&op->site);
  pg_on_op_begin(op);
  pg_on_op_end(op);
  __asm__ volatile("" ::: "memory");
}

Test(core, an_op_in_no_pinned_memory_captures_no_stack) {
  start("audit", NULL);
  static char pageable[8192] __attribute__((aligned(4096)));
  pg_op_t op;
  site_op(&op, pageable, 4096);
  cr_assert_eq(op.nspans, 0, "nothing pinned: nothing kept");
  cr_assert_eq(op.stack.depth, 0xee, "and no stack captured");
  site_op(&op, buf, 4096);
  cr_assert_eq(op.nspans, 1);
  cr_assert_neq(op.stack.depth, 0xee, "a pinned span: the stack is captured");
  cr_assert_geq(op.stack.depth, 2);
  cr_assert_null(op.site.ret, "once");
}
