/* GStreamer pinnedflow: pinnedshmsink's device slots
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A device segment (pf_device_segment_new(): CUDA virtual memory exported
 * as an fd, docs/protocol.md 3.11) cut into equal slots, each a frame's
 * place: what the device frames of pinnedshmsink are published from, by
 * the copy (gstpinnedshmsinkdevice.c) and by the pool proposed to
 * pinnedcudaupload (gstpinnedshmsinkcudapool.c); and the end of a copy
 * into a slot that both copies share (gst_pinned_shm_sink_device_copy_finish
 * (): the device copy of memory:PinnedflowCUDA, gstpinnedshmsinkdevice.c,
 * and of memory:CUDAMemory, gstpinnedshmsinkcuda.c).
 *
 * Threads and lifetimes: a plain refcounted struct; its lock guards busy
 * (a bit per slot) and signals cond when a slot is freed. A token holds a
 * slot and a reference until gst_pinned_shm_sink_slot_token_free() (any
 * thread: the producer's I/O thread, a memory's last unref).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedshmsink-private.h"

#define GST_CAT_DEFAULT gst_pinned_shm_sink_debug

#ifdef GST_PINNED_SHM_CUDA

#include <pinnedflow/pf-device-segment.h>

#define SLOT_ALIGN 4096

void
gst_pinned_shm_sink_slots_unref (GstPinnedShmSinkDevice * pool)
{
  if (!g_atomic_int_dec_and_test (&pool->refcount))
    return;
  pf_segment_unref (pool->seg);
  g_mutex_clear (&pool->lock);
  g_cond_clear (&pool->cond);
  g_free (pool);
}

void
gst_pinned_shm_sink_slot_token_free (gpointer data)
{
  GstPinnedShmSinkSlotToken *t = data;

  g_mutex_lock (&t->pool->lock);
  t->pool->busy &= ~(G_GUINT64_CONSTANT (1) << t->slot);
  g_cond_signal (&t->pool->cond);
  g_mutex_unlock (&t->pool->lock);
  gst_pinned_shm_sink_slots_unref (t->pool);
  g_free (t);
}

gint
gst_pinned_shm_sink_slots_take_locked (GstPinnedShmSinkDevice * pool)
{
  guint i;

  for (i = 0; i < pool->n_slots; i++) {
    if (!(pool->busy & (G_GUINT64_CONSTANT (1) << i))) {
      pool->busy |= G_GUINT64_CONSTANT (1) << i;
      return (gint) i;
    }
  }
  return -1;
}

GstPinnedShmSinkDevice *
gst_pinned_shm_sink_slots_new (gint device, gsize frame_size, guint n_slots,
    gchar ** why)
{
  GstPinnedShmSinkDevice *pool;
  gsize slot_size = (frame_size + SLOT_ALIGN - 1) & ~(gsize) (SLOT_ALIGN - 1);
  pf_segment *seg = NULL;
  int res;

  n_slots = CLAMP (n_slots, 2, GST_PINNED_SHM_SINK_MAX_SLOTS);
  res = pf_device_segment_new (device, (guint64) slot_size * n_slots, &seg);
  if (res < 0) {
    *why = g_strdup_printf ("pf_device_segment_new (device %d, %"
        G_GSIZE_FORMAT " bytes): %s", device, slot_size * n_slots,
        pf_device_segment_error ());
    return NULL;
  }
  pool = g_new0 (GstPinnedShmSinkDevice, 1);
  pool->refcount = 1;
  g_mutex_init (&pool->lock);
  g_cond_init (&pool->cond);
  pool->seg = seg;
  pool->base = pf_device_segment_get_ptr (seg);
  pool->frame_size = frame_size;
  pool->slot_size = slot_size;
  pool->n_slots = n_slots;
  pool->device = device;
  return pool;
}

gboolean
gst_pinned_shm_sink_device_copy_finish (GstPinnedShmSink * self,
    const GstPinnedCudaRuntime * rt, gint device, int prev,
    GstPinnedCudaError err, const gchar * call)
{
  if (err == GST_PINNED_CUDA_SUCCESS) {
    /* a device-to-device cudaMemcpy2D may return before it is done */
    call = "cudaStreamSynchronize";
    err = rt->StreamSynchronize (NULL);
  }
  if (err != GST_PINNED_CUDA_SUCCESS)
    gst_pinned_cuda_take_last_error (rt);
  gst_pinned_cuda_device_leave (rt, device, prev);
  if (err != GST_PINNED_CUDA_SUCCESS) {
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE,
        ("Could not copy the frame into the device segment"), ("%s: %s",
            call, rt->GetErrorString (err)));
    return FALSE;
  }
  return TRUE;
}

#endif /* GST_PINNED_SHM_CUDA */
