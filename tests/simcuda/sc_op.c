/* sc_op.c: the unit of simulated device work: allocation, deep copy (graphs replay copies of
 * captured ops), release, and execution on a stream's worker, including the latency and
 * bandwidth model (SIMCUDA_LATENCY_US per op from its own enqueue time, SIMCUDA_GBPS per copy). */
#include <stdlib.h>
#include <string.h>

#include "sc_stream_impl.h"

sc_op *sc_op_new(sc_op_kind kind) {
  sc_op *op = calloc(1, sizeof *op);
  if (op) op->kind = kind;
  return op;
}

static void *sc_dup(const void *p, size_t n) {
  if (!p) return NULL;
  void *q = malloc(n ? n : 1);
  if (q) memcpy(q, p, n);
  return q;
}

/* Deep copy without dependencies: a clone is a fresh op, its dependencies are computed when it
 * is submitted. */
sc_op *sc_op_clone(const sc_op *op) {
  sc_op *c = sc_op_new(op->kind);
  if (!c) return NULL;
  c->u = op->u;
  switch (op->kind) {
  case SC_OP_COPY: {
    c->u.copy.segs = sc_dup(op->u.copy.segs, op->u.copy.nsegs * sizeof(sc_seg));
    c->u.copy.staging = sc_dup(op->u.copy.staging, op->u.copy.staging_len);
    if (!c->u.copy.segs || (op->u.copy.staging && !c->u.copy.staging)) {
      sc_op_free(c);
      return NULL;
    }
    /* Sources that point into the staging buffer must point into the copy of it. */
    const char *old = op->u.copy.staging;
    for (size_t i = 0; old && i < c->u.copy.nsegs; i++) {
      const char *src = c->u.copy.segs[i].src;
      if (src >= old && src < old + op->u.copy.staging_len)
        c->u.copy.segs[i].src = (char *)c->u.copy.staging + (src - old);
    }
    break;
  }
  case SC_OP_KERNEL: {
    c->u.kernel.block = sc_dup(op->u.kernel.block, op->u.kernel.block_len);
    if (!c->u.kernel.block) {
      sc_op_free(c);
      return NULL;
    }
    c->u.kernel.launch.args = (void **)c->u.kernel.block;
    for (size_t i = 0; i < op->u.kernel.launch.nargs; i++)
      c->u.kernel.launch.args[i] =
          (char *)c->u.kernel.block + ((char *)op->u.kernel.launch.args[i] - (char *)op->u.kernel.block);
    break;
  }
  case SC_OP_EVENT:
  case SC_OP_WAIT_EVENT:
    sc_event_ref(c->u.event.ev);
    c->u.event.gen = 0;
    break;
  default:
    break;
  }
  return c;
}

void sc_op_drop_deps(sc_op *op) {
  for (size_t i = 0; i < op->ndeps; i++) {
    if (op->deps[i].stream) sc_stream_unref(op->deps[i].stream);
    if (op->deps[i].event) sc_event_unref(op->deps[i].event);
  }
  free(op->deps);
  op->deps = NULL;
  op->ndeps = 0;
}

bool sc_op_add_dep(sc_op *op, sc_dep dep) {
  sc_dep *d = realloc(op->deps, (op->ndeps + 1) * sizeof *d);
  if (!d) return false;
  op->deps = d;
  op->deps[op->ndeps++] = dep;
  if (dep.stream) sc_stream_ref(dep.stream);
  if (dep.event) sc_event_ref(dep.event);
  return true;
}

void sc_op_free(sc_op *op) {
  if (!op) return;
  sc_op_drop_deps(op);
  switch (op->kind) {
  case SC_OP_COPY:
    free(op->u.copy.segs);
    free(op->u.copy.staging);
    break;
  case SC_OP_KERNEL:
    free(op->u.kernel.block);
    break;
  case SC_OP_EVENT:
  case SC_OP_WAIT_EVENT:
    if (op->u.event.ev) sc_event_unref(op->u.event.ev);
    break;
  default:
    break;
  }
  free(op);
}

static void sc_op_wait_deps(const sc_op *op) {
  for (size_t i = 0; i < op->ndeps; i++) {
    const sc_dep *d = &op->deps[i];
    if (d->stream) sc_stream_wait_seq(d->stream, d->seq);
    if (d->event) sc_event_wait_gen(d->event, d->gen);
  }
}

void sc_op_execute(sc_op *op) {
  sc_op_wait_deps(op);
  bool work = op->kind == SC_OP_COPY || op->kind == SC_OP_MEMSET || op->kind == SC_OP_KERNEL ||
              op->kind == SC_OP_HOSTFN;
  if (work && sc_cfg.latency_ns) sc_sleep_until_ns(op->enq_ns + sc_cfg.latency_ns);
  switch (op->kind) {
  case SC_OP_COPY: {
    uint64_t start = sc_now_ns();
    size_t bytes = 0;
    for (size_t i = 0; i < op->u.copy.nsegs; i++) {
      const sc_seg *s = &op->u.copy.segs[i];
      sc_dma_copy(s->dst, s->src, s->n);
      bytes += s->n;
    }
    /* GB/s is bytes per nanosecond. */
    if (sc_cfg.gbps > 0) sc_sleep_until_ns(start + (uint64_t)((double)bytes / sc_cfg.gbps));
    break;
  }
  case SC_OP_MEMSET:
    sc_dma_set(op->u.set.dst, op->u.set.value, op->u.set.n);
    break;
  case SC_OP_KERNEL:
    sc_kernel_run(op);
    break;
  case SC_OP_HOSTFN:
    op->u.host.fn(op->u.host.data);
    break;
  case SC_OP_EVENT:
    sc_event_complete(op->u.event.ev, op->u.event.gen);
    break;
  case SC_OP_WAIT_EVENT:
  case SC_OP_MARKER:
    break; /* only their dependencies matter */
  }
}
