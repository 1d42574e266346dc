/* GStreamer pinnedflow CUDA: DLPack tensors as buffers
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * See gst_pinned_cuda_buffer_fill_from_tensor() in gstpinnedcudatensor.h.
 *
 * Lifetime: a wrapped tensor (host memory; memory:CUDAMemory on 1.24+) is
 * owned by the GstMemory made around it: its deleter runs from the
 * memory's destroy notify, once. A copied tensor's deleter runs when its
 * copy is done: at once after a synchronous copy, or (memory:PinnedflowCUDA,
 * an asynchronous copy) from a qdata notify of the new memory after its
 * event completed. On failure nothing is taken.
 *
 * Device copies use cudaMemcpyDefault: the tensor's memory and the
 * GstCudaContext's may belong to two contexts of one device, which unified
 * addressing resolves by pointer.
 *
 * Threads: any; notifies run on the thread that frees the memory.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedcudatensor-private.h"
#include "gstpinnedcudamemory-private.h"

#include <string.h>

static void
tensor_delete (gpointer data)
{
  GstPinnedDLManagedTensor *t = data;

  if (t && t->deleter)
    t->deleter (t);
}

typedef enum
{
  TARGET_SYSTEM,
  TARGET_CUDA_MEMORY,
  TARGET_PINNED_CUDA,
} Target;

/* What the tensor is, checked against the caps. */
typedef struct
{
  GstVideoInfo info;
  Target target;
  guint elem;
  gsize pitch;                  /* bytes between rows */
  gsize total_rows, row_offset[GST_VIDEO_MAX_PLANES];
  gsize row_bytes[GST_VIDEO_MAX_PLANES];
  guint8 *data;
} Source;

static gboolean
fail (GError ** error, GstPinnedCudaTensorError code, const gchar * fmt, ...)
G_GNUC_PRINTF (3, 4);

     static gboolean
         fail (GError ** error, GstPinnedCudaTensorError code,
    const gchar * fmt, ...)
{
  va_list ap;

  if (error) {
    va_start (ap, fmt);
    *error = g_error_new_valist (GST_PINNED_CUDA_TENSOR_ERROR, code, fmt, ap);
    va_end (ap);
  }
  return FALSE;
}

static gboolean
check_shape (const GstPinnedDLTensor * dl, Source * s, GError ** error)
{
  GstPinnedTensorPlane tp;
  gint64 want[3] = { 0, 0, 0 };
  gint64 cols;
  guint p, n_planes = GST_VIDEO_INFO_N_PLANES (&s->info), ndim, i;
  gsize max_bytes = 0;

  for (p = 0; p < n_planes; p++) {
    if (!gst_pinned_tensor_plane_shape (&s->info, p, &tp, error))
      return FALSE;
    if (p == 0)
      s->elem = tp.elem;
    else if (tp.elem != s->elem)
      return fail (error, GST_PINNED_CUDA_TENSOR_ERROR_CAPS, "format %s: "
          "planes of different element sizes", GST_VIDEO_INFO_NAME (&s->info));
    s->row_offset[p] = s->total_rows;
    s->row_bytes[p] = tp.row_bytes;
    s->total_rows += tp.shape[0];
    max_bytes = MAX (max_bytes, tp.row_bytes);
    if (n_planes == 1)
      memcpy (want, tp.shape, sizeof (want));
  }
  ndim = n_planes == 1 ? tp.ndim : 2;
  if (n_planes > 1) {
    want[0] = s->total_rows;
    want[1] = max_bytes / s->elem;
  }
  if (dl->dtype.code != GST_PINNED_DL_UINT || dl->dtype.bits != s->elem * 8
      || dl->dtype.lanes != 1) {
    static const gchar *codes[] = { "int", "uint", "float", "opaque handle",
      "bfloat", "complex", "bool"
    };

    return fail (error, GST_PINNED_CUDA_TENSOR_ERROR_DTYPE, "dtype %s%u%s "
        "is not allowed by format %s: it takes uint%u",
        dl->dtype.code < G_N_ELEMENTS (codes) ? codes[dl->dtype.code] :
        "(unknown code)", dl->dtype.bits, dl->dtype.lanes != 1 ?
        " with lanes" : "", GST_VIDEO_INFO_NAME (&s->info), s->elem * 8);
  }
  if (dl->ndim != (gint32) ndim || dl->shape == NULL)
    goto bad_shape;
  for (i = 0; i < ndim; i++)
    if (dl->shape[i] != want[i])
      goto bad_shape;
  /* rows may be padded; everything within a row is contiguous */
  cols = ndim == 3 ? want[1] * want[2] : want[1];
  if (dl->strides) {
    if (dl->strides[ndim - 1] != 1 || (ndim == 3 && dl->strides[1] != want[2])
        || dl->strides[0] < cols)
      return fail (error, GST_PINNED_CUDA_TENSOR_ERROR_LAYOUT, "the tensor is "
          "not contiguous within its rows (strides %" G_GINT64_FORMAT ", %"
          G_GINT64_FORMAT "%s): make it so (e.g. .contiguous())",
          dl->strides[0], dl->strides[1], ndim == 3 ? ", ..." : "");
    s->pitch = (gsize) dl->strides[0] * s->elem;
  } else {
    s->pitch = (gsize) cols *s->elem;
  }
  s->data = (guint8 *) dl->data + dl->byte_offset;
  if (s->data == NULL)
    return fail (error, GST_PINNED_CUDA_TENSOR_ERROR_LAYOUT, "tensor data "
        "is NULL");
  return TRUE;

bad_shape:
  return fail (error, GST_PINNED_CUDA_TENSOR_ERROR_LAYOUT, "tensor shape "
      "(ndim %d: %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", ...) does not "
      "fit %s %dx%d: it takes (%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "%s)",
      dl->ndim, dl->shape && dl->ndim > 0 ? dl->shape[0] : -1,
      dl->shape && dl->ndim > 1 ? dl->shape[1] : -1,
      GST_VIDEO_INFO_NAME (&s->info), GST_VIDEO_INFO_WIDTH (&s->info),
      GST_VIDEO_INFO_HEIGHT (&s->info), want[0], want[1],
      ndim == 3 ? (want[2] == 4 ? ", 4" : want[2] == 3 ? ", 3" : ", 2") : "");
}

