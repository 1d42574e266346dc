/* pinnedflow: the wire protocol (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Messages travel over a SOCK_SEQPACKET unix socket, one message per packet.
 * Every message starts with a 16-byte header. All integers are little-endian
 * and every struct has a fixed size, asserted at compile time. docs/protocol.md
 * is the specification; this header is its C rendering.
 *
 * Internal: not installed. The public API speaks pf_producer_frame and
 * pf_consumer_frame (pf-frame.h); pf-producer.c and pf-consumer.c convert.
 * The library and the test suites (which forge and parse raw packets)
 * include it from the source tree.
 */
#ifndef __PF_WIRE_PRIVATE_H__
#define __PF_WIRE_PRIVATE_H__

#include <stddef.h>
#include <stdint.h>

#include <pinnedflow/pf-frame.h>
#include <pinnedflow/pf-segment.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PF_PROTOCOL_MAGIC 0x574c4650u   /* "PFLW" as little-endian bytes */
#define PF_PROTOCOL_VERSION 2

/* PF_MAX_CHUNKS, PF_MAX_PLANES, PF_MAX_CAPS_LEN, PF_TIME_NONE and
 * PF_FRAME_HAS_VIDEO_META: pf-frame.h */
#define PF_MAX_FDS_PER_MSG 3    /* SEGMENT_ADD and DEVICE_SEGMENT_ADD carry
                                 * 1 fd, FRAME_RING 3 */

enum pf_msg_type {
  PF_MSG_HELLO = 1,             /* both ways, first message */
  PF_MSG_SEGMENT_ADD = 2,       /* producer -> consumer, 1 fd */
  PF_MSG_SEGMENT_REMOVE = 3,    /* producer -> consumer */
  PF_MSG_CAPS = 4,              /* producer -> consumer, variable size */
  PF_MSG_FRAME = 5,             /* producer -> consumer */
  PF_MSG_EOS = 6,               /* producer -> consumer */
  PF_MSG_RELEASE = 7,           /* consumer -> producer */
  PF_MSG_STREAM = 8,            /* producer -> consumer (version 2) */
  PF_MSG_REFUSE = 9,            /* producer -> consumer, instead of HELLO (v2) */
  PF_MSG_FRAME_RING = 10,       /* producer -> consumer, 3 fds (v2, optional) */
  PF_MSG_DEVICE_SEGMENT_ADD = 11,       /* producer -> consumer, 1 fd (v2,
                                         * optional: PF_HELLO_DEVICE_SEGMENTS) */
  PF_MSG_DOMAIN = 12,           /* consumer -> producer (v2, optional: after
                                 * a HELLO with PF_HELLO_DEVICE_SEGMENTS) */
};

/* REFUSE reasons */
enum pf_refuse_reason {
  PF_REFUSE_TOO_MANY_CONSUMERS = 1,     /* limit: the producer's max */
  /* after the handshake, right before the producer closes the connection:
   * the consumer fell behind (held its frames past the reliable timeout,
   * or released none while the producer had no free frame); limit: the
   * reliable timeout in ms, 0 for the latter */
  PF_REFUSE_FELL_BEHIND = 2,
};

/* HELLO flags (version 2): a consumer's requested enum pf_delivery (0: the
 * producer's default, 1, 2; 3 is invalid). A producer sends 0: the delivery
 * it grants and its liveness come in the STREAM that follows. */
#define PF_HELLO_DELIVERY_MASK 0x3u
/* HELLO flag of a consumer (issue 26): it takes FRAMEs through a frame ring
 * (PF_MSG_FRAME_RING) with socketpair doorbells if the producer offers one. */
#define PF_HELLO_FRAME_RING 0x8u
/* Retired (issue 13's ring, eventfd doorbells a peer could make block,
 * issue 26): still accepted in a consumer's HELLO, never answered with a
 * ring: that consumer gets its FRAMEs on the socket. */
#define PF_HELLO_FRAME_RING_EVENTFD 0x4u
/* HELLO flag of a consumer (issue 32): it takes device segments
 * (PF_MSG_DEVICE_SEGMENT_ADD) and the frames whose chunks lie in them.
 * A consumer without it never sees either. */
