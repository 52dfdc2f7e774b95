/* sc_stream.c: the stream machinery: worker threads executing each stream's ops in FIFO order,
 * submission with the default streams' implicit dependencies, synchronization, the registry of
 * live streams, and the device-wide calls. Enqueue takes only that stream's lock. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "sc_stream_impl.h"
#include "sc_engine.h"

/* Default-stream semantics and the simplifications made (also in README.md):
 *   - Every stream belongs to the device that was current when it was created. Each device has
 *     its own legacy stream, and each (thread, device) its own per-thread stream; handle 0,
 *     cudaStreamLegacy and cudaStreamPerThread name those of the calling thread's current device.
 *   - The legacy default stream (handle 0, cudaStreamLegacy) is a stream with its own worker. An op
 *     queued on it first waits for all work already queued on every blocking stream of its device
 *     (streams created without cudaStreamNonBlocking, per-thread default streams included); an op
 *     queued on a blocking stream first waits for all work already queued on its device's legacy
 *     stream. Both are implemented as dependencies snapshotted *before* the op is published, which
 *     keeps the dependency graph acyclic without a global lock. Devices never order against each
 *     other implicitly. A cudaStreamWaitEvent is such an op only on the legacy stream, and only
 *     for an event with a record: a wait on a blocking stream, or for an event never recorded,
 *     waits for nothing implicitly (as measured on an H200: bench/gpu/legacy_order.cu).
 *   - cudaStreamPerThread, and handle 0 in the _ptsz/_ptds entry points, name the calling thread's
 *     per-thread default stream of its current device: a blocking stream created on first use and
 *     destroyed (after its work drains) when the thread exits.
 *   - cudaStreamSynchronize on the legacy stream waits for a marker queued on it, so it also waits
 *     for earlier work on blocking streams, and cudaStreamQuery on it answers cudaErrorNotReady
 *     while such work runs: as an H200 does, though CUDA's text promises only the stream's own.
 *   - Priorities are recorded and reported but do not affect scheduling: every stream has its own
 *     worker, so no stream ever waits for another's unrelated work.
 *   - Stream capture: an op queued on a capturing stream is recorded into the capture's graph; a
 *     legacy-stream op while a blocking stream captures fails with cudaErrorStreamCaptureImplicit and
 *     invalidates that capture, as in CUDA. Cross-stream capture (fork/join via events) is not
 *     simulated: each capture is one stream's linear sequence of ops.
 *   - Workers are detached and block asynchronous signals. At exit they are left parked; a forked
 *     child has no workers, so every CUDA call in the child of a process that had started the
 *     runtime returns cudaErrorInitializationError (as CUDA does); a child that never calls CUDA is
 *     unaffected. */

atomic_int sc_active_captures;

static pthread_mutex_t sc_reg_mu = PTHREAD_MUTEX_INITIALIZER;
static sc_stream *sc_reg_head;
static atomic_int sc_stream_count;

static sc_stream *sc_legacy[SC_MAX_DEVICES];
static pthread_once_t sc_legacy_once = PTHREAD_ONCE_INIT;
static pthread_key_t sc_tls_key;
/* This thread's per-thread streams, one per device: the key's value is a heap array of them. Not
 * a _Thread_local array: the engine lives in libcuda.so.1, which the runtime dlopens, so its TLS
 * is dynamic (malloc'd by the loader), and the destructor below runs after ThreadSanitizer's
 * thread-finish; a TLS write there would race, for TSAN, with the loader freeing that TLS when a
 * new thread reuses the stack. */
/* cudaThreadExchangeStreamCaptureMode: this thread's interaction mode (global by default). */
static SC_STATIC_TLS enum cudaStreamCaptureMode sc_thread_capture_mode =
    cudaStreamCaptureModeGlobal;

void sc_stream_ref(sc_stream *s) { atomic_fetch_add(&s->refs, 1); }

void sc_stream_unref(sc_stream *s) {
  if (atomic_fetch_sub(&s->refs, 1) != 1) return;
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->work_cv);
  pthread_cond_destroy(&s->done_cv);
  free(s);
}

bool sc_stream_is_legacy(const sc_stream *s) { return s->legacy; }

