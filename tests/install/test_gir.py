# Install suite: libgstpinnedflow-1.0 from Python through its typelib.
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Usage: test_gir.py   (GI_TYPELIB_PATH names the GstPinnedflow-1.0 typelib)

The rule: PyGObject reaches the allocator, the pool and the segment
through GstPinnedflow-1.0.typelib alone (no Python code of ours):
  - PinnedAllocator.get() allocates memory that is pinned memory and fd
    memory whose fd is a memfd sealed against SHRINK and GROW; bytes
    written through GStreamer are the bytes in the shared fd (zero copy);
  - a PinnedBufferPool configured for video hands out buffers whose memory
    is a slice of the pool's one segment (same PinnedSegment for each);
  - a bad fd given to pinned_segment_import raises GLib.Error in the
    GstPinnedSegmentError domain.
"""
import fcntl
import mmap
import os

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstAllocators", "1.0")
gi.require_version("GstPinnedflow", "1.0")
from gi.repository import GLib, Gst, GstAllocators, GstPinnedflow  # noqa: E402

F_GET_SEALS = 1034
F_SEAL_SHRINK, F_SEAL_GROW = 0x2, 0x4


def check_buffer(buf, payload):
    """buf's one memory is pinned memfd memory; payload written through
    GStreamer is in the fd itself (a silent copy would fail here)."""
    assert buf.n_memory() == 1
    assert buf.fill(0, payload) == len(payload)
    mem = buf.peek_memory(0)
    assert GstPinnedflow.is_pinned_memory(mem), mem
    assert GstAllocators.is_fd_memory(mem), mem
    fd = GstAllocators.fd_memory_get_fd(mem)
    assert os.readlink("/proc/self/fd/%d" % fd).startswith("/memfd:"), fd
    seals = fcntl.fcntl(fd, F_GET_SEALS)
    assert seals & F_SEAL_SHRINK and seals & F_SEAL_GROW, hex(seals)
    seg, off = GstPinnedflow.pinned_memory_get_segment(mem)
    assert seg is not None
    # The same bytes, read from the fd through a mapping of our own.
    page = off - off % mmap.PAGESIZE
    with mmap.mmap(fd, off - page + len(payload), mmap.MAP_SHARED,
                   mmap.PROT_READ, offset=page) as m:
        assert m[off - page:off - page + len(payload)] == payload
    assert buf.extract_dup(0, len(payload)) == payload
    return fd


def main():
    Gst.init([])  # not None: the 1.28 typelib refuses it (no gst-python)
    alloc = GstPinnedflow.PinnedAllocator.get()
    assert isinstance(alloc, GstPinnedflow.PinnedAllocator), alloc
    # Gst.Allocator.alloc: FdAllocator.alloc (wrap an fd) shadows it
    buf = Gst.Buffer.new()
    buf.append_memory(Gst.Allocator.alloc(alloc, 1 << 16, None))
    check_buffer(buf, bytes(range(256)) * 256)
    print("allocator: 64 KiB pinned memfd memory, written and read back")

    caps = Gst.Caps.from_string(
        "video/x-raw,format=RGBA,width=64,height=48,framerate=30/1")
    pool = GstPinnedflow.PinnedBufferPool.new_configured(
        caps, 64 * 48 * 4, 2, 2, True, GstPinnedflow.PinnedSegmentFlags(0))
    assert pool is not None and isinstance(pool,
                                           GstPinnedflow.PinnedBufferPool)
    assert pool.set_active(True)
    bufs, fds = [], []
    for n in range(2):
        ret, buf = pool.acquire_buffer(None)
        assert ret == Gst.FlowReturn.OK, ret
        assert buf.get_size() == 64 * 48 * 4, buf.get_size()
        fds.append(check_buffer(buf, bytes([n + 1]) * (64 * 48 * 4)))
        bufs.append(buf)
    assert GstPinnedflow.PinnedBufferPool.get_segment(pool) is not None
    assert fds[0] == fds[1], fds          # two slots of one segment
    assert bufs[0].extract_dup(0, 1) == b"\x01"    # slot 2 did not overwrite
    del bufs, buf
    assert pool.set_active(False)
    print("pool: 2 RGBA 64x48 buffers, slots of one pinned segment")

    r, w = os.pipe()
    try:
        GstPinnedflow.pinned_segment_import(r, 4096, False)
        raise AssertionError("a pipe imported as a segment")
    except GLib.Error as e:
        assert e.domain == GLib.quark_to_string(
            GstPinnedflow.pinned_segment_error_quark()), e.domain
        print("import of a pipe: %s" % e.message)
    finally:
        os.close(r)
        os.close(w)


if __name__ == "__main__":
    main()
