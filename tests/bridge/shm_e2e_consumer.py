# Process C of tests/cuda/test-shm-e2e.c: a Python node reads a
# GStreamer producer's device frames through DLPack.
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Usage: shm_e2e_consumer.py SOCKET EXPECTED N WIDTH HEIGHT REPORT

pinnedflow.Consumer(device=True, delivery="every-frame") on SOCKET: every
frame must be in the device domain (device 0, RGBA WIDTH x HEIGHT); its
DLPack capsule (kDLCUDA, device 0, shape [H, W, 4], the frame's device
address) is read row by row at its strides (cuMemcpyDtoH on the driver
stand-in) and compared with frame k of EXPECTED (N raw RGBA frames made
by videotestsrc on the CPU). Then: N frames, no VMM handle, reservation
or mapping left, no fd left. REPORT gets one line: "frames N dtod D htod
U dtoh R" (the emulator's copies by direction in this process; R counts
this script's own reads). Exit 0 pass, 1 fail (bridgetest)."""
import gc
import sys

import bridgetest as bt
import pinnedflow
from test_device_frames import Driver, decode_dlpack


def main(argv):
    bt.check(len(argv) == 7, __doc__)
    path, raw, n, w, h, report = (argv[1], argv[2], int(argv[3]),
                                  int(argv[4]), int(argv[5]), argv[6])
    row = w * 4
    with open(raw, "rb") as fh:
        exp = fh.read()
    bt.check(len(exp) == n * row * h, "%d expected bytes" % len(exp))
    drv = Driver()
    fds0 = bt.count_fds()
    q = drv.emu.pfemu_query
    base = {k: q(k) for k in (b"copies.dtod", b"copies.htod",
                              b"copies.dtoh")}
    cons = pinnedflow.Consumer(path, timeout_ms=20000, device=True,
                               delivery="every-frame")
    k = 0
    for f in cons:
        bt.check(f.domain == "device" and f.device == 0, repr(f))
        bt.check(f.format == "RGBA" and f.width == w and f.height == h,
                 repr(f))
        cap = f.__dlpack__()
        data, dev, ndim, shape, strides, _, _, _ = decode_dlpack(cap, False)
        bt.check(dev == (2, 0) and ndim == 3 and shape == [h, w, 4],
                 "%r %d %r" % (dev, ndim, shape))
        bt.check(strides[1:] == [4, 1] and strides[0] >= row,
                 repr(strides))
        bt.check(data == f.device_ptr + f.offsets[0],
                 "DLPack data 0x%x, frame 0x%x + %d" %
                 (data, f.device_ptr, f.offsets[0]))
        got = drv.read(data, strides[0] * (h - 1) + row)
        for r in range(h):
            want = exp[(k * h + r) * row:(k * h + r + 1) * row]
            bt.check(got[r * strides[0]:r * strides[0] + row] == want,
                     "frame %d row %d differs" % (k + 1, r))
        del cap
        f.release()
        k += 1
    bt.check(k == n, "%d frames, want %d" % (k, n))
    cons.close()
    del cons, f
    gc.collect()
    bt.check(drv.vmm_live() == (0, 0, 0), repr(drv.vmm_live()))
    bt.check(bt.count_fds() == fds0, "fds %d, were %d" %
             (bt.count_fds(), fds0))
    with open(report, "w") as fh:
        fh.write("frames %d dtod %d htod %d dtoh %d\n" % (
            k, q(b"copies.dtod") - base[b"copies.dtod"],
            q(b"copies.htod") - base[b"copies.htod"],
            q(b"copies.dtoh") - base[b"copies.dtoh"]))
    print("python: %d device frames through DLPack, byte-exact" % k)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
