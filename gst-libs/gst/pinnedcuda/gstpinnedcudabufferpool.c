/* GStreamer pinnedflow CUDA: bounded pool of pitched device frames
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Context: every frame and its event are made in the pool's CUcontext
 * (cu_ctx, pushed around the calls, on whichever thread allocates: a
 * stream made in another context cannot record a frame's event), or with
 * cu_ctx NULL in the device's primary context. rt, device_id, cu_ctx and
 * owner (a ref) are set at creation and never change.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedcudamemory-private.h"

GST_DEBUG_CATEGORY_STATIC (gst_pinned_cuda_pool_debug);
#define GST_CAT_DEFAULT gst_pinned_cuda_pool_debug

struct _GstPinnedCudaBufferPool
{
  GstBufferPool parent;

  const GstPinnedCudaRuntime *rt;
  gint device_id;
  gpointer cu_ctx;
  GstObject *owner;
  GstVideoInfo info;
  GstPinnedCudaLayout layout;
  gsize pitch;
  gchar *last_error;            /* object lock */
};

static void
set_last_error (GstPinnedCudaBufferPool * self, GError * err)
{
  GST_ERROR_OBJECT (self, "%s", err->message);
  GST_OBJECT_LOCK (self);
  g_free (self->last_error);
  self->last_error = g_strdup (err->message);
  GST_OBJECT_UNLOCK (self);
  g_error_free (err);
}

gchar *
gst_pinned_cuda_buffer_pool_get_last_error (GstBufferPool * pool)
{
  GstPinnedCudaBufferPool *self = GST_PINNED_CUDA_BUFFER_POOL (pool);
  gchar *res;

  GST_OBJECT_LOCK (self);
  res = g_strdup (self->last_error);
  GST_OBJECT_UNLOCK (self);
  return res;
}

G_DEFINE_TYPE_WITH_CODE (GstPinnedCudaBufferPool, gst_pinned_cuda_buffer_pool,
    GST_TYPE_BUFFER_POOL,
    GST_DEBUG_CATEGORY_INIT (gst_pinned_cuda_pool_debug, "pinnedcudapool", 0,
        "pinnedflow CUDA device buffer pool"));

static const gchar **
pool_get_options (GstBufferPool * pool)
{
  static const gchar *options[] = { GST_BUFFER_POOL_OPTION_VIDEO_META, NULL };
  return options;
}

static gboolean
pool_set_config (GstBufferPool * pool, GstStructure * config)
{
  GstPinnedCudaBufferPool *self = GST_PINNED_CUDA_BUFFER_POOL (pool);
  GstCaps *caps = NULL;
  guint size, min, max;
  GError *err = NULL;
  gsize frame;
  gboolean probed;
  int prev;

  if (!gst_buffer_pool_config_get_params (config, &caps, &size, &min, &max)
      || caps == NULL || !gst_video_info_from_caps (&self->info, caps)) {
    GST_WARNING_OBJECT (pool, "invalid config");
    return FALSE;
  }
  if (max == 0) {
    GST_WARNING_OBJECT (pool, "a device pool must be bounded (max > 0)");
    return FALSE;
  }
  gst_pinned_cuda_layout_init (&self->layout, &self->info);
  prev = gst_pinned_cuda_context_push_enter (self->rt, self->device_id,
      self->cu_ctx);
  probed = gst_pinned_cuda_probe_pitch (self->rt, &self->layout, &self->pitch,
      &err);
  gst_pinned_cuda_device_leave (self->rt, self->device_id, prev);
  if (!probed) {
    set_last_error (self, err);
    return FALSE;
  }
  frame = self->pitch * self->layout.total_rows;
  if (frame > G_MAXUINT)
    return FALSE;
  gst_buffer_pool_config_set_params (config, caps, (guint) frame, min, max);
  return GST_BUFFER_POOL_CLASS (gst_pinned_cuda_buffer_pool_parent_class)
      ->set_config (pool, config);
}