#define PF_HELLO_DEVICE_SEGMENTS 0x10u
#define PF_HELLO_CONSUMER_FLAGS (PF_HELLO_DELIVERY_MASK | PF_HELLO_FRAME_RING \
    | PF_HELLO_FRAME_RING_EVENTFD | PF_HELLO_DEVICE_SEGMENTS)

/* STREAM flags: enum pf_stream_flags (pf-frame.h). */
#define PF_STREAM_FLAGS_ALL (PF_STREAM_LIVE | PF_STREAM_HAS_SEGMENT | \
    PF_STREAM_DEMOTED)

enum pf_role {
  PF_ROLE_PRODUCER = 1,
  PF_ROLE_CONSUMER = 2,
};

struct pf_msg_header {
  uint32_t type;                /* enum pf_msg_type */
  uint32_t size;                /* whole message, header included */
  uint32_t n_fds;               /* fds attached with SCM_RIGHTS */
  uint32_t reserved;            /* 0 */
};

struct pf_msg_hello {
  struct pf_msg_header hdr;
  uint32_t magic;               /* PF_PROTOCOL_MAGIC */
  uint16_t version;             /* PF_PROTOCOL_VERSION */
  uint16_t role;                /* enum pf_role of the sender */
  uint32_t max_held;            /* producer: frames this client may hold */
  uint32_t flags;               /* PF_HELLO_* */
  uint64_t session_id;          /* producer: random per producer instance */
};

struct pf_msg_segment_add {
  struct pf_msg_header hdr;
  uint64_t segment_id;          /* producer's id, never 0, never reused */
  uint64_t size;                /* bytes to map from offset 0 */
  uint32_t flags;               /* 0 */
  uint32_t reserved;
};

/* A device segment (issue 32): the fd is device memory exported by the
 * CUDA driver (cuMemExportToShareableHandle, @handle_type), of @size bytes
 * made with @granularity on the device @device_uuid. FRAMEs name it by
 * @segment_id as they name host segments; SEGMENT_REMOVE removes it. */
struct pf_msg_device_segment_add {
  struct pf_msg_header hdr;
  uint64_t segment_id;          /* never 0, never reused (one id space with
                                 * SEGMENT_ADD) */
  uint64_t size;                /* a multiple of granularity, <= 1 TiB */
  uint64_t granularity;         /* a power of two, 4 KiB .. 1 GiB */
  uint32_t handle_type;         /* PF_DEVICE_HANDLE_POSIX_FD */
  uint32_t flags;               /* 0 */
  uint8_t device_uuid[16];      /* cuDeviceGetUuid, not all zero */
};

/* The memory domain a consumer wants its frames in (issue 32, "one copy
 * per domain"): the device @device_uuid (cuDeviceGetUuid). Optional, sent
 * any time after a HELLO that set PF_HELLO_DEVICE_SEGMENTS, the last one
 * counts; a consumer that never sends one is in the host domain. A
 * producer that publishes a frame in several domains
 * (pf_producer_publish_domains()) gives it the variant whose device
 * segments lie on that device, else the host one. */
struct pf_msg_domain {
  struct pf_msg_header hdr;
  uint32_t flags;               /* 0 */
  uint32_t reserved;            /* 0 */
  uint8_t device_uuid[16];      /* not all zero */
};

/* Bounds of a DEVICE_SEGMENT_ADD */
#define PF_DEVICE_GRANULARITY_MIN 4096u
#define PF_DEVICE_GRANULARITY_MAX (UINT64_C (1) << 30)
#define PF_DEVICE_SEGMENT_MAX (UINT64_C (1) << 40)

struct pf_msg_segment_remove {
  struct pf_msg_header hdr;
  uint64_t segment_id;
};

struct pf_msg_caps {
  struct pf_msg_header hdr;
  uint32_t caps_seq;            /* increments with each caps change */
  uint32_t length;              /* bytes of caps text that follow, no NUL */
  /* char caps[length] follows; hdr.size == sizeof (struct pf_msg_caps) + length */
};

struct pf_msg_chunk {
  uint64_t segment_id;
  uint64_t offset;              /* byte offset of the data in the segment */
  uint64_t size;
};

