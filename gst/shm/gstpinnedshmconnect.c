/* GStreamer pinnedflow: pinnedshmsrc's connection to a producer
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The life of pinnedshmsrc's connection: the probe going to PAUSED (is the
 * producer up, is it live), connecting with retries until the deadline,
 * the reading of pf_consumer_connect()'s errors (which ones are worth
 * another attempt, the element error each final one posts: nobody
 * listening, a silent peer, a producer that serves its maximum of
 * consumers, anything else), the wait every step polls with the unlock
 * eventfd, and the end of a connection (on-disconnect, receive errors).
 *
 * Threads and lifetimes: the source's streaming thread, or its state
 * change to PAUSED while that is stopped; the consumer is set and dropped
 * under the source's lock. The texts read pf_consumer_connect_error(),
 * which is per thread: call right after the failed connect, on the same
 * thread.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedshmconnect.h"
#include "gstpinnedshmsrc-private.h"

#include <errno.h>
#include <poll.h>
#include <string.h>

#include <pinnedflow/pf-consumer.h>

/* Posts why connecting failed for good: nobody listening, a peer that
 * accepted and stayed silent, or anything else. Texts from the socket
 * layer are made valid UTF-8 (a socket path may not be). */
void
gst_pinned_shm_post_connect_error (GstElement * self, const gchar * path,
    gint err, gint timeout_ms)
{
  gchar *upath = g_utf8_make_valid (path, -1);
  gchar *why = g_utf8_make_valid (pf_consumer_connect_error (), -1);

  switch (err) {
    case -ETIME:
      GST_ELEMENT_ERROR (self, RESOURCE, READ,
          ("The producer on \"%s\" accepted the connection but sent no "
              "HELLO", upath), ("%s (connect-timeout %d ms)", why, timeout_ms));
      break;
    case -ETIMEDOUT:
    case -ENOENT:
    case -ECONNREFUSED:
    case -EAGAIN:
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
          ("No producer on \"%s\"", upath), ("%s (connect-timeout %d ms)",
              why, timeout_ms));
      break;
    case -EUSERS:
      GST_ELEMENT_ERROR (self, RESOURCE, BUSY,
          ("The producer on \"%s\" refused this consumer: it serves its "
              "maximum of consumers", upath), ("%s (the producer's "
              "max-clients)", why));
      break;
    default:
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
          ("Could not connect to \"%s\"", upath), ("%s (%s)", why,
              g_strerror (-err)));
      break;
  }
  g_free (why);
  g_free (upath);
}

/* TRUE for the failures worth another attempt before the deadline: nobody
 * listens yet, or a producer died during the handshake. A peer that stayed
 * silent (-ETIME) used up the deadline already. */
gboolean
gst_pinned_shm_connect_error_is_transient (gint err)
{
  return err == -ENOENT || err == -ECONNREFUSED || err == -ETIMEDOUT
      || err == -EAGAIN || err == -ECONNRESET || err == -EPIPE;
}

/* ---- the source's connection (its instance: gstpinnedshmsrc-private.h);
 * the two functions above log to the default category, as they always
 * did, the ones below to pinnedshmsrc's ---- */

#define GST_CAT_DEFAULT gst_pinned_shm_src_debug

/* How long going to PAUSED waits, once connected, for a producer's STREAM
 * that knows its liveness (one with a segment; a live producer still in
 * PAUSED has none yet and only guesses). */
#define PROBE_STREAM_MS 1000
/* How long going to PAUSED tries to connect to a producer whose socket
 * file exists (a producer answers its HELLO in microseconds) */
#define PROBE_CONNECT_MS 500
/* After a failed handshake (a producer dying while we connect), the next
 * attempt comes this much later. */
#define CONNECT_RETRY_MS 20
/* on-disconnect=reconnect: the wait after a refusal (max-clients), doubled
 * after each one up to the maximum */
#define REFUSED_RETRY_MIN_MS 100
#define REFUSED_RETRY_MAX_MS 2000

/* Waits until @fd (if >= 0) is readable (1), @timeout_ms passed (0) or the
 * element is unlocked (-1). */
