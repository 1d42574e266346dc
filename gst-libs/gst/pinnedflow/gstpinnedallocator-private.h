/* GStreamer pinnedflow: what the pool tells the allocator (not installed)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef __GST_PINNED_ALLOCATOR_PRIVATE_H__
#define __GST_PINNED_ALLOCATOR_PRIVATE_H__

#include <gst/pinnedflow/gstpinnedallocator.h>

G_BEGIN_DECLS

/* Marks @mem, a GstDmaBufMemory of a udmabuf over the range of @seg that
 * starts at @offset, as that range: gst_pinned_memory_get_segment()
 * answers for it (the sink's zero copy path), with a reference on @seg
 * held by @mem. */
G_GNUC_INTERNAL
void gst_pinned_memory_tag_dmabuf (GstMemory * mem, GstPinnedSegment * seg,
    gsize offset);

G_END_DECLS
#endif
