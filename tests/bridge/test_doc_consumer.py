# Bridge suite: a consumer written from docs/protocol.md alone.
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Usage: test_doc_consumer.py CASE
  node  pf-camera-node (the C node library) -> this consumer
  sink  gst-launch videotestsrc ! pinnedshmsink -> this consumer

The consumer below uses only the standard library (socket with SCM_RIGHTS,
struct, mmap, fcntl) and nothing of libpinnedflow: it is the check that the
protocol document is enough to write another implementation. Every offset,
size, fd rule and validation it applies is the one docs/protocol.md gives,
section by section; frames are compared byte for byte with what the
producer wrote, and each one is released.
"""
import fcntl
import mmap
import os
import socket
import struct
import time

import bridgetest as bt

# 3. Encoding: header, types.
HDR = struct.Struct("<IIII")        # type, size, n_fds, reserved
(HELLO, SEG_ADD, SEG_REMOVE, CAPS, FRAME, EOS, RELEASE, STREAM,
 REFUSE) = range(1, 10)
SIZES = {HELLO: 40, SEG_ADD: 40, SEG_REMOVE: 24, FRAME: 256, EOS: 16,
         RELEASE: 24, STREAM: 104, REFUSE: 24}
MAX_MSG = 4120
MAGIC, VERSION, PRODUCER, CONSUMER = 0x574c4650, 2, 1, 2
# 3.1 / 7.1: the delivery a consumer asks for; 3.8 STREAM flags
EVERY_FRAME, NEWEST_FRAME = 1, 2
LIVE, HAS_SEGMENT, DEMOTED = 1, 2, 4


class ProtocolError(Exception):
    pass


def _need(cond, what):
    if not cond:
        raise ProtocolError(what)


class DocConsumer(object):
    def __init__(self, path, timeout=10.0):
        # 2. Transport: retry while the producer is not up yet.
        deadline = time.monotonic() + timeout
        while True:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                self.sock.connect(path)
                break
            except (FileNotFoundError, ConnectionRefusedError):
                self.sock.close()
                _need(time.monotonic() < deadline, "no producer")
                time.sleep(0.02)
        self.segments = {}          # id -> (mmap, size)
        self.caps_seq, self.caps, self.last_seq, self.held = 0, None, 0, 0
        self.stream = None
        # 4. Connection: our HELLO (role consumer, asking for every frame:
        # flags = the delivery, everything else 0).
        self._send(struct.pack("<IIIIIHHIIQ", HELLO, 40, 0, 0, MAGIC,
                               VERSION, CONSUMER, 0, EVERY_FRAME, 0))
        t, body = self._recv()
        _need(t != REFUSE, "refused")
        _need(t == HELLO, "first message is not HELLO")
        magic, version, role, self.max_held, flags, self.session = \
            struct.unpack_from("<IHHIIQ", body, 16)
        _need(magic == MAGIC and version == VERSION, "not supported")
        _need(role == PRODUCER and flags == 0 and self.max_held >= 1,
              "bad producer HELLO")
        _need(self.session != 0, "session id 0")

    def _send(self, data):
        self.sock.sendmsg([data], [], socket.MSG_NOSIGNAL)

    def _recv(self):
        """One packet, validated as section 5 and 6 (stateless) say."""
        anc = socket.CMSG_SPACE(16 * 4)
        data, ancdata, flags, _ = self.sock.recvmsg(MAX_MSG, anc,
                                                    socket.MSG_CMSG_CLOEXEC)
        fds, bad_cmsg = [], False
        for level, kind, payload in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                n = len(payload) // 4
                fds += struct.unpack("<%di" % n, payload[:4 * n])
            else:
                bad_cmsg = True
        try:
            _need(len(data) > 0, "producer went away")
            _need(not flags & (socket.MSG_CTRUNC | socket.MSG_TRUNC)
                  and not bad_cmsg, "truncated packet")
            _need(16 <= len(data) <= MAX_MSG, "bad length")
            t, size, n_fds, reserved = HDR.unpack_from(data)
            _need(size == len(data) and reserved == 0, "bad header")
            want_fds = 1 if t == SEG_ADD else 0
            _need(n_fds == want_fds and len(fds) == want_fds, "fd count")
            if t == CAPS:
                _need(size >= 24, "short CAPS")
            else:
                _need(SIZES.get(t) == size, "type %d size %d" % (t, size))
        except ProtocolError:
            for fd in fds:
                os.close(fd)
            raise
        if t == SEG_ADD:
            return t, (data, fds[0])
        return t, data

    def _segment_add(self, data, fd):
        try:
            seg_id, size, flags, reserved = struct.unpack_from("<QQII", data,
                                                               16)
            _need(seg_id != 0 and size != 0 and flags == 0 and reserved == 0,
                  "bad SEGMENT_ADD")
            _need(seg_id not in self.segments, "duplicate segment")
            # 5. Seals SHRINK|GROW, file size, then a read-only mapping.
            seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
            need = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW
            _need(seals & need == need, "segment not sealed")
            _need(os.fstat(fd).st_size >= size, "segment smaller than said")
            self.segments[seg_id] = (mmap.mmap(fd, size, mmap.MAP_SHARED,
                                               mmap.PROT_READ), size)
        finally:
            os.close(fd)

    def next(self):
        """The next frame as a dict (with its bytes), or None at EOS."""
        while True:
            t, data = self._recv()
            if t == SEG_ADD:
                self._segment_add(*data)
            elif t == SEG_REMOVE:
                seg_id, = struct.unpack_from("<Q", data, 16)
                _need(seg_id in self.segments, "unknown segment removed")
                del self.segments[seg_id]
            elif t == CAPS:
                seq, length = struct.unpack_from("<II", data, 16)
                _need(1 <= length <= 4096 and len(data) == 24 + length
                      and b"\0" not in data[24:], "bad CAPS")
                _need(seq > self.caps_seq, "caps_seq not increasing")
                self.caps_seq, self.caps = seq, data[24:].decode()
            elif t == EOS:
                return None
            elif t == STREAM:
                self._stream(data)
            elif t == FRAME:
                return self._frame(data)
            else:
                raise ProtocolError("unexpected message type %d" % t)

    def _stream(self, d):
        # 3.8: flags, delivery in force, the segment (rates are doubles)
        flags, delivery, fmt, seg_flags, rate, applied = \
            struct.unpack_from("<IIIIdd", d, 16)
        _need(flags & ~(LIVE | HAS_SEGMENT | DEMOTED) == 0, "STREAM flags")
        _need(delivery in (EVERY_FRAME, NEWEST_FRAME), "STREAM delivery")
        _need(not flags & DEMOTED or delivery == NEWEST_FRAME, "demoted")
        if flags & HAS_SEGMENT:
            _need(fmt != 0, "segment format 0")
            for r in (rate, applied):
                _need(r == r and r != 0 and abs(r) != float("inf"),
                      "segment rate")
        else:
            _need(d[24:] == bytes(80), "segment fields without a segment")
        self.stream = dict(flags=flags, delivery=delivery)

    def _frame(self, d):
        seq, caps_seq, n_chunks = struct.unpack_from("<QII", d, 16)
        _need(1 <= n_chunks <= 4, "chunk count")
        _need(seq > self.last_seq and caps_seq == self.caps_seq,
              "seq/caps_seq")
        _need(self.held < self.max_held, "beyond max_held")
        payload = b""
        for i in range(4):
            seg_id, off, size = struct.unpack_from("<QQQ", d, 32 + 24 * i)
            if i >= n_chunks:
                _need(seg_id == off == size == 0, "unused chunk not zero")
                continue
            _need(seg_id in self.segments and size != 0, "bad chunk")
            m, seg_size = self.segments[seg_id]
            _need(off + size <= seg_size, "chunk outside its segment")
            payload += m[off:off + size]
        (pts, dts, duration, offset, offset_end, clock_pts, send_time,
         buffer_flags, meta_flags, width, height, n_planes, reserved) = \
            struct.unpack_from("<7Q6I", d, 128)
        _need(reserved == 0 and meta_flags & ~1 == 0, "reserved/meta bits")
        offs = struct.unpack_from("<4Q", d, 208)
        strides = struct.unpack_from("<4i", d, 240)
        if meta_flags & 1:
            _need(1 <= n_planes <= 4, "plane count")
        else:
            _need(width == height == n_planes == 0, "video fields")
        for i in range(4):
            if i >= n_planes:
                _need(offs[i] == 0 and strides[i] == 0, "unused plane")
            else:
                _need(offs[i] < len(payload), "plane outside the frame")
        self.last_seq = seq
        self.held += 1
        return dict(seq=seq, pts=pts, duration=duration, width=width,
                    height=height, n_planes=n_planes, offsets=offs[:n_planes],
                    strides=strides[:n_planes], send_time=send_time,
                    caps=self.caps, data=payload)

    def release(self, seq):
        self.held -= 1
        try:
            self._send(struct.pack("<IIIIQ", RELEASE, 24, 0, 0, seq))
        except (BrokenPipeError, ConnectionResetError):
            pass    # 7: the producer closed and took everything back

    def close(self):
        for m, _ in self.segments.values():
            m.close()
        self.segments = {}
        self.sock.close()


def _rows(frame, bpp):
    """The frame's pixels row by row, without stride padding."""
    w, stride, off = frame["width"], frame["strides"][0], frame["offsets"][0]
    return [frame["data"][off + y * stride:off + y * stride + w * bpp]
            for y in range(frame["height"])]