struct pf_msg_frame {
  struct pf_msg_header hdr;
  uint64_t seq;                 /* per-producer frame id, increasing */
  uint32_t caps_seq;            /* caps this frame belongs to */
  uint32_t n_chunks;            /* 1..PF_MAX_CHUNKS */
  struct pf_msg_chunk chunks[PF_MAX_CHUNKS];
  uint64_t pts, dts, duration;  /* ns, PF_TIME_NONE when unset */
  uint64_t offset, offset_end;  /* GstBuffer offsets, UINT64_MAX when unset */
  uint64_t clock_pts;           /* PTS in CLOCK_MONOTONIC ns, or NONE */
  uint64_t send_time;           /* CLOCK_MONOTONIC ns when sent */
  uint32_t buffer_flags;        /* GstBufferFlags bits (see protocol.md) */
  uint32_t meta_flags;          /* enum pf_frame_meta_flags */
  uint32_t width, height, n_planes, reserved;
  uint64_t plane_offset[PF_MAX_PLANES]; /* from the start of the frame */
  int32_t plane_stride[PF_MAX_PLANES];
};

struct pf_msg_release {
  struct pf_msg_header hdr;
  uint64_t seq;
};

/* The producer's stream as this consumer sees it: liveness, the delivery in
 * force for it, the segment. Sent after the HELLO's segments and caps and
 * whenever one of them changes; later frames belong to it. */
struct pf_msg_stream {
  struct pf_msg_header hdr;
  uint32_t flags;               /* enum pf_stream_flags */
  uint32_t delivery;            /* enum pf_delivery in force: 1 or 2 */
  uint32_t seg_format;          /* GstFormat; 0 without HAS_SEGMENT */
  uint32_t seg_flags;           /* GstSegmentFlags */
  uint64_t seg_rate;            /* IEEE-754 binary64 bits */
  uint64_t seg_applied_rate;    /* IEEE-754 binary64 bits */
  uint64_t seg_base, seg_offset, seg_start, seg_stop, seg_time;
  uint64_t seg_position, seg_duration;
};

/* The frame ring (issue 13), offered right after the producer's HELLO to
 * a consumer whose HELLO set PF_HELLO_FRAME_RING. fds[0]: a sealed memfd of
 * @size bytes: struct pf_frame_ring, then @n_entries entries of
 * @entry_size bytes, each a FRAME message as sent on the socket; at
 * @release_offset the release ring, struct pf_release_ring then
 * @n_entries uint64_t frame seqs written by the consumer. fds[1]: the frame
 * doorbell, the consumer's end of an AF_UNIX SOCK_STREAM socketpair, to
 * which the producer sends 1 byte after each entry it publishes; fds[2]:
 * the release doorbell, likewise, the consumer sending 1 byte after each
 * release it publishes (pf-doorbell-private.h). A FRAME in the ring has
 * hdr.reserved = the number of messages the producer had sent on the
 * socket before it (the HELLO included): the consumer reads those first,
 * so the two channels keep one order. */
struct pf_msg_frame_ring {
  struct pf_msg_header hdr;
  uint32_t n_entries;           /* a power of two, 1..PF_FRAME_RING_MAX */
  uint32_t entry_size;          /* sizeof (struct pf_msg_frame) */
  uint64_t size;                /* bytes of the memfd to map */
  uint64_t release_offset;      /* PF_FRAME_RING_RELEASE_OFFSET (n) */
};

/* Where the release ring starts and the memfd's size, for n entries. */
#define PF_FRAME_RING_PAGE 4096u
#define PF_FRAME_RING_ROUND(x) (((uint64_t) (x) + PF_FRAME_RING_PAGE - 1) & \
    ~(uint64_t) (PF_FRAME_RING_PAGE - 1))
#define PF_FRAME_RING_RELEASE_OFFSET(n) PF_FRAME_RING_ROUND (64 + \
    (uint64_t) (n) * 256)
#define PF_FRAME_RING_SIZE(n) (PF_FRAME_RING_RELEASE_OFFSET (n) + \
    PF_FRAME_RING_ROUND (64 + (uint64_t) (n) * 8))

#define PF_FRAME_RING_MAGIC 0x474e4952u        /* "RING" */
#define PF_FRAME_RING_MAX 4096

/* pf_release_ring.flags: the consumer rings the release doorbell only
 * while pf_frame_ring.release_want is not 0 (issue 35); without it (0,
 * what a producer before it left there), after every release. */
