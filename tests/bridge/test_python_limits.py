# Bridge suite: the Python Consumer against producers that misbehave.
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Usage: test_python_limits.py CASE
  silent   a peer that accepts and never says HELLO: TimeoutError (ETIME)
           naming it, by the deadline (2 s of margin), nothing left open
  budget   a raw producer announcing a sparse 1 GiB memfd: next() raises
           PinnedflowError (EDQUOT) naming the bytes and the budget, RSS
           grows by less than 16 MiB; a smaller budget of our own refuses a
           64 KiB segment; a real Producer streams within
           max_mapped_segments=1 and with lock_segments=True
The raw producer is written from docs/protocol.md (standard library only).
"""
import errno
import fcntl
import os
import re
import socket
import struct
import sys
import threading
import time

import bridgetest as bt
import pinnedflow

MAGIC = 0x574c4650
GiB = 1 << 30


def status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    bt.fail("no %s in /proc/self/status" % field)


def listener(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.bind(path)
    s.listen(8)
    return s


def hello():
    return struct.pack("<IIIIIHHIIQ", 1, 40, 0, 0, MAGIC, 2, 1, 4, 0, 1)


def segment_add(seg_id, size):
    return struct.pack("<IIIIQQII", 2, 40, 1, 0, seg_id, size, 0, 0)


def sealed_memfd(size):
    fd = os.memfd_create("sparse", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, size)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
    return fd


def raw_producer(lsock, size, out):
    """Accepts one consumer, answers its HELLO, announces one sparse
    segment of @size bytes, keeps the connection in out["peer"]."""
    peer, _ = lsock.accept()
    out["peer"] = peer
    bt.check(len(peer.recv(256)) == 40, "no consumer HELLO")
    peer.send(hello())
    fd = sealed_memfd(size)
    socket.send_fds(peer, [segment_add(1, size)], [fd])
    os.close(fd)


def case_silent():
    with bt.Env() as env:
        path = env.path("silent.sock")
        lsock = listener(path)          # accepts (backlog), never speaks
        fds0 = bt.count_fds()
        t0 = time.monotonic()
        try:
            pinnedflow.Consumer(path, timeout_ms=300)
            bt.fail("connected to a silent peer")
        except TimeoutError as e:
            dt = time.monotonic() - t0
            bt.check(e.errno == errno.ETIME, str(e))
            # the wait named is what the deadline had left after connecting
            m = re.search(r"accepted the connection but sent no HELLO "
                          r"within (\d+) ms", str(e))
            bt.check(m is not None and 0 < int(m.group(1)) <= 300, str(e))
            bt.check(path in str(e), str(e))
            bt.check(dt < 0.3 + 2.0, "took %.3f s" % dt)
        bt.check(bt.count_fds() == fds0, "an fd was left open")
        lsock.close()


def expect_refused(path, lsock, size, needles, **budget):
    out = {}
    t = threading.Thread(target=raw_producer, args=(lsock, size, out))
    t.start()
    cons = pinnedflow.Consumer(path, timeout_ms=10000, **budget)
    t.join()
    try:
        cons.next(10000)
        bt.fail("a segment over the budget was accepted")
    except pinnedflow.PinnedflowError as e:
        bt.check(e.errno == errno.EDQUOT, str(e))
        for n in needles:
            bt.check(n in str(e), "%r lacks %r" % (str(e), n))
    cons.close()
    # the consumer hung up
    bt.check(out["peer"].recv(64) == b"", "the consumer did not hang up")
    out["peer"].close()


def case_budget():
    with bt.Env() as env:
        path = env.path("raw.sock")
        lsock = listener(path)
        segs0 = pinnedflow.live_segments()
        rss0, shm0 = status_kib("VmRSS"), status_kib("RssShmem")
        expect_refused(path, lsock, GiB, ["1073741824 bytes",
                                          "budget of 805306368 bytes",
                                          "exceeds this consumer's budget"])
        bt.check(status_kib("VmRSS") - rss0 < 16 * 1024, "RSS grew")
        bt.check(status_kib("RssShmem") - shm0 < 16 * 1024, "RssShmem grew")
        expect_refused(path, lsock, 65536, ["budget of 4096 bytes"],
                       max_mapped_bytes=4096)
        bt.check(pinnedflow.live_segments() == segs0, "a segment was kept")
        lsock.close()
        try:
            pinnedflow.Consumer(path, timeout_ms=0, max_mapped_bytes=0)
            bt.fail("a zero budget was taken")
        except (ValueError, OSError):
            pass

        # a real producer within the budget
        path = env.path("real.sock")
        prod = pinnedflow.Producer(path, slot_size=4096, n_slots=2)
        for budget in ({"max_mapped_segments": 1},
                       {"lock_segments": True}):
            cons = pinnedflow.Consumer(path, timeout_ms=5000, **budget)
            prod.wait_clients(1, 10000)
            with prod.loan(timeout_ms=5000) as loan:
                loan.array()[:] = 7
                loan.publish(pts=1)
            frame = cons.next(10000)
            bt.check(isinstance(frame, pinnedflow.Frame), repr(frame))
            bt.check(bytes(frame.buffer[:4]) == b"\x07" * 4)
            frame.release()
            cons.close()
            while prod.n_clients:
                time.sleep(0.01)
        prod.close()


if __name__ == "__main__":
    sys.exit(bt.run_cases({"silent": case_silent, "budget": case_budget}))
