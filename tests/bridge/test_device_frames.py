#!/usr/bin/env python3
# Device frames in Python nodes (issue 32, item 4; docs/cuda.md "Device
# frames in nodes"), on the driver emulator's virtual memory (PFEMU_VMM=1):
#   consume: a C node producer with device slots (tests/cuda/test-node-device
#     produce) -> pinnedflow.Consumer(device=True): every frame in the
#     device domain, read back byte-exact through the pointers of its DLPack
#     capsules (decoded from the specification), its
#     __cuda_array_interface__ and its Arrow device array (the spec-only
#     consumer arrow-consumer.c); every host-only path refused (TypeError,
#     ValueError for the upload engine); the frame goes back only when its
#     last borrower died; nothing left (holds, segments, mappings, fds).
#   produce: pinnedflow.Producer(device=0) loans device slots written
#     through their __cuda_array_interface__ (cuMemcpyHtoD) and published
#     after cuStreamSynchronize (publish(stream=1)) -> a C node consumer
#     process (test-node-device consume) that checks every byte.
#   host: Consumer(device=True) of a host producer gets host frames as
#     before (array(), numpy, DLPack kDLCPU), no device interface on them.
#   novmm: this process's driver has no virtual memory support: the
#     consumer asked for device frames, the segment is refused with the
#     reason, each frame released unseen and counted; no crash, no leak.
#   domains: one copy per domain in Python: Producer.enable_domains() with
#     a Consumer(device=True) that set_domain(0) and a host Consumer, in one
#     process: the device consumer gets every frame in the device domain,
#     byte-exact (cuMemcpyDtoH), the host one in host memory; domain_stats
#     count one upload per frame; nothing left.
#   download: Producer(device=0).enable_domains() with a Consumer(device=
#     True) that set_domain(0) and a host Consumer, in one process: the
#     device consumer gets the producer's device frame (no copy: the
#     emulator counts no cuMemcpyDtoH but the test's reads), the host one
#     the frame downloaded once (domain_stats: one download per frame,
#     the emulator's cuMemcpyDtoH count agrees), byte-exact; nothing left.
#   gst-sink: a GStreamer producer, videotestsrc ! cudaupload (nvcodec) !
#     video/x-raw(memory:CUDAMemory) ! pinnedshmsink (tests/cuda/
#     test-shm-device produce-cuda: one device copy per frame on 1.22, none
#     on 1.24+) -> Consumer(device=True): every frame in the device domain,
#     byte-exact row by row (cuMemcpyDtoH at its device address) against
#     the same videotestsrc frames made by gst-launch-1.0; nothing left.
#     Skipped (77) where nvcodec's cudaupload is not registered.
# torch (CPU) cannot take kDLCUDA: it is not tried.
import ctypes
import gc
import os
import subprocess
import sys
import time

import numpy

import bridgetest as bt
import pinnedflow
from pinnedflow import _export
import test_export as tx

W, H, N = 256, 128, 6
FRAME = W * H * 4


def pattern(k, n=FRAME):
    """tests/cuda/test-node-device.c's pattern of frame @k."""
    i = numpy.arange(n, dtype=numpy.uint64)
    return ((i * 7 + k * 131 + (i >> 11)) & 0xff).astype(numpy.uint8)


def helper():
    return os.path.join(bt.BUILD, "tests", "cuda", "test-node-device")


class Driver(object):
    """The driver stand-in (libcuda.so.1 on LD_LIBRARY_PATH) with a context
    current on device 0, and the emulator's counters."""

    def __init__(self):
        d = ctypes.CDLL("libcuda.so.1")
        self.d = d
        d.cuMemcpyDtoH_v2.argtypes = [ctypes.c_void_p, ctypes.c_uint64,
                                      ctypes.c_size_t]
        d.cuMemcpyHtoD_v2.argtypes = [ctypes.c_uint64, ctypes.c_void_p,
                                      ctypes.c_size_t]
        bt.check(d.cuInit(0) == 0)
        ctx = ctypes.c_void_p()
        bt.check(d.cuCtxCreate_v2(ctypes.byref(ctx), 0, 0) == 0)
        self.emu = tx.emulator()

    def read(self, ptr, n):
        buf = ctypes.create_string_buffer(n)
        res = self.d.cuMemcpyDtoH_v2(buf, ptr, n)
        bt.check(res == 0, "cuMemcpyDtoH: %d" % res)
        return buf.raw

    def write(self, ptr, data):
        res = self.d.cuMemcpyHtoD_v2(ptr, data, len(data))
        bt.check(res == 0, "cuMemcpyHtoD: %d" % res)

    def vmm_live(self):
        q = self.emu.pfemu_query
        return tuple(q(k) for k in (b"live.vmm.handles",
                                    b"live.vmm.reservations",
                                    b"live.vmm.mappings"))


