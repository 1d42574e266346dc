#!/usr/bin/python3
# gpu_node.py: a consumer node putting every frame into PyTorch on the GPU
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Usage: gpu_node.py SOCKET [MAX_FRAMES]

The Python side of docs/bridge.md, "Frames onto the GPU": each frame is
uploaded by pinnedflow.cuda (the segment registered once, one DMA per
plane, the host frame back to the producer after the copy's event) and
handed to PyTorch with DLPack, no copy: torch's current stream waits for the
copy, and the device buffer is not rewritten before the work torch queued
there on the frame ran (the tensor may die at once). Where PyTorch has no CUDA (Debian's python3-torch is a CPU build) or
is missing, the frame is read back with DeviceFrame.download() instead and
its mean printed, so the node runs on the cudart emulator too (tests/bridge
does so); the line says which path ran.

Feed it with pf-camera-node or camera_node.py, or a pipeline ending in
pinnedshmsink.
"""
import sys

import pinnedflow
import pinnedflow.cuda

try:
    import torch
    GPU_TORCH = torch.cuda.is_available()
except ImportError:
    GPU_TORCH = False


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    max_frames = int(sys.argv[2]) if len(sys.argv) > 2 else None
    n = 0
    with pinnedflow.cuda.Uploader() as up, \
            pinnedflow.Consumer(sys.argv[1], timeout_ms=10000) as cons:
        for frame in cons:
            with frame, up.upload(frame) as dev:
                if GPU_TORCH:
                    t = torch.from_dlpack(dev)      # (h, w, 4) uint8, cuda:0
                    mean = t.float().mean().item()  # queued after the copy
                    path = "torch %s" % t.device
                else:
                    data = dev.download()           # D2H copy, for checks
                    mean = sum(data) / len(data)
                    path = "download (no CUDA torch)"
                print("frame %d %dx%d %s mean %.2f via %s" % (
                    frame.seq, dev.width, dev.height, dev.format, mean,
                    path), flush=True)
            n += 1
            if max_frames is not None and n >= max_frames:
                break
    print("%d frames" % n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
