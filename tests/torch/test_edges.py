"""test_edges.py: PyTorch at simcuda's edges (edges.py), alone and under `pinguard run --simcuda`:
torch.randn on the device fails with a Python exception and the process goes on (no SIGFPE from
a zero property); a torch.cuda.graph() capture around pinned allocations ends and replays; and a
caching-pinned-memory check shaped like PyTorch's keeps a stream busy with torch.cuda._sleep, so
the freed pinned block is not handed out again while the copy from it is queued, and pinguard,
the program being correct, reports nothing."""
import os

import pytest

from conftest import HERE, run

SCRIPT = os.path.join(HERE, "edges.py")
MODES = [None, "audit", "enforce"]


@pytest.mark.parametrize("mode", MODES)
def test_randn_on_device_is_a_python_exception(mode):
    r = run(["randn"], mode=mode, script=SCRIPT, latency_us="2000")
    assert r.rc == 0, r.explain()
    assert r["outcome"].startswith("RuntimeError:"), r.explain()
    assert "invalid device function" in r["outcome"], r.explain()
    assert r["pinned_after"] and r["devices"] == 1, r.explain()
    assert r.reports == 0 and not r.kinds, r.explain()


@pytest.mark.parametrize("mode", MODES)
def test_graph_capture_around_pinned_allocations_finishes(mode):
    r = run(["graph"], mode=mode, script=SCRIPT, latency_us="2000")
    assert r.rc == 0, r.explain()
    assert r["captured"] and r["pinned"] and r["replayed"], r.explain()
    assert r.reports == 0 and not r.kinds, r.explain()


@pytest.mark.parametrize("mode", MODES)
def test_caching_pinned_memory_with_sleep(mode):
    r = run(["caching_pinned"], mode=mode, script=SCRIPT, latency_us="2000")
    assert r.rc == 0, r.explain()
    assert r["cycles_per_ms"] > 0, r.explain()
    assert r["busy_during_copy"], r.explain()  # the spin kept the stream busy
    assert not r["reused"], r.explain()  # so the block was not handed out again
    assert r["copied"] == 1.0 and r["after_ok"], r.explain()
    assert r.reports == 0 and not r.kinds, r.explain()
