/* GStreamer pinnedflow: pinnedshmsink's device frames
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * memory:PinnedflowCUDA input (pinnedcudaupload's frames) published as
 * device frames: each buffer's one GstPinnedCudaMemory is copied device to
 * device (cudaMemcpy2D, its whole pitched allocation, so the buffer's video
 * meta describes the copy too) into a slot of the sink's device segment
 * (pf_device_segment_new(): CUDA virtual memory exported as an fd,
 * docs/protocol.md 3.11), then published from there; consumers that asked
 * for device segments import it once and read the frame with no copy
 * (pinnedshmsrc device-frames). One copy per frame, counted in the stats
 * (device-copies). Where the device cannot export virtual memory (or the
 * plugin has no CUDA library) the sink keeps its host path: the memory is
 * mapped (downloaded) into the host pool and sent as host frames, caps
 * without the memory feature (gst_pinned_shm_sink_wire_caps()).
 *
 * Not done: proposing an exportable device pool upstream, so that
 * pinnedcudaupload writes into the segment with no copy at all.
 *
 * Threads and lifetimes: set_caps and render (the streaming thread) and
 * stop() (streaming stopped) call these. The slots (SlotPool) are a plain
 * refcounted struct: the sink's reference (from the first device frame to
 * stop() or a frame of another size) and one per token out; a token is a
 * GstBuffer that the producer unrefs when every consumer released its
 * frame (on its I/O thread, or in pf_producer_close()), which frees the
 * slot. SlotPool.lock guards busy and closed; a render waiting for a free
 * slot wakes every 20 ms to see the sink unlocked.
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
#define MAX_SLOTS 64
#define SLOT_ALIGN 4096

#ifdef GST_PINNED_SHM_CUDA

struct _GstPinnedShmSinkDevice
{
  gint refcount;
  GMutex lock;
  GCond cond;
  pf_segment *seg;
  guint64 base;                 /* device address of the segment */
  gsize frame_size, slot_size;
  guint n_slots;
  guint64 busy;                 /* bit per slot, under lock */
  gint device;
};

typedef struct
{
  GstPinnedShmSinkDevice *pool;
  guint slot;
} SlotToken;

static GQuark
slot_quark (void)
{
  return g_quark_from_static_string ("pinnedshmsink-device-slot");
}

static void
slot_pool_unref (GstPinnedShmSinkDevice * pool)
{
  if (!g_atomic_int_dec_and_test (&pool->refcount))
    return;
  pf_segment_unref (pool->seg);
  g_mutex_clear (&pool->lock);
  g_cond_clear (&pool->cond);
  g_free (pool);
}

static void
slot_token_free (gpointer data)
{
  SlotToken *t = data;

  g_mutex_lock (&t->pool->lock);
  t->pool->busy &= ~(G_GUINT64_CONSTANT (1) << t->slot);
  g_cond_signal (&t->pool->cond);
  g_mutex_unlock (&t->pool->lock);
  slot_pool_unref (t->pool);
  g_free (t);
}

