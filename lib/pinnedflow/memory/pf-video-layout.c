/* pinnedflow: raw-video plane layout (GstVideoInfo's rules), plain C
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * See pf-video-layout.h. This file MIRRORS gst-plugins-base
 * gst-libs/gst/video/video-info.c (fill_planes(), GStreamer 1.22): rows
 * padded to 4 bytes (GST_ROUND_UP_4), 4:2:0 formats reserving an even
 * number of luma rows, NV12/NV21 chroma sharing the luma stride. Nothing
 * else in the tree may recompute these rules; tests/bridge/test-node.c
 * 'layout' pins this file to GstVideoInfo for every format listed.
 *
 * No state: every function is reentrant.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <pinnedflow/pf-video-layout.h>

#include <errno.h>
#include <string.h>

enum layout_kind
{
  PACKED,                       /* one plane, bpp bytes per pixel */
  PLANAR_420,                   /* I420 / YV12 */
  SEMI_420,                     /* NV12 / NV21 */
  PLANAR_444,                   /* Y444 */
};

struct format_desc
{
  const char *name;
  enum layout_kind kind;
  uint32_t bpp;                 /* PACKED: bytes per pixel */
  int pair;                     /* PACKED: 4:2:2, width rounded up to 2 */
};

static const struct format_desc formats[] = {
  {"RGBA", PACKED, 4, 0}, {"BGRA", PACKED, 4, 0}, {"ARGB", PACKED, 4, 0},
  {"ABGR", PACKED, 4, 0}, {"RGBx", PACKED, 4, 0}, {"BGRx", PACKED, 4, 0},
  {"xRGB", PACKED, 4, 0}, {"xBGR", PACKED, 4, 0},
  {"RGB", PACKED, 3, 0}, {"BGR", PACKED, 3, 0},
  {"GRAY8", PACKED, 1, 0}, {"GRAY16_LE", PACKED, 2, 0},
  {"GRAY16_BE", PACKED, 2, 0},
  {"YUY2", PACKED, 2, 1}, {"UYVY", PACKED, 2, 1},
  {"I420", PLANAR_420, 0, 0}, {"YV12", PLANAR_420, 0, 0},
  {"NV12", SEMI_420, 0, 0}, {"NV21", SEMI_420, 0, 0},
  {"Y444", PLANAR_444, 0, 0},
};

static const struct format_desc *
find_format (const char *name)
{
  size_t i;

  if (name == NULL)
    return NULL;
  for (i = 0; i < sizeof (formats) / sizeof (formats[0]); i++)
    if (strcmp (formats[i].name, name) == 0)
      return &formats[i];
  return NULL;
}

/* Rounds @v up to @align (a power of two, or 1). */
static uint64_t
align_up (uint64_t v, uint64_t align)
{
  return (v + align - 1) & ~(align - 1);
}

int
pf_node_video_layout_compute (const char *format, uint32_t width,
    uint32_t height, uint32_t stride_align, pf_node_video_layout * layout)
{
  const struct format_desc *desc;
  uint64_t a, row[PF_MAX_PLANES] = { 0 }, rows[PF_MAX_PLANES] = { 0 };
  uint64_t stride, off = 0;
  uint32_t i, n, h2;

  if (layout == NULL || width == 0 || height == 0)
    return -EINVAL;
  if (stride_align != 0 && (stride_align & (stride_align - 1)) != 0)
    return -EINVAL;
  /* Keep every intermediate far below 64-bit overflow and every stride in
   * an int32. */
  if (width > (1u << 16) || height > (1u << 16))
    return -EOVERFLOW;
  desc = find_format (format);
  if (desc == NULL)
    return -ENOTSUP;

  memset (layout, 0, sizeof (*layout));
  layout->width = width;
  layout->height = height;
  h2 = (height + 1) / 2;
  switch (desc->kind) {
    case PACKED:
      n = 1;
      row[0] = (uint64_t) (desc->pair ? align_up (width, 2) : width) *
          desc->bpp;
      rows[0] = height;
      layout->pixel_stride = desc->bpp;
      break;
    case PLANAR_420:
      n = 3;
      row[0] = width;
      row[1] = row[2] = (width + 1) / 2;
      /* GStreamer reserves an even number of luma rows. */
      rows[0] = align_up (height, 2);
      rows[1] = rows[2] = h2;
      break;
    case SEMI_420:
      n = 2;
      row[0] = width;
      row[1] = align_up (width, 2);
      rows[0] = align_up (height, 2);
      rows[1] = h2;
      break;
    case PLANAR_444:
    default:
      n = 3;
      row[0] = row[1] = row[2] = width;
      rows[0] = rows[1] = rows[2] = height;
      break;
  }

  a = stride_align ? stride_align : 1;
  layout->n_planes = n;
  for (i = 0; i < n; i++) {
    stride = align_up (row[i], 4);
    /* NV12's chroma plane shares the luma stride in GStreamer's layout. */
    if (desc->kind == SEMI_420 && i == 1)
      stride = align_up (row[0], 4);
    stride = align_up (stride, a);
    off = align_up (off, a);
    layout->plane_offset[i] = off;
    layout->plane_stride[i] = (int32_t) stride;
    layout->plane_row_bytes[i] = (uint32_t) row[i];
    layout->plane_height[i] = (uint32_t) (i == 0 ? height : rows[i]);
    off += stride * rows[i];
  }
  layout->size = off;
  return 0;
}
