/* sc_unsupported.c: entry points simcuda exports so that libraries importing them load (Python
 * opens extension modules with RTLD_NOW: every import must resolve, even one never called; see
 * issue 10 for what PyTorch 2.15 imports), with the little behaviour that callers need: the
 * profiler switches succeed, the driver entry point lookup answers "not found", devices are each
 * other's peers and have bus ids. What simcuda does not simulate returns cudaErrorNotSupported, with
 * no side effect, so a caller takes its documented fallback path. */
#include <stdio.h>

#include <cuda_profiler_api.h>

#include "sc_internal.h"

#define SC_UNSUPPORTED(name)        \
  do {                              \
    SC_ENTER(#name);                \
    return sc_ret(cudaErrorNotSupported); \
  } while (0)

/* ---- profiler: nothing to start or stop, which is success --------------------------------- */
SC_API cudaError_t cudaProfilerStart(void) { return cudaSuccess; }
SC_API cudaError_t cudaProfilerStop(void) { return cudaSuccess; }

/* ---- peers and bus ids ----------------------------------------------------------------------
 * Every pair of distinct devices can be peers (like GPUs on one NVLink switch); a device is not its
 * own peer. Enabling only records the pair, with CUDA's errors for enabling twice and disabling
 * what was never enabled: simulated copies between arenas work either way (the peer copies are in
 * sc_copy.c). Device d sits on PCI bus d. */
static atomic_uint sc_peer_enabled[SC_MAX_DEVICES]; /* bit p of [d]: d has enabled access to p */

SC_API cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice) {
  SC_ENTER("cudaDeviceCanAccessPeer");
  if (!canAccessPeer) return sc_ret(cudaErrorInvalidValue);
  if (!sc_device_valid(device) || !sc_device_valid(peerDevice))
    return sc_ret(cudaErrorInvalidDevice);
  *canAccessPeer = device != peerDevice;
  return cudaSuccess;
}

SC_API cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags) {
  SC_ENTER("cudaDeviceEnablePeerAccess");
  int dev = sc_device_current();
  if (!sc_device_valid(peerDevice) || peerDevice == dev) return sc_ret(cudaErrorInvalidDevice);
  if (flags != 0) return sc_ret(cudaErrorInvalidValue);
  unsigned bit = 1u << peerDevice;
  if (atomic_fetch_or(&sc_peer_enabled[dev], bit) & bit)
    return sc_ret(cudaErrorPeerAccessAlreadyEnabled);
  return cudaSuccess;
}

SC_API cudaError_t cudaDeviceDisablePeerAccess(int peerDevice) {
  SC_ENTER("cudaDeviceDisablePeerAccess");
  int dev = sc_device_current();
  if (!sc_device_valid(peerDevice) || peerDevice == dev) return sc_ret(cudaErrorInvalidDevice);
  unsigned bit = 1u << peerDevice;
  if (!(atomic_fetch_and(&sc_peer_enabled[dev], ~bit) & bit))
    return sc_ret(cudaErrorPeerAccessNotEnabled);
  return cudaSuccess;
}

SC_API cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device) {
  SC_ENTER("cudaDeviceGetPCIBusId");
  if (!pciBusId || len <= 0) return sc_ret(cudaErrorInvalidValue);
  if (!sc_device_valid(device)) return sc_ret(cudaErrorInvalidDevice);
  snprintf(pciBusId, (size_t)len, "0000:%02x:00.0", (unsigned)device);
  return cudaSuccess;
}

/* ---- inter-process handles ----------------------------------------------------------------- */
SC_API cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *devPtr) {
  (void)handle, (void)devPtr;
  SC_UNSUPPORTED(cudaIpcGetMemHandle);
}
SC_API cudaError_t cudaIpcOpenMemHandle(void **devPtr, cudaIpcMemHandle_t handle,
                                        unsigned int flags) {
  (void)devPtr, (void)handle, (void)flags;
  SC_UNSUPPORTED(cudaIpcOpenMemHandle);
}
SC_API cudaError_t cudaIpcCloseMemHandle(void *devPtr) {
  (void)devPtr;
  SC_UNSUPPORTED(cudaIpcCloseMemHandle);
}
SC_API cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t *handle, cudaEvent_t event) {
  (void)handle, (void)event;
  SC_UNSUPPORTED(cudaIpcGetEventHandle);
}
SC_API cudaError_t cudaIpcOpenEventHandle(cudaEvent_t *event, cudaIpcEventHandle_t handle) {
  (void)event, (void)handle;
  SC_UNSUPPORTED(cudaIpcOpenEventHandle);
}

