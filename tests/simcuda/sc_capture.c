/* sc_capture.c: stream capture and graphs. A capture records the ops queued on one stream (not
 * executed); the graph is that linear list. cudaGraphInstantiate copies it, and each
 * cudaGraphLaunch queues fresh copies on the launch stream, so every replay really runs the
 * copies and kernels again (with the parameters captured at launch time, as CUDA does). */
#include <stdlib.h>

#include "sc_stream_impl.h"
#include "sc_engine.h"

#define SC_GRAPH_MAGIC 0x62a9b000u
#define SC_EXEC_MAGIC 0x62a9b0e0u

#define SC_NODE_MAGIC 0x62a9b0a0u

/* A node handle (cudaGraphNode_t): the op at `index` of its graph. Made for a graph's ops at its
 * first node query, and freed with it. */
typedef struct sc_node {
  uint32_t magic;
  sc_graph *graph;
  size_t index;
} sc_node;

struct sc_graph {
  uint32_t magic;
  sc_op **ops;
  size_t n, cap;
  sc_node *nodes; /* n handles, or NULL before the first query */
};

static atomic_ullong sc_capture_ids;

sc_graph *sc_graph_new(void) {
  sc_graph *g = calloc(1, sizeof *g);
  if (g) g->magic = SC_GRAPH_MAGIC;
  return g;
}

bool sc_graph_append(sc_graph *g, sc_op *op) {
  if (g->n == g->cap) {
    size_t cap = g->cap ? g->cap * 2 : 16;
    sc_op **ops = realloc(g->ops, cap * sizeof *ops);
    if (!ops) return false;
    g->ops = ops;
    g->cap = cap;
  }
  g->ops[g->n++] = op;
  return true;
}

void sc_graph_free(sc_graph *g) {
  if (!g) return;
  for (size_t i = 0; i < g->n; i++) sc_op_free(g->ops[i]);
  free(g->ops);
  if (g->nodes)
    for (size_t i = 0; i < g->n; i++) g->nodes[i].magic = 0;
  free(g->nodes);
  g->magic = 0;
  free(g);
}

static sc_graph *sc_graph_clone(const sc_graph *g, uint32_t magic) {
  sc_graph *c = sc_graph_new();
  if (!c) return NULL;
  c->magic = magic;
  for (size_t i = 0; i < g->n; i++) {
    sc_op *op = sc_op_clone(g->ops[i]);
    if (!op || !sc_graph_append(c, op)) {
      sc_op_free(op);
      sc_graph_free(c);
      return NULL;
    }
  }
  return c;
}

/* ---- capture --------------------------------------------------------------------------- */
cudaError_t sc_begin(cudaStream_t h, enum cudaStreamCaptureMode mode, bool ptsz) {
  cudaError_t err = cudaSuccess;
  sc_stream *s = sc_stream_get(h, ptsz, &err);
  if (!s) return sc_ret(err);
  if (s->legacy) return sc_ret(cudaErrorStreamCaptureUnsupported);
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed)
    return sc_ret(cudaErrorInvalidValue);
  sc_graph *g = sc_graph_new();
  if (!g) return sc_ret(cudaErrorMemoryAllocation);
  pthread_mutex_lock(&s->mu);
  if (s->cap_status != cudaStreamCaptureStatusNone) {
    err = cudaErrorIllegalState;
  } else {
    s->cap_status = cudaStreamCaptureStatusActive;
    s->cap_mode = mode;
    s->cap_id = atomic_fetch_add(&sc_capture_ids, 1) + 1;
    s->cap_thread = pthread_self();
    s->cap_graph = g;
    g = NULL;
    atomic_fetch_add(&sc_active_captures, 1);
  }
  pthread_mutex_unlock(&s->mu);
  sc_graph_free(g);
  return err == cudaSuccess ? cudaSuccess : sc_ret(err);
}

