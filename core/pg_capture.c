/* pg_capture.c: the ops of captures, graphs and executable graphs, each set in a hash table keyed
 * by its handle, its ops in an array that doubles when full. Rare (capture is set-up work), so
 * one lock serves all three tables. */
#include "pg_capture.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "uthash.h"

typedef struct op_set {
  const void *key; /* capturing stream, graph or executable graph */
  size_t n, cap;
  pg_op_t *ops;
  UT_hash_handle hh;
} op_set_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static op_set_t *capturing, *graphs, *execs;

static op_set_t *find(op_set_t *table, const void *key) {
  op_set_t *s = NULL;
  HASH_FIND_PTR(table, &key, s);
  return s;
}

static op_set_t *find_or_add(op_set_t **table, const void *key) {
  op_set_t *s = find(*table, key);
  if (s) return s;
  if (!(s = calloc(1, sizeof *s))) return NULL;
  s->key = key;
  HASH_ADD_PTR(*table, key, s);
  return s;
}

static void append(op_set_t *s, const pg_op_t *op) {
  if (!s) return;
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 8;
    pg_op_t *grown = realloc(s->ops, cap * sizeof *grown);
    if (!grown) return; /* out of memory: this op goes untracked at launch */
    s->ops = grown;
    s->cap = cap;
  }
  s->ops[s->n++] = *op;
}

static void drop(op_set_t **table, op_set_t *s) {
  if (!s) return;
  HASH_DEL(*table, s);
  free(s->ops);
  free(s);
}

void pg_capture_begin(const void *stream) {
  pthread_mutex_lock(&lock);
  op_set_t *s = find_or_add(&capturing, stream);
  if (s) s->n = 0; /* a set left behind by a capture whose end pinguard did not see */
  pthread_mutex_unlock(&lock);
}

void pg_capture_add(const void *stream, const pg_op_t *op) {
  pthread_mutex_lock(&lock);
  append(find_or_add(&capturing, stream), op);
  pthread_mutex_unlock(&lock);
}

bool pg_capture_end(const void *stream, const void *graph) {
  pthread_mutex_lock(&lock);
  op_set_t *s = find(capturing, stream);
  bool was = s != NULL;
  if (s) {
    HASH_DEL(capturing, s);
    if (graph) {
      drop(&graphs, find(graphs, graph)); /* a handle the runtime reused */
      s->key = graph;
      HASH_ADD_PTR(graphs, key, s);
    } else {
      free(s->ops);
      free(s);
    }
  }
  pthread_mutex_unlock(&lock);
  return was;
}

void pg_capture_instantiate(const void *exec, const void *graph) {
  pthread_mutex_lock(&lock);
  op_set_t *g = find(graphs, graph);
  if (g && g->n) {
    op_set_t *e = find_or_add(&execs, exec);
    for (size_t i = 0; e && i < g->n; i++) append(e, &g->ops[i]);
  }
  pthread_mutex_unlock(&lock);
}

size_t pg_capture_launch_ops(const void *exec, pg_op_t **ops) {
  *ops = NULL;
  pthread_mutex_lock(&lock);
  op_set_t *e = find(execs, exec);
  size_t n = e ? e->n : 0;
  if (n && (*ops = malloc(n * sizeof **ops))) memcpy(*ops, e->ops, n * sizeof **ops);
  pthread_mutex_unlock(&lock);
  return *ops ? n : 0;
}

void pg_capture_exec_destroyed(const void *exec) {
  pthread_mutex_lock(&lock);
  drop(&execs, find(execs, exec));
  pthread_mutex_unlock(&lock);
}

void pg_capture_atfork_prepare(void) { pthread_mutex_lock(&lock); }
void pg_capture_atfork_parent(void) { pthread_mutex_unlock(&lock); }
void pg_capture_atfork_child(void) { pthread_mutex_unlock(&lock); }
