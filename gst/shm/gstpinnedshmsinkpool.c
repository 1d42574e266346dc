/* GStreamer pinnedflow: pinnedshmsink's pinned pools
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The pools of pinnedshmsink: how many slots they get (pool-size, or
 * sized for max-clients consumers) and the warning when that cannot keep
 * stuck consumers off the others' slots; the pinned pool proposed
 * upstream (ALLOCATION), its slots also offered as dmabufs where the
 * kernel has udmabuf (an INFO message once per sink where not); the copy
 * pool and the copy of a buffer in other memory into it (read by
 * gstpinnedshmsinkdmabuf.c); the warning when
 * a pool could not be page-locked; the pools' starved hook, which asks
 * the producer for the consumers' release doorbells while a thread waits
 * for a buffer.
 *
 * Threads and lifetimes: the copy pool is the streaming thread's, replaced
 * under the sink's lock (unlock() sets it flushing); the slot count reads
 * the properties under the object lock.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedshmsink-private.h"

#include <gst/pinnedflow/gstpinnedallocator.h>
#include <gst/pinnedflow/gstpinnedbufferpool.h>

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#define GST_CAT_DEFAULT gst_pinned_shm_sink_debug

#define MAX_CUDA_POOL_SIZE 32

static gboolean
gst_pinned_cuda_caps_is_cuda_memory (GstCaps * caps)
{
  GstCapsFeatures *f = gst_caps_get_features (caps, 0);

  return f != NULL && !gst_caps_features_is_any (f)
      && gst_caps_features_contains (f, "memory:CUDAMemory");
}

/* Segment flags of every pool the sink creates: mlock where allowed, and
 * every mapping made after ours (the consumers') is read-only. */
#define POOL_SEGMENT_FLAGS \
  (GST_PINNED_SEGMENT_FLAG_LOCK | GST_PINNED_SEGMENT_FLAG_SEAL_WRITERS)

/* Slots of the pools: pool-size, or (0: auto) room for every consumer to
 * hold max-client-buffers frames plus POOL_RESERVE. Object lock held. */
guint
gst_pinned_shm_sink_pool_count_locked (GstPinnedShmSink * self)
{
  guint clients =
      self->max_clients ? self->max_clients : UNLIMITED_POOL_CLIENTS;

  if (self->pool_size != 0)
    return self->pool_size;
  return MIN ((guint64) clients * self->max_client_buffers + POOL_RESERVE,
      MAX_POOL_SIZE);
}

/* Posts a warning when the pool cannot give every consumer
 * max-client-buffers frames plus POOL_RESERVE (issue 26: limits that bite
 * speak): an explicit pool-size below that, the automatic one capped at
 * MAX_POOL_SIZE, or max-clients=0 (no bound at all). Consumers that stop
 * releasing can then take every slot and stall the others: the promise is
 * withdrawn, on the bus. */
void
gst_pinned_shm_sink_check_pool_fits (GstPinnedShmSink * self)
{
  guint count, pool_size, max_clients, mcb;
  guint64 need;

  GST_OBJECT_LOCK (self);
  count = gst_pinned_shm_sink_pool_count_locked (self);
  pool_size = self->pool_size;
  max_clients = self->max_clients;
  mcb = self->max_client_buffers;
  GST_OBJECT_UNLOCK (self);
  need = max_clients * (guint64) mcb + POOL_RESERVE;

  if (max_clients == 0) {
    GST_DEBUG_OBJECT (self, "max-clients=0: pool of %u buffers, no bound "
        "on consumers", count);
    GST_ELEMENT_WARNING (self, RESOURCE, SETTINGS,
        ("max-clients=0 (no limit): consumers that stop releasing can take "
            "every slot of the %u-buffer pool and stall the others", count),
        ("the pool is sized for %d consumers x max-client-buffers %u + %d; "
            "set max-clients to keep stuck consumers off the others' "
            "slots", UNLIMITED_POOL_CLIENTS, mcb, POOL_RESERVE));
  } else if (count < need && pool_size != 0) {
    GST_DEBUG_OBJECT (self, "pool-size %u < %" G_GUINT64_FORMAT " needed",
        pool_size, need);
    GST_ELEMENT_WARNING (self, RESOURCE, SETTINGS,
        ("pool-size %u is too small for max-clients %u: consumers that stop "
            "releasing can take every slot and stall the others",
            pool_size, max_clients),
        ("needs max-clients x max-client-buffers + %d = %" G_GUINT64_FORMAT
            "; leave pool-size at 0 to size it so (at most %d)",
            POOL_RESERVE, need, MAX_POOL_SIZE));
  } else if (count < need) {
    GST_DEBUG_OBJECT (self, "automatic pool capped at %u < %"
        G_GUINT64_FORMAT " needed", count, need);
    GST_ELEMENT_WARNING (self, RESOURCE, SETTINGS,
        ("The pool is capped at %u buffers, too few for max-clients %u x "
            "max-client-buffers %u: consumers that stop releasing can take "
            "every slot and stall the others", count, max_clients, mcb),
        ("needs max-clients x max-client-buffers + %d = %" G_GUINT64_FORMAT
            "; lower max-clients to %u or max-client-buffers to %u to keep "
            "stuck consumers off the others' slots", POOL_RESERVE, need,
            (MAX_POOL_SIZE - POOL_RESERVE) / mcb,
            (MAX_POOL_SIZE - POOL_RESERVE) / max_clients));
  }
}

