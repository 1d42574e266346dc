/* GStreamer pinnedflow CUDA: system memory to CUDA device memory
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
/**
 * SECTION:element-pinnedcudaupload
 * @title: pinnedcudaupload
 *
 * Copies raw video frames from system memory into CUDA device memory,
 * asynchronously on a non-blocking stream: GStreamer's GstCudaMemory (caps
 * feature `memory:CUDAMemory`, what nvcodec's encoders, cudaconvert,
 * cudadownload take) where libgstcuda and a CUDA driver are present and
 * downstream accepts it, else pinnedflow CUDA memory
 * (`memory:PinnedflowCUDA`, for pinnedcudadownload and applications using
 * gstpinnedcuda.h). The CUDA context is the pipeline's (gst.cuda.context,
 * shared with nvcodec's elements). Frames in a pinnedflow segment (the #GstPinnedBufferPool this
 * element proposes upstream, or read-only segments received by
 * pinnedshmsrc) are copied by DMA straight from the segment, which is
 * registered with cudaHostRegister once per segment per process. Other
 * (pageable) memory is first copied by the CPU into a registered bounce
 * segment, then copied the same way (counted as staged).
 *
 * memory:PinnedflowCUDA buffers are pushed as soon as their copies are
 * queued; readers wait on their event (see gstpinnedcuda.h; mapping for the
 * CPU waits). memory:CUDAMemory buffers: with GStreamer 1.24 or later they
 * are pushed at once too, carrying a GstCudaStream that waits on the copy's
 * event on the GPU and the memory's NEED_SYNC flag (downstream synchronizes
 * that stream or orders its work after it); with 1.22 (no GstCudaStream) a
 * buffer is pushed once its copy completed, while the copies of the next
 * frames are already queued (no host wait on the copy just queued). The
 * input buffer is released only once the copies from it completed.
 *
 * The CUDA runtime is loaded when the element starts (libcudart.so.13,
 * .12, ..., or GST_PINNEDFLOW_CUDART); without one, or without a device,
 * starting fails with an element error saying what is missing.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=100 ! video/x-raw,format=NV12,width=1920,height=1080 ! pinnedcudaupload ! pinnedcudadownload ! videoconvert ! autovideosink
 * ]|
 * |[
 * gst-launch-1.0 pinnedshmsrc socket-path=/tmp/pf.sock ! pinnedcudaupload max-inflight=4 ! fakesink
 * ]|
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=300 ! video/x-raw,format=NV12,width=1920,height=1080 ! pinnedcudaupload ! nvh264enc ! h264parse ! mp4mux ! filesink location=out.mp4
 * ]| (needs a GPU and nvcodec)
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedcudaupload.h"
#include "gstpinnedcudagst.h"
#include <gst/pinnedcuda/gstpinnedcudamemory.h>

#include <string.h>
#include <gst/video/video.h>
#include <gst/pinnedflow/pinnedflow.h>
#include <pinnedflow/pf-pool.h>

GST_DEBUG_CATEGORY_STATIC (gst_pinned_cuda_upload_debug);
#define GST_CAT_DEFAULT gst_pinned_cuda_upload_debug

#define DEFAULT_MAX_INFLIGHT 3
#define MAX_REGS 4

enum
{
  PROP_0,
  PROP_MAX_INFLIGHT,
  PROP_STATS,
  N_PROPERTIES
};

static GParamSpec *properties[N_PROPERTIES];

/* One frame whose copies are queued. */
typedef struct
{
  GstBuffer *input;             /* held until the event completed, or NULL */
  GstVideoFrame frame;          /* mapped while input is held */
  GstPinnedCudaEvent event;     /* from free_events, or NULL */
  guint64 seq;                  /* order of queuing, from 1 */
  gint slot;                    /* bounce slot, or -1 */
  guint8 *staged;               /* the bounce slot's bytes, or NULL */
} InFlight;

struct _GstPinnedCudaUpload
{
  GstPinnedCudaBaseTransform parent;

  guint max_inflight;           /* property (object lock) */

  /* bounce slots for pageable input: one per event (a pf_pool loan per
   * staged frame, returned when its copy completed) */
  pf_pool *bounce;
  const GstPinnedCudaRegistration *bounce_reg;

  /* in-flight queue, served by the release thread (lock/cond) */
  GMutex lock;
  GCond cond;
  GQueue inflight;
  GQueue free_events;
  guint n_events;
  GThread *release_thread;
  gboolean stopping;
  gchar *async_error;           /* a failed wait in the release thread */
  guint64 queued_seq;           /* frames queued (streaming thread) */
  guint64 completed_seq;        /* frames whose copies completed (lock) */

  /* memory:CUDAMemory (streaming thread): the GstCudaStream the memory
   * carries (1.24+, else NULL); on 1.22 the output buffers whose copies may
   * still run, pushed in order once completed (defer_push) */
  gpointer gst_stream;
  gboolean defer_push;
  GQueue pending_out;           /* of PendingOut */

  /* stats (object lock) */
  /* (frames, bytes, pinned-copies, registrations: the base class's) */
  guint64 staged_copies, waits_full, inflight_max;
};

