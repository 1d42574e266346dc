#!/usr/bin/env python3
# Frames lent to other libraries (issue 12): DLPack, the buffer protocol,
# the Arrow PyCapsule / C Device Data Interface, and device frames from the
# upload engine (pinnedflow.cuda) as __cuda_array_interface__ / DLPack /
# Arrow. The rules checked:
#   - numpy.from_dlpack / torch.from_dlpack of a host frame are zero-copy
#     (the same address as the frame's mapping);
#   - the producer gets a slot back only when the Frame was released AND
#     the last borrower (array, tensor, memoryview, unconsumed capsule) is
#     gone, counted with the producer's free slots;
#   - a released frame refuses every export (ValueError);
#   - an Arrow export imported by a consumer written from the specification
#     alone (arrow-consumer.c) has the frame's bytes, layout metadata and
#     device type, and its release callback releases the frame once;
#   - device frames on the cudart emulator are byte-exact when read through
#     the exported pointer, the host frame goes back only after the copy's
#     event completed, and the device buffer only after its last borrower.
#   - the documented GPU nodes (bridge/examples/cuda-node.c, gpu_node.py)
#     run on the emulator and see the camera's bytes.
#   - a host frame is lent as CPU memory (kDLCPU, ARROW_DEVICE_CPU) even
#     once an upload registered its segment: torch.from_dlpack takes it
#     (torch-registered); kDLCUDAHost only when asked for (dl_device);
#   - a device buffer is rewritten only after the reads queued on the
#     consumer's stream before its release (cuda-reuse: the documented
#     loop, a kernel reading late on the emulator).
# Usage: test_export.py dlpack|torch|arrow|cuda|nodes|cuda-absent|
#   torch-registered|cuda-reuse
import ctypes
import errno
import gc
import os
import sys

import numpy

import bridgetest as bt
import pinnedflow
from pinnedflow import _export

W, H = 64, 48
SKIP = 77


def holds():
    return _export.count_live()


class Pair(object):
    """A producer and a consumer of it in this process."""

    def __init__(self, env, fmt="RGBA", w=W, h=H, n_slots=2):
        path = env.path("x.sock")
        size = pinnedflow.video_layout(fmt, w, h)["size"]
        self.prod = pinnedflow.Producer(path, slot_size=size,
                                        n_slots=n_slots)
        self.prod.set_video(fmt, w, h, (30, 1))
        self.cons = pinnedflow.Consumer(path, timeout_ms=5000)
        self.prod.wait_clients(1, 10000)
        self.n_slots = n_slots
        self.fmt = fmt

    def send(self, n):
        """Publishes frame n (the example cameras' pattern, or plane i
        filled with n + i) and returns it as received."""
        with self.prod.loan(5000) as loan:
            if self.fmt == "RGBA":
                loan.array()[:] = bt.pattern(W, H, n)
            else:
                for i in range(len(loan.strides)):
                    loan.plane(i)[:] = (n + 10 * i) & 0xff
            bt.check(loan.publish(pts=n * 1000) == 1)
        f = self.cons.next(10000)
        bt.check(isinstance(f, pinnedflow.Frame), repr(f))
        return f

    def _wait_idle(self, timeout_ms):
        """The producer's wait_idle, a timeout being no error here."""
        try:
            self.prod.wait_idle(timeout_ms)
        except TimeoutError:
            pass

    def settled_free(self):
        """Free slots once every release in flight has arrived."""
        for _ in range(200):
            if self.prod.free_slots == self.n_slots:
                break
            self._wait_idle(50)
        return self.prod.free_slots

    def held_free(self):
        """Free slots while a frame is held: releases in flight must not
        change the answer, so wait a little for any, then read."""
        self._wait_idle(100)
        return self.prod.free_slots

    def close(self):
        self.prod.close()
        self.cons.close()


def packed_planes(frame):
    """Every plane's rows packed, as the Arrow consumer compares them."""
    return b"".join(frame.plane(i).tobytes()
                    for i in range(len(frame.strides)))


