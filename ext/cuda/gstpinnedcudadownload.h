/* GStreamer pinnedflow CUDA: CUDA device memory to system memory
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef __GST_PINNED_CUDA_DOWNLOAD_H__
#define __GST_PINNED_CUDA_DOWNLOAD_H__

#include <gst/gst.h>
#include "gstpinnedcudabasetransform.h"

G_BEGIN_DECLS

#define GST_TYPE_PINNED_CUDA_DOWNLOAD (gst_pinned_cuda_download_get_type ())
G_DECLARE_FINAL_TYPE (GstPinnedCudaDownload, gst_pinned_cuda_download, GST,
    PINNED_CUDA_DOWNLOAD, GstPinnedCudaBaseTransform)

GST_ELEMENT_REGISTER_DECLARE (pinnedcudadownload);

G_END_DECLS
#endif
