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
 * segment, then copied the same way (counted as staged). The copies are
 * queued by libpinnedflow's upload engine (pf_uploader, pinnedflow/pf-upload.h),
 * the one dataflow nodes use through pf_node_frame_upload(): one code path,
 * one registration per segment and process.
 *
 * Its device frames come from its own bounded pool, except where
 * downstream proposes a pool of device slots (pinnedshmsink's, option
 * GstBufferPoolOptionPinnedflowCUDASlots) whose memory is pinnedflow CUDA
 * memory of this element's device and context: the copies then go straight
 * into the slots the sink publishes from (no copy there).
 *
 * memory:PinnedflowCUDA buffers are pushed as soon as their copies are
 * queued; readers wait on their event (see gstpinnedcuda.h; mapping for the
 * CPU waits). memory:CUDAMemory buffers: with GStreamer 1.24 or later they
 * are pushed at once too, carrying a GstCudaStream that waits on the copy's
 * event on the GPU and the memory's NEED_SYNC flag (downstream synchronizes
 * that stream or orders its work after it); with 1.22 (no GstCudaStream) a
 * buffer is pushed as soon as its own copy completed (the streaming thread
 * sleeps on that frame's blocking-sync event, through the copy engine's
 * release thread, never on a later frame's), and the LATENCY query answers
 * upstream's latency plus the longest such wait seen (whole milliseconds;
 * a LATENCY message is posted when it grows). The input buffer is released
 * only once the copies from it completed.
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

#include "gstpinnedcudaupload-private.h"

#include <string.h>

GST_DEBUG_CATEGORY (gst_pinned_cuda_upload_debug);
#define GST_CAT_DEFAULT gst_pinned_cuda_upload_debug

#define DEFAULT_MAX_INFLIGHT 3

enum
{
  PROP_0,
  PROP_MAX_INFLIGHT,
  PROP_STATS,
  N_PROPERTIES
};

static GParamSpec *properties[N_PROPERTIES];

#define gst_pinned_cuda_upload_parent_class parent_class
G_DEFINE_TYPE (GstPinnedCudaUpload, gst_pinned_cuda_upload,
    GST_TYPE_PINNED_CUDA_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE (pinnedcudaupload, "pinnedcudaupload",
    GST_RANK_NONE, GST_TYPE_PINNED_CUDA_UPLOAD);

/* The engine's context switching: the shared context pushed. */
static int
engine_enter (void *data)
{
  return gst_pinned_cuda_context_enter (data);
}

static void
engine_leave (void *data, int previous)
{
  gst_pinned_cuda_context_leave (data, previous);
}

/* Waits until no frame is in flight (every input released). */
static void
wait_inflight (GstPinnedCudaUpload * self)
{
  if (self->up)
    pf_uploader_flush (self->up);
}

/* ------------------------------------------------------------ start/stop */

/* Every copy waited for and every input released by the engine, whose
 * bounce segment is unregistered, then unmapped; the held outputs and the
 * GstCudaStream go. */
static void
free_cuda_state (GstPinnedCudaUpload * self)
{
  g_clear_pointer (&self->up, pf_uploader_free);
  self->bounce_reg_seen = NULL;
  self->n_events = 0;
  if (self->gst_stream) {
    self->parent.cuda.gst->stream_unref (self->gst_stream);
    self->gst_stream = NULL;
  }
}

static gboolean
gst_pinned_cuda_upload_start_cuda (GstPinnedCudaBaseTransform * base)
{
  GstPinnedCudaUpload *self = GST_PINNED_CUDA_UPLOAD (base);
  pf_uploader_config cfg = { 0, };
  pf_uploader_hooks hooks = { engine_enter, engine_leave, &base->cuda };
  guint n_events;
  int res;

  GST_OBJECT_LOCK (self);
  self->staged_copies = self->waits_full = self->inflight_max = 0;
  n_events = self->max_inflight;
  GST_OBJECT_UNLOCK (self);
  g_mutex_lock (&self->lock);
  self->queued_seq = self->completed_seq = 0;
  self->latency = 0;
  g_mutex_unlock (&self->lock);
  self->wait_copy = FALSE;

  /* the engine queues on our stream, in our (shared) context */
  cfg.device_id = base->cuda.device_id;
  cfg.stream = (pf_cuda_stream) base->cuda.stream;
  cfg.max_inflight = n_events;
  res = pf_uploader_new_with_hooks (&cfg, &hooks, &self->up, NULL, 0);
  if (res < 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
        ("Could not start the CUDA copy engine: %s", pf_cuda_runtime_error ()),
        ("pf_uploader_new: %s", g_strerror (-res)));
    return FALSE;
  }
  self->n_events = n_events;
  return TRUE;
}

