/* GStreamer pinnedflow: pinnedshmsink's statistics
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The `stats` property of pinnedshmsink: its counters and the producer's
 * per-client stats (pf_producer_get_client_stats()).
 *
 * Threads and lifetimes: the counters follow the rules of the instance
 * struct (gstpinnedshmsink-private.h): those written by the streaming
 * thread alone are COUNTER_* (gstpinnedshmcounter.h) and read without a
 * lock, the others are under self->lock. The structure is built on any
 * thread (a property read); the producer is referenced under self->lock
 * and asked for its clients after it is dropped (the producer takes its
 * own lock: nothing of ours is held then).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedshmsink-private.h"
#include "gstpinnedshmcommon.h"

GstStructure *
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
      "device-copies", G_TYPE_UINT64, COUNTER_GET (self->device_copies),
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
  gst_pinned_shm_sink_domains_add_stats (self, s);
  return s;
}