#define gst_pinned_cuda_upload_parent_class parent_class
G_DEFINE_TYPE (GstPinnedCudaUpload, gst_pinned_cuda_upload,
    GST_TYPE_PINNED_CUDA_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE (pinnedcudaupload, "pinnedcudaupload",
    GST_RANK_NONE, GST_TYPE_PINNED_CUDA_UPLOAD);

/* An output buffer held until its copy completed (1.22 path). */
typedef struct
{
  GstBuffer *buf;
  guint64 seq;
} PendingOut;

/* ------------------------------------------------------------ release */

/* lock held: gives back what @e holds that needs no unlock. */
static void
inflight_finish_locked (GstPinnedCudaUpload * self, InFlight * e)
{
  if (e->slot >= 0)
    pf_pool_return (self->bounce, (guint32) e->slot);
  if (e->event)
    g_queue_push_tail (&self->free_events, e->event);
}

static void
inflight_free_input (InFlight * e)
{
  if (e->input) {
    gst_video_frame_unmap (&e->frame);
    gst_buffer_unref (e->input);
  }
  g_free (e);
}

/* Waits for the oldest event, then releases its input: the producer's slot
 * goes back only after the DMA from it has completed. */
static gpointer
release_thread_func (gpointer data)
{
  GstPinnedCudaUpload *self = data;
  InFlight *e;
  const GstPinnedCudaRuntime *rt = self->parent.cuda.rt;
  GstPinnedCudaError err;
  int prev;

  /* the shared context, for the thread's life */
  prev = gst_pinned_cuda_context_enter (&self->parent.cuda);
  g_mutex_lock (&self->lock);
  for (;;) {
    while (g_queue_is_empty (&self->inflight) && !self->stopping)
      g_cond_wait (&self->cond, &self->lock);
    if (g_queue_is_empty (&self->inflight))
      break;
    e = g_queue_peek_head (&self->inflight);
    g_mutex_unlock (&self->lock);

    err = rt->EventSynchronize (e->event);

    g_mutex_lock (&self->lock);
    if (err != GST_PINNED_CUDA_SUCCESS) {
      gchar *desc = gst_pinned_cuda_error_describe (rt, err);
      /* taken from this thread's last-error slot; a sticky one said so */
      gboolean sticky = gst_pinned_cuda_take_last_error (rt);
      if (self->async_error == NULL)
        self->async_error = g_strdup_printf ("cudaEventSynchronize: %s%s",
            desc, sticky ? " (sticky: the device's CUDA context is unusable "
            "until the process exits)" : "");
      g_free (desc);
      /* Nothing may read the source any more when it is released. */
      rt->StreamSynchronize (self->parent.cuda.stream);
    }
    g_queue_pop_head (&self->inflight);
    self->completed_seq = e->seq;
    inflight_finish_locked (self, e);
    g_cond_broadcast (&self->cond);
    g_mutex_unlock (&self->lock);
    inflight_free_input (e);
    g_mutex_lock (&self->lock);
  }
  g_mutex_unlock (&self->lock);
  gst_pinned_cuda_context_leave (&self->parent.cuda, prev);
  return NULL;
}

/* Posts the error of a failed wait in the release thread (it sticks until
 * the element stops). */
static gboolean
check_async_error (GstPinnedCudaUpload * self)
{
  gchar *msg;

  g_mutex_lock (&self->lock);
  msg = g_strdup (self->async_error);
  g_mutex_unlock (&self->lock);
  if (msg == NULL)
    return TRUE;
  GST_ELEMENT_ERROR (self, RESOURCE, FAILED, ("CUDA error in %s", msg),
      ("runtime %s, device %d", self->parent.cuda.rt->library,
          self->parent.cuda.device_id));
  g_free (msg);
  return FALSE;
}

/* Waits until at most @max frames are in flight. */
static void
wait_inflight (GstPinnedCudaUpload * self, guint max, gboolean count)
{
  gboolean waited;

  g_mutex_lock (&self->lock);
  waited = g_queue_get_length (&self->inflight) > max;
  while (g_queue_get_length (&self->inflight) > max)
    g_cond_wait (&self->cond, &self->lock);
  g_mutex_unlock (&self->lock);
  if (count && waited) {
    GST_OBJECT_LOCK (self);
    self->waits_full++;
    GST_OBJECT_UNLOCK (self);
  }
}

/* ------------------------------------------------------------ pending */

/* 1.22 path: the oldest held output whose copy completed, or NULL. */
static GstBuffer *
pending_pop_ready (GstPinnedCudaUpload * self)
{
  PendingOut *po = g_queue_peek_head (&self->pending_out);
  GstBuffer *buf;
  guint64 done;

  if (po == NULL)
    return NULL;
  g_mutex_lock (&self->lock);
  done = self->completed_seq;
  g_mutex_unlock (&self->lock);
  if (po->seq > done)
    return NULL;
  g_queue_pop_head (&self->pending_out);
  buf = po->buf;
  g_free (po);
  return buf;
}

static void
pending_drop (GstPinnedCudaUpload * self)
{
  PendingOut *po;

  while ((po = g_queue_pop_head (&self->pending_out)) != NULL) {
    gst_buffer_unref (po->buf);
    g_free (po);
  }
}

/* Every copy waited for, then every held output pushed in order (before a
 * serialized event or new caps overtake them). */
static GstFlowReturn
pending_push_all (GstPinnedCudaUpload * self)
{
  GstFlowReturn ret = GST_FLOW_OK;
  GstBuffer *buf;

  if (g_queue_is_empty (&self->pending_out))
    return GST_FLOW_OK;
  wait_inflight (self, 0, FALSE);
  while ((buf = pending_pop_ready (self)) != NULL) {
    if (ret == GST_FLOW_OK)
      ret = gst_pad_push (GST_BASE_TRANSFORM_SRC_PAD (self), buf);
    else
      gst_buffer_unref (buf);
  }
  pending_drop (self);          /* none left unless a wait failed */
  return ret;
}

/* ------------------------------------------------------------ start/stop */

/* The bounce pool: its segment unregistered, then unmapped (nothing in
 * flight). */
static void
drop_bounce (GstPinnedCudaUpload * self)
{
  /* The segment's last reference: the registration goes before the
   * unmap. */
  g_clear_pointer (&self->bounce, pf_pool_unref);
  self->bounce_reg = NULL;
}

static void
free_cuda_state (GstPinnedCudaUpload * self)
{
  GstPinnedCudaEvent ev;

  if (self->release_thread) {
    g_mutex_lock (&self->lock);
    self->stopping = TRUE;
    g_cond_broadcast (&self->cond);
    g_mutex_unlock (&self->lock);
    g_thread_join (self->release_thread);
    self->release_thread = NULL;
  }
  g_assert (g_queue_is_empty (&self->inflight));
  pending_drop (self);
  if (self->gst_stream) {
    self->parent.cuda.gst->stream_unref (self->gst_stream);
    self->gst_stream = NULL;
  }
  while ((ev = g_queue_pop_head (&self->free_events)) != NULL)
    gst_pinned_cuda_context_free_event (&self->parent.cuda, ev);
  self->n_events = 0;
  drop_bounce (self);
  g_clear_pointer (&self->async_error, g_free);
}

static gboolean
gst_pinned_cuda_upload_start_cuda (GstPinnedCudaBaseTransform * base)
{
  GstPinnedCudaUpload *self = GST_PINNED_CUDA_UPLOAD (base);
  guint i, n_events;

  GST_OBJECT_LOCK (self);
  self->staged_copies = self->waits_full = self->inflight_max = 0;
  n_events = self->max_inflight;
  GST_OBJECT_UNLOCK (self);
  self->queued_seq = self->completed_seq = 0;
  self->defer_push = FALSE;

  /* 1.24+: the stream GstCudaMemory carries; it waits on our events */
  if (base->cuda.gst_ctx && base->cuda.gst->has_stream) {
    self->gst_stream = base->cuda.gst->stream_new (base->cuda.gst_ctx);
    if (self->gst_stream == NULL)
      GST_WARNING_OBJECT (self, "gst_cuda_stream_new failed: CUDA memory "
          "frames are pushed once their copy completed");
  }

  for (i = 0; i < n_events; i++) {
    GstPinnedCudaEvent ev = gst_pinned_cuda_context_new_event (&base->cuda);
    if (ev == NULL)
      return FALSE;
    g_queue_push_tail (&self->free_events, ev);
    self->n_events++;
  }
  self->stopping = FALSE;
  self->release_thread = g_thread_new ("pinnedcudaupload-release",
      release_thread_func, self);
  return TRUE;
}

/* Every copy completed and every input released, then the events and the
 * bounce segment go; the base class closes the stream after this. */
static void
gst_pinned_cuda_upload_stop_cuda (GstPinnedCudaBaseTransform * base)
{
  GstPinnedCudaUpload *self = GST_PINNED_CUDA_UPLOAD (base);

  wait_inflight (self, 0, FALSE);
  free_cuda_state (self);
}

/* ------------------------------------------------------------ caps */

/* New frame size: drop the bounce segment (nothing is in flight). */
static gboolean
gst_pinned_cuda_upload_caps_changed (GstPinnedCudaBaseTransform * base)
{
  GstPinnedCudaUpload *self = GST_PINNED_CUDA_UPLOAD (base);

  wait_inflight (self, 0, FALSE);
  if (pending_push_all (self) != GST_FLOW_OK)
    GST_DEBUG_OBJECT (self, "downstream refused frames held before new caps");
  drop_bounce (self);
  /* memory:CUDAMemory without a GstCudaStream (1.22): pushed when done */
  self->defer_push = self->parent.cuda_memory && self->gst_stream == NULL;
  GST_DEBUG_OBJECT (self, "output %s%s", self->parent.cuda_memory ?
      "memory:CUDAMemory" : "memory:PinnedflowCUDA", !self->parent.cuda_memory
      ? "" : self->defer_push ? ", pushed once the copy completed (1.22)" :
      ", with a GstCudaStream and NEED_SYNC (1.24+)");
  return TRUE;
}

/* ------------------------------------------------------------ allocation */

/* Upstream: a pinned segment pool, so that producers in this process
 * write their frames straight into registered memory. */
static gboolean
gst_pinned_cuda_upload_propose_allocation (GstBaseTransform * trans,
    GstQuery * decide_query, GstQuery * query)
{
  GstPinnedCudaUpload *self = GST_PINNED_CUDA_UPLOAD (trans);
  GstCaps *caps;
  GstVideoInfo info;
  GstBufferPool *pool;
  guint min;

  gst_query_add_allocation_meta (query, GST_VIDEO_META_API_TYPE, NULL);
  gst_query_parse_allocation (query, &caps, NULL);
  if (caps == NULL || !gst_video_info_from_caps (&info, caps))
    return TRUE;
  if (gst_query_get_n_allocation_pools (query) > 0)
    return TRUE;

  GST_OBJECT_LOCK (self);
  min = self->max_inflight + 2;
  GST_OBJECT_UNLOCK (self);
  pool = gst_pinned_cuda_host_pool_new (caps, info.size, min, min + 2, TRUE);
  if (pool == NULL) {
    GST_WARNING_OBJECT (self, "pinned pool refused its config");
    return TRUE;
  }
  gst_pinned_cuda_base_transform_put_pool (query, pool, info.size, min,
      min + 2);
  return TRUE;
}

/* Downstream: our bounded pool of device frames. */
static gboolean
gst_pinned_cuda_upload_decide_allocation (GstBaseTransform * trans,
    GstQuery * query)
{
  GstPinnedCudaUpload *self = GST_PINNED_CUDA_UPLOAD (trans);
  GstCaps *caps;
  GstBufferPool *pool;
  GstStructure *config;
  guint down_min = 0, size = 0, min, max;

  gst_query_parse_allocation (query, &caps, NULL);
  if (caps == NULL)
    return FALSE;
  if (gst_query_get_n_allocation_pools (query) > 0)
    gst_query_parse_nth_allocation_pool (query, 0, NULL, NULL, &down_min, NULL);
  min = self->n_events + 1;
  max = min + down_min + 2;

  if (self->parent.cuda_memory) {
    /* GstCudaMemory of the shared context, with a GstVideoMeta */
    pool = self->parent.cuda.gst->buffer_pool_new (self->parent.cuda.gst_ctx);
  } else {
    pool = gst_pinned_cuda_buffer_pool_new (self->parent.cuda.rt,
        self->parent.cuda.device_id);
  }
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, caps,
      GST_VIDEO_INFO_SIZE (&self->parent.out_info), min, max);
  gst_buffer_pool_config_add_option (config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  if (self->parent.cuda_memory && self->gst_stream)
    self->parent.cuda.gst->buffer_pool_config_set_cuda_stream (config,
        self->gst_stream);
  /* Configured and filled here, so a CUDA failure gets its own message. */
  if (!gst_buffer_pool_set_config (pool, config) ||
      !gst_buffer_pool_set_active (pool, TRUE)) {
    gchar *why = GST_IS_PINNED_CUDA_BUFFER_POOL (pool) ?
        gst_pinned_cuda_buffer_pool_get_last_error (pool) : NULL;
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
        ("Could not set up the CUDA device frame pool: CUDA error: %s",
            why ? why : "invalid configuration"), (NULL));
    g_free (why);
    gst_object_unref (pool);
    return FALSE;
  }
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_get_params (config, NULL, &size, NULL, NULL);
  gst_structure_free (config);
  gst_pinned_cuda_base_transform_put_pool (query, pool, size, min, max);
  return TRUE;
}

