/* pg_report_format.c: the text and JSON renderings of a report (tests/unit/test_report.c checks
 * the text layout line by line). Both use the same fields; JSON escapes every byte outside
 * printable ASCII so that a log stays machine-readable whatever a symbol or path contains. */
#include "pg_report_format.h"

#include <string.h>

/* Modules whose frames are never "the call site": the C library, the loader, pinguard itself and
 * the CUDA runtime (real or simulated, which carries the same name). */
static bool runtime_frame(const pg_frame_t *f) {
  static const char *const prefixes[] = {"libc.so", "libc-", "ld-linux", "libpthread",
                                         "libpinguard", "libcudart", "libcuda.so",
                                         /* sanitizer runtimes intercept memcpy and friends */
                                         "libasan", "libtsan", "libubsan"};
  const char *base = pg_frame_module_base(f);
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    if (strncmp(base, prefixes[i], strlen(prefixes[i])) == 0) return true;
  return false;
}

/* Frames of the Python interpreter (its library, executable and extension modules), of the
 * libraries under a Python program's own code (libffi under ctypes, PyTorch and its C++ runtime)
 * and of the C++ and OpenMP runtimes: a SUMMARY names the program's code below them when there
 * is any (a user's own C extension, a ctypes library), not _Pickler_Write or a copy kernel. */
static bool platform_frame(const pg_frame_t *f) {
  static const char *const prefixes[] = {"libpython", "python", "libffi", "libtorch", "libc10",
                                         "libshm", "libstdc++", "libgcc_s", "libgomp"};
  static const char *const dirs[] = {"/lib-dynload/", "/site-packages/torch/",
                                     "/dist-packages/torch/", "/site-packages/nvidia/",
                                     "/dist-packages/nvidia/"};
  const char *base = pg_frame_module_base(f);
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    if (strncmp(base, prefixes[i], strlen(prefixes[i])) == 0) return true;
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
    if (strstr(f->module, dirs[i])) return true;
  return false;
}

/* A function of CUDA's API namespace (cudaMemcpyAsync, __cudaRegisterFunction, cuMemFreeHost):
 * in a program or library that links the runtime statically, the runtime's code shares the
 * module with the caller's, and only its names tell it apart. */
static bool cuda_api_name(const char *fn) {
  return strncmp(fn, "cuda", 4) == 0 ? fn[4] >= 'A' && fn[4] <= 'Z'
         : strncmp(fn, "__cuda", 6) == 0 ? true
         : fn[0] == 'c' && fn[1] == 'u' && fn[2] >= 'A' && fn[2] <= 'Z';
}

/* The native frame a SUMMARY names, below the last frame of CUDA's API (so that a statically
 * linked runtime's own frames, cudaFreeHost's and its helpers', are passed over too): the
 * innermost outside the runtime and the platform, else the innermost outside the runtime; the
 * same from the top when nothing below qualifies; else the innermost. */
static const pg_frame_t *summary_frame(const pg_report_view_t *v) {
  const pg_symstack_t *s = v->access && v->access->present && v->access->depth ? v->access : NULL;
  if (!s && v->r->n_gpu && v->gpu[0] && v->gpu[0]->present && v->gpu[0]->depth) s = v->gpu[0];
  if (!s) return NULL;
  unsigned from = 0;
  for (unsigned i = 0; i < s->depth; i++)
    if (cuda_api_name(s->f[i].function)) from = i + 1;
  for (int pass = 0; pass < 2; pass++, from = 0) {
    for (unsigned i = from; i < s->depth; i++)
      if (s->f[i].module[0] && !runtime_frame(&s->f[i]) && !platform_frame(&s->f[i]))
        return &s->f[i];
    for (unsigned i = from; i < s->depth; i++)
      if (s->f[i].module[0] && !runtime_frame(&s->f[i])) return &s->f[i];
  }
  return &s->f[0];
}

