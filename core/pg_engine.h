/* pg_engine.h: the one door between the shim and the engine (core/, and through it tracker/ and
 * policy/). It names every event pinguard reacts to: an operation before and after its real
 * call, pinning and unpinning, ordering (events, waits, syncs), host functions, captures and
 * graph launches, a fault, a system call, an annotation; and the process's own: options at load,
 * start on the first tracked call, fork, exit. The shim includes this header and nothing else of
 * core/, tracker/ or policy/: an interceptor describes its call in these terms (pg_engine_types.h,
 * with the call-site capture and pitched shapes its ops hold, and pg_kernel_params.h for what a
 * launch touches), tells the engine, and returns exactly what the real function returned.
 *
 * Every pg_on_* below runs inside pinguard (the shim brackets it with pg_shim_enter/leave, so
 * that what the engine does is not tracked itself), after tracking started (pg_engine_start),
 * but for the few that say otherwise. */
#ifndef PG_ENGINE_H
#define PG_ENGINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "pg_engine_types.h"  /* pg_op_t, pg_unpin_t, pg_fault_t, ... */
#include "pg_kernel_params.h" /* pg_kparams_*: a launch's parameter layout and pointer scan */

/* ---- the process: load, start, fork, exit --------------------------------------------------- */
/* From the constructor (no CUDA call): reads the options (defaults < __pinguard_default_options
 * < PINGUARD_OPTIONS). */
void pg_engine_init(void);
/* Whether mode=off: pinguard forwards every call and never starts. */
bool pg_engine_off(void);
/* The verbosity option (0 quiet, 1 notes, 2 and up more). */
int pg_engine_verbosity(void);
/* Whether guard pages are on: the fault handler must then be installed before pg_engine_start
 * (the first page may be protected during it), taking SIGTRAP too when *single_steps. */
bool pg_engine_guards(bool *single_steps);
/* The fault handler is installed, and resumes a safe load's fault before anything else: the
 * engine's safe loads (reading another runtime's data) may now rely on it. */
void pg_engine_fault_handler_installed(void);
/* Called once, lazily, by the first call that would be tracked (never from a constructor), with
 * the GPU operations of the API layer in use (pg_devops.h; the tracker shares the table).
 * False: pinguard stays inert for the life of the process. */
bool pg_engine_start(const pg_devops_t *ops);
/* Around fork: every lock of the engine is taken before it and released after it, in both
 * processes; the child has no GPU work in flight. */
void pg_engine_atfork_prepare(void);
void pg_engine_atfork_parent(void);
void pg_engine_atfork_child(void);
/* From the destructor: prints the summary. Non-negative: the status the process exits with
 * (exitcode=, when errors were reported). */
int pg_engine_finish(void);

/* ---- pinning ------------------------------------------------------------------------------ */
/* Before a real cudaHostRegister: what the memory's mapping says about it (PG_REGION_FLAG_*), to
 * pass with its flags to pg_on_pin. Asked before the call, since a runtime may remap the
 * pages it registers. */
unsigned pg_on_register_begin(const void *p, size_t n);
/* After a successful pinning call (either API layer): the new region, with its call site. */
void pg_on_pin(void *p, size_t n, pg_pin_how_t how, unsigned flags, const pg_stack_t *st);
/* Unpinning (cudaFreeHost / cudaHostUnregister, `api` the call the program made) comes in two
 * halves around the real call. The first waits (enforce) or reports (audit) for every in-flight
 * access to the region that starts at p, then ends the region's bookkeeping *before* the real
 * call: once the runtime has let the memory go, another thread may be handed the same address
 * and pin it, and no late step may then touch the new region. The second puts the region back
 * if the real call failed. */
void pg_on_unpin_begin(void *p, bool is_free, const char *api, const pg_stack_t *st,
                       pg_unpin_t *saved);
void pg_on_unpin_end(const pg_unpin_t *saved, bool succeeded);

/* ---- asynchronous operations --------------------------------------------------------------- */
/* Before the real call: keeps only the spans that lie in pinned memory (when one is kept and
 * op->site is set, op->stack is captured from it: the site's frame must still be live), then
 * checks them against unordered in-flight accesses on other streams (device-access-conflict).
 * A source read out of stream order (PG_SRC_AT_CALL, PG_SRC_EARLY) is checked against every
 * device write of it still in flight, its own stream's included. In enforce mode the new
 * operation is ordered after the conflicting ones; during capture it reports instead. The
 * per-copy path: the real work, no layer in between. */
void pg_on_op_begin(pg_op_t *op);
/* After the real call succeeded: the op's spans become in-flight accesses (but a PG_SRC_AT_CALL
 * source, which the call has read already). */
void pg_on_op_end(pg_op_t *op);
/* The same for an op with pitched sides (op->nshapes > 0): each shaped span is begun as its
 * shape (the common op's path, which pg_on_op_end takes, knows only plain spans). */
void pg_on_shaped_op_end(pg_op_t *op);
/* Untracked work enqueued on s (a kernel none of whose parameters is pinned, a device-to-device
 * copy) still takes its place in the legacy default stream's implicit order: on the legacy
 * stream it comes after the blocking streams' work, on a blocking stream after the legacy
 * stream's. pg_untracked_op is what the shim calls after such a call succeeded: `ptsz` says
 * handle 0 is the per-thread stream. Inline, a load and a branch for any stream but the legacy
 * one until pinguard met some legacy stream (pg_hb_legacy_used, the tracker's). */
