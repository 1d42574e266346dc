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

Backends: torch and cupy take the frame with from_dlpack (a CUDA tensor at
the frame's device pointer, their stream made to wait for the upload) and
push their result, wrapped as memory:CUDAMemory on GStreamer 1.24+ (one
device copy on 1.22). cudart needs no framework (a GPU host without one,
or the emulator): a DLPack consumer written from the specification reads
the frame back to the host, numpy does the op, and the result goes up into
cudaMallocPitch memory lent as a DLPack tensor (cudart_tensor.py). Default:
torch with CUDA, else CuPy, else cudart.
Prints one line per frame and "tensor_app: N frames, backend B, copies C".
"""

import argparse
import os
import sys

import gi
gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("socket")
    ap.add_argument("out")
    ap.add_argument("--backend", choices=("torch", "cupy", "cudart"))
    ap.add_argument("--timeout-ms", type=int, default=10000)
    args = ap.parse_args()
    Gst.init(None)
    from pinnedflow import gst as pfgst
    backend = pick_backend(args.backend)
    op = Op(backend)

    src = Gst.parse_launch(
        "pinnedshmsrc socket-path=%s connect-timeout=%d ! pinnedcudaupload ! "
        "video/x-raw(memory:CUDAMemory) ! appsink name=in sync=false "
        "enable-last-sample=false" % (args.socket, args.timeout_ms))
    sink = src.get_by_name("in")
    src.set_state(Gst.State.PLAYING)
    out = None
    n = copies = 0
    while True:
        sample = sink.emit("try-pull-sample", args.timeout_ms * Gst.MSECOND)
        if sample is None:
            break
        caps = sample.get_caps()
        if out is None:
            s = caps.get_structure(0)
            out_caps = ("video/x-raw(memory:CUDAMemory),format=%s,width=%d,"
                        "height=%d,framerate=30/1" % (
                            s.get_value("format"), s.get_value("width"),
                            s.get_value("height")))
            out = Gst.parse_launch(
                "appsrc name=src format=time caps=%s ! cudadownload ! "
                "video/x-raw ! filesink location=%s" % (out_caps, args.out))
            appsrc = out.get_by_name("src")
            out.set_state(Gst.State.PAUSED)
            # share the pipeline's CUDA context (cudadownload's)
            ctx = pfgst.query_cuda_context(appsrc)
            out.set_state(Gst.State.PLAYING)
        plane = pfgst.as_tensor(sample)          # RGBA: one plane
        result, stream = op(plane)
        buf, c = pfgst.buffer_from_tensor(result, out_caps, stream=stream,
                                          cuda_context=ctx,
                                          return_copies=True)
        buf.pts = sample.get_buffer().pts
        buf.duration = sample.get_buffer().duration
        appsrc.emit("push-buffer", buf)
        print("frame %d: %r -> %s, copies %d" % (n, plane.shape, backend, c))
        n += 1
        copies += c
        del sample, plane, result, buf
    src.set_state(Gst.State.NULL)
    if out is None:
        sys.exit("tensor_app: no frame arrived")
    appsrc.emit("end-of-stream")
    msg = out.get_bus().timed_pop_filtered(
        30 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    out.set_state(Gst.State.NULL)
    if msg is None or msg.type != Gst.MessageType.EOS:
        sys.exit("tensor_app: output pipeline: %s" % (
            msg.parse_error()[0].message if msg else "no EOS"))
    print("tensor_app: %d frames, backend %s, copies %d" % (n, backend,
                                                            copies))


if __name__ == "__main__":
    main()
