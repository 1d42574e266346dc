/* GStreamer pinnedflow: bounded buffer pool in one pinned segment
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * At activation the pool creates ONE segment of max-buffers page-aligned
 * slots. A slot table (free list) hands slots to alloc_buffer(); a slot goes
 * back to the free list when the GstMemory wrapping it is freed (a mini
 * object weak reference), so that a slot still referenced outside the pool
 * (a copied GstBuffer, a shared memory) is never handed out twice, and the
 * base class's discarding of buffers (memory tagged, size changed, not
 * writable) still keeps the pool bounded. The slot table is reference
 * counted apart from the pool because memories may outlive the pool.
 *
 * Blocking acquire does not use the base class's wait: in GStreamer 1.22
 * (GstPoll control tokens) two threads blocked in acquire can miss a
 * release and sleep forever (reproduced with a plain GstBufferPool). The
 * pool calls the base acquire with DONTWAIT and waits itself on a condition
 * signalled by every release, every freed slot and flushing.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/pinnedflow/gstpinnedbufferpool.h>
#include <gst/pinnedflow/gstpinnedallocator.h>

GST_DEBUG_CATEGORY_STATIC (gst_pinned_buffer_pool_debug);
#define GST_CAT_DEFAULT gst_pinned_buffer_pool_debug

#define CONFIG_SEGMENT_FLAGS "pinned-segment-flags"
/* pf_segment refuses bigger segments. */
#define MAX_SEGMENT_SIZE (G_GUINT64_CONSTANT (1) << 40)

/* Wake-ups of blocked acquires; shared by the pool and its slot tables
 * (which may outlive it). */
typedef struct
{
  gint refcount;
  GMutex lock;
  GCond cond;
  guint seq;                    /* bumped by releases and freed slots */
  gint waiters;                 /* acquires blocked on cond */
  gboolean flushing;
} PoolSync;

static PoolSync *
pool_sync_new (void)
{
  PoolSync *sync = g_new0 (PoolSync, 1);

  sync->refcount = 1;
  g_mutex_init (&sync->lock);
  g_cond_init (&sync->cond);
  sync->flushing = TRUE;
  return sync;
}

static PoolSync *
pool_sync_ref (PoolSync * sync)
{
  g_atomic_int_inc (&sync->refcount);
  return sync;
}

static void
pool_sync_unref (PoolSync * sync)
{
  if (!g_atomic_int_dec_and_test (&sync->refcount))
    return;
  g_mutex_clear (&sync->lock);
  g_cond_clear (&sync->cond);
  g_free (sync);
}

/* Call with sync->lock held. */
static inline void
pool_sync_bump_locked (PoolSync * sync)
{
  g_atomic_int_inc (&sync->seq);
  g_cond_broadcast (&sync->cond);
}

/* Lock-free when nobody waits (a GCond broadcast is a futex syscall). The
 * waiter increments waiters, then reads seq; we increment seq, then read
 * waiters: with sequentially consistent atomics one of us sees the other,
 * and the broadcast is made under the lock the waiter sleeps with. */
static inline void
pool_sync_bump (PoolSync * sync)
{
  g_atomic_int_inc (&sync->seq);
  if (g_atomic_int_get (&sync->waiters) > 0) {
    g_mutex_lock (&sync->lock);
    g_cond_broadcast (&sync->cond);
    g_mutex_unlock (&sync->lock);
  }
}

typedef struct _SlotTable SlotTable;

typedef struct
{
  SlotTable *table;
  guint index;
} Slot;

struct _SlotTable
{
  gint refcount;
  PoolSync *sync;               /* its lock guards the free list */
  guint n_slots;
  guint n_free;
  guint *free;                  /* stack of free slot indices */
  Slot *slots;
};

static SlotTable *
slot_table_new (PoolSync * sync, guint n_slots)
{
  SlotTable *t = g_new0 (SlotTable, 1);
  guint i;

  t->refcount = 1;
  t->sync = pool_sync_ref (sync);
  t->n_slots = n_slots;
  t->free = g_new (guint, n_slots);
  t->slots = g_new (Slot, n_slots);
  /* Pop order 0, 1, 2...: the first buffers are at the segment start. */
  for (i = 0; i < n_slots; i++) {
    t->free[i] = n_slots - 1 - i;
    t->slots[i].table = t;
    t->slots[i].index = i;
  }
  t->n_free = n_slots;
  return t;
}