def expect_closed(frame):
    for call in (frame.__dlpack__, frame.__dlpack_device__, frame.borrow,
                 frame.__arrow_c_array__, frame.__arrow_c_device_array__,
                 lambda: numpy.asarray(frame)):
        try:
            call()
            bt.fail("a released frame lent itself out: %r" % call)
        except ValueError as e:
            bt.check("closed" in str(e), str(e))


def case_dlpack():
    fds0 = bt.count_fds()
    with bt.Env() as env:
        pair = Pair(env)
        base_holds = holds()

        # numpy.from_dlpack: zero-copy, read-only, the frame's shape.
        f = pair.send(1)
        addr = f.segment.base + f.segment_offset
        bt.check(f.__dlpack_device__() == (1, 0))      # kDLCPU: unregistered
        a = numpy.from_dlpack(f)
        bt.check(a.shape == (H, W, 4) and a.dtype == numpy.uint8)
        bt.check(a.__array_interface__["data"][0] == addr,
                 "numpy.from_dlpack copied")
        bt.check(numpy.array_equal(a, bt.pattern(W, H, 1)))
        bt.check(a.strides == (W * 4, 4, 1))
        b = a[1:3]                                      # a view of the view
        f.release()
        expect_closed(f)
        bt.check(pair.held_free() == 1, "released with a numpy array alive")
        del a
        gc.collect()
        bt.check(pair.held_free() == 1, "released with a slice alive")
        bt.check(numpy.array_equal(b, bt.pattern(W, H, 1)[1:3]))
        del b
        gc.collect()
        bt.check(pair.settled_free() == 2, "not released after the last view")
        bt.check(holds() == base_holds)

        # A capsule never consumed releases the frame when it dies (its C
        # destructor calls the deleter), also after release().
        f = pair.send(2)
        cap = f.__dlpack__()
        f.release()
        bt.check(pair.held_free() == 1)
        del cap
        gc.collect()
        bt.check(pair.settled_free() == 2, "an unconsumed capsule leaked")

        # A versioned capsule (DLPack 1.0) says read-only; decoded here from
        # the specification: DLManagedTensorVersioned { version {u32, u32},
        # manager_ctx, deleter, u64 flags, DLTensor }.
        f = pair.send(3)
        cap = f.__dlpack__(max_version=(1, 0))
        get = ctypes.pythonapi.PyCapsule_GetPointer
        get.restype = ctypes.c_void_p
        get.argtypes = [ctypes.py_object, ctypes.c_char_p]
        p = get(cap, b"dltensor_versioned")
        major, minor = (ctypes.c_uint32 * 2).from_address(p)
        flags = ctypes.c_uint64.from_address(p + 24).value
        data = ctypes.c_void_p.from_address(p + 32).value
        dev_type, dev_id, ndim = (ctypes.c_int32 * 3).from_address(p + 40)
        bt.check((major, minor) == (1, 0) and flags & 1, "not read-only")
        bt.check(data == f.segment.base + f.segment_offset and
                 dev_type == 1 and ndim == 3)
        del cap
        # dl_device: kDLCPU is always possible for a host frame, a device
        # is not; copy=True is refused.
        for kw in ({"dl_device": (2, 0)}, {"copy": True}):
            try:
                f.__dlpack__(**kw)
                bt.fail("__dlpack__(%r) accepted" % kw)
            except BufferError:
                pass
        bt.check(f.__dlpack__(dl_device=(1, 0)) is not None)

        # The buffer protocol: borrow() (memoryview(frame) from Python
        # 3.12) and numpy.asarray(frame) hold the frame too.
        mv = f.borrow()
        arr = numpy.asarray(f)
        bt.check(mv.readonly and len(mv) == f.size)
        bt.check(arr.shape == (H, W, 4) and not arr.flags.writeable)
        bt.check(arr.__array_interface__["data"][0] ==
                 f.segment.base + f.segment_offset)
        if sys.version_info >= (3, 12):
            mv2 = memoryview(f)
            bt.check(mv2.nbytes == f.size and mv2.shape == (H, W, 4)
                     and mv2.readonly)
            bt.check(numpy.asarray(mv2).__array_interface__["data"][0] ==
                     f.segment.base + f.segment_offset)
            del mv2
        f.release()
        del arr
        gc.collect()
        bt.check(pair.held_free() == 1, "released with a memoryview alive")
        bt.check(bytes(mv[:4]) == bt.pattern(W, H, 3).tobytes()[:4])
        del mv
        gc.collect()
        bt.check(pair.settled_free() == 2)

        # Frame.array() is no borrower: released at release() (as before).
        f = pair.send(4)
        plain = f.array()
        f.release()
        bt.check(pair.settled_free() == 2)
        del plain

        # Other shapes: GRAY8 (h, w), NV12 (the bytes, 1-D).
        pair.close()
        for fmt, shape in (("GRAY8", (H, W)),
                           ("NV12", (pinnedflow.video_layout(
                               "NV12", W, H)["size"],))):
            if os.path.exists(env.path("x.sock")):
                os.unlink(env.path("x.sock"))
            pair = Pair(env, fmt=fmt)
            with pair.send(5) as f:
                a = numpy.from_dlpack(f)
                bt.check(a.shape == shape, "%s: %r" % (fmt, a.shape))
                if fmt == "GRAY8":
                    bt.check((a == 5).all())
                else:
                    bt.check((a[:W * H] == 5).all())
            bt.check(pair.held_free() == 1)
            del a
            gc.collect()
            bt.check(pair.settled_free() == 2)
            pair.close()

        del f, pair
        gc.collect()
        bt.check(holds() == 0, "%d holds alive" % holds())
        bt.check(pinnedflow.live_segments() == 0)
    bt.check(bt.count_fds() == fds0)


