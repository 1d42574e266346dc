/* GStreamer pinnedflow: bounded buffer pool in one pinned segment
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The GstBufferPool face of pf_pool (<pinnedflow/pf-pool.h>, which owns
 * the slots, their wake-ups and flushing). At activation the pool creates
 * ONE segment of max-buffers page-aligned slots and a pf_pool over it.
 * alloc_buffer() loans a slot and wraps it in a GstPinnedMemory; the slot
 * is returned when that memory is freed (a mini object weak reference), so
 * that a slot still referenced outside the pool (a copied GstBuffer, a
 * shared memory) is never handed out twice, and the base class's
 * discarding of buffers (memory tagged, size changed, not writable) still
 * keeps the pool bounded. Each memory's weak reference holds a reference
 * on the pf_pool, which may so outlive this object.
 *
 * Asked to (config "pinned-dmabuf", as pinnedshmsink's proposed pool is)
 * and where /dev/udmabuf opens, start() also exports every slot as a
 * dmabuf (one UDMABUF_CREATE per slot over the segment's sealed memfd,
 * the fds owned by the segment: pf_segment_attach_once) and slots are
 * handed out as GstDmaBufMemory tagged with their range of the segment
 * (gst_pinned_memory_get_segment() answers for them). A video config
 * whose size is larger than the caps' frame gets the padded rows that
 * make that size (a V4L2 driver's bytesperline; align_rows_to_size()).
 *
 * Blocking acquire does not use the base class's wait: in GStreamer 1.22
 * (GstPoll control tokens) two threads blocked in acquire can miss a
 * release and sleep forever (reproduced with a plain GstBufferPool). The
 * pool calls the base acquire with DONTWAIT and waits itself on the
 * pf_pool's change counter, bumped by every release (pf_pool_notify()),
 * every returned slot and flushing. An owner whose buffers come back
 * through something that must be asked (pinnedshmsink: its consumers
 * ring the release doorbell only while the producer waits for a release,
 * issue 35) sets a starved hook (gst_pinned_buffer_pool_set_starved_func
 * ()): called when an acquire finds the pool empty, before it looks again
 * and waits, and its fed half when that acquire returns.
 *
 * Threading: @pfpool and @segment are set by start/stop under the object
 * lock and read under it (with a reference), except on the per-buffer path
 * (@slot_dmabufs too, set by start/stop, valid while @pfpool is):
 * acquire_buffer() and release_buffer() read @pfpool atomically and take
 * no reference. That is safe because gst_buffer_pool_acquire_buffer()
 * counts the buffer as outstanding before calling acquire_buffer(),
 * gst_buffer_pool_release_buffer() uncounts it only after release_buffer()
 * returned, and the base class calls stop only when nothing is
 * outstanding: the pf_pool cannot go while either runs.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/pinnedflow/gstpinnedbufferpool.h>
#include <gst/pinnedflow/gstpinnedallocator.h>
#include "gstpinnedallocator-private.h"
#include <pinnedflow/pf-pool.h>

#include <gst/allocators/gstdmabuf.h>

#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/udmabuf.h>

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

GST_DEBUG_CATEGORY_STATIC (gst_pinned_buffer_pool_debug);
#define GST_CAT_DEFAULT gst_pinned_buffer_pool_debug

#define CONFIG_SEGMENT_FLAGS "pinned-segment-flags"
/* boolean: export every slot as a dmabuf where /dev/udmabuf is there */
#define CONFIG_DMABUF "pinned-dmabuf"
/* pf_segment refuses bigger segments. */
#define MAX_SEGMENT_SIZE (G_GUINT64_CONSTANT (1) << 40)

/* What a slot memory's weak reference carries. */
typedef struct
{
  pf_pool *pool;                /* one reference */
  guint32 index;
} SlotRef;

/* Weak notify of a slot's GstMemory: the slot is free again. */
static void
slot_memory_freed (gpointer data, GstMiniObject * where_the_object_was)
{
  SlotRef *ref = data;

  pf_pool_return (ref->pool, ref->index);
  pf_pool_unref (ref->pool);
  g_free (ref);
}

