/* GStreamer pinnedflow CUDA: formats and caps shared by both elements
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef __GST_PINNED_CUDA_FORMATS_H__
#define __GST_PINNED_CUDA_FORMATS_H__

#include <gst/gst.h>
#include <gst/video/video.h>
#include <gst/pinnedcuda/gstpinnedcuda.h>

G_BEGIN_DECLS

/* Planar and packed formats whose planes are plain rows of bytes. */
#define GST_PINNED_CUDA_FORMATS "{ RGBA, BGRA, RGBx, BGRx, ARGB, ABGR, xRGB, xBGR, " \
  "RGB, BGR, GRAY8, GRAY16_LE, NV12, NV21, NV16, NV24, I420, YV12, Y42B, " \
  "Y444, P010_10LE, P016_LE, I420_10LE, Y444_16LE, YUY2, UYVY }"

G_END_DECLS
#endif
