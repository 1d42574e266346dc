/* GStreamer pinnedflow CUDA: device memory internals (not installed)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Used by gstpinnedcudamemory*.c and gstpinnedcudabufferpool.c only; hidden
 * in libgstpinnedflowcuda-1.0 (no GST_PINNEDCUDA_API).
 */
#ifndef __GST_PINNED_CUDA_MEMORY_PRIVATE_H__
#define __GST_PINNED_CUDA_MEMORY_PRIVATE_H__

#include <gst/pinnedcuda/gstpinnedcudamemory.h>

G_BEGIN_DECLS

/* The process-wide allocator (transfer full). */
GstAllocator *gst_pinned_cuda_allocator_get (void);

/* A new memory of @size bytes (@flags, and NO_SHARE) over @dev_ptr, with
 * its @pitch, @layout and @event (all taken); the caller sets the rest
 * (context, or notify). */
GstPinnedCudaMemory *gst_pinned_cuda_memory_new (const GstPinnedCudaRuntime *
    rt, gint device_id, const GstPinnedCudaLayout * layout,
    GstMemoryFlags flags, gsize size, gpointer dev_ptr, gsize pitch,
    GstPinnedCudaEvent event);

/* A device allocation for a frame of @layout on @device_id (cudaMallocPitch
 * + an event), in the context current (@cu_ctx pushed by the caller: it is
 * recorded in the memory, which takes a ref on @owner). */
GstMemory *gst_pinned_cuda_memory_alloc (const GstPinnedCudaRuntime * rt,
    gint device_id, const GstPinnedCudaLayout * layout, gpointer cu_ctx,
    GstObject * owner, GError ** error);

/* Pitch cudaMallocPitch gives for @layout (one probe allocation, freed). */
gboolean gst_pinned_cuda_probe_pitch (const GstPinnedCudaRuntime * rt,
    const GstPinnedCudaLayout * layout, gsize * pitch, GError ** error);

void gst_pinned_cuda_set_error (GError ** error, const GstPinnedCudaRuntime * rt,
    const gchar * call, GstPinnedCudaError err);

G_END_DECLS
#endif /* __GST_PINNED_CUDA_MEMORY_PRIVATE_H__ */
