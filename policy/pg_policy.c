/* pg_policy.c: option loading, the report path (dedup -> suppressions -> max_reports -> print),
 * halting, and the exit summary. One mutex serializes the report path; the shim takes it across
 * fork through pg_policy_atfork_*. Nothing here calls malloc: storage is static, apart from the
 * suppression rules, which pg_suppress.c keeps in mmap'ed memory sized at startup. */
#include "pg_policy.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pg_dedup.h"
#include "pg_fmt.h"
#include "pg_pystack.h"
#include "pg_report_format.h"
#include "pg_sink.h"
#include "pg_statsfile.h"
#include "pg_suppress.h"
#include "pg_symbolize.h"

/* A program may define this (like __asan_default_options) to change the defaults; the
 * environment still wins. Default visibility so the reference binds at run time to a definition
 * in the executable (built with -rdynamic or --export-dynamic-symbol) or in a library. */
extern const char *__pinguard_default_options(void) __attribute__((weak, visibility("default")));

static pg_options_t opts;
static atomic_int mode = PG_MODE_AUDIT;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static atomic_bool ready;

static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uintptr_t lock_owner; /* pthread_self() of the holder, for signal reentrancy */

/* Everything below is guarded by report_lock. */
static pg_policy_counts_t counts;
static pg_dedup_t dedup;
static pg_suppressions_t supp;
static bool limit_noted;
static bool finished;
static int finish_status = -1;
static char out_storage[128 * 1024];
static pg_symstack_t sym_access, sym_region, sym_gpu[PG_REPORT_MAX_GPU];
static atomic_uint_fast64_t ignored; /* counted without the lock */

static void write_stderr_line(void *ctx, const char *line) {
  (void)ctx;
  pg_write_all(2, line, strlen(line));
  pg_write_all(2, "\n", 1);
}

static void print_config(void) {
  char line[3 * PG_OPT_STR_MAX];
  pg_buf_t b;
  pg_buf_init(&b, line, sizeof line);
  pg_buf_puts(&b, "pinguard: mode=");
  pg_buf_puts(&b, pg_mode_name(opts.mode));
  pg_buf_puts(&b, " log_path=");
  pg_buf_puts(&b, opts.log_path.s[0] ? opts.log_path.s : "stderr");
  pg_buf_puts(&b, " log_format=");
  pg_buf_puts(&b, pg_log_format_name(opts.log_format));
  pg_buf_puts(&b, " suppressions=");
  pg_buf_u64(&b, supp.n);
  pg_buf_puts(&b, " rules\n");
  pg_write_all(2, line, b.len);
}

void pg_policy_configure(const char *program_defaults, const char *env) {
  pg_options_set_defaults(&opts);
  if (program_defaults)
    pg_options_parse(&opts, program_defaults, "__pinguard_default_options", write_stderr_line,
                     NULL);
  if (env) pg_options_parse(&opts, env, "PINGUARD_OPTIONS", write_stderr_line, NULL);

  memset(&counts, 0, sizeof counts);
  atomic_store(&ignored, 0);
  pg_dedup_clear(&dedup);
  pg_supp_free(&supp);
  limit_noted = false;
  finished = false;
  finish_status = -1;
  pg_sink_configure(opts.log_path.s);
  pg_dedup_runtime_refresh(); /* for a first report from the fault handler */
  pg_statsfile_configure(opts.stats_path.s, (unsigned)opts.stats_interval_s);
  if (opts.suppressions.s[0])
    pg_supp_load_file(&supp, opts.suppressions.s, write_stderr_line, NULL);
  if (opts.help) {
    static char help[16384];
    size_t n = pg_options_help(&opts, help, sizeof help);
    pg_write_all(2, help, n);
  }
  if (opts.verbosity >= 1) print_config();
  atomic_store(&mode, opts.mode);
  atomic_store(&ready, true);
}

static void init_once_fn(void) {
  if (atomic_load(&ready)) return; /* pg_policy_configure() ran first (tests, the launcher) */
  const char *defaults = __pinguard_default_options ? __pinguard_default_options() : NULL;
  pg_policy_configure(defaults, getenv("PINGUARD_OPTIONS"));
}

void pg_policy_init(void) { pthread_once(&init_once, init_once_fn); }

