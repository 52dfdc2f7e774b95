/* sd_errors.c: cuGetErrorName / cuGetErrorString for the driver's error codes that simcuda's
 * driver returns, and the common ones programs print. An unknown code is CUDA_ERROR_INVALID_VALUE
 * with a NULL string, as in CUDA. */
#include <stddef.h>

#include "sd_internal.h"

#define SD_ERRORS(X)                                                                  \
  X(CUDA_SUCCESS, "no error")                                                         \
  X(CUDA_ERROR_INVALID_VALUE, "invalid argument")                                     \
  X(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")                                        \
  X(CUDA_ERROR_NOT_INITIALIZED, "initialization error")                               \
  X(CUDA_ERROR_DEINITIALIZED, "driver shutting down")                                 \
  X(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected")                       \
  X(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal")                              \
  X(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid")                       \
  X(CUDA_ERROR_INVALID_CONTEXT, "invalid device context")                             \
  X(CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device") \
  X(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle")                             \
  X(CUDA_ERROR_NOT_FOUND, "named symbol not found")                                   \
  X(CUDA_ERROR_NOT_READY, "device not ready")                                         \
  X(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered")           \
  X(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure")                           \
  X(CUDA_ERROR_NOT_PERMITTED, "operation not permitted")                              \
  X(CUDA_ERROR_NOT_SUPPORTED, "operation not supported")                              \
  X(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state") \
  X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch")    \
  X(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,                                        \
    "part or all of the requested memory range is already mapped")                    \
  X(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,                                            \
    "pointer does not correspond to a registered memory region")                      \
  X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing") \
  X(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,                                            \
    "operation failed due to a previous error during capture")                        \
  X(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,                                               \
    "operation would make the legacy stream depend on a capturing blocking stream")   \
  X(CUDA_ERROR_CAPTURED_EVENT,                                                        \
    "operation not permitted on an event last recorded in a capturing stream")        \
  X(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,                                           \
    "attempt to terminate a thread-local capture sequence from another thread")       \
  X(CUDA_ERROR_UNKNOWN, "unknown error")

SD_API CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  switch (error) {
#define SD_NAME(code, text) \
  case code: *pStr = #code; return CUDA_SUCCESS;
    SD_ERRORS(SD_NAME)
#undef SD_NAME
  default: *pStr = NULL; return CUDA_ERROR_INVALID_VALUE;
  }
}

SD_API CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  switch (error) {
#define SD_TEXT(code, text) \
  case code: *pStr = text; return CUDA_SUCCESS;
    SD_ERRORS(SD_TEXT)
#undef SD_TEXT
  default: *pStr = NULL; return CUDA_ERROR_INVALID_VALUE;
  }
}
