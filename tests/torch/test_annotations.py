"""test_annotations.py: pinguard_annotations takes torch tensors. release(t) on a pin_memory()
temporary a kernel still reads, and commit(t) on an output a kernel still writes: enforce waits
(nothing corrupted), audit reports."""
import pytest

from conftest import run

KIND = {"annotated-retrieve": "release-during-device-access",
        "annotated-store": "commit-during-device-write"}


@pytest.mark.parametrize("scenario", sorted(KIND))
def test_annotation_on_a_tensor(scenario):
    r = run([scenario], mode="audit", options="guard=0")
    assert r.rc == 23 and KIND[scenario] in r.kinds, r.explain()
    r = run([scenario], mode="enforce", options="guard=0")
    assert r["corrupted_blocks"] == 0 and r.waits > 0, r.explain()
    assert set(r.kinds) <= {KIND[scenario]}, r.explain()
