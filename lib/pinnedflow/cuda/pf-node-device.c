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

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

/* The driver calls that wait for a device frame's readers (opened once,
 * as pf-device-segment.c opens it: never linked). */
static struct
{
  int (*ctx_get_current) (void **ctx);
  int (*device_get) (int *dev, int ordinal);
  int (*primary_retain) (void **ctx, int dev);
  int (*primary_release) (int dev);
  int (*ctx_push) (void *ctx);
  int (*ctx_pop) (void **ctx);
  int (*stream_sync) (void *stream);
} drv;
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;
static atomic_uint_fast64_t sync_errors;

static void
drv_load (void)
{
  void *h = dlopen ("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

  if (h == NULL)
    return;
  *(void **) &drv.ctx_get_current = dlsym (h, "cuCtxGetCurrent");
  *(void **) &drv.device_get = dlsym (h, "cuDeviceGet");
  *(void **) &drv.primary_retain = dlsym (h, "cuDevicePrimaryCtxRetain");
  *(void **) &drv.primary_release = dlsym (h, "cuDevicePrimaryCtxRelease_v2");
  *(void **) &drv.ctx_push = dlsym (h, "cuCtxPushCurrent_v2");
  *(void **) &drv.ctx_pop = dlsym (h, "cuCtxPopCurrent_v2");
  *(void **) &drv.stream_sync = dlsym (h, "cuStreamSynchronize");
  if (!drv.ctx_get_current || !drv.device_get || !drv.primary_retain ||
      !drv.primary_release || !drv.ctx_push || !drv.ctx_pop || !drv.stream_sync)
    memset (&drv, 0, sizeof (drv));
  /* the handle stays open for the process's life, as the CUDA layer's */
}

/* pf_node_device_sync_func: cuStreamSynchronize on each reader, in the
 * calling thread's current context, or the device's primary context (the
 * one PyTorch and CuPy use) where none is current: what stream handles 1
 * (legacy) and 2 (per-thread) mean. */
static int
sync_readers (pf_segment * seg, const uintptr_t * streams, uint32_t n)
{
  void *cur = NULL, *ctx = NULL;
  int dev = -1, pushed = 0, res = 0;
  uint32_t i;

  pthread_once (&drv_once, drv_load);
  if (drv.stream_sync == NULL) {
    atomic_fetch_add (&sync_errors, 1);
    return -ENOENT;
  }
  if (drv.ctx_get_current (&cur) != 0 || cur == NULL) {
    if (drv.device_get (&dev, pf_device_segment_get_ordinal (seg)) != 0 ||
        drv.primary_retain (&ctx, dev) != 0) {
      atomic_fetch_add (&sync_errors, 1);
      return -EIO;
    }
    if (drv.ctx_push (ctx) == 0)
      pushed = 1;
  }
  for (i = 0; i < n; i++)
    if (drv.stream_sync ((void *) streams[i]) != 0)
      res = -EIO;
  if (pushed)
    drv.ctx_pop (&ctx);
  if (dev >= 0)
    drv.primary_release (dev);
  if (res < 0)
    atomic_fetch_add (&sync_errors, 1);
  return res;
}

int
pf_node_frame_read_on (pf_node_frame * frame, uintptr_t stream)
{
  return pf_node_frame_add_reader (frame, stream);
}

uint64_t
pf_node_device_sync_errors (void)
{
  return atomic_load (&sync_errors);
}

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
  pf_node_consumer_set_device_sync (*out, sync_readers);
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
