"""test_edges.py: PyTorch at simcuda's edges (edges.py), alone and under `pinguard run --simcuda`:
torch.randn on the device fails with a Python exception and the process goes on (no SIGFPE from
a zero property); a torch.cuda.graph() capture around pinned allocations ends and replays; and a
caching-pinned-memory check shaped like PyTorch's keeps a stream busy with torch.cuda._sleep, so
the freed pinned block is not handed out again while the copy from it is queued, and pinguard,
the program being correct, reports nothing. The three run in one process per mode."""
import os

import pytest

from conftest import HERE, run

SCRIPT = os.path.join(HERE, "edges.py")
MODES = [None, "audit", "enforce"]
SCENARIOS = ["randn", "graph", "caching_pinned"]


@pytest.fixture(scope="module", params=MODES, ids=lambda m: m or "alone")
def edges(request):
    """The three scenarios, in turn, in one process per mode (one interpreter start instead of
    three, and the process must go on after each): its Result, whose `scenarios` holds each
    scenario's JSON line. A scenario that ends the process leaves the later ones without a line,
    which fails their tests."""
    return run(SCENARIOS, mode=request.param, script=SCRIPT, latency_us="2000")


def _scenario(r, name):
    assert name in r.scenarios, r.explain()
    return r.scenarios[name]


def test_randn_on_device_is_a_python_exception(edges):
    r, d = edges, _scenario(edges, "randn")
    assert r.rc == 0, r.explain()
    assert d["outcome"].startswith("RuntimeError:"), r.explain()
    assert "invalid device function" in d["outcome"], r.explain()
    assert d["pinned_after"] and d["devices"] == 1, r.explain()
    assert r.reports == 0 and not r.kinds, r.explain()


def test_graph_capture_around_pinned_allocations_finishes(edges):
    r, d = edges, _scenario(edges, "graph")
    assert r.rc == 0, r.explain()
    assert d["captured"] and d["pinned"] and d["replayed"], r.explain()
    assert r.reports == 0 and not r.kinds, r.explain()


def test_caching_pinned_memory_with_sleep(edges):
    r, d = edges, _scenario(edges, "caching_pinned")
    assert r.rc == 0, r.explain()
    assert d["cycles_per_ms"] > 0, r.explain()
    assert d["busy_during_copy"], r.explain()  # the spin kept the stream busy
    assert not d["reused"], r.explain()  # so the block was not handed out again
    assert d["copied"] == 1.0 and d["after_ok"], r.explain()
    assert r.reports == 0 and not r.kinds, r.explain()
