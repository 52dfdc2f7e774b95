/* Device attributes and properties: an NVIDIA H200 (SXM, compute capability 9.0), as CUDA 13.0
 * reports it, for every attribute number CUDA 13.0 defines (1 to 147; the driver's and the
 * runtime's enums share their numbers). Clients size their launches from these (PyTorch divides
 * by maxThreadsPerMultiProcessor), so none that a real H200 reports as non-zero reads as 0 here.
 * The exceptions are stated: one multiprocessor per device is not claimed (132, as the H200 has),
 * but the arena's size is the global memory (SIMCUDA_DEVICE_MB), the PCI bus is the ordinal, and
 * what simcuda cannot do (IPC, virtual memory management, multicast) reads as unsupported. */
#include "sc_internal.h"

#include <stdio.h>
#include <string.h>

enum { SC_ATTR_MAX = 147 };

/* Value of attribute `attr` on every device; the device-dependent ones are set in
 * sc_device_attribute. 0 entries are the attributes an H200 reports as 0 (or that simcuda does
 * not provide). */
static const int sc_h200[SC_ATTR_MAX + 1] = {
    [1] = 1024,             /* max threads per block */
    [2] = 1024, [3] = 1024, [4] = 64, /* max block dims */
    [5] = 2147483647, [6] = 65535, [7] = 65535, /* max grid dims */
    [8] = 49152,            /* shared memory per block */
    [9] = 65536,            /* constant memory */
    [10] = 32,              /* warp size */
    [11] = 2147483647,      /* max pitch */
    [12] = 65536,           /* registers per block */
    [13] = 1980000,         /* clock rate, kHz */
    [14] = 512,             /* texture alignment */
    [15] = 1,               /* gpu overlap */
    [16] = 132,             /* multiprocessors */
    [19] = 1,               /* can map host memory */
    [21] = 131072, [22] = 131072, [23] = 65536, /* textures 1D, 2D */
    [24] = 16384, [25] = 16384, [26] = 16384,   /* texture 3D */
    [27] = 32768, [28] = 32768, [29] = 2048,    /* texture 2D layered */
    [30] = 512,             /* surface alignment */
    [31] = 1,               /* concurrent kernels */
    [32] = 1,               /* ECC enabled */
    [36] = 3201000,         /* memory clock rate, kHz */
    [37] = 6144,            /* memory bus width, bits */
    [38] = 52428800,        /* L2 cache */
    [39] = 2048,            /* max threads per multiprocessor */
    [40] = 2,               /* async engines (copy engines simcuda overlaps) */
    [41] = 1,               /* unified addressing */
    [42] = 32768, [43] = 2048, /* texture 1D layered */
    [44] = 1,               /* can gather 2D textures (driver only) */
    [45] = 32768, [46] = 32768, /* texture 2D gather */
    [47] = 8192, [48] = 8192, [49] = 32768, /* texture 3D alternate */
    [51] = 32,              /* texture pitch alignment */
    [52] = 32768, [53] = 32768, [54] = 2046, /* cubemaps */
    [55] = 32768, [56] = 131072, [57] = 65536, /* surfaces 1D, 2D */
    [58] = 16384, [59] = 16384, [60] = 16384,  /* surface 3D */
    [61] = 32768, [62] = 2048,                 /* surface 1D layered */
    [63] = 32768, [64] = 32768, [65] = 2048,   /* surface 2D layered */
    [66] = 32768, [67] = 32768, [68] = 2046,   /* surface cubemaps */
    [69] = 268435456, [70] = 131072, [71] = 65000, [72] = 2097120, /* linear textures */
    [73] = 32768, [74] = 32768, /* texture 2D mipmapped */
    [75] = 9, [76] = 0,     /* compute capability */
    [77] = 32768,           /* texture 1D mipmapped */
    [78] = 1, [79] = 1, [80] = 1, /* stream priorities, global and local L1 */
    [81] = 233472,          /* shared memory per multiprocessor */
    [82] = 65536,           /* registers per multiprocessor */
    [83] = 1,               /* managed memory (attribute; the calls are not simulated) */
    [87] = 2,               /* single to double precision ratio */
    [89] = 1,               /* concurrent managed access */
    [90] = 1,               /* compute preemption */
    [91] = 1,               /* host pointer usable for registered memory */
    [95] = 1, [96] = 1,     /* cooperative launch (multi-device: driver only) */
    [97] = 232448,          /* shared memory per block, opt-in */
    [99] = 1,               /* host register */
    [106] = 32,             /* blocks per multiprocessor */
    [108] = 39321600,       /* persisting L2 max */
    [109] = 134213632,      /* access policy window */
    [111] = 1024,           /* reserved shared memory per block */
    [113] = 1,              /* read-only host register */
    [115] = 1,              /* memory pools (attribute; the pool calls are not simulated) */
    [120] = 1,              /* cluster launch */
    [126] = 4,              /* memory sync domains */
    [127] = 1,              /* tensor maps (driver only) */
    [129] = 1,              /* unified function pointers (driver only) */
    [139] = 0x233510de,     /* GPU PCI device id: 10de:2335 */
    [140] = 0x18bf10de,     /* GPU PCI subsystem id */
};

