#!/usr/bin/env python3
"""instr_profile.py: reads callgrind files for bench/instr.sh.

  instr_profile.py work FILE
      The run's instructions, less the thread hand-off: the self instructions of the C library's
      blocking and waking primitives (condition variable waits and wakes, futex waits, lock slow
      paths, cancellation points, sched_yield). How many of those a run executes depends on how
      the scheduler interleaved the caller and the stream's worker thread, not on the work done,
      and it is what made totals differ by up to 1% between identical runs.
  instr_profile.py profile --copies N AUDIT_SHORT AUDIT_LONG [--base SHORT LONG] [--min 5]
      Where the instructions per copy go, function by function, as markdown. Every figure is
      marginal: (count in the long run - count in the short run) / N, so start-up and exit cancel.
      1. each libpinguard.so function: inclusive and self instructions per copy (audit runs);
      2. with --base (the runtime + cudaEventRecord runs): the self instructions per copy of every
         function, pinguard's run minus the baseline's, hand-off excluded; it sums to
         added_instr_per_copy and shows what pinguard makes the C library and the runtime do."""
import argparse
import re
import sys
from collections import defaultdict

HANDOFF = re.compile(r"^(pthread_cond_(wait|timedwait|clockwait|signal|broadcast)|__condvar_|"
                     r"__futex|futex_|__lll_lock_w|__pthread_mutex_cond_lock|"
                     r"__pthread_(enable|disable)_asynccancel|sched_yield)")


def parse(path):
    """(summary Ir, {(object, function): self Ir}, {(object, function): inclusive Ir})."""
    names = {"fn": {}, "ob": {}}
    self_ = defaultdict(int)
    calls = defaultdict(int)
    summary = 0
    ob = fn = None
    in_call = False

    def name(kind, text):
        m = re.match(r"\((\d+)\)(?:\s+(.*))?$", text)
        if not m:
            return text
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
        return names[kind].get(m.group(1), "?")

    with open(path) as f:
        for line in f:
            c = line[0]
            if c.isdigit() or c in "+-*":
                parts = line.split()
                ir = int(parts[1]) if len(parts) > 1 else 0
                if in_call:
                    calls[(ob, fn)] += ir
                    in_call = False
                else:
                    self_[(ob, fn)] += ir
            elif line.startswith("fn="):
                fn = name("fn", line[3:].strip())
            elif line.startswith("cfn="):
                name("fn", line[4:].strip())
            elif line.startswith("ob="):
                ob = name("ob", line[3:].strip())
            elif line.startswith("cob="):
                name("ob", line[4:].strip())
            elif line.startswith("calls="):
                in_call = True
            elif line.startswith("summary:") or line.startswith("totals:"):
                summary = int(line.split()[1])
    incl = {k: self_.get(k, 0) + calls.get(k, 0) for k in set(self_) | set(calls)}
    return summary, self_, incl


def base_name(fn):
    return re.sub(r"'\d+$", "", fn or "?")


def handoff(self_):
    return sum(v for (ob, fn), v in self_.items() if HANDOFF.match(base_name(fn)))


def work(path):
    summary, self_, _ = parse(path)
    return summary - handoff(self_)


def by_function(self_, incl):
    """Merges recursion levels (f'2) into f for self counts; inclusive counts keep the outermost
    level, which already holds the deeper ones."""
    s, i = defaultdict(int), {}
    for (ob, fn), v in self_.items():
        s[(ob, base_name(fn))] += v
    for (ob, fn), v in incl.items():
        if base_name(fn) == fn:
            i[(ob, fn)] = v
    return s, i


def marginal(short, long_, n):
    _, s1, i1 = parse(short)
    _, s2, i2 = parse(long_)
    s1, i1 = by_function(s1, i1)
    s2, i2 = by_function(s2, i2)
    ms = {k: (s2.get(k, 0) - s1.get(k, 0)) / n for k in set(s1) | set(s2)}
    mi = {k: (i2.get(k, 0) - i1.get(k, 0)) / n for k in set(i1) | set(i2)}
    return ms, mi


def obj(k):
    return (k[0] or "?").rsplit("/", 1)[-1]


def profile(a):
    ms, mi = marginal(a.short, a.long, a.copies)
    print("| pinguard function | inclusive per copy | self per copy |")
    print("|---|---|---|")
    rows = [k for k in mi if obj(k) == "libpinguard.so" and mi[k] >= a.min]
    for k in sorted(rows, key=lambda k: (-mi[k], k[1])):
        print(f"| `{k[1]}` | {mi[k]:,.0f} | {ms.get(k, 0):,.0f} |")
    if not a.base:
        return 0
    bs, _ = marginal(a.base[0], a.base[1], a.copies)
    diff = {k: ms.get(k, 0) - bs.get(k, 0) for k in set(ms) | set(bs)
            if not HANDOFF.match(k[1])}
    print()
    print("| function (object) | self per copy, pinguard minus runtime + record |")
    print("|---|---|")
    shown = 0.0
    for k in sorted(diff, key=lambda k: (-abs(diff[k]), k[1])):
        if abs(diff[k]) < a.min:
            continue
        shown += diff[k]
        print(f"| `{k[1]}` ({obj(k)}) | {diff[k]:,.0f} |")
    total = sum(diff.values())
    print(f"| (the rest, under {a.min:g} each) | {total - shown:,.0f} |")
    print(f"| **total** | **{total:,.0f}** |")
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("work")
    w.add_argument("file")
    p = sub.add_parser("profile")
    p.add_argument("--copies", type=int, required=True, help="copies between the two runs")
    p.add_argument("short")
    p.add_argument("long")
    p.add_argument("--base", nargs=2, metavar=("SHORT", "LONG"))
    p.add_argument("--min", type=float, default=5.0, help="rows below this are left out")
    a = ap.parse_args()
    if a.cmd == "work":
        print(work(a.file))
        return 0
    return profile(a)


if __name__ == "__main__":
    sys.exit(main())
