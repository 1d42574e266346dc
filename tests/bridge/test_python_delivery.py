# Bridge suite: delivery policies and the end of a stream in Python.
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Usage: test_python_delivery.py CASE
  policy  Consumer(delivery=...): None follows the producer's liveness
          (every-frame, then newest-frame once Producer.live is set), an
          explicit choice is kept, a newest-frame consumer gets the newest
          queued frame (stale ones released unseen, counted), a stuck
          every-frame consumer is demoted after the reliable timeout and
          publish goes on; a bad value is refused
  end     `for frame in consumer` ends normally at the producer's EOS (N of
          N frames, byte-exact), and raises pinnedflow.ProducerLost
          (ECONNRESET, a ConnectionError) when the producer is killed
          mid-stream: never a silent end
"""
import errno
import gc
import signal
import sys

import numpy

import bridgetest as bt
import pinnedflow

W, H, FRAME_NS = 32, 16, 33333333


def _publish(prod, n, want):
    with prod.loan(timeout_ms=5000) as loan:
        loan.array()[:] = bt.pattern(W, H, n)
        got = loan.publish(pts=n * FRAME_NS, duration=FRAME_NS)
        bt.check(got == want, "frame %d reached %d consumers, want %d"
                 % (n, got, want))


def _take(cons, seq=None):
    f = cons.next(10000)
    bt.check(isinstance(f, pinnedflow.Frame), repr(f))
    if seq is not None:
        bt.check(f.seq == seq, "seq %d, want %d" % (f.seq, seq))
    return f


def case_policy():
    with bt.Env() as env:
        fds0 = bt.count_fds()
        path = env.path("d.sock")
        size = pinnedflow.video_layout("RGBA", W, H)["size"]
        try:
            pinnedflow.Consumer(path, timeout_ms=0, delivery="all")
            bt.fail("delivery='all' accepted")
        except ValueError:
            pass
        prod = pinnedflow.Producer(path, slot_size=size, n_slots=12,
                                   max_client_frames=4,
                                   reliable_timeout_ms=300)
        prod.set_video("RGBA", W, H, (30, 1))
        dflt = pinnedflow.Consumer(path, timeout_ms=5000)
        every = pinnedflow.Consumer(path, timeout_ms=5000,
                                    delivery="every-frame")
        newest = pinnedflow.Consumer(path, timeout_ms=5000,
                                     delivery="newest-frame")
        prod.wait_clients(3, 10000)

        _publish(prod, 0, 3)                                # seq 1
        for c, want in ((dflt, "every-frame"), (every, "every-frame"),
                        (newest, "newest-frame")):
            _take(c, 1).release()
            bt.check(c.delivery == want, "%s, want %s" % (c.delivery, want))
            bt.check(not c.live and not c.demoted)

        prod.live = True                                    # seq 2
        _publish(prod, 1, 3)
        _take(dflt, 2).release()
        bt.check(dflt.delivery == "newest-frame" and dflt.live, dflt.delivery)
        _take(every, 2).release()
        bt.check(every.delivery == "every-frame" and every.live)

        # newest-frame: 2, 3, 4 queued unread -> it gets 4
        _publish(prod, 2, 3)                                # seq 3
        _publish(prod, 3, 3)                                # seq 4
        f = _take(newest, 4)
        bt.check(numpy.array_equal(f.array(), bt.pattern(W, H, 3)))
        f.release()
        bt.check(newest.stats["frames_stale_dropped"] == 2, newest.stats)
        _take(dflt, 4).release()            # newest-frame too: 3 is stale
        bt.check(dflt.stats["frames_stale_dropped"] == 1, dflt.stats)

        # the every-frame consumer keeps 3, 4 and gets 5, 6 (its limit);
        # publishing 7 waits 300 ms for it, demotes it, goes on
        held = [_take(every, 3), _take(every, 4)]
        _publish(prod, 4, 3)                                # seq 5
        _publish(prod, 5, 3)                                # seq 6
        _publish(prod, 6, 2)                                # seq 7
        held += [_take(every, 5), _take(every, 6)]
        bt.check(every.next(0) is None)     # the STREAM that demotes it
        bt.check(every.demoted and every.delivery == "newest-frame",
                 every.stats)
        for f in held:
            f.release()

        for c in (dflt, every, newest):
            c.close()
        prod.close()
        del f, held, c, dflt, every, newest, prod
        gc.collect()
        bt.check(pinnedflow.live_segments() == 0, "segments leaked")
        bt.check(bt.count_fds() == fds0, "fds leaked")


def case_end():
    with bt.Env() as env:
        fds0 = bt.count_fds()
        # EOS: iteration ends normally after N of N frames
        path = env.path("eos.sock")
        N = 6
        cam = env.spawn([bt.tool("pf-camera-node"), path, str(N), str(W),
                         str(H), "0"])
        n = 0
        with pinnedflow.Consumer(path, timeout_ms=10000,
                                 delivery="every-frame") as cons:
            for frame in cons:
                with frame:
                    want = numpy.array(
                        [[[(x + 2 * y + 3 * c + 5 * n) & 0xff
                           for c in range(4)] for x in range(W)]
                         for y in range(H)], dtype=numpy.uint8)
                    bt.check(numpy.array_equal(frame.array(), want),
                             "frame %d differs" % n)
                    bt.check(frame.pts == n * FRAME_NS, "pts %r" % frame.pts)
                n += 1
        bt.check(n == N, "%d frames, want %d" % (n, N))
        env.finish(cam, what="pf-camera-node")

        # killed mid-stream: ProducerLost, a ConnectionResetError
        path = env.path("lost.sock")
        cam = env.spawn([bt.tool("pf-camera-node"), path, "100000", str(W),
                         str(H), "30"])
        n = 0
        cons = pinnedflow.Consumer(path, timeout_ms=10000)
        try:
            for frame in cons:
                frame.release()
                n += 1
                if n == 3:
                    cam.send_signal(signal.SIGKILL)
            bt.fail("iteration ended silently after a crash")
        except pinnedflow.ProducerLost as e:
            bt.check(e.errno == errno.ECONNRESET, str(e))
            bt.check(isinstance(e, ConnectionResetError))
            bt.check("without EOS" in str(e), str(e))
        cam.communicate()           # reaped, its pipes closed
        bt.check(cam.returncode == -signal.SIGKILL, str(cam.returncode))
        cons.close()
        del frame, cons
        gc.collect()
        bt.check(pinnedflow.live_segments() == 0, "segments leaked")
        bt.check(bt.count_fds() == fds0, "fds leaked")


if __name__ == "__main__":
    sys.exit(bt.run_cases({"policy": case_policy, "end": case_end}))
