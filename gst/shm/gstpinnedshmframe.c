/* GStreamer pinnedflow: a GstBuffer as a pinnedflow frame, and back
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Threads and lifetimes: see the header (the state: the source's buffer
 * pool and two bounded free lists). Called on the sink's
 * streaming thread with the buffer it renders, and on the source's with the
 * buffer it makes.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "gstpinnedshmframe.h"
#include "gstpinnedshmcommon.h"

#include <gst/pinnedflow/gstpinnedallocator.h>
#include <pinnedflow/pf-consumer.h>

/* gst_buffer_get_video_meta() with GST_VIDEO_META_API_TYPE read once: the
 * macro calls into libgstvideo for it on every frame, on both sides (a
 * library's code and data touched, cold at tens of frames per second,
 * for a constant) */
static GstVideoMeta *
get_video_meta (GstBuffer * buf)
{
  static gsize api = 0;

  if (g_once_init_enter (&api))
    g_once_init_leave (&api, GST_VIDEO_META_API_TYPE);
  return (GstVideoMeta *) gst_buffer_get_meta (buf, (GType) api);
}

gboolean
gst_pinned_shm_frame_set_chunks (pf_producer_frame * frame, GstBuffer * buf,
    pf_segment ** segs)
{
  guint i, n = gst_buffer_n_memory (buf);

  if (n == 0 || n > PF_MAX_CHUNKS)
    return FALSE;
  for (i = 0; i < n; i++) {
    GstMemory *mem = gst_buffer_peek_memory (buf, i);
    gsize offset = 0;
    GstPinnedSegment *seg = gst_pinned_memory_get_segment (mem, &offset);

    if (seg == NULL)
      return FALSE;
    segs[i] = seg;
    frame->chunks[i].segment_id = pf_segment_get_id (seg);
    frame->chunks[i].offset = offset;
    frame->chunks[i].size = mem->size;
  }
  frame->n_chunks = n;
  return TRUE;
}

/* The video layout of @frame from @vmeta, else @vinfo; FALSE if neither
 * (or more planes than the wire carries). */
static gboolean
set_video_layout (pf_producer_frame * frame, const GstVideoMeta * vmeta,
    const GstVideoInfo * vinfo)
{
  guint i;

  if (vmeta != NULL && vmeta->n_planes <= PF_MAX_PLANES) {
    frame->width = vmeta->width;
    frame->height = vmeta->height;
    frame->n_planes = vmeta->n_planes;
    for (i = 0; i < vmeta->n_planes; i++) {
      frame->plane_offset[i] = vmeta->offset[i];
      frame->plane_stride[i] = vmeta->stride[i];
    }
    return TRUE;
  }
  if (vinfo == NULL || GST_VIDEO_INFO_N_PLANES (vinfo) > PF_MAX_PLANES)
    return FALSE;
  frame->width = GST_VIDEO_INFO_WIDTH (vinfo);
  frame->height = GST_VIDEO_INFO_HEIGHT (vinfo);
  frame->n_planes = GST_VIDEO_INFO_N_PLANES (vinfo);
  for (i = 0; i < frame->n_planes; i++) {
    frame->plane_offset[i] = GST_VIDEO_INFO_PLANE_OFFSET (vinfo, i);
    frame->plane_stride[i] = GST_VIDEO_INFO_PLANE_STRIDE (vinfo, i);
  }
  return TRUE;
}

void
gst_pinned_shm_frame_set_meta (pf_producer_frame * frame, GstBuffer * buf,
    const GstVideoInfo * vinfo, guint64 clock_pts)
{
  frame->pts = GST_BUFFER_PTS (buf);
  frame->dts = GST_BUFFER_DTS (buf);
  frame->duration = GST_BUFFER_DURATION (buf);
  frame->offset = GST_BUFFER_OFFSET (buf);
  frame->offset_end = GST_BUFFER_OFFSET_END (buf);
  frame->clock_pts = clock_pts;
  frame->buffer_flags =
      GST_BUFFER_FLAGS (buf) & GST_PINNED_SHM_WIRE_BUFFER_FLAGS;
  if (set_video_layout (frame, get_video_meta (buf), vinfo))
    frame->meta_flags |= PF_FRAME_HAS_VIDEO_META;
}

