# Install suite: a producer/consumer round trip through an installed
# pinnedflow package, run by the venv's interpreter (see test_pip.py).
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Usage: pip_roundtrip.py EXPECTED_PACKAGE_DIR EXPECTED_LIBRARY

Checks that `import pinnedflow` came from EXPECTED_PACKAGE_DIR, that the
libpinnedflow mapped into this process is EXPECTED_LIBRARY, and that 8
frames cross from a Producer to a Consumer byte for byte."""
import os
import sys
import tempfile

import numpy

import pinnedflow


def mapped_library():
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f
                 if "libpinnedflow.so" in line}
    assert len(paths) == 1, paths
    return os.path.realpath(paths.pop())


def main():
    want_pkg, want_lib = sys.argv[1], sys.argv[2]
    got_pkg = os.path.dirname(os.path.realpath(pinnedflow.__file__))
    assert got_pkg == os.path.realpath(want_pkg), (got_pkg, want_pkg)
    got_lib = mapped_library()
    assert got_lib == os.path.realpath(want_lib), (got_lib, want_lib)

    d = tempfile.mkdtemp(prefix="pf-install-")
    sock = os.path.join(d, "rt.sock")
    prod = pinnedflow.Producer(sock, slot_size=64 * 48 * 4, n_slots=2)
    prod.set_video("RGBA", 64, 48, (30, 1))
    cons = pinnedflow.Consumer(sock, timeout_ms=5000)
    prod.wait_clients(1, 5000)
    for n in range(8):
        want = numpy.full((48, 64, 4), n * 29 % 256, dtype=numpy.uint8)
        want[n, :, 0] = 255 - n
        with prod.loan(timeout_ms=5000) as loan:
            loan.array()[:] = want
            assert loan.publish(pts=n) == 1
        frame = cons.next(5000)
        assert isinstance(frame, pinnedflow.Frame), frame
        with frame:
            assert frame.pts == n, frame.pts
            assert numpy.array_equal(frame.array(), want), n
    prod.send_eos()
    assert cons.next(5000) is pinnedflow.EOS
    cons.close()
    prod.close()
    os.rmdir(d)
    print("round trip: 8 frames through %s with %s" % (got_pkg, got_lib))


if __name__ == "__main__":
    main()
