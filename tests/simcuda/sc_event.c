/* sc_event.c: simulated events. Each record gets a generation number when it is queued; the
 * stream's worker completes that generation (and timestamps it) when it reaches the record, so
 * query/synchronize/cudaStreamWaitEvent refer to the most recent record, as in CUDA. Events are
 * reference-counted: queued ops keep a destroyed event alive until they ran. An event belongs to
 * the device current at its creation: recording it on another device's stream, or timing it
 * against another device's event, fails with cudaErrorInvalidResourceHandle; querying,
 * synchronizing and cudaStreamWaitEvent work from any device (the CUDA programming guide's rules
 * for multi-device streams and events). */
#include <stdlib.h>

#include "sc_internal.h"
#include "sc_engine.h"

#define SC_EVENT_MAGIC 0xe7e11755u

struct sc_event {
  _Atomic uint32_t magic;
  unsigned flags;
  int device; /* current at creation */
  atomic_int refs;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint64_t rec_gen;  /* last generation queued */
  uint64_t done_gen; /* last generation completed */
  uint64_t done_ns;  /* when done_gen completed */
  bool captured;     /* last recorded into a capture, not queued */
};

int sc_event_device(const sc_event *ev) { return ev->device; }

void sc_event_ref(sc_event *ev) { atomic_fetch_add(&ev->refs, 1); }

void sc_event_unref(sc_event *ev) {
  if (atomic_fetch_sub(&ev->refs, 1) != 1) return;
  pthread_mutex_destroy(&ev->mu);
  pthread_cond_destroy(&ev->cv);
  free(ev);
}

uint64_t sc_event_recorded_gen(sc_event *ev) {
  pthread_mutex_lock(&ev->mu);
  uint64_t g = ev->rec_gen;
  pthread_mutex_unlock(&ev->mu);
  return g;
}

void sc_event_set_captured(sc_event *ev, bool captured) {
  pthread_mutex_lock(&ev->mu);
  ev->captured = captured;
  pthread_mutex_unlock(&ev->mu);
}

static bool sc_event_is_captured(sc_event *ev) {
  pthread_mutex_lock(&ev->mu);
  bool c = ev->captured;
  pthread_mutex_unlock(&ev->mu);
  return c;
}

uint64_t sc_event_next_gen(sc_event *ev) {
  pthread_mutex_lock(&ev->mu);
  ev->captured = false;
  uint64_t g = ++ev->rec_gen;
  pthread_mutex_unlock(&ev->mu);
  return g;
}

void sc_event_complete(sc_event *ev, uint64_t gen) {
  uint64_t now = sc_now_ns();
  pthread_mutex_lock(&ev->mu);
  if (gen > ev->done_gen) {
    ev->done_gen = gen;
    ev->done_ns = now;
  }
  pthread_cond_broadcast(&ev->cv);
  pthread_mutex_unlock(&ev->mu);
}

void sc_event_wait_gen(sc_event *ev, uint64_t gen) {
  pthread_mutex_lock(&ev->mu);
  while (ev->done_gen < gen) pthread_cond_wait(&ev->cv, &ev->mu);
  pthread_mutex_unlock(&ev->mu);
}

static sc_event *sc_event_get(cudaEvent_t h) {
  sc_event *ev = (sc_event *)h;
  if (!ev || atomic_load_explicit(&ev->magic, memory_order_relaxed) != SC_EVENT_MAGIC) return NULL;
  return ev;
}

cudaError_t sc_event_create(cudaEvent_t *event, unsigned flags) {
  if (!event) return sc_ret(cudaErrorInvalidValue);
  unsigned known = cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
  if (flags & ~known) return sc_ret(cudaErrorInvalidValue);
  if ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming))
    return sc_ret(cudaErrorInvalidValue);
  sc_event *ev = calloc(1, sizeof *ev);
  if (!ev) return sc_ret(cudaErrorMemoryAllocation);
  ev->flags = flags;
  ev->device = sc_device_current();
  atomic_init(&ev->refs, 1);
  atomic_init(&ev->magic, SC_EVENT_MAGIC);
  pthread_mutex_init(&ev->mu, NULL);
  pthread_cond_init(&ev->cv, NULL);
  *event = (cudaEvent_t)ev;
  return cudaSuccess;
}

