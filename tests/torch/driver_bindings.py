"""driver_bindings.py: a real third-party driver client under pinguard. cuda-python's
cuda.bindings.driver (which torch's environment carries) dlopens libcuda.so.1 and takes every
function through cuGetProcAddress_v2, so no cu* symbol is ever called by name; pinguard must get
in front at the dlsym and hand out its wrappers.
    driver_bindings.py bug|fixed
bug: cuMemFreeHost while a device-to-host copy into the buffer is still in flight (pinguard
reports free-during-device-access, or in enforce waits for the copy); fixed: the stream is
synchronized first. Run under LD_PRELOAD=libpinguard.so with LD_LIBRARY_PATH at simcuda."""
import sys

try:
    from cuda.bindings import driver as cu
except ImportError:
    print("driver_bindings: skipped: no cuda.bindings", file=sys.stderr)
    sys.exit(77)


def ok(result):
    err, *rest = result
    if err != cu.CUresult.CUDA_SUCCESS:
        raise SystemExit(f"driver_bindings: {err}")
    return rest[0] if len(rest) == 1 else rest


bug = sys.argv[1:] == ["bug"]
N = 1 << 18
ok(cu.cuInit(0))
ctx = ok(cu.cuDevicePrimaryCtxRetain(ok(cu.cuDeviceGet(0))))
ok(cu.cuCtxSetCurrent(ctx))
host = ok(cu.cuMemHostAlloc(N, 0))
dev = ok(cu.cuMemAlloc(N))
stream = ok(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING))
ok(cu.cuMemsetD8Async(dev, 9, N, stream))
ok(cu.cuMemcpyDtoHAsync(host, dev, N, stream))
if not bug:
    ok(cu.cuStreamSynchronize(stream))
ok(cu.cuMemFreeHost(host))
ok(cu.cuStreamSynchronize(stream))
ok(cu.cuMemFree(dev))
ok(cu.cuStreamDestroy(stream))
print("driver_bindings: done")
