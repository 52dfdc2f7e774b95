"""torch_imports.py: the installed PyTorch runs on simcuda. Run with simcuda's libcudart.so.13
preloaded and its directory on LD_LIBRARY_PATH (tests/torch/CMakeLists.txt does).

Checks that every runtime name torch's libraries import (name@libcudart.so.13) and every driver
name they link (libcaffe2_nvrtc.so needs libcuda.so.1) is exported by simcuda, that each of
those libraries loads with RTLD_NOW (as Python opens extension modules: every import must
resolve, called or not), and that torch initializes CUDA on simcuda: a device, a pinned
round trip through non_blocking copies, a stream pool. A new torch whose libraries import a
name simcuda lacks fails here first, with the names listed.

Exits 77 (skipped) without torch unless CI=true, where that fails."""
import ctypes
import glob
import os
import subprocess
import sys


def dynamic_symbols(path, defined):
    out = subprocess.run(["nm", "-D", "--defined-only" if defined else "--undefined-only", path],
                         capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def main():
    import importlib.util
    spec = importlib.util.find_spec("torch")
    if spec is None:
        if os.environ.get("CI") in ("true", "1"):
            print("torch_imports: no torch, and CI is set", file=sys.stderr)
            return 1
        print("torch_imports: skipped: no torch in %s" % sys.executable, file=sys.stderr)
        return 77
    simcuda = os.environ["PGT_SIMCUDA_DIR"]
    runtime = {s.split("@")[0] for s in dynamic_symbols(os.path.join(simcuda, "libcudart.so.13"),
                                                         True) if "@@libcudart.so.13" in s}
    driver = {s.split("@")[0] for s in dynamic_symbols(os.path.join(simcuda, "libcuda.so.1"), True)}
    # Found without importing torch: an import that fails on simcuda is what this test reports.
    libdir = os.path.join(list(spec.submodule_search_locations)[0], "lib")
    libs = sorted(glob.glob(os.path.join(libdir, "*.so*")))
    missing = {}
    for lib in libs:
        needed = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True).stdout
        for sym in dynamic_symbols(lib, False):
            name, _, version = sym.partition("@")
            if version.startswith("libcudart.so") and name not in runtime:
                missing.setdefault(os.path.basename(lib), []).append(sym)
            elif not version and "[libcuda.so.1]" in needed and name.startswith("cu") \
                    and name[2:3].isupper() and name not in driver:
                missing.setdefault(os.path.basename(lib), []).append(name + " (libcuda.so.1)")
    for lib, names in sorted(missing.items()):
        print("torch_imports: %s imports what simcuda lacks: %s" % (lib, " ".join(sorted(names))))
    for lib in libs:  # an unresolvable import fails the load, naming it
        try:
            ctypes.CDLL(lib, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
        except OSError as e:
            missing.setdefault(os.path.basename(lib), []).append(str(e))
            print("torch_imports: %s does not load: %s" % (os.path.basename(lib), e))
    if missing:
        return 1

    import torch
    print("torch %s (CUDA %s): %d libraries, %d runtime and %d driver names checked"
          % (torch.__version__, torch.version.cuda, len(libs), len(runtime), len(driver)))
    assert torch.cuda.is_available() and torch.cuda.device_count() == 1
    src = torch.arange(1 << 20, dtype=torch.float32).pin_memory()
    dev = torch.empty_like(src, device="cuda")
    dev.copy_(src, non_blocking=True)
    back = torch.empty_like(src).pin_memory()
    back.copy_(dev, non_blocking=True)
    torch.cuda.current_stream().synchronize()
    assert torch.equal(src, back), "pinned round trip differs"
    torch.cuda.Stream()  # the stream pool: 128 streams
    maps = open("/proc/self/maps").read()
    for lib in ("libcudart.so.13", "libcuda.so.1"):
        assert os.path.join(simcuda, lib) in maps, "%s is not simcuda's" % lib
    print("torch_imports: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
