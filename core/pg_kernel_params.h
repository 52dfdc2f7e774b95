/* pg_kernel_params.h: what a kernel launch touches. A kernel reaches pinned host memory through
 * raw pointers in its parameters, so every 8-byte-aligned word of every parameter
 * that could be an address becomes a span of unknown direction, up to the end of the region it
 * points into (n == 0; pg_on_op_begin keeps only the words inside tracked regions).
 *
 * The parameter layout (offsets and sizes) is asked of the API layer once per function, through
 * a callback (the runtime answers with cudaFuncGetParamInfo), and cached. Launches that name a
 * kernel handle instead of the function (nvcc 13's __cudaLaunchKernel) find the function through
 * the handles remembered when they were made. Both caches are one lock-free table
 * implementation: fixed-size open addressing, each slot published once with a compare-and-swap
 * and never freed, so readers take no lock and a launch never allocates once its kernel is
 * known. A process with more kernels than fit (1024 functions, 4096 handles, in any one probe
 * neighbourhood) launches the rest unscanned. */
#ifndef PG_KERNEL_PARAMS_H
#define PG_KERNEL_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pg_engine_types.h" /* pg_op_t */

#define PG_KP_MAX_PARAMS 64
#define PG_KP_MAX_WORDS 256 /* pointer words listed per function (else the layout is walked) */

typedef struct pg_kparams {
  const void *func;
  const char *name;  /* the kernel's name, "kernel" when the API layer gives none */
  int nparams;       /* -1: the API layer gave no parameter information; 0: none taken */
  uint16_t offset[PG_KP_MAX_PARAMS];
  uint16_t size[PG_KP_MAX_PARAMS];
  /* Every word the scan reads, listed once when the layout is cached (pg_kparams_get): word w
   * is bytes (word[w] & 0xffff) .. +8 of parameter word[w] >> 16. nwords < 0: too many to list.
   * one_word_each: word w is all of parameter w (every parameter 8 bytes, 8-aligned). */
  int nwords;
  bool one_word_each;
  uint32_t word[PG_KP_MAX_WORDS];
} pg_kparams_t;

/* Fills kp (func is already set) for a function: nparams and offsets/sizes, or nparams -1 when
 * there is no information (cached like any answer); name. Returns false when it could not ask
 * now: nothing is cached and the next launch asks again. */
typedef bool (*pg_kparams_describe_fn)(const void *func, pg_kparams_t *kp);

/* One parameter's offset and size, asked of the API layer (cudaFuncGetParamInfo,
 * cuFuncGetParamInfo): PG_KP_PARAM with them filled, PG_KP_END past the last parameter (the
 * API's invalid-value answer), PG_KP_UNKNOWN without information. */
enum { PG_KP_UNKNOWN = -1, PG_KP_END = 0, PG_KP_PARAM = 1 };
typedef int (*pg_kparams_param_fn)(const void *func, size_t index, size_t *offset, size_t *size);

/* For describe callbacks: fills kp->offset, size and nparams by asking param for parameters 0,
 * 1, ... until it says no: nparams 0 for a function known to take none (PG_KP_END at once), -1
 * when it knows none (PG_KP_UNKNOWN at once, or param is NULL). */
void pg_kparams_fill_layout(pg_kparams_t *kp, pg_kparams_param_fn param);

/* The cached layout of func, described on first sight (and its word list made); NULL when
 * describe declined or the cache has no room for it. The calling thread's last answer is
 * checked first, inline (a launch loop asks for one function over and over; entries are never
 * freed). */
extern __thread const pg_kparams_t *pg_kparams_last;
const pg_kparams_t *pg_kparams_get_slow(const void *func, pg_kparams_describe_fn describe);
static inline const pg_kparams_t *pg_kparams_get(const void *func,
                                                 pg_kparams_describe_fn describe) {
  const pg_kparams_t *last = pg_kparams_last;
  if (__builtin_expect(last && last->func == func, 1)) return last;
  return pg_kparams_get_slow(func, describe);
}

/* The words of a launch's argument array (laid out as kp says) that may point into pinned
 * memory (pg_pinmap.h: a granule holding some), in parameter order, at most cap of them into
 * out; returns how many. The launch's quick reject too: 0 says it touches no pinned memory
 * (nothing to capture, check or record). About 9 instructions per pointer-sized parameter when
 * none may (reads the words, keeps none; a group of four holding one is read again). */
size_t pg_kparams_candidates(const pg_kparams_t *kp, void *const *args, uintptr_t *out,
                             size_t cap);
/* Each candidate word (>= 4096) becomes a span of unknown direction up to its region's end. */
void pg_kparams_add_spans(pg_op_t *op, const uintptr_t *words, size_t n);

/* Fills a kernel launch's op from its layout and argument array: op->what becomes the kernel's
 * name and each plausible pointer word a span. Without a layout (kp NULL or nparams < 0) the
 * launch is counted unscanned (print_stats) and gets no span. */
void pg_kparams_build_op(pg_op_t *op, const pg_kparams_t *kp, void *const *args);

/* Kernel handles (cudaKernel_t, CUkernel): remember the function one was made for, and find it
 * again at launch (NULL: a handle never seen made). The first function remembered wins. */
void pg_kparams_remember_handle(const void *handle, const void *func);
const void *pg_kparams_func_of_handle(const void *handle);

#endif /* PG_KERNEL_PARAMS_H */
