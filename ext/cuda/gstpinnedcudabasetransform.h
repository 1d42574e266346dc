/* GStreamer pinnedflow CUDA: base class of the upload and the download
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef __GST_PINNED_CUDA_BASE_TRANSFORM_H__
#define __GST_PINNED_CUDA_BASE_TRANSFORM_H__

#include <gst/gst.h>
#include <gst/base/gstbasetransform.h>
#include <gst/video/video.h>
#include <gst/pinnedcuda/gstpinnedcudamemory.h>
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
 * What the upload and the download share. Owns the `device-id` property
 * and the element's #GstPinnedCudaContext: opened (runtime, device,
 * non-blocking stream) before start_cuda() when the element starts, closed
 * after stop_cuda() when it stops. Parses the negotiated caps (set_caps) into
 * in_info/out_info and the layout of the frame on the system-memory side.
 *
 * The device side speaks memory:PinnedflowCUDA and, where libgstcuda and a
 * driver are present (gstpinnedcudagst-private.h), memory:CUDAMemory;
 * the base class answers and sets the gst.cuda.context
 * (GstElement::set_context, the context query) so that the pipeline
 * shares one CUDA context.
 *
 * Threads: start/stop and set_caps run on the streaming thread or the
 * state-change thread, never at once (GstBaseTransform serialises them);
 * in_info, out_info and host_layout are read on the streaming thread only.
 */
struct _GstPinnedCudaBaseTransform
{
  GstBaseTransform parent;

  /* valid from start_cuda() to the end of stop_cuda() */
  GstPinnedCudaContext cuda;

  /* from the last successful set_caps (streaming thread) */
  GstVideoInfo in_info;
  GstVideoInfo out_info;
  /* the frame in system memory: in_info's for the upload (sink side),
   * out_info's for the download (src side) */
  GstPinnedCudaLayout host_layout;
  /* the device side negotiated memory:CUDAMemory (GstCudaMemory of the
   * shared GstCudaContext, cuda.gst_ctx) rather than memory:PinnedflowCUDA */
  gboolean cuda_memory;

  /* stats both elements report (object lock), zeroed when the element
   * starts; counted by the helpers below */
  guint64 frames, bytes, pinned_copies;
  guint64 registrations, registrations_readonly, registration_failures;

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
  /* Optional: after set_caps stored the new infos and layout. */
  gboolean (*caps_changed) (GstPinnedCudaBaseTransform * self);
};

GType gst_pinned_cuda_base_transform_get_type (void);

/* In a subclass's class_init: the pads' caps features, and the pad
 * templates (the formats of gstpinnedcudaformats.h with those features;
 * the memory:PinnedflowCUDA side also with memory:CUDAMemory). */
void gst_pinned_cuda_base_transform_class_set_features
    (GstPinnedCudaBaseTransformClass * klass, const gchar * sink_feature,
    const gchar * src_feature);

/* In decide_allocation: the query's caps (FALSE when it has none) and the
 * min-buffers of downstream's first pool (0 when none). */
gboolean gst_pinned_cuda_base_transform_parse_allocation (GstQuery * query,
    GstCaps ** caps, guint * down_min);

/* In decide/propose_allocation: @pool (consumed) as the query's first pool,
 * replacing the one there or added. */
void gst_pinned_cuda_base_transform_put_pool (GstQuery * query,
    GstBufferPool * pool, guint size, guint min, guint max);

/* Counts a registration (the segment registered, read-only, or refused)
 * when @created says this call made it. */
void gst_pinned_cuda_base_transform_count_registration
    (GstPinnedCudaBaseTransform * self,
    const GstPinnedCudaRegistration * reg, gboolean created);

/* The registration of the segment behind @mem (made once per process and
 * counted), or NULL when @mem is not pinned memory. @created: whether this
 * call made it (may be NULL). */
const GstPinnedCudaRegistration *gst_pinned_cuda_base_transform_register_memory
    (GstPinnedCudaBaseTransform * self, GstMemory * mem, gboolean * created);

/* One frame of @bytes copied, by DMA from/into registered pages (@pinned)
 * or not. */
void gst_pinned_cuda_base_transform_count_frame
    (GstPinnedCudaBaseTransform * self, guint64 bytes, gboolean pinned);

/* With the object lock held: a new structure named @name with the shared
 * stats (frames, bytes, pinned-copies, registrations); the subclass adds
 * its own fields. */
GstStructure *gst_pinned_cuda_base_transform_new_stats_locked
    (GstPinnedCudaBaseTransform * self, const gchar * name);

/* The planes of one frame in device memory, where the download copies from
 * and the upload copies to: a PinnedflowCUDA memory's pitched allocation
 * and its event, or a GstCudaMemory mapped for the device with the planes
 * of its buffer's GstVideoMeta. */
typedef struct
{
  guint8 *ptr[GST_VIDEO_MAX_PLANES];
  gsize pitch[GST_VIDEO_MAX_PLANES];
  GstPinnedCudaEvent event;     /* PinnedflowCUDA memory's event, or NULL */
  GstMemory *mapped;            /* a GstCudaMemory mapped GST_MAP_CUDA */
  GstMapInfo map;
} GstPinnedCudaDeviceFrame;

void gst_pinned_cuda_device_frame_set_pinned (GstPinnedCudaDeviceFrame * f,
    GstPinnedCudaMemory * dmem, const gsize * row_offset, guint n_planes);

gboolean gst_pinned_cuda_device_frame_map_gst (GstPinnedCudaDeviceFrame * f,
    GstMemory * mem, const GstVideoMeta * meta, GstMapFlags flags);

void gst_pinned_cuda_device_frame_unmap (GstPinnedCudaDeviceFrame * f);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GstPinnedCudaBaseTransform, gst_object_unref)

G_END_DECLS
#endif /* __GST_PINNED_CUDA_BASE_TRANSFORM_H__ */
