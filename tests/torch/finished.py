"""finished.py: one bug shape on real PyTorch whose GPU work has certainly finished, and which the
program never ordered. The test runs it at a device latency of 0; after enqueueing the GPU work it
sleeps with no CUDA call (the work is long done), then does the harmful thing. The "fixed" twin
synchronizes first, as the shape calls for. Prints one JSON line {"variant": ..., "values":
{shape: the value the shape read, ...}}.

  finished.py bug|fixed [--sleep-ms N] [SHAPE...]   (default: every shape, in this order)
Before each shape it writes "finished.py: shape NAME" to stderr, where pinguard's reports go, so
that each report can be told to its shape; each shape ends with torch.cuda.synchronize().
  d2h_read      .item() of a pinned tensor a non_blocking device->host copy wrote
  h2d_write     fill_() of a pinned tensor a non_blocking host->device copy read
  free_host     cudaFreeHost of the destination of a non_blocking device->host copy
  unregister    cudaHostUnregister of a registered tensor a non_blocking copy wrote
  pool_reuse    torch's CachingHostAllocator hands a block out again that a kernel (given its raw
                pointer, which torch does not see) read, and the new owner writes it
  other_stream  a host->device copy on the current stream reads what a side stream's device->host
                copy wrote (fixed: wait_stream)
  kernel_ptr    .item() of a pinned tensor a kernel wrote through its raw pointer
Environment: PGKV_LIB (the kernels' library)."""
import argparse
import ctypes
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kv_engine  # noqa: E402

N = 1 << 20  # float32 elements: 4 MiB, a whole number of pages
MID = N // 2  # an element in the middle: off the edge pages a registered block may share


def cudart():
    """The CUDA runtime's C functions as the program sees them (the global scope, where the
    preloaded pinguard comes first)."""
    rt = ctypes.CDLL(None)
    rt.cudaHostAlloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_uint]
    rt.cudaFreeHost.argtypes = [ctypes.c_void_p]
    rt.cudaHostRegister.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint]
    rt.cudaHostUnregister.argtypes = [ctypes.c_void_p]
    return rt


def check(err, what):
    if err:
        raise RuntimeError("%s failed: cudaError %d" % (what, err))


def tensor_at(address, nbytes):
    """A float32 CPU tensor over nbytes of memory at address (no copy)."""
    buf = (ctypes.c_uint8 * nbytes).from_address(address)
    return torch.frombuffer(buf, dtype=torch.float32)


def source():
    return torch.arange(N, dtype=torch.float32).to("cuda")


def d2h_read(fixed, settle):
    dev = source()
    host = torch.empty(N, dtype=torch.float32, pin_memory=True)
    host.copy_(dev, non_blocking=True)
    if fixed:
        torch.cuda.current_stream().synchronize()
    settle()
    return host[MID].item()


def h2d_write(fixed, settle):
    host = torch.full((N,), 1.0, pin_memory=True)
    dev = torch.empty(N, dtype=torch.float32, device="cuda")
    dev.copy_(host, non_blocking=True)
    if fixed:
        torch.cuda.current_stream().synchronize()
    settle()
    host.fill_(2.0)  # the next user's write
    return dev[MID].item()


def free_host(fixed, settle):
    rt = cudart()
    p = ctypes.c_void_p()
    check(rt.cudaHostAlloc(ctypes.byref(p), N * 4, 0), "cudaHostAlloc")
    host = tensor_at(p.value, N * 4)
    host.copy_(source(), non_blocking=True)
    if fixed:
        torch.cuda.current_stream().synchronize()
    settle()
    del host
    check(rt.cudaFreeHost(p), "cudaFreeHost")
    torch.cuda.synchronize()
    return float(MID)


