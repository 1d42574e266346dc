/* GStreamer pinnedflow CUDA: buffers as DLPack tensors
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * See gstpinnedcudatensor.h. A tensor made here owns one pf_hold
 * (libpinnedflow's borrow count, pf-hold.h) whose data is a TensorHold: a
 * reference on the buffer and, for mapped memory, a reference on the
 * memory and its map. pf_dlpack_export() builds the DLPack struct and its
 * deleter (C, any thread, exactly once); the last reference unmaps and
 * drops the buffer.
 *
 * Device memory is never mapped for the CPU here: memory:PinnedflowCUDA
 * gives its planes (gst_pinned_cuda_memory_get_plane), memory:CUDAMemory
 * its device pointer through a GST_MAP_CUDA map held by the tensor.
 *
 * libgstcuda (memory:CUDAMemory) is reached through
 * gstpinnedcudatensorgstcuda.c and its loader, gstpinnedcudagst.c.
 *
 * Threads: no state of its own.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedcudatensor-private.h"

#include <gst/pinnedcuda/gstpinnedcuda.h>
#include <gst/pinnedcuda/gstpinnedcudamemory.h>
#include <pinnedflow/pf-dlpack.h>
#include <pinnedflow/pf-hold.h>

#include <stddef.h>
#include <string.h>

#if defined(__has_include)
#if __has_include(<dlpack/dlpack.h>)
/* Debian's libdlpack-dev is there: our declarations must match it. */
#include <dlpack/dlpack.h>
G_STATIC_ASSERT (sizeof (DLManagedTensor) == sizeof (GstPinnedDLManagedTensor));
G_STATIC_ASSERT (offsetof (DLManagedTensor, deleter) ==
    offsetof (GstPinnedDLManagedTensor, deleter));
G_STATIC_ASSERT (offsetof (DLTensor, byte_offset) ==
    offsetof (GstPinnedDLTensor, byte_offset));
G_STATIC_ASSERT (offsetof (DLTensor, strides) ==
    offsetof (GstPinnedDLTensor, strides));
G_STATIC_ASSERT (offsetof (DLTensor, dtype) ==
    offsetof (GstPinnedDLTensor, dtype));
G_STATIC_ASSERT ((int) kDLCPU == GST_PINNED_DL_CPU &&
    (int) kDLCUDA == GST_PINNED_DL_CUDA &&
    (int) kDLCUDAHost == GST_PINNED_DL_CUDA_HOST && (int) kDLUInt ==
    GST_PINNED_DL_UINT);
#endif
#endif

GST_DEBUG_CATEGORY_STATIC (gst_pinned_cuda_tensor_debug);
#define GST_CAT_DEFAULT gst_pinned_cuda_tensor_debug

/* *INDENT-OFF* */
G_DEFINE_QUARK (gst-pinned-cuda-tensor-error-quark, gst_pinned_cuda_tensor_error);
/* *INDENT-ON* */

static void
debug_init (void)
{
  static gsize once = 0;

  if (g_once_init_enter (&once)) {
    GST_DEBUG_CATEGORY_INIT (gst_pinned_cuda_tensor_debug, "pinnedcudatensor",
        0, "pinnedflow: buffers as DLPack tensors");
    g_once_init_leave (&once, 1);
  }
}

/* ------------------------------------------------------------ shapes */