def decode_dlpack(cap, versioned):
    """(data, device, ndim, shape, strides, read-only, deleter address) of
    a DLPack capsule, read as the specification lays it out."""
    name = "dltensor_versioned" if versioned else "dltensor"
    p = tx.capsule_ptr(cap, name)
    ro = False
    if versioned:
        major = ctypes.c_uint32.from_address(p).value
        bt.check(major == 1, "DLPack major %d" % major)
        ro = bool(ctypes.c_uint64.from_address(p + 24).value & 1)
        deleter = ctypes.c_void_p.from_address(p + 16).value
        t = p + 32
    else:
        t = p
        deleter = ctypes.c_void_p.from_address(p + 56).value
    data = ctypes.c_void_p.from_address(t).value
    dev_type, dev_id, ndim = (ctypes.c_int32 * 3).from_address(t + 8)
    shape_p = ctypes.c_void_p.from_address(t + 24).value
    strides_p = ctypes.c_void_p.from_address(t + 32).value
    shape = list((ctypes.c_int64 * ndim).from_address(shape_p))
    strides = list((ctypes.c_int64 * ndim).from_address(strides_p))
    return data, (dev_type, dev_id), ndim, shape, strides, ro, p, deleter


def expect_type_error(fn, what):
    try:
        fn()
    except TypeError as e:
        bt.check("device memory" in str(e) or "device frame" in str(e),
                 "%s: %s" % (what, e))
        return
    bt.fail("%s accepted a device frame" % what)


