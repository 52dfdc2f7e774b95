/* sc_stream_api.c: the per-stream operations: create (with flags, with priority), destroy,
 * synchronize, query, wait event and host functions (sc_engine.h: the driver's cuStream* and
 * cuLaunchHostFunc, and so the runtime's), and the runtime entry points that only the engine
 * serves: flags and priority queries and cudaStreamAddCallback, each with its _ptsz variant. The
 * machinery behind them is in sc_stream.c. */
#include <stdlib.h>

#include "sc_stream_impl.h"
#include "sc_engine.h"

cudaError_t sc_stream_create(cudaStream_t *pStream, unsigned flags, int priority) {
  if (!pStream) return sc_ret(cudaErrorInvalidValue);
  if (flags & ~(unsigned)cudaStreamNonBlocking) return sc_ret(cudaErrorInvalidValue);
  int dev = sc_device_current();
  sc_get_legacy(dev); /* the legacy stream exists before any stream it must order against */
  /* Clamp into [greatest, least] = [-5, 0] as CUDA clamps into its range. */
  if (priority > 0) priority = 0;
  if (priority < -5) priority = -5;
  sc_stream *s = sc_stream_new(flags, priority, false, false, dev);
  if (!s) return sc_ret(cudaErrorMemoryAllocation);
  *pStream = (cudaStream_t)s;
  return cudaSuccess;
}

cudaError_t sc_stream_destroy(cudaStream_t stream) {
  cudaError_t err = cudaSuccess;
  if (!stream || stream == cudaStreamLegacy || stream == cudaStreamPerThread)
    return sc_ret(cudaErrorInvalidResourceHandle);
  sc_stream *s = sc_stream_get(stream, false, &err);
  if (!s) return sc_ret(err);
  sc_stream_close(s); /* queued work still completes, as in CUDA */
  return cudaSuccess;
}

cudaError_t sc_stream_get_flags(cudaStream_t h, unsigned int *flags, bool ptsz) {
  cudaError_t err = cudaSuccess;
  sc_stream *s = sc_stream_get(h, ptsz, &err);
  if (!s) return sc_ret(err);
  if (!flags) return sc_ret(cudaErrorInvalidValue);
  *flags = s->flags;
  return cudaSuccess;
}

SC_API cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int *flags) {
  SC_ENTER("cudaStreamGetFlags");
  return sc_stream_get_flags(hStream, flags, false);
}

SC_API cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t hStream, unsigned int *flags) {
  SC_ENTER("cudaStreamGetFlags");
  return sc_stream_get_flags(hStream, flags, true);
}

static cudaError_t sc_stream_get_priority(cudaStream_t h, int *priority, bool ptsz) {
  cudaError_t err = cudaSuccess;
  sc_stream *s = sc_stream_get(h, ptsz, &err);
  if (!s) return sc_ret(err);
  if (!priority) return sc_ret(cudaErrorInvalidValue);
  *priority = s->priority;
  return cudaSuccess;
}

SC_API cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int *priority) {
  SC_ENTER("cudaStreamGetPriority");
  return sc_stream_get_priority(hStream, priority, false);
}

SC_API cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t hStream, int *priority) {
  SC_ENTER("cudaStreamGetPriority");
  return sc_stream_get_priority(hStream, priority, true);
}

cudaError_t sc_stream_get_device(cudaStream_t h, int *device, bool ptsz) {
  cudaError_t err = cudaSuccess;
  sc_stream *s = sc_stream_get(h, ptsz, &err);
  if (!s) return sc_ret(err);
  if (!device) return sc_ret(cudaErrorInvalidValue);
  *device = s->device;
  return cudaSuccess;
}

SC_API cudaError_t cudaStreamGetDevice(cudaStream_t hStream, int *device) {
  SC_ENTER("cudaStreamGetDevice");
  return sc_stream_get_device(hStream, device, false);
}

SC_API cudaError_t cudaStreamGetDevice_ptsz(cudaStream_t hStream, int *device) {
  SC_ENTER("cudaStreamGetDevice");
  return sc_stream_get_device(hStream, device, true);
}