const pg_options_t *pg_policy_options(void) {
  if (!atomic_load_explicit(&ready, memory_order_acquire)) pg_policy_init();
  return &opts;
}

pg_mode_t pg_policy_mode(void) {
  if (!atomic_load_explicit(&ready, memory_order_acquire)) pg_policy_init();
  return (pg_mode_t)atomic_load_explicit(&mode, memory_order_relaxed);
}

void pg_policy_note_wait(uint64_t ns) {
  pg_stat_inc(PG_STAT_WAITS);
  pg_stat_add(PG_STAT_WAIT_NS, ns);
}

/* ---- the report path ----------------------------------------------------------------------- */
static void lock(void) {
  pthread_mutex_lock(&report_lock);
  atomic_store_explicit(&lock_owner, (uintptr_t)pthread_self(), memory_order_relaxed);
}

static void unlock(void) {
  atomic_store_explicit(&lock_owner, 0, memory_order_relaxed);
  pthread_mutex_unlock(&report_lock);
}

/* How many of s's captured frames to print: stack_depth counts only frames outside the runtime
 * (libc, the loader, pinguard, CUDA, the Python interpreter; pg_dedup.h), so runtime frames do
 * not push the user's own out of the report. The runtime frames right after the last counted
 * one are cut with it. */
static unsigned frames_to_print(const pg_stack_t *s, unsigned depth) {
  if (!s) return 0;
  unsigned counted = 0, n = 0;
  for (unsigned i = 0; i < s->depth && i < PG_STACK_MAX; i++) {
    if (pg_dedup_is_runtime_pc(s->pc[i])) continue;
    if (counted == depth) break;
    counted++;
    n = i + 1;
  }
  return counted < depth ? s->depth : n;
}

/* pinguard's own frames (its wrappers: "cudaHostAlloc.part.0 in libpinguard.so") are left out
 * of every printed stack: the call the program made is the frame below them. */
static void drop_own_frames(pg_symstack_t *out) {
  unsigned n = 0;
  for (unsigned i = 0; i < out->depth; i++) {
    if (strncmp(pg_frame_module_base(&out->f[i]), "libpinguard", 11) == 0) continue;
    if (n != i) out->f[n] = out->f[i];
    n++;
  }
  out->depth = n;
}

/* stack_depth also bounds the Python frames (all of them are the user's or a library's). */
static void symbolize_one(const pg_stack_t *s, unsigned how, unsigned depth, pg_symstack_t *out) {
  pg_symbolize_stack(s, frames_to_print(s, depth), how, out);
  drop_own_frames(out);
  if (out->py_depth > depth) out->py_depth = depth;
}

/* The value of environment variable `name`, copied into out (cut to cap), or NULL. environ is
 * scanned directly, without getenv's locale or secure-mode logic: a guard fault's report reads it
 * from the signal handler. */
static const char *env_peek(const char *name, char *out, size_t cap) {
  extern char **environ;
  size_t n = strlen(name);
  for (char **e = environ; e && *e; e++) {
    if (strncmp(*e, name, n) != 0 || (*e)[n] != '=') continue;
    const char *v = *e + n + 1;
    size_t len = strlen(v);
    if (len >= cap) len = cap - 1;
    memcpy(out, v, len);
    out[len] = '\0';
    return len ? out : NULL;
  }
  return NULL;
}

/* The CPU side of a report with the reporting thread's own Python frames, read now, once per
 * violation (before de-duplication, whose key includes the innermost Python frame): with
 * python_stacks=0 no launch pays for them, and the SUMMARY can still name
 * the user's line. Only when the access stack is this thread's (its tid,
 * or 0 for a capture made in the fault handler before the thread had a number) and has none. */
static const pg_report_t *with_access_pyframes(const pg_report_t *r) {
  static pg_report_t copy;   /* under the report lock, never on a small signal stack */
  static pg_stack_t access;
  const pg_stack_t *st = r->access_stack;
  if (!st || st->py_depth) return r;
  if (st->tid && st->tid != pg_thread_number()) return r;
  pg_stack_copy(&access, st);
  pg_pystack_capture_now(&access);
  if (!access.py_depth) return r;
  copy = *r;
  copy.access_stack = &access;
  return &copy;
}