/* Replaces the copy pool (under the lock: unlock() sets it flushing). */
void
gst_pinned_shm_sink_set_copy_pool (GstPinnedShmSink * self,
    GstBufferPool * pool)
{
  GstBufferPool *old;

  g_mutex_lock (&self->lock);
  old = self->copy_pool;
  self->copy_pool = pool;
  if (pool && self->unlocked)
    gst_buffer_pool_set_flushing (pool, TRUE);
  g_mutex_unlock (&self->lock);
  if (old) {
    /* Buffers still held by clients go away when released. */
    gst_buffer_pool_set_active (old, FALSE);
    gst_object_unref (old);
  }
}

/* The pools' starved hook (gst_pinned_buffer_pool_set_starved_func ()):
 * a thread that finds a pool empty (upstream in the proposed pool, render
 * in the copy pool) waits for the consumers' releases, and consumers with
 * a frame ring ring the release doorbell only while the producer says it
 * waits (pf_producer_want_releases (), issue 35). The hook asks for them,
 * which also takes what they released so far: frame_released
 * (gstpinnedshmsinkbus.c) gives those buffers back to their pool on this
 * thread, before the acquire looks again. A weak reference: the proposed
 * pool may outlive the sink upstream. The producer's reference goes to
 * the fed hook, which ends the wait on the same producer even if the
 * sink restarted meanwhile. Takes self->lock alone (the lock order of
 * gstpinnedshmsink-private.h: from render, under the preroll lock). */
static gpointer
pool_starved (GstBufferPool * pool, gpointer user_data)
{
  GstPinnedShmSink *self = g_weak_ref_get (user_data);
  pf_producer *producer = NULL;

  if (self == NULL)
    return NULL;
  g_mutex_lock (&self->lock);
  if (self->producer)
    producer = pf_producer_ref (self->producer);
  g_mutex_unlock (&self->lock);
  gst_object_unref (self);
  if (producer)
    pf_producer_want_releases (producer, 1);
  return producer;
}

static void
pool_fed (GstBufferPool * pool, gpointer token, gpointer user_data)
{
  pf_producer *producer = token;

  if (producer == NULL)
    return;
  pf_producer_want_releases (producer, 0);
  pf_producer_unref (producer);
}

static void
pool_hook_free (gpointer user_data)
{
  g_weak_ref_clear (user_data);
  g_free (user_data);
}

/* A pinned pool for @caps with @count buffers of @size bytes, with the
 * starved hook. */
static GstBufferPool *
make_pool (GstPinnedShmSink * self, GstCaps * caps, gsize size, guint count,
    gboolean video_meta)
{
  GstBufferPool *pool = gst_pinned_buffer_pool_new_configured (caps, size,
      count, count, video_meta, POOL_SEGMENT_FLAGS);
  GWeakRef *ref;

  if (pool == NULL) {
    GST_WARNING_OBJECT (self, "pool refused its configuration");
    return NULL;
  }
  ref = g_new0 (GWeakRef, 1);
  g_weak_ref_init (ref, self);
  gst_pinned_buffer_pool_set_starved_func (pool, pool_starved, pool_fed, ref,
      pool_hook_free);
  return pool;
}

/* Asks @pool to export its slots as dmabufs too (for v4l2src
 * io-mode=dmabuf-import and other importers), which it does where the
 * kernel has udmabuf. Without /dev/udmabuf the slots are pinned memory
 * only, as before: said once per sink on the bus (an INFO message), since
 * a dmabuf importer upstream then fails to start. */