void pg_on_untracked_op(cudaStream_t s);
extern _Atomic bool pg_hb_legacy_used;
static inline void pg_untracked_op(cudaStream_t s, bool ptsz) {
  if (ptsz && s == 0) s = cudaStreamPerThread;
  if (s == 0 || s == cudaStreamLegacy ||
      atomic_load_explicit(&pg_hb_legacy_used, memory_order_relaxed))
    pg_on_untracked_op(s);
}
/* A stream memory operation (cuStreamWriteValue*, cuStreamWaitValue*, a batch's) names the n
 * bytes at p as a flag word: before it is queued. Their pages are never guarded (the GPU waits
 * for the CPU there, or the CPU polls). */
void pg_on_flag_word(const void *p, size_t n);
/* A stream memory operation wrote value (width 4 or 8) to addr after the work enqueued on s:
 * where addr is pinned host memory, the CPU that sees the value is ordered after that work.
 * After the real call succeeded. */
void pg_on_flag_write(cudaStream_t s, const void *addr, uint64_t value, unsigned width);

/* ---- capture and graphs ------------------------------------------------------------------- */
/* Operations enqueued on a capturing stream are recorded, not run. pg_on_op_end keeps them with
 * the capture; these move them to the graph, then to its executable form, and make them
 * in-flight on every launch (a captured copy runs at each cudaGraphLaunch). */
void pg_on_capture_begin(cudaStream_t s);
void pg_on_capture_end(cudaStream_t s, cudaGraph_t graph); /* graph NULL: capture failed */
/* Whether s is capturing: a host function captured into a graph runs at every launch, so the
 * shim leaves it as it is. */
bool pg_engine_capturing(cudaStream_t s);
void pg_on_graph_instantiate(cudaGraphExec_t exec, cudaGraph_t graph);
/* Before a launch of exec on s (`api`, the launch call): each captured access is checked
 * against the accesses in flight now, as an op enqueued on s would be (enforce waits for the
 * conflicting ones; during a capture it reports). A captured op is not checked when captured. */
void pg_on_graph_launch_begin(cudaGraphExec_t exec, cudaStream_t s, const char *api,
                              const pg_stack_t *st);
/* After the launch succeeded. */
void pg_on_graph_launch_end(cudaGraphExec_t exec, cudaStream_t s, const pg_stack_t *st);
void pg_on_graph_exec_destroy(cudaGraphExec_t exec);

/* ---- ordering: called after the real call succeeded --------------------------------------- */
void pg_on_event_record(cudaEvent_t e, cudaStream_t s);
void pg_on_stream_wait_event(cudaStream_t s, cudaEvent_t e);
void pg_on_event_complete(cudaEvent_t e); /* synchronize, or query == success */
void pg_on_event_destroy(cudaEvent_t e);
/* Host syncs come in two halves: other threads may enqueue while the real call blocks, so what
 * the host will know is fixed before it (begin) and learned after it (end). */
void pg_on_sync_begin(cudaStream_t s); /* cudaStreamSynchronize / cudaStreamQuery */
void pg_on_device_sync_begin(void);    /* cudaDeviceSynchronize */
void pg_on_sync_end(bool succeeded);
void pg_on_stream_destroy(cudaStream_t s);

/* ---- host functions ---------------------------------------------------------------------- */
/* Enqueues a host function (enqueue(arg) is the real call) at a known position in its stream. */
cudaError_t pg_on_hostfn_enqueue(cudaStream_t s, cudaError_t (*enqueue)(void *), void *arg,
                                 pg_hostfn_pos_t *pos);
/* Around the host function, on the thread that runs it. Its CPU accesses are checked against
 * the GPU work its stream does not order after it; nothing waits inside it (CUDA forbids it, and
 * the work it would wait for may be queued behind it); pages it was let through are protected
 * again when it returns, before the stream's later work can start. */
void pg_on_hostfn_enter(const pg_hostfn_pos_t *pos);
void pg_on_hostfn_leave(void);

/* ---- CPU accesses: a fault on a guarded page, a system call --------------------------------- */
/* A SIGSEGV, SIGBUS or SIGTRAP, from the signal handler, on the stack it was entered on (the
 * CPU stack of a report is unwound from there), whether or not tracking started and whether or
 * not the thread was inside pinguard (f->inside_pinguard). Decides whether the fault is
 * pinguard's (a page it protected; a safe load of its own), settles it (enforce waits for the
 * conflicting GPU accesses, audit reports them, on a stack of pinguard's own), lets the page
 * go or keeps it guarded, and says what the handler does next. Signal-safe: no allocation, and
 * no lock the interrupted thread may hold. */
pg_fault_action_t pg_on_fault(const pg_fault_t *f);
/* Before a system call that reads (kernel_writes=false: write, send) or fills (true: read,
 * recv) [p, p+n): whether it touches pinned memory, in which case the shim captures the call's
 * stack and calls pg_on_syscall; otherwise the buffer only shares a page with a guarded region
 * (if at all), and that page is let through for it. Cheap: one lookup of the region index; it
 * tracks nothing, so the shim asks it outside pg_shim_enter. */
bool pg_on_syscall_begin(const void *p, size_t n, bool kernel_writes);
/* Settles conflicts, then makes sure the kernel will not meet a guarded page (it would return
 * EFAULT rather than fault). `call` names it in reports, e.g. "write(2)". */
void pg_on_syscall(const void *p, size_t n, bool kernel_writes, const char *call,
                   const pg_stack_t *st);

/* ---- annotations (include/pinguard.h) ------------------------------------------------------ */
int pg_on_annotation(pg_annotation_t what, const void *p, size_t n, const pg_stack_t *st);

#endif /* PG_ENGINE_H */
