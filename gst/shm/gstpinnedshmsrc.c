/* GStreamer pinnedflow: receive frames from another process
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
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

#include "gstpinnedshmsrc.h"
#include "gstpinnedshmcommon.h"
#include "gstpinnedshmconnect.h"
#include "gstpinnedshmframe.h"
#include "gstpinnedshmframepool.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <gst/video/video.h>
#include <gst/pinnedflow/gstpinnedallocator.h>

#include <pinnedflow/pf-consumer.h>

GST_DEBUG_CATEGORY_STATIC (gst_pinned_shm_src_debug);
#define GST_CAT_DEFAULT gst_pinned_shm_src_debug

#define DEFAULT_SOCKET_PATH NULL
#define DEFAULT_ON_DISCONNECT GST_PINNED_SHM_SRC_ON_DISCONNECT_ERROR
#define DEFAULT_DELIVERY GST_PINNED_SHM_SRC_DELIVERY_AUTO
#define DEFAULT_IS_LIVE GST_PINNED_SHM_SRC_IS_LIVE_AUTO
/* How long going to PAUSED waits, once connected, for a producer's STREAM
 * that knows its liveness (one with a segment; a live producer still in
 * PAUSED has none yet and only guesses). */
#define PROBE_STREAM_MS 1000
/* How long going to PAUSED tries to connect to a producer whose socket
 * file exists (a producer answers its HELLO in microseconds) */
#define PROBE_CONNECT_MS 500
/* At most one QoS message per this many microseconds */
#define QOS_INTERVAL_US G_USEC_PER_SEC
#define DEFAULT_CONNECT_TIMEOUT 0
#define DEFAULT_MAX_MAPPED_BYTES PF_CONSUMER_DEFAULT_MAX_BYTES
#define DEFAULT_MAX_MAPPED_SEGMENTS PF_CONSUMER_DEFAULT_MAX_SEGMENTS
#define DEFAULT_LOCK_SEGMENTS FALSE
#define DEFAULT_BUSY_POLL_US 0
/* After a failed handshake (a producer dying while we connect), the next
 * attempt comes this much later. */
#define CONNECT_RETRY_MS 20
/* on-disconnect=reconnect: the wait after a refusal (max-clients), doubled
 * after each one up to the maximum */
#define REFUSED_RETRY_MIN_MS 100
#define REFUSED_RETRY_MAX_MS 2000

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
  PROP_STATS,
  N_PROPERTIES
};

static GParamSpec *properties[N_PROPERTIES];

/* see GstPinnedShmSrc.poll_first */
#define POLL_FIRST_PROBE 8
#define POLL_FIRST_LATE_NS (1000 * 1000)

/* Every frame starts with cold caches at paced rates: what create(), the
 * frame helpers and the stats touch per frame comes first, together
 * (issue 13), then what only connections, caps changes, state changes
 * and the stats query use. */
struct _GstPinnedShmSrc
{
  GstPushSrc parent;

  /* ---- per frame ---- */
  /* streaming thread (and start/stop) */
  GstPinnedShmFramePool *pool;  /* recycles our buffers; from start to stop */
  GstAllocator *allocator;
  /* written under lock (below); the streaming thread, its only writer
   * while streaming, reads it without */
  pf_consumer *consumer;
  /* an eventfd, readable between unlock and unlock_stop: every wait of the
   * streaming thread (connecting, the HELLO, the next frame) polls it */
  gint cancel_fd;
  /* property, set under the object lock, read atomically without it */
  guint busy_poll_us;
  /* the last frame came after a wait: wait before the next receive too,
   * instead of a receive that finds nothing (one syscall per frame at
   * paced rates). A frame that came more than POLL_FIRST_LATE_NS after
   * its send had waited in the socket: the next is received first, so a
   * stream that falls behind goes back to receiving without waiting
   * (issue 13: this replaced a receive first every POLL_FIRST_PROBE-th
   * frame, 0.12 recvmsg() per frame answering EAGAIN at paced rates);
   * without a send time from the producer, every POLL_FIRST_PROBE-th
   * frame still receives first (poll_first_probe). */
  gboolean poll_first;
  gboolean poll_first_probe;
  guint poll_first_count;
  /* the last frame's latency (count_frame()), G_MAXUINT64: unknown */
  guint64 last_latency;
  /* the connection's counters may have moved (a gap): update_counters() */
  gboolean counters_dirty;
  gboolean discont;
  gboolean clock_is_monotonic;
  /* decided going to PAUSED: a live source (clock-mapped timestamps) or
   * not (the producer's timestamps and segment) */
  gboolean live;
  /* the producer's timestamps and segment kept (not clock-mapped): a
   * non-live source, or a live one fed a non-live stream (its liveness
   * learnt from a STREAM with a segment, after going to PAUSED) */
  gboolean keep_ts;
  /* a live source fed a non-live stream: running time of its first
   * STREAM, added to the segment's base (once per connection) */
  gboolean have_ts_shift;
  GstClockTime ts_shift;
  guint64 last_seq;
  gboolean have_seq;
  gboolean have_pending_ev;
  gboolean have_pending_stream;
  gboolean is_video;
  /* what going to PAUSED read before the STREAM: the latest caps (and
   * see pending_ev below), handled by the first create() */
  gchar *pending_caps;
  /* QoS: gaps not posted yet, when the last message went */
  guint64 qos_pending;
  gint64 qos_last;
  /* stats every frame moves: written by the streaming thread alone (or
   * with it stopped) with relaxed atomic stores, read with relaxed atomic
   * loads, without the lock */
  guint64 frames;
  guint64 bytes;
  guint64 latency_last;
  guint64 latency_sum;
  guint64 latency_max;
  /* the last frame layout checked against vinfo (reset with the caps) */
  GstPinnedShmLayout layout;
  pf_stream_info stream;        /* the producer's last STREAM */
  GstVideoInfo vinfo;

