/* GStreamer pinnedflow: pinnedshmsink publishing a frame
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * pinnedshmsink's render: wait for the clients the frame needs
 * (wait-for-connection, min-clients) and for every every-frame client to
 * take one more, then publish the buffer (zero copy from pinned memory,
 * else a copy in the copy pool) with its timestamps on the wire's time
 * base, and count it.
 *
 * Threads and lifetimes: the streaming thread; the producer is set before
 * the pad is activated and cleared after it was deactivated, so render
 * reads it without the lock.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedshmsink-private.h"
#include "gstpinnedshmframe.h"
#include "gstpinnedshmtime.h"

#include <errno.h>
#include <string.h>

#define GST_CAT_DEFAULT gst_pinned_shm_sink_debug

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

GstFlowReturn
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
  zero_copy = !self->device_mode
      && gst_pinned_shm_frame_set_chunks (&frame, buf, segs);
  if (zero_copy) {
    token = gst_buffer_ref (buf);
  } else if (self->device_mode) {
    /* one device-to-device copy into the device segment (device frames),
     * or none for libgstcuda's exported virtual memory (not counted in
     * device-copies: this thread alone counts them) */
    guint64 device_copies = COUNTER_GET (self->device_copies);

    token = gst_pinned_shm_sink_device_copy (self, buf, &frame, segs, &ret);
    if (token == NULL)
      return ret;
    zero_copy = COUNTER_GET (self->device_copies) == device_copies;
  } else {
    token = gst_pinned_shm_sink_copy_to_pool (self, buf, &ret);
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
  gst_pinned_shm_sink_check_locked (self, segs[0]);
  gst_pinned_shm_frame_set_meta (&frame, buf,
      self->is_video ? &self->vinfo : NULL, gst_pinned_shm_time_to_wire (bsink,
          g_atomic_int_get (&self->clock_is_monotonic), &self->latency, buf));

  /* with its copies in the domains the consumers want (domains=true) */
  sent = gst_pinned_shm_sink_domains_publish (self, producer, &frame, segs,
      token);

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
        ("pf_producer_publish: %s%s%s", g_strerror (-sent),
            sent == -EINVAL ? ": " : "",
            sent == -EINVAL ? pf_producer_get_error (producer) : ""));
    return GST_FLOW_ERROR;
  }
  GST_LOG_OBJECT (self, "frame of %" G_GSIZE_FORMAT " bytes to no client%s",
      size, zero_copy ? " (zero copy)" : " (copied)");
  return GST_FLOW_OK;
}
