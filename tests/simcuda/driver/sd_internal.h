/* sd_internal.h: what the simulated driver's (libcuda.so.1's) source files share. The driver is
 * its own library beside simcuda's runtime: today it answers the queries that libraries linking
 * libcuda.so.1 make (PyTorch's libcaffe2_nvrtc.so among them); the runtime will be rebuilt on top
 * of it later, and then the driver owns devices, contexts, memory and streams. */
#ifndef SD_INTERNAL_H
#define SD_INTERNAL_H

#include <cuda.h>

/* Exported; everything else is hidden (-fvisibility=hidden), and libcuda.map lists cu*. */
#define SD_API __attribute__((visibility("default")))

/* The simulated devices (SIMCUDA_DEVICES, as the runtime reads it) and their primary contexts
 * (sd_device.c). */
#define SD_MAX_DEVICES 16
int sd_device_count(void); /* 0 after a bad SIMCUDA_DEVICES */
CUresult sd_check_device(CUdevice dev);

#endif /* SD_INTERNAL_H */
