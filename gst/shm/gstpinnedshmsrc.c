/* GStreamer pinnedflow: receive frames from another process
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The pinnedshmsrc element itself: its properties, states, unlocking,
 * queries and the clock. Receiving (create()): gstpinnedshmsrcreceive.c;
 * the connection (probe, connect, disconnect): gstpinnedshmconnect.c;
 * stats and QoS: gstpinnedshmsrcstats.c; the instance struct:
 * gstpinnedshmsrc-private.h.
 */

/**
 * SECTION:element-pinnedshmsrc
 * @title: pinnedshmsrc
 * @see_also: pinnedshmsink
 *
 * Receives the frames a pinnedshmsink publishes in another process. Every
 * buffer's memory is a read-only slice of a shared segment (no copy): the
 * segment is imported once, after its fd was validated, and kept mapped as
 * long as a buffer uses it, even after the producer is gone. The frame is
 * handed back to the producer when the last memory of the buffer is freed.
 *
 * Caps come from the producer (no capsfilter needed) and caps changes
 * reach downstream. #GstPinnedShmSrc:delivery chooses between every frame
 * (the producer waits for this consumer) and the newest frame (the producer
 * skips it when it lags, and stale queued frames are dropped here); the
 * default follows the producer's liveness. The element asks the producer
 * when it goes to PAUSED (#GstPinnedShmSrc:is-live auto): from a non-live
 * producer it is a non-live source and buffers keep the producer's PTS,
 * DTS, duration and segment; from a live one it is a live source and the
 * producer's PTS, sent as CLOCK_MONOTONIC time, becomes running time of
 * this pipeline, so a sink with sync=true renders in step with the
 * producer. With no producer up yet it is live, unless
 * delivery=every-frame, and a stream that turns out not to be live keeps
 * its timestamps and segment (the segment's base moved to the running
 * time it started at), so either start order gives the producer's
 * timestamps. Only the segment flags that travel are kept (a SEGMENT flag
 * would keep the stream from ending at EOS). Frames lost on the way are
 * posted as QoS messages (at most one per second). EOS from the producer
 * is pushed downstream; a producer that vanishes without EOS is an error
 * by default (#GstPinnedShmSrc:on-disconnect).
 * #GstPinnedShmSrc:connect-timeout lets it wait for a producer that is not
 * up yet, and bounds the wait for its HELLO; a flush or a state change
 * interrupts every wait, connecting and the producer's HELLO included.
 * Segments are mapped lazily and only within a budget
 * (#GstPinnedShmSrc:max-mapped-bytes, #GstPinnedShmSrc:max-mapped-segments),
 * so a producer cannot make this process commit or pin unbounded memory.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=100 ! video/x-raw,format=RGBA,width=640,height=480 ! pinnedshmsink socket-path=/tmp/pf.sock wait-for-connection=true
 * gst-launch-1.0 pinnedshmsrc socket-path=/tmp/pf.sock connect-timeout=-1 ! fakesink
 * ]|
 * The producer waits for the consumer, sends 100 frames and EOS; the
 * consumer receives them and exits.
 * |[
 * gst-launch-1.0 pinnedshmsrc socket-path=/tmp/pf.sock connect-timeout=-1 on-disconnect=reconnect ! videoconvert ! fakesink
 * ]|
 * Keeps receiving across producer restarts, even when the restarted
 * producer sends other caps (use autovideosink to watch it).
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedshmsrc-private.h"
#include "gstpinnedshmtime.h"

#include <errno.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include <gst/video/video.h>
#include <gst/pinnedflow/gstpinnedallocator.h>

GST_DEBUG_CATEGORY (gst_pinned_shm_src_debug);
#define GST_CAT_DEFAULT gst_pinned_shm_src_debug

#define DEFAULT_SOCKET_PATH NULL
#define DEFAULT_ON_DISCONNECT GST_PINNED_SHM_SRC_ON_DISCONNECT_ERROR
#define DEFAULT_DELIVERY GST_PINNED_SHM_SRC_DELIVERY_AUTO
#define DEFAULT_IS_LIVE GST_PINNED_SHM_SRC_IS_LIVE_AUTO
#define DEFAULT_CONNECT_TIMEOUT 0
#define DEFAULT_MAX_MAPPED_BYTES PF_CONSUMER_DEFAULT_MAX_BYTES
#define DEFAULT_MAX_MAPPED_SEGMENTS PF_CONSUMER_DEFAULT_MAX_SEGMENTS
#define DEFAULT_LOCK_SEGMENTS FALSE
#define DEFAULT_BUSY_POLL_US 0
#define DEFAULT_DEVICE_FRAMES GST_PINNED_SHM_SRC_DEVICE_FRAMES_AUTO
#define DEFAULT_CUDA_DEVICE_ID -1

enum
{
  PROP_0,
  PROP_SOCKET_PATH,
  PROP_ON_DISCONNECT,
  PROP_CONNECT_TIMEOUT,
  PROP_MAX_MAPPED_BYTES,
  PROP_MAX_MAPPED_SEGMENTS,
  PROP_LOCK_SEGMENTS,
  PROP_BUSY_POLL_US,
  PROP_DELIVERY,
  PROP_IS_LIVE,
  PROP_DEVICE_FRAMES,
  PROP_CUDA_DEVICE_ID,
  PROP_STATS,
  N_PROPERTIES
};

static GParamSpec *properties[N_PROPERTIES];

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS_ANY);

#define gst_pinned_shm_src_parent_class parent_class
G_DEFINE_TYPE (GstPinnedShmSrc, gst_pinned_shm_src, GST_TYPE_PUSH_SRC);
GST_ELEMENT_REGISTER_DEFINE (pinnedshmsrc, "pinnedshmsrc", GST_RANK_NONE,
    GST_TYPE_PINNED_SHM_SRC);

GType
gst_pinned_shm_src_delivery_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_PINNED_SHM_SRC_DELIVERY_AUTO,
          "Every frame from a non-live producer, the newest from a live one",
        "auto"},
    {GST_PINNED_SHM_SRC_DELIVERY_EVERY_FRAME,
        "Every frame: the producer waits for this consumer", "every-frame"},
    {GST_PINNED_SHM_SRC_DELIVERY_NEWEST_FRAME,
          "The newest frame: skipped when late, stale frames dropped",
        "newest-frame"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstPinnedShmSrcDelivery", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_pinned_shm_src_is_live_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_PINNED_SHM_SRC_IS_LIVE_AUTO, "The producer's liveness when it is "
          "up going to PAUSED, else live (a non-live stream keeps its "
          "timestamps)", "auto"},
    {GST_PINNED_SHM_SRC_IS_LIVE_TRUE, "A live source", "true"},
    {GST_PINNED_SHM_SRC_IS_LIVE_FALSE, "A non-live source", "false"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstPinnedShmSrcIsLive", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_pinned_shm_src_device_frames_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_PINNED_SHM_SRC_DEVICE_FRAMES_AUTO, "Ask for device frames when "
          "CUDA is usable and downstream accepts memory:PinnedflowCUDA",
        "auto"},
    {GST_PINNED_SHM_SRC_DEVICE_FRAMES_ON, "Ask for device frames", "on"},
    {GST_PINNED_SHM_SRC_DEVICE_FRAMES_OFF, "Never ask for device frames",
        "off"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstPinnedShmSrcDeviceFrames", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_pinned_shm_src_on_disconnect_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_PINNED_SHM_SRC_ON_DISCONNECT_EOS, "Push EOS downstream", "eos"},
    {GST_PINNED_SHM_SRC_ON_DISCONNECT_ERROR, "Post an element error",
        "error"},
    {GST_PINNED_SHM_SRC_ON_DISCONNECT_RECONNECT,
        "Wait for a new producer and go on", "reconnect"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstPinnedShmSrcOnDisconnect", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

static void
gst_pinned_shm_src_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstPinnedShmSrc *self = GST_PINNED_SHM_SRC (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_SOCKET_PATH:
      g_free (self->socket_path);
      self->socket_path = g_value_dup_string (value);
      break;
    case PROP_ON_DISCONNECT:
      self->on_disconnect = g_value_get_enum (value);
      break;
    case PROP_CONNECT_TIMEOUT:
      self->connect_timeout = g_value_get_int (value);
      break;
    case PROP_MAX_MAPPED_BYTES:
      self->max_mapped_bytes = g_value_get_uint64 (value);
      break;
    case PROP_MAX_MAPPED_SEGMENTS:
      self->max_mapped_segments = g_value_get_uint (value);
      break;
    case PROP_LOCK_SEGMENTS:
      self->lock_segments = g_value_get_boolean (value);
      break;
    case PROP_BUSY_POLL_US:
      /* also read without the lock, per frame (wait_for_event ()) */
      g_atomic_int_set (&self->busy_poll_us, g_value_get_uint (value));
      break;
    case PROP_DELIVERY:
      self->delivery = g_value_get_enum (value);
      break;
    case PROP_IS_LIVE:
      self->is_live = g_value_get_enum (value);
      break;
    case PROP_DEVICE_FRAMES:
      self->device_frames = g_value_get_enum (value);
      break;
    case PROP_CUDA_DEVICE_ID:
      self->cuda_device_id = g_value_get_int (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_pinned_shm_src_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstPinnedShmSrc *self = GST_PINNED_SHM_SRC (object);

  if (prop_id == PROP_STATS) {
    g_value_take_boxed (value, gst_pinned_shm_src_get_stats (self));
    return;
  }

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_SOCKET_PATH:
      g_value_set_string (value, self->socket_path);
      break;
    case PROP_ON_DISCONNECT:
      g_value_set_enum (value, self->on_disconnect);
      break;
    case PROP_CONNECT_TIMEOUT:
      g_value_set_int (value, self->connect_timeout);
      break;
    case PROP_MAX_MAPPED_BYTES:
      g_value_set_uint64 (value, self->max_mapped_bytes);
      break;
    case PROP_MAX_MAPPED_SEGMENTS:
      g_value_set_uint (value, self->max_mapped_segments);
      break;
    case PROP_LOCK_SEGMENTS:
      g_value_set_boolean (value, self->lock_segments);
      break;
    case PROP_BUSY_POLL_US:
      g_value_set_uint (value, self->busy_poll_us);
      break;
    case PROP_DELIVERY:
      g_value_set_enum (value, self->delivery);
      break;
    case PROP_IS_LIVE:
      g_value_set_enum (value, self->is_live);
      break;
    case PROP_DEVICE_FRAMES:
      g_value_set_enum (value, self->device_frames);
      break;
    case PROP_CUDA_DEVICE_ID:
      g_value_set_int (value, self->cuda_device_id);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static gboolean
gst_pinned_shm_src_start (GstBaseSrc * bsrc)
{
  GstPinnedShmSrc *self = GST_PINNED_SHM_SRC (bsrc);
  gboolean have_path;

  GST_OBJECT_LOCK (self);
  have_path = self->socket_path != NULL && self->socket_path[0] != '\0';
  GST_OBJECT_UNLOCK (self);
  if (!have_path) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND, ("No socket path set"),
        ("Set the socket-path property"));
    return FALSE;
  }
  if (self->cancel_fd < 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED, ("No eventfd"),
        ("eventfd() failed when the element was made"));
    return FALSE;
  }

  /* the connection state was reset, and a connection maybe made, going
   * to PAUSED (gst_pinned_shm_src_probe ()) */
  if (self->pool == NULL)
    self->pool = gst_pinned_shm_frame_pool_new ();
  return TRUE;
}

