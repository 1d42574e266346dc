/* GStreamer pinnedflow: pinnedshmsrc's buffers, recycled with their frames'
 * memories
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A received frame as a GstBuffer of read-only memories on loan from the
 * producer, and the source's pool of such buffers.
 *
 * Threads and lifetimes: one thread at a time (the source's streaming
 * thread, or its state changes while that is stopped) calls the functions
 * below; a buffer handed out comes back to its pool on whichever thread
 * drops its last reference. A pool is a plain refcounted struct: the
 * caller's reference (gst_pinned_shm_frame_pool_new() to
 * gst_pinned_shm_frame_pool_close()) and one per buffer alive, so buffers
 * still out after the close find their pool and are freed. A frame is
 * released when its buffer comes back keeping its memories, else when the
 * last memory wrapping it is freed. Process-wide: a bounded free list of
 * frame loans.
 */
#ifndef __GST_PINNED_SHM_FRAME_POOL_H__
#define __GST_PINNED_SHM_FRAME_POOL_H__

#include <gst/gst.h>

#include <pinnedflow/pf-consumer.h>

G_BEGIN_DECLS

/* Wraps each chunk of @ev's frame in a read-only memory of @allocator (a
 * GstPinnedAllocator) appended to @buf; the frame goes back to @c
 * (pf_consumer_release()) when the last of these memories is freed, on
 * whichever thread frees it. *@total: the frame's bytes. FALSE when a chunk
 * cannot be wrapped (the memories made so far stay in @buf and release the
 * frame when it dies). */
G_GNUC_INTERNAL
gboolean gst_pinned_shm_frame_wrap_chunks (GstAllocator * allocator,
    pf_consumer * c, const pf_event * ev, GstBuffer * buf, guint64 * total);

typedef struct _GstPinnedShmFramePool GstPinnedShmFramePool;

/* A pool of buffers for pinnedshmsrc: gst_pinned_shm_frame_pool_wrap()
 * gives a buffer wrapping a frame; when its last reference drops it comes
 * back for a later frame, with its memories when it alone holds them, and
 * with its video meta (flagged POOLED) for
 * gst_pinned_shm_frame_add_video_meta() to fill in. */
G_GNUC_INTERNAL
GstPinnedShmFramePool *gst_pinned_shm_frame_pool_new (void);

/* @ev's frame in a buffer of @pool, as gst_pinned_shm_frame_wrap_chunks()
 * makes it: a buffer that came back keeping the memories of the same
 * chunks (segment, offset, size) is given them again, on a loan of this
 * frame, and the frame goes back to @c when the buffer comes back (or,
 * when something else still holds its memories then, when the last of
 * them is freed). *@out: the buffer, also on failure. */
G_GNUC_INTERNAL
gboolean gst_pinned_shm_frame_pool_wrap (GstPinnedShmFramePool * pool,
    GstAllocator * allocator, pf_consumer * c, const pf_event * ev,
    GstBuffer ** out, guint64 * total);

/* Lets the memories (and their segments) of @pool's buffers go: those
 * waiting now, and those out when they come back. For a new connection or
 * new caps. */
G_GNUC_INTERNAL
void gst_pinned_shm_frame_pool_forget (GstPinnedShmFramePool * pool);

/* Frees @pool's waiting buffers and drops the caller's reference: buffers
 * still out are freed when they come back. */
G_GNUC_INTERNAL
void gst_pinned_shm_frame_pool_close (GstPinnedShmFramePool * pool);

G_END_DECLS
#endif /* __GST_PINNED_SHM_FRAME_POOL_H__ */
