#!/usr/bin/env python3
"""prefetch_roundtrip.py: a double-buffered host<->device pipeline in plain PyTorch.

Batches are staged in pinned buffers, uploaded with non_blocking copies on a dedicated copy
stream, handed to the default stream through events, and downloaded again into pinned buffers.
Each staging buffer is reused only after the event that covers its last use has completed.
Finally every byte is checked. Exits 0 and prints "OK" when the round trip is exact.

Runs on any CUDA device, and without one on simcuda:
    pinguard run --simcuda -- python3 prefetch_roundtrip.py"""
import argparse
import sys

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=12)
    ap.add_argument("--mib", type=int, default=2, help="size of one batch")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2

    n = args.mib * (1 << 20) // 4
    batches = [torch.arange(i * n, (i + 1) * n, dtype=torch.int32) for i in range(args.batches)]
    copy_stream = torch.cuda.Stream()
    main_stream = torch.cuda.current_stream()

    # Two staging slots for uploads, two for downloads, each with the event of its last use.
    up = [torch.empty(n, dtype=torch.int32, pin_memory=True) for _ in range(2)]
    down = [torch.empty(n, dtype=torch.int32, pin_memory=True) for _ in range(2)]
    up_free = [None, None]
    down_done = [None, None]
    device_batches = []
    results = []

    for i, batch in enumerate(batches):
        slot = i % 2
        # Reuse an upload slot only once its previous upload has finished reading it.
        if up_free[slot] is not None:
            up_free[slot].synchronize()
        up[slot].copy_(batch)
        with torch.cuda.stream(copy_stream):
            dev = torch.empty(n, dtype=torch.int32, device="cuda")
            dev.copy_(up[slot], non_blocking=True)
            uploaded = torch.cuda.Event()
            uploaded.record(copy_stream)
        up_free[slot] = uploaded
        # The default stream uses the batch only after the upload.
        main_stream.wait_event(uploaded)
        dev.record_stream(main_stream)
        device_batches.append(dev)

        # Download the batch back through a pinned slot, on the default stream.
        if down_done[slot] is not None:
            down_done[slot].synchronize()
            results.append(down[slot].clone())
        down[slot].copy_(dev, non_blocking=True)
        done = torch.cuda.Event()
        done.record(main_stream)
        down_done[slot] = done

    for k in range(len(batches) - 2, len(batches)):
        slot = k % 2
        down_done[slot].synchronize()
        results.append(down[slot].clone())

    bad = [i for i, (got, want) in enumerate(zip(results, batches)) if not torch.equal(got, want)]
    if bad or len(results) != len(batches):
        print("MISMATCH in batches %s" % bad)
        return 1
    print("OK: %d batches of %d MiB round-tripped exactly" % (len(batches), args.mib))
    return 0


if __name__ == "__main__":
    sys.exit(main())
