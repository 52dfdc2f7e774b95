#!/usr/bin/env python3
"""report.py: turns bench/run.sh's result lines (group<TAB>mode<TAB>json) into the markdown
tables and, as the last line printed, the JSON object of headline figures. Every figure is a
median over repetitions; an "added" figure is the median of per-repetition differences, since
the modes of one repetition ran back to back."""
import argparse
import json
import statistics
import sys
from collections import defaultdict

TARGETS = {  # key: (comparison, bound)
    "engine_enforce_vs_none": (">=", 0.95),
    "engine_guard_vs_none": (">=", 0.85),
    "engine_enforce_vs_syncall": (">=", 1.3),
    "engine8_enforce_vs_none": (">=", 0.95),
    "engine8_guard_vs_none": (">=", 0.85),
    "added_ns_audit": ("<=", 300),
    "threads2_speedup": (">=", 1.6),
    "scale_100k_vs_10": ("<=", 2),
    "added_instr_per_copy": ("<=", 600),
    "added_instr_per_copy_8threads": ("<=", 600),
    "added_instr_per_copy_100k": ("<=", 800),
}
INSTR_KEYS = {"added_instr_per_copy": "copy_t1", "added_instr_per_copy_8threads": "copy_t8",
              "added_instr_per_copy_100k": "scale"}


def load(path):
    runs = defaultdict(lambda: defaultdict(list))  # group -> mode -> [json per repetition]
    with open(path) as f:
        for line in f:
            group, mode, js = line.rstrip("\n").split("\t", 2)
            runs[group][mode].append(json.loads(js))
    return runs


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def field(runs, group, mode, key):
    return [r[key] for r in runs.get(group, {}).get(mode, [])]


def added(runs, group, mode, key="ns_per_call", base="none"):
    """Median over repetitions of (mode - base), pairing the k-th run of each."""
    a, b = field(runs, group, mode, key), field(runs, group, base, key)
    return med([x - y for x, y in zip(a, b)])


def engine_gbps(r):
    return 2 * r["bytes"] / (r["store_s"] + r["retrieve_s"]) / 1e9


def fmt(v, digits=0):
    if v is None:
        return "n/a"
    return f"{v:,.{digits}f}"