gboolean
gst_pinned_tensor_plane_shape (const GstVideoInfo * info, guint plane,
    GstPinnedTensorPlane * tp, GError ** error)
{
  const GstVideoFormatInfo *f = info->finfo;
  guint c, first = G_MAXUINT, n = 0, depth = 0;
  gboolean uniform = TRUE;

  memset (tp, 0, sizeof (*tp));
  if (plane >= GST_VIDEO_INFO_N_PLANES (info)) {
    g_set_error (error, GST_PINNED_CUDA_TENSOR_ERROR,
        GST_PINNED_CUDA_TENSOR_ERROR_LAYOUT, "%s has %u planes, not %u",
        GST_VIDEO_INFO_NAME (info), GST_VIDEO_INFO_N_PLANES (info), plane + 1);
    return FALSE;
  }
  if (GST_VIDEO_FORMAT_INFO_IS_COMPLEX (f) || GST_VIDEO_FORMAT_INFO_HAS_PALETTE
      (f) || GST_VIDEO_FORMAT_INFO_IS_TILED (f))
    goto unsupported;
  for (c = 0; c < GST_VIDEO_INFO_N_COMPONENTS (info); c++) {
    if (GST_VIDEO_FORMAT_INFO_PLANE (f, c) != plane)
      continue;
    if (GST_VIDEO_FORMAT_INFO_PSTRIDE (f, c) <= 0)
      goto unsupported;
    depth = MAX (depth, GST_VIDEO_FORMAT_INFO_DEPTH (f, c));
    if (first == G_MAXUINT)
      first = c;
    else if (GST_VIDEO_FORMAT_INFO_PSTRIDE (f, c) !=
        GST_VIDEO_FORMAT_INFO_PSTRIDE (f, first) ||
        GST_VIDEO_INFO_COMP_WIDTH (info, c) !=
        GST_VIDEO_INFO_COMP_WIDTH (info, first))
      uniform = FALSE;
    n++;
  }
  if (n == 0)
    goto unsupported;
  tp->row_bytes = (gsize) GST_VIDEO_INFO_COMP_WIDTH (info, first) *
      GST_VIDEO_INFO_COMP_PSTRIDE (info, first);
  /* 16-bit samples in native (little-endian) order are uint16 */
  tp->elem = depth > 8 && GST_VIDEO_FORMAT_INFO_IS_LE (f) &&
      G_BYTE_ORDER == G_LITTLE_ENDIAN &&
      GST_VIDEO_FORMAT_INFO_PSTRIDE (f, first) % 2 == 0 ? 2 : 1;
  tp->shape[0] = GST_VIDEO_INFO_COMP_HEIGHT (info, first);
  if (uniform) {
    tp->shape[1] = GST_VIDEO_INFO_COMP_WIDTH (info, first);
    tp->shape[2] = GST_VIDEO_FORMAT_INFO_PSTRIDE (f, first) / tp->elem;
    tp->ndim = tp->shape[2] == 1 ? 2 : 3;
  } else {
    /* packed 4:2:2 (YUY2, UYVY): whole rows of bytes */
    tp->elem = 1;
    tp->shape[1] = tp->row_bytes;
    tp->ndim = 2;
  }
  return TRUE;

unsupported:
  g_set_error (error, GST_PINNED_CUDA_TENSOR_ERROR,
      GST_PINNED_CUDA_TENSOR_ERROR_CAPS, "format %s is not rows of whole "
      "pixels (tiled, palette or complex packing): no tensor view",
      GST_VIDEO_INFO_NAME (info));
  return FALSE;
}

static gboolean
caps_info (GstCaps * caps, GstVideoInfo * info, GError ** error)
{
  if (caps == NULL || !gst_caps_is_fixed (caps) ||
      !gst_video_info_from_caps (info, caps)) {
    gchar *s = caps ? gst_caps_to_string (caps) : g_strdup ("(none)");

    g_set_error (error, GST_PINNED_CUDA_TENSOR_ERROR,
        GST_PINNED_CUDA_TENSOR_ERROR_CAPS, "caps are not fixed raw video: %s",
        s);
    g_free (s);
    return FALSE;
  }
  return TRUE;
}

guint
gst_pinned_cuda_tensor_n_planes (GstCaps * caps)
{
  GstVideoInfo info;

  if (caps == NULL || !caps_info (caps, &info, NULL))
    return 0;
  return GST_VIDEO_INFO_N_PLANES (&info);
}

/* ------------------------------------------------------------ export */

typedef struct
{
  GstBuffer *buffer;
  GstMemory *mem;               /* mapped (a reference), or NULL */
  GstMapInfo map;
} TensorHold;

