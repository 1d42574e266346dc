/* GStreamer pinnedflow CUDA: base class of the upload and the download
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * What both elements share: the device-id property, the CUDA context's
 * lifetime around start_cuda/stop_cuda, caps (pad templates,
 * transform_caps, set_caps into in_info/out_info/host_layout) and putting a
 * pool into an allocation query. Threading: see the header; device_id is
 * guarded by the object lock, everything else belongs to whichever thread
 * GstBaseTransform runs start/stop/set_caps on (never two at once).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedcudabasetransform.h"
#include "gstpinnedcudaformats.h"

#define DEFAULT_DEVICE_ID 0

enum
{
  PROP_0,
  PROP_DEVICE_ID,
};

G_DEFINE_ABSTRACT_TYPE (GstPinnedCudaBaseTransform,
    gst_pinned_cuda_base_transform, GST_TYPE_BASE_TRANSFORM);

static gboolean
gst_pinned_cuda_base_transform_start (GstBaseTransform * trans)
{
  GstPinnedCudaBaseTransform *self = GST_PINNED_CUDA_BASE_TRANSFORM (trans);
  GstPinnedCudaBaseTransformClass *klass =
      GST_PINNED_CUDA_BASE_TRANSFORM_GET_CLASS (self);
  gint device_id;

  GST_OBJECT_LOCK (self);
  device_id = self->device_id;
  self->frames = self->bytes = self->pinned_copies = 0;
  self->registrations = self->registrations_readonly = 0;
  self->registration_failures = 0;
  GST_OBJECT_UNLOCK (self);

  if (!gst_pinned_cuda_context_open (&self->cuda, GST_ELEMENT (self),
          device_id)) {
    gst_pinned_cuda_context_close (&self->cuda);
    return FALSE;
  }
  if (klass->start_cuda && !klass->start_cuda (self)) {
    /* Not stopped by GstBaseTransform after a failed start. */
    if (klass->stop_cuda)
      klass->stop_cuda (self);
    gst_pinned_cuda_context_close (&self->cuda);
    return FALSE;
  }
  return TRUE;
}

static gboolean
gst_pinned_cuda_base_transform_stop (GstBaseTransform * trans)
{
  GstPinnedCudaBaseTransform *self = GST_PINNED_CUDA_BASE_TRANSFORM (trans);
  GstPinnedCudaBaseTransformClass *klass =
      GST_PINNED_CUDA_BASE_TRANSFORM_GET_CLASS (self);

  if (self->cuda.rt == NULL)
    return TRUE;
  if (klass->stop_cuda)
    klass->stop_cuda (self);
  gst_pinned_cuda_context_close (&self->cuda);
  return TRUE;
}

/* memory:CUDAMemory is offered where libgstcuda and a driver are present,
 * and, once started, only when a GstCudaContext is bound. */
static gboolean
offers_cuda_memory (GstPinnedCudaBaseTransform * self)
{
  gboolean res;

  if (gst_pinned_cuda_gst_get () == NULL)
    return FALSE;
  GST_OBJECT_LOCK (self);
  res = self->cuda.rt == NULL || self->cuda.gst_ctx != NULL;
  GST_OBJECT_UNLOCK (self);
  return res;
}

static GstCaps *
gst_pinned_cuda_base_transform_transform_caps (GstBaseTransform * trans,
    GstPadDirection direction, GstCaps * caps, GstCaps * filter)
{
  GstPinnedCudaBaseTransformClass *klass =
      GST_PINNED_CUDA_BASE_TRANSFORM_GET_CLASS (trans);

  return gst_pinned_cuda_transform_caps (direction, caps, filter,
      klass->sink_feature, klass->src_feature,
      offers_cuda_memory (GST_PINNED_CUDA_BASE_TRANSFORM (trans)));
}

static void
gst_pinned_cuda_base_transform_set_context (GstElement * element,
    GstContext * context)
{
  GstPinnedCudaBaseTransform *self = GST_PINNED_CUDA_BASE_TRANSFORM (element);
  gint device_id;

  GST_OBJECT_LOCK (self);
  device_id = self->device_id;
  GST_OBJECT_UNLOCK (self);
  gst_pinned_cuda_context_set_gst_context (&self->cuda, element, context,
      device_id);
  GST_ELEMENT_CLASS (gst_pinned_cuda_base_transform_parent_class)->set_context
      (element, context);
}

static gboolean
gst_pinned_cuda_base_transform_query (GstBaseTransform * trans,
    GstPadDirection direction, GstQuery * query)
{
  GstPinnedCudaBaseTransform *self = GST_PINNED_CUDA_BASE_TRANSFORM (trans);

  if (GST_QUERY_TYPE (query) == GST_QUERY_CONTEXT &&
      gst_pinned_cuda_context_handle_query (&self->cuda, GST_ELEMENT (trans),
          query))
    return TRUE;
  return GST_BASE_TRANSFORM_CLASS (gst_pinned_cuda_base_transform_parent_class)
      ->query (trans, direction, query);
}

