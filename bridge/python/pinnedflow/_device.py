# pinnedflow Python binding: device frames of nodes (CUDA device segments).
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Device frames in nodes (docs/cuda.md, "Device frames in nodes").

A Consumer(..., device=True) receives the frames a device producer
publishes in its CUDA device segments with no copy: Frame.domain is
"device", Frame.device the CUDA ordinal here, and the frame is lent as
kDLCUDA (DLPack), __cuda_array_interface__ (version 3) and Arrow
ARROW_DEVICE_CUDA. A Producer(..., device=N) loans slots in device memory:
Loan.__cuda_array_interface__ / __dlpack__ are writable device views.

Host-only paths (array(), buffer, plane(), chunks(), borrow(), numpy,
memoryview, Uploader.upload) refuse a device frame with TypeError (or
ValueError for the upload): device memory is never read by the CPU.

Streams: a producer publishes a frame only once its writes completed, so
no consumer stream waits for anything (CAI's "stream" is None, Arrow's
sync_event NULL). The other way round: the frame goes back (the last of
release() and the death of every tensor/borrower) only once the streams
named as its readers are done (cuStreamSynchronize at the release): the
stream given to __dlpack__(stream=) (None: the legacy default stream, -1:
none), the legacy default stream for a __cuda_array_interface__ consumer,
and any passed to Frame.read_on(). Reads on other streams must have
completed before the release.
"""

import ctypes

from . import _native as _n
from . import _export as _x

P = ctypes.c_void_p
lib = _n.lib
lib.pf_hold_new_segment.restype = P
lib.pf_hold_new_segment.argtypes = [P]
lib.pf_node_frame_read_on.restype = ctypes.c_int
lib.pf_node_frame_read_on.argtypes = [P, ctypes.c_size_t]
lib.pf_node_device_sync_errors.restype = ctypes.c_uint64
lib.pf_node_device_sync_errors.argtypes = []


def frame_device_info(frame_ptr):
    """pf_node_device_info of a received device frame (pointer)."""
    info = _n.DeviceInfo()
    res = lib.pf_node_frame_get_device(frame_ptr, ctypes.byref(info))
    if res < 0:
        raise ValueError("pinnedflow: not a device frame")
    return info


def refuse_host(obj, what):
    """TypeError for a host-only path of a device frame or loan."""
    if getattr(obj, "domain", "host") == "device":
        raise TypeError(
            "pinnedflow: %s: the frame is in device memory (cuda:%d), not "
            "host memory; lend it with DLPack (torch.from_dlpack(frame)), "
            "__cuda_array_interface__ (cupy.asarray) or "
            "__arrow_c_device_array__" % (what, obj.device))


def check_stream(stream):
    """DLPack's __dlpack__(stream=) rule for kDLCUDA: None (legacy default
    stream), 1 (legacy), 2 (per-thread), -1 (no synchronisation) or a
    cudaStream_t; 0 is ambiguous and refused. Nothing is queued on it: the
    frame was complete when published."""
    if stream is None:
        return
    s = int(stream)
    if s == 0 or s < -1:
        raise BufferError("pinnedflow: stream %r is not a stream for "
                          "kDLCUDA (None, -1, 1, 2 or a cudaStream_t)"
                          % (stream,))


def _typestr(desc):
    item = desc.dtype_bits // 8
    return "<u%d" % item if item > 1 else "|u1"


def cai(desc, readonly):
    """A __cuda_array_interface__ version 3 of a DLPack description
    (strides in bytes). "stream" None: nothing to synchronise with, the
    bytes were complete when published (CAI v3: None means no sync)."""
    item = desc.dtype_bits // 8
    n = desc.ndim
    return {
        "shape": tuple(desc.shape[i] for i in range(n)),
        "typestr": _typestr(desc),
        "data": (desc.data or 0, bool(readonly)),
        "strides": tuple(desc.strides[i] * item for i in range(n)),
        "version": 3,
        "stream": None,
    }


def check_dl_device(dl_device, ordinal):
    if dl_device is not None and tuple(dl_device) != (_x.DL_CUDA, ordinal):
        raise BufferError("pinnedflow: the frame is on %r (kDLCUDA), not %r"
                          % ((_x.DL_CUDA, ordinal), tuple(dl_device)))


class FrameDevice(object):
    """The device exports of a received Frame (mixed into
    _export.HostFrameExports' dispatch)."""

    def _device_export(self, desc, fill, kind, what):
        """Fills @desc with @fill(frame, @kind, desc); a BufferError that
        says the frame is not @what on failure."""
        res = fill(self._frame_ptr(), kind, ctypes.byref(desc))
        if res < 0:
            raise BufferError("pinnedflow: device frame not %s: %s"
                              % (what, lib.pf_node_strerror(res).decode()))
        return desc

    def _device_desc(self):
        return self._device_export(_x.DlpackDesc(),
                                   lib.pf_dlpack_desc_from_frame, _x.DL_CUDA,
                                   "viewable as a tensor")

    def _device_dlpack(self, stream, max_version, dl_device):
        check_dl_device(dl_device, self.device)
        check_stream(stream)
        desc = self._device_desc()
        # DLPack: None is the legacy default stream; -1 names none
        self.read_on(1 if stream is None else int(stream))
        return _x.dlpack_capsule(desc, self._p, max_version, self.readonly)

    def _device_arrow(self):
        desc = self._device_export(_x.ArrowDesc(),
                                   lib.pf_arrow_desc_from_frame,
                                   _x.ARROW_CUDA, "exportable to Arrow")
        return _x.arrow_capsules(desc, self._p, True)

    def read_on(self, stream):
        """Names @stream (a cudaStream_t value; 1 the legacy default
        stream, 2 the per-thread one; -1 does nothing) a reader of the
        device frame: it goes back to the producer only once the work
        queued on @stream completed (at most 8 streams)."""
        if self.domain != "device":
            raise TypeError("read_on(): a host frame")
        s = int(stream)
        if s == -1:
            return
        res = lib.pf_node_frame_read_on(self._frame_ptr(), s)
        if res < 0:
            raise ValueError("pinnedflow: cannot name stream %r a reader "
                             "of the frame: %s" % (
                                 stream, lib.pf_node_strerror(res).decode()))

    @property
    def __cuda_array_interface__(self):
        """Version 3, the frame's shape (as DLPack), read-only where the
        mapping is, "stream" None (complete when published). The interface
        cannot name the consumer's stream: the legacy default stream (where
        CuPy and Numba work unless told otherwise) is named a reader; a
        consumer on a stream of its own calls read_on(). Valid until
        release(): a consumer that may outlive it takes cuda_borrow()."""
        if self.domain != "device":
            raise AttributeError("__cuda_array_interface__: a host frame "
                                 "(use array() or DLPack)")
        desc = self._device_desc()
        self.read_on(1)
        return cai(desc, self.readonly)

    def cuda_borrow(self):
        """An object with the frame's __cuda_array_interface__ that holds
        the frame (as DLPack tensors do) until it and the arrays made from
        it (cupy.asarray keeps it) are gone."""
        if self.domain != "device":
            raise TypeError("cuda_borrow(): a host frame (use borrow())")
        desc = self._device_desc()
        self.read_on(1)
        return _CudaBorrow(self._p, cai(desc, self.readonly))


class _CudaBorrow(object):
    def __init__(self, hold, iface):
        self._borrow = _x._Borrow(hold)
        self.__cuda_array_interface__ = iface


def loan_desc(loan):
    """The DLPack description of a device loan: (h, w, c) uint8 for one
    packed plane of the producer's video, (h, w) for one byte per pixel,
    else the slot's bytes (capacity)."""
    raw = loan._raw
    d = _x.DlpackDesc()
    d.device_type = _x.DL_CUDA
    d.device_id = loan.device
    d.dtype_code, d.dtype_bits, d.dtype_lanes = 1, 8, 1
    lay = raw.layout
    if (raw.has_video_meta and lay.n_planes == 1 and lay.pixel_stride and
            lay.width and lay.height and lay.plane_stride[0] > 0):
        d.data = raw.data + lay.plane_offset[0]
        c = lay.pixel_stride
        if c == 1:
            d.ndim = 2
            d.shape[:2] = [lay.height, lay.width]
            d.strides[:2] = [lay.plane_stride[0], 1]
        else:
            d.ndim = 3
            d.shape[:3] = [lay.height, lay.width, c]
            d.strides[:3] = [lay.plane_stride[0], c, 1]
        return d
    d.data = raw.data
    d.ndim = 1
    d.shape[0] = raw.capacity
    d.strides[0] = 1
    return d


class LoanDevice(object):
    """The writable device views of a device producer's Loan. Write with
    CUDA (a tensor's copy_(), cuMemcpy, a kernel); publish() only once
    every write completed (torch.cuda.current_stream().synchronize(), or
    publish(stream=...) with the stream that wrote)."""

    @property
    def device_ptr(self):
        """The slot's device address (a CUdeviceptr)."""
        return self._raw.data

    def _views(self):
        if self._done:
            raise ValueError("loan already published or discarded")
        if self.domain != "device":
            raise TypeError("a host loan: use array() or buffer")
        return loan_desc(self)

    @property
    def __cuda_array_interface__(self):
        if self.domain != "device":
            raise AttributeError("__cuda_array_interface__: a host loan")
        return cai(self._views(), False)

    def __dlpack_device__(self):
        if self.domain != "device":
            return (_x.DL_CPU, 0)
        return (_x.DL_CUDA, self.device)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None,
                   copy=None):
        """A writable kDLCUDA capsule of the slot (holding the producer's
        segment mapped while the tensor lives; do not use it after
        publish())."""
        desc = self._views()
        if copy:
            raise BufferError("pinnedflow: loans are lent, not copied")
        check_dl_device(dl_device, self.device)
        check_stream(stream)
        hold = lib.pf_hold_new_segment(self._producer.segment._ptr)
        if not hold:
            raise MemoryError("pinnedflow: no memory for a hold")
        try:
            return _x.dlpack_capsule(desc, hold, max_version, False)
        finally:
            lib.pf_hold_unref(hold)     # the capsule holds its own


def sync_stream(stream):
    """cuStreamSynchronize(@stream) through the CUDA driver (libcuda.so.1):
    what Loan.publish(stream=...) does before sending a device frame."""
    s = int(stream)
    if s == 0 or s < -1:
        raise ValueError("pinnedflow: stream %r is not a stream (1, 2 or a "
                         "cudaStream_t)" % (stream,))
    if s == -1:
        return
    try:
        drv = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        raise OSError("pinnedflow: no CUDA driver to synchronise stream %r: "
                      "%s" % (stream, e))
    fn = drv.cuStreamSynchronize
    fn.restype = ctypes.c_int
    fn.argtypes = [P]
    res = fn(s)
    if res != 0:
        raise OSError("pinnedflow: cuStreamSynchronize(%r) failed: CUDA "
                      "error %d" % (stream, res))