/* "file:line", or "module+0xoff", or "0xpc". */
static void put_location(pg_buf_t *b, const pg_frame_t *f) {
  if (f->file[0] && f->line) {
    pg_buf_puts(b, f->file);
    pg_buf_putc(b, ':');
    pg_buf_u64(b, f->line);
  } else if (f->module[0]) {
    pg_buf_puts(b, pg_frame_module_base(f));
    pg_buf_putc(b, '+');
    pg_buf_hex(b, f->module_offset);
  } else {
    pg_buf_hex(b, (uintptr_t)f->pc);
  }
}

/* A Python frame in a library (the standard library, an installed package) rather than in the
 * program's own files. */
static bool library_pyframe(const pg_pyframe_t *f) {
  return strstr(f->file, "/site-packages/") || strstr(f->file, "/dist-packages/") ||
         strstr(f->file, "/lib/python") || f->file[0] == '<';
}

/* The Python frame a summary names: the innermost one in the program's own files, else the
 * innermost; NULL without Python frames. */
const pg_pyframe_t *pg_report_user_pyframe(const pg_symstack_t *s) {
  if (!s || !s->present || !s->py_depth) return NULL;
  for (unsigned i = 0; i < s->py_depth; i++)
    if (!library_pyframe(&s->py[i])) return &s->py[i];
  return &s->py[0];
}

static void put_pyframe(pg_buf_t *b, const pg_pyframe_t *f) {
  pg_buf_puts(b, f->file);
  if (f->line) {
    pg_buf_putc(b, ':');
    pg_buf_u64(b, f->line);
  }
  if (f->function[0]) {
    pg_buf_puts(b, " in ");
    pg_buf_puts(b, f->function);
  }
}

size_t pg_report_summary(const pg_report_view_t *v, char *out, size_t cap) {
  if (cap > PG_SUMMARY_MAX + 1) cap = PG_SUMMARY_MAX + 1;
  pg_buf_t b;
  pg_buf_init(&b, out, cap);
  pg_buf_puts(&b, "SUMMARY: pinguard: ");
  pg_buf_puts(&b, pg_report_kind_name(v->r->kind));
  const pg_pyframe_t *py = pg_report_user_pyframe(v->access);
  if (!py && !(v->access && v->access->present && v->access->depth) && v->r->n_gpu)
    py = pg_report_user_pyframe(v->gpu[0]);
  const pg_frame_t *f = py ? NULL : summary_frame(v);
  if (py) {
    pg_buf_putc(&b, ' ');
    put_pyframe(&b, py);
  } else if (f) {
    pg_buf_putc(&b, ' ');
    put_location(&b, f);
    if (f->function[0]) {
      pg_buf_puts(&b, " in ");
      pg_buf_puts(&b, f->function);
    }
  }
  if (b.overflow && cap > 4) { /* a cut summary ends in "..." so the cut is visible */
    memcpy(out + cap - 4, "...", 4);
    b.len = cap - 1;
  }
  return b.len;
}

/* ---- text ---------------------------------------------------------------------------------- */
static void put_thread(pg_buf_t *b, uint32_t tid) {
  pg_buf_puts(b, "thread T");
  pg_buf_u64(b, tid);
}

static void put_text_stack(pg_buf_t *b, const pg_symstack_t *s) {
  if (!s || !s->present || (!s->depth && !s->py_depth)) {
    pg_buf_puts(b, "    <no stack recorded>\n");
    return;
  }
  for (unsigned i = 0; i < s->depth; i++) {
    const pg_frame_t *f = &s->f[i];
    pg_buf_puts(b, "    #");
    pg_buf_u64(b, i);
    pg_buf_putc(b, ' ');
    pg_buf_hex(b, (uintptr_t)f->pc);
    if (f->function[0]) {
      pg_buf_puts(b, " in ");
      pg_buf_puts(b, f->function);
    }
    if (f->file[0] && f->line) {
      pg_buf_putc(b, ' ');
      put_location(b, f);
    } else if (f->module[0]) {
      pg_buf_puts(b, " (");
      put_location(b, f);
      pg_buf_putc(b, ')');
    }
    pg_buf_putc(b, '\n');
  }
  /* The Python frames, numbered on: "#7 /app/engine.py:97 in commit_store". */
  for (unsigned i = 0; i < s->py_depth; i++) {
    pg_buf_puts(b, "    #");
    pg_buf_u64(b, s->depth + i);
    pg_buf_putc(b, ' ');
    put_pyframe(b, &s->py[i]);
    pg_buf_putc(b, '\n');
  }
}

