/* pg_decide.h: the audit/enforce decisions, between the shim's interceptors and the tracker.
 * The shim describes each CUDA call in these terms and calls one function before and one after
 * forwarding it; this layer asks the tracker what is in flight, then waits (enforce) or reports
 * (audit) through the policy's report machinery. No CUDA types beyond handles cross this line. */
#ifndef PG_DECIDE_H
#define PG_DECIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "pg_kinds.h" /* pg_dir_t, pg_pin_how_t */
#include "pg_tracker.h"
#include "pg_stack.h"

/* When a copy reads its source: a batch copy's srcAccessOrder (cudaMemcpySrcAccessOrder, the
 * driver's CU_MEMCPY_SRC_ACCESS_ORDER_*). Every other access is in stream order. */
typedef enum pg_src_order {
  PG_SRC_STREAM = 0, /* in stream order */
  PG_SRC_AT_CALL,    /* during the call (DuringApiCall): a host read then, never in flight after */
  PG_SRC_EARLY,      /* any time from the call until the copy completes (Any): earlier work on
                        its own stream does not order it */
} pg_src_order_t;

/* One host operand of an asynchronous GPU operation. */
typedef struct pg_span {
  const void *p;
  size_t n;
  pg_dir_t dir;
  pg_src_order_t order; /* a source (PG_DIR_READ) only; PG_SRC_STREAM otherwise */
} pg_span_t;

#define PG_OP_MAX_SPANS 64
#define PG_OP_LOOKUPS 2 /* spans whose region lookup is kept (a copy has one or two) */
#define PG_OP_SHAPES 2  /* pitched sides (a 2D or 3D copy has one or two) */

/* An asynchronous GPU operation that may touch pinned host memory. */
typedef struct pg_op {
  const char *api;    /* the intercepted entry point, e.g. "cudaMemcpyAsync_ptsz" */
  const char *what;   /* e.g. "copy device->host", or the kernel's name */
  const void *func;   /* kernel function, NULL for copies */
  cudaStream_t stream;  /* already resolved: stream 0 of a _ptsz call is cudaStreamPerThread */
  bool only_tracked;  /* kernel scans: consider known regions only, never ask the runtime */
  /* Pitched sides (pg_op_add_pitched): the span whose p and n are shapes[k]'s hull touches only
   * shapes[k]'s bytes. Ops with shapes go through pg_decide_after_shaped_op. */
  uint8_t nshapes;
  size_t nspans;
  pg_span_t spans[PG_OP_MAX_SPANS];
  pg_stack_t stack;   /* the enqueuing call site: captured from `site` by pg_decide_before_op
                         once a span is known to be pinned (an op that touches no pinned memory
                         captures nothing), or filled by the caller when site.ret is NULL */
  pg_stack_site_t site;
  /* Filled by pg_decide_before_op: the region lookups of the first nlk spans, reused by every
   * stage of the op (the tracker checks they are still current). */
  size_t nlk;
  pg_lookup_t lk[PG_OP_LOOKUPS];
  pg_shape_t shapes[PG_OP_SHAPES];
} pg_op_t;

/* ---- lifecycle --------------------------------------------------------------------------- */
/* Called once, lazily, by the first call that would be tracked (never from a constructor), with
 * the GPU operations of the API layer in use (pg_devops.h; the tracker shares the table).
 * False: pinguard stays inert for the life of the process. */
bool pg_decide_start(const pg_devops_t *ops);
void pg_decide_atfork_prepare(void);
void pg_decide_atfork_parent(void);
void pg_decide_atfork_child(void);

/* ---- pinning ------------------------------------------------------------------------------ */
/* Before a real cudaHostRegister: what the memory's mapping says about it (PG_REGION_FLAG_*), to
 * pass with its flags to pg_decide_pinned. Asked before the call, since a runtime may remap the
 * pages it registers. */
unsigned pg_decide_register_flags(const void *p, size_t n);
void pg_decide_pinned(void *p, size_t n, pg_pin_how_t how, unsigned flags, const pg_stack_t *st);
/* Unpinning (cudaFreeHost / cudaHostUnregister) comes in two halves around the real call. The
 * first waits (enforce) or reports (audit) for every in-flight access to the region that starts
 * at p, then ends the region's bookkeeping *before* the real call: once the runtime has let the
 * memory go, another thread may be handed the same address and pin it, and no late step may then
 * touch the new region. The second puts the region back if the real call failed. */
typedef struct pg_unpin {
  bool had_region; /* removed before the call: put back should it fail */
  /* The call cannot succeed on this region (cudaFreeHost of registered memory, an unregister of
   * allocated memory: the runtime refuses both): the region was kept, with its in-flight
   * accesses and guard pages, and goes only should the call succeed all the same. */
  bool kept;
  pg_region_t region;
  pg_stack_t stack;
} pg_unpin_t;
void pg_decide_unpin_begin(void *p, bool is_free, const pg_stack_t *st, pg_unpin_t *saved);
/* The same, naming the call the program made (`api`: "cuMemFreeHost", ...). */
void pg_decide_unpin_begin_as(void *p, bool is_free, const char *api, const pg_stack_t *st,
                              pg_unpin_t *saved);
void pg_decide_unpin_end(const pg_unpin_t *saved, bool succeeded);

/* ---- asynchronous operations --------------------------------------------------------------- */
/* Before the real call: keeps only the spans that lie in pinned memory (when one is kept and
 * op->site is set, op->stack is captured from it: the site's frame must still be live), then
 * checks them against
 * unordered in-flight accesses on other streams (device-access-conflict). A source read out of
 * stream order (PG_SRC_AT_CALL, PG_SRC_EARLY) is checked against every device write of it still
 * in flight, its own stream's included. In enforce mode the new operation is ordered after the
 * conflicting ones; during capture it reports instead. */