static void symbolize_all(const pg_report_t *r, pg_report_view_t *v) {
  /* A signal handler cannot start addr2line; the modules' own line tables are read instead. */
  unsigned a2l = !opts.symbolize                      ? 0
                 : (r->flags & PG_REPORT_FROM_SIGNAL) ? PG_SYM_LINE_TABLE
                                                      : PG_SYM_ADDR2LINE | PG_SYM_LINE_TABLE;
  unsigned depth = (unsigned)opts.stack_depth;
  memset(v, 0, sizeof *v);
  v->r = r;
  v->pid = (int)getpid();
  symbolize_one(r->access_stack, a2l, depth, &sym_access);
  v->access = &sym_access;
  symbolize_one(r->region.size ? r->region.stack : NULL, a2l, depth, &sym_region);
  v->region = &sym_region;
  for (unsigned i = 0; i < PG_REPORT_MAX_GPU; i++) {
    symbolize_one(i < r->n_gpu && r->gpu ? r->gpu[i].stack : NULL, a2l, depth, &sym_gpu[i]);
    v->gpu[i] = &sym_gpu[i];
  }
  /* pytest names the running test here (it sets the variable with putenv before each phase). */
  static char test[PG_REPORT_TEST_MAX];
  v->test = env_peek("PYTEST_CURRENT_TEST", test, sizeof test);
}

static void emit(const char *s, size_t n) { pg_sink_write(s, n); }

static void note_limit(void) {
  if (limit_noted) return;
  limit_noted = true;
  char line[256];
  pg_buf_t b;
  pg_buf_init(&b, line, sizeof line);
  if (opts.log_format == PG_FORMAT_JSON) {
    pg_buf_puts(&b, "{\"type\":\"limit\",\"pid\":");
    pg_buf_u64(&b, (uint64_t)getpid());
    pg_buf_puts(&b, ",\"max_reports\":");
    pg_buf_u64(&b, (uint64_t)opts.max_reports);
    pg_buf_puts(&b, "}\n");
  } else {
    pg_buf_puts(&b, "pinguard: max_reports=");
    pg_buf_u64(&b, (uint64_t)opts.max_reports);
    pg_buf_puts(&b, " reached; further reports are counted but not printed\n");
  }
  emit(line, b.len);
}

bool pg_policy_guard(void) {
  if (opts.guard != PG_AUTO) return opts.guard != 0;
  /* Both audit and enforce: catching the CPU side of the contract in unmodified code is what
   * guard pages are for, and their measured cost (docs/GUARD.md) fits the overhead budget. */
  return opts.mode == PG_MODE_AUDIT || opts.mode == PG_MODE_ENFORCE;
}

void pg_policy_python_stacks(void) {
  static atomic_bool noted;
  /* auto: on in every mode that tracks (a tracked op pays a few hundred instructions for 12
   * frames: docs/PERFORMANCE.md, issue 24's fourth round). */
  bool on = opts.python_stacks == PG_AUTO ? opts.mode != PG_MODE_OFF : opts.python_stacks != 0;
  unsigned v = 0;
  pg_py_state_t st = pg_pystack_init(on, &v);
  if (st != PG_PY_UNKNOWN || !on || atomic_exchange(&noted, true)) return;
  char line[256];
  pg_buf_t b;
  pg_buf_init(&b, line, sizeof line);
  pg_buf_puts(&b, "pinguard: WARNING: ");
  if (v) {
    pg_buf_puts(&b, "Python ");
    pg_buf_u64(&b, v >> 8);
    pg_buf_putc(&b, '.');
    pg_buf_u64(&b, v & 0xff);
  } else {
    pg_buf_puts(&b, "this Python");
  }
  pg_buf_puts(&b, pg_pystack_known_version(v)
                      ? " is a build whose frames pinguard cannot read safely here"
                      : " is not a version pinguard can read (3.9 to 3.13)");
  pg_buf_puts(&b, ": stacks show native frames only\n");
  pg_write_all(2, line, b.len);
}