guint64
gst_pinned_shm_frame_clock_pts (GstBaseSink * bsink,
    gboolean clock_is_monotonic, GstBuffer * buf)
{
  GstElement *element = GST_ELEMENT_CAST (bsink);
  GstClockTime pts = GST_BUFFER_PTS (buf), rt, t, base;
  GstClock *clock = NULL;
  gboolean have_clock;

  if (!GST_CLOCK_TIME_IS_VALID (pts)
      || bsink->segment.format != GST_FORMAT_TIME)
    return PF_TIME_NONE;
  rt = gst_segment_to_running_time (&bsink->segment, GST_FORMAT_TIME, pts);
  if (!GST_CLOCK_TIME_IS_VALID (rt))
    return PF_TIME_NONE;

  /* clock and base time in one go; the clock itself (a reference) only
   * when it must be read: a monotonic clock's time is the wire's already
   * (every frame comes here) */
  GST_OBJECT_LOCK (element);
  have_clock = GST_ELEMENT_CLOCK (element) != NULL;
  base = GST_ELEMENT_CAST (element)->base_time;
  if (have_clock && !clock_is_monotonic)
    clock = gst_object_ref (GST_ELEMENT_CLOCK (element));
  GST_OBJECT_UNLOCK (element);
  if (!have_clock)
    return PF_TIME_NONE;

  t = rt + base + gst_base_sink_get_latency (bsink);
  if (clock != NULL) {
    GstClockTimeDiff diff = GST_CLOCK_DIFF (gst_clock_get_time (clock),
        (GstClockTime) pf_monotonic_ns ());

    t = (diff < 0 && (GstClockTime) (-diff) > t) ? 0 : t + diff;
    gst_object_unref (clock);
  }
  return t;
}

/* ---- the source's side: a received frame as a GstBuffer ---- */

/* One frame on loan from the producer: released when the last of its
 * memories is freed, on the connection it came from. */
typedef struct _FrameLoan FrameLoan;
struct _FrameLoan
{
  pf_consumer *consumer;
  guint64 seq;
  gint n_memories;
  FrameLoan *next_free;         /* on the free list */
};

/* Loans whose frame went back, kept for the next frames so that receiving
 * a frame allocates none at steady state. Bounded: the rest are freed. */
#define LOAN_FREE_LIST_MAX 64
G_LOCK_DEFINE_STATIC (loan_free_list);
static FrameLoan *loan_free_list;
static guint loan_free_list_len;

static FrameLoan *
frame_loan_new (void)
{
  FrameLoan *loan;

  G_LOCK (loan_free_list);
  loan = loan_free_list;
  if (loan != NULL) {
    loan_free_list = loan->next_free;
    loan_free_list_len--;
  }
  G_UNLOCK (loan_free_list);
  if (loan == NULL)
    loan = g_new (FrameLoan, 1);
  memset (loan, 0, sizeof (*loan));
  return loan;
}

static void
frame_loan_memory_freed (gpointer data)
{
  FrameLoan *loan = data;
  gboolean kept = FALSE;

  if (!g_atomic_int_dec_and_test (&loan->n_memories))
    return;
  /* On a connection that is gone this is a no-op (-EPIPE): the producer
   * reclaimed the frame when we hung up. No consumer: the frame went back
   * when the buffer keeping these memories came back to its pool. */
  if (loan->consumer != NULL) {
    pf_consumer_release (loan->consumer, loan->seq);
    pf_consumer_unref (loan->consumer);
    loan->consumer = NULL;
  }
  G_LOCK (loan_free_list);
  if (loan_free_list_len < LOAN_FREE_LIST_MAX) {
    loan->next_free = loan_free_list;
    loan_free_list = loan;
    loan_free_list_len++;
    kept = TRUE;
  }
  G_UNLOCK (loan_free_list);
  if (!kept)
    g_free (loan);
}

/* Wraps each chunk of the frame in a read-only memory of @buf; the frame
 * goes back to the producer when the last of them is freed (or, when
 * GstPinnedShmFramePool keeps them, when the buffer comes back). FALSE when
 * a chunk cannot be wrapped (the memories made so far stay in @buf).
 * *@loan_out: the loan, alive while the memories are. The loan rides on
 * each memory as its destroy notify, not as qdata: a qdata costs two
 * allocations and makes the buffer's parent link a third. */
