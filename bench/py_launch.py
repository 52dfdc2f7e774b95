"""py_launch.py HELPER N [DEPTH]: the per-launch cost of pinguard's Python stacks. Calls
HELPER's pysh_launch (tests/e2e/pystack_helper.c: one cudaMemcpyAsync into a pinned buffer)
N times through ctypes, from DEPTH nested Python frames (default 10, a framework's depth),
synchronizing every 64 launches, and prints one JSON line: ns per launch (the median of batches
of 64), and cpu_ns_per_launch: the process's CPU time (every thread's: simcuda's stream workers
and pinguard's included) over the whole loop, per launch (bench/cpu_ratio.py compares it). Run it under `pinguard` with python_stacks=0 and =1 and compare; docs/PERFORMANCE.md
gives the commands (callgrind instruction counts, and wall time)."""
import ctypes
import json
import sys
import time

h = ctypes.CDLL(sys.argv[1])
n = int(sys.argv[2])
depth = int(sys.argv[3]) if len(sys.argv) > 3 else 10
h.pysh_setup.restype = ctypes.c_void_p
h.pysh_setup.argtypes = [ctypes.c_size_t]
h.pysh_launch.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
host = h.pysh_setup(4096 * 64)
launch, sync = h.pysh_launch, h.pysh_sync


def batches(k):
    times = []
    for _ in range(k):
        t0 = time.perf_counter_ns()
        for i in range(64):
            launch(host + 4096 * i, 4096)
        times.append((time.perf_counter_ns() - t0) / 64)
        sync()
    return times


def nested(d, k):
    return nested(d - 1, k) if d > 1 else batches(k)


cpu0 = time.process_time_ns()
times = sorted(nested(depth, max(1, n // 64)))
cpu = (time.process_time_ns() - cpu0) / (64 * max(1, n // 64))
print(json.dumps({"launches": n, "depth": depth, "ns_per_launch": round(times[len(times) // 2]),
                  "cpu_ns_per_launch": round(cpu)}))
