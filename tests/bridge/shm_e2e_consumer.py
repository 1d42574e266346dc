# Process C of tests/cuda/test-shm-e2e.c: a Python node reads a
# GStreamer producer's device frames through DLPack.
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Usage: shm_e2e_consumer.py SOCKET EXPECTED N WIDTH HEIGHT FORMAT REPORT

pinnedflow.Consumer(device=True, delivery="every-frame") on SOCKET: every
frame must be in the device domain (device 0, FORMAT WIDTH x HEIGHT); its
DLPack capsule (kDLCUDA, device 0; RGBA: shape [H, W, 4] at the frame's
device address and row stride; NV12: the frame's bytes, 1-D, from its
device address) is read (cuMemcpyDtoH on the driver stand-in) and each
plane's rows, at the frame's offsets and strides, compared with frame k
of EXPECTED (N raw frames made by videotestsrc on the CPU, planes packed). Then: N frames, no VMM handle, reservation
or mapping left, no fd left. REPORT gets one line: "frames N dtod D htod
U dtoh R" (the emulator's copies by direction in this process; R counts
this script's own reads). Exit 0 pass, 1 fail (bridgetest)."""
import gc
import sys

import bridgetest as bt
import pinnedflow
from test_device_frames import Driver, decode_dlpack


def main(argv):
    bt.check(len(argv) == 8, __doc__)
    path, raw, n, w, h, fmt, report = (argv[1], argv[2], int(argv[3]),
                                       int(argv[4]), int(argv[5]), argv[6],
                                       argv[7])
    # (bytes a row, rows) of each plane
    planes = [(w * 4, h)] if fmt == "RGBA" else [(w, h), (w, h // 2)]
    size = sum(b * r for b, r in planes)
    with open(raw, "rb") as fh:
        exp = fh.read()
    bt.check(len(exp) == n * size, "%d expected bytes" % len(exp))
    drv = Driver()
    fds0 = bt.count_fds()
    q = drv.emu.pfemu_query
    c0 = {k: q(k) for k in (b"copies.dtod", b"copies.htod",
                              b"copies.dtoh")}
    cons = pinnedflow.Consumer(path, timeout_ms=20000, device=True,
                               delivery="every-frame")
    k = 0
    for f in cons:
        bt.check(f.domain == "device" and f.device == 0, repr(f))
        bt.check(f.format == fmt and f.width == w and f.height == h,
                 repr(f))
        cap = f.__dlpack__()
        data, dev, ndim, shape, strides, _, _, _ = decode_dlpack(cap, False)
        bt.check(dev == (2, 0), repr(dev))
        if fmt == "RGBA":
            bt.check(ndim == 3 and shape == [h, w, 4] and
                     strides == [f.strides[0], 4, 1],
                     "%d %r %r" % (ndim, shape, strides))
            bt.check(data == f.device_ptr + f.offsets[0],
                     "DLPack data 0x%x, frame 0x%x + %d" %
                     (data, f.device_ptr, f.offsets[0]))
            base = -f.offsets[0]
        else:
            bt.check(ndim == 1 and strides == [1] and shape[0] >= f.size,
                     "%d %r %r" % (ndim, shape, strides))
            bt.check(data == f.device_ptr, "DLPack data 0x%x, frame 0x%x" %
                     (data, f.device_ptr))
            base = 0
        got = drv.read(data, f.size + base)
        e = k * size
        for p, (rb, rows) in enumerate(planes):
            off, stride = f.offsets[p] + base, f.strides[p]
            bt.check(stride >= rb and off + stride * (rows - 1) + rb <=
                     len(got), "plane %d: offset %d stride %d size %d" %
                     (p, off, stride, len(got)))
            for r in range(rows):
                bt.check(got[off + r * stride:off + r * stride + rb] ==
                         exp[e + r * rb:e + (r + 1) * rb],
                         "frame %d plane %d row %d differs" % (k + 1, p, r))
            e += rows * rb
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
            k, q(b"copies.dtod") - c0[b"copies.dtod"],
            q(b"copies.htod") - c0[b"copies.htod"],
            q(b"copies.dtoh") - c0[b"copies.dtoh"]))
    print("python: %d device frames through DLPack, byte-exact" % k)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