static void put_gpu_text(pg_buf_t *b, const pg_gpu_access_t *g, const pg_symstack_t *s) {
  pg_buf_puts(b, "  in-flight GPU access: ");
  if (g->is_kernel) pg_buf_puts(b, "kernel ");
  pg_buf_puts(b, g->what ? g->what : "(unnamed)");
  pg_buf_puts(b, " (");
  pg_buf_puts(b, pg_dir_name(g->dir));
  if (g->len) {
    pg_buf_puts(b, ", ");
    pg_buf_u64(b, g->len);
    pg_buf_puts(b, " bytes at ");
    pg_buf_hex(b, g->addr);
  } else {
    pg_buf_puts(b, ", unknown extent");
  }
  pg_buf_puts(b, ") on stream ");
  pg_buf_hex(b, (uintptr_t)g->stream);
  pg_buf_puts(b, " (device ");
  pg_buf_u64(b, (uint64_t)(g->device > 0 ? g->device : 0));
  pg_buf_puts(b, "), enqueued ");
  pg_buf_duration(b, g->age_ns);
  pg_buf_puts(b, " ago");
  if (g->stack) {
    pg_buf_puts(b, " by ");
    put_thread(b, g->stack->tid);
  }
  if (g->completed) {
    /* The GPU won this time; nothing the program did makes it win every time. */
    pg_buf_puts(b, "; completed ");
    pg_buf_duration(b, g->completed_age_ns);
    pg_buf_puts(b, " before this access, but nothing ordered it: on a slower or busier device "
                   "this access would race it");
  } else {
    pg_buf_puts(b, "; still running");
  }
  pg_buf_puts(b, ":\n");
  put_text_stack(b, s);
}

static void put_action_text(pg_buf_t *b, const pg_report_t *r) {
  const char *verb = pg_report_kind_verb(r->kind);
  switch (r->action) {
    case PG_ACTION_NONE:
      pg_buf_puts(b, "  audit: no wait; the ");
      pg_buf_puts(b, verb);
      pg_buf_puts(b, " went ahead\n");
      break;
    case PG_ACTION_WAITED:
      pg_buf_puts(b, "  enforce: waited ");
      pg_buf_duration(b, r->waited_ns);
      pg_buf_puts(b, r->n_gpu > 1 ? " for those accesses" : " for that access");
      pg_buf_puts(b, ", then allowed the ");
      pg_buf_puts(b, verb);
      pg_buf_putc(b, '\n');
      break;
    case PG_ACTION_NOT_WAITED_CAPTURE:
      pg_buf_puts(b, "  enforce: the stream is capturing, so no wait was possible; the ");
      pg_buf_puts(b, verb);
      pg_buf_puts(b, " went ahead\n");
      break;
    case PG_ACTION_NOT_WAITED_HOSTFN:
      pg_buf_puts(b, "  enforce: this ran inside a stream's host function, where no wait is "
                     "possible; the ");
      pg_buf_puts(b, verb);
      pg_buf_puts(b, " went ahead\n");
      break;
    case PG_ACTION_COMPLETED:
      pg_buf_puts(b, "  enforce: no wait needed, the conflicting GPU work had completed (a bug "
                     "all the same: nothing ordered it); the ");
      pg_buf_puts(b, verb);
      pg_buf_puts(b, " went ahead\n");
      break;
    case PG_ACTION_WAIT_FAILED:
      pg_buf_puts(b, "  enforce: the wait failed (the event synchronize returned an error) "
                     "after ");
      pg_buf_duration(b, r->waited_ns);
      pg_buf_puts(b, "; the access may still be running and the ");
      pg_buf_puts(b, verb);
      pg_buf_puts(b, " went ahead unprevented\n");
      break;
    case PG_ACTION_WAIT_TIMED_OUT:
      pg_buf_puts(b, "  enforce: waited ");
      pg_buf_duration(b, r->waited_ns);
      pg_buf_puts(b, " (max_wait_ms) and the GPU work had not finished; the ");
      pg_buf_puts(b, verb);
      pg_buf_puts(b, " went ahead\n");
      break;
  }
}

