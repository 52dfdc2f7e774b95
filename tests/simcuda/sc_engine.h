/* sc_engine.h: the engine's operations as the driver (driver/sd_*.c, in the same library,
 * libcuda.so.1) implements its cu* entry points on them. Each returns the runtime error code of
 * what it did (the driver turns it into a CUresult) and records failures as the calling thread's
 * last error through sc_ret; the driver keeps that record away from its callers (SD_CALL). Stream
 * handles follow the runtime's rules (0 is the legacy stream, or the per-thread stream when ptsz
 * is set), which are also the driver's. */
#ifndef SC_ENGINE_H
#define SC_ENGINE_H

#include "sc_internal.h"

/* sc_core.c */
cudaError_t sc_last_error_get(void);
void sc_last_error_set(cudaError_t err);
cudaError_t sc_rt_enter(const char *name);
void sc_ctx_bind(int device); /* -1: no current context */
int sc_ctx_bound_device(void); /* -1 when unbound */

/* sc_copy.c; kind is checked, and cudaMemcpyDefault always passes */
cudaError_t sc_memcpy_1d(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                         cudaStream_t h, bool ptsz, bool sync_api);
cudaError_t sc_memcpy_2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t height, enum cudaMemcpyKind kind, cudaStream_t h, bool ptsz,
                         bool sync_api);
cudaError_t sc_memcpy_3d(const struct cudaMemcpy3DParms *p, cudaStream_t h, bool ptsz,
                         bool sync_api);
cudaError_t sc_memset(void *dst, int value, size_t count, cudaStream_t h, bool ptsz, bool sync_api);

/* sc_kernel.c */
cudaError_t sc_launch(const void *func, dim3 grid, dim3 block, void **args, size_t smem,
                      cudaStream_t h, bool ptsz);
cudaKernel_t sc_handle_of(const void *func);
const void *sc_func_of(cudaKernel_t k);
bool sc_kernel_registered(const void *func);
cudaError_t sc_kernel_param_info(const void *func, size_t index, size_t *offset, size_t *size);
const void *sc_kernel_by_name(const char *name);

/* sc_stream_api.c, sc_stream.c */
cudaError_t sc_stream_create(cudaStream_t *pStream, unsigned flags, int priority);
cudaError_t sc_stream_destroy(cudaStream_t stream);
cudaError_t sc_stream_sync(cudaStream_t h, bool ptsz);
cudaError_t sc_stream_query(cudaStream_t h, bool ptsz);
cudaError_t sc_stream_get_flags(cudaStream_t h, unsigned int *flags, bool ptsz);
cudaError_t sc_stream_get_device(cudaStream_t h, int *device, bool ptsz);
cudaError_t sc_wait_event(cudaStream_t h, cudaEvent_t event, unsigned flags, bool ptsz);
cudaError_t sc_host_func(cudaStream_t h, cudaHostFn_t fn, void *data, bool ptsz);
/* cudaStreamAddCallback (flags must be 0; not capturable, as in CUDA). */
cudaError_t sc_stream_add_callback(cudaStream_t h, cudaStreamCallback_t fn, void *data,
                                  unsigned flags, bool ptsz);
cudaError_t sc_device_synchronize(void);

/* sc_event.c */
cudaError_t sc_event_create(cudaEvent_t *event, unsigned flags);
cudaError_t sc_event_destroy(cudaEvent_t event);
cudaError_t sc_event_record(cudaEvent_t event, cudaStream_t stream, unsigned flags, bool ptsz);
cudaError_t sc_event_query(cudaEvent_t event);
cudaError_t sc_event_sync(cudaEvent_t event);
cudaError_t sc_event_elapsed(float *ms, cudaEvent_t start, cudaEvent_t end);

/* sc_pinned.c, sc_arena.c */
cudaError_t sc_host_alloc(void **pHost, size_t size, unsigned int flags);
cudaError_t sc_free_host(void *ptr);
cudaError_t sc_host_register(void *ptr, size_t size, unsigned int flags);
cudaError_t sc_host_unregister(void *ptr);
cudaError_t sc_host_get_device_pointer(void **pDevice, void *pHost, unsigned int flags);
cudaError_t sc_pointer_attributes(struct cudaPointerAttributes *attributes, const void *ptr);
cudaError_t sc_malloc(void **devPtr, size_t size, int device);
cudaError_t sc_free(void *devPtr);

/* sc_capture.c */
cudaError_t sc_begin(cudaStream_t h, enum cudaStreamCaptureMode mode, bool ptsz);
cudaError_t sc_end(cudaStream_t h, cudaGraph_t *pGraph, bool ptsz);
cudaError_t sc_is_capturing(cudaStream_t h, enum cudaStreamCaptureStatus *st, bool ptsz);
cudaError_t sc_graph_instantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph);
cudaError_t sc_graph_launch(cudaGraphExec_t exec, cudaStream_t h, bool ptsz);
cudaError_t sc_graph_destroy(cudaGraph_t graph);
cudaError_t sc_graph_exec_destroy(cudaGraphExec_t graphExec);

#endif /* SC_ENGINE_H */
