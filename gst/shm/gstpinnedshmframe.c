/* GStreamer pinnedflow: a GstBuffer as a pinnedflow frame (the sink's side)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Threads and lifetimes: no state; see the header. Called on the sink's
 * streaming thread with the buffer it renders.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedshmframe.h"
#include "gstpinnedshmcommon.h"

#include <gst/pinnedflow/gstpinnedallocator.h>

gboolean
gst_pinned_shm_frame_set_chunks (pf_frame * frame, GstBuffer * buf,
    pf_segment ** segs)
{
  guint i, n = gst_buffer_n_memory (buf);

  if (n == 0 || n > PF_MAX_CHUNKS)
    return FALSE;
  for (i = 0; i < n; i++) {
    GstMemory *mem = gst_buffer_peek_memory (buf, i);
    gsize offset = 0;
    GstPinnedSegment *seg = gst_pinned_memory_get_segment (mem, &offset);

    if (seg == NULL)
      return FALSE;
    segs[i] = seg;
    frame->chunks[i].segment_id = pf_segment_get_id (seg);
    frame->chunks[i].offset = offset;
    frame->chunks[i].size = mem->size;
  }
  frame->n_chunks = n;
  return TRUE;
}

/* The video layout of @frame from @vmeta, else @vinfo; FALSE if neither
 * (or more planes than the wire carries). */
static gboolean
set_video_layout (pf_frame * frame, const GstVideoMeta * vmeta,
    const GstVideoInfo * vinfo)
{
  guint i;

  if (vmeta != NULL && vmeta->n_planes <= PF_MAX_PLANES) {
    frame->width = vmeta->width;
    frame->height = vmeta->height;
    frame->n_planes = vmeta->n_planes;
    for (i = 0; i < vmeta->n_planes; i++) {
      frame->plane_offset[i] = vmeta->offset[i];
      frame->plane_stride[i] = vmeta->stride[i];
    }
    return TRUE;
  }
  if (vinfo == NULL || GST_VIDEO_INFO_N_PLANES (vinfo) > PF_MAX_PLANES)
    return FALSE;
  frame->width = GST_VIDEO_INFO_WIDTH (vinfo);
  frame->height = GST_VIDEO_INFO_HEIGHT (vinfo);
  frame->n_planes = GST_VIDEO_INFO_N_PLANES (vinfo);
  for (i = 0; i < frame->n_planes; i++) {
    frame->plane_offset[i] = GST_VIDEO_INFO_PLANE_OFFSET (vinfo, i);
    frame->plane_stride[i] = GST_VIDEO_INFO_PLANE_STRIDE (vinfo, i);
  }
  return TRUE;
}

void
gst_pinned_shm_frame_set_meta (pf_frame * frame, GstBuffer * buf,
    const GstVideoInfo * vinfo, guint64 clock_pts)
{
  frame->pts = GST_BUFFER_PTS (buf);
  frame->dts = GST_BUFFER_DTS (buf);
  frame->duration = GST_BUFFER_DURATION (buf);
  frame->offset = GST_BUFFER_OFFSET (buf);
  frame->offset_end = GST_BUFFER_OFFSET_END (buf);
  frame->clock_pts = clock_pts;
  frame->buffer_flags =
      GST_BUFFER_FLAGS (buf) & GST_PINNED_SHM_WIRE_BUFFER_FLAGS;
  if (set_video_layout (frame, gst_buffer_get_video_meta (buf), vinfo))
    frame->meta_flags |= PF_FRAME_HAS_VIDEO_META;
}

guint64
gst_pinned_shm_frame_clock_pts (GstBaseSink * bsink,
    gboolean clock_is_monotonic, GstBuffer * buf)
{
  GstElement *element = GST_ELEMENT (bsink);
  GstClockTime pts = GST_BUFFER_PTS (buf), rt, t;
  GstClock *clock;

  if (!GST_CLOCK_TIME_IS_VALID (pts)
      || bsink->segment.format != GST_FORMAT_TIME)
    return PF_TIME_NONE;
  rt = gst_segment_to_running_time (&bsink->segment, GST_FORMAT_TIME, pts);
  if (!GST_CLOCK_TIME_IS_VALID (rt))
    return PF_TIME_NONE;

  clock = gst_element_get_clock (element);
  if (clock == NULL)
    return PF_TIME_NONE;

  t = rt + gst_element_get_base_time (element)
      + gst_base_sink_get_latency (bsink);
  if (!clock_is_monotonic) {
    GstClockTimeDiff diff = GST_CLOCK_DIFF (gst_clock_get_time (clock),
        (GstClockTime) pf_monotonic_ns ());

    t = (diff < 0 && (GstClockTime) (-diff) > t) ? 0 : t + diff;
  }
  gst_object_unref (clock);
  return t;
}