/* Slots for frames of @frame_size bytes on @device, or NULL (*@why). */
static GstPinnedShmSinkDevice *
slot_pool_new (gint device, gsize frame_size, guint n_slots, gchar ** why)
{
  GstPinnedShmSinkDevice *pool;
  gsize slot_size = (frame_size + SLOT_ALIGN - 1) & ~(gsize) (SLOT_ALIGN - 1);
  pf_segment *seg = NULL;
  int res;

  n_slots = CLAMP (n_slots, 2, MAX_SLOTS);
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
    guint i;
    gboolean unlocked;

    for (i = 0; i < pool->n_slots; i++) {
      if (!(pool->busy & (G_GUINT64_CONSTANT (1) << i))) {
        pool->busy |= G_GUINT64_CONSTANT (1) << i;
        slot = (gint) i;
        break;
      }
    }
    if (slot >= 0)
      break;
    g_mutex_unlock (&pool->lock);
    if (!wanted && producer != NULL) {
      /* takes what was released so far: slot_token_free () may run now */
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

/* ---- the pool proposed to pinnedcudaupload: slots as buffers --------- */

/* A GstBufferPool whose every buffer is one GstPinnedCudaMemory wrapping a
 * slot of a device segment of its own, for life (the slot is free again
 * when the memory is freed: slot_token_free () is its notify); a buffer
 * the sink gets back from upstream is published from its slot with no
 * copy. The option says so to pinnedcudaupload (ext/cuda), which writes
 * into it instead of its own pool. */
#define POOL_OPTION_DEVICE_SLOTS "GstBufferPoolOptionPinnedflowCUDASlots"
#define SLOT_PITCH_ALIGN 512

typedef struct
{
  GstBufferPool parent;

  const GstPinnedCudaRuntime *rt;
  gint device;
  gpointer cu_ctx;              /* the memories' context, or NULL (primary) */
  GstObject *ctx_owner;         /* what keeps it alive (a ref), or NULL */

  /* set_config (): the layout, the slots wanted; start (): the slots */
  GstPinnedCudaLayout layout;
  gsize pitch;
  guint max;
  GstPinnedShmSinkDevice *slots;
} SlotBufferPool;

typedef GstBufferPoolClass SlotBufferPoolClass;

GType slot_buffer_pool_get_type (void);
G_DEFINE_TYPE (SlotBufferPool, slot_buffer_pool, GST_TYPE_BUFFER_POOL);

static const gchar **
slot_buffer_pool_get_options (GstBufferPool * pool)
{
  static const gchar *options[] = { GST_BUFFER_POOL_OPTION_VIDEO_META,
    POOL_OPTION_DEVICE_SLOTS, NULL
  };

  return options;
}

static gboolean
slot_buffer_pool_set_config (GstBufferPool * pool, GstStructure * config)
{
  SlotBufferPool *self = (SlotBufferPool *) pool;
  GstCaps *caps = NULL;
  guint size, min, max;
  GstVideoInfo info;
  gsize frame;

  if (!gst_buffer_pool_config_get_params (config, &caps, &size, &min, &max)
      || caps == NULL || !gst_video_info_from_caps (&info, caps))
    return FALSE;
  gst_pinned_cuda_layout_init (&self->layout, &info);
  self->pitch = (self->layout.max_width_bytes + SLOT_PITCH_ALIGN - 1) &
      ~(gsize) (SLOT_PITCH_ALIGN - 1);
  frame = self->pitch * self->layout.total_rows;
  if (max == 0 || max > MAX_SLOTS)
    max = MAX_SLOTS;
  min = MIN (min, max);
  self->max = max;
  gst_buffer_pool_config_set_params (config, caps, frame, min, max);
  return GST_BUFFER_POOL_CLASS (slot_buffer_pool_parent_class)->set_config
      (pool, config);
}

/* The device segment, made when the pool is activated (not for a pool
 * only proposed), kept when it fits what was configured again. */
static gboolean
slot_buffer_pool_start (GstBufferPool * pool)
{
  SlotBufferPool *self = (SlotBufferPool *) pool;
  gsize frame = self->pitch * self->layout.total_rows;
  gchar *why = NULL;

  if (self->slots != NULL && (self->slots->frame_size != frame
          || self->slots->n_slots < self->max))
    g_clear_pointer (&self->slots, slot_pool_unref);
  if (self->slots == NULL)
    self->slots = slot_pool_new (self->device, frame, self->max, &why);
  if (self->slots == NULL) {
    GST_ERROR_OBJECT (pool, "no device segment for the pool: %s", why);
    g_free (why);
    return FALSE;
  }
  return GST_BUFFER_POOL_CLASS (slot_buffer_pool_parent_class)->start (pool);
}

static GstFlowReturn
slot_buffer_pool_alloc (GstBufferPool * pool, GstBuffer ** buffer,
    GstBufferPoolAcquireParams * params)
{
  SlotBufferPool *self = (SlotBufferPool *) pool;
  GstPinnedShmSinkDevice *slots = self->slots;
  gsize offsets[GST_VIDEO_MAX_PLANES];
  gint strides[GST_VIDEO_MAX_PLANES];
  GError *error = NULL;
  GstPinnedCudaMemory *dmem;
  GstMemory *mem;
  SlotToken *t;
  gint slot = -1;
  guint i;
  int prev;

  if (slots == NULL)
    return GST_FLOW_NOT_NEGOTIATED;
  g_mutex_lock (&slots->lock);
  for (i = 0; i < slots->n_slots && slot < 0; i++) {
    if (!(slots->busy & (G_GUINT64_CONSTANT (1) << i))) {
      slots->busy |= G_GUINT64_CONSTANT (1) << i;
      slot = (gint) i;
    }
  }
  g_mutex_unlock (&slots->lock);
  if (slot < 0) {
    GST_WARNING_OBJECT (pool, "all %u slots taken", slots->n_slots);
    return GST_FLOW_ERROR;
  }
  t = g_new0 (SlotToken, 1);
  t->pool = slots;
  t->slot = (guint) slot;
  g_atomic_int_inc (&slots->refcount);
  /* its event made in the memories' context, as pinnedcudaupload's own */
  prev = gst_pinned_cuda_context_push_enter (self->rt, self->device,
      self->cu_ctx);
  mem = gst_pinned_cuda_memory_new_wrapped (self->rt, self->device,
      &self->layout, (gpointer) (uintptr_t) (slots->base +
          (guint64) slot * slots->slot_size), self->pitch, 0, slot_token_free,
      t, &error);
  gst_pinned_cuda_device_leave (self->rt, self->device, prev);
  if (mem == NULL) {
    GST_WARNING_OBJECT (pool, "could not wrap slot %d: %s", slot,
        error->message);
    g_error_free (error);
    slot_token_free (t);
    return GST_FLOW_ERROR;
  }
  dmem = (GstPinnedCudaMemory *) mem;
  dmem->cu_ctx = self->cu_ctx;
  dmem->ctx_owner = self->ctx_owner ? gst_object_ref (self->ctx_owner) : NULL;
  *buffer = gst_buffer_new ();
  gst_buffer_append_memory (*buffer, mem);
  for (i = 0; i < self->layout.n_planes; i++) {
    offsets[i] = self->pitch * self->layout.row_offset[i];
    strides[i] = (gint) self->pitch;
  }
  {
    GstStructure *config = gst_buffer_pool_get_config (pool);
    GstCaps *caps = NULL;
    GstVideoInfo info;

    gst_buffer_pool_config_get_params (config, &caps, NULL, NULL, NULL);
    gst_video_info_from_caps (&info, caps);
    gst_buffer_add_video_meta_full (*buffer, GST_VIDEO_FRAME_FLAG_NONE,
        GST_VIDEO_INFO_FORMAT (&info), GST_VIDEO_INFO_WIDTH (&info),
        GST_VIDEO_INFO_HEIGHT (&info), self->layout.n_planes, offsets, strides);
    gst_structure_free (config);
  }
  return GST_FLOW_OK;
}

static void
slot_buffer_pool_finalize (GObject * object)
{
  SlotBufferPool *self = (SlotBufferPool *) object;

  g_clear_pointer (&self->slots, slot_pool_unref);
  if (self->ctx_owner)
    gst_object_unref (self->ctx_owner);
  G_OBJECT_CLASS (slot_buffer_pool_parent_class)->finalize (object);
}

static void
slot_buffer_pool_class_init (SlotBufferPoolClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstBufferPoolClass *pool_class = GST_BUFFER_POOL_CLASS (klass);

  gobject_class->finalize = slot_buffer_pool_finalize;
  pool_class->get_options = slot_buffer_pool_get_options;
  pool_class->set_config = slot_buffer_pool_set_config;
  pool_class->start = slot_buffer_pool_start;
  pool_class->alloc_buffer = slot_buffer_pool_alloc;
}

static void
slot_buffer_pool_init (SlotBufferPool * self)
{
}

gboolean
gst_pinned_shm_sink_device_propose (GstPinnedShmSink * self, GstQuery * query,
    GstCaps * caps, const GstVideoInfo * info, guint count)
{
  GError *error = NULL;
  SlotBufferPool *pool;
  GstStructure *config;
  gpointer gst_ctx = NULL, cu_ctx = NULL;
  const GstPinnedCudaRuntime *rt;
  gint device = 0;
  guint size;

  if (!self->device_mode || self->cuda_memory_input)
    return FALSE;
  /* the pipeline's GstCudaContext where libgstcuda is, as pinnedcudaupload
   * takes it; else the device's primary context */
  if (gst_pinned_shm_sink_cuda_context (self, &gst_ctx, &cu_ctx, &device)) {
    GST_DEBUG_OBJECT (self, "device slots in the pipeline's GstCudaContext "
        "(device %d)", device);
  }
  rt = gst_pinned_cuda_runtime_find_device (device, &error);
  if (rt == NULL) {
    GST_INFO_OBJECT (self, "no device slot pool: %s", error->message);
    g_error_free (error);
    return FALSE;
  }
  pool = g_object_new (slot_buffer_pool_get_type (), NULL);
  gst_object_ref_sink (pool);
  pool->rt = rt;
  pool->device = device;
  pool->cu_ctx = cu_ctx;
  pool->ctx_owner = gst_ctx ? gst_object_ref (gst_ctx) : NULL;
  config = gst_buffer_pool_get_config (GST_BUFFER_POOL (pool));
  gst_buffer_pool_config_set_params (config, caps, GST_VIDEO_INFO_SIZE (info),
      0, count);
  gst_buffer_pool_config_add_option (config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  if (!gst_buffer_pool_set_config (GST_BUFFER_POOL (pool), config)) {
    GST_INFO_OBJECT (self, "no device slot pool for %" GST_PTR_FORMAT, caps);
    gst_object_unref (pool);
    return FALSE;
  }
  config = gst_buffer_pool_get_config (GST_BUFFER_POOL (pool));
  gst_buffer_pool_config_get_params (config, NULL, &size, NULL, NULL);
  gst_structure_free (config);
  GST_DEBUG_OBJECT (self, "proposing %u device slots of %u bytes", count, size);
  gst_query_add_allocation_pool (query, GST_BUFFER_POOL (pool), size, 0, count);
  gst_object_unref (pool);
  return TRUE;
}

/* A buffer of the pool above: published from its slot once upstream's
 * copy into it is complete (its event), with no copy; NULL: not one
 * (*@ret GST_FLOW_OK), or an error posted. */
static GstBuffer *
publish_slot (GstPinnedShmSink * self, GstBuffer * buf,
    pf_producer_frame * frame, pf_segment ** segs, GstFlowReturn * ret)
{
  GstMemory *mem = gst_buffer_n_memory (buf) == 1 ?
      gst_buffer_peek_memory (buf, 0) : NULL;
  GstPinnedCudaMemory *dmem = (GstPinnedCudaMemory *) mem;
  GstPinnedCudaError err;
  SlotToken *t;
  int prev;

  *ret = GST_FLOW_OK;
  if (mem == NULL || !gst_is_pinned_cuda_memory (mem)
      || dmem->notify != slot_token_free)
    return NULL;
  t = dmem->notify_data;
  prev = gst_pinned_cuda_context_push_enter (dmem->rt, dmem->device_id,
      dmem->cu_ctx);
  err = dmem->rt->EventSynchronize (dmem->event);
  if (err != GST_PINNED_CUDA_SUCCESS)
    gst_pinned_cuda_take_last_error (dmem->rt);
  gst_pinned_cuda_device_leave (dmem->rt, dmem->device_id, prev);
  if (err != GST_PINNED_CUDA_SUCCESS) {
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE,
        ("Could not wait for the frame's copy into the device segment"),
        ("cudaEventSynchronize: %s", dmem->rt->GetErrorString (err)));
    *ret = GST_FLOW_ERROR;
    return NULL;
  }
  frame->n_chunks = 1;
  frame->chunks[0].segment_id = pf_segment_get_id (t->pool->seg);
  frame->chunks[0].offset = (guint64) t->slot * t->pool->slot_size;
  frame->chunks[0].size = dmem->pitch * dmem->layout.total_rows;
  segs[0] = t->pool->seg;
  return gst_buffer_ref (buf);
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
    g_clear_pointer (&self->device, slot_pool_unref);
  if (self->device != NULL)
    return self->device;
  GST_OBJECT_LOCK (self);
  n = self->max_client_buffers + POOL_RESERVE;
  GST_OBJECT_UNLOCK (self);
  self->device = slot_pool_new (device, size, n, &why);
  if (self->device == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("Could not make the device segment for device frames"), ("%s", why));
    g_free (why);
  }
  return self->device;
}

/* One copy of a memory:PinnedflowCUDA frame into the slot at @dst, after
 * upstream's writes (its event): FALSE with an error posted. */
static gboolean
copy_pinned_cuda (GstPinnedShmSink * self, GstPinnedCudaMemory * dmem,
    guint64 dst)
{
  const GstPinnedCudaRuntime *rt = dmem->rt;
  GstPinnedCudaError err;
  const gchar *call = "cudaEventSynchronize";
  int prev;

  prev = gst_pinned_cuda_context_push_enter (rt, dmem->device_id, dmem->cu_ctx);
  err = rt->EventSynchronize (dmem->event);
  if (err == GST_PINNED_CUDA_SUCCESS) {
    call = "cudaMemcpy2D";
    err = rt->Memcpy2D ((void *) (uintptr_t) dst, dmem->pitch, dmem->dev_ptr,
        dmem->pitch, dmem->pitch, dmem->layout.total_rows,
        GST_PINNED_CUDA_MEMCPY_DEVICE_TO_DEVICE);
  }
  if (err == GST_PINNED_CUDA_SUCCESS) {
    /* a device-to-device cudaMemcpy2D may return before it is done */
    call = "cudaStreamSynchronize";
    err = rt->StreamSynchronize (NULL);
  }
  if (err != GST_PINNED_CUDA_SUCCESS)
    gst_pinned_cuda_take_last_error (rt);
  gst_pinned_cuda_device_leave (rt, dmem->device_id, prev);
  if (err != GST_PINNED_CUDA_SUCCESS) {
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE,
        ("Could not copy the frame into the device segment"), ("%s: %s",
            call, rt->GetErrorString (err)));
    return FALSE;
  }
  return TRUE;
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
  SlotToken *t;
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
    token = publish_slot (self, buf, frame, segs, ret);
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

  t = g_new0 (SlotToken, 1);
  t->pool = pool;
  t->slot = (guint) slot;
  g_atomic_int_inc (&pool->refcount);
  token = gst_buffer_new ();
  gst_mini_object_set_qdata (GST_MINI_OBJECT_CAST (token), slot_quark (), t,
      slot_token_free);
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
  g_clear_pointer (&self->device, slot_pool_unref);
  self->device_mode = FALSE;
  self->cuda_memory_input = FALSE;
  gst_pinned_shm_sink_cuda_stop (self);
}