/* ------------------------------------------------------------ copying */

/* Bytes of one frame packed (planes one after another, rows unpadded) up
 * to plane @plane: where that plane lies in a bounce slot. */
static gsize
packed_offset (GstPinnedCudaUpload * self, guint plane)
{
  gsize off = 0;
  guint p;

  for (p = 0; p < plane; p++)
    off +=
        self->parent.host_layout.width_bytes[p] *
        self->parent.host_layout.rows[p];
  return off;
}

/* The bounce pool for pageable input: n_events slots of one packed frame
 * in one mlock'ed segment, created and registered once. */
static gboolean
ensure_bounce (GstPinnedCudaUpload * self)
{
  gboolean created = FALSE;
  pf_segment *seg = NULL;
  guint64 stride = 0;
  int res;

  if (self->bounce)
    return TRUE;
  res =
      pf_pool_slot_stride (packed_offset (self,
          self->parent.host_layout.n_planes), &stride);
  if (res == 0)
    res = pf_segment_new ("pinnedcudaupload-bounce", stride * self->n_events,
        PF_SEGMENT_FLAG_LOCK, &seg);
  if (res == 0) {
    res = pf_pool_new (seg, stride, self->n_events, &self->bounce);
    pf_segment_unref (seg);     /* the pool holds it */
  }
  if (res < 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("Could not create the pinned bounce segment: %s", g_strerror (-res)),
        ("%u slots of %" G_GUINT64_FORMAT " bytes", self->n_events, stride));
    return FALSE;
  }
  self->bounce_reg = gst_pinned_cuda_segment_register (self->parent.cuda.rt,
      self->parent.cuda.device_id, pf_pool_get_segment (self->bounce),
      &created);
  gst_pinned_cuda_base_transform_count_registration (&self->parent,
      self->bounce_reg, created);
  if (!self->bounce_reg->registered) {
    gchar *desc = gst_pinned_cuda_error_describe (self->parent.cuda.rt,
        self->bounce_reg->error);
    int supported = -1;

    self->parent.cuda.rt->DeviceGetAttribute (&supported,
        GST_PINNED_CUDA_DEV_ATTR_HOST_REGISTER_SUPPORTED,
        self->parent.cuda.device_id);
    /* The fallback (a device that cannot register host memory, e.g.
     * cudaDevAttrHostRegisterSupported 0): the bounce slots are used
     * unregistered, so each copy from them is a pageable
     * cudaMemcpy2DAsync, which the runtime stages through its own pinned
     * buffer before returning (synchronous with the host, slower). */
    GST_ELEMENT_WARNING (self, RESOURCE, FAILED,
        ("Could not register the bounce segment with CUDA: copies from "
            "system memory are pageable"),
        ("cudaHostRegister failed: %s (cudaDevAttrHostRegisterSupported %d)",
            desc, supported));
    g_free (desc);
  }
  return TRUE;
}

