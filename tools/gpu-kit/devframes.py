#!/usr/bin/env python3
# The GPU kit's device-frames-torch step (issue 32, item 4; docs/cuda.md
# "GPU kit"): device frames between two Python processes, no copy.
#
#   devframes.py torch|driver WIDTH HEIGHT N
#
# The producer (this process) spawns the consumer (this script, "consume")
# before it touches CUDA, then makes pinnedflow.Producer(device=0): slots in
# one device segment exported as a POSIX fd. Each frame k (1..N, pts k) is
# a pattern (tests/cuda/test-node-device.c's) written into the loaned slot:
#   torch:  computed on the GPU as a CUDA tensor, copied into the loan seen
#           as a tensor (torch.from_dlpack(loan) for odd k, its
#           __cuda_array_interface__ through torch.as_tensor for even k: both
#           must be at the slot's device address), published with the
#           writing stream synchronised (publish(stream=)).
#   driver: (the emulator rehearsal: no torch) cuMemcpyHtoD from numpy into
#           the loan's __cuda_array_interface__ address, publish(stream=1).
# The consumer, pinnedflow.Consumer(device=True), takes each frame:
#   torch:  torch.from_dlpack(frame): a kDLCUDA tensor on cuda:0 whose
#           data_ptr() is the frame's device address (no copy), compared on
#           the device with the pattern computed there (torch.equal); with
#           CuPy importable, cupy.asarray(frame) (__cuda_array_interface__)
#           at the same address, compared on the device too.
#   driver: the CUDA array interface at the frame's address, read back with
#           cuMemcpyDtoH and compared with numpy.
# Then every frame came back to the producer (free slots = slots, the
# consumer holds none), no device frame skipped or refused, and no segment
# is alive in either process (pinnedflow.live_segments()).
# Output: "name: value" lines; exit 0 pass, 1 fail, 77 after "SKIP:
# PARTIAL: ..." where the driver cannot share device memory as POSIX fds
# (Producer(device=0) fails with ENOTSUP: device attributes 102/103).
import errno
import gc
import os
import subprocess
import sys
import time

import pinnedflow

SLOTS = 4


def fail(msg):
    print("FAIL: %s" % msg, flush=True)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


class Torch(object):
    def __init__(self):
        import torch
        self.torch = torch
        if not torch.cuda.is_available():
            print("NO CUDA DEVICE: torch %s sees no CUDA device"
                  % torch.__version__, flush=True)
            sys.exit(1)
        # the primary context current on this thread before any import
        # of device memory
        torch.zeros(1, device="cuda:0")
        self.cupy_error = None
        self.name = "torch %s on %s" % (torch.__version__,
                                        torch.cuda.get_device_name(0))
        try:
            import cupy
            cupy.cuda.runtime.getDeviceCount()
            self.cupy = cupy
            self.name += ", cupy %s" % cupy.__version__
        except Exception as e:
            self.cupy = None
            self.cupy_why = "%s: %s" % (type(e).__name__, e)

    def pattern(self, k, h, w):
        t = self.torch
        i = t.arange(h * w * 4, dtype=t.int64, device="cuda:0")
        return ((i * 7 + k * 131 + (i >> 11)) & 0xff).to(t.uint8).view(h, w, 4)

    def write(self, loan, k, h, w):
        t = self.torch
        src = self.pattern(k, h, w)
        dst = t.from_dlpack(loan) if k % 2 else t.as_tensor(loan,
                                                             device="cuda:0")
        check(dst.is_cuda and dst.data_ptr() == loan.device_ptr,
              "loan %d as a tensor (%s) is at 0x%x, the slot at 0x%x" % (
                  k, "DLPack" if k % 2 else "CAI", dst.data_ptr(),
                  loan.device_ptr))
        check(tuple(dst.shape) == (h, w, 4), "loan shape %s" % (dst.shape,))
        dst.copy_(src)
        del dst
        # the stream that wrote, synchronised by publish(); 0 is the legacy
        # default stream, which pinnedflow numbers 1 (as DLPack does)
        return t.cuda.current_stream().cuda_stream or 1

    def read(self, frame, h, w):
        t = self.torch
        x = t.from_dlpack(frame)
        check(x.is_cuda and x.device.index == 0, "frame %d: tensor on %s"
              % (frame.pts, x.device))
        check(x.data_ptr() == frame.device_ptr, "frame %d: tensor at 0x%x, "
              "the frame at 0x%x: a copy" % (frame.pts, x.data_ptr(),
                                             frame.device_ptr))
        check(tuple(x.shape) == (h, w, 4) and x.dtype == t.uint8,
              "frame %d: shape %s %s" % (frame.pts, tuple(x.shape), x.dtype))
        want = self.pattern(frame.pts, h, w)
        check(bool(t.equal(x, want)), "frame %d: bytes differ on the device "
              "(%d of %d)" % (frame.pts, int((x != want).sum().item()),
                              x.numel()))
        del x
        if self.cupy is not None:
            # CuPy's failures are the step's too, but torch's checks go on
            # (the consumer fails at the end, naming CuPy's)
            cp = self.cupy
            try:
                a = cp.asarray(frame)
                if a.data.ptr != frame.device_ptr:
                    raise ValueError("cupy array at 0x%x, the frame at 0x%x"
                                     % (a.data.ptr, frame.device_ptr))
                if not bool(cp.array_equal(a, cp.asarray(want))):
                    raise ValueError("cupy sees other bytes")
                del a
                cp.cuda.Stream.null.synchronize()
            except Exception as e:
                self.cupy_error = "frame %d: %s: %s" % (
                    frame.pts, type(e).__name__, e)
                self.cupy = None
        t.cuda.synchronize()


