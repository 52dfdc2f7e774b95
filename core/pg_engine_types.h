/* pg_engine_types.h: the descriptions the shim hands the engine (pg_engine.h): an asynchronous
 * operation and its host spans, an unpinning in two halves, an annotation, a fault. No CUDA
 * types beyond handles cross this line. */
#ifndef PG_ENGINE_TYPES_H
#define PG_ENGINE_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "pg_kinds.h"   /* pg_dir_t, pg_pin_how_t */
#include "pg_stack.h"   /* pg_stack_t, pg_stack_site_t, and the inline capture of a call site */
#include "pg_tracker.h" /* pg_lookup_t, pg_region_t, pg_shape_t, pg_hostfn_pos_t, pg_devops_t */

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
   * shapes[k]'s bytes. Ops with shapes go through pg_on_shaped_op_end. */
  uint8_t nshapes;
  size_t nspans;
  pg_span_t spans[PG_OP_MAX_SPANS];
  pg_stack_t stack;   /* the enqueuing call site: captured from `site` by pg_on_op_begin
                         once a span is known to be pinned (an op that touches no pinned memory
                         captures nothing), or filled by the caller when site.ret is NULL */
  pg_stack_site_t site;
  /* Filled by pg_on_op_begin: the region lookups of the first nlk spans, reused by every
   * stage of the op (the tracker checks they are still current). */
  size_t nlk;
  pg_lookup_t lk[PG_OP_LOOKUPS];
  pg_shape_t shapes[PG_OP_SHAPES];
} pg_op_t;

/* ---- pinning ----------------------------------------------------------------------------- */
/* What a region's flags say besides the API's own (pg_on_pin's flags; pg_on_register_begin finds
 * the mapping's). */
/* The memory is a MAP_SHARED mapping (pg_on_register_begin says so). */
#define PG_REGION_FLAG_SHARED 0x80000000u
/* The region's mapping lies within the region's whole pages: the bytes its partial first and last
 * pages hold besides the region belong to no other object (the header and tail of a large
 * malloc block, which glibc maps on its own), so those pages may be guarded too. */
#define PG_REGION_FLAG_OWNS_EDGES 0x40000000u
/* Pinned through the driver API (cuMemHostAlloc, cuMemAllocHost, cuMemHostRegister): reports
 * name those calls. */
#define PG_REGION_FLAG_DRIVER 0x20000000u
/* Decided at registration (pg_guard_decide.h): this memory is never guarded (private memory on a
 * kernel whose protection round trip copies pages, hugetlb memory). */
#define PG_REGION_FLAG_NO_GUARD 0x10000000u

/* An unpinning (cudaFreeHost, cudaHostUnregister and their driver twins) comes in two halves
 * around the real call (pg_on_unpin_begin, pg_on_unpin_end): what the first left for the second. */
typedef struct pg_unpin {
  bool had_region; /* removed before the call: put back should it fail */
  /* The call cannot succeed on this region (cudaFreeHost of registered memory, an unregister of
   * allocated memory: the runtime refuses both): the region was kept, with its in-flight
   * accesses and guard pages, and goes only should the call succeed all the same. */
  bool kept;
  pg_region_t region;
  pg_stack_t stack;
} pg_unpin_t;

/* An annotation of include/pinguard.h (pg_on_annotation). */
typedef enum pg_annotation { PG_ANN_RELEASE, PG_ANN_COMMIT, PG_ANN_WAIT } pg_annotation_t;

/* ---- a fault, as the signal handler saw it (pg_on_fault) ------------------------------------ */
typedef enum pg_fault_kind {
  PG_FAULT_ACCESS, /* SIGSEGV or SIGBUS */
  PG_FAULT_TRAP,   /* SIGTRAP */
} pg_fault_kind_t;

typedef struct pg_fault {
  pg_fault_kind_t kind;
  bool hardware;         /* raised by the CPU (si_code > 0), not sent by kill or raise */
  bool access_error;     /* a SIGSEGV on a mapped page its protection denied (SEGV_ACCERR) */
  bool trace;            /* a trap: the trap flag's, after one instruction (TRAP_TRACE) */
  bool is_write;         /* the page-fault error code's write bit */
  bool inside_pinguard;  /* the thread was in pinguard's own work (pg_shim_enter) */
  bool can_step;         /* the handler single-steps (SIGTRAP is handled too) */
  uintptr_t addr;        /* si_addr */
  void *pc, *fp, *sp;    /* the faulting instruction, its frame pointer and stack pointer */
  void *context;         /* the ucontext_t: a safe load's fault is resumed at its failure label */
} pg_fault_t;

/* What the handler does next. */
typedef enum pg_fault_action {
  PG_FAULT_CHAIN, /* not pinguard's: to the application's disposition */
  PG_FAULT_RETRY, /* pinguard's and settled: return, and the instruction runs again (a trap:
                     the steps are over, clear the trap flag) */
  PG_FAULT_STEP,  /* return with the trap flag set: the instruction runs once with its page
                     open, and the trap after it (PG_FAULT_TRAP) closes the page again */
} pg_fault_action_t;

#endif /* PG_ENGINE_TYPES_H */
