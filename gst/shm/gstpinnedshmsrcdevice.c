/* GStreamer pinnedflow: pinnedshmsrc's device frames
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * When the producer's frames lie in device segments (CUDA virtual memory
 * shared as fds, docs/protocol.md 3.11, pf-device-segment.h), pinnedshmsrc
 * asks for them (HELLO bit DEVICE_SEGMENTS), imports each segment once
 * (pf_device_consumer_enable()) and pushes each frame with no copy as one
 * read-only pinnedflow CUDA memory (memory:PinnedflowCUDA, the memory
 * pinnedcudaupload makes and pinnedcudadownload takes) over the chunk's
 * device address; the frame goes back to the producer when that memory is
 * freed. Where downstream takes GStreamer's memory:CUDAMemory only, the
 * frame goes out as that (gstpinnedshmsrccuda.c: wrapped on 1.24+, one
 * device copy on 1.22), and the connection names its device in a DOMAIN.
 * Whether to ask (#GstPinnedShmSrc:device-frames): off never; on
 * always (an error when CUDA cannot be used here); auto when the CUDA
 * runtime loads and downstream accepts memory:PinnedflowCUDA or
 * memory:CUDAMemory, so that a consumer without CUDA, or whose downstream
 * takes system memory only, never asks and never fails for it. A device
 * stream (a caps feature from the producer, or a device frame) that this
 * connection cannot take posts a not-negotiated error saying why, as does
 * a device segment its import refused (no device with its UUID, no
 * virtual memory support).
 *
 * Built with the CUDA library (GST_PINNED_SHM_CUDA, meson -Dcuda not
 * disabled); without it every function says no and the source stays a
 * host-only one. Nothing here links CUDA: the runtime and the driver are
 * opened with dlopen() when first used.
 *
 * Threads and lifetimes: the streaming thread (or the state change to
 * PAUSED while it is stopped) calls these, on the fields of the instance
 * struct named in gstpinnedshmsrc-private.h. A wrapped memory holds a
 * DeviceLoan (a consumer reference, the segment's reference, the frame's
 * seq) until its last unref, on whichever thread drops it, which releases
 * the frame.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedshmsrc-private.h"

#include <errno.h>

#ifdef GST_PINNED_SHM_CUDA
#include <gst/pinnedcuda/gstpinnedcuda.h>
#include <gst/pinnedcuda/gstpinnedcudamemory.h>
#include <gst/pinnedcuda/gstpinnedcudagst-private.h>
#include <pinnedflow/pf-device-segment.h>
#endif

#define GST_CAT_DEFAULT gst_pinned_shm_src_debug

#define FEATURE_PINNEDFLOW_CUDA "memory:PinnedflowCUDA"
#define FEATURE_CUDA_MEMORY "memory:CUDAMemory"

gboolean
gst_pinned_shm_src_device_strip (GstCaps * caps)
{
  gboolean device = FALSE;
  guint i;

  for (i = 0; i < gst_caps_get_size (caps); i++) {
    GstCapsFeatures *f = gst_caps_get_features (caps, i);

    if (f == NULL || gst_caps_features_is_any (f)
        || gst_caps_features_is_equal (f,
            GST_CAPS_FEATURES_MEMORY_SYSTEM_MEMORY))
      continue;
    if (gst_caps_features_contains (f, FEATURE_PINNEDFLOW_CUDA)
        || gst_caps_features_contains (f, FEATURE_CUDA_MEMORY))
      device = TRUE;
    gst_caps_set_features (caps, i, NULL);
  }
  return device;
}

GstCaps *
gst_pinned_shm_src_device_caps (GstPinnedShmSrc * self, GstCaps * caps)
{
#ifdef GST_PINNED_SHM_CUDA
  return gst_pinned_shm_src_cuda_choose_caps (self, caps);
#else
  GstCaps *out = gst_caps_copy (caps);

  gst_caps_set_features_simple (out,
      gst_caps_features_new (FEATURE_PINNEDFLOW_CUDA, NULL));
  return out;
#endif
}

static void
set_why_not (GstPinnedShmSrc * self, gchar * why)
{
  g_free (self->device_why_not);
  self->device_why_not = why;
}

#ifdef GST_PINNED_SHM_CUDA

/* Whether the element downstream names memory:PinnedflowCUDA, or
 * memory:CUDAMemory where GStreamer's CUDA library loads, in its caps.
 * Caps that take any memory (ANY caps, a video/x-raw(ANY) structure:
 * fakesink, videoconvert, queue before them) do not count: such an
 * element would pass device memory on to what cannot read it, so a plain
 * CPU pipeline never asks for device frames. */
