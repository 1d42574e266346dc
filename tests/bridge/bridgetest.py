# Helpers of the bridge suite's Python tests: temp dir, children, paths.
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Children get PR_SET_PDEATHSIG(SIGKILL) and are killed on exit; the temp
dir is removed on exit, also when a check fails or SIGTERM arrives."""

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile

BUILD = os.environ.get("PINNEDFLOW_BUILD_ROOT", "")
SOURCE = os.environ.get("PINNEDFLOW_SOURCE_ROOT", "")
GST_LAUNCH = shutil.which("gst-launch-1.0") or "gst-launch-1.0"

_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1


def _pdeathsig():
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class Env(object):
    """with Env() as env: env.path("x.sock"), env.spawn([...])"""

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="pf-bridge-py-")
        self.children = []
        signal.signal(signal.SIGTERM, self._on_term)
        return self

    def _on_term(self, sig, frame):
        self.cleanup()
        os._exit(128 + sig)

    def path(self, name):
        return os.path.join(self.dir, name)

    def spawn(self, argv, **kw):
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
        p = subprocess.Popen(argv, preexec_fn=_pdeathsig, **kw)
        self.children.append(p)
        return p

    def gst(self, pipeline, **kw):
        """gst-launch-1.0 -q with a pipeline string (split on spaces)."""
        return self.spawn([GST_LAUNCH, "-q"] + pipeline.split(), **kw)

    def finish(self, p, timeout=60, what="child"):
        """Waits for @p; fails (with its output) unless it exits 0."""
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            fail("%s timed out\nstdout: %s\nstderr: %s" % (what, out, err))
        if p.returncode != 0:
            fail("%s exited %d\nstdout: %s\nstderr: %s"
                 % (what, p.returncode, out, err))
        return out.decode(errors="replace"), err.decode(errors="replace")

    def cleanup(self):
        for p in self.children:
            if p.poll() is None:
                p.kill()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    pass
        self.children = []
        shutil.rmtree(self.dir, ignore_errors=True)

    def __exit__(self, *exc):
        self.cleanup()
        return False


def fail(msg):
    raise AssertionError(msg)


def check(cond, msg="check failed"):
    if not cond:
        fail(msg)


def count_fds():
    return len(os.listdir("/proc/self/fd")) - 1


def tool(name):
    """A binary of the build (examples live in bridge/)."""
    return os.path.join(BUILD, "bridge", name)


def pattern(width, height, n, channels=4):
    """The example cameras' frame n: (x + 2y + 3c + 5n) & 0xff."""
    import numpy
    y, x, c = numpy.ogrid[0:height, 0:width, 0:channels]
    return ((x + 2 * y + 3 * c + 5 * n) & 0xff).astype(numpy.uint8)


def run_cases(cases):
    """Runs the case named by argv[1]."""
    if len(sys.argv) != 2 or sys.argv[1] not in cases:
        print("usage: %s %s" % (sys.argv[0], "|".join(sorted(cases))))
        return 2
    cases[sys.argv[1]]()
    print("ok", sys.argv[1])
    return 0
