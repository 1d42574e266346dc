/* GStreamer pinnedflow: pinnedshmsrc's device frames as memory:CUDAMemory
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A device stream (gstpinnedshmsrcdevice.c) goes downstream as
 * video/x-raw(memory:PinnedflowCUDA) where downstream takes it (no copy,
 * no GstCudaContext needed: pinnedcudadownload, our elements), else as
 * video/x-raw(memory:CUDAMemory), GStreamer's CUDA memory (nvcodec's
 * cudadownload, cudaconvert, encoders), in the pipeline's GstCudaContext
 * (gst.cuda.context: the application's, a neighbour's, or one made for
 * #GstPinnedShmSrc:cuda-device-id, as nvcodec's elements find theirs):
 * - libgstcuda 1.24+: the frame's device address wrapped
 *   (gst_cuda_allocator_alloc_wrapped), no copy, read-only; the frame goes
 *   back to the producer when the wrapped memory's notify runs;
 * - libgstcuda 1.22: one device-to-device copy into a buffer of a
 *   GstCudaBufferPool (gstpinnedcudagstcopy.c, shared with the tensor
 *   import), complete before the buffer is pushed; the frame goes back at
 *   once. Counted (stats: device-copies).
 * libgstcuda is opened at run time (gstpinnedcudagst-private.h): nothing
 * here links it. Without it (or without a CUDA driver for it) only
 * memory:PinnedflowCUDA is offered.
 *
 * The src also names its domain (docs/protocol.md 3.12): with device
 * segments asked for, a DOMAIN with the device's UUID, so a producer that
 * copies into domains (pf_node_producer_enable_domains()) sends device
 * frames on that device rather than host frames.
 *
 * Threads and lifetimes: cuda_ctx is handled as nvcodec's elements handle
 * theirs: written by set_context (any thread, the application's bus sync
 * handler included, also from within gst_cuda_ensure_element_context() on
 * the streaming thread), read by the streaming thread and by context
 * queries; it lives until finalize. cuda_pool and out_cuda_memory belong
 * to the streaming thread (and stop, with the thread stopped). A wrapped
 * memory holds the frame's loan (gstpinnedshmsrcdevice.c) until its last
 * unref, on whichever thread.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedshmsrc-private.h"

#include <gst/pinnedcuda/gstpinnedcuda.h>
#include <gst/pinnedcuda/gstpinnedcudamemory.h>
#include <gst/pinnedcuda/gstpinnedcudatensor.h>
#include <gst/pinnedcuda/gstpinnedcudagst-private.h>
#include <pinnedflow/pf-node-domains.h>

#define GST_CAT_DEFAULT gst_pinned_shm_src_debug

#define FEATURE_PINNEDFLOW_CUDA "memory:PinnedflowCUDA"

static gint
wanted_device (GstPinnedShmSrc * self)
{
  gint id;

  GST_OBJECT_LOCK (self);
  id = self->cuda_device_id;
  GST_OBJECT_UNLOCK (self);
  return id;
}

GstCaps *
gst_pinned_shm_src_cuda_choose_caps (GstPinnedShmSrc * self, GstCaps * base)
{
  GstCaps *want = gst_caps_copy (base), *cuda, *peer;
  GstPad *pad = GST_BASE_SRC_PAD (self);

  self->out_cuda_memory = FALSE;
  gst_caps_set_features_simple (want,
      gst_caps_features_new (FEATURE_PINNEDFLOW_CUDA, NULL));
  if (gst_pinned_cuda_gst_get () == NULL)
    return want;
  /* ours first: no copy and no GstCudaContext on any version */
  cuda = gst_caps_copy (base);
  gst_caps_set_features_simple (cuda,
      gst_caps_features_new (GST_PINNED_CUDA_GST_CAPS_FEATURE, NULL));
  gst_caps_append (want, cuda);
  peer = gst_pad_peer_query_caps (pad, want);
  if (peer == NULL || gst_caps_is_empty (peer)) {
    /* nothing taken: the caps set fail and say why */
    gst_clear_caps (&peer);
    want = gst_caps_truncate (want);
    return want;
  }
  gst_caps_unref (want);
  peer = gst_caps_fixate (peer);
  self->out_cuda_memory = gst_pinned_cuda_gst_caps_is_cuda_memory (peer);
  GST_INFO_OBJECT (self, "device frames out as %" GST_PTR_FORMAT, peer);
  return peer;
}