static gboolean
downstream_takes_device (GstPinnedShmSrc * self)
{
  GstPad *pad = GST_BASE_SRC_PAD (self);
  gboolean cuda = gst_pinned_cuda_gst_get () != NULL, ok = FALSE;
  GstCaps *caps;
  guint i;

  if (!gst_pad_is_linked (pad))
    return FALSE;
  caps = gst_pad_peer_query_caps (pad, NULL);
  for (i = 0; caps != NULL && !gst_caps_is_any (caps) && !ok
      && i < gst_caps_get_size (caps); i++) {
    GstCapsFeatures *f = gst_caps_get_features (caps, i);

    if (f == NULL || gst_caps_features_is_any (f)
        || !gst_structure_has_name (gst_caps_get_structure (caps, i),
            "video/x-raw"))
      continue;
    ok = gst_caps_features_contains (f, FEATURE_PINNEDFLOW_CUDA)
        || (cuda && gst_caps_features_contains (f,
            GST_PINNED_CUDA_GST_CAPS_FEATURE));
  }
  gst_clear_caps (&caps);
  return ok;
}

void
gst_pinned_shm_src_device_options (GstPinnedShmSrc * self,
    pf_consumer_options * options)
{
  GstPinnedShmSrcDeviceFrames mode;
  const GstPinnedCudaRuntime *rt = NULL;
  GError *err = NULL;

  GST_OBJECT_LOCK (self);
  mode = self->device_frames;
  GST_OBJECT_UNLOCK (self);

  self->device_import = FALSE;
  self->cuda_rt = NULL;
  if (mode == GST_PINNED_SHM_SRC_DEVICE_FRAMES_OFF) {
    set_why_not (self, g_strdup ("device-frames=off"));
    return;
  }
  if (mode == GST_PINNED_SHM_SRC_DEVICE_FRAMES_AUTO
      && !downstream_takes_device (self)) {
    set_why_not (self, g_strdup ("device-frames=auto and downstream does not "
            "accept video/x-raw(" FEATURE_PINNEDFLOW_CUDA ") nor "
            "video/x-raw(" GST_PINNED_CUDA_GST_CAPS_FEATURE ")"));
    return;
  }
  rt = gst_pinned_cuda_runtime_get (&err);
  if (rt == NULL) {
    set_why_not (self, g_strdup_printf ("device-frames=%s and CUDA is not "
            "usable here: %s", mode == GST_PINNED_SHM_SRC_DEVICE_FRAMES_ON ?
            "on" : "auto", err ? err->message : "no runtime"));
    g_clear_error (&err);
    return;
  }
  self->cuda_rt = rt;
  self->device_import = TRUE;
  set_why_not (self, NULL);
  options->flags |= PF_CONSUMER_OPTION_DEVICE_SEGMENTS;
  GST_INFO_OBJECT (self, "asking for device segments");
}

gboolean
gst_pinned_shm_src_device_enable (GstPinnedShmSrc * self, pf_consumer * c)
{
  int res;

  self->device_refused = 0;
  g_atomic_int_set (&self->domain_device, -1);
  if (!self->device_import)
    return TRUE;
  res = pf_device_consumer_enable (c);
  if (res < 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
        ("Could not make the connection import device segments"),
        ("pf_device_consumer_enable: %s", g_strerror (-res)));
    return FALSE;
  }
  /* a producer that copies into domains: frames on our device */
  return gst_pinned_shm_src_cuda_set_domain (self, c);
}