def case_consume():
    fds0 = bt.count_fds()
    with bt.Env() as env:
        path = env.path("dev.sock")
        prod = env.spawn([helper(), "produce", path, str(N)])
        drv = Driver()
        import pinnedflow.cuda as pfcuda
        up = pfcuda.Uploader()
        cons = pinnedflow.Consumer(path, timeout_ms=20000, device=True,
                                   delivery="every-frame")
        consumer = tx.arrow_consumer()
        held_caps = []
        k = 0
        for f in cons:
            k += 1
            want = pattern(k).tobytes()
            bt.check(f.pts == k, "pts %r, want %d" % (f.pts, k))
            bt.check(f.domain == "device" and f.device == 0, repr(f))
            bt.check(f.readonly and f.device_ptr and len(f.device_uuid) == 16)
            bt.check(f.__dlpack_device__() == (2, 0))
            # host-only paths
            expect_type_error(f.array, "array()")
            expect_type_error(lambda: f.buffer, "buffer")
            expect_type_error(lambda: f.plane(0), "plane()")
            expect_type_error(f.chunks, "chunks()")
            expect_type_error(f.borrow, "borrow()")
            expect_type_error(lambda: numpy.asarray(f), "numpy.asarray")
            expect_type_error(f.__arrow_c_array__, "__arrow_c_array__")
            try:
                numpy.from_dlpack(f)
                bt.fail("numpy took a kDLCUDA frame")
            except (BufferError, RuntimeError, TypeError, ValueError):
                pass
            try:
                up.upload(f)
                bt.fail("the upload engine took a device frame")
            except ValueError as e:
                bt.check("device memory" in str(e), str(e))
            for bad in ({"stream": 0}, {"dl_device": (1, 0)},
                        {"copy": True}):
                try:
                    f.__dlpack__(**bad)
                    bt.fail("__dlpack__(%r) accepted" % bad)
                except BufferError:
                    pass

            # DLPack, both versions, with the consumer's stream: the
            # device address, read back byte-exact
            for versioned, stream in ((True, None), (False, 2), (True, -1)):
                cap = f.__dlpack__(stream=stream, max_version=(1, 0)
                                   if versioned else None)
                data, dev, ndim, shape, strides, ro, _, _ = decode_dlpack(
                    cap, versioned)
                bt.check(dev == (2, 0) and ndim == 3, "%r %d" % (dev, ndim))
                bt.check(shape == [H, W, 4] and strides == [W * 4, 4, 1])
                bt.check(data == f.device_ptr)
                bt.check(ro == versioned, "read-only flag")
                bt.check(drv.read(data, FRAME) == want,
                         "DLPack bytes differ, frame %d" % k)
                del cap

            # __cuda_array_interface__ version 3
            cai = f.__cuda_array_interface__
            bt.check(cai["version"] == 3 and cai["stream"] is None, cai)
            bt.check(cai["data"] == (f.device_ptr, True), cai)
            bt.check(cai["shape"] == (H, W, 4) and cai["typestr"] == "|u1")
            bt.check(cai["strides"] == (W * 4, 4, 1))
            bt.check(drv.read(cai["data"][0], FRAME) == want)

            # Arrow C Device, read by the spec-only consumer (no sync event:
            # the frame was complete when published)
            schema, array = f.__arrow_c_device_array__()
            ex = tx.ArrowExpect(device_type=2, width=W, height=H,
                                n_planes=1, format=b"RGBA", bytes=want,
                                size=len(want))
            d2h = ctypes.CFUNCTYPE(
                ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
                ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t,
                ctypes.c_size_t, ctypes.c_int)(
                    lambda dst, dp, src, sp, w, h, kind:
                    drv.d.cuMemcpyDtoH_v2(dst, src, w) if h == 1 else 1)
            ex.d2h = ctypes.cast(d2h, ctypes.c_void_p)
            ex.event_sync = None
            tx.import_arrow(consumer, schema, array, True, ex)
            bt.check(ex.data_seen == f.device_ptr)
            del schema, array

            # lifetime: borrowers keep the frame after release()
            if k == 1:
                cap = f.__dlpack__(max_version=(1, 0))
                cb = f.cuda_borrow()
                f.release()
                bt.check(cons.held == 1, "released under its borrowers")
                bt.check(drv.read(cb.__cuda_array_interface__["data"][0],
                                  64) == want[:64])
                del cb
                gc.collect()
                bt.check(cons.held == 1, "released under a capsule")
                del cap
                gc.collect()
                bt.check(cons.held == 0, "not released after the last one")
                try:
                    f.__cuda_array_interface__
                    bt.fail("a released device frame lent itself out")
                except ValueError:
                    pass
            elif k == 2:
                # a consumed capsule: released by the consumer's deleter
                cap = f.__dlpack__()
                _, _, _, _, _, _, p, deleter = decode_dlpack(cap, False)
                setname = ctypes.pythonapi.PyCapsule_SetName
                setname.argtypes = [ctypes.py_object, ctypes.c_char_p]
                used = ctypes.create_string_buffer(b"used_dltensor")
                setname(cap, used)
                held_caps.append((cap, used))
                f.release()
                bt.check(cons.held == 1)
                ctypes.CFUNCTYPE(None, ctypes.c_void_p)(deleter)(p)
                bt.check(cons.held == 0)
            elif k == 3:
                # the consumer's stream, as torch.from_dlpack passes it: a
                # kernel reading 150 ms late on it has completed when the
                # frame went back (the emulator's late reader)
                s = ctypes.c_void_p()
                bt.check(drv.d.cuStreamCreate(ctypes.byref(s), 1) == 0)
                reads0 = drv.emu.pfemu_query(b"reads")
                out = ctypes.create_string_buffer(W * 4)
                drv.emu.pfemu_stream_read.argtypes = [
                    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                    ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p,
                    ctypes.c_long]
                bt.check(drv.emu.pfemu_stream_read(
                    s, f.device_ptr, W * 4, W * 4, 1, out, 150000) == 0)
                cap = f.__dlpack__(stream=s.value)
                f.release()
                bt.check(cons.held == 1)
                bt.check(drv.emu.pfemu_query(b"reads") == reads0)
                del cap                 # the tensor dies: the release waits
                gc.collect()
                bt.check(cons.held == 0)
                bt.check(drv.emu.pfemu_query(b"reads") == reads0 + 1,
                         "released before the reader's stream was done")
                bt.check(out.raw == want[:W * 4])
                bt.check(drv.d.cuStreamDestroy_v2(s) == 0)
            else:
                f.release()
        bt.check(k == N, "%d frames, want %d" % (k, N))
        bt.check(cons.device_stats["segments_refused"] == 0)
        del held_caps, f
        cons.close()                    # the producer waits for it
        env.finish(prod, what="the C device producer")
        up.close()
        gc.collect()
        bt.check(_export.count_live() == 0, "%d holds" % _export.count_live())
        bt.check(pinnedflow.live_segments() == 0)
        bt.check(drv.vmm_live() == (0, 0, 0), repr(drv.vmm_live()))
    bt.check(bt.count_fds() <= fds0 + 2, "fds %d -> %d (the driver's)"
             % (fds0, bt.count_fds()))


