/* GStreamer pinnedflow: publish frames to other processes
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The pinnedshmsink element itself: its properties and signals, its
 * producer's life (start, stop), caps, events, flushing and the clock.
 * Publishing a frame: gstpinnedshmsinkrender.c; its pools:
 * gstpinnedshmsinkpool.c; memory:DMABuf caps and reading foreign
 * dmabufs: gstpinnedshmsinkdmabuf.c; the producer's callbacks:
 * gstpinnedshmsinkbus.c;
 * stats: gstpinnedshmsinkstats.c; the instance struct:
 * gstpinnedshmsink-private.h.
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
 * `copies` field of #GstPinnedShmSink:stats).
 *
 * Where /dev/udmabuf opens, the pool's slots are also dmabufs, and the sink
 * takes `video/x-raw(memory:DMABuf)` caps (on GStreamer 1.24 and later
 * also `format=DMA_DRM` with a linear `drm-format`): an upstream that
 * negotiates them gets the pool and writes into the slots. Elsewhere a
 * CAPS query drops those structures. A foreign dmabuf is mapped read-only
 * and copied once; a bad fd is an error. Consumers get system-memory caps.
 *
 * Each consumer has a delivery policy, its own choice (pinnedshmsrc's
 * `delivery`) or else the default from upstream's liveness, which the sink
 * learns with a LATENCY query at every SEGMENT: every frame when upstream
 * is not live, the newest frame when it is. Render waits until every
 * every-frame consumer can take one more frame (#GstPinnedShmSink:max-client-buffers
 * held at most), which back-pressures upstream like any sink; a flush or a
 * state change ends the wait, and one that makes it wait longer than
 * #GstPinnedShmSink:reliable-timeout is demoted to newest frame (or
 * disconnected) with a warning. A live upstream is paced by itself, not by
 * its slowest consumer: render waits for every-frame consumers of a live
 * stream at most #GstPinnedShmSink:live-max-lag in all (-1: strict
 * lossless delivery, they pace it). A newest-frame consumer at its limit
 * skips frames; it never blocks the sink or the others. Drops are posted as
 * `pinnedshmsink-drops` element messages (per consumer, with the reason,
 * at most one per second per consumer). At most #GstPinnedShmSink:max-clients
 * consumers are served and the default pool is sized for them, so stuck
 * consumers can never hold the slots the others need; where the pool
 * cannot be sized so (capped at 256, a smaller pool-size, max-clients=0)
 * a warning says so at start.
 *
 * Caps, timestamps (PTS, DTS, duration, the segment with only the flags
 * that mean something in another process; the PTS also as CLOCK_MONOTONIC
 * time), flags (key frames: no DELTA_UNIT), video meta and EOS reach the
 * consumers. With #GstPinnedShmSink:wait-for-connection the first frame
 * waits for #GstPinnedShmSink:min-clients consumers, so several consumers
 * started before the producer all get every frame.
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

#include "gstpinnedshmsink-private.h"
#include "gstpinnedshmcommon.h"
#include "gstpinnedshmtime.h"

#include <gst/video/video.h>

GST_DEBUG_CATEGORY (gst_pinned_shm_sink_debug);
#define GST_CAT_DEFAULT gst_pinned_shm_sink_debug

#define DEFAULT_SOCKET_PATH NULL
#define DEFAULT_PERMS 0600
#define DEFAULT_POOL_SIZE 0     /* auto: sized for max-clients */
#define MIN_POOL_SIZE 0
#define DEFAULT_MAX_CLIENT_BUFFERS 4
#define MAX_MAX_CLIENT_BUFFERS 256
#define DEFAULT_WAIT_FOR_CONNECTION FALSE
#define DEFAULT_MIN_CLIENTS 1
#define DEFAULT_MAX_CLIENTS 4
#define DEFAULT_RELIABLE_TIMEOUT PF_PRODUCER_DEFAULT_RELIABLE_TIMEOUT_MS
#define DEFAULT_RELIABLE_TIMEOUT_ACTION GST_PINNED_SHM_SINK_TIMEOUT_DEMOTE
#define DEFAULT_LIVE_MAX_LAG PF_PRODUCER_DEFAULT_LIVE_MAX_LAG_MS