int sc_stream_device(const sc_stream *s) { return s->device; }

static void sc_unregister(sc_stream *s) {
  pthread_mutex_lock(&sc_reg_mu);
  if (s->reg_prev) s->reg_prev->reg_next = s->reg_next;
  else sc_reg_head = s->reg_next;
  if (s->reg_next) s->reg_next->reg_prev = s->reg_prev;
  pthread_mutex_unlock(&sc_reg_mu);
}

/* ---- workers --------------------------------------------------------------------------- */
static void *sc_worker(void *arg) {
  sc_stream *s = arg;
  /* Each op sleeps until its own start time; with the default 50 us timer slack every such
   * sleep would overshoot and pipelined throughput would collapse. */
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (!s->head && !s->closing) pthread_cond_wait(&s->work_cv, &s->mu);
    sc_op *op = s->head;
    if (!op) break; /* closing and drained */
    s->head = op->next;
    if (!s->head) s->tail = NULL;
    pthread_mutex_unlock(&s->mu);

    sc_op_execute(op);
    uint64_t seq = op->seq;
    sc_op_free(op);

    pthread_mutex_lock(&s->mu);
    atomic_store(&s->done_seq, seq);
    pthread_cond_broadcast(&s->done_cv);
  }
  pthread_mutex_unlock(&s->mu);

  sc_unregister(s);
  sc_stream_unref(s);
  return NULL;
}

sc_stream *sc_stream_new(unsigned flags, int priority, bool legacy, bool per_thread, int device) {
  sc_stream *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->device = device;
  s->flags = flags;
  s->priority = priority;
  s->legacy = legacy;
  s->per_thread = per_thread;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->work_cv, NULL);
  pthread_cond_init(&s->done_cv, NULL);
  atomic_init(&s->refs, 1); /* the registry's until the worker starts, then the worker's */
  atomic_init(&s->magic, SC_STREAM_MAGIC);

  pthread_mutex_lock(&sc_reg_mu);
  s->reg_next = sc_reg_head;
  if (sc_reg_head) sc_reg_head->reg_prev = s;
  sc_reg_head = s;
  pthread_mutex_unlock(&sc_reg_mu);
  return s;
}

/* Starts s's worker; caller holds s->mu, and the stream is not closing. A stream that never gets
 * work never costs a thread: PyTorch creates a pool of 128 streams at its first
 * torch.cuda.Stream(), and uses a few. */
static bool sc_worker_start_locked(sc_stream *s) {
  if (s->worker_started) return true;
  /* Workers inherit this mask: asynchronous signals go to application threads. Synchronous
   * faults stay unblocked so a handler (pinguard's) still sees a kernel body's bad access. */
  sigset_t all, old;
  sigfillset(&all);
  sigdelset(&all, SIGSEGV);
  sigdelset(&all, SIGBUS);
  sigdelset(&all, SIGFPE);
  sigdelset(&all, SIGILL);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t tid;
  int rc = pthread_create(&tid, &attr, sc_worker, s);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) return false;
  s->worker_started = true;
  char name[16];
  snprintf(name, sizeof name, "simcuda-s%d", atomic_fetch_add(&sc_stream_count, 1));
  pthread_setname_np(tid, name);
  return true;
}

/* Lets the worker drain and exit; the struct lives on while references remain. */
void sc_stream_close(sc_stream *s) {
  pthread_mutex_lock(&s->mu);
  atomic_store(&s->magic, 0);
  s->closing = true;
  bool started = s->worker_started;
  pthread_cond_signal(&s->work_cv);
  pthread_mutex_unlock(&s->mu);
  if (!started) { /* no worker to drain it: nothing was ever queued, and nothing can be now */
    sc_unregister(s);
    sc_stream_unref(s);
  }
}

/* Thread exit: the per-thread stream drains and goes. A later CUDA call from another key's
 * destructor on this thread gets a fresh one (and this destructor runs again for it). */
static void sc_tls_destroy(void *p) {
  sc_stream **streams = p;
  for (int d = 0; d < SC_MAX_DEVICES; d++)
    if (streams[d]) sc_stream_close(streams[d]);
  free(streams);
}