#else /* !GST_PINNED_SHM_CUDA */

gboolean
gst_pinned_shm_sink_device_propose (GstPinnedShmSink * self, GstQuery * query,
    GstCaps * caps, const GstVideoInfo * info, guint count)
{
  return FALSE;
}

/* ---- the pool proposed to pinnedcudaupload: slots as buffers --------- */

/* A GstBufferPool whose every buffer is one GstPinnedCudaMemory wrapping a
 * slot of a device segment of its own, for life (the slot is free again
 * when the memory is freed: slot_token_free () is its notify); a buffer
 * the sink gets back from upstream is published from its slot with no
 * copy. The option says so to pinnedcudaupload (ext/cuda), which writes
 * into it instead of its own pool. */
#define POOL_OPTION_DEVICE_SLOTS "GstBufferPoolOptionPinnedflowCUDASlots"
#define SLOT_PITCH_ALIGN 512

typedef struct
{
  GstBufferPool parent;

  const GstPinnedCudaRuntime *rt;
  gint device;
  gpointer cu_ctx;              /* the memories' context, or NULL (primary) */
  GstObject *ctx_owner;         /* what keeps it alive (a ref), or NULL */

  /* set_config (): the layout, the slots wanted; start (): the slots */
  GstPinnedCudaLayout layout;
  gsize pitch;
  guint max;
  GstPinnedShmSinkDevice *slots;
} SlotBufferPool;

