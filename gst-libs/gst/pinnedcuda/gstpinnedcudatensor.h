/* GStreamer pinnedflow CUDA: buffers as DLPack tensors, both ways
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * For applications that take frames from an appsink into PyTorch, CuPy,
 * numpy or TensorRT, and push tensors they computed into an appsrc,
 * without copying where the memory allows:
 *
 * - gst_pinned_cuda_tensor_from_buffer(): one plane of a GstBuffer as a
 *   DLPack managed tensor, in place. Host memory (any mappable memory; our
 *   pinned memory is mapped, not copied) is kDLCPU; memory:PinnedflowCUDA
 *   and memory:CUDAMemory (GStreamer's libgstcuda, opened at run time) are
 *   kDLCUDA on the memory's device, with the consumer's stream made to
 *   wait on the GPU for the memory's copy (no host wait). The tensor holds
 *   a reference on the buffer (and the memory's map) until its deleter.
 * - gst_pinned_cuda_buffer_fill_from_tensor(): a DLPack managed tensor as
 *   the memory of a buffer: host tensors wrapped (no copy) or copied into
 *   the memory the buffer already has (a pool's, e.g. our pinned pool);
 *   device tensors wrapped as memory:CUDAMemory with libgstcuda 1.24+
 *   (gst_cuda_allocator_alloc_wrapped), else copied once on the device
 *   (1.22; or into memory:PinnedflowCUDA). A tensor that is wrapped lives
 *   until the buffer's memory is freed: its deleter runs exactly once.
 *
 * The DLPack structs are those of dlpack.h (include it to read them); they
 * are passed here as pointers to the specification's struct
 * DLManagedTensor (legacy) or DLManagedTensorVersioned (DLPack 1.0,
 * with GST_PINNED_CUDA_TENSOR_VERSIONED).
 *
 * Shapes (strides in elements, DLPack's rule), for plane p of the caps'
 * format: (rows, width, components) where the plane holds several
 * components of equal size per pixel (RGBA: (h, w, 4); NV12 plane 1:
 * (h/2, w/2, 2); RGB: (h, w, 3)), (rows, width) where it holds one
 * (GRAY8, NV12 plane 0, I420 planes), (rows, row bytes) uint8 for packed
 * 4:2:2 (YUY2, UYVY). uint16 for 16-bit little-endian formats (GRAY16_LE,
 * P010_10LE, P016_LE, I420_10LE, Y444_16LE), else uint8. Row strides are
 * the buffer's GstVideoMeta strides (or the caps' default).
 *
 * Threads: every function may be called from any thread; deleters run on
 * whichever thread drops the tensor.
 */
#ifndef __GST_PINNED_CUDA_TENSOR_H__
#define __GST_PINNED_CUDA_TENSOR_H__

#include <gst/gst.h>
#include <gst/pinnedcuda/pinnedcuda-prelude.h>

G_BEGIN_DECLS

struct DLManagedTensor;

/**
 * GST_PINNED_CUDA_TENSOR_ERROR:
 *
 * The error domain of the tensor functions.
 *
 * Since: 0.1
 */
#define GST_PINNED_CUDA_TENSOR_ERROR (gst_pinned_cuda_tensor_error_quark ())

/**
 * gst_pinned_cuda_tensor_error_quark:
 *
 * Returns: the quark of %GST_PINNED_CUDA_TENSOR_ERROR.
 *
 * Since: 0.1
 */
GST_PINNEDCUDA_API GQuark gst_pinned_cuda_tensor_error_quark (void);

/**
 * GstPinnedCudaTensorError:
 * @GST_PINNED_CUDA_TENSOR_ERROR_CAPS: caps that are not raw video, or a
 *   format whose planes are not rows of whole pixels
 * @GST_PINNED_CUDA_TENSOR_ERROR_LAYOUT: a plane outside the buffer, a
 *   tensor whose shape or strides do not fit the caps, a non-contiguous
 *   tensor
 * @GST_PINNED_CUDA_TENSOR_ERROR_DTYPE: a dtype the caps' format does not
 *   allow
 * @GST_PINNED_CUDA_TENSOR_ERROR_DEVICE: a tensor on the wrong device for
 *   the caps (a CPU tensor for memory:CUDAMemory, a CUDA one for system
 *   memory)
 * @GST_PINNED_CUDA_TENSOR_ERROR_MEMORY: memory neither host-mappable nor
 *   CUDA memory this library knows
 * @GST_PINNED_CUDA_TENSOR_ERROR_CUDA: the CUDA runtime or libgstcuda is
 *   missing, or a CUDA call failed
 *
 * Since: 0.1
 */
typedef enum
{
  GST_PINNED_CUDA_TENSOR_ERROR_CAPS,
  GST_PINNED_CUDA_TENSOR_ERROR_LAYOUT,
  GST_PINNED_CUDA_TENSOR_ERROR_DTYPE,
  GST_PINNED_CUDA_TENSOR_ERROR_DEVICE,
  GST_PINNED_CUDA_TENSOR_ERROR_MEMORY,
  GST_PINNED_CUDA_TENSOR_ERROR_CUDA,
} GstPinnedCudaTensorError;

/**
 * GstPinnedCudaTensorFlags:
 * @GST_PINNED_CUDA_TENSOR_VERSIONED: hand out a DLManagedTensorVersioned
 *   (DLPack 1.0), flagged read-only when the buffer is not writable
 *
 * Since: 0.1
 */
typedef enum
{
  GST_PINNED_CUDA_TENSOR_VERSIONED = 1 << 0,
} GstPinnedCudaTensorFlags;

