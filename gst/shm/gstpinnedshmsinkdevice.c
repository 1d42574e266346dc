/* GStreamer pinnedflow: pinnedshmsink's device frames
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Device-memory input published as device frames: set_caps decides
 * (memory:PinnedflowCUDA, or memory:CUDAMemory where libgstcuda loads, and
 * this process can make device segments), render publishes each buffer:
 * - a buffer of a pool the sink proposed is published with no copy (the
 *   device slots pinnedcudaupload writes into, gstpinnedshmsinkcudapool.c;
 *   libgstcuda's exported virtual memory on 1.24+, gstpinnedshmsinkcuda.c);
 * - any other is copied once device to device into a slot of the sink's
 *   device segment (gstpinnedshmsinkslots.c: pf_device_segment_new(), CUDA
 *   virtual memory exported as an fd, docs/protocol.md 3.11): a
 *   GstPinnedCudaMemory at its own pitch and rows (so the buffer's video
 *   meta describes the copy too) but only the visible bytes of each row
 *   (one cudaMemcpy2D of all rows, or one per plane where the planes'
 *   rows differ in width), a GstCudaMemory plane by plane; counted in
 *   device-copies.
 * Consumers that asked for device segments import each once and read the
 * frames with no copy (pinnedshmsrc device-frames). Where the device
 * cannot export virtual memory (or the plugin has no CUDA library) the
 * sink keeps its host path: the memory is mapped (downloaded) into the
 * host pool and sent as host frames, caps without the memory feature
 * (gst_pinned_shm_sink_wire_caps()).
 *
 * Threads and lifetimes: set_caps and render (the streaming thread) and
 * stop() (streaming stopped) call these. The copy's slots are refcounted:
 * the sink's reference (from the first copied frame to stop() or a frame
 * of another size) and one per token out; a token is a GstBuffer that the
 * producer unrefs when every consumer released its frame (on its I/O
 * thread, or in pf_producer_close()), which frees the slot. A render
 * waiting for a free slot wakes every 20 ms to see the sink unlocked.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedshmsink-private.h"

#include <errno.h>
#include <string.h>

#ifdef GST_PINNED_SHM_CUDA
#include <gst/pinnedcuda/gstpinnedcuda.h>
#include <gst/pinnedcuda/gstpinnedcudamemory.h>
#include <pinnedflow/pf-device-segment.h>
#endif

#define GST_CAT_DEFAULT gst_pinned_shm_sink_debug

#define FEATURE_PINNEDFLOW_CUDA "memory:PinnedflowCUDA"
#define FEATURE_CUDA_MEMORY "memory:CUDAMemory"

#ifdef GST_PINNED_SHM_CUDA

static GQuark
slot_quark (void)
{
  return g_quark_from_static_string ("pinnedshmsink-device-slot");
}

/* A free slot (its index), waiting while every slot is out; -1 when the
 * sink is unlocked (flushing) meanwhile. While it waits it asks for the
 * release doorbells (pf_producer_want_releases (), issue 35: consumers
 * ring only while the producer waits); from render, so self->producer is
 * set, and no lock of ours is held when frame_released runs here. */
static gint
slot_acquire (GstPinnedShmSink * self, GstPinnedShmSinkDevice * pool)
{
  pf_producer *producer = self->producer;
  gboolean wanted = FALSE;
  gint slot = -1;

  g_mutex_lock (&pool->lock);
  for (;;) {
    gboolean unlocked;

    slot = gst_pinned_shm_sink_slots_take_locked (pool);
    if (slot >= 0)
      break;
    g_mutex_unlock (&pool->lock);
    if (!wanted && producer != NULL) {
      /* takes what was released so far: gst_pinned_shm_sink_slot_token_free () may run now */
      pf_producer_want_releases (producer, 1);
      wanted = TRUE;
      g_mutex_lock (&pool->lock);
      continue;
    }
    g_mutex_lock (&self->lock);
    unlocked = self->unlocked;
    g_mutex_unlock (&self->lock);
    g_mutex_lock (&pool->lock);
    if (unlocked)
      break;
    g_cond_wait_until (&pool->cond, &pool->lock,
        g_get_monotonic_time () + 20 * G_TIME_SPAN_MILLISECOND);
  }
  g_mutex_unlock (&pool->lock);
  if (wanted)
    pf_producer_want_releases (producer, 0);
  return slot;
}