static void
tensor_hold_release (void *data)
{
  TensorHold *h = data;

  if (h->mem) {
    gst_memory_unmap (h->mem, &h->map);
    gst_memory_unref (h->mem);
  }
  gst_buffer_unref (h->buffer);
  g_free (h);
}

/* The consumer's @stream waits on the GPU for @event (recorded in the
 * context @cu_ctx, NULL: @device's primary one). */
static gboolean
wait_event (const GstPinnedCudaRuntime * rt, gint device, gpointer cu_ctx,
    GstPinnedCudaEvent event, gintptr stream, GError ** error)
{
  GstPinnedCudaError err;
  gchar *desc;
  int prev;

  if (stream == GST_PINNED_CUDA_TENSOR_STREAM_NONE || event == NULL)
    return TRUE;
  prev = gst_pinned_cuda_context_push_enter (rt, device, cu_ctx);
  err = rt->StreamWaitEvent (GST_PINNED_TENSOR_STREAM (stream), event, 0);
  gst_pinned_cuda_device_leave (rt, device, prev);
  if (err == GST_PINNED_CUDA_SUCCESS)
    return TRUE;
  gst_pinned_cuda_take_last_error (rt);
  desc = gst_pinned_cuda_error_describe (rt, err);
  g_set_error (error, GST_PINNED_CUDA_TENSOR_ERROR,
      GST_PINNED_CUDA_TENSOR_ERROR_CUDA, "cudaStreamWaitEvent on the "
      "consumer's stream %#" G_GINTPTR_MODIFIER "x failed: %s", stream, desc);
  g_free (desc);
  return FALSE;
}

/* A GstCudaMemory with NEED_SYNC: an event recorded on the memory's stream
 * (or its context's legacy stream), in its context, and @stream made to
 * wait on it. */
static gboolean
wait_gstcuda (const GstPinnedCudaGst * t, GstMemory * mem,
    gpointer ctx, gint device, gintptr stream, GError ** error)
{
  const GstPinnedCudaRuntime *rt;
  GstPinnedCudaEvent event = NULL;
  GstPinnedCudaError err;
  gpointer gst_stream, handle = NULL, cu_ctx = NULL;
  const gchar *call = "cudaEventCreateWithFlags";
  gchar *desc;

  if (stream == GST_PINNED_CUDA_TENSOR_STREAM_NONE || !t->memory_get_stream ||
      !GST_MEMORY_FLAG_IS_SET (mem, GST_PINNED_CUDA_GST_MEMORY_NEED_SYNC))
    return TRUE;
  if ((rt = gst_pinned_cuda_runtime_get (error)) == NULL)
    return FALSE;
  gst_stream = t->memory_get_stream (mem);
  if (gst_stream)
    handle = t->stream_get_handle (gst_stream);
  if (!t->context_push (ctx)) {
    g_set_error (error, GST_PINNED_CUDA_TENSOR_ERROR,
        GST_PINNED_CUDA_TENSOR_ERROR_CUDA, "gst_cuda_context_push failed");
    return FALSE;
  }
  err = rt->EventCreateWithFlags (&event, GST_PINNED_CUDA_EVENT_DISABLE_TIMING);
  if (err == GST_PINNED_CUDA_SUCCESS) {
    call = "cudaEventRecord on the memory's stream";
    err = rt->EventRecord (event, handle);
  }
  if (err == GST_PINNED_CUDA_SUCCESS) {
    call = "cudaStreamWaitEvent on the consumer's stream";
    err = rt->StreamWaitEvent (GST_PINNED_TENSOR_STREAM (stream), event, 0);
  }
  /* freed once the wait is done, by the runtime */
  if (event)
    rt->EventDestroy (event);
  t->context_pop (&cu_ctx);
  (void) device;
  if (err == GST_PINNED_CUDA_SUCCESS)
    return TRUE;
  gst_pinned_cuda_take_last_error (rt);
  desc = gst_pinned_cuda_error_describe (rt, err);
  g_set_error (error, GST_PINNED_CUDA_TENSOR_ERROR,
      GST_PINNED_CUDA_TENSOR_ERROR_CUDA, "%s failed: %s", call, desc);
  g_free (desc);
  return FALSE;
}

