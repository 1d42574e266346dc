#!/usr/bin/python3
# The soak of issue 26, shortened: a live 1080p30 camera (videotestsrc
# is-live=true into pinnedshmsink, default properties), one newest-frame
# consumer in this process (the Python binding) that times the gap between
# its frames, and short-lived consumers (gst-launch-1.0 pinnedshmsrc, a
# random delivery: auto, every-frame or newest-frame) that exit, are killed,
# or are stopped with SIGSTOP for up to 3 s, one after another, as a
# debugger or an overloaded host does. Prints the largest gap, the gaps over
# 200 ms (each with the frames published meanwhile, by the producer's frame
# numbers, and the camera's PTS step: 0 published means the camera or the
# producer's render was late, not the delivery), and what the churn did.
# No assertion: a measurement.
#
#   bench/soak/live-soak.py BUILD_DIR [SECONDS] [--size WxH] [--seed N]
#       [--sink-props "live-max-lag=-1 ..."]
#
# BUILD_DIR: a meson build of this tree (its plugin, library and the Python
# binding of the source tree beside it are used). Needs gst-launch-1.0.
# SPDX-License-Identifier: LGPL-2.1-or-later
import argparse
import ast
import os
import random
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("seconds", type=float, nargs="?", default=120.0)
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--seed", type=int, default=26)
    ap.add_argument("--sink-props", default="")
    ap.add_argument("--no-churn", action="store_true",
                    help="no short-lived consumers: the machine's own noise")
    ap.add_argument("--idle-churn", action="store_true",
                    help="the same churn of gst-launch-1.0 processes, but "
                    "fakesrc ! fakesink, not connected: what the churn's "
                    "processes cost the machine, without the transport")
    ap.add_argument("--library", default=None,
                    help="libpinnedflow.so for the binding "
                    "(default: BUILD/lib/pinnedflow/libpinnedflow.so)")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    w, h = a.size.split("x")
    rnd = random.Random(a.seed)

    env = dict(os.environ)
    env["GST_PLUGIN_PATH_1_0"] = os.path.join(build, "gst", "shm")
    env["GST_PLUGIN_PATH"] = env["GST_PLUGIN_PATH_1_0"]
    env["LD_LIBRARY_PATH"] = ":".join([
        os.path.join(build, "lib", "pinnedflow"),
        os.path.join(build, "gst-libs", "gst", "pinnedflow"),
        env.get("LD_LIBRARY_PATH", "")])
    os.environ["PINNEDFLOW_LIBRARY"] = a.library or os.path.join(
        build, "lib", "pinnedflow", "libpinnedflow.so")
    sys.path.insert(0, os.path.join(SRC, "bridge", "python"))
    import pinnedflow

    tmp = tempfile.mkdtemp(prefix="live-soak-")
    sock = os.path.join(tmp, "cam.sock")
    prod = subprocess.Popen(
        ["gst-launch-1.0", "-q", "videotestsrc", "is-live=true",
         "pattern=ball", "!",
         "video/x-raw,format=RGBA,width=%s,height=%s,framerate=30/1" % (w, h),
         "!", "pinnedshmsink", "socket-path=" + sock] +
        shlex.split(a.sink_props),
        env=env, stdout=subprocess.DEVNULL)
    churn = {"spawned": 0, "exited": 0, "killed": 0, "stopped": 0,
             "every-frame": 0, "newest-frame": 0, "auto": 0}
    children = []
    stop = threading.Event()

    def churner():
        while not stop.is_set():
            children[:] = [c for c in children if c.poll() is None]
            if len(children) < 2:
                d = rnd.choice(["auto", "every-frame", "newest-frame"])
                fate = rnd.choice(["exit", "kill", "stop"])
                n = rnd.randint(5, 60)
                if a.idle_churn:
                    line = ["fakesrc", "num-buffers=%d" % (n * 30),
                            "sizetype=fixed", "datarate=%d" % (30 * 1000),
                            "!", "fakesink", "sync=true"]
                else:
                    line = ["pinnedshmsrc", "socket-path=" + sock,
                            "delivery=" + d, "num-buffers=%d" % n, "!",
                            "fakesink"]
                c = subprocess.Popen(
                    ["gst-launch-1.0", "-q"] + line,
                    env=env, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL)
                children.append(c)
                churn["spawned"] += 1
                churn[d] += 1
                threading.Thread(target=fate_of, args=(c, fate),
                                 daemon=True).start()
            stop.wait(rnd.uniform(0.2, 1.0))

    def fate_of(c, fate):
        time.sleep(rnd.uniform(0.3, 1.5))
        if fate == "stop" and c.poll() is None:
            churn["stopped"] += 1
            c.send_signal(signal.SIGSTOP)
            time.sleep(rnd.uniform(0.2, 3.0))
            c.send_signal(signal.SIGCONT)
            time.sleep(rnd.uniform(0.0, 1.0))
        if fate in ("kill", "stop") and c.poll() is None:
            churn["killed"] += 1
            c.kill()
        try:
            c.wait(timeout=10)
        except subprocess.TimeoutExpired:
            c.kill()
            c.wait()
        if fate == "exit":
            churn["exited"] += 1

    cons = None
    gaps = []
    big_info = []
    last_seq = last_pts = None
    frames = 0
    churn_pid = None
    rfd = None
    try:
        cons = pinnedflow.Consumer(sock, timeout_ms=10000,
                                   delivery="newest-frame")
        if not a.no_churn:
            # the churn in a process of its own: its forks and threads
            # never delay the measuring loop (the GIL)
            rfd, wfd = os.pipe()
            churn_pid = os.fork()
            if churn_pid == 0:
                os.close(rfd)
                signal.signal(signal.SIGTERM, lambda *x: stop.set())
                churner()
                for c in children:
                    if c.poll() is None:
                        c.send_signal(signal.SIGCONT)
                        c.kill()
                        c.wait()
                os.write(wfd, repr(churn).encode())
                os._exit(0)
            os.close(wfd)
        t_end = time.monotonic() + a.seconds
        last = None
        while time.monotonic() < t_end:
            f = cons.next(1000)
            now = time.monotonic()
            if f is None:
                continue
            if f is pinnedflow.EOS:
                break
            seq, pts = f.seq, f.pts
            f.release()
            frames += 1
            if last is not None:
                gaps.append(now - last)
                if now - last > 0.2:
                    # which side was late: frames published meanwhile
                    # (seq delta > 1: the delivery) or none (1: the camera
                    # or the producer's render), and the camera's own
                    # clock between the two (pts delta)
                    big_info.append((now - last, seq - last_seq,
                                     (pts - last_pts) if pts is not None and
                                     last_pts is not None else None))
            last, last_seq, last_pts = now, seq, pts
    finally:
        if churn_pid:
            os.kill(churn_pid, signal.SIGTERM)
            data = b""
            while True:
                b = os.read(rfd, 4096)
                if not b:
                    break
                data += b
            os.waitpid(churn_pid, 0)
            if data:
                churn = ast.literal_eval(data.decode())
        if cons is not None:
            cons.close()
        prod.send_signal(signal.SIGINT)
        try:
            prod.wait(timeout=10)
        except subprocess.TimeoutExpired:
            prod.kill()
            prod.wait()
        try:
            os.unlink(sock)
        except OSError:
            pass
        os.rmdir(tmp)

    big = sorted((g for g in gaps if g > 0.2), reverse=True)
    print("live-soak: %.0f s, %s at 30 fps, sink props [%s]%s"
          % (a.seconds, a.size, a.sink_props,
             " (idle churn: not connected)" if a.idle_churn else ""))
    print("  newest-frame consumer: %d frames (%.1f fps), largest gap %.0f ms,"
          " %d gaps over 200 ms%s" % (
              frames, frames / a.seconds, max(gaps or [0]) * 1000, len(big),
              (" (largest: %s ms)" % ", ".join(
                  "%.0f" % (g * 1000) for g in big[:8])) if big else ""))
    for gap, dseq, dpts in sorted(big_info, reverse=True)[:8]:
        print("    gap %.0f ms: %s frames published meanwhile, camera clock "
              "+%s ms" % (gap * 1000, dseq - 1,
                          "?" if dpts is None else "%.0f" % (dpts / 1e6)))
    print("  churn: %(spawned)d consumers (auto %(auto)d, every-frame "
          "%(every-frame)d, newest-frame %(newest-frame)d): %(exited)d "
          "exited, %(stopped)d stopped (SIGSTOP up to 3 s), %(killed)d "
          "killed" % churn)
    return 0


if __name__ == "__main__":
    sys.exit(main())