static void
offer_dmabuf (GstPinnedShmSink * self, GstBufferPool * pool)
{
  GstStructure *config = gst_buffer_pool_get_config (pool);
  int fd;

  gst_structure_set (config, "pinned-dmabuf", G_TYPE_BOOLEAN, TRUE, NULL);
  if (!gst_buffer_pool_set_config (pool, config))
    GST_DEBUG_OBJECT (self, "pool refused the dmabuf option");

  fd = open ("/dev/udmabuf", O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    close (fd);
    return;
  }
  if (g_object_get_data (G_OBJECT (self), "pinned-dmabuf-said"))
    return;
  g_object_set_data (G_OBJECT (self), "pinned-dmabuf-said",
      GINT_TO_POINTER (1));
  GST_ELEMENT_INFO (self, RESOURCE, NOT_FOUND,
      ("Frames are offered as pinned memory, not as dmabufs (no udmabuf)"),
      ("/dev/udmabuf: %s; a dmabuf importer (v4l2src "
          "io-mode=dmabuf-import) cannot use the pool: io-mode=userptr "
          "fills it without a copy, io-mode=mmap with one",
          g_strerror (errno)));
}

gboolean
gst_pinned_shm_sink_propose_allocation (GstBaseSink * bsink, GstQuery * query)
{
  /* a plain cast: the vfunc is installed on this class only, and the
   * checked one would call back into gstpinnedshmsink.c for the type
   * (a call circle, tools/check-layout.py) */
  GstPinnedShmSink *self = (GstPinnedShmSink *) bsink;
  GstCaps *caps = NULL, *pool_caps;
  gboolean need_pool;
  GstVideoInfo info;
  GstBufferPool *pool;
  guint count;

  gst_query_parse_allocation (query, &caps, &need_pool);
  gst_query_add_allocation_meta (query, GST_VIDEO_META_API_TYPE, NULL);

  /* Only raw video has a size known in advance; anything else comes in
   * whatever upstream allocates and takes the copy path. */
  if (caps == NULL || !gst_pinned_shm_sink_video_info (caps, &info)) {
    GST_DEBUG_OBJECT (self, "no pool for caps %" GST_PTR_FORMAT, caps);
    return TRUE;
  }

  GST_OBJECT_LOCK (self);
  count = gst_pinned_shm_sink_pool_count_locked (self);
  GST_OBJECT_UNLOCK (self);

  /* memory:CUDAMemory: libgstcuda's exportable virtual-memory pool where
   * there is one (1.24+: frames published with no copy), else nothing of
   * ours (upstream's GstCudaMemory is copied once on the device) */
  if (gst_pinned_cuda_caps_is_cuda_memory (caps)) {
    /* each memory is a device segment of its own: at most
     * MAX_CUDA_POOL_SIZE, well inside a consumer's default 64 segments */
    gst_pinned_shm_sink_cuda_propose (self, query, caps, &info,
        MIN (count + POOL_RESERVE, MAX_CUDA_POOL_SIZE));
    return TRUE;
  }

  /* memory:PinnedflowCUDA sent as device frames: slots of a device
   * segment as buffers, which pinnedcudaupload writes into (no copy) */
  if (gst_pinned_shm_sink_device_propose (self, query, caps, &info,
          MIN (count, MAX_CUDA_POOL_SIZE)))
    return TRUE;

  /* memory:DMABuf caps (a DMA_DRM format too) are the slots' layout in
   * plain terms for the pool; its memory is dmabufs where it can be */
  pool_caps = gst_pinned_shm_sink_wire_caps (caps, &info);
  pool = make_pool (self, pool_caps, GST_VIDEO_INFO_SIZE (&info), count, TRUE);
  gst_caps_unref (pool_caps);
  if (pool == NULL)
    return TRUE;
  offer_dmabuf (self, pool);
  GST_DEBUG_OBJECT (self, "proposing pinned pool of %u x %" G_GSIZE_FORMAT
      " bytes", count, GST_VIDEO_INFO_SIZE (&info));
  gst_query_add_allocation_pool (query, pool, GST_VIDEO_INFO_SIZE (&info),
      count, count);
  gst_object_unref (pool);
  return TRUE;
}

/* One buffer of the sink's own pool holding a copy of @buf, or NULL with
 * *@ret set (GST_FLOW_OK: the pool is empty and the stream live, drop the
 * frame; GST_FLOW_FLUSHING: flushing while waiting for a buffer). A
 * non-live stream waits for a buffer: its every-frame consumers release
 * theirs (pf_producer_wait_ready() saw to that), and dropping would lose
 * the frame for them. */