/* Registrations of the segments behind @buf's memories (at most MAX_REGS). */
static guint
collect_registrations (GstPinnedCudaUpload * self, GstBuffer * buf,
    const GstPinnedCudaRegistration ** regs)
{
  guint i, n = 0, n_mem = gst_buffer_n_memory (buf);

  for (i = 0; i < n_mem && n < MAX_REGS; i++) {
    gboolean created;
    const GstPinnedCudaRegistration *reg =
        gst_pinned_cuda_base_transform_register_memory (&self->parent,
        gst_buffer_peek_memory (buf, i), &created);

    if (reg == NULL)
      continue;
    if (created) {
      if (!reg->registered) {
        gchar *desc = reg->error != GST_PINNED_CUDA_SUCCESS ?
            gst_pinned_cuda_error_describe (self->parent.cuda.rt,
            reg->error) : NULL;
        GST_ELEMENT_WARNING (self, RESOURCE, FAILED,
            ("Input segment not registered with CUDA, staging its copies"),
            ("%s%s%s", reg->reason, desc ? ": " : "", desc ? desc : ""));
        g_free (desc);
      }
    }
    regs[n++] = reg;
  }
  return n;
}

static gboolean
plane_is_registered (GstPinnedCudaUpload * self,
    const GstPinnedCudaRegistration ** regs, guint n_regs, const guint8 * ptr,
    gsize span)
{
  guint i;

  for (i = 0; i < n_regs; i++)
    if (gst_pinned_cuda_registration_covers (regs[i], self->parent.cuda.rt, ptr,
            span))
      return TRUE;
  return FALSE;
}