def case_torch():
    try:
        import torch
    except ImportError:
        print("SKIP: torch is not installed (Debian: apt-get install "
              "python3-torch); torch.from_dlpack not checked")
        sys.exit(SKIP)
    with bt.Env() as env:
        pair = Pair(env)
        f = pair.send(7)
        t = torch.from_dlpack(f)
        bt.check(tuple(t.shape) == (H, W, 4) and t.dtype == torch.uint8)
        bt.check(t.data_ptr() == f.segment.base + f.segment_offset,
                 "torch.from_dlpack copied")
        bt.check(numpy.array_equal(t.numpy(), bt.pattern(W, H, 7)))
        v = t[:, :, 0]                  # a view shares the storage
        del t
        f.release()
        gc.collect()
        bt.check(pair.held_free() == 1, "released with a torch view alive")
        bt.check(int(v[0, 1]) == int(bt.pattern(W, H, 7)[0, 1, 0]))
        del v
        gc.collect()
        bt.check(pair.settled_free() == 2, "not released after the tensor")
        pair.close()
        del f, pair
        gc.collect()
        bt.check(holds() == 0, "%d holds alive" % holds())


def arrow_consumer():
    lib = ctypes.CDLL(os.path.join(bt.BUILD, "tests", "bridge",
                                   "libarrow-consumer.so"))
    lib.arrow_consumer_import.restype = ctypes.c_int
    lib.arrow_consumer_import.argtypes = [
        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
        ctypes.POINTER(ArrowExpect), ctypes.c_char_p, ctypes.c_size_t]
    return lib


class ArrowExpect(ctypes.Structure):
    """struct arrow_expect (arrow-consumer.h)."""
    _fields_ = [
        ("device_type", ctypes.c_int32),
        ("width", ctypes.c_uint32), ("height", ctypes.c_uint32),
        ("n_planes", ctypes.c_uint32),
        ("format", ctypes.c_char_p),
        ("bytes", ctypes.c_char_p),
        ("size", ctypes.c_uint64),
        ("d2h", ctypes.c_void_p),
        ("event_sync", ctypes.c_void_p),
        ("releases", ctypes.c_int),
        ("length_seen", ctypes.c_int64),
        ("data_seen", ctypes.c_uint64),
        ("pts_seen", ctypes.c_uint64),
    ]


