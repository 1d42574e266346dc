# pinnedflow Python binding: GStreamer buffers (PyGObject) as tensors, both ways.
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Frames an application pulls from an appsink as DLPack / CUDA array
interface objects, and tensors it computed as buffers for an appsrc.

    from pinnedflow import gst as pfgst
    sample = appsink.emit("pull-sample")
    planes = pfgst.tensors(sample)          # one Tensor per plane
    t = torch.from_dlpack(planes[0])        # host memory: kDLCPU, in place
    buf = pfgst.buffer_from_tensor(t, caps)  # for appsrc.emit("push-buffer")

ctypes over libgstpinnedflowcuda-1.0 (gstpinnedcudatensor.h); the Gst.Buffer
and Gst.Caps pointers are PyGObject's (hash() of a boxed wrapper is its
pointer). The DLPack tensors, their deleters and capsule destructors are C:
a tensor holds the buffer until the consumer drops it, on any thread.
Without PyGObject (or with raw=True), buffers, caps and elements are raw
pointers (ints) instead, as ctypes code handles them.
PINNEDFLOW_GSTCUDA_LIBRARY names the library file (default: the soname)."""

import ctypes
import os

try:
    import gi
    gi.require_version("Gst", "1.0")
    from gi.repository import Gst
except (ImportError, ValueError):
    # no PyGObject (a GPU host's own Python): buffers, samples, caps and
    # elements are then raw pointers (ints), e.g. from ctypes
    Gst = None

from . import _export  # noqa: E402

P = ctypes.c_void_p
DL_CPU, DL_CUDA, DL_CUDA_HOST = 1, 2, 3
STREAM_NONE = -1

# GstPinnedCudaTensorError
ERROR_CAPS, ERROR_LAYOUT, ERROR_DTYPE, ERROR_DEVICE, ERROR_MEMORY, \
    ERROR_CUDA = range(6)


class TensorError(ValueError):
    """What gstpinnedcudatensor.h refused; .code is the
    GstPinnedCudaTensorError (ERROR_CAPS ... ERROR_CUDA)."""

    def __init__(self, message, code):
        ValueError.__init__(self, message)
        self.code = code


class TensorDTypeError(TensorError, TypeError):
    """A dtype the caps' format does not allow."""


class TensorDeviceError(TensorError):
    """A tensor on the wrong device for the caps (a CPU tensor offered as
    CUDA memory, or the other way)."""


class TensorMemoryError(TensorError, BufferError):
    """Memory neither host-mappable nor CUDA memory, an empty buffer."""


class TensorCudaError(TensorError, RuntimeError):
    """The CUDA runtime or libgstcuda is missing, or a CUDA call failed."""


_ERRORS = {ERROR_DTYPE: TensorDTypeError, ERROR_DEVICE: TensorDeviceError,
           ERROR_MEMORY: TensorMemoryError, ERROR_CUDA: TensorCudaError}


class _GError(ctypes.Structure):
    _fields_ = [("domain", ctypes.c_uint32), ("code", ctypes.c_int),
                ("message", ctypes.c_char_p)]


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLTensor(ctypes.Structure):
    """DLTensor (dlpack.h): what the tensors made here look like, read to
    answer __dlpack_device__ and __cuda_array_interface__."""
    _fields_ = [("data", P), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _Import(ctypes.Structure):
    """GstPinnedCudaTensorImport."""
    _fields_ = [("producer_stream", ctypes.c_ssize_t),
                ("cuda_context", P), ("copies", ctypes.c_uint),
                ("_reserved", P * 4)]


def _load():
    name = os.environ.get("PINNEDFLOW_GSTCUDA_LIBRARY",
                          "libgstpinnedflowcuda-1.0.so.0")
    lib = ctypes.CDLL(name)
    protos = {
        "gst_pinned_cuda_tensor_n_planes": (ctypes.c_uint, [P]),
        "gst_pinned_cuda_tensor_from_buffer": (P, [
            P, P, ctypes.c_uint, ctypes.c_ssize_t, ctypes.c_uint,
            ctypes.POINTER(ctypes.POINTER(_GError))]),
        "gst_pinned_cuda_tensor_free": (None, [P, ctypes.c_uint]),
        "gst_pinned_cuda_buffer_fill_from_tensor": (ctypes.c_int, [
            P, P, P, ctypes.POINTER(_Import),
            ctypes.POINTER(ctypes.POINTER(_GError))]),
        "gst_pinned_cuda_tensor_query_cuda_context": (P, [P]),
    }
    for fn, (res, args) in protos.items():
        f = getattr(lib, fn)
        f.restype, f.argtypes = res, args
    return lib


_lib = _load()
_gstlib = ctypes.CDLL("libgstreamer-1.0.so.0")
for _fn, (_res, _args) in {
        "gst_mini_object_ref": (P, [P]),
        "gst_mini_object_unref": (None, [P]),
        "gst_caps_from_string": (P, [ctypes.c_char_p]),
        "gst_buffer_new": (P, []),
        "gst_init": (None, [P, P])}.items():
    _f = getattr(_gstlib, _fn)
    _f.restype, _f.argtypes = _res, _args
if Gst is None:
    _gstlib.gst_init(None, None)    # idempotent: GstCaps & co need it
_glib = ctypes.CDLL("libglib-2.0.so.0")
_glib.g_error_free.argtypes = [P]
_glib.g_error_free.restype = None
_gobject = ctypes.CDLL("libgobject-2.0.so.0")
_gobject.g_object_unref.argtypes = [P]
_gobject.g_object_unref.restype = None

# private prototypes: ctypes.pythonapi's function objects are shared by
# every module of the process, their argtypes too
_get_pointer = ctypes.PYFUNCTYPE(P, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))
_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object,
                              ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))
