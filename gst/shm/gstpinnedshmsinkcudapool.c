/* GStreamer pinnedflow: pinnedshmsink's pool of device slots
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The pool pinnedshmsink proposes for memory:PinnedflowCUDA input sent as
 * device frames (any GStreamer version): its buffers are the slots of a
 * device segment (gstpinnedshmsinkslots.c), pinnedcudaupload copies its
 * input straight into them (ext/cuda decide_allocation takes a downstream
 * pool with the option below), and render publishes such a buffer from its
 * slot once its event says the copy is complete: no copy in the sink.
 *
 * Threads and lifetimes: propose runs in upstream's streaming thread
 * (the ALLOCATION query), the pool's vfuncs where upstream calls them,
 * publish_slot in render. The pool holds the slots from its start () to
 * its finalize; each memory holds its slot (a token, freed by the
 * memory's notify) and a reference on the GstCudaContext it was made in,
 * so buffers outliving the pool (published frames) stay valid.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedshmsink-private.h"

#ifdef GST_PINNED_SHM_CUDA

#include <gst/pinnedcuda/gstpinnedcuda.h>
#include <gst/pinnedcuda/gstpinnedcudamemory.h>

#define GST_CAT_DEFAULT gst_pinned_shm_sink_debug

/* A GstBufferPool whose every buffer is one GstPinnedCudaMemory wrapping a
 * slot of a device segment of its own, for life (the slot is free again
 * when the memory is freed: gst_pinned_shm_sink_slot_token_free () is its notify); a buffer
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
  if (max == 0 || max > GST_PINNED_SHM_SINK_MAX_SLOTS)
    max = GST_PINNED_SHM_SINK_MAX_SLOTS;
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
    g_clear_pointer (&self->slots, gst_pinned_shm_sink_slots_unref);
  if (self->slots == NULL)
    self->slots =
        gst_pinned_shm_sink_slots_new (self->device, frame, self->max, &why);
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
  GstPinnedShmSinkSlotToken *t;
  gint slot = -1;
  guint i;
  int prev;

  if (slots == NULL)
    return GST_FLOW_NOT_NEGOTIATED;
  g_mutex_lock (&slots->lock);
  slot = gst_pinned_shm_sink_slots_take_locked (slots);
  g_mutex_unlock (&slots->lock);
  if (slot < 0) {
    GST_WARNING_OBJECT (pool, "all %u slots taken", slots->n_slots);
    return GST_FLOW_ERROR;
  }
  t = g_new0 (GstPinnedShmSinkSlotToken, 1);
  t->pool = slots;
  t->slot = (guint) slot;
  g_atomic_int_inc (&slots->refcount);
  /* its event made in the memories' context, as pinnedcudaupload's own */
  prev = gst_pinned_cuda_context_push_enter (self->rt, self->device,
      self->cu_ctx);
  mem = gst_pinned_cuda_memory_new_wrapped (self->rt, self->device,
      &self->layout, (gpointer) (uintptr_t) (slots->base +
          (guint64) slot * slots->slot_size), self->pitch, 0,
      gst_pinned_shm_sink_slot_token_free, t, &error);
  gst_pinned_cuda_device_leave (self->rt, self->device, prev);
  if (mem == NULL) {
    GST_WARNING_OBJECT (pool, "could not wrap slot %d: %s", slot,
        error->message);
    g_error_free (error);
    gst_pinned_shm_sink_slot_token_free (t);
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

  g_clear_pointer (&self->slots, gst_pinned_shm_sink_slots_unref);
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
  GstCapsFeatures *f = gst_caps_get_features (caps, 0);

  /* the caps being asked about, as set_caps decided for them */
  if (!self->device_mode || self->cuda_memory_input || f == NULL
      || gst_caps_features_is_any (f)
      || !gst_caps_features_contains (f, "memory:PinnedflowCUDA"))
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
    if (gst_ctx != NULL)
      gst_object_unref (gst_ctx);
    return FALSE;
  }
  pool = g_object_new (slot_buffer_pool_get_type (), NULL);
  gst_object_ref_sink (pool);
  pool->rt = rt;
  pool->device = device;
  pool->cu_ctx = cu_ctx;
  pool->ctx_owner = gst_ctx;    /* the reference cuda_context () gave */
  gst_ctx = NULL;
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

GstBuffer *
gst_pinned_shm_sink_device_publish_slot (GstPinnedShmSink * self,
    GstBuffer * buf, pf_producer_frame * frame, pf_segment ** segs,
    GstFlowReturn * ret)
{
  GstMemory *mem = gst_buffer_n_memory (buf) == 1 ?
      gst_buffer_peek_memory (buf, 0) : NULL;
  GstPinnedCudaMemory *dmem = (GstPinnedCudaMemory *) mem;
  GstPinnedCudaError err;
  GstPinnedShmSinkSlotToken *t;
  int prev;

  *ret = GST_FLOW_OK;
  if (mem == NULL || !gst_is_pinned_cuda_memory (mem)
      || dmem->notify != gst_pinned_shm_sink_slot_token_free)
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

#else /* !GST_PINNED_SHM_CUDA */

gboolean
gst_pinned_shm_sink_device_propose (GstPinnedShmSink * self, GstQuery * query,
    GstCaps * caps, const GstVideoInfo * info, guint count)
{
  return FALSE;
}

#endif /* GST_PINNED_SHM_CUDA */