static SlotTable *
slot_table_ref (SlotTable * t)
{
  if (t)
    g_atomic_int_inc (&t->refcount);
  return t;
}

static void
slot_table_unref (SlotTable * t)
{
  if (t == NULL || !g_atomic_int_dec_and_test (&t->refcount))
    return;
  pool_sync_unref (t->sync);
  g_free (t->free);
  g_free (t->slots);
  g_free (t);
}

/* Weak notify of a slot's GstMemory: the slot is free again. */
static void
slot_memory_freed (gpointer data, GstMiniObject * where_the_object_was)
{
  Slot *slot = data;
  SlotTable *t = slot->table;

  g_mutex_lock (&t->sync->lock);
  t->free[t->n_free++] = slot->index;
  pool_sync_bump_locked (t->sync);
  g_mutex_unlock (&t->sync->lock);
  slot_table_unref (t);
}

struct _GstPinnedBufferPool
{
  GstBufferPool parent;

  GstAllocator *allocator;      /* the pinned allocator */
  PoolSync *sync;

  /* Set by set_config (pool inactive). */
  gboolean is_video;
  GstVideoInfo info;
  gboolean add_videometa;
  gboolean need_alignment;
  GstVideoAlignment video_align;
  guint size;                   /* bytes of each slot's memory */
  guint n_slots;                /* max-buffers */
  gsize slot_stride;            /* page multiple >= size */
  GstPinnedSegmentFlags segment_flags;
  gboolean configured;

  /* Set by start/stop, under the object lock. */
  GstPinnedSegment *segment;
  SlotTable *table;
};

#define gst_pinned_buffer_pool_parent_class parent_class
G_DEFINE_TYPE (GstPinnedBufferPool, gst_pinned_buffer_pool,
    GST_TYPE_BUFFER_POOL);

void
gst_pinned_buffer_pool_config_set_segment_flags (GstStructure * config,
    GstPinnedSegmentFlags flags)
{
  g_return_if_fail (config != NULL);
  gst_structure_set (config, CONFIG_SEGMENT_FLAGS,
      GST_TYPE_PINNED_SEGMENT_FLAGS, flags, NULL);
}

GstPinnedSegmentFlags
gst_pinned_buffer_pool_config_get_segment_flags (GstStructure * config)
{
  const GValue *v;

  g_return_val_if_fail (config != NULL,
      GST_PINNED_BUFFER_POOL_DEFAULT_SEGMENT_FLAGS);
  v = gst_structure_get_value (config, CONFIG_SEGMENT_FLAGS);
  if (v == NULL)
    return GST_PINNED_BUFFER_POOL_DEFAULT_SEGMENT_FLAGS;
  if (G_VALUE_HOLDS_FLAGS (v))
    return (GstPinnedSegmentFlags) g_value_get_flags (v);
  if (G_VALUE_HOLDS_UINT (v))
    return (GstPinnedSegmentFlags) g_value_get_uint (v);
  if (G_VALUE_HOLDS_INT (v))
    return (GstPinnedSegmentFlags) g_value_get_int (v);
  return GST_PINNED_BUFFER_POOL_DEFAULT_SEGMENT_FLAGS;
}

static const gchar **
gst_pinned_buffer_pool_get_options (GstBufferPool * pool)
{
  static const gchar *options[] = { GST_BUFFER_POOL_OPTION_VIDEO_META,
    GST_BUFFER_POOL_OPTION_VIDEO_ALIGNMENT, NULL
  };

  return options;
}