static gboolean
gst_pinned_cuda_base_transform_set_caps (GstBaseTransform * trans,
    GstCaps * incaps, GstCaps * outcaps)
{
  GstPinnedCudaBaseTransform *self = GST_PINNED_CUDA_BASE_TRANSFORM (trans);
  GstPinnedCudaBaseTransformClass *klass =
      GST_PINNED_CUDA_BASE_TRANSFORM_GET_CLASS (self);
  gboolean host_is_sink;

  if (!gst_video_info_from_caps (&self->in_info, incaps) ||
      !gst_video_info_from_caps (&self->out_info, outcaps))
    return FALSE;
  host_is_sink = g_strcmp0 (klass->sink_feature,
      GST_CAPS_FEATURE_MEMORY_SYSTEM_MEMORY) == 0;
  gst_pinned_cuda_layout_init (&self->host_layout,
      host_is_sink ? &self->in_info : &self->out_info);
  self->cuda_memory =
      gst_pinned_cuda_gst_caps_is_cuda_memory (host_is_sink ? outcaps : incaps);
  if (self->cuda_memory && self->cuda.gst_ctx == NULL) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("memory:CUDAMemory negotiated without a GstCudaContext"),
        ("libgstcuda could not provide a context for device %d",
            self->cuda.device_id));
    return FALSE;
  }
  return klass->caps_changed == NULL || klass->caps_changed (self);
}

gboolean
gst_pinned_cuda_base_transform_parse_allocation (GstQuery * query,
    GstCaps ** caps, guint * down_min)
{
  *down_min = 0;
  gst_query_parse_allocation (query, caps, NULL);
  if (*caps == NULL)
    return FALSE;
  if (gst_query_get_n_allocation_pools (query) > 0)
    gst_query_parse_nth_allocation_pool (query, 0, NULL, NULL, down_min, NULL);
  return TRUE;
}

void
gst_pinned_cuda_base_transform_put_pool (GstQuery * query,
    GstBufferPool * pool, guint size, guint min, guint max)
{
  if (gst_query_get_n_allocation_pools (query) > 0)
    gst_query_set_nth_allocation_pool (query, 0, pool, size, min, max);
  else
    gst_query_add_allocation_pool (query, pool, size, min, max);
  gst_object_unref (pool);
}

void
gst_pinned_cuda_base_transform_count_registration (GstPinnedCudaBaseTransform *
    self, const GstPinnedCudaRegistration * reg, gboolean created)
{
  if (reg == NULL || !created)
    return;
  GST_OBJECT_LOCK (self);
  if (reg->registered) {
    self->registrations++;
    if (reg->readonly)
      self->registrations_readonly++;
  } else {
    self->registration_failures++;
  }
  GST_OBJECT_UNLOCK (self);
}

const GstPinnedCudaRegistration *
gst_pinned_cuda_base_transform_register_memory (GstPinnedCudaBaseTransform *
    self, GstMemory * mem, gboolean * created)
{
  gboolean made = FALSE;
  const GstPinnedCudaRegistration *reg =
      gst_pinned_cuda_context_register_memory (&self->cuda, mem, &made);

  gst_pinned_cuda_base_transform_count_registration (self, reg, made);
  if (created)
    *created = made;
  return reg;
}

void
gst_pinned_cuda_base_transform_count_frame (GstPinnedCudaBaseTransform * self,
    guint64 bytes, gboolean pinned)
{
  GST_OBJECT_LOCK (self);
  self->frames++;
  self->bytes += bytes;
  if (pinned)
    self->pinned_copies++;
  GST_OBJECT_UNLOCK (self);
}

GstStructure *
gst_pinned_cuda_base_transform_new_stats_locked (GstPinnedCudaBaseTransform *
    self, const gchar * name)
{
  return gst_structure_new (name,
      "frames", G_TYPE_UINT64, self->frames,
      "bytes", G_TYPE_UINT64, self->bytes,
      "pinned-copies", G_TYPE_UINT64, self->pinned_copies,
      "registrations", G_TYPE_UINT64, self->registrations, NULL);
}