static gboolean
gst_pinned_shm_src_stop (GstBaseSrc * bsrc)
{
  GstPinnedShmSrc *self = GST_PINNED_SHM_SRC (bsrc);

  gst_pinned_shm_src_drop_connection (self);
  gst_pinned_shm_src_clear_pending (self);
  gst_caps_replace (&self->caps, NULL);
  self->out_device = FALSE;
  /* buffers still out are freed when they come back */
  g_clear_pointer (&self->pool, gst_pinned_shm_frame_pool_close);
#ifdef GST_PINNED_SHM_CUDA
  gst_pinned_shm_src_cuda_stop (self);
#endif
  return TRUE;
}

static gboolean
gst_pinned_shm_src_unlock (GstBaseSrc * bsrc)
{
  GstPinnedShmSrc *self = GST_PINNED_SHM_SRC (bsrc);
  guint64 one = 1;

  GST_DEBUG_OBJECT (self, "unlock");
  /* the counter stays non-zero (readable) until unlock_stop */
  if (self->cancel_fd >= 0 && write (self->cancel_fd, &one, sizeof (one)) < 0
      && errno != EAGAIN)
    GST_WARNING_OBJECT (self, "eventfd write: %s", g_strerror (errno));
  return TRUE;
}

static gboolean
gst_pinned_shm_src_unlock_stop (GstBaseSrc * bsrc)
{
  GstPinnedShmSrc *self = GST_PINNED_SHM_SRC (bsrc);
  guint64 count;

  GST_DEBUG_OBJECT (self, "unlock stop");
  /* non-blocking: EAGAIN when it was not set */
  if (self->cancel_fd >= 0
      && read (self->cancel_fd, &count, sizeof (count)) < 0 && errno != EAGAIN)
    GST_WARNING_OBJECT (self, "eventfd read: %s", g_strerror (errno));
  return TRUE;
}

