/* GStreamer pinnedflow: pinnedshmsrc receiving
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * pinnedshmsrc's create(): the loop that (re)connects, waits for and
 * receives the producer's events, and what it makes of them: CAPS (set on
 * the pad), STREAM (liveness, delivery, the producer's segment), FRAME (a
 * buffer of read-only memories on loan) and EOS.
 *
 * Threads and lifetimes: the streaming thread alone, which also sets and
 * drops the connection while streaming (see the instance struct,
 * gstpinnedshmsrc-private.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedshmsrc-private.h"
#include "gstpinnedshmcommon.h"
#include "gstpinnedshmtime.h"

#include <errno.h>

#define GST_CAT_DEFAULT gst_pinned_shm_src_debug

/* Sets @base (the producer's caps without memory features; taken) on the
 * pad, with memory:PinnedflowCUDA or memory:CUDAMemory when @device
 * (whichever downstream takes first), unless they are there already. */
static GstFlowReturn
set_output_caps (GstPinnedShmSrc * self, GstCaps * base, gboolean device)
{
  if (self->caps == NULL || self->out_device != device
      || !gst_caps_is_equal (self->caps, base)) {
    GstCaps *out = device ? gst_pinned_shm_src_device_caps (self, base) :
        gst_caps_ref (base);
    gboolean ok;

#ifdef GST_PINNED_SHM_CUDA
    if (device && self->out_cuda_memory
        && !gst_pinned_shm_src_cuda_ensure (self)) {
      gst_caps_unref (out);
      gst_caps_unref (base);
      return GST_FLOW_ERROR;
    }
#endif
    ok = gst_base_src_set_caps (GST_BASE_SRC (self), out);
    if (!ok) {
      if (device)
        GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
            ("Downstream refused the producer's device frames"),
            ("caps %" GST_PTR_FORMAT " (downstream takes neither "
                "memory:PinnedflowCUDA nor memory:CUDAMemory)", out));
      else
        GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
            ("Downstream refused the producer's caps"),
            ("caps %" GST_PTR_FORMAT, out));
    }
    gst_caps_unref (out);
    if (!ok) {
      gst_caps_unref (base);
      return GST_FLOW_NOT_NEGOTIATED;
    }
  }
  self->out_device = device;
  gst_caps_take (&self->caps, base);
  return GST_FLOW_OK;
}

static GstFlowReturn
handle_caps (GstPinnedShmSrc * self, pf_consumer * c, const gchar * str)
{
  GstCaps *caps = gst_caps_from_string (str);
  gboolean device;

  if (caps == NULL || !gst_caps_is_fixed (caps)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Producer sent invalid caps"),
        ("caps \"%s\"", str));
    gst_clear_caps (&caps);
    return GST_FLOW_ERROR;
  }

  GST_DEBUG_OBJECT (self, "caps %" GST_PTR_FORMAT, caps);
  caps = gst_caps_make_writable (caps);
  /* a device stream says so in its caps (memory:PinnedflowCUDA or
   * memory:CUDAMemory); what goes downstream follows the frames' domain */
  device = gst_pinned_shm_src_device_strip (caps);
  if (device && gst_pinned_shm_src_device_check (self, c) != GST_FLOW_OK) {
    gst_caps_unref (caps);
    return GST_FLOW_NOT_NEGOTIATED;
  }
  if (self->pool != NULL)
    gst_pinned_shm_frame_pool_forget (self->pool);
  self->is_video = FALSE;
  gst_pinned_shm_layout_reset (&self->layout);
  if (gst_structure_has_name (gst_caps_get_structure (caps, 0), "video/x-raw")
      && gst_video_info_from_caps (&self->vinfo, caps))
    self->is_video = TRUE;

  return set_output_caps (self, caps, device);
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
        self->ts_shift = gst_pinned_shm_time_now (GST_ELEMENT (self));
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