gboolean
gst_pinned_shm_sink_device_set_caps (GstPinnedShmSink * self, GstCaps * caps)
{
  GstCapsFeatures *f = gst_caps_get_features (caps, 0);
  pf_segment *probe = NULL;

  self->device_mode = FALSE;
  self->cuda_memory_input = FALSE;
  if (f == NULL || gst_caps_features_is_any (f))
    return FALSE;
  if (gst_caps_features_contains (f, FEATURE_CUDA_MEMORY)) {
    if (!gst_pinned_shm_sink_cuda_usable ()) {
      GST_INFO_OBJECT (self, "memory:CUDAMemory without libgstcuda: host "
          "frames");
      return FALSE;
    }
    self->cuda_memory_input = TRUE;
  } else if (!gst_caps_features_contains (f, FEATURE_PINNEDFLOW_CUDA)) {
    return FALSE;
  }
  if (!self->is_video) {
    GST_INFO_OBJECT (self, "device memory but not video: host frames");
    return FALSE;
  }
  /* can this process export device memory? (one granule, freed at once) */
  if (self->device == NULL && pf_device_segment_new (0, 1, &probe) < 0) {
    GST_ELEMENT_WARNING (self, RESOURCE, SETTINGS,
        ("Device frames are sent as host frames (one download each)"),
        ("no device segments here: %s", pf_device_segment_error ()));
    return FALSE;
  }
  if (probe != NULL)
    pf_segment_unref (probe);
  self->device_mode = TRUE;
  GST_INFO_OBJECT (self, "publishing device frames");
  return TRUE;
}

/* The slots for frames of @size bytes on @device: the sink's, made (or
 * made again for another size or device) here; NULL with an error posted. */
static GstPinnedShmSinkDevice *
slots_for (GstPinnedShmSink * self, gint device, gsize size)
{
  gchar *why = NULL;
  guint n;

  if (self->device != NULL && (self->device->frame_size != size
          || self->device->device != device))
    g_clear_pointer (&self->device, gst_pinned_shm_sink_slots_unref);
  if (self->device != NULL)
    return self->device;
  GST_OBJECT_LOCK (self);
  n = self->max_client_buffers + POOL_RESERVE;
  GST_OBJECT_UNLOCK (self);
  self->device = gst_pinned_shm_sink_slots_new (device, size, n, &why);
  if (self->device == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("Could not make the device segment for device frames"), ("%s", why));
    g_free (why);
  }
  return self->device;
}

/* Whether every plane of @l has rows as wide as its widest (a single 2D
 * copy of all rows then moves the visible bytes only) */
static gboolean
uniform_rows (const GstPinnedCudaLayout * l)
{
  guint p;

  for (p = 0; p < l->n_planes; p++)
    if (l->width_bytes[p] != l->max_width_bytes)
      return FALSE;
  return TRUE;
}

/* One copy of a memory:PinnedflowCUDA frame into the slot at @dst, after
 * upstream's writes (its event): FALSE with an error posted. */
static gboolean
copy_pinned_cuda (GstPinnedShmSink * self, GstPinnedCudaMemory * dmem,
    guint64 dst)
{
  const GstPinnedCudaRuntime *rt = dmem->rt;
  const GstPinnedCudaLayout *l = &dmem->layout;
  GstPinnedCudaError err;
  const gchar *call = "cudaEventSynchronize";
  guint p;
  int prev;

  prev = gst_pinned_cuda_context_push_enter (rt, dmem->device_id, dmem->cu_ctx);
  err = rt->EventSynchronize (dmem->event);
  /* the visible bytes of each row, never the pitch's padding: one 2D copy
   * of every row where the planes' rows are as wide (RGBA, NV12), else one
   * per plane (I420's half-width chroma); the slot keeps the frame's
   * layout (same pitch, same rows) */
  if (err == GST_PINNED_CUDA_SUCCESS && uniform_rows (l)) {
    call = "cudaMemcpy2D";
    err = rt->Memcpy2D ((void *) (uintptr_t) dst, dmem->pitch, dmem->dev_ptr,
        dmem->pitch, l->max_width_bytes, l->total_rows,
        GST_PINNED_CUDA_MEMCPY_DEVICE_TO_DEVICE);
  }
  for (p = 0; err == GST_PINNED_CUDA_SUCCESS && !uniform_rows (l)
      && p < l->n_planes; p++) {
    gsize off = l->row_offset[p] * dmem->pitch;

    call = "cudaMemcpy2D";
    err = rt->Memcpy2D ((void *) (uintptr_t) (dst + off), dmem->pitch,
        dmem->dev_ptr + off, dmem->pitch, l->width_bytes[p], l->rows[p],
        GST_PINNED_CUDA_MEMCPY_DEVICE_TO_DEVICE);
  }
  return gst_pinned_shm_sink_device_copy_finish (self, rt, dmem->device_id,
      prev, err, call);
}