def _consume(path, check_frame, n_want):
    fds0 = bt.count_fds()
    c = DocConsumer(path)
    bt.check(c.max_held >= 1)
    n = 0
    while True:
        f = c.next()
        if f is None:
            break
        # 4: the STREAM comes before any frame; we asked for every frame
        # and nothing demoted us
        bt.check(c.stream is not None
                 and c.stream["delivery"] == EVERY_FRAME, "%r" % c.stream)
        check_frame(n, f)
        c.release(f["seq"])
        n += 1
    c.close()
    bt.check(n == n_want, "%d frames, want %d" % (n, n_want))
    bt.check(bt.count_fds() == fds0, "fds left: %d -> %d"
             % (fds0, bt.count_fds()))


def case_node():
    W, H, N = 64, 48, 5
    with bt.Env() as env:
        path = env.path("cam.sock")
        cam = env.spawn([bt.tool("pf-camera-node"), path, str(N), str(W),
                         str(H), "0"])

        def check(n, f):
            bt.check(f["width"] == W and f["height"] == H
                     and f["n_planes"] == 1, "video meta %r" % f)
            bt.check("format=(string)RGBA" in f["caps"], f["caps"])
            bt.check(f["pts"] == n * 33333333, "pts %d" % f["pts"])
            want = [bytes((x + 2 * y + 3 * c + 5 * n) & 0xff
                          for x in range(W) for c in range(4))
                    for y in range(H)]
            bt.check(_rows(f, 4) == want, "frame %d differs" % n)

        _consume(path, check, N)
        env.finish(cam, what="pf-camera-node")