static gboolean
plane_place (GstBuffer * buffer, const GstVideoInfo * info, guint plane,
    const GstPinnedTensorPlane * tp, gsize * offset, gint * stride,
    GError ** error)
{
  GstVideoMeta *meta = gst_buffer_get_video_meta (buffer);
  gsize size = gst_buffer_get_size (buffer), need;

  if (meta && meta->n_planes == GST_VIDEO_INFO_N_PLANES (info)) {
    *offset = meta->offset[plane];
    *stride = meta->stride[plane];
  } else {
    *offset = GST_VIDEO_INFO_PLANE_OFFSET (info, plane);
    *stride = GST_VIDEO_INFO_PLANE_STRIDE (info, plane);
  }
  if (*stride <= 0 || (gsize) * stride < tp->row_bytes ||
      *stride % tp->elem != 0) {
    g_set_error (error, GST_PINNED_CUDA_TENSOR_ERROR,
        GST_PINNED_CUDA_TENSOR_ERROR_LAYOUT, "plane %u: row stride %d does "
        "not hold a row of %" G_GSIZE_FORMAT " bytes in %u-byte elements",
        plane, *stride, tp->row_bytes, tp->elem);
    return FALSE;
  }
  need = *offset + (gsize) * stride * (tp->shape[0] - 1) + tp->row_bytes;
  if (tp->shape[0] > 0 && need > size) {
    g_set_error (error, GST_PINNED_CUDA_TENSOR_ERROR,
        GST_PINNED_CUDA_TENSOR_ERROR_LAYOUT, "plane %u ends at byte %"
        G_GSIZE_FORMAT ", after the buffer's %" G_GSIZE_FORMAT, plane,
        need, size);
    return FALSE;
  }
  return TRUE;
}

static void
fill_desc (pf_dlpack_desc * d, const GstPinnedTensorPlane * tp, gint stride)
{
  guint i;

  d->ndim = tp->ndim;
  d->dtype_code = PF_DLPACK_UINT;
  d->dtype_bits = tp->elem * 8;
  d->dtype_lanes = 1;
  for (i = 0; i < tp->ndim; i++)
    d->shape[i] = tp->shape[i];
  d->strides[0] = stride / tp->elem;
  if (tp->ndim == 3) {
    d->strides[1] = tp->shape[2];
    d->strides[2] = 1;
  } else {
    d->strides[1] = 1;
  }
}

static gboolean
desc_host (GstBuffer * buffer, gsize offset, gsize len, TensorHold * h,
    pf_dlpack_desc * d, GError ** error)
{
  guint idx, n = 0;
  gsize skip = 0;

  if (!gst_buffer_find_memory (buffer, offset, MAX (len, 1), &idx, &n, &skip)
      || n != 1) {
    g_set_error (error, GST_PINNED_CUDA_TENSOR_ERROR,
        GST_PINNED_CUDA_TENSOR_ERROR_LAYOUT, "the plane at byte %"
        G_GSIZE_FORMAT " spans %u memories: not one tensor", offset, n);
    return FALSE;
  }
  h->mem = gst_buffer_get_memory (buffer, idx);
  if (!gst_memory_map (h->mem, &h->map, GST_MAP_READ)) {
    g_set_error (error, GST_PINNED_CUDA_TENSOR_ERROR,
        GST_PINNED_CUDA_TENSOR_ERROR_MEMORY, "memory of type %s is neither "
        "host-mappable nor CUDA memory", h->mem->allocator ?
        h->mem->allocator->mem_type : "(none)");
    gst_memory_unref (h->mem);
    h->mem = NULL;
    return FALSE;
  }
  d->data = h->map.data + skip;
  d->device_type = PF_DLPACK_CPU;
  d->device_id = 0;
  return TRUE;
}