def ratio(a, b):
    return a / b if a is not None and b else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--level", default="full")
    ap.add_argument("--seconds", type=int, default=0)
    ap.add_argument("--scale-hi", default="scale_100000_10000")
    ap.add_argument("--scale-lo", default="scale_10_10")
    a = ap.parse_args()
    runs = load(a.results)
    out = []
    p = out.append

    # ---- microbenchmark
    modes = ["none", "event", "off", "audit", "enforce", "auditg", "guard"]
    names = {"none": "no preload", "event": "no preload, + cudaEventRecord per copy",
             "off": "mode=off", "audit": "audit, guard=0",
             "enforce": "enforce, guard=0", "auditg": "audit, guard=1 (every copy guarded)",
             "guard": "enforce, guard=1 (every copy guarded)"}
    reps = len(runs["copy_t1"]["none"])
    rt = "real runtime" if a.level == "gpu" else "simcuda latency 0"
    p(f"### Per-copy cost: 4 KiB host->device cudaMemcpyAsync, {rt} (median of {reps} runs)")
    p("")
    p("| mode | ns/call, 1 thread | added ns | ns/call, 2 threads | added ns | calls/s, 1 thread "
      "| calls/s, 2 threads | 2-thread speedup |")
    p("|---|---|---|---|---|---|---|---|")
    speedup = {}
    for m in modes:
        c1 = med(field(runs, "copy_t1", m, "calls_per_s"))
        c2 = med(field(runs, "copy_t2", m, "calls_per_s"))
        speedup[m] = ratio(c2, c1)
        p(f"| {names[m]} | {fmt(med(field(runs, 'copy_t1', m, 'ns_per_call')))} "
          f"| {fmt(added(runs, 'copy_t1', m)) if m != 'none' else '-'} "
          f"| {fmt(med(field(runs, 'copy_t2', m, 'ns_per_call')))} "
          f"| {fmt(added(runs, 'copy_t2', m)) if m != 'none' else '-'} "
          f"| {fmt(c1)} | {fmt(c2)} | {fmt(speedup[m], 2)} |")
    p("")

    # ---- scaling
    groups = sorted((g for g in runs if g.startswith("scale_")),
                    key=lambda g: tuple(int(x) for x in g.split("_")[1:]))
    lo = med(field(runs, a.scale_lo, "enforce", "ns_per_call"))
    p("### Scaling: ns per 4 KiB cudaMemcpyAsync with R regions registered and F copies held "
      "in flight")
    p("")
    p("| regions | in flight | no preload | audit, guard=0 | enforce, guard=0 | enforce added "
      "| enforce vs 10/10 |")
    p("|---|---|---|---|---|---|---|")
    for g in groups:
        _, nr, nf = g.split("_")
        e = med(field(runs, g, "enforce", "ns_per_call"))
        p(f"| {int(nr):,} | {int(nf):,} | {fmt(med(field(runs, g, 'none', 'ns_per_call')))} "
          f"| {fmt(med(field(runs, g, 'audit', 'ns_per_call')))} | {fmt(e)} "
          f"| {fmt(added(runs, g, 'enforce'))} | {fmt(ratio(e, lo), 2)} |")
    p("")

    # ---- guard pages
    p("### Guard pages (64 KiB)")
    p("")
    p("| what | ns |")
    p("|---|---|")
    p(f"| mprotect pair (protect + unprotect), raw | "
      f"{fmt(med(field(runs, 'guard_raw', 'none', 'protect_unprotect_ns')))} |")
    p(f"| protect, fault, unprotect in a SIGSEGV handler, raw | "
      f"{fmt(med(field(runs, 'guard_raw', 'none', 'protect_fault_unprotect_ns')))} |")
    for m, text in (("sync_none", "copy, cudaStreamSynchronize, read: no preload"),
                    ("sync_enforce", "copy, cudaStreamSynchronize, read: enforce"),
                    ("fault_guard", "copy, read (faults, waits for the copy): enforce + guard")):
        p(f"| {text} | {fmt(med(field(runs, 'guard_cycle', m, 'ns_per_cycle')))} |")
    p("")

    # ---- engine
    where = "real GPU" if a.level == "gpu" else "simcuda defaults: 2 ms latency"
    p(f"### Engine: kvxfer store + retrieve throughput ({where})")
    p("")
    p("| geometry | mode | store GB/s | retrieve GB/s | GB/s (both) | vs no preload "
      "| vs --sync=device |")
    p("|---|---|---|---|---|---|---|")
    eng = {}
    for g, label in (("engine_small", "small"), ("engine_llama", "llama3-8b"),
                     ("engine_dev8", "small, 8 devices")):
        if g not in runs:
            continue
        n = runs[g]["none"][0]["chunks"]
        if runs[g]["none"][0].get("devices", 1) > 1:
            n = f"{runs[g]['none'][0]['devices']} x {n}"
        tput = {m: med([engine_gbps(r) for r in runs[g][m]]) for m in runs[g]}
        eng[g] = tput
        for m, text in (("none", "no preload"), ("audit", "audit, guard=0"),
                        ("enforce", "enforce, guard=0"), ("auditg", "audit, guard=1"),
                        ("guard", "enforce, guard=1"), ("syncall", "--sync=device, no preload")):
            if m not in runs[g]:
                continue
            p(f"| {label}, {n} chunks | {text} "
              f"| {fmt(med(field(runs, g, m, 'store_gbps')), 3)} "
              f"| {fmt(med(field(runs, g, m, 'retrieve_gbps')), 3)} | {fmt(tput[m], 3)} "
              f"| {fmt(ratio(tput[m], tput['none']), 2)} "
              f"| {fmt(ratio(tput[m], tput['syncall']), 2)} |")
    p("")

    # ---- instructions per copy
    instr = {m: r[0] for m, r in runs.get("instr", {}).items()}
    if instr:
        p("### Instructions per 4 KiB cudaMemcpyAsync (callgrind, marginal, thread hand-off "
          "excluded)")
        p("")
        p("| case | runtime | + cudaEventRecord | audit, guard=0 | record | added by pinguard |")
        p("|---|---|---|---|---|---|")
        for m, text in (("copy_t1", "1 thread"), ("copy_t8", "8 threads, a stream each"),
                        ("scale", "regions and copies in flight")):
            r = instr.get(m)
            if not r:
                continue
            if m == "scale":
                text = f"{r['regions']:,} regions, {r['inflight']:,} in flight"
            p(f"| {text} | {fmt(r['runtime'])} | {fmt(r['runtime_record'])} | {fmt(r['audit'])} "
              f"| {fmt(r['record'])} | {fmt(r['added_instr_per_copy'])} |")
        p("")

    small = eng.get("engine_small", {})
    dev8 = eng.get("engine_dev8", {})
    head = {
        "engine_enforce_vs_none": ratio(small.get("enforce"), small.get("none")),
        "engine_guard_vs_none": ratio(small.get("guard"), small.get("none")),
        "engine_enforce_vs_syncall": ratio(small.get("enforce"), small.get("syncall")),
        "engine8_enforce_vs_none": ratio(dev8.get("enforce"), dev8.get("none")),
        "engine8_guard_vs_none": ratio(dev8.get("guard"), dev8.get("none")),
        "engine8_enforce_vs_syncall": ratio(dev8.get("enforce"), dev8.get("syncall")),
        "added_ns_audit": added(runs, "copy_t1", "audit"),
        "threads2_speedup": speedup.get("enforce"),
        "scale_100k_vs_10": ratio(med(field(runs, a.scale_hi, "enforce", "ns_per_call")), lo),
    }
    for k, m in INSTR_KEYS.items():  # only where instr.sh ran (valgrind, no sanitizer)
        if m in instr:
            head[k] = instr[m]["added_instr_per_copy"]
    p(f"### Headline ({a.level} run, {a.seconds} s; scale key: {a.scale_hi} vs {a.scale_lo}, "
      f"enforce)")
    p("")
    if a.level == "smoke":
        p("A smoke run's sizes only check that each program runs (too few copies to pay off what "
          "the first ones cost): its figures say nothing of speed. Run `bench/run.sh --quick` or "
          "the full run for them.")
        p("")
    p("| key | value | target | met |")
    p("|---|---|---|---|")
    for k, v in head.items():
        if k not in TARGETS:  # a figure without a target
            p(f"| `{k}` | {fmt(v, 2)} | - | - |")
            continue
        op, bound = TARGETS[k]
        ok = v is not None and (v >= bound if op == ">=" else v <= bound)
        p(f"| `{k}` | {fmt(v, 0 if k.startswith('added_') else 2)} | {op} {bound} "
          f"| {'yes' if ok else '**no**'} |")
    p("")
    print("\n".join(out))
    rounded = {k: (round(v, 1) if k.startswith("added_") else round(v, 3)) if v is not None
               else None for k, v in head.items()}
    print(json.dumps(rounded, separators=(", ", ": ")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
