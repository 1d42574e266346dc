/* GStreamer pinnedflow: the wire's time base
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Threads and lifetimes: see the header (no state). The sink's direction
 * runs on its streaming thread for every frame it publishes, the source's
 * for every frame it receives.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedshmtime.h"
#include "gstpinnedshmcounter.h"

#include <pinnedflow/pf-frame.h>

gboolean
gst_pinned_shm_clock_is_monotonic (GstClock * clock)
{
  GstClockType type;

  if (clock == NULL || G_OBJECT_TYPE (clock) != GST_TYPE_SYSTEM_CLOCK)
    return FALSE;
  g_object_get (clock, "clock-type", &type, NULL);
  return type == GST_CLOCK_TYPE_MONOTONIC;
}

/* ---- the sink's direction: buffer time to wire time ---- */

/* gst_segment_to_running_time (@seg, GST_FORMAT_TIME, @pts) for a valid
 * @pts, computed here for a segment of rate 1.0 (every live stream's) as
 * GStreamer computes it (no call into libgstreamer per frame, issue 13):
 * NONE outside [start, stop]; pts - (start + offset) + base, or below
 * start + offset, base - (start + offset - pts) when not negative. */
GstClockTime
gst_pinned_shm_time_segment_running_time (const GstSegment * seg,
    GstClockTime pts)
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
guint64
gst_pinned_shm_time_to_wire (GstBaseSink * bsink, gboolean clock_is_monotonic,
    const guint64 * latency, GstBuffer * buf)
{
  GstClockTime pts = GST_BUFFER_PTS (buf), rt, t, base;
  GstClock *clock = NULL;
  gboolean have_clock;

  if (!GST_CLOCK_TIME_IS_VALID (pts)
      || bsink->segment.format != GST_FORMAT_TIME)
    return PF_TIME_NONE;
  rt = gst_pinned_shm_time_segment_running_time (&bsink->segment, pts);
  if (!GST_CLOCK_TIME_IS_VALID (rt))
    return PF_TIME_NONE;

  /* clock and base time in one go; the clock itself (a reference) only
   * when it must be read: a monotonic clock's time is the wire's already
   * (every frame comes here) */
  GST_OBJECT_LOCK (bsink);
  have_clock = GST_ELEMENT_CLOCK (bsink) != NULL;
  base = GST_ELEMENT_CAST (bsink)->base_time;
  if (have_clock && !clock_is_monotonic)
    clock = gst_object_ref (GST_ELEMENT_CLOCK (bsink));
  GST_OBJECT_UNLOCK (bsink);
  if (!have_clock)
    return PF_TIME_NONE;

  t = rt + base + COUNTER_GET (*latency);
  if (clock != NULL) {
    GstClockTimeDiff diff = GST_CLOCK_DIFF (gst_clock_get_time (clock),
        (GstClockTime) pf_monotonic_ns ());

    t = (diff < 0 && (GstClockTime) (-diff) > t) ? 0 : t + diff;
    gst_object_unref (clock);
  }
  return t;
}

/* ---- the source's direction: wire time to buffer time ---- */

/* Producer CLOCK_MONOTONIC time to running time of @element's pipeline. */
GstClockTime
gst_pinned_shm_time_from_wire (GstElement * element,
    gboolean clock_is_monotonic, guint64 clock_pts)
{
  GstClockTime base = gst_element_get_base_time (element);
  GstClockTime t = clock_pts;

  if (!clock_is_monotonic) {
    GstClock *clock = gst_element_get_clock (element);
    GstClockTimeDiff diff;

    if (clock == NULL)
      return GST_CLOCK_TIME_NONE;
    diff = GST_CLOCK_DIFF ((GstClockTime) pf_monotonic_ns (),
        gst_clock_get_time (clock));
    gst_object_unref (clock);
    t = (diff < 0 && (GstClockTime) (-diff) > t) ? 0 : t + diff;
  }
  return t > base ? t - base : 0;
}

/* The running time of @element's pipeline now (0 without a clock). */
GstClockTime
gst_pinned_shm_time_now (GstElement * element)
{
  GstClock *clock = gst_element_get_clock (element);
  GstClockTime now, base;

  if (clock == NULL)
    return 0;
  now = gst_clock_get_time (clock);
  base = gst_element_get_base_time (element);
  gst_object_unref (clock);
  return now > base ? now - base : 0;
}
