# Two hosts over loopback: the roles (sender, receiver, consumer) and the
# frame checks that tests/multihost/test_multihost.py and
# bench/multihost/mh-bench.py share.
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Roles, each one process (`python3 mh.py ROLE ...`), standing in for a host:

  receiver DESC --idle-ms M --max-s S
      runs the pipeline DESC, which ends in `pinnedshmsink name=sink`;
      prints "READY" once PLAYING and a consumer is connected, ends with EOS
      when the sink rendered frames and then none for M ms (UDP carries no
      EOS: silence is the documented end) or when DESC itself reaches EOS,
      then prints one JSON line: {"stats": sink stats, "eos": how it ended}.
  sender DESC --linger-ms M --max-s S
      runs DESC to EOS, then keeps it PLAYING M ms more before stopping it
      and prints {"net-stats": ...}, the stats of its element named `net`:
      srtsink closes its connection when stopped, and what the receiver
      still holds in its latency window is then lost (gst-launch-1.0 stops
      at once; a camera that never ends does not care).
  consumer SOCKET --max-s S [--times]
      `pinnedshmsrc socket-path=SOCKET ! appsink`, to EOS; prints one JSON
      line: per-frame checksums of the visible pixels (and CLOCK_MONOTONIC
      arrival times with --times), the source's stats, whether EOS came,
      and the indexes of the frames flagged DISCONT (the depayloader flags
      the first frame after a gap in RTP sequence numbers; the flag crosses
      pinnedshmsink -> pinnedshmsrc).