  /* ---- the rest ---- */
  GstCaps *caps;                /* current caps from the producer */
  gboolean ever_connected;
  /* one event going to PAUSED read after the caps (a FRAME or EOS), and
   * the STREAM */
  pf_event pending_ev;
  pf_stream_info pending_stream;

  /* properties, under the object lock (busy_poll_us: above) */
  gchar *socket_path;
  GstPinnedShmSrcOnDisconnect on_disconnect;
  gint connect_timeout;
  guint64 max_mapped_bytes;
  guint max_mapped_segments;
  gboolean lock_segments;
  GstPinnedShmSrcDelivery delivery;
  GstPinnedShmSrcIsLive is_live;

  /* lock protects consumer (see above) and these stats */
  GMutex lock;
  guint64 reconnects;
  guint64 errors;
  guint64 gaps;
  guint64 stale_dropped;
  guint64 missed;
  guint delivery_in_force;
  gboolean demoted;
  /* of the current connection, to add the differences to the above */
  guint64 conn_stale, conn_missed;
};

#define STAT_LOAD(x) __atomic_load_n (&(x), __ATOMIC_RELAXED)
#define STAT_STORE(x, v) __atomic_store_n (&(x), (v), __ATOMIC_RELAXED)

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

/* ------------------------------------------------------------------------ */

