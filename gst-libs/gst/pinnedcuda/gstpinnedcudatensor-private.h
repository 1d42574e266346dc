/* GStreamer pinnedflow CUDA: tensor internals (not installed)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Shared by gstpinnedcudatensor.c (buffer -> tensor, the plane shapes),
 * gstpinnedcudatensorimport.c (tensor -> buffer) and
 * gstpinnedcudatensorgstcuda.c (GstCudaContext and GstCudaMemory, with
 * libgstcuda's loader, gstpinnedcudagst-private.h). Hidden in
 * libgstpinnedflowcuda-1.0.
 */
#ifndef __GST_PINNED_CUDA_TENSOR_PRIVATE_H__
#define __GST_PINNED_CUDA_TENSOR_PRIVATE_H__

#include <gst/pinnedcuda/gstpinnedcudatensor.h>
#include <gst/pinnedcuda/gstpinnedcudaloader.h>
#include <gst/pinnedcuda/gstpinnedcudagst-private.h>
#include <gst/video/video.h>

G_BEGIN_DECLS

/* DLPack (dlpack.h v1.0, legacy DLManagedTensor): the specification's
 * layout under our names; checked against dlpack.h where it is installed. */
typedef struct
{
  gint32 device_type;
  gint32 device_id;
} GstPinnedDLDevice;

typedef struct
{
  guint8 code;
  guint8 bits;
  guint16 lanes;
} GstPinnedDLDataType;

typedef struct
{
  void *data;
  GstPinnedDLDevice device;
  gint32 ndim;
  GstPinnedDLDataType dtype;
  gint64 *shape;
  gint64 *strides;
  guint64 byte_offset;
} GstPinnedDLTensor;

typedef struct GstPinnedDLManagedTensor
{
  GstPinnedDLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter) (struct GstPinnedDLManagedTensor * self);
} GstPinnedDLManagedTensor;

#define GST_PINNED_DL_CPU 1
#define GST_PINNED_DL_CUDA 2
#define GST_PINNED_DL_CUDA_HOST 3
#define GST_PINNED_DL_UINT 1

/* The shape of one plane of a frame, as a tensor. */
typedef struct
{
  guint elem;                   /* bytes per element: 1 or 2 */
  guint ndim;                   /* 2 or 3 */
  gint64 shape[3];              /* rows, columns[, components] */
  gsize row_bytes;              /* meaningful bytes per row */
} GstPinnedTensorPlane;

/* Plane @plane of @info; FALSE with a CAPS error for formats whose planes
 * are not rows of whole pixels (tiled, palette, complex packing). */
gboolean gst_pinned_tensor_plane_shape (const GstVideoInfo * info,
    guint plane, GstPinnedTensorPlane * tp, GError ** error);

/* libgstcuda-1.0 is reached through gst_pinned_cuda_gst_get()
 * (gstpinnedcudagst-private.h, the plugin's loader too). */

/* @obj is a GstCudaContext (libgstcuda loaded). */
gboolean gst_pinned_tensor_gstcuda_is_context (gpointer obj);

/* GstCudaMemory's public field "context" (gstcudamemory.h, 1.22-1.28),
 * checked to be a GstCudaContext; NULL if not. */
gpointer gst_pinned_tensor_gstcuda_memory_context (GstMemory * mem);

/* A DLPack stream value as a cudaStream_t (1 and 2 are the runtime's
 * cudaStreamLegacy and cudaStreamPerThread handles themselves). */
#define GST_PINNED_TENSOR_STREAM(s) ((GstPinnedCudaStream) (s))

G_END_DECLS
#endif /* __GST_PINNED_CUDA_TENSOR_PRIVATE_H__ */