_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, P)(
    ("PyCapsule_SetName", ctypes.pythonapi))
# a capsule keeps the pointer to its name: one that lives for ever
_USED = ctypes.create_string_buffer(b"used_dltensor")


def _raise(err):
    e = err.contents
    msg, code = e.message.decode(errors="replace"), e.code
    _glib.g_error_free(err)
    raise _ERRORS.get(code, TensorError)("pinnedflow.gst: " + msg, code)


class _Raw(object):
    """A reference on a GstMiniObject given as a raw pointer (taken with
    @ref, else adopted), dropped when this object dies."""

    def __init__(self, ptr, ref=True):
        self.ptr = ptr
        if ref:
            _gstlib.gst_mini_object_ref(ptr)

    def __del__(self):
        p, self.ptr = self.ptr, None
        if p and _gstlib is not None:
            _gstlib.gst_mini_object_unref(p)


def _ptr(obj):
    """The C pointer of a PyGObject Gst.Buffer / Gst.Caps / element
    (hash() of a boxed or GObject wrapper is its pointer), a _Raw, or a raw
    pointer."""
    if isinstance(obj, _Raw):
        return P(obj.ptr)
    if isinstance(obj, int):
        return P(obj)
    if isinstance(obj, ctypes.c_void_p):
        return obj
    return P(hash(obj))


def _caps(caps):
    if isinstance(caps, str):
        if Gst is not None:
            c = Gst.Caps.from_string(caps)
        else:
            p = _gstlib.gst_caps_from_string(caps.encode())
            c = _Raw(p, ref=False) if p else None
        if c is None:
            raise TensorError("pinnedflow.gst: caps %r do not parse" % caps,
                              ERROR_CAPS)
        return c
    if isinstance(caps, int):
        return _Raw(caps)
    if Gst is None or not isinstance(caps, Gst.Caps):
        raise TypeError("caps: a Gst.Caps, a caps string or a GstCaps "
                        "pointer, not %r" % type(caps).__name__)
    return caps


