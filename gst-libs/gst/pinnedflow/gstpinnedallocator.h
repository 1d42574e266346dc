/* GStreamer pinnedflow: allocator of GstMemory in pinned memfd segments
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef __GST_PINNED_ALLOCATOR_H__
#define __GST_PINNED_ALLOCATOR_H__

#include <gst/gst.h>
#include <gst/pinnedflow/pinnedflow-prelude.h>
#include <gst/allocators/allocators.h>
#include <gst/pinnedflow/gstpinnedsegment.h>

G_BEGIN_DECLS

#define GST_ALLOCATOR_PINNED "pinnedflow"

#define GST_TYPE_PINNED_ALLOCATOR (gst_pinned_allocator_get_type ())
/* Since: 0.1 */
GST_PINNEDFLOW_API
G_DECLARE_FINAL_TYPE (GstPinnedAllocator, gst_pinned_allocator, GST,
    PINNED_ALLOCATOR, GstFdAllocator)

/**
 * gst_pinned_allocator_get:
 *
 * Returns: (transfer full): the process-wide #GstPinnedAllocator, also
 * registered as %GST_ALLOCATOR_PINNED ("pinnedflow") with
 * gst_allocator_register().
 *
 * Since: 0.1
 */
GST_PINNEDFLOW_API GstAllocator *gst_pinned_allocator_get (void);

/**
 * gst_pinned_allocator_wrap:
 * @segment: (transfer none): the memory takes its own reference
 * @offset: byte offset of the slice in @segment
 * @size: slice size
 *
 * A GstMemory for [offset, offset + size) of @segment, using the segment's
 * one mapping (no new mmap). gst_fd_memory_get_fd() returns the segment fd
 * and the memory's offset is @offset in that fd. Read-only segments give
 * memories flagged GST_MEMORY_FLAG_READONLY.
 *
 * Returns: (transfer full) (nullable): NULL if the slice is outside.
 *
 * Since: 0.1
 */
GST_PINNEDFLOW_API GstMemory *gst_pinned_allocator_wrap (GstAllocator * allocator,
    GstPinnedSegment * segment, gsize offset, gsize size);

/**
 * gst_pinned_allocator_wrap_full:
 * @segment: (transfer none): the memory takes its own reference
 * @offset: byte offset of the slice in @segment
 * @size: slice size
 * @user_data: passed to @notify
 * @notify: (nullable): called with @user_data when the memory is freed
 *   (after its sub-memories, which keep it alive), on whichever thread
 *   drops the last reference; not called when this returns NULL
 *
 * gst_pinned_allocator_wrap() with a destroy notify, without the
 * allocations of a qdata. Memory structs are recycled through a bounded
 * free list: wrapping allocates nothing at steady state.
 *
 * Returns: (transfer full) (nullable): NULL if the slice is outside.
 *
 * Since: 0.1
 */
GST_PINNEDFLOW_API GstMemory *gst_pinned_allocator_wrap_full (GstAllocator * allocator,
    GstPinnedSegment * segment, gsize offset, gsize size, gpointer user_data,
    GDestroyNotify notify);

/**
 * gst_is_pinned_memory:
 * @mem: a #GstMemory
 *
 * Returns: TRUE if @mem was made by a #GstPinnedAllocator (it is then also
 * fd memory: gst_is_fd_memory() holds).
 *
 * Since: 0.1
 */
GST_PINNEDFLOW_API gboolean gst_is_pinned_memory (GstMemory * mem);

/**
 * gst_pinned_memory_get_segment:
 * @offset: (out) (optional): offset in the segment of the first byte of
 *   @mem's data (mem->offset included)
 *
 * Returns: (transfer none) (nullable): the segment of @mem, NULL if @mem is
 * not pinned memory.
 *
 * Since: 0.1
 */
GST_PINNEDFLOW_API GstPinnedSegment *gst_pinned_memory_get_segment (GstMemory * mem,
    gsize * offset);

G_END_DECLS
#endif /* __GST_PINNED_ALLOCATOR_H__ */
