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
 * `copies` field of #GstPinnedShmSink:stats).
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

#include "gstpinnedshmsink.h"
#include "gstpinnedshmcommon.h"
#include "gstpinnedshmframe.h"

#include <gst/video/video.h>
#include <gst/pinnedflow/gstpinnedallocator.h>
#include <gst/pinnedflow/gstpinnedbufferpool.h>

#include <pinnedflow/pf-producer.h>

#include <sys/resource.h>

GST_DEBUG_CATEGORY_STATIC (gst_pinned_shm_sink_debug);
#define GST_CAT_DEFAULT gst_pinned_shm_sink_debug

#define DEFAULT_SOCKET_PATH NULL
#define DEFAULT_PERMS 0600
#define DEFAULT_POOL_SIZE 0     /* auto: sized for max-clients */
#define MIN_POOL_SIZE 0
#define MAX_POOL_SIZE 256
#define DEFAULT_MAX_CLIENT_BUFFERS 4
#define MAX_MAX_CLIENT_BUFFERS 256
#define DEFAULT_WAIT_FOR_CONNECTION FALSE
#define DEFAULT_MIN_CLIENTS 1
#define DEFAULT_MAX_CLIENTS 4
#define DEFAULT_RELIABLE_TIMEOUT PF_PRODUCER_DEFAULT_RELIABLE_TIMEOUT_MS
#define DEFAULT_RELIABLE_TIMEOUT_ACTION GST_PINNED_SHM_SINK_TIMEOUT_DEMOTE
#define DEFAULT_LIVE_MAX_LAG PF_PRODUCER_DEFAULT_LIVE_MAX_LAG_MS
/* Pool slots beyond what the consumers may hold: one upstream fills while
 * one is published. */
#define POOL_RESERVE 2
/* max-clients=0 (no limit) sizes an auto pool as if for this many */
#define UNLIMITED_POOL_CLIENTS 4

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
  PROP_MIN_CLIENTS,
  PROP_MAX_CLIENTS,
  PROP_RELIABLE_TIMEOUT,
  PROP_RELIABLE_TIMEOUT_ACTION,
  PROP_LIVE_MAX_LAG,
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
  guint max_clients;
  gint reliable_timeout;
  GstPinnedShmSinkTimeoutAction reliable_timeout_action;
  gint live_max_lag;

  /* lock protects everything below; cond wakes a render waiting for a
   * client. Never held across pf_producer_close() (its callbacks take it).
   * producer is set by start() and cleared by stop(), when no render runs
   * (the sink pad is inactive in READY): render reads it without the lock.
   * n_clients is also read without it (atomically): a render that finds a
   * client takes no lock (issue 13). */
  GMutex lock;
  GCond cond;
  pf_producer *producer;
  gboolean wait_for_connection;
  guint min_clients;            /* the first frame waits for this many */
  gboolean unlocked;
  guint n_clients;
  /* streaming thread only: the first frame since start() went out (later
   * frames wait for one client, not min_clients) */
  gboolean first_sent;

  /* streaming thread only; what render reads every frame first, with the
   * counters it updates (each frame starts with cold caches) */
  gboolean is_video;
  gboolean clock_is_monotonic;
  /* gst_base_sink_get_latency(), cached by start() and at each LATENCY
   * event (the only thing that changes it): COUNTER_GET/SET */
  guint64 latency;
  guint64 lock_checked_segment; /* id of the last segment checked for mlock */
  gboolean lock_warned;
  gboolean live;                /* upstream's, as last queried */

  /* statistics: written by the streaming thread alone (COUNTER_ADD), read
   * by any (COUNTER_GET), no lock; released by the producer's callbacks
   * (one thread at a time: its I/O thread, then close()'s caller). in-flight
   * is published - released. Reset by start(). */
  guint64 frames;
  guint64 bytes;
  guint64 zero_copy_frames;
  guint64 copies;
  guint64 drops;
  guint64 published;
  guint64 released;

  /* streaming thread only: the caps (read per frame only for a buffer
   * without video meta) and the copy path */
  GstVideoInfo vinfo;
  GstBufferPool *copy_pool;
  gsize copy_pool_size;

  /* under lock (the client-event callback, any thread) */
  guint64 demotions;
  guint64 refused;
};

