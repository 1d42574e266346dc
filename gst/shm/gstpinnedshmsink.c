/* GStreamer pinnedflow: publish frames to other processes
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/**
 * SECTION:element-pinnedshmsink
 * @title: pinnedshmsink
 * @see_also: pinnedshmsrc
 *
 * Publishes every buffer it renders to any number of pinnedshmsrc elements in
 * other processes, over a unix socket at #GstPinnedShmSink:socket-path.
 *
 * The sink answers ALLOCATION queries with a #GstPinnedBufferPool of
 * #GstPinnedShmSink:pool-size buffers in one sealed memfd segment, so an
 * upstream element that uses the pool writes straight into shared memory and
 * its frames cross with no copy: the segment's fd is sent once per client and
 * each frame is a small message naming a slice of it. Buffers in any other
 * memory are copied once into the sink's own pinned pool (counted in the
 * `copies` field of #GstPinnedShmSink:stats). A client that holds
 * #GstPinnedShmSink:max-client-buffers frames skips the next ones; it never
 * blocks the sink or the other clients.
 *
 * Caps, timestamps (PTS as CLOCK_MONOTONIC time), flags, video meta and EOS
 * reach the consumers.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 videotestsrc is-live=true ! video/x-raw,format=RGBA,width=640,height=480 ! pinnedshmsink socket-path=/tmp/pf.sock
 * gst-launch-1.0 pinnedshmsrc socket-path=/tmp/pf.sock connect-timeout=-1 ! videoconvert ! fakesink sync=true
 * ]|
 * The first pipeline publishes a live test pattern; the second receives it
 * in another process, in step with the producer's clock (start them in any
 * order thanks to connect-timeout=-1; put autovideosink in place of fakesink
 * to see it on a display). The producer renders frames whether or not
 * anyone is connected: frames nobody receives are counted as drops.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedshmsink.h"
#include "gstpinnedshmcommon.h"
#include "gstpinnedshmframe.h"

#include <gst/video/video.h>
#include <gst/pinnedflow/gstpinnedallocator.h>
#include <gst/pinnedflow/gstpinnedbufferpool.h>

#include <pinnedflow/pf-producer.h>

GST_DEBUG_CATEGORY_STATIC (gst_pinned_shm_sink_debug);
#define GST_CAT_DEFAULT gst_pinned_shm_sink_debug

#define DEFAULT_SOCKET_PATH NULL
#define DEFAULT_PERMS 0600
#define DEFAULT_POOL_SIZE 8
#define MIN_POOL_SIZE 2
#define MAX_POOL_SIZE 256
#define DEFAULT_MAX_CLIENT_BUFFERS 4
#define MAX_MAX_CLIENT_BUFFERS 256
#define DEFAULT_WAIT_FOR_CONNECTION FALSE

/* Segment flags of every pool the sink creates: mlock where allowed, and
 * every mapping made after ours (the consumers') is read-only. */
#define POOL_SEGMENT_FLAGS \
  (GST_PINNED_SEGMENT_FLAG_LOCK | GST_PINNED_SEGMENT_FLAG_SEAL_WRITERS)

enum
{
  PROP_0,
  PROP_SOCKET_PATH,
  PROP_PERMS,
  PROP_POOL_SIZE,
  PROP_MAX_CLIENT_BUFFERS,
  PROP_WAIT_FOR_CONNECTION,
  PROP_NUM_CLIENTS,
  PROP_STATS,
  N_PROPERTIES
};

static GParamSpec *properties[N_PROPERTIES];

enum
{
  SIGNAL_CLIENT_CONNECTED,
  SIGNAL_CLIENT_DISCONNECTED,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

struct _GstPinnedShmSink
{
  GstBaseSink parent;

  /* properties, under the object lock */
  gchar *socket_path;
  guint perms;
  guint pool_size;
  guint max_client_buffers;

  /* lock protects everything below; cond wakes a render waiting for a
   * client. Never held across pf_producer_close() (its callbacks take it). */
  GMutex lock;
  GCond cond;
  pf_producer *producer;
  gboolean wait_for_connection;
  gboolean unlocked;
  guint n_clients;

  /* streaming thread only */
  GstVideoInfo vinfo;
  gboolean is_video;
  GstBufferPool *copy_pool;
  gsize copy_pool_size;

  gboolean clock_is_monotonic;