struct _GstPinnedBufferPool
{
  GstBufferPool parent;

  GstAllocator *allocator;      /* the pinned allocator */

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

  gboolean want_dmabuf;

  /* Set by start/stop, under the object lock. */
  GstPinnedSegment *segment;
  pf_pool *pfpool;
  /* The slots' dmabufs (start), owned by the segment (attached); NULL
   * when not asked for or not possible (no /dev/udmabuf). */
  const int *slot_dmabufs;
  GstAllocator *dmabuf_allocator;

  /* gst_pinned_buffer_pool_set_starved_func (): set before the pool is
   * used, read under the object lock on the way to a wait */
  GstPinnedBufferPoolStarvedFunc starved;
  GstPinnedBufferPoolFedFunc fed;
  gpointer starved_data;
  GDestroyNotify starved_notify;
};

#define gst_pinned_buffer_pool_parent_class parent_class
G_DEFINE_TYPE (GstPinnedBufferPool, gst_pinned_buffer_pool,
    GST_TYPE_BUFFER_POOL);

/* The per-buffer vfuncs (acquire, release, reset: every frame, on two
 * threads) cast without a type check: the base class calls them with this
 * pool, and the checked casts were ~200 instructions a frame (issue 13). */
#define POOL_CAST(pool) ((GstPinnedBufferPool *) (pool))
#define PARENT_POOL_CLASS ((GstBufferPoolClass *) parent_class)

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

/* The row alignment (a power of two, 2 to 4096 bytes, the same on every
 * plane) that lays @info out in exactly @size bytes: @info and @align get
 * it, TRUE. A V4L2 driver that pads its rows says so only through its
 * frame size (v4l2src io-mode=userptr configures the pool it imports with
 * the driver's sizeimage and no alignment), and it accepts a buffer only
 * with its strides. */
