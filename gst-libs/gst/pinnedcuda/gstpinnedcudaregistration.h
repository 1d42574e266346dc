/* GStreamer pinnedflow CUDA: host registration of segments, once each
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef __GST_PINNED_CUDA_REGISTRATION_H__
#define __GST_PINNED_CUDA_REGISTRATION_H__

#include <glib.h>
#include <gst/pinnedcuda/pinnedcuda-prelude.h>
#include <pinnedflow/pf-segment.h>
#include <gst/pinnedcuda/gstpinnedcudaloader.h>

G_BEGIN_DECLS

/**
 * GstPinnedCudaRegistration:
 *
 * The outcome of registering one segment's mapping in this process, cached
 * on the segment (pf_segment_attach_once()) by libpinnedflow: this is
 * pf_cuda_registration (pinnedflow/pf-cuda-registration.h), of which this
 * API is a façade, so the elements and pf_uploader share one registration
 * per segment and process. Attempted once whatever the
 * outcome, so a segment that cannot be registered is not retried per frame.
 * cudaHostUnregister() runs in the attachment's destroy notify, when the
 * segment dies, before it is unmapped.
 *
 * Since: 0.1
 */
typedef struct
{
  const GstPinnedCudaRuntime *rt;
  gint device_id;
  void *base;
  gsize size;
  gboolean registered;          /* usable for DMA */
  gboolean readonly;            /* registered with cudaHostRegisterReadOnly */
  GstPinnedCudaError error;            /* cudaHostRegister's error when not */
  const gchar *reason;          /* why not registered, or NULL */
} GstPinnedCudaRegistration;

/**
 * gst_pinned_cuda_segment_register:
 * @created: (out) (optional): TRUE when this call did the registration
 *
 * Returns the registration of @seg (never NULL). Read-only mappings
 * (PF_SEGMENT_STATE_READONLY) are registered with cudaHostRegisterReadOnly
 * where cudaDevAttrHostRegisterReadOnlySupported is set on @device_id, and
 * not at all where it is not (the caller stages those copies).
 *
 * Since: 0.1
 */
GST_PINNEDCUDA_API const GstPinnedCudaRegistration *gst_pinned_cuda_segment_register (const GstPinnedCudaRuntime * rt,
    gint device_id, pf_segment * seg, gboolean * created);

/**
 * gst_pinned_cuda_segment_register_in:
 * @owner: (nullable): what keeps @cu_ctx alive (a GstCudaContext): the
 *   registration holds a reference on it until the segment dies
 * @cu_ctx: (nullable): the CUcontext to register in; NULL: as
 *   gst_pinned_cuda_segment_register() (the device's primary context,
 *   retained)
 *
 * gst_pinned_cuda_segment_register() made in @cu_ctx (pushed) when this
 * call makes the registration, which then keeps @owner until the segment
 * dies, so the context outlives the registration however long the segment
 * outlives the pipeline (pinnedflow/pf-cuda-registration.h).
 *
 * Since: 0.1
 */
GST_PINNEDCUDA_API const GstPinnedCudaRegistration *gst_pinned_cuda_segment_register_in (const GstPinnedCudaRuntime * rt,
    gint device_id, pf_segment * seg, GstObject * owner, gpointer cu_ctx,
    gboolean * created);

/* TRUE when [ptr, ptr + len) lies inside a usable registration of @seg.
 * Since: 0.1
 */
GST_PINNEDCUDA_API gboolean gst_pinned_cuda_registration_covers (const GstPinnedCudaRegistration * reg,
    const GstPinnedCudaRuntime * rt, const void *ptr, gsize len);

G_END_DECLS
#endif /* __GST_PINNED_CUDA_REGISTRATION_H__ */