class Tensor(object):
    """One plane of a Gst.Buffer, lent in place: __dlpack__ /
    __dlpack_device__ (any consumer: torch.from_dlpack, numpy.from_dlpack,
    cupy.from_dlpack), __cuda_array_interface__ (device memory), and
    __array_interface__ (host memory: numpy.asarray). The buffer lives until
    this object and every tensor made from it are gone. Read-only: do not
    write through a legacy DLPack tensor."""

    def __init__(self, buffer, caps, plane=0):
        self._buffer, self._caps, self.plane = buffer, caps, plane
        self._keep = None
        self._keep = self._make(STREAM_NONE, 0)   # raises on bad input
        t = _DLTensor.from_address(self._keep)
        self.device = (t.device.device_type, t.device.device_id)
        self.data_ptr = t.data
        self.shape = tuple(t.shape[i] for i in range(t.ndim))
        self.itemsize = t.bits // 8
        self.strides = tuple(t.strides[i] * self.itemsize
                             for i in range(t.ndim))      # bytes

    def _make(self, stream, flags):
        err = ctypes.POINTER(_GError)()
        p = _lib.gst_pinned_cuda_tensor_from_buffer(
            _ptr(self._buffer), _ptr(self._caps), self.plane, stream, flags,
            ctypes.byref(err))
        if not p:
            _raise(err)
        return p

    def __del__(self):
        keep, self._keep = self._keep, None
        if keep and _lib is not None:
            _lib.gst_pinned_cuda_tensor_free(keep, 0)

    @property
    def is_cuda(self):
        return self.device[0] == DL_CUDA

    @property
    def typestr(self):
        return "|u1" if self.itemsize == 1 else "<u%d" % self.itemsize

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, max_version=None, dl_device=None,
                   copy=None):
        """A "dltensor" capsule (or "dltensor_versioned" for a consumer
        that takes DLPack >= 1.0, flagged read-only). Device memory:
        @stream (None or 1: the legacy default stream, 2: per-thread, -1:
        none, else a cudaStream_t) is made to wait on the GPU for the
        memory's copy; host memory: @stream is not used."""
        if copy:
            raise BufferError("pinnedflow.gst: frames are lent, not copied")
        if dl_device is not None and tuple(dl_device) != self.device:
            raise BufferError("pinnedflow.gst: the plane is on device %r, "
                              "not %r" % (self.device, tuple(dl_device)))
        if not self.is_cuda:
            s = STREAM_NONE
        elif stream is None:
            s = 1
        else:
            s = int(stream)
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        flags = 1 if versioned else 0
        p = self._make(s, flags)
        name = "dltensor_versioned" if versioned else "dltensor"
        return _export.capsule(p, name,
                               lambda: _lib.gst_pinned_cuda_tensor_free(
                                   p, flags))

    @property
    def __cuda_array_interface__(self):
        """Version 3; only for device memory (AttributeError otherwise).
        The legacy default stream has been made to wait for the memory's
        copy: "stream": 1 tells the consumer to order its reads after it."""
        if not self.is_cuda:
            raise AttributeError("pinnedflow.gst: host memory has no "
                                 "__cuda_array_interface__ (use DLPack or "
                                 "numpy.asarray)")
        _lib.gst_pinned_cuda_tensor_free(self._make(1, 0), 0)
        return {"shape": self.shape, "typestr": self.typestr,
                "data": (self.data_ptr, True), "strides": self.strides,
                "version": 3, "stream": 1}

    @property
    def __array_interface__(self):
        """numpy.asarray(tensor) for host memory (read-only, in place)."""
        if self.is_cuda:
            raise AttributeError("pinnedflow.gst: device memory has no "
                                 "__array_interface__")
        return {"shape": self.shape, "typestr": self.typestr,
                "data": (self.data_ptr, True), "strides": self.strides,
                "version": 3}

    def __repr__(self):
        return "<pinnedflow.gst.Tensor plane %d %r %s device %r at %#x>" % (
            self.plane, self.shape, self.typestr, self.device, self.data_ptr)


def tensors(buffer_or_sample, caps=None):
    """Every plane of a Gst.Buffer (with its @caps: a Gst.Caps or a string)
    or of a Gst.Sample (its caps) as a Tensor: one for RGBA, two for NV12
    (Y (h, w), UV (h/2, w/2, 2)), three for I420. Raw pointers: a GstBuffer
    (referenced while a Tensor lives) and its caps (a pointer or string)."""
    if Gst is not None and isinstance(buffer_or_sample, Gst.Sample):
        buf = buffer_or_sample.get_buffer()
        caps = caps if caps is not None else buffer_or_sample.get_caps()
    elif isinstance(buffer_or_sample, int) and buffer_or_sample:
        buf = _Raw(buffer_or_sample)
    else:
        buf = buffer_or_sample
    if not isinstance(buf, _Raw) and (Gst is None or
                                      not isinstance(buf, Gst.Buffer)):
        raise TypeError("pinnedflow.gst: a Gst.Buffer, Gst.Sample or GstBuffer "
                        "pointer, not %r" % type(buf).__name__)
    if caps is None:
        raise TypeError("pinnedflow.gst: a Gst.Buffer needs its caps")
    caps = _caps(caps)
    n = _lib.gst_pinned_cuda_tensor_n_planes(_ptr(caps))
    if n == 0:
        raise TensorError("pinnedflow.gst: caps are not fixed raw video",
                          ERROR_CAPS)
    return [Tensor(buf, caps, p) for p in range(n)]