def capsule_ptr(cap, name):
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return get(cap, name.encode())


def import_arrow(consumer, schema_cap, array_cap, device, expect):
    err = ctypes.create_string_buffer(256)
    name = "arrow_device_array" if device else "arrow_array"
    res = consumer.arrow_consumer_import(
        capsule_ptr(schema_cap, "arrow_schema"),
        capsule_ptr(array_cap, name), 1 if device else 0,
        ctypes.byref(expect), err, len(err))
    bt.check(res == 0, "arrow consumer: " + err.value.decode())
    bt.check(expect.releases == 2, "%d releases" % expect.releases)


def case_arrow():
    consumer = arrow_consumer()
    with bt.Env() as env:
        for fmt in ("RGBA", "I420"):
            if os.path.exists(env.path("x.sock")):
                os.unlink(env.path("x.sock"))
            pair = Pair(env, fmt=fmt, w=W, h=H)
            for device in (True, False):
                f = pair.send(9)
                want = packed_planes(f)
                ex = ArrowExpect(device_type=1, width=W, height=H,
                                 n_planes=len(f.strides),
                                 format=fmt.encode(), bytes=want,
                                 size=len(want))
                schema, array = (f.__arrow_c_device_array__() if device
                                 else f.__arrow_c_array__())
                bt.check(holds() == 1)
                f.release()
                # the array holds the frame; the schema holds nothing
                bt.check(pair.held_free() == 1, "released before import")
                import_arrow(consumer, schema, array, device, ex)
                bt.check(ex.length_seen == f.size)
                bt.check(ex.data_seen == f.segment.base + f.segment_offset,
                         "the Arrow buffer is not the frame's mapping")
                bt.check(ex.pts_seen == 9000)
                # released exactly once by the consumer's release call
                bt.check(pair.settled_free() == 2, "release did not release")
                bt.check(holds() == 0)
                # the capsules die after the consumer moved the structs out:
                # their destructors find them released and only free them
                del schema, array
                gc.collect()
                bt.check(pair.settled_free() == 2 and holds() == 0)
            # capsules nobody imported release the frame when they die
            f = pair.send(10)
            schema, array = f.__arrow_c_device_array__()
            f.release()
            bt.check(pair.held_free() == 1)
            del array
            gc.collect()
            bt.check(pair.settled_free() == 2)
            del schema
            pair.close()
        expect_closed(f)
        del f, pair
        gc.collect()
        bt.check(holds() == 0 and pinnedflow.live_segments() == 0)


def emulator():
    emu = ctypes.CDLL(os.environ["GST_PINNEDFLOW_CUDART"])
    emu.pfemu_query.restype = ctypes.c_long
    emu.pfemu_query.argtypes = [ctypes.c_char_p]
    emu.cudaEventQuery.argtypes = [ctypes.c_void_p]
    emu.cudaEventSynchronize.argtypes = [ctypes.c_void_p]
    emu.cudaMemcpy2D.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                                 ctypes.c_void_p, ctypes.c_size_t,
                                 ctypes.c_size_t, ctypes.c_size_t,
                                 ctypes.c_int]
    emu.cudaStreamCreateWithFlags.argtypes = [
        ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint]
    emu.cudaStreamDestroy.argtypes = [ctypes.c_void_p]
    emu.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
    return emu


def read_cai(emu, cai, row_bytes):
    """The device bytes the __cuda_array_interface__ points at, read back
    through the emulator (cudaMemcpy2D device-to-host), rows packed."""
    rows = cai["shape"][0]
    out = ctypes.create_string_buffer(rows * row_bytes)
    bt.check(emu.cudaMemcpy2D(out, row_bytes, cai["data"][0],
                              cai["strides"][0], row_bytes, rows, 2) == 0)
    return out.raw