static GstStructure *
gst_pinned_shm_src_get_stats (GstPinnedShmSrc * self)
{
  guint64 frames = STAT_LOAD (self->frames);
  GstStructure *s;

  g_mutex_lock (&self->lock);
  s = gst_structure_new ("application/x-pinnedshmsrc-stats",
      "connected", G_TYPE_BOOLEAN, self->consumer != NULL,
      "frames", G_TYPE_UINT64, frames,
      "bytes", G_TYPE_UINT64, STAT_LOAD (self->bytes),
      "held", G_TYPE_UINT,
      self->consumer ? pf_consumer_get_held (self->consumer) : 0,
      "reconnects", G_TYPE_UINT64, self->reconnects,
      "errors", G_TYPE_UINT64, self->errors,
      "gaps", G_TYPE_UINT64, self->gaps,
      "latency-last", G_TYPE_UINT64, STAT_LOAD (self->latency_last),
      "latency-mean", G_TYPE_UINT64,
      frames ? STAT_LOAD (self->latency_sum) / frames : (guint64) 0,
      "latency-max", G_TYPE_UINT64, STAT_LOAD (self->latency_max),
      "stale-dropped", G_TYPE_UINT64, self->stale_dropped,
      "missed", G_TYPE_UINT64, self->missed,
      "live", G_TYPE_BOOLEAN, self->live,
      "delivery", G_TYPE_STRING,
      gst_pinned_shm_delivery_name (self->delivery_in_force, "none"), "demoted",
      G_TYPE_BOOLEAN, self->demoted, NULL);
  g_mutex_unlock (&self->lock);
  return s;
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
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
drop_connection (GstPinnedShmSrc * self)
{
  pf_consumer *c;

  g_mutex_lock (&self->lock);
  c = self->consumer;
  self->consumer = NULL;
  g_mutex_unlock (&self->lock);

  /* Frames still out keep their own reference; the socket closes when the
   * last of them is freed. */
  if (c)
    pf_consumer_unref (c);
}

/* Drops what going to PAUSED read ahead and create() did not take. */
static void
clear_pending (GstPinnedShmSrc * self)
{
  g_clear_pointer (&self->pending_caps, g_free);
  self->have_pending_stream = FALSE;
  if (self->have_pending_ev)
    pf_consumer_event_clear (&self->pending_ev);
  self->have_pending_ev = FALSE;
}

/* A new connection @c: counters of the old one forgotten. */
static void
set_connection (GstPinnedShmSrc * self, pf_consumer * c)
{
  g_mutex_lock (&self->lock);
  self->consumer = c;
  self->conn_stale = self->conn_missed = 0;
  g_mutex_unlock (&self->lock);

  /* buffers keeping the last connection's memories let them go */
  if (self->pool != NULL)
    gst_pinned_shm_frame_pool_forget (self->pool);
  self->discont = TRUE;
  self->have_seq = FALSE;
  self->ever_connected = TRUE;
  self->have_ts_shift = FALSE;
  memset (&self->stream, 0, sizeof (self->stream));
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
   * to PAUSED (probe_producer ()) */
  if (self->pool == NULL)
    self->pool = gst_pinned_shm_frame_pool_new ();
  return TRUE;
}

static gboolean
gst_pinned_shm_src_stop (GstBaseSrc * bsrc)
{
  GstPinnedShmSrc *self = GST_PINNED_SHM_SRC (bsrc);

  drop_connection (self);
  clear_pending (self);
  gst_caps_replace (&self->caps, NULL);
  /* buffers still out are freed when they come back */
  g_clear_pointer (&self->pool, gst_pinned_shm_frame_pool_close);
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

/* Waits until @fd (if >= 0) is readable (1), @timeout_ms passed (0) or the
 * element is unlocked (-1). */
static gint
wait_or_cancel (GstPinnedShmSrc * self, gint fd, gint timeout_ms)
{
  struct pollfd pfd[2] = {
    {.fd = self->cancel_fd,.events = POLLIN},
    {.fd = fd,.events = POLLIN},
  };
  gint r;

  do {
    r = poll (pfd, 2, timeout_ms);
  } while (r < 0 && errno == EINTR);
  if (r < 0) {
    GST_WARNING_OBJECT (self, "poll: %s", g_strerror (errno));
    return -1;
  }
  if (pfd[0].revents)
    return -1;
  return r > 0 ? 1 : 0;
}

static gboolean
gst_pinned_shm_src_set_clock (GstElement * element, GstClock * clock)
{
  GstPinnedShmSrc *self = GST_PINNED_SHM_SRC (element);

  self->clock_is_monotonic = gst_pinned_shm_clock_is_monotonic (clock);
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

/* The budget of the properties, for a new connection. */
static void
apply_budget (GstPinnedShmSrc * self, pf_consumer * c)
{
  pf_consumer_budget budget = { 0, };

  GST_OBJECT_LOCK (self);
  budget.max_bytes = self->max_mapped_bytes;
  budget.max_segments = self->max_mapped_segments;
  budget.flags = self->lock_segments ? PF_CONSUMER_LOCK : 0;
  GST_OBJECT_UNLOCK (self);
  /* before the first receive: the producer's segments wait in the socket */
  pf_consumer_set_budget (c, &budget);
}

/* Connects, retrying until @timeout_ms (-1: forever) while nobody listens
 * or the producer dies during the handshake; the producer's HELLO must come
 * before the deadline too. Every wait is interrupted by unlock. Returns
 * GST_FLOW_OK, GST_FLOW_FLUSHING (unlocked) or GST_FLOW_ERROR (error
 * posted). */
static GstFlowReturn
connect_producer (GstPinnedShmSrc * self, gint timeout_ms)
{
  GstFlowReturn ret = GST_FLOW_OK;
  gint64 deadline = -1;
  pf_consumer *c = NULL;
  pf_consumer_options options = { 0, };
  gboolean reconnect;
  guint refused = 0, refused_wait_ms = REFUSED_RETRY_MIN_MS;
  gchar *path;
  int err;

  GST_OBJECT_LOCK (self);
  path = g_strdup (self->socket_path);
  options.delivery = self->delivery;
  reconnect = self->on_disconnect == GST_PINNED_SHM_SRC_ON_DISCONNECT_RECONNECT;
  GST_OBJECT_UNLOCK (self);

  if (timeout_ms >= 0)
    deadline = g_get_monotonic_time () + (gint64) timeout_ms *1000;

  for (;;) {
    gint left = -1;

    if (deadline >= 0)
      left = (gint) CLAMP ((deadline - g_get_monotonic_time ()) / 1000, 0,
          G_MAXINT);
    err = pf_consumer_connect_with (path, left, self->cancel_fd, &options, &c);
    if (err == 0 || err == -ECANCELED)
      break;
    if (err == -EUSERS && reconnect) {
      /* the producer is up but full: try again later, whatever
       * connect-timeout, with a growing wait; say so once */
      if (refused++ == 0) {
        gchar *upath = g_utf8_make_valid (path, -1);

        GST_ELEMENT_WARNING (self, RESOURCE, BUSY,
            ("The producer on \"%s\" refused this consumer (it serves its "
                "maximum of consumers); retrying", upath),
            ("%s (on-disconnect=reconnect: every %u to %u ms until "
                "accepted)", pf_consumer_connect_error (),
                REFUSED_RETRY_MIN_MS, REFUSED_RETRY_MAX_MS));
        g_free (upath);
      }
      GST_DEBUG_OBJECT (self, "refused %u times, next try in %u ms", refused,
          refused_wait_ms);
      if (wait_or_cancel (self, -1, (gint) refused_wait_ms) < 0) {
        err = -ECANCELED;
        break;
      }
      refused_wait_ms = MIN (refused_wait_ms * 2, REFUSED_RETRY_MAX_MS);
      /* a producer is up: as for a lost one, no deadline any more */
      deadline = -1;
      continue;
    }
    if (!gst_pinned_shm_connect_error_is_transient (err)
        || (deadline >= 0 && g_get_monotonic_time () >= deadline)) {
      gst_pinned_shm_post_connect_error (GST_ELEMENT (self), path, err,
          timeout_ms);
      ret = GST_FLOW_ERROR;
      goto done;
    }
    GST_DEBUG_OBJECT (self, "connect failed (%s), retrying",
        pf_consumer_connect_error ());
    if (wait_or_cancel (self, -1, CONNECT_RETRY_MS) < 0) {
      err = -ECANCELED;
      break;
    }
  }
  if (err == -ECANCELED) {
    GST_DEBUG_OBJECT (self, "connecting interrupted");
    ret = GST_FLOW_FLUSHING;
    goto done;
  }

  GST_INFO_OBJECT (self, "connected to %s (session %" G_GINT64_MODIFIER
      "x, max held %u)", path, (guint64) pf_consumer_get_session_id (c),
      pf_consumer_get_max_held (c));
  apply_budget (self, c);
  set_connection (self, c);

done:
  g_free (path);
  return ret;
}

static GstFlowReturn
handle_caps (GstPinnedShmSrc * self, const gchar * str)
{
  GstCaps *caps = gst_caps_from_string (str);

  if (caps == NULL || !gst_caps_is_fixed (caps)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Producer sent invalid caps"),
        ("caps \"%s\"", str));
    gst_clear_caps (&caps);
    return GST_FLOW_ERROR;
  }

  GST_DEBUG_OBJECT (self, "caps %" GST_PTR_FORMAT, caps);
  if (self->pool != NULL)
    gst_pinned_shm_frame_pool_forget (self->pool);
  self->is_video = FALSE;
  gst_pinned_shm_layout_reset (&self->layout);
  if (gst_structure_has_name (gst_caps_get_structure (caps, 0), "video/x-raw")
      && gst_video_info_from_caps (&self->vinfo, caps))
    self->is_video = TRUE;

  if (self->caps == NULL || !gst_caps_is_equal (self->caps, caps)) {
    if (!gst_base_src_set_caps (GST_BASE_SRC (self), caps)) {
      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
          ("Downstream refused the producer's caps"),
          ("caps %" GST_PTR_FORMAT, caps));
      gst_caps_unref (caps);
      return GST_FLOW_NOT_NEGOTIATED;
    }
  }
  gst_caps_take (&self->caps, caps);
  return GST_FLOW_OK;
}

/* Counts the frames the producer skipped for us; DISCONT after a gap or a
 * (re)connection. TRUE after a gap. */
static gboolean
note_sequence (GstPinnedShmSrc * self, const pf_consumer_frame * f,
    GstBuffer * buf)
{
  gboolean gap = FALSE;

  if (self->have_seq && f->seq > self->last_seq + 1) {
    guint64 missed = f->seq - self->last_seq - 1;

    g_mutex_lock (&self->lock);
    self->gaps += missed;
    g_mutex_unlock (&self->lock);
    self->qos_pending += missed;
    self->discont = TRUE;
    gap = TRUE;
  }
  self->last_seq = f->seq;
  self->have_seq = TRUE;
  if (self->discont) {
    GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DISCONT);
    self->discont = FALSE;
  }
  return gap;
}