enum
{
  PROP_0,
  PROP_SOCKET_PATH,
  PROP_PERMS,
  PROP_POOL_SIZE,
  PROP_MAX_CLIENT_BUFFERS,
  PROP_WAIT_FOR_CONNECTION,
  PROP_MIN_CLIENTS,
  PROP_MAX_CLIENTS,
  PROP_RELIABLE_TIMEOUT,
  PROP_RELIABLE_TIMEOUT_ACTION,
  PROP_LIVE_MAX_LAG,
  PROP_NUM_CLIENTS,
  PROP_STATS,
  PROP_DOMAINS,
  N_PROPERTIES
};

static GParamSpec *properties[N_PROPERTIES];

/* The signals (client-connected, client-disconnected) are emitted by name
 * in gstpinnedshmsinkbus.c, once per connection: no id table is kept. */

/* ANY: every stream crosses, video/x-raw(memory:DMABuf) (and DMA_DRM on
 * 1.24+) included; a CAPS query with a filter keeps those only where
 * /dev/udmabuf opens (gstpinnedshmsinkdmabuf.c). */
static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS_ANY);

#define gst_pinned_shm_sink_parent_class parent_class
G_DEFINE_TYPE (GstPinnedShmSink, gst_pinned_shm_sink, GST_TYPE_BASE_SINK);
GST_ELEMENT_REGISTER_DEFINE (pinnedshmsink, "pinnedshmsink", GST_RANK_NONE,
    GST_TYPE_PINNED_SHM_SINK);