static gboolean
gst_pinned_shm_src_set_clock (GstElement * element, GstClock * clock)
{
  GstPinnedShmSrc *self = GST_PINNED_SHM_SRC (element);

  /* read by the streaming thread (create) while a new clock comes in
   * (ThreadSanitizer, issue 31) */
  g_atomic_int_set (&self->clock_is_monotonic,
      gst_pinned_shm_clock_is_monotonic (clock));
  return GST_ELEMENT_CLASS (parent_class)->set_clock (element, clock);
}

static gboolean
gst_pinned_shm_src_query (GstBaseSrc * bsrc, GstQuery * query)
{
  GstPinnedShmSrc *self = GST_PINNED_SHM_SRC (bsrc);

  if (GST_QUERY_TYPE (query) == GST_QUERY_LATENCY
      && gst_base_src_is_live (bsrc)) {
    /* live, and frames are due the moment they arrive */
    GST_LOG_OBJECT (self, "live, latency 0");
    gst_query_set_latency (query, TRUE, 0, GST_CLOCK_TIME_NONE);
    return TRUE;
  }
#ifdef GST_PINNED_SHM_CUDA
  /* our GstCudaContext (memory:CUDAMemory) for the elements downstream */
  if (GST_QUERY_TYPE (query) == GST_QUERY_CONTEXT
      && gst_pinned_shm_src_cuda_query (self, query))
    return TRUE;
#endif
  return GST_BASE_SRC_CLASS (parent_class)->query (bsrc, query);
}

