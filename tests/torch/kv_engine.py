"""kv_engine.py: a paged-KV transfer engine in PyTorch, the shape of the one the incident came
from (LMCache's engine-driven multiprocess path). KV blocks move between a device "paged KV" tensor
and CPU chunks, through a custom kernel that loads and stores host memory over raw pointers
(libpgkv: pgkv_api.c, with a simcuda and a CUDA build), on torch's current stream.

The unmodified functions carry the incident's two bugs:
  - scatter_cpu_to_paged_kv pins each unpinned chunk with chunk.pin_memory(), launches the kernel
    that reads the temporaries, and returns without waiting: the temporaries go back to torch's
    caching host allocator, and the next call's pin_memory() overwrites them with a CPU memcpy
    while the kernel may still be reading them;
  - gather_paged_kv_to_cpu launches the kernel that writes pinned output chunks and returns;
    commit_store then serializes them with pickle.dumps, a CPU read, while the kernel may still
    be writing them.
The *_fixed variants add the two syncs the fix added. Everything is ordinary PyTorch: no pinguard
in sight."""
import ctypes
import os
import pickle

import torch

MAX_OBJECTS = 4  # chunks per kernel launch, as in the incident's engine


def load_library(path=None):
    """The transfer kernels' library: $PGKV_LIB, else the simcuda build beside the tests."""
    lib = ctypes.CDLL(path or os.environ["PGKV_LIB"])
    for name in ("pgkv_gather", "pgkv_scatter"):
        fn = getattr(lib, name)
        fn.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_int, ctypes.c_void_p,
                       ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64, ctypes.c_int64,
                       ctypes.c_void_p]
        fn.restype = ctypes.c_int
    return lib


class PagedKV:
    """A paged KV cache on the device: num_blocks blocks of block_bytes, and a block table that
    maps chunk c's i-th block to a physical block (spread out, as a paged cache is)."""

    def __init__(self, lib, num_chunks, blocks_per_chunk=16, block_bytes=64 * 1024, spin_ns=0):
        self.lib = lib
        self.blocks_per_chunk = blocks_per_chunk
        self.block_bytes = block_bytes
        self.chunk_bytes = blocks_per_chunk * block_bytes
        self.num_chunks = num_chunks
        self.num_blocks = num_chunks * blocks_per_chunk
        self.spin_ns = spin_ns  # on a real GPU the kernel waits this long first (bench/gpu.sh)
        self.kv = torch.empty((self.num_blocks, block_bytes), dtype=torch.uint8, device="cuda")
        n = self.num_blocks
        table = torch.tensor([(b * 7 + 3) % n for b in range(n)], dtype=torch.int32)
        if n % 7 == 0:  # 7 must be invertible mod n for the table to be a permutation
            table = torch.arange(n - 1, -1, -1, dtype=torch.int32)
        self.table_cpu = table
        self.table = table.to("cuda")  # a synchronous upload, once
        torch.cuda.synchronize()

    def _ids(self, first_chunk):
        return self.table.data_ptr() + first_chunk * self.blocks_per_chunk * 4

    def _launch(self, fn, tensors, first_chunk):
        if not 1 <= len(tensors) <= MAX_OBJECTS:
            raise ValueError("1 to %d chunks per launch" % MAX_OBJECTS)
        ptrs = (ctypes.c_uint64 * MAX_OBJECTS)(*[t.data_ptr() for t in tensors])
        err = fn(ptrs, len(tensors), self.kv.data_ptr(), self._ids(first_chunk),
                 self.blocks_per_chunk, self.block_bytes, self.spin_ns,
                 torch.cuda.current_stream().cuda_stream)
        if err:
            raise RuntimeError("kernel launch failed: cudaError %d" % err)


# ---- retrieve: CPU chunks -> paged KV ----------------------------------------------------------
def scatter_cpu_to_paged_kv(cache, chunks, first_chunk):
    """Writes chunks (CPU uint8 tensors of cache.chunk_bytes) into the paged cache at chunk
    indices first_chunk, first_chunk + 1, ... The incident's version: returns without waiting."""
    pinned = [c if c.is_pinned() else c.pin_memory() for c in chunks]
    cache._launch(cache.lib.pgkv_scatter, pinned, first_chunk)
    # returning drops the last reference to the temporaries: back to the caching allocator


def scatter_cpu_to_paged_kv_fixed(cache, chunks, first_chunk):
    pinned = [c if c.is_pinned() else c.pin_memory() for c in chunks]
    cache._launch(cache.lib.pgkv_scatter, pinned, first_chunk)
    torch.cuda.current_stream().synchronize()  # the fix: the kernel has read the temporaries


# ---- store: paged KV -> pinned CPU chunks -> pickle ---------------------------------------------
def gather_paged_kv_to_cpu(cache, first_chunk, count):
    """Copies `count` chunks out of the paged cache into new pinned CPU tensors, asynchronously."""
    outs = [torch.empty(cache.chunk_bytes, dtype=torch.uint8, pin_memory=True)
            for _ in range(count)]
    cache._launch(cache.lib.pgkv_gather, outs, first_chunk)
    return outs


def gather_paged_kv_to_cpu_fixed(cache, first_chunk, count):
    outs = gather_paged_kv_to_cpu(cache, first_chunk, count)
    torch.cuda.current_stream().synchronize()  # the fix: the kernel has written the outputs
    return outs


def commit_store(chunks):
    """The pickle transport: serialize each chunk (a CPU read of its bytes) for the socket."""
    return [pickle.dumps(c) for c in chunks]
