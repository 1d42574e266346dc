/* GStreamer pinnedflow: pinnedshmsrc's connection to a producer
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * See gstpinnedshmconnect.c. Used by pinnedshmsrc on its streaming thread;
 * the functions on the element itself: gstpinnedshmsrc-private.h.
 */
#ifndef __GST_PINNED_SHM_CONNECT_H__
#define __GST_PINNED_SHM_CONNECT_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/* TRUE for a pf_consumer_connect() failure worth another attempt before
 * the deadline. */
G_GNUC_INTERNAL
gboolean gst_pinned_shm_connect_error_is_transient (gint err);

/* Posts on @self the element error of a connection to @path that failed
 * for good with @err after @timeout_ms. */
G_GNUC_INTERNAL
void gst_pinned_shm_post_connect_error (GstElement * self, const gchar * path,
    gint err, gint timeout_ms);

G_END_DECLS
#endif /* __GST_PINNED_SHM_CONNECT_H__ */