gint
gst_pinned_shm_src_wait_or_cancel (GstPinnedShmSrc * self, gint fd,
    gint timeout_ms)
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

void
gst_pinned_shm_src_drop_connection (GstPinnedShmSrc * self)
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
void
gst_pinned_shm_src_clear_pending (GstPinnedShmSrc * self)
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
GstFlowReturn
gst_pinned_shm_src_connect (GstPinnedShmSrc * self, gint timeout_ms)
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

  gst_pinned_shm_src_device_options (self, &options);
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
      if (gst_pinned_shm_src_wait_or_cancel (self, -1,
              (gint) refused_wait_ms) < 0) {
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
    if (gst_pinned_shm_src_wait_or_cancel (self, -1, CONNECT_RETRY_MS) < 0) {
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
  if (!gst_pinned_shm_src_device_enable (self, c)) {
    pf_consumer_unref (c);
    ret = GST_FLOW_ERROR;
    goto done;
  }
  set_connection (self, c);

done:
  g_free (path);
  return ret;
}

/* Going to PAUSED: whether to be a live source (GstBaseSrc reads it
 * before start()). delivery=every-frame: not live, newest-frame: live;
 * auto: when the socket file exists, one bounded attempt (PROBE_CONNECT_MS,
 * HELLO included) to connect and read the producer's STREAM, which says
 * whether it is live; CAPS read on the way and one other event wait for the
 * first create(). With no producer up, or any failure (create() connects
 * again and reports it), live. */
void
gst_pinned_shm_src_probe (GstPinnedShmSrc * self)
{
  pf_consumer_options options = { 0, };
  pf_consumer *c = NULL;
  GstPinnedShmSrcIsLive is_live;
  gboolean live, have_path;
  gint64 deadline;
  gchar *path;
  int err;

  /* a connection left by a start that failed after the last probe */
  gst_pinned_shm_src_drop_connection (self);
  gst_pinned_shm_src_clear_pending (self);
  gst_caps_replace (&self->caps, NULL);
  self->out_device = FALSE;
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
  gst_pinned_shm_src_reset_stats (self);

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
      && is_live == GST_PINNED_SHM_SRC_IS_LIVE_AUTO && have_path)
    gst_pinned_shm_src_device_options (self, &options);
  if (options.delivery == GST_PINNED_SHM_SRC_DELIVERY_AUTO
      && is_live == GST_PINNED_SHM_SRC_IS_LIVE_AUTO && have_path
      && self->cancel_fd >= 0 && g_file_test (path, G_FILE_TEST_EXISTS)
      && pf_consumer_connect_with (path, PROBE_CONNECT_MS, self->cancel_fd,
          &options, &c) == 0) {
    apply_budget (self, c);
    /* a failure shows when create() finds no connection and connects */
    if (!gst_pinned_shm_src_device_enable (self, c))
      g_clear_pointer (&c, pf_consumer_unref);
  }
  if (c != NULL) {
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

/* The connection ended with @res (pf_consumer_receive()): -ECONNRESET the
 * producer vanished without EOS, -EPIPE it hung up after one, -ETIMEDOUT
 * it stopped reading our releases, -ECONNABORTED it disconnected us for
 * falling behind (and said so). @why: the consumer's error text. */
GstFlowReturn
gst_pinned_shm_src_handle_disconnect (GstPinnedShmSrc * self, gint res,
    const gchar * why, gboolean * retry)
{
  GstPinnedShmSrcOnDisconnect mode;

  GST_OBJECT_LOCK (self);
  mode = self->on_disconnect;
  GST_OBJECT_UNLOCK (self);

  gst_pinned_shm_src_drop_connection (self);
  gst_pinned_shm_src_post_qos (self, NULL, TRUE);
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

/* A receive error other than the end of the connection. */
GstFlowReturn
gst_pinned_shm_src_receive_error (GstPinnedShmSrc * self, pf_consumer * c,
    gint res)
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
  gst_pinned_shm_src_drop_connection (self);
  return GST_FLOW_ERROR;
}
