# pinnedflow Python binding: ctypes declarations of libpinnedflow's node API.
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Low-level mirror of pf-node.h. Use the classes in pinnedflow instead."""

import ctypes
import ctypes.util
import os

MAX_PLANES = 4
MAX_CHUNKS = 4
TIME_NONE = 2 ** 64 - 1
NODE_EOS = 2
# pf_consumer_budget_flags (pf-consumer.h)
CONSUMER_PREFAULT = 1 << 0
CONSUMER_LOCK = 1 << 1
# enum pf_delivery, pf_stream_flags, pf_reliable_action (pf-frame.h,
# pf-producer.h)
DELIVERY_DEFAULT, DELIVERY_EVERY_FRAME, DELIVERY_NEWEST_FRAME = 0, 1, 2
STREAM_LIVE, STREAM_HAS_SEGMENT, STREAM_DEMOTED = 1 << 0, 1 << 1, 1 << 2
RELIABLE_TIMEOUT_DEMOTE, RELIABLE_TIMEOUT_DISCONNECT = 0, 1
ABI_VERSION = 1

u32 = ctypes.c_uint32
i32 = ctypes.c_int32
u64 = ctypes.c_uint64


class CapsInfo(ctypes.Structure):
    _fields_ = [
        ("media_type", ctypes.c_char * 32),
        ("format", ctypes.c_char * 16),
        ("width", u32), ("height", u32),
        ("fps_n", i32), ("fps_d", i32),
    ]


class VideoLayout(ctypes.Structure):
    _fields_ = [
        ("width", u32), ("height", u32), ("n_planes", u32),
        ("size", u64),
        ("plane_offset", u64 * MAX_PLANES),
        ("plane_stride", i32 * MAX_PLANES),
        ("plane_height", u32 * MAX_PLANES),
        ("plane_row_bytes", u32 * MAX_PLANES),
        ("pixel_stride", u32),
        ("reserved", u32),
    ]


class Loan(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("size", u64), ("capacity", u64),
        ("slot", u32), ("has_video_meta", u32),
        ("layout", VideoLayout),
        ("pts", u64), ("dts", u64), ("duration", u64),
        ("clock_pts", u64),
        ("buffer_flags", u32), ("domain", u32),
        ("segment_offset", u64),
        ("loan_id", u64),
    ]


class StreamSegment(ctypes.Structure):
    _fields_ = [
        ("format", u32), ("flags", u32),
        ("rate", ctypes.c_double), ("applied_rate", ctypes.c_double),
        ("base", u64), ("offset", u64), ("start", u64), ("stop", u64),
        ("time", u64), ("position", u64), ("duration", u64),
    ]


class StreamInfo(ctypes.Structure):
    _fields_ = [
        ("flags", u32), ("delivery", u32),
        ("segment", StreamSegment),
    ]


class ConsumerStats(ctypes.Structure):
    _fields_ = [
        ("frames_received", u64),
        ("frames_stale_dropped", u64),
        ("frames_missed", u64),
        ("delivery", u32), ("demoted", u32),
    ]


class ProducerConfig(ctypes.Structure):
    _fields_ = [
        ("socket_path", ctypes.c_char_p),
        ("perms", ctypes.c_uint),
        ("n_slots", ctypes.c_uint),
        ("slot_size", u64),
        ("max_client_frames", ctypes.c_uint),
        ("flags", ctypes.c_uint),
    ]


class Frame(ctypes.Structure):
    _fields_ = [
        ("seq", u64),
        ("data", ctypes.c_void_p),
        ("size", u64),
        ("n_chunks", u32), ("caps_seq", u32),
        ("chunk_data", ctypes.c_void_p * MAX_CHUNKS),
        ("chunk_size", u64 * MAX_CHUNKS),
        ("caps", ctypes.c_char_p),
        ("info", CapsInfo),
        ("has_video_meta", u32),
        ("layout", VideoLayout),
        ("pts", u64), ("dts", u64), ("duration", u64),
        ("clock_pts", u64), ("send_time", u64), ("recv_time", u64),
        ("buffer_flags", u32), ("readonly", u32),
        ("segment", ctypes.c_void_p),
        ("segment_base", ctypes.c_void_p),
        ("segment_size", u64),
        ("segment_fd", i32), ("domain", u32),
        ("segment_id", u64),
        ("segment_offset", u64),
    ]


class DeviceInfo(ctypes.Structure):
    """pf_node_device_info (pf-node.h)."""
    _fields_ = [
        ("ordinal", i32), ("access", u32),
        ("uuid", ctypes.c_uint8 * 16),
        ("ptr", u64),
        ("chunk_ptr", u64 * MAX_CHUNKS),
    ]


class DomainInfo(ctypes.Structure):
    """pf_node_domain_info (pf-node-domains.h)."""
    _fields_ = [
        ("uuid", ctypes.c_uint8 * 16), ("ordinal", i32), ("n_slots", u32),
        ("free_slots", u32), ("reserved", u32), ("uploads", u64),
        ("bytes", u64), ("device_bytes", u64), ("no_slot", u64),
        ("peer_copies", u64), ("waits", u64),
    ]


MAX_DOMAINS = 7


class ProducerDomain(ctypes.Structure):
    """pf_producer_domain (pf-producer.h)."""
    _fields_ = [("uuid", ctypes.c_uint8 * 16), ("n_clients", u32)]


class DomainStats(ctypes.Structure):
    """pf_node_domain_stats (pf-node-domains.h)."""
    _fields_ = [
        ("frames", u64), ("uploads", u64), ("frames_uploaded", u64),
        ("unreachable", u64), ("device_bytes", u64), ("n_domains", u32),
        ("reserved", u32), ("domain", DomainInfo * MAX_DOMAINS),
        ("downloads", u64), ("download_bytes", u64), ("host_no_slot", u64),
        ("host_bytes", u64), ("host_slots", u32), ("host_free_slots", u32),
        ("peer_copies", u64), ("host_waits", u64),
    ]


# enum pf_node_domain, pf_node_consumer_flags, pf_device_access
DOMAIN_HOST, DOMAIN_DEVICE = 0, 1
CONSUMER_DEVICE = 1 << 0
DEVICE_ACCESS_READ, DEVICE_ACCESS_READWRITE = 1, 3

PRODUCER_NO_LOCK = 1 << 0
PRODUCER_HUGEPAGES = 1 << 1


def _load():
    # PINNEDFLOW_LIBRARY; a copy next to this file (a wheel built with
    # PINNEDFLOW_BUNDLE_LIBRARY, see bridge/python/setup.py); the system's
    # (the libpinnedflow0 package, LD_LIBRARY_PATH, ld.so.cache).
    names = []
    env = os.environ.get("PINNEDFLOW_LIBRARY")
    if env:
        names.append(env)
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "libpinnedflow.so.0")
    if os.path.exists(here):
        names.append(here)
    names += ["libpinnedflow.so.0", "libpinnedflow.so"]
    found = ctypes.util.find_library("pinnedflow")
    if found:
        names.append(found)
    errors = []
    for name in names:
        try:
            return ctypes.CDLL(name, use_errno=True)
        except OSError as e:
            errors.append(str(e))
    raise ImportError("pinnedflow: cannot load libpinnedflow (set "
                      "PINNEDFLOW_LIBRARY or LD_LIBRARY_PATH): "
                      + "; ".join(errors))


lib = _load()

P = ctypes.c_void_p
PP = ctypes.POINTER(ctypes.c_void_p)
_protos = {
    "pf_node_abi_sizeof": (ctypes.c_size_t, [ctypes.c_char_p]),
    "pf_node_strerror": (ctypes.c_char_p, [ctypes.c_int]),
    "pf_node_caps_parse": (ctypes.c_int, [ctypes.c_char_p,
                                          ctypes.POINTER(CapsInfo)]),
    "pf_node_video_layout_compute": (ctypes.c_int, [
        ctypes.c_char_p, u32, u32, u32, ctypes.POINTER(VideoLayout)]),
    "pf_node_producer_new": (ctypes.c_int, [ctypes.POINTER(ProducerConfig),
                                            PP]),
    "pf_node_producer_new_device": (ctypes.c_int, [
        ctypes.POINTER(ProducerConfig), ctypes.c_int, PP]),
    "pf_device_segment_error": (ctypes.c_char_p, []),
    "pf_device_segment_get_ptr": (u64, [P]),
    "pf_node_producer_free": (None, [P]),
    "pf_node_producer_set_caps": (ctypes.c_int, [P, ctypes.c_char_p]),
    "pf_node_producer_set_video": (ctypes.c_int, [P, ctypes.c_char_p, u32,
                                                  u32, i32, i32]),
    "pf_node_producer_loan": (ctypes.c_int, [P, ctypes.c_int,
                                             ctypes.POINTER(Loan)]),
    "pf_node_producer_loan_video": (ctypes.c_int, [P, ctypes.c_int,
                                                   ctypes.POINTER(Loan)]),
    "pf_node_producer_publish": (ctypes.c_int, [P, ctypes.POINTER(Loan)]),
    "pf_node_producer_discard": (ctypes.c_int, [P, ctypes.POINTER(Loan)]),
    "pf_node_producer_send_eos": (ctypes.c_int, [P]),
    "pf_node_producer_wait_idle": (ctypes.c_int, [P, ctypes.c_int]),
    "pf_node_producer_wait_clients": (ctypes.c_int, [P, ctypes.c_uint,
                                                     ctypes.c_int]),
    "pf_node_producer_get_n_slots": (ctypes.c_uint, [P]),
    "pf_node_producer_get_free_slots": (ctypes.c_uint, [P]),
    "pf_node_producer_get_n_clients": (ctypes.c_uint, [P]),
    "pf_node_producer_get_segment": (P, [P]),
    "pf_node_producer_set_live": (ctypes.c_int, [P, ctypes.c_int]),
    "pf_node_producer_set_reliable_timeout": (ctypes.c_int, [
        P, ctypes.c_int, ctypes.c_int]),
    "pf_node_consumer_new_with": (ctypes.c_int, [
        ctypes.c_char_p, ctypes.c_int, u32, PP]),
    "pf_node_consumer_new_full": (ctypes.c_int, [
        ctypes.c_char_p, ctypes.c_int, u32, u32, PP]),
    "pf_node_consumer_get_device_stats": (ctypes.c_char_p, [
        P, ctypes.POINTER(u64), ctypes.POINTER(u32)]),
    "pf_node_frame_get_device": (ctypes.c_int, [
        ctypes.POINTER(Frame), ctypes.POINTER(DeviceInfo)]),
    "pf_node_consumer_get_delivery": (u32, [P]),
    "pf_node_consumer_get_stream": (None, [P, ctypes.POINTER(StreamInfo)]),
    "pf_node_consumer_get_stats": (None, [P, ctypes.POINTER(ConsumerStats)]),
    "pf_node_consumer_new": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_int,
                                            PP]),
    "pf_node_consumer_set_budget": (ctypes.c_int, [P, u64, ctypes.c_uint32,
                                                   ctypes.c_uint32]),
    "pf_node_consumer_free": (None, [P]),
    "pf_node_consumer_get_fd": (ctypes.c_int, [P]),
    "pf_node_consumer_next": (ctypes.c_int, [
        P, ctypes.c_int, ctypes.POINTER(ctypes.POINTER(Frame))]),
    "pf_node_frame_release": (ctypes.c_int, [ctypes.POINTER(Frame)]),
    "pf_node_consumer_get_caps": (ctypes.c_char_p, [P]),
    "pf_node_consumer_get_held": (ctypes.c_uint, [P]),
    "pf_node_consumer_get_error": (ctypes.c_char_p, [P]),
    "pf_consumer_connect_error": (ctypes.c_char_p, []),
    "pf_segment_ref": (P, [P]),
    "pf_segment_unref": (None, [P]),
    "pf_segment_get_id": (u64, [P]),
    "pf_segment_get_fd": (ctypes.c_int, [P]),
    "pf_segment_get_size": (u64, [P]),
    "pf_segment_get_base": (P, [P]),
    "pf_segment_get_state": (ctypes.c_uint, [P]),
    "pf_segment_count_live": (ctypes.c_int, []),
    "pf_node_producer_enable_domains": (ctypes.c_int, [P]),
    "pf_node_producer_get_domain_stats": (ctypes.c_int, [
        P, ctypes.POINTER(DomainStats)]),
    "pf_node_consumer_set_domain": (ctypes.c_int, [P, ctypes.c_int]),
    "pf_node_producer_get_transport": (P, [P]),
    "pf_producer_get_device_domains": (ctypes.c_uint, [
        P, ctypes.POINTER(ProducerDomain), ctypes.c_uint]),
}
for _name, (_res, _args) in _protos.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args

for _name, _cls in (("pf_node_frame", Frame), ("pf_node_loan", Loan),
                    ("pf_node_video_layout", VideoLayout),
                    ("pf_node_caps_info", CapsInfo),
                    ("pf_node_device_info", DeviceInfo)):
    _n = lib.pf_node_abi_sizeof(_name.encode())
    if _n != ctypes.sizeof(_cls):
        raise ImportError("pinnedflow: %s is %d bytes in the library, %d in "
                          "the binding (version mismatch)"
                          % (_name, _n, ctypes.sizeof(_cls)))
