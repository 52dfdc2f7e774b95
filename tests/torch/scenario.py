"""scenario.py: one transfer scenario on real PyTorch, run as its own process (the tests start it
with and without pinguard; bench/gpu.sh starts it on a real GPU). Prints one JSON line:
  {"scenario": ..., "blocks": N, "corrupted_blocks": K, ...}
and exits 0 when the scenario ran, whatever it found.

  scenario.py retrieve [--fixed] [--calls N]   the retrieve bug (pin_memory temporaries recycled)
  scenario.py store    [--fixed] [--calls N]   the store bug (pickle before the kernel wrote)
  scenario.py annotated-retrieve | annotated-store
                       the buggy code with pinguard_annotations' release()/commit() added
  scenario.py d2h-item | d2h-numpy             .item() / .numpy() right after a non_blocking D2H
  scenario.py repin                            torch's own discipline: free, then pin again
  scenario.py side-streams                     wait_stream / wait_event / record_stream
Environment: PGKV_LIB (the kernels' library), PGKV_SPIN_NS (kernel start delay on a real GPU)."""
import argparse
import json
import os
import pickle
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kv_engine  # noqa: E402

CHUNKS_PER_CALL = 4


_OFFSETS = {}


def _offsets_mod_251(size):
    """i % 251 for every byte offset i of a block (int32), made once per block size."""
    if size not in _OFFSETS:
        _OFFSETS[size] = torch.arange(size, dtype=torch.int32) % 251
    return _OFFSETS[size]


def blocks_bytes_of(cache, first, n):
    """The bytes blocks first..first+n-1 (global index chunk * blocks_per_chunk + i) are meant to
    hold, one row each: byte i of block g is (i + 31 g) % 251."""
    g = torch.arange(first, first + n, dtype=torch.int32).unsqueeze(1)
    return ((_offsets_mod_251(cache.block_bytes) + g * 31 % 251) % 251).to(torch.uint8)


def chunk_of(cache, c):
    """Chunk c's bytes: its blocks, each blocks_bytes_of() its global index."""
    n = cache.blocks_per_chunk
    return blocks_bytes_of(cache, c * n, n).reshape(-1)


def count_bad_blocks(cache, chunk_index, data):
    """Blocks of chunk `chunk_index` whose bytes in `data` (a CPU uint8 tensor) are wrong."""
    n, size = cache.blocks_per_chunk, cache.block_bytes
    want = blocks_bytes_of(cache, chunk_index * n, n)
    if data.dtype == torch.uint8 and data.numel() == n * size:
        return int((data.reshape(n, size) != want).any(dim=1).sum())
    return sum(int(not torch.equal(data[i * size:(i + 1) * size], want[i])) for i in range(n))


def cache_contents(cache):
    """The paged cache read back in chunk order: chunk c's bytes, for every c."""
    torch.cuda.synchronize()
    kv = cache.kv.cpu()
    rows = kv[cache.table_cpu.long()]  # logical block g lives at physical block table[g]
    return rows.reshape(cache.num_chunks, cache.chunk_bytes)


def fill_cache(cache):
    expected = torch.stack([chunk_of(cache, c) for c in range(cache.num_chunks)])
    phys = torch.empty((cache.num_blocks, cache.block_bytes), dtype=torch.uint8)
    phys[cache.table_cpu.long()] = expected.reshape(cache.num_blocks, cache.block_bytes)
    cache.kv.copy_(phys)  # pageable source: synchronous
    torch.cuda.synchronize()


# ---- the two bugs ------------------------------------------------------------------------------
def retrieve(cache, calls, scatter):
    # The chunks, as fetched from the store: pageable CPU tensors.
    chunks = [chunk_of(cache, c) for c in range(calls * CHUNKS_PER_CALL)]
    for k in range(calls):
        first = k * CHUNKS_PER_CALL
        scatter(cache, chunks[first:first + CHUNKS_PER_CALL], first)
    got = cache_contents(cache)
    return sum(count_bad_blocks(cache, c, got[c]) for c in range(cache.num_chunks))


def store(cache, calls, gather, before_commit=None):
    fill_cache(cache)
    blobs = []
    for k in range(calls):
        outs = gather(cache, k * CHUNKS_PER_CALL, CHUNKS_PER_CALL)
        if before_commit:
            before_commit(outs)
        blobs.append(kv_engine.commit_store(outs))
        del outs  # the pinned outputs go back to the caching allocator for the next call
    torch.cuda.synchronize()
    bad = 0
    for k, call in enumerate(blobs):
        for j, blob in enumerate(call):
            bad += count_bad_blocks(cache, k * CHUNKS_PER_CALL + j, pickle.loads(blob))
    return bad


def annotated_scatter(cache, chunks, first_chunk):
    """The buggy retrieve, plus one line: release() each temporary before dropping it."""
    import pinguard_annotations as pg
    pinned = [c.pin_memory() for c in chunks]
    cache._launch(cache.lib.pgkv_scatter, pinned, first_chunk)
    for t in pinned:
        pg.release(t)  # enforce waits for the kernel; audit reports


def annotated_commit(outs):
    import pinguard_annotations as pg
    for t in outs:
        pg.commit(t)  # enforce waits for the kernel's writes; audit reports