static gboolean
desc_gstcuda (const GstPinnedCudaGst * t, GstBuffer * buffer,
    gsize offset, gintptr stream, TensorHold * h, pf_dlpack_desc * d,
    GError ** error)
{
  GstMemory *mem = gst_buffer_peek_memory (buffer, 0);
  gpointer ctx = gst_pinned_tensor_gstcuda_memory_context (mem);
  gint device = gst_pinned_cuda_gst_context_device (ctx);

  if (ctx == NULL || device < 0 || gst_buffer_n_memory (buffer) != 1) {
    g_set_error (error, GST_PINNED_CUDA_TENSOR_ERROR,
        GST_PINNED_CUDA_TENSOR_ERROR_MEMORY, "memory:CUDAMemory buffer with "
        "%u memories or no GstCudaContext", gst_buffer_n_memory (buffer));
    return FALSE;
  }
  if (!wait_gstcuda (t, mem, ctx, device, stream, error))
    return FALSE;
  h->mem = gst_memory_ref (mem);
  if (!gst_memory_map (mem, &h->map,
          GST_MAP_READ | GST_PINNED_CUDA_GST_MAP_CUDA)) {
    g_set_error (error, GST_PINNED_CUDA_TENSOR_ERROR,
        GST_PINNED_CUDA_TENSOR_ERROR_CUDA,
        "GST_MAP_CUDA map of a GstCudaMemory failed");
    gst_memory_unref (h->mem);
    h->mem = NULL;
    return FALSE;
  }
  d->data = h->map.data + offset;
  d->device_type = PF_DLPACK_CUDA;
  d->device_id = device;
  return TRUE;
}

static gboolean
desc_pinned_cuda (GstMemory * mem, guint plane, gintptr stream,
    const GstPinnedTensorPlane * tp, pf_dlpack_desc * d, gint * stride,
    GError ** error)
{
  GstPinnedCudaMemory *pm = (GstPinnedCudaMemory *) mem;
  gpointer ptr = NULL;
  gsize pitch = 0, width_bytes = 0, rows = 0;

  if (!gst_pinned_cuda_memory_get_plane (mem, plane, &ptr, &pitch,
          &width_bytes, &rows) || width_bytes != tp->row_bytes ||
      rows != (gsize) tp->shape[0] || pitch % tp->elem != 0) {
    g_set_error (error, GST_PINNED_CUDA_TENSOR_ERROR,
        GST_PINNED_CUDA_TENSOR_ERROR_LAYOUT, "memory:PinnedflowCUDA plane %u "
        "(%" G_GSIZE_FORMAT " rows of %" G_GSIZE_FORMAT " bytes) does not "
        "match the caps", plane, rows, width_bytes);
    return FALSE;
  }
  if (!wait_event (pm->rt, pm->device_id, pm->cu_ctx,
          gst_pinned_cuda_memory_get_event (mem), stream, error))
    return FALSE;
  *stride = (gint) pitch;
  d->data = ptr;
  d->device_type = PF_DLPACK_CUDA;
  d->device_id = pm->device_id;
  return TRUE;
}

