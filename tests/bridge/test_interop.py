# Bridge suite: the node library against pinnedshmsink / pinnedshmsrc.
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Usage: test_interop.py CASE
  lib-to-src   C library producer (pf-camera-node) -> gst-launch
               pinnedshmsrc ! filesink: bytes exact, and through
               pinnedshmsrc ! pinnedshmsink -> library consumer: bytes,
               caps, durations and PTS spacing preserved, EOS
  sink-to-lib  gst-launch videotestsrc ! pinnedshmsink -> library consumer
               (Python binding): bytes equal to videotestsrc ! filesink,
               caps, PTS, durations, EOS; and the C and Python example
               consumers (pf-latency-node, latency_node.py)
  crash        SIGKILL of a library producer -> pinnedshmsrc ends with EOS;
               SIGKILL of pinnedshmsink's process -> the library consumer
               sees the hang-up, no leak; SIGKILL of a library consumer
               holding frames -> the sink serves the next consumer to EOS
"""
import os
import re
import signal
import sys
import time

import numpy

import bridgetest as bt
import pinnedflow

W, H, N, FRAME_NS = 64, 48, 20, 33333333


def _sink_pipeline(path, extra=""):
    # pool-size <= max-client-buffers: the sink's pool, not a skip, is what
    # slows videotestsrc down, so the consumer gets every frame.
    return ("videotestsrc num-buffers=%d horizontal-speed=3 %s ! "
            "video/x-raw,format=RGBA,width=%d,height=%d,framerate=30/1 ! "
            "pinnedshmsink socket-path=%s wait-for-connection=true "
            "pool-size=4 max-client-buffers=4" % (N, extra, W, H, path))


def _consume_all(path, timeout_ms=20000):
    """Frames of a producer until EOS, copied out: [(frame attrs, bytes)]."""
    got = []
    with pinnedflow.Consumer(path, timeout_ms=timeout_ms) as cons:
        while True:
            f = cons.next(timeout_ms)
            bt.check(f is not None, "timed out after %d frames" % len(got))
            if f is pinnedflow.EOS:
                return got
            with f:
                got.append((dict(seq=f.seq, pts=f.pts, duration=f.duration,
                                 format=f.format, width=f.width,
                                 height=f.height, framerate=f.framerate,
                                 caps=f.caps, strides=f.strides),
                            f.array().copy()))


def case_lib_to_src():
    with bt.Env() as env:
        # 1. Into a gst-launch consumer, byte for byte.
        path, raw = env.path("cam.sock"), env.path("out.raw")
        cam = env.spawn([bt.tool("pf-camera-node"), path, str(N), str(W),
                         str(H), "0"])
        gst = env.gst("pinnedshmsrc socket-path=%s connect-timeout=10000 ! "
                      "filesink buffer-mode=unbuffered location=%s"
                      % (path, raw))
        env.finish(gst, what="gst-launch pinnedshmsrc")
        env.finish(cam, what="pf-camera-node")
        data = numpy.fromfile(raw, dtype=numpy.uint8)
        want = numpy.concatenate([bt.pattern(W, H, n).ravel()
                                  for n in range(N)])
        bt.check(data.size == want.size, "%d bytes, want %d"
                 % (data.size, want.size))
        bt.check(numpy.array_equal(data, want), "bytes differ")

        # 2. Through pinnedshmsrc ! pinnedshmsink back into the library:
        # caps, durations and timestamps survive the elements.
        a, b = env.path("a.sock"), env.path("b.sock")
        cam = env.spawn([bt.tool("pf-camera-node"), a, str(N), str(W),
                         str(H), "0"])
        gst = env.gst("pinnedshmsrc socket-path=%s connect-timeout=10000 ! "
                      "pinnedshmsink socket-path=%s wait-for-connection=true "
                      "pool-size=4 max-client-buffers=4" % (a, b))
        got = _consume_all(b)
        env.finish(gst, what="gst-launch pinnedshmsrc ! pinnedshmsink")
        env.finish(cam, what="pf-camera-node")
        bt.check(len(got) == N, "%d frames" % len(got))
        pts0 = got[0][0]["pts"]
        for n, (meta, img) in enumerate(got):
            bt.check(numpy.array_equal(img, bt.pattern(W, H, n)),
                     "frame %d bytes" % n)
            bt.check(meta["format"] == "RGBA" and meta["width"] == W and
                     meta["height"] == H and meta["framerate"] == (30, 1),
                     meta["caps"])
            bt.check(meta["strides"] == [W * 4], str(meta))
            bt.check(meta["duration"] == FRAME_NS, str(meta))
            # pinnedshmsrc re-bases PTS on its clock (a live source); the
            # spacing the library producer gave is kept to the nanosecond.
            bt.check(meta["pts"] - pts0 == n * FRAME_NS,
                     "frame %d pts %d, first %d" % (n, meta["pts"], pts0))


def case_sink_to_lib():
    with bt.Env() as env:
        ref = env.path("ref.raw")
        gst = env.gst("videotestsrc num-buffers=%d horizontal-speed=3 ! "
                      "video/x-raw,format=RGBA,width=%d,height=%d,"
                      "framerate=30/1 ! filesink location=%s" % (N, W, H, ref))
        env.finish(gst, what="gst-launch reference")
        want = numpy.fromfile(ref, dtype=numpy.uint8).reshape(N, H, W, 4)
        bt.check(not numpy.array_equal(want[0], want[1]),
                 "reference frames do not move")

        # 1. Python binding (the library through ctypes).
        path = env.path("sink.sock")
        gst = env.gst(_sink_pipeline(path))
        got = _consume_all(path)
        env.finish(gst, what="gst-launch pinnedshmsink")
        bt.check(len(got) == N, "%d frames" % len(got))
        for n, (meta, img) in enumerate(got):
            bt.check(numpy.array_equal(img, want[n]), "frame %d bytes" % n)
            # videotestsrc's timestamps: n * GST_SECOND / 30, rounded down.
            bt.check(meta["pts"] == n * 1000000000 // 30,
                     "frame %d pts %s" % (n, meta["pts"]))
            bt.check(meta["duration"] is not None)
            bt.check(meta["format"] == "RGBA" and meta["width"] == W and
                     meta["height"] == H and meta["framerate"] == (30, 1),
                     meta["caps"])

        # 2. The C example consumer.
        path = env.path("sink2.sock")
        gst = env.gst(_sink_pipeline(path))
        lat = env.spawn([bt.tool("pf-latency-node"), path])
        out, _ = env.finish(lat, what="pf-latency-node")
        env.finish(gst, what="gst-launch pinnedshmsink")
        pts = [int(m) for m in re.findall(r"^frame \d+ pts (\d+)", out, re.M)]
        bt.check(pts == [n * 1000000000 // 30 for n in range(N)], out)
        bt.check("64x48 RGBA size 12288" in out and "\nEOS\n" in out, out)

        # 3. The Python example consumer (selectors on the consumer's fd).
        path = env.path("sink3.sock")
        gst = env.gst(_sink_pipeline(path))
        lat = env.spawn([sys.executable, os.path.join(
            bt.SOURCE, "bridge", "examples", "latency_node.py"), path])
        out, _ = env.finish(lat, what="latency_node.py")
        env.finish(gst, what="gst-launch pinnedshmsink")
        pts = [int(m) for m in re.findall(r"^frame \d+ pts (\d+)", out, re.M)]
        bt.check(pts == [n * 1000000000 // 30 for n in range(N)], out)
        bt.check("(48, 64, 4)" in out and "\nEOS\n" in out, out)


def case_crash():
    with bt.Env() as env:
        # 1. Library producer killed: pinnedshmsrc ends the stream (EOS).
        path = env.path("cam.sock")
        cam = env.spawn([bt.tool("pf-camera-node"), path, "100000", str(W),
                         str(H), "30"])
        gst = env.gst("pinnedshmsrc socket-path=%s connect-timeout=10000 "
                      "on-disconnect=eos ! fakesink" % path)
        # The camera says when its consumer (the src) is connected.
        while True:
            line = cam.stderr.readline()
            bt.check(line, "camera ended before a consumer connected")
            if b"consumer connected" in line:
                break
        cam.kill()
        cam.wait()
        env.finish(gst, what="pinnedshmsrc after the producer died")

        # 2. pinnedshmsink's process killed: the library consumer sees a
        # hang-up, frames it holds stay readable, nothing leaks.
        path = env.path("sink.sock")
        gst = env.gst("videotestsrc is-live=true ! video/x-raw,format=RGBA,"
                      "width=%d,height=%d,framerate=30/1 ! pinnedshmsink "
                      "socket-path=%s wait-for-connection=true" % (W, H, path))
        fds0 = bt.count_fds()           # with gst-launch's pipes open
        cons = pinnedflow.Consumer(path, timeout_ms=10000)
        held = cons.next(10000)
        bt.check(isinstance(held, pinnedflow.Frame), repr(held))
        copy = held.array().copy()
        gst.kill()
        gst.wait()
        f = None
        try:
            while True:
                f = cons.next(10000)
                bt.check(f is not None, "no hang-up seen")
                bt.check(f is not pinnedflow.EOS, "EOS from a killed process")
                f.release()
        except ConnectionError:
            pass
        bt.check(numpy.array_equal(held.array(), copy))
        held.release()
        cons.close()
        del held, f
        import gc
        gc.collect()
        bt.check(pinnedflow.live_segments() == 0, "segments leaked")
        bt.check(bt.count_fds() == fds0, "fds leaked: %d open, %d before"
                 % (bt.count_fds(), fds0))

        # 3. Library consumer killed while holding frames: the sink reclaims
        # them and runs to its end.
        path = env.path("sink3.sock")
        gst = env.gst("videotestsrc num-buffers=90 is-live=true ! "
                      "video/x-raw,format=RGBA,width=%d,height=%d,"
                      "framerate=30/1 ! pinnedshmsink socket-path=%s "
                      "wait-for-connection=true pool-size=4 "
                      "max-client-buffers=3" % (W, H, path))
        lat = env.spawn([bt.tool("pf-latency-node"), path])
        line = lat.stdout.readline()
        bt.check(line.startswith(b"frame "), repr(line))
        os.kill(lat.pid, signal.SIGSTOP)       # stops releasing: holds frames
        time.sleep(0.3)
        lat.kill()
        lat.wait()
        # The sink waits for a consumer again (wait-for-connection): a new
        # one gets the rest of the stream, up to EOS.
        got = _consume_all(path)
        bt.check(len(got) > 0, "no frame after the first consumer died")
        env.finish(gst, what="pinnedshmsink after its consumer died")


if __name__ == "__main__":
    sys.exit(bt.run_cases({"lib-to-src": case_lib_to_src,
                           "sink-to-lib": case_sink_to_lib,
                           "crash": case_crash}))