/* The layout of the tensor as GStreamer sees it: every plane at its first
 * row times the pitch, one stride. */
static void
layout_info (const Source * s, GstVideoInfo * info, gsize * size)
{
  guint p;

  *info = s->info;
  for (p = 0; p < GST_VIDEO_INFO_N_PLANES (info); p++) {
    GST_VIDEO_INFO_PLANE_OFFSET (info, p) = s->pitch * s->row_offset[p];
    GST_VIDEO_INFO_PLANE_STRIDE (info, p) = (gint) s->pitch;
  }
  GST_VIDEO_INFO_SIZE (info) = s->pitch * s->total_rows;
  /* what the tensor surely holds: the last row need not be padded */
  p = GST_VIDEO_INFO_N_PLANES (info) - 1;
  *size = s->pitch * (s->total_rows - 1) + s->row_bytes[p];
}

static void
add_meta (GstBuffer * buffer, GstVideoInfo * info)
{
  gst_buffer_add_video_meta_full (buffer, GST_VIDEO_FRAME_FLAG_NONE,
      GST_VIDEO_INFO_FORMAT (info), GST_VIDEO_INFO_WIDTH (info),
      GST_VIDEO_INFO_HEIGHT (info), GST_VIDEO_INFO_N_PLANES (info),
      info->offset, info->stride);
}

/* The device memory of a tensor appended to @buffer, laid out by @info,
 * @copies of the tensor made. Shareable, though not a pool's: a buffer
 * copy (basesrc's make_writable for the DISCONT flag of a buffer the
 * application still holds) shares it instead of reading it back through
 * a CPU map into system memory. */
static gboolean
append_device_memory (GstBuffer * buffer, GstMemory * mem, GstVideoInfo * info,
    GstPinnedCudaTensorImport * import, guint copies)
{
  GST_MINI_OBJECT_FLAG_UNSET (mem, GST_MEMORY_FLAG_NO_SHARE);
  gst_buffer_append_memory (buffer, mem);
  add_meta (buffer, info);
  import->copies = copies;
  return TRUE;
}

