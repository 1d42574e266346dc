/* GStreamer pinnedflow: pinnedshmsrc's statistics and QoS
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The `stats` property of pinnedshmsrc (its counters, the connection's
 * folded in), and the source's counting: frames, bytes and latency per
 * frame, gaps in the sequence (DISCONT), the connection's stale and
 * missed frames, and the QoS messages that post the frames lost.
 *
 * Threads and lifetimes: the counters follow the rules of the instance
 * struct (gstpinnedshmsrc-private.h): those written by the streaming
 * thread alone are COUNTER_* (gstpinnedshmcounter.h) and read without a
 * lock, the others are under self->lock. The stats structure is built on
 * any thread (a property read); everything else here runs on the
 * streaming thread.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedshmsrc-private.h"
#include "gstpinnedshmcommon.h"

#define GST_CAT_DEFAULT gst_pinned_shm_src_debug

/* At most one QoS message per this many microseconds */
#define QOS_INTERVAL_US G_USEC_PER_SEC

GstStructure *
gst_pinned_shm_src_get_stats (GstPinnedShmSrc * self)
{
  guint64 frames = COUNTER_GET (self->frames);
  GstStructure *s;

  g_mutex_lock (&self->lock);
  s = gst_structure_new ("application/x-pinnedshmsrc-stats",
      "connected", G_TYPE_BOOLEAN, self->consumer != NULL,
      "frames", G_TYPE_UINT64, frames,
      "bytes", G_TYPE_UINT64, COUNTER_GET (self->bytes),
      "held", G_TYPE_UINT,
      self->consumer ? pf_consumer_get_held (self->consumer) : 0,
      "reconnects", G_TYPE_UINT64, self->reconnects,
      "errors", G_TYPE_UINT64, self->errors,
      "gaps", G_TYPE_UINT64, self->gaps,
      "latency-last", G_TYPE_UINT64, COUNTER_GET (self->latency_last),
      "latency-mean", G_TYPE_UINT64,
      frames ? COUNTER_GET (self->latency_sum) / frames : (guint64) 0,
      "latency-max", G_TYPE_UINT64, COUNTER_GET (self->latency_max),
      "stale-dropped", G_TYPE_UINT64, self->stale_dropped,
      "missed", G_TYPE_UINT64, self->missed,
      "live", G_TYPE_BOOLEAN, self->live,
      "delivery", G_TYPE_STRING,
      gst_pinned_shm_delivery_name (self->delivery_in_force, "none"), "demoted",
      G_TYPE_BOOLEAN, self->demoted, "device-frames", G_TYPE_UINT64,
      COUNTER_GET (self->device_frames_out), "device-copies", G_TYPE_UINT64,
      COUNTER_GET (self->device_copies), "domain-device", G_TYPE_INT,
      g_atomic_int_get (&self->domain_device), NULL);
  g_mutex_unlock (&self->lock);
  return s;
}

/* The stats going to PAUSED (gst_pinned_shm_src_probe()). */
void
gst_pinned_shm_src_reset_stats (GstPinnedShmSrc * self)
{
  COUNTER_SET (self->frames, 0);
  COUNTER_SET (self->device_frames_out, 0);
  COUNTER_SET (self->device_copies, 0);
  COUNTER_SET (self->bytes, 0);
  COUNTER_SET (self->latency_last, 0);
  COUNTER_SET (self->latency_sum, 0);
  COUNTER_SET (self->latency_max, 0);
  g_mutex_lock (&self->lock);
  self->reconnects = self->errors = self->gaps = 0;
  self->stale_dropped = self->missed = 0;
  self->delivery_in_force = 0;
  self->demoted = FALSE;
  g_mutex_unlock (&self->lock);
}

/* Counts the frames the producer skipped for us; DISCONT after a gap or a
 * (re)connection. TRUE after a gap. */
gboolean
gst_pinned_shm_src_note_sequence (GstPinnedShmSrc * self,
    const pf_consumer_frame * f, GstBuffer * buf)
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
void
gst_pinned_shm_src_count_frame (GstPinnedShmSrc * self,
    const pf_consumer_frame * f, guint64 total)
{
  guint64 now, lat;

  COUNTER_SET (self->frames, self->frames + 1);
  COUNTER_SET (self->bytes, self->bytes + total);
  self->last_latency = G_MAXUINT64;
  if (f->send_time == PF_TIME_NONE)
    return;
  now = pf_monotonic_ns ();
  if (now < f->send_time)
    return;
  lat = now - f->send_time;
  self->last_latency = lat;
  COUNTER_SET (self->latency_last, lat);
  COUNTER_SET (self->latency_sum, self->latency_sum + lat);
  if (lat > self->latency_max)
    COUNTER_SET (self->latency_max, lat);
}

/* Posts the frames lost since the last QoS message (the producer skipped
 * them, or they were dropped here as stale) when a second passed since it,
 * or at once with @flush; @buf: the frame that showed the loss, or NULL. */
void
gst_pinned_shm_src_post_qos (GstPinnedShmSrc * self, GstBuffer * buf,
    gboolean flush)
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
  processed = COUNTER_GET (self->frames);
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
void
gst_pinned_shm_src_update_counters (GstPinnedShmSrc * self, pf_consumer * c)
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