def as_tensor(buffer_or_sample, caps=None):
    """The single plane of a packed frame (RGBA, GRAY8, ...) as a Tensor;
    ValueError for planar formats (use tensors())."""
    planes = tensors(buffer_or_sample, caps)
    if len(planes) != 1:
        raise TensorError("pinnedflow.gst: %d planes: use tensors()"
                          % len(planes), ERROR_LAYOUT)
    return planes[0]


class CudaContext(object):
    """A GstCudaContext reference (from query_cuda_context())."""

    def __init__(self, ptr):
        self._ptr = ptr

    def __del__(self):
        p, self._ptr = self._ptr, None
        if p and _gobject is not None:
            _gobject.g_object_unref(p)


def query_cuda_context(element):
    """The GstCudaContext the element downstream of @element (an appsrc)
    uses, once it started (state PAUSED or later), or None."""
    p = _lib.gst_pinned_cuda_tensor_query_cuda_context(_ptr(element))
    return CudaContext(p) if p else None


_DELETER = ctypes.CFUNCTYPE(None, P)


class _DLManaged(ctypes.Structure):
    """DLManagedTensor (dlpack.h, legacy)."""
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", P),
                ("deleter", _DELETER)]


# CUDA array interface objects lent to C, until their deleter: the struct,
# its arrays, the callback and the object itself. A deleted one waits in
# _CAI_DEAD until the next lend: its callback must not be freed while it
# is still returning.
_CAI_LENT = {}
_CAI_DEAD = []