/* Every copy completed and every input released, then the engine goes;
 * the base class closes the stream after this. */
static void
gst_pinned_cuda_upload_stop_cuda (GstPinnedCudaBaseTransform * base)
{
  GstPinnedCudaUpload *self = GST_PINNED_CUDA_UPLOAD (base);

  wait_inflight (self);
  free_cuda_state (self);
}

/* ------------------------------------------------------------ caps */

/* New caps: every copy completed first (the engine grows its bounce
 * segment itself when a frame needs more). */
static gboolean
gst_pinned_cuda_upload_caps_changed (GstPinnedCudaBaseTransform * base)
{
  GstPinnedCudaUpload *self = GST_PINNED_CUDA_UPLOAD (base);

  wait_inflight (self);
  /* 1.24+, memory:CUDAMemory only: the stream the memory carries, which
   * waits on our events. Made on the first such caps, kept until stop:
   * libgstcuda makes it with CU_STREAM_DEFAULT (a blocking stream, ordered
   * with the legacy default stream), so the memory:PinnedflowCUDA path
   * makes none. */
  if (self->parent.cuda_memory && self->gst_stream == NULL &&
      base->cuda.gst_ctx && base->cuda.gst->has_stream) {
    self->gst_stream = base->cuda.gst->stream_new (base->cuda.gst_ctx);
    if (self->gst_stream == NULL)
      GST_WARNING_OBJECT (self, "gst_cuda_stream_new failed: CUDA memory "
          "frames are pushed once their copy completed");
  }
  /* memory:CUDAMemory without a GstCudaStream (1.22): pushed once its own
   * copy completed */
  self->wait_copy = self->parent.cuda_memory && self->gst_stream == NULL;
  GST_DEBUG_OBJECT (self, "output %s%s", self->parent.cuda_memory ?
      "memory:CUDAMemory" : "memory:PinnedflowCUDA", !self->parent.cuda_memory
      ? "" : self->wait_copy ? ", pushed once its copy completed (1.22)" :
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
/* Downstream's pool of device slots (pinnedshmsink's, option
 * GstBufferPoolOptionPinnedflowCUDASlots: buffers that are slots of its
 * device segment, published with no copy), configured and active, when
 * its memory is pinnedflow CUDA memory of our device and context; else
 * NULL (our own pool). */
static GstBufferPool *
downstream_slot_pool (GstPinnedCudaUpload * self, GstQuery * query,
    GstCaps * caps, guint min, guint max)
{
  GstBufferPool *pool = NULL;
  GstStructure *config;
  GstBuffer *buf = NULL;
  GstPinnedCudaMemory *mem;
  gpointer cu_ctx = self->parent.cuda.gst_ctx ?
      self->parent.cuda.gst->context_get_handle (self->parent.cuda.gst_ctx) :
      NULL;
  gboolean ok;

  if (gst_query_get_n_allocation_pools (query) == 0)
    return NULL;
  gst_query_parse_nth_allocation_pool (query, 0, &pool, NULL, NULL, NULL);
  if (pool == NULL)
    return NULL;
  if (!gst_buffer_pool_has_option (pool,
          "GstBufferPoolOptionPinnedflowCUDASlots"))
    goto refuse;
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, caps,
      GST_VIDEO_INFO_SIZE (&self->parent.out_info), min, max);
  gst_buffer_pool_config_add_option (config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  if (!gst_buffer_pool_set_config (pool, config)
      || !gst_buffer_pool_set_active (pool, TRUE))
    goto refuse;
  if (gst_buffer_pool_acquire_buffer (pool, &buf, NULL) != GST_FLOW_OK)
    goto inactive;
  mem = (GstPinnedCudaMemory *) gst_buffer_peek_memory (buf, 0);
  ok = gst_buffer_n_memory (buf) == 1 && gst_is_pinned_cuda_memory ((GstMemory
          *) mem) && mem->device_id == self->parent.cuda.device_id
      && mem->cu_ctx == cu_ctx;
  gst_buffer_unref (buf);
  if (!ok)
    goto inactive;
  GST_DEBUG_OBJECT (self, "writing into downstream's device slots");
  return pool;

inactive:
  gst_buffer_pool_set_active (pool, FALSE);
refuse:
  GST_DEBUG_OBJECT (self, "downstream's pool is not ours to write into");
  gst_object_unref (pool);
  return NULL;
}

static gboolean
gst_pinned_cuda_upload_decide_allocation (GstBaseTransform * trans,
    GstQuery * query)
{
  GstPinnedCudaUpload *self = GST_PINNED_CUDA_UPLOAD (trans);
  GstCaps *caps;
  GstBufferPool *pool;
  GstStructure *config;
  guint down_min, size = 0, min, max;

  if (!gst_pinned_cuda_base_transform_parse_allocation (query, &caps,
          &down_min))
    return FALSE;
  min = self->n_events + 1;
  max = min + down_min + 2;

  if (!self->parent.cuda_memory
      && (pool = downstream_slot_pool (self, query, caps, min, max)) != NULL) {
    config = gst_buffer_pool_get_config (pool);
    gst_buffer_pool_config_get_params (config, NULL, &size, &min, &max);
    gst_structure_free (config);
    gst_pinned_cuda_base_transform_put_pool (query, pool, size, min, max);
    return TRUE;
  }
  if (self->parent.cuda_memory) {
    /* GstCudaMemory of the shared context, with a GstVideoMeta */
    pool = self->parent.cuda.gst->buffer_pool_new (self->parent.cuda.gst_ctx);
  } else {
    pool = gst_pinned_cuda_context_new_device_pool (&self->parent.cuda);
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

/* On the streaming thread, which is not the one that opened the device. */
static GstFlowReturn
gst_pinned_cuda_upload_transform (GstBaseTransform * trans, GstBuffer * inbuf,
    GstBuffer * outbuf)
{
  GstPinnedCudaUpload *self = GST_PINNED_CUDA_UPLOAD (trans);
  GstFlowReturn ret;
  int prev;

  prev = gst_pinned_cuda_context_enter (&self->parent.cuda);
  ret = gst_pinned_cuda_upload_frame (self, inbuf, outbuf);
  gst_pinned_cuda_context_leave (&self->parent.cuda, prev);
  /* 1.22 path: out as soon as this frame's copy completed (a failed wait
   * is an error, not a stale frame) */
  if (ret == GST_FLOW_OK && self->wait_copy) {
    gst_pinned_cuda_upload_wait_copy (self, self->queued_seq);
    if (!gst_pinned_cuda_upload_check_error (self))
      ret = GST_FLOW_ERROR;
  }
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
    wait_inflight (self);
    if (!gst_pinned_cuda_upload_check_error (self)) {
      gst_event_unref (event);
      return FALSE;
    }
  }
  return GST_BASE_TRANSFORM_CLASS (parent_class)->sink_event (trans, event);
}

/* The LATENCY query (on the src pad): upstream's, plus what waiting for
 * the copy adds on the 1.22 path (0 on the others: those frames go out
 * once their copies are queued, their readers wait on the GPU). */
static gboolean
gst_pinned_cuda_upload_query (GstBaseTransform * trans,
    GstPadDirection direction, GstQuery * query)
{
  GstPinnedCudaUpload *self = GST_PINNED_CUDA_UPLOAD (trans);
  GstClockTime min, max, ours;
  gboolean live;

  if (!GST_BASE_TRANSFORM_CLASS (parent_class)->query (trans, direction, query))
    return FALSE;
  if (GST_QUERY_TYPE (query) != GST_QUERY_LATENCY || direction != GST_PAD_SRC)
    return TRUE;
  g_mutex_lock (&self->lock);
  ours = self->latency;
  g_mutex_unlock (&self->lock);
  gst_query_parse_latency (query, &live, &min, &max);
  min += ours;
  if (GST_CLOCK_TIME_IS_VALID (max))
    max += ours;
  gst_query_set_latency (query, live, min, max);
  GST_DEBUG_OBJECT (self, "latency: upstream's + %" GST_TIME_FORMAT,
      GST_TIME_ARGS (ours));
  return TRUE;
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
  trans_class->query = GST_DEBUG_FUNCPTR (gst_pinned_cuda_upload_query);
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
}
