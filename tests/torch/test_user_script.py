"""test_user_script.py: a PyTorch program written for nobody's test suite
(examples/torch/prefetch_roundtrip.py: pinned staging buffers, non_blocking copies, events, a
side stream, a byte-for-byte check) runs unchanged on simcuda, alone and under
`pinguard run --simcuda` in both modes, and being correctly synchronized it gets no report."""
import os

import pytest

from conftest import HERE, run

SCRIPT = os.path.join(HERE, "..", "..", "examples", "torch", "prefetch_roundtrip.py")


@pytest.mark.parametrize("mode,alloc_conf", [
    (None, ""), ("audit", ""), ("enforce", ""),
    ("audit", "pinned_use_cuda_host_register:True")])
def test_prefetch_roundtrip_unchanged(mode, alloc_conf):
    r = run([], mode=mode, alloc_conf=alloc_conf, script=SCRIPT, latency_us="2000")  # the default
    assert r.rc == 0, r.explain()
    assert r.stdout.startswith("OK"), r.explain()
    assert r.reports == 0 and not r.kinds, r.explain()