Frames are identified by a checksum of their visible pixels (rows of each
plane without stride padding), so two buffers with different strides or
pool slots but the same picture have the same checksum.
"""
import json
import socket
import sys
import time
import zlib

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstVideo", "1.0")
from gi.repository import Gst, GstVideo  # noqa: E402

Gst.init([])  # not None: the GStreamer 1.28 typelib refuses it (no gst-python)

# (plane count, [(width divisor, height divisor, bytes per sample)])
_PLANES = {
    "RGBA": [(1, 1, 4)], "BGRA": [(1, 1, 4)], "RGBx": [(1, 1, 4)],
    "BGRx": [(1, 1, 4)], "RGB": [(1, 1, 3)], "UYVY": [(2, 1, 4)],
    "I420": [(1, 1, 1), (2, 2, 1), (2, 2, 1)],
    "Y42B": [(1, 1, 1), (2, 1, 1), (2, 1, 1)],
    "Y444": [(1, 1, 1), (1, 1, 1), (1, 1, 1)],
}


def visible_planes(buf, caps):
    """Yields the bytes of each visible row of each plane of `buf`."""
    s = caps.get_structure(0)
    fmt = s.get_value("format")
    w, h = s.get_value("width"), s.get_value("height")
    info = GstVideo.VideoInfo.new_from_caps(caps)
    meta = GstVideo.buffer_get_video_meta(buf)
    offsets = meta.offset if meta else info.offset
    strides = meta.stride if meta else info.stride
    ok, m = buf.map(Gst.MapFlags.READ)
    if not ok:
        raise RuntimeError("cannot map buffer")
    try:
        data = m.data
        for p, (wd, hd, bps) in enumerate(_PLANES[fmt]):
            row = -(-w // wd) * bps
            for y in range(-(-h // hd)):
                o = offsets[p] + y * strides[p]
                yield data[o:o + row]
    finally:
        buf.unmap(m)


def checksum(buf, caps):
    c = 0
    for row in visible_planes(buf, caps):
        c = zlib.crc32(row, c)
    return c


def expected_checksums(src_desc, n):
    """Checksums of the n frames `src_desc` (videotestsrc ... ! caps) makes."""
    p = Gst.parse_launch("%s ! appsink name=out sync=false" % src_desc)
    out = p.get_by_name("out")
    p.set_state(Gst.State.PLAYING)
    sums = []
    try:
        while len(sums) < n:
            sample = out.emit("try-pull-sample", 10 * Gst.SECOND)
            if sample is None:
                break
            sums.append(checksum(sample.get_buffer(), sample.get_caps()))
    finally:
        p.set_state(Gst.State.NULL)
    return sums


def free_port(kind=socket.SOCK_DGRAM):
    """A port on 127.0.0.1 nobody holds now (bind to 0, read it, close)."""
    s = socket.socket(socket.AF_INET, kind)
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


def structure_to_dict(st):
    d = {}
    for i in range(st.n_fields()):
        k = st.nth_field_name(i)
        if st.get_field_type(k).name in ("guint64", "gint64", "guint", "gint",
                                         "gboolean", "gdouble", "gchararray"):
            d[k] = st.get_value(k)
    return d


def _bus_wait(pipeline, timeout_ns):
    msg = pipeline.get_bus().timed_pop_filtered(
        timeout_ns, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    if msg and msg.type == Gst.MessageType.ERROR:
        err, dbg = msg.parse_error()
        raise RuntimeError("%s: %s (%s)" % (msg.src.get_name(), err.message,
                                            dbg))
    return msg


def role_receiver(desc, idle_ms, max_s):
    p = Gst.parse_launch(desc)
    sink = p.get_by_name("sink")
    p.set_state(Gst.State.PLAYING)
    deadline = time.monotonic() + max_s
    how = None
    try:
        while sink.get_property("num-clients") < 1:
            if _bus_wait(p, 20 * Gst.MSECOND):
                raise RuntimeError("EOS before a consumer connected")
            if time.monotonic() > deadline:
                raise RuntimeError("no consumer within %d s" % max_s)
        print("READY", flush=True)
        last, last_change = 0, time.monotonic()
        while how is None:
            if _bus_wait(p, 20 * Gst.MSECOND):
                how = "eos"
                break
            n = sink.get_property("stats").get_value("frames")
            now = time.monotonic()
            if n != last:
                last, last_change = n, now
            elif n > 0 and (now - last_change) * 1000 >= idle_ms:
                how = "silence"
            elif now > deadline:
                how = "deadline"
        if how != "eos":
            # the documented end of a stream without EOS: end it here; the
            # sink forwards this EOS to its consumers
            p.send_event(Gst.Event.new_eos())
            if not _bus_wait(p, 10 * Gst.SECOND):
                raise RuntimeError("no EOS 10 s after sending it")
        stats = structure_to_dict(sink.get_property("stats"))
    finally:
        p.set_state(Gst.State.NULL)
    print(json.dumps({"stats": stats, "end": how}), flush=True)


def role_sender(desc, linger_ms, max_s):
    p = Gst.parse_launch(desc)
    net = p.get_by_name("net")
    p.set_state(Gst.State.PLAYING)
    try:
        if not _bus_wait(p, max_s * Gst.SECOND):
            raise RuntimeError("no EOS within %d s" % max_s)
        time.sleep(linger_ms / 1000.0)
        stats = {}
        if net and net.find_property("stats"):
            stats = structure_to_dict(net.get_property("stats"))
    finally:
        p.set_state(Gst.State.NULL)
    print(json.dumps({"net-stats": stats}), flush=True)


def role_consumer(sock, max_s, times):
    # every-frame: the receiver's producer is live, so the default would be
    # newest-frame, and frames dropped stale on this side would break the
    # rule the tests check (every frame the receiver published arrives)
    p = Gst.parse_launch(
        "pinnedshmsrc name=src socket-path=%s connect-timeout=%d "
        "delivery=every-frame ! "
        "appsink name=out sync=false max-buffers=2" % (sock, max_s * 1000))
    src, out = p.get_by_name("src"), p.get_by_name("out")
    p.set_state(Gst.State.PLAYING)
    frames, eos, discont = [], False, []
    deadline = time.monotonic() + max_s
    try:
        while time.monotonic() < deadline:
            sample = out.emit("try-pull-sample", 100 * Gst.MSECOND)
            if sample is None:
                if out.get_property("eos"):
                    eos = True
                    break
                msg = _bus_wait(p, 0)
                if msg:
                    eos = True
                    break
                continue
            t = time.monotonic_ns()
            buf = sample.get_buffer()
            if buf.has_flags(Gst.BufferFlags.DISCONT):
                discont.append(len(frames))
            c = checksum(buf, sample.get_caps())
            frames.append([c, t] if times else c)
            del sample
        stats = structure_to_dict(src.get_property("stats"))
    finally:
        p.set_state(Gst.State.NULL)
    print(json.dumps({"frames": frames, "eos": eos, "stats": stats,
                      "discont": discont}), flush=True)


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[0] == "receiver":
        role_receiver(a[1], int(a[a.index("--idle-ms") + 1]),
                      int(a[a.index("--max-s") + 1]))
    elif a[0] == "sender":
        role_sender(a[1], int(a[a.index("--linger-ms") + 1]),
                    int(a[a.index("--max-s") + 1]))
    elif a[0] == "consumer":
        role_consumer(a[1], int(a[a.index("--max-s") + 1]), "--times" in a)
    else:
        sys.exit("unknown role %s" % a[0])
