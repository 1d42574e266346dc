/* GStreamer pinnedflow CUDA: base class of the upload and the download
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef __GST_PINNED_CUDA_BASE_TRANSFORM_H__
#define __GST_PINNED_CUDA_BASE_TRANSFORM_H__

#include <gst/gst.h>
#include <gst/base/gstbasetransform.h>
#include "gstpinnedcudacontext.h"

G_BEGIN_DECLS

#define GST_TYPE_PINNED_CUDA_BASE_TRANSFORM \
  (gst_pinned_cuda_base_transform_get_type ())
#define GST_PINNED_CUDA_BASE_TRANSFORM(obj) \
  (G_TYPE_CHECK_INSTANCE_CAST ((obj), GST_TYPE_PINNED_CUDA_BASE_TRANSFORM, \
      GstPinnedCudaBaseTransform))
#define GST_PINNED_CUDA_BASE_TRANSFORM_GET_CLASS(obj) \
  (G_TYPE_INSTANCE_GET_CLASS ((obj), GST_TYPE_PINNED_CUDA_BASE_TRANSFORM, \
      GstPinnedCudaBaseTransformClass))

typedef struct _GstPinnedCudaBaseTransform GstPinnedCudaBaseTransform;
typedef struct _GstPinnedCudaBaseTransformClass
    GstPinnedCudaBaseTransformClass;

/**
 * GstPinnedCudaBaseTransform:
 *
 * Owns the `device-id` property and the element's #GstPinnedCudaContext:
 * opened (runtime, device, non-blocking stream) before start_cuda() when
 * the element starts, closed after stop_cuda() when it stops.
 */
struct _GstPinnedCudaBaseTransform
{
  GstBaseTransform parent;

  /* valid from start_cuda() to the end of stop_cuda() */
  GstPinnedCudaContext cuda;

  /*< private > */
  gint device_id;               /* property (object lock) */
};

struct _GstPinnedCudaBaseTransformClass
{
  GstBaseTransformClass parent_class;

  /* caps features of the sink and src pads (transform_caps swaps them);
   * set with gst_pinned_cuda_base_transform_class_set_features() */
  const gchar *sink_feature;
  const gchar *src_feature;

  /* After the context is open. On FALSE (error posted) stop_cuda() runs,
   * so it must cope with what start_cuda() left half done. */
  gboolean (*start_cuda) (GstPinnedCudaBaseTransform * self);
  /* Before the stream is closed; may run more than once. */
  void (*stop_cuda) (GstPinnedCudaBaseTransform * self);
};

GType gst_pinned_cuda_base_transform_get_type (void);

/* In a subclass's class_init: the pads' caps features, and the pad
 * templates (the formats of gstpinnedcudaformats.h with those features). */
void gst_pinned_cuda_base_transform_class_set_features
    (GstPinnedCudaBaseTransformClass * klass, const gchar * sink_feature,
    const gchar * src_feature);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (GstPinnedCudaBaseTransform, gst_object_unref)

G_END_DECLS
#endif /* __GST_PINNED_CUDA_BASE_TRANSFORM_H__ */