pg_verdict_t pg_policy_report(const pg_report_t *r) {
  if (pg_policy_mode() == PG_MODE_OFF || (unsigned)r->kind >= PG_KIND_COUNT) {
    atomic_fetch_add(&ignored, 1);
    return PG_VERDICT_IGNORED;
  }
  /* A signal handler that interrupted this thread's own report would deadlock on the lock. */
  if (atomic_load_explicit(&lock_owner, memory_order_relaxed) == (uintptr_t)pthread_self()) {
    atomic_fetch_add(&ignored, 1);
    return PG_VERDICT_IGNORED;
  }
  lock();
  /* Before de-duplication: two reads of one native site from two Python lines are two reports. */
  r = with_access_pyframes(r);
  /* Exit status: a violation enforce waited for did not happen; any other one did. */
  bool prevented = r->action == PG_ACTION_WAITED || r->action == PG_ACTION_COMPLETED;
  pg_dedup_key_t key;
  pg_dedup_entry_t *e = NULL;
  bool is_new = true;
  if (opts.dedup) {
    /* Libraries come and go (dlopen): the runtime's code ranges are rebuilt where that is safe;
     * a fault handler's report uses them as last built. */
    if (!(r->flags & PG_REPORT_FROM_SIGNAL)) pg_dedup_runtime_refresh();
    pg_dedup_key_of(r, &key);
    e = pg_dedup_lookup(&dedup, &key, &is_new);
  }
  if (e && !is_new) { /* the common case for a bug in a loop: no symbolization at all */
    e->count++;
    pg_verdict_t v;
    if (e->rule >= 0) {
      supp.rules[e->rule].hits++;
      counts.suppressed++;
      v = PG_VERDICT_SUPPRESSED;
    } else {
      counts.reports++;
      pg_statsfile_count_report(r->kind);
      if (!prevented) counts.unprevented++;
      if (e->id) {
        v = PG_VERDICT_DUPLICATE;
      } else {
        counts.limited++;
        v = PG_VERDICT_LIMITED;
      }
    }
    unlock();
    return v;
  }

  pg_report_view_t view;
  symbolize_all(r, &view);
  const pg_symstack_t *stacks[2 + PG_REPORT_MAX_GPU] = {view.access, view.region};
  for (unsigned i = 0; i < PG_REPORT_MAX_GPU; i++) stacks[2 + i] = view.gpu[i];
  int rule = pg_supp_match(&supp, (int)r->kind, stacks, 2 + PG_REPORT_MAX_GPU);
  if (e) {
    e->count = 1;
    e->rule = rule;
  }
  if (rule >= 0) {
    supp.rules[rule].hits++;
    counts.suppressed++;
    unlock();
    return PG_VERDICT_SUPPRESSED;
  }
  counts.reports++;
  pg_statsfile_count_report(r->kind);
  if (!prevented) counts.unprevented++;
  counts.unique++;
  if (opts.max_reports && counts.printed >= (uint64_t)opts.max_reports) {
    counts.limited++;
    note_limit();
    unlock();
    return PG_VERDICT_LIMITED;
  }
  view.id = (uint32_t)++counts.printed;
  if (e) e->id = view.id;
  pg_buf_t b;
  pg_buf_init(&b, out_storage, sizeof out_storage);
  if (opts.log_format == PG_FORMAT_JSON)
    pg_report_format_json(&b, &view);
  else
    pg_report_format_text(&b, &view);
  emit(b.p, b.len);
  bool do_abort = opts.abort_on_error, do_halt = opts.halt_on_error;
  /* exitcode=0 means "keep the program's own status", but a halted program has none: it was
   * stopped by pinguard, and a 0 would tell CI it succeeded. Halting exits 1 then. */
  int code = opts.exitcode ? opts.exitcode : 1;
  unlock();

  if (do_abort || do_halt) {
    pg_policy_finish();
    if (do_abort) abort();
    _exit(code);
  }
  return PG_VERDICT_PRINTED;
}

pg_policy_counts_t pg_policy_counts(void) {
  lock();
  pg_policy_counts_t c = counts;
  unlock();
  c.ignored = atomic_load(&ignored);
  return c;
}

unsigned pg_policy_suppression_count(void) {
  lock();
  unsigned n = supp.n;
  unlock();
  return n;
}

uint64_t pg_policy_suppression_hits(unsigned i) {
  lock();
  uint64_t h = i < supp.n ? supp.rules[i].hits : 0;
  unlock();
  return h;
}