  /* statistics, under lock */
  guint64 frames;
  guint64 bytes;
  guint64 zero_copy_frames;
  guint64 copies;
  guint64 drops;
  guint64 in_flight;
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS_ANY);

#define gst_pinned_shm_sink_parent_class parent_class
G_DEFINE_TYPE (GstPinnedShmSink, gst_pinned_shm_sink, GST_TYPE_BASE_SINK);
GST_ELEMENT_REGISTER_DEFINE (pinnedshmsink, "pinnedshmsink", GST_RANK_NONE,
    GST_TYPE_PINNED_SHM_SINK);

/* ------------------------------------------------------------------------ */
/* Producer callbacks: run on the transport's I/O thread or in close(). */

static void
on_frame_released (void *user_data, void *frame_token)
{
  GstPinnedShmSink *self = user_data;

  gst_buffer_unref (GST_BUFFER_CAST (frame_token));
  g_mutex_lock (&self->lock);
  if (self->in_flight > 0)
    self->in_flight--;
  g_mutex_unlock (&self->lock);
}

static void
on_client_connected (void *user_data, const pf_client_info * info)
{
  GstPinnedShmSink *self = user_data;

  GST_INFO_OBJECT (self, "client %u connected (pid %d, uid %u)",
      info->client_id, info->pid, info->uid);
  g_mutex_lock (&self->lock);
  self->n_clients++;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);

  g_signal_emit (self, signals[SIGNAL_CLIENT_CONNECTED], 0,
      (guint) info->client_id, (gint) info->pid, (guint) info->uid);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_NUM_CLIENTS]);
}

static void
on_client_disconnected (void *user_data, const pf_client_info * info)
{
  GstPinnedShmSink *self = user_data;

  GST_INFO_OBJECT (self, "client %u (pid %d) disconnected: %s",
      info->client_id, info->pid, info->reason);
  g_mutex_lock (&self->lock);
  if (self->n_clients > 0)
    self->n_clients--;
  g_mutex_unlock (&self->lock);

  g_signal_emit (self, signals[SIGNAL_CLIENT_DISCONNECTED], 0,
      (guint) info->client_id, (gint) info->pid, (guint) info->uid);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_NUM_CLIENTS]);
}

/* ------------------------------------------------------------------------ */

static GstStructure *
gst_pinned_shm_sink_get_stats (GstPinnedShmSink * self)
{
  GstStructure *s;
  GValue clients = G_VALUE_INIT;
  pf_client_stats *cs = NULL;
  guint n = 0, i;
  pf_producer *producer = NULL;

  g_mutex_lock (&self->lock);
  if (self->producer)
    producer = pf_producer_ref (self->producer);
  s = gst_structure_new ("application/x-pinnedshmsink-stats",
      "frames", G_TYPE_UINT64, self->frames,
      "bytes", G_TYPE_UINT64, self->bytes,
      "zero-copy-frames", G_TYPE_UINT64, self->zero_copy_frames,
      "copies", G_TYPE_UINT64, self->copies,
      "drops", G_TYPE_UINT64, self->drops,
      "in-flight", G_TYPE_UINT64, self->in_flight, NULL);
  g_mutex_unlock (&self->lock);

  g_value_init (&clients, GST_TYPE_ARRAY);
  if (producer) {
    guint max = 16;

    /* The number of clients can grow between two calls: retry until the
     * array was big enough. */
    for (;;) {
      cs = g_renew (pf_client_stats, cs, max);
      n = pf_producer_get_client_stats (producer, cs, max);
      if (n <= max)
        break;
      max = n + 16;
    }
    pf_producer_unref (producer);
  }

  for (i = 0; i < n; i++) {
    GValue v = G_VALUE_INIT;
    GstStructure *c = gst_structure_new ("client",
        "id", G_TYPE_UINT, cs[i].client_id,
        "pid", G_TYPE_INT, cs[i].pid,
        "uid", G_TYPE_UINT, cs[i].uid,
        "sent", G_TYPE_UINT64, cs[i].frames_sent,
        "released", G_TYPE_UINT64, cs[i].frames_released,
        "dropped", G_TYPE_UINT64, cs[i].frames_dropped,
        "held", G_TYPE_UINT, cs[i].held,
        "bytes", G_TYPE_UINT64, cs[i].bytes_sent, NULL);

    g_value_init (&v, GST_TYPE_STRUCTURE);
    g_value_take_boxed (&v, c);
    gst_value_array_append_and_take_value (&clients, &v);
  }
  g_free (cs);

  gst_structure_take_value (s, "clients", &clients);
  return s;
}

