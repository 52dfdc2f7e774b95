/* pg_copy.c: batches of copies, in both layers and both ABIs (cudaMemcpyBatchAsync,
 * cuMemcpyBatchAsync and _v2). The other copies describe their host operands inline, in their
 * interceptors (pg_entry_kinds.h, with pg_op.h's helpers); which spans are really pinned is decided in
 * core/, from the tracker's regions and the runtime's pointer attributes. */
#include <stddef.h>
#include <string.h>

#include "pg_op.h"

static bool batch_abi_is_128(void) {
  int v = pg_runtime_version();
  return v >= 12080 && v < 13000;
}

static int batch_forward(const pg_batch_t *b, int missing) {
  void *real = pg_real(b->id);
  if (!real) return missing;
  struct cudaMemcpyAttributes *attrs = b->attrs;
  if (b->with_fail_idx)
    return ((pg_batch_fn_128)real)(b->dsts, b->srcs, b->sizes, b->count, attrs, b->attrs_idxs,
                                   b->num_attrs, b->fail_idx, b->stream);
  return ((pg_batch_fn_13)real)(b->dsts, b->srcs, b->sizes, b->count, attrs, b->attrs_idxs,
                                b->num_attrs, b->stream);
}

/* When copy i reads its source: attrs[a] applies to copies attrs_idxs[a] to attrs_idxs[a+1] - 1.
 * *a is the attribute of the copy before i (copies are described in increasing order). */
static pg_src_order_t batch_order(const pg_batch_t *b, size_t i, size_t *a) {
  if (!b->attrs || !b->attrs_idxs || !b->num_attrs) return PG_SRC_STREAM;
  while (*a + 1 < b->num_attrs && b->attrs_idxs[*a + 1] <= i) (*a)++;
  switch (((const struct cudaMemcpyAttributes *)b->attrs)[*a].srcAccessOrder) {
    case cudaMemcpySrcAccessOrderDuringApiCall: return PG_SRC_AT_CALL;
    case cudaMemcpySrcAccessOrderAny: return PG_SRC_EARLY;
    default: return PG_SRC_STREAM;
  }
}

/* Copies are described in groups that fit one pg_op; every group is checked before the single
 * real call and recorded after it, all on the same stream. Like cudaMemcpyDefault, either side
 * of each copy may be host memory. */
#define PG_BATCH_GROUP (PG_OP_MAX_SPANS / 2)

static void batch_group(pg_op_t *op, const pg_batch_t *b, const char *api, bool ptsz,
                        const pg_stack_t *st, size_t gi, size_t *a) {
  pg_op_begin(op, api, "batch copy", b->stream, ptsz);
  pg_stack_copy(&op->stack, st);
  for (size_t i = gi * PG_BATCH_GROUP; i < b->count && i < (gi + 1) * PG_BATCH_GROUP; i++) {
    pg_op_add_source(op, b->srcs[i], b->sizes[i], batch_order(b, i, a));
    pg_op_add_span(op, b->dsts[i], b->sizes[i], PG_DIR_WRITE);
  }
}

int pg_shim_batch(const pg_batch_t *b, const char *api, bool ptsz, const pg_stack_t *st,
                  int missing) {
  if (!pg_shim_start_tracking() || !b->dsts || !b->srcs || !b->sizes)
    return batch_forward(b, missing);
  size_t ngroups = (b->count + PG_BATCH_GROUP - 1) / PG_BATCH_GROUP, a = 0;
  pg_reentry_t r = pg_shim_enter();
  pg_op_t op;
  for (size_t gi = 0; gi < ngroups; gi++) {
    batch_group(&op, b, api, ptsz, st, gi, &a);
    pg_on_op_begin(&op);
  }
  int err = batch_forward(b, missing);
  if (err == 0) {
    a = 0;
    for (size_t gi = 0; gi < ngroups; gi++) {
      batch_group(&op, b, api, ptsz, st, gi, &a);
      pg_on_op_end(&op);
    }
  }
  pg_shim_leave(r);
  return err;
}

/* pg_op.h. Not inlined: a 13.0 caller passed no 9th argument, so the entry point must never
 * write to that stack slot (the caller's), which the compiler may do with a parameter it rewrites
 * in place; here they are this function's own copies. */
__attribute__((noinline)) int pg_shim_runtime_batch(
    enum pg_hook_id id, const char *api, bool ptsz, void *const *dsts, const void *const *srcs,
    const size_t *sizes, size_t count, struct cudaMemcpyAttributes *attrs, size_t *attrs_idxs,
    size_t num_attrs, size_t *fail_idx, cudaStream_t s128, const pg_stack_t *st) {
  bool abi128 = batch_abi_is_128();
  /* In the 13.0 ABI the 8th argument is the stream; the 9th was never passed. */
  pg_batch_t b = {id, abi128, dsts, srcs, sizes, count, attrs, attrs_idxs, num_attrs,
                  abi128 ? fail_idx : NULL, abi128 ? s128 : (cudaStream_t)fail_idx};
  return pg_shim_batch(&b, api, ptsz, st, cudaErrorSharedObjectSymbolNotFound);
}

/* The driver's batches take the runtime's types (pg_shim_batch describes them). */
_Static_assert((int)CU_MEMCPY_SRC_ACCESS_ORDER_STREAM == (int)cudaMemcpySrcAccessOrderStream &&
                   (int)CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL ==
                       (int)cudaMemcpySrcAccessOrderDuringApiCall &&
                   (int)CU_MEMCPY_SRC_ACCESS_ORDER_ANY == (int)cudaMemcpySrcAccessOrderAny,
               "driver and runtime source access orders differ");
_Static_assert(sizeof(CUmemcpyAttributes) == sizeof(struct cudaMemcpyAttributes) &&
                   offsetof(CUmemcpyAttributes, srcAccessOrder) ==
                       offsetof(struct cudaMemcpyAttributes, srcAccessOrder),
               "driver and runtime copy attributes differ");
_Static_assert(sizeof(CUdeviceptr) == sizeof(void *), "a CUdeviceptr is not an address");