/* System memory: wrap, or copy into the buffer's memory. */
static gboolean
fill_host (GstBuffer * buffer, GstPinnedDLManagedTensor * tensor,
    const Source * s, GstPinnedCudaTensorImport * import, GError ** error)
{
  GstVideoInfo info;
  GstVideoFrame frame;
  GstMemory *mem;
  gsize size;
  guint p, r;

  layout_info (s, &info, &size);
  if (gst_buffer_n_memory (buffer) == 0) {
    mem = gst_memory_new_wrapped (GST_MEMORY_FLAG_READONLY, s->data, size, 0,
        size, tensor, tensor_delete);
    gst_buffer_append_memory (buffer, mem);
    add_meta (buffer, &info);
    import->copies = 0;
    return TRUE;
  }
  if (gst_buffer_get_size (buffer) < GST_VIDEO_INFO_SIZE (&s->info) ||
      !gst_video_frame_map (&frame, (GstVideoInfo *) & s->info, buffer,
          GST_MAP_WRITE))
    return fail (error, GST_PINNED_CUDA_TENSOR_ERROR_MEMORY, "the buffer's "
        "memory (%" G_GSIZE_FORMAT " bytes) cannot be written as a %s frame",
        gst_buffer_get_size (buffer), GST_VIDEO_INFO_NAME (&s->info));
  for (p = 0; p < GST_VIDEO_INFO_N_PLANES (&s->info); p++) {
    guint8 *dst = GST_VIDEO_FRAME_PLANE_DATA (&frame, p);
    gint dstride = GST_VIDEO_FRAME_PLANE_STRIDE (&frame, p);
    const guint8 *src = s->data + s->pitch * s->row_offset[p];
    guint rows = (p + 1 < GST_VIDEO_INFO_N_PLANES (&s->info) ?
        s->row_offset[p + 1] : s->total_rows) - s->row_offset[p];

    for (r = 0; r < rows; r++)
      memcpy (dst + (gsize) dstride * r, src + s->pitch * r, s->row_bytes[p]);
  }
  gst_video_frame_unmap (&frame);
  import->copies = 1;
  tensor_delete (tensor);
  return TRUE;
}

static gboolean
cuda_fail (GError ** error, const GstPinnedCudaRuntime * rt,
    const gchar * call, GstPinnedCudaError err)
{
  gchar *desc = gst_pinned_cuda_error_describe (rt, err);

  gst_pinned_cuda_take_last_error (rt);
  fail (error, GST_PINNED_CUDA_TENSOR_ERROR_CUDA, "%s failed: %s", call, desc);
  g_free (desc);
  return FALSE;
}

typedef struct
{
  GstPinnedDLManagedTensor *tensor;
  GstPinnedCudaMemory *mem;
} PendingCopy;

/* Runs before the memory's free: the copy out of the tensor completed. */
static void
pending_copy_done (gpointer data)
{
  PendingCopy *pc = data;
  const GstPinnedCudaRuntime *rt = pc->mem->rt;
  int prev = gst_pinned_cuda_context_push_enter (rt, pc->mem->device_id,
      pc->mem->cu_ctx);

  rt->EventSynchronize (pc->mem->event);
  gst_pinned_cuda_device_leave (rt, pc->mem->device_id, prev);
  tensor_delete (pc->tensor);
  g_free (pc);
}

/* memory:PinnedflowCUDA: one device copy, ordered after the producer's
 * stream, into a new allocation; its event recorded after it. */
static gboolean
fill_pinned_cuda (GstBuffer * buffer, GstPinnedDLManagedTensor * tensor,
    const Source * s, gint device, GstPinnedCudaTensorImport * import,
    GError ** error)
{
  const GstPinnedCudaRuntime *rt;
  GstPinnedCudaLayout layout;
  GstPinnedCudaMemory *mem;
  GstPinnedCudaStream stream = NULL;
  GstPinnedCudaError err;
  GstVideoInfo info;
  PendingCopy *pc;
  const gchar *call = "cudaMemcpy2DAsync";
  GError *err_alloc = NULL;
  guint p;
  int prev;

  if ((rt = gst_pinned_cuda_runtime_open_device (device, error)) == NULL)
    return FALSE;
  gst_pinned_cuda_layout_init (&layout, &s->info);
  if (import->producer_stream != GST_PINNED_CUDA_TENSOR_STREAM_NONE)
    stream = GST_PINNED_TENSOR_STREAM (import->producer_stream);
  prev = gst_pinned_cuda_context_push_enter (rt, device, NULL);
  mem = (GstPinnedCudaMemory *) gst_pinned_cuda_memory_alloc (rt, device,
      &layout, NULL, NULL, &err_alloc);
  if (mem == NULL) {
    gst_pinned_cuda_device_leave (rt, device, prev);
    fail (error, GST_PINNED_CUDA_TENSOR_ERROR_CUDA, "%s", err_alloc->message);
    g_clear_error (&err_alloc);
    return FALSE;
  }
  err = rt->Memcpy2DAsync (mem->dev_ptr, mem->pitch, s->data, s->pitch,
      layout.max_width_bytes, layout.total_rows,
      GST_PINNED_CUDA_MEMCPY_DEFAULT, stream);
  if (err == GST_PINNED_CUDA_SUCCESS) {
    call = "cudaEventRecord";
    err = rt->EventRecord (mem->event, stream);
  }
  gst_pinned_cuda_device_leave (rt, device, prev);
  if (err != GST_PINNED_CUDA_SUCCESS) {
    gst_memory_unref (GST_MEMORY_CAST (mem));
    return cuda_fail (error, rt, call, err);
  }
  pc = g_new0 (PendingCopy, 1);
  pc->tensor = tensor;
  pc->mem = mem;
  gst_mini_object_set_qdata (GST_MINI_OBJECT_CAST (mem),
      g_quark_from_static_string ("GstPinnedCudaTensorCopy"), pc,
      pending_copy_done);
  info = s->info;
  for (p = 0; p < layout.n_planes; p++) {
    GST_VIDEO_INFO_PLANE_OFFSET (&info, p) = mem->pitch * layout.row_offset[p];
    GST_VIDEO_INFO_PLANE_STRIDE (&info, p) = (gint) mem->pitch;
  }
  return append_device_memory (buffer, GST_MEMORY_CAST (mem), &info, import, 1);
}

