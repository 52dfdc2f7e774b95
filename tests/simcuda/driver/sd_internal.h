/* sd_internal.h: what the simulated driver's (libcuda.so.1's) source files share. The driver is
 * its own library beside simcuda's runtime: today it answers the queries that libraries linking
 * libcuda.so.1 make (PyTorch's libcaffe2_nvrtc.so among them); the runtime will be rebuilt on top
 * of it later, and then the driver owns devices, contexts, memory and streams. */
#ifndef SD_INTERNAL_H
#define SD_INTERNAL_H

#include <cuda.h>

/* Exported; everything else is hidden (-fvisibility=hidden), and libcuda.map lists cu*. */
#define SD_API __attribute__((visibility("default")))

/* The one simulated device and its primary context (sd_device.c). */
#define SD_DEVICE_COUNT 1
CUresult sd_check_device(CUdevice dev);

#endif /* SD_INTERNAL_H */
