/* GStreamer pinnedflow CUDA: device frames into GStreamer's CUDA memory
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The one home of the 1.22 way of giving device memory to a
 * memory:CUDAMemory consumer (libgstcuda 1.22 has no
 * gst_cuda_allocator_alloc_wrapped): a GstCudaBufferPool configured for a
 * frame, and one device-to-device copy of a pitched frame into one of its
 * buffers, complete before returning (1.22's readers do not wait on a
 * stream). Used by the tensor import (gstpinnedcudatensorimport.c) and by
 * pinnedshmsrc's device frames (gst/shm/gstpinnedshmsrccuda.c). Built into
 * the static helper library gstpinnedcudagst (gstpinnedcudagst-private.h).
 *
 * Threads: any; the pool is the caller's.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedcudagst-private.h"

GstBufferPool *
gst_pinned_cuda_gst_pool_new (const GstPinnedCudaGst * t, gpointer ctx,
    const GstVideoInfo * info, guint min, guint max)
{
  GstBufferPool *pool;
  GstStructure *config;
  GstCaps *caps;

  if ((pool = t->buffer_pool_new (ctx)) == NULL)
    return NULL;
  caps = gst_video_info_to_caps (info);
  gst_caps_set_features_simple (caps,
      gst_caps_features_new (GST_PINNED_CUDA_GST_CAPS_FEATURE, NULL));
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, caps, GST_VIDEO_INFO_SIZE (info),
      min, max);
  gst_caps_unref (caps);
  if (!gst_buffer_pool_set_config (pool, config)
      || !gst_buffer_pool_set_active (pool, TRUE)) {
    gst_object_unref (pool);
    return NULL;
  }
  return pool;
}

gboolean
gst_pinned_cuda_gst_copy_planes (const GstPinnedCudaRuntime * rt,
    gint device, GstBuffer * out, const GstPinnedCudaGstPlanes * src,
    GstPinnedCudaStream stream, const gchar ** what, GstPinnedCudaError * err)
{
  GstVideoMeta *meta = gst_buffer_get_video_meta (out);
  GstMemory *mem;
  GstMapInfo map;
  guint p;
  int prev;

  *err = GST_PINNED_CUDA_SUCCESS;
  if (meta == NULL || gst_buffer_n_memory (out) != 1) {
    *what = "GstCudaBufferPool buffer without video meta";
    return FALSE;
  }
  if (meta->n_planes != src->n_planes) {
    *what = "GstCudaBufferPool buffer with another number of planes";
    return FALSE;
  }
  mem = gst_buffer_peek_memory (out, 0);
  if (!gst_memory_map (mem, &map, GST_MAP_WRITE | GST_PINNED_CUDA_GST_MAP_CUDA)) {
    *what = "GST_MAP_CUDA map failed";
    return FALSE;
  }
  *what = "cudaMemcpy2DAsync";
  prev = gst_pinned_cuda_context_push_enter (rt, device, NULL);
  for (p = 0; p < src->n_planes && *err == GST_PINNED_CUDA_SUCCESS; p++) {
    gsize rows = (p + 1 < src->n_planes ? src->row_offset[p + 1] :
        src->total_rows) - src->row_offset[p];

    *err = rt->Memcpy2DAsync (map.data + meta->offset[p], meta->stride[p],
        src->data + src->pitch * src->row_offset[p], src->pitch,
        src->row_bytes[p], rows, GST_PINNED_CUDA_MEMCPY_DEFAULT, stream);
  }
  /* 1.22 has no stream to hand downstream: the copy completes here */
  if (*err == GST_PINNED_CUDA_SUCCESS) {
    *what = "cudaStreamSynchronize";
    *err = rt->StreamSynchronize (stream);
  }
  gst_pinned_cuda_device_leave (rt, device, prev);
  gst_memory_unmap (mem, &map);
  return *err == GST_PINNED_CUDA_SUCCESS;
}