/* memory:CUDAMemory, libgstcuda 1.24+: the tensor wrapped, on a stream of
 * its own that waits (on the GPU) for the producer's, NEED_SYNC set. */
static gboolean
fill_gstcuda_wrapped (const GstPinnedCudaGst * t, GstBuffer * buffer,
    GstPinnedDLManagedTensor * tensor, const Source * s, gpointer ctx,
    gint device, GstPinnedCudaTensorImport * import, GError ** error)
{
  const GstPinnedCudaRuntime *rt;
  GstPinnedCudaEvent event = NULL;
  GstPinnedCudaError err = GST_PINNED_CUDA_SUCCESS;
  const gchar *call = "cudaEventCreateWithFlags";
  gpointer stream, cu_ctx = NULL;
  GstVideoInfo info;
  GstMemory *mem;
  gsize size;
  int prev;

  if ((rt = gst_pinned_cuda_runtime_find_device (device, error)) == NULL)
    return FALSE;
  if ((stream = t->stream_new (ctx)) == NULL)
    return fail (error, GST_PINNED_CUDA_TENSOR_ERROR_CUDA,
        "gst_cuda_stream_new failed");
  if (import->producer_stream != GST_PINNED_CUDA_TENSOR_STREAM_NONE) {
    /* recorded where the producer's stream lives (the primary context) */
    prev = gst_pinned_cuda_context_push_enter (rt, device, NULL);
    err = rt->EventCreateWithFlags (&event,
        GST_PINNED_CUDA_EVENT_DISABLE_TIMING);
    if (err == GST_PINNED_CUDA_SUCCESS) {
      call = "cudaEventRecord on the producer's stream";
      err = rt->EventRecord (event,
          GST_PINNED_TENSOR_STREAM (import->producer_stream));
    }
    gst_pinned_cuda_device_leave (rt, device, prev);
    if (err == GST_PINNED_CUDA_SUCCESS) {
      call = "cudaStreamWaitEvent on the pipeline's stream";
      if (t->context_push (ctx)) {
        err = rt->StreamWaitEvent (t->stream_get_handle (stream), event, 0);
        t->context_pop (&cu_ctx);
      } else {
        err = GST_PINNED_CUDA_ERROR_INVALID_RESOURCE_HANDLE;
      }
    }
    if (event)
      rt->EventDestroy (event);
    if (err != GST_PINNED_CUDA_SUCCESS) {
      t->stream_unref (stream);
      return cuda_fail (error, rt, call, err);
    }
  }
  layout_info (s, &info, &size);
  mem = t->alloc_wrapped (NULL, ctx, stream, &info, (guintptr) s->data,
      tensor, tensor_delete);
  t->stream_unref (stream);
  if (mem == NULL)
    return fail (error, GST_PINNED_CUDA_TENSOR_ERROR_CUDA,
        "gst_cuda_allocator_alloc_wrapped failed");
  if (import->producer_stream != GST_PINNED_CUDA_TENSOR_STREAM_NONE)
    GST_MINI_OBJECT_FLAG_SET (mem, GST_PINNED_CUDA_GST_MEMORY_NEED_SYNC);
  return append_device_memory (buffer, mem, &info, import, 0);
}

