/* sc_errors.c: cudaGetErrorName / cudaGetErrorString for the error codes simcuda returns and the
 * common ones programs print. Unknown codes get CUDA's own fallback strings. */
#include "sc_internal.h"

#define SC_ERRORS(X)                                                                            \
  X(cudaSuccess, "no error")                                                                    \
  X(cudaErrorInvalidValue, "invalid argument")                                                  \
  X(cudaErrorMemoryAllocation, "out of memory")                                                 \
  X(cudaErrorInitializationError, "initialization error")                                      \
  X(cudaErrorCudartUnloading, "driver shutting down")                                           \
  X(cudaErrorInvalidConfiguration, "invalid configuration argument")                            \
  X(cudaErrorInvalidPitchValue, "invalid pitch argument")                                       \
  X(cudaErrorInvalidSymbol, "invalid device symbol")                                            \
  X(cudaErrorInvalidHostPointer, "invalid host pointer")                                        \
  X(cudaErrorInvalidDevicePointer, "invalid device pointer")                                    \
  X(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy")                       \
  X(cudaErrorMissingConfiguration, "__global__ function call is not configured")               \
  X(cudaErrorInvalidDeviceFunction, "invalid device function")                                  \
  X(cudaErrorNoDevice, "no CUDA-capable device is detected")                                    \
  X(cudaErrorInvalidDevice, "invalid device ordinal")                                           \
  X(cudaErrorStartupFailure, "device kernel image is invalid")                                  \
  X(cudaErrorInvalidKernelImage, "device kernel image is invalid")                              \
  X(cudaErrorInvalidResourceHandle, "invalid resource handle")                                  \
  X(cudaErrorIllegalState, "the operation cannot be performed in the present state")           \
  X(cudaErrorNotReady, "device not ready")                                                      \
  X(cudaErrorIllegalAddress, "an illegal memory access was encountered")                        \
  X(cudaErrorLaunchOutOfResources, "too many resources requested for launch")                   \
  X(cudaErrorLaunchTimeout, "the launch timed out and was terminated")                          \
  X(cudaErrorHostMemoryAlreadyRegistered, "part or all of the requested memory range is already mapped") \
  X(cudaErrorHostMemoryNotRegistered, "pointer does not correspond to a registered memory region") \
  X(cudaErrorLaunchFailure, "unspecified launch failure")                                       \
  X(cudaErrorNotPermitted, "operation not permitted")                                           \
  X(cudaErrorNotSupported, "operation not supported")                                           \
  X(cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is capturing")      \
  X(cudaErrorStreamCaptureInvalidated, "operation failed due to a previous error during capture") \
  X(cudaErrorStreamCaptureMerge, "operation would result in a merge of separate capture sequences") \
  X(cudaErrorStreamCaptureUnmatched, "capture was not ended in the same stream as it began")     \
  X(cudaErrorStreamCaptureUnjoined, "capturing stream has unjoined work")                       \
  X(cudaErrorStreamCaptureIsolation, "dependency created on uncaptured work in another stream") \
  X(cudaErrorStreamCaptureImplicit, "operation would make the legacy stream depend on a capturing blocking stream") \
  X(cudaErrorCapturedEvent, "operation not permitted on an event last recorded in a capturing stream") \
  X(cudaErrorStreamCaptureWrongThread, "attempt to terminate a thread-local capture sequence from another thread") \
  X(cudaErrorUnknown, "unknown error")

SC_API const char *cudaGetErrorName(cudaError_t error) {
  switch ((int)error) {
#define SC_NAME(e, msg) \
  case e:               \
    return #e;
    SC_ERRORS(SC_NAME)
#undef SC_NAME
  default:
    return "cudaErrorUnknown";
  }
}

SC_API const char *cudaGetErrorString(cudaError_t error) {
  switch ((int)error) {
#define SC_STRING(e, msg) \
  case e:                 \
    return msg;
    SC_ERRORS(SC_STRING)
#undef SC_STRING
  default:
    return "unrecognized error code";
  }
}
