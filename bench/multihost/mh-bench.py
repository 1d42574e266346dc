# Network hop (RTP raw video over UDP, loopback) against the local pinned hop
# (pinnedshmsink -> pinnedshmsrc), end-to-end latency, at 720p and 1080p.
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Usage: mh-bench.py [FRAMES]     (default 90 frames per measurement)

Each measurement is three or two processes, like two hosts:

  local   sender: videotestsrc is-live=true ! UYVY caps ! pinnedshmsink
          consumer: pinnedshmsrc ! appsink
  network sender: videotestsrc is-live=true ! UYVY caps ! rtpvrawpay !
                  udpsink host=127.0.0.1 max-bitrate=(3 x the stream's)
          receiver: udpsrc ! rtpvrawdepay ! pinnedshmsink
          consumer: pinnedshmsrc ! appsink

Latency of a frame: CLOCK_MONOTONIC when the consumer's appsink handed it
over, minus CLOCK_MONOTONIC when it left videotestsrc (a probe on its src
pad in the sender process). Frames are matched by a checksum of their
visible pixels (tests/multihost/mh.py), so a lost frame is not mistaken for
the next. All sinks run sync=false: the hop forwards a frame when it arrives.
Prints per size: frames matched, lost, mean and median latency of each
hop, the network/local ratio of the medians, and the receiving sink's
copies. No assertion: a benchmark, run by hand or with
`meson test --benchmark --suite multihost`.
"""
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

SOURCE = os.environ.get("PINNEDFLOW_SOURCE_ROOT",
                        os.path.join(os.path.dirname(
                            os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE, "tests", "multihost"))
import mh  # noqa: E402

Gst = mh.Gst
PY = sys.executable
MH = os.path.join(SOURCE, "tests", "multihost", "mh.py")
LIMIT = 120


def source(w, h, n):
    return ("videotestsrc is-live=true pattern=smpte horizontal-speed=4 "
            "num-buffers=%d ! video/x-raw,format=UYVY,width=%d,height=%d,"
            "framerate=30/1" % (n, w, h))


def role_probe_sender(desc):
    """Runs desc (its videotestsrc named src) to EOS; prints the
    CLOCK_MONOTONIC ns at which each buffer left the source."""
    p = Gst.parse_launch(desc)
    times = []

    def probe(pad, info):
        times.append(time.monotonic_ns())
        return Gst.PadProbeReturn.OK

    p.get_by_name("src").get_static_pad("src").add_probe(
        Gst.PadProbeType.BUFFER, probe)
    p.set_state(Gst.State.PLAYING)
    try:
        msg = p.get_bus().timed_pop_filtered(
            LIMIT * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
        if msg is None or msg.type == Gst.MessageType.ERROR:
            raise RuntimeError("sender: %s" % (msg and msg.parse_error()))
        time.sleep(0.5)     # what is in flight reaches the receiver
    finally:
        p.set_state(Gst.State.NULL)
    print(json.dumps({"sent": times}), flush=True)


def start(argv):
    return subprocess.Popen(argv, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def result(p, what):
    try:
        out, err = p.communicate(timeout=LIMIT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
    if p.returncode != 0:
        raise RuntimeError("%s: exit %s\n%s" % (what, p.returncode,
                                                err[-3000:]))
    return json.loads([l for l in out.splitlines() if l.startswith("{")][-1])


def measure(w, h, n, network):
    tmp = tempfile.mkdtemp(prefix="pf-mh-bench-")
    sock = os.path.join(tmp, "cam.sock")
    kids = []
    try:
        cons = start([PY, MH, "consumer", sock, "--max-s", str(LIMIT),
                      "--times"])
        kids.append(cons)
        recv = None
        src = source(w, h, n).replace("videotestsrc", "videotestsrc name=src",
                                      1)
        if network:
            port = mh.free_port()
            caps = ("application/x-rtp,media=video,clock-rate=90000,"
                    "encoding-name=RAW,sampling=YCbCr-4:2:2,"
                    "depth=(string)8,width=(string)%d,height=(string)%d,"
                    "payload=96" % (w, h))
            recv = start([PY, MH, "receiver",
                          "udpsrc address=127.0.0.1 port=%d "
                          "buffer-size=4194304 caps=\"%s\" ! rtpvrawdepay ! "
                          "pinnedshmsink name=sink socket-path=%s sync=false "
                          "wait-for-connection=true" % (port, caps, sock),
                          "--idle-ms", "1500", "--max-s", str(LIMIT)])
            kids.append(recv)
            if recv.stdout.readline().strip() != "READY":
                raise RuntimeError("receiver: %s" % recv.stderr.read())
            # max-bitrate: udpsink paces a frame's packets at 3 times the
            # stream's rate instead of sending them in one burst, which at
            # 1080p (4 MB a frame) overflows a 4 MB socket buffer (the most
            # net.core.rmem_max allows here) whenever the receiver is late
            desc = ("%s ! rtpvrawpay ! udpsink host=127.0.0.1 port=%d "
                    "sync=false max-bitrate=%d" % (src, port,
                                                   3 * w * h * 2 * 8 * 30))
        else:
            desc = ("%s ! pinnedshmsink socket-path=%s sync=false "
                    "wait-for-connection=true" % (src, sock))
        send = start([PY, os.path.abspath(__file__), "probe-sender", desc])
        kids.append(send)
        sent = result(send, "sender")["sent"]
        r = result(recv, "receiver") if recv else None
        c = result(cons, "consumer")
    finally:
        for k in kids:
            if k.poll() is None:
                os.killpg(k.pid, signal.SIGKILL)
            k.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    want = mh.expected_checksums(source(w, h, n), n)
    index = {s: i for i, s in enumerate(want)}
    lat = [(t - sent[index[s]]) / 1e6 for s, t in c["frames"]
           if s in index and index[s] < len(sent)]
    return {"lat": lat, "lost": n - len(lat), "damaged":
            len(c["frames"]) - len(lat),
            "copies": r["stats"]["copies"] if r else None}


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 90
    print("end-to-end latency, videotestsrc -> consumer appsink, UYVY "
          "30 fps, %d frames each, CLOCK_MONOTONIC across processes" % n)
    for w, h in ((1280, 720), (1920, 1080)):
        loc = measure(w, h, n, False)
        net = measure(w, h, n, True)
        for name, m in (("local pinned hop", loc),
                        ("RTP raw, UDP loopback", net)):
            q = sorted(m["lat"]) or [-1]
            print("  %4dp %-21s matched %3d lost %2d damaged %2d  min %7.3f "
                  "median %7.3f p90 %7.3f mean %7.3f ms%s" % (
                      h, name, len(m["lat"]), m["lost"], m["damaged"], q[0],
                      statistics.median(q), q[int(len(q) * 0.9)],
                      statistics.mean(q),
                      "  receiver sink copies %d" % m["copies"]
                      if m["copies"] is not None else ""))
        if loc["lat"] and net["lat"]:
            print("  %4dp network/local (median): %.1fx" % (
                h, statistics.median(net["lat"]) /
                statistics.median(loc["lat"])))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "probe-sender":
        role_probe_sender(sys.argv[2])
    else:
        main()
