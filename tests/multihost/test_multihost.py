# Suite 'multihost': remote cameras land in the pinned pool through
# GStreamer's network transports, over loopback (127.0.0.1 only).
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Usage: test_multihost.py CASE

Three processes stand in for two hosts: a sender (gst-launch-1.0:
videotestsrc ! payloader ! network sink), a receiver (network source !
depayloader/decoder ! pinnedshmsink, mh.py receiver) and a consumer on the
receiving host (pinnedshmsrc, mh.py consumer). The rules checked:

  rtp-raw   RTP raw video (RFC 4175) over UDP: every frame arrives, in
            order, its visible pixels equal to what the sender's
            videotestsrc made; rtpvrawdepay writes into the pool the sink
            proposes: copies == 0, zero-copy-frames == frames.
  srt       the same RTP packets over SRT (srtsink/srtsrc): same checks;
            here the receiver sees EOS (srtsrc ends when the caller
            disconnects), after the sender lingered 1 s past its EOS.
  srt-loss  SRT through a relay that drops every 20th datagram from the
            sender (5%): srtsink retransmitted, frames arrive whole (none
            would without retransmission), the consumer runs to EOS, the
            damaged/missing are counted, copies 0.
  jpeg      a compressed stream (jpegenc/rtpjpegpay, rtpjpegdepay/jpegdec):
            pixels equal to a local jpegenc ! jpegdec of the same frames;
            jpegdec decodes into the sink's pool: copies == 0.
  loss      5% of the UDP datagrams dropped by a relay in this process, in
            bursts of a frame's worth: the consumer keeps running to EOS,
            every frame it gets is either intact or counted damaged (lines
            missing), the sent frames it never got intact are counted
            missing; intact ones stay in order; the consumer sees DISCONT on
            a frame after the loss; the receiver copies nothing.
  netem     the same with `tc netem loss 5%` on lo in a network namespace
            (random loss: nearly every frame damaged, none need be whole);
            exit 77 (skip) with the reason where no namespace or no netem
            can be had.

