/* GStreamer pinnedflow CUDA: device memory (internal to the plugin)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef __GST_PINNED_CUDA_MEMORY_H__
#define __GST_PINNED_CUDA_MEMORY_H__

#include <gst/gst.h>
#include <gst/video/video.h>
#include <gst/pinnedcuda/gstpinnedcuda.h>
#include <gst/pinnedcuda/gstpinnedcudaloader.h>

G_BEGIN_DECLS

/* Bytes per row and rows of each plane of @info (no padding). */
typedef struct
{
  guint n_planes;
  gsize width_bytes[GST_VIDEO_MAX_PLANES];
  gsize rows[GST_VIDEO_MAX_PLANES];
  gsize row_offset[GST_VIDEO_MAX_PLANES];      /* first row in the allocation */
  gsize max_width_bytes, total_rows;
} GstPinnedCudaLayout;

void gst_pinned_cuda_layout_init (GstPinnedCudaLayout * layout,
    const GstVideoInfo * info);

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
} GstPinnedCudaMemory;

#define GST_TYPE_PINNED_CUDA_ALLOCATOR (gst_pinned_cuda_allocator_get_type ())
G_DECLARE_FINAL_TYPE (GstPinnedCudaAllocator, gst_pinned_cuda_allocator,
    GST, PINNED_CUDA_ALLOCATOR, GstAllocator)

/* The process-wide allocator (transfer full). */
GstAllocator *gst_pinned_cuda_allocator_get (void);

/* A device allocation for a frame of @layout on @device_id (cudaMallocPitch
 * + an event). @rt's device must be current. */
GstMemory *gst_pinned_cuda_memory_alloc (const GstPinnedCudaRuntime * rt,
    gint device_id, const GstPinnedCudaLayout * layout, GError ** error);

/* Pitch cudaMallocPitch gives for @layout (one probe allocation, freed). */
gboolean gst_pinned_cuda_probe_pitch (const GstPinnedCudaRuntime * rt,
    const GstPinnedCudaLayout * layout, gsize * pitch, GError ** error);

void gst_pinned_cuda_set_error (GError ** error, const GstPinnedCudaRuntime * rt,
    const gchar * call, GstPinnedCudaError err);

/* Device buffer pool: bounded, recycled, every buffer one
 * GstPinnedCudaMemory with a GstVideoMeta giving offsets and pitch. */
#define GST_TYPE_PINNED_CUDA_BUFFER_POOL (gst_pinned_cuda_buffer_pool_get_type ())
G_DECLARE_FINAL_TYPE (GstPinnedCudaBufferPool, gst_pinned_cuda_buffer_pool,
    GST, PINNED_CUDA_BUFFER_POOL, GstBufferPool)

GstBufferPool *gst_pinned_cuda_buffer_pool_new (const GstPinnedCudaRuntime * rt,
    gint device_id);

/* The CUDA error of the pool's last failed allocation, or NULL (free). */
gchar *gst_pinned_cuda_buffer_pool_get_last_error (GstBufferPool * pool);

G_END_DECLS
#endif /* __GST_PINNED_CUDA_MEMORY_H__ */
