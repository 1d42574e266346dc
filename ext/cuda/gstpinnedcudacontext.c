/* GStreamer pinnedflow CUDA: what both elements share
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedcudacontext.h"
#include <gst/pinnedcuda/gstpinnedcuda.h>
#include <gst/pinnedcuda/gstpinnedcudamemory.h>

#include <gst/pinnedflow/pinnedflow.h>

GST_DEBUG_CATEGORY_STATIC (gst_pinned_cuda_context_debug);
#define GST_CAT_DEFAULT gst_pinned_cuda_context_debug

static gboolean
has_gst_context (GstPinnedCudaContext * ctx)
{
  gboolean res;

  GST_OBJECT_LOCK (ctx->element);
  res = ctx->gst_ctx != NULL;
  GST_OBJECT_UNLOCK (ctx->element);
  return res;
}

static gboolean
pad_query (GstElement * element, GstPad * pad, gpointer user_data)
{
  /* stop at the first peer that answers */
  return !gst_pad_peer_query (pad, GST_QUERY_CAST (user_data));
}

/* A neighbour's gst.cuda.context, as libgstcuda's own lookup finds one: a
 * context query downstream, then upstream, then a need-context message
 * (the bin or the application may answer it with set_context). Whatever
 * is found arrives through gst_element_set_context(), i.e.
 * gst_pinned_cuda_context_set_gst_context(). */
static void
find_neighbour_context (GstPinnedCudaContext * ctx)
{
  GstQuery *query = gst_query_new_context (GST_PINNED_CUDA_GST_CONTEXT_TYPE);
  GstContext *found = NULL;

  if (!gst_element_foreach_src_pad (ctx->element, pad_query, query) ||
      !gst_element_foreach_sink_pad (ctx->element, pad_query, query)) {
    gst_query_parse_context (query, &found);
    if (found)
      gst_element_set_context (ctx->element, found);
  }
  gst_query_unref (query);
  if (!has_gst_context (ctx))
    gst_element_post_message (ctx->element,
        gst_message_new_need_context (GST_OBJECT (ctx->element),
            GST_PINNED_CUDA_GST_CONTEXT_TYPE));
}

typedef struct
{
  const GstPinnedCudaRuntime *rt;
  gint device_id;
} PrimaryRef;

static void
primary_ref_release (gpointer data)
{
  PrimaryRef *ref = data;

  ref->rt->DevicePrimaryCtxRelease (ref->device_id);
  g_free (ref);
}

/* The context the pipeline lacks, made as cudart, PyTorch and CuPy make
 * theirs: the device's primary context, retained for as long as the
 * GstCudaContext that wraps it lives, so the process keeps one context
 * per device (libgstcuda's gst_cuda_context_new() would cuCtxCreate a
 * second one). Announced with have-context, as libgstcuda does. */
static void
make_primary_context (GstPinnedCudaContext * ctx)
{
  const GstPinnedCudaGst *gst = ctx->gst;
  const GstPinnedCudaRuntime *rt = ctx->rt;
  PrimaryRef *ref;
  gpointer cu_ctx = NULL, gst_ctx, old;
  GstContext *context;

  if (gst->context_new_wrapped == NULL || gst->context_new_cuda_context ==
      NULL || rt->DevicePrimaryCtxRetain == NULL)
    return;
  if (rt->DevicePrimaryCtxRetain (&cu_ctx, ctx->device_id) != 0) {
    GST_INFO_OBJECT (ctx->element, "cuDevicePrimaryCtxRetain (%d) failed",
        ctx->device_id);
    return;
  }
  /* CUdevice: cuDeviceGet (&dev, ordinal) gives the ordinal */
  gst_ctx = gst->context_new_wrapped (cu_ctx, ctx->device_id);
  if (gst_ctx == NULL) {
    rt->DevicePrimaryCtxRelease (ctx->device_id);
    return;
  }
  if (g_object_is_floating (gst_ctx))
    gst_object_ref_sink (gst_ctx);
  ref = g_new0 (PrimaryRef, 1);
  ref->rt = rt;
  ref->device_id = ctx->device_id;
  g_object_set_qdata_full (G_OBJECT (gst_ctx),
      g_quark_from_static_string ("pinnedflow-primary-ref"), ref,
      primary_ref_release);

  GST_OBJECT_LOCK (ctx->element);
  old = ctx->gst_ctx;
  if (old == NULL)
    ctx->gst_ctx = gst_object_ref (gst_ctx);
  GST_OBJECT_UNLOCK (ctx->element);
  if (old == NULL) {
    context = gst->context_new_cuda_context (gst_ctx);
    gst_element_post_message (ctx->element,
        gst_message_new_have_context (GST_OBJECT (ctx->element), context));
  }
  gst_object_unref (gst_ctx);
}