typedef GstBufferPoolClass SlotBufferPoolClass;

GType slot_buffer_pool_get_type (void);
G_DEFINE_TYPE (SlotBufferPool, slot_buffer_pool, GST_TYPE_BUFFER_POOL);

static const gchar **
slot_buffer_pool_get_options (GstBufferPool * pool)
{
  static const gchar *options[] = { GST_BUFFER_POOL_OPTION_VIDEO_META,
    POOL_OPTION_DEVICE_SLOTS, NULL
  };

  return options;
}

static gboolean
slot_buffer_pool_set_config (GstBufferPool * pool, GstStructure * config)
{
  SlotBufferPool *self = (SlotBufferPool *) pool;
  GstCaps *caps = NULL;
  guint size, min, max;
  GstVideoInfo info;
  gsize frame;

  if (!gst_buffer_pool_config_get_params (config, &caps, &size, &min, &max)
      || caps == NULL || !gst_video_info_from_caps (&info, caps))
    return FALSE;
  gst_pinned_cuda_layout_init (&self->layout, &info);
  self->pitch = (self->layout.max_width_bytes + SLOT_PITCH_ALIGN - 1) &
      ~(gsize) (SLOT_PITCH_ALIGN - 1);
  frame = self->pitch * self->layout.total_rows;
  if (max == 0 || max > MAX_SLOTS)
    max = MAX_SLOTS;
  min = MIN (min, max);
  self->max = max;
  gst_buffer_pool_config_set_params (config, caps, frame, min, max);
  return GST_BUFFER_POOL_CLASS (slot_buffer_pool_parent_class)->set_config
      (pool, config);
}

