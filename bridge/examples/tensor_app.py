#!/usr/bin/env python3
# The application of issue 33: frames from a camera process into a tensor
# library on the GPU and back into a pipeline, with no copy through the host.
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""camera process (pinnedshmsink) -> this application:

    pinnedshmsrc ! pinnedcudaupload ! video/x-raw(memory:CUDAMemory) ! appsink
        -> pinnedflow.gst.tensors(sample) -> a tensor op on the GPU
        (255 - frame) -> pinnedflow.gst.buffer_from_tensor ->
    appsrc ! cudadownload ! video/x-raw ! filesink (raw frames)

Usage: tensor_app.py SOCKET OUT_FILE [--backend torch|cupy|cudart]
                    [--gst gi|ctypes]

Backends: torch and cupy take the frame with from_dlpack (a CUDA tensor at
the frame's device pointer, their stream made to wait for the upload) and
push their result, wrapped as memory:CUDAMemory on GStreamer 1.24+ (one
device copy on 1.22). cudart needs no framework (a GPU host without one,
or the emulator): a DLPack consumer written from the specification reads
the frame back to the host, numpy does the op, and the result goes up into
cudaMallocPitch memory lent as a DLPack tensor (cudart_tensor.py). Default:
torch with CUDA, else CuPy, else cudart.
--gst ctypes drives GStreamer through ctypes (gst_ctypes.py) instead of
PyGObject, for a Python without it (a GPU host's own, with its PyTorch);
PINNEDFLOW_GST_LIBDIR=DIR then loads GStreamer's libraries from DIR (the
GPU kit's lib/) without putting DIR on the library path.
Prints one line per frame and "tensor_app: N frames, backend B, gst G,
copies C".
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def pick_backend(name):
    if name in (None, "torch"):
        try:
            import torch
            if torch.cuda.is_available():
                return "torch"
        except ImportError:
            pass
        if name == "torch":
            sys.exit("tensor_app: PyTorch with CUDA is not available")
    if name in (None, "cupy"):
        try:
            import cupy
            cupy.cuda.runtime.getDeviceCount()
            return "cupy"
        except Exception:
            if name == "cupy":
                sys.exit("tensor_app: CuPy with a device is not available")
    return "cudart"


class Op(object):
    """255 - frame, on the GPU (torch, cupy) or through the host (cudart).
    __call__(plane) returns (result tensor, the producer's stream)."""

    def __init__(self, backend):
        self.backend = backend
        if backend == "torch":
            import torch
            self.torch = torch
        elif backend == "cupy":
            import cupy
            self.cupy = cupy
        else:
            import cudart_tensor
            self.ct = cudart_tensor
            self.rt = cudart_tensor.runtime()

    def __call__(self, plane):
        if self.backend == "torch":
            x = self.torch.from_dlpack(plane)     # kDLCUDA, in place
            assert x.data_ptr() == plane.data_ptr
            # the stream the op ran on (0, the default one, is legacy: 1)
            return 255 - x, self.torch.cuda.current_stream().cuda_stream or 1
        if self.backend == "cupy":
            x = self.cupy.from_dlpack(plane)
            assert x.data.ptr == plane.data_ptr
            return 255 - x, self.cupy.cuda.get_current_stream().ptr or 1
        host, info = self.ct.consume(self.rt, plane.__dlpack__(stream=1))
        assert info["data"] == plane.data_ptr
        out = self.ct.DeviceTensor(self.rt, host.shape).upload(255 - host)
        return out, 1


class GiGst(object):
    """The pipelines through PyGObject."""

    def __init__(self):
        import gi
        gi.require_version("Gst", "1.0")
        from gi.repository import Gst
        Gst.init(None)
        self.Gst = Gst

    def launch(self, desc):
        return self.Gst.parse_launch(desc)

    def by_name(self, pipeline, name):
        return pipeline.get_by_name(name)

    def set_state(self, element, state):
        element.set_state(self.Gst.State(state))

    def pull(self, appsink, timeout_ms):
        """(sample, buffer, caps, format, width, height, pts, duration) or
        None at the end."""
        smp = appsink.emit("try-pull-sample", timeout_ms * 1000000)
        if smp is None:
            return None
        s = smp.get_caps().get_structure(0)
        buf = smp.get_buffer()
        return (smp, buf, smp.get_caps(), s.get_value("format"),
                s.get_value("width"), s.get_value("height"), buf.pts,
                buf.duration)

    def push(self, appsrc, buf, pts, duration):
        buf.pts, buf.duration = pts, duration
        appsrc.emit("push-buffer", buf)

    def finish(self, src, out, appsrc):
        src.set_state(self.Gst.State.NULL)
        appsrc.emit("end-of-stream")
        msg = out.get_bus().timed_pop_filtered(
            30 * self.Gst.SECOND,
            self.Gst.MessageType.EOS | self.Gst.MessageType.ERROR)
        out.set_state(self.Gst.State.NULL)
        if msg is None:
            return "no EOS"
        if msg.type != self.Gst.MessageType.EOS:
            return msg.parse_error()[0].message
        return None


class CtypesGst(object):
    """The same through ctypes (gst_ctypes.py): raw pointers, for a Python
    without PyGObject."""

    def __init__(self):
        import gst_ctypes
        gst_ctypes.init()
        self.g = gst_ctypes
        self.owned = []

    def launch(self, desc):
        p = self.g.parse_launch(desc)
        self.owned.append(p)
        return p

    def by_name(self, pipeline, name):
        e = self.g.by_name(pipeline, name)
        self.owned.append(e)
        return e

    def set_state(self, element, state):
        self.g.set_state(element, state)

    def pull(self, appsink, timeout_ms):
        smp = self.g.pull_sample(appsink, timeout_ms * 1000000)
        if not smp:
            return None
        buf, caps = self.g.sample_buffer(smp), self.g.sample_caps(smp)
        fmt, w, h = self.g.video_fields(caps)
        pts, dur = self.g.buffer_times(buf)

        class Sample(object):       # unrefs the sample when dropped
            def __del__(s, g=self.g, p=smp):
                g.unref_mini(p)
        return (Sample(), buf, caps, fmt, w, h, pts, dur)

    def push(self, appsrc, buf, pts, duration):
        self.g.set_buffer_times(buf, pts, duration)
        self.g.push_buffer(appsrc, buf)

    def finish(self, src, out, appsrc):
        self.g.stop(src)
        self.g.end_of_stream(appsrc)
        res = self.g.wait_eos(out, 30 * self.g.SECOND)
        self.g.stop(out)
        for o in reversed(self.owned):
            self.g.unref_object(o)
        return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("socket")
    ap.add_argument("out")
    ap.add_argument("--backend", choices=("torch", "cupy", "cudart"))
    ap.add_argument("--gst", choices=("gi", "ctypes"),
                    help="PyGObject (default where it imports) or ctypes")
    ap.add_argument("--timeout-ms", type=int, default=10000)
    args = ap.parse_args()
    if args.gst is None:
        try:
            import gi  # noqa: F401
            args.gst = "gi"
        except ImportError:
            args.gst = "ctypes"
    # the framework first: its libraries load before GStreamer's
    backend = pick_backend(args.backend)
    op = Op(backend)
    g = GiGst() if args.gst == "gi" else CtypesGst()
    from pinnedflow import gst as pfgst
    raw = args.gst == "ctypes"

    src = g.launch(
        "pinnedshmsrc socket-path=%s connect-timeout=%d ! pinnedcudaupload ! "
        "video/x-raw(memory:CUDAMemory) ! appsink name=in sync=false "
        "enable-last-sample=false" % (args.socket, args.timeout_ms))
    sink = g.by_name(src, "in")
    g.set_state(src, 4)                        # PLAYING
    out = None
    n = copies = 0
    while True:
        got = g.pull(sink, args.timeout_ms)
        if got is None:
            break
        sample, inbuf, caps, fmt, w, h, pts, dur = got
        if out is None:
            out_caps = ("video/x-raw(memory:CUDAMemory),format=%s,width=%d,"
                        "height=%d,framerate=30/1" % (fmt, w, h))
            out = g.launch("appsrc name=src format=time caps=%s ! "
                           "cudadownload ! video/x-raw ! filesink "
                           "location=%s" % (out_caps, args.out))
            appsrc = g.by_name(out, "src")
            g.set_state(out, 3)                # PAUSED: cudadownload started
            # share the pipeline's CUDA context (cudadownload's)
            ctx = pfgst.query_cuda_context(appsrc)
            g.set_state(out, 4)
        plane = pfgst.as_tensor(inbuf, caps)   # RGBA: one plane
        result, stream = op(plane)
        buf, c = pfgst.buffer_from_tensor(result, out_caps, stream=stream,
                                          cuda_context=ctx, raw=raw,
                                          return_copies=True)
        g.push(appsrc, buf, pts, dur)
        print("frame %d: %r -> %s, copies %d" % (n, plane.shape, backend, c))
        n += 1
        copies += c
        del sample, inbuf, plane, result, buf
    if out is None:
        sys.exit("tensor_app: no frame arrived")
    err = g.finish(src, out, appsrc)
    if err:
        sys.exit("tensor_app: output pipeline: %s" % err)
    print("tensor_app: %d frames, backend %s, gst %s, copies %d" % (
        n, backend, args.gst, copies))


if __name__ == "__main__":
    main()
