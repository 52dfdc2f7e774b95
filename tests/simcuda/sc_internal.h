/* sc_internal.h: what the engine's source files (the sc_*.c files, linked into libcuda.so.1) share:
 * configuration, error and fault-injection plumbing, memory classification, the DMA translator and
 * the stream/op machinery.
 * Never installed: programs see only the CUDA headers and simcuda_kernel.h. */
#ifndef SC_INTERNAL_H
#define SC_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "simcuda_kernel.h"
#include "simcuda_ptsz.h"

/* Everything the library exports is marked; the rest stays hidden (-fvisibility=hidden), and
 * the version script puts the exported names under the node libcudart.so.13. */
#define SC_API __attribute__((visibility("default")))

/* The engine's small per-thread state, in the thread's static TLS block although the runtime
 * dlopens libcuda.so.1 (initial-exec; a few bytes of the loader's surplus). Dynamic TLS is
 * malloc'd by the loader and freed when a new thread reuses an exited thread's stack, and
 * ThreadSanitizer sees every earlier write to it race with that free. Keep it small: a larger
 * array belongs in a heap block under a thread key (sc_stream.c). */
#define SC_STATIC_TLS _Thread_local __attribute__((tls_model("initial-exec")))

/* ---- configuration and lifecycle (sc_core.c) ------------------------------------------- */
typedef struct sc_config {
  uint64_t latency_ns;  /* SIMCUDA_LATENCY_US: earliest start of an op after its enqueue */
  double gbps;          /* SIMCUDA_GBPS: copy bandwidth, 0 = unlimited */
  size_t device_bytes;  /* SIMCUDA_DEVICE_MB: size of the device arena */
  int runtime_version;  /* SIMCUDA_RUNTIME_VERSION: 13000 or 12080 (batch-copy ABI) */
  uint64_t unpin_return_ns; /* SIMCUDA_UNPIN_RETURN_US: delay between releasing pinned memory
                             * and returning from cudaFreeHost/cudaHostUnregister */
  int devices;          /* SIMCUDA_DEVICES: 1..SC_MAX_DEVICES; 0 after a bad value (every call
                         * then fails with cudaErrorNoDevice) */
  bool io_uring;        /* SIMCUDA_IO_URING: 0 makes registered private memory take the memfd
                         * fallback, as where io_uring is unavailable */
} sc_config;

#define SC_MAX_DEVICES 16

extern sc_config sc_cfg;
extern atomic_bool sc_forked_child; /* set in a child forked after the runtime started */

void sc_init(void);
uint64_t sc_now_ns(void);
void sc_sleep_until_ns(uint64_t deadline_ns);

/* The calling thread's current device (cudaSetDevice; 0 until it calls it). */
int sc_device_current(void);
bool sc_device_valid(int device);
/* An H200's attribute `attr` (a CUDA 13.0 number, 1 to 147) of `device` into *value: 0, or -1
 * for a number CUDA does not define (sc_devattr.c). */
int sc_device_attribute(int attr, int device, int *value);
/* An H200's properties, with simcuda's name, PCI bus, UUID byte and arena size for `device`. */
void sc_device_properties(struct cudaDeviceProp *prop, int device);

/* Records err as the calling thread's last error (cudaGetLastError) and returns it. */
cudaError_t sc_ret(cudaError_t err);

/* Fault injection: true when this is the Nth call of `name` named in SIMCUDA_FAIL; *err is the
 * error to return. Counts every call, so it must run before any validation or side effect. */
bool sc_fault(const char *name, cudaError_t *err);

/* Opening of every API entry point: lazy init, the forked-child rule, fault injection. */
#define SC_ENTER(name)                                                   \
  do {                                                                   \
    sc_init();                                                           \
    if (atomic_load_explicit(&sc_forked_child, memory_order_relaxed))    \
      return sc_ret(cudaErrorInitializationError);                       \
    if (sc_cfg.devices == 0) return sc_ret(cudaErrorNoDevice);           \
    cudaError_t sc_fault_err_;                                           \
    if (sc_fault((name), &sc_fault_err_)) return sc_ret(sc_fault_err_);  \
  } while (0)

/* ---- memory (sc_arena.c, sc_pinned.c) -------------------------------------------------- */
typedef enum { SC_MEM_PAGEABLE, SC_MEM_PINNED, SC_MEM_DEVICE } sc_mem_kind;

void sc_arena_init(void);
bool sc_arena_contains(const void *p);
/* The device whose arena holds p (allocated or not), or -1. */
int sc_arena_device(const void *p);
/* For an allocated device pointer (interior too): its allocation's base and size. */
bool sc_arena_lookup(const void *p, void **base, size_t *size);
sc_mem_kind sc_classify(const void *p);
/* Registers `handle` as a launchable kernel whose launches run `body` (simcuda_register_kernel
 * registers a function as its own body). sc_kernel.c. */
cudaError_t sc_register_kernel_as(const void *handle, simcuda_kernel_fn body, const char *name,
                                  size_t nparams, const size_t *param_sizes);
/* Whether a copy may touch [p, p + n): device memory within one allocation, pinned memory within
 * its range (or ranges that touch it), pageable memory mapped to the end, and never past the end
 * of the address space. CUDA refuses the others with cudaErrorInvalidValue before queueing
 * anything. */
bool sc_range_ok(const void *p, size_t n);

/* Device-side accesses: every byte of host memory goes through the pinned ranges' aliases,
 * split piecewise at range boundaries. Never faults on CPU protections of pinned pages. */
