"""pinguard_annotations: the annotation API of include/pinguard.h for Python programs.

    import pinguard_annotations as pg
    pg.release(buf)            # "I am about to recycle these bytes"
    pg.commit(tensor)          # "I am about to read or publish these bytes"
    pg.wait(addr, nbytes)      # wait for in-flight GPU accesses, without reporting

Each call takes an int address plus a length, or an object that knows its own memory: a
torch-like tensor (data_ptr() and nbytes), a numpy-like array (__array_interface__), a ctypes
object, or anything with the buffer protocol (bytearray, memoryview, mmap); a length given with
an object overrides its size. The symbols are looked up in the running process (ctypes.CDLL(None)),
so they are pinguard's when libpinguard.so is preloaded; without it every call is a no-op that
returns 0, costing one attribute check. The calls release the GIL, so an enforce-mode wait does
not stall other Python threads."""
import ctypes

__all__ = ["present", "release", "commit", "wait", "address_and_size"]


def _lookup():
    try:
        process = ctypes.CDLL(None)
    except OSError:  # no dynamic loader (a static interpreter): nothing to call
        return {}
    found = {}
    for name in ("release", "commit", "wait"):
        try:
            fn = getattr(process, "pinguard_" + name)
        except AttributeError:
            return {}  # all or nothing: a partial set means something else defines one of them
        fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        fn.restype = ctypes.c_int
        found[name] = fn
    return found


_FUNCTIONS = _lookup()


def present():
    """True when libpinguard.so is loaded into this process."""
    return bool(_FUNCTIONS)


def _buffer_address(obj):
    """Address and size of a contiguous buffer-protocol object, read-only ones included."""
    view = memoryview(obj)
    if not view.c_contiguous:
        raise TypeError("pinguard_annotations: the buffer is not contiguous; pass its address "
                        "and length")
    size = view.nbytes
    if size == 0:
        return 0, 0
    if not view.readonly:
        return ctypes.addressof(ctypes.c_char.from_buffer(view.cast("B"))), size
    # ctypes refuses read-only buffers, so ask CPython for the pointer directly.
    pybuf = _PyBuffer()
    ctypes.pythonapi.PyObject_GetBuffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer),
                                                    ctypes.c_int]
    if ctypes.pythonapi.PyObject_GetBuffer(obj, ctypes.byref(pybuf), 0) != 0:  # PyBUF_SIMPLE
        raise TypeError("pinguard_annotations: cannot get the buffer's address")
    try:
        return pybuf.buf or 0, size
    finally:
        ctypes.pythonapi.PyBuffer_Release(ctypes.byref(pybuf))


class _PyBuffer(ctypes.Structure):  # Py_buffer, part of the stable ABI since Python 3.11
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p), ("len", ctypes.c_ssize_t),
                ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int),
                ("ndim", ctypes.c_int), ("format", ctypes.c_char_p),
                ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("suboffsets", ctypes.c_void_p), ("internal", ctypes.c_void_p)]


def address_and_size(obj):
    """(address, size in bytes) of what `obj` holds; TypeError if it cannot say."""
    if isinstance(obj, bool):
        raise TypeError("pinguard_annotations: a bool is not an address")
    if isinstance(obj, int):
        raise TypeError("pinguard_annotations: an int address needs a length")
    if isinstance(obj, ctypes.c_void_p):
        raise TypeError("pinguard_annotations: a c_void_p address needs a length")
    if isinstance(obj, (ctypes._SimpleCData, ctypes.Structure, ctypes.Union, ctypes.Array)):
        return ctypes.addressof(obj), ctypes.sizeof(obj)
    if callable(getattr(obj, "data_ptr", None)):  # torch.Tensor and look-alikes
        nbytes = getattr(obj, "nbytes", None)
        nbytes = nbytes() if callable(nbytes) else nbytes
        if nbytes is None:
            nbytes = obj.numel() * obj.element_size()
        return int(obj.data_ptr()), int(nbytes)
    interface = getattr(obj, "__array_interface__", None)  # numpy-like
    if isinstance(interface, dict) and "data" in interface and hasattr(obj, "nbytes"):
        return int(interface["data"][0]), int(obj.nbytes)
    try:
        return _buffer_address(obj)
    except TypeError as e:
        if "pinguard_annotations" in str(e):
            raise
    raise TypeError("pinguard_annotations: cannot tell the address of a %s object; pass an "
                    "int address and a length" % type(obj).__name__)


def _range(ptr, n):
    if isinstance(ptr, (int, ctypes.c_void_p)) and not isinstance(ptr, bool):
        address = (ptr.value or 0) if isinstance(ptr, ctypes.c_void_p) else ptr
        if n is None:
            raise TypeError("pinguard_annotations: an address needs a length")
        size = n
    else:
        address, size = address_and_size(ptr)
        if n is not None:
            size = n
    if address < 0 or size < 0:
        raise ValueError("pinguard_annotations: negative address or length")
    return address, size


def _call(name, ptr, n):
    fn = _FUNCTIONS.get(name)
    address, size = _range(ptr, n)  # checked with or without the shim, so bugs show early
    return fn(address, size) if fn else 0


def release(ptr, n=None):
    """About to recycle the bytes: enforce waits for every in-flight GPU access to them, audit
    reports release-during-device-access. Returns the number of accesses found (0 without the
    shim)."""
    return _call("release", ptr, n)


def commit(ptr, n=None):
    """About to read or publish the bytes: enforce waits for in-flight GPU writes to them, audit
    reports commit-during-device-write. Returns the number of device writes found."""
    return _call("commit", ptr, n)


def wait(ptr, n=None):
    """Waits for every in-flight GPU access to the bytes without reporting. Returns the number
    of accesses waited for."""
    return _call("wait", ptr, n)