cudaError_t sc_end(cudaStream_t h, cudaGraph_t *pGraph, bool ptsz) {
  cudaError_t err = cudaSuccess;
  sc_stream *s = sc_stream_get(h, ptsz, &err);
  if (!s) return sc_ret(err);
  if (!pGraph) return sc_ret(cudaErrorInvalidValue);
  sc_graph *g = NULL;
  pthread_mutex_lock(&s->mu);
  if (s->cap_status == cudaStreamCaptureStatusNone) {
    err = cudaErrorIllegalState;
  } else if (s->cap_mode != cudaStreamCaptureModeRelaxed &&
             !pthread_equal(s->cap_thread, pthread_self())) {
    err = cudaErrorStreamCaptureWrongThread;
  } else {
    if (s->cap_status == cudaStreamCaptureStatusInvalidated) err = cudaErrorStreamCaptureInvalidated;
    g = s->cap_graph;
    s->cap_graph = NULL;
    s->cap_status = cudaStreamCaptureStatusNone;
    atomic_fetch_sub(&sc_active_captures, 1);
  }
  pthread_mutex_unlock(&s->mu);
  if (err == cudaErrorStreamCaptureInvalidated) {
    sc_graph_free(g);
    *pGraph = NULL;
  } else if (err == cudaSuccess) {
    *pGraph = (cudaGraph_t)g;
  }
  return err == cudaSuccess ? cudaSuccess : sc_ret(err);
}

cudaError_t sc_is_capturing(cudaStream_t h, enum cudaStreamCaptureStatus *st, bool ptsz) {
  cudaError_t err = cudaSuccess;
  sc_stream *s = sc_stream_get(h, ptsz, &err);
  if (!s) return sc_ret(err);
  if (!st) return sc_ret(cudaErrorInvalidValue);
  *st = sc_capture_status(s);
  return cudaSuccess;
}

static cudaError_t sc_capture_info(cudaStream_t h, enum cudaStreamCaptureStatus *st,
                                   unsigned long long *id, cudaGraph_t *graph,
                                   const cudaGraphNode_t **deps, size_t *ndeps, bool ptsz) {
  cudaError_t err = cudaSuccess;
  sc_stream *s = sc_stream_get(h, ptsz, &err);
  if (!s) return sc_ret(err);
  if (!st) return sc_ret(cudaErrorInvalidValue);
  pthread_mutex_lock(&s->mu);
  *st = s->cap_status;
  if (id) *id = s->cap_status != cudaStreamCaptureStatusNone ? s->cap_id : 0;
  if (graph) *graph = (cudaGraph_t)s->cap_graph;
  pthread_mutex_unlock(&s->mu);
  if (deps) *deps = NULL; /* the simulated graph is a list; its nodes are not exposed */
  if (ndeps) *ndeps = 0;
  return cudaSuccess;
}

#if CUDART_VERSION >= 13000
SC_API cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream,
                                            enum cudaStreamCaptureStatus *captureStatus_out,
                                            unsigned long long *id_out, cudaGraph_t *graph_out,
                                            const cudaGraphNode_t **dependencies_out,
                                            const cudaGraphEdgeData **edgeData_out,
                                            size_t *numDependencies_out) {
  SC_ENTER("cudaStreamGetCaptureInfo");
  if (edgeData_out) *edgeData_out = NULL;
  return sc_capture_info(stream, captureStatus_out, id_out, graph_out, dependencies_out,
                         numDependencies_out, false);
}

SC_API cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream,
                                                 enum cudaStreamCaptureStatus *captureStatus_out,
                                                 unsigned long long *id_out, cudaGraph_t *graph_out,
                                                 const cudaGraphNode_t **dependencies_out,
                                                 const cudaGraphEdgeData **edgeData_out,
                                                 size_t *numDependencies_out) {
  SC_ENTER("cudaStreamGetCaptureInfo");
  if (edgeData_out) *edgeData_out = NULL;
  return sc_capture_info(stream, captureStatus_out, id_out, graph_out, dependencies_out,
                         numDependencies_out, true);
}
#else
/* CUDA 12.x: the headers map cudaStreamGetCaptureInfo to the six-argument cudaStreamGetCaptureInfo_v2
 * (so the definition below exports _v2); 13.0 made the seven-argument form the plain name. */
