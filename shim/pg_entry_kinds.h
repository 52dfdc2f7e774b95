/* pg_entry_kinds.h: one macro per kind of entry point, PG_KIND_<kind>(lib, name, ptsz, ret, T), which
 * defines the interceptor of one row of pg_entries.inc (pg_entries.c expands every row, and
 * again for its _ptsz twin with ptsz true). A kind macro only wires: it names the row's
 * parameters (their types are the row's T), forwards with PG_FWD_<lib>, and calls the kind's
 * plain C function, the same for both layers (pg_op.h and pg_shim.h say where each lives). What
 * a kind decides belongs in that function, or further in, in core/.
 *
 * The copies and the launches describe their call inline, so that the stack starts at the
 * application's call site and the common path makes no call of pinguard's own
 * (PG_CAPTURE_SITE). Their describing helpers are static inline (pg_op.h). */
#ifndef PG_ENTRY_KINDS_H
#define PG_ENTRY_KINDS_H

#include <stdint.h>

#include "pg_entry_args.h"
#include "pg_op.h"

/* ---- the layers -------------------------------------------------------------------------- */
/* The real function, or the layer's "not found" status when there is none. */
#define PG_FWD_cudart PG_FORWARD
#define PG_FWD_cuda PG_FORWARD_CU
/* What a region pinned through this layer carries (core tells the layers apart in reports). */
#define PG_LAYER_FLAGS_cudart 0u
#define PG_LAYER_FLAGS_cuda PG_REGION_FLAG_DRIVER
/* How a kernel's parameter layout and name are asked (pg_launch.c). */
#define PG_DESCRIBE_cudart pg_rt_describe_kernel
#define PG_DESCRIBE_cuda pg_cu_describe_kernel

/* The interceptor's caller (a return address), for the lookups. */
#define PG_CALLER() __builtin_extract_return_addr(__builtin_return_address(0))

