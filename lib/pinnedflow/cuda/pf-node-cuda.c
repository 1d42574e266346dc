/* pinnedflow node API: received frames onto a CUDA device
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A thin adapter: a pf_node_frame described as a pf_upload_source whose
 * release callback is pf_node_frame_release(), called by the engine
 * (release thread or pf_uploader_poll()) once the copy's event completed.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "pf-node-cuda.h"
#include "pf-cuda-registration.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int
pf_node_frame_to_upload_source (const pf_node_frame * frame,
    pf_upload_source * src)
{
  const pf_node_video_layout *l;
  unsigned int p;

  if (frame == NULL || src == NULL)
    return -EINVAL;
  memset (src, 0, sizeof (*src));
  /* a device frame is no host memory to copy from */
  if (frame->domain == PF_NODE_DOMAIN_DEVICE)
    return -EINVAL;
  if (frame->n_chunks != 1 || frame->data == NULL)
    return -ENOTSUP;
  if (frame->size == 0)
    return -EINVAL;
  l = &frame->layout;
  if (l->n_planes == 0) {
    /* no video layout: the bytes as one row */
    if (frame->size > UINT32_MAX)
      return -ENOTSUP;
    src->n_planes = 1;
    src->plane_data[0] = frame->data;
    src->plane_stride[0] = (size_t) frame->size;
    src->plane_rows[0] = 1;
    src->plane_row_bytes[0] = (uint32_t) frame->size;
  } else {
    if (l->n_planes > PF_MAX_PLANES)
      return -EINVAL;
    src->n_planes = l->n_planes;
    for (p = 0; p < l->n_planes; p++) {
      uint64_t span;

      if (l->plane_stride[p] <= 0 || l->plane_height[p] == 0
          || l->plane_row_bytes[p] == 0
          || l->plane_row_bytes[p] > (uint32_t) l->plane_stride[p])
        return -EINVAL;
      /* the plane must lie inside the frame (checked by the consumer too) */
      span = (uint64_t) l->plane_stride[p] * (l->plane_height[p] - 1) +
          l->plane_row_bytes[p];
      if (l->plane_offset[p] > frame->size
          || span > frame->size - l->plane_offset[p])
        return -EINVAL;
      src->plane_data[p] = (const uint8_t *) frame->data + l->plane_offset[p];
      src->plane_stride[p] = (size_t) l->plane_stride[p];
      src->plane_rows[p] = l->plane_height[p];
      src->plane_row_bytes[p] = l->plane_row_bytes[p];
    }
  }
  if (frame->segment) {
    src->segments[0] = frame->segment;
    src->n_segments = 1;
  }
  return 0;
}

static void
release_node_frame (void *user_data, int status)
{
  (void) status;
  pf_node_frame_release (user_data);
}

int
pf_node_frame_upload (pf_uploader * up, pf_node_frame * frame,
    int timeout_ms, pf_device_frame ** out)
{
  pf_upload_source src;
  pf_device_frame *d;
  int res;

  if (up == NULL || out == NULL)
    return -EINVAL;
  *out = NULL;
  if ((res = pf_node_frame_to_upload_source (frame, &src)) < 0)
    return res;
  src.release = release_node_frame;
  src.release_data = frame;
  /* The frame's fields are read before the engine may release it. */
  {
    uint32_t width = frame->layout.n_planes ? frame->layout.width :
        frame->info.width;
    uint32_t height = frame->layout.n_planes ? frame->layout.height :
        frame->info.height;
    uint32_t pixel_stride = frame->layout.pixel_stride;
    uint64_t seq = frame->seq, pts = frame->pts;
    char format[sizeof (d->format)];

    snprintf (format, sizeof (format), "%s", frame->info.format);
    res = pf_uploader_upload (up, &src, timeout_ms, &d, NULL);
    if (res < 0)
      return res;
    d->width = width;
    d->height = height;
    d->pixel_stride = pixel_stride;
    d->seq = seq;
    d->pts = pts;
    memcpy (d->format, format, sizeof (d->format));
  }
  *out = d;
  return 0;
}

int
pf_node_frame_cuda_registered (const pf_node_frame * frame)
{
  const pf_cuda_registration *reg;

  if (frame == NULL || frame->segment == NULL)
    return 0;
  reg = pf_cuda_segment_get_registration (frame->segment);
  return reg != NULL && reg->registered;
}