class _CaiTensor(object):
    """A legacy DLManagedTensor (kDLCUDA, device 0: the interface names no
    device) viewing an object that has only __cuda_array_interface__ (v2/v3,
    e.g. Numba's), holding the object until its deleter runs (a ctypes
    callback: any thread, the GIL taken). .stream: the interface's producer
    stream (DLPack convention), 1 (the legacy default stream) where it
    gives none (see _stream)."""

    def __init__(self, obj):
        del _CAI_DEAD[:]
        cai = obj.__cuda_array_interface__
        shape = tuple(int(x) for x in cai["shape"])
        typestr = cai["typestr"]
        if len(typestr) < 3 or typestr[1] not in "iuf" or \
                typestr[0] not in "<|":
            raise TensorDTypeError("pinnedflow.gst: typestr %r" % typestr,
                                   ERROR_DTYPE)
        isz = int(typestr[2:])
        self.stream = self._stream(cai.get("stream"))
        strides = cai.get("strides")
        if strides is not None and any(x % isz for x in strides):
            raise TensorError("pinnedflow.gst: strides %r not in whole "
                              "elements" % (strides,), ERROR_LAYOUT)
        nd = len(shape)
        self._shape = (ctypes.c_int64 * nd)(*shape)
        self._strides = (ctypes.c_int64 * nd)(
            *[x // isz for x in strides]) if strides is not None else None
        m = self._m = _DLManaged()
        m.dl_tensor.data = cai["data"][0]
        m.dl_tensor.device = _DLDevice(DL_CUDA, 0)
        m.dl_tensor.ndim = nd
        m.dl_tensor.code = {"i": 0, "u": 1, "f": 2}[typestr[1]]
        m.dl_tensor.bits = 8 * isz
        m.dl_tensor.lanes = 1
        m.dl_tensor.shape = self._shape
        if self._strides is not None:
            m.dl_tensor.strides = self._strides
        self.address = ctypes.addressof(m)
        self._cb = m.deleter = _DELETER(lambda _addr: self.delete())
        self._obj = obj
        _CAI_LENT[self.address] = self

    @staticmethod
    def _stream(s):
        """The producer stream (DLPack convention) for the interface's
        "stream". v3: 1 legacy default, 2 per-thread default, else a
        cudaStream_t; 0 is disallowed (ambiguous). None (or absent, v2):
        "no synchronization required" -- which the producer can say while
        its work is still queued on the legacy default stream (Numba says
        None for its default stream; a pageable cudaMemcpy may not have
        landed), because every consumer in the producer's context on the
        legacy stream or a blocking stream is ordered after that work
        anyway. Ours is not always in that context: a wrapped
        memory:CUDAMemory tensor is read on a GstCudaStream of a
        GstCudaContext of its own (cuCtxCreate), which no implicit
        ordering ties to the primary context's legacy stream. So None is
        taken as the legacy default stream (1): an event recorded there
        and waited for on the GPU, never a host wait; where nothing is
        queued it costs that event only."""
        if s is None:
            return 1
        if isinstance(s, bool) or not isinstance(s, int) or s == 0 or s < 0:
            raise TensorError("pinnedflow.gst: __cuda_array_interface__ "
                              "stream %r (v3: None, 1, 2 or a cudaStream_t;"
                              " 0 is disallowed)" % (s,), ERROR_LAYOUT)
        return s

    def delete(self):
        self._obj = None            # the object goes now
        lent = _CAI_LENT.pop(self.address, None)
        if lent is not None:
            _CAI_DEAD.append(lent)


def buffer_from_tensor(tensor, caps, pool=None, stream=None,
                       cuda_context=None, return_copies=False, raw=False):
    """A Gst.Buffer (for appsrc) holding @tensor (anything with __dlpack__:
    torch, CuPy, numpy; or with only __cuda_array_interface__, taken as a
    tensor on device 0 after the stream it names, None the legacy default
    stream) as a frame of @caps.

    - caps without a memory feature: a host tensor, wrapped (no copy; it
      lives until the buffer is freed), or copied once into a buffer of
      @pool (e.g. pinnedflow's pinned pool, so that an upload DMAs it);
    - memory:CUDAMemory: a CUDA tensor, wrapped on GStreamer 1.24+ (on a
      stream of its own that waits for the producer's on the GPU), copied
      once on the device on 1.22; memory:PinnedflowCUDA: copied once.
      @stream: the producer's stream (default 1, the legacy stream: the
      tensor's __dlpack__(stream=) orders it after the tensor's work);
      @cuda_context: a CudaContext (query_cuda_context(appsrc)) to share
      the pipeline's.

    The shape is the one tensors() gives for one plane ((h, w, 4) RGBA),
    (rows of every plane, w) for planar formats (NV12: (h * 3 // 2, w)).
    Returns the buffer, or (buffer, copies) with @return_copies; with
    @raw (or without PyGObject) a GstBuffer pointer (int) that is yours
    (gst_app_src_push_buffer takes it)."""
    caps = _caps(caps)
    if hasattr(tensor, "__dlpack__"):
        dev = tuple(tensor.__dlpack_device__())
        if dev[0] == DL_CUDA:
            # 0 (torch.cuda.default_stream().cuda_stream, CuPy's null
            # stream) is the legacy default stream, which DLPack spells 1
            producer = 1 if not stream else int(stream)
            cap = tensor.__dlpack__(stream=producer)
        else:
            producer = STREAM_NONE
            cap = tensor.__dlpack__()
        if not _is_valid(cap, b"dltensor"):
            raise TensorError("pinnedflow.gst: __dlpack__ gave no "
                              "\"dltensor\" capsule", ERROR_LAYOUT)
        managed = _get_pointer(cap, b"dltensor")
        taken = lambda: _set_name(cap, ctypes.addressof(_USED))  # noqa
        refused = lambda: None  # noqa: E731 (the capsule deletes it)
    elif hasattr(tensor, "__cuda_array_interface__"):
        cai = _CaiTensor(tensor)
        managed, producer = cai.address, cai.stream
        taken = lambda: None  # noqa: E731 (its deleter runs from C)
        refused = cai.delete
    else:
        raise TypeError("pinnedflow.gst: %r has neither __dlpack__ nor "
                        "__cuda_array_interface__" % type(tensor).__name__)
    raw = raw or Gst is None
    if pool is not None:
        if raw:
            raise TypeError("pinnedflow.gst: pool= needs PyGObject")
        ret, buf = pool.acquire_buffer(None)
        if ret != Gst.FlowReturn.OK:
            raise TensorMemoryError("pinnedflow.gst: the pool gave no buffer "
                                    "(%s)" % ret.value_nick, ERROR_MEMORY)
    elif raw:
        buf = _Raw(_gstlib.gst_buffer_new(), ref=False)
    else:
        buf = Gst.Buffer.new()
    imp = _Import(producer_stream=producer,
                  cuda_context=cuda_context._ptr if cuda_context else None)
    err = ctypes.POINTER(_GError)()
    ok = _lib.gst_pinned_cuda_buffer_fill_from_tensor(
        _ptr(buf), managed, _ptr(caps), ctypes.byref(imp), ctypes.byref(err))
    if not ok:
        refused()        # nothing was taken
        _raise(err)
    taken()
    if raw:
        ptr, buf.ptr = buf.ptr, None       # the caller's reference now
        buf = ptr
    return (buf, imp.copies) if return_copies else buf