static void
gst_pinned_shm_sink_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstPinnedShmSink *self = GST_PINNED_SHM_SINK (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_SOCKET_PATH:
      g_free (self->socket_path);
      self->socket_path = g_value_dup_string (value);
      break;
    case PROP_PERMS:
      self->perms = g_value_get_uint (value);
      break;
    case PROP_POOL_SIZE:
      self->pool_size = g_value_get_uint (value);
      break;
    case PROP_MAX_CLIENT_BUFFERS:
      self->max_client_buffers = g_value_get_uint (value);
      break;
    case PROP_WAIT_FOR_CONNECTION:
      /* under self->lock: a render waiting for a client re-reads it */
      g_mutex_lock (&self->lock);
      self->wait_for_connection = g_value_get_boolean (value);
      g_cond_broadcast (&self->cond);
      g_mutex_unlock (&self->lock);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_pinned_shm_sink_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstPinnedShmSink *self = GST_PINNED_SHM_SINK (object);

  switch (prop_id) {
    case PROP_SOCKET_PATH:
      GST_OBJECT_LOCK (self);
      g_value_set_string (value, self->socket_path);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_PERMS:
      GST_OBJECT_LOCK (self);
      g_value_set_uint (value, self->perms);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_POOL_SIZE:
      GST_OBJECT_LOCK (self);
      g_value_set_uint (value, self->pool_size);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_MAX_CLIENT_BUFFERS:
      GST_OBJECT_LOCK (self);
      g_value_set_uint (value, self->max_client_buffers);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_WAIT_FOR_CONNECTION:
      g_mutex_lock (&self->lock);
      g_value_set_boolean (value, self->wait_for_connection);
      g_mutex_unlock (&self->lock);
      break;
    case PROP_NUM_CLIENTS:
      g_mutex_lock (&self->lock);
      g_value_set_uint (value, self->n_clients);
      g_mutex_unlock (&self->lock);
      break;
    case PROP_STATS:
      g_value_take_boxed (value, gst_pinned_shm_sink_get_stats (self));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

static gboolean
gst_pinned_shm_sink_start (GstBaseSink * bsink)
{
  GstPinnedShmSink *self = GST_PINNED_SHM_SINK (bsink);
  pf_producer_config config = { 0, };
  pf_producer *producer = NULL;
  gchar *path;
  int err;

  GST_OBJECT_LOCK (self);
  path = g_strdup (self->socket_path);
  config.perms = self->perms;
  config.max_client_frames = self->max_client_buffers;
  GST_OBJECT_UNLOCK (self);

  if (path == NULL || path[0] == '\0') {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("No socket path set"), ("Set the socket-path property"));
    g_free (path);
    return FALSE;
  }

  config.socket_path = path;
  config.callbacks.frame_released = on_frame_released;
  config.callbacks.client_connected = on_client_connected;
  config.callbacks.client_disconnected = on_client_disconnected;
  config.callbacks.user_data = self;

  g_mutex_lock (&self->lock);
  self->n_clients = 0;
  self->unlocked = FALSE;
  self->frames = self->bytes = self->zero_copy_frames = 0;
  self->copies = self->drops = self->in_flight = 0;
  g_mutex_unlock (&self->lock);

  err = pf_producer_new (&config, &producer);
  if (err < 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_WRITE,
        ("Could not listen on socket \"%s\"", path),
        ("pf_producer_new: %s", g_strerror (-err)));
    g_free (path);
    return FALSE;
  }
  GST_INFO_OBJECT (self, "listening on %s", path);
  g_free (path);

  g_mutex_lock (&self->lock);
  self->producer = producer;
  g_mutex_unlock (&self->lock);

  gst_video_info_init (&self->vinfo);
  self->is_video = FALSE;
  return TRUE;
}

