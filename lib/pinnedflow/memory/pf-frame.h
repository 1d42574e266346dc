/* pinnedflow: a frame as the transport API describes it (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Two plain value types, one per end of the transport, and the limits they
 * share:
 *
 *  - pf_producer_frame: what a publisher fills for pf_producer_publish():
 *    the chunks (ranges of segments), timestamps, buffer flags and video
 *    layout. The producer adds its own frame number, caps number and send
 *    time when it encodes the FRAME message.
 *  - pf_consumer_frame: what pf_consumer_receive() reports in a
 *    PF_EVENT_FRAME: the same fields as the producer set them, plus the
 *    producer's seq, caps_seq and send_time.
 *
 * Neither is the wire struct (struct pf_msg_frame in pf-wire-private.h, which is
 * internal): the wire layer converts (pf_msg_frame_encode() and
 * pf_msg_frame_decode(), wire/pf-protocol.c), so the wire layout can change
 * without changing this API. The node API (pf-node.h) has its own,
 * richer frame types (pf_node_loan to publish, pf_node_frame received).
 *
 * Lifecycle: plain values, owned by whoever declared them; nothing to free.
 * Any thread.
 */
#ifndef __PF_FRAME_H__
#define __PF_FRAME_H__

#include <stdint.h>

#include <pinnedflow/pf-api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PF_MAX_CHUNKS 4         /* memory ranges in one frame */
#define PF_MAX_PLANES 4         /* video planes in one frame */
#define PF_MAX_CAPS_LEN 4096    /* caps string bytes, NUL excluded */
#define PF_TIME_NONE UINT64_MAX /* GST_CLOCK_TIME_NONE */

/* pf_producer_frame.meta_flags, pf_consumer_frame.meta_flags
 * Since: 0.1
 */
enum pf_frame_meta_flags {
  PF_FRAME_HAS_VIDEO_META = 1u << 0,    /* width .. plane_stride are set */
};

/* Bytes [offset, offset + size) of the segment whose pf_segment_get_id()
 * is segment_id (on the consumer: the producer's id).
 * Since: 0.1
 */
typedef struct {
  uint64_t segment_id;
  uint64_t offset;
  uint64_t size;
} pf_frame_chunk;

/* A frame to publish (pf_producer_publish()). Zero it, then set:
 * Since: 0.1
 */
typedef struct {
  uint32_t n_chunks;            /* 1..PF_MAX_CHUNKS */
  uint32_t buffer_flags;        /* GstBufferFlags bits (see protocol.md) */
  pf_frame_chunk chunks[PF_MAX_CHUNKS];
  uint64_t pts, dts, duration;  /* ns, PF_TIME_NONE when unset */
  uint64_t offset, offset_end;  /* GstBuffer offsets, UINT64_MAX when unset */
  uint64_t clock_pts;           /* PTS in CLOCK_MONOTONIC ns, or NONE */
  uint32_t meta_flags;          /* enum pf_frame_meta_flags */
  uint32_t width, height, n_planes;     /* with PF_FRAME_HAS_VIDEO_META */
  uint64_t plane_offset[PF_MAX_PLANES]; /* from the start of the frame */
  int32_t plane_stride[PF_MAX_PLANES];
} pf_producer_frame;

/* A received frame (pf_event.frame): what the producer published ...
 * Since: 0.1
 */
typedef struct {
  uint64_t seq;                 /* the producer's frame number, increasing */
  uint32_t caps_seq;            /* the caps (PF_EVENT_CAPS) it belongs to */
  uint32_t n_chunks;
  pf_frame_chunk chunks[PF_MAX_CHUNKS];
  uint64_t pts, dts, duration;
  uint64_t offset, offset_end;
  uint64_t clock_pts;
  uint64_t send_time;           /* CLOCK_MONOTONIC ns when the producer sent it */
  uint32_t buffer_flags;
  uint32_t meta_flags;
  uint32_t width, height, n_planes;
  uint64_t plane_offset[PF_MAX_PLANES];
  int32_t plane_stride[PF_MAX_PLANES];
} pf_consumer_frame;

/* Delivery policy of one consumer (docs/protocol.md, "Delivery").
 * Since: 0.1
 */
enum pf_delivery {
  /* Asked by a consumer: whatever the producer's liveness gives (live:
   * newest frame, not live: every frame). Never in force. */
  PF_DELIVERY_DEFAULT = 0,
  /* Reliable: the producer never skips this consumer; a publisher that
   * waits (pf_producer_wait_ready()) is held back by it, up to the
   * producer's reliable timeout. */
  PF_DELIVERY_EVERY_FRAME = 1,
  /* Leaky: skipped while at its limit or its socket is full; the consumer
   * also drops stale queued frames for the newest one. */
  PF_DELIVERY_NEWEST_FRAME = 2,
};

/* pf_stream_info.flags
 * Since: 0.1
 */
enum pf_stream_flags {
  PF_STREAM_LIVE = 1u << 0,     /* the producer's upstream is live */
  PF_STREAM_HAS_SEGMENT = 1u << 1,      /* segment is set */
  /* The producer demoted this consumer from every-frame to newest-frame
   * (it held its frames past the reliable timeout). */
  PF_STREAM_DEMOTED = 1u << 2,
};

/* The producer's segment (a GstSegment's fields), for non-live streams
 * whose timestamps keep their meaning across the hop.
 * Since: 0.1
 */
typedef struct {
  uint32_t format;              /* GstFormat (3: TIME), not 0 */
  uint32_t flags;               /* GstSegmentFlags */
  double rate, applied_rate;    /* finite, not 0 */
  uint64_t base, offset, start, stop, time, position, duration;
} pf_stream_segment;

/* What a producer says of its stream and of one consumer's delivery.
 * Since: 0.1
 */
typedef struct {
  uint32_t flags;               /* enum pf_stream_flags */
  uint32_t delivery;            /* enum pf_delivery in force: 1 or 2 */
  pf_stream_segment segment;    /* with PF_STREAM_HAS_SEGMENT, else zero */
} pf_stream_info;

/**
 * pf_monotonic_ns:
 *
 * CLOCK_MONOTONIC in ns (the clock of GstSystemClock on Linux): the time
 * base of clock_pts and send_time.
 *
 * Since: 0.1
 */
PF_API uint64_t pf_monotonic_ns (void);

#ifdef __cplusplus
}
#endif
#endif /* __PF_FRAME_H__ */