static gboolean
gst_pinned_buffer_pool_set_config (GstBufferPool * pool, GstStructure * config)
{
  GstPinnedBufferPool *self = GST_PINNED_BUFFER_POOL (pool);
  GstCaps *caps;
  guint size, min_buffers, max_buffers;
  GstVideoInfo info;
  GstVideoAlignment align;
  gboolean is_video, add_videometa, need_alignment, exact = TRUE;
  GstAllocationParams params;
  gsize page = pf_page_size (), stride;

  if (!gst_buffer_pool_config_get_params (config, &caps, &size, &min_buffers,
          &max_buffers)) {
    GST_WARNING_OBJECT (pool, "invalid config %" GST_PTR_FORMAT, config);
    return FALSE;
  }

  /* Caps without video info (or no caps) use the plain size. */
  is_video = caps != NULL && gst_video_info_from_caps (&info, caps);
  add_videometa = is_video && gst_buffer_pool_config_has_option (config,
      GST_BUFFER_POOL_OPTION_VIDEO_META);
  need_alignment = add_videometa && gst_buffer_pool_config_has_option (config,
      GST_BUFFER_POOL_OPTION_VIDEO_ALIGNMENT);

  gst_video_alignment_reset (&align);
  if (need_alignment) {
    gst_buffer_pool_config_get_video_alignment (config, &align);
    if (!gst_video_info_align (&info, &align)) {
      GST_WARNING_OBJECT (pool, "cannot apply the video alignment");
      return FALSE;
    }
    /* gst_video_info_align() may have added right padding. */
    gst_buffer_pool_config_set_video_alignment (config, &align);
  }

  if (is_video && size < info.size) {
    GST_INFO_OBJECT (pool, "size %u too small for %" GST_PTR_FORMAT
        ", needs %" G_GSIZE_FORMAT, size, caps, info.size);
    size = info.size;
    exact = FALSE;
  } else if (size == 0) {
    GST_WARNING_OBJECT (pool, "size 0 and no video caps to derive one");
    return FALSE;
  }
  if (max_buffers == 0) {
    GST_INFO_OBJECT (pool, "unbounded config refused (max-buffers 0)");
    max_buffers = MAX (min_buffers, GST_PINNED_BUFFER_POOL_DEFAULT_MAX_BUFFERS);
    exact = FALSE;
  } else if (max_buffers < min_buffers) {
    GST_INFO_OBJECT (pool, "max-buffers %u < min-buffers %u", max_buffers,
        min_buffers);
    max_buffers = min_buffers;
    exact = FALSE;
  }

  stride = ((gsize) size + page - 1) & ~(page - 1);
  if ((guint64) stride * max_buffers > MAX_SEGMENT_SIZE) {
    GST_WARNING_OBJECT (pool, "%u slots of %" G_GSIZE_FORMAT " bytes is too "
        "big for one segment", max_buffers, stride);
    return FALSE;
  }

  /* Buffers are ours whatever allocator the config names; say so. */
  if (!gst_buffer_pool_config_get_allocator (config, NULL, &params))
    gst_allocation_params_init (&params);
  gst_buffer_pool_config_set_allocator (config, self->allocator, &params);

  if (!exact)
    gst_buffer_pool_config_set_params (config, caps, size, min_buffers,
        max_buffers);

  /* A corrected config is put in force too, though refused: the base class
   * stores it, and when the caller accepts it by setting it again,
   * gst_buffer_pool_set_config() sees it unchanged and returns TRUE without
   * calling us. (A never-configured pool still cannot be activated until
   * then: the base class stays unconfigured.) */
  self->is_video = is_video;
  if (is_video)
    self->info = info;
  self->add_videometa = add_videometa;
  self->need_alignment = need_alignment;
  self->video_align = align;
  self->size = size;
  self->n_slots = max_buffers;
  self->slot_stride = stride;
  self->segment_flags =
      gst_pinned_buffer_pool_config_get_segment_flags (config);

  GST_DEBUG_OBJECT (pool, "%s, %u slots of %u bytes (stride %" G_GSIZE_FORMAT
      "), segment flags 0x%x", is_video ? "video" : "plain", max_buffers,
      size, stride, self->segment_flags);

  if (!GST_BUFFER_POOL_CLASS (parent_class)->set_config (pool, config))
    return FALSE;
  self->configured = TRUE;
  return exact;
}

static gboolean
gst_pinned_buffer_pool_start (GstBufferPool * pool)
{
  GstPinnedBufferPool *self = GST_PINNED_BUFFER_POOL (pool);
  GstPinnedSegment *seg;
  SlotTable *table;
  GError *err = NULL;
  gchar *name, *desc;

  name = g_strdup_printf ("gst-pinned-pool-%s", GST_OBJECT_NAME (pool));
  seg = gst_pinned_segment_new_full (name, self->slot_stride * self->n_slots,
      self->segment_flags, &err);
  g_free (name);
  if (seg == NULL) {
    GST_ERROR_OBJECT (pool, "%s", err->message);
    g_error_free (err);
    return FALSE;
  }
  table = slot_table_new (self->sync, self->n_slots);

  GST_OBJECT_LOCK (pool);
  self->segment = seg;
  self->table = table;
  GST_OBJECT_UNLOCK (pool);

  desc = gst_pinned_segment_describe_state (pf_segment_get_state (seg));
  GST_INFO_OBJECT (pool, "segment %" G_GUINT64_FORMAT " (fd %d): %u slots of %"
      G_GSIZE_FORMAT " bytes, %s", pf_segment_get_id (seg),
      pf_segment_get_fd (seg), self->n_slots, self->slot_stride, desc);
  g_free (desc);

  if (!GST_BUFFER_POOL_CLASS (parent_class)->start (pool)) {
    GST_OBJECT_LOCK (pool);
    self->segment = NULL;
    self->table = NULL;
    GST_OBJECT_UNLOCK (pool);
    slot_table_unref (table);
    pf_segment_unref (seg);
    return FALSE;
  }
  return TRUE;
}