def case_sink():
    W, H, N = 32, 16, 4
    with bt.Env() as env:
        path = env.path("sink.sock")
        # Solid ARGB 0xff112233: RGBA bytes 11 22 33 ff everywhere.
        gst = env.gst("videotestsrc num-buffers=%d pattern=solid-color "
                      "foreground-color=0xff112233 ! "
                      "video/x-raw,format=RGBA,width=%d,height=%d,"
                      "framerate=30/1 ! pinnedshmsink socket-path=%s "
                      "wait-for-connection=true" % (N, W, H, path))

        def check(n, f):
            bt.check(f["width"] == W and f["height"] == H, "size %r" % f)
            bt.check(f["caps"].startswith("video/x-raw")
                     and "width=(int)%d" % W in f["caps"], f["caps"])
            # videotestsrc: pts of buffer n = n * 1 s / 30, rounded down.
            bt.check(f["pts"] == n * 10**9 // 30, "pts %d" % f["pts"])
            bt.check(_rows(f, 4) == [b"\x11\x22\x33\xff" * W] * H,
                     "frame %d differs" % n)

        _consume(path, check, N)
        env.finish(gst, what="gst-launch pinnedshmsink")


if __name__ == "__main__":
    raise SystemExit(bt.run_cases({"node": case_node, "sink": case_sink}))
