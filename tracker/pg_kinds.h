/* pg_kinds.h: the two small vocabularies shared by tracker/, policy/ and shim/: which way the
 * device touches host memory, and how a host range came to be pinned. Kept apart from
 * pg_tracker.h so the decision layer's header can name them without the tracker's API. */
#ifndef PG_KINDS_H
#define PG_KINDS_H

/* Which way the GPU touches host memory. The WRITE bit decides every "may write" question, so
 * UNKNOWN (a kernel holding a raw host pointer) counts as a write, as problem.md requires. */
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

#endif /* PG_KINDS_H */
