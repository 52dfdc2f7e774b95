"""test_incident.py: the incident's two bugs in the engine module (kv_engine.py), on real PyTorch
with its caching host allocator and pickle, in both of torch's pinned-memory modes:
  - without pinguard both bugs corrupt blocks;
  - audit reports each with the stacks and region that explain it, on the unmodified module;
  - enforce leaves no corrupted block;
  - the fixed variants give zero reports."""
import pytest

from conftest import run

BUG_KIND = {"retrieve": "cpu-write-during-device-access", "store": "cpu-read-during-device-write"}


@pytest.mark.parametrize("bug", ["retrieve", "store"])
def test_without_pinguard_the_bug_corrupts(bug, alloc_conf):
    r = run([bug], alloc_conf=alloc_conf)
    assert r.rc == 0, r.explain()
    assert r["corrupted_blocks"] > 0, r.explain()
    print("%s, %s: %d of %d blocks corrupted" % (bug, alloc_conf or "cudaHostAlloc",
                                                 r["corrupted_blocks"], r["blocks"]))


@pytest.mark.parametrize("bug", ["retrieve", "store"])
def test_fixed_module_is_clean(bug, alloc_conf):
    r = run([bug, "--fixed"], mode="audit", alloc_conf=alloc_conf)
    assert r.rc == 0 and r.reports == 0 and not r.kinds, r.explain()
    assert r["corrupted_blocks"] == 0, r.explain()


def test_audit_retrieve_report(alloc_conf):
    r = run(["retrieve"], mode="audit", alloc_conf=alloc_conf)
    assert r.rc == 23, r.explain()  # pinguard's exitcode: reports were made
    assert BUG_KIND["retrieve"] in r.kinds, r.explain()
    texts = r.report_texts(BUG_KIND["retrieve"])
    how = "cudaHostRegister" if alloc_conf else "cudaHostAlloc"
    # The CPU write is torch's copy into the recycled block (pin_memory's copy_), the GPU access
    # is the scatter kernel, and the buffer is a block of torch's caching host allocator.
    assert any("direct_copy_kernel" in t for t in texts), texts[0]
    assert all("kernel pgkv_scatter_kernel" in t for t in texts), texts[0]
    assert any("pinned by %s" % how in t and "CachingHostAllocator" in t and "_pin_memory" in t
               for t in texts), texts[0]


def test_audit_store_report(alloc_conf):
    r = run(["store"], mode="audit", alloc_conf=alloc_conf)
    assert r.rc == 23, r.explain()
    assert BUG_KIND["store"] in r.kinds, r.explain()
    texts = r.report_texts(BUG_KIND["store"])
    # The CPU read is pickle's: the storage's __reduce__ (a Python frame, torch/storage.py) ->
    # torch's storage serialization -> BytesIO.
    assert any("__reduce" in t and "THPStorage_writeFile" in t for t in texts), texts[0]
    assert all("kernel pgkv_gather_kernel" in t for t in texts), texts[0]
    how = "cudaHostRegister" if alloc_conf else "cudaHostAlloc"
    assert all("pinned by %s" % how in t for t in texts), texts[0]


# With pinned_use_cuda_host_register torch pins malloc'd blocks, which are not page-aligned: the
# first and last page of each block are shared with other heap data. guard_shared_edges guards
# them too (the other data's accesses are single-stepped); without it, the CPU's accesses to a
# block's edge bytes go unseen and a few blocks stay corrupted (0 to 4 of 256 here).
@pytest.mark.parametrize("bug", ["retrieve", "store"])
def test_enforce_leaves_nothing_corrupted(bug, alloc_conf):
    options = "guard_shared_edges=1" if alloc_conf else None
    r = run([bug], mode="enforce", alloc_conf=alloc_conf, options=options)
    assert r["corrupted_blocks"] == 0, r.explain()
    assert r.waits > 0, r.explain()
    assert set(r.kinds) == {BUG_KIND[bug]}, r.explain()
    print("%s, %s, enforce: 0 of %d blocks corrupted, %d waits" %
          (bug, alloc_conf or "cudaHostAlloc", r["blocks"], r.waits))
