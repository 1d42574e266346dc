/* GStreamer pinnedflow CUDA: the application API for device memory
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * pinnedcudaupload outputs buffers with the caps feature
 * "memory:PinnedflowCUDA": one GstMemory per buffer holding every plane of
 * the frame in one pitched device allocation (cudaMallocPitch). The copy
 * into it is asynchronous: an application (e.g. in an appsink callback)
 * gets each plane's device pointer and pitch here and must either wait
 * (gst_pinned_cuda_memory_wait()) or make its own stream wait on the
 * memory's event (cudaStreamWaitEvent (stream, event, 0)) before reading.
 * gst_memory_map() for reading waits and downloads into a host copy, so
 * any element reading the buffer sees correct bytes (slowly).
 */
#ifndef __GST_PINNED_CUDA_H__
#define __GST_PINNED_CUDA_H__

#include <gst/gst.h>
#include <gst/pinnedcuda/pinnedcuda-prelude.h>
#include <gst/pinnedcuda/gstpinnedcudatensor.h>

G_BEGIN_DECLS

/**
 * GST_CAPS_FEATURE_MEMORY_PINNEDFLOW_CUDA:
 *
 * Caps feature of buffers whose memory is pinnedflow CUDA device memory.
 */
#define GST_CAPS_FEATURE_MEMORY_PINNEDFLOW_CUDA "memory:PinnedflowCUDA"

/* GstMemory.allocator->mem_type of that memory. */
#define GST_PINNED_CUDA_MEMORY_TYPE "PinnedflowCUDA"

/* Since: 0.1 */
GST_PINNEDCUDA_API gboolean gst_is_pinned_cuda_memory (GstMemory * mem);

/* The CUDA device ordinal the memory lives on.
 * Since: 0.1
 */
GST_PINNEDCUDA_API gint gst_pinned_cuda_memory_get_device_id (GstMemory * mem);

/* Since: 0.1 */
GST_PINNEDCUDA_API guint gst_pinned_cuda_memory_get_n_planes (GstMemory * mem);

/**
 * gst_pinned_cuda_memory_get_plane:
 * @plane: plane index (GstVideoInfo order)
 * @dev_ptr: (out) (optional): device pointer of the plane's first byte
 * @pitch: (out) (optional): bytes between rows on the device
 * @width_bytes: (out) (optional): meaningful bytes per row
 * @rows: (out) (optional): rows in the plane
 *
 * Returns: FALSE if @mem is not pinnedflow CUDA memory or @plane is out of
 * range. The pointer is valid as long as @mem is; its content is valid
 * once the memory's event has completed.
 *
 * Since: 0.1
 */
GST_PINNEDCUDA_API gboolean gst_pinned_cuda_memory_get_plane (GstMemory * mem, guint plane,
    gpointer * dev_ptr, gsize * pitch, gsize * width_bytes, gsize * rows);

/**
 * gst_pinned_cuda_memory_get_event:
 *
 * Returns: (transfer none): the cudaEvent_t recorded after the last copy
 * into @mem (make a stream wait on it with cudaStreamWaitEvent()), or NULL.
 *
 * Since: 0.1
 */
GST_PINNEDCUDA_API gpointer gst_pinned_cuda_memory_get_event (GstMemory * mem);

/* Blocks until the copy into @mem has completed (cudaEventSynchronize).
 * Since: 0.1
 */
GST_PINNEDCUDA_API gboolean gst_pinned_cuda_memory_wait (GstMemory * mem, GError ** error);

/* TRUE when the copy has completed (cudaEventQuery), without blocking.
 * Since: 0.1
 */
GST_PINNEDCUDA_API gboolean gst_pinned_cuda_memory_is_ready (GstMemory * mem);

/* Same, for the first memory of @buffer.
 * Since: 0.1
 */
GST_PINNEDCUDA_API gboolean gst_pinned_cuda_buffer_get_plane (GstBuffer * buffer, guint plane,
    gpointer * dev_ptr, gsize * pitch);
/* Since: 0.1 */
GST_PINNEDCUDA_API gboolean gst_pinned_cuda_buffer_wait (GstBuffer * buffer, GError ** error);

G_END_DECLS
#endif /* __GST_PINNED_CUDA_H__ */
