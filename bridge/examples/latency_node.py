#!/usr/bin/python3
# latency_node.py: consume frames and print their latency (Python)
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Usage: latency_node.py SOCKET [MAX_FRAMES]

Feed it with, for instance:
  gst-launch-1.0 videotestsrc num-buffers=100 ! \\
    video/x-raw,format=RGBA,width=1920,height=1080 ! \\
    pinnedshmsink socket-path=SOCKET

Uses the consumer's fd with selectors, as an asyncio/dora event loop would.
"""
import selectors
import sys

import pinnedflow


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else None
    count, total = 0, 0
    with pinnedflow.Consumer(sys.argv[1], timeout_ms=10000) as cons:
        sel = selectors.DefaultSelector()
        sel.register(cons, selectors.EVENT_READ)
        done = False
        while not done:
            sel.select()
            while True:                     # drain what is ready
                try:
                    frame = cons.next(0)
                except ConnectionError as e:
                    print("stream ended:", e, file=sys.stderr)
                    done = True
                    break
                if frame is None:
                    break
                if frame is pinnedflow.EOS:
                    print("EOS")
                    done = True
                    break
                with frame:
                    img = frame.array()     # zero-copy, read-only
                    lat = frame.recv_time - frame.send_time
                    print("frame %d pts %s %s %s latency %.1f us first-pixel mean %.1f"
                          % (frame.seq, frame.pts, frame.format, img.shape,
                             lat / 1000, float(img[0, 0].mean())))
                count += 1
                total += lat
                if limit and count >= limit:
                    done = True
                    break
    if count:
        print("%d frames, mean latency %.1f us" % (count, total / 1000 / count))
    return 0 if count else 1


if __name__ == "__main__":
    sys.exit(main())
