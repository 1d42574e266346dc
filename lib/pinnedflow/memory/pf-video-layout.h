/* pinnedflow: raw-video plane layout (GstVideoInfo's rules), plain C
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The one place outside GStreamer that knows how GStreamer lays out a raw
 * video frame: plane offsets and strides as gst_video_info_set_format()
 * computes them, for the formats listed below. It mirrors
 * gst-plugins-base gst-libs/gst/video/video-info.c (fill_planes()); the
 * bridge test 'layout' (tests/bridge/test-node.c) compares every format and
 * several odd sizes against GstVideoInfo, so a drift fails the suite.
 *
 * Pure functions on caller-owned structs: no state, any thread.
 * Part of the node API; included by <pinnedflow/pf-node.h>.
 */
#ifndef __PF_VIDEO_LAYOUT_H__
#define __PF_VIDEO_LAYOUT_H__

#include <stdint.h>

#include <pinnedflow/pf-api.h>
#include <pinnedflow/pf-frame.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The memory layout of one video frame (a plain value type).
 * Since: 0.1
 */
typedef struct {
  uint32_t width, height, n_planes;
  uint64_t size;                /* bytes, all planes */
  uint64_t plane_offset[PF_MAX_PLANES];
  int32_t plane_stride[PF_MAX_PLANES];
  uint32_t plane_height[PF_MAX_PLANES]; /* rows of each plane */
  uint32_t plane_row_bytes[PF_MAX_PLANES];      /* used bytes of a row */
  uint32_t pixel_stride;        /* bytes per pixel of plane 0 (packed), or 0 */
  uint32_t reserved;
} pf_node_video_layout;

/**
 * pf_node_video_layout_compute:
 * @format: GStreamer format name: RGBA BGRA ARGB ABGR RGBx BGRx xRGB xBGR
 *   RGB BGR GRAY8 GRAY16_LE GRAY16_BE YUY2 UYVY I420 YV12 NV12 NV21 Y444
 * @stride_align: 0 for GStreamer's default layout (rows padded to 4 bytes,
 *   what gst_video_info_set_format() computes), else a power of two every
 *   stride and plane offset is rounded up to (e.g. 256 for GPU pitch)
 *
 * Returns: 0, -EINVAL (bad size or alignment), -ENOTSUP (unknown format),
 * -EOVERFLOW.
 *
 * Since: 0.1
 */
PF_API int pf_node_video_layout_compute (const char *format, uint32_t width,
    uint32_t height, uint32_t stride_align, pf_node_video_layout * layout);

#ifdef __cplusplus
}
#endif
#endif /* __PF_VIDEO_LAYOUT_H__ */