/* The streaming thread is the only writer of these: no lock (see the
 * struct). */
static void
count_frame (GstPinnedShmSrc * self, const pf_consumer_frame * f, guint64 total)
{
  guint64 now, lat;

  STAT_STORE (self->frames, self->frames + 1);
  STAT_STORE (self->bytes, self->bytes + total);
  self->last_latency = G_MAXUINT64;
  if (f->send_time == PF_TIME_NONE)
    return;
  now = pf_monotonic_ns ();
  if (now < f->send_time)
    return;
  lat = now - f->send_time;
  self->last_latency = lat;
  STAT_STORE (self->latency_last, lat);
  STAT_STORE (self->latency_sum, self->latency_sum + lat);
  if (lat > self->latency_max)
    STAT_STORE (self->latency_max, lat);
}

/* Posts the frames lost since the last QoS message (the producer skipped
 * them, or they were dropped here as stale) when a second passed since it,
 * or at once with @flush; @buf: the frame that showed the loss, or NULL. */
static void
post_qos (GstPinnedShmSrc * self, GstBuffer * buf, gboolean flush)
{
  GstBaseSrc *bsrc = GST_BASE_SRC_CAST (self);
  GstClockTime ts = GST_CLOCK_TIME_NONE, dur = GST_CLOCK_TIME_NONE;
  GstClockTime rt = GST_CLOCK_TIME_NONE, st = GST_CLOCK_TIME_NONE;
  guint64 processed, dropped;
  gint64 now;
  GstMessage *msg;

  /* nothing lost: no clock read either (every frame comes here) */
  if (self->qos_pending == 0)
    return;
  now = g_get_monotonic_time ();
  if (!flush && self->qos_last != 0 && now - self->qos_last < QOS_INTERVAL_US)
    return;
  if (buf) {
    ts = GST_BUFFER_PTS (buf);
    dur = GST_BUFFER_DURATION (buf);
    if (!self->keep_ts) {
      rt = ts;
    } else if (GST_CLOCK_TIME_IS_VALID (ts)) {
      rt = gst_segment_to_running_time (&bsrc->segment, GST_FORMAT_TIME, ts);
      st = gst_segment_to_stream_time (&bsrc->segment, GST_FORMAT_TIME, ts);
    }
  }
  processed = STAT_LOAD (self->frames);
  g_mutex_lock (&self->lock);
  dropped = self->gaps;
  g_mutex_unlock (&self->lock);

  GST_INFO_OBJECT (self, "%" G_GUINT64_FORMAT " frames lost (%"
      G_GUINT64_FORMAT " in all, %" G_GUINT64_FORMAT " received)",
      self->qos_pending, dropped, processed);
  msg = gst_message_new_qos (GST_OBJECT (self), self->live, rt, st, ts, dur);
  gst_message_set_qos_values (msg, 0, 1.0, 1000000);
  gst_message_set_qos_stats (msg, GST_FORMAT_BUFFERS, processed, dropped);
  gst_element_post_message (GST_ELEMENT (self), msg);
  self->qos_pending = 0;
  self->qos_last = now;
}

/* The connection's counters into ours (receiving thread only). */
static void
update_counters (GstPinnedShmSrc * self, pf_consumer * c)
{
  pf_consumer_stats st;

  pf_consumer_get_stats (c, &st);
  /* every frame under newest-frame delivery: most often nothing moved */
  if (st.frames_stale_dropped == self->conn_stale
      && st.frames_missed == self->conn_missed
      && st.delivery == self->delivery_in_force
      && (st.demoted != 0) == self->demoted)
    return;
  g_mutex_lock (&self->lock);
  if (st.frames_stale_dropped >= self->conn_stale)
    self->stale_dropped += st.frames_stale_dropped - self->conn_stale;
  if (st.frames_missed >= self->conn_missed)
    self->missed += st.frames_missed - self->conn_missed;
  self->conn_stale = st.frames_stale_dropped;
  self->conn_missed = st.frames_missed;
  self->delivery_in_force = st.delivery;
  self->demoted = st.demoted != 0;
  g_mutex_unlock (&self->lock);
}