/* The FRAME event as a buffer of read-only memories on loan. */
static GstFlowReturn
make_buffer (GstPinnedShmSrc * self, pf_consumer * c, const pf_event * ev,
    GstBuffer ** outbuf)
{
  const pf_consumer_frame *f = &ev->frame;
  GstBuffer *buf = NULL;
  const gchar *invalid;
  gchar *why = NULL;
  guint64 total = 0;
  gboolean device = f->n_chunks > 0
      && pf_segment_get_device (ev->segments[0]) != NULL;
  GstFlowReturn ret;
  guint i;

  for (i = 1; i < f->n_chunks && i < PF_MAX_CHUNKS; i++) {
    if ((pf_segment_get_device (ev->segments[i]) != NULL) != device) {
      invalid = "a frame with chunks in host and device memory";
      goto error;
    }
  }
  if (device != self->out_device) {
    /* the frames changed domain: so do the caps downstream */
    if (self->caps == NULL) {
      invalid = "a frame before the caps";
      goto error;
    }
    if (device && (ret = gst_pinned_shm_src_device_check (self, c)) !=
        GST_FLOW_OK)
      return ret;
    if ((ret = set_output_caps (self, gst_caps_ref (self->caps), device)) !=
        GST_FLOW_OK)
      return ret;
  }
  if (device) {
    if (!gst_pinned_shm_src_device_wrap (self, c, ev, &buf, &total, &why)) {
      invalid = why;
      goto error;
    }
  } else if (self->pool != NULL ? !gst_pinned_shm_frame_pool_wrap (self->pool,
          self->allocator, c, ev, &buf, &total)
      : !gst_pinned_shm_frame_wrap_chunks (self->allocator, c, ev,
          (buf = gst_buffer_new ()), &total)) {
    invalid = "chunk outside its segment";
    goto error;
  }
  gst_pinned_shm_frame_stamp (GST_ELEMENT_CAST (self),
      g_atomic_int_get (&self->clock_is_monotonic), self->keep_ts, f, buf);
  if (gst_pinned_shm_src_note_sequence (self, f, buf))
    self->counters_dirty = TRUE;
  /* a device frame's meta is the wrapped memory's (pitch, rows) */
  if (!device && !gst_pinned_shm_frame_add_video_meta (f, total,
          self->is_video ? &self->vinfo : NULL, buf, &self->layout)) {
    invalid = "video meta does not match the caps, or a plane is not inside "
        "one chunk of the frame";
    goto error;
  }
  gst_pinned_shm_src_count_frame (self, f, total);
  *outbuf = buf;
  return GST_FLOW_OK;

error:
  if (buf != NULL)
    gst_buffer_unref (buf);
  GST_ELEMENT_ERROR (self, STREAM, DECODE, ("Invalid frame from producer"),
      ("frame %" G_GUINT64_FORMAT ": %s", (guint64) f->seq, invalid));
  g_free (why);
  return GST_FLOW_ERROR;
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
      res = gst_pinned_shm_src_wait_or_cancel (self, pf_consumer_get_fd (c), 0);
    } while (res == 0 && g_get_monotonic_time () < deadline);
  }
  if (res == 0)
    res = gst_pinned_shm_src_wait_or_cancel (self, pf_consumer_get_fd (c), -1);
  return res;
}

GstFlowReturn
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
    ret = handle_caps (self, self->consumer, caps);
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
     * no lock, and no reference of our own (gst_pinned_shm_src_receive_error () and
     * gst_pinned_shm_src_handle_disconnect () drop it last) */
    c = self->consumer;

    if (c == NULL) {
      gint timeout;

      gst_pinned_shm_src_clear_pending (self);
      GST_OBJECT_LOCK (self);
      timeout = self->connect_timeout;
      GST_OBJECT_UNLOCK (self);
      /* a lost producer is awaited forever (reconnect mode) */
      if (self->ever_connected)
        timeout = -1;
      ret = gst_pinned_shm_src_connect (self, timeout);
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
    if (res >= 0 && self->device_import) {
      /* a device segment refused here (no device with its UUID, no
       * virtual memory support): its frames never come */
      uint32_t refused = 0;

      (void) pf_consumer_get_device_stats (c, NULL, &refused);
      if (refused != self->device_refused) {
        self->device_refused = refused;
        if (self->out_device
            && (ret = gst_pinned_shm_src_device_check (self, c)) !=
            GST_FLOW_OK) {
          if (res == 1)
            pf_consumer_event_clear (&ev);
          return ret;
        }
        GST_WARNING_OBJECT (self, "device segment refused: %s",
            pf_consumer_get_device_stats (c, NULL, NULL));
      }
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

        gst_pinned_shm_src_update_counters (self, c);
        ret = gst_pinned_shm_src_handle_disconnect (self, res, why, &retry);
        g_free (why);
        if (retry)
          continue;
        return ret;
      }
      return gst_pinned_shm_src_receive_error (self, c, res);
    }

    type = ev.type;
    switch (ev.type) {
      case PF_EVENT_CAPS:
        ret = handle_caps (self, c, ev.caps);
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
      gst_pinned_shm_src_update_counters (self, c);
      self->counters_dirty = FALSE;
    }

    if (*outbuf != NULL) {
      self->poll_first_probe = self->last_latency == G_MAXUINT64;
      self->poll_first = waited && (self->poll_first_probe
          || self->last_latency <= POLL_FIRST_LATE_NS);
      gst_pinned_shm_src_post_qos (self, *outbuf, FALSE);
    } else if (ret == GST_FLOW_EOS)
      gst_pinned_shm_src_post_qos (self, NULL, TRUE);
    if (ret != GST_FLOW_OK || *outbuf != NULL)
      return ret;
  }
}
