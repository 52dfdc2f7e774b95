/* pg_devops_runtime.h: the runtime backend of pg_devops_t: the table filled from libcudart's
 * functions (the real ones the shim resolved, or, in unit tests, the simulated runtime's). */
#ifndef PG_DEVOPS_RUNTIME_H
#define PG_DEVOPS_RUNTIME_H

#include <cuda_runtime_api.h>

#include "pg_engine.h" /* pg_devops_t */

typedef struct pg_cudart_fns {
  cudaError_t (*event_create_with_flags)(cudaEvent_t *e, unsigned flags);
  cudaError_t (*event_record)(cudaEvent_t e, cudaStream_t s);
  cudaError_t (*event_query)(cudaEvent_t e);
  cudaError_t (*event_synchronize)(cudaEvent_t e);
  cudaError_t (*event_destroy)(cudaEvent_t e);
  cudaError_t (*stream_get_flags)(cudaStream_t s, unsigned *flags);                 /* optional */
  cudaError_t (*stream_is_capturing)(cudaStream_t s, enum cudaStreamCaptureStatus *st); /* " */
  cudaError_t (*pointer_get_attributes)(struct cudaPointerAttributes *a, const void *p); /* " */
  cudaError_t (*get_device)(int *device);                                           /* " */
  cudaError_t (*get_device_count)(int *count);                                      /* " */
  cudaError_t (*set_device)(int device);                                            /* " */
  cudaError_t (*stream_get_device)(cudaStream_t s, int *device);                    /* " */
} pg_cudart_fns_t;

/* Keeps *fns (one backend per process) and returns the table that calls them. */
pg_devops_t pg_devops_runtime(const pg_cudart_fns_t *fns);

#endif /* PG_DEVOPS_RUNTIME_H */