/* Attribute numbers of CUDA 13.0: every number from 1 to 147 is defined by the driver; the
 * runtime's enum names a subset and calls the rest reserved. */
int sc_device_attribute(int attr, int device, int *value) {
  if (attr < 1 || attr > SC_ATTR_MAX) return -1;
  switch (attr) {
  case 33: *value = device; break; /* PCI bus id: the ordinal, as in the properties */
  case 131: case 134: *value = -1; break; /* NUMA ids: none */
  default: *value = sc_h200[attr]; break;
  }
  return 0;
}

static int A(int attr) {
  int v = 0;
  (void)sc_device_attribute(attr, 0, &v);
  return v;
}

void sc_device_properties(struct cudaDeviceProp *prop, int device) {
  memset(prop, 0, sizeof *prop);
  /* Device 0 keeps the one-device name; the others are told apart by a suffix, a PCI bus and a
   * UUID byte. */
  if (device == 0)
    snprintf(prop->name, sizeof prop->name, "simcuda simulated device");
  else
    snprintf(prop->name, sizeof prop->name, "simcuda simulated device %d", device);
  prop->pciBusID = device;
  prop->uuid.bytes[15] = (char)device;
  prop->totalGlobalMem = sc_cfg.device_bytes;
  prop->sharedMemPerBlock = (size_t)A(8);
  prop->regsPerBlock = A(12);
  prop->warpSize = A(10);
  prop->memPitch = (size_t)A(11);
  prop->maxThreadsPerBlock = A(1);
  for (int i = 0; i < 3; i++) {
    prop->maxThreadsDim[i] = A(2 + i);
    prop->maxGridSize[i] = A(5 + i);
  }
  prop->totalConstMem = (size_t)A(9);
  prop->major = A(75);
  prop->minor = A(76);
  prop->textureAlignment = (size_t)A(14);
  prop->texturePitchAlignment = (size_t)A(51);
  prop->multiProcessorCount = A(16);
  prop->canMapHostMemory = A(19);
  prop->maxTexture1D = A(21);
  prop->maxTexture1DMipmap = A(77);
  prop->maxTexture2D[0] = A(22), prop->maxTexture2D[1] = A(23);
  prop->maxTexture2DMipmap[0] = A(73), prop->maxTexture2DMipmap[1] = A(74);
  prop->maxTexture2DLinear[0] = A(70), prop->maxTexture2DLinear[1] = A(71);
  prop->maxTexture2DLinear[2] = A(72);
  prop->maxTexture2DGather[0] = A(45), prop->maxTexture2DGather[1] = A(46);
  for (int i = 0; i < 3; i++) {
    prop->maxTexture3D[i] = A(24 + i);
    prop->maxTexture3DAlt[i] = A(47 + i);
    prop->maxTexture2DLayered[i] = A(27 + i);
    prop->maxSurface3D[i] = A(58 + i);
    prop->maxSurface2DLayered[i] = A(63 + i);
  }
  prop->maxTextureCubemap = A(52);
  prop->maxTexture1DLayered[0] = A(42), prop->maxTexture1DLayered[1] = A(43);
  prop->maxTextureCubemapLayered[0] = A(53), prop->maxTextureCubemapLayered[1] = A(54);
  prop->maxSurface1D = A(55);
  prop->maxSurface2D[0] = A(56), prop->maxSurface2D[1] = A(57);
  prop->maxSurface1DLayered[0] = A(61), prop->maxSurface1DLayered[1] = A(62);
  prop->maxSurfaceCubemap = A(66);
  prop->maxSurfaceCubemapLayered[0] = A(67), prop->maxSurfaceCubemapLayered[1] = A(68);
  prop->surfaceAlignment = (size_t)A(30);
  prop->concurrentKernels = A(31);
  prop->ECCEnabled = A(32);
  prop->asyncEngineCount = A(40);
  prop->unifiedAddressing = A(41);
  prop->memoryBusWidth = A(37);
  prop->l2CacheSize = A(38);
  prop->persistingL2CacheMaxSize = A(108);
  prop->maxThreadsPerMultiProcessor = A(39);
  prop->streamPrioritiesSupported = A(78);
  prop->globalL1CacheSupported = A(79);
  prop->localL1CacheSupported = A(80);
  prop->sharedMemPerMultiprocessor = (size_t)A(81);
  prop->regsPerMultiprocessor = A(82);
  prop->managedMemory = A(83);
  prop->concurrentManagedAccess = A(89);
  prop->computePreemptionSupported = A(90);
  prop->canUseHostPointerForRegisteredMem = A(91);
  prop->cooperativeLaunch = A(95);
  prop->sharedMemPerBlockOptin = (size_t)A(97);
  prop->maxBlocksPerMultiProcessor = A(106);
  prop->accessPolicyMaxWindowSize = A(109);
  prop->reservedSharedMemPerBlock = (size_t)A(111);
  prop->hostRegisterSupported = A(99);
  prop->hostRegisterReadOnlySupported = A(113);
  prop->memoryPoolsSupported = A(115);
  prop->clusterLaunch = A(120);
  prop->unifiedFunctionPointers = A(129);
  prop->deviceNumaId = -1;
  prop->hostNumaId = -1;
  prop->gpuPciDeviceID = (unsigned)A(139);
  prop->gpuPciSubsystemID = (unsigned)A(140);
}