gpointer
gst_pinned_cuda_tensor_from_buffer (GstBuffer * buffer, GstCaps * caps,
    guint plane, gintptr stream, guint flags, GError ** error)
{
  const GstPinnedCudaGst *t;
  GstPinnedTensorPlane tp;
  GstVideoInfo info;
  GstMemory *first;
  TensorHold *h = NULL;
  pf_dlpack_desc d;
  pf_hold *hold = NULL;
  void *out = NULL;
  gsize offset;
  gint stride;
  gboolean ok;
  int res;

  debug_init ();
  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  if (stream == 0 || stream < -1) {
    g_set_error (error, GST_PINNED_CUDA_TENSOR_ERROR,
        GST_PINNED_CUDA_TENSOR_ERROR_CUDA, "stream %" G_GINTPTR_FORMAT " is "
        "not a DLPack stream (-1 none, 1 legacy, 2 per-thread, or a handle)",
        stream);
    return NULL;
  }
  if (!caps_info (caps, &info, error) ||
      !gst_pinned_tensor_plane_shape (&info, plane, &tp, error))
    return NULL;
  if (gst_buffer_n_memory (buffer) == 0) {
    g_set_error (error, GST_PINNED_CUDA_TENSOR_ERROR,
        GST_PINNED_CUDA_TENSOR_ERROR_MEMORY, "the buffer has no memory");
    return NULL;
  }
  if (!plane_place (buffer, &info, plane, &tp, &offset, &stride, error))
    return NULL;

  memset (&d, 0, sizeof (d));
  h = g_new0 (TensorHold, 1);
  first = gst_buffer_peek_memory (buffer, 0);
  /* libgstcuda is opened only for its own memory (GST_CUDA_MEMORY_TYPE_NAME,
   * 1.22 to 1.28): host frames never load it */
  t = first->allocator && g_strcmp0 (first->allocator->mem_type,
      "gst.cuda.memory") == 0 ? gst_pinned_cuda_gst_get () : NULL;
  if (gst_is_pinned_cuda_memory (first))
    ok = gst_buffer_n_memory (buffer) == 1 &&
        desc_pinned_cuda (first, plane, stream, &tp, &d, &stride, error);
  else if (t && t->is_cuda_memory (first))
    ok = desc_gstcuda (t, buffer, offset, stream, h, &d, error);
  else
    ok = desc_host (buffer, offset, (gsize) stride * (tp.shape[0] - 1) +
        tp.row_bytes, h, &d, error);
  if (!ok) {
    if (error && *error == NULL)
      g_set_error (error, GST_PINNED_CUDA_TENSOR_ERROR,
          GST_PINNED_CUDA_TENSOR_ERROR_MEMORY, "memory:PinnedflowCUDA buffer "
          "with %u memories", gst_buffer_n_memory (buffer));
    goto failed;
  }
  if ((guintptr) d.data % tp.elem != 0) {
    g_set_error (error, GST_PINNED_CUDA_TENSOR_ERROR,
        GST_PINNED_CUDA_TENSOR_ERROR_LAYOUT, "plane %u at %p is not aligned "
        "to its %u-byte elements", plane, d.data, tp.elem);
    goto failed;
  }
  fill_desc (&d, &tp, stride);

  h->buffer = gst_buffer_ref (buffer);
  if ((hold = pf_hold_new (h, tensor_hold_release)) == NULL) {
    gst_buffer_unref (h->buffer);
    h->buffer = NULL;
    g_set_error (error, GST_PINNED_CUDA_TENSOR_ERROR,
        GST_PINNED_CUDA_TENSOR_ERROR_MEMORY, "out of memory");
    goto failed;
  }
  h = NULL;                     /* the hold's */
  res = pf_dlpack_export (&d, hold, (flags & GST_PINNED_CUDA_TENSOR_VERSIONED)
      ? PF_DLPACK_VERSIONED | PF_DLPACK_READ_ONLY : 0, &out);
  pf_hold_unref (hold);
  if (res < 0) {
    g_set_error (error, GST_PINNED_CUDA_TENSOR_ERROR,
        GST_PINNED_CUDA_TENSOR_ERROR_LAYOUT, "DLPack export failed: %s",
        g_strerror (-res));
    return NULL;
  }
  GST_LOG ("buffer %p plane %u: %s tensor at %p", buffer, plane,
      d.device_type == PF_DLPACK_CUDA ? "kDLCUDA" : "kDLCPU", d.data);
  return out;

failed:
  if (h) {
    if (h->mem) {
      gst_memory_unmap (h->mem, &h->map);
      gst_memory_unref (h->mem);
    }
    g_free (h);
  }
  return NULL;
}

void
gst_pinned_cuda_tensor_free (gpointer tensor, guint flags)
{
  pf_dlpack_free (tensor, (flags & GST_PINNED_CUDA_TENSOR_VERSIONED) ?
      PF_DLPACK_VERSIONED : 0);
}