/* The running time of our pipeline now (0 without a clock). */
static GstClockTime
now_running_time (GstPinnedShmSrc * self)
{
  GstClock *clock = gst_element_get_clock (GST_ELEMENT (self));
  GstClockTime now, base;

  if (clock == NULL)
    return 0;
  now = gst_clock_get_time (clock);
  base = gst_element_get_base_time (GST_ELEMENT (self));
  gst_object_unref (clock);
  return now > base ? now - base : 0;
}

/* The producer's STREAM: its liveness, our delivery, its segment (with
 * one: whether its timestamps are kept, keep_ts). */
static void
handle_stream (GstPinnedShmSrc * self, const pf_stream_info * info)
{
  gboolean was_demoted = (self->stream.flags & PF_STREAM_DEMOTED) != 0;

  GST_DEBUG_OBJECT (self, "stream: %s, delivery %s%s",
      (info->flags & PF_STREAM_LIVE) ? "live" : "not live",
      gst_pinned_shm_delivery_name (info->delivery, "none"),
      (info->flags & PF_STREAM_DEMOTED) ? " (demoted)" : "");
  self->stream = *info;
  g_mutex_lock (&self->lock);
  self->delivery_in_force = info->delivery;
  self->demoted = (info->flags & PF_STREAM_DEMOTED) != 0;
  g_mutex_unlock (&self->lock);

  if (!was_demoted && (info->flags & PF_STREAM_DEMOTED)) {
    GST_ELEMENT_WARNING (self, RESOURCE, READ,
        ("The producer demoted this consumer to newest-frame delivery"),
        ("it held its frames past the producer's reliable-timeout; frames "
            "are skipped for it from now on"));
  }

  if (!(info->flags & PF_STREAM_HAS_SEGMENT))
    return;
  if (self->live && (info->flags & PF_STREAM_LIVE)) {
    if (self->keep_ts) {
      /* live again after a non-live stream: clock-mapped from now on, in a
       * segment of running time */
      GstSegment seg;

      self->keep_ts = FALSE;
      gst_segment_init (&seg, GST_FORMAT_TIME);
      gst_base_src_new_segment (GST_BASE_SRC (self), &seg);
    }
    return;
  }
  /* not live, or a non-live stream: its own timestamps and segment */
  self->keep_ts = TRUE;
  if (info->segment.format == GST_FORMAT_TIME) {
    GstSegment seg;

    gst_segment_init (&seg, GST_FORMAT_TIME);
    /* a SEGMENT flag would turn the producer's EOS into SEGMENT_DONE and
     * the stream would never end here: only the flags that travel */
    seg.flags = info->segment.flags & GST_PINNED_SHM_WIRE_SEGMENT_FLAGS;
    if (seg.flags != info->segment.flags)
      GST_DEBUG_OBJECT (self, "producer's segment flags 0x%x dropped",
          info->segment.flags & ~GST_PINNED_SHM_WIRE_SEGMENT_FLAGS);
    seg.rate = info->segment.rate;
    seg.applied_rate = info->segment.applied_rate;
    seg.base = info->segment.base;
    seg.offset = info->segment.offset;
    seg.start = info->segment.start;
    seg.stop = info->segment.stop;
    seg.time = info->segment.time;
    seg.position = info->segment.position;
    seg.duration = info->segment.duration;
    if (self->live) {
      /* a live source (it could not know the stream going to PAUSED):
       * the stream starts now in running time, its timestamps kept */
      if (!self->have_ts_shift) {
        self->ts_shift = now_running_time (self);
        self->have_ts_shift = TRUE;
      }
      seg.base += self->ts_shift;
      GST_INFO_OBJECT (self, "non-live stream in a live source: its "
          "timestamps kept, segment base moved by %" GST_TIME_FORMAT,
          GST_TIME_ARGS (self->ts_shift));
    }
    if (!gst_base_src_new_segment (GST_BASE_SRC (self), &seg))
      GST_WARNING_OBJECT (self, "producer's segment refused: %"
          GST_SEGMENT_FORMAT, &seg);
  }
}

/* Going to PAUSED: whether to be a live source (GstBaseSrc reads it
 * before start()). delivery=every-frame: not live, newest-frame: live;
 * auto: when the socket file exists, one bounded attempt (PROBE_CONNECT_MS,
 * HELLO included) to connect and read the producer's STREAM, which says
 * whether it is live; CAPS read on the way and one other event wait for the
 * first create(). With no producer up, or any failure (create() connects
 * again and reports it), live. */