static gboolean
wrap_chunks (GstAllocator * allocator, pf_consumer * c, const pf_event * ev,
    GstBuffer * buf, guint64 * total, FrameLoan ** loan_out)
{
  const pf_consumer_frame *f = &ev->frame;
  gboolean ok = TRUE;
  FrameLoan *loan;
  guint i;

  if (f->n_chunks == 0 || f->n_chunks > PF_MAX_CHUNKS)
    return FALSE;
  loan = frame_loan_new ();
  loan->consumer = pf_consumer_ref (c);
  loan->seq = f->seq;
  loan->n_memories = 1;         /* ours until every memory is attached */

  *total = 0;
  for (i = 0; i < f->n_chunks && ok; i++) {
    GstMemory *mem;

    g_atomic_int_inc (&loan->n_memories);
    mem = gst_pinned_allocator_wrap_full (allocator, ev->segments[i],
        f->chunks[i].offset, f->chunks[i].size, loan, frame_loan_memory_freed);
    if (mem == NULL) {
      g_atomic_int_add (&loan->n_memories, -1);
      ok = FALSE;
      break;
    }
    gst_buffer_append_memory (buf, mem);
    *total += f->chunks[i].size;
  }
  *loan_out = loan;
  frame_loan_memory_freed (loan);       /* drop our own count */
  return ok;
}

gboolean
gst_pinned_shm_frame_wrap_chunks (GstAllocator * allocator, pf_consumer * c,
    const pf_event * ev, GstBuffer * buf, guint64 * total)
{
  FrameLoan *loan;

  return wrap_chunks (allocator, c, ev, buf, total, &loan);
}

/* ---- the source's buffers, recycled with their memories ----
 *
 * A GstBufferPool whose buffers come back when their last reference
 * drops (GstBuffer's dispose hook), and wait on a list under a mutex for
 * the next frame. Acquire and release bypass the base class's queue and
 * its GstPoll, which cost two eventfd syscalls per buffer.
 *
 * Frames come from the same few slots of the producer's pool, so a buffer
 * keeps the memories of its last frame when it comes back (issue 13:
 * removing them, freeing them and wrapping the next frame's were a third
 * of the instructions of receiving a frame): the frame goes back to the
 * producer then, as if its memories had been freed, and a later frame in
 * the same chunks (the same segment, offset and size) takes the buffer and
 * the memories as they are, on a new loan. The memories are kept only when
 * the buffer alone still holds them, unchanged (no copy, share or
 * replacement of them downstream); otherwise they are removed, and the
 * frame goes back when the last of them is freed, as before. The video
 * meta is kept (flagged POOLED) for the next frame to fill in.
 *
 * The kept memories hold their segments mapped: a buffer no frame matched
 * in FRAME_POOL_AGE acquisitions gives them up (a segment the producer
 * removed), and a new connection or new caps drop them all (those of
 * buffers out then are dropped when they come back). The pool
 * makes up to FRAME_POOL_KEEP buffers to keep one per slot; past that a
 * frame no buffer matches takes the oldest free one and replaces its
 * memories. */

#define FRAME_POOL_MAX 64
#define FRAME_POOL_KEEP 32
#define FRAME_POOL_AGE 128

/* A buffer of the pool with, while it keeps them, its frame's memories. */
typedef struct
{
  GstBuffer *buf;
  FrameLoan *loan;              /* of the kept memories, else NULL */
  guint n_mem;
  GstMemory *mem[PF_MAX_CHUNKS];        /* buf's, borrowed */
  GstPinnedSegment *seg[PF_MAX_CHUNKS]; /* held by mem[] */
  guint64 offset[PF_MAX_CHUNKS], size[PF_MAX_CHUNKS];   /* mem[]'s */
  guint64 last_used;            /* free entries: the acquisition count then */
  guint generation;             /* the pool's when it was wrapped */
} FrameEntry;

G_DECLARE_FINAL_TYPE (GstPinnedShmFramePool, gst_pinned_shm_frame_pool,
    GST, PINNED_SHM_FRAME_POOL, GstBufferPool);

struct _GstPinnedShmFramePool
{
  GstBufferPool parent;

