/* GStreamer pinnedflow CUDA: device memory and the device buffer pool
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * What pinnedcudaupload/pinnedcudadownload build on: the layout of a frame
 * on the device, the memory (its fields are read by the elements), and the
 * bounded pool of it. Installed and exported because the plugin links the
 * shared library (one copy of the GTypes and of the runtime in a process);
 * applications use gstpinnedcuda.h instead.
 */
#ifndef __GST_PINNED_CUDA_MEMORY_H__
#define __GST_PINNED_CUDA_MEMORY_H__

#include <gst/gst.h>
#include <gst/pinnedcuda/pinnedcuda-prelude.h>
#include <gst/video/video.h>
#include <gst/pinnedcuda/gstpinnedcuda.h>
#include <gst/pinnedcuda/gstpinnedcudaloader.h>

G_BEGIN_DECLS

/* Bytes per row and rows of each plane of @info (no padding).
 * Since: 0.1
 */
typedef struct
{
  guint n_planes;
  gsize width_bytes[GST_VIDEO_MAX_PLANES];
  gsize rows[GST_VIDEO_MAX_PLANES];
  gsize row_offset[GST_VIDEO_MAX_PLANES];      /* first row in the allocation */
  gsize max_width_bytes, total_rows;
} GstPinnedCudaLayout;

/* Since: 0.1 */
GST_PINNEDCUDA_API void gst_pinned_cuda_layout_init (GstPinnedCudaLayout * layout,
    const GstVideoInfo * info);

/* Since: 0.1 */
typedef struct
{
  GstMemory mem;

  const GstPinnedCudaRuntime *rt;
  gint device_id;
  GstPinnedCudaLayout layout;
  guint8 *dev_ptr;
  gsize pitch;
  GstPinnedCudaEvent event;            /* recorded after the last copy into it */

  GMutex lock;
  guint8 *shadow;               /* host copy while mapped */
  gint map_count;
  GstMapFlags map_flags;

  /* The context the allocation and the event were made in, pushed for
   * every call on them (NULL: the device's primary context, made current
   * with cudaSetDevice as needed), and what keeps it alive (a ref, or
   * NULL). */
  gpointer cu_ctx;
  GstObject *ctx_owner;

  /* Device memory someone else owns (gst_pinned_cuda_memory_new_wrapped):
   * @notify(@notify_data) runs when the memory is freed, instead of
   * cudaFree. NULL for the pool's own allocations. */
  GDestroyNotify notify;
  gpointer notify_data;
} GstPinnedCudaMemory;

#define GST_TYPE_PINNED_CUDA_ALLOCATOR (gst_pinned_cuda_allocator_get_type ())
/* Since: 0.1 */
GST_PINNEDCUDA_API
G_DECLARE_FINAL_TYPE (GstPinnedCudaAllocator, gst_pinned_cuda_allocator,
    GST, PINNED_CUDA_ALLOCATOR, GstAllocator)

/* Device buffer pool: bounded, recycled, every buffer one
 * GstPinnedCudaMemory with a GstVideoMeta giving offsets and pitch. */
#define GST_TYPE_PINNED_CUDA_BUFFER_POOL (gst_pinned_cuda_buffer_pool_get_type ())
/* Since: 0.1 */
GST_PINNEDCUDA_API
G_DECLARE_FINAL_TYPE (GstPinnedCudaBufferPool, gst_pinned_cuda_buffer_pool,
    GST, PINNED_CUDA_BUFFER_POOL, GstBufferPool)

/* Since: 0.1 */
GST_PINNEDCUDA_API GstBufferPool *gst_pinned_cuda_buffer_pool_new (const GstPinnedCudaRuntime * rt,
    gint device_id);

/* A pool whose frames and events are made in the CUcontext @cu_ctx (the
 * pipeline's GstCudaContext's: pushed for every call on them, whatever
 * thread makes it) and whose memories hold a reference on @owner (the
 * GstCudaContext) until they are freed. @cu_ctx NULL: as
 * gst_pinned_cuda_buffer_pool_new().
 * Since: 0.1
 */
GST_PINNEDCUDA_API GstBufferPool *gst_pinned_cuda_buffer_pool_new_in_context (const GstPinnedCudaRuntime * rt,
    gint device_id, GstObject * owner, gpointer cu_ctx);

/* The CUDA error of the pool's last failed allocation, or NULL (free).
 * Since: 0.1
 */
GST_PINNEDCUDA_API gchar *gst_pinned_cuda_buffer_pool_get_last_error (GstBufferPool * pool);

/**
 * gst_pinned_cuda_memory_new_wrapped:
 * @rt: the runtime
 * @device_id: the device @dev_ptr belongs to
 * @layout: the frame's planes (gst_pinned_cuda_layout_init())
 * @dev_ptr: the frame's first byte on the device; plane p starts at
 *   @dev_ptr + @pitch * @layout->row_offset[p]
 * @pitch: bytes per row of every plane (at least @layout->max_width_bytes)
 * @flags: #GstMemoryFlags (GST_MEMORY_FLAG_READONLY for memory the device
 *   may only read)
 * @notify: called with @notify_data when the memory is freed (any thread)
 * @notify_data: its argument
 * @error: where a CUDA failure is told
 *
 * Wraps device memory someone else owns (a device segment of another
 * process, imported and mapped) as pinnedflow CUDA memory, without a copy.
 * Its event is made and never recorded: waiting on it returns at once, so
 * @dev_ptr must hold its bytes already (a published device frame does).
 * On failure @notify is not called.
 *
 * Returns: (transfer full) (nullable): the memory, or NULL with @error set.
 * Since: 0.1
 */
GST_PINNEDCUDA_API GstMemory *gst_pinned_cuda_memory_new_wrapped (const GstPinnedCudaRuntime * rt,
    gint device_id, const GstPinnedCudaLayout * layout, gpointer dev_ptr,
    gsize pitch, GstMemoryFlags flags, GDestroyNotify notify,
    gpointer notify_data, GError ** error);

G_END_DECLS
#endif /* __GST_PINNED_CUDA_MEMORY_H__ */
