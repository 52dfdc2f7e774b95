#!/usr/bin/env python3
"""torch_repro.py: the incident's two bugs, in PyTorch, on a real GPU (bench/gpu.sh runs it with
no pinguard, under audit and under enforce, and compares).

  torch_repro.py pickle  [--mib N]
      A pinned host tensor receives a non_blocking device->host copy (queued behind a sleeping
      kernel), then pickle.dumps() reads it at once: the store bug with the pickle transport.
  torch_repro.py recycle --path ctypes|chevron|inline|triton [--lib libhostread.so] [--mib N]
      A pageable chunk is pinned into a temporary (pin_memory(), the caching host allocator),
      a kernel reads the temporary through its raw host pointer (queued behind a sleeping
      kernel), the temporary is dropped, and the next pin_memory() gets the same block and
      overwrites it while the kernel has not read it yet: the retrieve bug.
      Kernel paths: ctypes = libhostread.so calling cudaLaunchKernel; chevron = libhostread.so
      using <<<>>> (CUDA 13 lowers it to __cudaLaunchKernel); inline = a
      torch.utils.cpp_extension.load_inline kernel (<<<>>>); triton = a Triton kernel (launched
      by Triton's own driver calls).

Prints one JSON line: case, path, elements, corrupted (elements that differ from what the
program meant to move), and for recycle whether the block was really reused. Exit 0 when the
scenario ran (corrupted or not), 3 when it could not run (the line says why)."""
import argparse
import ctypes
import json
import os
import pickle
import sys
import time

SLEEP_CYCLES = 400_000_000  # about 0.2 s on an H200: the CPU is certainly first


def emit(**kv):
    print(json.dumps(kv), flush=True)


def case_pickle(torch, n):
    dev = torch.arange(1, n + 1, dtype=torch.float32, device="cuda")
    host = torch.zeros(n, dtype=torch.float32, pin_memory=True)
    torch.cuda.synchronize()
    torch.cuda._sleep(SLEEP_CYCLES)           # the copy below waits for this on the stream
    host.copy_(dev, non_blocking=True)        # device->host, asynchronous into pinned memory
    blob = pickle.dumps(host)                 # the CPU reads the buffer: pickle's serialization
    torch.cuda.synchronize()
    got = pickle.loads(blob)
    return {"corrupted": int((got != dev.cpu()).sum().item())}


def kernel_ctypes(torch, lib, chevron):
    hl = ctypes.CDLL(lib)
    fn = hl.hostread_launch_chevron if chevron else hl.hostread_launch
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_longlong,
                   ctypes.c_void_p]
    fn.restype = ctypes.c_int

    def launch(src_ptr, dst, n):
        err = fn(src_ptr, dst.data_ptr(), n, 0, torch.cuda.current_stream().cuda_stream)
        if err:
            raise RuntimeError(f"launch failed: cudaError {err}")
    return launch


INLINE_CUDA = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
__global__ void inline_copy(const float *src, float *dst, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    dst[i] = src[i];
}
void launch(int64_t src_ptr, torch::Tensor dst, int64_t n) {
  auto s = c10::cuda::getCurrentCUDAStream();
  inline_copy<<<64, 256, 0, s.stream()>>>((const float *)src_ptr, dst.data_ptr<float>(), n);
}
"""


def kernel_inline(torch, build_dir):
    from torch.utils.cpp_extension import load_inline, verify_ninja_availability
    verify_ninja_availability()
    os.makedirs(build_dir, exist_ok=True)
    mod = load_inline(name="pg_hostread_inline",
                      cpp_sources="void launch(int64_t, torch::Tensor, int64_t);",
                      cuda_sources=INLINE_CUDA, functions=["launch"], build_directory=build_dir,
                      extra_cuda_cflags=["-arch=sm_90"], verbose=False)

    def launch(src_ptr, dst, n):
        mod.launch(src_ptr, dst, n)
    return launch


def kernel_triton(torch):
    import triton
    import triton.language as tl

    @triton.jit
    def triton_copy(src, dst, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)

    class HostPointer:  # Triton takes anything with data_ptr() and dtype as a pointer
        def __init__(self, ptr):
            self.ptr, self.dtype = ptr, torch.float32

        def data_ptr(self):
            return self.ptr

    def launch(src_ptr, dst, n):
        triton_copy[(triton.cdiv(n, 1024),)](HostPointer(src_ptr), dst, n, BLOCK=1024)
    return launch


def case_recycle(torch, n, launch):
    first = torch.full((n,), 1.0)             # pageable chunks, as fetched from the store
    second = torch.full((n,), 2.0)
    dst = torch.zeros(n, dtype=torch.float32, device="cuda")
    torch.cuda.synchronize()
    tmp = first.pin_memory()                  # a temporary from the caching host allocator
    ptr = tmp.data_ptr()
    torch.cuda._sleep(SLEEP_CYCLES)
    launch(ptr, dst, n)                       # reads the temporary through its raw pointer
    del tmp                                   # last reference: the block is free again
    again = second.pin_memory()               # same size class: the same block, CPU memcpy
    reused = again.data_ptr() == ptr
    torch.cuda.synchronize()
    return {"corrupted": int((dst.cpu() != 1.0).sum().item()), "reused": reused}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["pickle", "recycle"])
    ap.add_argument("--path", default="ctypes", choices=["ctypes", "chevron", "inline", "triton"])
    ap.add_argument("--lib", default="libhostread.so")
    ap.add_argument("--build-dir", default="/tmp/pg_inline_build")
    ap.add_argument("--mib", type=int, default=32)
    a = ap.parse_args()
    base = {"case": a.case, "path": a.path if a.case == "recycle" else "copy_"}
    n = a.mib * (1 << 20) // 4
    t0 = time.time()
    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
        torch.cuda.init()
        if a.case == "pickle":
            res = case_pickle(torch, n)
        else:
            if a.path in ("ctypes", "chevron"):
                launch = kernel_ctypes(torch, a.lib, a.path == "chevron")
            elif a.path == "inline":
                launch = kernel_inline(torch, a.build_dir)
            else:
                launch = kernel_triton(torch)
            res = case_recycle(torch, n, launch)
    except Exception as e:  # the scenario could not run here: say why, for the results file
        emit(**base, error=f"{type(e).__name__}: {e}"[:400], seconds=round(time.time() - t0, 2))
        return 3
    emit(**base, elements=n, **res, seconds=round(time.time() - t0, 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
