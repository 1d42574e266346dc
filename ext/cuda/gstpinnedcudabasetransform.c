/* GStreamer pinnedflow CUDA: base class of the upload and the download
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
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

static GstCaps *
gst_pinned_cuda_base_transform_transform_caps (GstBaseTransform * trans,
    GstPadDirection direction, GstCaps * caps, GstCaps * filter)
{
  GstPinnedCudaBaseTransformClass *klass =
      GST_PINNED_CUDA_BASE_TRANSFORM_GET_CLASS (trans);

  return gst_pinned_cuda_transform_caps (direction, caps, filter,
      klass->sink_feature, klass->src_feature);
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
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);

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
}

static void
gst_pinned_cuda_base_transform_init (GstPinnedCudaBaseTransform * self)
{
  self->device_id = DEFAULT_DEVICE_ID;
}
