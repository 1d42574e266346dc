/* GStreamer pinnedflow: a GstBuffer as a pinnedflow frame, and back
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Threads and lifetimes: see the header (no state). Called on the sink's
 * streaming thread with the buffer it renders, and on the source's with the
 * buffer it makes.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "gstpinnedshmframe.h"
#include "gstpinnedshmcommon.h"
#include "gstpinnedshmtime.h"

#include <gst/pinnedflow/gstpinnedallocator.h>
#include <pinnedflow/pf-consumer.h>

/* gst_buffer_get_video_meta() with GST_VIDEO_META_API_TYPE read once: the
 * macro calls into libgstvideo for it on every frame, on both sides (a
 * library's code and data touched, cold at tens of frames per second,
 * for a constant) */
static GstVideoMeta *
get_video_meta (GstBuffer * buf)
{
  static gsize api = 0;

  if (g_once_init_enter (&api))
    g_once_init_leave (&api, GST_VIDEO_META_API_TYPE);
  return (GstVideoMeta *) gst_buffer_get_meta (buf, (GType) api);
}

gboolean
gst_pinned_shm_frame_set_chunks (pf_producer_frame * frame, GstBuffer * buf,
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
set_video_layout (pf_producer_frame * frame, const GstVideoMeta * vmeta,
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
gst_pinned_shm_frame_set_meta (pf_producer_frame * frame, GstBuffer * buf,
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
  if (set_video_layout (frame, get_video_meta (buf), vinfo))
    frame->meta_flags |= PF_FRAME_HAS_VIDEO_META;
}

/* ---- the source's side: a received frame's timestamps and video meta
 * (its buffer: gstpinnedshmframepool.c) ---- */

void
gst_pinned_shm_frame_stamp (GstElement * element, gboolean clock_is_monotonic,
    gboolean keep_timestamps, const pf_consumer_frame * f, GstBuffer * buf)
{
  if (keep_timestamps) {
    /* not live: the producer's own timestamps, against its segment */
    GST_BUFFER_PTS (buf) = f->pts;
    GST_BUFFER_DTS (buf) = f->dts;
  } else if (f->clock_pts != PF_TIME_NONE) {
    GST_BUFFER_PTS (buf) =
        gst_pinned_shm_time_from_wire (element, clock_is_monotonic,
        f->clock_pts);
    if (f->dts != PF_TIME_NONE && f->pts != PF_TIME_NONE
        && GST_BUFFER_PTS_IS_VALID (buf)) {
      /* keep the producer's DTS-to-PTS distance */
      GstClockTimeDiff d = GST_CLOCK_DIFF (f->dts, f->pts);

      GST_BUFFER_DTS (buf) = (d > 0 && (GstClockTime) d > GST_BUFFER_PTS (buf))
          ? 0 : GST_BUFFER_PTS (buf) - d;
    }
  } else {
    /* no timestamp from the producer: stamp with arrival time */
    GstClock *clock = gst_element_get_clock (element);

    if (clock) {
      GstClockTime now_c = gst_clock_get_time (clock);
      GstClockTime base = gst_element_get_base_time (element);

      GST_BUFFER_PTS (buf) = now_c > base ? now_c - base : 0;
      gst_object_unref (clock);
    }
  }
  if (f->duration != PF_TIME_NONE)
    GST_BUFFER_DURATION (buf) = f->duration;
  GST_BUFFER_OFFSET (buf) = f->offset;
  GST_BUFFER_OFFSET_END (buf) = f->offset_end;
  GST_BUFFER_FLAGS (buf) |= f->buffer_flags & GST_PINNED_SHM_WIRE_BUFFER_FLAGS;
}

/* TRUE when plane @i (@plane_size bytes from its offset) lies inside ONE
 * chunk: GstVideoFrame maps only the memory holding a plane's first byte,
 * and reads the rest from there. */
static gboolean
plane_in_one_chunk (const pf_consumer_frame * f, guint i, gsize plane_size)
{
  guint64 start = 0, off = f->plane_offset[i];
  guint ch;

  for (ch = 0; ch < f->n_chunks; ch++) {
    if (off < start + f->chunks[ch].size)
      break;
    start += f->chunks[ch].size;
  }
  return ch < f->n_chunks && plane_size <= f->chunks[ch].size
      && off - start <= f->chunks[ch].size - plane_size;
}

/* Whether @f, @total and @vinfo are laid out as @l (which passed). */
static gboolean
layout_is (const GstPinnedShmLayout * l, const pf_consumer_frame * f,
    guint64 total, const GstVideoInfo * vinfo)
{
  guint i;

  if (!l->valid || l->format != GST_VIDEO_INFO_FORMAT (vinfo)
      || l->n_planes != f->n_planes || l->n_chunks != f->n_chunks
      || l->width != f->width || l->height != f->height || l->total != total)
    return FALSE;
  for (i = 0; i < f->n_planes; i++)
    if (l->plane_offset[i] != f->plane_offset[i]
        || l->plane_stride[i] != f->plane_stride[i])
      return FALSE;
  for (i = 0; i < f->n_chunks; i++)
    if (l->chunk_size[i] != f->chunks[i].size)
      return FALSE;
  return TRUE;
}

static void
layout_set (GstPinnedShmLayout * l, const pf_consumer_frame * f,
    guint64 total, const GstVideoInfo * vinfo)
{
  guint i;

  gst_pinned_shm_layout_reset (l);
  l->format = GST_VIDEO_INFO_FORMAT (vinfo);
  l->n_planes = f->n_planes;
  l->n_chunks = f->n_chunks;
  l->width = f->width;
  l->height = f->height;
  l->total = total;
  for (i = 0; i < f->n_planes; i++) {
    l->plane_offset[i] = f->plane_offset[i];
    l->plane_stride[i] = f->plane_stride[i];
  }
  for (i = 0; i < f->n_chunks; i++)
    l->chunk_size[i] = f->chunks[i].size;
  l->valid = TRUE;
}

/* A recycled buffer's video meta (GST_META_FLAG_POOLED) filled in from
 * @f as gst_buffer_add_video_meta_full() would: the alignment reset to
 * none, the planes past n_planes zero. */
static void
refill_video_meta (GstVideoMeta * vmeta, const GstVideoInfo * vinfo,
    const pf_consumer_frame * f)
{
  guint i;

  G_STATIC_ASSERT (PF_MAX_PLANES == GST_VIDEO_MAX_PLANES);
  vmeta->flags = GST_VIDEO_FRAME_FLAG_NONE;
  vmeta->format = GST_VIDEO_INFO_FORMAT (vinfo);
  vmeta->id = 0;
  vmeta->width = f->width;
  vmeta->height = f->height;
  vmeta->n_planes = f->n_planes;
  for (i = 0; i < GST_VIDEO_MAX_PLANES; i++) {
    vmeta->offset[i] = i < f->n_planes ? f->plane_offset[i] : 0;
    vmeta->stride[i] = i < f->n_planes ? f->plane_stride[i] : 0;
  }
  memset (&vmeta->alignment, 0, sizeof (vmeta->alignment));
}

gboolean
gst_pinned_shm_frame_add_video_meta (const pf_consumer_frame * f,
    guint64 total, const GstVideoInfo * vinfo, GstBuffer * buf,
    GstPinnedShmLayout * checked)
{
  gsize offsets[GST_VIDEO_MAX_PLANES] = { 0, };
  gint strides[GST_VIDEO_MAX_PLANES] = { 0, };
  gsize plane_size[GST_VIDEO_MAX_PLANES] = { 0, };
  GstVideoMeta *vmeta;
  gboolean known;
  guint i;

  vmeta = get_video_meta (buf);
  if (!(f->meta_flags & PF_FRAME_HAS_VIDEO_META) || vinfo == NULL) {
    /* a recycled buffer's meta does not describe this frame */
    if (vmeta != NULL)
      gst_buffer_remove_meta (buf, (GstMeta *) vmeta);
    return TRUE;
  }
  /* the same layout as the last frame's: checked then */
  known = checked != NULL && layout_is (checked, f, total, vinfo);
  if (known && vmeta != NULL
      && GST_META_FLAG_IS_SET (vmeta, GST_META_FLAG_POOLED)) {
    /* every frame of a stream: a recycled buffer's meta filled in from the
     * frame, without the checks and copies below */
    refill_video_meta (vmeta, vinfo, f);
    return TRUE;
  }
  if (!known && (f->n_planes != GST_VIDEO_INFO_N_PLANES (vinfo)
          || f->n_planes > PF_MAX_PLANES || f->width == 0 || f->height == 0
          || f->width > G_MAXINT32 || f->height > G_MAXINT32))
    return FALSE;
  for (i = 0; i < f->n_planes; i++) {
    if (!known && (f->plane_offset[i] >= total || f->plane_stride[i] == 0))
      return FALSE;
    offsets[i] = f->plane_offset[i];
    strides[i] = f->plane_stride[i];
  }
  if (vmeta != NULL && GST_META_FLAG_IS_SET (vmeta, GST_META_FLAG_POOLED)) {
    refill_video_meta (vmeta, vinfo, f);
  } else {
    vmeta = gst_buffer_add_video_meta_full (buf, GST_VIDEO_FRAME_FLAG_NONE,
        GST_VIDEO_INFO_FORMAT (vinfo), f->width, f->height,
        f->n_planes, offsets, strides);
    /* kept when the buffer is recycled (GstPinnedShmFramePool) */
    GST_META_FLAG_SET (vmeta, GST_META_FLAG_POOLED);
  }
  if (known)
    return TRUE;
  /* stride x lines, so a negative stride fails too (not
   * gst_video_meta_get_plane_size(): up to 1.22 it refuses rows padded
   * past the meta's alignment, a camera's bytesperline) */
  for (i = 0; i < f->n_planes; i++) {
    gint comp[GST_VIDEO_MAX_COMPONENTS];

    gst_video_format_info_component (vinfo->finfo, i, comp);
    if (strides[i] <= 0 || comp[0] < 0)
      return FALSE;
    plane_size[i] = (gsize) strides[i] *
        GST_VIDEO_FORMAT_INFO_SCALE_HEIGHT (vinfo->finfo, comp[0], f->height);
  }
  for (i = 0; i < f->n_planes; i++)
    if (!plane_in_one_chunk (f, i, plane_size[i]))
      return FALSE;
  if (checked != NULL)
    layout_set (checked, f, total, vinfo);
  return TRUE;
}