def case_produce():
    with bt.Env() as env:
        path = env.path("dev.sock")
        drv = Driver()
        prod = pinnedflow.Producer(path, slot_size=FRAME, n_slots=3,
                                   device=0)
        bt.check(prod.device == 0)
        prod.set_video("RGBA", W, H, (30, 1))
        cons = env.spawn([helper(), "consume", path, str(N)])
        prod.wait_clients(1, 20000)
        for k in range(1, N + 1):
            with prod.loan(timeout_ms=20000) as loan:
                bt.check(loan.domain == "device" and loan.device == 0)
                bt.check(loan.__dlpack_device__() == (2, 0))
                for what in (lambda: loan.buffer, loan.array,
                             lambda: loan.plane(0)):
                    try:
                        what()
                        bt.fail("a Loan gave a host view of device memory")
                    except TypeError:
                        pass
                del what
                cai = loan.__cuda_array_interface__
                bt.check(cai["data"] == (loan.device_ptr, False), cai)
                bt.check(cai["shape"] == (H, W, 4) and cai["version"] == 3)
                cap = loan.__dlpack__(max_version=(1, 0))
                data, dev, _, shape, _, ro, _, _ = decode_dlpack(cap, True)
                bt.check(data == loan.device_ptr and dev == (2, 0) and
                         not ro and shape == [H, W, 4])
                del cap
                drv.write(cai["data"][0], pattern(k).tobytes())
                n = loan.publish(pts=k, stream=1)
                bt.check(n == 1, "published to %d" % n)
                try:
                    loan.__cuda_array_interface__
                    bt.fail("a published loan lent itself out")
                except ValueError:
                    pass
        prod.send_eos()
        env.finish(cons, what="the C device consumer")
        prod.wait_idle(20000)
        prod.close()
        del prod, loan                  # the segment goes with its last user
        gc.collect()
        bt.check(_export.count_live() == 0)
        bt.check(pinnedflow.live_segments() == 0)
        bt.check(drv.vmm_live() == (0, 0, 0), repr(drv.vmm_live()))


def case_novmm():
    with bt.Env() as env:
        path = env.path("dev.sock")
        child_env = dict(os.environ, PFEMU_VMM="1")
        os.environ.pop("PFEMU_VMM", None)      # this process: no VMM
        prod = env.spawn([helper(), "produce", path, str(N)], env=child_env)
        Driver()
        cons = pinnedflow.Consumer(path, timeout_ms=20000, device=True,
                                   delivery="every-frame")
        frames = list(cons)
        bt.check(frames == [], "%d frames" % len(frames))
        st = cons.device_stats
        bt.check(st["segments_refused"] == 1 and st["frames_skipped"] == N,
                 repr(st))
        bt.check("virtual memory" in st["reason"], st["reason"])
        cons.close()
        env.finish(prod, what="the C device producer")
        gc.collect()
        bt.check(pinnedflow.live_segments() == 0)