gboolean
gst_pinned_shm_src_cuda_ensure (GstPinnedShmSrc * self)
{
  const GstPinnedCudaGst *t = gst_pinned_cuda_gst_get ();
  gint want = wanted_device (self);

  if (t == NULL || !t->ensure_element_context (GST_ELEMENT (self), want,
          &self->cuda_ctx)) {
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
        ("No GstCudaContext for the device frames (memory:CUDAMemory)"),
        ("gst_cuda_ensure_element_context (device %d) failed", want));
    return FALSE;
  }
  GST_INFO_OBJECT (self, "memory:CUDAMemory in the GstCudaContext of device "
      "%d (%s)", gst_pinned_cuda_gst_context_device (self->cuda_ctx),
      t->alloc_wrapped ? "wrapped, no copy (1.24+)" :
      "one device copy per frame (1.22)");
  return TRUE;
}

void
gst_pinned_shm_src_cuda_set_context (GstPinnedShmSrc * self,
    GstContext * context)
{
  const GstPinnedCudaGst *t = gst_pinned_cuda_gst_get ();

  if (t != NULL)
    t->handle_set_context (GST_ELEMENT (self), context, wanted_device (self),
        &self->cuda_ctx);
}

gboolean
gst_pinned_shm_src_cuda_query (GstPinnedShmSrc * self, GstQuery * query)
{
  const GstPinnedCudaGst *t = gst_pinned_cuda_gst_get ();

  return t != NULL && self->cuda_ctx != NULL &&
      t->handle_context_query (GST_ELEMENT (self), query, self->cuda_ctx);
}

static void
drop_pool (GstPinnedShmSrc * self)
{
  if (self->cuda_pool != NULL) {
    /* buffers still out are freed when they come back */
    gst_buffer_pool_set_active (self->cuda_pool, FALSE);
    gst_clear_object (&self->cuda_pool);
  }
}

void
gst_pinned_shm_src_cuda_stop (GstPinnedShmSrc * self)
{
  self->out_cuda_memory = FALSE;
  drop_pool (self);
}

void
gst_pinned_shm_src_cuda_finalize (GstPinnedShmSrc * self)
{
  gst_pinned_shm_src_cuda_stop (self);
  gst_clear_object (&self->cuda_ctx);
}

/* 1.22: a buffer of the pool for the current caps, one device copy. */
static gboolean
copy_frame (GstPinnedShmSrc * self, const GstPinnedCudaGst * t, gint ordinal,
    const GstPinnedCudaLayout * layout, const guint8 * data, gsize pitch,
    GstBuffer ** out, gchar ** why)
{
  GstPinnedCudaGstPlanes planes;
  GstPinnedCudaError err = GST_PINNED_CUDA_SUCCESS;
  const gchar *what = NULL;
  GstBuffer *buf = NULL;
  guint p;

  /* new caps: a pool for their frames */
  if (self->cuda_pool != NULL
      && !gst_video_info_is_equal (&self->cuda_pool_info, &self->vinfo))
    drop_pool (self);
  if (self->cuda_pool == NULL) {
    self->cuda_pool = gst_pinned_cuda_gst_pool_new (t, self->cuda_ctx,
        &self->vinfo, 2, 0);
    if (self->cuda_pool == NULL) {
      *why = g_strdup ("no GstCudaBufferPool for memory:CUDAMemory");
      return FALSE;
    }
    self->cuda_pool_info = self->vinfo;
  }
  if (gst_buffer_pool_acquire_buffer (self->cuda_pool, &buf, NULL) !=
      GST_FLOW_OK) {
    *why = g_strdup ("no buffer from the GstCudaBufferPool");
    return FALSE;
  }
  memset (&planes, 0, sizeof (planes));
  planes.data = data;
  planes.pitch = pitch;
  planes.n_planes = layout->n_planes;
  planes.total_rows = layout->total_rows;
  for (p = 0; p < layout->n_planes; p++) {
    planes.row_offset[p] = layout->row_offset[p];
    planes.row_bytes[p] = layout->width_bytes[p];
  }
  if (!gst_pinned_cuda_gst_copy_planes (self->cuda_rt, ordinal, buf, &planes,
          NULL, &what, &err)) {
    if (err != GST_PINNED_CUDA_SUCCESS) {
      gchar *desc = gst_pinned_cuda_error_describe (self->cuda_rt, err);

      gst_pinned_cuda_take_last_error (self->cuda_rt);
      *why = g_strdup_printf ("the device copy into memory:CUDAMemory: %s "
          "failed: %s", what, desc);
      g_free (desc);
    } else {
      *why = g_strdup_printf ("the device copy into memory:CUDAMemory: %s",
          what);
    }
    gst_buffer_unref (buf);
    return FALSE;
  }
  *out = buf;
  COUNTER_SET (self->device_copies, self->device_copies + 1);
  return TRUE;
}

