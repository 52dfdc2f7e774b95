"""probes.py: the selftest's checks that must run inside a process started under the preload.
`python3 probes.py NAME [args]` runs one and prints one line `PGRESULT {json}`; the selftest runs
each in its own child, so a crash or a hang there becomes a FAIL line instead of a dead selftest.

CUDA calls go through ctypes.CDLL(None), the process's global scope, where the preloaded
libpinguard.so comes first: that is the path an ordinary program's calls take. A call through the
libcudart handle itself would bypass the shim, so it is used only to ask the
runtime for its version and error names."""
import ctypes
import ctypes.util
import json
import mmap
import signal
import sys

D2H = 2  # cudaMemcpyDeviceToHost
NON_BLOCKING = 1  # cudaStreamNonBlocking
FILL = 0x5A  # the byte the device buffer holds; a copy that landed shows it in host memory


class _DlInfo(ctypes.Structure):
    _fields_ = [("fname", ctypes.c_char_p), ("fbase", ctypes.c_void_p),
                ("sname", ctypes.c_char_p), ("saddr", ctypes.c_void_p)]


_glob = ctypes.CDLL(None, use_errno=True)
_keep = {}  # ctypes callbacks installed as signal handlers stay alive until exit


def module_of(fn):
    """The file of the object that defines the function at `fn` (dladdr)."""
    info = _DlInfo()
    if not _glob.dladdr(ctypes.cast(fn, ctypes.c_void_p), ctypes.byref(info)) or not info.fname:
        return None
    return info.fname.decode("utf-8", "replace")


def emit(**result):
    sys.stdout.write("PGRESULT " + json.dumps(result) + "\n")
    sys.stdout.flush()


def probe_load():
    present = hasattr(_glob, "pinguard_wait")
    emit(present=present, module=module_of(_glob.pinguard_wait) if present else None)


def load_cudart(explicit):
    """The CUDA runtime, loaded into the global scope as a program linked against it would have
    it (RTLD_GLOBAL), so that the shim's lookups find it."""
    names = [explicit] if explicit else ["libcudart.so.13", "libcudart.so.12"]
    if not explicit:
        found = ctypes.util.find_library("cudart")
        names += [found] if found else []
        names += ["/usr/local/cuda/lib64/libcudart.so.13", "/usr/local/cuda/lib64/libcudart.so.12"]
    errors = []
    for name in names:
        try:
            return ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL), errors
        except OSError as e:
            errors.append(str(e))
    return None, errors


def _call(fn, *args):
    fn.restype = ctypes.c_int
    return fn(*args)


def probe_cuda(cudart_name, size, copies, guard):
    """Interposition, then (when a device answers) tracking of an in-flight device->host copy:
    pinguard_commit must find it, or with guard a CPU read of the buffer must fault and wait."""
    cudart, errors = load_cudart(cudart_name)
    if cudart is None:
        emit(cudart=None, errors=errors)
        return
    cudart.cudaGetErrorName.restype = ctypes.c_char_p
    name = lambda err: cudart.cudaGetErrorName(err).decode()  # noqa: E731
    version = ctypes.c_int(0)
    _call(cudart.cudaRuntimeGetVersion, ctypes.byref(version))
    result = {"cudart": module_of(cudart.cudaRuntimeGetVersion), "version": version.value,
              "wrapper": module_of(_glob.cudaHostAlloc), "real": module_of(cudart.cudaHostAlloc)}
    host, dev, stream = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    n = ctypes.c_size_t(size)
    err = _call(_glob.cudaHostAlloc, ctypes.byref(host), n, 0)
    result.update(hostalloc=err, hostalloc_name=name(err))
    if err:  # no device (or no driver): nothing to track
        emit(**result)
        return
    steps = [("cudaMalloc", lambda: _call(_glob.cudaMalloc, ctypes.byref(dev), n)),
             ("cudaStreamCreateWithFlags",
              lambda: _call(_glob.cudaStreamCreateWithFlags, ctypes.byref(stream), NON_BLOCKING)),
             ("cudaMemsetAsync", lambda: _call(_glob.cudaMemsetAsync, dev, FILL, n, stream))]
    steps += [("cudaMemcpyAsync", lambda: _call(_glob.cudaMemcpyAsync, host, dev, n, D2H, stream))
              for _ in range(copies)]  # several copies keep a real device busy for a while
    for what, step in steps:
        err = step()
        if err:
            result.update(failed=what, error=name(err))
            emit(**result)
            return
    if guard:
        view = memoryview((ctypes.c_ubyte * size).from_address(host.value))
        result["byte"] = bytes(view[size // 2:size // 2 + 64])[0]  # a plain CPU read
    else:
        _glob.pinguard_commit.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        result["found"] = _call(_glob.pinguard_commit, host, n)
    result["sync"] = name(_call(_glob.cudaStreamSynchronize, stream))
    _call(_glob.cudaFreeHost, host)
    _call(_glob.cudaFree, dev)
    _call(_glob.cudaStreamDestroy, stream)
    emit(**result)


def probe_fault():
    """Guard pages' mechanism without CUDA: protect a page, touch it, and let a SIGSEGV handler
    unprotect it so the access is retried. Under the preload the handler is installed through
    pinguard's signal() interposer, so this also checks that a fault pinguard does not own is
    chained to the application's handler."""
    page = mmap.PAGESIZE
    area = mmap.mmap(-1, page)
    buf = (ctypes.c_ubyte * page).from_buffer(area)
    addr = ctypes.addressof(buf)
    buf[100] = 0x3C
    _glob.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    faults = []
    handler_type = ctypes.CFUNCTYPE(None, ctypes.c_int)

    def on_segv(signum):
        faults.append(signum)
        _glob.mprotect(addr, page, mmap.PROT_READ | mmap.PROT_WRITE)

    handler = _keep["segv"] = handler_type(on_segv)  # must outlive this function
    _glob.signal.restype = ctypes.c_void_p
    _glob.signal.argtypes = [ctypes.c_int, handler_type]
    _glob.signal(signal.SIGSEGV, handler)
    if _glob.mprotect(addr, page, 0) != 0:  # PROT_NONE
        emit(mprotect_errno=ctypes.get_errno())
        return
    value = ctypes.c_ubyte.from_address(addr + 100).value  # faults once, then is retried
    emit(faults=len(faults), value=value)


def main(argv):
    if argv[0] == "load":
        probe_load()
    elif argv[0] == "cuda":
        cudart = argv[1] or None
        probe_cuda(cudart, int(argv[2]), int(argv[3]), guard=argv[4] == "guard")
    elif argv[0] == "fault":
        probe_fault()
    else:
        sys.exit("probes.py: unknown probe %s" % argv[0])


if __name__ == "__main__":
    main(sys.argv[1:])
