# domains_node.py: one copy per domain (docs/cuda.md, "One copy per domain")
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Usage:
  domains_node.py produce SOCKET N W H CPU GPU [DEVICE]
      a producer with enable_domains(): host frames (no DEVICE) or frames
      on CUDA device DEVICE; waits for CPU + GPU consumers (and, for a host
      stream, until the GPU ones named their device), publishes N RGBA
      frames of the pattern below, prints its domain stats
  domains_node.py consume SOCKET N [DEVICE]
      a consumer: on the CPU (no DEVICE), or of device frames on DEVICE
      (Consumer(device=True).set_domain(DEVICE)); reads to EOS, checks
      each against the pattern (device frames read back with cuMemcpyDtoH)
      and prints "frames N bad B domain D"; exit 0 when N frames came, all right

A host producer's GPU consumers share one upload per frame; a device
producer's CPU consumers share one download per frame, its GPU consumers of
DEVICE get its own device frames. The CUDA driver (libcuda.so.1) is reached
with ctypes: on the emulators, LD_LIBRARY_PATH=build/tests/cuda/emu PFEMU_VMM=1.
"""
import ctypes
import sys
import time

import numpy
import pinnedflow


def pattern(w, h, n):
    """pf-camera-node's frame @n: byte (x, y, c) = x + 2y + 3c + 5n."""
    y, x, c = numpy.mgrid[0:h, 0:w, 0:4]
    return ((x + 2 * y + 3 * c + 5 * n) & 0xff).astype(numpy.uint8)


class Cuda(object):
    """The driver API, with DEVICE's primary context current."""

    def __init__(self, device):
        d = ctypes.CDLL("libcuda.so.1")
        d.cuMemcpyDtoH_v2.argtypes = [ctypes.c_void_p, ctypes.c_uint64,
                                      ctypes.c_size_t]
        d.cuMemcpyHtoD_v2.argtypes = [ctypes.c_uint64, ctypes.c_void_p,
                                      ctypes.c_size_t]
        dev, ctx = ctypes.c_int(), ctypes.c_void_p()
        for res in (lambda: d.cuInit(0),
                    lambda: d.cuDeviceGet(ctypes.byref(dev), device),
                    lambda: d.cuDevicePrimaryCtxRetain(ctypes.byref(ctx),
                                                       dev),
                    lambda: d.cuCtxSetCurrent(ctx)):
            if res() != 0:
                raise RuntimeError("CUDA driver: no device %d" % device)
        self.d = d

    def read(self, ptr, n):
        buf = ctypes.create_string_buffer(n)
        if self.d.cuMemcpyDtoH_v2(buf, ptr, n) != 0:
            raise RuntimeError("cuMemcpyDtoH failed")
        return numpy.frombuffer(buf.raw, dtype=numpy.uint8)

    def write(self, ptr, data):
        if self.d.cuMemcpyHtoD_v2(ptr, data.ctypes.data, data.nbytes) != 0:
            raise RuntimeError("cuMemcpyHtoD failed")
        self.d.cuCtxSynchronize()       # complete before publish


def produce(path, n, w, h, cpu, gpu, device=None):
    cuda = Cuda(device) if device is not None else None
    prod = pinnedflow.Producer(path, slot_size=w * h * 4, n_slots=4,
                               device=device)
    prod.set_video("RGBA", w, h, (30, 1))
    prod.enable_domains()
    prod.wait_clients(cpu + gpu, 30000)
    if device is None:                  # the GPU consumers named their device
        while sum(k for _, k in prod.device_domains) < gpu:
            time.sleep(0.001)
    for k in range(n):
        with prod.loan(timeout_ms=5000) as loan:
            if cuda:
                cuda.write(loan.device_ptr, pattern(w, h, k))
            else:
                loan.array()[:] = pattern(w, h, k).reshape(
                    loan.array().shape)
            loan.publish(pts=k)
    prod.send_eos()
    prod.wait_idle(10000)               # host slots back
    for _ in range(10000):              # and every domain's slots
        st = prod.domain_stats
        if (all(d["free_slots"] == d["slots"] for d in st["domains"]) and
                st["host_free_slots"] == st["host_slots"]):
            break
        time.sleep(0.001)
    print("frames %d uploads %d downloads %d" % (st["frames"], st["uploads"],
                                                 st["downloads"]))
    prod.close()


def consume(path, n, device=None):
    cuda = Cuda(device) if device is not None else None
    cons = pinnedflow.Consumer(path, timeout_ms=30000,
                               delivery="every-frame",
                               device=device is not None)
    if cuda:
        cons.set_domain(device)         # the DOMAIN message: my device
    got = bad = 0
    domain = "-"
    while True:                         # to EOS
        f = cons.next(10000)
        if f is None or f is pinnedflow.EOS:
            break
        with f:
            w, h = f.width, f.height
            domain = f.domain
            if f.domain == "device":
                data = cuda.read(f.device_ptr, w * h * 4)
            else:
                data = numpy.asarray(f.array()).reshape(-1)
            bad += not (data == pattern(w, h, f.pts).reshape(-1)).all()
        got += 1
    print("frames %d bad %d domain %s" % (got, bad, domain))
    cons.close()
    return 0 if got == n and bad == 0 else 1


def main(argv):
    if len(argv) >= 8 and argv[1] == "produce":
        produce(argv[2], *[int(a) for a in argv[3:8]],
                device=int(argv[8]) if len(argv) > 8 else None)
        return 0
    if len(argv) >= 4 and argv[1] == "consume":
        return consume(argv[2], int(argv[3]),
                       int(argv[4]) if len(argv) > 4 else None)
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
