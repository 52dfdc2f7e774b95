"""edges.py: PyTorch programs at simcuda's edges, each printing one JSON line.

  randn            torch.randn on the device: simcuda cannot run device code, so the launch fails
                   with a Python exception (not a dead process), and the process goes on.
  graph            a torch.cuda.graph() capture around pinned allocations (PyTorch's pin_memory
                   during capture tests): the capture ends, instantiates, and replays.
  caching_pinned   PyTorch's caching-pinned-memory check: torch.cuda._sleep keeps a stream busy
                   while a non_blocking copy from a pinned block is queued behind it; the block,
                   freed, must not be handed out again until the copy ran."""
import json
import sys
import time

import torch


def randn():
    try:
        torch.randn(16, device="cuda")
        torch.cuda.synchronize()
        outcome = "no exception"
    except RuntimeError as e:
        outcome = "RuntimeError: " + str(e).splitlines()[0]
    # The process is alive and CUDA still answers.
    pinned = torch.empty(8, pin_memory=True)
    return {"outcome": outcome, "pinned_after": bool(pinned.is_pinned()),
            "devices": torch.cuda.device_count()}


def graph():
    s = torch.cuda.Stream()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.stream(s):
        torch.cuda.synchronize()
        with torch.cuda.graph(g, stream=s):
            a = torch.empty(1024, dtype=torch.uint8, pin_memory=True)
            b = torch.ones(64, pin_memory=True)
    g.replay()
    torch.cuda.synchronize()
    return {"captured": True, "pinned": bool(a.is_pinned() and b.is_pinned()),
            "replayed": True}


def caching_pinned():
    # The shape of PyTorch's test_caching_pinned_memory: calibrate the spin, then queue a copy
    # behind it from a pinned block, free the block, and ask for a block of the same size.
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(1000000)
    end.record()
    end.synchronize()
    cycles_per_ms = 1000000 / max(start.elapsed_time(end), 1e-3)

    t = torch.FloatTensor([1]).pin_memory()
    ptr = t.data_ptr()
    gpu = torch.empty(1, device="cuda")
    torch.cuda._sleep(int(200 * cycles_per_ms))  # 200 ms of a busy stream
    gpu.copy_(t, non_blocking=True)
    busy = not torch.cuda.current_stream().query()
    del t
    t2 = torch.FloatTensor([2]).pin_memory()
    reused = t2.data_ptr() == ptr
    torch.cuda.synchronize()
    after = torch.FloatTensor([3]).pin_memory()  # the block is free again once the copy ran
    return {"cycles_per_ms": cycles_per_ms, "busy_during_copy": busy, "reused": reused,
            "copied": float(gpu.cpu()[0]), "after_ok": bool(after.is_pinned())}


if __name__ == "__main__":
    # One JSON line per scenario named, run in turn in this one process.
    for name in sys.argv[1:]:
        t0 = time.monotonic()
        result = {"randn": randn, "graph": graph, "caching_pinned": caching_pinned}[name]()
        result["scenario"] = name
        result["seconds"] = round(time.monotonic() - t0, 3)
        print(json.dumps(result), flush=True)