static GstFlowReturn
pool_alloc_buffer (GstBufferPool * pool, GstBuffer ** buffer,
    GstBufferPoolAcquireParams * params)
{
  GstPinnedCudaBufferPool *self = GST_PINNED_CUDA_BUFFER_POOL (pool);
  GstMemory *mem;
  GError *err = NULL;
  gsize offset[GST_VIDEO_MAX_PLANES] = { 0, };
  gint stride[GST_VIDEO_MAX_PLANES] = { 0, };
  guint p;
  gsize pitch;
  int prev;

  /* Allocations and their events belong to the pool's context, whatever
   * the calling thread had current. */
  prev = gst_pinned_cuda_context_push_enter (self->rt, self->device_id,
      self->cu_ctx);
  mem = gst_pinned_cuda_memory_alloc (self->rt, self->device_id,
      &self->layout, self->cu_ctx, self->owner, &err);
  gst_pinned_cuda_device_leave (self->rt, self->device_id, prev);
  if (mem == NULL) {
    set_last_error (self, err);
    return GST_FLOW_ERROR;
  }
  pitch = ((GstPinnedCudaMemory *) mem)->pitch;
  if (pitch != self->pitch) {
    GST_ERROR_OBJECT (pool, "pitch changed from %" G_GSIZE_FORMAT " to %"
        G_GSIZE_FORMAT, self->pitch, pitch);
    gst_memory_unref (mem);
    return GST_FLOW_ERROR;
  }
  for (p = 0; p < self->layout.n_planes; p++) {
    offset[p] = pitch * self->layout.row_offset[p];
    stride[p] = (gint) pitch;
  }
  *buffer = gst_buffer_new ();
  gst_buffer_append_memory (*buffer, mem);
  gst_buffer_add_video_meta_full (*buffer, GST_VIDEO_FRAME_FLAG_NONE,
      GST_VIDEO_INFO_FORMAT (&self->info), GST_VIDEO_INFO_WIDTH (&self->info),
      GST_VIDEO_INFO_HEIGHT (&self->info), self->layout.n_planes, offset,
      stride);
  return GST_FLOW_OK;
}

/* GstBufferPool leaves what it preallocated in its queue when a later
 * allocation fails: give those device frames back at once. */
static gboolean
pool_start (GstBufferPool * pool)
{
  GstBufferPoolClass *parent =
      GST_BUFFER_POOL_CLASS (gst_pinned_cuda_buffer_pool_parent_class);

  if (parent->start (pool))
    return TRUE;
  parent->stop (pool);
  return FALSE;
}

static void
pool_finalize (GObject * object)
{
  GstPinnedCudaBufferPool *self = GST_PINNED_CUDA_BUFFER_POOL (object);

  g_free (self->last_error);
  if (self->owner)
    gst_object_unref (self->owner);
  G_OBJECT_CLASS (gst_pinned_cuda_buffer_pool_parent_class)->finalize (object);
}

static void
gst_pinned_cuda_buffer_pool_class_init (GstPinnedCudaBufferPoolClass * klass)
{
  GstBufferPoolClass *pool_class = GST_BUFFER_POOL_CLASS (klass);

  G_OBJECT_CLASS (klass)->finalize = pool_finalize;
  pool_class->get_options = pool_get_options;
  pool_class->set_config = pool_set_config;
  pool_class->alloc_buffer = pool_alloc_buffer;
  pool_class->start = pool_start;
}

static void
gst_pinned_cuda_buffer_pool_init (GstPinnedCudaBufferPool * self)
{
}

GstBufferPool *
gst_pinned_cuda_buffer_pool_new (const GstPinnedCudaRuntime * rt,
    gint device_id)
{
  GstPinnedCudaBufferPool *self;

  self = g_object_new (GST_TYPE_PINNED_CUDA_BUFFER_POOL, NULL);
  gst_object_ref_sink (self);
  self->rt = rt;
  self->device_id = device_id;
  return GST_BUFFER_POOL (self);
}

GstBufferPool *
gst_pinned_cuda_buffer_pool_new_in_context (const GstPinnedCudaRuntime * rt,
    gint device_id, GstObject * owner, gpointer cu_ctx)
{
  GstBufferPool *pool = gst_pinned_cuda_buffer_pool_new (rt, device_id);
  GstPinnedCudaBufferPool *self = GST_PINNED_CUDA_BUFFER_POOL (pool);

  self->cu_ctx = cu_ctx;
  self->owner = cu_ctx && owner ? gst_object_ref (owner) : NULL;
  return pool;
}
