/* pg_devops.h: the GPU operations pinguard itself performs, as one table of function pointers.
 * The API layer in use fills it: the runtime backend (shim/pg_devops_runtime.c), or the driver
 * backend (shim/pg_devops_driver.c) in a process without a runtime pinguard interposes. Nothing
 * below the shim names a CUDA function; results are API-neutral. Handles keep the runtime's
 * types, which are the driver's (cudaStream_t is CUstream, cudaEvent_t is CUevent). */
#ifndef PG_DEVOPS_H
#define PG_DEVOPS_H

#include <stdbool.h>
#include <cuda_runtime_api.h>

/* Devices with ordinals at or beyond this one are not tracked (their default streams resolve to
 * no state, as when out of stream ids), and no backend switches to them. */
#define PG_MAX_DEVICES 64

typedef enum pg_dev_result {
  PG_DEV_OK = 0,
  PG_DEV_NOT_READY, /* a query: the work is still in flight */
  PG_DEV_ERROR,
} pg_dev_result_t;

typedef enum pg_capture_status {
  PG_CAPTURE_NONE = 0,
  PG_CAPTURE_ACTIVE,
  PG_CAPTURE_INVALIDATED,
} pg_capture_status_t;

typedef struct pg_devops {
  /* Required: completion events (created with timing disabled). */
  pg_dev_result_t (*event_create)(cudaEvent_t *e);
  pg_dev_result_t (*event_record)(cudaEvent_t e, cudaStream_t s);
  pg_dev_result_t (*event_query)(cudaEvent_t e);
  pg_dev_result_t (*event_synchronize)(cudaEvent_t e);
  pg_dev_result_t (*event_destroy)(cudaEvent_t e);
  /* Optional (NULL: the answer below is assumed). */
  pg_dev_result_t (*stream_nonblocking)(cudaStream_t s, bool *nonblocking); /* blocking */
  pg_dev_result_t (*capture_status)(cudaStream_t s, pg_capture_status_t *st); /* none */
  /* Whether p is pinned host memory the runtime knows (discovery of memory pinned unseen). */
  pg_dev_result_t (*pointer_is_pinned_host)(const void *p, bool *pinned); /* no */
  pg_dev_result_t (*current_device)(int *device); /* 0 */
  /* Several devices (all optional: without device_count there is one device, 0). The calling
   * thread's current device is the application's: whoever calls set_device puts the previous one
   * back before returning to it. */
  pg_dev_result_t (*device_count)(int *count);                  /* 1 */
  pg_dev_result_t (*set_device)(int device);                    /* (never switched) */
  pg_dev_result_t (*stream_device)(cudaStream_t s, int *device); /* the current device */
} pg_devops_t;

#endif /* PG_DEVOPS_H */