/* Every device's legacy stream exists from the start (a worker only once it gets work). */
static void sc_legacy_init(void) {
  for (int d = 0; d < sc_cfg.devices; d++) sc_legacy[d] = sc_stream_new(0, 0, true, false, d);
  pthread_key_create(&sc_tls_key, sc_tls_destroy);
}

sc_stream *sc_get_legacy(int device) {
  pthread_once(&sc_legacy_once, sc_legacy_init);
  return sc_legacy[device];
}

static sc_stream *sc_get_per_thread(int device) {
  pthread_once(&sc_legacy_once, sc_legacy_init);
  sc_stream **streams = pthread_getspecific(sc_tls_key);
  if (!streams) {
    /* The first per-thread stream of this thread, or again after the destructor ran (the key's
     * value is NULL then). */
    streams = calloc(SC_MAX_DEVICES, sizeof *streams);
    if (!streams || pthread_setspecific(sc_tls_key, streams) != 0) {
      free(streams);
      return NULL;
    }
  }
  if (!streams[device]) streams[device] = sc_stream_new(0, 0, false, true, device);
  return streams[device];
}

sc_stream *sc_stream_get(cudaStream_t h, bool ptsz, cudaError_t *err) {
  sc_stream *s;
  int dev = sc_device_current();
  if (h == NULL)
    s = ptsz ? sc_get_per_thread(dev) : sc_get_legacy(dev);
  else if (h == cudaStreamLegacy)
    s = sc_get_legacy(dev);
  else if (h == cudaStreamPerThread)
    s = sc_get_per_thread(dev);
  else {
    s = (sc_stream *)h;
    if (atomic_load_explicit(&s->magic, memory_order_relaxed) != SC_STREAM_MAGIC) {
      *err = cudaErrorInvalidResourceHandle;
      return NULL;
    }
    return s;
  }
  if (!s) *err = cudaErrorMemoryAllocation;
  return s;
}

/* ---- submission ------------------------------------------------------------------------ */
static bool sc_is_blocking(const sc_stream *s) {
  return !s->legacy && !(s->flags & cudaStreamNonBlocking);
}

/* Invalidates an active capture. Caller holds s->mu. */
static void sc_capture_invalidate_locked(sc_stream *s) {
  if (s->cap_status == cudaStreamCaptureStatusActive)
    s->cap_status = cudaStreamCaptureStatusInvalidated;
}

/* The implicit dependencies of the legacy default stream, snapshotted before publishing. */
static cudaError_t sc_implicit_deps(sc_stream *s, sc_op *op) {
  if (s->legacy) {
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&sc_reg_mu);
    for (sc_stream *t = sc_reg_head; t; t = t->reg_next) {
      if (t->device != s->device || !sc_is_blocking(t)) continue;
      if (atomic_load(&sc_active_captures) > 0) {
        pthread_mutex_lock(&t->mu);
        bool capturing = t->cap_status == cudaStreamCaptureStatusActive;
        if (capturing) sc_capture_invalidate_locked(t);
        pthread_mutex_unlock(&t->mu);
        if (capturing) {
          err = cudaErrorStreamCaptureImplicit;
          continue;
        }
      }
      uint64_t seq = atomic_load(&t->enq_seq);
      if (seq > atomic_load(&t->done_seq) && !sc_op_add_dep(op, (sc_dep){.stream = t, .seq = seq}))
        err = cudaErrorMemoryAllocation;
    }
    pthread_mutex_unlock(&sc_reg_mu);
    return err;
  }
  if (sc_is_blocking(s)) {
    sc_stream *l = sc_get_legacy(s->device);
    uint64_t seq = atomic_load(&l->enq_seq);
    if (seq > atomic_load(&l->done_seq) && !sc_op_add_dep(op, (sc_dep){.stream = l, .seq = seq}))
      return cudaErrorMemoryAllocation;
  }
  return cudaSuccess;
}