def case_cuda():
    import pinnedflow.cuda as pfcuda
    if not os.environ.get("GST_PINNEDFLOW_CUDART"):
        print("SKIP: GST_PINNEDFLOW_CUDART (the emulator) not set")
        sys.exit(SKIP)
    emu = emulator()
    consumer = arrow_consumer()
    with bt.Env() as env:
        pair = Pair(env, n_slots=3)
        up = pfcuda.Uploader(max_inflight=2, pool_size=2)
        bt.check(up.stream != 0)
        f = pair.send(11)
        bt.check(f.__dlpack_device__() == (1, 0) and not f.cuda_registered)
        try:
            f.__dlpack__(dl_device=(3, 0))
            bt.fail("kDLCUDAHost lent for a segment nobody registered")
        except BufferError as e:
            bt.check("not registered" in str(e), str(e))
        dev = up.upload(f)
        # the segment is registered now: the host frame is pinned memory,
        # and still exported as CPU memory (issue 22, defect 7), unless
        # the consumer asks for kDLCUDAHost
        bt.check(f.cuda_registered and f.__dlpack_device__() == (1, 0))
        cap_h = f.__dlpack__(dl_device=(3, 0))
        bt.check((ctypes.c_int32 * 2).from_address(
            capsule_ptr(cap_h, "dltensor") + 8)[0] == 3)
        del cap_h
        want = bt.pattern(W, H, 11).tobytes()
        # and its Arrow export says ARROW_DEVICE_CPU
        schema, array = f.__arrow_c_device_array__()
        import_arrow(consumer, schema, array, True, ArrowExpect(
            device_type=1, width=W, height=H, n_planes=1, format=b"RGBA",
            bytes=want, size=len(want)))
        f.release()
        # Released to the producer only after the copy's event: sample the
        # slot first, the event second (completion precedes release, so a
        # free slot with an event still pending is an early release).
        for _ in range(100):
            free = pair.prod.free_slots
            pending = emu.cudaEventQuery(dev.event) == 600
            bt.check(not (free == 3 and pending),
                     "host frame released before the copy's event")
            if free == 3:
                break
            try:
                pair.prod.wait_idle(5)
            except TimeoutError:
                pass
        up.flush()
        bt.check(pair.settled_free() == 3)

        # __cuda_array_interface__ v3, read back through the emulator.
        cai = dev.__cuda_array_interface__
        bt.check(cai["version"] == 3 and cai["typestr"] == "|u1")
        bt.check(cai["shape"] == (H, W, 4), str(cai["shape"]))
        bt.check(cai["strides"] == (dev.pitch, 4, 1) and dev.pitch >= W * 4)
        bt.check(cai["stream"] == up.stream and cai["data"][1] is False)
        bt.check(cai["data"][0] == dev.data[0])
        bt.check(read_cai(emu, cai, W * 4) == want, "device bytes differ")
        bt.check(dev.download() == want)

        # DLPack kDLCUDA: the same pointer and view, decoded from the
        # specification's DLManagedTensor; the consumer's stream is made to
        # wait for the frame's event.
        bt.check(dev.__dlpack_device__() == (2, 0))
        stream = ctypes.c_void_p()
        bt.check(emu.cudaStreamCreateWithFlags(ctypes.byref(stream), 1) == 0)
        waits0 = emu.pfemu_query(b"stream.waits")
        cap = dev.__dlpack__(stream=stream.value)
        bt.check(emu.pfemu_query(b"stream.waits") == waits0 + 1)
        cap_n = dev.__dlpack__(stream=-1)          # -1: no synchronisation
        bt.check(emu.pfemu_query(b"stream.waits") == waits0 + 1)
        p = capsule_ptr(cap, "dltensor")
        data = ctypes.c_void_p.from_address(p).value
        dev_type, dev_id, ndim = (ctypes.c_int32 * 3).from_address(p + 8)
        shape_p = ctypes.c_void_p.from_address(p + 24).value
        strides_p = ctypes.c_void_p.from_address(p + 32).value
        shape = list((ctypes.c_int64 * 3).from_address(shape_p))
        strides = list((ctypes.c_int64 * 3).from_address(strides_p))
        bt.check(data == dev.data[0] and dev_type == 2 and ndim == 3)
        bt.check(shape == [H, W, 4] and strides == [dev.pitch, 4, 1])
        for bad in ({"stream": 0}, {"dl_device": (1, 0)}):
            try:
                dev.__dlpack__(**bad)
                bt.fail("__dlpack__(%r) accepted" % bad)
            except (BufferError, OSError):
                pass
        # Consume it as a DLPack consumer does: rename, call the deleter.
        setname = ctypes.pythonapi.PyCapsule_SetName
        setname.argtypes = [ctypes.py_object, ctypes.c_char_p]
        used = ctypes.create_string_buffer(b"used_dltensor")
        setname(cap, used)
        deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(
            ctypes.c_void_p.from_address(p + 56).value)

        # Arrow ARROW_DEVICE_CUDA with the event as sync_event, imported by
        # the spec-only consumer through the emulator's copy and wait.
        schema, array = dev.__arrow_c_device_array__()
        ex = ArrowExpect(device_type=2, width=W, height=H, n_planes=1,
                         format=b"RGBA", bytes=want, size=len(want))
        ex.d2h = ctypes.cast(emu.cudaMemcpy2D, ctypes.c_void_p)
        ex.event_sync = ctypes.cast(emu.cudaEventSynchronize,
                                    ctypes.c_void_p)
        import_arrow(consumer, schema, array, True, ex)
        bt.check(ex.data_seen == dev.data[0])

        # The device buffer goes back to the pool only after its last
        # borrower: with both buffers out, a third upload must wait.
        dev2 = up.upload(pair.send(12))
        dev.release()
        f3 = pair.send(13)
        try:
            up.upload(f3, timeout_ms=0)
            bt.fail("a borrowed device buffer was reused")
        except (TimeoutError, OSError) as e:
            bt.check(getattr(e, "errno", None) in (errno.ETIMEDOUT,
                                                   errno.EAGAIN), str(e))
        deleter(p)                      # the consumed tensor dies
        del cap_n                       # the unconsumed one too
        gc.collect()
        up.flush()                      # frame 12's copy done: it went back
        bt.check(holds() == 2, "%d holds" % holds())       # dev2, f3
        dev3 = up.upload(f3, timeout_ms=5000)
        bt.check(dev3.download() == bt.pattern(W, H, 13).tobytes())
        bt.check(dev2.download() == bt.pattern(W, H, 12).tobytes())
        f3.release()
        for d in (dev2, dev3):
            d.release()
        try:
            dev2.__cuda_array_interface__
            bt.fail("a released device frame lent itself out")
        except ValueError:
            pass
        up.flush()
        bt.check(pair.settled_free() == 3)
        bt.check(emu.cudaStreamDestroy(stream) == 0)
        up.close()
        del cap, schema, array, dev, dev2, dev3, f, f3
        gc.collect()
        bt.check(holds() == 0, "%d holds alive" % holds())
        pair.close()
        del pair
        gc.collect()
        bt.check(pinnedflow.live_segments() == 0)
        bt.check(emu.pfemu_query(b"live.registrations") == 0,
                 "a registration outlived its segment")