static gboolean
gst_pinned_shm_sink_stop (GstBaseSink * bsink)
{
  GstPinnedShmSink *self = GST_PINNED_SHM_SINK (bsink);
  pf_producer *producer;

  g_mutex_lock (&self->lock);
  producer = self->producer;
  self->producer = NULL;
  g_mutex_unlock (&self->lock);

  if (producer) {
    /* Hands every held frame back (frame_released) and joins the I/O
     * thread; the callbacks take self->lock, so it must not be held. */
    pf_producer_close (producer);
    pf_producer_unref (producer);
  }

  if (self->copy_pool) {
    gst_buffer_pool_set_active (self->copy_pool, FALSE);
    gst_clear_object (&self->copy_pool);
  }
  self->copy_pool_size = 0;

  g_mutex_lock (&self->lock);
  self->n_clients = 0;
  g_mutex_unlock (&self->lock);
  return TRUE;
}

static gboolean
gst_pinned_shm_sink_set_caps (GstBaseSink * bsink, GstCaps * caps)
{
  GstPinnedShmSink *self = GST_PINNED_SHM_SINK (bsink);
  gchar *str;
  int err;

  GST_DEBUG_OBJECT (self, "caps %" GST_PTR_FORMAT, caps);

  self->is_video = FALSE;
  if (gst_structure_has_name (gst_caps_get_structure (caps, 0), "video/x-raw")) {
    if (!gst_video_info_from_caps (&self->vinfo, caps)) {
      GST_ERROR_OBJECT (self, "invalid video caps %" GST_PTR_FORMAT, caps);
      return FALSE;
    }
    self->is_video = TRUE;
  }

  str = gst_caps_to_string (caps);
  g_mutex_lock (&self->lock);
  err = self->producer ? pf_producer_set_caps (self->producer, str) : -EPIPE;
  g_mutex_unlock (&self->lock);
  if (err < 0) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Could not publish caps"),
        ("pf_producer_set_caps (%s): %s", str, g_strerror (-err)));
    g_free (str);
    return FALSE;
  }
  g_free (str);
  return TRUE;
}

/* A pinned pool for @caps with @count buffers of @size bytes. */
static GstBufferPool *
make_pool (GstPinnedShmSink * self, GstCaps * caps, gsize size, guint count,
    gboolean video_meta)
{
  GstBufferPool *pool = gst_pinned_buffer_pool_new_configured (caps, size,
      count, count, video_meta, POOL_SEGMENT_FLAGS);

  if (pool == NULL)
    GST_WARNING_OBJECT (self, "pool refused its configuration");
  return pool;
}

static gboolean
gst_pinned_shm_sink_propose_allocation (GstBaseSink * bsink, GstQuery * query)
{
  GstPinnedShmSink *self = GST_PINNED_SHM_SINK (bsink);
  GstCaps *caps = NULL;
  gboolean need_pool;
  GstVideoInfo info;
  GstBufferPool *pool;
  guint count;

  gst_query_parse_allocation (query, &caps, &need_pool);
  gst_query_add_allocation_meta (query, GST_VIDEO_META_API_TYPE, NULL);

  /* Only raw video has a size known in advance; anything else comes in
   * whatever upstream allocates and takes the copy path. */
  if (caps == NULL || !gst_video_info_from_caps (&info, caps)) {
    GST_DEBUG_OBJECT (self, "no pool for caps %" GST_PTR_FORMAT, caps);
    return TRUE;
  }

  GST_OBJECT_LOCK (self);
  count = self->pool_size;
  GST_OBJECT_UNLOCK (self);

  pool = make_pool (self, caps, GST_VIDEO_INFO_SIZE (&info), count, TRUE);
  if (pool == NULL)
    return TRUE;
  GST_DEBUG_OBJECT (self, "proposing pinned pool of %u x %" G_GSIZE_FORMAT
      " bytes", count, GST_VIDEO_INFO_SIZE (&info));
  gst_query_add_allocation_pool (query, pool, GST_VIDEO_INFO_SIZE (&info),
      count, count);
  gst_object_unref (pool);
  return TRUE;
}

static gboolean
gst_pinned_shm_sink_event (GstBaseSink * bsink, GstEvent * event)
{
  GstPinnedShmSink *self = GST_PINNED_SHM_SINK (bsink);

  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS) {
    int err;

    g_mutex_lock (&self->lock);
    err = self->producer ? pf_producer_send_eos (self->producer) : 0;
    g_mutex_unlock (&self->lock);
    if (err < 0)
      GST_WARNING_OBJECT (self, "could not send EOS: %s", g_strerror (-err));
    else
      GST_DEBUG_OBJECT (self, "EOS sent to the clients");
  }

  return GST_BASE_SINK_CLASS (parent_class)->event (bsink, event);
}