/* A counter that one thread at a time writes: a relaxed load and store (no
 * locked instruction), so that other threads read whole values. */
#define COUNTER_ADD(c, n) \
  __atomic_store_n (&(c), __atomic_load_n (&(c), __ATOMIC_RELAXED) + (n), \
      __ATOMIC_RELAXED)
#define COUNTER_GET(c) __atomic_load_n (&(c), __ATOMIC_RELAXED)
#define COUNTER_SET(c, v) __atomic_store_n (&(c), (v), __ATOMIC_RELAXED)

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

static const gchar *
drop_reason_name (gint reason)
{
  switch (reason) {
    case PF_DROP_LIMIT:
      return "limit";
    case PF_DROP_SOCKET_FULL:
      return "socket-full";
    case PF_DROP_NOT_READY:
      return "not-ready";
    default:
      return "none";
  }
}

/* ------------------------------------------------------------------------ */
/* Producer callbacks: run on the transport's I/O thread or in close(). */

static void
on_frame_released (void *user_data, void *frame_token)
{
  GstPinnedShmSink *self = user_data;

  gst_buffer_unref (GST_BUFFER_CAST (frame_token));
  COUNTER_ADD (self->released, 1);
}

static void
on_client_connected (void *user_data, const pf_client_info * info)
{
  GstPinnedShmSink *self = user_data;

  GST_INFO_OBJECT (self, "client %u connected (pid %d, uid %u)",
      info->client_id, info->pid, info->uid);
  g_mutex_lock (&self->lock);
  g_atomic_int_inc (&self->n_clients);
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);

  g_signal_emit (self, signals[SIGNAL_CLIENT_CONNECTED], 0,
      (guint) info->client_id, (gint) info->pid, (guint) info->uid);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_NUM_CLIENTS]);
}

/* Drops, demotions, reliable timeouts: on the publishing (streaming)
 * thread or the I/O thread, no lock held. The library rate-limits DROPPED
 * (the first at once, then at most one per second per client). */
static void
on_client_event (void *user_data, const pf_client_event * ev)
{
  GstPinnedShmSink *self = user_data;
  const gchar *name;
  GstStructure *s;

  switch (ev->type) {
    case PF_CLIENT_EVENT_DROPPED:
      name = "pinnedshmsink-drops";
      GST_DEBUG_OBJECT (self, "%s", ev->message);
      if (ev->dropped == ev->frames_dropped) {
        /* the first report of this client */
        GST_ELEMENT_WARNING (self, RESOURCE, WRITE,
            ("Consumer %u (pid %d) misses frames (%s delivery, %s)",
                ev->client_id, ev->pid,
                gst_pinned_shm_delivery_name (ev->delivery, "auto"),
                drop_reason_name (ev->reason)), ("%s", ev->message));
      }
      break;
    case PF_CLIENT_EVENT_DEMOTED:
      name = "pinnedshmsink-client-demoted";
      GST_ELEMENT_WARNING (self, RESOURCE, WRITE,
          ("Consumer %u (pid %d) demoted to newest-frame delivery",
              ev->client_id, ev->pid), ("%s (reliable-timeout)", ev->message));
      break;
    case PF_CLIENT_EVENT_REFUSED:
      name = "pinnedshmsink-client-refused";
      GST_ELEMENT_WARNING (self, RESOURCE, BUSY,
          ("Refused a consumer (pid %d): max-clients are connected",
              ev->pid), ("%s", ev->message));
      break;
    case PF_CLIENT_EVENT_TIMED_OUT:
      name = "pinnedshmsink-client-timed-out";
      GST_ELEMENT_WARNING (self, RESOURCE, WRITE,
          ("Consumer %u (pid %d) disconnected: it held its frames past the "
              "reliable timeout", ev->client_id, ev->pid), ("%s", ev->message));
      break;
    default:
      return;
  }
  if (ev->type != PF_CLIENT_EVENT_DROPPED) {
    g_mutex_lock (&self->lock);
    if (ev->type == PF_CLIENT_EVENT_REFUSED)
      self->refused++;
    else
      self->demotions++;
    g_mutex_unlock (&self->lock);
  }

  s = gst_structure_new (name,
      "client-id", G_TYPE_UINT, (guint) ev->client_id,
      "pid", G_TYPE_INT, (gint) ev->pid,
      "delivery", G_TYPE_STRING, gst_pinned_shm_delivery_name (ev->delivery,
          "auto"), "reason", G_TYPE_STRING, drop_reason_name (ev->reason),
      "dropped", G_TYPE_UINT64, (guint64) ev->dropped, "total-dropped",
      G_TYPE_UINT64, (guint64) ev->frames_dropped, "last-seq", G_TYPE_UINT64,
      (guint64) ev->last_seq, "blocked", G_TYPE_UINT64,
      (guint64) ev->blocked_ns, "message", G_TYPE_STRING, ev->message, NULL);
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self), s));
}