class Driver(object):
    """The emulator rehearsal: the driver (stand-in) through ctypes."""

    def __init__(self):
        import ctypes
        import numpy
        self.ct, self.np = ctypes, numpy
        d = ctypes.CDLL("libcuda.so.1")
        d.cuMemcpyDtoH_v2.argtypes = [ctypes.c_void_p, ctypes.c_uint64,
                                      ctypes.c_size_t]
        d.cuMemcpyHtoD_v2.argtypes = [ctypes.c_uint64, ctypes.c_void_p,
                                      ctypes.c_size_t]
        res = d.cuInit(0)
        if res != 0:
            print("NO CUDA DEVICE: cuInit: %d" % res, flush=True)
            sys.exit(1)
        ctx = ctypes.c_void_p()
        check(d.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0,
              "cuDevicePrimaryCtxRetain")
        check(d.cuCtxSetCurrent(ctx) == 0, "cuCtxSetCurrent")
        self.d = d
        self.name = "the driver through ctypes (no torch)"
        self.cupy = None
        self.cupy_why = "not tried"
        self.cupy_error = None

    def pattern(self, k, h, w):
        np = self.np
        i = np.arange(h * w * 4, dtype=np.uint64)
        return ((i * 7 + k * 131 + (i >> 11)) & 0xff).astype(np.uint8)

    def write(self, loan, k, h, w):
        src = self.pattern(k, h, w)
        ptr = loan.__cuda_array_interface__["data"][0]
        check(ptr == loan.device_ptr, "loan CAI at 0x%x" % ptr)
        check(self.d.cuMemcpyHtoD_v2(ptr, src.ctypes.data, src.nbytes) == 0,
              "cuMemcpyHtoD")
        return 1

    def read(self, frame, h, w):
        iface = frame.__cuda_array_interface__
        ptr = iface["data"][0]
        check(ptr == frame.device_ptr, "frame %d: CAI at 0x%x, frame at 0x%x"
              % (frame.pts, ptr, frame.device_ptr))
        check(tuple(iface["shape"]) == (h, w, 4), "CAI shape %s"
              % (iface["shape"],))
        buf = self.ct.create_string_buffer(h * w * 4)
        check(self.d.cuMemcpyDtoH_v2(buf, ptr, h * w * 4) == 0, "DtoH")
        got = self.np.frombuffer(buf.raw, dtype=self.np.uint8)
        check(self.np.array_equal(got, self.pattern(frame.pts, h, w)),
              "frame %d: bytes differ" % frame.pts)


def backend(name):
    return Torch() if name == "torch" else Driver()


