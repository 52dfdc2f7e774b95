/* pg_devops_driver.c: pg_devops_t over libcuda: each entry calls the driver function it was
 * given and folds CUresult into pg_dev_result_t. The driver works in the calling thread's
 * current context; every call here is made from inside an application's driver call on the same
 * thread, which has one. */
#include <stdatomic.h>

#include "pg_devops_driver.h"

static pg_cudrv_fns_t drv;

static pg_dev_result_t result_of(CUresult r) {
  return r == CUDA_SUCCESS ? PG_DEV_OK : r == CUDA_ERROR_NOT_READY ? PG_DEV_NOT_READY : PG_DEV_ERROR;
}

static pg_dev_result_t event_create(cudaEvent_t *e) {
  return result_of(drv.event_create((CUevent *)e, CU_EVENT_DISABLE_TIMING));
}
static pg_dev_result_t event_record(cudaEvent_t e, cudaStream_t s) {
  return result_of(drv.event_record((CUevent)e, (CUstream)s));
}
static pg_dev_result_t event_query(cudaEvent_t e) { return result_of(drv.event_query((CUevent)e)); }
static pg_dev_result_t event_synchronize(cudaEvent_t e) {
  return result_of(drv.event_synchronize((CUevent)e));
}
static pg_dev_result_t event_destroy(cudaEvent_t e) {
  return result_of(drv.event_destroy((CUevent)e));
}

static pg_dev_result_t stream_nonblocking(cudaStream_t s, bool *nonblocking) {
  unsigned flags = 0;
  CUresult r = drv.stream_get_flags((CUstream)s, &flags);
  *nonblocking = r == CUDA_SUCCESS && (flags & CU_STREAM_NON_BLOCKING);
  return result_of(r);
}

static pg_dev_result_t capture_status(cudaStream_t s, pg_capture_status_t *out) {
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult r = drv.stream_is_capturing((CUstream)s, &st);
  *out = st == CU_STREAM_CAPTURE_STATUS_ACTIVE        ? PG_CAPTURE_ACTIVE
         : st == CU_STREAM_CAPTURE_STATUS_INVALIDATED ? PG_CAPTURE_INVALIDATED
                                                      : PG_CAPTURE_NONE;
  return result_of(r);
}

/* The driver answers CUDA_ERROR_INVALID_VALUE for memory it does not know: not pinned. */
static pg_dev_result_t pointer_is_pinned_host(const void *p, bool *pinned) {
  unsigned type = 0;
  CUresult r = drv.pointer_get_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                         (CUdeviceptr)(uintptr_t)p);
  *pinned = r == CUDA_SUCCESS && type == CU_MEMORYTYPE_HOST;
  return r == CUDA_ERROR_INVALID_VALUE ? PG_DEV_OK : result_of(r);
}

static pg_dev_result_t current_device(int *device) {
  CUdevice d = 0;
  CUresult r = drv.ctx_get_device(&d);
  *device = (int)d;
  return result_of(r);
}

/* ---- several devices ---------------------------------------------------------------------
 * The runtime's "current device" is the driver's current context. The core switches device only
 * around one call of its own and switches back at once (pg_devops.h), so a switch goes to the
 * device's primary context, and the switch back restores the very context the thread had before
 * the first switch, which need not be a primary one. */
static pg_dev_result_t device_count(int *count) { return result_of(drv.device_get_count(count)); }

/* Device d's primary context, retained once for the life of the process (as the runtime does). */
static CUcontext _Atomic primary[PG_MAX_DEVICES];
static CUcontext primary_ctx(int d) {
  if (d < 0 || d >= PG_MAX_DEVICES) return NULL;
  CUcontext c = atomic_load_explicit(&primary[d], memory_order_acquire);
  CUdevice dev;
  if (c || drv.device_get(&dev, d) != CUDA_SUCCESS || drv.primary_ctx_retain(&c, dev) != CUDA_SUCCESS)
    return c;
  CUcontext none = NULL; /* a racing thread's retain wins; this one's reference stays unused */
  if (!atomic_compare_exchange_strong(&primary[d], &none, c)) c = none;
  return c;
}

static __thread __attribute__((tls_model("initial-exec"))) struct {
  bool saved;    /* a switch is under way: the two fields below hold what to go back to */
  CUcontext ctx; /* the thread's context before the first switch */
  int device;    /* that context's device */
} before;

static pg_dev_result_t set_device(int device) {
  if (before.saved && device == before.device) {
    before.saved = false;
    return result_of(drv.ctx_set_current(before.ctx));
  }
  if (!before.saved) {
    CUdevice cur = 0;
    if (drv.ctx_get_current(&before.ctx) != CUDA_SUCCESS || drv.ctx_get_device(&cur) != CUDA_SUCCESS)
      return PG_DEV_ERROR;
    before.device = (int)cur;
    before.saved = true;
  }
  CUcontext c = primary_ctx(device);
  return c ? result_of(drv.ctx_set_current(c)) : PG_DEV_ERROR;
}

static pg_dev_result_t stream_device(cudaStream_t s, int *device) {
  CUdevice d = 0;
  CUresult r = drv.stream_get_device((CUstream)s, &d);
  *device = (int)d;
  return result_of(r);
}

pg_devops_t pg_devops_driver(const pg_cudrv_fns_t *fns) {
  drv = *fns;
  pg_devops_t ops = {
      .event_create = event_create,
      .event_record = event_record,
      .event_query = event_query,
      .event_synchronize = event_synchronize,
      .event_destroy = event_destroy,
      .stream_nonblocking = drv.stream_get_flags ? stream_nonblocking : NULL,
      .capture_status = drv.stream_is_capturing ? capture_status : NULL,
      .pointer_is_pinned_host = drv.pointer_get_attribute ? pointer_is_pinned_host : NULL,
      .current_device = drv.ctx_get_device ? current_device : NULL,
  };
  if (drv.ctx_get_device && drv.device_get_count && drv.device_get && drv.primary_ctx_retain &&
      drv.ctx_get_current && drv.ctx_set_current) {
    ops.device_count = device_count;
    ops.set_device = set_device;
    ops.stream_device = drv.stream_get_device ? stream_device : NULL;
  }
  return ops;
}