static void
on_client_disconnected (void *user_data, const pf_client_info * info)
{
  GstPinnedShmSink *self = user_data;

  GST_INFO_OBJECT (self, "client %u (pid %d) disconnected: %s",
      info->client_id, info->pid, info->reason);
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self),
          gst_structure_new ("pinnedshmsink-client-disconnected",
              "client-id", G_TYPE_UINT, (guint) info->client_id,
              "pid", G_TYPE_INT, (gint) info->pid,
              "error", G_TYPE_INT, info->error,
              "reason", G_TYPE_STRING, info->reason, NULL)));
  g_mutex_lock (&self->lock);
  if (self->n_clients > 0)
    g_atomic_int_add (&self->n_clients, -1);
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
  guint64 released, published;

  g_mutex_lock (&self->lock);
  if (self->producer)
    producer = pf_producer_ref (self->producer);
  /* a release may be counted before render counts its frame published:
   * in-flight is clamped at 0 then */
  released = COUNTER_GET (self->released);
  published = COUNTER_GET (self->published);
  s = gst_structure_new ("application/x-pinnedshmsink-stats",
      "frames", G_TYPE_UINT64, COUNTER_GET (self->frames),
      "bytes", G_TYPE_UINT64, COUNTER_GET (self->bytes),
      "zero-copy-frames", G_TYPE_UINT64, COUNTER_GET (self->zero_copy_frames),
      "copies", G_TYPE_UINT64, COUNTER_GET (self->copies),
      "drops", G_TYPE_UINT64, COUNTER_GET (self->drops),
      "in-flight", G_TYPE_UINT64,
      published > released ? published - released : 0,
      "demotions", G_TYPE_UINT64, self->demotions,
      "refused", G_TYPE_UINT64, self->refused,
      "live", G_TYPE_BOOLEAN, self->live, NULL);
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
        "dropped-limit", G_TYPE_UINT64, cs[i].dropped_limit,
        "dropped-socket-full", G_TYPE_UINT64, cs[i].dropped_socket,
        "dropped-not-ready", G_TYPE_UINT64, cs[i].dropped_not_ready,
        "skipped-to-key-frame", G_TYPE_UINT64, cs[i].frames_skipped_key,
        "requested", G_TYPE_STRING,
        gst_pinned_shm_delivery_name (cs[i].requested, "auto"),
        "delivery", G_TYPE_STRING, gst_pinned_shm_delivery_name (cs[i].delivery,
            "auto"),
        "demoted", G_TYPE_BOOLEAN, cs[i].demoted != 0,
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

/* The reliable-timeout property (-1: no bound, 0: never wait) in the
 * library's terms (-1: no bound, 0: its default, else ms). */
static int
reliable_timeout_ms (gint prop)
{
  return prop == 0 ? 1 : prop;
}

/* Slots of the pools: pool-size, or (0: auto) room for every consumer to
 * hold max-client-buffers frames plus POOL_RESERVE. Object lock held. */