void pg_report_format_text(pg_buf_t *b, const pg_report_view_t *v) {
  const pg_report_t *r = v->r;
  size_t start = b->len;
  pg_buf_puts(b, "==");
  pg_buf_u64(b, (uint64_t)v->pid);
  pg_buf_puts(b, "==pinguard: ERROR: ");
  pg_buf_puts(b, pg_report_kind_name(r->kind));
  pg_buf_puts(b, " on ");
  pg_buf_hex(b, r->addr);
  pg_buf_puts(b, " (");
  if (r->region.size) {
    pg_buf_size(b, r->region.size);
    pg_buf_puts(b, " pinned, offset ");
    pg_buf_hex(b, r->addr - r->region.base);
  } else {
    pg_buf_puts(b, "no known pinned region");
  }
  if (r->len) {
    pg_buf_puts(b, ", ");
    pg_buf_u64(b, r->len);
    pg_buf_puts(b, r->len == 1 ? " byte" : " bytes");
  }
  pg_buf_puts(b, ")\n");

  pg_buf_puts(b, "  ");
  pg_buf_puts(b, r->access_what ? r->access_what : "access");
  if (r->access_stack) {
    pg_buf_puts(b, " (");
    put_thread(b, r->access_stack->tid);
    pg_buf_putc(b, ')');
  }
  pg_buf_puts(b, ":\n");
  put_text_stack(b, v->access);

  unsigned shown = r->n_gpu < PG_REPORT_MAX_GPU ? r->n_gpu : PG_REPORT_MAX_GPU;
  for (unsigned i = 0; i < shown && r->gpu; i++) put_gpu_text(b, &r->gpu[i], v->gpu[i]);
  if (r->n_gpu > shown) {
    pg_buf_puts(b, "  ... and ");
    pg_buf_u64(b, r->n_gpu - shown);
    pg_buf_puts(b, " more in-flight GPU accesses\n");
  }

  if (r->region.size) {
    pg_buf_puts(b, "  buffer ");
    pg_buf_hex(b, r->region.base);
    pg_buf_puts(b, " (");
    pg_buf_size(b, r->region.size);
    pg_buf_puts(b, ") pinned by ");
    pg_buf_puts(b, pg_pin_how_call(r->region.how, r->region.by_driver));
    if (r->region.stack) {
      pg_buf_puts(b, " (");
      put_thread(b, r->region.stack->tid);
      pg_buf_putc(b, ')');
    }
    pg_buf_puts(b, ":\n");
    put_text_stack(b, v->region);
  }
  put_action_text(b, r);
  if (v->test) {
    pg_buf_puts(b, "  test: ");
    pg_buf_puts(b, v->test);
    pg_buf_putc(b, '\n');
  }

  char summary[PG_SUMMARY_MAX + 1];
  pg_report_summary(v, summary, sizeof summary);
  pg_buf_puts(b, summary);
  pg_buf_putc(b, '\n');

  if (b->overflow) { /* keep the head, and say that the rest is missing */
    static const char cut[] = "\n[report truncated]\n";
    size_t keep = b->cap - sizeof cut;
    if (keep < start) keep = start;
    b->len = keep;
    b->p[keep] = '\0';
    b->overflow = false;
    pg_buf_puts(b, cut);
    b->overflow = true;
  }
}

