/* GStreamer pinnedflow CUDA: what both elements share
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One home for the CUDA side of pinnedcudaupload and pinnedcudadownload:
 * opening the runtime and the device with a non-blocking stream when the
 * element starts, events, element errors carrying the CUDA error, the
 * caps-feature swap, the pinned host pool, and registering the segment
 * behind a memory (counted in the element's stats).
 *
 * Where GStreamer's CUDA library (libgstcuda, the loader in
 * gst-libs/gst/pinnedcuda/gstpinnedcudagst-private.h) and a CUDA driver
 * are present, the context also holds the pipeline's
 * GstCudaContext (gst.cuda.context, shared with nvcodec's elements), and
 * every CUDA call between _enter() and _leave() runs with its CUcontext
 * pushed: cudart uses the context current to the thread, so the stream,
 * the events and the copies live in the one context the pipeline shares.
 *
 * Which context (docs/cuda.md, "The CUDA context"): the one set on the
 * element or a neighbour's (nvcodec's, found by the gst.cuda.context query
 * or need-context), else one made here around the device's primary context
 * (cuDevicePrimaryCtxRetain + gst_cuda_context_new_wrapped, announced with
 * have-context): one context per device per process, the one cudart uses.
 * Opening makes no context of its own (no cudaSetDevice before the
 * GstCudaContext is bound). Device frames (memory:PinnedflowCUDA) and
 * their events are made in it (gst_pinned_cuda_context_new_device_pool),
 * host registrations too, PORTABLE, each holding a reference on the
 * GstCudaContext until its segment dies.
 */
#ifndef __GST_PINNED_CUDA_CONTEXT_H__
#define __GST_PINNED_CUDA_CONTEXT_H__

#include <gst/gst.h>
#include <gst/pinnedcuda/gstpinnedcudaloader.h>
#include <gst/pinnedcuda/gstpinnedcudaregistration.h>
#include <gst/pinnedcuda/gstpinnedcudagst-private.h>

G_BEGIN_DECLS

typedef struct
{
  GstElement *element;          /* errors are posted from it (no ref) */
  const GstPinnedCudaRuntime *rt;      /* NULL until opened */
  gint device_id;
  GstPinnedCudaStream stream;          /* cudaStreamNonBlocking */

  /* libgstcuda, or NULL; the shared GstCudaContext (a ref), or NULL: set
   * by gst_pinned_cuda_context_set_gst_context() before open, or found or
   * made by open (gst_cuda_ensure_element_context), dropped by close */
  const GstPinnedCudaGst *gst;
  gpointer gst_ctx;
} GstPinnedCudaContext;

/* Loads the runtime, makes @device_id current and creates the stream
 * (in the shared GstCudaContext where there is one: see above).
 * On failure posts an element error saying what is missing (RESOURCE
 * NOT_FOUND without runtime or device, FAILED for a CUDA call) and leaves
 * nothing behind. */
gboolean gst_pinned_cuda_context_open (GstPinnedCudaContext * ctx,
    GstElement * element, gint device_id);

/* Waits for the stream, destroys it, drops the GstCudaContext. Safe on a
 * context never opened. */
void gst_pinned_cuda_context_close (GstPinnedCudaContext * ctx);

/* Makes the context's device current on the calling thread (the streaming
 * thread is not the one that opened it): pushes the GstCudaContext's
 * CUcontext where there is one, else cudaSetDevice as needed. Returns what
 * _leave() needs. */
int gst_pinned_cuda_context_enter (GstPinnedCudaContext * ctx);
void gst_pinned_cuda_context_leave (GstPinnedCudaContext * ctx, int previous);

/* A cudaEventDisableTiming event, or NULL after posting the error. */
GstPinnedCudaEvent gst_pinned_cuda_context_new_event (GstPinnedCudaContext * ctx);
void gst_pinned_cuda_context_free_event (GstPinnedCudaContext * ctx,
    GstPinnedCudaEvent event);

/* Posts GST_RESOURCE_ERROR_FAILED "CUDA error in @call: cudaErrorX (N):
 * string" from the element, located at the caller. */
#define GST_PINNED_CUDA_CONTEXT_ERROR(ctx, call, err)                   \
  gst_pinned_cuda_context_post_error ((ctx), (call), (err), __FILE__,  \
      GST_FUNCTION, __LINE__)
void gst_pinned_cuda_context_post_error (GstPinnedCudaContext * ctx,
    const gchar * call, GstPinnedCudaError err, const gchar * file,
    const gchar * function, gint line);

/* The registration of the segment behind @mem (registered on first use,
 * once per segment per process), or NULL when @mem is not in a pinnedflow
 * segment. *@created is TRUE when this call made the attempt. */
const GstPinnedCudaRegistration *gst_pinned_cuda_context_register_memory
    (GstPinnedCudaContext * ctx, GstMemory * mem, gboolean * created);

/* GstElement::set_context: takes a gst.cuda.context for @device_id
 * (before the element starts; ignored once opened). */
void gst_pinned_cuda_context_set_gst_context (GstPinnedCudaContext * ctx,
    GstElement * element, GstContext * context, gint device_id);

/* Answers a GST_QUERY_CONTEXT for gst.cuda.context with the shared
 * context. */
gboolean gst_pinned_cuda_context_handle_query (GstPinnedCudaContext * ctx,
    GstElement * element, GstQuery * query);

/* transform_caps of an element taking @sink_feature and giving
 * @src_feature (every other field kept). The side whose feature is
 * memory:PinnedflowCUDA also gets memory:CUDAMemory when @cuda_memory (after
 * PinnedflowCUDA on the sink side, before it on the src side: the upload
 * prefers GStreamer's memory). */
GstCaps *gst_pinned_cuda_transform_caps (GstPadDirection direction,
    GstCaps * caps, GstCaps * filter, const gchar * sink_feature,
    const gchar * src_feature, gboolean cuda_memory);

/* A GstPinnedCudaBufferPool (memory:PinnedflowCUDA) whose frames and
 * events are made in the shared context, when there is one. */
GstBufferPool *gst_pinned_cuda_context_new_device_pool (GstPinnedCudaContext * ctx);

/* A configured (not active) GstPinnedBufferPool of mlock'ed segments, or
 * NULL if it refused the configuration. */
GstBufferPool *gst_pinned_cuda_host_pool_new (GstCaps * caps, guint size,
    guint min, guint max, gboolean video_meta);

G_END_DECLS
#endif /* __GST_PINNED_CUDA_CONTEXT_H__ */