SC_API cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream,
                                            enum cudaStreamCaptureStatus *captureStatus_out,
                                            unsigned long long *id_out, cudaGraph_t *graph_out,
                                            const cudaGraphNode_t **dependencies_out,
                                            size_t *numDependencies_out) {
  SC_ENTER("cudaStreamGetCaptureInfo");
  return sc_capture_info(stream, captureStatus_out, id_out, graph_out, dependencies_out,
                         numDependencies_out, false);
}

SC_API cudaError_t cudaStreamGetCaptureInfo_v2_ptsz(cudaStream_t stream,
                                                    enum cudaStreamCaptureStatus *captureStatus_out,
                                                    unsigned long long *id_out, cudaGraph_t *graph_out,
                                                    const cudaGraphNode_t **dependencies_out,
                                                    size_t *numDependencies_out) {
  SC_ENTER("cudaStreamGetCaptureInfo");
  return sc_capture_info(stream, captureStatus_out, id_out, graph_out, dependencies_out,
                         numDependencies_out, true);
}
#endif

/* ---- graphs ---------------------------------------------------------------------------- */
static sc_graph *sc_graph_get(const void *h, uint32_t magic) {
  const sc_graph *g = h;
  return g && g->magic == magic ? (sc_graph *)g : NULL;
}

/* The graph entry points (cuGraphInstantiateWithFlags, cuGraphLaunch, the destroys) are the
 * driver's (driver/sd_api.c); the runtime's are made of them (rt_api.c). */
cudaError_t sc_graph_instantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph) {
  sc_graph *g = sc_graph_get(graph, SC_GRAPH_MAGIC);
  if (!pGraphExec || !g) return sc_ret(cudaErrorInvalidValue);
  sc_graph *e = sc_graph_clone(g, SC_EXEC_MAGIC);
  if (!e) return sc_ret(cudaErrorMemoryAllocation);
  *pGraphExec = (cudaGraphExec_t)e;
  return cudaSuccess;
}

cudaError_t sc_graph_launch(cudaGraphExec_t exec, cudaStream_t h, bool ptsz) {
  sc_graph *e = sc_graph_get(exec, SC_EXEC_MAGIC);
  if (!e) return sc_ret(cudaErrorInvalidValue);
  cudaError_t err = cudaSuccess;
  sc_stream *s = sc_stream_get(h, ptsz, &err);
  if (!s) return sc_ret(err);
  for (size_t i = 0; i < e->n && err == cudaSuccess; i++) {
    sc_op *op = sc_op_clone(e->ops[i]);
    err = op ? sc_submit(s, op, NULL) : cudaErrorMemoryAllocation;
  }
  return err == cudaSuccess ? cudaSuccess : sc_ret(err);
}

cudaError_t sc_graph_destroy(cudaGraph_t graph) {
  sc_graph *g = sc_graph_get(graph, SC_GRAPH_MAGIC);
  if (!g) return sc_ret(cudaErrorInvalidValue);
  sc_graph_free(g);
  return cudaSuccess;
}

cudaError_t sc_graph_exec_destroy(cudaGraphExec_t graphExec) {
  sc_graph *e = sc_graph_get(graphExec, SC_EXEC_MAGIC);
  if (!e) return sc_ret(cudaErrorInvalidValue);
  sc_graph_free(e);
  return cudaSuccess;
}

/* ---- node queries ------------------------------------------------------------------------
 * A captured graph is a chain: node i depends on node i - 1 (one stream's work, in order). */
static sc_node *sc_graph_nodes(sc_graph *g) {
  if (!g->nodes && g->n) {
    g->nodes = calloc(g->n, sizeof *g->nodes);
    if (!g->nodes) return NULL;
    for (size_t i = 0; i < g->n; i++) g->nodes[i] = (sc_node){SC_NODE_MAGIC, g, i};
  }
  return g->nodes;
}

static sc_node *sc_node_get(cudaGraphNode_t h) {
  sc_node *n = (sc_node *)h;
  return n && n->magic == SC_NODE_MAGIC ? n : NULL;
}

/* Fills up to *count handles from `first` (of `avail`), NULLs the rest, and stores how many
 * there are (nodes NULL: only the count), as CUDA's graph queries do. */