void pg_decide_before_op(pg_op_t *op);
/* After the real call succeeded: the op's spans become in-flight accesses (but a PG_SRC_AT_CALL
 * source, which the call has read already). */
void pg_decide_after_op(pg_op_t *op);
/* The same for an op with pitched sides (op->nshapes > 0): each shaped span is begun as its
 * shape (the common op's path, which pg_decide_after_op takes, knows only plain spans). */
void pg_decide_after_shaped_op(pg_op_t *op);
/* Untracked work enqueued on the legacy default stream still orders the blocking streams. */
void pg_decide_untracked_op(cudaStream_t s);

/* Capture: operations enqueued on a capturing stream are recorded, not run. pg_decide_after_op
 * keeps them with the capture; these move them to the graph, then to its executable form, and
 * make them in-flight on every launch (a captured copy runs at each cudaGraphLaunch). */
void pg_decide_capture_begun(cudaStream_t s);
void pg_decide_capture_ended(cudaStream_t s, cudaGraph_t graph);  /* graph NULL: capture failed */
void pg_decide_graph_instantiated(cudaGraphExec_t exec, cudaGraph_t graph);
/* Before a launch of exec on s (`api`, the launch call): each captured access is checked
 * against the accesses in flight now, as an op enqueued on s would be (enforce waits for the
 * conflicting ones; during a capture it reports). A captured op is not checked when captured. */
void pg_decide_graph_launch_check(cudaGraphExec_t exec, cudaStream_t s, const char *api,
                                  const pg_stack_t *st);
void pg_decide_graph_launched(cudaGraphExec_t exec, cudaStream_t s, const pg_stack_t *st);
void pg_decide_graph_exec_destroyed(cudaGraphExec_t exec);

/* ---- ordering: called after the real call succeeded --------------------------------------- */
void pg_decide_event_recorded(cudaEvent_t e, cudaStream_t s);
void pg_decide_stream_waited_event(cudaStream_t s, cudaEvent_t e);
void pg_decide_event_completed(cudaEvent_t e);     /* synchronize, or query == success */
void pg_decide_event_destroyed(cudaEvent_t e);
/* Host syncs come in two halves: other threads may enqueue while the real call blocks, so what
 * the host will know is fixed before it (prepare) and learned after it (done). */
void pg_decide_sync_prepare(cudaStream_t s);         /* cudaStreamSynchronize / cudaStreamQuery */
void pg_decide_sync_prepare_device(void);            /* cudaDeviceSynchronize */
void pg_decide_sync_done(bool succeeded);
void pg_decide_stream_destroyed(cudaStream_t s);

/* A stream memory operation (cuStreamWriteValue*, a batch's write) wrote value (width 4 or 8) to
 * addr after the work enqueued on s: where addr is pinned host memory, the CPU that sees the value
 * is ordered after that work. After the real call succeeded. */
void pg_decide_flag_written(cudaStream_t s, const void *addr, uint64_t value, unsigned width);

/* ---- CPU accesses (guard pages and system calls) ----------------------------------------- */
/* The CPU stack of a fault, from the handler: pc and frame pointer of the faulting instruction.
 * Unwinds through the signal frame, so it must run on the stack the handler was entered on. */
void pg_decide_fault_stack(pg_stack_t *out, void *pc, void *fp);
/* A fault on a guarded page, from the SIGSEGV handler (pc and fp: the faulting instruction's):
 * settles the conflicting accesses (enforce waits, audit reports; the CPU stack is unwound only
 * once a conflict is found, through pg_decide_fault_stack, so this must run on the stack the
 * handler was entered on) and leaves the page so that the instruction can run when retried. */
/* True when the instruction is to be single-stepped with the page open (the caller can step:
 * can_step): it touched a byte no access in flight touches (a gap between a pitched copy's rows)
 * on a page that stays guarded for the bytes they do touch. Without can_step those copies stop
 * guarding their pages instead (they stay tracked), as after a report. */
bool pg_decide_cpu_fault(uintptr_t addr, bool is_write, void *pc, void *fp, bool can_step);
/* Before a system call that reads (kernel_writes=false: write, send) or fills (true: read,
 * recv) [p, p+n): settles conflicts, then makes sure the kernel will not meet a guarded page
 * (it would return EFAULT rather than fault). `call` names it in reports, e.g. "write(2)". */
void pg_decide_syscall(const void *p, size_t n, bool kernel_writes, const char *call,
                       const pg_stack_t *st);

/* ---- host functions ---------------------------------------------------------------------- */
/* Whether s is capturing: a host function captured into a graph runs at every launch, so the
 * shim leaves it as it is. */
bool pg_decide_capturing(cudaStream_t s);
/* Enqueues a host function (enqueue(arg) is the real call) at a known position in its stream. */
cudaError_t pg_decide_hostfn_enqueue(cudaStream_t s, cudaError_t (*enqueue)(void *), void *arg,
                                     pg_hostfn_pos_t *pos);
/* Around the host function, on the thread that runs it. Its CPU accesses are checked against
 * the GPU work its stream does not order after it; nothing waits inside it (CUDA forbids it, and
 * the work it would wait for may be queued behind it); pages it was let through are protected
 * again when it returns, before the stream's later work can start. */
void pg_decide_hostfn_enter(const pg_hostfn_pos_t *pos);
void pg_decide_hostfn_leave(void);

/* ---- annotations (include/pinguard.h) ------------------------------------------------------ */
typedef enum pg_annotation { PG_ANN_RELEASE, PG_ANN_COMMIT, PG_ANN_WAIT } pg_annotation_t;
int pg_decide_annotation(pg_annotation_t what, const void *p, size_t n, const pg_stack_t *st);

#endif /* PG_DECIDE_H */
