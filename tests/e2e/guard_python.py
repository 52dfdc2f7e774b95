"""Intent: an interpreter process is covered. Python reads a pinned buffer through memoryview
while a device->host copy into it is in flight; the guard catches the read (audit reports
cpu-read-during-device-write; enforce waits, so Python sees the copied bytes)."""
# Enforce waits, so Python reads the copied bytes.
# TEST: guard_python.${mode}
#   COMMAND ${RUN_CASE} --mode ${mode} --expect cpu-read-during-device-write --stdout ${want}
#   -- ${PG_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/guard_python.py
#   $<TARGET_FILE:e2e_py_copy_helper>
#   ENV ${GUARD_ENV} FOR mode/want IN "audit/python read byte" "enforce/python read byte 0x4d"
#   IF PG_PYTHON3

import ctypes
import sys

helper = ctypes.CDLL(sys.argv[1])
helper.pyh_setup.restype = ctypes.c_void_p
helper.pyh_setup.argtypes = [ctypes.c_size_t, ctypes.c_int]
helper.pyh_start_d2h.argtypes = [ctypes.c_void_p, ctypes.c_size_t]

n = 256 * 1024
host = helper.pyh_setup(n, 0x4d)
if not host:
    sys.exit("setup failed")
view = memoryview((ctypes.c_ubyte * n).from_address(host))
if helper.pyh_start_d2h(host, n) != 0:
    sys.exit("enqueue failed")
data = bytes(view[4096:8192])  # the CPU read of an in-flight buffer
print("python read byte 0x%02x" % data[0])
helper.pyh_sync()