def case_host():
    with bt.Env() as env:
        path = env.path("host.sock")
        prod = pinnedflow.Producer(path, slot_size=64 * 64)
        prod.set_video("GRAY8", 64, 64)
        cons = pinnedflow.Consumer(path, timeout_ms=5000, device=True)
        prod.wait_clients(1, 5000)
        with prod.loan(5000) as loan:
            bt.check(loan.domain == "host" and loan.__dlpack_device__() ==
                     (1, 0))
            try:
                loan.publish(stream=1)
                bt.fail("publish(stream=) of a host loan")
            except ValueError:
                pass
        with prod.loan(5000) as loan:
            loan.array()[:] = 7
            loan.publish(pts=1)
        f = cons.next(5000)
        bt.check(f.domain == "host" and f.device is None, repr(f))
        bt.check((f.array() == 7).all() and (numpy.from_dlpack(f) == 7).all())
        bt.check(f.__dlpack_device__() == (1, 0))
        bt.check(not hasattr(f, "__cuda_array_interface__"))
        for fn in (f.cuda_borrow, lambda: f.read_on(1)):
            try:
                fn()
                bt.fail("a device interface on a host frame")
            except TypeError:
                pass
        f.release()
        bt.check(cons.device_stats == dict(frames_skipped=0,
                                           segments_refused=0, reason=""))
        cons.close()
        prod.close()
        del prod, loan, f
        gc.collect()
        bt.check(pinnedflow.live_segments() == 0)


def case_domains():
    drv = Driver()
    with bt.Env() as env:
        path = env.path("domains.sock")
        prod = pinnedflow.Producer(path, slot_size=FRAME)
        prod.set_video("RGBA", W, H)
        prod.enable_domains()
        dev = pinnedflow.Consumer(path, timeout_ms=5000, device=True)
        host = pinnedflow.Consumer(path, timeout_ms=5000)
        try:
            host.set_domain(0)
            bt.fail("set_domain on a host consumer")
        except pinnedflow.PinnedflowError:
            pass
        dev.set_domain(0)
        prod.wait_clients(2, 5000)
        for _ in range(5000):
            if prod.device_domains:
                break
            time.sleep(0.001)
        bt.check(prod.device_domains == [(b"pfemu-device-000", 1)],
                 repr(prod.device_domains))
        for k in range(1, N + 1):
            with prod.loan(5000) as loan:
                loan.array()[:] = pattern(k).reshape(loan.array().shape)
                loan.publish(pts=k)
            f = dev.next(5000)
            bt.check(f.domain == "device" and f.pts == k and f.device == 0,
                     repr(f))
            got = numpy.frombuffer(drv.read(f.device_ptr, FRAME),
                                   dtype=numpy.uint8)
            bt.check((got == pattern(k)).all(), "frame %d: device bytes" % k)
            f.release()
            g = host.next(5000)
            bt.check(g.domain == "host" and g.pts == k, repr(g))
            bt.check((numpy.asarray(g.array()).reshape(-1) ==
                      pattern(k)).all(), "frame %d: host bytes" % k)
            g.release()
        prod.wait_idle(5000)
        st = prod.domain_stats
        bt.check(st["frames"] == N and st["uploads"] == N and
                 st["frames_uploaded"] == N and st["unreachable"] == 0, st)
        bt.check(len(st["domains"]) == 1 and
                 st["domains"][0]["ordinal"] == 0 and
                 st["domains"][0]["uploads"] == N, st)
        dev.close()
        host.close()
        prod.close()
        del prod, loan, f, g
        gc.collect()
        bt.check(pinnedflow.live_segments() == 0)
        bt.check(drv.vmm_live() == (0, 0, 0), repr(drv.vmm_live()))


