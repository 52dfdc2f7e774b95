"""test_finished.py: each bug shape on real PyTorch with its GPU work certainly finished (device
latency 0, then a sleep with no CUDA call) and never ordered by the program is reported, in audit
and in enforce; each correctly synchronized twin gives no report. finished.py runs every shape in
one process (a torch start costs seconds) and marks on stderr where each begins, so that each of
pinguard's reports is told to its shape."""
import os
import re

import pytest

from conftest import HERE, run

SCRIPT = os.path.join(HERE, "finished.py")
KIND = {
    "d2h_read": "cpu-read-during-device-write",
    "h2d_write": "cpu-write-during-device-access",
    "free_host": "free-during-device-access",
    "unregister": "unregister-during-device-access",
    "pool_reuse": "cpu-write-during-device-access",
    "other_stream": "device-access-conflict",
    "kernel_ptr": "cpu-read-during-device-write",
}


def kinds_by_shape(stderr):
    """{shape: [kind of each report made while that shape ran]}; reports before the first
    shape's mark or after the last are kept under None."""
    out, shape = {None: []}, None
    for line in stderr.splitlines():
        m = re.match(r"^finished\.py: (?:shape (\w+)|done)$", line)
        if m:
            shape = m.group(1)
            out.setdefault(shape, [])
            continue
        m = re.search(r"pinguard: ERROR: ([a-z-]+) ", line)
        if m:
            out[shape].append(m.group(1))
    return out


@pytest.mark.parametrize("mode", ["audit", "enforce"])
def test_finished_unordered_is_reported(mode):
    r = run(["bug"], mode=mode, script=SCRIPT, latency_us="0")
    # audit: pinguard's exitcode; enforce: each conflict counts as prevented, the program's 0
    # stands
    assert r.rc == (23 if mode == "audit" else 0), r.explain()
    assert sorted(r.data.get("values", {})) == sorted(KIND), r.explain()
    got = kinds_by_shape(r.stderr)
    missed = [s for s in KIND if KIND[s] not in got.get(s, [])]
    assert not missed, "no %s report for %s\n%s" % (
        ", ".join(KIND[s] for s in missed), ", ".join(missed), r.explain())
    other = {s: k for s, k in got.items() if set(k) - {KIND.get(s)}}
    assert not other, "reports of other kinds: %s\n%s" % (other, r.explain())


@pytest.mark.parametrize("mode", ["audit", "enforce"])
def test_synchronized_twins_are_silent(mode):
    r = run(["fixed"], mode=mode, script=SCRIPT, latency_us="0")
    assert r.rc == 0 and sorted(r.data.get("values", {})) == sorted(KIND), r.explain()
    assert r.reports == 0 and not r.kinds, r.explain()