/* The pipeline's GstCudaContext: the one set on the element, or a
 * neighbour's (query, need-context), or else one made here around the
 * device's primary context. Its absence is no error: the element then
 * uses cudart's primary context and offers only its own memory. */
static void
bind_gst_context (GstPinnedCudaContext * ctx)
{
  ctx->gst = gst_pinned_cuda_gst_get ();
  if (ctx->gst == NULL)
    return;
  if (!has_gst_context (ctx))
    find_neighbour_context (ctx);
  if (!has_gst_context (ctx))
    make_primary_context (ctx);
  /* Without the driver's primary-context calls: libgstcuda's own way
   * (a context of its own, cuCtxCreate). */
  if (!has_gst_context (ctx) &&
      (!ctx->gst->ensure_element_context (ctx->element, ctx->device_id,
              &ctx->gst_ctx) || ctx->gst_ctx == NULL)) {
    GST_INFO_OBJECT (ctx->element, "no GstCudaContext for device %d "
        "(libgstcuda could not make one): own memory only", ctx->device_id);
    return;
  }
  GST_DEBUG_OBJECT (ctx->element, "sharing the GstCudaContext %"
      GST_PTR_FORMAT " (CUcontext %p)", ctx->gst_ctx,
      ctx->gst->context_get_handle (ctx->gst_ctx));
}

static void
drop_gst_context (GstPinnedCudaContext * ctx)
{
  gpointer old;

  GST_OBJECT_LOCK (ctx->element);
  old = ctx->gst_ctx;
  ctx->gst_ctx = NULL;
  GST_OBJECT_UNLOCK (ctx->element);
  if (old)
    gst_object_unref (old);
}

gboolean
gst_pinned_cuda_context_open (GstPinnedCudaContext * ctx,
    GstElement * element, gint device_id)
{
  GError *error = NULL;
  GstPinnedCudaError err;
  int prev;

  if (gst_pinned_cuda_context_debug == NULL)
    GST_DEBUG_CATEGORY_INIT (gst_pinned_cuda_context_debug,
        "pinnedcudacontext", 0, "pinnedflow CUDA elements: shared context");
  ctx->element = element;
  ctx->device_id = device_id;
  ctx->stream = NULL;
  /* No context is made here: the one the element works in is the
   * pipeline's (bind_gst_context), or without libgstcuda cudart's primary
   * one, made current when the stream is created. */
  ctx->rt = gst_pinned_cuda_runtime_find_device (device_id, &error);
  if (ctx->rt == NULL) {
    GstElementFactory *factory = gst_element_get_factory (element);
    GST_ELEMENT_ERROR (element, RESOURCE, NOT_FOUND, ("%s", error->message),
        ("%s needs the CUDA runtime and a CUDA device", factory ?
            GST_OBJECT_NAME (factory) : G_OBJECT_TYPE_NAME (element)));
    g_error_free (error);
    drop_gst_context (ctx);
    return FALSE;
  }
  bind_gst_context (ctx);
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

  if (ctx->rt == NULL || ctx->stream == NULL) {
    drop_gst_context (ctx);
    ctx->rt = NULL;
    return;
  }
  /* On the application's thread, usually (a state change): a failure is
   * logged and not left in its last-error slot. */
  prev = gst_pinned_cuda_context_enter (ctx);
  if ((err =
          ctx->rt->StreamSynchronize (ctx->stream)) !=
      GST_PINNED_CUDA_SUCCESS) {
    GST_ERROR_OBJECT (ctx->element, "cudaStreamSynchronize: %s",
        ctx->rt->GetErrorString (err));
    gst_pinned_cuda_take_last_error (ctx->rt);
  }
  if ((err = ctx->rt->StreamDestroy (ctx->stream)) != GST_PINNED_CUDA_SUCCESS) {
    GST_ERROR_OBJECT (ctx->element, "cudaStreamDestroy: %s",
        ctx->rt->GetErrorString (err));
    gst_pinned_cuda_take_last_error (ctx->rt);
  }
  ctx->stream = NULL;
  gst_pinned_cuda_context_leave (ctx, prev);
  drop_gst_context (ctx);
  /* closed: set_context and the caps see an element not started */
  ctx->rt = NULL;
}

/* gst_ctx changes only while the element is not started (open, close,
 * set_context before open), so enter and leave see the same one. */