/* ---- exit ---------------------------------------------------------------------------------- */
static void put_json_head(pg_buf_t *b, const char *type) {
  pg_buf_puts(b, "{\"type\":");
  pg_buf_json_str(b, type);
  pg_buf_puts(b, ",\"pid\":");
  pg_buf_u64(b, (uint64_t)getpid());
}

static void print_summary_line(pg_buf_t *b) {
  uint64_t waits = pg_stat_get(PG_STAT_WAITS), wait_ns = pg_stat_get(PG_STAT_WAIT_NS);
  if (opts.log_format == PG_FORMAT_JSON) {
    put_json_head(b, "summary");
    pg_buf_puts(b, ",\"reports\":");
    pg_buf_u64(b, counts.reports);
    pg_buf_puts(b, ",\"suppressed\":");
    pg_buf_u64(b, counts.suppressed);
    pg_buf_puts(b, ",\"unique\":");
    pg_buf_u64(b, counts.unique);
    pg_buf_puts(b, ",\"printed\":");
    pg_buf_u64(b, counts.printed);
    pg_buf_puts(b, ",\"not_printed_max_reports\":");
    pg_buf_u64(b, counts.limited);
    pg_buf_puts(b, ",\"waits\":");
    pg_buf_u64(b, waits);
    pg_buf_puts(b, ",\"wait_ms\":");
    pg_buf_ms_number(b, wait_ns);
    pg_buf_puts(b, "}\n");
  } else {
    pg_buf_puts(b, "pinguard: ");
    pg_buf_u64(b, counts.reports);
    pg_buf_puts(b, counts.reports == 1 ? " report (" : " reports (");
    pg_buf_u64(b, counts.suppressed);
    pg_buf_puts(b, " suppressed), ");
    pg_buf_u64(b, waits);
    pg_buf_puts(b, waits == 1 ? " wait totalling " : " waits totalling ");
    pg_buf_ms_number(b, wait_ns);
    pg_buf_puts(b, " ms\n");
  }
}

/* Reports printed once that happened again: the count a merged log needs. */
static void print_repeats(pg_buf_t *b) {
  for (size_t i = 0; i < PG_DEDUP_SLOTS; i++) {
    const pg_dedup_entry_t *e = &dedup.slots[i];
    if (!e->used || !e->id || e->count < 2) continue;
    if (opts.log_format == PG_FORMAT_JSON) {
      put_json_head(b, "repeat");
      pg_buf_puts(b, ",\"id\":");
      pg_buf_u64(b, e->id);
      pg_buf_puts(b, ",\"kind\":");
      pg_buf_json_str(b, pg_report_kind_name((pg_report_kind_t)e->key.kind));
      pg_buf_puts(b, ",\"count\":");
      pg_buf_u64(b, e->count);
      pg_buf_puts(b, "}\n");
    } else {
      pg_buf_puts(b, "pinguard: report #");
      pg_buf_u64(b, e->id);
      pg_buf_puts(b, " (");
      pg_buf_puts(b, pg_report_kind_name((pg_report_kind_t)e->key.kind));
      pg_buf_puts(b, ") happened ");
      pg_buf_u64(b, e->count);
      pg_buf_puts(b, " times\n");
    }
    if (b->len > b->cap / 2) { /* flush in pieces: the table can hold thousands */
      emit(b->p, b->len);
      pg_buf_init(b, b->p, b->cap);
    }
  }
}

static void print_suppressions(pg_buf_t *b) {
  for (unsigned i = 0; i < supp.n; i++) {
    if (opts.log_format == PG_FORMAT_JSON) {
      put_json_head(b, "suppression");
      pg_buf_puts(b, ",\"rule\":");
      pg_buf_json_str(b, supp.rules[i].text);
      pg_buf_puts(b, ",\"hits\":");
      pg_buf_u64(b, supp.rules[i].hits);
      pg_buf_puts(b, "}\n");
    } else {
      pg_buf_puts(b, "pinguard: suppression '");
      pg_buf_puts(b, supp.rules[i].text);
      pg_buf_puts(b, "' matched ");
      pg_buf_u64(b, supp.rules[i].hits);
      pg_buf_puts(b, supp.rules[i].hits == 1 ? " time\n" : " times\n");
    }
  }
}