static gboolean
gst_pinned_shm_sink_unlock (GstBaseSink * bsink)
{
  GstPinnedShmSink *self = GST_PINNED_SHM_SINK (bsink);

  g_mutex_lock (&self->lock);
  self->unlocked = TRUE;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
  return TRUE;
}

static gboolean
gst_pinned_shm_sink_unlock_stop (GstBaseSink * bsink)
{
  GstPinnedShmSink *self = GST_PINNED_SHM_SINK (bsink);

  g_mutex_lock (&self->lock);
  self->unlocked = FALSE;
  g_mutex_unlock (&self->lock);
  return TRUE;
}

static gboolean
gst_pinned_shm_sink_set_clock (GstElement * element, GstClock * clock)
{
  GstPinnedShmSink *self = GST_PINNED_SHM_SINK (element);

  self->clock_is_monotonic = gst_pinned_shm_clock_is_monotonic (clock);
  return GST_ELEMENT_CLASS (parent_class)->set_clock (element, clock);
}

/* One buffer of the sink's own pool holding a copy of @buf, or NULL with
 * *@ret set (GST_FLOW_OK: the pool is empty, drop the frame). */
static GstBuffer *
copy_to_pool (GstPinnedShmSink * self, GstBuffer * buf, GstFlowReturn * ret)
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
    guint count;

    if (self->copy_pool) {
      /* Buffers still held by clients go away when released. */
      gst_buffer_pool_set_active (self->copy_pool, FALSE);
      gst_clear_object (&self->copy_pool);
    }
    GST_OBJECT_LOCK (self);
    count = self->pool_size;
    GST_OBJECT_UNLOCK (self);
    /* no caps: slots of exactly the configured size (video caps would
     * size them from the caps, smaller than a padded buffer) */
    self->copy_pool = make_pool (self, NULL, slot, count, FALSE);
    if (self->copy_pool == NULL
        || !gst_buffer_pool_set_active (self->copy_pool, TRUE)) {
      GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
          ("Could not create a pinned pool of %u x %" G_GSIZE_FORMAT " bytes",
              count, slot), (NULL));
      gst_clear_object (&self->copy_pool);
      self->copy_pool_size = 0;
      *ret = GST_FLOW_ERROR;
      return NULL;
    }
    self->copy_pool_size = slot;
    GST_DEBUG_OBJECT (self, "copy pool of %u x %" G_GSIZE_FORMAT " bytes",
        count, slot);
  }

  params.flags = GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT;
  fret = gst_buffer_pool_acquire_buffer (self->copy_pool, &copy, &params);
  if (fret == GST_FLOW_EOS) {
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
  gst_buffer_extract (buf, 0, map.data, size);
  gst_buffer_unmap (copy, &map);
  gst_buffer_set_size (copy, size);
  return copy;
}

/* Waits for a client; returns FALSE when unlocked (flushing). */
static gboolean
wait_for_client (GstPinnedShmSink * self)
{
  gboolean ok = TRUE;

  g_mutex_lock (&self->lock);
  while (self->n_clients == 0 && !self->unlocked && self->wait_for_connection) {
    GST_LOG_OBJECT (self, "waiting for a client");
    g_cond_wait (&self->cond, &self->lock);
  }
  if (self->unlocked)
    ok = FALSE;
  g_mutex_unlock (&self->lock);
  return ok;
}

