/* GStreamer pinnedflow: pinnedshmsink's producer callbacks on the bus
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * What the producer tells pinnedshmsink, and what the sink makes of it:
 * frames released (a counter), consumers connected and gone (the
 * client-connected/client-disconnected signals, num-clients, a
 * pinnedshmsink-client-disconnected element message), drops, demotions,
 * refusals and reliable timeouts (warnings and pinnedshmsink-* element
 * messages, and the demotions/refused counters).
 *
 * Threads and lifetimes: the callbacks run on the transport's I/O thread,
 * on the publishing (streaming) thread, or in pf_producer_close(), with no
 * lock held; they take the sink's lock, never held across
 * pf_producer_close().
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedshmsink-private.h"
#include "gstpinnedshmcommon.h"

#define GST_CAT_DEFAULT gst_pinned_shm_sink_debug

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

/* Producer callbacks: run on the transport's I/O thread, in close(), or
 * (frame_released, client events) on the streaming thread after a
 * publish or a wait for room. */

/* A client came or went: the element's signal and num-clients, by name
 * (once per connection; the element file keeps its signal and property
 * tables to itself, and this file calls nothing in it). */
static void
client_changed (GstPinnedShmSink * self, gboolean connected,
    const pf_client_info * info)
{
  g_signal_emit_by_name (self, connected ? "client-connected" :
      "client-disconnected", (guint) info->client_id, (gint) info->pid,
      (guint) info->uid);
  g_object_notify (G_OBJECT (self), "num-clients");
}

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

  client_changed (self, TRUE, info);
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

  client_changed (self, FALSE, info);
}

void
gst_pinned_shm_sink_set_callbacks (GstPinnedShmSink * self,
    pf_producer_callbacks * callbacks)
{
  callbacks->frame_released = on_frame_released;
  callbacks->client_connected = on_client_connected;
  callbacks->client_disconnected = on_client_disconnected;
  callbacks->client_event = on_client_event;
  callbacks->user_data = self;
}