static void
probe_producer (GstPinnedShmSrc * self)
{
  pf_consumer_options options = { 0, };
  pf_consumer *c = NULL;
  GstPinnedShmSrcIsLive is_live;
  gboolean live, have_path;
  gint64 deadline;
  gchar *path;
  int err;

  /* a connection left by a start that failed after the last probe */
  drop_connection (self);
  clear_pending (self);
  gst_caps_replace (&self->caps, NULL);
  self->is_video = FALSE;
  gst_pinned_shm_layout_reset (&self->layout);
  self->poll_first = FALSE;
  self->poll_first_probe = TRUE;
  self->poll_first_count = 0;
  self->last_latency = G_MAXUINT64;
  self->discont = TRUE;
  self->have_seq = FALSE;
  self->ever_connected = FALSE;
  self->qos_pending = 0;
  self->qos_last = 0;
  memset (&self->stream, 0, sizeof (self->stream));
  STAT_STORE (self->frames, 0);
  STAT_STORE (self->bytes, 0);
  STAT_STORE (self->latency_last, 0);
  STAT_STORE (self->latency_sum, 0);
  STAT_STORE (self->latency_max, 0);
  g_mutex_lock (&self->lock);
  self->reconnects = self->errors = self->gaps = 0;
  self->stale_dropped = self->missed = 0;
  self->delivery_in_force = 0;
  self->demoted = FALSE;
  g_mutex_unlock (&self->lock);

  GST_OBJECT_LOCK (self);
  path = g_strdup (self->socket_path);
  options.delivery = self->delivery;
  have_path = path != NULL && path[0] != '\0';
  is_live = self->is_live;
  GST_OBJECT_UNLOCK (self);
  live = options.delivery != GST_PINNED_SHM_SRC_DELIVERY_EVERY_FRAME;
  if (is_live != GST_PINNED_SHM_SRC_IS_LIVE_AUTO)
    live = is_live == GST_PINNED_SHM_SRC_IS_LIVE_TRUE;

  if (options.delivery == GST_PINNED_SHM_SRC_DELIVERY_AUTO
      && is_live == GST_PINNED_SHM_SRC_IS_LIVE_AUTO && have_path
      && self->cancel_fd >= 0 && g_file_test (path, G_FILE_TEST_EXISTS)
      && pf_consumer_connect_with (path, PROBE_CONNECT_MS, self->cancel_fd,
          &options, &c) == 0) {
    apply_budget (self, c);
    deadline = g_get_monotonic_time () + PROBE_STREAM_MS * 1000;
    for (;;) {
      gint left = (gint) MAX ((deadline - g_get_monotonic_time ()) / 1000, 0);
      pf_event ev;

      memset (&ev, 0, sizeof (ev));
      err = pf_consumer_receive (c, left, &ev);
      if (err <= 0) {
        GST_DEBUG_OBJECT (self, "no STREAM from the producer: %s",
            err == 0 ? "timeout" : pf_consumer_get_error (c));
        break;
      }
      if (ev.type == PF_EVENT_CAPS) {
        g_free (self->pending_caps);
        self->pending_caps = g_strdup (ev.caps);
        pf_consumer_event_clear (&ev);
        continue;
      }
      if (ev.type == PF_EVENT_STREAM) {
        live = (ev.stream.flags & PF_STREAM_LIVE) != 0;
        self->stream = ev.stream;
        self->pending_stream = ev.stream;
        self->have_pending_stream = TRUE;
        pf_consumer_event_clear (&ev);
        /* a producer whose upstream sent no SEGMENT yet (a live one still
         * in PAUSED) only guessed its liveness: wait for the next */
        if (self->stream.flags & PF_STREAM_HAS_SEGMENT)
          break;
        continue;
      }
      self->pending_ev = ev;
      self->have_pending_ev = TRUE;
      break;
    }
    GST_INFO_OBJECT (self, "connected to %s going to PAUSED: producer %s",
        path, self->stream.delivery == 0 ? "did not say whether it is live"
        : live ? "live" : "not live");
    /* also clears self->stream: handle_stream () compares with the STREAM
     * before, and the first create () hands it the pending one */
    set_connection (self, c);
  } else {
    GST_INFO_OBJECT (self, "%s source (delivery %d, producer on %s not "
        "asked or not up)", live ? "live" : "non-live", options.delivery, path);
  }
  g_free (path);

  self->live = live;
  self->keep_ts = !live;
  self->have_ts_shift = FALSE;
  gst_base_src_set_live (GST_BASE_SRC (self), live);
}

static GstStateChangeReturn
gst_pinned_shm_src_change_state (GstElement * element,
    GstStateChange transition)
{
  GstPinnedShmSrc *self = GST_PINNED_SHM_SRC (element);

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED)
    probe_producer (self);
  return GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
}

/* The FRAME event as a buffer of read-only memories on loan. */
static GstFlowReturn
make_buffer (GstPinnedShmSrc * self, pf_consumer * c, const pf_event * ev,
    GstBuffer ** outbuf)
{
  const pf_consumer_frame *f = &ev->frame;
  GstBuffer *buf = NULL;
  const gchar *invalid;
  guint64 total = 0;

  if (self->pool != NULL ? !gst_pinned_shm_frame_pool_wrap (self->pool,
          self->allocator, c, ev, &buf, &total)
      : !gst_pinned_shm_frame_wrap_chunks (self->allocator, c, ev,
          (buf = gst_buffer_new ()), &total)) {
    invalid = "chunk outside its segment";
    goto error;
  }
  gst_pinned_shm_frame_stamp (GST_ELEMENT_CAST (self), self->clock_is_monotonic,
      self->keep_ts, f, buf);
  if (note_sequence (self, f, buf))
    self->counters_dirty = TRUE;
  if (!gst_pinned_shm_frame_add_video_meta (f, total,
          self->is_video ? &self->vinfo : NULL, buf, &self->layout)) {
    invalid = "video meta does not match the caps, or a plane is not inside "
        "one chunk of the frame";
    goto error;
  }
  count_frame (self, f, total);
  *outbuf = buf;
  return GST_FLOW_OK;

error:
  gst_buffer_unref (buf);
  GST_ELEMENT_ERROR (self, STREAM, DECODE, ("Invalid frame from producer"),
      ("frame %" G_GUINT64_FORMAT ": %s", (guint64) f->seq, invalid));
  return GST_FLOW_ERROR;
}

