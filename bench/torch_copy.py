"""torch_copy.py N: PyTorch's 4 KiB device-to-host copy into pinned memory,
`pinned.copy_(dev, non_blocking=True)`, N times (torch.cuda.synchronize() every 64), after a
warm-up; prints one JSON line: cpu_ns_per_copy, the process's CPU time (every thread's) over the
loop per copy, and ns_per_copy, its wall time per copy. Run on simcuda with and without
pinguard, and with PyTorch's own CUDA sanitizer (TORCH_CUDA_SANITIZER=1): bench/cpu_ratio.py.

With BENCH_CG_MARKS naming libbench_cgmarks.so (bench/instr.sh under valgrind --tool=callgrind
--instr-atstart=no), the loop runs instead N times, then 2N times, after the warm-up, with
callgrind counting from the first and its counts zeroed before and dumped after each: two dump
files whose difference is N copies' instructions, without PyTorch's import and start-up."""
import ctypes
import json
import os
import sys
import time

import torch

n = int(sys.argv[1])
pinned = torch.ones(1024, dtype=torch.float32).pin_memory()  # 4 KiB
dev = torch.empty(1024, dtype=torch.float32, device="cuda")
dev.copy_(pinned)  # a copy, not a kernel: simcuda runs no device code


def loop(k):
    for i in range(k):
        pinned.copy_(dev, non_blocking=True)
        if i % 64 == 63:
            torch.cuda.synchronize()
    torch.cuda.synchronize()


loop(256)  # warm-up: the caching allocators, the sanitizer's first events
k = max(64, n // 64 * 64)
marks = os.environ.get("BENCH_CG_MARKS")
if marks:
    cg = ctypes.CDLL(marks)
    cg.bench_cg_start()
    for copies in (k, 2 * k):
        cg.bench_cg_zero()
        loop(copies)
        cg.bench_cg_dump(f"loop {copies}".encode())
    assert pinned[0].item() == 1.0
    print(json.dumps({"copies": [k, 2 * k]}))
    sys.exit(0)
cpu0, wall0 = time.process_time_ns(), time.perf_counter_ns()
loop(k)
cpu, wall = time.process_time_ns() - cpu0, time.perf_counter_ns() - wall0
assert pinned[0].item() == 1.0
print(json.dumps({"copies": k, "cpu_ns_per_copy": round(cpu / k), "ns_per_copy": round(wall / k)}))
