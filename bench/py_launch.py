"""py_launch.py HELPER N [DEPTH] [--kernel P [--pinned [--small]] [--record-event] [--gate]]: a Python
loop of CUDA calls through ctypes, N
calls from DEPTH nested Python frames (default 10, a framework's depth), synchronizing every 64
(--batch B: every B, with --kernel), and one JSON line: ns per call (the median of the batches), and
cpu_ns_per_launch: the
process's CPU time (every thread's: simcuda's stream workers and pinguard's included) over the
whole loop, per call (bench/cpu_ratio.py compares it).

  HELPER is tests/e2e/libe2e_pystack_helper.so: each call is pysh_launch, one 4 KiB
    cudaMemcpyAsync into a pinned buffer (tracked: a stack with Python frames per call);
  with --kernel P, HELPER is bench/libbench_pykernel.so: each call is pyk_launch, a
    cudaLaunchKernel of a kernel with P pointer parameters, none pinned (tracked by nothing:
    the launch loop of a serving engine, bench/instr.sh --case pylaunch); --pinned: the first
    parameter points into a pinned buffer instead (tracked: a stack with Python frames and a
    completion event per launch, instr.sh --case pylaunch --pinned), a 256 KiB buffer (guard
    pages), or with --small 32 KiB (under guard_min_bytes); --record-event: an event
    recorded after each launch (the baseline of a tracked launch); --gate: each batch
    waits behind a host function until it is enqueued (as bench_launch's --gate).

docs/PERFORMANCE.md gives the commands (callgrind instruction counts, CPU time)."""
import ctypes
import json
import sys
import time

argv = sys.argv[1:]
kernel_params = 0
if "--kernel" in argv:
    k = argv.index("--kernel")
    kernel_params = int(argv[k + 1])
    del argv[k:k + 2]
batch = 64
if "--batch" in argv:
    k = argv.index("--batch")
    batch = int(argv[k + 1])
    del argv[k:k + 2]
kernel_flags = 0
for bit, flag in ((1, "--pinned"), (2, "--record-event"), (4, "--gate"), (8, "--small")):
    if flag in argv:
        kernel_flags |= bit
        argv.remove(flag)
if len(argv) < 2:
    sys.exit(__doc__)
h = ctypes.CDLL(argv[0])
n = int(argv[1])
depth = int(argv[2]) if len(argv) > 2 else 10
begin = None
if kernel_params:
    if h.pyk_setup_ex(kernel_params, kernel_flags) != 0:
        sys.exit("py_launch.py: pyk_setup_ex(%d, %d) failed" % (kernel_params, kernel_flags))
    launch, sync = h.pyk_launch, h.pyk_sync
    begin = h.pyk_begin if kernel_flags & 4 else None
elif kernel_flags or batch != 64:
    sys.exit("py_launch.py: --pinned, --small, --record-event, --gate and --batch go with --kernel")
else:
    h.pysh_setup.restype = ctypes.c_void_p
    h.pysh_setup.argtypes = [ctypes.c_size_t]
    h.pysh_launch.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    host = h.pysh_setup(4096 * 64)
    if not host:
        sys.exit("py_launch.py: pysh_setup failed")
    launch, sync = h.pysh_launch, h.pysh_sync


def batches(k):
    times = []
    for _ in range(k):
        if begin:
            begin()
        t0 = time.perf_counter_ns()
        if kernel_params:
            for _ in range(batch):
                launch()
        else:
            for i in range(batch):
                launch(host + 4096 * i, 4096)
        times.append((time.perf_counter_ns() - t0) / batch)
        sync()
    return times


def nested(d, k):
    return nested(d - 1, k) if d > 1 else batches(k)


cpu0 = time.process_time_ns()
times = sorted(nested(depth, max(1, n // batch)))
cpu = (time.process_time_ns() - cpu0) / (batch * max(1, n // batch))
print(json.dumps({"launches": n, "depth": depth, "ns_per_launch": round(times[len(times) // 2]),
                  "cpu_ns_per_launch": round(cpu)}))
