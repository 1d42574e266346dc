/* GStreamer pinnedflow: a GstBuffer as a pinnedflow frame (the sink's side)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * What of a GstBuffer pinnedshmsink publishes, and how: its pinned
 * memories as chunks (segment id, offset, size), its timestamps, offsets,
 * wire flags and video layout, and its PTS on the wire's time base.
 *
 * Threads and lifetimes: plain functions of their arguments, called on the
 * sink's streaming thread; nothing is kept. The segments written into
 * @segs are borrowed from @buf's memories: valid while @buf is alive.
 */
#ifndef __GST_PINNED_SHM_FRAME_H__
#define __GST_PINNED_SHM_FRAME_H__

#include <gst/gst.h>
#include <gst/base/gstbasesink.h>
#include <gst/video/video.h>

#include <pinnedflow/pf-producer.h>

G_BEGIN_DECLS

/* Fills @frame's chunks and @segs (PF_MAX_CHUNKS entries) from the pinned
 * memories of @buf. FALSE when some memory is not pinned, or @buf has none
 * or more than PF_MAX_CHUNKS: the frame must be copied into pinned memory
 * first. */
G_GNUC_INTERNAL
gboolean gst_pinned_shm_frame_set_chunks (pf_frame * frame, GstBuffer * buf,
    pf_segment ** segs);

/* Fills @frame's timestamps, offsets, wire flags and video layout from
 * @buf: its GstVideoMeta, else @vinfo (NULL when the caps are not video),
 * else no video layout. @clock_pts: gst_pinned_shm_frame_clock_pts(). */
G_GNUC_INTERNAL
void gst_pinned_shm_frame_set_meta (pf_frame * frame, GstBuffer * buf,
    const GstVideoInfo * vinfo, guint64 clock_pts);

/* The PTS of @buf as CLOCK_MONOTONIC time (the wire's time base) when
 * @bsink renders it: running time + base time + the sink's latency, mapped
 * with the clock's current offset unless @clock_is_monotonic. PF_TIME_NONE
 * without a PTS, a TIME segment or a clock. */
G_GNUC_INTERNAL
guint64 gst_pinned_shm_frame_clock_pts (GstBaseSink * bsink,
    gboolean clock_is_monotonic, GstBuffer * buf);

G_END_DECLS
#endif /* __GST_PINNED_SHM_FRAME_H__ */
