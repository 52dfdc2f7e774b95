"""staging.py: a small device->host download path of the kind a KV-cache engine has: a device
tensor is copied into a pinned staging buffer with a non_blocking copy, then the bytes are read
on the CPU. The copy is asynchronous: the CPU may read the staging buffer only after the copy's
stream has been synchronized. STAGING_BUG=1 leaves that synchronization out (the lifetime bug
test_staging.py is there to catch)."""
import os

import torch

BUG = os.environ.get("STAGING_BUG") == "1"


class Stager:
    def __init__(self, nbytes):
        self.host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
        self.stream = torch.cuda.Stream()

    def download(self, dev):
        """The bytes of the device tensor `dev`, through the pinned staging buffer."""
        self.stream.wait_stream(torch.cuda.current_stream())  # after the work that made dev
        with torch.cuda.stream(self.stream):
            self.host.copy_(dev, non_blocking=True)
        if not BUG:
            self.stream.synchronize()
        return bytes(self.host.numpy())  # the CPU reads the staging buffer here
