/* GStreamer pinnedflow CUDA plugin
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Registers without CUDA: the runtime is loaded when an element starts.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedcudaupload.h"
#include "gstpinnedcudadownload.h"

static gboolean
plugin_init (GstPlugin * plugin)
{
  gboolean ret = FALSE;

  gst_type_mark_as_plugin_api (GST_TYPE_PINNED_CUDA_BASE_TRANSFORM, 0);
  ret |= GST_ELEMENT_REGISTER (pinnedcudaupload, plugin);
  ret |= GST_ELEMENT_REGISTER (pinnedcudadownload, plugin);
  return ret;
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, pinnedcuda,
    "Upload to and download from CUDA device memory, by DMA from pinned "
    "segments (CUDA runtime loaded at run time)", plugin_init, VERSION,
    GST_LICENSE, GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)
