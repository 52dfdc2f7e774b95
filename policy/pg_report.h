/* pg_report.h: what a violation report carries, filled in by the shim and printed by policy/.
 * Everything is plain data with borrowed pointers (stacks, names), valid for the duration of
 * the pg_policy_report() call; policy copies nothing it does not print at once. */
#ifndef PG_REPORT_H
#define PG_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pg_kinds.h"
#include "pg_stack.h"

/* Violation kinds. Their names (pg_report_kind_name) are stable: suppression files, JSON
 * consumers and the docs use them. Append only. */
#define PG_REPORT_KINDS(X)                                              \
  X(FREE_DURING_DEVICE_ACCESS, "free-during-device-access", "free")     \
  X(UNREGISTER_DURING_DEVICE_ACCESS, "unregister-during-device-access", "unregister") \
  X(CPU_READ_DURING_DEVICE_WRITE, "cpu-read-during-device-write", "read") \
  X(CPU_WRITE_DURING_DEVICE_ACCESS, "cpu-write-during-device-access", "write") \
  X(SYSCALL_READ_DURING_DEVICE_WRITE, "syscall-read-during-device-write", "system call") \
  X(SYSCALL_WRITE_DURING_DEVICE_ACCESS, "syscall-write-during-device-access", "system call") \
  X(DEVICE_ACCESS_CONFLICT, "device-access-conflict", "new GPU access")  \
  X(RELEASE_DURING_DEVICE_ACCESS, "release-during-device-access", "release") \
  X(COMMIT_DURING_DEVICE_WRITE, "commit-during-device-write", "commit") \
  X(WAIT_DURING_CAPTURE, "wait-during-capture", "call")                \
  X(WAIT_TIMEOUT, "wait-timeout", "access")

typedef enum pg_report_kind {
#define PG_KIND_ENUM(id, name, verb) PG_KIND_##id,
  PG_REPORT_KINDS(PG_KIND_ENUM)
#undef PG_KIND_ENUM
  PG_KIND_COUNT
} pg_report_kind_t;

/* "free-during-device-access"; NULL for an out-of-range value. */
const char *pg_report_kind_name(pg_report_kind_t k);
/* The kind whose name is exactly name[0..n), or -1. */
int pg_report_kind_from_name(const char *name, size_t n);
/* What was allowed after an enforce wait: "free", "read", ... */
const char *pg_report_kind_verb(pg_report_kind_t k);

/* "device read", "device write", "device access, direction unknown" (pg_dir_t: pg_kinds.h). */
const char *pg_dir_name(pg_dir_t d);
/* "cudaHostAlloc", "cudaMallocHost", "cudaHostRegister", "discovered (pinned before pinguard)". */
const char *pg_pin_how_name(pg_pin_how_t h);
/* The call the program made: pg_pin_how_name's, or the driver's ("cuMemHostAlloc",
 * "cuMemAllocHost", "cuMemHostRegister") for a region pinned through the driver API. */
const char *pg_pin_how_call(pg_pin_how_t h, bool by_driver);

/* One in-flight GPU access that the violating access conflicts with. */
typedef struct pg_gpu_access {
  const char *what;       /* the tracker's origin text: "copy device->host", or the kernel name */
  int is_kernel;          /* printed as "kernel <what>" */
  pg_dir_t dir;
  uintptr_t addr;         /* host range touched; len 0 means "unknown extent" */
  size_t len;
  const void *stream;
  int device;             /* the stream's device */
  uint64_t age_ns;        /* time since it was enqueued */
  bool completed;         /* it had completed when found: unordered, not running */
  uint64_t completed_age_ns; /* completed: how long before the report pinguard saw it complete */
  const pg_stack_t *stack;  /* launch stack (its tid is the launching thread); may be NULL */
} pg_gpu_access_t;

/* What pinguard did about it. */
typedef enum pg_action {
  PG_ACTION_NONE,            /* audit: reported, then the program continued */
  PG_ACTION_WAITED,          /* enforce: waited waited_ns for the conflicting access(es) */
  PG_ACTION_NOT_WAITED_CAPTURE, /* enforce, but the stream was capturing: no wait possible */
  PG_ACTION_NOT_WAITED_HOSTFN,  /* enforce, but the access ran in a host function: CUDA forbids
                                 * waiting there (and the wait could deadlock its stream) */
  PG_ACTION_COMPLETED,       /* enforce: every conflicting access had completed (nothing ordered
                              * it): no wait was needed, so the violation was prevented */
  PG_ACTION_WAIT_FAILED,     /* enforce waited, but a wait itself failed (the event synchronize
                              * returned an error): the violation was not prevented */
  PG_ACTION_WAIT_TIMED_OUT,     /* enforce waited max_wait_ms, then let the access go */
} pg_action_t;

/* Most in-flight accesses printed per report; the rest are counted ("and N more"). */
#define PG_REPORT_MAX_GPU 4

/* Flags for pg_report_t.flags. */
#define PG_REPORT_FROM_SIGNAL 1u /* printing from a signal handler: no addr2line (file:line from the
                                  * modules' own line tables), no fork, no malloc */

typedef struct pg_report {
  pg_report_kind_t kind;
  uintptr_t addr;            /* the violating access: start and length (0 = unknown) */
  size_t len;
  /* The pinned region containing addr; size 0 means "not known". */
  struct {
    uintptr_t base;
    size_t size;
    pg_pin_how_t how;
    bool by_driver;          /* pinned through the driver API: name its call */
    const pg_stack_t *stack; /* allocation/registration stack; may be NULL */
  } region;
  /* The violating access: who did it and where. */
  const char *access_what;   /* "CPU read", "cudaFreeHost", "write(2)", "pinguard_release" */
  const pg_stack_t *access_stack; /* may be NULL; its tid is the violating thread */
  /* In-flight GPU access(es) it conflicts with. n_gpu may exceed PG_REPORT_MAX_GPU. */
  const pg_gpu_access_t *gpu;
  unsigned n_gpu;
  pg_action_t action;
  uint64_t waited_ns;
  unsigned flags;            /* PG_REPORT_* */
} pg_report_t;

#endif /* PG_REPORT_H */