/* The connection ended with @res (pf_consumer_receive()): -ECONNRESET the
 * producer vanished without EOS, -EPIPE it hung up after one, -ETIMEDOUT
 * it stopped reading our releases, -ECONNABORTED it disconnected us for
 * falling behind (and said so). @why: the consumer's error text. */
static GstFlowReturn
handle_disconnect (GstPinnedShmSrc * self, gint res, const gchar * why,
    gboolean * retry)
{
  GstPinnedShmSrcOnDisconnect mode;

  GST_OBJECT_LOCK (self);
  mode = self->on_disconnect;
  GST_OBJECT_UNLOCK (self);

  drop_connection (self);
  post_qos (self, NULL, TRUE);
  *retry = FALSE;
  if (res == -EPIPE) {
    /* a clean end after EOS: what the EOS meant already happened */
    if (mode == GST_PINNED_SHM_SRC_ON_DISCONNECT_RECONNECT) {
      GST_INFO_OBJECT (self, "producer hung up after EOS, waiting for a new "
          "one");
      *retry = TRUE;
      return GST_FLOW_OK;
    }
    GST_INFO_OBJECT (self, "producer hung up after EOS");
    return GST_FLOW_EOS;
  }
  if (res == -ETIMEDOUT) {
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE,
        ("The producer stopped reading this consumer's releases"), ("%s", why));
    return GST_FLOW_ERROR;
  }

  if (res == -ECONNABORTED) {
    /* the producer said why (REFUSE, fell behind): not a crash */
    switch (mode) {
      case GST_PINNED_SHM_SRC_ON_DISCONNECT_EOS:
        GST_ELEMENT_WARNING (self, RESOURCE, READ,
            ("The producer disconnected this consumer for falling behind; "
                "ending the stream"), ("%s (on-disconnect=eos)", why));
        return GST_FLOW_EOS;
      case GST_PINNED_SHM_SRC_ON_DISCONNECT_ERROR:
        GST_ELEMENT_ERROR (self, RESOURCE, READ,
            ("The producer disconnected this consumer for falling behind"),
            ("%s (on-disconnect=error)", why));
        return GST_FLOW_ERROR;
      case GST_PINNED_SHM_SRC_ON_DISCONNECT_RECONNECT:
      default:
        GST_ELEMENT_WARNING (self, RESOURCE, READ,
            ("The producer disconnected this consumer for falling behind; "
                "connecting again"), ("%s (on-disconnect=reconnect)", why));
        g_mutex_lock (&self->lock);
        self->reconnects++;
        g_mutex_unlock (&self->lock);
        *retry = TRUE;
        return GST_FLOW_OK;
    }
  }

  switch (mode) {
    case GST_PINNED_SHM_SRC_ON_DISCONNECT_EOS:
      GST_ELEMENT_WARNING (self, RESOURCE, READ,
          ("The producer vanished without EOS; ending the stream"),
          ("%s (on-disconnect=eos)", why));
      return GST_FLOW_EOS;
    case GST_PINNED_SHM_SRC_ON_DISCONNECT_ERROR:
      GST_ELEMENT_ERROR (self, RESOURCE, READ,
          ("The producer vanished without EOS"),
          ("%s (crashed or killed; on-disconnect=error)", why));
      return GST_FLOW_ERROR;
    case GST_PINNED_SHM_SRC_ON_DISCONNECT_RECONNECT:
    default:
      GST_ELEMENT_WARNING (self, RESOURCE, READ,
          ("The producer vanished without EOS; waiting for a new one"),
          ("%s (on-disconnect=reconnect)", why));
      g_mutex_lock (&self->lock);
      self->reconnects++;
      g_mutex_unlock (&self->lock);
      *retry = TRUE;
      return GST_FLOW_OK;
  }
}

/* Waits for @c's fd (socket, frame doorbell) or unlock, spinning first
 * for busy-poll-us if asked: 1 readable, -1 unlocked. */
static gint
wait_for_event (GstPinnedShmSrc * self, pf_consumer * c)
{
  guint busy_us = (guint) g_atomic_int_get (&self->busy_poll_us);
  gint res = 0;

  /* the frame ring's doorbell, read now rather than on the next frame's
   * path; a failure shows at the next receive */
  pf_consumer_prepare_wait (c);
  if (busy_us > 0) {
    gint64 deadline = g_get_monotonic_time () + busy_us;

    do {
      res = wait_or_cancel (self, pf_consumer_get_fd (c), 0);
    } while (res == 0 && g_get_monotonic_time () < deadline);
  }
  if (res == 0)
    res = wait_or_cancel (self, pf_consumer_get_fd (c), -1);
  return res;
}

/* A receive error other than the end of the connection. */
static GstFlowReturn
receive_error (GstPinnedShmSrc * self, pf_consumer * c, gint res)
{
  g_mutex_lock (&self->lock);
  self->errors++;
  g_mutex_unlock (&self->lock);
  if (res == -EDQUOT)
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("The producer's shared memory exceeds the budget"),
        ("%s (max-mapped-bytes, max-mapped-segments)",
            pf_consumer_get_error (c)));
  else
    GST_ELEMENT_ERROR (self, STREAM, DECODE,
        ("Protocol error from the producer"), ("%s (%s)",
            pf_consumer_get_error (c), g_strerror (-res)));
  drop_connection (self);
  return GST_FLOW_ERROR;
}