bool sc_stream_idle(sc_stream *s) {
  if (atomic_load(&s->done_seq) < atomic_load(&s->enq_seq)) return false;
  if (!s->legacy) return true;
  bool idle = true; /* the legacy stream: its device's blocking streams' work too */
  pthread_mutex_lock(&sc_reg_mu);
  for (sc_stream *t = sc_reg_head; t && idle; t = t->reg_next)
    if (t->device == s->device && sc_is_blocking(t))
      idle = atomic_load(&t->done_seq) >= atomic_load(&t->enq_seq);
  pthread_mutex_unlock(&sc_reg_mu);
  return idle;
}

cudaError_t sc_submit(sc_stream *s, sc_op *op, uint64_t *seq_out) {
  if (seq_out) *seq_out = 0;
  op->enq_ns = sc_now_ns();
  cudaError_t err = cudaSuccess;
  bool implicit = true;
  if (op->kind == SC_OP_WAIT_EVENT) {
    uint64_t gen = sc_event_recorded_gen(op->u.event.ev);
    if (gen && !sc_op_add_dep(op, (sc_dep){.event = op->u.event.ev, .gen = gen}))
      err = cudaErrorMemoryAllocation;
    /* As an H200 does (bench/gpu/legacy_order.cu): a wait on the legacy stream waits for the
     * blocking streams only when its event has a record, and a wait on a blocking stream never
     * waits for the legacy stream. */
    implicit = s->legacy && gen;
  }
  if (err == cudaSuccess && implicit) err = sc_implicit_deps(s, op);
  if (err != cudaSuccess) {
    sc_op_free(op);
    return err;
  }

  pthread_mutex_lock(&s->mu);
  if (s->closing) {
    /* Destroyed (or its thread exited): its worker may be gone, so nothing may be queued. */
    pthread_mutex_unlock(&s->mu);
    sc_op_free(op);
    return cudaErrorInvalidResourceHandle;
  }
  if (s->cap_status == cudaStreamCaptureStatusNone && !sc_worker_start_locked(s)) {
    pthread_mutex_unlock(&s->mu);
    sc_op_free(op);
    return cudaErrorMemoryAllocation;
  }
  if (s->cap_status != cudaStreamCaptureStatusNone) {
    if (s->cap_status == cudaStreamCaptureStatusInvalidated) {
      err = cudaErrorStreamCaptureInvalidated;
    } else {
      sc_op_drop_deps(op); /* recomputed at each graph launch */
      if (op->kind == SC_OP_EVENT) sc_event_set_captured(op->u.event.ev, true);
      if (sc_graph_append(s->cap_graph, op))
        op = NULL;
      else
        err = cudaErrorMemoryAllocation;
    }
    pthread_mutex_unlock(&s->mu);
    sc_op_free(op);
    return err;
  }
  op->seq = atomic_load(&s->enq_seq) + 1;
  atomic_store(&s->enq_seq, op->seq);
  if (op->kind == SC_OP_EVENT) op->u.event.gen = sc_event_next_gen(op->u.event.ev);
  op->next = NULL;
  if (s->tail) s->tail->next = op;
  else s->head = op;
  s->tail = op;
  if (seq_out) *seq_out = op->seq;
  pthread_cond_signal(&s->work_cv);
  pthread_mutex_unlock(&s->mu);
  return cudaSuccess;
}

void sc_stream_wait_seq(sc_stream *s, uint64_t seq) {
  if (atomic_load(&s->done_seq) >= seq) return;
  pthread_mutex_lock(&s->mu);
  while (atomic_load(&s->done_seq) < seq) pthread_cond_wait(&s->done_cv, &s->mu);
  pthread_mutex_unlock(&s->mu);
}

enum cudaStreamCaptureStatus sc_capture_status(sc_stream *s) {
  return atomic_load(&s->cap_status);
}

cudaError_t sc_capture_break(sc_stream *s) {
  /* Not capturing: nothing to break, and no lock, so that a signal handler may query or
   * synchronize the stream its thread was enqueueing on (holding mu) when interrupted. */
  if (atomic_load(&s->cap_status) == cudaStreamCaptureStatusNone) return cudaSuccess;
  pthread_mutex_lock(&s->mu);
  cudaError_t err = cudaSuccess;
  if (s->cap_status == cudaStreamCaptureStatusActive) {
    sc_capture_invalidate_locked(s);
    err = cudaErrorStreamCaptureUnsupported;
  } else if (s->cap_status == cudaStreamCaptureStatusInvalidated) {
    err = cudaErrorStreamCaptureInvalidated;
  }
  pthread_mutex_unlock(&s->mu);
  return err;
}