static void
gst_pinned_cuda_base_transform_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstPinnedCudaBaseTransform *self = GST_PINNED_CUDA_BASE_TRANSFORM (object);

  switch (prop_id) {
    case PROP_DEVICE_ID:
      GST_OBJECT_LOCK (self);
      self->device_id = g_value_get_int (value);
      GST_OBJECT_UNLOCK (self);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

static void
gst_pinned_cuda_base_transform_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstPinnedCudaBaseTransform *self = GST_PINNED_CUDA_BASE_TRANSFORM (object);

  switch (prop_id) {
    case PROP_DEVICE_ID:
      GST_OBJECT_LOCK (self);
      g_value_set_int (value, self->device_id);
      GST_OBJECT_UNLOCK (self);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

static GstPadTemplate *
make_template (const gchar * name, GstPadDirection direction,
    const gchar * feature)
{
  GstCaps *caps =
      gst_caps_from_string (GST_VIDEO_CAPS_MAKE (GST_PINNED_CUDA_FORMATS));
  GstPadTemplate *templ;

  gst_caps_set_features (caps, 0, gst_caps_features_new (feature, NULL));
  if (g_strcmp0 (feature, GST_CAPS_FEATURE_MEMORY_PINNEDFLOW_CUDA) == 0) {
    /* GStreamer's CUDA memory too (used where libgstcuda is present): first
     * on the upload's src pad, second on the download's sink pad */
    GstCaps *alt = gst_caps_copy (caps);

    gst_caps_set_features (alt, 0,
        gst_caps_features_new (GST_PINNED_CUDA_GST_CAPS_FEATURE, NULL));
    caps = direction == GST_PAD_SRC ? gst_caps_merge (alt, caps) :
        gst_caps_merge (caps, alt);
  }
  templ = gst_pad_template_new (name, direction, GST_PAD_ALWAYS, caps);
  gst_caps_unref (caps);
  return templ;
}

void gst_pinned_cuda_base_transform_class_set_features
    (GstPinnedCudaBaseTransformClass * klass, const gchar * sink_feature,
    const gchar * src_feature)
{
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);

  klass->sink_feature = sink_feature;
  klass->src_feature = src_feature;
  gst_element_class_add_pad_template (element_class,
      make_template ("sink", GST_PAD_SINK, sink_feature));
  gst_element_class_add_pad_template (element_class,
      make_template ("src", GST_PAD_SRC, src_feature));
}

static void
gst_pinned_cuda_base_transform_class_init (GstPinnedCudaBaseTransformClass *
    klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);

  element_class->set_context =
      GST_DEBUG_FUNCPTR (gst_pinned_cuda_base_transform_set_context);
  gobject_class->set_property = gst_pinned_cuda_base_transform_set_property;
  gobject_class->get_property = gst_pinned_cuda_base_transform_get_property;

  g_object_class_install_property (gobject_class, PROP_DEVICE_ID,
      g_param_spec_int ("device-id", "Device ID", "CUDA device ordinal", 0,
          G_MAXINT, DEFAULT_DEVICE_ID, G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));

  trans_class->passthrough_on_same_caps = FALSE;
  trans_class->start = GST_DEBUG_FUNCPTR (gst_pinned_cuda_base_transform_start);
  trans_class->stop = GST_DEBUG_FUNCPTR (gst_pinned_cuda_base_transform_stop);
  trans_class->transform_caps =
      GST_DEBUG_FUNCPTR (gst_pinned_cuda_base_transform_transform_caps);
  trans_class->set_caps =
      GST_DEBUG_FUNCPTR (gst_pinned_cuda_base_transform_set_caps);
  trans_class->query = GST_DEBUG_FUNCPTR (gst_pinned_cuda_base_transform_query);
}

static void
gst_pinned_cuda_base_transform_init (GstPinnedCudaBaseTransform * self)
{
  self->device_id = DEFAULT_DEVICE_ID;
}

/* ------------------------------------------------------------ device frames */

/* @f as the @n_planes planes of the PinnedflowCUDA memory @dmem, plane p
 * starting at row @row_offset[p] of its pitched allocation, and its event.
 */
void
gst_pinned_cuda_device_frame_set_pinned (GstPinnedCudaDeviceFrame * f,
    GstPinnedCudaMemory * dmem, const gsize * row_offset, guint n_planes)
{
  guint p;

  for (p = 0; p < n_planes; p++) {
    f->ptr[p] = dmem->dev_ptr + dmem->pitch * row_offset[p];
    f->pitch[p] = dmem->pitch;
  }
  f->event = dmem->event;
}

/* @f as the GstCudaMemory @mem mapped with @flags | GST_MAP_CUDA (the
 * device pointer), its planes at @meta's offsets and strides. Returns FALSE
 * when it cannot be mapped (nothing is then mapped; the caller posts the
 * error).
 */
gboolean
gst_pinned_cuda_device_frame_map_gst (GstPinnedCudaDeviceFrame * f,
    GstMemory * mem, const GstVideoMeta * meta, GstMapFlags flags)
{
  guint p;

  if (!gst_memory_map (mem, &f->map, flags | GST_PINNED_CUDA_GST_MAP_CUDA))
    return FALSE;
  f->mapped = mem;
  for (p = 0; p < meta->n_planes; p++) {
    f->ptr[p] = f->map.data + meta->offset[p];
    f->pitch[p] = meta->stride[p];
  }
  return TRUE;
}

/* Unmaps what gst_pinned_cuda_device_frame_map_gst() mapped, if anything;
 * may be called again.
 */
void
gst_pinned_cuda_device_frame_unmap (GstPinnedCudaDeviceFrame * f)
{
  if (f->mapped) {
    gst_memory_unmap (f->mapped, &f->map);
    f->mapped = NULL;
  }
}