  GMutex lock;
  FrameEntry free[FRAME_POOL_MAX];      /* lock; in no order */
  guint n_free;                 /* lock */
  FrameEntry out[FRAME_POOL_MAX];       /* lock; buffers out, wrapping a frame */
  guint n_out;                  /* lock */
  guint n_made;                 /* lock; our buffers alive */
  guint64 tick;                 /* lock; acquisitions */
  guint generation;             /* lock; + 1 by each _forget () */

  /* the acquiring (streaming) thread's: the frame the acquisition is for,
   * and the entry it took (got.buf NULL: a new buffer) */
  const pf_event *want;
  FrameEntry got;
};

G_DEFINE_TYPE (GstPinnedShmFramePool, gst_pinned_shm_frame_pool,
    GST_TYPE_BUFFER_POOL);

/* Whether @e keeps memories of exactly @ev's chunks. */
static gboolean
entry_matches (const FrameEntry * e, const pf_event * ev)
{
  const pf_consumer_frame *f = &ev->frame;
  guint i;

  if (e->loan == NULL || e->n_mem != f->n_chunks)
    return FALSE;
  for (i = 0; i < e->n_mem; i++)
    if (e->seg[i] != ev->segments[i] || e->offset[i] != f->chunks[i].offset
        || e->size[i] != f->chunks[i].size)
      return FALSE;
  return TRUE;
}

/* Takes free entry @i out of the list. lock held. */
static FrameEntry
take_free (GstPinnedShmFramePool * pool, guint i)
{
  FrameEntry e = pool->free[i];

  if (i != --pool->n_free)
    pool->free[i] = pool->free[pool->n_free];
  return e;
}

/* Records @e as out (its buffer wraps a frame). lock held. */
static void
add_out (GstPinnedShmFramePool * pool, const FrameEntry * e)
{
  if (pool->n_out < FRAME_POOL_MAX) {
    pool->out[pool->n_out] = *e;
    pool->out[pool->n_out++].generation = pool->generation;
  }
}

static GstFlowReturn
frame_pool_acquire_buffer (GstBufferPool * bpool, GstBuffer ** buffer,
    GstBufferPoolAcquireParams * params)
{
  /* unchecked: called per frame, by the pool's own vfunc */
  GstPinnedShmFramePool *pool = (GstPinnedShmFramePool *) bpool;
  GstBuffer *stale = NULL;
  gint i, take = -1, match = -1, empty = -1, oldest = -1;

  if (GST_BUFFER_POOL_IS_FLUSHING (bpool))
    return GST_FLOW_FLUSHING;
  pool->got.buf = NULL;
  pool->got.loan = NULL;
  g_mutex_lock (&pool->lock);
  pool->tick++;
  /* the buffer that carried these chunks last, else an empty one, else
   * (enough made) the one unused for longest */
  for (i = 0; i < (gint) pool->n_free; i++) {
    const FrameEntry *e = &pool->free[i];

    if (e->loan == NULL)
      empty = i;
    else if (match < 0 && pool->want != NULL && entry_matches (e, pool->want))
      match = i;
    else if (oldest < 0 || e->last_used < pool->free[oldest].last_used)
      oldest = i;
  }
  if (match >= 0)
    take = match;
  else if (empty >= 0)
    take = empty;
  else if (oldest >= 0 && pool->want != NULL && pool->n_made >= FRAME_POOL_KEEP)
    take = oldest;              /* the caller replaces its memories */
  if (take >= 0) {
    pool->got = take_free (pool, (guint) take);
    if (oldest == take)
      oldest = -1;              /* taken */
    else if (oldest == (gint) pool->n_free)
      oldest = take;            /* the last one, moved into the hole */
    if (match >= 0)
      add_out (pool, &pool->got);
  } else {
    pool->n_made++;
  }
  /* the one unused for longest, matched by no frame for long: its
   * memories go */
  if (oldest >= 0 && pool->tick - pool->free[oldest].last_used > FRAME_POOL_AGE) {
    stale = take_free (pool, (guint) oldest).buf;
    pool->n_made--;
  }
  g_mutex_unlock (&pool->lock);
  if (stale != NULL)
    gst_buffer_unref (stale);   /* buffer->pool is NULL: freed */
  *buffer = pool->got.buf ? pool->got.buf : gst_buffer_new ();
  return GST_FLOW_OK;
}

