# pinnedflow Python binding: frames lent to other libraries (DLPack, Arrow,
# the buffer protocol) for as long as they use them.
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Borrowed frames: DLPack tensors, Arrow arrays and memoryviews that keep a
frame from going back to its producer until the last of them is gone.

The count lives in C (pf-hold.h): a Frame holds one reference, every export
one more. The tensors, arrays and their deleters, release callbacks and
capsule destructors are C (pf-dlpack.c, pf-arrow.c), so they run right
whatever thread or garbage collection drops them; nothing here is a ctypes
callback."""

import ctypes

from . import _native as _n

P = ctypes.c_void_p
PP = ctypes.POINTER(ctypes.c_void_p)
i32 = ctypes.c_int32
u32 = ctypes.c_uint32
u64 = ctypes.c_uint64

MAX_DIMS = 4
DL_CPU, DL_CUDA, DL_CUDA_HOST = 1, 2, 3
DL_VERSIONED, DL_READ_ONLY = 1 << 0, 1 << 1
ARROW_CPU, ARROW_CUDA, ARROW_CUDA_HOST = 1, 2, 3


class DlpackDesc(ctypes.Structure):
    """pf_dlpack_desc (pf-dlpack.h)."""
    _fields_ = [
        ("data", P),
        ("device_type", i32), ("device_id", i32),
        ("ndim", u32),
        ("dtype_code", ctypes.c_uint8), ("dtype_bits", ctypes.c_uint8),
        ("dtype_lanes", ctypes.c_uint16),
        ("shape", ctypes.c_int64 * MAX_DIMS),
        ("strides", ctypes.c_int64 * MAX_DIMS),
    ]


class ArrowDesc(ctypes.Structure):
    """pf_arrow_desc (pf-arrow.h)."""
    _fields_ = [
        ("data", P), ("size", u64),
        ("device_type", i32), ("reserved0", i32),
        ("device_id", ctypes.c_int64),
        ("cuda_event", P),
        ("format", ctypes.c_char_p),
        ("width", u32), ("height", u32),
        ("n_planes", u32), ("reserved1", u32),
        ("plane_offset", u64 * _n.MAX_PLANES),
        ("plane_stride", u64 * _n.MAX_PLANES),
        ("plane_rows", u32 * _n.MAX_PLANES),
        ("plane_row_bytes", u32 * _n.MAX_PLANES),
        ("seq", u64), ("pts", u64),
    ]


_protos = {
    "pf_hold_new_node_frame": (P, [P]),
    "pf_hold_ref": (P, [P]),
    "pf_hold_unref": (None, [P]),
    "pf_hold_get_data": (P, [P]),
    "pf_hold_get_refcount": (ctypes.c_int, [P]),
    "pf_hold_count_live": (ctypes.c_int, []),
    "pf_dlpack_desc_from_frame": (ctypes.c_int, [
        P, i32, ctypes.POINTER(DlpackDesc)]),
    "pf_dlpack_export": (ctypes.c_int, [
        ctypes.POINTER(DlpackDesc), P, ctypes.c_uint, PP]),
    "pf_dlpack_free": (None, [P, ctypes.c_uint]),
    "pf_arrow_desc_from_frame": (ctypes.c_int, [
        P, i32, ctypes.POINTER(ArrowDesc)]),
    "pf_arrow_export_new": (ctypes.c_int, [
        ctypes.POINTER(ArrowDesc), P, PP, PP]),
    "pf_arrow_schema_free": (None, [P]),
    "pf_arrow_array_free": (None, [P]),
    "pf_node_frame_cuda_registered": (ctypes.c_int, [P]),
}
lib = _n.lib
for _name, (_res, _args) in _protos.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args

# The capsule destructors: C functions of the library (not callbacks).
_DESTRUCTORS = {
    name: ctypes.cast(getattr(lib, fn), P).value for name, fn in (
        ("dltensor", "pf_dlpack_capsule_destructor"),
        ("dltensor_versioned", "pf_dlpack_capsule_destructor"),
        ("arrow_schema", "pf_arrow_schema_capsule_destructor"),
        ("arrow_array", "pf_arrow_array_capsule_destructor"),
        ("arrow_device_array", "pf_arrow_device_array_capsule_destructor"),
    )}

# A capsule keeps the pointer to its name, not a copy: the names are C
# strings that live as long as the process (one reference never dropped).
_NAMES = {}
for _name in _DESTRUCTORS:
    _buf = ctypes.create_string_buffer(_name.encode())
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(_buf))
    _NAMES[_name] = _buf

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [P, P, P]


def capsule(ptr, name, free):
    """A PyCapsule named @name around @ptr with its C destructor; @free()
    gives @ptr back if the capsule cannot be made."""
    try:
        return _capsule_new(ptr, ctypes.addressof(_NAMES[name]),
                            _DESTRUCTORS[name])
    except BaseException:
        free()
        raise


def count_live():
    """Holds alive in this process: frames (and device frames) with a
    Python owner or a borrower (tests use it to find leaks)."""
    return lib.pf_hold_count_live()


def hold_node_frame(frame_ptr):
    """A hold that owns the received frame (released with its last
    reference); on failure the frame is released and MemoryError raised."""
    h = lib.pf_hold_new_node_frame(frame_ptr)
    if not h:
        _n.lib.pf_node_frame_release(frame_ptr)
        raise MemoryError("pinnedflow: no memory for a frame hold")
    return ctypes.c_void_p(h)


class _Borrow(object):
    """One reference on a hold, dropped when this object dies (it hangs on
    the ctypes array a memoryview exports)."""

    def __init__(self, hold):
        self._hold = lib.pf_hold_ref(hold)

    def __del__(self):
        h, self._hold = self._hold, None
        if h and _n is not None and _n.lib is not None:
            _n.lib.pf_hold_unref(h)


def borrowed_view(hold, address, size, segment, readonly=True):
    """A memoryview of [address, address + size) that holds the frame (and
    the segment's mapping) until it and every array built on it are gone."""
    arr = (ctypes.c_ubyte * size).from_address(address)
    arr._pinnedflow_borrow = _Borrow(hold)
    arr._pinnedflow_segment = segment
    mv = memoryview(arr).cast("B")
    return mv.toreadonly() if readonly else mv


def _versioned(max_version):
    return max_version is not None and tuple(max_version)[0] >= 1


def dlpack_capsule(desc, hold, max_version, read_only):
    """A "dltensor" (or, when the consumer takes DLPack >= 1.0,
    "dltensor_versioned") capsule around @desc holding @hold."""
    flags = DL_VERSIONED if _versioned(max_version) else 0
    if read_only and flags:
        flags |= DL_READ_ONLY
    out = ctypes.c_void_p()
    res = lib.pf_dlpack_export(ctypes.byref(desc), hold, flags,
                               ctypes.byref(out))
    if res < 0:
        raise BufferError("pinnedflow: DLPack export failed: %s"
                          % _n.lib.pf_node_strerror(res).decode())
    name = "dltensor_versioned" if flags & DL_VERSIONED else "dltensor"
    return capsule(out.value, name,
                   lambda: lib.pf_dlpack_free(out.value, flags))


def arrow_capsules(desc, hold, device):
    """(schema capsule, array capsule) of the Arrow PyCapsule interface:
    "arrow_device_array" when @device, else "arrow_array"."""
    schema, array = ctypes.c_void_p(), ctypes.c_void_p()
    res = lib.pf_arrow_export_new(ctypes.byref(desc), hold,
                                  ctypes.byref(schema), ctypes.byref(array))
    if res < 0:
        raise BufferError("pinnedflow: Arrow export failed: %s"
                          % _n.lib.pf_node_strerror(res).decode())
    try:
        s = capsule(schema.value, "arrow_schema",
                    lambda: lib.pf_arrow_schema_free(schema.value))
    except BaseException:
        lib.pf_arrow_array_free(array.value)
        raise
    a = capsule(array.value,
                "arrow_device_array" if device else "arrow_array",
                lambda: lib.pf_arrow_array_free(array.value))
    return s, a


class HostFrameExports(object):
    """What a received host Frame lends out (mixed into pinnedflow.Frame).

    Every export borrows the frame: the producer gets its slot back only
    when the Frame was released (release(), a with block, garbage) AND every
    export is gone. A released frame refuses new exports (ValueError).
    Frame.array()/buffer/plane() are not borrowers: they stay valid until
    release() only (copy what you keep)."""

    def _frame_ptr(self):
        return lib.pf_hold_get_data(self._p)    # _p raises once released

    def _refuse_device(self, what):
        if getattr(self, "domain", "host") == "device":
            from . import _device
            self._frame_ptr()
            _device.refuse_host(self, what)

    @property
    def cuda_registered(self):
        """True when the frame's segment is registered with CUDA in this
        process (pinned host memory). The exports still say CPU memory
        (kDLCPU, ARROW_DEVICE_CPU): __dlpack__(dl_device=(3, 0)) asks for
        kDLCUDAHost."""
        return bool(lib.pf_node_frame_cuda_registered(self._frame_ptr()))

    def borrow(self):
        """Read-only memoryview of the frame's bytes that holds the frame
        until it (and every numpy array made from it) is gone."""
        self._refuse_device("borrow()")
        if len(self._chunks) != 1:
            raise BufferError("frame has %d chunks" % len(self._chunks))
        addr, size = self._chunks[0]
        return borrowed_view(self._p, addr, size, self.segment)

    def __buffer__(self, flags):
        # The buffer protocol from Python (3.12 and later): memoryview(frame)
        import inspect
        self._refuse_device("the buffer protocol")
        if flags & inspect.BufferFlags.WRITABLE:
            raise BufferError("a received frame is read-only")
        # shaped as numpy.asarray(frame): numpy takes the buffer protocol
        # before __array__, so on 3.12+ a flat view here made
        # numpy.asarray(frame) 1-D (issue 23, Debian 13 and unstable)
        return memoryview(self.__array__())

    def __array__(self, dtype=None, copy=None):
        """numpy.asarray(frame): the read-only view of Frame.array(), but
        holding the frame while the array lives."""
        from . import _layout_array
        self._refuse_device("numpy.asarray()")
        a = _layout_array(self.borrow(), self.format, self._layout)
        if dtype is not None and a.dtype != dtype:
            return a.astype(dtype)
        return a

    def __dlpack_device__(self):
        """(kDLCPU 1, 0): host memory, whether or not an upload in this
        process registered (pinned) its segment. PyTorch, numpy and most
        consumers take no kDLCUDAHost (PyTorch: "Unsupported device_type"),
        and the answer must not change with unrelated uploads; a consumer
        that wants to know asks cuda_registered, or for kDLCUDAHost with
        __dlpack__(dl_device=(3, 0)). A released frame raises ValueError.
        A device frame: (kDLCUDA 2, its ordinal)."""
        self._frame_ptr()
        if getattr(self, "domain", "host") == "device":
            return (DL_CUDA, self.device)
        return (DL_CPU, 0)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None,
                   copy=None):
        """A DLPack capsule viewing the frame in place (shape as
        Frame.array()), holding the frame until the consumer's tensor dies
        (or the capsule, if never consumed). Host memory: @stream is not
        used. The tensor is kDLCPU; @dl_device (3, 0) asks for kDLCUDAHost,
        given only where the frame's segment is registered with CUDA in
        this process (else BufferError). The mapping is read-only: a legacy tensor cannot say so, do not
        write into it (a versioned one, max_version >= (1, 0), is flagged
        read-only)."""
        if copy:
            raise BufferError("pinnedflow: frames are lent, not copied "
                              "(copy=True)")
        if getattr(self, "domain", "host") == "device":
            # kDLCUDA at the device address (pinnedflow._device)
            self._frame_ptr()
            return self._device_dlpack(stream, max_version, dl_device)
        dev = DL_CPU
        if dl_device is not None:
            want = tuple(dl_device)
            if want == (DL_CUDA_HOST, 0) and self.cuda_registered:
                dev = DL_CUDA_HOST
            elif want != (DL_CPU, 0):
                raise BufferError("pinnedflow: a host frame cannot be lent "
                                  "as device %r%s" % (want, (
                                      " (its segment is not registered with "
                                      "CUDA in this process)")
                                      if want == (DL_CUDA_HOST, 0) else ""))
        desc = DlpackDesc()
        res = lib.pf_dlpack_desc_from_frame(self._frame_ptr(), dev,
                                            ctypes.byref(desc))
        if res < 0:
            raise BufferError("pinnedflow: frame not viewable as a tensor: "
                              + _n.lib.pf_node_strerror(res).decode())
        return dlpack_capsule(desc, self._p, max_version, True)

    def _arrow(self, device):
        # ARROW_DEVICE_CPU even where the segment is registered: the Arrow
        # PyCapsule interface has no way to ask, and a consumer built
        # without CUDA (Debian's pyarrow) would refuse ARROW_DEVICE_CUDA_HOST
        # for memory it can read as CPU memory (cuda_registered tells).
        if getattr(self, "domain", "host") == "device":
            if not device:
                raise TypeError("pinnedflow: __arrow_c_array__ is CPU "
                                "memory: a device frame (cuda:%d) is lent "
                                "by __arrow_c_device_array__" % self.device)
            self._frame_ptr()
            return self._device_arrow()
        desc = ArrowDesc()
        res = lib.pf_arrow_desc_from_frame(self._frame_ptr(), ARROW_CPU,
                                           ctypes.byref(desc))
        if res < 0:
            raise BufferError("pinnedflow: frame not exportable to Arrow: "
                              + _n.lib.pf_node_strerror(res).decode())
        return arrow_capsules(desc, self._p, device)

    def __arrow_c_array__(self, requested_schema=None):
        """The Arrow PyCapsule interface: (schema, array) capsules of the
        frame as one uint8 array, its layout in the schema's metadata
        (pf-arrow.h). @requested_schema is not honoured (the frame's schema
        is returned)."""
        return self._arrow(False)

    def __arrow_c_device_array__(self, requested_schema=None, **kwargs):
        """As __arrow_c_array__, as an ArrowDeviceArray: ARROW_DEVICE_CPU,
        also where the segment is registered (pinned: cuda_registered)."""
        return self._arrow(True)
