# A CUDA device tensor with nothing but the CUDA runtime and the DLPack
# specification (no PyTorch, no CuPy): the examples' and tests' stand-in
# for a GPU framework, usable on a real GPU and on the emulator.
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""cudart_tensor: device memory (cudaMallocPitch) lent as a DLPack kDLCUDA
tensor (producer side, written from dlpack.h v0.8's DLManagedTensor), and
a DLPack consumer of kDLCUDA capsules that reads them back through
cudaMemcpy2D. The runtime is the file GST_PINNEDFLOW_CUDART names, else
libcudart.so.13 / .12."""

import ctypes
import os

import numpy

P = ctypes.c_void_p
DL_CUDA = 2


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", P), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


DELETER = ctypes.CFUNCTYPE(None, P)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", P),
                ("deleter", DELETER)]


def runtime():
    """The CUDA runtime (or the emulator) with the few calls used here."""
    names = [os.environ["GST_PINNEDFLOW_CUDART"]] if os.environ.get(
        "GST_PINNEDFLOW_CUDART") else ["libcudart.so.13", "libcudart.so.12",
                                       "/usr/local/cuda/lib64/libcudart.so"]
    for n in names:
        try:
            rt = ctypes.CDLL(n)
            break
        except OSError:
            rt = None
    if rt is None:
        raise OSError("no CUDA runtime (%s)" % ", ".join(names))
    rt.cudaMallocPitch.argtypes = [ctypes.POINTER(P),
                                   ctypes.POINTER(ctypes.c_size_t),
                                   ctypes.c_size_t, ctypes.c_size_t]
    rt.cudaFree.argtypes = [P]
    rt.cudaMemcpy2D.argtypes = [P, ctypes.c_size_t, P, ctypes.c_size_t,
                                ctypes.c_size_t, ctypes.c_size_t,
                                ctypes.c_int]
    rt.cudaStreamSynchronize.argtypes = [P]
    return rt


# private prototypes: ctypes.pythonapi's function objects are shared by
# every module of the process, their argtypes too
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, P, P, P)(
    ("PyCapsule_New", ctypes.pythonapi))
_capsule_get = ctypes.PYFUNCTYPE(P, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))
_capsule_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, P)(
    ("PyCapsule_SetName", ctypes.pythonapi))
_NAME = ctypes.create_string_buffer(b"dltensor")
_USED = ctypes.create_string_buffer(b"used_dltensor")
# tensors lent and not yet deleted: what keeps their memory and callbacks;
# a deleted one waits in _DEAD until the next lend (its callback must not
# be freed while it is still returning)
_LENT = {}
_DEAD = []


class DeviceTensor(object):
    """A (rows, cols[, comps]) uint8/uint16 array in pitched device memory.
    deleted counts the DLPack deleters that ran (each lent tensor's once);
    the memory is freed when this object and every lent tensor are gone."""

    def __init__(self, rt, shape, dtype=numpy.uint8):
        self.rt, self.shape = rt, tuple(shape)
        self.dtype = numpy.dtype(dtype)
        self.row_bytes = int(numpy.prod(self.shape[1:])) * self.dtype.itemsize
        ptr, pitch = P(), ctypes.c_size_t()
        res = rt.cudaMallocPitch(ctypes.byref(ptr), ctypes.byref(pitch),
                                 self.row_bytes, self.shape[0])
        if res != 0:
            raise OSError("cudaMallocPitch: error %d" % res)
        self.ptr, self.pitch = ptr.value, pitch.value
        self.lent = self.deleted = 0

    def __del__(self):
        if self.ptr and self.rt is not None:
            self.rt.cudaFree(self.ptr)
            self.ptr = None

    def upload(self, array):
        a = numpy.ascontiguousarray(array, dtype=self.dtype)
        assert a.shape == self.shape, (a.shape, self.shape)
        res = self.rt.cudaMemcpy2D(self.ptr, self.pitch, a.ctypes.data,
                                   self.row_bytes, self.row_bytes,
                                   self.shape[0], 1)
        assert res == 0, "cudaMemcpy2D H2D: %d" % res
        return self

    def download(self):
        out = numpy.empty(self.shape, self.dtype)
        res = self.rt.cudaMemcpy2D(out.ctypes.data, self.row_bytes, self.ptr,
                                   self.pitch, self.row_bytes, self.shape[0],
                                   2)
        assert res == 0, "cudaMemcpy2D D2H: %d" % res
        return out

    def __dlpack_device__(self):
        return (DL_CUDA, 0)

    def __dlpack__(self, stream=None, **kwargs):
        """A legacy "dltensor" capsule. Uploads here are synchronous, so no
        work is pending on any stream: @stream needs no wait."""
        del _DEAD[:]
        m = DLManagedTensor()
        nd = len(self.shape)
        shape = (ctypes.c_int64 * nd)(*self.shape)
        isz = self.dtype.itemsize
        st = [self.pitch // isz] + [int(numpy.prod(self.shape[i + 1:]))
                                     for i in range(1, nd)]
        strides = (ctypes.c_int64 * nd)(*st)
        m.dl_tensor = DLTensor(data=self.ptr, device=DLDevice(DL_CUDA, 0),
                               ndim=nd, dtype=DLDataType(1, 8 * isz, 1),
                               shape=shape, strides=strides, byte_offset=0)

        def deleter(_addr):
            self.deleted += 1
            _DEAD.append(_LENT.pop(ctypes.addressof(m), None))

        m.deleter = DELETER(deleter)
        # the struct, its arrays, the callback and self live until deleted
        _LENT[ctypes.addressof(m)] = (m, shape, strides, m.deleter, self)
        self.lent += 1
        return _capsule_new(ctypes.addressof(m), ctypes.addressof(_NAME),
                            None)


def consume(rt, capsule, expect_rows=None):
    """A DLPack consumer written from dlpack.h: takes a "dltensor" capsule
    (renames it "used_dltensor"), checks it is kDLCUDA uint, reads its rows
    back (cudaMemcpy2D device to host, the pitch from strides[0]), calls its
    deleter once. Returns (numpy array, DLTensor fields as a dict)."""
    addr = _capsule_get(capsule, b"dltensor")
    _capsule_set_name(capsule, ctypes.addressof(_USED))
    m = DLManagedTensor.from_address(addr)
    t = m.dl_tensor
    nd = t.ndim
    shape = [t.shape[i] for i in range(nd)]
    strides = [t.strides[i] for i in range(nd)] if t.strides else None
    info = {"device": (t.device.device_type, t.device.device_id),
            "data": t.data, "shape": shape, "strides": strides,
            "dtype": (t.dtype.code, t.dtype.bits, t.dtype.lanes)}
    try:
        assert info["device"][0] == DL_CUDA, info
        assert t.dtype.code == 1 and t.dtype.lanes == 1, info
        isz = t.dtype.bits // 8
        row = int(numpy.prod(shape[1:])) * isz
        pitch = strides[0] * isz if strides else row
        out = numpy.empty(shape, numpy.uint8 if isz == 1 else numpy.uint16)
        res = rt.cudaMemcpy2D(out.ctypes.data, row,
                              t.data + t.byte_offset, pitch, row, shape[0], 2)
        assert res == 0, "cudaMemcpy2D: %d" % res
    finally:
        # the deleter is the producer's function pointer: call it, once
        deleter = ctypes.cast(ctypes.c_void_p.from_address(
            addr + ctypes.sizeof(DLTensor) + ctypes.sizeof(P)).value, DELETER)
        deleter(addr)
    return out, info
