"""The program side of test_annotations.py: starts a device->host copy into a pinned buffer
through tests/e2e/py_copy_helper.c, then calls one annotation on it and prints what it returned and the
buffer's first byte: at once ("now", only safe when the call waited) or after the stream was
synchronized ("after").
Usage: annotations_child.py HELPER commit|release|wait|none int|ctypes|view|c_void_p now|after."""
import ctypes
import sys

import pinguard_annotations as pg

N, VALUE = 256 * 1024, 0x44
helper = ctypes.CDLL(sys.argv[1])
helper.pyh_setup.restype = ctypes.c_void_p
helper.pyh_setup.argtypes = [ctypes.c_size_t, ctypes.c_int]
helper.pyh_start_d2h.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
helper.pyh_finish.argtypes = [ctypes.c_void_p]
call, form, when = sys.argv[2], sys.argv[3], sys.argv[4]

host = helper.pyh_setup(N, VALUE)
if not host or helper.pyh_start_d2h(host, N) != 0:
    sys.exit("setup failed")
buf = (ctypes.c_ubyte * N).from_address(host)
# The same range, handed over in the forms the module accepts.
target = {"int": (host, N), "ctypes": (buf,), "view": (memoryview(buf),),
          "c_void_p": (ctypes.c_void_p(host), N)}[form]
found = getattr(pg, call)(*target) if call != "none" else 0
first = buf[0] if when == "now" else None
if helper.pyh_finish(host) != 0:
    sys.exit("the copy failed")
shown = "" if first is None else " first=0x%02x" % first
print("present=%s found=%d%s" % (pg.present(), found, shown))