def case_download():
    drv = Driver()
    with bt.Env() as env:
        path = env.path("download.sock")
        prod = pinnedflow.Producer(path, slot_size=FRAME, n_slots=3,
                                   device=0)
        prod.set_video("RGBA", W, H)
        prod.enable_domains()
        dev = pinnedflow.Consumer(path, timeout_ms=5000, device=True)
        host = pinnedflow.Consumer(path, timeout_ms=5000)
        dev.set_domain(0)
        prod.wait_clients(2, 5000)
        for _ in range(5000):
            if prod.device_domains:
                break
            time.sleep(0.001)
        bt.check(prod.device_domains == [(b"pfemu-device-000", 1)],
                 repr(prod.device_domains))
        dtoh = b"calls.cuMemcpyDtoH_v2"
        dtoh0 = drv.emu.pfemu_query(dtoh)
        for k in range(1, N + 1):
            with prod.loan(5000) as loan:
                bt.check(loan.domain == "device")
                drv.write(loan.device_ptr, pattern(k).tobytes())
                bt.check(loan.publish(pts=k, stream=1) == 2)
            # this frame's download, and the k - 1 reads of this test so far
            bt.check(drv.emu.pfemu_query(dtoh) - dtoh0 == 2 * k - 1,
                     "downloads")
            f = dev.next(5000)
            bt.check(f.domain == "device" and f.pts == k and f.device == 0,
                     repr(f))
            got = numpy.frombuffer(drv.read(f.device_ptr, FRAME),
                                   dtype=numpy.uint8)
            bt.check((got == pattern(k)).all(), "frame %d: device bytes" % k)
            f.release()
            g = host.next(5000)
            bt.check(g.domain == "host" and g.pts == k, repr(g))
            bt.check((numpy.asarray(g.array()).reshape(-1) ==
                      pattern(k)).all(), "frame %d: host bytes" % k)
            g.release()
        # one download per frame, plus this test's N reads
        bt.check(drv.emu.pfemu_query(dtoh) - dtoh0 == 2 * N, "copies")
        prod.wait_idle(5000)
        st = prod.domain_stats
        bt.check(st["frames"] == N and st["downloads"] == N and
                 st["download_bytes"] == N * FRAME and st["uploads"] == 0 and
                 st["host_no_slot"] == 0 and st["host_slots"] == 6 and
                 st["domains"] == [], st)
        for _ in range(5000):
            if prod.domain_stats["host_free_slots"] == 6:
                break
            time.sleep(0.001)
        bt.check(prod.domain_stats["host_free_slots"] == 6, "host slots")
        dev.close()
        host.close()
        prod.close()
        del prod, loan, f, g
        gc.collect()
        bt.check(pinnedflow.live_segments() == 0)
        bt.check(drv.vmm_live() == (0, 0, 0), repr(drv.vmm_live()))


def case_gst_sink():
    gw, gh, gn = 64, 48, 20
    row = gw * 4
    src = ("videotestsrc num-buffers=%d pattern=ball ! "
           "video/x-raw,format=RGBA,width=%d,height=%d,framerate=30/1"
           % (gn, gw, gh))
    inspect = os.path.join(os.path.dirname(bt.GST_LAUNCH),
                           "gst-inspect-1.0")
    if subprocess.run([inspect, "--exists", "cudaupload"]).returncode != 0:
        print("SKIP: nvcodec's cudaupload is not registered here")
        sys.exit(77)
    fds0 = bt.count_fds()
    with bt.Env() as env:
        path = env.path("gst.sock")
        raw = env.path("expected.raw")
        env.finish(env.gst(src + " ! filesink location=" + raw),
                   what="videotestsrc")
        with open(raw, "rb") as fh:
            exp = fh.read()
        bt.check(len(exp) == gn * row * gh, "%d expected bytes" % len(exp))
        prod = env.spawn([os.path.join(bt.BUILD, "tests", "cuda",
                                       "test-shm-device"),
                          "produce-cuda", path])
        drv = Driver()
        cons = pinnedflow.Consumer(path, timeout_ms=20000, device=True,
                                   delivery="every-frame")
        k = 0
        for f in cons:
            bt.check(f.domain == "device" and f.device == 0, repr(f))
            bt.check(f.format == "RGBA" and f.width == gw and
                     f.height == gh, repr(f))
            stride, off = f.strides[0], f.offsets[0]
            bt.check(stride >= row and off + stride * (gh - 1) + row <=
                     f.size, "stride %d offset %d size %d" %
                     (stride, off, f.size))
            got = drv.read(f.device_ptr, f.size)
            base = k * row * gh
            for r in range(gh):
                bt.check(got[off + r * stride:off + r * stride + row] ==
                         exp[base + r * row:base + (r + 1) * row],
                         "frame %d row %d differs" % (k + 1, r))
            f.release()
            k += 1
        bt.check(k == gn, "%d frames, want %d" % (k, gn))
        cons.close()
        out, _ = env.finish(prod, what="producer")
        print(out.strip())
        bt.check("frames %d, device-copies" % gn in out, out)
        del cons, f
        gc.collect()
        bt.check(drv.vmm_live() == (0, 0, 0), repr(drv.vmm_live()))
    bt.check(bt.count_fds() == fds0, "fds %d, were %d" %
             (bt.count_fds(), fds0))