cudaError_t sc_submit_sync(sc_stream *s, sc_op *op) {
  cudaError_t err = sc_capture_break(s);
  if (err != cudaSuccess) {
    sc_op_free(op);
    return err;
  }
  uint64_t seq;
  err = sc_submit(s, op, &seq);
  if (err == cudaSuccess && seq) sc_stream_wait_seq(s, seq);
  return err;
}

/* Snapshot of every live stream's last queued op, with references. */
typedef struct sc_snapshot {
  sc_stream **streams;
  uint64_t *seqs;
  size_t n;
} sc_snapshot;

/* Waits for what is queued now on the streams of `device`, or of every device when it is -1. */
static void sc_snapshot_wait(int device) {
  sc_snapshot snap = {0};
  pthread_mutex_lock(&sc_reg_mu);
  size_t cap = 0;
  for (sc_stream *t = sc_reg_head; t; t = t->reg_next) cap++;
  snap.streams = malloc(cap * sizeof *snap.streams + 1);
  snap.seqs = malloc(cap * sizeof *snap.seqs + 1);
  for (sc_stream *t = sc_reg_head; t && snap.streams && snap.seqs; t = t->reg_next) {
    if (device >= 0 && t->device != device) continue;
    sc_stream_ref(t);
    snap.streams[snap.n] = t;
    snap.seqs[snap.n++] = atomic_load(&t->enq_seq);
  }
  pthread_mutex_unlock(&sc_reg_mu);
  for (size_t i = 0; i < snap.n; i++) {
    sc_stream_wait_seq(snap.streams[i], snap.seqs[i]);
    sc_stream_unref(snap.streams[i]);
  }
  free(snap.streams);
  free(snap.seqs);
}

void sc_device_sync_all(void) { sc_snapshot_wait(-1); }

void sc_device_sync(int device) { sc_snapshot_wait(device); }

/* ---- device-wide API -------------------------------------------------------------- */
cudaError_t sc_device_synchronize(void) {
  if (atomic_load(&sc_active_captures) > 0) {
    /* A device-wide sync is an unsafe call during capture: it fails and invalidates the capture. */
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&sc_reg_mu);
    for (sc_stream *t = sc_reg_head; t; t = t->reg_next) {
      pthread_mutex_lock(&t->mu);
      /* Global captures forbid it to every thread, thread-local ones to the capturing thread;
       * a thread that switched itself to relaxed mode is exempt. */
      bool forbidden = sc_thread_capture_mode != cudaStreamCaptureModeRelaxed &&
                       (t->cap_mode == cudaStreamCaptureModeGlobal ||
                        (t->cap_mode == cudaStreamCaptureModeThreadLocal &&
                         pthread_equal(t->cap_thread, pthread_self())));
      if (t->cap_status == cudaStreamCaptureStatusActive && forbidden) {
        sc_capture_invalidate_locked(t);
        err = cudaErrorStreamCaptureUnsupported;
      }
      pthread_mutex_unlock(&t->mu);
    }
    pthread_mutex_unlock(&sc_reg_mu);
    if (err != cudaSuccess) return sc_ret(err);
  }
  sc_snapshot_wait(sc_device_current()); /* the current device only, as in CUDA */
  return cudaSuccess;
}

SC_API cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode) {
  SC_ENTER("cudaThreadExchangeStreamCaptureMode");
  if (!mode || (unsigned)*mode > (unsigned)cudaStreamCaptureModeRelaxed)
    return sc_ret(cudaErrorInvalidValue);
  enum cudaStreamCaptureMode old = sc_thread_capture_mode;
  sc_thread_capture_mode = *mode;
  *mode = old;
  return cudaSuccess;
}

SC_API cudaError_t cudaDeviceReset(void) {
  SC_ENTER("cudaDeviceReset");
  sc_snapshot_wait(sc_device_current());
  return cudaSuccess;
}
