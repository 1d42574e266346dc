/* GStreamer pinnedflow: what pinnedshmsink and pinnedshmsrc both know
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The two ends of the wire must agree on these facts; they are written
 * once, here, and nowhere else in the plugin.
 */
#ifndef __GST_PINNED_SHM_COMMON_H__
#define __GST_PINNED_SHM_COMMON_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/* GstBufferFlags that travel on the wire (FRAME buffer_flags): the sink
 * sends only these, the source accepts only these. */
#define GST_PINNED_SHM_WIRE_BUFFER_FLAGS (GST_BUFFER_FLAG_LIVE \
    | GST_BUFFER_FLAG_DECODE_ONLY | GST_BUFFER_FLAG_DISCONT \
    | GST_BUFFER_FLAG_RESYNC | GST_BUFFER_FLAG_CORRUPTED \
    | GST_BUFFER_FLAG_MARKER | GST_BUFFER_FLAG_HEADER | GST_BUFFER_FLAG_GAP \
    | GST_BUFFER_FLAG_DROPPABLE | GST_BUFFER_FLAG_DELTA_UNIT \
    | GST_BUFFER_FLAG_NON_DROPPABLE)

/* GstSegmentFlags that travel in a STREAM's segment: the ones that say
 * what the frames are (trick mode, key units only, no audio). RESET (a
 * flushing seek), SEGMENT (a segment seek: its end becomes SEGMENT_DONE,
 * never EOS) and anything else concern the producer's pipeline alone: the
 * sink does not send them and the source drops them, with a debug line. */
#define GST_PINNED_SHM_WIRE_SEGMENT_FLAGS (GST_SEGMENT_FLAG_TRICKMODE \
    | GST_SEGMENT_FLAG_TRICKMODE_KEY_UNITS \
    | GST_SEGMENT_FLAG_TRICKMODE_FORWARD_PREDICTED \
    | GST_SEGMENT_FLAG_TRICKMODE_NO_AUDIO)

/* The name of a pf_delivery (pf-frame.h) as the elements' stats, messages
 * and logs spell it ("every-frame", "newest-frame"); @unset for any other
 * value (a request left to the producer: "auto"; nothing in force yet:
 * "none"). */
G_GNUC_INTERNAL
const gchar *gst_pinned_shm_delivery_name (guint delivery,
    const gchar * unset);

G_END_DECLS
#endif /* __GST_PINNED_SHM_COMMON_H__ */