/**
 * GST_PINNED_CUDA_TENSOR_STREAM_NONE:
 *
 * The DLPack stream value "no synchronisation" (-1). Other values, as
 * DLPack's __dlpack__(stream=) names them: 1 the legacy default stream, 2
 * the per-thread default stream, else a cudaStream_t; 0 is refused
 * (ambiguous).
 *
 * Since: 0.1
 */
#define GST_PINNED_CUDA_TENSOR_STREAM_NONE ((gintptr) -1)

/**
 * gst_pinned_cuda_tensor_n_planes:
 * @caps: raw video caps (any memory feature)
 *
 * Returns: the number of tensors a buffer of @caps gives (one per plane),
 * 0 for caps that are not fixed raw video.
 *
 * Since: 0.1
 */
GST_PINNEDCUDA_API guint gst_pinned_cuda_tensor_n_planes (GstCaps * caps);

/**
 * gst_pinned_cuda_tensor_from_buffer:
 * @buffer: (transfer none): a video frame; a reference is taken
 * @caps: its caps (the memory feature is not trusted: each memory is
 *   looked at)
 * @plane: the plane (GstVideoInfo order)
 * @stream: for device memory, the consumer's stream (DLPack's convention,
 *   see %GST_PINNED_CUDA_TENSOR_STREAM_NONE): made to wait for the
 *   memory's copy on the GPU; ignored for host memory
 * @flags: #GstPinnedCudaTensorFlags
 * @error: (optional): why not
 *
 * Returns: (transfer full) (nullable): a DLManagedTensor * (a
 * DLManagedTensorVersioned * with %GST_PINNED_CUDA_TENSOR_VERSIONED):
 * the consumer calls its deleter, which drops the buffer, once; NULL with
 * @error set.
 *
 * Since: 0.1
 */
GST_PINNEDCUDA_API gpointer gst_pinned_cuda_tensor_from_buffer (GstBuffer * buffer,
    GstCaps * caps, guint plane, gintptr stream, guint flags, GError ** error);

/**
 * gst_pinned_cuda_tensor_free:
 * @tensor: (nullable): a tensor from gst_pinned_cuda_tensor_from_buffer()
 *   that no consumer took
 * @flags: the flags it was made with
 *
 * Calls its deleter.
 *
 * Since: 0.1
 */
GST_PINNEDCUDA_API void gst_pinned_cuda_tensor_free (gpointer tensor, guint flags);

/**
 * GstPinnedCudaTensorImport:
 * @producer_stream: the stream after whose queued work the tensor's
 *   content is complete (DLPack convention; -1: it is complete now). The
 *   pipeline's stream (or the copy) waits for it on the GPU
 * @cuda_context: (nullable): a GstCudaContext for memory:CUDAMemory
 *   output (e.g. the one downstream answers the "gst.cuda.context" query
 *   with, gst_pinned_cuda_tensor_query_cuda_context()); NULL: one of
 *   libgstcuda's own is made for the tensor's device
 * @copies: (out): bytes were copied (1) or the tensor was wrapped (0)
 *
 * What gst_pinned_cuda_buffer_fill_from_tensor() takes besides the
 * tensor; zero-initialise it, set @producer_stream to -1 where nothing is
 * pending.
 *
 * Since: 0.1
 */
typedef struct
{
  gintptr producer_stream;
  gpointer cuda_context;
  guint copies;
  /*< private > */
  gpointer _reserved[4];
} GstPinnedCudaTensorImport;

/**
 * gst_pinned_cuda_buffer_fill_from_tensor:
 * @buffer: a writable buffer: empty (the tensor becomes its memory), or
 *   with host memory holding one frame of @caps (a pool's buffer, e.g.
 *   GstPinnedBufferPool's: the tensor is copied into it)
 * @tensor: a DLManagedTensor * (legacy DLPack, what __dlpack__() gives
 *   without max_version): the whole frame, (height, width[, components])
 *   for one plane (the shape gst_pinned_cuda_tensor_from_buffer() gives),
 *   (total rows, row elements) for several: every plane's rows one after
 *   the other at one row pitch, as memory:PinnedflowCUDA lays them out
 *   (NV12 w x h: (h * 3 / 2, w)). The last dimension contiguous; rows may
 *   be padded
 * @caps: fixed raw video caps; their memory feature picks the memory:
 *   none (system memory: a kDLCPU or kDLCUDAHost tensor),
 *   memory:CUDAMemory or memory:PinnedflowCUDA (a kDLCUDA tensor)
 * @import: (inout): #GstPinnedCudaTensorImport
 * @error: (optional): why not
 *
 * Returns: TRUE: @tensor was taken (its deleter runs exactly once: at once
 * where it was copied, when the buffer's memory is freed where it was
 * wrapped), a GstVideoMeta added, @import->copies set. FALSE with @error
 * set: @tensor is still the caller's, @buffer unchanged.
 *
 * Since: 0.1
 */
GST_PINNEDCUDA_API gboolean gst_pinned_cuda_buffer_fill_from_tensor (GstBuffer * buffer,
    struct DLManagedTensor * tensor, GstCaps * caps,
    GstPinnedCudaTensorImport * import, GError ** error);

/**
 * gst_pinned_cuda_tensor_query_cuda_context:
 * @element: an element (an appsrc) whose src pad is linked to one that
 *   answers the "gst.cuda.context" query (nvcodec's, ours; after it
 *   started)
 *
 * Returns: (transfer full) (nullable): the GstCudaContext downstream
 * uses, for #GstPinnedCudaTensorImport.cuda_context; g_object_unref() it.
 *
 * Since: 0.1
 */
GST_PINNEDCUDA_API gpointer gst_pinned_cuda_tensor_query_cuda_context (GstElement * element);

G_END_DECLS
#endif /* __GST_PINNED_CUDA_TENSOR_H__ */