/* Where the copies of one frame go: the planes of the output buffer on
 * the device. */
typedef struct
{
  guint8 *ptr[GST_VIDEO_MAX_PLANES];
  gsize pitch[GST_VIDEO_MAX_PLANES];
  GstPinnedCudaEvent event;     /* PinnedflowCUDA memory's event, or NULL */
  GstMemory *mapped;            /* a GstCudaMemory mapped GST_MAP_CUDA */
  GstMapInfo map;
} OutputFrame;

/* The planes of @outbuf's device memory, or FALSE (error posted).
 * GstCudaMemory: the device pointer of a GST_MAP_WRITE | GST_MAP_CUDA map
 * (which, on 1.24+ with a stream, sets the memory's NEED_SYNC flag), the
 * planes from the pool's GstVideoMeta. */
static gboolean
output_frame_map (GstPinnedCudaUpload * self, GstBuffer * outbuf,
    OutputFrame * f)
{
  GstMemory *omem = gst_buffer_peek_memory (outbuf, 0);
  const GstPinnedCudaGst *gst = self->parent.cuda.gst;
  guint p, n = self->parent.host_layout.n_planes;

  memset (f, 0, sizeof (*f));
  if (self->parent.cuda_memory) {
    GstVideoMeta *meta = gst_buffer_get_video_meta (outbuf);

    if (!gst->is_cuda_memory (omem) || meta == NULL || meta->n_planes != n) {
      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
          ("Output buffer is not GstCudaMemory with a matching video meta"),
          (NULL));
      return FALSE;
    }
    if (!gst_memory_map (omem, &f->map, GST_MAP_WRITE |
            GST_PINNED_CUDA_GST_MAP_CUDA)) {
      GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
          ("Could not map the output CUDA memory for the device"), (NULL));
      return FALSE;
    }
    f->mapped = omem;
    for (p = 0; p < n; p++) {
      f->ptr[p] = f->map.data + meta->offset[p];
      f->pitch[p] = meta->stride[p];
    }
    return TRUE;
  }
  if (!gst_is_pinned_cuda_memory (omem)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Output buffer is not pinnedflow CUDA memory"), (NULL));
    return FALSE;
  } else {
    GstPinnedCudaMemory *dmem = (GstPinnedCudaMemory *) omem;

    for (p = 0; p < n; p++) {
      f->ptr[p] = dmem->dev_ptr +
          dmem->pitch * self->parent.host_layout.row_offset[p];
      f->pitch[p] = dmem->pitch;
    }
    f->event = dmem->event;
  }
  return TRUE;
}

static void
output_frame_unmap (OutputFrame * f)
{
  if (f->mapped) {
    gst_memory_unmap (f->mapped, &f->map);
    f->mapped = NULL;
  }
}

/* An in-flight entry holding @inbuf mapped, or NULL (error posted) when it
 * cannot be mapped or a plane's stride is below its width. */
static InFlight *
inflight_new (GstPinnedCudaUpload * self, GstBuffer * inbuf)
{
  InFlight *e = g_new0 (InFlight, 1);
  guint p;

  e->slot = -1;
  if (!gst_video_frame_map (&e->frame, &self->parent.in_info, inbuf,
          GST_MAP_READ)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Could not map the input frame"),
        (NULL));
    g_free (e);
    return NULL;
  }
  e->input = gst_buffer_ref (inbuf);
  for (p = 0; p < self->parent.host_layout.n_planes; p++) {
    gsize stride = GST_VIDEO_FRAME_PLANE_STRIDE (&e->frame, p);

    if (stride < self->parent.host_layout.width_bytes[p]) {
      GST_ELEMENT_ERROR (self, STREAM, FORMAT,
          ("Input plane %u stride %" G_GSIZE_FORMAT " below its width %"
              G_GSIZE_FORMAT, p, stride,
              self->parent.host_layout.width_bytes[p]), (NULL));
      inflight_free_input (e);
      return NULL;
    }
  }
  return e;
}

/* TRUE when every plane of @e's input lies in memory registered with
 * CUDA (then the DMA reads the input itself). */
