/* pg_devops_driver.c: pg_devops_t over libcuda: each entry calls the driver function it was
 * given and folds CUresult into pg_dev_result_t. The driver works in the calling thread's
 * current context; every call here is made from inside an application's driver call on the same
 * thread, which has one. */
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

pg_devops_t pg_devops_driver(const pg_cudrv_fns_t *fns) {
  drv = *fns;
  return (pg_devops_t){
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
}
