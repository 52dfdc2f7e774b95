/* pg_devops_driver.h: the driver backend of pg_devops_t, for a process that reaches CUDA only
 * through the driver API (a static runtime, cuda-python, CuPy): the table filled from libcuda's
 * functions. With a dynamic runtime in the process, the runtime backend serves instead. */
#ifndef PG_DEVOPS_DRIVER_H
#define PG_DEVOPS_DRIVER_H

#include <cuda.h>

#include "pg_engine.h" /* pg_devops_t */

typedef struct pg_cudrv_fns {
  CUresult (*event_create)(CUevent *e, unsigned flags);
  CUresult (*event_record)(CUevent e, CUstream s);
  CUresult (*event_query)(CUevent e);
  CUresult (*event_synchronize)(CUevent e);
  CUresult (*event_destroy)(CUevent e);
  CUresult (*stream_get_flags)(CUstream s, unsigned *flags);                   /* optional */
  CUresult (*stream_is_capturing)(CUstream s, CUstreamCaptureStatus *st);      /* optional */
  CUresult (*pointer_get_attribute)(void *data, CUpointer_attribute a, CUdeviceptr p); /* " */
  CUresult (*ctx_get_device)(CUdevice *device);                                /* optional */
  /* Several devices (optional; all of the first five, or one device). */
  CUresult (*device_get_count)(int *count);
  CUresult (*device_get)(CUdevice *device, int ordinal);
  CUresult (*primary_ctx_retain)(CUcontext *ctx, CUdevice device);
  CUresult (*ctx_get_current)(CUcontext *ctx);
  CUresult (*ctx_set_current)(CUcontext ctx);
  CUresult (*stream_get_device)(CUstream s, CUdevice *device); /* CUDA 12.8; optional */
} pg_cudrv_fns_t;

/* Keeps *fns (one backend per process) and returns the table that calls them. */
pg_devops_t pg_devops_driver(const pg_cudrv_fns_t *fns);

#endif /* PG_DEVOPS_DRIVER_H */
