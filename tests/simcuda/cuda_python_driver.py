"""cuda_python_driver.py: cuda-python's driver bindings (cuda.bindings.driver, which torch's venv
carries) on simcuda's libcuda.so.1. cuda-python dlopens the driver and takes every function
through cuGetProcAddress_v2; this pins memory, copies host to device to host on a stream around a
memset, checks the bytes, and shows that the device-to-host copy was still in flight right after
it was queued. Run with LD_LIBRARY_PATH at simcuda's directory (simcuda.cuda_python)."""
import ctypes
import os
import sys

try:
    from cuda.bindings import driver as cu
except ImportError:
    print("simcuda.cuda_python: skipped: no cuda.bindings", file=sys.stderr)
    sys.exit(77)


def ok(result):
    err, *rest = result
    if err != cu.CUresult.CUDA_SUCCESS:
        raise SystemExit(f"simcuda.cuda_python: {err}")
    return rest[0] if len(rest) == 1 else rest


N = 1 << 16
ok(cu.cuInit(0))
name = ok(cu.cuDeviceGetName(64, ok(cu.cuDeviceGet(0))))
assert name.startswith(b"simcuda"), name
host = ok(cu.cuMemHostAlloc(N, 0))
dev = ok(cu.cuMemAlloc(N))
stream = ok(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING))
ctypes.memset(host, 7, N)
ok(cu.cuMemcpyHtoDAsync(dev, host, N, stream))
ok(cu.cuMemsetD8Async(dev, 9, 16, stream))
ok(cu.cuMemcpyDtoHAsync(host, dev, N, stream))
(err,) = cu.cuStreamQuery(stream)
assert err == cu.CUresult.CUDA_ERROR_NOT_READY, err
assert ctypes.string_at(host, 1) == b"\x07", "the copies ran at once"
ok(cu.cuStreamSynchronize(stream))
data = ctypes.string_at(host, N)
assert data[:16] == b"\x09" * 16 and data[16:] == b"\x07" * (N - 16), data[:32]
mtype = ok(cu.cuPointerGetAttribute(
    cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, host))
assert mtype == cu.CUmemorytype.CU_MEMORYTYPE_HOST, mtype
ok(cu.cuStreamDestroy(stream))
ok(cu.cuMemFree(dev))
ok(cu.cuMemFreeHost(host))
(err,) = cu.cuMemFreeHost(host)
assert err == cu.CUresult.CUDA_ERROR_INVALID_VALUE, err
print(f"simcuda.cuda_python: {os.path.basename(cu.__file__)} on simcuda's driver: all right")