/* The device segment, made when the pool is activated (not for a pool
 * only proposed), kept when it fits what was configured again. */
static gboolean
slot_buffer_pool_start (GstBufferPool * pool)
{
  SlotBufferPool *self = (SlotBufferPool *) pool;
  gsize frame = self->pitch * self->layout.total_rows;
  gchar *why = NULL;

  if (self->slots != NULL && (self->slots->frame_size != frame
          || self->slots->n_slots < self->max))
    g_clear_pointer (&self->slots, slot_pool_unref);
  if (self->slots == NULL)
    self->slots = slot_pool_new (self->device, frame, self->max, &why);
  if (self->slots == NULL) {
    GST_ERROR_OBJECT (pool, "no device segment for the pool: %s", why);
    g_free (why);
    return FALSE;
  }
  return GST_BUFFER_POOL_CLASS (slot_buffer_pool_parent_class)->start (pool);
}

static GstFlowReturn
slot_buffer_pool_alloc (GstBufferPool * pool, GstBuffer ** buffer,
    GstBufferPoolAcquireParams * params)
{
  SlotBufferPool *self = (SlotBufferPool *) pool;
  GstPinnedShmSinkDevice *slots = self->slots;
  gsize offsets[GST_VIDEO_MAX_PLANES];
  gint strides[GST_VIDEO_MAX_PLANES];
  GError *error = NULL;
  GstPinnedCudaMemory *dmem;
  GstMemory *mem;
  SlotToken *t;
  gint slot = -1;
  guint i;
  int prev;

  if (slots == NULL)
    return GST_FLOW_NOT_NEGOTIATED;
  g_mutex_lock (&slots->lock);
  for (i = 0; i < slots->n_slots && slot < 0; i++) {
    if (!(slots->busy & (G_GUINT64_CONSTANT (1) << i))) {
      slots->busy |= G_GUINT64_CONSTANT (1) << i;
      slot = (gint) i;
    }
  }
  g_mutex_unlock (&slots->lock);
  if (slot < 0) {
    GST_WARNING_OBJECT (pool, "all %u slots taken", slots->n_slots);
    return GST_FLOW_ERROR;
  }
  t = g_new0 (SlotToken, 1);
  t->pool = slots;
  t->slot = (guint) slot;
  g_atomic_int_inc (&slots->refcount);
  /* its event made in the memories' context, as pinnedcudaupload's own */
  prev = gst_pinned_cuda_context_push_enter (self->rt, self->device,
      self->cu_ctx);
  mem = gst_pinned_cuda_memory_new_wrapped (self->rt, self->device,
      &self->layout, (gpointer) (uintptr_t) (slots->base +
          (guint64) slot * slots->slot_size), self->pitch, 0, slot_token_free,
      t, &error);
  gst_pinned_cuda_device_leave (self->rt, self->device, prev);
  if (mem == NULL) {
    GST_WARNING_OBJECT (pool, "could not wrap slot %d: %s", slot,
        error->message);
    g_error_free (error);
    slot_token_free (t);
    return GST_FLOW_ERROR;
  }
  dmem = (GstPinnedCudaMemory *) mem;
  dmem->cu_ctx = self->cu_ctx;
  dmem->ctx_owner = self->ctx_owner ? gst_object_ref (self->ctx_owner) : NULL;
  *buffer = gst_buffer_new ();
  gst_buffer_append_memory (*buffer, mem);
  for (i = 0; i < self->layout.n_planes; i++) {
    offsets[i] = self->pitch * self->layout.row_offset[i];
    strides[i] = (gint) self->pitch;
  }
  {
    GstStructure *config = gst_buffer_pool_get_config (pool);
    GstCaps *caps = NULL;
    GstVideoInfo info;

    gst_buffer_pool_config_get_params (config, &caps, NULL, NULL, NULL);
    gst_video_info_from_caps (&info, caps);
    gst_buffer_add_video_meta_full (*buffer, GST_VIDEO_FRAME_FLAG_NONE,
        GST_VIDEO_INFO_FORMAT (&info), GST_VIDEO_INFO_WIDTH (&info),
        GST_VIDEO_INFO_HEIGHT (&info), self->layout.n_planes, offsets, strides);
    gst_structure_free (config);
  }
  return GST_FLOW_OK;
}