GstBuffer *
gst_pinned_shm_sink_copy_to_pool (GstPinnedShmSink * self, GstBuffer * buf,
    GstFlowReturn * ret)
{
  GstBufferPoolAcquireParams params = { 0, };
  gsize size = gst_buffer_get_size (buf);
  GstBuffer *copy = NULL;
  GstMapInfo map = GST_MAP_INFO_INIT;
  GstFlowReturn fret;

  *ret = GST_FLOW_OK;
  if (self->copy_pool == NULL || self->copy_pool_size < size) {
    /* a new segment (memfd, mmap, mlock) is setup work: grow by half at
     * least, so that a stream of growing buffers does not pay it per
     * frame */
    gsize slot = MAX (size, self->copy_pool_size + self->copy_pool_size / 2);
    GstBufferPool *pool;
    guint count;

    gst_pinned_shm_sink_set_copy_pool (self, NULL);
    GST_OBJECT_LOCK (self);
    count = gst_pinned_shm_sink_pool_count_locked (self);
    GST_OBJECT_UNLOCK (self);
    /* no caps: slots of exactly the configured size (video caps would
     * size them from the caps, smaller than a padded buffer) */
    pool = make_pool (self, NULL, slot, count, FALSE);
    if (pool == NULL || !gst_buffer_pool_set_active (pool, TRUE)) {
      GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
          ("Could not create a pinned pool of %u x %" G_GSIZE_FORMAT " bytes",
              count, slot), (NULL));
      gst_clear_object (&pool);
      self->copy_pool_size = 0;
      *ret = GST_FLOW_ERROR;
      return NULL;
    }
    gst_pinned_shm_sink_set_copy_pool (self, pool);
    self->copy_pool_size = slot;
    GST_DEBUG_OBJECT (self, "copy pool of %u x %" G_GSIZE_FORMAT " bytes",
        count, slot);
  }

  if (self->live)
    params.flags = GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT;
  fret = gst_buffer_pool_acquire_buffer (self->copy_pool, &copy, &params);
  while (fret == GST_FLOW_FLUSHING) {
    /* unlocked while waiting (a flush, or PLAYING to PAUSED, whose
     * unlock_stop runs once we wait for preroll): as for a client */
    fret = gst_base_sink_wait_preroll (GST_BASE_SINK (self));
    if (fret != GST_FLOW_OK)
      break;
    fret = gst_buffer_pool_acquire_buffer (self->copy_pool, &copy, &params);
  }
  if (fret == GST_FLOW_EOS && self->live) {
    /* every buffer is held by some client: never wait for them */
    GST_LOG_OBJECT (self, "copy pool empty, dropping frame");
    return NULL;
  } else if (fret != GST_FLOW_OK) {
    *ret = fret;
    return NULL;
  }

  if (!gst_buffer_map (copy, &map, GST_MAP_WRITE) || map.size < size) {
    if (map.memory)
      gst_buffer_unmap (copy, &map);
    gst_buffer_unref (copy);
    *ret = GST_FLOW_ERROR;
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE, ("Could not map pool buffer"),
        (NULL));
    return NULL;
  }
  if (!gst_pinned_shm_sink_copy_buffer (self, buf, map.data, size)) {
    gst_buffer_unmap (copy, &map);
    gst_buffer_unref (copy);
    *ret = GST_FLOW_ERROR;
    return NULL;
  }
  gst_buffer_unmap (copy, &map);
  gst_buffer_set_size (copy, size);
  return copy;
}

/* Warns once per stream when the pool of @seg could not be page-locked
 * (RLIMIT_MEMLOCK, 8 MiB by default for a user): consumers still get every
 * frame, but the pages may be swapped and a CUDA consumer pins them
 * itself (or copies from pageable memory). */
void
gst_pinned_shm_sink_check_locked (GstPinnedShmSink * self, pf_segment * seg)
{
  guint64 id = pf_segment_get_id (seg);
  guint state;
  struct rlimit rl = { 0, 0 };
  gchar *what;

  if (id == self->lock_checked_segment || self->lock_warned)
    return;
  self->lock_checked_segment = id;
  state = pf_segment_get_state (seg);
  if (!(state & PF_SEGMENT_STATE_LOCK_REFUSED))
    return;
  self->lock_warned = TRUE;
  getrlimit (RLIMIT_MEMLOCK, &rl);
  what = gst_pinned_segment_describe_state (state);
  GST_ELEMENT_WARNING (self, RESOURCE, NO_SPACE_LEFT,
      ("Could not page-lock the shared frame pool (%" G_GSIZE_FORMAT
          " bytes); frames are sent from unlocked memory",
          (gsize) pf_segment_get_size (seg)),
      ("mlock refused (%s); RLIMIT_MEMLOCK is %" G_GUINT64_FORMAT
          " bytes: raise it (ulimit -l, limits.conf memlock) or lower "
          "pool-size/max-clients", what, (guint64) rl.rlim_cur));
  g_free (what);
}