GType
gst_pinned_shm_sink_timeout_action_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_PINNED_SHM_SINK_TIMEOUT_DEMOTE,
        "Demote the consumer to newest-frame delivery", "demote"},
    {GST_PINNED_SHM_SINK_TIMEOUT_DISCONNECT, "Disconnect the consumer",
        "disconnect"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstPinnedShmSinkTimeoutAction", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

/* The reliable-timeout property (-1: no bound, 0: never wait) in the
 * library's terms (-1: no bound, 0: its default, else ms). */
static int
reliable_timeout_ms (gint prop)
{
  return prop == 0 ? 1 : prop;
}

/* Whether upstream is live, by a LATENCY query (FALSE when unanswered). */
static gboolean
query_upstream_live (GstPinnedShmSink * self)
{
  GstQuery *q = gst_query_new_latency ();
  gboolean live = FALSE;

  if (gst_pad_peer_query (GST_BASE_SINK_PAD (self), q))
    gst_query_parse_latency (q, &live, NULL, NULL);
  gst_query_unref (q);
  return live;
}

static void
gst_pinned_shm_sink_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstPinnedShmSink *self = GST_PINNED_SHM_SINK (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_DOMAINS:
      g_atomic_int_set (&self->domains, g_value_get_boolean (value));
      break;
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
    case PROP_MAX_CLIENTS:
      self->max_clients = g_value_get_uint (value);
      break;
    case PROP_RELIABLE_TIMEOUT:
    case PROP_RELIABLE_TIMEOUT_ACTION:
      if (prop_id == PROP_RELIABLE_TIMEOUT)
        self->reliable_timeout = g_value_get_int (value);
      else
        self->reliable_timeout_action = g_value_get_enum (value);
      g_mutex_lock (&self->lock);
      if (self->producer)
        pf_producer_set_reliable_timeout (self->producer,
            reliable_timeout_ms (self->reliable_timeout),
            self->reliable_timeout_action);
      g_mutex_unlock (&self->lock);
      break;
    case PROP_LIVE_MAX_LAG:
      self->live_max_lag = g_value_get_int (value);
      g_mutex_lock (&self->lock);
      if (self->producer)
        pf_producer_set_live_max_lag (self->producer, self->live_max_lag);
      g_mutex_unlock (&self->lock);
      break;
    case PROP_WAIT_FOR_CONNECTION:
      /* under self->lock: a render waiting for a client re-reads it */
      g_mutex_lock (&self->lock);
      self->wait_for_connection = g_value_get_boolean (value);
      g_cond_broadcast (&self->cond);
      g_mutex_unlock (&self->lock);
      break;
    case PROP_MIN_CLIENTS:
      g_mutex_lock (&self->lock);
      self->min_clients = g_value_get_uint (value);
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
    case PROP_MAX_CLIENTS:
      GST_OBJECT_LOCK (self);
      g_value_set_uint (value, self->max_clients);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_RELIABLE_TIMEOUT:
      GST_OBJECT_LOCK (self);
      g_value_set_int (value, self->reliable_timeout);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_RELIABLE_TIMEOUT_ACTION:
      GST_OBJECT_LOCK (self);
      g_value_set_enum (value, self->reliable_timeout_action);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_LIVE_MAX_LAG:
      GST_OBJECT_LOCK (self);
      g_value_set_int (value, self->live_max_lag);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_WAIT_FOR_CONNECTION:
      g_mutex_lock (&self->lock);
      g_value_set_boolean (value, self->wait_for_connection);
      g_mutex_unlock (&self->lock);
      break;
    case PROP_MIN_CLIENTS:
      g_mutex_lock (&self->lock);
      g_value_set_uint (value, self->min_clients);
      g_mutex_unlock (&self->lock);
      break;
    case PROP_NUM_CLIENTS:
      g_value_set_uint (value, g_atomic_int_get (&self->n_clients));
      break;
    case PROP_STATS:
      g_value_take_boxed (value, gst_pinned_shm_sink_get_stats (self));
      break;
    case PROP_DOMAINS:
      g_value_set_boolean (value, g_atomic_int_get (&self->domains));
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
  gint live_max_lag;
  gchar *path;
  int err;

  GST_OBJECT_LOCK (self);
  path = g_strdup (self->socket_path);
  config.perms = self->perms;
  config.max_client_frames = self->max_client_buffers;
  config.max_clients = self->max_clients;
  config.reliable_timeout_ms = reliable_timeout_ms (self->reliable_timeout);
  config.reliable_action = self->reliable_timeout_action;
  live_max_lag = self->live_max_lag;
  GST_OBJECT_UNLOCK (self);
  gst_pinned_shm_sink_check_pool_fits (self);
  /* a consumer may connect before the first SEGMENT tells: ask now (the
   * answer of an upstream in READY, corrected at the SEGMENT) */
  self->live = query_upstream_live (self);
  config.live = self->live;

  if (path == NULL || path[0] == '\0') {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("No socket path set"), ("Set the socket-path property"));
    g_free (path);
    return FALSE;
  }

  config.socket_path = path;
  gst_pinned_shm_sink_set_callbacks (self, &config.callbacks);

  g_mutex_lock (&self->lock);
  g_atomic_int_set (&self->n_clients, 0);
  self->unlocked = FALSE;
  self->first_sent = FALSE;
  COUNTER_SET (self->frames, 0);
  COUNTER_SET (self->bytes, 0);
  COUNTER_SET (self->zero_copy_frames, 0);
  COUNTER_SET (self->copies, 0);
  COUNTER_SET (self->device_copies, 0);
  COUNTER_SET (self->drops, 0);
  COUNTER_SET (self->published, 0);
  COUNTER_SET (self->released, 0);
  self->demotions = self->refused = 0;
  g_mutex_unlock (&self->lock);
  self->lock_checked_segment = 0;
  self->lock_warned = FALSE;
  COUNTER_SET (self->latency, gst_base_sink_get_latency (bsink));

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

  pf_producer_set_live_max_lag (producer, live_max_lag);
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

  gst_pinned_shm_sink_set_copy_pool (self, NULL);
  self->copy_pool_size = 0;
  gst_pinned_shm_sink_device_stop (self);
  gst_pinned_shm_sink_domains_stop (self);

  g_mutex_lock (&self->lock);
  g_atomic_int_set (&self->n_clients, 0);
  g_mutex_unlock (&self->lock);
  return TRUE;
}