static gboolean
input_is_registered (GstPinnedCudaUpload * self, InFlight * e)
{
  const GstPinnedCudaRegistration *regs[MAX_REGS];
  guint n_regs, p;

  n_regs = collect_registrations (self, e->input, regs);
  for (p = 0; p < self->parent.host_layout.n_planes; p++) {
    gsize stride = GST_VIDEO_FRAME_PLANE_STRIDE (&e->frame, p);
    gsize span = stride * (self->parent.host_layout.rows[p] - 1) +
        self->parent.host_layout.width_bytes[p];

    if (!plane_is_registered (self, regs, n_regs,
            GST_VIDEO_FRAME_PLANE_DATA (&e->frame, p), span))
      return FALSE;
  }
  return TRUE;
}

/* One CPU copy of @e's planes, packed, into a bounce slot loaned for it
 * (returned by inflight_finish_locked()). FALSE: error posted. */
static gboolean
stage_input (GstPinnedCudaUpload * self, InFlight * e)
{
  pf_pool_slot slot;
  guint p, r;
  int res;

  if (!ensure_bounce (self))
    return FALSE;
  /* As many slots as events, and an event per frame in flight: a slot is
   * always free here. */
  res = pf_pool_loan (self->bounce, 0, &slot);
  if (res < 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
        ("No free bounce slot"), ("pf_pool_loan: %s", g_strerror (-res)));
    return FALSE;
  }
  e->slot = (gint) slot.index;
  e->staged = slot.data;
  for (p = 0; p < self->parent.host_layout.n_planes; p++) {
    const guint8 *src = GST_VIDEO_FRAME_PLANE_DATA (&e->frame, p);
    gsize stride = GST_VIDEO_FRAME_PLANE_STRIDE (&e->frame, p);
    gsize width = self->parent.host_layout.width_bytes[p];
    guint8 *dst = e->staged + packed_offset (self, p);

    for (r = 0; r < self->parent.host_layout.rows[p]; r++)
      memcpy (dst + r * width, src + r * stride, width);
  }
  return TRUE;
}

/* Queues the copy of every plane of @e into @dst, then records the
 * frame's and the entry's events; on the 1.24+ path the GstCudaStream the
 * memory carries waits on the entry's event (on the GPU). Sets *@call to
 * the failing call and *@queued when any copy was queued. */
static GstPinnedCudaError
queue_copies (GstPinnedCudaUpload * self, InFlight * e,
    const OutputFrame * dst, const gchar ** call, gboolean * queued)
{
  const GstPinnedCudaRuntime *rt = self->parent.cuda.rt;
  GstPinnedCudaError err = GST_PINNED_CUDA_SUCCESS;
  guint p;

  *call = "cudaMemcpy2DAsync";
  for (p = 0; p < self->parent.host_layout.n_planes; p++) {
    const guint8 *src;
    gsize spitch;

    if (e->staged) {
      src = e->staged + packed_offset (self, p);
      spitch = self->parent.host_layout.width_bytes[p];
    } else {
      src = GST_VIDEO_FRAME_PLANE_DATA (&e->frame, p);
      spitch = GST_VIDEO_FRAME_PLANE_STRIDE (&e->frame, p);
    }
    err =
        rt->Memcpy2DAsync (dst->ptr[p], dst->pitch[p], src, spitch,
        self->parent.host_layout.width_bytes[p],
        self->parent.host_layout.rows[p], GST_PINNED_CUDA_MEMCPY_HOST_TO_DEVICE,
        self->parent.cuda.stream);
    if (err != GST_PINNED_CUDA_SUCCESS)
      return err;
    *queued = TRUE;
  }
  *call = "cudaEventRecord";
  if (dst->event)
    err = rt->EventRecord (dst->event, self->parent.cuda.stream);
  if (err == GST_PINNED_CUDA_SUCCESS)
    err = rt->EventRecord (e->event, self->parent.cuda.stream);
  if (err == GST_PINNED_CUDA_SUCCESS && dst->mapped && self->gst_stream) {
    *call = "cudaStreamWaitEvent";
    err = rt->StreamWaitEvent ((GstPinnedCudaStream)
        self->parent.cuda.gst->stream_get_handle (self->gst_stream),
        e->event, 0);
    if (err == GST_PINNED_CUDA_SUCCESS)
      GST_MINI_OBJECT_FLAG_SET (dst->mapped,
          GST_PINNED_CUDA_GST_MEMORY_NEED_SYNC);
  }
  return err;
}

/* Hands @e to the release thread and counts the frame. */
static void
inflight_push (GstPinnedCudaUpload * self, InFlight * e)
{
  gboolean pinned = e->staged == NULL;
  guint len;

  if (!pinned) {
    /* The staging copy is done: the input can go back at once. */
    gst_video_frame_unmap (&e->frame);
    gst_clear_buffer (&e->input);
  }
  e->seq = ++self->queued_seq;
  g_mutex_lock (&self->lock);
  g_queue_push_tail (&self->inflight, e);
  len = g_queue_get_length (&self->inflight);
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);

  gst_pinned_cuda_base_transform_count_frame (&self->parent,
      packed_offset (self, self->parent.host_layout.n_planes), pinned);
  GST_OBJECT_LOCK (self);
  if (!pinned)
    self->staged_copies++;
  self->inflight_max = MAX (self->inflight_max, len);
  GST_OBJECT_UNLOCK (self);
}