/* ---- memory pools, graph memory, managed memory -------------------------------------------- */
SC_API cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device) {
  (void)memPool, (void)device;
  SC_UNSUPPORTED(cudaDeviceGetDefaultMemPool);
}
SC_API cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr,
                                           void *value) {
  (void)memPool, (void)attr, (void)value;
  SC_UNSUPPORTED(cudaMemPoolGetAttribute);
}
SC_API cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr,
                                           void *value) {
  (void)memPool, (void)attr, (void)value;
  SC_UNSUPPORTED(cudaMemPoolSetAttribute);
}
SC_API cudaError_t cudaMemPoolSetAccess(cudaMemPool_t memPool,
                                        const struct cudaMemAccessDesc *descList, size_t count) {
  (void)memPool, (void)descList, (void)count;
  SC_UNSUPPORTED(cudaMemPoolSetAccess);
}
SC_API cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep) {
  (void)memPool, (void)minBytesToKeep;
  SC_UNSUPPORTED(cudaMemPoolTrimTo);
}
SC_API cudaError_t cudaDeviceGetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr,
                                                  void *value) {
  (void)device, (void)attr, (void)value;
  SC_UNSUPPORTED(cudaDeviceGetGraphMemAttribute);
}
SC_API cudaError_t cudaDeviceSetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr,
                                                  void *value) {
  (void)device, (void)attr, (void)value;
  SC_UNSUPPORTED(cudaDeviceSetGraphMemAttribute);
}
SC_API cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags) {
  (void)devPtr, (void)size, (void)flags;
  SC_UNSUPPORTED(cudaMallocManaged);
}

/* ---- building graphs node by node (capture is simulated; see sc_capture.c) ----------------- */
SC_API cudaError_t cudaGraphAddNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                    const cudaGraphNode_t *pDependencies,
                                    const cudaGraphEdgeData *dependencyData,
                                    size_t numDependencies,
                                    struct cudaGraphNodeParams *nodeParams) {
  (void)pGraphNode, (void)graph, (void)pDependencies, (void)dependencyData;
  (void)numDependencies, (void)nodeParams;
  SC_UNSUPPORTED(cudaGraphAddNode);
}
SC_API cudaError_t cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle *pHandle_out,
                                                    cudaGraph_t graph,
                                                    unsigned int defaultLaunchValue,
                                                    unsigned int flags) {
  (void)pHandle_out, (void)graph, (void)defaultLaunchValue, (void)flags;
  SC_UNSUPPORTED(cudaGraphConditionalHandleCreate);
}
SC_API cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph,
                                                 const cudaGraphNode_t *dependencies,
                                                 const cudaGraphEdgeData *dependencyData,
                                                 size_t numDependencies,
                                                 enum cudaStreamCaptureMode mode) {
  (void)stream, (void)graph, (void)dependencies, (void)dependencyData, (void)numDependencies;
  (void)mode;
  SC_UNSUPPORTED(cudaStreamBeginCaptureToGraph);
}
SC_API cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t stream,
                                                       cudaGraphNode_t *dependencies,
                                                       const cudaGraphEdgeData *dependencyData,
                                                       size_t numDependencies,
                                                       unsigned int flags) {
  (void)stream, (void)dependencies, (void)dependencyData, (void)numDependencies, (void)flags;
  SC_UNSUPPORTED(cudaStreamUpdateCaptureDependencies);
}
SC_API cudaError_t cudaUserObjectCreate(cudaUserObject_t *object_out, void *ptr,
                                        cudaHostFn_t destroy, unsigned int initialRefcount,
                                        unsigned int flags) {
  (void)object_out, (void)ptr, (void)destroy, (void)initialRefcount, (void)flags;
  SC_UNSUPPORTED(cudaUserObjectCreate);
}
SC_API cudaError_t cudaUserObjectRelease(cudaUserObject_t object, unsigned int count) {
  (void)object, (void)count;
  SC_UNSUPPORTED(cudaUserObjectRelease);
}
SC_API cudaError_t cudaGraphRetainUserObject(cudaGraph_t graph, cudaUserObject_t object,
                                             unsigned int count, unsigned int flags) {
  (void)graph, (void)object, (void)count, (void)flags;
  SC_UNSUPPORTED(cudaGraphRetainUserObject);
}

