/* pg_kinds.h: the two small vocabularies shared by tracker/, policy/ and shim/: which way the
 * device touches host memory, and how a host range came to be pinned. Kept apart from
 * pg_tracker.h so the decision layer's header can name them without the tracker's API. */
#ifndef PG_KINDS_H
#define PG_KINDS_H

/* Which way the GPU touches host memory. The WRITE bit decides every "may write" question, so
 * UNKNOWN (a kernel holding a raw host pointer) counts as a write: the kernel may write through it. */
typedef enum pg_dir {
  PG_DIR_READ = 1,    /* the device reads host memory (host->device copy, kernel load) */
  PG_DIR_WRITE = 2,   /* the device writes host memory (device->host copy, kernel store) */
  PG_DIR_UNKNOWN = 3, /* a kernel holding a raw host pointer */
} pg_dir_t;

static inline int pg_dir_may_write(pg_dir_t d) { return (d & PG_DIR_WRITE) != 0; }

/* How a region came to be pinned. */
typedef enum pg_pin_how {
  PG_PIN_HOST_ALLOC,  /* cudaHostAlloc */
  PG_PIN_MALLOC_HOST, /* cudaMallocHost */
  PG_PIN_REGISTER,    /* cudaHostRegister */
  PG_PIN_DISCOVERED,  /* pinned before pinguard saw it; found by cudaPointerGetAttributes */
} pg_pin_how_t;

/* Registration flags that change what pinguard does (the values of cudaHostRegisterIoMemory and
 * cudaHostRegisterReadOnly, and of their driver twins; shim/ checks that at compile time). */
#define PG_REGISTER_IOMEMORY 0x04u  /* a device's I/O memory (a PCIe BAR): never guard-paged */
#define PG_REGISTER_READ_ONLY 0x08u /* the device may only read it: its accesses are reads */

/* Whether a region pinned `how` with `flags` is I/O memory or read-only for the device. */
static inline int pg_pin_is_iomemory(pg_pin_how_t how, unsigned flags) {
  return how == PG_PIN_REGISTER && (flags & PG_REGISTER_IOMEMORY);
}
static inline int pg_pin_is_read_only(pg_pin_how_t how, unsigned flags) {
  return how == PG_PIN_REGISTER && (flags & PG_REGISTER_READ_ONLY);
}

#endif /* PG_KINDS_H */
