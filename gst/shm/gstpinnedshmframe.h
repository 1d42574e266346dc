/* GStreamer pinnedflow: a GstBuffer as a pinnedflow frame, and back
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * What of a GstBuffer pinnedshmsink publishes, and how: its pinned
 * memories as chunks (segment id, offset, size), its timestamps, offsets,
 * wire flags and video layout; and what pinnedshmsrc makes of a received
 * frame: timestamps (in its own pipeline's running time for a live
 * stream), flags, and a video meta it checked. The wire's time base, both
 * directions: gstpinnedshmtime.h.
 *
 * Threads and lifetimes: plain functions of their arguments, called on an
 * element's streaming thread; nothing is kept. The segments written into
 * @segs are borrowed from @buf's memories: valid while @buf is alive. The
 * source's buffers themselves (wrapping a frame, recycled):
 * gstpinnedshmframepool.h.
 */
#ifndef __GST_PINNED_SHM_FRAME_H__
#define __GST_PINNED_SHM_FRAME_H__

#include <string.h>

#include <gst/gst.h>
#include <gst/base/gstbasesink.h>
#include <gst/video/video.h>

#include <pinnedflow/pf-producer.h>
#include <pinnedflow/pf-consumer.h>

G_BEGIN_DECLS

/* Fills @frame's chunks and @segs (PF_MAX_CHUNKS entries) from the pinned
 * memories of @buf. FALSE when some memory is not pinned, or @buf has none
 * or more than PF_MAX_CHUNKS: the frame must be copied into pinned memory
 * first. */
G_GNUC_INTERNAL
gboolean gst_pinned_shm_frame_set_chunks (pf_producer_frame * frame, GstBuffer * buf,
    pf_segment ** segs);

/* Fills @frame's timestamps, offsets, wire flags and video layout from
 * @buf: its GstVideoMeta, else @vinfo (NULL when the caps are not video),
 * else no video layout. @clock_pts: the PTS as CLOCK_MONOTONIC time
 * (gst_pinned_shm_time_to_wire()), or PF_TIME_NONE. */
G_GNUC_INTERNAL
void gst_pinned_shm_frame_set_meta (pf_producer_frame * frame, GstBuffer * buf,
    const GstVideoInfo * vinfo, guint64 clock_pts);

/* Stamps @buf from @f: with @keep_timestamps (a non-live stream) the
 * producer's PTS and DTS as they are; else PTS = the producer's clock_pts in
 * @element's running time, mapped with the clock's current offset unless
 * @clock_is_monotonic (arrival time without one), DTS at the producer's
 * DTS-to-PTS distance. Then duration, offsets and the wire flags. */
G_GNUC_INTERNAL
void gst_pinned_shm_frame_stamp (GstElement * element,
    gboolean clock_is_monotonic, gboolean keep_timestamps,
    const pf_consumer_frame * f, GstBuffer * buf);

/* The last frame layout gst_pinned_shm_frame_add_video_meta() checked
 * (format, size, planes, chunk sizes): a frame laid out the same way is
 * not checked again (issue 13: the check, through
 * gst_video_meta_get_plane_size(), was the most expensive step of
 * receiving a frame). Zeroed (gst_pinned_shm_layout_reset()) it matches
 * nothing; reset it when the caps change. Owned by the caller's streaming
 * thread. */
typedef struct
{
  gboolean valid;
  GstVideoFormat format;
  guint n_planes, n_chunks;
  guint64 width, height, total;
  guint64 plane_offset[PF_MAX_PLANES];
  gint32 plane_stride[PF_MAX_PLANES];
  guint64 chunk_size[PF_MAX_CHUNKS];
} GstPinnedShmLayout;

#define gst_pinned_shm_layout_reset(l) memset ((l), 0, sizeof (*(l)))

/* Adds @f's video meta to @buf (@total: the frame's bytes) when it has one
 * and @vinfo (the caps; NULL when not video) is given. FALSE when it does
 * not match the caps or a plane would be read outside its chunk. @checked:
 * the last layout that passed (updated), or NULL to check every frame. */
G_GNUC_INTERNAL
gboolean gst_pinned_shm_frame_add_video_meta (const pf_consumer_frame * f,
    guint64 total, const GstVideoInfo * vinfo, GstBuffer * buf,
    GstPinnedShmLayout * checked);

G_END_DECLS
#endif /* __GST_PINNED_SHM_FRAME_H__ */
