/* pg_capture.h: operations recorded by stream capture. An op enqueued on a capturing stream does
 * not run; it runs at every launch of the graph the capture becomes. The ops are kept per
 * capturing stream, moved to their graph when the capture ends, copied to each executable graph
 * instantiated from it, and handed back at each launch. */
#ifndef PG_CAPTURE_H
#define PG_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>

#include "pg_engine_types.h"

/* A capture began on stream s (its begin call succeeded). */
void pg_capture_begin(const void *stream);
/* Records op into the capture on stream s. */
void pg_capture_add(const void *stream, const pg_op_t *op);
/* The end call of a capture on s returned: its ops become graph's (graph NULL: the capture
 * failed, they go). True when s had a capture begun (so one capture ended); false for a stream
 * that was not capturing, whose end call failed and ended nothing. */
bool pg_capture_end(const void *stream, const void *graph);
/* exec was instantiated from graph: it runs graph's ops. */
void pg_capture_instantiate(const void *exec, const void *graph);
/* A copy of exec's ops for one launch, in *ops (free() it); their count. */
size_t pg_capture_launch_ops(const void *exec, pg_op_t **ops);
void pg_capture_exec_destroyed(const void *exec);

void pg_capture_atfork_prepare(void);
void pg_capture_atfork_parent(void);
void pg_capture_atfork_child(void);

#endif /* PG_CAPTURE_H */
