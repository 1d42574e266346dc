/* GStreamer pinnedflow: what a failed connection to a producer means
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * pinnedshmsrc's reading of pf_consumer_connect()'s errors: which ones are
 * worth another attempt before the deadline, and the element error each
 * final one posts (nobody listening, a silent peer, a producer that serves
 * its maximum of consumers, anything else).
 *
 * Threads and lifetimes: no state; called on the source's streaming
 * thread. The texts read pf_consumer_connect_error(), which is per thread:
 * call right after the failed connect, on the same thread.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedshmconnect.h"

#include <errno.h>

#include <pinnedflow/pf-consumer.h>

/* Posts why connecting failed for good: nobody listening, a peer that
 * accepted and stayed silent, or anything else. Texts from the socket
 * layer are made valid UTF-8 (a socket path may not be). */
void
gst_pinned_shm_post_connect_error (GstElement * self, const gchar * path,
    gint err, gint timeout_ms)
{
  gchar *upath = g_utf8_make_valid (path, -1);
  gchar *why = g_utf8_make_valid (pf_consumer_connect_error (), -1);

  switch (err) {
    case -ETIME:
      GST_ELEMENT_ERROR (self, RESOURCE, READ,
          ("The producer on \"%s\" accepted the connection but sent no "
              "HELLO", upath), ("%s (connect-timeout %d ms)", why, timeout_ms));
      break;
    case -ETIMEDOUT:
    case -ENOENT:
    case -ECONNREFUSED:
    case -EAGAIN:
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
          ("No producer on \"%s\"", upath), ("%s (connect-timeout %d ms)",
              why, timeout_ms));
      break;
    case -EUSERS:
      GST_ELEMENT_ERROR (self, RESOURCE, BUSY,
          ("The producer on \"%s\" refused this consumer: it serves its "
              "maximum of consumers", upath), ("%s (the producer's "
              "max-clients)", why));
      break;
    default:
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
          ("Could not connect to \"%s\"", upath), ("%s (%s)", why,
              g_strerror (-err)));
      break;
  }
  g_free (why);
  g_free (upath);
}

/* TRUE for the failures worth another attempt before the deadline: nobody
 * listens yet, or a producer died during the handshake. A peer that stayed
 * silent (-ETIME) used up the deadline already. */
gboolean
gst_pinned_shm_connect_error_is_transient (gint err)
{
  return err == -ENOENT || err == -ECONNREFUSED || err == -ETIMEDOUT
      || err == -EAGAIN || err == -ECONNRESET || err == -EPIPE;
}