/* memory:CUDAMemory, libgstcuda 1.22: one device copy into a buffer of a
 * GstCudaBufferPool, complete before returning (1.22's readers do not
 * wait), then the tensor is given back (gstpinnedcudagstcopy.c). */
static gboolean
fill_gstcuda_copy (const GstPinnedCudaGst * t, GstBuffer * buffer,
    GstPinnedDLManagedTensor * tensor, const Source * s, gpointer ctx,
    gint device, GstPinnedCudaTensorImport * import, GError ** error)
{
  const GstPinnedCudaRuntime *rt;
  GstPinnedCudaGstPlanes planes;
  GstBufferPool *pool;
  GstBuffer *out = NULL;
  GstVideoMeta *meta;
  GstPinnedCudaError err = GST_PINNED_CUDA_SUCCESS;
  GstPinnedCudaStream stream = NULL;
  const gchar *what = NULL;
  guint p;
  gboolean ok = FALSE;

  if ((rt = gst_pinned_cuda_runtime_find_device (device, error)) == NULL)
    return FALSE;
  if ((pool = gst_pinned_cuda_gst_pool_new (t, ctx, &s->info, 1, 1)) == NULL
      || gst_buffer_pool_acquire_buffer (pool, &out, NULL) != GST_FLOW_OK) {
    fail (error, GST_PINNED_CUDA_TENSOR_ERROR_CUDA, "no memory:CUDAMemory "
        "buffer from a GstCudaBufferPool");
    goto done;
  }
  memset (&planes, 0, sizeof (planes));
  planes.data = s->data;
  planes.pitch = s->pitch;
  planes.n_planes = GST_VIDEO_INFO_N_PLANES (&s->info);
  planes.total_rows = s->total_rows;
  for (p = 0; p < planes.n_planes; p++) {
    planes.row_offset[p] = s->row_offset[p];
    planes.row_bytes[p] = s->row_bytes[p];
  }
  if (import->producer_stream != GST_PINNED_CUDA_TENSOR_STREAM_NONE)
    stream = GST_PINNED_TENSOR_STREAM (import->producer_stream);
  if (!gst_pinned_cuda_gst_copy_planes (rt, device, out, &planes, stream,
          &what, &err)) {
    if (err != GST_PINNED_CUDA_SUCCESS)
      cuda_fail (error, rt, what, err);
    else
      fail (error, GST_PINNED_CUDA_TENSOR_ERROR_CUDA, "%s", what);
    goto done;
  }
  meta = gst_buffer_get_video_meta (out);
  gst_buffer_append_memory (buffer, gst_buffer_get_memory (out, 0));
  gst_buffer_add_video_meta_full (buffer, GST_VIDEO_FRAME_FLAG_NONE,
      meta->format, meta->width, meta->height, meta->n_planes, meta->offset,
      meta->stride);
  import->copies = 1;
  tensor_delete (tensor);
  ok = TRUE;

done:
  if (pool != NULL) {
    /* inactive: the buffer is freed, not kept, when it comes back */
    gst_buffer_pool_set_active (pool, FALSE);
    if (out)
      gst_buffer_unref (out);
    gst_object_unref (pool);
  }
  return ok;
}

static gboolean
fill_gstcuda (GstBuffer * buffer, GstPinnedDLManagedTensor * tensor,
    const Source * s, gint device, GstPinnedCudaTensorImport * import,
    GError ** error)
{
  const GstPinnedCudaGst *t = gst_pinned_cuda_gst_get ();
  gpointer ctx;
  gboolean ok;

  if (t == NULL)
    return fail (error, GST_PINNED_CUDA_TENSOR_ERROR_CUDA, "memory:CUDAMemory "
        "needs GStreamer's CUDA library (libgstcuda-1.0.so.0 or "
        "GST_PINNEDFLOW_GSTCUDA) and a CUDA driver; neither was usable");
  if (import->cuda_context) {
    if (!gst_pinned_tensor_gstcuda_is_context (import->cuda_context))
      return fail (error, GST_PINNED_CUDA_TENSOR_ERROR_CUDA, "cuda_context "
          "is not a GstCudaContext");
    ctx = g_object_ref (import->cuda_context);
  } else if (t->context_new == NULL || (ctx = t->context_new (device)) == NULL) {
    return fail (error, GST_PINNED_CUDA_TENSOR_ERROR_CUDA,
        "gst_cuda_context_new (%d) failed", device);
  }
  if (gst_pinned_cuda_gst_context_device (ctx) != device) {
    fail (error, GST_PINNED_CUDA_TENSOR_ERROR_DEVICE, "the tensor is on CUDA "
        "device %d, the GstCudaContext on device %d", device,
        gst_pinned_cuda_gst_context_device (ctx));
    ok = FALSE;
  } else if (t->alloc_wrapped && t->stream_new) {
    ok = fill_gstcuda_wrapped (t, buffer, tensor, s, ctx, device, import,
        error);
  } else {
    ok = fill_gstcuda_copy (t, buffer, tensor, s, ctx, device, import, error);
  }
  g_object_unref (ctx);
  return ok;
}

