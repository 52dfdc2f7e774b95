/* sc_stream_impl.h: the layout of a simulated stream, shared by the stream machinery
 * (sc_stream.c) and stream capture (sc_capture.c) only. */
#ifndef SC_STREAM_IMPL_H
#define SC_STREAM_IMPL_H

#include "sc_internal.h"

#define SC_STREAM_MAGIC 0x5c57ea11u

struct sc_stream {
  _Atomic uint32_t magic; /* cleared by cudaStreamDestroy */
  unsigned flags;         /* cudaStreamNonBlocking or 0 */
  int priority;           /* recorded and reported, not used for scheduling */
  bool legacy;            /* the legacy default stream */
  bool per_thread;        /* a thread's per-thread default stream */
  int device;             /* the device current at creation; never changes */

  pthread_mutex_t mu; /* guards the queue, closing and the capture fields */
  pthread_cond_t work_cv; /* the worker waits for ops */
  pthread_cond_t done_cv; /* synchronizers wait for done_seq */
  sc_op *head, *tail;
  _Atomic uint64_t enq_seq;  /* last queued op; read lock-free by dependency snapshots */
  _Atomic uint64_t done_seq; /* last completed op */
  bool closing;
  bool worker_started; /* workers start at the first op queued (torch creates 128 streams) */
  atomic_int refs; /* the worker's (or, before it starts, the registry's), plus one per
                    * dependency or snapshot naming this stream */

  sc_stream *reg_prev, *reg_next; /* registry of live streams (sc_stream.c) */

  /* written under mu; read without it where no capture is the common answer (a query from a
   * signal handler that interrupted this stream's enqueue must not wait for mu) */
  _Atomic(enum cudaStreamCaptureStatus) cap_status;
  enum cudaStreamCaptureMode cap_mode;
  unsigned long long cap_id;
  pthread_t cap_thread;
  sc_graph *cap_graph;
};

/* Number of captures currently begun and not ended (any stream). */
extern atomic_int sc_active_captures;

void sc_stream_ref(sc_stream *s);
void sc_stream_unref(sc_stream *s);
/* A new stream, registered; its worker thread starts with the first op queued on it. NULL when
 * out of memory. */
sc_stream *sc_stream_new(unsigned flags, int priority, bool legacy, bool per_thread, int device);
/* cudaStreamDestroy: queued work completes, then the worker exits. */
void sc_stream_close(sc_stream *s);
/* The legacy default stream of a device (each device has its own). */
sc_stream *sc_get_legacy(int device);

#endif /* SC_STREAM_IMPL_H */