/* Whether @buffer coming back still holds @e's memories, and alone. */
static gboolean
entry_reusable (const FrameEntry * e, GstBuffer * buffer)
{
  guint i;

  if (e->loan == NULL || gst_buffer_n_memory (buffer) != e->n_mem
      || g_atomic_int_get (&e->loan->n_memories) != (gint) e->n_mem)
    return FALSE;
  for (i = 0; i < e->n_mem; i++) {
    GstMemory *mem = gst_buffer_peek_memory (buffer, i);

    if (mem != e->mem[i] || mem->parent != NULL
        || GST_MINI_OBJECT_REFCOUNT_VALUE (mem) != 1
        || mem->offset != e->offset[i] || mem->size != e->size[i])
      return FALSE;
  }
  return TRUE;
}

static void
frame_pool_reset_buffer (GstBufferPool * bpool, GstBuffer * buffer)
{
  /* timestamps, flags, metas not POOLED; the memories: release_buffer.
   * Tagged, so that the base class does not resize them to the pool's
   * size (none: the memories of a buffer kept would then be empty) */
  GST_BUFFER_FLAG_SET (buffer, GST_BUFFER_FLAG_TAG_MEMORY);
  GST_BUFFER_POOL_CLASS (gst_pinned_shm_frame_pool_parent_class)->reset_buffer
      (bpool, buffer);
}

static void
frame_pool_release_buffer (GstBufferPool * bpool, GstBuffer * buffer)
{
  /* unchecked: called per frame, by the pool's own vfunc */
  GstPinnedShmFramePool *pool = (GstPinnedShmFramePool *) bpool;
  FrameEntry e = { 0, };
  gboolean kept = FALSE;
  guint i;

  g_mutex_lock (&pool->lock);
  for (i = 0; i < pool->n_out; i++)
    if (pool->out[i].buf == buffer) {
      /* wrapped before new caps or a new connection: not kept */
      if (pool->out[i].generation == pool->generation)
        e = pool->out[i];
      pool->out[i] = pool->out[--pool->n_out];
      break;
    }
  g_mutex_unlock (&pool->lock);

  if (entry_reusable (&e, buffer)) {
    /* the frame goes back now, its memories stay */
    pf_consumer *c = e.loan->consumer;

    e.loan->consumer = NULL;
    pf_consumer_release (c, e.loan->seq);
    pf_consumer_unref (c);
  } else {
    /* the frame goes back when the last of its memories is freed */
    if (gst_buffer_n_memory (buffer) > 0)
      gst_buffer_remove_all_memory (buffer);
    memset (&e, 0, sizeof (e));
  }
  GST_BUFFER_FLAG_UNSET (buffer, GST_BUFFER_FLAG_TAG_MEMORY);
  e.buf = buffer;

  g_mutex_lock (&pool->lock);
  if (!GST_BUFFER_POOL_IS_FLUSHING (bpool) && pool->n_free < FRAME_POOL_MAX) {
    e.last_used = pool->tick;
    pool->free[pool->n_free++] = e;
    kept = TRUE;
  } else {
    pool->n_made--;
  }
  g_mutex_unlock (&pool->lock);
  if (!kept)
    gst_buffer_unref (buffer);  /* buffer->pool is NULL now: freed */
}

/* Frees the free buffers, all or (@kept_only) those keeping memories. */
static void
frame_pool_drain (GstPinnedShmFramePool * pool, gboolean kept_only)
{
  GstBuffer *bufs[FRAME_POOL_MAX];
  guint i, j, n = 0;

  g_mutex_lock (&pool->lock);
  for (i = 0, j = 0; i < pool->n_free; i++) {
    if (!kept_only || pool->free[i].loan != NULL)
      bufs[n++] = pool->free[i].buf;
    else
      pool->free[j++] = pool->free[i];
  }
  pool->n_free = j;
  pool->n_made -= n;
  g_mutex_unlock (&pool->lock);
  for (i = 0; i < n; i++)
    gst_buffer_unref (bufs[i]);
}

static void
frame_pool_flush_start (GstBufferPool * bpool)
{
  frame_pool_drain (GST_PINNED_SHM_FRAME_POOL (bpool), FALSE);
}