static GstFlowReturn
gst_pinned_shm_src_create (GstPushSrc * psrc, GstBuffer ** outbuf)
{
  /* unchecked: the base class calls us with ourselves, every frame */
  GstPinnedShmSrc *self = (GstPinnedShmSrc *) psrc;
  GstFlowReturn ret = GST_FLOW_OK;
  gboolean waited = FALSE;

  *outbuf = NULL;
  if (self->pending_caps) {
    /* read going to PAUSED, before the STREAM */
    gchar *caps = self->pending_caps;

    self->pending_caps = NULL;
    ret = handle_caps (self, caps);
    g_free (caps);
    if (ret != GST_FLOW_OK)
      return ret;
  }
  if (self->have_pending_stream) {
    self->have_pending_stream = FALSE;
    handle_stream (self, &self->pending_stream);
  }

  for (;;) {
    pf_consumer *c;
    pf_event ev;
    int res, type;

    /* this thread alone sets and drops the connection while streaming:
     * no lock, and no reference of our own (receive_error () and
     * handle_disconnect () drop it last) */
    c = self->consumer;

    if (c == NULL) {
      gint timeout;

      clear_pending (self);
      GST_OBJECT_LOCK (self);
      timeout = self->connect_timeout;
      GST_OBJECT_UNLOCK (self);
      /* a lost producer is awaited forever (reconnect mode) */
      if (self->ever_connected)
        timeout = -1;
      ret = connect_producer (self, timeout);
      if (ret != GST_FLOW_OK)
        return ret;
      continue;
    }

    if (self->have_pending_ev) {
      ev = self->pending_ev;
      self->have_pending_ev = FALSE;
      res = 1;
    } else if (self->poll_first && !waited && (!self->poll_first_probe
            || ++self->poll_first_count % POLL_FIRST_PROBE != 0)) {
      /* the last frame was waited for: so will this one be, most likely */
      res = 0;
    } else {
      res = pf_consumer_receive (c, 0, &ev);
    }
    if (res == 0) {
      res = wait_for_event (self, c);
      if (res < 0)
        return GST_FLOW_FLUSHING;
      waited = TRUE;
      continue;
    }

    if (res < 0) {
      gboolean retry = FALSE;

      if (res == -ECONNRESET || res == -EPIPE || res == -ETIMEDOUT
          || res == -ECONNABORTED) {
        gchar *why = g_utf8_make_valid (pf_consumer_get_error (c), -1);

        update_counters (self, c);
        ret = handle_disconnect (self, res, why, &retry);
        g_free (why);
        if (retry)
          continue;
        return ret;
      }
      return receive_error (self, c, res);
    }

    type = ev.type;
    switch (ev.type) {
      case PF_EVENT_CAPS:
        ret = handle_caps (self, ev.caps);
        break;
      case PF_EVENT_STREAM:
        handle_stream (self, &ev.stream);
        break;
      case PF_EVENT_FRAME:
        ret = make_buffer (self, c, &ev, outbuf);
        break;
      case PF_EVENT_EOS:
        GST_INFO_OBJECT (self, "EOS from the producer");
        ret = GST_FLOW_EOS;
        break;
      default:
        break;
    }
    pf_consumer_event_clear (&ev);
    /* a frame moves the connection's counters only after a gap, or when
     * stale frames may be dropped for it (newest-frame) */
    if (type != PF_EVENT_FRAME || self->counters_dirty
        || self->stream.delivery != PF_DELIVERY_EVERY_FRAME) {
      update_counters (self, c);
      self->counters_dirty = FALSE;
    }

    if (*outbuf != NULL) {
      self->poll_first_probe = self->last_latency == G_MAXUINT64;
      self->poll_first = waited && (self->poll_first_probe
          || self->last_latency <= POLL_FIRST_LATE_NS);
      post_qos (self, *outbuf, FALSE);
    } else if (ret == GST_FLOW_EOS)
      post_qos (self, NULL, TRUE);
    if (ret != GST_FLOW_OK || *outbuf != NULL)
      return ret;
  }
}

static void
gst_pinned_shm_src_finalize (GObject * object)
{
  GstPinnedShmSrc *self = GST_PINNED_SHM_SRC (object);

  g_free (self->socket_path);
  gst_caps_replace (&self->caps, NULL);
  clear_pending (self);
  drop_connection (self);
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
   * GstPinnedShmSrc:stats:
   *
   * A structure with connected (gboolean), frames, bytes, reconnects,
   * errors, gaps (frames we never saw: skipped by the producer or dropped
   * here as stale), missed (of those, skipped by the producer),
   * stale-dropped (of those, dropped here for a newer one), latency-last,
   * latency-mean, latency-max (ns from the producer's send to our create;
   * guint64), held (guint: frames downstream still holds), live (gboolean:
   * the element is a live source), delivery (string: every-frame,
   * newest-frame, none before the producer said) and demoted (gboolean).
   */
  properties[PROP_STATS] = g_param_spec_boxed ("stats", "Statistics",
      "Counters: connected, frames, bytes, held, reconnects, errors, gaps, "
      "missed, stale-dropped, latency-last, latency-mean, latency-max (ns), "
      "live, delivery, demoted", GST_TYPE_STRUCTURE,
      G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (gobject_class, N_PROPERTIES, properties);

  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "Pinned shared memory source", "Source/Video",
      "Receives frames in pinned shared memory from another process",
      "gst-pinnedflow developers");

  element_class->set_clock = GST_DEBUG_FUNCPTR (gst_pinned_shm_src_set_clock);
  element_class->change_state =
      GST_DEBUG_FUNCPTR (gst_pinned_shm_src_change_state);

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
}