GstFlowReturn
gst_pinned_shm_src_device_check (GstPinnedShmSrc * self, pf_consumer * c)
{
  uint32_t refused = 0;

  if (!self->device_import) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("The producer sends device frames (" FEATURE_PINNEDFLOW_CUDA
            ") and this element does not take them"), ("%s",
            self->device_why_not ? self->device_why_not : "not asked"));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  if (c != NULL)
    (void) pf_consumer_get_device_stats (c, NULL, &refused);
  if (refused > 0) {
    gchar *why = g_utf8_make_valid (pf_consumer_get_device_stats (c, NULL,
            NULL), -1);

    GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
        ("The producer's device frames cannot be imported in this process"),
        ("%s", why));
    g_free (why);
    return GST_FLOW_NOT_NEGOTIATED;
  }
  return GST_FLOW_OK;
}

typedef struct
{
  pf_consumer *consumer;
  pf_segment *segment;
  guint64 seq;
} DeviceLoan;

static void
device_loan_free (gpointer data)
{
  DeviceLoan *loan = data;

  /* on a connection that is gone this is a no-op: the producer took the
   * frame back when we hung up */
  pf_consumer_release (loan->consumer, loan->seq);
  pf_consumer_unref (loan->consumer);
  pf_segment_unref (loan->segment);
  g_free (loan);
}

/* The pitch of @f's planes when they fit @layout (one pitch, plane p at
 * row_offset[p] rows), else 0. From the frame's video meta, else from the
 * caps' default layout. */
static gsize
frame_pitch (const pf_consumer_frame * f, const GstVideoInfo * vinfo,
    const GstPinnedCudaLayout * layout)
{
  gsize pitch;
  guint p;

  if (f->meta_flags & PF_FRAME_HAS_VIDEO_META) {
    if (f->n_planes != layout->n_planes || f->plane_stride[0] <= 0
        || f->width != (guint32) GST_VIDEO_INFO_WIDTH (vinfo)
        || f->height != (guint32) GST_VIDEO_INFO_HEIGHT (vinfo))
      return 0;
    pitch = (gsize) f->plane_stride[0];
    for (p = 0; p < layout->n_planes; p++)
      if ((gsize) f->plane_stride[p] != pitch
          || f->plane_offset[p] != (guint64) pitch * layout->row_offset[p])
        return 0;
  } else {
    if (GST_VIDEO_INFO_PLANE_STRIDE (vinfo, 0) <= 0)
      return 0;
    pitch = (gsize) GST_VIDEO_INFO_PLANE_STRIDE (vinfo, 0);
    for (p = 0; p < layout->n_planes; p++)
      if ((gsize) GST_VIDEO_INFO_PLANE_STRIDE (vinfo, p) != pitch
          || GST_VIDEO_INFO_PLANE_OFFSET (vinfo, p) !=
          pitch * layout->row_offset[p])
        return 0;
  }
  return pitch >= layout->max_width_bytes ? pitch : 0;
}

