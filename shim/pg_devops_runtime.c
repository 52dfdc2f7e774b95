/* pg_devops_runtime.c: pg_devops_t over libcudart: each entry calls the runtime function it
 * was given and folds cudaError_t into pg_dev_result_t. */
#include "pg_devops_runtime.h"

static pg_cudart_fns_t rt;

static pg_dev_result_t result_of(cudaError_t err) {
  return err == cudaSuccess ? PG_DEV_OK : err == cudaErrorNotReady ? PG_DEV_NOT_READY : PG_DEV_ERROR;
}

static pg_dev_result_t event_create(cudaEvent_t *e) {
  return result_of(rt.event_create_with_flags(e, cudaEventDisableTiming));
}
static pg_dev_result_t event_record(cudaEvent_t e, cudaStream_t s) {
  return result_of(rt.event_record(e, s));
}
static pg_dev_result_t event_query(cudaEvent_t e) { return result_of(rt.event_query(e)); }
static pg_dev_result_t event_synchronize(cudaEvent_t e) {
  return result_of(rt.event_synchronize(e));
}
static pg_dev_result_t event_destroy(cudaEvent_t e) { return result_of(rt.event_destroy(e)); }

static pg_dev_result_t stream_nonblocking(cudaStream_t s, bool *nonblocking) {
  unsigned flags = 0;
  cudaError_t err = rt.stream_get_flags(s, &flags);
  *nonblocking = err == cudaSuccess && (flags & cudaStreamNonBlocking);
  return result_of(err);
}

static pg_dev_result_t capture_status(cudaStream_t s, pg_capture_status_t *out) {
  enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  cudaError_t err = rt.stream_is_capturing(s, &st);
  *out = st == cudaStreamCaptureStatusActive        ? PG_CAPTURE_ACTIVE
         : st == cudaStreamCaptureStatusInvalidated ? PG_CAPTURE_INVALIDATED
                                                    : PG_CAPTURE_NONE;
  return result_of(err);
}

static pg_dev_result_t pointer_is_pinned_host(const void *p, bool *pinned) {
  struct cudaPointerAttributes a = {0};
  cudaError_t err = rt.pointer_get_attributes(&a, p);
  *pinned = err == cudaSuccess && a.type == cudaMemoryTypeHost;
  return result_of(err);
}

static pg_dev_result_t current_device(int *device) { return result_of(rt.get_device(device)); }
static pg_dev_result_t device_count(int *count) { return result_of(rt.get_device_count(count)); }
static pg_dev_result_t set_device(int device) { return result_of(rt.set_device(device)); }
static pg_dev_result_t stream_device(cudaStream_t s, int *device) {
  return result_of(rt.stream_get_device(s, device));
}

pg_devops_t pg_devops_runtime(const pg_cudart_fns_t *fns) {
  rt = *fns;
  return (pg_devops_t){
      .event_create = rt.event_create_with_flags ? event_create : NULL,
      .event_record = rt.event_record ? event_record : NULL,
      .event_query = rt.event_query ? event_query : NULL,
      .event_synchronize = rt.event_synchronize ? event_synchronize : NULL,
      .event_destroy = rt.event_destroy ? event_destroy : NULL,
      .stream_nonblocking = rt.stream_get_flags ? stream_nonblocking : NULL,
      .capture_status = rt.stream_is_capturing ? capture_status : NULL,
      .pointer_is_pinned_host = rt.pointer_get_attributes ? pointer_is_pinned_host : NULL,
      .current_device = rt.get_device ? current_device : NULL,
      .device_count = rt.get_device_count ? device_count : NULL,
      .set_device = rt.set_device ? set_device : NULL,
      .stream_device = rt.stream_get_device ? stream_device : NULL,
  };
}
