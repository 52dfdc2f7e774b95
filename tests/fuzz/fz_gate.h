/* fz_gate.h: the fuzzer's stream gates (fz_gate.c). */
#ifndef FZ_GATE_H
#define FZ_GATE_H

#include <stdint.h>

uint64_t fz_gate_new(void);       /* a new, closed gate's id */
/* Enqueues gate id on the stream (a cudaStream_t) where pinguard cannot see it; 0 on success. */
int fz_gate_launch(void *stream, uint64_t id);
void fz_gate_wait(uint64_t id);   /* blocks until gate id is open (a host function's body) */
void fz_gate_open_all(void);      /* opens every gate made so far */
uint64_t fz_gate_opened(void);    /* every gate with an id up to this is open */
/* Openings finished, and openings started, by threads other than the caller. No other thread's
 * opening overlapped an interval of the caller's when fz_gate_others_done() read at its start
 * equals fz_gate_others_begun() read at its end. */
uint64_t fz_gate_others_done(void);
uint64_t fz_gate_others_begun(void);

#endif
