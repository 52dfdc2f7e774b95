/* pg_shim.h: what the shim's files share with each other (not with tracker/ or policy/):
 * initialization state, warnings, and the small helpers interceptors use to describe a call
 * (the op-building ones are in pg_op.h). */
#ifndef PG_SHIM_H
#define PG_SHIM_H

#include <stdbool.h>
#include <cuda_runtime_api.h>

#include "pg_decide.h"
#include "pg_stack.h"

/* One line on stderr, prefixed "pinguard: WARNING: ". Safe before options are parsed. */
void pg_shim_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Resolves every required hook; false if one is missing (pinguard then stays inert). */
bool pg_resolve_required(void);

/* Warns once per loaded object that carries a statically linked CUDA runtime, whose calls
 * pinguard cannot see. Checks only objects loaded since its last call; no CUDA call. */
void pg_shim_check_static_runtimes(void);

/* Installs the guard-page fault handler (once), keeping the application's handler to chain to. */
void pg_signal_install(bool single_steps); /* single_steps: SIGTRAP too (guard_shared_edges) */

/* Stream 0 means the per-thread default stream in a _ptsz call, the legacy one otherwise. */
static inline cudaStream_t pg_stream_of(cudaStream_t s, bool ptsz) {
  return (ptsz && s == 0) ? cudaStreamPerThread : s;
}

/* Captures the interceptor's caller stack (the application's call site is frame 0). */
#define PG_CAPTURE(st) pg_stack_capture((st), 0, PG_STACK_MAX)

#endif /* PG_SHIM_H */