static gboolean
align_rows_to_size (GstVideoInfo * info, gsize size, GstVideoAlignment * align)
{
  guint shift, i;

  for (shift = 1; shift <= 12; shift++) {
    GstVideoInfo tmp = *info;
    GstVideoAlignment a;

    gst_video_alignment_reset (&a);
    for (i = 0; i < GST_VIDEO_MAX_PLANES; i++)
      a.stride_align[i] = (1u << shift) - 1;
    if (gst_video_info_align (&tmp, &a) && tmp.size == size) {
      *info = tmp;
      *align = a;
      return TRUE;
    }
  }
  return FALSE;
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
  guint64 stride;

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

  /* Bigger frames than the caps' with a video meta and no alignment asked
   * for: padded rows, when some row alignment gives that size. */
  if (add_videometa && !need_alignment && size > info.size
      && GST_VIDEO_INFO_FORMAT (&info) != GST_VIDEO_FORMAT_ENCODED
      && align_rows_to_size (&info, size, &align)) {
    GST_INFO_OBJECT (pool, "size %u: rows of %d bytes (plane 0)", size,
        GST_VIDEO_INFO_PLANE_STRIDE (&info, 0));
    need_alignment = TRUE;
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

  pf_pool_slot_stride (size, &stride);  /* size > 0: cannot fail */
  if (stride * max_buffers > MAX_SEGMENT_SIZE) {
    GST_WARNING_OBJECT (pool, "%u slots of %" G_GUINT64_FORMAT " bytes is "
        "too big for one segment", max_buffers, stride);
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
  self->want_dmabuf = FALSE;
  gst_structure_get_boolean (config, CONFIG_DMABUF, &self->want_dmabuf);

  GST_DEBUG_OBJECT (pool, "%s, %u slots of %u bytes (stride %"
      G_GUINT64_FORMAT "), segment flags 0x%x", is_video ? "video" : "plain",
      max_buffers, size, stride, self->segment_flags);

  if (!GST_BUFFER_POOL_CLASS (parent_class)->set_config (pool, config))
    return FALSE;
  self->configured = TRUE;
  return exact;
}

/* The slots' udmabufs, attached to their segment (closed with it). */
typedef struct
{
  guint n;
  int fds[];
} SlotDmabufs;

static void
slot_dmabufs_free (void *data)
{
  SlotDmabufs *d = data;
  guint i;

  for (i = 0; i < d->n; i++)
    close (d->fds[i]);
  g_free (d);
}

typedef struct
{
  guint n_slots;
  gsize stride;
} ExportArgs;

/* One UDMABUF_CREATE per slot (v4l2src's single-planar dmabuf import
 * wants each buffer at offset 0 of its dmabuf): the table, or NULL with
 * *@err (a negative errno: -ENOENT without /dev/udmabuf). */
static void *
export_slots (pf_segment * seg, void *user_data, int *err)
{
  const ExportArgs *a = user_data;
  SlotDmabufs *d = g_malloc (sizeof (SlotDmabufs) + a->n_slots * sizeof (int));
  int dev = open ("/dev/udmabuf", O_RDWR | O_CLOEXEC);
  guint i;

  d->n = 0;
  if (dev < 0) {
    *err = -errno;
    g_free (d);
    return NULL;
  }
  for (i = 0; i < a->n_slots; i++) {
    struct udmabuf_create c = { 0, };
    int fd;

    c.memfd = pf_segment_get_fd (seg);
    c.flags = UDMABUF_FLAGS_CLOEXEC;
    c.offset = (guint64) i *a->stride;
    c.size = a->stride;
    fd = ioctl (dev, UDMABUF_CREATE, &c);
    if (fd < 0) {
      *err = -errno;
      close (dev);
      slot_dmabufs_free (d);
      return NULL;
    }
    d->fds[d->n++] = fd;
  }
  close (dev);
  return d;
}

static const char dmabuf_key = 0;

static gboolean
udmabuf_available (void)
{
  int fd = open ("/dev/udmabuf", O_RDWR | O_CLOEXEC);

  if (fd < 0)
    return FALSE;
  close (fd);
  return TRUE;
}

/* Asked for (CONFIG_DMABUF): the slots of @seg as dmabufs, or NULL (said
 * in the debug log; the pool then gives pinned memory, which v4l2src
 * imports in io-mode=userptr). */
static const int *
get_slot_dmabufs (GstPinnedBufferPool * self, pf_segment * seg)
{
  ExportArgs a = { self->n_slots, self->slot_stride };
  SlotDmabufs *d;
  int err = 0;

  d = pf_segment_attach_once (seg, &dmabuf_key, export_slots, &a,
      slot_dmabufs_free, &err);
  if (d == NULL) {
    GST_INFO_OBJECT (self, "slots not exported as dmabufs (udmabuf: %s): "
        "pinned memory", g_strerror (-err));
    return NULL;
  }
  GST_INFO_OBJECT (self, "%u slots exported as dmabufs", d->n);
  return d->fds;
}

static gboolean
gst_pinned_buffer_pool_start (GstBufferPool * pool)
{
  GstPinnedBufferPool *self = GST_PINNED_BUFFER_POOL (pool);
  GstPinnedSegment *seg;
  pf_pool *pfpool = NULL;
  GError *err = NULL;
  gchar *name, *desc;
  int res;
  /* udmabuf refuses a memfd sealed against future writes (Linux 6.13 and
   * the stable kernels it was backported to): export the slots first,
   * seal after */
  gboolean seal_later = self->want_dmabuf
      && (self->segment_flags & GST_PINNED_SEGMENT_FLAG_SEAL_WRITERS)
      && udmabuf_available ();

  name = g_strdup_printf ("gst-pinned-pool-%s", GST_OBJECT_NAME (pool));
  seg = gst_pinned_segment_new_full (name, self->slot_stride * self->n_slots,
      seal_later ? self->segment_flags & ~GST_PINNED_SEGMENT_FLAG_SEAL_WRITERS
      : self->segment_flags, &err);
  g_free (name);
  if (seg == NULL) {
    GST_ERROR_OBJECT (pool, "%s", err->message);
    g_error_free (err);
    return FALSE;
  }
  res = pf_pool_new (seg, self->slot_stride, self->n_slots, &pfpool);
  pf_segment_unref (seg);       /* the pf_pool holds it */
  if (res < 0) {
    GST_ERROR_OBJECT (pool, "pf_pool_new: %s", g_strerror (-res));
    return FALSE;
  }

  GST_OBJECT_LOCK (pool);
  self->segment = seg;
  g_atomic_pointer_set (&self->pfpool, pfpool);
  GST_OBJECT_UNLOCK (pool);
  self->slot_dmabufs = self->want_dmabuf ? get_slot_dmabufs (self, seg) : NULL;
  /* every mapping made from now on (the consumers') read-only, as
   * SEAL_WRITERS does at creation */
  if (seal_later && fcntl (pf_segment_get_fd (seg), F_ADD_SEALS,
          F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) < 0)
    GST_WARNING_OBJECT (pool, "could not seal the segment against writers: "
        "%s", g_strerror (errno));

  desc = gst_pinned_segment_describe_state (pf_segment_get_state (seg));
  GST_INFO_OBJECT (pool, "segment %" G_GUINT64_FORMAT " (fd %d): %u slots of %"
      G_GSIZE_FORMAT " bytes, %s", pf_segment_get_id (seg),
      pf_segment_get_fd (seg), self->n_slots, self->slot_stride, desc);
  g_free (desc);

  if (!GST_BUFFER_POOL_CLASS (parent_class)->start (pool)) {
    GST_OBJECT_LOCK (pool);
    self->segment = NULL;
    g_atomic_pointer_set (&self->pfpool, NULL);
    GST_OBJECT_UNLOCK (pool);
    pf_pool_unref (pfpool);
    return FALSE;
  }
  return TRUE;
}

static gboolean
gst_pinned_buffer_pool_stop (GstBufferPool * pool)
{
  GstPinnedBufferPool *self = GST_PINNED_BUFFER_POOL (pool);
  pf_pool *pfpool;

  /* Frees the queued buffers: their slots return to the pf_pool. */
  if (!GST_BUFFER_POOL_CLASS (parent_class)->stop (pool))
    return FALSE;

  GST_OBJECT_LOCK (pool);
  pfpool = self->pfpool;
  self->segment = NULL;
  self->slot_dmabufs = NULL;
  g_atomic_pointer_set (&self->pfpool, NULL);
  GST_OBJECT_UNLOCK (pool);

  /* Memories still alive elsewhere keep the pf_pool and so the segment
   * (and its mapping). */
  pf_pool_unref (pfpool);
  return TRUE;
}

/* The active pf_pool, with a reference, or NULL. */
static pf_pool *
get_pf_pool (GstPinnedBufferPool * self)
{
  pf_pool *pfpool;

  GST_OBJECT_LOCK (self);
  pfpool = pf_pool_ref (self->pfpool);
  GST_OBJECT_UNLOCK (self);
  return pfpool;
}

static void
set_flushing (GstPinnedBufferPool * self, gboolean flushing)
{
  pf_pool *pfpool = get_pf_pool (self);

  /* The base class flushes only an active (started) pool. */
  pf_pool_set_flushing (pfpool, flushing);
  pf_pool_unref (pfpool);
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

/* Blocks until a buffer was released or a slot returned since @change was
 * read from @seen (or the pool flushes, or was restarted meanwhile). */
static void
wait_for_change (GstPinnedBufferPool * self, pf_pool * seen, guint32 change)
{
  pf_pool *pfpool = get_pf_pool (self);

  GST_LOG_OBJECT (self, "no buffer, waiting for a release");
  if (pfpool != NULL && pfpool == seen)
    pf_pool_wait_change (pfpool, change, -1);
  pf_pool_unref (pfpool);
}

/* The starved hook, if any: called once an acquire found the pool empty,
 * before it looks again (and then waits); returns what goes to the fed
 * hook. */
static gpointer
starved_begin (GstPinnedBufferPool * self, gboolean * called)
{
  GstPinnedBufferPoolStarvedFunc starved;
  gpointer data;

  GST_OBJECT_LOCK (self);
  starved = self->starved;
  data = self->starved_data;
  GST_OBJECT_UNLOCK (self);
  *called = starved != NULL;
  return starved ? starved (GST_BUFFER_POOL (self), data) : NULL;
}

static void
starved_end (GstPinnedBufferPool * self, gpointer token)
{
  GstPinnedBufferPoolFedFunc fed;
  gpointer data;

  GST_OBJECT_LOCK (self);
  fed = self->fed;
  data = self->starved_data;
  GST_OBJECT_UNLOCK (self);
  if (fed)
    fed (GST_BUFFER_POOL (self), token, data);
}

static GstFlowReturn
gst_pinned_buffer_pool_acquire_buffer (GstBufferPool * pool,
    GstBuffer ** buffer, GstBufferPoolAcquireParams * params)
{
  GstPinnedBufferPool *self = POOL_CAST (pool);
  GstBufferPoolAcquireParams p = { 0, };
  GstFlowReturn ret;
  gboolean dontwait, starving = FALSE;
  gpointer token = NULL;

  if (params)
    p = *params;
  dontwait = (p.flags & GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT) != 0;
  p.flags |= GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT;

  for (;;) {
    /* Snapshot before trying: a release after this point is not missed.
     * (No pf_pool: inactive, and the base class answers FLUSHING.) */
    pf_pool *seen = g_atomic_pointer_get (&self->pfpool);
    guint32 change = pf_pool_get_change (seen);

    ret = PARENT_POOL_CLASS->acquire_buffer (pool, buffer, &p);
    if (ret != GST_FLOW_EOS)
      break;
    if (!starving) {
      /* empty: the owner's hook (it may give buffers back now, and have
       * later ones woken for), then once more, DONTWAIT or not */
      token = starved_begin (self, &starving);
      if (starving)
        continue;
    }
    if (dontwait)
      break;
    /* Flushing: the base class answers GST_FLOW_FLUSHING next time. */
    wait_for_change (self, seen, change);
  }
  if (starving)
    starved_end (self, token);
  return ret;
}

static void
gst_pinned_buffer_pool_release_buffer (GstBufferPool * pool, GstBuffer * buffer)
{
  GstPinnedBufferPool *self = POOL_CAST (pool);

  /* Back in the queue, or discarded (its slot follows its memory). */
  PARENT_POOL_CLASS->release_buffer (pool, buffer);
  pf_pool_notify (g_atomic_pointer_get (&self->pfpool));
}

static GstFlowReturn
flow_from_loan_error (int res)
{
  return res == -ECANCELED ? GST_FLOW_FLUSHING : GST_FLOW_EOS;
}

static GstFlowReturn
gst_pinned_buffer_pool_alloc_buffer (GstBufferPool * pool,
    GstBuffer ** buffer, GstBufferPoolAcquireParams * params)
{
  GstPinnedBufferPool *self = GST_PINNED_BUFFER_POOL (pool);
  pf_pool *pfpool = get_pf_pool (self);
  gboolean dontwait = params != NULL
      && (params->flags & GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT);
  pf_pool_slot slot;
  SlotRef *ref;
  GstMemory *mem;
  GstBuffer *buf;
  int res;

  if (pfpool == NULL) {
    GST_ERROR_OBJECT (pool, "not started");
    return GST_FLOW_ERROR;
  }

  /* The base class bounds the number of buffers; a slot can still be busy
   * if the memory of a discarded buffer lives on elsewhere. Through
   * acquire_buffer() (always DONTWAIT here) that is GST_FLOW_EOS and the
   * acquire waits for the slot; a direct caller without DONTWAIT (the base
   * class's preallocation) waits here. */
  res = pf_pool_loan (pfpool, dontwait ? 0 : -1, &slot);
  if (res < 0) {
    GST_DEBUG_OBJECT (pool, "no slot: %s", g_strerror (-res));
    pf_pool_unref (pfpool);
    return flow_from_loan_error (res);
  }

  if (self->slot_dmabufs) {
    /* the slot's dmabuf, tagged with its range of the segment */
    mem = gst_dmabuf_allocator_alloc_with_flags (self->dmabuf_allocator,
        self->slot_dmabufs[slot.index], self->size,
        GST_FD_MEMORY_FLAG_DONT_CLOSE);
    gst_pinned_memory_tag_dmabuf (mem, pf_pool_get_segment (pfpool),
        slot.offset);
  } else {
    mem = gst_pinned_allocator_wrap (self->allocator,
        pf_pool_get_segment (pfpool), slot.offset, self->size);
  }
  /* The weak reference owns the loan and the pf_pool reference. */
  ref = g_new (SlotRef, 1);
  ref->pool = pfpool;
  ref->index = slot.index;
  gst_mini_object_weak_ref (GST_MINI_OBJECT_CAST (mem), slot_memory_freed, ref);

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

  GST_LOG_OBJECT (pool, "buffer %p in slot %u (offset %" G_GUINT64_FORMAT ")",
      buf, slot.index, slot.offset);
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
  GstPinnedBufferPool *self = POOL_CAST (pool);

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

void
gst_pinned_buffer_pool_set_starved_func (GstBufferPool * pool,
    GstPinnedBufferPoolStarvedFunc starved, GstPinnedBufferPoolFedFunc fed,
    gpointer user_data, GDestroyNotify notify)
{
  GstPinnedBufferPool *self;
  GDestroyNotify old_notify;
  gpointer old_data;

  g_return_if_fail (GST_IS_PINNED_BUFFER_POOL (pool));
  self = GST_PINNED_BUFFER_POOL (pool);
  GST_OBJECT_LOCK (self);
  old_notify = self->starved_notify;
  old_data = self->starved_data;
  self->starved = starved;
  self->fed = fed;
  self->starved_data = user_data;
  self->starved_notify = notify;
  GST_OBJECT_UNLOCK (self);
  if (old_notify)
    old_notify (old_data);
}

static void
gst_pinned_buffer_pool_finalize (GObject * object)
{
  GstPinnedBufferPool *self = GST_PINNED_BUFFER_POOL (object);

  if (self->starved_notify)
    self->starved_notify (self->starved_data);

  /* The base class's dispose deactivated the pool: stop ran, unless
   * buffers were still out (then the pf_pool is dropped here). */
  pf_pool_unref (self->pfpool);
  gst_object_unref (self->allocator);
  gst_object_unref (self->dmabuf_allocator);

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
  self->dmabuf_allocator = gst_dmabuf_allocator_new ();
  self->segment_flags = GST_PINNED_BUFFER_POOL_DEFAULT_SEGMENT_FLAGS;
}

GstBufferPool *
gst_pinned_buffer_pool_new (void)
{
  GstBufferPool *pool = g_object_new (GST_TYPE_PINNED_BUFFER_POOL, NULL);

  gst_object_ref_sink (pool);
  return pool;
}

GstBufferPool *
gst_pinned_buffer_pool_new_configured (GstCaps * caps, guint size,
    guint min_buffers, guint max_buffers, gboolean video_meta,
    GstPinnedSegmentFlags segment_flags)
{
  GstBufferPool *pool = gst_pinned_buffer_pool_new ();
  GstStructure *config = gst_buffer_pool_get_config (pool);

  gst_buffer_pool_config_set_params (config, caps, size, min_buffers,
      max_buffers);
  if (video_meta)
    gst_buffer_pool_config_add_option (config,
        GST_BUFFER_POOL_OPTION_VIDEO_META);
  gst_pinned_buffer_pool_config_set_segment_flags (config, segment_flags);
  if (!gst_buffer_pool_set_config (pool, config)) {
    GST_WARNING_OBJECT (pool, "refused its configuration (%u..%u buffers of "
        "%u bytes)", min_buffers, max_buffers, size);
    gst_object_unref (pool);
    return NULL;
  }
  return pool;
}