void sc_dma_copy(void *dst, const void *src, size_t n);
void sc_dma_set(void *dst, int value, size_t n);
/* The device's load and store of the aligned 4- or 8-byte (size) word at host address p. */
uint64_t sc_dma_load_word(const void *p, size_t size);
void sc_dma_store_word(void *p, uint64_t value, size_t size);
/* Ends the calling thread's kernel views (simcuda_dma of pinned private memory): what the body
 * changed is written back through the pins. Called when a kernel body returns. */
void sc_dma_views_flush(void);

/* ---- streams and ops (sc_stream.c) ----------------------------------------------------- */
typedef struct sc_stream sc_stream;
typedef struct sc_event sc_event;
typedef struct sc_graph sc_graph;

typedef enum {
  SC_OP_COPY,       /* segments copied through the DMA translator */
  SC_OP_MEMSET,
  SC_OP_KERNEL,
  SC_OP_HOSTFN,
  SC_OP_EVENT,      /* event record: completes the event's generation */
  SC_OP_WAIT_EVENT, /* cudaStreamWaitEvent: the event's generation becomes a dependency */
  SC_OP_MARKER,     /* no work; used to wait for "everything before" */
} sc_op_kind;

typedef struct sc_seg {
  void *dst;
  const void *src;
  size_t n;
} sc_seg;

typedef struct sc_dep {
  sc_stream *stream; /* wait until stream->done_seq >= seq (holds a reference) */
  uint64_t seq;
  sc_event *event;   /* or until event->done_gen >= gen (holds a reference) */
  uint64_t gen;
} sc_dep;

typedef struct sc_op {
  struct sc_op *next;
  sc_op_kind kind;
  uint64_t seq;
  uint64_t enq_ns;
  sc_dep *deps;
  size_t ndeps;
  union {
    struct {
      sc_seg *segs;
      size_t nsegs;
      void *staging; /* pageable sources copied at enqueue time, owned by the op */
      size_t staging_len;
    } copy;
    struct {
      void *dst;
      int value;
      size_t n;
    } set;
    struct {
      simcuda_kernel_fn fn;
      simcuda_launch_t launch; /* launch.args points into `block` */
      void *block;             /* one allocation: args pointer array, then the parameter copies */
      size_t block_len;
    } kernel;
    struct {
      cudaHostFn_t fn;
      void *data;
    } host;
    struct {
      sc_event *ev; /* holds a reference */
      uint64_t gen;
    } event;
  } u;
} sc_op;

sc_op *sc_op_new(sc_op_kind kind);
sc_op *sc_op_clone(const sc_op *op); /* deep copy, for graph instantiate/launch */
void sc_op_free(sc_op *op);
bool sc_op_add_dep(sc_op *op, sc_dep dep); /* takes its own references */
void sc_op_drop_deps(sc_op *op);
void sc_op_execute(sc_op *op); /* on the worker: waits for deps, models latency, does the work */

/* Resolves a stream handle: 0 means the legacy stream, or the per-thread stream when ptsz;
 * cudaStreamLegacy and cudaStreamPerThread are always those, all of the current device.
 * NULL + *err for a bad handle. */
sc_stream *sc_stream_get(cudaStream_t h, bool ptsz, cudaError_t *err);
bool sc_stream_is_legacy(const sc_stream *s);
int sc_stream_device(const sc_stream *s); /* the device current when it was created */

/* Queues op on s (ownership passes), or records it when s is capturing. *seq (optional) gets the
 * op's sequence number, 0 when it was captured. */
cudaError_t sc_submit(sc_stream *s, sc_op *op, uint64_t *seq);
/* Whether s has no work left (the legacy stream: nor its device's blocking streams). */
bool sc_stream_idle(sc_stream *s);
/* Blocks until s has completed seq. */
void sc_stream_wait_seq(sc_stream *s, uint64_t seq);
/* Submits op and waits for it: the synchronous API calls. Fails on a capturing stream. */
cudaError_t sc_submit_sync(sc_stream *s, sc_op *op);
/* Waits for all work queued anywhere before the call (no capture checks): the implicit
 * synchronization of cudaFree, cudaFreeHost and cudaHostUnregister. */
void sc_device_sync_all(void);
/* Waits for all work queued before the call on one device's streams. */
void sc_device_sync(int device);

/* Capture state, read and changed under the stream's lock (sc_stream.c). */
enum cudaStreamCaptureStatus sc_capture_status(sc_stream *s);
/* When s is capturing: invalidates the capture and returns the error a sync must fail with. */
cudaError_t sc_capture_break(sc_stream *s);

/* ---- events (sc_event.c) --------------------------------------------------------------- */
void sc_event_ref(sc_event *ev);
void sc_event_unref(sc_event *ev);
uint64_t sc_event_recorded_gen(sc_event *ev);
uint64_t sc_event_next_gen(sc_event *ev); /* called under the recording stream's lock */
void sc_event_set_captured(sc_event *ev, bool captured);
void sc_event_complete(sc_event *ev, uint64_t gen);
void sc_event_wait_gen(sc_event *ev, uint64_t gen);
int sc_event_device(const sc_event *ev); /* the device current when it was created */

/* ---- capture and graphs (sc_capture.c) ------------------------------------------------- */
sc_graph *sc_graph_new(void);
bool sc_graph_append(sc_graph *g, sc_op *op);
void sc_graph_free(sc_graph *g);

/* ---- kernels (sc_kernel.c) ------------------------------------------------------------- */
void sc_kernel_run(sc_op *op);

/* ---- batch copies (sc_copy.c, entered from rt_batch_abi.c) ----------------------------- */
#include "sc_batch.h"

#endif /* SC_INTERNAL_H */
