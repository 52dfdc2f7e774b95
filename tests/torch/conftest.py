"""conftest.py: what every torch test needs: the paths CTest passes in, and run(), which starts
scenario.py (or any script) as its own process on simcuda, without pinguard or under the
launcher's `pinguard run --simcuda`, and collects its JSON result and pinguard's reports.

Environment (set by tests/torch/CMakeLists.txt): PGT_LAUNCHER (bin/pinguard), PGT_SIMCUDA_DIR
(simcuda's libcudart.so.13 and libcuda.so.1), PGKV_LIB (the kernels' simcuda build)."""
import json
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
# Without pinguard and under enforce, every kernel starts 20 ms after its enqueue: the CPU is
# certainly first, so a bug corrupts and enforce has work to wait for. Audit runs at a device
# latency of 0: it must report an access the program never ordered even when the device finished
# first.
LATENCY_US = "20000"
AUDIT_LATENCY_US = "0"

# The two ways torch's caching host allocator pins memory.
ALLOC_CONFS = {
    "cudaHostAlloc": "",
    "cudaHostRegister": "pinned_use_cuda_host_register:True",
}


def _need(name):
    value = os.environ.get(name)
    if not value:
        pytest.fail("%s is not set: run this suite through CTest (tests/torch/CMakeLists.txt)"
                    % name)
    return value


class Result:
    def __init__(self, proc):
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        lines = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
        self.data = lines[-1] if lines else {}
        # A script that runs several scenarios in one process prints one line each.
        self.scenarios = {d["scenario"]: d for d in lines if "scenario" in d}
        self.kinds = re.findall(r"pinguard: ERROR: ([a-z-]+) ", proc.stderr)
        m = re.search(r"^pinguard: (\d+) reports \((\d+) suppressed\), (\d+) waits", proc.stderr,
                      re.M)
        self.reports, self.waits = (int(m.group(1)), int(m.group(3))) if m else (0, 0)

    def report_texts(self, kind):
        """The full text of each printed report of this kind."""
        blocks = re.split(r"(?m)^(?===\d+==pinguard: ERROR: )", self.stderr)
        return [b for b in blocks if b.startswith("==") and (" ERROR: %s " % kind) in b]

    def __getitem__(self, key):
        return self.data[key]

    def explain(self):
        return "exit %d\nstdout:\n%s\nstderr (tail):\n%s" % (self.rc, self.stdout,
                                                             self.stderr[-6000:])


def run(args, mode=None, alloc_conf="", options=None, timeout=240, script=None,
        latency_us=None):
    """Runs `python script args` (scenario.py by default) on simcuda: with mode None, without
    pinguard; with "audit" or "enforce", under `pinguard run --simcuda --mode MODE`. The device
    latency is latency_us, by default AUDIT_LATENCY_US in audit and LATENCY_US otherwise."""
    if latency_us is None:
        latency_us = AUDIT_LATENCY_US if mode == "audit" else LATENCY_US
    env = dict(os.environ)
    env["SIMCUDA_LATENCY_US"] = latency_us
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    module_dir = os.environ.get("PGT_MODULE_DIR")  # pinguard_annotations
    if module_dir:
        env["PYTHONPATH"] = os.pathsep.join([module_dir] + [p for p in env.get(
            "PYTHONPATH", "").split(os.pathsep) if p])
    env.pop("PINGUARD_OPTIONS", None)
    if alloc_conf:
        env["PYTORCH_CUDA_ALLOC_CONF"] = alloc_conf
    else:
        env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    cmd = [sys.executable, script or os.path.join(HERE, "scenario.py")] + list(args)
    if mode is None:
        simcuda = _need("PGT_SIMCUDA_DIR")
        env["LD_PRELOAD"] = os.path.join(simcuda, "libcudart.so.13")
        env["LD_LIBRARY_PATH"] = simcuda
    else:
        launcher = [_need("PGT_LAUNCHER"), "run", "--simcuda", "--mode", mode]
        if options:
            launcher += ["--options", options]
        cmd = launcher + ["--"] + cmd
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    return Result(proc)


@pytest.fixture(params=sorted(ALLOC_CONFS), ids=lambda k: k)
def alloc_conf(request):
    """Each test runs once per pinned-memory mode of torch's caching host allocator."""
    return ALLOC_CONFS[request.param]