def case_torch_registered():
    """Issue 22, defect 7: a host frame whose segment an upload in this
    process registered goes into torch.from_dlpack like any other (PyTorch
    refuses kDLCUDAHost: "Unsupported device_type")."""
    import pinnedflow.cuda as pfcuda
    if not os.environ.get("GST_PINNEDFLOW_CUDART"):
        print("SKIP: GST_PINNEDFLOW_CUDART (the emulator) not set")
        sys.exit(SKIP)
    try:
        import torch
    except ImportError:
        print("SKIP: torch is not installed (Debian: apt-get install "
              "python3-torch)")
        sys.exit(SKIP)
    with bt.Env() as env:
        pair = Pair(env, n_slots=2)
        up = pfcuda.Uploader(max_inflight=1, pool_size=1)
        f = pair.send(3)
        t0 = torch.from_dlpack(f)           # before any upload: CPU
        dev = up.upload(f)
        up.flush()
        bt.check(f.cuda_registered, "the upload did not register")
        # the same frame, and the next one in the registered segment
        t1 = torch.from_dlpack(f)
        bt.check(t1.device.type == "cpu" and tuple(t1.shape) == (H, W, 4))
        bt.check(t1.data_ptr() == t0.data_ptr() ==
                 f.segment.base + f.segment_offset, "torch copied")
        bt.check(numpy.array_equal(t1.numpy(), bt.pattern(W, H, 3)))
        dev.release()
        del t0, t1
        f.release()
        gc.collect()
        g = pair.send(4)
        bt.check(g.cuda_registered)
        t = torch.from_dlpack(g)
        bt.check(numpy.array_equal(t.numpy(), bt.pattern(W, H, 4)))
        del t
        g.release()
        up.close()
        del dev, f, g
        gc.collect()
        bt.check(pair.settled_free() == 2)
        bt.check(holds() == 0, "%d holds alive" % holds())
        pair.close()