static gboolean
frame_pool_stop (GstBufferPool * bpool)
{
  frame_pool_drain (GST_PINNED_SHM_FRAME_POOL (bpool), FALSE);
  return GST_BUFFER_POOL_CLASS (gst_pinned_shm_frame_pool_parent_class)->stop
      (bpool);
}

static void
frame_pool_finalize (GObject * object)
{
  GstPinnedShmFramePool *pool = GST_PINNED_SHM_FRAME_POOL (object);

  frame_pool_drain (pool, FALSE);
  g_mutex_clear (&pool->lock);
  G_OBJECT_CLASS (gst_pinned_shm_frame_pool_parent_class)->finalize (object);
}

static void
gst_pinned_shm_frame_pool_init (GstPinnedShmFramePool * pool)
{
  g_mutex_init (&pool->lock);
}

static void
gst_pinned_shm_frame_pool_class_init (GstPinnedShmFramePoolClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstBufferPoolClass *pool_class = GST_BUFFER_POOL_CLASS (klass);

  gobject_class->finalize = frame_pool_finalize;
  pool_class->acquire_buffer = frame_pool_acquire_buffer;
  pool_class->reset_buffer = frame_pool_reset_buffer;
  pool_class->release_buffer = frame_pool_release_buffer;
  pool_class->flush_start = frame_pool_flush_start;
  pool_class->stop = frame_pool_stop;
}

GstBufferPool *
gst_pinned_shm_frame_pool_new (void)
{
  GstBufferPool *pool = g_object_new (gst_pinned_shm_frame_pool_get_type (),
      NULL);
  GstStructure *config;

  gst_object_ref_sink (pool);
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, NULL, 0, 0, 0);
  if (!gst_buffer_pool_set_config (pool, config)
      || !gst_buffer_pool_set_active (pool, TRUE)) {
    gst_object_unref (pool);
    return NULL;
  }
  return pool;
}

gboolean
gst_pinned_shm_frame_pool_wrap (GstBufferPool * bpool,
    GstAllocator * allocator, pf_consumer * c, const pf_event * ev,
    GstBuffer ** out, guint64 * total)
{
  GstPinnedShmFramePool *pool = GST_PINNED_SHM_FRAME_POOL (bpool);
  const pf_consumer_frame *f = &ev->frame;
  FrameLoan *loan = NULL;
  GstBuffer *buf = NULL;
  gboolean ok, again;
  guint i;

  pool->want = ev;
  if (gst_buffer_pool_acquire_buffer (bpool, &buf, NULL) != GST_FLOW_OK) {
    pool->want = NULL;
    *out = gst_buffer_new ();
    return gst_pinned_shm_frame_wrap_chunks (allocator, c, ev, *out, total);
  }
  pool->want = NULL;
  *out = buf;

  again = entry_matches (&pool->got, ev);
  if (again) {
    /* the chunks of this buffer's last frame: lent again */
    loan = pool->got.loan;
    loan->consumer = pf_consumer_ref (c);
    loan->seq = f->seq;
    *total = 0;
    for (i = 0; i < f->n_chunks; i++)
      *total += f->chunks[i].size;
    ok = TRUE;
  } else {
    if (gst_buffer_n_memory (buf) > 0)
      gst_buffer_remove_all_memory (buf);
    ok = wrap_chunks (allocator, c, ev, buf, total, &loan);
  }
  if (!ok)
    return FALSE;

  if (!again) {
    /* wrapped now: recorded as out (a buffer taken again was, by acquire) */
    FrameEntry e;

    e.buf = buf;
    e.loan = loan;
    e.n_mem = f->n_chunks;
    for (i = 0; i < f->n_chunks; i++) {
      e.mem[i] = gst_buffer_peek_memory (buf, i);
      e.seg[i] = ev->segments[i];
      e.offset[i] = f->chunks[i].offset;
      e.size[i] = f->chunks[i].size;
    }
    g_mutex_lock (&pool->lock);
    add_out (pool, &e);
    g_mutex_unlock (&pool->lock);
  }
  return TRUE;
}

void
gst_pinned_shm_frame_pool_forget (GstBufferPool * bpool)
{
  GstPinnedShmFramePool *pool = GST_PINNED_SHM_FRAME_POOL (bpool);

  /* those out now will not be kept either */
  g_mutex_lock (&pool->lock);
  pool->generation++;
  g_mutex_unlock (&pool->lock);
  frame_pool_drain (pool, TRUE);
}

