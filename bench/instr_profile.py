#!/usr/bin/env python3
"""instr_profile.py: reads callgrind files for bench/instr.sh.

  instr_profile.py work FILE
      The run's instructions, with two parts counted otherwise:
      - the thread hand-off is left out: the self instructions of the C library's blocking and
        waking primitives (condition variable waits and wakes, futex waits, lock slow paths,
        cancellation points and the cleanup handlers a condition wait installs, sched_yield,
        and the simulated runtime's loop waiting for its worker, sc_stream_wait_seq). How many of
        those a run executes depends on how the scheduler interleaved the caller and the
        stream's worker thread, not on the work done, and it is what made totals differ by up
        to 1% between identical runs;
      - the C library's allocator is charged ALLOC_CALL_IR per call (malloc, calloc, realloc,
        free and the like, from anywhere but the allocator itself) instead of the instructions
        it ran. What a call costs depends on the heap's layout, which any change in what the
        process allocated moves: simcuda allocates a few blocks per call, and the same pinguard
        paths measured from 114 to 161 instructions per copy apart between builds, all of it in
        _int_malloc. A call pinguard adds still counts, at the flat rate (and bench/instr.sh
        fails when pinguard itself allocates per copy: `allocs`);
      - the C library's mutexes likewise, MUTEX_CALL_IR per lock, trylock or unlock call from
        outside them: an unlock that finds a waiter runs more of its own code before the wake
        (the wake itself is hand-off), and whether the simulated runtime's worker thread waits
        on a lock the caller releases is the scheduler's choice: one-thread copy counts moved by
        up to 12 per copy between identical runs on a loaded machine, all of it in
        __pthread_mutex_unlock_usercnt. A lock pinguard adds still counts, at the flat rate.
  instr_profile.py work FILE --only REGEX
      The same, counting only the objects whose path matches REGEX (and their calls into the
      allocator and the mutexes): bench/instr.sh's torchcopy case counts pinguard's own library,
      the simulated runtime and driver, the C library and the dynamic loader, the objects
      pinguard's work runs in, apart from the interpreter's and PyTorch's, whose counts move by
      hundreds per copy between runs with the heap's layout alone.
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
                     r"__pthread_(enable|disable)_asynccancel|sched_yield|"
                     r"_pthread_cleanup_(push|pop)|sc_stream_wait_seq$)")
# The C library's allocator: its entry points, and the internals they run.
ALLOC_ENTRY = re.compile(r"^(__libc_)?(malloc|calloc|realloc|reallocarray|free|cfree|memalign|"
                         r"posix_memalign|aligned_alloc|valloc|pvalloc)$")
ALLOC_INTERNAL = re.compile(r"^(_int_|malloc_consolidate|unlink_chunk|sysmalloc|alloc_perturb|"
                            r"tcache_|mremap_chunk|munmap_chunk|systrim|heap_trim|arena_|"
                            r"get_free_list|new_heap|shrink_heap|grow_heap|_mid_memalign|"
                            r"ptmalloc_init|malloc_init)")
ALLOC_CALL_IR = 100  # what one allocator call is charged (a glibc malloc + free: 100 to 300)
# The C library's mutexes: the entry points, and what they run that is not hand-off.
MUTEX_ENTRY = re.compile(r"^_*pthread_mutex_(lock|unlock|trylock)(@.*)?$")
MUTEX_INTERNAL = re.compile(r"^(__pthread_mutex_unlock_usercnt|__pthread_mutex_(lock|unlock)_full|"
                            r"lll_mutex_lock_optimized)$")
MUTEX_CALL_IR = 30  # one lock or unlock, uncontended (glibc 2.36: about 65 a pair)


def libc(ob):
    return "/libc.so" in (ob or "") or (ob or "").startswith("libc.so")


def is_alloc(ob, fn):
    f = base_name(fn)
    return libc(ob) and (ALLOC_ENTRY.match(f) or ALLOC_INTERNAL.match(f))


def is_mutex(ob, fn):
    f = base_name(fn)
    return libc(ob) and (MUTEX_ENTRY.match(f) or MUTEX_INTERNAL.match(f))


def flat(ob, fn):
    """Functions charged per call instead of by what they ran: the allocator and the mutexes."""
    return is_alloc(ob, fn) or is_mutex(ob, fn)


def parse(path, with_calls=False):
    """(summary Ir, {(object, function): self Ir}, {(object, function): inclusive Ir}); with
    with_calls, also {((caller object, function), (callee object, function)): call count}."""
    names = {"fn": {}, "ob": {}}
    self_ = defaultdict(int)
    calls = defaultdict(int)
    counts = defaultdict(int)
    summary = 0
    ob = fn = None
    cob = callee = None
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
                # A callee in another object was named by the cob= line just before.
                callee = (cob if cob is not None else ob, name("fn", line[4:].strip()))
                cob = None
            elif line.startswith("ob="):
                ob = name("ob", line[3:].strip())
            elif line.startswith("cob="):
                cob = name("ob", line[4:].strip())
            elif line.startswith("calls="):
                in_call = True
                if with_calls and callee is not None:
                    counts[((ob, fn), callee)] += int(line[6:].split()[0])
            elif line.startswith("summary:") or line.startswith("totals:"):
                summary = int(line.split()[1])
    incl = {k: self_.get(k, 0) + calls.get(k, 0) for k in set(self_) | set(calls)}
    if with_calls:
        return summary, self_, incl, counts
    return summary, self_, incl


def alloc_calls(counts, caller_ob=None):
    """Calls into the allocator from outside it (from objects named caller_ob only, if given)."""
    return sum(n for ((ob, fn), (cob, cfn)), n in counts.items()
               if is_alloc(cob, cfn) and ALLOC_ENTRY.match(base_name(cfn)) and
               not is_alloc(ob, fn) and (caller_ob is None or (ob or "").endswith(caller_ob)))


def base_name(fn):
    return re.sub(r"'\d+$", "", fn or "?")


def handoff(self_):
    return sum(v for (ob, fn), v in self_.items() if HANDOFF.match(base_name(fn)))


def mutex_calls(counts):
    """Calls into the C library's mutexes from outside them."""
    return sum(n for ((ob, fn), (cob, cfn)), n in counts.items()
               if is_mutex(cob, cfn) and MUTEX_ENTRY.match(base_name(cfn)) and
               not is_mutex(ob, fn))


