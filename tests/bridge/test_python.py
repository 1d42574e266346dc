# Bridge suite: the Python binding.
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Usage: test_python.py CASE
  binding  Producer and Consumer in one process: zero-copy views, read-only
           frames, bounded loans, release on context exit, nothing leaks
  c-to-py  C camera node (pf-camera-node) -> Python consumer, byte-exact
  py-to-c  Python camera node (camera_node.py) -> C consumer
           (pf-latency-node) and -> pinnedshmsrc ! filesink, byte-exact
"""
import errno
import gc
import os
import re
import selectors
import sys

import numpy

import bridgetest as bt
import pinnedflow

W, H, FRAME_NS = 64, 48, 33333333


def case_binding():
    with bt.Env() as env:
        fds0 = bt.count_fds()
        path = env.path("py.sock")
        size = pinnedflow.video_layout("RGBA", W, H)["size"]
        prod = pinnedflow.Producer(path, slot_size=size, n_slots=2,
                                   max_client_frames=2)
        prod.set_video("RGBA", W, H, (30, 1))
        cons = pinnedflow.Consumer(path, timeout_ms=5000)
        prod.wait_clients(1, 10000)

        kept = []
        for n in range(4):
            with prod.loan(timeout_ms=5000) as loan:
                a = loan.array()
                bt.check(a.shape == (H, W, 4) and a.flags.writeable)
                a[:] = bt.pattern(W, H, n)
                bt.check(loan.publish(pts=n * FRAME_NS,
                                      duration=FRAME_NS) == 1)
            frame = cons.next(10000)
            bt.check(isinstance(frame, pinnedflow.Frame), repr(frame))
            with frame:
                img = frame.array()
                bt.check(img.shape == (H, W, 4))
                bt.check(numpy.array_equal(img, bt.pattern(W, H, n)),
                         "frame %d bytes" % n)
                # Zero-copy: the array points into the shared segment.
                addr = img.__array_interface__["data"][0]
                bt.check(addr == frame.segment.base + frame.segment_offset)
                bt.check(not img.flags.writeable)
                try:
                    img[0, 0, 0] = 1
                    bt.fail("a received frame is writable")
                except ValueError:
                    pass
                bt.check(frame.buffer.readonly and
                         len(frame.buffer) == frame.size)
                bt.check(frame.pts == n * FRAME_NS and
                         frame.duration == FRAME_NS)
                bt.check(frame.format == "RGBA" and frame.width == W and
                         frame.height == H and frame.framerate == (30, 1))
                bt.check(frame.segment.readonly and frame.segment.fd >= 0)
                bt.check(frame.strides == [W * 4])
                kept.append(img)
            bt.check(frame.released)
        prod.wait_idle(10000)
        bt.check(prod.free_slots == 2)

        # Bounded: two frames held, the third loan cannot happen.
        for n in range(2):
            loan = prod.loan(0)
            loan.array()[:] = n
            loan.publish(pts=n)
        held = [cons.next(10000), cons.next(10000)]
        bt.check(cons.held == 2 and prod.free_slots == 0)
        try:
            prod.loan(0)
            bt.fail("loan succeeded with every slot out")
        except pinnedflow.PinnedflowError as e:
            bt.check(e.errno == errno.EAGAIN, str(e))
        try:
            prod.loan(50)
            bt.fail("loan succeeded with every slot out")
        except TimeoutError:
            pass
        held[0].release()
        held[0].release()           # idempotent
        with prod.loan(5000) as loan:
            pass                    # discarded on exit
        bt.check(prod.free_slots == 1)
        held[1].release()
        prod.wait_idle(10000)
        bt.check(prod.free_slots == 2)

        # Caps helpers.
        info = pinnedflow.parse_caps(
            "video/x-raw, format=(string)NV12, width=(int)8, height=(int)6")
        bt.check(info["format"] == "NV12" and info["width"] == 8)
        lay = pinnedflow.video_layout("I420", 9, 5)
        bt.check(lay["n_planes"] == 3 and lay["strides"] == [12, 8, 8])

        # A planar format, plane by plane (odd sizes: padded strides).
        prod.set_video("I420", 9, 5, (25, 1))
        with prod.loan(5000) as loan:
            for i in range(3):
                loan.plane(i)[:] = 10 + i
            loan.publish(pts=1)
        with cons.next(10000) as frame:
            bt.check(frame.format == "I420" and frame.strides == [12, 8, 8])
            shapes = [frame.plane(i).shape for i in range(3)]
            bt.check(shapes == [(5, 9), (3, 5), (3, 5)], str(shapes))
            bt.check(all((frame.plane(i) == 10 + i).all() for i in range(3)))
            bt.check(frame.size == pinnedflow.video_layout("I420", 9, 5)["size"])
        prod.set_video("RGBA", W, H, (30, 1))

        # Event-loop integration: the fd turns readable when a frame waits.
        sel = selectors.DefaultSelector()
        sel.register(cons, selectors.EVENT_READ)
        bt.check(cons.next(0) is None and sel.select(0) == [])
        loan = prod.loan(5000)
        loan.publish(pts=7)
        bt.check(len(sel.select(10)) == 1)
        frame = cons.next(0)
        bt.check(isinstance(frame, pinnedflow.Frame) and frame.pts == 7)
        frame.release()
        sel.close()

        # No producer there: a clear error, not a hang.
        try:
            pinnedflow.Consumer(env.path("nobody.sock"), timeout_ms=0)
            bt.fail("connected to nobody")
        except OSError as e:
            bt.check(e.errno in (errno.ENOENT, errno.ECONNREFUSED,
                                 errno.ETIMEDOUT), str(e))

        prod.send_eos()
        bt.check(cons.next(10000) is pinnedflow.EOS)
        prod.close()
        try:
            cons.next(10000)
            bt.fail("no error after the producer closed")
        except ConnectionError:
            pass
        cons.close()
        cons.close()                # idempotent
        # Closed objects say so instead of passing NULL to the library.
        for call in (lambda: cons.next(0), lambda: cons.held,
                     lambda: prod.loan(0), lambda: prod.free_slots):
            try:
                call()
                bt.fail("a closed object answered")
            except ValueError as e:
                bt.check("is closed" in str(e), str(e))
        # Arrays kept past release and close stay mapped: reading them does
        # not crash (their contents may have been reused by then).
        bt.check(all(k.copy().shape == (H, W, 4) for k in kept))
        bt.check(pinnedflow.live_segments() >= 1)   # held by the arrays
        del kept, img, frame, held, loan, a, prod, cons
        gc.collect()
        bt.check(pinnedflow.live_segments() == 0,
                 "%d segments alive" % pinnedflow.live_segments())
        bt.check(bt.count_fds() == fds0)


def case_c_to_py():
    with bt.Env() as env:
        path = env.path("cam.sock")
        cam = env.spawn([bt.tool("pf-camera-node"), path, "20", str(W),
                         str(H), "0"])
        n = 0
        with pinnedflow.Consumer(path, timeout_ms=10000) as cons:
            while True:
                frame = cons.next(20000)
                bt.check(frame is not None, "timeout")
                if frame is pinnedflow.EOS:
                    break
                with frame:
                    bt.check(numpy.array_equal(frame.array(),
                                               bt.pattern(W, H, n)),
                             "frame %d bytes" % n)
                    bt.check(frame.pts == n * FRAME_NS, str(frame.pts))
                    bt.check(frame.format == "RGBA" and frame.width == W)
                    bt.check(frame.clock_pts is not None)
                n += 1
        bt.check(n == 20, "%d frames" % n)
        env.finish(cam, what="pf-camera-node")


def case_py_to_c():
    cam_py = os.path.join(bt.SOURCE, "bridge", "examples", "camera_node.py")
    with bt.Env() as env:
        # Python producer -> C consumer.
        path = env.path("pycam.sock")
        cam = env.spawn([sys.executable, cam_py, path, "20", str(W), str(H),
                         "0"])
        lat = env.spawn([bt.tool("pf-latency-node"), path])
        out, _ = env.finish(lat, what="pf-latency-node")
        env.finish(cam, what="camera_node.py")
        pts = [int(m) for m in re.findall(r"^frame \d+ pts (\d+)", out, re.M)]
        bt.check(pts == [n * FRAME_NS for n in range(20)], out)
        bt.check("64x48 RGBA size 12288" in out and "\nEOS\n" in out, out)

        # Python producer -> pinnedshmsrc ! filesink, byte for byte.
        path = env.path("pycam2.sock")
        raw = env.path("out.raw")
        cam = env.spawn([sys.executable, cam_py, path, "20", str(W), str(H),
                         "0"])
        gst = env.gst("pinnedshmsrc socket-path=%s connect-timeout=10000 ! "
                      "filesink buffer-mode=unbuffered location=%s" % (path, raw))
        env.finish(gst, what="gst-launch")
        env.finish(cam, what="camera_node.py")
        data = numpy.fromfile(raw, dtype=numpy.uint8)
        want = numpy.concatenate([bt.pattern(W, H, n).ravel()
                                  for n in range(20)])
        bt.check(data.size == want.size, "%d bytes" % data.size)
        bt.check(numpy.array_equal(data, want), "bytes differ")


if __name__ == "__main__":
    sys.exit(bt.run_cases({"binding": case_binding, "c-to-py": case_c_to_py,
                           "py-to-c": case_py_to_c}))
