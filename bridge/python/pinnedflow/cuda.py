# pinnedflow Python binding: received frames onto a CUDA device.
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Frames onto the GPU with the engine pinnedcudaupload uses (pf-upload.h,
pf-node-cuda.h): the frame's segment is registered once per process, the
planes are copied by DMA on the engine's stream into a device buffer of a
bounded pool, and the host frame goes back to its producer only when the
copy's event has completed (and its other borrowers are gone).

::

    import pinnedflow, pinnedflow.cuda, torch
    up = pinnedflow.cuda.Uploader()              # device 0, own stream
    with pinnedflow.Consumer("/tmp/cam.sock") as cons:
        for frame in cons:
            with frame, up.upload(frame) as dev:  # frame released after copy
                t = torch.from_dlpack(dev)       # (h, w, 4) uint8 on cuda:0
                ...                              # queue work reading t

A DeviceFrame is a __cuda_array_interface__ (version 3, with the copies'
stream) and a DLPack (kDLCUDA) and Arrow C Device (ARROW_DEVICE_CUDA, the
copy's event as sync_event) producer. Its device buffer goes back to the
pool when the DeviceFrame was released and every tensor or array that
borrowed it is gone.

The one rule of reuse: the buffer is written again (by a later upload)
only after the work queued, before it went back, on the engine's stream
and on every stream that named itself a reader: the stream given to
__dlpack__(stream=...) (what torch.from_dlpack passes: the current stream;
None or 1 the legacy default stream, 2 the per-thread one), the legacy
default stream for a __cuda_array_interface__ consumer (CuPy, Numba and
PyTorch read there unless told otherwise), and any stream passed to
read_on(). An event is recorded on each at release and the engine's stream
waits for it (cudaStreamWaitEvent), so the loop above may drop the tensor
while a kernel reading it is still queued. Work on any other stream
(stream=-1, a consumer's side stream it did not name) must have completed
before the release. A named stream must stay alive until the release.

Nothing here loads CUDA until an Uploader is made: without a runtime or a
device, Uploader() raises PinnedflowError (ENOENT "no CUDA runtime",
ENODEV "no CUDA device") with the runtime's reason. The runtime library
is libcudart.so.13, .12, ... or what GST_PINNEDFLOW_CUDART names.
"""

import ctypes

from . import _native as _n
from . import _export as _x
from . import PinnedflowError, _check, _Handle

__all__ = ["Uploader", "DeviceFrame"]

P = ctypes.c_void_p
PP = ctypes.POINTER(ctypes.c_void_p)
u32 = ctypes.c_uint32
u64 = ctypes.c_uint64

UPLOADER_NO_THREAD = 1 << 0
UPLOADER_NO_BOUNCE = 1 << 1
READ_NO_WAIT = 1 << 0               # PF_DEVICE_FRAME_READ_NO_WAIT


class UploaderConfig(ctypes.Structure):
    """pf_uploader_config (pf-upload.h)."""
    _fields_ = [
        ("device_id", ctypes.c_int),
        ("stream", P),
        ("max_inflight", ctypes.c_uint),
        ("pool_size", ctypes.c_uint),
        ("flags", ctypes.c_uint),
        ("reserved", ctypes.c_uint * 4),
    ]


class DeviceFrameStruct(ctypes.Structure):
    """pf_device_frame (pf-upload.h), read-only."""
    _fields_ = [
        ("device_id", ctypes.c_int),
        ("n_planes", u32),
        ("data", P * _n.MAX_PLANES),
        ("pitch", ctypes.c_size_t),
        ("plane_rows", u32 * _n.MAX_PLANES),
        ("plane_row_bytes", u32 * _n.MAX_PLANES),
        ("plane_offset", u64 * _n.MAX_PLANES),
        ("base", P),
        ("alloc_size", ctypes.c_size_t),
        ("width", u32), ("height", u32),
        ("format", ctypes.c_char * 16),
        ("pixel_stride", u32), ("reserved0", u32),
        ("seq", u64), ("pts", u64),
        ("event", P),
        ("stream", P),
        ("reserved", u64 * 4),
    ]


class UploaderStats(ctypes.Structure):
    """pf_uploader_stats (pf-upload.h)."""
    _fields_ = [(n, u64) for n in (
        "frames", "bytes", "pinned_copies", "staged_copies",
        "pageable_copies", "registrations", "waits_full", "inflight_max",
        "pool_waits", "pool_out_max", "reader_waits",
        "reader_errors")] + [("reserved", u64 * 4)]


_DFP = ctypes.POINTER(DeviceFrameStruct)
_protos = {
    "pf_uploader_new": (ctypes.c_int, [ctypes.POINTER(UploaderConfig), PP,
                                       ctypes.c_char_p, ctypes.c_size_t]),
    "pf_cuda_runtime_error": (ctypes.c_char_p, []),
    "pf_uploader_free": (None, [P]),
    "pf_uploader_flush": (ctypes.c_int, [P]),
    "pf_uploader_get_stream": (P, [P]),
    "pf_uploader_get_inflight": (ctypes.c_uint, [P]),
    "pf_uploader_get_error": (ctypes.c_char_p, [P]),
    "pf_uploader_get_stats": (None, [P, ctypes.POINTER(UploaderStats)]),
    "pf_hold_upload_node_frame": (ctypes.c_int, [
        P, P, ctypes.c_int, ctypes.POINTER(_DFP)]),
    "pf_hold_new_device_frame": (P, [_DFP]),
    "pf_device_frame_release": (None, [_DFP]),
    "pf_device_frame_download": (ctypes.c_int, [_DFP, P, ctypes.c_size_t]),
    "pf_dlpack_desc_from_device_frame": (ctypes.c_int, [
        _DFP, ctypes.POINTER(_x.DlpackDesc)]),
    "pf_dlpack_sync_device_frame": (ctypes.c_int, [_DFP, ctypes.c_ssize_t]),
    "pf_device_frame_read_on": (ctypes.c_int, [_DFP, P, ctypes.c_uint]),
    "pf_arrow_desc_from_device_frame": (ctypes.c_int, [
        _DFP, ctypes.POINTER(_x.ArrowDesc)]),
}
lib = _n.lib
for _name, (_res, _args) in _protos.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args


class Uploader(_Handle):
    """The upload engine on @device_id: a bounded pool of @pool_size device
    buffers (0: max_inflight + 1), at most @max_inflight frames with copies
    outstanding (0: 3), its own non-blocking stream unless @stream (a
    cudaStream_t value, kept alive by the caller longer than the engine).
    close() waits for every copy and releases every host frame; device
    frames still out stay valid."""

    _free = "pf_uploader_free"

    def __init__(self, device_id=0, max_inflight=0, pool_size=0,
                 stream=None):
        cfg = UploaderConfig()
        cfg.device_id = device_id
        cfg.stream = stream
        cfg.max_inflight = max_inflight
        cfg.pool_size = pool_size
        out = ctypes.c_void_p()
        res = lib.pf_uploader_new(ctypes.byref(cfg), ctypes.byref(out),
                                  None, 0)
        # no uploader to ask: the text is this thread's (same OS thread)
        why = lib.pf_cuda_runtime_error() if res < 0 else None
        _check(res, "Uploader(device %d)" % device_id,
               why.decode("utf-8", "replace") if why else None)
        self._ptr = out

    def upload(self, frame, timeout_ms=-1):
        """Queues the copy of a received pinnedflow.Frame; returns its
        DeviceFrame at once (the copy completes on the engine's stream: wait
        for .event, or hand it to a consumer that does, DLPack and the CUDA
        array interface do). The frame is borrowed until the copy completed:
        release it when you like. Raises TimeoutError when no device buffer
        came back in time."""
        if getattr(frame, "domain", "host") == "device":
            raise ValueError("pinnedflow: upload(): frame seq %d is already "
                             "in device memory (cuda:%d): lend it with "
                             "DLPack or __cuda_array_interface__"
                             % (frame.seq, frame.device))
        out = _DFP()
        res = lib.pf_hold_upload_node_frame(self._p, frame._p, timeout_ms,
                                            ctypes.byref(out))
        if res < 0:
            err = lib.pf_uploader_get_error(self._p)
            _check(res, "upload", err.decode("utf-8", "replace")
                   if err else None)
        return DeviceFrame(out)

    def flush(self):
        """Waits until every copy completed and its host frame went back."""
        _check(lib.pf_uploader_flush(self._p), "flush")

    @property
    def stream(self):
        """The cudaStream_t (int) the copies are queued on."""
        return lib.pf_uploader_get_stream(self._p) or 0

    @property
    def inflight(self):
        return lib.pf_uploader_get_inflight(self._p)

    @property
    def stats(self):
        st = UploaderStats()
        lib.pf_uploader_get_stats(self._p, ctypes.byref(st))
        return {n: getattr(st, n) for n, _ in UploaderStats._fields_
                if n != "reserved"}



class DeviceFrame(_Handle):
    """A frame in device memory (a pool buffer of an Uploader); release()
    (or leaving a with block) gives it back."""

    _free = "pf_hold_unref"

    def __init__(self, ptr):
        h = lib.pf_hold_new_device_frame(ptr)
        if not h:
            lib.pf_device_frame_release(ptr)
            raise MemoryError("pinnedflow: no memory for a frame hold")
        self._ptr = ctypes.c_void_p(h)
        self._dev = ptr
        d = ptr.contents
        self.device_id = d.device_id
        self.width, self.height = d.width, d.height
        self.format = d.format.decode()
        self.n_planes = d.n_planes
        self.pitch = d.pitch
        self.pixel_stride = d.pixel_stride
        self.seq = d.seq
        self.pts = None if d.pts == _n.TIME_NONE else d.pts
        self.event = d.event or 0       # cudaEvent_t: bytes valid once done
        self.stream = d.stream or 0     # cudaStream_t the copies ran on
        self.data = [d.data[i] or 0 for i in range(d.n_planes)]
        self.plane_rows = list(d.plane_rows)[:d.n_planes]
        self.plane_row_bytes = list(d.plane_row_bytes)[:d.n_planes]

    @property
    def released(self):
        return self._ptr is None

    def _d(self):
        if self._ptr is None:
            raise ValueError("DeviceFrame is released")
        return self._dev

    # Gives the device buffer back to the pool once every borrower (tensor,
    # array) is gone too.
    release = _Handle.close

    def read_on(self, stream=None):
        """Names @stream as a reader (DLPack's numbering: None or 1 the
        legacy default stream, 2 the per-thread one, else a cudaStream_t
        value; -1 does nothing): it waits for the frame's event, and the
        buffer is rewritten only after the work queued on it before the
        release. __dlpack__(stream=) does this itself; call it for a
        consumer of __cuda_array_interface__ that works on a stream of its
        own. At most 8 streams per frame."""
        self._read_on(1 if stream is None else int(stream), 0)

    def _read_on(self, stream, flags):
        if stream == -1:
            return
        if stream == 0 or stream < -1:
            raise ValueError("pinnedflow: stream %r is not a stream (None, "
                             "1, 2 or a cudaStream_t)" % (stream,))
        res = lib.pf_device_frame_read_on(self._d(), stream, flags)
        if res < 0:
            raise PinnedflowError(res, "naming stream %r as a reader of the "
                                  "frame" % (stream,))

    def _desc(self):
        desc = _x.DlpackDesc()
        res = lib.pf_dlpack_desc_from_device_frame(self._d(),
                                                   ctypes.byref(desc))
        if res < 0:
            raise BufferError("pinnedflow: device frame not viewable as a "
                              "tensor: " + lib.pf_node_strerror(res).decode())
        return desc

    @property
    def shape(self):
        d = self._desc()
        return tuple(d.shape[i] for i in range(d.ndim))

    def download(self):
        """The frame's bytes copied back to the host (synchronous, after
        its event), planes one after the other, rows packed: a bytes
        object. For checks, not for the data path."""
        n = sum(r * b for r, b in zip(self.plane_rows, self.plane_row_bytes))
        buf = ctypes.create_string_buffer(max(n, 1))
        _check(lib.pf_device_frame_download(self._d(), buf, n), "download")
        return buf.raw[:n]

    @property
    def __cuda_array_interface__(self):
        """Version 3: shape/strides as the DLPack view, typestr, data
        (pointer, read-only False), and the stream the copies ran on (the
        consumer synchronises with it before reading: CAI v3). The
        interface has no way to name the consumer's stream: the legacy
        default stream (where CuPy, Numba and PyTorch work unless told
        otherwise; it also orders after every blocking stream) is named a
        reader, so the buffer is rewritten only after the work queued there
        before the release. A consumer on a non-blocking stream of its own
        calls read_on(its stream)."""
        self._read_on(1, READ_NO_WAIT)
        d = self._desc()
        item = d.dtype_bits // 8
        n = d.ndim
        return {
            "shape": tuple(d.shape[i] for i in range(n)),
            "typestr": "<u%d" % item if item > 1 else "|u1",
            "data": (d.data or 0, False),
            "strides": tuple(d.strides[i] * item for i in range(n)),
            "version": 3,
            "stream": self.stream or None,
        }

    def __dlpack_device__(self):
        return (_x.DL_CUDA, self.device_id)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None,
                   copy=None):
        """A kDLCUDA capsule holding the device frame until the consumer's
        tensor dies. @stream is the consumer's (DLPack's rule: None is the
        legacy default stream, 1 legacy, 2 per-thread, -1 no sync, else a
        cudaStream_t): it is made to wait for the frame's event, and the
        buffer is rewritten only after the work queued on it before the
        frame went back (the tensor's death included); with -1 the
        consumer's reads must have completed by then."""
        if copy:
            raise BufferError("pinnedflow: device frames are lent, not "
                              "copied (copy=True)")
        if dl_device is not None and tuple(dl_device) != \
                self.__dlpack_device__():
            raise BufferError("pinnedflow: the frame is on %r, not %r"
                              % (self.__dlpack_device__(), tuple(dl_device)))
        desc = self._desc()
        res = lib.pf_dlpack_sync_device_frame(
            self._d(), 1 if stream is None else int(stream))
        if res < 0:
            raise PinnedflowError(res, "__dlpack__: making stream %r wait "
                                  "for the frame's event" % (stream,))
        return _x.dlpack_capsule(desc, self._ptr, max_version, False)

    def __arrow_c_device_array__(self, requested_schema=None, **kwargs):
        """(schema, device array) capsules: ARROW_DEVICE_CUDA, the whole
        pitched allocation as one uint8 array (plane offsets and the pitch
        in the schema's metadata), sync_event -> the frame's cudaEvent_t."""
        desc = _x.ArrowDesc()
        res = lib.pf_arrow_desc_from_device_frame(self._d(),
                                                  ctypes.byref(desc))
        if res < 0:
            raise BufferError("pinnedflow: device frame not exportable: "
                              + lib.pf_node_strerror(res).decode())
        return _x.arrow_capsules(desc, self._ptr, True)

    def __repr__(self):
        return "<pinnedflow.cuda.DeviceFrame seq=%d %s %dx%d pitch=%d%s>" % (
            self.seq, self.format, self.width, self.height, self.pitch,
            " released" if self.released else "")