static gboolean
gst_pinned_shm_sink_set_caps (GstBaseSink * bsink, GstCaps * caps)
{
  GstPinnedShmSink *self = GST_PINNED_SHM_SINK (bsink);
  GstCaps *wire;
  gchar *str, *host_str = NULL;
  int err;

  GST_DEBUG_OBJECT (self, "caps %" GST_PTR_FORMAT, caps);

  self->is_video = FALSE;
  if (gst_structure_has_name (gst_caps_get_structure (caps, 0), "video/x-raw")) {
    if (!gst_pinned_shm_sink_video_info (caps, &self->vinfo)) {
      GST_ERROR_OBJECT (self, "invalid video caps %" GST_PTR_FORMAT, caps);
      return FALSE;
    }
    self->is_video = TRUE;
  }

  /* consumers map the segment: memory:DMABuf is system memory to them;
   * device memory stays device memory where it is sent as device frames */
  if (gst_pinned_shm_sink_device_set_caps (self, caps)) {
    wire = gst_caps_ref (caps);
    /* a device stream: with copies per domain its host consumers get host
     * frames (one download each, gstpinnedshmsinkdomains.c), so they are
     * told the caps of those, without the memory feature */
    if (g_atomic_int_get (&self->domains)) {
      GstCaps *host = gst_pinned_shm_sink_wire_caps (caps,
          self->is_video ? &self->vinfo : NULL);

      host_str = gst_caps_to_string (host);
      gst_caps_unref (host);
    }
  } else {
    wire = gst_pinned_shm_sink_wire_caps (caps,
        self->is_video ? &self->vinfo : NULL);
  }
  str = gst_caps_to_string (wire);
  gst_caps_unref (wire);
  g_mutex_lock (&self->lock);
  err = self->producer ? pf_producer_set_caps_full (self->producer, str,
      host_str) : -EPIPE;
  g_mutex_unlock (&self->lock);
  if (err < 0) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Could not publish caps"),
        ("pf_producer_set_caps_full (%s): %s", str, g_strerror (-err)));
    g_free (str);
    g_free (host_str);
    return FALSE;
  }
  g_free (str);
  g_free (host_str);
  return TRUE;
}