def unregister(fixed, settle):
    rt = cudart()
    mem = torch.empty(N + 1024, dtype=torch.float32)  # pageable, from malloc
    base = (mem.data_ptr() + 4095) & ~4095
    check(rt.cudaHostRegister(base, N * 4, 0), "cudaHostRegister")
    host = tensor_at(base, N * 4)
    assert host.is_pinned()
    host.copy_(source(), non_blocking=True)
    if fixed:
        torch.cuda.current_stream().synchronize()
    settle()
    check(rt.cudaHostUnregister(base), "cudaHostUnregister")
    torch.cuda.synchronize()
    return host[MID].item()


def pool_reuse(fixed, settle):
    cache = kv_engine.PagedKV(kv_engine.load_library(), 1)
    pinned = torch.full((cache.chunk_bytes,), 5, dtype=torch.uint8, pin_memory=True)
    address = pinned.data_ptr()
    cache._launch(cache.lib.pgkv_scatter, [pinned], 0)  # the kernel reads it: torch cannot tell
    if fixed:
        torch.cuda.current_stream().synchronize()
    del pinned  # back to the caching allocator, free at once
    settle()
    again = torch.empty(cache.chunk_bytes, dtype=torch.uint8, pin_memory=True)
    if again.data_ptr() != address:
        raise RuntimeError("the caching allocator handed out another block")
    again.fill_(9)  # the new owner's write
    torch.cuda.synchronize()
    return float(again[MID].item())


def other_stream(fixed, settle):
    dev = source()
    main = torch.cuda.current_stream()
    side = torch.cuda.Stream()
    side.wait_stream(main)  # dev's upload is ordered before the side stream's work
    host = torch.empty(N, dtype=torch.float32, pin_memory=True)
    with torch.cuda.stream(side):
        host.copy_(dev, non_blocking=True)  # the device writes host on the side stream
    if fixed:
        main.wait_stream(side)
    settle()
    back = torch.empty(N, dtype=torch.float32, device="cuda")
    back.copy_(host, non_blocking=True)  # ... and reads it on the main stream
    torch.cuda.synchronize()
    return back[MID].item()


def kernel_ptr(fixed, settle):
    cache = kv_engine.PagedKV(kv_engine.load_library(), 1)
    cache.kv.copy_(torch.full(tuple(cache.kv.shape), 3, dtype=torch.uint8))  # synchronous
    torch.cuda.synchronize()
    out = torch.empty(cache.chunk_bytes, dtype=torch.uint8, pin_memory=True)
    cache._launch(cache.lib.pgkv_gather, [out], 0)  # the kernel writes it through its pointer
    if fixed:
        torch.cuda.current_stream().synchronize()
    settle()
    return float(out[MID].item())


SHAPES = {f.__name__: f for f in (d2h_read, h2d_write, free_host, unregister, pool_reuse,
                                  other_stream, kernel_ptr)}
ORDER = ["d2h_read", "h2d_write", "free_host", "unregister", "pool_reuse", "other_stream",
         "kernel_ptr"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variant", choices=["bug", "fixed"])
    ap.add_argument("shapes", nargs="*", metavar="SHAPE", help=" ".join(ORDER))
    ap.add_argument("--sleep-ms", type=int, default=100)
    a = ap.parse_args()
    for shape in a.shapes:
        if shape not in SHAPES:
            ap.error("unknown shape %r" % shape)
    if not torch.cuda.is_available():
        print(json.dumps({"variant": a.variant, "error": "torch.cuda.is_available() is False"}))
        return 3
    torch.cuda.init()

    def settle():
        time.sleep(a.sleep_ms / 1000.0)  # no CUDA call: the GPU work finishes, unordered

    values = {}
    for shape in a.shapes or ORDER:
        sys.stderr.write("finished.py: shape %s\n" % shape)
        sys.stderr.flush()
        values[shape] = SHAPES[shape](a.variant == "fixed", settle)
        torch.cuda.synchronize()  # nothing of this shape reaches into the next
    sys.stderr.write("finished.py: done\n")
    sys.stderr.flush()
    print(json.dumps({"variant": a.variant, "values": values}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
