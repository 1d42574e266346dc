/* GStreamer pinnedflow: bounded buffer pool in one pinned segment
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef __GST_PINNED_BUFFER_POOL_H__
#define __GST_PINNED_BUFFER_POOL_H__

#include <gst/gst.h>
#include <gst/video/video.h>
#include <gst/pinnedflow/gstpinnedsegment.h>

G_BEGIN_DECLS

#define GST_TYPE_PINNED_BUFFER_POOL (gst_pinned_buffer_pool_get_type ())
G_DECLARE_FINAL_TYPE (GstPinnedBufferPool, gst_pinned_buffer_pool, GST,
    PINNED_BUFFER_POOL, GstBufferPool)

GstBufferPool *gst_pinned_buffer_pool_new (void);

/* Segment flags (hugepages, mlock, seal-writers) stored in a pool config. */
void gst_pinned_buffer_pool_config_set_segment_flags (GstStructure * config,
    GstPinnedSegmentFlags flags);
GstPinnedSegmentFlags
gst_pinned_buffer_pool_config_get_segment_flags (GstStructure * config);

/**
 * gst_pinned_buffer_pool_get_segment:
 *
 * Returns: (transfer full) (nullable): the segment of the active pool
 */
GstPinnedSegment *gst_pinned_buffer_pool_get_segment (GstBufferPool * pool);

G_END_DECLS
#endif /* __GST_PINNED_BUFFER_POOL_H__ */
