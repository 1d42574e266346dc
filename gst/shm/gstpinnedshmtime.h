/* GStreamer pinnedflow: the wire's time base
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Both directions of the wire's time base, CLOCK_MONOTONIC time (a FRAME's
 * clock_pts): pinnedshmsink's buffer PTS to wire time (its running time,
 * base time and latency, moved from the pipeline clock to CLOCK_MONOTONIC
 * when they differ), pinnedshmsrc's wire time to running time of its own
 * pipeline, and the clock facts both need (is the pipeline clock
 * CLOCK_MONOTONIC already, the running time now).
 *
 * Threads and lifetimes: plain functions of their arguments, called on an
 * element's streaming thread (set_clock: any); nothing is kept.
 */
#ifndef __GST_PINNED_SHM_TIME_H__
#define __GST_PINNED_SHM_TIME_H__

#include <gst/gst.h>
#include <gst/base/gstbasesink.h>

G_BEGIN_DECLS

/* TRUE when @clock (may be NULL) is a GstSystemClock of type MONOTONIC: its
 * time is CLOCK_MONOTONIC time, the wire's time base, so no offset has to be
 * applied. Both elements call it from their set_clock vfunc. */
G_GNUC_INTERNAL
gboolean gst_pinned_shm_clock_is_monotonic (GstClock * clock);

/* gst_segment_to_running_time (@seg, GST_FORMAT_TIME, @pts) for a valid
 * @pts, without a call into libgstreamer for a segment of rate 1.0. */
G_GNUC_INTERNAL
GstClockTime gst_pinned_shm_time_segment_running_time (const GstSegment *
    seg, GstClockTime pts);

/* pinnedshmsink: @buf's PTS as CLOCK_MONOTONIC time (the wire's
 * clock_pts) in @bsink's segment, or PF_TIME_NONE. @clock_is_monotonic:
 * gst_pinned_shm_clock_is_monotonic() of its clock; @latency: its cached
 * latency, a counter (gstpinnedshmcounter.h). */
G_GNUC_INTERNAL
guint64 gst_pinned_shm_time_to_wire (GstBaseSink * bsink,
    gboolean clock_is_monotonic, const guint64 * latency, GstBuffer * buf);

/* pinnedshmsrc: the producer's CLOCK_MONOTONIC time @clock_pts as running
 * time of @element's pipeline (GST_CLOCK_TIME_NONE without a clock, unless
 * @clock_is_monotonic). */
G_GNUC_INTERNAL
GstClockTime gst_pinned_shm_time_from_wire (GstElement * element,
    gboolean clock_is_monotonic, guint64 clock_pts);

/* The running time of @element's pipeline now (0 without a clock). */
G_GNUC_INTERNAL
GstClockTime gst_pinned_shm_time_now (GstElement * element);

G_END_DECLS
#endif /* __GST_PINNED_SHM_TIME_H__ */