GstBuffer *
gst_pinned_shm_sink_device_copy (GstPinnedShmSink * self, GstBuffer * buf,
    pf_producer_frame * frame, pf_segment ** segs, GstFlowReturn * ret)
{
  GstMemory *mem = gst_buffer_n_memory (buf) == 1 ?
      gst_buffer_peek_memory (buf, 0) : NULL;
  GstPinnedCudaMemory *dmem = (GstPinnedCudaMemory *) mem;
  GstPinnedShmSinkCudaFrame cf;
  GstPinnedShmSinkDevice *pool;
  gboolean copied;
  GstPinnedShmSinkSlotToken *t;
  GstBuffer *token;
  guint64 dst;
  gsize size;
  gint slot, device;

  *ret = GST_FLOW_ERROR;
  memset (&cf, 0, sizeof (cf));
  if (self->cuda_memory_input) {
    /* libgstcuda's virtual memory (our pool, 1.24+): no copy at all */
    token = gst_pinned_shm_sink_cuda_export (self, buf, frame, segs);
    if (token != NULL) {
      *ret = GST_FLOW_OK;
      return token;
    }
    if (!gst_pinned_shm_sink_cuda_frame_map (self, buf, &cf))
      return NULL;
    size = cf.size;
    device = cf.device;
  } else {
    /* our own slots (the pool proposed to pinnedcudaupload): no copy */
    token = gst_pinned_shm_sink_device_publish_slot (self, buf, frame, segs,
        ret);
    if (token != NULL || *ret != GST_FLOW_OK)
      return token;
    *ret = GST_FLOW_ERROR;
    if (mem == NULL || !gst_is_pinned_cuda_memory (mem)) {
      GST_ELEMENT_ERROR (self, STREAM, WRONG_TYPE,
          ("memory:PinnedflowCUDA caps, and a buffer that is not one "
              "pinnedflow CUDA memory"), ("%u memories",
              gst_buffer_n_memory (buf)));
      return NULL;
    }
    size = dmem->pitch * dmem->layout.total_rows;
    device = dmem->device_id;
  }
  pool = slots_for (self, device, size);
  if (pool == NULL)
    goto failed;
  slot = slot_acquire (self, pool);
  if (slot < 0) {
    *ret = GST_FLOW_FLUSHING;
    goto failed;
  }

  /* one copy on the device, done before the frame is published (the
   * protocol's rule) */
  dst = pool->base + (guint64) slot *pool->slot_size;
  if (self->cuda_memory_input)
    copied = gst_pinned_shm_sink_cuda_frame_copy (self, &cf, dst);
  else
    copied = copy_pinned_cuda (self, dmem, dst);
  gst_pinned_shm_sink_cuda_frame_unmap (&cf);

  t = g_new0 (GstPinnedShmSinkSlotToken, 1);
  t->pool = pool;
  t->slot = (guint) slot;
  g_atomic_int_inc (&pool->refcount);
  token = gst_buffer_new ();
  gst_mini_object_set_qdata (GST_MINI_OBJECT_CAST (token), slot_quark (), t,
      gst_pinned_shm_sink_slot_token_free);
  if (!copied) {
    gst_buffer_unref (token);
    return NULL;
  }

  frame->n_chunks = 1;
  frame->chunks[0].segment_id = pf_segment_get_id (pool->seg);
  frame->chunks[0].offset = (guint64) slot *pool->slot_size;
  frame->chunks[0].size = size;
  segs[0] = pool->seg;
  COUNTER_ADD (self->device_copies, 1);
  *ret = GST_FLOW_OK;
  return token;

failed:
  gst_pinned_shm_sink_cuda_frame_unmap (&cf);
  return NULL;
}

void
gst_pinned_shm_sink_device_stop (GstPinnedShmSink * self)
{
  /* tokens still out keep the segment until their frames come back */
  g_clear_pointer (&self->device, gst_pinned_shm_sink_slots_unref);
  self->device_mode = FALSE;
  self->cuda_memory_input = FALSE;
  gst_pinned_shm_sink_cuda_stop (self);
}

#else /* !GST_PINNED_SHM_CUDA */

gboolean
gst_pinned_shm_sink_device_set_caps (GstPinnedShmSink * self, GstCaps * caps)
{
  self->device_mode = FALSE;
  return FALSE;
}

GstBuffer *
gst_pinned_shm_sink_device_copy (GstPinnedShmSink * self, GstBuffer * buf,
    pf_producer_frame * frame, pf_segment ** segs, GstFlowReturn * ret)
{
  *ret = GST_FLOW_ERROR;
  return NULL;
}

void
gst_pinned_shm_sink_device_stop (GstPinnedShmSink * self)
{
  self->device_mode = FALSE;
}

#endif /* GST_PINNED_SHM_CUDA */