/* Producer CLOCK_MONOTONIC time to running time of @element's pipeline. */
static GstClockTime
running_time_of (GstElement * element, gboolean clock_is_monotonic,
    guint64 clock_pts)
{
  GstClockTime base = gst_element_get_base_time (element);
  GstClockTime t = clock_pts;

  if (!clock_is_monotonic) {
    GstClock *clock = gst_element_get_clock (element);
    GstClockTimeDiff diff;

    if (clock == NULL)
      return GST_CLOCK_TIME_NONE;
    diff = GST_CLOCK_DIFF ((GstClockTime) pf_monotonic_ns (),
        gst_clock_get_time (clock));
    gst_object_unref (clock);
    t = (diff < 0 && (GstClockTime) (-diff) > t) ? 0 : t + diff;
  }
  return t > base ? t - base : 0;
}

void
gst_pinned_shm_frame_stamp (GstElement * element, gboolean clock_is_monotonic,
    gboolean keep_timestamps, const pf_consumer_frame * f, GstBuffer * buf)
{
  if (keep_timestamps) {
    /* not live: the producer's own timestamps, against its segment */
    GST_BUFFER_PTS (buf) = f->pts;
    GST_BUFFER_DTS (buf) = f->dts;
  } else if (f->clock_pts != PF_TIME_NONE) {
    GST_BUFFER_PTS (buf) = running_time_of (element, clock_is_monotonic,
        f->clock_pts);
    if (f->dts != PF_TIME_NONE && f->pts != PF_TIME_NONE
        && GST_BUFFER_PTS_IS_VALID (buf)) {
      /* keep the producer's DTS-to-PTS distance */
      GstClockTimeDiff d = GST_CLOCK_DIFF (f->dts, f->pts);

      GST_BUFFER_DTS (buf) = (d > 0 && (GstClockTime) d > GST_BUFFER_PTS (buf))
          ? 0 : GST_BUFFER_PTS (buf) - d;
    }
  } else {
    /* no timestamp from the producer: stamp with arrival time */
    GstClock *clock = gst_element_get_clock (element);

    if (clock) {
      GstClockTime now_c = gst_clock_get_time (clock);
      GstClockTime base = gst_element_get_base_time (element);

      GST_BUFFER_PTS (buf) = now_c > base ? now_c - base : 0;
      gst_object_unref (clock);
    }
  }
  if (f->duration != PF_TIME_NONE)
    GST_BUFFER_DURATION (buf) = f->duration;
  GST_BUFFER_OFFSET (buf) = f->offset;
  GST_BUFFER_OFFSET_END (buf) = f->offset_end;
  GST_BUFFER_FLAGS (buf) |= f->buffer_flags & GST_PINNED_SHM_WIRE_BUFFER_FLAGS;
}

/* TRUE when plane @i (@plane_size bytes from its offset) lies inside ONE
 * chunk: GstVideoFrame maps only the memory holding a plane's first byte,
 * and reads the rest from there. */
static gboolean
plane_in_one_chunk (const pf_consumer_frame * f, guint i, gsize plane_size)
{
  guint64 start = 0, off = f->plane_offset[i];
  guint ch;

  for (ch = 0; ch < f->n_chunks; ch++) {
    if (off < start + f->chunks[ch].size)
      break;
    start += f->chunks[ch].size;
  }
  return ch < f->n_chunks && plane_size <= f->chunks[ch].size
      && off - start <= f->chunks[ch].size - plane_size;
}

/* Whether @f, @total and @vinfo are laid out as @l (which passed). */
static gboolean
layout_is (const GstPinnedShmLayout * l, const pf_consumer_frame * f,
    guint64 total, const GstVideoInfo * vinfo)
{
  guint i;

  if (!l->valid || l->format != GST_VIDEO_INFO_FORMAT (vinfo)
      || l->n_planes != f->n_planes || l->n_chunks != f->n_chunks
      || l->width != f->width || l->height != f->height || l->total != total)
    return FALSE;
  for (i = 0; i < f->n_planes; i++)
    if (l->plane_offset[i] != f->plane_offset[i]
        || l->plane_stride[i] != f->plane_stride[i])
      return FALSE;
  for (i = 0; i < f->n_chunks; i++)
    if (l->chunk_size[i] != f->chunks[i].size)
      return FALSE;
  return TRUE;
}

