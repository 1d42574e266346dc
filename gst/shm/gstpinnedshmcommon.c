/* GStreamer pinnedflow: what pinnedshmsink and pinnedshmsrc both know
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedshmcommon.h"

#include <pinnedflow/pf-frame.h>

const gchar *
gst_pinned_shm_delivery_name (guint delivery, const gchar * unset)
{
  switch (delivery) {
    case PF_DELIVERY_EVERY_FRAME:
      return "every-frame";
    case PF_DELIVERY_NEWEST_FRAME:
      return "newest-frame";
    default:
      return unset;
  }
}
