"""Intent: pinguard_annotations calls through to the shim when it is preloaded (commit reports
commit-during-device-write on a buffer with a device->host copy in flight, release reports
release-during-device-access, enforce waits so the copied bytes are there afterwards, wait waits
silently) and is a no-op returning 0 without it. Its address handling accepts ints, ctypes
objects, buffers and torch- or numpy-like objects, and rejects what it cannot place."""
import ctypes
import os
import sys

from common import PYTHON, base_env, check, main, pinguard, reports_of, run

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE_DIR = os.environ["PGT_MODULE_DIR"]  # the build tree's lib/python, as users get it
HELPER = os.environ["PGT_HELPER"]
CHILD = os.path.join(HERE, "annotations_child.py")


def child(call, form, mode=None, options="", when="after"):
    env = base_env(PYTHONPATH=MODULE_DIR, SIMCUDA_LATENCY_US="200000")
    argv = [PYTHON, CHILD, HELPER, call, form, when]
    if mode is None:
        return run(argv, env=env)
    return pinguard("run", "--mode", mode, "--options", options or "verbosity=0", "--", *argv,
                    env=env)


def without_shim():
    for call in ("commit", "release", "wait"):
        r = child(call, "int")
        check(r.rc == 0 and "present=False found=0" in r.out and not r.err,
              "%s is a silent no-op returning 0 without the shim" % call, r)


def audit():
    for call, kind in (("commit", "commit-during-device-write"),
                       ("release", "release-during-device-access")):
        for form in ("int", "ctypes", "view", "c_void_p"):
            r = child(call, form, mode="audit")
            check(r.rc == 23 and "present=True found=1" in r.out, "%s(%s) found the copy"
                  % (call, form), r)
            check(reports_of(r.err, kind) == 1 and reports_of(r.err) == 1, "reported " + kind, r)


def enforce():
    r = child("commit", "ctypes", mode="enforce", when="now")
    check("found=1 first=0x44" in r.out, "commit waited: the copied bytes are there", r)
    check(reports_of(r.err, "commit-during-device-write") == 1 and "enforce: waited" in r.err,
          "and says so", r)
    r = child("wait", "int", mode="enforce", options="exitcode=0", when="now")
    check(r.rc == 0 and "found=1 first=0x44" in r.out and reports_of(r.err) == 0,
          "wait waits without reporting", r)
    r = child("none", "int", mode="enforce")
    check(r.rc == 0 and reports_of(r.err) == 0, "no annotation, no report", r)


class _TorchLike:
    def __init__(self, ptr, nbytes):
        self._ptr, self.nbytes = ptr, nbytes

    def data_ptr(self):
        return self._ptr


class _NumpyLike:
    def __init__(self, ptr, nbytes):
        self.__array_interface__ = {"data": (ptr, False), "shape": (nbytes,), "typestr": "|u1"}
        self.nbytes = nbytes


def addresses():
    sys.path.insert(0, MODULE_DIR)
    import pinguard_annotations as pg
    arr = (ctypes.c_uint32 * 8)()
    base = ctypes.addressof(arr)
    ba = bytearray(b"abcdefgh")
    ba_addr = ctypes.addressof(ctypes.c_char.from_buffer(ba))
    data = b"read-only bytes"
    cases = [(arr, (base, 32)), (memoryview(arr), (base, 32)), (ba, (ba_addr, 8)),
             (memoryview(ba)[2:], (ba_addr + 2, 6)), (_TorchLike(0x1000, 64), (0x1000, 64)),
             (_NumpyLike(0x2000, 16), (0x2000, 16)), (ctypes.c_int64(5), None)]
    for obj, want in cases:
        got = pg.address_and_size(obj)
        if want is None:
            want = (ctypes.addressof(obj), 8)
        check(got == want, "%s: got %s, want %s" % (type(obj).__name__, got, want))
    addr, size = pg.address_and_size(data)  # read-only: through the C buffer API
    check(size == len(data) and ctypes.string_at(addr, size) == data, "bytes address")
    for bad in (object(), 3, True, memoryview(bytearray(8))[::2]):
        try:
            pg.address_and_size(bad)
            check(False, "%r is rejected" % (bad,))
        except TypeError:
            pass
    check(pg.commit(arr) == 0 and pg.release(0x1000, 4) == 0 and pg.wait(ba, 2) == 0,
          "no-ops without the shim")
    for bad in ((0x1000,), (-1, 4), (0x1000, -4)):
        try:
            pg.commit(*bad)
            check(False, "commit%r is rejected" % (bad,))
        except (TypeError, ValueError):
            pass
    check(not pg.present(), "not present in this process")


main({"without_shim": without_shim, "audit": audit, "enforce": enforce, "addresses": addresses})