static void print_stats(pg_buf_t *b) {
  if (opts.log_format == PG_FORMAT_JSON) {
    put_json_head(b, "stats");
    for (unsigned i = 0; i < PG_STAT_COUNT; i++) {
      pg_buf_putc(b, ',');
      pg_buf_json_str(b, pg_stat_name((pg_stat_t)i));
      pg_buf_putc(b, ':');
      pg_buf_u64(b, pg_stat_get((pg_stat_t)i));
    }
    pg_buf_puts(b, "}\n");
    return;
  }
  pg_buf_puts(b, "pinguard: statistics:\n");
  for (unsigned i = 0; i < PG_STAT_COUNT; i++) {
    pg_buf_puts(b, "  ");
    pg_buf_puts(b, pg_stat_name((pg_stat_t)i));
    pg_buf_puts(b, ": ");
    pg_buf_u64(b, pg_stat_get((pg_stat_t)i));
    pg_buf_puts(b, " (");
    pg_buf_puts(b, pg_stat_description((pg_stat_t)i));
    pg_buf_puts(b, ")\n");
  }
}

/* The exit-status rule (pg_policy.h): audit fails on any report; enforce only on one it could
 * not prevent, unless enforce_fails=1. */
static int exit_status_of(const pg_policy_counts_t *c) {
  if (opts.exitcode == 0) return -1;
  bool enforce = opts.mode == PG_MODE_ENFORCE && !opts.enforce_fails;
  uint64_t failing = enforce ? c->unprevented : c->reports;
  return failing > 0 ? opts.exitcode : -1;
}

int pg_policy_finish(void) {
  pg_policy_init();
  lock();
  if (finished) {
    int s = finish_status;
    unlock();
    return s;
  }
  finished = true;
  pg_buf_t b;
  pg_buf_init(&b, out_storage, sizeof out_storage);
  /* A process that never touched pinned memory and had nothing to say stays silent, so that
   * preloading pinguard into non-CUDA programs changes nothing. */
  bool active = counts.reports || counts.suppressed || pg_stats_any();
  if (opts.mode != PG_MODE_OFF && active) {
    print_repeats(&b);
    if (counts.limited && opts.log_format == PG_FORMAT_TEXT) {
      pg_buf_puts(&b, "pinguard: ");
      pg_buf_u64(&b, counts.limited);
      pg_buf_puts(&b, " reports not printed (max_reports=");
      pg_buf_u64(&b, (uint64_t)opts.max_reports);
      pg_buf_puts(&b, ")\n");
    }
    print_suppressions(&b);
    if (opts.print_stats) print_stats(&b);
    if (opts.print_summary) print_summary_line(&b);
  }
  if (b.len) emit(b.p, b.len);
  pg_statsfile_finish(opts.mode != PG_MODE_OFF && active);
  finish_status = exit_status_of(&counts);
  pg_symbolize_shutdown();
  int s = finish_status;
  unlock();
  return s;
}

/* ---- fork ---------------------------------------------------------------------------------- */
void pg_policy_stats_start(size_t (*regions)(void), size_t (*inflight)(void)) {
  pg_statsfile_gauges(regions, inflight);
  if (opts.mode != PG_MODE_OFF) pg_statsfile_start();
}

void pg_policy_atfork_prepare(void) {
  lock();
  pg_statsfile_atfork_prepare();
}

void pg_policy_atfork_parent(void) {
  pg_statsfile_atfork_parent();
  unlock();
}

void pg_policy_atfork_child(void) {
  /* The child has its own pid, hence its own log file, and none of the parent's GPU work:
   * its summary and exit status cover what it does itself. */
  memset(&counts, 0, sizeof counts);
  atomic_store(&ignored, 0);
  pg_dedup_clear(&dedup);
  for (unsigned i = 0; i < supp.n; i++) supp.rules[i].hits = 0;
  limit_noted = false;
  finished = false;
  finish_status = -1;
  pg_stats_reset();
  pg_sink_forget();
  pg_symbolize_forget();
  pg_statsfile_atfork_child(); /* after pg_stats_reset: the child's first file counts its own */
  unlock();
}