static GstFlowReturn
gst_pinned_shm_sink_render (GstBaseSink * bsink, GstBuffer * buf)
{
  GstPinnedShmSink *self = GST_PINNED_SHM_SINK (bsink);
  pf_producer_frame frame;
  pf_segment *segs[PF_MAX_CHUNKS];
  GstBuffer *token;
  gboolean zero_copy;
  GstFlowReturn ret = GST_FLOW_OK;
  gsize size = gst_buffer_get_size (buf);
  pf_producer *producer;
  guint n_clients;
  int sent;

  if (size == 0) {
    GST_DEBUG_OBJECT (self, "empty buffer, nothing to publish");
    return GST_FLOW_OK;
  }

  while (!wait_for_client (self)) {
    ret = gst_base_sink_wait_preroll (bsink);
    if (ret != GST_FLOW_OK)
      return ret;
  }

  g_mutex_lock (&self->lock);
  producer = self->producer ? pf_producer_ref (self->producer) : NULL;
  n_clients = self->n_clients;
  if (n_clients == 0) {
    self->frames++;
    self->drops++;
  }
  g_mutex_unlock (&self->lock);
  if (producer == NULL)
    return GST_FLOW_FLUSHING;
  if (n_clients == 0) {
    GST_LOG_OBJECT (self, "no client, frame dropped");
    pf_producer_unref (producer);
    return GST_FLOW_OK;
  }

  memset (&frame, 0, sizeof (frame));
  zero_copy = gst_pinned_shm_frame_set_chunks (&frame, buf, segs);
  if (zero_copy) {
    token = gst_buffer_ref (buf);
  } else {
    token = copy_to_pool (self, buf, &ret);
    if (token == NULL) {
      if (ret == GST_FLOW_OK) {
        g_mutex_lock (&self->lock);
        self->frames++;
        self->drops++;
        g_mutex_unlock (&self->lock);
      }
      pf_producer_unref (producer);
      return ret;
    }
    /* one pinned memory of exactly @size bytes */
    if (!gst_pinned_shm_frame_set_chunks (&frame, token, segs))
      g_assert_not_reached ();
  }
  gst_pinned_shm_frame_set_meta (&frame, buf,
      self->is_video ? &self->vinfo : NULL,
      gst_pinned_shm_frame_clock_pts (bsink, self->clock_is_monotonic, buf));

  sent = pf_producer_publish (producer, &frame, segs, token);
  pf_producer_unref (producer);

  g_mutex_lock (&self->lock);
  self->frames++;
  if (!zero_copy)
    self->copies++;
  else
    self->zero_copy_frames++;
  if (sent > 0) {
    self->bytes += size;
    self->in_flight++;
  } else {
    self->drops++;
  }
  g_mutex_unlock (&self->lock);

  if (sent <= 0)
    gst_buffer_unref (token);
  if (sent < 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE, ("Could not publish frame"),
        ("pf_producer_publish: %s", g_strerror (-sent)));
    return GST_FLOW_ERROR;
  }
  GST_LOG_OBJECT (self, "frame of %" G_GSIZE_FORMAT " bytes to %d clients%s",
      size, sent, zero_copy ? " (zero copy)" : " (copied)");
  return GST_FLOW_OK;
}

