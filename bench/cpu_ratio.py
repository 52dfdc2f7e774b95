#!/usr/bin/env python3
"""cpu_ratio.py: the CPU time pinguard adds to three Python loops that look like real programs, as
a ratio to the same loop without pinguard, on simcuda (latency 0). Prints a markdown table and
one JSON line; it is a measurement, not a test (CPU time on a shared 2-core machine moves by
tens of percent between runs, so no CTest gate holds these figures).

  pylaunch   bench/py_launch.py --kernel 16: a cudaLaunchKernel of a kernel with 16 pointer
             parameters, none pinned, per call, through ctypes, from 10 nested Python frames
             (12 frames in all), the system python3: a serving engine's launch loop, which
             pinguard tracks nothing for (the issue's budget, 1.15)
  pycopy     bench/py_launch.py: one 4 KiB cudaMemcpyAsync into a pinned buffer per call, the
             same frames: tracked, a stack with Python frames per call, guard pages
  torchcopy  bench/torch_copy.py: PyTorch's pinned.copy_(dev, non_blocking=True), 4 KiB, with
             the torch venv's python (.venv-torch); also under PyTorch's own CUDA sanitizer
             (TORCH_CUDA_SANITIZER=1, without pinguard), side by side

Each loop reports the process's CPU time (every thread's) over the loop alone, per operation.
A repetition runs every configuration once, in an order rotated from one repetition to the
next, so that drift hits all alike; a ratio is the median over repetitions of the
configuration's figure over the no-pinguard run of the same repetition. pinguard runs as a user
runs it: `pinguard run --simcuda [--mode M]`, with the shim's default options unless a row says
otherwise; fast_unwind=auto is passed, since the launcher's --simcuda makes fast_unwind=0 its
default (full stacks for test runs: glibc's backtrace() at every capture), which is not what a
program on a GPU gets.

  bench/cpu_ratio.py [--build DIR] [--runs R] [--launches N] [--copies N] [--case C]
                     [--torch-python PATH] [--python PATH]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# (key, label, pinguard mode or None, extra options, extra environment)
CONFIGS = {
    "pylaunch": [
        ("none", "no pinguard", None, "", {}),
        ("audit", "audit (default options)", "audit", "", {}),
        ("enforce", "enforce (default options)", "enforce", "", {}),
    ],
    "pycopy": [
        ("none", "no pinguard", None, "", {}),
        ("audit", "audit (default options)", "audit", "", {}),
        ("enforce", "enforce (default options)", "enforce", "", {}),
        ("audit_noguard", "audit, guard=0", "audit", "guard=0", {}),
        ("audit_noguard_nopy", "audit, guard=0, python_stacks=0", "audit",
         "guard=0:python_stacks=0", {}),
    ],
    "torchcopy": [
        ("none", "no pinguard", None, "", {}),
        ("audit", "audit (default options)", "audit", "", {}),
        ("enforce", "enforce (default options)", "enforce", "", {}),
        ("audit_noguard", "audit, guard=0", "audit", "guard=0", {}),
        ("torch_sanitizer", "PyTorch's CUDA sanitizer (TORCH_CUDA_SANITIZER=1), no pinguard",
         None, "", {"TORCH_CUDA_SANITIZER": "1"}),
    ],
}
BUDGETS = {("pylaunch", "audit"): 1.15, ("torchcopy", "audit"): 1.10}


def run_one(args, case, cfg):
    key, _, mode, opts, extra = cfg
    build = args.build
    simcuda = os.path.join(build, "simcuda")
    env = dict(os.environ)
    env["SIMCUDA_LATENCY_US"] = "0"
    env.pop("PINGUARD_OPTIONS", None)
    env.update(extra)
    if case == "pylaunch":
        helper = os.path.join(build, "bench", "libbench_pykernel.so")
        cmd = [args.python, os.path.join(HERE, "py_launch.py"), helper, str(args.launches),
               "--kernel", "16"]
        field = "cpu_ns_per_launch"
    elif case == "pycopy":
        helper = os.path.join(build, "tests", "e2e", "libe2e_pystack_helper.so")
        cmd = [args.python, os.path.join(HERE, "py_launch.py"), helper, str(args.launches)]
        field = "cpu_ns_per_launch"
    else:
        cmd = [args.torch_python, os.path.join(HERE, "torch_copy.py"), str(args.copies)]
        field = "cpu_ns_per_copy"
        # numpy's OpenBLAS thread server spins while idle: CPU time that is neither the loop's
        # nor pinguard's, and that moves from run to run.
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
        env.setdefault("OMP_NUM_THREADS", "1")
    if mode is None:
        env["LD_PRELOAD"] = os.path.join(simcuda, "libcudart.so.13") if case == "torchcopy" else ""
        env["LD_LIBRARY_PATH"] = simcuda
    else:
        launcher = [os.path.join(build, "bin", "pinguard"), "run", "--simcuda", "--mode", mode,
                    "--options", "print_summary=0:fast_unwind=auto" + (":" + opts if opts else "")]
        cmd = launcher + ["--"] + cmd
        if case != "torchcopy":
            env["LD_LIBRARY_PATH"] = simcuda
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
    if p.returncode != 0:
        sys.exit("cpu_ratio.py: %s/%s failed (%d): %s\n%s" % (case, key, p.returncode,
                                                            " ".join(cmd), p.stderr[-2000:]))
    line = [l for l in p.stdout.splitlines() if l.startswith("{")][-1]
    return json.loads(line)[field]


def measure(args, case):
    cfgs = CONFIGS[case]
    per = {c[0]: [] for c in cfgs}
    for r in range(args.runs):
        order = cfgs[r % len(cfgs):] + cfgs[:r % len(cfgs)]
        for cfg in order:
            per[cfg[0]].append(run_one(args, case, cfg))
        print("  %s repetition %d: %s" % (case, r + 1, json.dumps({k: v[-1] for k, v in per.items()})),
              file=sys.stderr)
    rows = []
    for key, label, _, _, _ in cfgs:
        ratios = [v / n for v, n in zip(per[key], per["none"])]
        rows.append({"case": case, "config": key, "label": label,
                     "cpu_ns": round(statistics.median(per[key])),
                     "ratio": round(statistics.median(ratios), 3),
                     "ratios": [round(x, 3) for x in ratios],
                     "budget": BUDGETS.get((case, key))})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--launches", type=int, default=32000)
    ap.add_argument("--copies", type=int, default=12800)
    ap.add_argument("--case", choices=["pylaunch", "pycopy", "torchcopy", "all"], default="all")
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--torch-python", default=os.path.join(ROOT, ".venv-torch", "bin", "python"))
    ap.add_argument("--timeout", type=int, default=600)
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    cases = ["pylaunch", "pycopy", "torchcopy"] if args.case == "all" else [args.case]
    rows = []
    for case in cases:
        rows += measure(args, case)
    print("| loop | configuration | CPU ns per op (median) | ratio to no pinguard (median) | "
          "per repetition | budget |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %s | %s | %.2f | %s | %s |" % (
            r["case"], r["label"], format(r["cpu_ns"], ","), r["ratio"],
            ", ".join("%.2f" % x for x in r["ratios"]),
            ("<= %.2f" % r["budget"]) if r["budget"] else ""))
    load = os.getloadavg()
    print(json.dumps({"bench": "cpu_ratio", "runs": args.runs, "loadavg": [round(x, 2) for x in load],
                      "ratios": {"%s.%s" % (r["case"], r["config"]): r["ratio"] for r in rows}}))


if __name__ == "__main__":
    main()