static cudaError_t sc_hand_out(sc_graph *g, size_t first, size_t avail, cudaGraphNode_t *out,
                               size_t *count) {
  if (!count) return sc_ret(cudaErrorInvalidValue);
  if (!out) {
    *count = avail;
    return cudaSuccess;
  }
  sc_node *nodes = avail ? sc_graph_nodes(g) : NULL;
  if (avail && !nodes) return sc_ret(cudaErrorMemoryAllocation);
  for (size_t i = 0; i < *count; i++) out[i] = i < avail ? (cudaGraphNode_t)&nodes[first + i] : NULL;
  if (*count > avail) *count = avail;
  return cudaSuccess;
}

SC_API cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *numNodes) {
  SC_ENTER("cudaGraphGetNodes");
  sc_graph *g = sc_graph_get(graph, SC_GRAPH_MAGIC);
  if (!g) return sc_ret(cudaErrorInvalidValue);
  return sc_hand_out(g, 0, g->n, nodes, numNodes);
}

SC_API cudaError_t cudaGraphGetRootNodes(cudaGraph_t graph, cudaGraphNode_t *pRootNodes,
                                         size_t *pNumRootNodes) {
  SC_ENTER("cudaGraphGetRootNodes");
  sc_graph *g = sc_graph_get(graph, SC_GRAPH_MAGIC);
  if (!g) return sc_ret(cudaErrorInvalidValue);
  return sc_hand_out(g, 0, g->n ? 1 : 0, pRootNodes, pNumRootNodes);
}

SC_API cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node,
                                                cudaGraphNode_t *pDependencies,
                                                cudaGraphEdgeData *edgeData,
                                                size_t *pNumDependencies) {
  SC_ENTER("cudaGraphNodeGetDependencies");
  sc_node *n = sc_node_get(node);
  if (!n) return sc_ret(cudaErrorInvalidValue);
  size_t have = n->index ? 1 : 0;
  if (edgeData && pDependencies && pNumDependencies)
    for (size_t i = 0; i < *pNumDependencies; i++) edgeData[i] = (cudaGraphEdgeData){0};
  return sc_hand_out(n->graph, n->index ? n->index - 1 : 0, have, pDependencies,
                     pNumDependencies);
}

SC_API cudaError_t cudaGraphNodeGetDependentNodes(cudaGraphNode_t node,
                                                  cudaGraphNode_t *pDependentNodes,
                                                  cudaGraphEdgeData *edgeData,
                                                  size_t *pNumDependentNodes) {
  SC_ENTER("cudaGraphNodeGetDependentNodes");
  sc_node *n = sc_node_get(node);
  if (!n) return sc_ret(cudaErrorInvalidValue);
  size_t have = n->index + 1 < n->graph->n ? 1 : 0;
  if (edgeData && pDependentNodes && pNumDependentNodes)
    for (size_t i = 0; i < *pNumDependentNodes; i++) edgeData[i] = (cudaGraphEdgeData){0};
  return sc_hand_out(n->graph, n->index + 1, have, pDependentNodes, pNumDependentNodes);
}

SC_API cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType *pType) {
  SC_ENTER("cudaGraphNodeGetType");
  sc_node *n = sc_node_get(node);
  if (!n || !pType) return sc_ret(cudaErrorInvalidValue);
  switch (n->graph->ops[n->index]->kind) {
  case SC_OP_COPY: *pType = cudaGraphNodeTypeMemcpy; break;
  case SC_OP_MEMSET: *pType = cudaGraphNodeTypeMemset; break;
  case SC_OP_KERNEL: *pType = cudaGraphNodeTypeKernel; break;
  case SC_OP_HOSTFN: *pType = cudaGraphNodeTypeHost; break;
  case SC_OP_EVENT: *pType = cudaGraphNodeTypeEventRecord; break;
  case SC_OP_WAIT_EVENT: *pType = cudaGraphNodeTypeWaitEvent; break;
  default: *pType = cudaGraphNodeTypeEmpty; break;
  }
  return cudaSuccess;
}