int
gst_pinned_cuda_context_enter (GstPinnedCudaContext * ctx)
{
  if (ctx->gst_ctx && !ctx->gst->context_push (ctx->gst_ctx))
    GST_WARNING_OBJECT (ctx->element, "could not push the GstCudaContext");
  return gst_pinned_cuda_device_enter (ctx->rt, ctx->device_id);
}

void
gst_pinned_cuda_context_leave (GstPinnedCudaContext * ctx, int previous)
{
  gst_pinned_cuda_device_leave (ctx->rt, ctx->device_id, previous);
  if (ctx->gst_ctx)
    ctx->gst->context_pop (NULL);
}

/* Never replaces a context already held (gst_cuda_handle_set_context
 * keeps it), so enter and leave push and pop the same one. */
void
gst_pinned_cuda_context_set_gst_context (GstPinnedCudaContext * ctx,
    GstElement * element, GstContext * context, gint device_id)
{
  const GstPinnedCudaGst *gst = gst_pinned_cuda_gst_get ();

  if (gst == NULL)
    return;
  GST_OBJECT_LOCK (element);
  gst->handle_set_context (element, context, device_id, &ctx->gst_ctx);
  GST_OBJECT_UNLOCK (element);
}

gboolean
gst_pinned_cuda_context_handle_query (GstPinnedCudaContext * ctx,
    GstElement * element, GstQuery * query)
{
  gpointer gst_ctx;
  gboolean res = FALSE;

  if (ctx->gst == NULL)
    return FALSE;
  GST_OBJECT_LOCK (element);
  gst_ctx = ctx->gst_ctx ? gst_object_ref (ctx->gst_ctx) : NULL;
  GST_OBJECT_UNLOCK (element);
  if (gst_ctx) {
    res = ctx->gst->handle_context_query (element, query, gst_ctx);
    gst_object_unref (gst_ctx);
  }
  return res;
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
  if (err != GST_PINNED_CUDA_SUCCESS) {
    GST_ERROR_OBJECT (ctx->element, "cudaEventDestroy: %s",
        ctx->rt->GetErrorString (err));
    gst_pinned_cuda_take_last_error (ctx->rt);
  }
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
  /* In the pipeline's context, which the registration then keeps alive
   * until the segment dies, however long after the pipeline that is. */
  if (ctx->gst_ctx)
    return gst_pinned_cuda_segment_register_in (ctx->rt, ctx->device_id, seg,
        GST_OBJECT (ctx->gst_ctx), ctx->gst->context_get_handle (ctx->gst_ctx),
        created);
  return gst_pinned_cuda_segment_register (ctx->rt, ctx->device_id, seg,
      created);
}

static GstCaps *
caps_with_feature (GstCaps * caps, const gchar * feature)
{
  GstCaps *res = gst_caps_copy (caps);
  guint i;

  for (i = 0; i < gst_caps_get_size (res); i++)
    gst_caps_set_features (res, i, gst_caps_features_new (feature, NULL));
  return res;
}

GstCaps *
gst_pinned_cuda_transform_caps (GstPadDirection direction, GstCaps * caps,
    GstCaps * filter, const gchar * sink_feature, const gchar * src_feature,
    gboolean cuda_memory)
{
  const gchar *feature = direction == GST_PAD_SINK ? src_feature : sink_feature;
  GstCaps *res = caps_with_feature (caps, feature);

  if (cuda_memory && g_strcmp0 (feature,
          GST_CAPS_FEATURE_MEMORY_PINNEDFLOW_CUDA) == 0) {
    GstCaps *alt = caps_with_feature (caps, GST_PINNED_CUDA_GST_CAPS_FEATURE);

    if (direction == GST_PAD_SINK) {
      /* src side: GStreamer's memory first */
      res = gst_caps_merge (alt, res);
    } else {
      res = gst_caps_merge (res, alt);
    }
  }
  if (filter) {
    GstCaps *tmp = gst_caps_intersect_full (filter, res,
        GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref (res);
    res = tmp;
  }
  return res;
}

GstBufferPool *
gst_pinned_cuda_context_new_device_pool (GstPinnedCudaContext * ctx)
{
  if (ctx->gst_ctx)
    return gst_pinned_cuda_buffer_pool_new_in_context (ctx->rt,
        ctx->device_id, GST_OBJECT (ctx->gst_ctx),
        ctx->gst->context_get_handle (ctx->gst_ctx));
  return gst_pinned_cuda_buffer_pool_new (ctx->rt, ctx->device_id);
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