static GstFlowReturn
upload_frame (GstPinnedCudaUpload * self, GstBuffer * inbuf, GstBuffer * outbuf)
{
  OutputFrame dst;
  InFlight *e;
  const gchar *call = NULL;
  gboolean queued = FALSE;
  GstPinnedCudaError err;

  if (!check_async_error (self))
    return GST_FLOW_ERROR;

  /* Bound the frames in flight: wait on the oldest when full. */
  wait_inflight (self, self->n_events - 1, TRUE);

  e = inflight_new (self, inbuf);
  if (e == NULL)
    return GST_FLOW_ERROR;
  if (!output_frame_map (self, outbuf, &dst))
    goto failed;
  /* Pageable input: one CPU copy into a registered bounce slot, then the
   * same DMA. */
  if (!input_is_registered (self, e) && !stage_input (self, e))
    goto failed;

  g_mutex_lock (&self->lock);
  e->event = g_queue_pop_head (&self->free_events);
  g_mutex_unlock (&self->lock);
  g_assert (e->event != NULL);

  err = queue_copies (self, e, &dst, &call, &queued);
  output_frame_unmap (&dst);
  if (err != GST_PINNED_CUDA_SUCCESS) {
    GST_PINNED_CUDA_CONTEXT_ERROR (&self->parent.cuda, call, err);
    /* Nothing may still read the input or the slot when they go back. */
    if (queued)
      self->parent.cuda.rt->StreamSynchronize (self->parent.cuda.stream);
    goto failed;
  }
  inflight_push (self, e);
  return GST_FLOW_OK;

failed:
  g_mutex_lock (&self->lock);
  inflight_finish_locked (self, e);
  g_mutex_unlock (&self->lock);
  inflight_free_input (e);
  return GST_FLOW_ERROR;
}

/* On the streaming thread, which is not the one that opened the device. */
static GstFlowReturn
gst_pinned_cuda_upload_transform (GstBaseTransform * trans, GstBuffer * inbuf,
    GstBuffer * outbuf)
{
  GstPinnedCudaUpload *self = GST_PINNED_CUDA_UPLOAD (trans);
  GstFlowReturn ret;
  int prev;

  prev = gst_pinned_cuda_context_enter (&self->parent.cuda);
  ret = upload_frame (self, inbuf, outbuf);
  gst_pinned_cuda_context_leave (&self->parent.cuda, prev);
  /* 1.22 path: generate_output() holds it until its copy completed */
  if (ret == GST_FLOW_OK && self->defer_push)
    ret = GST_BASE_TRANSFORM_FLOW_DROPPED;
  return ret;
}

/* The 1.22 path (memory:CUDAMemory, no GstCudaStream): the frame just
 * queued is held, and the oldest held frames whose copies completed go out
 * (GstBaseTransform calls this again while it returns a buffer). The host
 * never waits here for the copy just queued; wait_inflight() waits only
 * when max-inflight frames are in flight, as on the other paths. */
static GstFlowReturn
gst_pinned_cuda_upload_generate_output (GstBaseTransform * trans,
    GstBuffer ** outbuf)
{
  GstPinnedCudaUpload *self = GST_PINNED_CUDA_UPLOAD (trans);
  GstFlowReturn ret;

  ret = GST_BASE_TRANSFORM_CLASS (parent_class)->generate_output (trans,
      outbuf);
  if (!self->defer_push)
    return ret;
  if (ret == GST_BASE_TRANSFORM_FLOW_DROPPED && *outbuf != NULL) {
    PendingOut *po = g_new0 (PendingOut, 1);

    po->buf = *outbuf;
    po->seq = self->queued_seq;
    g_queue_push_tail (&self->pending_out, po);
    *outbuf = NULL;
    ret = GST_FLOW_OK;
  }
  if (ret == GST_FLOW_OK && *outbuf == NULL)
    *outbuf = pending_pop_ready (self);
  return ret;
}

/* Output frames from the device pool; a failed allocation is a CUDA
 * error worth its own message. */
static GstFlowReturn
gst_pinned_cuda_upload_prepare_output_buffer (GstBaseTransform * trans,
    GstBuffer * input, GstBuffer ** outbuf)
{
  GstPinnedCudaUpload *self = GST_PINNED_CUDA_UPLOAD (trans);
  GstBufferPool *pool = gst_base_transform_get_buffer_pool (trans);
  GstFlowReturn ret;

  if (pool == NULL) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("No CUDA device frame pool (not negotiated)"), (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  ret = gst_buffer_pool_acquire_buffer (pool, outbuf, NULL);
  if (ret == GST_FLOW_OK) {
    /* what the default implementation does: timestamps, flags, metas */
    GstBaseTransformClass *klass = GST_BASE_TRANSFORM_GET_CLASS (trans);
    if (klass->copy_metadata && !klass->copy_metadata (trans, input, *outbuf))
      GST_WARNING_OBJECT (self, "could not copy the metadata");
  } else if (ret == GST_FLOW_ERROR) {
    gchar *why = GST_IS_PINNED_CUDA_BUFFER_POOL (pool) ?
        gst_pinned_cuda_buffer_pool_get_last_error (pool) : NULL;
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
        ("Could not get a CUDA device frame: CUDA error: %s",
            why ? why : "pool failure"), (NULL));
    g_free (why);
  }
  gst_object_unref (pool);
  return ret;
}

