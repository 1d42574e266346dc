# The few GStreamer calls tensor_app.py makes, through ctypes: for a Python
# without PyGObject (the GPU kit's host interpreter with its own PyTorch).
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Pipelines, appsink samples and appsrc buffers as raw pointers (ints);
pinnedflow.gst takes those as it takes PyGObject's objects. Every object
returned is owned by the caller as GStreamer's (transfer full) says: unref
what this module says is yours."""

import ctypes
import os

P = ctypes.c_void_p
SECOND = 1000000000
STATE_NULL, STATE_READY, STATE_PAUSED, STATE_PLAYING = 1, 2, 3, 4
MESSAGE_EOS, MESSAGE_ERROR = 1 << 0, 1 << 1

# GstMiniObject is 64 bytes on LP64 (gstminiobject.h: GType, refcount,
# lockstate, flags, copy, dispose, free, priv_uint, priv_pointer); the
# public fields after it: GstBuffer { pool; pts; dts; duration; ... },
# GstMessage { type; ... }.
_MINI_OBJECT_SIZE = 64
_BUFFER_PTS = _MINI_OBJECT_SIZE + 8
_BUFFER_DURATION = _MINI_OBJECT_SIZE + 24


class GError(ctypes.Structure):
    _fields_ = [("domain", ctypes.c_uint32), ("code", ctypes.c_int),
                ("message", ctypes.c_char_p)]


def _loaded_sonames():
    names = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "/" in path:
                names.add(os.path.basename(path))
    return names


def preload(libdir):
    """Loads every library of @libdir (RTLD_GLOBAL) whose name is not
    loaded yet, in as many passes as their dependencies need, so that
    GStreamer and its plugins resolve from a folder that is not on the
    library path (the GPU kit's lib/, where LD_LIBRARY_PATH must stay the
    host's for PyTorch). Returns the names that did not load."""
    have = _loaded_sonames()
    todo = sorted(n for n in os.listdir(libdir)
                  if ".so" in n and n not in have and
                  os.path.isfile(os.path.join(libdir, n)))
    while todo:
        left = []
        for n in todo:
            try:
                ctypes.CDLL(os.path.join(libdir, n), mode=ctypes.RTLD_GLOBAL)
            except OSError:
                left.append(n)
        if len(left) == len(todo):
            return left
        todo = left
    return []


# PINNEDFLOW_GST_LIBDIR: GStreamer's libraries from that folder (see
# preload); the plugins come from GST_PLUGIN_SYSTEM_PATH_1_0 as usual.
if os.environ.get("PINNEDFLOW_GST_LIBDIR"):
    preload(os.environ["PINNEDFLOW_GST_LIBDIR"])
gst = ctypes.CDLL("libgstreamer-1.0.so.0")
app = ctypes.CDLL("libgstapp-1.0.so.0")
_protos = {
    (gst, "gst_init"): (None, [P, P]),
    (gst, "gst_parse_launch"): (P, [ctypes.c_char_p,
                                    ctypes.POINTER(ctypes.POINTER(GError))]),
    (gst, "gst_bin_get_by_name"): (P, [P, ctypes.c_char_p]),
    (gst, "gst_element_set_state"): (ctypes.c_int, [P, ctypes.c_int]),
    (gst, "gst_element_get_state"): (ctypes.c_int, [P, P, P, ctypes.c_uint64]),
    (gst, "gst_element_get_bus"): (P, [P]),
    (gst, "gst_bus_timed_pop_filtered"): (P, [P, ctypes.c_uint64,
                                              ctypes.c_int]),
    (gst, "gst_message_parse_error"): (None, [
        P, ctypes.POINTER(ctypes.POINTER(GError)), ctypes.POINTER(P)]),
    (gst, "gst_mini_object_unref"): (None, [P]),
    (gst, "gst_object_unref"): (None, [P]),
    (gst, "gst_sample_get_buffer"): (P, [P]),
    (gst, "gst_sample_get_caps"): (P, [P]),
    (gst, "gst_caps_get_structure"): (P, [P, ctypes.c_uint]),
    (gst, "gst_structure_get_string"): (ctypes.c_char_p, [P, ctypes.c_char_p]),
    (gst, "gst_structure_get_int"): (ctypes.c_int, [
        P, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]),
    (app, "gst_app_sink_try_pull_sample"): (P, [P, ctypes.c_uint64]),
    (app, "gst_app_src_push_buffer"): (ctypes.c_int, [P, P]),
    (app, "gst_app_src_end_of_stream"): (ctypes.c_int, [P]),
}
for (_lib, _name), (_res, _args) in _protos.items():
    _f = getattr(_lib, _name)
    _f.restype, _f.argtypes = _res, _args
_glib = ctypes.CDLL("libglib-2.0.so.0")
_glib.g_error_free.argtypes = [P]
_glib.g_error_free.restype = None
_glib.g_free.argtypes = [P]
_glib.g_free.restype = None


def init():
    gst.gst_init(None, None)


def parse_launch(desc):
    """A pipeline (yours: unref with unref_object after stop())."""
    err = ctypes.POINTER(GError)()
    p = gst.gst_parse_launch(desc.encode(), ctypes.byref(err))
    if err:
        msg = err.contents.message.decode()
        _glib.g_error_free(err)
        if p:
            gst.gst_object_unref(p)
        raise RuntimeError("gst_parse_launch: " + msg)
    return p


def by_name(pipeline, name):
    """The element (yours)."""
    return gst.gst_bin_get_by_name(pipeline, name.encode())


def set_state(element, state):
    return gst.gst_element_set_state(element, state)


def stop(pipeline):
    gst.gst_element_set_state(pipeline, STATE_NULL)
    gst.gst_element_get_state(pipeline, None, None, 2 ** 64 - 1)


def unref_object(obj):
    gst.gst_object_unref(obj)


def pull_sample(appsink, timeout_ns):
    """A sample (yours: unref_mini) or None at EOS / timeout."""
    return app.gst_app_sink_try_pull_sample(appsink, timeout_ns)


def unref_mini(obj):
    gst.gst_mini_object_unref(obj)


def sample_buffer(sample):
    return gst.gst_sample_get_buffer(sample)


def sample_caps(sample):
    return gst.gst_sample_get_caps(sample)


def video_fields(caps):
    """(format, width, height) of raw video caps."""
    s = gst.gst_caps_get_structure(caps, 0)
    w, h = ctypes.c_int(), ctypes.c_int()
    gst.gst_structure_get_int(s, b"width", ctypes.byref(w))
    gst.gst_structure_get_int(s, b"height", ctypes.byref(h))
    return (gst.gst_structure_get_string(s, b"format").decode(), w.value,
            h.value)


def buffer_times(buf):
    """(pts, duration) of a GstBuffer (public fields)."""
    return (ctypes.c_uint64.from_address(buf + _BUFFER_PTS).value,
            ctypes.c_uint64.from_address(buf + _BUFFER_DURATION).value)


def set_buffer_times(buf, pts, duration):
    ctypes.c_uint64.from_address(buf + _BUFFER_PTS).value = pts
    ctypes.c_uint64.from_address(buf + _BUFFER_DURATION).value = duration


def push_buffer(appsrc, buf):
    """Takes @buf (transfer full)."""
    return app.gst_app_src_push_buffer(appsrc, buf)


def end_of_stream(appsrc):
    app.gst_app_src_end_of_stream(appsrc)


def wait_eos(pipeline, timeout_ns):
    """None at EOS, else the error message (or "no EOS")."""
    bus = gst.gst_element_get_bus(pipeline)
    msg = gst.gst_bus_timed_pop_filtered(bus, timeout_ns,
                                         MESSAGE_EOS | MESSAGE_ERROR)
    gst.gst_object_unref(bus)
    if not msg:
        return "no EOS"
    kind = ctypes.c_int.from_address(msg + _MINI_OBJECT_SIZE).value
    res = None
    if kind == MESSAGE_ERROR:
        err, dbg = ctypes.POINTER(GError)(), P()
        gst.gst_message_parse_error(msg, ctypes.byref(err), ctypes.byref(dbg))
        res = err.contents.message.decode()
        _glib.g_error_free(err)
        _glib.g_free(dbg)
    gst.gst_mini_object_unref(msg)
    return res