gboolean
gst_pinned_shm_src_cuda_out (GstPinnedShmSrc * self, gint ordinal,
    const GstPinnedCudaLayout * layout, guint8 * data, gsize pitch,
    gpointer loan, GDestroyNotify loan_free, GstBuffer ** out, gchar ** why)
{
  const GstPinnedCudaGst *t = gst_pinned_cuda_gst_get ();
  GstVideoInfo info;
  GstMemory *mem;
  gint ctx_dev = gst_pinned_cuda_gst_context_device (self->cuda_ctx);
  guint p;
  gboolean ok;

  *out = NULL;
  if (t == NULL || self->cuda_ctx == NULL) {
    *why = g_strdup ("memory:CUDAMemory negotiated and no GstCudaContext");
    loan_free (loan);
    return FALSE;
  }
  if (ctx_dev != ordinal) {
    *why = g_strdup_printf ("the frame is on CUDA device %d, the pipeline's "
        "GstCudaContext on device %d (cuda-device-id, or the context the "
        "application sets, must name the frames' device)", ordinal, ctx_dev);
    loan_free (loan);
    return FALSE;
  }
  if (t->alloc_wrapped == NULL) {
    ok = copy_frame (self, t, ordinal, layout, data, pitch, out, why);
    /* copied, complete: the frame goes back now */
    loan_free (loan);
    return ok;
  }
  info = self->vinfo;
  for (p = 0; p < layout->n_planes; p++) {
    GST_VIDEO_INFO_PLANE_OFFSET (&info, p) = pitch * layout->row_offset[p];
    GST_VIDEO_INFO_PLANE_STRIDE (&info, p) = (gint) pitch;
  }
  GST_VIDEO_INFO_SIZE (&info) = pitch * layout->total_rows;
  /* complete when published (docs/protocol.md 3.11): no stream to wait on */
  mem = t->alloc_wrapped (NULL, self->cuda_ctx, NULL, &info,
      (guintptr) data, loan, loan_free);
  if (mem == NULL) {
    *why = g_strdup ("gst_cuda_allocator_alloc_wrapped failed");
    loan_free (loan);
    return FALSE;
  }
  /* the producer's frame, mapped read-only here; shareable (a buffer copy
   * shares it rather than reading it back) */
  GST_MINI_OBJECT_FLAG_SET (mem, GST_MEMORY_FLAG_READONLY);
  GST_MINI_OBJECT_FLAG_UNSET (mem, GST_MEMORY_FLAG_NO_SHARE);
  *out = gst_buffer_new ();
  gst_buffer_append_memory (*out, mem);
  gst_buffer_add_video_meta_full (*out, GST_VIDEO_FRAME_FLAG_NONE,
      GST_VIDEO_INFO_FORMAT (&info), GST_VIDEO_INFO_WIDTH (&info),
      GST_VIDEO_INFO_HEIGHT (&info), layout->n_planes, info.offset,
      info.stride);
  return TRUE;
}

gboolean
gst_pinned_shm_src_cuda_set_domain (GstPinnedShmSrc * self, pf_consumer * c)
{
  gint want = wanted_device (self), ordinal = want, res;
  gpointer ctx = NULL;

  if (ordinal < 0 && self->cuda_ctx != NULL)
    ordinal = gst_pinned_cuda_gst_context_device (self->cuda_ctx);
  if (ordinal < 0 && gst_pinned_cuda_gst_get () != NULL) {
    /* the pipeline's context downstream, if one is there already */
    ctx = gst_pinned_cuda_tensor_query_cuda_context (GST_ELEMENT (self));
    ordinal = gst_pinned_cuda_gst_context_device (ctx);
    gst_clear_object (&ctx);
  }
  if (ordinal < 0)
    ordinal = 0;
  res = pf_device_consumer_set_domain (c, ordinal);
  if (res < 0 && want >= 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("cuda-device-id=%d: no such CUDA device here", want),
        ("pf_device_consumer_set_domain: %s", g_strerror (-res)));
    return FALSE;
  }
  if (res < 0)
    GST_WARNING_OBJECT (self, "no DOMAIN sent for device %d (%s): a producer "
        "that copies into domains sends host frames", ordinal,
        g_strerror (-res));
  else
    GST_INFO_OBJECT (self, "domain: CUDA device %d", ordinal);
  g_atomic_int_set (&self->domain_device, res < 0 ? -1 : ordinal);
  return TRUE;
}
