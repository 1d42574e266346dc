/* GStreamer pinnedflow CUDA: system memory to CUDA device memory
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef __GST_PINNED_CUDA_UPLOAD_H__
#define __GST_PINNED_CUDA_UPLOAD_H__

#include <gst/gst.h>
#include "gstpinnedcudabasetransform.h"

G_BEGIN_DECLS

#define GST_TYPE_PINNED_CUDA_UPLOAD (gst_pinned_cuda_upload_get_type ())
G_DECLARE_FINAL_TYPE (GstPinnedCudaUpload, gst_pinned_cuda_upload, GST,
    PINNED_CUDA_UPLOAD, GstPinnedCudaBaseTransform)

GST_ELEMENT_REGISTER_DECLARE (pinnedcudaupload);

G_END_DECLS
#endif