#define PF_RELEASE_RING_ON_DEMAND 0x1u

/* The start of the release ring; n_entries uint64_t seqs follow. */
struct pf_release_ring {
  uint64_t write_seq;           /* consumer: releases published (release
                                 * order after the entry) */
  uint64_t read_seq;            /* producer: releases taken */
  uint32_t flags;               /* producer, at creation only:
                                 * PF_RELEASE_RING_ON_DEMAND */
  uint8_t pad[44];
};

/* The start of the ring's memfd; the entries follow. */
struct pf_frame_ring {
  uint32_t magic;               /* PF_FRAME_RING_MAGIC */
  uint32_t n_entries;
  uint64_t write_seq;           /* entries published, written with release
                                 * order after the entry */
  uint32_t release_want;        /* producer: not 0 while it waits for a
                                 * release (PF_RELEASE_RING_ON_DEMAND) */
  uint8_t pad[44];
};

/* The producer's answer to a HELLO it will not serve; it closes next. */
struct pf_msg_refuse {
  struct pf_msg_header hdr;
  uint32_t reason;              /* enum pf_refuse_reason */
  uint32_t limit;               /* TOO_MANY_CONSUMERS: consumers it serves */
};

#define PF_STATIC_ASSERT(expr, msg) _Static_assert (expr, msg)
PF_STATIC_ASSERT (sizeof (struct pf_msg_header) == 16, "header size");
PF_STATIC_ASSERT (sizeof (struct pf_msg_hello) == 40, "hello size");
PF_STATIC_ASSERT (sizeof (struct pf_msg_segment_add) == 40, "segment_add size");
PF_STATIC_ASSERT (sizeof (struct pf_msg_segment_remove) == 24, "segment_remove size");
PF_STATIC_ASSERT (sizeof (struct pf_msg_device_segment_add) == 64,
    "device_segment_add size");
PF_STATIC_ASSERT (sizeof (struct pf_msg_domain) == 40, "domain size");
PF_STATIC_ASSERT (sizeof (struct pf_msg_caps) == 24, "caps size");
PF_STATIC_ASSERT (sizeof (struct pf_msg_chunk) == 24, "chunk size");
PF_STATIC_ASSERT (sizeof (struct pf_msg_frame) == 256, "frame size");
PF_STATIC_ASSERT (sizeof (struct pf_msg_release) == 24, "release size");
PF_STATIC_ASSERT (sizeof (struct pf_msg_stream) == 104, "stream size");
PF_STATIC_ASSERT (sizeof (struct pf_msg_refuse) == 24, "refuse size");
PF_STATIC_ASSERT (sizeof (struct pf_msg_frame_ring) == 40, "frame_ring size");
PF_STATIC_ASSERT (sizeof (struct pf_release_ring) == 64, "release ring header");
PF_STATIC_ASSERT (sizeof (struct pf_frame_ring) == 64, "frame ring header");
PF_STATIC_ASSERT (offsetof (struct pf_release_ring, flags) == 16,
    "release ring flags");
PF_STATIC_ASSERT (offsetof (struct pf_frame_ring, release_want) == 16,
    "frame ring release_want");

/* Largest message on the wire. */
#define PF_MAX_MSG_SIZE (sizeof (struct pf_msg_caps) + PF_MAX_CAPS_LEN)

/* A decoded, validated message: what pf_msg_parse() (pf-protocol-private.h)
 * fills in. Host byte order; strings NUL-terminated. */
struct pf_msg {
  uint32_t type;
  union {
    struct pf_msg_hello hello;
    struct pf_msg_segment_add segment_add;
    struct pf_msg_segment_remove segment_remove;
    struct {
      uint32_t caps_seq;
      uint32_t length;
      char text[PF_MAX_CAPS_LEN + 1];
    } caps;
    struct pf_msg_frame frame;
    struct pf_msg_release release;
    struct pf_msg_stream stream;
    struct pf_msg_refuse refuse;
    struct pf_msg_frame_ring frame_ring;
    struct pf_msg_device_segment_add device_segment_add;
    struct pf_msg_domain domain;
  } u;
};

#ifdef __cplusplus
}
#endif
#endif /* __PF_WIRE_PRIVATE_H__ */