def case_cuda_reuse():
    """Issue 22, defect 4: the documented loop (pinnedflow.cuda's
    docstring), with the consumer's kernel reading frame N late on its own
    stream while frame N+1 is uploaded: every read sees frame N. The tensor
    is made as torch.from_dlpack makes it (__dlpack__(stream=current)), the
    kernel is the emulator's late reader (pfemu_stream_read), the tensor
    and the frames are dropped as soon as the kernel is queued."""
    import pinnedflow.cuda as pfcuda
    if not os.environ.get("GST_PINNEDFLOW_CUDART"):
        print("SKIP: GST_PINNEDFLOW_CUDART (the emulator) not set")
        sys.exit(SKIP)
    emu = emulator()
    emu.pfemu_stream_read.argtypes = [
        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t,
        ctypes.c_size_t, ctypes.c_void_p, ctypes.c_long]
    n_frames, row = 6, W * 4
    with bt.Env() as env:
        pair = Pair(env, n_slots=3)
        up = pfcuda.Uploader(max_inflight=2, pool_size=2)
        stream = ctypes.c_void_p()      # torch.cuda.Stream(): its own
        bt.check(emu.cudaStreamCreateWithFlags(ctypes.byref(stream), 1) == 0)
        reads = [ctypes.create_string_buffer(H * row)
                 for _ in range(n_frames)]
        reads0 = emu.pfemu_query(b"reads")
        for n in range(n_frames):
            frame = pair.send(n)
            with frame, up.upload(frame) as dev:
                cap = dev.__dlpack__(stream=stream.value)
                # the kernel reading the tensor, late (its stream is busy)
                bt.check(emu.pfemu_stream_read(
                    stream, dev.data[0], dev.pitch, row, H, reads[n],
                    30000) == 0)
                del cap                 # the tensor dies with the loop
        bt.check(emu.cudaStreamSynchronize(stream) == 0)
        for n in range(n_frames):
            got = numpy.frombuffer(reads[n].raw, numpy.uint8)
            want = bt.pattern(W, H, n).reshape(-1)
            if not numpy.array_equal(got, want):
                which = [k for k in range(n_frames) if numpy.array_equal(
                    got, bt.pattern(W, H, k).reshape(-1))]
                bt.fail("the kernel reading frame %d saw %s: its buffer "
                        "was rewritten before the consumer's stream read it"
                        % (n, "frame %d" % which[0] if which else
                           "other bytes"))
        # The same with a __cuda_array_interface__ consumer working on a
        # stream of its own, named with read_on().
        for n in range(n_frames, 2 * n_frames):
            frame = pair.send(n)
            with frame, up.upload(frame) as dev:
                cai = dev.__cuda_array_interface__
                bt.check(emu.cudaStreamSynchronize(cai["stream"]) == 0)
                dev.read_on(stream.value)
                for bad in (0, -2):
                    try:
                        dev.read_on(bad)
                        bt.fail("read_on(%d) accepted" % bad)
                    except ValueError:
                        pass
                bt.check(emu.pfemu_stream_read(
                    stream, cai["data"][0], cai["strides"][0], row, H,
                    reads[n - n_frames], 30000) == 0)
        bt.check(emu.cudaStreamSynchronize(stream) == 0)
        for n in range(n_frames, 2 * n_frames):
            bt.check(numpy.array_equal(
                numpy.frombuffer(reads[n - n_frames].raw, numpy.uint8),
                bt.pattern(W, H, n).reshape(-1)),
                "CAI consumer: the read of frame %d saw other bytes" % n)
        bt.check(emu.pfemu_query(b"reads") - reads0 == 2 * n_frames)
        bt.check(emu.pfemu_query(b"reads.overwritten") == 0)
        st = up.stats
        bt.check(st["reader_waits"] >= 2 * n_frames - 2, str(st))
        bt.check(st["reader_errors"] == 0, str(st))
        up.flush()
        up.close()
        bt.check(emu.cudaStreamDestroy(stream) == 0)
        gc.collect()
        bt.check(pair.settled_free() == 3)
        bt.check(holds() == 0, "%d holds alive" % holds())
        pair.close()