/* ---- pinning (pg_pin.c) -------------------------------------------------------------------- */
#define PG_KIND_host_alloc(lib, name, ptsz, ret, T)                                           \
  PG_INTERCEPT(ret, name, PG_P3(T, p, n, flags)) {                                            \
    ret err_ = PG_FWD_##lib(name, p, n, flags);                                               \
    if (err_ == 0 && p && *p)                                                                 \
      PG_NOTE_PINNED(*p, n, PG_PIN_HOST_ALLOC, flags | PG_LAYER_FLAGS_##lib);                 \
    return err_;                                                                              \
  }
#define PG_KIND_malloc_host(lib, name, ptsz, ret, T)                                          \
  PG_INTERCEPT(ret, name, PG_P2(T, p, n)) {                                                   \
    ret err_ = PG_FWD_##lib(name, p, n);                                                      \
    if (err_ == 0 && p && *p) PG_NOTE_PINNED(*p, n, PG_PIN_MALLOC_HOST, PG_LAYER_FLAGS_##lib); \
    return err_;                                                                              \
  }
/* What the mapping is (shared, file-backed, huge pages) is read before the registration. */
#define PG_KIND_host_register(lib, name, ptsz, ret, T)                                        \
  PG_INTERCEPT(ret, name, PG_P3(T, p, n, flags)) {                                            \
    unsigned kind_ = pg_shim_register_kind(p, n);                                             \
    ret err_ = PG_FWD_##lib(name, p, n, flags);                                               \
    if (err_ == 0) PG_NOTE_PINNED(p, n, PG_PIN_REGISTER, flags | kind_ | PG_LAYER_FLAGS_##lib); \
    return err_;                                                                              \
  }
/* Free and unregister: the in-flight check around the forward (pg_shim_unpin). */
#define PG_UNPIN(lib, name, ret, T, is_free)                                                  \
  static int real_##name(void *p) { return PG_FWD_##lib(name, p); }                          \
  PG_INTERCEPT(ret, name, PG_P1(T, p)) {                                                      \
    if (!p || !pg_shim_start_tracking()) return PG_FWD_##lib(name, p);                        \
    pg_stack_t st_;                                                                           \
    PG_CAPTURE(&st_);                                                                         \
    return (ret)pg_shim_unpin(p, is_free, #name, &st_, real_##name);                          \
  }
#define PG_KIND_free_host(lib, name, ptsz, ret, T) PG_UNPIN(lib, name, ret, T, true)
#define PG_KIND_host_unregister(lib, name, ptsz, ret, T) PG_UNPIN(lib, name, ret, T, false)

/* ---- copies (pg_op.h describes them; batches: pg_copy.c) ----------------------------------- */
/* The body of every copy: untracked calls forward at once; a tracked one is described by
 * `describe` (statements on `op` and the parameters), and the forward runs between core's two
 * decisions (`shaped`: the op may carry pitched sides). */
#define PG_COPY_BODY(lib, name, ptsz, stream, untracked, what, shaped, describe, ...)        \
  do {                                                                                        \
    if (!pg_shim_start_tracking()) return PG_FWD_##lib(name, __VA_ARGS__);                   \
    if (untracked) {                                                                          \
      pg_reentry_t r_ = pg_shim_enter();                                                      \
      __typeof__(PG_FWD_##lib(name, __VA_ARGS__)) e_ = PG_FWD_##lib(name, __VA_ARGS__);       \
      if (e_ == 0) pg_untracked_op((cudaStream_t)(stream), (ptsz)); /* the legacy order */    \
      pg_shim_leave(r_);                                                                      \
      return e_;                                                                              \
    }                                                                                         \
    pg_op_t op;                                                                               \
    pg_op_begin(&op, #name, what, (cudaStream_t)(stream), ptsz);                              \
    describe;                                                                                 \
    PG_CAPTURE_SITE(&op);                                                                     \
    return shaped ? PG_TRACKED_SHAPED_CALL(&op, PG_FWD_##lib(name, __VA_ARGS__))              \
                  : PG_TRACKED_CALL(&op, PG_FWD_##lib(name, __VA_ARGS__));                    \
  } while (0)

/* cudaMemcpyAsync: the direction says which side is host memory. */
#define PG_KIND_copy(lib, name, ptsz, ret, T)                                                 \
  PG_INTERCEPT(ret, name, PG_P5(T, dst, src, n, kind, s)) {                                   \
    PG_COPY_BODY(lib, name, ptsz, s, kind == cudaMemcpyDeviceToDevice, pg_copy_what(kind),    \
                 false, pg_op_add_copy_spans(&op, dst, src, n, kind), dst, src, n, kind, s);  \
  }
/* The driver's: one side is named host memory, or either may be (unified addressing). */
#define PG_KIND_copy_htod(lib, name, ptsz, ret, T)                                            \
  PG_INTERCEPT(ret, name, PG_P4(T, dst, src, n, s)) {                                         \
    PG_COPY_BODY(lib, name, ptsz, s, false, "copy host->device", false,                       \
                 pg_op_add_span(&op, src, n, PG_DIR_READ), dst, src, n, s);                   \
  }
#define PG_KIND_copy_dtoh(lib, name, ptsz, ret, T)                                            \
  PG_INTERCEPT(ret, name, PG_P4(T, dst, src, n, s)) {                                         \
    PG_COPY_BODY(lib, name, ptsz, s, false, "copy device->host", false,                       \
                 pg_op_add_span(&op, dst, n, PG_DIR_WRITE), dst, src, n, s);                  \
  }
#define PG_KIND_copy_unified(lib, name, ptsz, ret, T)                                         \
  PG_INTERCEPT(ret, name, PG_P4(T, dst, src, n, s)) {                                         \
    PG_COPY_BODY(lib, name, ptsz, s, false, "copy (unified addressing)", false,               \
                 pg_op_add_copy_spans(&op, PG_HOST(dst), PG_HOST(src), n, cudaMemcpyDefault), \
                 dst, src, n, s);                                                             \
  }
/* Symbols: the host side is the source (to a symbol) or the destination (from one). */
#define PG_KIND_copy_to_symbol(lib, name, ptsz, ret, T)                                       \
  PG_INTERCEPT(ret, name, PG_P6(T, sym, src, n, off, kind, s)) {                              \
    PG_COPY_BODY(lib, name, ptsz, s, kind == cudaMemcpyDeviceToDevice, "copy host->symbol",   \
                 false, pg_op_add_span(&op, src, n, PG_DIR_READ), sym, src, n, off, kind, s); \
  }
#define PG_KIND_copy_from_symbol(lib, name, ptsz, ret, T)                                     \
  PG_INTERCEPT(ret, name, PG_P6(T, dst, sym, n, off, kind, s)) {                              \
    PG_COPY_BODY(lib, name, ptsz, s, kind == cudaMemcpyDeviceToDevice, "copy symbol->host",   \
                 false, pg_op_add_span(&op, dst, n, PG_DIR_WRITE), dst, sym, n, off, kind, s); \
  }
/* Pitched copies: the host side touches its rows only, not the gaps between them. */
#define PG_KIND_copy_2d(lib, name, ptsz, ret, T)                                              \
  PG_INTERCEPT(ret, name, PG_P6(T, dst, dpitch, src, spitch, width, height), PG_T7 T kind,   \
               PG_T8 T s) {                                                                   \
    PG_COPY_BODY(lib, name, ptsz, s, kind == cudaMemcpyDeviceToDevice, pg_copy_what(kind),    \
                 true,                                                                        \
                 pg_op_add_copy_2d(&op, dst, dpitch, src, spitch, width, height, kind), dst,  \
                 dpitch, src, spitch, width, height, kind, s);                                \
  }
#define PG_KIND_copy_3d(lib, name, ptsz, ret, T)                                              \
  PG_INTERCEPT(ret, name, PG_P2(T, p, s)) {                                                   \
    PG_COPY_BODY(lib, name, ptsz, s, !p || p->kind == cudaMemcpyDeviceToDevice,              \
                 pg_copy_what(p->kind), true, pg_op_add_copy_3d(&op, p), p, s);               \
  }
/* The driver's CUDA_MEMCPY2D and CUDA_MEMCPY3D: host or unified-address sides. */
#define PG_KIND_copy_2d_struct(lib, name, ptsz, ret, T)                                       \
  PG_INTERCEPT(ret, name, PG_P2(T, p, s)) {                                                   \
    PG_COPY_BODY(lib, name, ptsz, s, !PG_CU_COPY_HAS_HOST(p), PG_CU_COPY_WHAT(p), true,       \
                 pg_op_add_cu_copy_2d(&op, p), p, s);                                         \
  }
#define PG_KIND_copy_3d_struct(lib, name, ptsz, ret, T)                                       \
  PG_INTERCEPT(ret, name, PG_P2(T, p, s)) {                                                   \
    PG_COPY_BODY(lib, name, ptsz, s, !PG_CU_COPY_HAS_HOST(p), PG_CU_COPY_WHAT(p), true,       \
                 pg_op_add_cu_copy_3d(&op, p), p, s);                                         \
  }

/* Batches (pg_shim_batch, pg_copy.c). The runtime's entry point is defined in the 12.8 shape,
 * nine arguments, under an assembler label (the header declares 13.0's eight): a 13.0 caller's
 * stream arrives where 12.8 has failIdx, and pg_shim_runtime_batch reads the arguments in the
 * ABI the runtime has. It must never write the 9th argument's slot, which a 13.0 caller did not
 * pass: pg_shim_runtime_batch takes copies. */
#define PG_KIND_batch_runtime(lib, name, ptsz, ret, T)                                        \
  PG_EXPORT ret pg_entry_##name(void *const *dsts, const void *const *srcs,            \
                                const size_t *sizes, size_t count,                            \
                                struct cudaMemcpyAttributes *attrs, size_t *attrs_idxs,       \
                                size_t num_attrs, size_t *fail_idx, cudaStream_t s)           \
      __asm__(#name);                                                                         \
  PG_WRAPPER(name, pg_entry_##name);                                                          \
  ret pg_entry_##name(void *const *dsts, const void *const *srcs, const size_t *sizes,        \
                      size_t count, struct cudaMemcpyAttributes *attrs, size_t *attrs_idxs,   \
                      size_t num_attrs, size_t *fail_idx, cudaStream_t s) {                   \
    pg_stack_t st_;                                                                           \
    PG_CAPTURE(&st_);                                                                         \
    return (ret)pg_shim_runtime_batch(PG_HOOK_ID_##name, #name, ptsz, dsts,                   \
                                      srcs, sizes, count, attrs, attrs_idxs, num_attrs,       \
                                      fail_idx, s, &st_);                                     \
  }
#define PG_KIND_batch_fail_idx(lib, name, ptsz, ret, T)                                       \
  PG_INTERCEPT(ret, name, PG_P6(T, dsts, srcs, sizes, count, attrs, attrs_idxs),              \
               PG_T7 T num_attrs, PG_T8 T fail_idx, PG_T9 T s) {                              \
    pg_batch_t b_ = {PG_HOOK_ID_##name, true, (void *const *)dsts, (const void *const *)srcs, \
                     sizes, count, attrs, attrs_idxs, num_attrs, fail_idx, (cudaStream_t)s};  \
    pg_stack_t st_;                                                                           \
    PG_CAPTURE(&st_);                                                                         \
    return (ret)pg_shim_batch(&b_, #name, ptsz, &st_, PG_MISSING_##lib);                      \
  }
#define PG_KIND_batch(lib, name, ptsz, ret, T)                                                \
  PG_INTERCEPT(ret, name, PG_P6(T, dsts, srcs, sizes, count, attrs, attrs_idxs),              \
               PG_T7 T num_attrs, PG_T8 T s) {                                                \
    pg_batch_t b_ = {PG_HOOK_ID_##name, false, (void *const *)dsts,                           \
                     (const void *const *)srcs, sizes, count, attrs, attrs_idxs, num_attrs,   \
                     NULL, (cudaStream_t)s};                                                  \
    pg_stack_t st_;                                                                           \
    PG_CAPTURE(&st_);                                                                         \
    return (ret)pg_shim_batch(&b_, #name, ptsz, &st_, PG_MISSING_##lib);                      \
  }
/* The status a layer answers for a function the process lacks. */
#define PG_MISSING_cudart cudaErrorSharedObjectSymbolNotFound
#define PG_MISSING_cuda CUDA_ERROR_NOT_FOUND

/* ---- kernel launches (pg_launch.c) ---------------------------------------------------------- */
/* PG_LAUNCH_BODY (pg_shim.h) with the row's forward: `fwd_<name>` makes the real call from a
 * context the kind's struct holds, built only for a launch that may touch pinned memory.
 * func_of(func) is the function whose parameter layout the launch scans. */
#define PG_LAUNCH_KIND(lib, name, ptsz, ret, T, func_of)                                      \
  typedef struct { PG_M6(T, func, grid, block, args, shmem, s); } ctx_##name;                 \
  static int fwd_##name(void *c) {                                                            \
    ctx_##name *a = c;                                                                        \
    return PG_FWD_##lib(name, a->func, a->grid, a->block, a->args, a->shmem, a->s);           \
  }                                                                                           \
  PG_INTERCEPT(ret, name, PG_P6(T, func, grid, block, args, shmem, s)) {                      \
    PG_LAUNCH_BODY(ret, false, #name, ptsz, func_of(func), PG_DESCRIBE_##lib, args, s,        \
                   PG_FWD_##lib(name, func, grid, block, args, shmem, s), fwd_##name,         \
                   ctx_##name, {func, grid, block, args, shmem, s});                          \
  }
#define PG_FUNC_ITSELF(func) (func)
#define PG_KIND_launch(lib, name, ptsz, ret, T) \
  PG_LAUNCH_KIND(lib, name, ptsz, ret, T, PG_FUNC_ITSELF)
/* nvcc 13's __cudaLaunchKernel names a cudaKernel_t handle (pg_kparams_func_of_handle). */
#define PG_KIND_launch_handle(lib, name, ptsz, ret, T) \
  PG_LAUNCH_KIND(lib, name, ptsz, ret, T, pg_kparams_func_of_handle)
/* The handles __cudaLaunchKernel names are remembered when they are made. */
#define PG_KIND_get_kernel(lib, name, ptsz, ret, T)                                           \
  PG_INTERCEPT(ret, name, PG_P2(T, kernel, func)) {                                           \
    ret err_ = PG_FWD_##lib(name, kernel, func);                                              \
    if (err_ == 0 && kernel && *kernel) pg_kparams_remember_handle(*kernel, func);            \
    return err_;                                                                              \
  }
/* cudaLaunchKernelExC: the stream lives in the launch config. */
#define PG_KIND_launch_ex(lib, name, ptsz, ret, T)                                            \
  typedef struct { PG_M3(T, config, func, args); } ctx_##name;                                \
  static int fwd_##name(void *c) {                                                            \
    ctx_##name *a = c;                                                                        \
    return PG_FWD_##lib(name, a->config, a->func, a->args);                                   \
  }                                                                                           \
  PG_INTERCEPT(ret, name, PG_P3(T, config, func, args)) {                                     \
    PG_LAUNCH_BODY(ret, !config, #name, ptsz, func, PG_DESCRIBE_##lib, args, config->stream,  \
                   PG_FWD_##lib(name, config, func, args), fwd_##name, ctx_##name,            \
                   {config, func, args});                                                     \
  }
/* The driver's: arguments packed in `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER) are not scanned,
 * their buffer has no layout to read it by. */
#define PG_KIND_launch_cu(lib, name, ptsz, ret, T)                                            \
  typedef struct {                                                                            \
    PG_M11(T, f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);                            \
  } ctx_##name;                                                                               \
  static int fwd_##name(void *c) {                                                            \
    ctx_##name *a = c;                                                                        \
    return PG_FWD_##lib(name, a->f, a->gx, a->gy, a->gz, a->bx, a->by, a->bz, a->shmem, a->s, \
                        a->params, a->extra);                                                 \
  }                                                                                           \
  PG_INTERCEPT(ret, name, PG_P4(T, f, gx, gy, gz), PG_T5 T bx, PG_T6 T by, PG_T7 T bz,        \
               PG_T8 T shmem, PG_T9 T s, PG_T10 T params, PG_T11 T extra) {                   \
    PG_LAUNCH_BODY(ret, false, #name, ptsz, params ? (const void *)f : NULL,                  \
                   PG_DESCRIBE_##lib, params, s,                                              \
                   PG_FWD_##lib(name, f, gx, gy, gz, bx, by, bz, shmem, s, params, extra),    \
                   fwd_##name, ctx_##name,                                                    \
                   {f, gx, gy, gz, bx, by, bz, shmem, s, params, extra});                     \
  }
/* cuLaunchCooperativeKernel: cuLaunchKernel's arguments without `extra`. */
#define PG_KIND_launch_cu_coop(lib, name, ptsz, ret, T)                                       \
  typedef struct { PG_M10(T, f, gx, gy, gz, bx, by, bz, shmem, s, params); } ctx_##name;     \
  static int fwd_##name(void *c) {                                                            \
    ctx_##name *a = c;                                                                        \
    return PG_FWD_##lib(name, a->f, a->gx, a->gy, a->gz, a->bx, a->by, a->bz, a->shmem, a->s, \
                        a->params);                                                           \
  }                                                                                           \
  PG_INTERCEPT(ret, name, PG_P4(T, f, gx, gy, gz), PG_T5 T bx, PG_T6 T by, PG_T7 T bz,        \
               PG_T8 T shmem, PG_T9 T s, PG_T10 T params) {                                   \
    PG_LAUNCH_BODY(ret, false, #name, ptsz, params ? (const void *)f : NULL,                  \
                   PG_DESCRIBE_##lib, params, s,                                              \
                   PG_FWD_##lib(name, f, gx, gy, gz, bx, by, bz, shmem, s, params),           \
                   fwd_##name, ctx_##name, {f, gx, gy, gz, bx, by, bz, shmem, s, params});    \
  }
/* cuLaunchKernelEx: grid, block, shared memory and stream live in the config; its attributes
 * change how the kernel runs, not what memory its parameters reach. */
#define PG_KIND_launch_cu_ex(lib, name, ptsz, ret, T)                                         \
  typedef struct { PG_M4(T, config, f, params, extra); } ctx_##name;                          \
  static int fwd_##name(void *c) {                                                            \
    ctx_##name *a = c;                                                                        \
    return PG_FWD_##lib(name, a->config, a->f, a->params, a->extra);                          \
  }                                                                                           \
  PG_INTERCEPT(ret, name, PG_P4(T, config, f, params, extra)) {                               \
    PG_LAUNCH_BODY(ret, !config, #name, ptsz, params ? (const void *)f : NULL,                \
                   PG_DESCRIBE_##lib, params, config->hStream,                                \
                   PG_FWD_##lib(name, config, f, params, extra), fwd_##name, ctx_##name,      \
                   {config, f, params, extra});                                               \
  }

/* ---- ordering and completion (pg_order.c) --------------------------------------------------- */
/* A stream's synchronization, or a query (whose success means the same). */
#define PG_KIND_stream_sync(lib, name, ptsz, ret, T)                                          \
  static int real_##name(cudaStream_t s) { return PG_FWD_##lib(name, (PG_T1 T)s); }           \
  PG_INTERCEPT(ret, name, PG_P1(T, s)) {                                                      \
    cudaStream_t h_ = (cudaStream_t)s;                                                        \
    return (ret)pg_shim_host_sync(h_, pg_stream_of(h_, ptsz), false, real_##name);            \
  }
/* The current device's (the runtime's) or the current context's (the driver's). */
#define PG_KIND_device_sync(lib, name, ptsz, ret, T)                                          \
  static int real_##name(cudaStream_t unused) {                                               \
    (void)unused;                                                                             \
    return PG_FWD_##lib(name);                                                                \
  }                                                                                           \
  PG_INTERCEPT(ret, name, void) { return (ret)pg_shim_host_sync(0, 0, true, real_##name); }
/* CUDA 13's cuCtxSynchronize_v2 names its context (NULL: the current one). */
#define PG_KIND_ctx_sync(lib, name, ptsz, ret, T)                                             \
  static int real_##name(cudaStream_t ctx) { return PG_FWD_##lib(name, (PG_T1 T)ctx); }      \
  PG_INTERCEPT(ret, name, PG_P1(T, ctx)) { return (ret)pg_shim_ctx_sync(ctx, real_##name); }
/* Destroying a stream with work pending is legal: the work still completes. Core keeps that
 * work's accesses and forgets only the handle, which may be handed out again. */
#define PG_KIND_stream_destroy(lib, name, ptsz, ret, T)                                       \
  PG_INTERCEPT(ret, name, PG_P1(T, s)) {                                                      \
    return PG_AFTER_SUCCESS(PG_FWD_##lib(name, s), pg_on_stream_destroy((cudaStream_t)s));    \
  }
#define PG_KIND_event_record(lib, name, ptsz, ret, T)                                         \
  PG_INTERCEPT(ret, name, PG_P2(T, e, s)) {                                                   \
    return PG_AFTER_SUCCESS(PG_FWD_##lib(name, e, s),                                         \
                            pg_on_event_record((cudaEvent_t)e,                                \
                                               pg_stream_of((cudaStream_t)s, ptsz)));         \
  }
#define PG_KIND_event_record_flags(lib, name, ptsz, ret, T)                                   \
  PG_INTERCEPT(ret, name, PG_P3(T, e, s, flags)) {                                            \
    return PG_AFTER_SUCCESS(PG_FWD_##lib(name, e, s, flags),                                  \
                            pg_on_event_record((cudaEvent_t)e,                                \
                                               pg_stream_of((cudaStream_t)s, ptsz)));         \
  }
/* An event's synchronization, or a query that answered success. */
#define PG_KIND_event_complete(lib, name, ptsz, ret, T)                                       \
  PG_INTERCEPT(ret, name, PG_P1(T, e)) {                                                      \
    return PG_AFTER_SUCCESS(PG_FWD_##lib(name, e), pg_on_event_complete((cudaEvent_t)e));     \
  }
#define PG_KIND_event_destroy(lib, name, ptsz, ret, T)                                        \
  PG_INTERCEPT(ret, name, PG_P1(T, e)) {                                                      \
    return PG_AFTER_SUCCESS(PG_FWD_##lib(name, e), pg_on_event_destroy((cudaEvent_t)e));      \
  }
#define PG_KIND_stream_wait_event(lib, name, ptsz, ret, T)                                    \
  PG_INTERCEPT(ret, name, PG_P3(T, s, e, flags)) {                                            \
    return PG_AFTER_SUCCESS(PG_FWD_##lib(name, s, e, flags),                                  \
                            pg_on_stream_wait_event(pg_stream_of((cudaStream_t)s, ptsz),      \
                                                    (cudaEvent_t)e));                         \
  }
/* Host functions run at a known place in their stream (pg_shim_enqueue_hostfn), which may put
 * its trampoline and record in place of the application's function and argument. */
#define PG_KIND_host_func(lib, name, ptsz, ret, T)                                            \
  static int real_##name(const pg_hostfn_enqueue_t *e) {                                      \
    return PG_FWD_##lib(name, (PG_T1 T)e->stream, (PG_T2 T)e->fn, e->arg);                    \
  }                                                                                           \
  PG_INTERCEPT(ret, name, PG_P3(T, s, fn, user)) {                                            \
    pg_hostfn_enqueue_t e_ = {.real = real_##name, .stream = (cudaStream_t)s,                 \
                              .fn = (cudaHostFn_t)fn, .arg = user};                           \
    return (ret)pg_shim_enqueue_hostfn(&e_, pg_stream_of((cudaStream_t)s, ptsz));             \
  }
/* A stream callback: a host function that also gets the stream and a status. */
#define PG_KIND_stream_callback(lib, name, ptsz, ret, T)                                      \
  static int real_##name(const pg_hostfn_enqueue_t *e) {                                      \
    return PG_FWD_##lib(name, (PG_T1 T)e->stream, (PG_T2 T)(void (*)(void))e->cb, e->arg,     \
                        e->flags);                                                            \
  }                                                                                           \
  PG_INTERCEPT(ret, name, PG_P4(T, s, cb, user, flags)) {                                     \
    pg_hostfn_enqueue_t e_ = {.real = real_##name, .stream = (cudaStream_t)s, .flags = flags, \
                              .cb = (cudaStreamCallback_t)(void (*)(void))cb, .arg = user};   \
    return (ret)pg_shim_enqueue_hostfn(&e_, pg_stream_of((cudaStream_t)s, ptsz));             \
  }

/* ---- capture and graphs (pg_order.c) -------------------------------------------------------- */
/* While a capture is active pinguard never waits; what is enqueued on the capturing stream is
 * kept with the capture, to become in flight at each launch of the graph it turns into. */
#define PG_KIND_capture_begin(lib, name, ptsz, ret, T)                                        \
  PG_INTERCEPT(ret, name, PG_P2(T, s, mode)) {                                                \
    return PG_AFTER_SUCCESS(PG_FWD_##lib(name, s, mode),                                      \
                            pg_on_capture_begin(pg_stream_of((cudaStream_t)s, ptsz)));        \
  }
#define PG_KIND_capture_end(lib, name, ptsz, ret, T)                                          \
  PG_INTERCEPT(ret, name, PG_P2(T, s, graph)) {                                               \
    return (ret)pg_shim_capture_ended(pg_stream_of((cudaStream_t)s, ptsz),                    \
                                      PG_FWD_##lib(name, s, graph), (cudaGraph_t *)graph);    \
  }
#define PG_KIND_graph_instantiate(lib, name, ptsz, ret, T)                                    \
  PG_INTERCEPT(ret, name, PG_P3(T, exec, graph, flags)) {                                     \
    return (ret)pg_shim_graph_instantiated(PG_FWD_##lib(name, exec, graph, flags),            \
                                           (cudaGraphExec_t *)exec, (cudaGraph_t)graph);      \
  }
/* On success the ops captured into the graph become in flight on the launch stream, launched
 * from the interceptor's call site. */
#define PG_KIND_graph_launch(lib, name, ptsz, ret, T)                                         \
  PG_INTERCEPT(ret, name, PG_P2(T, exec, s)) {                                                \
    pg_stack_t st_ = {0};                                                                     \
    cudaStream_t h_ = pg_stream_of((cudaStream_t)s, ptsz);                                    \
    if (pg_shim_start_tracking()) {                                                           \
      PG_CAPTURE(&st_);                                                                       \
      pg_shim_graph_launch_check((cudaGraphExec_t)exec, h_, #name, &st_);                     \
    }                                                                                         \
    return PG_AFTER_SUCCESS(PG_FWD_##lib(name, exec, s),                                      \
                            pg_on_graph_launch_end((cudaGraphExec_t)exec, h_, &st_));         \
  }
#define PG_KIND_graph_exec_destroy(lib, name, ptsz, ret, T)                                   \
  PG_INTERCEPT(ret, name, PG_P1(T, exec)) {                                                   \
    return PG_AFTER_SUCCESS(PG_FWD_##lib(name, exec),                                         \
                            pg_on_graph_exec_destroy((cudaGraphExec_t)exec));                 \
  }
/* Forwarded only: core asks the real function itself when it must know. */
#define PG_KIND_observe(lib, name, ptsz, ret, T)                                              \
  PG_INTERCEPT(ret, name, PG_NAMED(T)) { return PG_FWD_##lib(name, PG_NAMES(T)); }

/* ---- the driver's entry points handed out by name (pg_lookup.c) ----------------------------- */
/* The second parameter of every lookup is where the address goes: pinguard's wrapper replaces
 * the real function it names (pg_lookup_answer). */
#define PG_KIND_entry_lookup(lib, name, ptsz, ret, T)                                         \
  PG_INTERCEPT(ret, name, PG_NAMED(T)) {                                                      \
    ret r_ = PG_FWD_##lib(name, PG_NAMES(T));                                                 \
    if (r_ == 0 && a2) *a2 = pg_lookup_answer(*a2, PG_CALLER());                              \
    return r_;                                                                                \
  }

/* ---- stream memory operations (pg_memops.c) ------------------------------------------------- */
/* Flag protocols: the pages of every word they name are never guarded, from before the
 * operation is queued; a write to a pinned host word orders the CPU that sees it after the
 * work its stream did before. */
#define PG_KIND_write_value(lib, name, ptsz, ret, T)                                          \
  PG_INTERCEPT(ret, name, PG_P4(T, s, addr, value, flags)) {                                  \
    pg_shim_never_guard(addr, sizeof value);                                                  \
    ret r_ = PG_FWD_##lib(name, s, addr, value, flags);                                       \
    if (r_ == 0) pg_shim_flag_written((cudaStream_t)s, ptsz, addr, value, sizeof value);      \
    return r_;                                                                                \
  }
#define PG_KIND_wait_value(lib, name, ptsz, ret, T)                                           \
  PG_INTERCEPT(ret, name, PG_P4(T, s, addr, value, flags)) {                                  \
    pg_shim_never_guard(addr, sizeof value);                                                  \
    return PG_FWD_##lib(name, s, addr, value, flags);                                         \
  }
#define PG_KIND_batch_memop(lib, name, ptsz, ret, T)                                          \
  PG_INTERCEPT(ret, name, PG_P4(T, s, count, ops, flags)) {                                   \
    pg_shim_never_guard_batch(count, ops);                                                    \
    ret r_ = PG_FWD_##lib(name, s, count, ops, flags);                                        \
    if (r_ == 0) pg_shim_batch_written((cudaStream_t)s, ptsz, count, ops);                    \
    return r_;                                                                                \
  }

#endif /* PG_ENTRY_KINDS_H */
