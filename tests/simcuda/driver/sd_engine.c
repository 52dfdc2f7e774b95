/* sd_engine.c: the driver's one private entry, simcuda_driver_engine(name): the address of an
 * engine function by name. simcuda-only (CUDA's driver has nothing like it). simcuda's runtime gets
 * it from cuGetProcAddress (which answers the name "simcuda_driver_engine", whatever the version
 * and flags) and reaches through it what it does not track and so forwards unchanged (the names in
 * ../rt_forward.inc: properties, graphs, registration, ...), and the engine's bookkeeping of a
 * runtime call (simcuda_rt_*: the runtime's lazy init, fault injection and last error, which the
 * engine keeps, one per process whichever runtime is linked). This file does not see the CUDA
 * prototypes: each function is only an address here. */
#include <stddef.h>
#include <string.h>

#define SD_API __attribute__((visibility("default")))

#define SR_FORWARD(name) extern void name(void);
#include "../rt_forward.inc"
#undef SR_FORWARD

extern void sc_rt_enter(void);
extern void sc_ret(void);
extern void sc_runtime_version(void);
extern void sc_kernel_registered(void);
extern void sc_handle_of(void);
extern void sc_func_of(void);

typedef struct sd_engine_fn {
  const char *name;
  void (*fn)(void);
} sd_engine_fn;

static const sd_engine_fn sd_engine_fns[] = {
#define SR_FORWARD(name) {#name, name},
#include "../rt_forward.inc"
#undef SR_FORWARD
    /* int simcuda_rt_enter(const char *name): SC_ENTER for a runtime entry point */
    {"simcuda_rt_enter", sc_rt_enter},
    /* int simcuda_rt_ret(int err): records err as the last error (unless success/not ready) */
    {"simcuda_rt_ret", sc_ret},
    /* int simcuda_rt_version(void): SIMCUDA_RUNTIME_VERSION (13000 or 12080) */
    {"simcuda_rt_version", sc_runtime_version},
    /* bool simcuda_rt_kernel_registered(const void *fn) */
    {"simcuda_rt_kernel_registered", sc_kernel_registered},
    /* cudaKernel_t simcuda_rt_kernel_handle(const void *fn): also its CUfunction and CUkernel */
    {"simcuda_rt_kernel_handle", sc_handle_of},
    /* const void *simcuda_rt_kernel_func(cudaKernel_t k) */
    {"simcuda_rt_kernel_func", sc_func_of},
};

SD_API void *simcuda_driver_engine(const char *name) {
  if (!name) return NULL;
  for (size_t i = 0; i < sizeof sd_engine_fns / sizeof sd_engine_fns[0]; i++)
    if (strcmp(sd_engine_fns[i].name, name) == 0) return (void *)sd_engine_fns[i].fn;
  return NULL;
}