def case_peer():
    # two devices in this process (before the driver stand-in is loaded)
    os.environ["PFEMU_DEVICE_COUNT"] = "2"
    drv = Driver()
    d = drv.d
    ctx1 = ctypes.c_void_p()
    popped = ctypes.c_void_p()
    with bt.Env() as env:
        path = env.path("peer.sock")
        prod = pinnedflow.Producer(path, slot_size=FRAME, n_slots=3,
                                   device=0)
        prod.set_video("RGBA", W, H)
        prod.enable_domains()
        far = pinnedflow.Consumer(path, timeout_ms=5000, device=True)
        near = pinnedflow.Consumer(path, timeout_ms=5000, device=True)
        far.set_domain(1)
        near.set_domain(0)
        prod.wait_clients(2, 5000)
        for _ in range(5000):
            if len(prod.device_domains) == 2:
                break
            time.sleep(0.001)
        bt.check(sorted(prod.device_domains) ==
                 [(b"pfemu-device-000", 1), (b"pfemu-device-001", 1)],
                 repr(prod.device_domains))
        peer = b"calls.cuMemcpyPeer"
        dtoh = b"calls.cuMemcpyDtoH_v2"
        peer0 = drv.emu.pfemu_query(peer)
        dtoh0 = drv.emu.pfemu_query(dtoh)
        for k in range(1, N + 1):
            with prod.loan(5000) as loan:
                drv.write(loan.device_ptr, pattern(k).tobytes())
                bt.check(loan.publish(pts=k, stream=1) == 2)
            bt.check(drv.emu.pfemu_query(peer) - peer0 == k, "peer copies")
            f = near.next(5000)
            bt.check(f.domain == "device" and f.pts == k and f.device == 0,
                     repr(f))
            got = numpy.frombuffer(drv.read(f.device_ptr, FRAME),
                                   dtype=numpy.uint8)
            bt.check((got == pattern(k)).all(), "frame %d: device 0" % k)
            f.release()
            g = far.next(5000)
            bt.check(g.domain == "device" and g.pts == k and g.device == 1,
                     repr(g))
            # read on device 1 (its mapping is device 1's only)
            bt.check(d.cuCtxCreate_v2(ctypes.byref(ctx1), 0, 1) == 0)
            got = numpy.frombuffer(drv.read(g.device_ptr, FRAME),
                                   dtype=numpy.uint8)
            bt.check(d.cuCtxPopCurrent_v2(ctypes.byref(popped)) == 0)
            bt.check(d.cuCtxDestroy_v2(ctx1) == 0)
            bt.check((got == pattern(k)).all(), "frame %d: device 1" % k)
            g.release()
        # no download: the only device-to-host copies are this test's reads
        bt.check(drv.emu.pfemu_query(dtoh) - dtoh0 == 2 * N, "downloads")
        prod.wait_idle(5000)
        st = prod.domain_stats
        dom = st["domains"]
        bt.check(st["frames"] == N and st["peer_copies"] == N and
                 st["downloads"] == 0 and st["uploads"] == 0 and
                 len(dom) == 1 and dom[0]["ordinal"] == 1 and
                 dom[0]["peer_copies"] == N and dom[0]["no_slot"] == 0 and
                 dom[0]["bytes"] == N * FRAME, st)
        for _ in range(5000):
            dom = prod.domain_stats["domains"]
            if dom[0]["free_slots"] == dom[0]["slots"]:
                break
            time.sleep(0.001)
        bt.check(dom[0]["free_slots"] == dom[0]["slots"], "device 1 slots")
        far.close()
        near.close()
        prod.close()
        del prod, loan, f, g
        gc.collect()
        bt.check(pinnedflow.live_segments() == 0)
        bt.check(drv.vmm_live() == (0, 0, 0), repr(drv.vmm_live()))


if __name__ == "__main__":
    sys.exit(bt.run_cases({"consume": case_consume, "produce": case_produce,
                           "novmm": case_novmm, "host": case_host,
                           "domains": case_domains,
                           "download": case_download,
                           "gst-sink": case_gst_sink,
                           "peer": case_peer}))
