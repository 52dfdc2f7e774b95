/* sim_runtime_fns.h: the runtime functions the device-operations table needs, taken from the
 * simulated runtime the unit tests link: what the tracker's and core's tests hand to the shim's
 * runtime backend (pg_devops_runtime). A test adds what it needs besides (the device calls) or
 * swaps one in (a counting event_create_with_flags). */
#ifndef SIM_RUNTIME_FNS_H
#define SIM_RUNTIME_FNS_H

#include <cuda_runtime_api.h>

#include "pg_devops_runtime.h"

static inline pg_cudart_fns_t sim_runtime_fns(void) {
  return (pg_cudart_fns_t){
      .event_create_with_flags = cudaEventCreateWithFlags,
      .event_record = cudaEventRecord,
      .event_query = cudaEventQuery,
      .event_synchronize = cudaEventSynchronize,
      .event_destroy = cudaEventDestroy,
      .stream_get_flags = cudaStreamGetFlags,
  };
}

#endif /* SIM_RUNTIME_FNS_H */