def work(path, only=None):
    """The run's instructions as counted above; with `only` (a regular expression), only those
    of the objects whose path it matches, with their calls into the allocator and the mutexes."""
    summary, self_, _, counts = parse(path, with_calls=True)
    if only is not None:
        keep = re.compile(only)
        self_ = {k: v for k, v in self_.items() if keep.search(k[0] or "")}
        counts = {k: v for k, v in counts.items() if keep.search(k[0][0] or "")}
        summary = sum(self_.values())
    flat_self = sum(v for (ob, fn), v in self_.items() if flat(ob, fn))
    return (summary - handoff(self_) - flat_self + ALLOC_CALL_IR * alloc_calls(counts) +
            MUTEX_CALL_IR * mutex_calls(counts))


def allocs(path, caller_ob):
    """Allocator calls made by object caller_ob (bench/instr.sh: pinguard's, per copy)."""
    return alloc_calls(parse(path, with_calls=True)[3], caller_ob)


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
    """Marginal self and inclusive instructions per copy of each function, and allocator calls
    per copy."""
    _, s1, i1, c1 = parse(short, with_calls=True)
    _, s2, i2, c2 = parse(long_, with_calls=True)
    s1, i1 = by_function(s1, i1)
    s2, i2 = by_function(s2, i2)
    ms = {k: (s2.get(k, 0) - s1.get(k, 0)) / n for k in set(s1) | set(s2)}
    mi = {k: (i2.get(k, 0) - i1.get(k, 0)) / n for k in set(i1) | set(i2)}
    return ms, mi, ((alloc_calls(c2) - alloc_calls(c1)) / n, (mutex_calls(c2) - mutex_calls(c1)) / n)


def obj(k):
    return (k[0] or "?").rsplit("/", 1)[-1]


def profile(a):
    ms, mi, ma = marginal(a.short, a.long, a.copies)
    print("| pinguard function | inclusive per copy | self per copy |")
    print("|---|---|---|")
    rows = [k for k in mi if obj(k) == "libpinguard.so" and mi[k] >= a.min]
    for k in sorted(rows, key=lambda k: (-mi[k], k[1])):
        print(f"| `{k[1]}` | {mi[k]:,.0f} | {ms.get(k, 0):,.0f} |")
    if not a.base:
        return 0
    bs, _, ba = marginal(a.base[0], a.base[1], a.copies)
    diff = {k: ms.get(k, 0) - bs.get(k, 0) for k in set(ms) | set(bs)
            if not HANDOFF.match(k[1]) and not flat(*k)}
    print()
    print("| function (object) | self per copy, pinguard minus runtime + record |")
    print("|---|---|")
    alloc = ALLOC_CALL_IR * (ma[0] - ba[0])
    print(f"| the C library's allocator: {ma[0] - ba[0]:+.2f} calls per copy at {ALLOC_CALL_IR} "
          f"each | {alloc:,.0f} |")
    mutex = MUTEX_CALL_IR * (ma[1] - ba[1])
    print(f"| the C library's mutexes: {ma[1] - ba[1]:+.2f} calls per copy at {MUTEX_CALL_IR} each "
          f"| {mutex:,.0f} |")
    alloc += mutex
    shown = alloc
    for k in sorted(diff, key=lambda k: (-abs(diff[k]), k[1])):
        if abs(diff[k]) < a.min:
            continue
        shown += diff[k]
        print(f"| `{k[1]}` ({obj(k)}) | {diff[k]:,.0f} |")
    total = sum(diff.values()) + alloc
    print(f"| (the rest, under {a.min:g} each) | {total - shown:,.0f} |")
    print(f"| **total** | **{total:,.0f}** |")
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("work")
    w.add_argument("file")
    w.add_argument("--only", help="count only objects whose path matches this expression")
    p = sub.add_parser("profile")
    p.add_argument("--copies", type=int, required=True, help="copies between the two runs")
    p.add_argument("short")
    p.add_argument("long")
    p.add_argument("--base", nargs=2, metavar=("SHORT", "LONG"))
    p.add_argument("--min", type=float, default=5.0, help="rows below this are left out")
    c = sub.add_parser("allocs")
    c.add_argument("object", help="the calling object's file name, e.g. libpinguard.so")
    c.add_argument("file")
    a = ap.parse_args()
    if a.cmd == "work":
        print(work(a.file, a.only))
        return 0
    if a.cmd == "allocs":
        print(allocs(a.file, a.object))
        return 0
    return profile(a)


if __name__ == "__main__":
    sys.exit(main())
