/* GStreamer pinnedflow: bounded buffer pool in one pinned segment
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef __GST_PINNED_BUFFER_POOL_H__
#define __GST_PINNED_BUFFER_POOL_H__

#include <gst/gst.h>
#include <gst/pinnedflow/pinnedflow-prelude.h>
#include <gst/video/video.h>
#include <gst/pinnedflow/gstpinnedsegment.h>

G_BEGIN_DECLS

#define GST_TYPE_PINNED_BUFFER_POOL (gst_pinned_buffer_pool_get_type ())
/* Since: 0.1 */
GST_PINNEDFLOW_API
G_DECLARE_FINAL_TYPE (GstPinnedBufferPool, gst_pinned_buffer_pool, GST,
    PINNED_BUFFER_POOL, GstBufferPool)

/**
 * GST_PINNED_BUFFER_POOL_DEFAULT_MAX_BUFFERS:
 *
 * The pool is always bounded: a config with max-buffers 0 is refused
 * (set_config returns FALSE) with max-buffers updated to
 * MAX (min-buffers, this value) in the config.
 */
#define GST_PINNED_BUFFER_POOL_DEFAULT_MAX_BUFFERS 8

/**
 * GST_PINNED_BUFFER_POOL_DEFAULT_SEGMENT_FLAGS:
 *
 * Segment flags used when the config does not set any.
 */
#define GST_PINNED_BUFFER_POOL_DEFAULT_SEGMENT_FLAGS \
  (GST_PINNED_SEGMENT_FLAG_LOCK | GST_PINNED_SEGMENT_FLAG_SEAL_WRITERS)

/**
 * gst_pinned_buffer_pool_new:
 *
 * A bounded pool whose buffers are page-aligned slots of ONE pinned segment,
 * created at activation and holding all max-buffers slots. Each buffer has
 * one GstPinnedMemory (see gst_pinned_allocator_wrap()). Video caps give
 * GstVideoInfo-sized slots (options GST_BUFFER_POOL_OPTION_VIDEO_META and
 * GST_BUFFER_POOL_OPTION_VIDEO_ALIGNMENT as in GstVideoBufferPool); other
 * caps (or none) use the config size.
 *
 * A slot is reused only when its memory is freed, not merely its buffer:
 * a memory kept alive elsewhere (a shared sub-buffer, a copy of the
 * GstBuffer) keeps its slot busy.
 *
 * Returns: (transfer full): a new pool
 *
 * Since: 0.1
 */
GST_PINNEDFLOW_API GstBufferPool *gst_pinned_buffer_pool_new (void);

/**
 * gst_pinned_buffer_pool_new_configured:
 * @caps: (nullable): caps of the buffers (video caps size the slots)
 * @size: bytes per buffer
 * @video_meta: add %GST_BUFFER_POOL_OPTION_VIDEO_META
 * @segment_flags: flags of the segment created at activation
 *
 * gst_pinned_buffer_pool_new() with its configuration set: what an element
 * proposes upstream or keeps for its own copies.
 *
 * Returns: (transfer full) (nullable): a configured, inactive pool, or
 * NULL if the pool refused the configuration (e.g. max_buffers 0).
 *
 * Since: 0.1
 */
GST_PINNEDFLOW_API GstBufferPool *gst_pinned_buffer_pool_new_configured
    (GstCaps * caps, guint size, guint min_buffers, guint max_buffers,
    gboolean video_meta, GstPinnedSegmentFlags segment_flags);

/**
 * gst_pinned_buffer_pool_config_set_segment_flags:
 * @config: a pool configuration
 * @flags: flags of the segment the pool creates at activation (hugepages,
 *   mlock, seal-writers)
 *
 * Stores @flags in @config.
 *
 * Since: 0.1
 */
GST_PINNEDFLOW_API void gst_pinned_buffer_pool_config_set_segment_flags (GstStructure * config,
    GstPinnedSegmentFlags flags);
/**
 * gst_pinned_buffer_pool_config_get_segment_flags:
 * @config: a pool configuration
 *
 * Returns: the flags stored in @config, or
 * %GST_PINNED_BUFFER_POOL_DEFAULT_SEGMENT_FLAGS.
 *
 * Since: 0.1
 */
GST_PINNEDFLOW_API GstPinnedSegmentFlags
gst_pinned_buffer_pool_config_get_segment_flags (GstStructure * config);

/**
 * gst_pinned_buffer_pool_get_segment:
 *
 * Returns: (transfer full) (nullable): the segment of the active pool
 *
 * Since: 0.1
 */
GST_PINNEDFLOW_API GstPinnedSegment *gst_pinned_buffer_pool_get_segment (GstBufferPool * pool);

/**
 * gst_pinned_buffer_pool_get_slot_layout:
 * @n_slots: (out) (optional): number of slots (max-buffers)
 * @slot_stride: (out) (optional): bytes between slot starts (page multiple)
 * @slot_size: (out) (optional): bytes of each slot's memory (config size)
 *
 * Slot i lies at offset i * @slot_stride in the segment.
 *
 * Returns: FALSE if @pool is not configured.
 *
 * Since: 0.1
 */
GST_PINNEDFLOW_API gboolean gst_pinned_buffer_pool_get_slot_layout (GstBufferPool * pool,
    guint * n_slots, gsize * slot_stride, gsize * slot_size);

/**
 * GstPinnedBufferPoolStarvedFunc:
 * @pool: the pool
 * @user_data: as given to gst_pinned_buffer_pool_set_starved_func()
 *
 * Called when an acquire finds every buffer out, before it looks once more
 * and (without %GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT) waits, on the
 * acquiring thread, with no lock of the pool held: buffers may be released
 * to the pool from here (the acquire then takes one). For an owner whose
 * buffers come back only when asked for while someone waits.
 *
 * Returns: (nullable): handed to the #GstPinnedBufferPoolFedFunc when that
 * acquire returns
 *
 * Since: 0.1
 */
typedef gpointer (*GstPinnedBufferPoolStarvedFunc) (GstBufferPool * pool,
    gpointer user_data);

/**
 * GstPinnedBufferPoolFedFunc:
 * @pool: the pool
 * @token: what the #GstPinnedBufferPoolStarvedFunc of this acquire returned
 * @user_data: as given to gst_pinned_buffer_pool_set_starved_func()
 *
 * Called once per call of the #GstPinnedBufferPoolStarvedFunc, when that
 * acquire returns (a buffer, flushing, or none with DONTWAIT).
 *
 * Since: 0.1
 */
typedef void (*GstPinnedBufferPoolFedFunc) (GstBufferPool * pool,
    gpointer token, gpointer user_data);

/**
 * gst_pinned_buffer_pool_set_starved_func: (skip)
 * @pool: a #GstPinnedBufferPool
 * @starved: (nullable): called when an acquire finds the pool empty
 * @fed: (nullable): called when that acquire returns
 * @user_data: for both
 * @notify: (nullable): frees @user_data when replaced or with the pool
 *
 * Sets the hooks of an empty pool (pinnedshmsink asks its producer for the
 * consumers' release doorbells with them). Set them before the pool is
 * used: an acquire in progress may still call the previous ones.
 *
 * Since: 0.1
 */
GST_PINNEDFLOW_API void gst_pinned_buffer_pool_set_starved_func (GstBufferPool * pool,
    GstPinnedBufferPoolStarvedFunc starved, GstPinnedBufferPoolFedFunc fed,
    gpointer user_data, GDestroyNotify notify);

G_END_DECLS
#endif /* __GST_PINNED_BUFFER_POOL_H__ */
