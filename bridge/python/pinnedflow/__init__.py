# pinnedflow Python binding: zero-copy frames for dataflow nodes.
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Python binding of libpinnedflow's node API (ctypes, no build step).

Consumer::

    import pinnedflow
    with pinnedflow.Consumer("/tmp/cam.sock", timeout_ms=5000) as cons:
        for frame in cons:                # ends at EOS; raises ProducerLost
                                          # if the producer died before it
            with frame:                   # released on exit
                img = frame.array()       # read-only numpy view, no copy
                print(frame.seq, frame.pts, img.shape)

Producer::

    with pinnedflow.Producer("/tmp/cam.sock", slot_size=640 * 480 * 4) as prod:
        prod.set_video("RGBA", 640, 480, (30, 1))
        with prod.loan(timeout_ms=1000) as loan:   # discarded unless published
            loan.array()[:] = 255
            loan.publish(pts=0, duration=33_333_333)
        prod.send_eos()

Buffers handed out (memoryview, numpy arrays) keep the shared segment mapped
for as long as they live, so touching them late never crashes; but after
release() the producer may reuse the slot, so copy what you keep.
"""

import ctypes
import errno as _errno
import os

from . import _native as _n
from . import _export
from . import _device

__all__ = ["Producer", "Consumer", "Frame", "Loan", "Segment", "EOS",
           "PinnedflowError", "ProducerLost", "TIME_NONE", "parse_caps",
           "video_layout"]

TIME_NONE = _n.TIME_NONE


class _Eos(object):
    def __repr__(self):
        return "pinnedflow.EOS"


#: Returned by Consumer.next() when the producer sent end-of-stream.
EOS = _Eos()


# Headlines of the consumer's own codes, where the C library's generic text
# (strerror) would mislead.
_HEADLINES = {
    _errno.ETIME: "the producer accepted the connection but sent no HELLO",
    _errno.EDQUOT: "the producer's shared memory exceeds this consumer's "
                   "budget",
}


class PinnedflowError(OSError):
    """A libpinnedflow error: .errno is the errno, the message explains."""

    def __init__(self, res, what, detail=None):
        err = -res
        head = _HEADLINES.get(err) or _n.lib.pf_node_strerror(res).decode()
        msg = "%s: %s" % (what, head)
        if detail:
            msg += " (%s)" % detail
        super().__init__(err, msg)


class ProducerLost(PinnedflowError, ConnectionResetError):
    """The producer went away without EOS (crashed, killed, or closed
    mid-stream): frames may be missing, this is not an end of stream.
    errno ECONNRESET; a ConnectionError too. Also raised, with errno
    ECONNABORTED and its own message, when the producer disconnected this
    consumer for falling behind (it said so first)."""


# Consumer(delivery=...) values (docs/protocol.md, section 7.1)
_DELIVERY = {None: _n.DELIVERY_DEFAULT, "every-frame": _n.DELIVERY_EVERY_FRAME,
             "newest-frame": _n.DELIVERY_NEWEST_FRAME}
_DELIVERY_NAME = {_n.DELIVERY_EVERY_FRAME: "every-frame",
                  _n.DELIVERY_NEWEST_FRAME: "newest-frame"}
_RELIABLE_ACTION = {"demote": _n.RELIABLE_TIMEOUT_DEMOTE,
                    "disconnect": _n.RELIABLE_TIMEOUT_DISCONNECT}


def _check(res, what, detail=None):
    if res < 0:
        if -res == _errno.ETIMEDOUT:
            raise TimeoutError(-res, "%s: timed out" % what +
                               (" (%s)" % detail if detail else ""))
        if -res == _errno.ETIME:
            # a peer that accepted and stayed silent: a timeout too
            raise TimeoutError(-res, "%s: %s (%s)" % (
                what, _HEADLINES[_errno.ETIME], detail))
        raise PinnedflowError(res, what, detail)
    return res


def _time(v):
    return None if v == TIME_NONE else v


def _untime(v):
    return TIME_NONE if v is None else int(v)


class Segment(object):
    """A shared-memory segment (one reference held while this object lives).

    base/size/fd/id are what a GPU runtime needs to register the mapping
    once (cudaHostRegister(base, size, ...)); id is process-local and never
    reused, a good cache key."""

    def __init__(self, ptr):
        self._ptr = _n.lib.pf_segment_ref(ptr)
        self.base = _n.lib.pf_segment_get_base(self._ptr)
        self.size = _n.lib.pf_segment_get_size(self._ptr)
        self.fd = _n.lib.pf_segment_get_fd(self._ptr)
        self.id = _n.lib.pf_segment_get_id(self._ptr)
        state = _n.lib.pf_segment_get_state(self._ptr)
        self.readonly = bool(state & (1 << 2))
        self.locked = bool(state & (1 << 1))

    def __del__(self):
        ptr, self._ptr = getattr(self, "_ptr", None), None
        if ptr and _n is not None and _n.lib is not None:
            _n.lib.pf_segment_unref(ptr)

    def __repr__(self):
        return "<pinnedflow.Segment id=%d size=%d fd=%d%s>" % (
            self.id, self.size, self.fd, " ro" if self.readonly else "")


def _view(segment, address, size, readonly):
    """A memoryview of [address, address + size) that keeps @segment (and so
    the mapping) alive as long as any view or array built on it."""
    arr = (ctypes.c_ubyte * size).from_address(address)
    arr._pinnedflow_segment = segment
    mv = memoryview(arr).cast("B")
    return mv.toreadonly() if readonly else mv


_PACKED_DTYPES = {"GRAY16_LE": "<u2", "GRAY16_BE": ">u2"}


def _layout_array(mv, fmt, lay):
    """numpy view of a frame: (h, w, c) for packed formats, (h, w) for
    GRAY8/GRAY16, else the plain bytes."""
    import numpy
    if lay.n_planes == 1 and lay.pixel_stride and lay.width and lay.height:
        stride = lay.plane_stride[0]
        off = lay.plane_offset[0]
        if fmt in _PACKED_DTYPES:
            return numpy.ndarray((lay.height, lay.width),
                                 dtype=numpy.dtype(_PACKED_DTYPES[fmt]),
                                 buffer=mv, offset=off, strides=(stride, 2))
        if lay.pixel_stride == 1:
            return numpy.ndarray((lay.height, lay.width), dtype=numpy.uint8,
                                 buffer=mv, offset=off, strides=(stride, 1))
        if fmt in ("YUY2", "UYVY"):
            return numpy.ndarray((lay.height, lay.plane_row_bytes[0]),
                                 dtype=numpy.uint8, buffer=mv, offset=off,
                                 strides=(stride, 1))
        c = lay.pixel_stride
        return numpy.ndarray((lay.height, lay.width, c), dtype=numpy.uint8,
                             buffer=mv, offset=off, strides=(stride, c, 1))
    return numpy.frombuffer(mv, dtype=numpy.uint8)


def _plane_array(mv, lay, i):
    import numpy
    if i >= lay.n_planes or not lay.plane_row_bytes[i]:
        raise IndexError("no plane %d with a known layout" % i)
    return numpy.ndarray((lay.plane_height[i], lay.plane_row_bytes[i]),
                         dtype=numpy.uint8, buffer=mv,
                         offset=lay.plane_offset[i],
                         strides=(lay.plane_stride[i], 1))


def parse_caps(caps):
    """Parses a raw-video caps string: dict with media_type, format, width,
    height, framerate (n, d)."""
    info = _n.CapsInfo()
    _check(_n.lib.pf_node_caps_parse(caps.encode(), ctypes.byref(info)),
           "parse_caps")
    return {"media_type": info.media_type.decode(),
            "format": info.format.decode(), "width": info.width,
            "height": info.height, "framerate": (info.fps_n, info.fps_d)}


def video_layout(fmt, width, height, stride_align=0):
    """GStreamer's default layout of a video frame: dict with size,
    offsets, strides."""
    lay = _n.VideoLayout()
    _check(_n.lib.pf_node_video_layout_compute(
        fmt.encode(), width, height, stride_align, ctypes.byref(lay)),
        "video_layout")
    n = lay.n_planes
    return {"size": lay.size, "n_planes": n,
            "offsets": list(lay.plane_offset)[:n],
            "strides": list(lay.plane_stride)[:n]}


# --------------------------------------------------------------------------
# Producer
# --------------------------------------------------------------------------

class _Handle(object):
    """An object of the C library owned through a pointer: freed once, by
    close() (release() for a Frame), at the end of a with block or when
    garbage-collected. Using it afterwards raises ValueError."""

    _ptr = None
    _free = None                    # the library function that frees it

    @property
    def _p(self):
        if self._ptr is None:
            raise ValueError("%s is closed" % type(self).__name__)
        return self._ptr

    def close(self):
        ptr, self._ptr = self._ptr, None
        if ptr and _n is not None:  # _n is None at interpreter exit
            getattr(_n.lib, self._free)(ptr)

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class Loan(_device.LoanDevice):
    """A slot loaned from a Producer's pool; write it, then publish().
    A device producer's loan (domain "device") is written with CUDA through
    its __cuda_array_interface__ / __dlpack__ views (see
    pinnedflow._device); its host views raise TypeError."""

    def __init__(self, producer, raw):
        self._producer = producer
        self._raw = raw
        self._done = False
        self.device = producer.device
        if raw.domain == _n.DOMAIN_DEVICE:
            self.domain = "device"
            self._mv = None
        else:
            self.domain = "host"
            self._mv = _view(producer.segment, raw.data, raw.capacity, False)

    @property
    def buffer(self):
        """Writable memoryview of the whole slot (capacity bytes)."""
        _device.refuse_host(self, "Loan.buffer")
        return self._mv

    @property
    def size(self):
        return self._raw.size

    @size.setter
    def size(self, v):
        self._raw.size = int(v)

    @property
    def capacity(self):
        return self._raw.capacity

    @property
    def slot(self):
        return self._raw.slot

    @property
    def strides(self):
        lay = self._raw.layout
        return list(lay.plane_stride)[:lay.n_planes]

    def array(self):
        """Writable numpy view laid out for the producer's video (see
        Producer.set_video), or the raw slot bytes."""
        _device.refuse_host(self, "Loan.array()")
        if self._raw.has_video_meta:
            return _layout_array(self._mv, self._producer._format,
                                 self._raw.layout)
        import numpy
        return numpy.frombuffer(self._mv, dtype=numpy.uint8)

    def plane(self, i):
        """Writable numpy view (rows, row bytes) of video plane @i."""
        _device.refuse_host(self, "Loan.plane()")
        if not self._raw.has_video_meta:
            raise ValueError("no video layout: call Producer.set_video()")
        return _plane_array(self._mv, self._raw.layout, i)

    def publish(self, pts=None, dts=None, duration=None, size=None,
                flags=0, clock_pts=None, stream=None):
        """Sends the frame; returns how many consumers got it. Times in
        ns; clock_pts (CLOCK_MONOTONIC, e.g. capture time) defaults to one
        derived from pts. A device loan is read by its consumers as soon as
        it is sent: every write must have completed. @stream (a
        cudaStream_t value, 1 the legacy default stream, 2 the per-thread
        one, e.g. torch.cuda.current_stream().cuda_stream) is synchronised
        first (cuStreamSynchronize); without it the writes must already be
        complete."""
        if self._done:
            raise ValueError("loan already published or discarded")
        if stream is not None:
            if self.domain != "device":
                raise ValueError("publish(stream=): a host loan")
            _device.sync_stream(stream)
        self._done = True
        if size is not None:
            self._raw.size = int(size)
        self._raw.pts = _untime(pts)
        self._raw.dts = _untime(dts)
        self._raw.duration = _untime(duration)
        self._raw.clock_pts = _untime(clock_pts)
        self._raw.buffer_flags = flags
        return _check(_n.lib.pf_node_producer_publish(
            self._producer._p, ctypes.byref(self._raw)), "publish")

    def discard(self):
        """Gives the slot back unpublished (nothing to do once the producer
        is closed: the pool went with it)."""
        if not self._done:
            self._done = True
            if self._producer._ptr is not None:
                _n.lib.pf_node_producer_discard(self._producer._ptr,
                                                ctypes.byref(self._raw))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.discard()
        return False


class Producer(_Handle):
    """Listens on @socket_path with a pool of @n_slots frames of @slot_size
    bytes in one pinned, write-sealed segment."""

    _free = "pf_node_producer_free"

    def __init__(self, socket_path, slot_size, n_slots=4,
                 max_client_frames=0, perms=0o600, lock=True, live=False,
                 reliable_timeout_ms=0, reliable_action="demote",
                 device=None):
        """@live: consumers that ask for no delivery get newest-frame from a
        live producer, every-frame otherwise. An every-frame consumer that
        holds back publish() for @reliable_timeout_ms (0: 5000, -1: no
        bound) is demoted to newest-frame or disconnected
        (@reliable_action "demote" or "disconnect").

        @device (a CUDA ordinal): the slots are CUDA device memory
        (pf_node_producer_new_device: one device segment shared as an fd);
        loans are device views, only consumers made with device=True get
        the frames. PinnedflowError ENOENT/ENODEV/ENOTSUP where the driver,
        the device or its virtual-memory fd export is missing."""
        if reliable_action not in _RELIABLE_ACTION:
            raise ValueError("reliable_action: 'demote' or 'disconnect'")
        cfg = _n.ProducerConfig()
        cfg.socket_path = os.fsencode(socket_path)
        cfg.perms = perms
        cfg.n_slots = n_slots
        cfg.slot_size = int(slot_size)
        cfg.max_client_frames = max_client_frames
        cfg.flags = 0 if lock else _n.PRODUCER_NO_LOCK
        out = ctypes.c_void_p()
        if device is None:
            _check(_n.lib.pf_node_producer_new(ctypes.byref(cfg),
                                               ctypes.byref(out)),
                   "Producer(%s)" % socket_path)
        else:
            res = _n.lib.pf_node_producer_new_device(
                ctypes.byref(cfg), int(device), ctypes.byref(out))
            why = _n.lib.pf_device_segment_error() if res < 0 else None
            _check(res, "Producer(%s, device=%d)" % (socket_path, device),
                   why.decode("utf-8", "replace") if why else None)
        self._ptr = out
        self.device = None if device is None else int(device)
        self._format = None
        self.segment = Segment(_n.lib.pf_node_producer_get_segment(out))
        try:
            self.live = live
            _check(_n.lib.pf_node_producer_set_reliable_timeout(
                self._p, reliable_timeout_ms,
                _RELIABLE_ACTION[reliable_action]), "Producer reliable timeout")
        except BaseException:
            self.close()
            raise

    @property
    def live(self):
        return self._live

    @live.setter
    def live(self, v):
        """Changes the default delivery of the consumers that follow it."""
        _check(_n.lib.pf_node_producer_set_live(self._p, 1 if v else 0),
               "Producer.live")
        self._live = bool(v)

    def set_caps(self, caps):
        self._format = None
        _check(_n.lib.pf_node_producer_set_caps(self._p, caps.encode()),
               "set_caps")

    def set_video(self, fmt, width, height, framerate=(30, 1)):
        """Sets raw-video caps; later loans carry its layout (strides)."""
        _check(_n.lib.pf_node_producer_set_video(
            self._p, fmt.encode(), width, height, framerate[0],
            framerate[1]), "set_video")
        self._format = fmt

    def loan(self, timeout_ms=-1):
        """A free slot; raises TimeoutError when none came back in time
        (timeout 0: PinnedflowError EAGAIN at once)."""
        raw = _n.Loan()
        fn = (_n.lib.pf_node_producer_loan_video if self._format
              else _n.lib.pf_node_producer_loan)
        _check(fn(self._p, timeout_ms, ctypes.byref(raw)), "loan")
        return Loan(self, raw)

    def send_eos(self):
        _check(_n.lib.pf_node_producer_send_eos(self._p), "send_eos")

    def wait_idle(self, timeout_ms=-1):
        _check(_n.lib.pf_node_producer_wait_idle(self._p, timeout_ms),
               "wait_idle")

    def enable_domains(self):
        """One copy per domain (docs/cuda.md): a host producer uploads
        each frame once into each device its consumers named
        (Consumer.set_domain()), shared by them all; a device producer
        (device=N) downloads each frame once into a pinned host pool when
        a consumer in the host domain is connected (one that did not ask
        for device frames or did not set_domain(N)), and its consumers of
        device N get the device frame with no copy. Before the first
        publish. PinnedflowError ENOENT where this process has no CUDA
        driver (a host producer's consumers then get host frames)."""
        _check(_n.lib.pf_node_producer_enable_domains(self._p),
               "Producer.enable_domains")

    @property
    def device_domains(self):
        """The devices the connected consumers named (set_domain()), as
        a list of (uuid bytes, consumers)."""
        d = (_n.ProducerDomain * _n.MAX_DOMAINS)()
        n = _n.lib.pf_producer_get_device_domains(
            _n.lib.pf_node_producer_get_transport(self._p), d,
            _n.MAX_DOMAINS)
        return [(bytes(x.uuid), x.n_clients) for x in d[:min(n,
                                                             _n.MAX_DOMAINS)]]

    @property
    def domain_stats(self):
        """Copies per domain and per frame: frames, uploads,
        frames_uploaded, unreachable, device_bytes, and per domain its
        uuid (bytes), ordinal, slots, free_slots, uploads, bytes,
        device_bytes, no_slot, peer_copies, waits; a device producer's
        host domain: downloads, download_bytes, host_no_slot, host_bytes,
        host_slots, host_free_slots, host_waits; its copies to other
        devices: peer_copies."""
        st = _n.DomainStats()
        _check(_n.lib.pf_node_producer_get_domain_stats(
            self._p, ctypes.byref(st)), "Producer.domain_stats")
        return dict(
            frames=st.frames, uploads=st.uploads,
            frames_uploaded=st.frames_uploaded, unreachable=st.unreachable,
            device_bytes=st.device_bytes,
            downloads=st.downloads, download_bytes=st.download_bytes,
            host_no_slot=st.host_no_slot, host_bytes=st.host_bytes,
            host_slots=st.host_slots, host_free_slots=st.host_free_slots,
            peer_copies=st.peer_copies, host_waits=st.host_waits,
            domains=[dict(uuid=bytes(d.uuid), ordinal=d.ordinal,
                          slots=d.n_slots, free_slots=d.free_slots,
                          uploads=d.uploads, bytes=d.bytes,
                          device_bytes=d.device_bytes, no_slot=d.no_slot,
                          peer_copies=d.peer_copies, waits=d.waits)
                     for d in st.domain[:st.n_domains]])

    def wait_clients(self, n=1, timeout_ms=-1):
        """Waits until at least @n consumers are connected."""
        _check(_n.lib.pf_node_producer_wait_clients(self._p, n,
                                                    timeout_ms),
               "wait_clients")

    @property
    def n_slots(self):
        return _n.lib.pf_node_producer_get_n_slots(self._p)

    @property
    def free_slots(self):
        return _n.lib.pf_node_producer_get_free_slots(self._p)

    @property
    def n_clients(self):
        return _n.lib.pf_node_producer_get_n_clients(self._p)



# --------------------------------------------------------------------------
# Consumer
# --------------------------------------------------------------------------

class Frame(_device.FrameDevice, _export.HostFrameExports, _Handle):
    """A received frame; release() (or leaving a with block) gives it back,
    once every borrower (DLPack tensor, Arrow array, borrow(),
    numpy.asarray(frame)) is gone too: see _export.HostFrameExports."""

    _free = "pf_hold_unref"

    def __init__(self, ptr):
        self._ptr = _export.hold_node_frame(ptr)   # owns the frame
        f = ptr.contents
        self.seq = f.seq
        self.size = f.size
        self.caps = f.caps.decode() if f.caps else ""
        self.format = f.info.format.decode()
        self.media_type = f.info.media_type.decode()
        self.width = f.info.width
        self.height = f.info.height
        self.framerate = (f.info.fps_n, f.info.fps_d)
        self.pts = _time(f.pts)
        self.dts = _time(f.dts)
        self.duration = _time(f.duration)
        self.clock_pts = _time(f.clock_pts)
        self.send_time = f.send_time
        self.recv_time = f.recv_time
        self.flags = f.buffer_flags
        self.has_video_meta = bool(f.has_video_meta)
        lay = f.layout
        self.strides = list(lay.plane_stride)[:lay.n_planes]
        self.offsets = list(lay.plane_offset)[:lay.n_planes]
        self._layout = _n.VideoLayout.from_buffer_copy(lay)
        self.segment = Segment(f.segment)
        self.segment_offset = f.segment_offset
        self.readonly = bool(f.readonly)
        if f.domain == _n.DOMAIN_DEVICE:
            # device memory: no host address anywhere in this object
            info = _device.frame_device_info(ptr)
            self.domain = "device"
            self.device = info.ordinal
            self.device_uuid = bytes(info.uuid)
            self.device_ptr = info.ptr
            self._chunks = []
        else:
            self.domain = "host"
            self.device = self.device_uuid = self.device_ptr = None
            self._chunks = [(f.chunk_data[i], f.chunk_size[i])
                            for i in range(f.n_chunks)]
        self._mv = None

    @property
    def released(self):
        return self._ptr is None

    @property
    def buffer(self):
        """Read-only memoryview of the frame bytes (no copy)."""
        if self._mv is None:
            if self._ptr is None:
                raise ValueError("frame already released")
            _device.refuse_host(self, "Frame.buffer")
            if len(self._chunks) != 1:
                raise ValueError("frame has %d chunks; use chunks()"
                                 % len(self._chunks))
            addr, size = self._chunks[0]
            self._mv = _view(self.segment, addr, size, True)
        return self._mv

    def chunks(self):
        """Read-only memoryviews of each memory chunk."""
        _device.refuse_host(self, "Frame.chunks()")
        return [_view(self.segment, a, s, True) for a, s in self._chunks]

    def array(self):
        """Read-only numpy view: (h, w, c) for packed RGB-like formats,
        (h, w) for GRAY, else the plain bytes."""
        _device.refuse_host(self, "Frame.array()")
        return _layout_array(self.buffer, self.format, self._layout)

    def plane(self, i):
        """Read-only numpy view (rows, row bytes) of video plane @i."""
        _device.refuse_host(self, "Frame.plane()")
        return _plane_array(self.buffer, self._layout, i)

    release = _Handle.close

    def __repr__(self):
        return "<pinnedflow.Frame seq=%d %s %dx%d pts=%s size=%d%s>" % (
            self.seq, self.format, self.width, self.height, self.pts,
            self.size, "" if self.domain == "host" else
            " cuda:%d" % self.device)


class Consumer(_Handle):
    """Connects to a producer (pf_node or pinnedshmsink), waiting up to
    @timeout_ms for it to appear and say HELLO (-1: forever). A peer that
    accepts and stays silent raises TimeoutError (errno ETIME) by then.

    What it accepts from the producer (docs/protocol.md, "Consumer budget"):
    @max_mapped_bytes and @max_mapped_segments bound the shared memory the
    producer may make it map at once (None: 768 MiB and 64); a segment past
    them ends the connection: next() raises PinnedflowError (errno EDQUOT)
    naming the bytes and the budget. Segments are mapped lazily unless
    @lock_segments (prefault and mlock each one).

    @delivery (docs/protocol.md, section 7.1): "every-frame" (never skipped;
    the producer waits for this consumer, up to its reliable timeout, then
    demotes it to newest-frame), "newest-frame" (skipped when behind; stale
    queued frames are released unseen so next() returns the newest), or
    None (the producer's default: newest-frame when it is live, every-frame
    when not). The policy in force: .delivery (after the first next()).

    A producer that vanishes without EOS raises ProducerLost (errno
    ECONNRESET) from next() and from iteration, never a silent end.

    @device=True accepts device frames (a Producer(..., device=N), docs
    /cuda.md "Device frames in nodes"): they arrive with no copy, domain
    "device", lent as DLPack kDLCUDA, __cuda_array_interface__ and Arrow
    ARROW_DEVICE_CUDA. Where this process cannot import the producer's
    device memory (no CUDA driver, no device with its UUID, no virtual
    memory fd support) the segment is refused and its frames released
    unseen, counted in .device_stats; host frames come as usual. Without
    it, the producer sends this consumer no device frame."""

    _free = "pf_node_consumer_free"

    def __init__(self, socket_path, timeout_ms=-1, max_mapped_bytes=None,
                 max_mapped_segments=None, lock_segments=False,
                 delivery=None, device=False):
        if delivery not in _DELIVERY:
            raise ValueError("delivery: 'every-frame', 'newest-frame' or "
                             "None, not %r" % (delivery,))
        out = ctypes.c_void_p()
        res = _n.lib.pf_node_consumer_new_full(
            os.fsencode(socket_path), timeout_ms, _DELIVERY[delivery],
            _n.CONSUMER_DEVICE if device else 0, ctypes.byref(out))
        if res < 0:
            why = _n.lib.pf_consumer_connect_error()
            _check(res, "Consumer(%s)" % socket_path,
                   why.decode("utf-8", "replace") if why else None)
        self._ptr = out
        for v in (max_mapped_bytes, max_mapped_segments):
            if v is not None and v <= 0:
                self.close()
                raise ValueError("a budget must be positive (None: default)")
        res = _n.lib.pf_node_consumer_set_budget(
            self._p, max_mapped_bytes or 0, max_mapped_segments or 0,
            _n.CONSUMER_LOCK if lock_segments else 0)
        if res < 0:
            self.close()
            _check(res, "Consumer.set_budget")

    def fileno(self):
        """Poll it for reading (select, asyncio add_reader, epoll), then
        call next(0) until it returns None."""
        return _n.lib.pf_node_consumer_get_fd(self._p)

    def next(self, timeout_ms=-1):
        """A Frame, EOS, or None on timeout. Raises ProducerLost
        (ECONNRESET) when the producer went away without EOS, ConnectionError
        (EPIPE) when it hung up after EOS, TimeoutError (ETIMEDOUT) when it
        stopped reading our releases, PinnedflowError on a protocol
        error."""
        out = ctypes.POINTER(_n.Frame)()
        res = _n.lib.pf_node_consumer_next(self._p, timeout_ms,
                                           ctypes.byref(out))
        if res == 1:
            return Frame(out)
        if res == _n.NODE_EOS:
            return EOS
        if res == 0:
            return None
        detail = _n.lib.pf_node_consumer_get_error(self._p).decode(
            "utf-8", "replace")
        if -res in (_errno.ECONNRESET, _errno.ECONNABORTED):
            raise ProducerLost(res, "next", detail)
        if -res == _errno.EPIPE:
            raise ConnectionError(_errno.EPIPE, "producer gone: " + detail)
        _check(res, "next", detail)

    def __iter__(self):
        """Frames until EOS (or a hang-up after it). A producer lost without
        EOS raises ProducerLost: the stream did not end."""
        while True:
            try:
                f = self.next(-1)
            except ProducerLost:
                raise
            except ConnectionError:
                return
            if f is EOS:
                return
            if f is not None:
                yield f

    @property
    def delivery(self):
        """"every-frame" or "newest-frame" as the producer said (None before
        the first next())."""
        return _DELIVERY_NAME.get(
            _n.lib.pf_node_consumer_get_delivery(self._p))

    def _stream(self):
        si = _n.StreamInfo()
        _n.lib.pf_node_consumer_get_stream(self._p, ctypes.byref(si))
        return si

    @property
    def live(self):
        """Whether the producer says its stream is live."""
        return bool(self._stream().flags & _n.STREAM_LIVE)

    @property
    def demoted(self):
        """True once the producer demoted this every-frame consumer."""
        return bool(self._stream().flags & _n.STREAM_DEMOTED)

    @property
    def segment(self):
        """The producer's segment as a dict (GstSegment fields), or None."""
        si = self._stream()
        if not si.flags & _n.STREAM_HAS_SEGMENT:
            return None
        sg = si.segment
        return {k: (_time(getattr(sg, k)) if k not in ("format", "flags",
                    "rate", "applied_rate") else getattr(sg, k))
                for k, _ in _n.StreamSegment._fields_}

    @property
    def stats(self):
        """frames_received, frames_stale_dropped (newest-frame: released
        unseen here), frames_missed (the producer skipped them), delivery,
        demoted."""
        st = _n.ConsumerStats()
        _n.lib.pf_node_consumer_get_stats(self._p, ctypes.byref(st))
        return dict(frames_received=st.frames_received,
                    frames_stale_dropped=st.frames_stale_dropped,
                    frames_missed=st.frames_missed,
                    delivery=_DELIVERY_NAME.get(st.delivery),
                    demoted=bool(st.demoted))

    def set_domain(self, ordinal):
        """Names the CUDA device this consumer (device=True) wants its
        frames on: a producer with enable_domains() sends them already
        there, one upload shared by every consumer of that device.
        PinnedflowError EINVAL (not device=True), ENODEV (no such
        device)."""
        _check(_n.lib.pf_node_consumer_set_domain(self._p, int(ordinal)),
               "Consumer.set_domain")

    @property
    def device_stats(self):
        """Device frames released unseen here (frames_skipped), device
        segments refused (segments_refused) and why (reason)."""
        skipped, refused = _n.u64(), _n.u32()
        why = _n.lib.pf_node_consumer_get_device_stats(
            self._p, ctypes.byref(skipped), ctypes.byref(refused))
        return dict(frames_skipped=skipped.value,
                    segments_refused=refused.value,
                    reason=why.decode("utf-8", "replace") if why else "")

    @property
    def caps(self):
        c = _n.lib.pf_node_consumer_get_caps(self._p)
        return c.decode() if c else None

    @property
    def held(self):
        return _n.lib.pf_node_consumer_get_held(self._p)

    @property
    def error(self):
        return _n.lib.pf_node_consumer_get_error(self._p).decode()

    # close(): frames not yet released stay valid until released.


def live_segments():
    """Segments alive in this process (tests use it to find leaks)."""
    return _n.lib.pf_segment_count_live()