static gboolean
gst_pinned_buffer_pool_stop (GstBufferPool * pool)
{
  GstPinnedBufferPool *self = GST_PINNED_BUFFER_POOL (pool);
  GstPinnedSegment *seg;
  SlotTable *table;

  /* Frees the queued buffers: their slots return to the table. */
  if (!GST_BUFFER_POOL_CLASS (parent_class)->stop (pool))
    return FALSE;

  GST_OBJECT_LOCK (pool);
  seg = self->segment;
  table = self->table;
  self->segment = NULL;
  self->table = NULL;
  GST_OBJECT_UNLOCK (pool);

  slot_table_unref (table);
  /* Memories still alive elsewhere keep the segment (and its mapping). */
  if (seg)
    pf_segment_unref (seg);
  return TRUE;
}

static SlotTable *
get_table (GstPinnedBufferPool * self, GstPinnedSegment ** seg)
{
  SlotTable *table;

  GST_OBJECT_LOCK (self);
  table = slot_table_ref (self->table);
  if (seg)
    *seg = self->segment ? pf_segment_ref (self->segment) : NULL;
  GST_OBJECT_UNLOCK (self);
  return table;
}

static void
set_flushing (GstPinnedBufferPool * self, gboolean flushing)
{
  g_mutex_lock (&self->sync->lock);
  self->sync->flushing = flushing;
  pool_sync_bump_locked (self->sync);
  g_mutex_unlock (&self->sync->lock);
}

static void
gst_pinned_buffer_pool_flush_start (GstBufferPool * pool)
{
  set_flushing (GST_PINNED_BUFFER_POOL (pool), TRUE);
}

static void
gst_pinned_buffer_pool_flush_stop (GstBufferPool * pool)
{
  set_flushing (GST_PINNED_BUFFER_POOL (pool), FALSE);
}

static GstFlowReturn
gst_pinned_buffer_pool_acquire_buffer (GstBufferPool * pool,
    GstBuffer ** buffer, GstBufferPoolAcquireParams * params)
{
  GstPinnedBufferPool *self = GST_PINNED_BUFFER_POOL (pool);
  GstBufferPoolAcquireParams p = { 0, };
  PoolSync *sync = self->sync;
  GstFlowReturn ret;
  gboolean dontwait;

  if (params)
    p = *params;
  dontwait = (p.flags & GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT) != 0;
  p.flags |= GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT;

  for (;;) {
    /* Snapshot before trying: a release after this point is not missed. */
    guint seq = (guint) g_atomic_int_get (&sync->seq);

    ret = GST_BUFFER_POOL_CLASS (parent_class)->acquire_buffer (pool, buffer,
        &p);
    if (ret != GST_FLOW_EOS || dontwait)
      return ret;

    GST_LOG_OBJECT (pool, "no buffer, waiting for a release");
    g_mutex_lock (&sync->lock);
    g_atomic_int_inc (&sync->waiters);
    while ((guint) g_atomic_int_get (&sync->seq) == seq && !sync->flushing)
      g_cond_wait (&sync->cond, &sync->lock);
    g_atomic_int_add (&sync->waiters, -1);
    g_mutex_unlock (&sync->lock);
    /* Flushing: the base class answers GST_FLOW_FLUSHING. */
  }
}

static void
gst_pinned_buffer_pool_release_buffer (GstBufferPool * pool, GstBuffer * buffer)
{
  PoolSync *sync = GST_PINNED_BUFFER_POOL (pool)->sync;

  /* Back in the queue, or discarded (its slot follows its memory). */
  GST_BUFFER_POOL_CLASS (parent_class)->release_buffer (pool, buffer);
  pool_sync_bump (sync);
}