def case_nodes():
    """The documented GPU nodes (docs/bridge.md) on the emulator, fed by
    pf-camera-node: the C one reads every frame back byte-exact, the Python
    one prints each frame's mean (frame n's is 83 + 5n at 64x48)."""
    import subprocess
    if not os.environ.get("GST_PINNEDFLOW_CUDART"):
        print("SKIP: GST_PINNEDFLOW_CUDART (the emulator) not set")
        sys.exit(SKIP)
    gpu_py = os.path.join(bt.SOURCE, "bridge", "examples", "gpu_node.py")
    with bt.Env() as env:
        for k, argv in enumerate((
                [bt.tool("pf-cuda-node"), None, "12", "1"],
                [sys.executable, gpu_py, None, "12"])):
            path = env.path("cam%d.sock" % k)
            cam = env.spawn([bt.tool("pf-camera-node"), path, "12", str(W),
                             str(H), "0"])
            argv = [path if a is None else a for a in argv]
            out = subprocess.run(argv, capture_output=True, text=True,
                                 timeout=60)
            bt.check(out.returncode == 0, "%s: %s%s" % (
                argv[0], out.stdout[-500:], out.stderr[-500:]))
            lines = out.stdout.splitlines()
            if k == 0:
                bt.check(lines[-1] == "12 frames on the device, 0 bytes "
                         "differ", lines[-1])
            else:
                means = [float(l.split(" mean ")[1].split()[0])
                         for l in lines if l.startswith("frame ")]
                bt.check(means == [83.0 + 5 * n for n in range(12)],
                         str(means))
                bt.check(lines[-1] == "12 frames", lines[-1])
            env.finish(cam, what="pf-camera-node")


def case_cuda_absent():
    import pinnedflow.cuda as pfcuda
    os.environ["GST_PINNEDFLOW_CUDART"] = "/nonexistent/libcudart.so.12"
    try:
        pfcuda.Uploader()
        bt.fail("an Uploader without a runtime")
    except pinnedflow.PinnedflowError as e:
        bt.check(e.errno == errno.ENOENT, str(e))
        bt.check("/nonexistent/libcudart.so.12" in str(e), str(e))


if __name__ == "__main__":
    sys.exit(bt.run_cases({"dlpack": case_dlpack, "torch": case_torch,
                           "arrow": case_arrow, "cuda": case_cuda,
                           "nodes": case_nodes,
                           "torch-registered": case_torch_registered,
                           "cuda-reuse": case_cuda_reuse,
                           "cuda-absent": case_cuda_absent}))
