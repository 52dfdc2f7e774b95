/* cg_marks.c: libbench_cgmarks.so, callgrind's client requests for a program that cannot make
 * them itself: bench/torch_copy.py loads it through ctypes when BENCH_CG_MARKS names it, so
 * that bench/instr.sh counts PyTorch's copy loop alone (valgrind --instr-atstart=no: importing
 * PyTorch runs uninstrumented, several times faster), two lengths in one run. Outside valgrind
 * each request is a few instructions that do nothing. */
#include <valgrind/callgrind.h>

#define BENCH_EXPORT __attribute__((visibility("default")))

/* Turns callgrind's counting on (it starts off under --instr-atstart=no). */
BENCH_EXPORT void bench_cg_start(void) { CALLGRIND_START_INSTRUMENTATION; }

/* Sets every thread's counts to zero. */
BENCH_EXPORT void bench_cg_zero(void) { CALLGRIND_ZERO_STATS; }

/* Writes the counts since the last zero to the next dump file (OUT.1, OUT.2, ... for
 * --callgrind-out-file=OUT), named `why`. */
BENCH_EXPORT void bench_cg_dump(const char *why) { CALLGRIND_DUMP_STATS_AT(why); }