cudaError_t sc_event_destroy(cudaEvent_t event) {
  sc_event *ev = sc_event_get(event);
  if (!ev) return sc_ret(cudaErrorInvalidResourceHandle);
  atomic_store(&ev->magic, 0);
  sc_event_unref(ev); /* queued records and waits hold their own references */
  return cudaSuccess;
}

cudaError_t sc_event_record(cudaEvent_t event, cudaStream_t stream, unsigned flags,
                                   bool ptsz) {
  sc_event *ev = sc_event_get(event);
  if (!ev) return sc_ret(cudaErrorInvalidResourceHandle);
  if (flags & ~(unsigned)cudaEventRecordExternal) return sc_ret(cudaErrorInvalidValue);
  cudaError_t err = cudaSuccess;
  sc_stream *s = sc_stream_get(stream, ptsz, &err);
  if (!s) return sc_ret(err);
  if (sc_stream_device(s) != ev->device) return sc_ret(cudaErrorInvalidResourceHandle);
  sc_op *op = sc_op_new(SC_OP_EVENT);
  if (!op) return sc_ret(cudaErrorMemoryAllocation);
  op->u.event.ev = ev;
  sc_event_ref(ev);
  return sc_ret(sc_submit(s, op, NULL)); /* the generation is assigned when queued */
}

cudaError_t sc_event_query(cudaEvent_t event) {
  sc_event *ev = sc_event_get(event);
  if (!ev) return sc_ret(cudaErrorInvalidResourceHandle);
  /* Like CUDA: an event whose last record went into a capture has no state to query yet. */
  if (sc_event_is_captured(ev)) return sc_ret(cudaErrorCapturedEvent);
  pthread_mutex_lock(&ev->mu);
  bool done = ev->done_gen >= ev->rec_gen; /* never recorded counts as complete */
  pthread_mutex_unlock(&ev->mu);
  return done ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t sc_event_sync(cudaEvent_t event) {
  sc_event *ev = sc_event_get(event);
  if (!ev) return sc_ret(cudaErrorInvalidResourceHandle);
  if (sc_event_is_captured(ev)) return sc_ret(cudaErrorCapturedEvent);
  sc_event_wait_gen(ev, sc_event_recorded_gen(ev));
  return cudaSuccess;
}

cudaError_t sc_event_elapsed(float *ms, cudaEvent_t start, cudaEvent_t end) {
  sc_event *a = sc_event_get(start), *b = sc_event_get(end);
  if (!ms) return sc_ret(cudaErrorInvalidValue);
  if (!a || !b) return sc_ret(cudaErrorInvalidResourceHandle);
  if ((a->flags | b->flags) & cudaEventDisableTiming) return sc_ret(cudaErrorInvalidResourceHandle);
  if (a->device != b->device) return sc_ret(cudaErrorInvalidResourceHandle);
  pthread_mutex_lock(&a->mu);
  uint64_t ar = a->rec_gen, ad = a->done_gen, at = a->done_ns;
  pthread_mutex_unlock(&a->mu);
  pthread_mutex_lock(&b->mu);
  uint64_t br = b->rec_gen, bd = b->done_gen, bt = b->done_ns;
  pthread_mutex_unlock(&b->mu);
  if (!ar || !br) return sc_ret(cudaErrorInvalidResourceHandle); /* never recorded */
  if (ad < ar || bd < br) return cudaErrorNotReady;
  *ms = (float)((double)((int64_t)bt - (int64_t)at) / 1e6);
  return cudaSuccess;
}