UDP carries no EOS: the receiver ends its stream after 1.5 s without a new
frame (the documented end, see docs/multihost.md), and its sink forwards
that EOS to the consumer. Every child has a time limit and is killed in
`finally`; the socket lives in a temporary directory removed there too.
"""
import json
import select
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mh  # noqa: E402

PY = sys.executable
N = 45
W, H = 320, 240
RAW = "video/x-raw,format=RGBA,width=%d,height=%d,framerate=30/1" % (W, H)
# every row moves from one frame to the next (horizontal-speed): a frame
# missing lines cannot pass for another one
SRC = ("videotestsrc pattern=smpte horizontal-speed=4 num-buffers=%d ! %s"
       % (N, RAW))
RTP_CAPS = ("application/x-rtp,media=video,clock-rate=90000,"
            "encoding-name=RAW,sampling=RGBA,depth=(string)8,"
            "width=(string)%d,height=(string)%d,payload=96" % (W, H))
JPEG_CAPS = ("application/x-rtp,media=video,clock-rate=90000,"
             "encoding-name=JPEG,payload=26")
LIMIT = 60
IDLE_MS = 1500
# srtsink drops its connection when stopped: the sender stays up this long
# after EOS so the receiver's latency window (125 ms) drains
SRT_LINGER_MS = 1000
# SRT's buffers (bytes, URI options rcvbuf/sndbuf): at least the stream over
# the latency window, or a full receiver buffer stalls both ends for ever
# (libsrt's default 8192 packets; docs/multihost.md, "RTP over SRT")
SRT_BUF = 32 * 1024 * 1024


class Children(object):
    """Child processes, each in its own process group; all killed at exit."""

    def __init__(self, prefix=()):
        self.procs, self.prefix = [], list(prefix)

    def start(self, argv, **kw):
        p = subprocess.Popen(self.prefix + argv, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             start_new_session=True, **kw)
        self.procs.append(p)
        return p

    def kill_all(self):
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            p.wait()


def finish(p, what, timeout=LIMIT):
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        raise AssertionError("%s: timed out after %d s\n%s" % (what, timeout,
                                                              err[-3000:]))
    if p.returncode != 0:
        raise AssertionError("%s: exit %d\n%s\n%s" % (what, p.returncode,
                                                      out[-2000:],
                                                      err[-3000:]))
    return out


def last_json(out):
    return json.loads([l for l in out.splitlines() if l.startswith("{")][-1])


def run_hop(send_desc, recv_desc, prefix=(), linger_ms=None):
    """Runs consumer, receiver, then the sender; returns (receiver result,
    consumer result). recv_desc has a {sock} to fill in."""
    kids = Children(prefix)
    tmp = tempfile.mkdtemp(prefix="pf-multihost-")
    sock = os.path.join(tmp, "cam.sock")
    try:
        cons = kids.start([PY, os.path.join(HERE, "mh.py"), "consumer", sock,
                           "--max-s", str(LIMIT)])
        recv = kids.start([PY, os.path.join(HERE, "mh.py"), "receiver",
                           recv_desc.format(sock=sock), "--idle-ms",
                           str(IDLE_MS), "--max-s", str(LIMIT)])
        # the receiver says READY once its consumer is connected
        line = recv.stdout.readline()
        if line.strip() != "READY":
            recv.kill()
            raise AssertionError("receiver not ready: %r\n%s" % (
                line, recv.stderr.read()[-3000:]))
        if linger_ms is None:
            send = kids.start(["gst-launch-1.0", "-q"] + send_desc.split())
        else:
            send = kids.start([PY, os.path.join(HERE, "mh.py"), "sender",
                               send_desc, "--linger-ms", str(linger_ms),
                               "--max-s", str(LIMIT)])
        out = finish(send, "sender")
        r = last_json(finish(recv, "receiver"))
        c = last_json(finish(cons, "consumer"))
        if linger_ms is not None:
            r["sender"] = last_json(out)["net-stats"]
        return r, c
    finally:
        kids.kill_all()
        shutil.rmtree(tmp, ignore_errors=True)


def classify(got, want):
    """(intact indexes in arrival order, damaged count, missing count)."""
    index = {c: i for i, c in enumerate(want)}
    assert len(index) == len(want), "sender frames not distinct"
    # a damaged frame may still look like an older one (lines missing, the
    # rest of the pool buffer left from before): a frame counts as intact
    # only if it comes after the last intact one
    intact = []
    for c in got:
        if c in index and (not intact or index[c] > intact[-1]):
            intact.append(index[c])
    damaged = len(got) - len(intact)
    missing = len(want) - len(set(intact))
    return intact, damaged, missing


def check_lossless(r, c, want, what):
    print("%s: receiver %s (end: %s); consumer %d frames, eos %s, %s" % (
        what, r["stats"], r["end"], len(c["frames"]), c["eos"], c["stats"]))
    intact, damaged, missing = classify(c["frames"], want)
    print("intact: %s" % intact)
    assert c["eos"], "consumer saw no EOS"
    assert damaged == 0 and missing == 0, (
        "%d damaged, %d missing of %d" % (damaged, missing, len(want)))
    assert intact == list(range(len(want))), "frames out of order: %s" % intact
    s = r["stats"]
    assert s["frames"] == len(want), s
    assert s["copies"] == 0 and s["zero-copy-frames"] == s["frames"], (
        "the receiver copied: %s" % s)
    assert c["stats"]["gaps"] == 0, c["stats"]
    print("ok %s: %d frames intact, in order, copies 0" % (what, len(want)))


def case_rtp_raw():
    port = mh.free_port()
    send = ("%s ! rtpvrawpay ! udpsink host=127.0.0.1 port=%d" % (SRC, port))
    recv = ("udpsrc address=127.0.0.1 port=%d buffer-size=4194304 caps=\"%s\" "
            "! rtpvrawdepay ! pinnedshmsink name=sink socket-path={sock} "
            "wait-for-connection=true" % (port, RTP_CAPS))
    r, c = run_hop(send, recv)
    check_lossless(r, c, mh.expected_checksums(SRC, N), "rtp-raw")


def srt_sender(port, latency=125):
    # mtu=1316: one RTP packet per SRT live-mode message (1316 bytes at most)
    return ("%s ! rtpvrawpay mtu=1316 ! srtsink name=net "
            "uri=srt://127.0.0.1:%d?mode=caller&sndbuf=%d latency=%d"
            % (SRC, port, SRT_BUF, latency))


def srt_receiver(port, latency=125):
    return ("srtsrc uri=srt://127.0.0.1:%d?mode=listener&rcvbuf=%d "
            "latency=%d ! %s ! "
            "rtpvrawdepay ! pinnedshmsink name=sink socket-path={sock} "
            "wait-for-connection=true" % (port, SRT_BUF, latency, RTP_CAPS))


def case_srt():
    port = mh.free_port()
    send = srt_sender(port)
    r, c = run_hop(send, srt_receiver(port), linger_ms=SRT_LINGER_MS)
    check_lossless(r, c, mh.expected_checksums(SRC, N), "srt")


def case_jpeg():
    port = mh.free_port()
    src = SRC.replace("RGBA", "I420")
    send = ("%s ! jpegenc ! rtpjpegpay ! udpsink host=127.0.0.1 port=%d"
            % (src, port))
    recv = ("udpsrc address=127.0.0.1 port=%d buffer-size=4194304 caps=\"%s\" "
            "! rtpjpegdepay ! jpegdec ! pinnedshmsink name=sink "
            "socket-path={sock} wait-for-connection=true" % (port, JPEG_CAPS))
    r, c = run_hop(send, recv)
    want = mh.expected_checksums("%s ! jpegenc ! jpegdec" % src, N)
    check_lossless(r, c, want, "jpeg")


class LossyRelay(object):
    """A UDP relay standing in for a lossy link: datagrams to
    127.0.0.1:in_port go on to 127.0.0.1:out_port, answers come back to
    whoever sent last (SRT's ACKs and NAKs). Forward datagrams are dropped by
    `drop(n)`, n counting from 1; nothing is dropped backwards."""

    def __init__(self, out_port, drop):
        self.rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for s in (self.rx, self.tx):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            s.bind(("127.0.0.1", 0))
        self.in_port = self.rx.getsockname()[1]
        self.out = ("127.0.0.1", out_port)
        self.peer = None
        self.drop, self.seen, self.dropped = drop, 0, 0
        self.stop = False
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()

    def loop(self):
        while not self.stop:
            ready, _, _ = select.select([self.rx, self.tx], [], [], 0.2)
            if self.rx in ready:
                d, self.peer = self.rx.recvfrom(65536)
                self.seen += 1
                if self.drop(self.seen):
                    self.dropped += 1
                else:
                    self.tx.sendto(d, self.out)
            if self.tx in ready:
                d = self.tx.recv(65536)
                if self.peer:
                    self.rx.sendto(d, self.peer)

    def close(self):
        self.stop = True
        self.t.join()
        self.rx.close()
        self.tx.close()


def check_lossy(r, c, want, what, some_intact):
    intact, damaged, missing = classify(c["frames"], want)
    print("%s: receiver %s (end: %s); consumer %d frames (%d intact, %d "
          "damaged), %d of %d sent frames missing, eos %s, source %s" % (
              what, r["stats"], r["end"], len(c["frames"]), len(intact),
              damaged, missing, len(want), c["eos"], c["stats"]))
    assert c["eos"], "the consumer did not run to the end"
    assert len(c["frames"]) == r["stats"]["frames"] - r["stats"]["drops"], (
        "consumer got %d frames, receiver published %s" % (
            len(c["frames"]), r["stats"]))
    assert missing > 0, "loss induced but every frame arrived intact"
    if some_intact:
        assert intact, "no frame arrived intact"
    assert intact == sorted(intact), "intact frames out of order"
    assert r["stats"]["copies"] == 0, r["stats"]
    # what the consumer itself can see: the depayloader flags the first frame
    # after a gap in RTP sequence numbers DISCONT, and the flag crosses the
    # pinned hop (the first frame is DISCONT anyway)
    flagged = [i for i in c["discont"] if i > 0]
    assert flagged, "no frame after the first flagged DISCONT"
    print("ok %s: consumer ran to EOS; %d intact, %d damaged, %d missing; "
          "DISCONT on frames %s" % (what, len(intact), damaged, missing,
                                    flagged))


def burst_5pct(n):
    """5% of the packets, lost in bursts of one frame's worth (a link that
    drops out for a frame time): 231 of every 4620 datagrams."""
    return (n - 1) % 4620 >= 4620 - 231


def case_loss():
    port = mh.free_port()
    relay = LossyRelay(port, burst_5pct)
    try:
        send = ("%s ! rtpvrawpay ! udpsink host=127.0.0.1 port=%d"
                % (SRC, relay.in_port))
        recv = ("udpsrc address=127.0.0.1 port=%d buffer-size=4194304 "
                "caps=\"%s\" ! rtpvrawdepay ! pinnedshmsink name=sink "
                "socket-path={sock} wait-for-connection=true"
                % (port, RTP_CAPS))
        r, c = run_hop(send, recv)
    finally:
        relay.close()
    print("relay: %d datagrams, %d dropped" % (relay.seen, relay.dropped))
    assert relay.dropped > 0
    # the bursts leave most frames whole
    check_lossy(r, c, mh.expected_checksums(SRC, N), "loss", True)


def case_srt_loss():
    """SRT retransmits what the link lost: with every 20th datagram from the
    sender dropped (5%), frames still arrive intact. The same loss on the
    plain RTP path damages every frame (each frame is ~230 datagrams)."""
    port = mh.free_port()
    relay = LossyRelay(port, lambda n: n % 20 == 0)
    try:
        # latency 1000 ms: the window in which a lost packet may be
        # retransmitted; a retransmission later than that is dropped by SRT
        r, c = run_hop(srt_sender(relay.in_port, 1000),
                       srt_receiver(port, 1000), linger_ms=2500)
    finally:
        relay.close()
    print("relay: %d datagrams, %d dropped" % (relay.seen, relay.dropped))
    assert relay.dropped > 0
    want = mh.expected_checksums(SRC, N)
    intact, damaged, missing = classify(c["frames"], want)
    print("srt-loss: receiver %s (end: %s); consumer %d frames, eos %s; "
          "%d intact, %d damaged, %d missing" % (
              r["stats"], r["end"], len(c["frames"]), c["eos"], len(intact),
              damaged, missing))
    assert c["eos"], "the consumer did not run to the end"
    assert r["stats"]["copies"] == 0, r["stats"]
    assert intact == sorted(intact)
    # Without retransmission no frame would be whole (each is ~230
    # datagrams, every 20th lost: 0.95^230 ~ 1e-5). SRT drops a packet whose
    # retransmission misses the latency window (seen here when other builds
    # load the 2 cores: up to 12 of 45 frames damaged), so the rule is that
    # it retransmitted and frames came through whole, not that all did.
    sent = r["sender"]
    print("sender srtsink stats: %s" % sent)
    assert sent.get("packets-retransmitted", 0) > 0, sent
    assert intact, "no frame came through whole: nothing was retransmitted"
    print("ok srt-loss: %d of %d frames intact through 5%% loss (%d packets "
          "retransmitted), %d damaged, %d missing, copies 0" % (
              len(intact), N, sent["packets-retransmitted"], damaged,
              missing))


def skip(why):
    print("SKIP: %s" % why)
    sys.exit(77)


def case_netem():
    if os.geteuid() != 0:
        skip("needs root (CAP_NET_ADMIN) for a network namespace and tc")
    for tool in ("ip", "tc"):
        if not shutil.which(tool):
            skip("%s not installed" % tool)
    ns = "pfmh-%d" % os.getpid()
    r = subprocess.run(["ip", "netns", "add", ns], capture_output=True,
                       text=True, timeout=30)
    if r.returncode != 0:
        skip("ip netns add failed: %s" % r.stderr.strip())
    try:
        ex = ["ip", "netns", "exec", ns]
        subprocess.run(ex + ["ip", "link", "set", "lo", "up"], check=True,
                       timeout=30)
        r = subprocess.run(ex + ["tc", "qdisc", "add", "dev", "lo", "root",
                                 "netem", "loss", "5%"],
                           capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            skip("tc netem unavailable in the namespace (kernel module "
                 "sch_netem?): %s" % r.stderr.strip())
        port = 5004   # the namespace is ours alone: no one else holds it
        send = "%s ! rtpvrawpay ! udpsink host=127.0.0.1 port=%d" % (SRC, port)
        recv = ("udpsrc address=127.0.0.1 port=%d buffer-size=4194304 "
                "caps=\"%s\" ! rtpvrawdepay ! pinnedshmsink name=sink "
                "socket-path={sock} wait-for-connection=true"
                % (port, RTP_CAPS))
        r, c = run_hop(send, recv, prefix=ex)
        # random 5% of ~230 datagrams per frame: hardly a frame stays whole
        check_lossy(r, c, mh.expected_checksums(SRC, N), "netem", False)
    finally:
        subprocess.run(["ip", "netns", "del", ns], timeout=30)


NEEDS = {
    "rtp-raw": ["rtpvrawpay", "rtpvrawdepay", "udpsink", "udpsrc"],
    "srt": ["rtpvrawpay", "rtpvrawdepay", "srtsink", "srtsrc"],
    "jpeg": ["jpegenc", "jpegdec", "rtpjpegpay", "rtpjpegdepay", "udpsink",
             "udpsrc"],
    "loss": ["rtpvrawpay", "rtpvrawdepay", "udpsink", "udpsrc"],
    "srt-loss": ["rtpvrawpay", "rtpvrawdepay", "srtsink", "srtsrc"],
    "netem": ["rtpvrawpay", "rtpvrawdepay", "udpsink", "udpsrc"],
}


if __name__ == "__main__":
    missing = [e for e in NEEDS[sys.argv[1]] + ["pinnedshmsink", "videotestsrc"]
               if not mh.Gst.ElementFactory.find(e)]
    if missing:
        skip("elements not installed: %s" % ", ".join(missing))
    {"rtp-raw": case_rtp_raw, "srt": case_srt, "jpeg": case_jpeg,
     "loss": case_loss, "srt-loss": case_srt_loss,
     "netem": case_netem}[sys.argv[1]]()