/* ---- json ---------------------------------------------------------------------------------- */
static void json_key(pg_buf_t *b, const char *k) {
  pg_buf_json_str(b, k);
  pg_buf_putc(b, ':');
}

/* A key after an earlier member of the same object. */
static void json_next_key(pg_buf_t *b, const char *k) {
  pg_buf_putc(b, ',');
  json_key(b, k);
}

static void json_hex(pg_buf_t *b, uint64_t v) {
  pg_buf_putc(b, '"');
  pg_buf_hex(b, v);
  pg_buf_putc(b, '"');
}

static void json_stack(pg_buf_t *b, const pg_symstack_t *s, bool with_frames) {
  pg_buf_putc(b, '[');
  for (unsigned i = 0; with_frames && s && s->present && i < s->depth; i++) {
    const pg_frame_t *f = &s->f[i];
    if (i) pg_buf_putc(b, ',');
    pg_buf_putc(b, '{');
    json_key(b, "pc");
    json_hex(b, (uintptr_t)f->pc);
    json_next_key(b, "module");
    pg_buf_json_str(b, f->module);
    json_next_key(b, "offset");
    json_hex(b, f->module_offset);
    json_next_key(b, "function");
    pg_buf_json_str(b, f->function);
    json_next_key(b, "file");
    pg_buf_json_str(b, f->file);
    json_next_key(b, "line");
    pg_buf_u64(b, f->line);
    pg_buf_putc(b, '}');
  }
  pg_buf_putc(b, ']');
}

/* The Python frames beside a stack: "python_stack":[{"file","line","function"},...]. */
static void json_pystack(pg_buf_t *b, const pg_symstack_t *s, bool with_frames) {
  json_next_key(b, "python_stack");
  pg_buf_putc(b, '[');
  for (unsigned i = 0; with_frames && s && s->present && i < s->py_depth; i++) {
    if (i) pg_buf_putc(b, ',');
    pg_buf_putc(b, '{');
    json_key(b, "file");
    pg_buf_json_str(b, s->py[i].file);
    json_next_key(b, "line");
    pg_buf_u64(b, s->py[i].line);
    json_next_key(b, "function");
    pg_buf_json_str(b, s->py[i].function);
    pg_buf_putc(b, '}');
  }
  pg_buf_putc(b, ']');
}