static guint
pool_count_locked (GstPinnedShmSink * self)
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
static void
check_pool_fits (GstPinnedShmSink * self)
{
  guint count, pool_size, max_clients, mcb;
  guint64 need;

  GST_OBJECT_LOCK (self);
  count = pool_count_locked (self);
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
  check_pool_fits (self);
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
  config.callbacks.frame_released = on_frame_released;
  config.callbacks.client_connected = on_client_connected;
  config.callbacks.client_disconnected = on_client_disconnected;
  config.callbacks.client_event = on_client_event;
  config.callbacks.user_data = self;

  g_mutex_lock (&self->lock);
  g_atomic_int_set (&self->n_clients, 0);
  self->unlocked = FALSE;
  self->first_sent = FALSE;
  COUNTER_SET (self->frames, 0);
  COUNTER_SET (self->bytes, 0);
  COUNTER_SET (self->zero_copy_frames, 0);
  COUNTER_SET (self->copies, 0);
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

/* Replaces the copy pool (under the lock: unlock() sets it flushing). */
static void
set_copy_pool (GstPinnedShmSink * self, GstBufferPool * pool)
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

  set_copy_pool (self, NULL);
  self->copy_pool_size = 0;

  g_mutex_lock (&self->lock);
  g_atomic_int_set (&self->n_clients, 0);
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
  count = pool_count_locked (self);
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

  self->clock_is_monotonic = gst_pinned_shm_clock_is_monotonic (clock);
  return GST_ELEMENT_CLASS (parent_class)->set_clock (element, clock);
}

/* One buffer of the sink's own pool holding a copy of @buf, or NULL with
 * *@ret set (GST_FLOW_OK: the pool is empty and the stream live, drop the
 * frame; GST_FLOW_FLUSHING: flushing while waiting for a buffer). A
 * non-live stream waits for a buffer: its every-frame consumers release
 * theirs (pf_producer_wait_ready() saw to that), and dropping would lose
 * the frame for them. */
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
    GstBufferPool *pool;
    guint count;

    set_copy_pool (self, NULL);
    GST_OBJECT_LOCK (self);
    count = pool_count_locked (self);
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
    set_copy_pool (self, pool);
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
  gst_buffer_extract (buf, 0, map.data, size);
  gst_buffer_unmap (copy, &map);
  gst_buffer_set_size (copy, size);
  return copy;
}

/* Warns once per stream when the pool of @seg could not be page-locked
 * (RLIMIT_MEMLOCK, 8 MiB by default for a user): consumers still get every
 * frame, but the pages may be swapped and a CUDA consumer pins them
 * itself (or copies from pageable memory). */
static void
check_locked (GstPinnedShmSink * self, pf_segment * seg)
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

/* gst_segment_to_running_time (@seg, GST_FORMAT_TIME, @pts) for a valid
 * @pts, computed here for a segment of rate 1.0 (every live stream's) as
 * GStreamer computes it (no call into libgstreamer per frame, issue 13):
 * NONE outside [start, stop]; pts - (start + offset) + base, or below
 * start + offset, base - (start + offset - pts) when not negative. */
static GstClockTime
running_time (const GstSegment * seg, GstClockTime pts)
{
  GstClockTime start;

  if (G_UNLIKELY (seg->rate != 1.0))
    return gst_segment_to_running_time (seg, GST_FORMAT_TIME, pts);
  if (pts < seg->start || (seg->stop != GST_CLOCK_TIME_NONE && pts > seg->stop))
    return GST_CLOCK_TIME_NONE;
  start = seg->start + seg->offset;
  if (pts >= start)
    return pts - start + seg->base;
  if (seg->base >= start - pts)
    return seg->base - (start - pts);
  return GST_CLOCK_TIME_NONE;
}

/* @buf's PTS as CLOCK_MONOTONIC time (the wire's clock_pts), or
 * PF_TIME_NONE: its running time + base time + latency, moved from the
 * pipeline clock to CLOCK_MONOTONIC when they differ. One lock (the
 * object's, for the clock and base time); the latency is cached. */