# ---- a non_blocking device-to-host copy read too early ----------------------------------------------
def d2h_read(how):
    n = 1 << 20
    src = torch.arange(n, dtype=torch.float32)
    dev = src.to("cuda")
    host = torch.empty(n, dtype=torch.float32, pin_memory=True)
    host.copy_(dev, non_blocking=True)
    # A CPU read of the buffer the copy is still writing. (An element in the middle: with
    # pinned_use_cuda_host_register the buffer comes from malloc, so its first and last pages are
    # shared with other memory and cannot be guarded; see docs/GUARD.md.)
    i = n // 2
    if how == "item":
        value = host[i].item()
    else:
        value = float(host.numpy()[i])
    torch.cuda.synchronize()
    return {"value": value, "expected": float(i), "corrupted_blocks": int(value != i),
            "blocks": 1}


# ---- torch's own discipline: no report expected ---------------------------------------------------
def repin():
    n = 1 << 20
    src = torch.arange(n, dtype=torch.float32)
    dev = src.to("cuda")
    bad = 0
    for _ in range(4):
        # D2H into a pinned tensor, free it at once: torch records an event on the block and
        # keeps it out of the free list until the copy is done.
        host = torch.empty(n, dtype=torch.float32, pin_memory=True)
        host.copy_(dev, non_blocking=True)
        del host
        again = torch.empty(n, dtype=torch.float32, pin_memory=True)
        again.fill_(-1.0)  # a CPU write to whatever block torch hands out
        # H2D from a pin_memory() temporary, freed at once, then pin something else.
        tmp = (src + 1).pin_memory()
        dev2 = torch.empty(n, dtype=torch.float32, device="cuda")
        dev2.copy_(tmp, non_blocking=True)
        del tmp
        other = torch.full((n,), 7.0).pin_memory()
        bad += int(not torch.equal(dev2.cpu(), src + 1)) + int(other[0].item() != 7.0)
        del again, other
    torch.cuda.synchronize()
    return {"corrupted_blocks": bad, "blocks": 8}


def side_streams():
    n = 1 << 20
    src = torch.arange(n, dtype=torch.float32)
    dev = src.to("cuda")
    main = torch.cuda.current_stream()
    side = torch.cuda.Stream()
    host = torch.empty(n, dtype=torch.float32, pin_memory=True)
    back = torch.empty(n, dtype=torch.float32, device="cuda")
    side.wait_stream(main)                 # dev's upload is ordered before the side stream's work
    with torch.cuda.stream(side):
        host.copy_(dev, non_blocking=True)  # D2H on the side stream
        scratch = torch.empty(n, dtype=torch.float32, device="cuda")
        scratch.copy_(host, non_blocking=True)  # reads host after the D2H: same stream
        scratch.record_stream(side)         # freed below while the side stream may still use it
        done = torch.cuda.Event()
        done.record(side)
    del scratch
    main.wait_event(done)                  # the main stream reads host only after the side stream
    back.copy_(host, non_blocking=True)
    finished = torch.cuda.Event()
    finished.record(main)
    finished.synchronize()                 # the CPU reads host only after both streams
    ok = torch.equal(host, src) and torch.equal(back.cpu(), src)
    return {"corrupted_blocks": int(not ok), "blocks": 1}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario", choices=["retrieve", "store", "annotated-retrieve",
                                         "annotated-store", "d2h-item", "d2h-numpy", "repin",
                                         "side-streams"])
    ap.add_argument("--fixed", action="store_true", help="the engine's fixed variants")
    ap.add_argument("--calls", type=int, default=4, help="engine calls (4 chunks each)")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print(json.dumps({"scenario": a.scenario, "error": "torch.cuda.is_available() is False"}))
        return 3
    res = {"scenario": a.scenario, "fixed": a.fixed,
           "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")}
    if a.scenario in ("d2h-item", "d2h-numpy"):
        res.update(d2h_read(a.scenario[4:]))
    elif a.scenario == "repin":
        res.update(repin())
    elif a.scenario == "side-streams":
        res.update(side_streams())
    else:
        lib = kv_engine.load_library()
        cache = kv_engine.PagedKV(lib, a.calls * CHUNKS_PER_CALL,
                                  spin_ns=int(os.environ.get("PGKV_SPIN_NS", "0")))
        res["blocks"] = cache.num_blocks
        if a.scenario == "retrieve":
            fn = kv_engine.scatter_cpu_to_paged_kv_fixed if a.fixed else kv_engine.scatter_cpu_to_paged_kv
            res["corrupted_blocks"] = retrieve(cache, a.calls, fn)
        elif a.scenario == "store":
            fn = kv_engine.gather_paged_kv_to_cpu_fixed if a.fixed else kv_engine.gather_paged_kv_to_cpu
            res["corrupted_blocks"] = store(cache, a.calls, fn)
        elif a.scenario == "annotated-retrieve":
            res["corrupted_blocks"] = retrieve(cache, a.calls, annotated_scatter)
        else:
            res["corrupted_blocks"] = store(cache, a.calls, kv_engine.gather_paged_kv_to_cpu,
                                            annotated_commit)
    print(json.dumps(res), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
