/* GStreamer pinnedflow CUDA: what both elements share
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedcudacontext.h"

#include <gst/pinnedflow/pinnedflow.h>

gboolean
gst_pinned_cuda_context_open (GstPinnedCudaContext * ctx,
    GstElement * element, gint device_id)
{
  GError *error = NULL;
  GstPinnedCudaError err;
  int prev;

  ctx->element = element;
  ctx->device_id = device_id;
  ctx->stream = NULL;
  ctx->rt = gst_pinned_cuda_runtime_open_device (device_id, &error);
  if (ctx->rt == NULL) {
    GstElementFactory *factory = gst_element_get_factory (element);
    GST_ELEMENT_ERROR (element, RESOURCE, NOT_FOUND, ("%s", error->message),
        ("%s needs the CUDA runtime and a CUDA device", factory ?
            GST_OBJECT_NAME (factory) : G_OBJECT_TYPE_NAME (element)));
    g_error_free (error);
    return FALSE;
  }
  /* On the application's thread, usually: its context is left as it was. */
  prev = gst_pinned_cuda_context_enter (ctx);
  err = ctx->rt->StreamCreateWithFlags (&ctx->stream,
      GST_PINNED_CUDA_STREAM_NON_BLOCKING);
  gst_pinned_cuda_context_leave (ctx, prev);
  if (err != GST_PINNED_CUDA_SUCCESS) {
    ctx->stream = NULL;
    GST_PINNED_CUDA_CONTEXT_ERROR (ctx, "cudaStreamCreateWithFlags", err);
    return FALSE;
  }
  return TRUE;
}

void
gst_pinned_cuda_context_close (GstPinnedCudaContext * ctx)
{
  GstPinnedCudaError err;
  int prev;

  if (ctx->rt == NULL || ctx->stream == NULL)
    return;
  prev = gst_pinned_cuda_context_enter (ctx);
  if ((err =
          ctx->rt->StreamSynchronize (ctx->stream)) != GST_PINNED_CUDA_SUCCESS)
    GST_ERROR_OBJECT (ctx->element, "cudaStreamSynchronize: %s",
        ctx->rt->GetErrorString (err));
  if ((err = ctx->rt->StreamDestroy (ctx->stream)) != GST_PINNED_CUDA_SUCCESS)
    GST_ERROR_OBJECT (ctx->element, "cudaStreamDestroy: %s",
        ctx->rt->GetErrorString (err));
  ctx->stream = NULL;
  gst_pinned_cuda_context_leave (ctx, prev);
}

int
gst_pinned_cuda_context_enter (GstPinnedCudaContext * ctx)
{
  return gst_pinned_cuda_device_enter (ctx->rt, ctx->device_id);
}

void
gst_pinned_cuda_context_leave (GstPinnedCudaContext * ctx, int previous)
{
  gst_pinned_cuda_device_leave (ctx->rt, ctx->device_id, previous);
}

GstPinnedCudaEvent
gst_pinned_cuda_context_new_event (GstPinnedCudaContext * ctx)
{
  GstPinnedCudaEvent event = NULL;
  GstPinnedCudaError err;
  int prev;

  prev = gst_pinned_cuda_context_enter (ctx);
  err =
      ctx->rt->EventCreateWithFlags (&event,
      GST_PINNED_CUDA_EVENT_BLOCKING_SYNC |
      GST_PINNED_CUDA_EVENT_DISABLE_TIMING);
  gst_pinned_cuda_context_leave (ctx, prev);
  if (err != GST_PINNED_CUDA_SUCCESS) {
    GST_PINNED_CUDA_CONTEXT_ERROR (ctx, "cudaEventCreateWithFlags", err);
    return NULL;
  }
  return event;
}

void
gst_pinned_cuda_context_free_event (GstPinnedCudaContext * ctx,
    GstPinnedCudaEvent event)
{
  GstPinnedCudaError err;
  int prev;

  prev = gst_pinned_cuda_context_enter (ctx);
  err = ctx->rt->EventDestroy (event);
  gst_pinned_cuda_context_leave (ctx, prev);
  if (err != GST_PINNED_CUDA_SUCCESS)
    GST_ERROR_OBJECT (ctx->element, "cudaEventDestroy: %s",
        ctx->rt->GetErrorString (err));
}

void
gst_pinned_cuda_context_post_error (GstPinnedCudaContext * ctx,
    const gchar * call, GstPinnedCudaError err, const gchar * file,
    const gchar * function, gint line)
{
  gchar *desc = gst_pinned_cuda_error_describe (ctx->rt, err);
  /* Reported here: taken from the thread's last-error slot. A sticky one
   * (an asynchronous fault: every later call returns it) is said so. */
  gboolean sticky = gst_pinned_cuda_take_last_error (ctx->rt);

  gst_element_message_full (ctx->element, GST_MESSAGE_ERROR,
      GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_FAILED,
      g_strdup_printf ("CUDA error in %s: %s%s", call, desc, sticky ?
          " (sticky: the device's CUDA context is unusable until the "
          "process exits)" : ""),
      g_strdup_printf ("runtime %s, device %d", ctx->rt->library,
          ctx->device_id), file, function, line);
  g_free (desc);
}

const GstPinnedCudaRegistration *
gst_pinned_cuda_context_register_memory (GstPinnedCudaContext * ctx,
    GstMemory * mem, gboolean * created)
{
  GstPinnedSegment *seg;

  *created = FALSE;
  if (!gst_is_pinned_memory (mem))
    return NULL;
  seg = gst_pinned_memory_get_segment (mem, NULL);
  if (seg == NULL)
    return NULL;
  return gst_pinned_cuda_segment_register (ctx->rt, ctx->device_id, seg,
      created);
}

GstCaps *
gst_pinned_cuda_transform_caps (GstPadDirection direction, GstCaps * caps,
    GstCaps * filter, const gchar * sink_feature, const gchar * src_feature)
{
  const gchar *feature = direction == GST_PAD_SINK ? src_feature : sink_feature;
  GstCaps *res = gst_caps_copy (caps);
  guint i;

  for (i = 0; i < gst_caps_get_size (res); i++)
    gst_caps_set_features (res, i, gst_caps_features_new (feature, NULL));
  if (filter) {
    GstCaps *tmp = gst_caps_intersect_full (filter, res,
        GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref (res);
    res = tmp;
  }
  return res;
}

GstBufferPool *
gst_pinned_cuda_host_pool_new (GstCaps * caps, guint size, guint min,
    guint max, gboolean video_meta)
{
  /* Host frames for DMA: the segment is mlock'ed (no seal needed: they
   * stay in this process). */
  return gst_pinned_buffer_pool_new_configured (caps, size, min, max,
      video_meta, GST_PINNED_SEGMENT_FLAG_LOCK);
}