def consume(kind, sock, w, h, n):
    be = backend(kind)
    cons = pinnedflow.Consumer(sock, timeout_ms=20000, device=True)
    seen, hops, t_first, t_last = 0, [], None, None
    access = None
    for frame in cons:
        with frame:
            seen += 1
            check(frame.domain == "device", "frame %d in the %s domain"
                  % (seen, frame.domain))
            check(frame.pts == seen, "frame %d has pts %s" % (seen, frame.pts))
            if access is None:
                access = ("read-only" if frame.readonly else
                          "read-write (read-only refused by the driver)")
            be.read(frame, h, w)
            hops.append(frame.recv_time - frame.send_time)
            t_first = t_first or frame.recv_time
            t_last = frame.recv_time
    ds = cons.device_stats
    # a refused import first: its reason says more than the count
    check(ds["frames_skipped"] == 0 and ds["segments_refused"] == 0,
          "device frames skipped/refused after %d frames seen: %s"
          % (seen, ds))
    check(seen == n, "%d frames, want %d" % (seen, n))
    check(cons.held == 0, "%d frames held at the end" % cons.held)
    cons.close()
    frame = cons = None
    gc.collect()
    check(pinnedflow.live_segments() == 0, "%d segments alive in the "
          "consumer" % pinnedflow.live_segments())
    hops.sort()
    print("consumer: %s; mapping %s; %d frames taken on the device with no "
          "copy and compared there" % (be.name, access, seen))
    if be.cupy is None and kind == "torch":
        print("consumer: CuPy not checked: %s" % be.cupy_why)
    print("consumer_hop_us: p50 %.1f (publish -> received, while checking)"
          % (hops[len(hops) // 2] / 1000.0))
    if n > 1 and t_last > t_first:
        print("consumer_fps: %.0f (with the device compare)"
              % ((n - 1) * 1e9 / (t_last - t_first)))
    sys.stdout.flush()
    if be.cupy_error:
        fail("CuPy (torch's checks passed): %s" % be.cupy_error)


def produce(kind, w, h, n):
    sock = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                        "gpukit-devframes-%d.sock" % os.getpid())
    # the consumer first, before any CUDA in this process
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__),
                              "consume", kind, sock, str(w), str(h), str(n)])
    try:
        be = backend(kind)
        try:
            prod = pinnedflow.Producer(sock, slot_size=w * h * 4,
                                       n_slots=SLOTS, device=0)
        except pinnedflow.PinnedflowError as e:
            if e.errno != errno.ENOTSUP:
                raise
            # the driver says the device cannot share virtual memory as
            # POSIX fds (attributes 102/103): a named partial result
            print("SKIP: PARTIAL: %s" % e, flush=True)
            sys.exit(77)
        prod.set_video("RGBA", w, h, (30, 1))
        prod.wait_clients(1, 20000)
        t0 = time.monotonic()
        for k in range(1, n + 1):
            loan = prod.loan(timeout_ms=20000)
            check(loan.domain == "device", "loan %d: %s" % (k, loan.domain))
            stream = be.write(loan, k, h, w)
            got = loan.publish(pts=k, stream=stream)
            check(got == 1, "frame %d reached %d consumers" % (k, got))
        prod.wait_idle(20000)
        secs = time.monotonic() - t0
        check(prod.free_slots == prod.n_slots, "%d of %d slots free at the "
              "end" % (prod.free_slots, prod.n_slots))
        prod.send_eos()
        rc = child.wait(timeout=30)
        check(rc == 0, "the consumer process failed (exit %d)" % rc)
        prod.close()
        loan = prod = None              # the segment goes with its last user
        gc.collect()
        check(pinnedflow.live_segments() == 0, "%d segments alive in the "
              "producer" % pinnedflow.live_segments())
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    print("producer: %s; %d frames %dx%d RGBA written into loaned device "
          "slots, all released back, no segment alive in either process"
          % (be.name, n, w, h))
    print("producer_fps: %.0f (write, publish, consumer compare, release)"
          % (n / secs))


def main():
    a = sys.argv[1:]
    if len(a) == 6 and a[0] == "consume":
        consume(a[1], a[2], int(a[3]), int(a[4]), int(a[5]))
        return
    if len(a) != 4 or a[0] not in ("torch", "driver"):
        sys.exit("usage: devframes.py torch|driver WIDTH HEIGHT N")
    produce(a[0], int(a[1]), int(a[2]), int(a[3]))


if __name__ == "__main__":
    main()
