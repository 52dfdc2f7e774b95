"""test_staging.py: the pytest suite of staging.py. Run under pinguard on simcuda (no GPU), it
fails the build on a lifetime bug even when the bytes happen to come out right:

    pinguard run --simcuda --json --log pg -- python -m pytest examples/pytest
    pinguard report --fail-on-reports --root "$PWD" pg

With STAGING_BUG=1 test_download reads the staging buffer while the copy into it is in flight;
pinguard's report names that test and the line of staging.py."""
import torch

from staging import Stager

NBYTES = 1 << 20


def test_upload():
    host = torch.full((NBYTES,), 7, dtype=torch.uint8)
    dev = host.to("cuda")
    assert bytes(dev.cpu().numpy()) == bytes(host.numpy())


def test_download():
    dev = torch.zeros(NBYTES, dtype=torch.uint8, device="cuda")
    stager = Stager(NBYTES)
    assert stager.download(dev) == bytes(NBYTES)