static GstFlowReturn
gst_pinned_buffer_pool_alloc_buffer (GstBufferPool * pool,
    GstBuffer ** buffer, GstBufferPoolAcquireParams * params)
{
  GstPinnedBufferPool *self = GST_PINNED_BUFFER_POOL (pool);
  GstPinnedSegment *seg = NULL;
  SlotTable *table;
  GstMemory *mem;
  GstBuffer *buf;
  guint index;

  table = get_table (self, &seg);
  if (table == NULL || seg == NULL) {
    GST_ERROR_OBJECT (pool, "not started");
    slot_table_unref (table);
    if (seg)
      pf_segment_unref (seg);
    return GST_FLOW_ERROR;
  }

  /* The base class bounds the number of buffers; a slot can still be busy
   * if the memory of a discarded buffer lives on elsewhere. Through
   * acquire_buffer() (always DONTWAIT here) that is GST_FLOW_EOS and the
   * acquire waits for the slot; a direct caller without DONTWAIT (the base
   * class's preallocation) waits here. */
  g_mutex_lock (&table->sync->lock);
  while (table->n_free == 0) {
    if (table->sync->flushing || (params
            && (params->flags & GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT))) {
      GstFlowReturn ret =
          table->sync->flushing ? GST_FLOW_FLUSHING : GST_FLOW_EOS;

      g_mutex_unlock (&table->sync->lock);
      slot_table_unref (table);
      pf_segment_unref (seg);
      GST_DEBUG_OBJECT (pool, "all slots busy: %s", gst_flow_get_name (ret));
      return ret;
    }
    GST_DEBUG_OBJECT (pool, "all slots busy, waiting for a memory to go");
    g_cond_wait (&table->sync->cond, &table->sync->lock);
  }
  index = table->free[--table->n_free];
  g_mutex_unlock (&table->sync->lock);

  mem = gst_pinned_allocator_wrap (self->allocator, seg,
      (gsize) index * self->slot_stride, self->size);
  /* The weak reference owns one table reference. */
  gst_mini_object_weak_ref (GST_MINI_OBJECT_CAST (mem), slot_memory_freed,
      &slot_table_ref (table)->slots[index]);

  buf = gst_buffer_new ();
  gst_buffer_append_memory (buf, mem);

  if (self->add_videometa) {
    GstVideoInfo *info = &self->info;
    GstVideoMeta *vmeta;

    vmeta = gst_buffer_add_video_meta_full (buf, GST_VIDEO_FRAME_FLAG_NONE,
        GST_VIDEO_INFO_FORMAT (info), GST_VIDEO_INFO_WIDTH (info),
        GST_VIDEO_INFO_HEIGHT (info), GST_VIDEO_INFO_N_PLANES (info),
        info->offset, info->stride);
    if (self->need_alignment)
      gst_video_meta_set_alignment (vmeta, self->video_align);
  }

  GST_LOG_OBJECT (pool, "buffer %p in slot %u (offset %" G_GSIZE_FORMAT ")",
      buf, index, (gsize) index * self->slot_stride);
  slot_table_unref (table);
  pf_segment_unref (seg);
  *buffer = buf;
  return GST_FLOW_OK;
}

static gboolean
remove_meta_unpooled (GstBuffer * buffer, GstMeta ** meta, gpointer user_data)
{
  if (!GST_META_FLAG_IS_SET (*meta, GST_META_FLAG_POOLED)) {
    GST_META_FLAG_UNSET (*meta, GST_META_FLAG_LOCKED);
    *meta = NULL;
  }
  return TRUE;
}

/* What the base class's reset does (flags, timestamps, unpooled metas),
 * except its size reset: that one moves the memory offset to 0, the start
 * of the segment, where this pool's slot i is at i * slot_stride. Here a
 * resized slot memory gets its own offset and size back, so that the base
 * class keeps the buffer. */
