/* GStreamer pinnedflow CUDA: device memory someone else owns, wrapped
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * gst_pinned_cuda_memory_new_wrapped(): a GstPinnedCudaMemory over device
 * memory this library did not allocate (pinnedshmsrc's device frames: a
 * chunk of a producer's device segment, mapped in this process by
 * pf_device_segment_import()). The allocator (gstpinnedcudamemory.c)
 * frees it by calling the owner's notify instead of cudaFree.
 *
 * Threads and lifetimes: any thread makes one; the memory holds the
 * caller's notify until its last unref (any thread), which calls it once.
 * The event is the memory's own, made in the device's primary context (or
 * the one current) and destroyed with it.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedcudamemory-private.h"

GstMemory *
gst_pinned_cuda_memory_new_wrapped (const GstPinnedCudaRuntime * rt,
    gint device_id, const GstPinnedCudaLayout * layout, gpointer dev_ptr,
    gsize pitch, GstMemoryFlags flags, GDestroyNotify notify,
    gpointer notify_data, GError ** error)
{
  GstPinnedCudaMemory *mem;
  GstPinnedCudaEvent event = NULL;
  GstPinnedCudaError err;
  gsize size;
  int prev;

  g_return_val_if_fail (rt != NULL && layout != NULL && notify != NULL, NULL);
  if (dev_ptr == NULL || layout->n_planes == 0 || layout->total_rows == 0
      || pitch < layout->max_width_bytes
      || pitch > G_MAXSIZE / layout->total_rows) {
    g_set_error (error, GST_PINNED_CUDA_RUNTIME_ERROR,
        GST_PINNED_CUDA_RUNTIME_ERROR_CALL, "cannot wrap device memory %p: "
        "pitch %" G_GSIZE_FORMAT " for %u planes, %" G_GSIZE_FORMAT " rows "
        "of up to %" G_GSIZE_FORMAT " bytes", dev_ptr, pitch,
        layout->n_planes, layout->total_rows, layout->max_width_bytes);
    return NULL;
  }
  size = pitch * layout->total_rows;

  /* never recorded: a wait on it returns at once (the bytes are there) */
  prev = gst_pinned_cuda_device_enter (rt, device_id);
  err = rt->EventCreateWithFlags (&event, GST_PINNED_CUDA_EVENT_BLOCKING_SYNC |
      GST_PINNED_CUDA_EVENT_DISABLE_TIMING);
  gst_pinned_cuda_device_leave (rt, device_id, prev);
  if (err != GST_PINNED_CUDA_SUCCESS) {
    gst_pinned_cuda_set_error (error, rt, "cudaEventCreateWithFlags", err);
    gst_pinned_cuda_take_last_error (rt);
    return NULL;
  }

  mem = gst_pinned_cuda_memory_new (rt, device_id, layout, flags, size,
      dev_ptr, pitch, event);
  mem->notify = notify;
  mem->notify_data = notify_data;
  return GST_MEMORY_CAST (mem);
}
