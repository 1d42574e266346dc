/* pinnedflow: device frames in nodes (the CUDA side of pf-node.h), plain C
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * pf_node_producer_new_device(), pf_node_consumer_new_full() and
 * pf_node_frame_get_device() (declared in pf-node.h): the node layer
 * below knows device segments as plain data only; here they are made
 * (pf_device_segment_new()), imported (pf_device_consumer_enable()) and
 * looked at (pf_device_segment_get_*()), through the node layer's private
 * hooks (pf-node-private.h). docs/cuda.md, "Device frames in nodes".
 *
 * Threading: as pf-node.h; nothing here keeps state.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <pinnedflow/pf-device-segment.h>
#include <pinnedflow/pf-node-private.h>
#include <pinnedflow/pf-node.h>
#include <pinnedflow/pf-pool.h>

#include <errno.h>
#include <string.h>

int
pf_node_producer_new_device (const pf_node_producer_config * config,
    int device, pf_node_producer ** out)
{
  pf_segment *seg = NULL;
  uint64_t stride;
  uint32_t n_slots;
  int res;

  if (out == NULL)
    return -EINVAL;
  *out = NULL;
  if (config == NULL || device < 0 || config->slot_size == 0)
    return -EINVAL;
  n_slots = config->n_slots ? config->n_slots : 4;
  res = pf_pool_slot_stride (config->slot_size, &stride);
  if (res < 0)
    return res;
  if (stride > UINT64_MAX / n_slots)
    return -EOVERFLOW;
  /* the node layer checks the rest of @config (before the socket exists:
   * the segment is made first, dropped on any failure) */
  res = pf_device_segment_new (device, stride * n_slots, &seg);
  if (res < 0)
    return res;
  res = pf_node_producer_new_in (config, seg,
      pf_device_segment_get_ptr (seg), out);
  pf_segment_unref (seg);       /* the pool holds it */
  return res;
}

static unsigned int
device_access (pf_segment * seg)
{
  return pf_device_segment_get_access (seg);
}

int
pf_node_consumer_new_full (const char *socket_path, int timeout_ms,
    uint32_t delivery, uint32_t flags, pf_node_consumer ** out)
{
  int device = (flags & PF_NODE_CONSUMER_DEVICE) != 0;
  int res;

  if (out)
    *out = NULL;
  if (flags & ~PF_NODE_CONSUMER_DEVICE)
    return -EINVAL;
  res = pf_node_consumer_connect (socket_path, timeout_ms, delivery,
      device ? PF_CONSUMER_OPTION_DEVICE_SEGMENTS : 0,
      device ? device_access : NULL, out);
  if (res < 0 || !device)
    return res;
  /* the CUDA layer imports the device segments (before the first receive:
   * the producer sends its segments right after the HELLO) */
  res = pf_device_consumer_enable (pf_node_consumer_get_transport (*out));
  if (res < 0) {
    pf_node_consumer_free (*out);
    *out = NULL;
  }
  return res;
}

int
pf_node_frame_get_device (const pf_node_frame * frame,
    pf_node_device_info * info)
{
  const pf_segment_device *dev;
  int res;

  if (info)
    memset (info, 0, sizeof (*info));
  if (frame == NULL || info == NULL || frame->segment == NULL ||
      (dev = pf_segment_get_device (frame->segment)) == NULL)
    return -EINVAL;
  res = pf_node_frame_get_chunk_ptrs (frame, info->chunk_ptr);
  if (res < 0)
    return res;
  info->ordinal = pf_device_segment_get_ordinal (frame->segment);
  info->access = pf_device_segment_get_access (frame->segment);
  memcpy (info->uuid, dev->uuid, sizeof (info->uuid));
  info->ptr = info->chunk_ptr[0];
  return 0;
}