static void
gst_pinned_shm_sink_finalize (GObject * object)
{
  GstPinnedShmSink *self = GST_PINNED_SHM_SINK (object);

  g_free (self->socket_path);
  g_mutex_clear (&self->lock);
  g_cond_clear (&self->cond);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_pinned_shm_sink_init (GstPinnedShmSink * self)
{
  self->socket_path = g_strdup (DEFAULT_SOCKET_PATH);
  self->perms = DEFAULT_PERMS;
  self->pool_size = DEFAULT_POOL_SIZE;
  self->max_client_buffers = DEFAULT_MAX_CLIENT_BUFFERS;
  self->wait_for_connection = DEFAULT_WAIT_FOR_CONNECTION;
  g_mutex_init (&self->lock);
  g_cond_init (&self->cond);
  gst_video_info_init (&self->vinfo);
  /* a last-sample would pin one pool buffer for nothing */
  gst_base_sink_set_last_sample_enabled (GST_BASE_SINK (self), FALSE);
}

static void
gst_pinned_shm_sink_class_init (GstPinnedShmSinkClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSinkClass *bsink_class = GST_BASE_SINK_CLASS (klass);

  GST_DEBUG_CATEGORY_INIT (gst_pinned_shm_sink_debug, "pinnedshmsink", 0,
      "Pinned shared-memory frame sink");

  gobject_class->set_property = gst_pinned_shm_sink_set_property;
  gobject_class->get_property = gst_pinned_shm_sink_get_property;
  gobject_class->finalize = gst_pinned_shm_sink_finalize;

  /**
   * GstPinnedShmSink:socket-path:
   *
   * Path of the unix socket consumers connect to. A stale socket file left
   * by a crashed producer is replaced; a live one makes start fail.
   */
  properties[PROP_SOCKET_PATH] = g_param_spec_string ("socket-path",
      "Socket path", "Path of the unix socket consumers connect to",
      DEFAULT_SOCKET_PATH, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY);
  /**
   * GstPinnedShmSink:perms:
   *
   * File mode of the socket file, i.e. who may connect: 0600 (the owner
   * only), 0660 (and the group), 0666 (anyone). gst-launch-1.0 takes octal
   * with a leading 0 (perms=0660); gst-inspect-1.0 shows it in decimal.
   */
  properties[PROP_PERMS] = g_param_spec_uint ("perms", "Permissions",
      "File mode of the socket file, i.e. who may connect (octal with a "
      "leading 0, e.g. 0660; 384 = 0600: the owner only)", 0, 0777,
      DEFAULT_PERMS,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_POOL_SIZE] = g_param_spec_uint ("pool-size", "Pool size",
      "Buffers in the pinned pool proposed upstream (one shared segment, "
      "bounded) and in the copy pool for buffers in other memory",
      MIN_POOL_SIZE, MAX_POOL_SIZE, DEFAULT_POOL_SIZE,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_MAX_CLIENT_BUFFERS] = g_param_spec_uint
      ("max-client-buffers", "Max client buffers",
      "Frames one client may hold; past it new frames skip that client and "
      "count as dropped for it", 1, MAX_MAX_CLIENT_BUFFERS,
      DEFAULT_MAX_CLIENT_BUFFERS,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_WAIT_FOR_CONNECTION] = g_param_spec_boolean
      ("wait-for-connection", "Wait for connection",
      "Block rendering until a client is connected (FALSE: frames nobody "
      "receives are dropped and counted)", DEFAULT_WAIT_FOR_CONNECTION,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
  properties[PROP_NUM_CLIENTS] = g_param_spec_uint ("num-clients",
      "Number of clients", "Consumers connected now (notified on change)", 0,
      G_MAXUINT, 0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  /**
   * GstPinnedShmSink:stats:
   *
   * A structure with the fields frames, bytes, zero-copy-frames, copies,
   * drops, in-flight (all guint64) and clients: an array of structures
   * with id, pid, uid, sent, released, dropped, held and bytes.
   */
  properties[PROP_STATS] = g_param_spec_boxed ("stats", "Statistics",
      "Counters: frames, bytes, zero-copy-frames, copies, drops, in-flight, "
      "and per client (clients array) id, pid, uid, sent, released, "
      "dropped, held, bytes",
      GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (gobject_class, N_PROPERTIES, properties);

  /**
   * GstPinnedShmSink::client-connected:
   * @sink: the sink
   * @id: the client's id (never reused by this sink)
   * @pid: its process id (SO_PEERCRED)
   * @uid: its user id
   *
   * Emitted from the transport's I/O thread when a consumer connects.
   */
  signals[SIGNAL_CLIENT_CONNECTED] = g_signal_new ("client-connected",
      G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
      G_TYPE_NONE, 3, G_TYPE_UINT, G_TYPE_INT, G_TYPE_UINT);
  /**
   * GstPinnedShmSink::client-disconnected:
   * @sink: the sink
   * @id: the client's id
   * @pid: its process id
   * @uid: its user id
   *
   * Emitted when a consumer goes away; every frame it held is back.
   */
  signals[SIGNAL_CLIENT_DISCONNECTED] = g_signal_new ("client-disconnected",
      G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
      G_TYPE_NONE, 3, G_TYPE_UINT, G_TYPE_INT, G_TYPE_UINT);

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_set_static_metadata (element_class,
      "Pinned shared memory sink", "Sink/Video",
      "Publishes frames in pinned shared memory to other processes",
      "gst-pinnedflow developers");

  element_class->set_clock = GST_DEBUG_FUNCPTR (gst_pinned_shm_sink_set_clock);

  bsink_class->start = GST_DEBUG_FUNCPTR (gst_pinned_shm_sink_start);
  bsink_class->stop = GST_DEBUG_FUNCPTR (gst_pinned_shm_sink_stop);
  bsink_class->set_caps = GST_DEBUG_FUNCPTR (gst_pinned_shm_sink_set_caps);
  bsink_class->propose_allocation =
      GST_DEBUG_FUNCPTR (gst_pinned_shm_sink_propose_allocation);
  bsink_class->event = GST_DEBUG_FUNCPTR (gst_pinned_shm_sink_event);
  bsink_class->unlock = GST_DEBUG_FUNCPTR (gst_pinned_shm_sink_unlock);
  bsink_class->unlock_stop =
      GST_DEBUG_FUNCPTR (gst_pinned_shm_sink_unlock_stop);
  bsink_class->render = GST_DEBUG_FUNCPTR (gst_pinned_shm_sink_render);
}