static void json_body(pg_buf_t *b, const pg_report_view_t *v, bool frames) {
  const pg_report_t *r = v->r;
  pg_buf_putc(b, '{');
  json_key(b, "type");
  pg_buf_json_str(b, "report");
  json_next_key(b, "pid");
  pg_buf_u64(b, (uint64_t)v->pid);
  json_next_key(b, "id");
  pg_buf_u64(b, v->id);
  json_next_key(b, "kind");
  pg_buf_json_str(b, pg_report_kind_name(r->kind));
  json_next_key(b, "addr");
  json_hex(b, r->addr);
  json_next_key(b, "len");
  pg_buf_u64(b, r->len);

  json_next_key(b, "region");
  if (r->region.size) {
    pg_buf_putc(b, '{');
    json_key(b, "base");
    json_hex(b, r->region.base);
    json_next_key(b, "size");
    pg_buf_u64(b, r->region.size);
    json_next_key(b, "offset");
    pg_buf_u64(b, r->addr - r->region.base);
    json_next_key(b, "pinned_by");
    pg_buf_json_str(b, pg_pin_how_call(r->region.how, r->region.by_driver));
    json_next_key(b, "thread");
    pg_buf_u64(b, r->region.stack ? r->region.stack->tid : 0);
    json_next_key(b, "stack");
    json_stack(b, v->region, frames);
    json_pystack(b, v->region, frames);
    pg_buf_putc(b, '}');
  } else {
    pg_buf_puts(b, "null");
  }

  json_next_key(b, "access");
  pg_buf_putc(b, '{');
  json_key(b, "what");
  pg_buf_json_str(b, r->access_what ? r->access_what : "access");
  json_next_key(b, "thread");
  pg_buf_u64(b, r->access_stack ? r->access_stack->tid : 0);
  json_next_key(b, "stack");
  json_stack(b, v->access, frames);
  json_pystack(b, v->access, frames);
  pg_buf_putc(b, '}');

  json_next_key(b, "gpu");
  pg_buf_putc(b, '[');
  unsigned shown = r->n_gpu < PG_REPORT_MAX_GPU ? r->n_gpu : PG_REPORT_MAX_GPU;
  for (unsigned i = 0; i < shown && r->gpu; i++) {
    const pg_gpu_access_t *g = &r->gpu[i];
    if (i) pg_buf_putc(b, ',');
    pg_buf_putc(b, '{');
    json_key(b, "what");
    pg_buf_json_str(b, g->what ? g->what : "");
    json_next_key(b, "kernel");
    pg_buf_puts(b, g->is_kernel ? "true" : "false");
    json_next_key(b, "direction");
    pg_buf_json_str(b, pg_dir_name(g->dir));
    json_next_key(b, "addr");
    json_hex(b, g->addr);
    json_next_key(b, "len");
    pg_buf_u64(b, g->len);
    json_next_key(b, "stream");
    json_hex(b, (uintptr_t)g->stream);
    json_next_key(b, "device");
    pg_buf_u64(b, (uint64_t)(g->device > 0 ? g->device : 0));
    json_next_key(b, "age_ms");
    pg_buf_ms_number(b, g->age_ns);
    json_next_key(b, "completed");
    pg_buf_puts(b, g->completed ? "true" : "false");
    json_next_key(b, "completed_ago_ms");
    pg_buf_ms_number(b, g->completed_age_ns);
    json_next_key(b, "thread");
    pg_buf_u64(b, g->stack ? g->stack->tid : 0);
    json_next_key(b, "stack");
    json_stack(b, v->gpu[i], frames);
    json_pystack(b, v->gpu[i], frames);
    pg_buf_putc(b, '}');
  }
  pg_buf_putc(b, ']');
  json_next_key(b, "gpu_total");
  pg_buf_u64(b, r->n_gpu);

  json_next_key(b, "action");
  pg_buf_json_str(b, r->action == PG_ACTION_WAITED               ? "waited"
                     : r->action == PG_ACTION_NOT_WAITED_CAPTURE ? "not-waited-capturing"
                     : r->action == PG_ACTION_NOT_WAITED_HOSTFN  ? "not-waited-host-function"
                     : r->action == PG_ACTION_COMPLETED          ? "completed"
                     : r->action == PG_ACTION_WAIT_FAILED        ? "wait-failed"
                     : r->action == PG_ACTION_WAIT_TIMED_OUT     ? "wait-timed-out"
                                                                 : "none");
  json_next_key(b, "waited_ms");
  pg_buf_ms_number(b, r->waited_ns);

  if (v->test) { /* pytest's node id: the " (call)" phase is left out */
    const char *phase = strstr(v->test, " (");
    size_t n = phase ? (size_t)(phase - v->test) : strlen(v->test);
    char id[PG_REPORT_TEST_MAX];
    if (n >= sizeof id) n = sizeof id - 1;
    memcpy(id, v->test, n);
    id[n] = '\0';
    json_next_key(b, "test");
    pg_buf_json_str(b, id);
  }
  char summary[PG_SUMMARY_MAX + 1];
  pg_report_summary(v, summary, sizeof summary);
  json_next_key(b, "summary");
  pg_buf_json_str(b, summary);
  if (!frames) {
    json_next_key(b, "truncated");
    pg_buf_puts(b, "true");
  }
  pg_buf_puts(b, "}\n");
}

void pg_report_format_json(pg_buf_t *b, const pg_report_view_t *v) {
  size_t start = b->len;
  json_body(b, v, true);
  if (!b->overflow) return;
  b->len = start;
  b->p[start] = '\0';
  b->overflow = false;
  json_body(b, v, false);
}