cudaError_t sc_stream_sync(cudaStream_t h, bool ptsz) {
  cudaError_t err = cudaSuccess;
  sc_stream *s = sc_stream_get(h, ptsz, &err);
  if (!s) return sc_ret(err);
  if ((err = sc_capture_break(s)) != cudaSuccess) return sc_ret(err);
  if (s->legacy) {
    sc_op *m = sc_op_new(SC_OP_MARKER);
    if (!m) return sc_ret(cudaErrorMemoryAllocation);
    uint64_t seq;
    if ((err = sc_submit(s, m, &seq)) != cudaSuccess) return sc_ret(err);
    sc_stream_wait_seq(s, seq);
  } else {
    sc_stream_wait_seq(s, atomic_load(&s->enq_seq));
  }
  return cudaSuccess;
}

cudaError_t sc_stream_query(cudaStream_t h, bool ptsz) {
  cudaError_t err = cudaSuccess;
  sc_stream *s = sc_stream_get(h, ptsz, &err);
  if (!s) return sc_ret(err);
  if ((err = sc_capture_break(s)) != cudaSuccess) return sc_ret(err);
  return sc_stream_idle(s) ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t sc_wait_event(cudaStream_t h, cudaEvent_t event, unsigned flags, bool ptsz) {
  cudaError_t err = cudaSuccess;
  sc_stream *s = sc_stream_get(h, ptsz, &err);
  if (!s) return sc_ret(err);
  if (!event) return sc_ret(cudaErrorInvalidResourceHandle);
  if (flags & ~1u) return sc_ret(cudaErrorInvalidValue); /* cudaEventWaitExternal is 1 */
  sc_op *op = sc_op_new(SC_OP_WAIT_EVENT);
  if (!op) return sc_ret(cudaErrorMemoryAllocation);
  op->u.event.ev = (sc_event *)event;
  sc_event_ref(op->u.event.ev);
  return sc_ret(sc_submit(s, op, NULL));
}

cudaError_t sc_host_func(cudaStream_t h, cudaHostFn_t fn, void *data, bool ptsz) {
  cudaError_t err = cudaSuccess;
  sc_stream *s = sc_stream_get(h, ptsz, &err);
  if (!s) return sc_ret(err);
  if (!fn) return sc_ret(cudaErrorInvalidValue);
  sc_op *op = sc_op_new(SC_OP_HOSTFN);
  if (!op) return sc_ret(cudaErrorMemoryAllocation);
  op->u.host.fn = fn;
  op->u.host.data = data;
  return sc_ret(sc_submit(s, op, NULL));
}

/* cudaStreamAddCallback: the legacy form of cudaLaunchHostFunc (the callback also gets the stream
 * and a status, always cudaSuccess here: simulated work does not fail). Not capturable, as in CUDA. */
typedef struct sc_callback {
  cudaStreamCallback_t fn;
  cudaStream_t stream;
  void *data;
} sc_callback;

static void sc_run_callback(void *p) {
  sc_callback *cb = p;
  cb->fn(cb->stream, cudaSuccess, cb->data);
  free(cb);
}

cudaError_t sc_stream_add_callback(cudaStream_t h, cudaStreamCallback_t fn, void *data,
                                  unsigned flags, bool ptsz) {
  cudaError_t err = cudaSuccess;
  sc_stream *s = sc_stream_get(h, ptsz, &err);
  if (!s) return sc_ret(err);
  if (!fn || flags != 0) return sc_ret(cudaErrorInvalidValue);
  if (sc_capture_status(s) != cudaStreamCaptureStatusNone) return sc_ret(sc_capture_break(s));
  sc_callback *cb = malloc(sizeof *cb);
  sc_op *op = sc_op_new(SC_OP_HOSTFN);
  if (!cb || !op) {
    free(cb);
    sc_op_free(op);
    return sc_ret(cudaErrorMemoryAllocation);
  }
  *cb = (sc_callback){.fn = fn, .stream = h, .data = data};
  op->u.host.fn = sc_run_callback;
  op->u.host.data = cb;
  err = sc_submit(s, op, NULL);
  if (err != cudaSuccess) free(cb);
  return sc_ret(err);
}

SC_API cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback,
                                         void *userData, unsigned int flags) {
  SC_ENTER("cudaStreamAddCallback");
  return sc_stream_add_callback(stream, callback, userData, flags, false);
}

SC_API cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback,
                                              void *userData, unsigned int flags) {
  SC_ENTER("cudaStreamAddCallback");
  return sc_stream_add_callback(stream, callback, userData, flags, true);
}
