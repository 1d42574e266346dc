#!/usr/bin/python3
# camera_node.py: a CPU "camera" publishing synthetic RGBA frames (Python)
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Usage: camera_node.py SOCKET [FRAMES [WIDTH HEIGHT [FPS]]]

Same frames as pf-camera-node: byte (x, y, c) of frame n is
(x + 2*y + 3*c + 5*n) & 0xff. Consume with:
  gst-launch-1.0 pinnedshmsrc socket-path=SOCKET ! videoconvert ! autovideosink
"""
import sys
import time

import numpy

import pinnedflow


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    path = sys.argv[1]
    frames = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    width, height = ((int(sys.argv[3]), int(sys.argv[4]))
                     if len(sys.argv) > 4 else (640, 480))
    fps = int(sys.argv[5]) if len(sys.argv) > 5 else 30
    period = 1_000_000_000 // fps if fps > 0 else 33_333_333

    # The gradient without the frame term, computed once.
    y, x, c = numpy.ogrid[0:height, 0:width, 0:4]
    base = (x + 2 * y + 3 * c).astype(numpy.uint8)

    size = pinnedflow.video_layout("RGBA", width, height)["size"]
    # A consumer may hold every slot (the default): a slow one slows the
    # camera (loans time out) instead of missing frames.
    with pinnedflow.Producer(path, slot_size=size, n_slots=4) as prod:
        prod.set_video("RGBA", width, height, (fps if fps > 0 else 30, 1))
        print("camera: waiting for a consumer on", path, file=sys.stderr)
        prod.wait_clients(1)
        print("camera: consumer connected, publishing", file=sys.stderr)
        start = time.monotonic()
        for n in range(frames):
            try:
                loan = prod.loan(timeout_ms=1000)
            except TimeoutError:
                print("camera: frame", n, "dropped (no free slot)",
                      file=sys.stderr)
                continue
            with loan:
                img = loan.array()              # (h, w, 4) view of the slot
                numpy.add(base, numpy.uint8((5 * n) & 0xff), out=img,
                          casting="unsafe")
                loan.publish(pts=n * period, duration=period)
            if fps > 0:
                delay = start + (n + 1) / fps - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
        prod.send_eos()
        try:
            prod.wait_idle(2000)
        except TimeoutError:
            pass
        print("camera: published", frames, "frames", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
