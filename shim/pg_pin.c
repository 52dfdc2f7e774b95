/* pg_pin.c: what the interceptors that create and destroy pinned host memory share, in both
 * layers (pg_entry_kinds.h: host_alloc, malloc_host, host_register, free_host, host_unregister).
 * libcudart is linked -Bsymbolic, so cudaMallocHost never reaches our cudaHostAlloc: each entry
 * point is wrapped on its own. Freeing or unregistering checks in-flight accesses first. */
#include "pg_intercept.h"
#include "pg_shim.h"

unsigned pg_shim_register_kind(void *p, size_t n) {
  if (!pg_shim_start_tracking()) return 0;
  pg_reentry_t g = pg_shim_enter();
  unsigned kind = pg_on_register_begin(p, n);
  pg_shim_leave(g);
  return kind;
}

/* The driver's flags are the runtime's, and core's are both. */
_Static_assert(CU_MEMHOSTALLOC_PORTABLE == cudaHostAllocPortable &&
                   CU_MEMHOSTALLOC_DEVICEMAP == cudaHostAllocMapped &&
                   CU_MEMHOSTALLOC_WRITECOMBINED == cudaHostAllocWriteCombined,
               "driver and runtime host-allocation flags differ");
_Static_assert(CU_MEMHOSTREGISTER_PORTABLE == cudaHostRegisterPortable &&
                   CU_MEMHOSTREGISTER_DEVICEMAP == cudaHostRegisterMapped &&
                   CU_MEMHOSTREGISTER_IOMEMORY == cudaHostRegisterIoMemory &&
                   CU_MEMHOSTREGISTER_READ_ONLY == cudaHostRegisterReadOnly,
               "driver and runtime registration flags differ");
_Static_assert(PG_REGISTER_IOMEMORY == cudaHostRegisterIoMemory &&
                   PG_REGISTER_READ_ONLY == cudaHostRegisterReadOnly,
               "core's registration flags differ from the runtime's");

/* Free and unregister share one shape, in both API layers: check and forget, forward, remember
 * again on failure. */
int pg_shim_unpin(void *p, bool is_free, const char *api, const pg_stack_t *st,
                  int (*forward)(void *p)) {
  pg_reentry_t g = pg_shim_enter();
  pg_unpin_t saved;
  pg_on_unpin_begin(p, is_free, api, st, &saved);
  int err = forward(p);
  pg_on_unpin_end(&saved, err == 0);
  pg_shim_leave(g);
  return err;
}