/* ---- loading device code: simcuda cannot run it -------------------------------------------- */
SC_API cudaError_t cudaLibraryLoadData(cudaLibrary_t *library, const void *code,
                                       enum cudaJitOption *jitOptions, void **jitOptionsValues,
                                       unsigned int numJitOptions,
                                       enum cudaLibraryOption *libraryOptions,
                                       void **libraryOptionValues, unsigned int numLibraryOptions) {
  (void)library, (void)code, (void)jitOptions, (void)jitOptionsValues, (void)numJitOptions;
  (void)libraryOptions, (void)libraryOptionValues, (void)numLibraryOptions;
  SC_UNSUPPORTED(cudaLibraryLoadData);
}
SC_API cudaError_t cudaLibraryLoadFromFile(cudaLibrary_t *library, const char *fileName,
                                           enum cudaJitOption *jitOptions,
                                           void **jitOptionsValues, unsigned int numJitOptions,
                                           enum cudaLibraryOption *libraryOptions,
                                           void **libraryOptionValues,
                                           unsigned int numLibraryOptions) {
  (void)library, (void)fileName, (void)jitOptions, (void)jitOptionsValues, (void)numJitOptions;
  (void)libraryOptions, (void)libraryOptionValues, (void)numLibraryOptions;
  SC_UNSUPPORTED(cudaLibraryLoadFromFile);
}
SC_API cudaError_t cudaLibraryUnload(cudaLibrary_t library) {
  (void)library;
  SC_UNSUPPORTED(cudaLibraryUnload);
}
SC_API cudaError_t cudaLibraryGetKernel(cudaKernel_t *pKernel, cudaLibrary_t library,
                                        const char *name) {
  (void)pKernel, (void)library, (void)name;
  SC_UNSUPPORTED(cudaLibraryGetKernel);
}
SC_API cudaError_t cudaLibraryGetKernelCount(unsigned int *count, cudaLibrary_t lib) {
  (void)count, (void)lib;
  SC_UNSUPPORTED(cudaLibraryGetKernelCount);
}
SC_API cudaError_t cudaLibraryGetGlobal(void **dptr, size_t *bytes, cudaLibrary_t library,
                                        const char *name) {
  (void)dptr, (void)bytes, (void)library, (void)name;
  SC_UNSUPPORTED(cudaLibraryGetGlobal);
}
SC_API cudaError_t cudaLibraryGetManaged(void **dptr, size_t *bytes, cudaLibrary_t library,
                                         const char *name) {
  (void)dptr, (void)bytes, (void)library, (void)name;
  SC_UNSUPPORTED(cudaLibraryGetManaged);
}
SC_API cudaError_t cudaLibraryGetUnifiedFunction(void **fptr, cudaLibrary_t library,
                                                 const char *symbol) {
  (void)fptr, (void)library, (void)symbol;
  SC_UNSUPPORTED(cudaLibraryGetUnifiedFunction);
}
SC_API cudaError_t cudaKernelSetAttributeForDevice(cudaKernel_t kernel, enum cudaFuncAttribute attr,
                                                   int value, int device) {
  (void)kernel, (void)attr, (void)value, (void)device;
  SC_UNSUPPORTED(cudaKernelSetAttributeForDevice);
}