static guint64
clock_pts (GstPinnedShmSink * self, GstBuffer * buf)
{
  GstBaseSink *bsink = GST_BASE_SINK_CAST (self);
  GstClockTime pts = GST_BUFFER_PTS (buf), rt, t, base;
  GstClock *clock = NULL;
  gboolean have_clock;

  if (!GST_CLOCK_TIME_IS_VALID (pts)
      || bsink->segment.format != GST_FORMAT_TIME)
    return PF_TIME_NONE;
  rt = running_time (&bsink->segment, pts);
  if (!GST_CLOCK_TIME_IS_VALID (rt))
    return PF_TIME_NONE;

  /* clock and base time in one go; the clock itself (a reference) only
   * when it must be read: a monotonic clock's time is the wire's already
   * (every frame comes here) */
  GST_OBJECT_LOCK (self);
  have_clock = GST_ELEMENT_CLOCK (self) != NULL;
  base = GST_ELEMENT_CAST (self)->base_time;
  if (have_clock && !self->clock_is_monotonic)
    clock = gst_object_ref (GST_ELEMENT_CLOCK (self));
  GST_OBJECT_UNLOCK (self);
  if (!have_clock)
    return PF_TIME_NONE;

  t = rt + base + COUNTER_GET (self->latency);
  if (clock != NULL) {
    GstClockTimeDiff diff = GST_CLOCK_DIFF (gst_clock_get_time (clock),
        (GstClockTime) pf_monotonic_ns ());

    t = (diff < 0 && (GstClockTime) (-diff) > t) ? 0 : t + diff;
    gst_object_unref (clock);
  }
  return t;
}

/* Waits until every every-frame client can take the frame: 0, or
 * -ECANCELED when unlocked (flushing), -EPIPE when closed. Clients past the
 * reliable timeout are demoted or disconnected on the way
 * (on_client_event). */
static int
wait_ready (GstPinnedShmSink * self, pf_producer * producer)
{
  int err = pf_producer_wait_ready (producer, -1);

  if (G_UNLIKELY (err < 0))
    GST_DEBUG_OBJECT (self, "wait for every-frame clients: %s",
        g_strerror (-err));
  return err;
}

/* The clients the next frame waits for (wait-for-connection): min-clients
 * before the first frame, then one. Under the lock. */
static guint
clients_needed (GstPinnedShmSink * self)
{
  if (!self->wait_for_connection)
    return 1;
  return self->first_sent ? 1 : MAX (self->min_clients, 1);
}

/* Waits for a client (for min-clients before the first frame); returns
 * FALSE when unlocked (flushing). Otherwise *@n_clients, under the lock; a
 * frame without clients is counted as dropped here. */
static gboolean
wait_for_client (GstPinnedShmSink * self, guint * n_clients)
{
  g_mutex_lock (&self->lock);
  while (self->n_clients < clients_needed (self) && !self->unlocked
      && self->wait_for_connection) {
    GST_LOG_OBJECT (self, "waiting for a client (%u of %u connected)",
        self->n_clients, clients_needed (self));
    g_cond_wait (&self->cond, &self->lock);
  }
  if (self->unlocked) {
    g_mutex_unlock (&self->lock);
    return FALSE;
  }
  *n_clients = self->n_clients;
  g_mutex_unlock (&self->lock);
  if (*n_clients == 0) {
    COUNTER_ADD (self->frames, 1);
    COUNTER_ADD (self->drops, 1);
  }
  return TRUE;
}