gboolean
gst_pinned_shm_src_device_wrap (GstPinnedShmSrc * self, pf_consumer * c,
    const pf_event * ev, GstBuffer ** out, guint64 * total, gchar ** why)
{
  const pf_consumer_frame *f = &ev->frame;
  GstPinnedCudaLayout layout;
  gsize offsets[GST_VIDEO_MAX_PLANES] = { 0, };
  gint strides[GST_VIDEO_MAX_PLANES] = { 0, };
  GError *err = NULL;
  DeviceLoan *loan;
  GstMemory *mem;
  gsize pitch;
  gint ordinal;
  guint p;

  *out = NULL;
  if (f->n_chunks != 1) {
    *why = g_strdup_printf ("a device frame in %u chunks (one expected)",
        f->n_chunks);
    return FALSE;
  }
  if (!self->is_video) {
    *why = g_strdup ("a device frame without video/x-raw caps");
    return FALSE;
  }
  ordinal = pf_device_segment_get_ordinal (ev->segments[0]);
  if (ordinal < 0 || ev->data[0] == NULL) {
    *why = g_strdup ("a device frame in a segment not mapped here");
    return FALSE;
  }
  gst_pinned_cuda_layout_init (&layout, &self->vinfo);
  pitch = frame_pitch (f, &self->vinfo, &layout);
  if (pitch == 0) {
    *why = g_strdup ("device frame layout not one pitch for every plane "
        "(the layout of memory:" GST_PINNED_CUDA_MEMORY_TYPE ")");
    return FALSE;
  }
  if (layout.total_rows == 0 || pitch > G_MAXUINT64 / layout.total_rows
      || f->chunks[0].size < (guint64) pitch * layout.total_rows) {
    *why = g_strdup_printf ("device frame of %" G_GUINT64_FORMAT " bytes "
        "smaller than its %" G_GSIZE_FORMAT " rows of %" G_GSIZE_FORMAT
        " bytes", (guint64) f->chunks[0].size, layout.total_rows, pitch);
    return FALSE;
  }

  loan = g_new0 (DeviceLoan, 1);
  loan->consumer = pf_consumer_ref (c);
  loan->segment = pf_segment_ref (ev->segments[0]);
  loan->seq = f->seq;
  if (self->out_cuda_memory) {
    if (!gst_pinned_shm_src_cuda_out (self, ordinal, &layout,
            (guint8 *) ev->data[0], pitch, loan, device_loan_free, out, why))
      return FALSE;
    *total = f->chunks[0].size;
    COUNTER_SET (self->device_frames_out, self->device_frames_out + 1);
    return TRUE;
  }
  mem = gst_pinned_cuda_memory_new_wrapped (self->cuda_rt, ordinal, &layout,
      (gpointer) ev->data[0], pitch, GST_MEMORY_FLAG_READONLY,
      device_loan_free, loan, &err);
  if (mem == NULL) {
    *why = g_strdup_printf ("could not wrap the device frame: %s",
        err ? err->message : "?");
    g_clear_error (&err);
    device_loan_free (loan);
    return FALSE;
  }
  *out = gst_buffer_new ();
  gst_buffer_append_memory (*out, mem);
  for (p = 0; p < layout.n_planes; p++) {
    offsets[p] = pitch * layout.row_offset[p];
    strides[p] = (gint) pitch;
  }
  gst_buffer_add_video_meta_full (*out, GST_VIDEO_FRAME_FLAG_NONE,
      GST_VIDEO_INFO_FORMAT (&self->vinfo), GST_VIDEO_INFO_WIDTH (&self->vinfo),
      GST_VIDEO_INFO_HEIGHT (&self->vinfo), layout.n_planes, offsets, strides);
  *total = f->chunks[0].size;
  COUNTER_SET (self->device_frames_out, self->device_frames_out + 1);
  return TRUE;
}

#else /* !GST_PINNED_SHM_CUDA */

void
gst_pinned_shm_src_device_options (GstPinnedShmSrc * self,
    pf_consumer_options * options)
{
  self->device_import = FALSE;
  set_why_not (self, g_strdup ("built without the CUDA library (-Dcuda)"));
}

gboolean
gst_pinned_shm_src_device_enable (GstPinnedShmSrc * self, pf_consumer * c)
{
  self->device_refused = 0;
  return TRUE;
}

GstFlowReturn
gst_pinned_shm_src_device_check (GstPinnedShmSrc * self, pf_consumer * c)
{
  GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
      ("The producer sends device frames (" FEATURE_PINNEDFLOW_CUDA
          ") and this element does not take them"), ("%s",
          self->device_why_not));
  return GST_FLOW_NOT_NEGOTIATED;
}

gboolean
gst_pinned_shm_src_device_wrap (GstPinnedShmSrc * self, pf_consumer * c,
    const pf_event * ev, GstBuffer ** out, guint64 * total, gchar ** why)
{
  *out = NULL;
  *why = g_strdup ("a device frame, and no CUDA support built in");
  return FALSE;
}

#endif /* GST_PINNED_SHM_CUDA */