static gboolean
gst_pinned_shm_sink_event (GstBaseSink * bsink, GstEvent * event)
{
  GstPinnedShmSink *self = GST_PINNED_SHM_SINK (bsink);

  if (GST_EVENT_TYPE (event) == GST_EVENT_SEGMENT) {
    const GstSegment *seg;
    pf_stream_segment ps = { 0, };
    gboolean live = query_upstream_live (self);

    gst_event_parse_segment (event, &seg);
    ps.format = seg->format;
    /* only the flags that mean something to another process */
    ps.flags = seg->flags & GST_PINNED_SHM_WIRE_SEGMENT_FLAGS;
    if (ps.flags != (guint) seg->flags)
      GST_DEBUG_OBJECT (self, "segment flags 0x%x not sent (the producer's "
          "pipeline alone)", seg->flags & ~GST_PINNED_SHM_WIRE_SEGMENT_FLAGS);
    ps.rate = seg->rate;
    ps.applied_rate = seg->applied_rate;
    ps.base = seg->base;
    ps.offset = seg->offset;
    ps.start = seg->start;
    ps.stop = seg->stop;
    ps.time = seg->time;
    ps.position = seg->position;
    ps.duration = seg->duration;
    g_mutex_lock (&self->lock);
    self->live = live;
    if (self->producer) {
      pf_producer_set_live (self->producer, live);
      pf_producer_set_segment (self->producer, &ps);
    }
    g_mutex_unlock (&self->lock);
    GST_DEBUG_OBJECT (self, "upstream %s, segment %" GST_SEGMENT_FORMAT,
        live ? "live" : "not live", seg);
  } else if (GST_EVENT_TYPE (event) == GST_EVENT_EOS) {
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

/* gst.cuda.context: the GstCudaContext of the pool proposed for
 * memory:CUDAMemory (gstpinnedshmsinkcuda.c) */
static void
gst_pinned_shm_sink_set_context (GstElement * element, GstContext * context)
{
  gst_pinned_shm_sink_cuda_set_context ((GstPinnedShmSink *) element, context);
  GST_ELEMENT_CLASS (parent_class)->set_context (element, context);
}

/* ACCEPT_CAPS: the base class checks against the unfiltered answer (ANY);
 * memory:DMABuf caps are taken only where the filtered one keeps them. */
static gboolean
gst_pinned_shm_sink_query (GstBaseSink * bsink, GstQuery * query)
{
  /* the pipeline's GstCudaContext, asked for by upstream */
  if (gst_pinned_shm_sink_cuda_query ((GstPinnedShmSink *) bsink, query))
    return TRUE;
  if (GST_QUERY_TYPE (query) == GST_QUERY_ACCEPT_CAPS) {
    GstCaps *caps, *allowed;

    gst_query_parse_accept_caps (query, &caps);
    allowed = gst_pinned_shm_sink_get_caps (bsink, caps);
    gst_query_set_accept_caps_result (query,
        gst_caps_is_subset (caps, allowed));
    gst_caps_unref (allowed);
    return TRUE;
  }
  return GST_BASE_SINK_CLASS (parent_class)->query (bsink, query);
}

static gboolean
gst_pinned_shm_sink_unlock (GstBaseSink * bsink)
{
  GstPinnedShmSink *self = GST_PINNED_SHM_SINK (bsink);

  g_mutex_lock (&self->lock);
  self->unlocked = TRUE;
  if (self->producer)
    pf_producer_set_flushing (self->producer, 1);
  if (self->copy_pool)
    gst_buffer_pool_set_flushing (self->copy_pool, TRUE);
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
  if (self->producer)
    pf_producer_set_flushing (self->producer, 0);
  if (self->copy_pool)
    gst_buffer_pool_set_flushing (self->copy_pool, FALSE);
  g_mutex_unlock (&self->lock);
  return TRUE;
}

static gboolean
gst_pinned_shm_sink_set_clock (GstElement * element, GstClock * clock)
{
  GstPinnedShmSink *self = GST_PINNED_SHM_SINK (element);

  /* read by the streaming thread (render) while a new clock comes in
   * (ThreadSanitizer, issue 31) */
  g_atomic_int_set (&self->clock_is_monotonic,
      gst_pinned_shm_clock_is_monotonic (clock));
  return GST_ELEMENT_CLASS (parent_class)->set_clock (element, clock);
}

/* Chains up; caches the latency a LATENCY event gave basesink. */
static gboolean
gst_pinned_shm_sink_send_event (GstElement * element, GstEvent * event)
{
  GstPinnedShmSink *self = GST_PINNED_SHM_SINK (element);
  gboolean latency = GST_EVENT_TYPE (event) == GST_EVENT_LATENCY;
  gboolean res = GST_ELEMENT_CLASS (parent_class)->send_event (element, event);

  if (latency)
    COUNTER_SET (self->latency,
        gst_base_sink_get_latency (GST_BASE_SINK (self)));
  return res;
}

static void
gst_pinned_shm_sink_finalize (GObject * object)
{
  GstPinnedShmSink *self = GST_PINNED_SHM_SINK (object);

  g_free (self->socket_path);
  gst_pinned_shm_sink_domains_finalize (self);
  gst_pinned_shm_sink_cuda_stop (self);
  g_mutex_clear (&self->cuda_lock);
  g_mutex_clear (&self->cuda_ensure_lock);
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
  self->min_clients = DEFAULT_MIN_CLIENTS;
  self->max_clients = DEFAULT_MAX_CLIENTS;
  self->reliable_timeout = DEFAULT_RELIABLE_TIMEOUT;
  self->reliable_timeout_action = DEFAULT_RELIABLE_TIMEOUT_ACTION;
  self->live_max_lag = DEFAULT_LIVE_MAX_LAG;
  g_mutex_init (&self->lock);
  g_cond_init (&self->cond);
  g_mutex_init (&self->cuda_ensure_lock);
  g_mutex_init (&self->cuda_lock);
  gst_video_info_init (&self->vinfo);
  gst_pinned_shm_sink_domains_init (self);
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
  /**
   * GstPinnedShmSink:pool-size:
   *
   * Buffers in the pinned pool proposed upstream and in the copy pool. 0
   * (the default) sizes it for #GstPinnedShmSink:max-clients consumers each
   * holding #GstPinnedShmSink:max-client-buffers frames, plus 2 (one being
   * filled upstream, one being published), at most 256: consumers that stop
   * releasing never take the slots the others need. Whenever the pool
   * cannot be that big (a smaller explicit value, the cap of 256,
   * max-clients=0) a GST_RESOURCE_ERROR_SETTINGS warning says so at start.
   */
  properties[PROP_POOL_SIZE] = g_param_spec_uint ("pool-size", "Pool size",
      "Buffers in the pinned pool proposed upstream (one shared segment, "
      "bounded) and in the copy pool for buffers in other memory (0: "
      "max-clients x max-client-buffers + 2)",
      MIN_POOL_SIZE, MAX_POOL_SIZE, DEFAULT_POOL_SIZE,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_MAX_CLIENT_BUFFERS] = g_param_spec_uint
      ("max-client-buffers", "Max client buffers",
      "Frames one client may hold; past it an every-frame client makes "
      "render wait, a newest-frame client skips frames (dropped for it)",
      1, MAX_MAX_CLIENT_BUFFERS,
      DEFAULT_MAX_CLIENT_BUFFERS,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_WAIT_FOR_CONNECTION] = g_param_spec_boolean
      ("wait-for-connection", "Wait for connection",
      "Block rendering until a client is connected (FALSE: frames nobody "
      "receives are dropped and counted)", DEFAULT_WAIT_FOR_CONNECTION,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
  /**
   * GstPinnedShmSink:min-clients:
   *
   * With #GstPinnedShmSink:wait-for-connection, the first frame waits
   * until this many consumers are connected, so that consumers started
   * before the producer all get every frame from the first; later frames
   * wait for one. No effect without wait-for-connection. A consumer that
   * connects after the first frame still starts at a key frame.
   */
  properties[PROP_MIN_CLIENTS] = g_param_spec_uint ("min-clients",
      "Min clients", "With wait-for-connection: consumers the first frame "
      "waits for (later frames wait for one)", 1, 1024, DEFAULT_MIN_CLIENTS,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
  /**
   * GstPinnedShmSink:max-clients:
   *
   * The most consumers served at once; one more is refused in the
   * handshake (its pinnedshmsrc posts an error) and the sink posts a
   * warning. 0: no limit, and then no guarantee that stuck consumers leave
   * slots for the others.
   */
  properties[PROP_MAX_CLIENTS] = g_param_spec_uint ("max-clients",
      "Max clients", "Most consumers served at once, one more is refused "
      "(0: no limit); the default pool-size is sized for them", 0, 1024,
      DEFAULT_MAX_CLIENTS,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  /**
   * GstPinnedShmSink:reliable-timeout:
   *
   * Milliseconds an every-frame consumer at its limit may hold render back
   * (no release in between) before #GstPinnedShmSink:reliable-timeout-action
   * applies to it, with a warning on the bus. -1: no bound (only a flush or
   * a state change ends the wait); 0: never wait (a consumer at its limit
   * gets the action after about 1 ms, the library's smallest bound).
   */
  properties[PROP_RELIABLE_TIMEOUT] = g_param_spec_int ("reliable-timeout",
      "Reliable timeout", "Milliseconds an every-frame consumer may hold "
      "render back before it is demoted or disconnected (-1: no bound, "
      "0: at once)",
      -1, G_MAXINT, DEFAULT_RELIABLE_TIMEOUT,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
  /**
   * GstPinnedShmSink:reliable-timeout-action:
   *
   * What happens to an every-frame consumer past
   * #GstPinnedShmSink:reliable-timeout: `demote` (newest-frame delivery
   * from then on; its pinnedshmsrc posts a warning) or `disconnect`.
   */
  properties[PROP_RELIABLE_TIMEOUT_ACTION] = g_param_spec_enum
      ("reliable-timeout-action", "Reliable timeout action",
      "What happens to an every-frame consumer past reliable-timeout",
      GST_TYPE_PINNED_SHM_SINK_TIMEOUT_ACTION,
      DEFAULT_RELIABLE_TIMEOUT_ACTION,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
  /**
   * GstPinnedShmSink:live-max-lag:
   *
   * A live stream is paced by itself, not by its slowest consumer: the
   * milliseconds render may wait for every-frame consumers of a live
   * upstream, all of them together (a budget that refills at 1/32 of real
   * time). The consumer that overspends it gets
   * #GstPinnedShmSink:reliable-timeout-action at once, with a warning, and
   * its process (uid and pid) gets newest-frame delivery on every
   * connection for 60 s. -1: strict lossless delivery from a live source:
   * every-frame consumers pace it (each wait bounded by
   * #GstPinnedShmSink:reliable-timeout only), and every other consumer
   * loses the frames the source makes meanwhile. No effect on a non-live
   * stream.
   */
  properties[PROP_LIVE_MAX_LAG] = g_param_spec_int ("live-max-lag",
      "Live max lag", "Milliseconds a live stream may wait for every-frame "
      "consumers, all together (refilled at 1/32 of real time); the one "
      "that overspends it is demoted or disconnected (-1: no bound, strict "
      "lossless delivery: they pace the live source)",
      -1, G_MAXINT, DEFAULT_LIVE_MAX_LAG,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
  properties[PROP_NUM_CLIENTS] = g_param_spec_uint ("num-clients",
      "Number of clients", "Consumers connected now (notified on change)", 0,
      G_MAXUINT, 0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  /**
   * GstPinnedShmSink:stats:
   *
   * A structure with the fields frames, bytes, zero-copy-frames, copies,
   * drops, in-flight, demotions, refused (all guint64), live (gboolean:
   * upstream's liveness) and clients: an array of structures with id, pid,
   * uid, sent, released, dropped (all reasons), dropped-limit,
   * dropped-socket-full, dropped-not-ready, skipped-to-key-frame, requested
   * and delivery (strings: auto, every-frame, newest-frame), demoted
   * (gboolean), held and bytes; and the copies per domain
   * (#GstPinnedShmSink:domains): domains-wanted (guint), domain-frames,
   * domain-uploads, domain-unreachable, domain-device-bytes,
   * domain-downloads, domain-peer-copies, domain-download-bytes,
   * domain-host-no-slot, domain-host-bytes (guint64) and domains, an array
   * of structures with uuid, ordinal, slots, free-slots, uploads, bytes,
   * device-bytes, no-slot, peer-copies, waits.
   */
  properties[PROP_STATS] = g_param_spec_boxed ("stats", "Statistics",
      "Counters: frames, bytes, zero-copy-frames, copies, drops, in-flight, "
      "demotions, refused, live, and per client (clients array) id, pid, "
      "uid, sent, released, dropped, dropped-limit, dropped-socket-full, "
      "dropped-not-ready, skipped-to-key-frame, requested, delivery, "
      "demoted, held, bytes; copies per domain: domains-wanted, "
      "domain-uploads, domain-downloads, ..., domains array",
      GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  /**
   * GstPinnedShmSink:domains:
   *
   * One copy per memory domain (docs/cuda.md): a host stream whose
   * consumers named a device gets one upload per frame into that device,
   * shared by them; a device stream (memory:PinnedflowCUDA) with consumers
   * in the host domain gets one download per frame into a pinned pool.
   * Only where CUDA is usable in this process (else as before, never an
   * error); the stats count the copies (domain-uploads, domain-downloads,
   * domains). FALSE: never copies (device consumers of a host stream
   * upload themselves, host consumers of a device stream get no frames).
   */
  properties[PROP_DOMAINS] = g_param_spec_boolean ("domains",
      "Copies per domain", "Copy each frame once into each memory domain a "
      "consumer wants (a device it named, or host memory for a device "
      "stream), where CUDA is usable here", TRUE,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
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
  g_signal_new ("client-connected",
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
  g_signal_new ("client-disconnected",
      G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
      G_TYPE_NONE, 3, G_TYPE_UINT, G_TYPE_INT, G_TYPE_UINT);

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_set_static_metadata (element_class,
      "Pinned shared memory sink", "Sink/Video",
      "Publishes frames in pinned shared memory to other processes",
      "gst-pinnedflow developers");

  element_class->set_clock = GST_DEBUG_FUNCPTR (gst_pinned_shm_sink_set_clock);
  element_class->set_context =
      GST_DEBUG_FUNCPTR (gst_pinned_shm_sink_set_context);
  element_class->send_event =
      GST_DEBUG_FUNCPTR (gst_pinned_shm_sink_send_event);

  bsink_class->start = GST_DEBUG_FUNCPTR (gst_pinned_shm_sink_start);
  bsink_class->stop = GST_DEBUG_FUNCPTR (gst_pinned_shm_sink_stop);
  bsink_class->get_caps = GST_DEBUG_FUNCPTR (gst_pinned_shm_sink_get_caps);
  bsink_class->set_caps = GST_DEBUG_FUNCPTR (gst_pinned_shm_sink_set_caps);
  bsink_class->propose_allocation =
      GST_DEBUG_FUNCPTR (gst_pinned_shm_sink_propose_allocation);
  bsink_class->event = GST_DEBUG_FUNCPTR (gst_pinned_shm_sink_event);
  bsink_class->query = GST_DEBUG_FUNCPTR (gst_pinned_shm_sink_query);
  bsink_class->unlock = GST_DEBUG_FUNCPTR (gst_pinned_shm_sink_unlock);
  bsink_class->unlock_stop =
      GST_DEBUG_FUNCPTR (gst_pinned_shm_sink_unlock_stop);
  bsink_class->render = GST_DEBUG_FUNCPTR (gst_pinned_shm_sink_render);

  gst_type_mark_as_plugin_api (GST_TYPE_PINNED_SHM_SINK_TIMEOUT_ACTION, 0);
}
