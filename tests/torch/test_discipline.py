"""test_discipline.py: what torch itself does right gives no report (its caching host allocator
delays reuse of a block a non_blocking copy used; side streams ordered by wait_stream, events and
record_stream), and what a user does wrong with torch's own copies is reported (.item() or
.numpy() right after a non_blocking device-to-host copy)."""
import pytest

from conftest import run


@pytest.mark.parametrize("scenario", ["repin", "side-streams"])
def test_torch_discipline_is_not_reported(scenario, alloc_conf):
    r = run([scenario], mode="audit", alloc_conf=alloc_conf)
    assert r.rc == 0, r.explain()
    assert r.reports == 0 and not r.kinds, r.explain()
    assert r["corrupted_blocks"] == 0, r.explain()


def test_item_right_after_a_non_blocking_copy(alloc_conf):
    scenario = "d2h-item"
    r = run([scenario], alloc_conf=alloc_conf)
    assert r.rc == 0 and r["corrupted_blocks"] == 1, r.explain()  # the stale value, unguarded
    r = run([scenario], mode="audit", alloc_conf=alloc_conf)
    assert r.rc == 23 and "cpu-read-during-device-write" in r.kinds, r.explain()
    texts = r.report_texts("cpu-read-during-device-write")
    # The in-flight access is torch's copy (its stack starts at the application's side of the
    # call: pinguard's own interceptor frame is never shown).
    assert all("copy device->host" in t and "at::native::copy_" in t for t in texts), texts
    r = run([scenario], mode="enforce", alloc_conf=alloc_conf)
    assert r["corrupted_blocks"] == 0 and r["value"] == r["expected"], r.explain()


def test_numpy_right_after_a_non_blocking_copy():
    r = run(["d2h-numpy"], mode="audit")
    assert r.rc == 23 and "cpu-read-during-device-write" in r.kinds, r.explain()
