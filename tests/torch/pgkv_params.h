/* pgkv_params.h: the parameter types of the paged-KV transfer kernels, shared by the C entry
 * points (pgkv_api.c), the simcuda kernels and the nvcc kernels, so every build agrees on every
 * size and offset. The chunks are passed by value as raw host pointers, in the shape of LMCache's
 * multi_layer_block_kv_transfer: struct { T *objects[4]; int num_objects; }. */
#ifndef PGKV_PARAMS_H
#define PGKV_PARAMS_H

#include <stdint.h>

#define PGKV_MAX_OBJECTS 4
#define PGKV_THREADS 128

/* Up to four host chunks, by value: the kernel reaches them over UVA. */
typedef struct pgkv_objects {
  uint8_t *objects[PGKV_MAX_OBJECTS];
  int num_objects;
} pgkv_objects_t;

/* The paged cache is kv[num_blocks][block_bytes]; chunk c holds blocks_per_chunk blocks, the
 * i-th of which lives in the cache at block ids[c * blocks_per_chunk + i]. */
typedef struct pgkv_layout {
  int64_t block_bytes; /* a multiple of 16 */
  int32_t blocks_per_chunk;
  int32_t reserved;
  int64_t spin_ns; /* the kernel first waits this long (a real GPU's stand-in for latency) */
} pgkv_layout_t;

#endif /* PGKV_PARAMS_H */
