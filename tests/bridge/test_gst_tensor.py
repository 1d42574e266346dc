# pinnedflow.gst (issue 33): appsink buffers as tensors, tensors into appsrc.
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Rules checked, one case each (argv[1]):

host       a frame pulled from appsink is a PyTorch tensor at the frame's
           own address (RGBA, NV12 two planes, RGB 33 wide: rows padded to
           100 bytes; pinnedshmsrc's pinned segment memory), and the buffer
           is freed exactly when the last tensor made from it dies
           (counted with a GstMiniObject weak ref), never before.
device     pinnedcudaupload ! appsink on the emulators: memory:CUDAMemory
           and memory:PinnedflowCUDA frames (RGBA, NV12) read by a DLPack
           consumer written from the specification (cudart_tensor.consume):
           kDLCUDA, the pointer equal to __cuda_array_interface__'s, bytes
           equal to the frame uploaded; the consumer's stream made to wait
           on the GPU where the memory says so (the emulator counts the
           waits); the buffer freed when the last capsule is consumed.
appsrc     tensors pushed into appsrc: a CUDA tensor (memory:CUDAMemory) to
           nvcodec's cudadownload, byte-exact, copies 0 on GStreamer 1.24+
           (wrapped) and 1 on 1.22 (picked by the running version); a CUDA
           tensor as memory:PinnedflowCUDA to pinnedcudadownload (one
           device copy); an object with only __cuda_array_interface__
           ("stream": None, its upload still queued on the legacy stream)
           byte-exact, wrapped ones waiting for that stream on the GPU,
           "stream": 0 refused; a host tensor wrapped (no copy) through
           pinnedcudaupload ! cudadownload, and copied once into a pool's
           buffer; every tensor's deleter ran exactly once, after the
           pipeline was done with it.
example    bridge/examples/tensor_app.py as docs/bridge.md runs it: a camera
           process (videotestsrc ! pinnedshmsink) -> the application
           (pinnedshmsrc ! pinnedcudaupload ! appsink -> 255 - frame ->
           appsrc ! cudadownload ! filesink), backend cudart on the
           emulators, with PyGObject and with ctypes alone (--gst ctypes):
           every frame out equals 255 - the camera's frame.
errors     a CPU tensor offered as CUDA memory, a non-contiguous tensor, a
           dtype the caps do not allow, a wrong shape, memory neither
           host-mappable nor CUDA (an fd memory of a pipe), caps that are
           not video: each a clear exception of its class, and nothing
           taken (the tensor is still usable, no buffer filled).
"""

import ctypes
import gc
import os
import sys

# numpy's OpenBLAS: no worker threads for these small arrays (fewer
# threads to wade through under valgrind)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import gi
gi.require_version("Gst", "1.0")
gi.require_version("GstApp", "1.0")
gi.require_version("GstVideo", "1.0")
gi.require_version("GstAllocators", "1.0")
from gi.repository import Gst, GstApp, GstVideo, GstAllocators  # noqa

import numpy  # noqa: E402

import bridgetest as bt  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "bridge", "examples"))
import cudart_tensor as ct  # noqa: E402

if sys.argv[1:] == ["device-1.24"]:
    # libgstcuda with 1.24's GstCudaStream (tests/cuda/pfemu-gstcuda.c):
    # the plugin and the library read the variable when they first load it
    os.environ["GST_PINNEDFLOW_GSTCUDA"] = os.environ[
        "PINNEDFLOW_TEST_GSTCUDA_124"]
Gst.init(None)
from pinnedflow import gst as pfgst  # noqa: E402

SKIP = 77
_gst = ctypes.CDLL("libgstreamer-1.0.so.0")
WEAK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
_gst.gst_mini_object_weak_ref.argtypes = [ctypes.c_void_p, WEAK,
                                          ctypes.c_void_p]
_gst.gst_mini_object_weak_ref.restype = None


class MapInfo(ctypes.Structure):
    """GstMapInfo (gstmemory.h)."""
    _fields_ = [("memory", ctypes.c_void_p), ("flags", ctypes.c_int),
                ("data", ctypes.c_void_p), ("size", ctypes.c_size_t),
                ("maxsize", ctypes.c_size_t),
                ("user_data", ctypes.c_void_p * 4),
                ("_reserved", ctypes.c_void_p * 4)]


_gst.gst_buffer_map.argtypes = [ctypes.c_void_p, ctypes.POINTER(MapInfo),
                                ctypes.c_int]
_gst.gst_buffer_unmap.argtypes = [ctypes.c_void_p, ctypes.POINTER(MapInfo)]
_gst.gst_buffer_unmap.restype = None


class Freed(object):
    """Counts the finalization of one buffer (a weak ref on the
    GstMiniObject: called when its last reference goes)."""

    def __init__(self, buf):
        self.count = 0

        def notify(_data, _obj):
            self.count += 1

        self._cb = WEAK(notify)
        _gst.gst_mini_object_weak_ref(hash(buf), self._cb, None)


def host_address(buf):
    """Where the buffer's bytes are (one memory: no merge copy)."""
    bt.check(buf.n_memory() == 1)
    info = MapInfo()
    bt.check(_gst.gst_buffer_map(hash(buf), ctypes.byref(info), 1))
    addr = info.data
    _gst.gst_buffer_unmap(hash(buf), ctypes.byref(info))
    return addr


def pull_one(launch):
    """(pipeline, sample) of the first frame of @launch ending in appsink
    name=s; the appsink keeps no last sample."""
    p = Gst.parse_launch(launch)
    s = p.get_by_name("s")
    s.set_property("enable-last-sample", False)
    bt.check(p.set_state(Gst.State.PLAYING) != Gst.StateChangeReturn.FAILURE)
    sample = s.emit("try-pull-sample", 10 * Gst.SECOND)
    bt.check(sample is not None, "no sample from " + launch)
    return p, sample


def stop(p):
    p.set_state(Gst.State.NULL)
    p.get_state(Gst.CLOCK_TIME_NONE)


def check_host_frame(torch, box, want_shapes, want_strides):
    """@box: [sample], emptied: the caller keeps no reference."""
    sample = box.pop()
    buf = sample.get_buffer()
    freed = Freed(buf)
    base = host_address(buf)
    vmeta = GstVideo.buffer_get_video_meta(buf)
    planes = pfgst.tensors(sample)
    bt.check(len(planes) == len(want_shapes), repr(planes))
    tts = []
    for i, t in enumerate(planes):
        tt = torch.from_dlpack(t)
        off = vmeta.offset[i] if vmeta else GstVideo.VideoInfo.new_from_caps(
            sample.get_caps()).offset[i]
        # the tensor is the buffer's bytes in place
        bt.check(tt.data_ptr() == base + off == t.data_ptr,
                 "plane %d at %#x, frame at %#x + %d" % (
                     i, tt.data_ptr(), base, off))
        bt.check(tuple(tt.shape) == want_shapes[i], repr(tt.shape))
        bt.check(tuple(tt.stride()) == want_strides[i], repr(tt.stride()))
        bt.check(tt.dtype == torch.uint8)
        tts.append(tt)
    print("  %s: %s at %#x" % (sample.get_caps().get_structure(0)
                               .get_value("format"),
                               [tuple(x.shape) for x in tts], base))
    del buf, planes, sample, vmeta, t, tt
    gc.collect()
    # every tensor keeps the buffer; it goes with the last one
    for i in range(len(tts) - 1):
        tts.pop(0)
        gc.collect()
        bt.check(freed.count == 0, "buffer freed with a tensor alive")
    bt.check(freed.count == 0)
    tts.pop()
    gc.collect()
    bt.check(freed.count == 1, "buffer freed %d times after the last tensor"
             % freed.count)


def case_host():
    try:
        import torch
    except ImportError:
        print("SKIP: no python3-torch")
        sys.exit(SKIP)
    for caps, shapes, strides in (
            ("RGBA,width=64,height=48", [(48, 64, 4)], [(256, 4, 1)]),
            ("NV12,width=64,height=48", [(48, 64), (24, 32, 2)],
             [(64, 1), (64, 2, 1)]),
            ("RGB,width=33,height=17", [(17, 33, 3)], [(100, 3, 1)])):
        p, sample = pull_one("videotestsrc num-buffers=1 ! video/x-raw,format="
                             + caps + " ! appsink name=s")
        stop(p)
        del p           # its pool keeps a buffer that came back
        gc.collect()
        box = [sample]
        del sample
        check_host_frame(torch, box, shapes, strides)
    # pinned memory (a producer's sealed segment) lent without a copy
    with bt.Env() as env:
        sock = env.path("cam.sock")
        prod = env.gst("videotestsrc num-buffers=30 ! video/x-raw,format=RGBA,"
                       "width=64,height=48,framerate=30/1 ! pinnedshmsink "
                       "socket-path=%s wait-for-connection=true" % sock)
        p, sample = pull_one("pinnedshmsrc socket-path=%s connect-timeout=10000"
                             " ! appsink name=s" % sock)
        mem = sample.get_buffer().peek_memory(0)
        print("  pinnedshmsrc memory:", mem.allocator.mem_type)
        del mem
        stop(p)
        del p
        gc.collect()
        box = [sample]
        del sample
        check_host_frame(torch, box, [(48, 64, 4)], [(256, 4, 1)])
        # the producer waits for a next client: ended by the Env
        bt.check(prod.poll() is None or prod.returncode == 0)


def emulator():
    if not os.environ.get("GST_PINNEDFLOW_CUDART"):
        print("SKIP: GST_PINNEDFLOW_CUDART (the emulator) not set")
        sys.exit(SKIP)
    rt = ct.runtime()
    rt.pfemu_query.restype = ctypes.c_long
    rt.pfemu_query.argtypes = [ctypes.c_char_p]
    return rt


def frame_pattern(fmt, w, h, n):
    """The bytes of frame @n as rows of every plane (the layout
    buffer_from_tensor takes for planar formats)."""
    if fmt == "RGBA":
        return bt.pattern(w, h, n)
    rows = h * 3 // 2
    return bt.pattern(w, rows, n, channels=1)[:, :, 0]


def push_frames(fmt, w, h, n, tail, caps_tail=""):
    """appsrc (host frames of frame_pattern) ! @tail ! appsink s: the
    pipeline and its appsrc."""
    caps = "video/x-raw,format=%s,width=%d,height=%d,framerate=30/1" % (
        fmt, w, h)
    p = Gst.parse_launch("appsrc name=src format=time caps=%s ! %s ! appsink "
                         "name=s sync=false%s" % (caps, tail, caps_tail))
    return p, caps


def case_device():
    rt = emulator()
    w, h = 64, 48
    gst124 = Gst.version() >= (1, 24, 0, 0)
    for feature in ("memory:CUDAMemory", "memory:PinnedflowCUDA"):
        for fmt in ("RGBA", "NV12"):
            p, caps = push_frames(fmt, w, h, 1, "pinnedcudaupload ! "
                                  "video/x-raw(%s)" % feature)
            s = p.get_by_name("s")
            s.set_property("enable-last-sample", False)
            p.set_state(Gst.State.PLAYING)
            want = frame_pattern(fmt, w, h, 3)
            src = p.get_by_name("src")
            buf = Gst.Buffer.new_wrapped(want.tobytes())
            buf.pts = 0
            src.emit("push-buffer", buf)
            src.emit("end-of-stream")
            sample = s.emit("try-pull-sample", 10 * Gst.SECOND)
            bt.check(sample is not None)
            bt.check(sample.get_caps().get_features(0).contains(feature))
            # the upload's pool keeps frames that come back until it goes
            stop(p)
            del p, s, src
            gc.collect()
            dev_buf = sample.get_buffer()
            freed = Freed(dev_buf)
            planes = pfgst.tensors(sample)
            bt.check(len(planes) == (1 if fmt == "RGBA" else 2))
            sync = feature == "memory:PinnedflowCUDA" or gst124 or \
                os.environ.get("GST_PINNEDFLOW_GSTCUDA")
            got = []
            for i, t in enumerate(planes):
                cai = t.__cuda_array_interface__
                bt.check(t.__dlpack_device__() == (2, 0))
                waits0 = rt.pfemu_query(b"stream.waits")
                cap = t.__dlpack__(stream=-1)
                bt.check(rt.pfemu_query(b"stream.waits") == waits0)
                cap2 = t.__dlpack__(stream=1)
                waits = rt.pfemu_query(b"stream.waits") - waits0
                bt.check(waits == (1 if sync else 0),
                         "%s: %d stream waits for __dlpack__(stream=1)"
                         % (feature, waits))
                arr, info = ct.consume(rt, cap)
                bt.check(info["data"] == cai["data"][0] == t.data_ptr)
                bt.check(info["device"] == (2, 0))
                bt.check(tuple(info["shape"]) == cai["shape"])
                got.append(arr)
                del cap2     # never consumed: its destructor deletes it
            if fmt == "RGBA":
                bt.check(numpy.array_equal(got[0], want), "RGBA bytes")
            else:
                bt.check(numpy.array_equal(got[0], want[:h]), "Y bytes")
                bt.check(numpy.array_equal(got[1].reshape(h // 2, w),
                                           want[h:]), "UV bytes")
            print("  %s %s: %d planes byte-exact, sync %s" % (
                feature, fmt, len(got), bool(sync)))
            del sample, dev_buf
            gc.collect()
            bt.check(freed.count == 0, "freed while a Tensor lives")
            del planes, t
            gc.collect()
            bt.check(freed.count == 1, "buffer not freed after the tensors")
    bt.check(rt.pfemu_query(b"events.cross_context") == 0)


def run_to_eos(p, n_frames):
    """Pulls every sample of appsink s until EOS; returns their bytes."""
    s = p.get_by_name("s")
    out = []
    while True:
        smp = s.emit("try-pull-sample", 10 * Gst.SECOND)
        if smp is None:
            break
        buf = smp.get_buffer()
        ok, info = buf.map(Gst.MapFlags.READ)
        bt.check(ok)
        vi = GstVideo.VideoInfo.new_from_caps(smp.get_caps())
        out.append((bytes(info.data), vi, GstVideo.buffer_get_video_meta(buf)))
        buf.unmap(info)
    msg = p.get_bus().pop_filtered(Gst.MessageType.ERROR)
    if msg is not None:
        e, dbg = msg.parse_error()
        bt.fail("pipeline error from %s: %s (%s)" % (msg.src.get_name(),
                                                     e.message, dbg))
    bt.check(s.get_property("eos") or len(out) == n_frames)
    return out


def plane_rows(data, vi, meta, plane, rows, row_bytes):
    off = meta.offset[plane] if meta else vi.offset[plane]
    stride = meta.stride[plane] if meta else vi.stride[plane]
    return numpy.stack([numpy.frombuffer(data, numpy.uint8, row_bytes,
                                         off + r * stride)
                        for r in range(rows)])


def check_frame(out, fmt, w, h, want):
    data, vi, meta = out
    if fmt == "RGBA":
        got = plane_rows(data, vi, meta, 0, h, w * 4).reshape(h, w, 4)
        return numpy.array_equal(got, want)
    y = plane_rows(data, vi, meta, 0, h, w)
    uv = plane_rows(data, vi, meta, 1, h // 2, w)
    return numpy.array_equal(y, want[:h]) and numpy.array_equal(uv, want[h:])


def case_appsrc():
    # every element the case needs, or SKIP naming the one missing
    rt = emulator()
    for name in ("appsrc", "appsink", "capsfilter", "pinnedcudaupload",
                 "pinnedcudadownload", "cudadownload"):
        f = Gst.ElementFactory.find(name)
        if f is None or f.load() is None:
            print("SKIP: %s is not registered" % name)
            sys.exit(SKIP)
    gst124 = Gst.version() >= (1, 24, 0, 0)
    w, h, n = 64, 48, 4
    for fmt, feature, down, want_copies in (
            ("RGBA", "memory:CUDAMemory", "cudadownload", 0 if gst124 else 1),
            ("NV12", "memory:CUDAMemory", "cudadownload", 0 if gst124 else 1),
            ("NV12", "memory:PinnedflowCUDA", "pinnedcudadownload", 1)):
        caps = "video/x-raw(%s),format=%s,width=%d,height=%d,framerate=30/1" \
            % (feature, fmt, w, h)
        p = Gst.parse_launch("appsrc name=src format=time caps=%s ! %s ! "
                             "video/x-raw ! appsink name=s sync=false"
                             % (caps, down))
        src = p.get_by_name("src")
        p.set_state(Gst.State.PAUSED)
        # the pipeline's CUDA context, from downstream's context query
        ctx = pfgst.query_cuda_context(src) \
            if feature == "memory:CUDAMemory" else None
        p.set_state(Gst.State.PLAYING)
        tensors, wants, held = [], [], []
        for i in range(n):
            want = frame_pattern(fmt, w, h, i)
            t = ct.DeviceTensor(rt, want.shape).upload(want)
            buf, copies = pfgst.buffer_from_tensor(
                t, caps, cuda_context=ctx, return_copies=True)
            bt.check(copies == want_copies, "%s %s: %d copies, want %d" % (
                fmt, feature, copies, want_copies))
            bt.check(t.lent == 1)
            buf.pts = i * Gst.SECOND // 30
            buf.duration = Gst.SECOND // 30
            src.emit("push-buffer", buf)
            # still held here: appsrc's first buffer is copied to be flagged
            # DISCONT, which must share the device memory, not read it back
            held.append(buf)
            tensors.append(t)
            wants.append(want)
        src.emit("end-of-stream")
        out = run_to_eos(p, n)
        bt.check(len(out) == n, "%d of %d frames" % (len(out), n))
        for i in range(n):
            bt.check(check_frame(out[i], fmt, w, h, wants[i]),
                     "%s %s frame %d not byte-exact" % (fmt, feature, i))
        stop(p)
        if want_copies == 0:
            bt.check([t.deleted for t in tensors] == [0] * n,
                     "a wrapped tensor deleted while its buffer lives")
        del p, src, ctx, held, buf
        gc.collect()
        deleted = [t.deleted for t in tensors]
        bt.check(deleted == [1] * n, "deleters ran %r" % deleted)
        print("  %s %s -> %s: %d frames byte-exact, %d copies each, "
              "deleters %r" % (feature, fmt, down, n, want_copies, deleted))

    # an object with only __cuda_array_interface__ (Numba's kind: "stream"
    # None for work on the legacy default stream)
    import weakref

    class CaiOnly(object):
        def __init__(self, t, stream=None):
            self.t = t
            self.__cuda_array_interface__ = {
                "shape": t.shape, "typestr": "|u1", "data": (t.ptr, False),
                "strides": (t.pitch, 4, 1), "version": 3, "stream": stream}

    # "stream": 0 is disallowed (v3): refused, the object not held
    want = bt.pattern(w, h, 76)
    obj = CaiOnly(ct.DeviceTensor(rt, want.shape).upload(want), stream=0)
    alive = weakref.ref(obj)
    try:
        pfgst.buffer_from_tensor(obj, "video/x-raw(memory:CUDAMemory),"
                                 "format=RGBA,width=%d,height=%d" % (w, h))
        bt.fail("__cuda_array_interface__ stream 0 accepted")
    except pfgst.TensorError as e:
        bt.check(e.code == pfgst.ERROR_LAYOUT and "stream 0" in str(e), str(e))
    del obj
    gc.collect()
    bt.check(alive() is None, "a refused interface's object held")

    caps = "video/x-raw(memory:CUDAMemory),format=RGBA,width=%d,height=%d," \
        "framerate=30/1" % (w, h)
    p = Gst.parse_launch("appsrc name=src format=time caps=%s ! cudadownload"
                         " ! video/x-raw ! appsink name=s sync=false" % caps)
    src = p.get_by_name("src")
    p.set_state(Gst.State.PLAYING)
    want = bt.pattern(w, h, 77)
    late = rt.pfemu_query(b"copies.sync.late")
    obj = CaiOnly(ct.DeviceTensor(rt, want.shape).upload(want))
    # the upload from pageable memory is still queued on the legacy stream
    # (as the real runtime may leave it): "stream" None must not mean "read
    # now" where the reader is in another context (a wrapped tensor's)
    bt.check(rt.pfemu_query(b"copies.sync.late") == late + 1,
             "the upload did not land late: the case tests no ordering")
    alive = weakref.ref(obj)
    waits = rt.pfemu_query(b"stream.waits")
    buf, copies = pfgst.buffer_from_tensor(obj, caps, return_copies=True)
    bt.check(copies == (0 if gst124 else 1))
    # wrapped: the memory's stream waits for the legacy stream on the GPU
    waits = rt.pfemu_query(b"stream.waits") - waits
    bt.check(waits == (1 if copies == 0 else 0),
             "%d stream waits for a wrapped \"stream\": None tensor" % waits)
    del obj
    gc.collect()
    bt.check((alive() is not None) == (copies == 0),
             "the interface's object held %s" % (alive() is not None))
    src.emit("push-buffer", buf)
    del buf
    src.emit("end-of-stream")
    out = run_to_eos(p, 1)
    bt.check(len(out) == 1 and check_frame(out[0], "RGBA", w, h, want),
             "__cuda_array_interface__ frame not byte-exact")
    stop(p)
    del p, src
    gc.collect()
    bt.check(alive() is None, "the interface's object outlived the pipeline")
    print("  __cuda_array_interface__ only -> cudadownload: byte-exact, "
          "%d copies, released after the pipeline" % copies)

    # host tensors: wrapped (no copy) through the upload; copied into a
    # pool's buffer
    caps = "video/x-raw,format=RGBA,width=%d,height=%d,framerate=30/1" % (w, h)
    p = Gst.parse_launch("appsrc name=src format=time caps=%s ! "
                         "pinnedcudaupload ! cudadownload ! video/x-raw ! "
                         "appsink name=s sync=false" % caps)
    src = p.get_by_name("src")
    p.set_state(Gst.State.PLAYING)
    pool = GstVideo.VideoBufferPool.new()
    cfg = pool.get_config()
    Gst.BufferPool.config_set_params(cfg, Gst.Caps.from_string(caps),
                                     w * h * 4, 1, 0)
    pool.set_config(cfg)
    pool.set_active(True)
    wants, lives = [], []
    for i in range(n):
        want = bt.pattern(w, h, 10 + i)
        arr = numpy.array(want)
        base = sys.getrefcount(arr)
        use_pool = i % 2 == 1
        buf, copies = pfgst.buffer_from_tensor(
            arr, caps, pool=pool if use_pool else None, return_copies=True)
        bt.check(copies == (1 if use_pool else 0))
        # numpy's DLPack tensor holds the array: until the buffer is freed
        # where it was wrapped, not at all where it was copied
        gc.collect()
        bt.check(sys.getrefcount(arr) == base + (0 if use_pool else 1),
                 "array refs %d, base %d" % (sys.getrefcount(arr), base))
        if not use_pool:
            ok, info = buf.map(Gst.MapFlags.READ)
            bt.check(ok)
            buf.unmap(info)
            bt.check(host_address(buf) == arr.ctypes.data,
                     "host tensor not wrapped in place")
        buf.pts = i * Gst.SECOND // 30
        src.emit("push-buffer", buf)
        del buf
        wants.append(want)
        lives.append(arr)
    src.emit("end-of-stream")
    out = run_to_eos(p, n)
    bt.check(len(out) == n)
    for i in range(n):
        bt.check(check_frame(out[i], "RGBA", w, h, wants[i]),
                 "host frame %d not byte-exact" % i)
    stop(p)
    pool.set_active(False)
    del p, src, pool, arr
    gc.collect()
    # lives is now the arrays' one holder: once it goes, they go (a weak
    # reference shows; refcounts of different expressions are not compared:
    # Python 3.14 borrows stack references, so they differ by version)
    gone = [weakref.ref(a) for a in lives]
    del lives
    gc.collect()
    held = [r() is not None for r in gone]
    bt.check(not any(held), "arrays still held after the pipeline: %r"
             % held)
    print("  host RGBA -> pinnedcudaupload ! cudadownload: %d frames "
          "byte-exact (wrapped, and copied into a pool)" % n)


def case_example():
    emulator()
    n, w, h = 8, 64, 48
    caps = "video/x-raw,format=RGBA,width=%d,height=%d,framerate=30/1" % (w, h)
    app = os.path.join(os.path.dirname(ct.__file__), "tensor_app.py")
    with bt.Env() as env:
        ref = env.path("ref.raw")
        env.finish(env.gst("videotestsrc num-buffers=%d pattern=ball ! %s ! "
                           "filesink location=%s" % (n, caps, ref)))
        want = 255 - numpy.fromfile(ref, numpy.uint8)
        # PyGObject, and ctypes alone (the GPU kit's Python has no gi)
        for face in ("gi", "ctypes"):
            sock, out = env.path(face + ".sock"), env.path(face + ".raw")
            cam = env.gst("videotestsrc num-buffers=%d pattern=ball ! %s ! "
                          "pinnedshmsink socket-path=%s "
                          "wait-for-connection=true" % (n, caps, sock))
            p = env.spawn([sys.executable, app, sock, out, "--backend",
                           "cudart", "--gst", face])
            stdout, _ = env.finish(p, what="tensor_app.py --gst " + face)
            env.finish(cam, what="camera")
            print("  " + stdout.strip().splitlines()[-1])
            bt.check("tensor_app: %d frames, backend cudart, gst %s" % (
                n, face) in stdout, stdout)
            got = numpy.fromfile(out, numpy.uint8)
            bt.check(got.size == n * w * h * 4, "%d bytes out" % got.size)
            bt.check(numpy.array_equal(got, want), "frames out != 255 - in")


def expect_error(cls, fn, what):
    try:
        fn()
    except cls as e:
        print("  %s: %s: %s" % (what, type(e).__name__, e))
        return e
    bt.fail("%s: no %s" % (what, cls.__name__))


def case_errors():
    try:
        import torch
    except ImportError:
        print("SKIP: no python3-torch")
        sys.exit(SKIP)
    w, h = 32, 16
    caps = "video/x-raw,format=RGBA,width=%d,height=%d" % (w, h)
    t = torch.arange(h * w * 4, dtype=torch.uint8).reshape(h, w, 4)
    e = expect_error(pfgst.TensorDeviceError, lambda: pfgst.buffer_from_tensor(
        t, "video/x-raw(memory:CUDAMemory),format=RGBA,width=%d,height=%d"
        % (w, h)), "CPU tensor as CUDA memory")
    bt.check("kDLCPU" in str(e) and "kDLCUDA" in str(e))
    wide = torch.zeros(h, w, 8, dtype=torch.uint8)[:, :, :4]
    e = expect_error(pfgst.TensorError, lambda: pfgst.buffer_from_tensor(
        wide, caps), "non-contiguous tensor")
    bt.check("not contiguous" in str(e) and e.code == pfgst.ERROR_LAYOUT)
    e = expect_error(pfgst.TensorDTypeError, lambda: pfgst.buffer_from_tensor(
        t.float(), caps), "float32 for RGBA")
    bt.check(isinstance(e, TypeError) and "uint8" in str(e))
    e = expect_error(pfgst.TensorError, lambda: pfgst.buffer_from_tensor(
        t[:8], caps), "wrong shape")
    bt.check("(16, 32, 4)" in str(e))
    expect_error(pfgst.TensorError, lambda: pfgst.buffer_from_tensor(
        t, "audio/x-raw,format=S16LE"), "audio caps")
    # nothing was taken: the same tensor still goes in
    buf, copies = pfgst.buffer_from_tensor(t, caps, return_copies=True)
    bt.check(copies == 0 and buf.get_size() == h * w * 4)
    # raw pointers (no PyGObject needed): a GstBuffer pointer that is ours,
    # and back out of it, in place
    ptr = pfgst.buffer_from_tensor(t, caps, raw=True)
    bt.check(isinstance(ptr, int) and ptr != 0)
    planes = pfgst.tensors(ptr, caps)
    _gst.gst_mini_object_unref.argtypes = [ctypes.c_void_p]
    _gst.gst_mini_object_unref.restype = None
    _gst.gst_mini_object_unref(ptr)     # the Tensor holds its own reference
    back = torch.from_dlpack(planes[0])
    bt.check(back.data_ptr() == t.data_ptr() and torch.equal(back, t))
    del planes, back
    # and in a Python without PyGObject at all
    code = "; ".join([
        "import sys, numpy; sys.modules['gi'] = None",
        "from pinnedflow import gst", "assert gst.Gst is None",
        "a = numpy.arange(%d, dtype=numpy.uint8).reshape(%d, %d, 4)"
        % (h * w * 4, h, w),
        "p = gst.buffer_from_tensor(a, %r)" % caps,
        "t = gst.as_tensor(p, %r)" % caps,
        "gst._gstlib.gst_mini_object_unref(p)",
        "assert t.data_ptr == a.ctypes.data",
        "assert (numpy.asarray(t) == a).all()", "print('no-gi ok')"])
    with bt.Env() as env:
        out, _ = env.finish(env.spawn([sys.executable, "-c", code]),
                            what="pinnedflow.gst without gi")
    bt.check("no-gi ok" in out, out)
    # memory that is neither host-mappable nor CUDA: an fd memory of a pipe
    r, wfd = os.pipe()
    os.close(wfd)
    alloc = GstAllocators.FdAllocator.new()
    mem = GstAllocators.FdAllocator.alloc(alloc, r, h * w * 4,
                                          GstAllocators.FdMemoryFlags.NONE)
    bad = Gst.Buffer.new()
    bad.append_memory(mem)
    e = expect_error(pfgst.TensorMemoryError, lambda: pfgst.tensors(bad, caps),
                     "an fd memory of a pipe")
    bt.check("neither host-mappable nor CUDA" in str(e))
    expect_error(pfgst.TensorError, lambda: pfgst.tensors(
        Gst.Buffer.new_allocate(None, 100, None), caps), "a short buffer")
    expect_error(TypeError, lambda: pfgst.tensors(object(), caps),
                 "not a buffer")


if __name__ == "__main__":
    sys.exit(bt.run_cases({"host": case_host, "device": case_device,
                           "device-1.24": case_device,
                           "appsrc": case_appsrc, "errors": case_errors,
                           "example": case_example}))