static const gchar *
device_name (gint32 type)
{
  switch (type) {
    case GST_PINNED_DL_CPU:
      return "kDLCPU (host)";
    case GST_PINNED_DL_CUDA:
      return "kDLCUDA";
    case GST_PINNED_DL_CUDA_HOST:
      return "kDLCUDAHost (pinned host)";
    default:
      return "another device";
  }
}

gboolean
gst_pinned_cuda_buffer_fill_from_tensor (GstBuffer * buffer,
    struct DLManagedTensor *managed, GstCaps * caps,
    GstPinnedCudaTensorImport * import, GError ** error)
{
  GstPinnedDLManagedTensor *tensor = (GstPinnedDLManagedTensor *) managed;
  const GstPinnedDLTensor *dl;
  GstCapsFeatures *features;
  Source s;
  gboolean device_tensor;

  g_return_val_if_fail (GST_IS_BUFFER (buffer), FALSE);
  g_return_val_if_fail (import != NULL, FALSE);
  if (!gst_buffer_is_writable (buffer))
    return fail (error, GST_PINNED_CUDA_TENSOR_ERROR_MEMORY, "the buffer is "
        "not writable");
  if (tensor == NULL)
    return fail (error, GST_PINNED_CUDA_TENSOR_ERROR_LAYOUT, "no tensor");
  dl = &tensor->dl_tensor;
  memset (&s, 0, sizeof (s));
  if (caps == NULL || !gst_caps_is_fixed (caps) ||
      !gst_video_info_from_caps (&s.info, caps))
    return fail (error, GST_PINNED_CUDA_TENSOR_ERROR_CAPS, "caps are not "
        "fixed raw video");
  features = gst_caps_get_features (caps, 0);
  if (features && gst_caps_features_contains (features, "memory:CUDAMemory"))
    s.target = TARGET_CUDA_MEMORY;
  else if (features && gst_caps_features_contains (features,
          GST_CAPS_FEATURE_MEMORY_PINNEDFLOW_CUDA))
    s.target = TARGET_PINNED_CUDA;
  device_tensor = dl->device.device_type == GST_PINNED_DL_CUDA;
  if (s.target == TARGET_SYSTEM && !device_tensor &&
      dl->device.device_type != GST_PINNED_DL_CPU &&
      dl->device.device_type != GST_PINNED_DL_CUDA_HOST)
    device_tensor = TRUE;       /* refused below, named */
  if ((s.target != TARGET_SYSTEM) != device_tensor)
    return fail (error, GST_PINNED_CUDA_TENSOR_ERROR_DEVICE, "a %s tensor "
        "offered for %s: %s", device_name (dl->device.device_type),
        s.target == TARGET_SYSTEM ? "system memory" : "CUDA memory",
        s.target == TARGET_SYSTEM ? "system memory takes a host (kDLCPU or "
        "kDLCUDAHost) tensor" : "CUDA memory takes a kDLCUDA tensor");
  if (!check_shape (dl, &s, error))
    return FALSE;
  if (gst_buffer_n_memory (buffer) > 0 && s.target != TARGET_SYSTEM)
    return fail (error, GST_PINNED_CUDA_TENSOR_ERROR_MEMORY, "a device "
        "tensor is put into an empty buffer only");

  import->copies = 0;
  switch (s.target) {
    case TARGET_SYSTEM:
      return fill_host (buffer, tensor, &s, import, error);
    case TARGET_PINNED_CUDA:
      return fill_pinned_cuda (buffer, tensor, &s, dl->device.device_id,
          import, error);
    case TARGET_CUDA_MEMORY:
    default:
      return fill_gstcuda (buffer, tensor, &s, dl->device.device_id, import,
          error);
  }
}