static void
layout_set (GstPinnedShmLayout * l, const pf_consumer_frame * f,
    guint64 total, const GstVideoInfo * vinfo)
{
  guint i;

  gst_pinned_shm_layout_reset (l);
  l->format = GST_VIDEO_INFO_FORMAT (vinfo);
  l->n_planes = f->n_planes;
  l->n_chunks = f->n_chunks;
  l->width = f->width;
  l->height = f->height;
  l->total = total;
  for (i = 0; i < f->n_planes; i++) {
    l->plane_offset[i] = f->plane_offset[i];
    l->plane_stride[i] = f->plane_stride[i];
  }
  for (i = 0; i < f->n_chunks; i++)
    l->chunk_size[i] = f->chunks[i].size;
  l->valid = TRUE;
}

gboolean
gst_pinned_shm_frame_add_video_meta (const pf_consumer_frame * f,
    guint64 total, const GstVideoInfo * vinfo, GstBuffer * buf,
    GstPinnedShmLayout * checked)
{
  gsize offsets[GST_VIDEO_MAX_PLANES] = { 0, };
  gint strides[GST_VIDEO_MAX_PLANES] = { 0, };
  gsize plane_size[GST_VIDEO_MAX_PLANES] = { 0, };
  GstVideoMeta *vmeta;
  gboolean known;
  guint i;

  if (!(f->meta_flags & PF_FRAME_HAS_VIDEO_META) || vinfo == NULL) {
    /* a recycled buffer's meta does not describe this frame */
    vmeta = get_video_meta (buf);
    if (vmeta != NULL)
      gst_buffer_remove_meta (buf, (GstMeta *) vmeta);
    return TRUE;
  }
  /* the same layout as the last frame's: checked then */
  known = checked != NULL && layout_is (checked, f, total, vinfo);
  if (!known && (f->n_planes != GST_VIDEO_INFO_N_PLANES (vinfo)
          || f->n_planes > PF_MAX_PLANES || f->width == 0 || f->height == 0
          || f->width > G_MAXINT32 || f->height > G_MAXINT32))
    return FALSE;
  for (i = 0; i < f->n_planes; i++) {
    if (!known && (f->plane_offset[i] >= total || f->plane_stride[i] == 0))
      return FALSE;
    offsets[i] = f->plane_offset[i];
    strides[i] = f->plane_stride[i];
  }
  vmeta = get_video_meta (buf);
  if (vmeta != NULL && GST_META_FLAG_IS_SET (vmeta, GST_META_FLAG_POOLED)) {
    /* a recycled buffer's: filled in as gst_buffer_add_video_meta_full()
     * would (the alignment reset to none) */
    vmeta->flags = GST_VIDEO_FRAME_FLAG_NONE;
    vmeta->format = GST_VIDEO_INFO_FORMAT (vinfo);
    vmeta->id = 0;
    vmeta->width = f->width;
    vmeta->height = f->height;
    vmeta->n_planes = f->n_planes;
    for (i = 0; i < GST_VIDEO_MAX_PLANES; i++) {
      vmeta->offset[i] = offsets[i];
      vmeta->stride[i] = strides[i];
    }
    memset (&vmeta->alignment, 0, sizeof (vmeta->alignment));
  } else {
    vmeta = gst_buffer_add_video_meta_full (buf, GST_VIDEO_FRAME_FLAG_NONE,
        GST_VIDEO_INFO_FORMAT (vinfo), f->width, f->height,
        f->n_planes, offsets, strides);
    /* kept when the buffer is recycled (GstPinnedShmFramePool) */
    GST_META_FLAG_SET (vmeta, GST_META_FLAG_POOLED);
  }
  if (known)
    return TRUE;
  /* stride x lines, so a negative stride fails too */
  if (!gst_video_meta_get_plane_size (vmeta, plane_size))
    return FALSE;
  for (i = 0; i < f->n_planes; i++)
    if (!plane_in_one_chunk (f, i, plane_size[i]))
      return FALSE;
  if (checked != NULL)
    layout_set (checked, f, total, vinfo);
  return TRUE;
}