static void
gst_pinned_buffer_pool_reset_buffer (GstBufferPool * pool, GstBuffer * buffer)
{
  GstPinnedBufferPool *self = GST_PINNED_BUFFER_POOL (pool);

  GST_BUFFER_FLAGS (buffer) &= GST_BUFFER_FLAG_TAG_MEMORY;
  GST_BUFFER_PTS (buffer) = GST_CLOCK_TIME_NONE;
  GST_BUFFER_DTS (buffer) = GST_CLOCK_TIME_NONE;
  GST_BUFFER_DURATION (buffer) = GST_CLOCK_TIME_NONE;
  GST_BUFFER_OFFSET (buffer) = GST_BUFFER_OFFSET_NONE;
  GST_BUFFER_OFFSET_END (buffer) = GST_BUFFER_OFFSET_NONE;

  /* The slot memory has maxsize = slot offset + size. */
  if (!GST_BUFFER_FLAG_IS_SET (buffer, GST_BUFFER_FLAG_TAG_MEMORY)
      && gst_buffer_n_memory (buffer) == 1) {
    GstMemory *mem = gst_buffer_peek_memory (buffer, 0);

    if (G_UNLIKELY (mem->allocator == self->allocator
            && mem->maxsize >= self->size
            && (mem->offset + self->size != mem->maxsize
                || mem->size != self->size))
        && gst_memory_is_writable (mem)) {
      gsize slot_offset = mem->maxsize - self->size;

      GST_LOG_OBJECT (pool, "restoring offset %" G_GSIZE_FORMAT " size %u "
          "of %p", slot_offset, self->size, buffer);
      gst_memory_resize (mem, (gssize) slot_offset - (gssize) mem->offset,
          self->size);
    }
  }

  gst_buffer_foreach_meta (buffer, remove_meta_unpooled, pool);
}

GstPinnedSegment *
gst_pinned_buffer_pool_get_segment (GstBufferPool * pool)
{
  GstPinnedBufferPool *self;
  GstPinnedSegment *seg;

  g_return_val_if_fail (GST_IS_PINNED_BUFFER_POOL (pool), NULL);
  self = GST_PINNED_BUFFER_POOL (pool);

  GST_OBJECT_LOCK (pool);
  seg = self->segment ? pf_segment_ref (self->segment) : NULL;
  GST_OBJECT_UNLOCK (pool);
  return seg;
}

gboolean
gst_pinned_buffer_pool_get_slot_layout (GstBufferPool * pool,
    guint * n_slots, gsize * slot_stride, gsize * slot_size)
{
  GstPinnedBufferPool *self;

  g_return_val_if_fail (GST_IS_PINNED_BUFFER_POOL (pool), FALSE);
  self = GST_PINNED_BUFFER_POOL (pool);
  if (!self->configured)
    return FALSE;
  if (n_slots)
    *n_slots = self->n_slots;
  if (slot_stride)
    *slot_stride = self->slot_stride;
  if (slot_size)
    *slot_size = self->size;
  return TRUE;
}

static void
gst_pinned_buffer_pool_finalize (GObject * object)
{
  GstPinnedBufferPool *self = GST_PINNED_BUFFER_POOL (object);

  /* The base class's dispose deactivated the pool: stop ran. */
  slot_table_unref (self->table);
  if (self->segment)
    pf_segment_unref (self->segment);
  gst_object_unref (self->allocator);
  pool_sync_unref (self->sync);

  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_pinned_buffer_pool_class_init (GstPinnedBufferPoolClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstBufferPoolClass *pool_class = GST_BUFFER_POOL_CLASS (klass);

  gobject_class->finalize = gst_pinned_buffer_pool_finalize;

  pool_class->get_options = gst_pinned_buffer_pool_get_options;
  pool_class->set_config = gst_pinned_buffer_pool_set_config;
  pool_class->start = gst_pinned_buffer_pool_start;
  pool_class->stop = gst_pinned_buffer_pool_stop;
  pool_class->flush_start = gst_pinned_buffer_pool_flush_start;
  pool_class->flush_stop = gst_pinned_buffer_pool_flush_stop;
  pool_class->acquire_buffer = gst_pinned_buffer_pool_acquire_buffer;
  pool_class->release_buffer = gst_pinned_buffer_pool_release_buffer;
  pool_class->alloc_buffer = gst_pinned_buffer_pool_alloc_buffer;
  pool_class->reset_buffer = gst_pinned_buffer_pool_reset_buffer;

  GST_DEBUG_CATEGORY_INIT (gst_pinned_buffer_pool_debug, "pinnedbufferpool",
      0, "pinnedflow bounded buffer pool");
}

static void
gst_pinned_buffer_pool_init (GstPinnedBufferPool * self)
{
  self->allocator = gst_pinned_allocator_get ();
  self->sync = pool_sync_new ();
  self->segment_flags = GST_PINNED_BUFFER_POOL_DEFAULT_SEGMENT_FLAGS;
}

GstBufferPool *
gst_pinned_buffer_pool_new (void)
{
  GstBufferPool *pool = g_object_new (GST_TYPE_PINNED_BUFFER_POOL, NULL);

  gst_object_ref_sink (pool);
  return pool;
}
