/* GStreamer pinnedflow: publish frames to other processes
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef __GST_PINNED_SHM_SINK_H__
#define __GST_PINNED_SHM_SINK_H__

#include <gst/gst.h>
#include <gst/base/gstbasesink.h>

G_BEGIN_DECLS

/**
 * GstPinnedShmSinkTimeoutAction:
 * @GST_PINNED_SHM_SINK_TIMEOUT_DEMOTE: the consumer gets newest-frame
 *   delivery from then on
 * @GST_PINNED_SHM_SINK_TIMEOUT_DISCONNECT: the consumer is disconnected
 *
 * What pinnedshmsink does to an every-frame consumer that held render back
 * longer than its reliable-timeout. The values are the library's
 * enum pf_reliable_action.
 */
typedef enum
{
  GST_PINNED_SHM_SINK_TIMEOUT_DEMOTE = 0,
  GST_PINNED_SHM_SINK_TIMEOUT_DISCONNECT = 1,
} GstPinnedShmSinkTimeoutAction;

#define GST_TYPE_PINNED_SHM_SINK_TIMEOUT_ACTION \
  (gst_pinned_shm_sink_timeout_action_get_type ())
GType gst_pinned_shm_sink_timeout_action_get_type (void);

#define GST_TYPE_PINNED_SHM_SINK (gst_pinned_shm_sink_get_type ())
G_DECLARE_FINAL_TYPE (GstPinnedShmSink, gst_pinned_shm_sink, GST,
    PINNED_SHM_SINK, GstBaseSink)

GST_ELEMENT_REGISTER_DECLARE (pinnedshmsink);

G_END_DECLS
#endif /* __GST_PINNED_SHM_SINK_H__ */