static GstFlowReturn
gst_pinned_shm_sink_render (GstBaseSink * bsink, GstBuffer * buf)
{
  /* unchecked: the base class calls us with ourselves, every frame */
  GstPinnedShmSink *self = (GstPinnedShmSink *) bsink;
  /* set before the pad was activated, cleared after it was deactivated */
  pf_producer *producer = self->producer;
  pf_producer_frame frame;
  pf_segment *segs[PF_MAX_CHUNKS];
  GstBuffer *token;
  gboolean zero_copy;
  GstFlowReturn ret = GST_FLOW_OK;
  gsize size = gst_buffer_get_size (buf);
  guint n_clients;
  int sent, err;

  if (size == 0) {
    GST_DEBUG_OBJECT (self, "empty buffer, nothing to publish");
    return GST_FLOW_OK;
  }
  if (producer == NULL)
    return GST_FLOW_FLUSHING;

  /* A client is there: no lock (flushing is seen by wait_ready below).
   * Else wait for one, or count the frame dropped. */
  if (G_UNLIKELY (g_atomic_int_get (&self->n_clients) == 0
          || !self->first_sent)) {
    while (!wait_for_client (self, &n_clients)) {
      ret = gst_base_sink_wait_preroll (bsink);
      if (ret != GST_FLOW_OK)
        return ret;
    }
    if (n_clients == 0) {
      GST_LOG_OBJECT (self, "no client, frame dropped");
      return GST_FLOW_OK;
    }
    self->first_sent = TRUE;
  }

  while ((err = wait_ready (self, producer)) < 0) {
    ret = err == -EPIPE ? GST_FLOW_FLUSHING :
        gst_base_sink_wait_preroll (bsink);
    if (ret != GST_FLOW_OK)
      return ret;
  }

  memset (&frame, 0, sizeof (frame));
  zero_copy = gst_pinned_shm_frame_set_chunks (&frame, buf, segs);
  if (zero_copy) {
    token = gst_buffer_ref (buf);
  } else {
    token = copy_to_pool (self, buf, &ret);
    if (token == NULL) {
      if (ret == GST_FLOW_OK) {
        COUNTER_ADD (self->frames, 1);
        COUNTER_ADD (self->drops, 1);
      }
      return ret;
    }
    /* one pinned memory of exactly @size bytes */
    if (!gst_pinned_shm_frame_set_chunks (&frame, token, segs))
      g_assert_not_reached ();
  }
  check_locked (self, segs[0]);
  gst_pinned_shm_frame_set_meta (&frame, buf,
      self->is_video ? &self->vinfo : NULL, clock_pts (self, buf));

  sent = pf_producer_publish (producer, &frame, segs, token);

  /* after the send: the consumer may be woken on this CPU, and runs only
   * once we block, so only counters here */
  COUNTER_ADD (self->frames, 1);
  if (!zero_copy)
    COUNTER_ADD (self->copies, 1);
  else
    COUNTER_ADD (self->zero_copy_frames, 1);
  if (G_LIKELY (sent > 0)) {
    COUNTER_ADD (self->bytes, size);
    COUNTER_ADD (self->published, 1);
    return GST_FLOW_OK;
  }
  COUNTER_ADD (self->drops, 1);
  gst_buffer_unref (token);
  if (sent < 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE, ("Could not publish frame"),
        ("pf_producer_publish: %s", g_strerror (-sent)));
    return GST_FLOW_ERROR;
  }
  GST_LOG_OBJECT (self, "frame of %" G_GSIZE_FORMAT " bytes to no client%s",
      size, zero_copy ? " (zero copy)" : " (copied)");
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
  self->min_clients = DEFAULT_MIN_CLIENTS;
  self->max_clients = DEFAULT_MAX_CLIENTS;
  self->reliable_timeout = DEFAULT_RELIABLE_TIMEOUT;
  self->reliable_timeout_action = DEFAULT_RELIABLE_TIMEOUT_ACTION;
  self->live_max_lag = DEFAULT_LIVE_MAX_LAG;
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
   * (gboolean), held and bytes.
   */
  properties[PROP_STATS] = g_param_spec_boxed ("stats", "Statistics",
      "Counters: frames, bytes, zero-copy-frames, copies, drops, in-flight, "
      "demotions, refused, live, and per client (clients array) id, pid, "
      "uid, sent, released, dropped, dropped-limit, dropped-socket-full, "
      "dropped-not-ready, skipped-to-key-frame, requested, delivery, "
      "demoted, held, bytes",
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
  element_class->send_event =
      GST_DEBUG_FUNCPTR (gst_pinned_shm_sink_send_event);

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

  gst_type_mark_as_plugin_api (GST_TYPE_PINNED_SHM_SINK_TIMEOUT_ACTION, 0);
}