static gboolean
gst_pinned_cuda_upload_sink_event (GstBaseTransform * trans, GstEvent * event)
{
  GstPinnedCudaUpload *self = GST_PINNED_CUDA_UPLOAD (trans);

  /* At EOS every copy has completed and every input has gone back; a
   * failed wait for the last frames is an error, not a clean end. */
  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS && self->parent.cuda.rt != NULL) {
    wait_inflight (self, 0, FALSE);
    if (!check_async_error (self)) {
      pending_drop (self);
      gst_event_unref (event);
      return FALSE;
    }
  }
  /* 1.22 path: held frames go out before any serialized event (a flush
   * drops them) */
  if (GST_EVENT_TYPE (event) == GST_EVENT_FLUSH_STOP)
    pending_drop (self);
  else if (GST_EVENT_IS_SERIALIZED (event) && self->parent.cuda.rt != NULL)
    pending_push_all (self);
  return GST_BASE_TRANSFORM_CLASS (parent_class)->sink_event (trans, event);
}

/* ------------------------------------------------------------ GObject */

static GstStructure *
make_stats (GstPinnedCudaUpload * self)
{
  GstStructure *s;

  GST_OBJECT_LOCK (self);
  s = gst_pinned_cuda_base_transform_new_stats_locked (&self->parent,
      "application/x-pinnedcudaupload-stats");
  gst_structure_set (s,
      "staged-copies", G_TYPE_UINT64, self->staged_copies,
      "readonly-registrations", G_TYPE_UINT64,
      self->parent.registrations_readonly,
      "registration-failures", G_TYPE_UINT64,
      self->parent.registration_failures,
      "waits-full", G_TYPE_UINT64, self->waits_full,
      "inflight-max", G_TYPE_UINT64, self->inflight_max, NULL);
  GST_OBJECT_UNLOCK (self);
  return s;
}

static void
gst_pinned_cuda_upload_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstPinnedCudaUpload *self = GST_PINNED_CUDA_UPLOAD (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MAX_INFLIGHT:
      self->max_inflight = g_value_get_uint (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_pinned_cuda_upload_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstPinnedCudaUpload *self = GST_PINNED_CUDA_UPLOAD (object);

  switch (prop_id) {
    case PROP_MAX_INFLIGHT:
      GST_OBJECT_LOCK (self);
      g_value_set_uint (value, self->max_inflight);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_STATS:
      g_value_take_boxed (value, make_stats (self));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

static void
gst_pinned_cuda_upload_finalize (GObject * object)
{
  GstPinnedCudaUpload *self = GST_PINNED_CUDA_UPLOAD (object);

  g_mutex_clear (&self->lock);
  g_cond_clear (&self->cond);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_pinned_cuda_upload_class_init (GstPinnedCudaUploadClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);
  GstPinnedCudaBaseTransformClass *cuda_class =
      (GstPinnedCudaBaseTransformClass *) klass;

  gobject_class->set_property = gst_pinned_cuda_upload_set_property;
  gobject_class->get_property = gst_pinned_cuda_upload_get_property;
  gobject_class->finalize = gst_pinned_cuda_upload_finalize;

  properties[PROP_MAX_INFLIGHT] = g_param_spec_uint ("max-inflight",
      "Max in flight",
      "Frames whose copies may be outstanding at once (input buffers held)",
      1, 64, DEFAULT_MAX_INFLIGHT,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_STATS] = g_param_spec_boxed ("stats", "Statistics",
      "frames, bytes, pinned-copies (DMA from a registered segment), "
      "staged-copies (pageable input copied through the bounce segment), "
      "registrations (segments registered by this element), "
      "readonly-registrations, registration-failures, waits-full (times the "
      "element waited for a free in-flight slot), inflight-max",
      GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (gobject_class, N_PROPERTIES, properties);

  gst_element_class_set_static_metadata (element_class,
      "Pinned CUDA upload", "Filter/Video/Hardware",
      "Copies video frames into CUDA device memory, by DMA from registered "
      "pinned segments", "gst-pinnedflow developers");

  gst_pinned_cuda_base_transform_class_set_features (cuda_class,
      GST_CAPS_FEATURE_MEMORY_SYSTEM_MEMORY,
      GST_CAPS_FEATURE_MEMORY_PINNEDFLOW_CUDA);
  cuda_class->start_cuda =
      GST_DEBUG_FUNCPTR (gst_pinned_cuda_upload_start_cuda);
  cuda_class->stop_cuda = GST_DEBUG_FUNCPTR (gst_pinned_cuda_upload_stop_cuda);
  cuda_class->caps_changed =
      GST_DEBUG_FUNCPTR (gst_pinned_cuda_upload_caps_changed);
  trans_class->propose_allocation =
      GST_DEBUG_FUNCPTR (gst_pinned_cuda_upload_propose_allocation);
  trans_class->decide_allocation =
      GST_DEBUG_FUNCPTR (gst_pinned_cuda_upload_decide_allocation);
  trans_class->prepare_output_buffer =
      GST_DEBUG_FUNCPTR (gst_pinned_cuda_upload_prepare_output_buffer);
  trans_class->transform = GST_DEBUG_FUNCPTR (gst_pinned_cuda_upload_transform);
  trans_class->generate_output =
      GST_DEBUG_FUNCPTR (gst_pinned_cuda_upload_generate_output);
  trans_class->sink_event =
      GST_DEBUG_FUNCPTR (gst_pinned_cuda_upload_sink_event);

  GST_DEBUG_CATEGORY_INIT (gst_pinned_cuda_upload_debug, "pinnedcudaupload",
      0, "pinnedflow CUDA upload");
}

static void
gst_pinned_cuda_upload_init (GstPinnedCudaUpload * self)
{
  self->max_inflight = DEFAULT_MAX_INFLIGHT;
  g_mutex_init (&self->lock);
  g_cond_init (&self->cond);
  g_queue_init (&self->inflight);
  g_queue_init (&self->free_events);
  g_queue_init (&self->pending_out);
}
