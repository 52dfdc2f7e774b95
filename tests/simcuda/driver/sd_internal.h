/* sd_internal.h: what the simulated driver's (libcuda.so.1's) source files share. The driver is
 * built on simcuda's engine (the sc_*.c files, linked into the same library): it owns devices,
 * contexts, memory, streams, events and kernels, and simcuda's runtime (libcudart.so.13 and
 * libcudart_static.a) reaches it only through cuGetProcAddress. */
#ifndef SD_INTERNAL_H
#define SD_INTERNAL_H

#include <cuda.h>

#include "sc_engine.h"

/* Exported; everything else is hidden (-fvisibility=hidden), and libcuda.map lists cu*. */
#define SD_API __attribute__((visibility("default")))

/* The simulated devices (SIMCUDA_DEVICES, read by the engine) and their primary contexts
 * (sd_device.c). */
#define SD_MAX_DEVICES SC_MAX_DEVICES
int sd_device_count(void); /* 0 after a bad SIMCUDA_DEVICES */
CUresult sd_check_device(CUdevice dev);
CUcontext sd_primary_ctx(int device);
int sd_ctx_device(CUcontext ctx); /* -1 for anything but a primary context */

/* Opening of every driver entry point that touches the engine: lazy init, the fork rule, fault
 * injection (SIMCUDA_FAIL names driver functions by the base name cuGetProcAddress is asked). */
CUresult sd_enter(const char *name);
CUresult sd_result(cudaError_t err);
#define SD_ENTER(name)                   \
  do {                                   \
    CUresult sd_enter_err_ = sd_enter(name); \
    if (sd_enter_err_ != CUDA_SUCCESS) return sd_enter_err_; \
  } while (0)
/* Runs an engine operation and returns its CUresult. The engine records failures as the
 * runtime's last error; a driver call must not change what cudaGetLastError says, so the record
 * is put back (the runtime records what the driver returns to it itself). */
#define SD_RUN(expr)                                 \
  do {                                               \
    cudaError_t sd_saved_ = sc_last_error_get();     \
    cudaError_t sd_err_ = (expr);                    \
    sc_last_error_set(sd_saved_);                    \
    return sd_result(sd_err_);                       \
  } while (0)

/* The function of a row of pinguard's table of entry points under its exported name, plain or
 * (ptsz) its per-thread twin where it has one (sd_entries.c); NULL for a name not in the table.
 * For the rows this driver implements natively, that is the native function. */
void *sd_entry_address(const char *symbol, bool ptsz);

/* The engine's private entry (sd_engine.c): the address of an engine function by name. */
void *simcuda_driver_engine(const char *name);

#endif /* SD_INTERNAL_H */
