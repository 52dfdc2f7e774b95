"""torch_copy.py N: PyTorch's 4 KiB device-to-host copy into pinned memory,
`pinned.copy_(dev, non_blocking=True)`, N times (torch.cuda.synchronize() every 64), after a
warm-up; prints one JSON line: cpu_ns_per_copy, the process's CPU time (every thread's) over the
loop per copy, and ns_per_copy, its wall time per copy. Run on simcuda with and without
pinguard, and with PyTorch's own CUDA sanitizer (TORCH_CUDA_SANITIZER=1): bench/cpu_ratio.py."""
import json
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
cpu0, wall0 = time.process_time_ns(), time.perf_counter_ns()
loop(k)
cpu, wall = time.process_time_ns() - cpu0, time.perf_counter_ns() - wall0
assert pinned[0].item() == 1.0
print(json.dumps({"copies": k, "cpu_ns_per_copy": round(cpu / k), "ns_per_copy": round(wall / k)}))