static gboolean
gst_pinned_shm_src_decide_allocation (GstBaseSrc * bsrc, GstQuery * query)
{
  /* Every buffer wraps the producer's memory: no pool would ever be used.
   * GstBaseSrc would activate the one downstream proposes (a relaying
   * pinnedshmsink proposes pool-size pinned, mlocked frames), or make a
   * system-memory one: keep none. */
  while (gst_query_get_n_allocation_pools (query) > 0)
    gst_query_remove_nth_allocation_pool (query, 0);
  return TRUE;
}

#ifdef GST_PINNED_SHM_CUDA
static void
gst_pinned_shm_src_set_context (GstElement * element, GstContext * context)
{
  gst_pinned_shm_src_cuda_set_context (GST_PINNED_SHM_SRC (element), context);
  GST_ELEMENT_CLASS (parent_class)->set_context (element, context);
}
#endif

static GstStateChangeReturn
gst_pinned_shm_src_change_state (GstElement * element,
    GstStateChange transition)
{
  GstPinnedShmSrc *self = GST_PINNED_SHM_SRC (element);

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED)
    gst_pinned_shm_src_probe (self);
  return GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
}

static void
gst_pinned_shm_src_finalize (GObject * object)
{
  GstPinnedShmSrc *self = GST_PINNED_SHM_SRC (object);

  g_free (self->socket_path);
  g_free (self->device_why_not);
  gst_caps_replace (&self->caps, NULL);
  gst_pinned_shm_src_clear_pending (self);
  gst_pinned_shm_src_drop_connection (self);
#ifdef GST_PINNED_SHM_CUDA
  gst_pinned_shm_src_cuda_finalize (self);
#endif
  if (self->cancel_fd >= 0)
    close (self->cancel_fd);
  gst_object_unref (self->allocator);
  g_mutex_clear (&self->lock);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_pinned_shm_src_init (GstPinnedShmSrc * self)
{
  self->socket_path = g_strdup (DEFAULT_SOCKET_PATH);
  self->on_disconnect = DEFAULT_ON_DISCONNECT;
  self->connect_timeout = DEFAULT_CONNECT_TIMEOUT;
  self->max_mapped_bytes = DEFAULT_MAX_MAPPED_BYTES;
  self->max_mapped_segments = DEFAULT_MAX_MAPPED_SEGMENTS;
  self->lock_segments = DEFAULT_LOCK_SEGMENTS;
  self->busy_poll_us = DEFAULT_BUSY_POLL_US;
  self->delivery = DEFAULT_DELIVERY;
  self->is_live = DEFAULT_IS_LIVE;
  self->device_frames = DEFAULT_DEVICE_FRAMES;
  self->cuda_device_id = DEFAULT_CUDA_DEVICE_ID;
  self->domain_device = -1;
  self->live = TRUE;
  self->keep_ts = FALSE;
  self->poll_first_probe = TRUE;
  self->last_latency = G_MAXUINT64;
  self->cancel_fd = eventfd (0, EFD_CLOEXEC | EFD_NONBLOCK);
  self->allocator = gst_pinned_allocator_get ();
  g_mutex_init (&self->lock);
  gst_video_info_init (&self->vinfo);

  gst_base_src_set_live (GST_BASE_SRC (self), TRUE);
  gst_base_src_set_format (GST_BASE_SRC (self), GST_FORMAT_TIME);
}

static void
gst_pinned_shm_src_class_init (GstPinnedShmSrcClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSrcClass *bsrc_class = GST_BASE_SRC_CLASS (klass);
  GstPushSrcClass *psrc_class = GST_PUSH_SRC_CLASS (klass);

  GST_DEBUG_CATEGORY_INIT (gst_pinned_shm_src_debug, "pinnedshmsrc", 0,
      "Pinned shared-memory frame source");
  /* the producer's caps arrive as a string; GStreamer 1.28's
   * gst_caps_from_string () refuses a multiview-flags field
   * (GstVideoMultiviewFlagsSet, which 1.28's jpegdec sets) unless that
   * GType is registered in this process (1.22 parsed it anyway) */
  g_type_ensure (GST_TYPE_VIDEO_MULTIVIEW_FLAGSET);

  gobject_class->set_property = gst_pinned_shm_src_set_property;
  gobject_class->get_property = gst_pinned_shm_src_get_property;
  gobject_class->finalize = gst_pinned_shm_src_finalize;

  /**
   * GstPinnedShmSrc:socket-path:
   *
   * Path of the unix socket of the producer (a pinnedshmsink or any
   * pf_producer) to connect to.
   */
  properties[PROP_SOCKET_PATH] = g_param_spec_string ("socket-path",
      "Socket path", "Path of the producer's unix socket (required)",
      DEFAULT_SOCKET_PATH, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY);
  /**
   * GstPinnedShmSrc:on-disconnect:
   *
   * What to do when the producer goes away without EOS (crash, kill):
   * `error` (the default) posts GST_RESOURCE_ERROR_READ "The producer
   * vanished without EOS"; `eos` posts that as a warning and pushes EOS;
   * `reconnect` posts it as a warning and waits for a new producer. EOS
   * sent by the producer always ends the stream.
   */
  properties[PROP_ON_DISCONNECT] = g_param_spec_enum ("on-disconnect",
      "On disconnect", "What to do when the producer goes away without EOS",
      GST_TYPE_PINNED_SHM_SRC_ON_DISCONNECT, DEFAULT_ON_DISCONNECT,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
  /**
   * GstPinnedShmSrc:connect-timeout:
   *
   * How long to wait, in milliseconds, for a producer and its HELLO when
   * the stream starts: 0 makes one connection attempt and waits up to 5 s
   * for the HELLO, -1 waits forever. A peer that accepts the connection and
   * sends no HELLO by then is an error (RESOURCE READ), told apart from
   * nobody listening (RESOURCE OPEN_READ). In reconnect mode a lost
   * producer is always awaited forever. Every wait, the producer's HELLO
   * included, ends at once on a flush or a state change.
   */
  properties[PROP_CONNECT_TIMEOUT] = g_param_spec_int ("connect-timeout",
      "Connect timeout", "Milliseconds to wait for a producer and its HELLO "
      "when streaming starts (0: one attempt, up to 5 s for the HELLO, -1: "
      "forever); a state change always interrupts the wait", -1, G_MAXINT,
      DEFAULT_CONNECT_TIMEOUT,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  /**
   * GstPinnedShmSrc:max-mapped-bytes:
   *
   * The most bytes of shared segments the producer may make this element
   * map at once: the segments it announced and has not removed, plus
   * removed ones that buffers downstream still use. A segment that would
   * go past it is refused before it is mapped (its fd is closed) and an
   * error is posted naming the bytes and the budget. The default fits a
   * 4K RGBA pool of 18 frames (a pinnedshmsink's default) and refuses a
   * 1 GiB segment; G_MAXUINT64
   * means no limit.
   */
  properties[PROP_MAX_MAPPED_BYTES] = g_param_spec_uint64 ("max-mapped-bytes",
      "Max mapped bytes", "Most bytes of the producer's shared segments "
      "mapped at once; a segment past it is refused with an error",
      1, G_MAXUINT64, DEFAULT_MAX_MAPPED_BYTES,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  /**
   * GstPinnedShmSrc:max-mapped-segments:
   *
   * The most shared segments the producer may make this element map at
   * once (counted as for #GstPinnedShmSrc:max-mapped-bytes).
   */
  properties[PROP_MAX_MAPPED_SEGMENTS] =
      g_param_spec_uint ("max-mapped-segments", "Max mapped segments",
      "Most of the producer's shared segments mapped at once; one past it is "
      "refused with an error", 1, G_MAXUINT32, DEFAULT_MAX_MAPPED_SEGMENTS,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  /**
   * GstPinnedShmSrc:lock-segments:
   *
   * Prefault and mlock() every segment when it is announced. By default a
   * segment is mapped lazily: only the pages frames use cost memory here.
   * Locking commits every page of every segment at once (within the
   * budget above); a refused mlock falls back to an unlocked mapping.
   */
  properties[PROP_LOCK_SEGMENTS] = g_param_spec_boolean ("lock-segments",
      "Lock segments", "Prefault and mlock every segment of the producer "
      "when announced (default: map lazily, pages cost memory when used)",
      DEFAULT_LOCK_SEGMENTS,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  /**
   * GstPinnedShmSrc:busy-poll-us:
   *
   * When no frame is queued, poll the connection (the frame ring's
   * doorbell and the socket) without sleeping (poll() with
   * a zero timeout, in a loop) for up to this many microseconds before
   * sleeping in poll(). 0 (the default) sleeps at once. A frame that
   * arrives within the window is taken without a scheduler wake-up, at the
   * cost of a core spinning for the window after every frame: it only
   * helps when frames come closer together than the window.
   */
  properties[PROP_BUSY_POLL_US] = g_param_spec_uint ("busy-poll-us",
      "Busy poll (us)", "Microseconds to poll the connection without sleeping "
      "before waiting for the next frame (0: sleep at once; costs CPU)",
      0, G_USEC_PER_SEC, DEFAULT_BUSY_POLL_US,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
  /**
   * GstPinnedShmSrc:delivery:
   *
   * The delivery asked of the producer: `every-frame` (it never skips this
   * consumer: it waits for our releases, up to its reliable-timeout, after
   * which it may demote us to newest frame with a warning here),
   * `newest-frame` (it skips us at max-client-buffers, and frames queued
   * behind a newer one are dropped here unseen, released at once, counted
   * in stale-dropped), or `auto` (the default): every frame from a
   * non-live producer, the newest from a live one.
   */
  properties[PROP_DELIVERY] = g_param_spec_enum ("delivery", "Delivery",
      "Every frame (the producer waits for us), the newest frame (skipped "
      "when late, stale frames dropped), or auto (from the producer's "
      "liveness)", GST_TYPE_PINNED_SHM_SRC_DELIVERY, DEFAULT_DELIVERY,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  /**
   * GstPinnedShmSrc:is-live:
   *
   * Whether the element is a live source, decided going to PAUSED.
   * `auto` (the default): the producer's liveness when it is up then (the
   * element asks it); when it is not up yet, live (unless
   * delivery=every-frame), and a stream that turns out not to be live
   * keeps the producer's PTS, DTS, duration and segment, the segment's
   * base moved by the running time at which the stream started. `true`: a
   * live source (a live stream's timestamps clock-mapped, a non-live
   * stream's kept as for auto). `false`: a non-live source, every stream's
   * timestamps and segment as the producer sent them.
   */
  properties[PROP_IS_LIVE] = g_param_spec_enum ("is-live", "Is live",
      "Live source: auto (the producer's liveness, live when it is not up "
      "yet), true, false; a non-live stream keeps its timestamps",
      GST_TYPE_PINNED_SHM_SRC_IS_LIVE, DEFAULT_IS_LIVE,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  /**
   * GstPinnedShmSrc:device-frames:
   *
   * Whether to ask the producer for device segments (CUDA device memory
   * shared as fds) and push their frames with no copy as
   * `video/x-raw(memory:PinnedflowCUDA)`, one read-only pinnedflow CUDA
   * memory per frame, given back to the producer when it is freed; where
   * downstream takes only `video/x-raw(memory:CUDAMemory)` (nvcodec), as
   * GStreamer's CUDA memory in the pipeline's GstCudaContext: wrapped with
   * no copy on libgstcuda 1.24+, copied once device to device on 1.22
   * (stats: device-copies).
   * `auto` (the default) asks when the CUDA runtime loads and the element
   * downstream names memory:PinnedflowCUDA (e.g. pinnedcudadownload) or
   * memory:CUDAMemory (e.g. cudadownload) in its caps (caps that take any
   * memory, e.g. fakesink's or videoconvert's, do not count);
   * `on` asks whenever CUDA loads; `off` never asks. A consumer that does
   * not ask never gets the producer's device frames: a device stream (its
   * caps carry memory:PinnedflowCUDA or memory:CUDAMemory) then fails
   * with a not-negotiated error saying why, as does one whose device
   * segments cannot be imported here (no device with their UUID, no
   * virtual memory support). Host frames are unaffected.
   */
  properties[PROP_DEVICE_FRAMES] = g_param_spec_enum ("device-frames",
      "Device frames", "Ask for the producer's device frames and push them "
      "as memory:PinnedflowCUDA with no copy, or memory:CUDAMemory where "
      "downstream takes only that: auto (CUDA usable and downstream accepts "
      "them), on, off",
      GST_TYPE_PINNED_SHM_SRC_DEVICE_FRAMES, DEFAULT_DEVICE_FRAMES,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  /**
   * GstPinnedShmSrc:cuda-device-id:
   *
   * The CUDA device of the device frames: named to the producer in a
   * DOMAIN (a producer that copies into domains sends frames already on
   * it), and the device of the GstCudaContext made for memory:CUDAMemory
   * when the pipeline has none. -1 (the default): the device of the
   * pipeline's GstCudaContext, else device 0.
   */
  properties[PROP_CUDA_DEVICE_ID] = g_param_spec_int ("cuda-device-id",
      "CUDA device id", "The CUDA device of the device frames (the DOMAIN "
      "sent to the producer, the GstCudaContext of memory:CUDAMemory); -1: "
      "the pipeline's GstCudaContext's, else 0", -1, G_MAXINT,
      DEFAULT_CUDA_DEVICE_ID,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  /**
   * GstPinnedShmSrc:stats:
   *
   * A structure with connected (gboolean), frames, bytes, reconnects,
   * errors, gaps (frames we never saw: skipped by the producer or dropped
   * here as stale), missed (of those, skipped by the producer),
   * stale-dropped (of those, dropped here for a newer one), latency-last,
   * latency-mean, latency-max (ns from the producer's send to our create;
   * guint64), held (guint: frames downstream still holds), live (gboolean:
   * the element is a live source), delivery (string: every-frame,
   * newest-frame, none before the producer said), demoted (gboolean),
   * device-frames (guint64: of frames, those pushed as device memory),
   * device-copies (guint64: of those, copied once device to device into
   * memory:CUDAMemory: libgstcuda 1.22 only) and domain-device (gint: the
   * device named to the producer in a DOMAIN, -1 none).
   */
  properties[PROP_STATS] = g_param_spec_boxed ("stats", "Statistics",
      "Counters: connected, frames, bytes, held, reconnects, errors, gaps, "
      "missed, stale-dropped, latency-last, latency-mean, latency-max (ns), "
      "live, delivery, demoted, device-frames, device-copies, domain-device",
      GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (gobject_class, N_PROPERTIES, properties);

  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "Pinned shared memory source", "Source/Video",
      "Receives frames in pinned shared memory from another process",
      "gst-pinnedflow developers");

  element_class->set_clock = GST_DEBUG_FUNCPTR (gst_pinned_shm_src_set_clock);
  element_class->change_state =
      GST_DEBUG_FUNCPTR (gst_pinned_shm_src_change_state);
#ifdef GST_PINNED_SHM_CUDA
  element_class->set_context =
      GST_DEBUG_FUNCPTR (gst_pinned_shm_src_set_context);
#endif

  bsrc_class->start = GST_DEBUG_FUNCPTR (gst_pinned_shm_src_start);
  bsrc_class->stop = GST_DEBUG_FUNCPTR (gst_pinned_shm_src_stop);
  bsrc_class->unlock = GST_DEBUG_FUNCPTR (gst_pinned_shm_src_unlock);
  bsrc_class->unlock_stop = GST_DEBUG_FUNCPTR (gst_pinned_shm_src_unlock_stop);
  bsrc_class->query = GST_DEBUG_FUNCPTR (gst_pinned_shm_src_query);
  bsrc_class->decide_allocation =
      GST_DEBUG_FUNCPTR (gst_pinned_shm_src_decide_allocation);
  psrc_class->create = GST_DEBUG_FUNCPTR (gst_pinned_shm_src_create);

  gst_type_mark_as_plugin_api (GST_TYPE_PINNED_SHM_SRC_ON_DISCONNECT, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_PINNED_SHM_SRC_DELIVERY, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_PINNED_SHM_SRC_IS_LIVE, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_PINNED_SHM_SRC_DEVICE_FRAMES, 0);
}