static void
slot_buffer_pool_finalize (GObject * object)
{
  SlotBufferPool *self = (SlotBufferPool *) object;

  g_clear_pointer (&self->slots, slot_pool_unref);
  if (self->ctx_owner)
    gst_object_unref (self->ctx_owner);
  G_OBJECT_CLASS (slot_buffer_pool_parent_class)->finalize (object);
}

static void
slot_buffer_pool_class_init (SlotBufferPoolClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstBufferPoolClass *pool_class = GST_BUFFER_POOL_CLASS (klass);

  gobject_class->finalize = slot_buffer_pool_finalize;
  pool_class->get_options = slot_buffer_pool_get_options;
  pool_class->set_config = slot_buffer_pool_set_config;
  pool_class->start = slot_buffer_pool_start;
  pool_class->alloc_buffer = slot_buffer_pool_alloc;
}

static void
slot_buffer_pool_init (SlotBufferPool * self)
{
}

gboolean
gst_pinned_shm_sink_device_propose (GstPinnedShmSink * self, GstQuery * query,
    GstCaps * caps, const GstVideoInfo * info, guint count)
{
  GError *error = NULL;
  SlotBufferPool *pool;
  GstStructure *config;
  gpointer gst_ctx = NULL, cu_ctx = NULL;
  const GstPinnedCudaRuntime *rt;
  gint device = 0;
  guint size;

  if (!self->device_mode || self->cuda_memory_input)
    return FALSE;
  /* the pipeline's GstCudaContext where libgstcuda is, as pinnedcudaupload
   * takes it; else the device's primary context */
  if (gst_pinned_shm_sink_cuda_context (self, &gst_ctx, &cu_ctx, &device)) {
    GST_DEBUG_OBJECT (self, "device slots in the pipeline's GstCudaContext "
        "(device %d)", device);
  }
  rt = gst_pinned_cuda_runtime_find_device (device, &error);
  if (rt == NULL) {
    GST_INFO_OBJECT (self, "no device slot pool: %s", error->message);
    g_error_free (error);
    return FALSE;
  }
  pool = g_object_new (slot_buffer_pool_get_type (), NULL);
  gst_object_ref_sink (pool);
  pool->rt = rt;
  pool->device = device;
  pool->cu_ctx = cu_ctx;
  pool->ctx_owner = gst_ctx ? gst_object_ref (gst_ctx) : NULL;
  config = gst_buffer_pool_get_config (GST_BUFFER_POOL (pool));
  gst_buffer_pool_config_set_params (config, caps, GST_VIDEO_INFO_SIZE (info),
      0, count);
  gst_buffer_pool_config_add_option (config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  if (!gst_buffer_pool_set_config (GST_BUFFER_POOL (pool), config)) {
    GST_INFO_OBJECT (self, "no device slot pool for %" GST_PTR_FORMAT, caps);
    gst_object_unref (pool);
    return FALSE;
  }
  config = gst_buffer_pool_get_config (GST_BUFFER_POOL (pool));
  gst_buffer_pool_config_get_params (config, NULL, &size, NULL, NULL);
  gst_structure_free (config);
  GST_DEBUG_OBJECT (self, "proposing %u device slots of %u bytes", count, size);
  gst_query_add_allocation_pool (query, GST_BUFFER_POOL (pool), size, 0, count);
  gst_object_unref (pool);
  return TRUE;
}

/* A buffer of the pool above: published from its slot once upstream's
 * copy into it is complete (its event), with no copy; NULL: not one
 * (*@ret GST_FLOW_OK), or an error posted. */
static GstBuffer *
publish_slot (GstPinnedShmSink * self, GstBuffer * buf,
    pf_producer_frame * frame, pf_segment ** segs, GstFlowReturn * ret)
{
  GstMemory *mem = gst_buffer_n_memory (buf) == 1 ?
      gst_buffer_peek_memory (buf, 0) : NULL;
  GstPinnedCudaMemory *dmem = (GstPinnedCudaMemory *) mem;
  GstPinnedCudaError err;
  SlotToken *t;
  int prev;

  *ret = GST_FLOW_OK;
  if (mem == NULL || !gst_is_pinned_cuda_memory (mem)
      || dmem->notify != slot_token_free)
    return NULL;
  t = dmem->notify_data;
  prev = gst_pinned_cuda_context_push_enter (dmem->rt, dmem->device_id,
      dmem->cu_ctx);
  err = dmem->rt->EventSynchronize (dmem->event);
  if (err != GST_PINNED_CUDA_SUCCESS)
    gst_pinned_cuda_take_last_error (dmem->rt);
  gst_pinned_cuda_device_leave (dmem->rt, dmem->device_id, prev);
  if (err != GST_PINNED_CUDA_SUCCESS) {
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE,
        ("Could not wait for the frame's copy into the device segment"),
        ("cudaEventSynchronize: %s", dmem->rt->GetErrorString (err)));
    *ret = GST_FLOW_ERROR;
    return NULL;
  }
  frame->n_chunks = 1;
  frame->chunks[0].segment_id = pf_segment_get_id (t->pool->seg);
  frame->chunks[0].offset = (guint64) t->slot * t->pool->slot_size;
  frame->chunks[0].size = dmem->pitch * dmem->layout.total_rows;
  segs[0] = t->pool->seg;
  return gst_buffer_ref (buf);
}

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
