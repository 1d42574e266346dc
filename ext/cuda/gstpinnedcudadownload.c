/* GStreamer pinnedflow CUDA: CUDA device memory to system memory
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
/**
 * SECTION:element-pinnedcudadownload
 * @title: pinnedcudadownload
 *
 * Copies raw video frames from CUDA device memory into system memory:
 * pinnedflow CUDA memory (caps feature `memory:PinnedflowCUDA`, made by
 * pinnedcudaupload) or GStreamer's GstCudaMemory (`memory:CUDAMemory`, made
 * by nvcodec's cudaupload, decoders, or pinnedcudaupload; needs libgstcuda
 * at run time, see gstpinnedcudagst-private.h), into
 * a #GstPinnedBufferPool buffer whose segment is registered with CUDA once,
 * so the copy is a DMA. The copy is ordered on the GPU after the input's
 * writes (cudaStreamWaitEvent on the event of the upload's copy; for
 * GstCudaMemory with a stream and NEED_SYNC (1.24+), on an event recorded
 * on that stream: no host synchronize, which would spin a core and wait
 * for later frames queued there), runs on a non-blocking stream, and the
 * host waits only for the event recorded after it (blocking sync) before
 * the buffer is pushed.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=100 ! video/x-raw,format=I420 ! pinnedcudaupload ! pinnedcudadownload ! videoconvert ! autovideosink
 * ]|
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=100 ! video/x-raw,format=NV12 ! cudaupload ! pinnedcudadownload ! fakesink
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedcudadownload.h"
#include <gst/pinnedcuda/gstpinnedcudamemory.h>

#include <gst/video/video.h>
#include <gst/pinnedflow/pinnedflow.h>

GST_DEBUG_CATEGORY_STATIC (gst_pinned_cuda_download_debug);
#define GST_CAT_DEFAULT gst_pinned_cuda_download_debug

enum
{
  PROP_0,
  PROP_STATS,
};

struct _GstPinnedCudaDownload
{
  GstPinnedCudaBaseTransform parent;

  /* after our copy of a frame: the host waits for it (blocking sync) */
  GstPinnedCudaEvent event;
  /* 1.24+: recorded on a GstCudaMemory's stream, our stream waits for it */
  GstPinnedCudaEvent in_event;

  /* stats (object lock) */
  /* (frames, bytes, pinned-copies, registrations: the base class's) */
  guint64 pageable_copies;
};

#define gst_pinned_cuda_download_parent_class parent_class
G_DEFINE_TYPE (GstPinnedCudaDownload, gst_pinned_cuda_download,
    GST_TYPE_PINNED_CUDA_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE (pinnedcudadownload, "pinnedcudadownload",
    GST_RANK_NONE, GST_TYPE_PINNED_CUDA_DOWNLOAD);

static gboolean
gst_pinned_cuda_download_start_cuda (GstPinnedCudaBaseTransform * base)
{
  GstPinnedCudaDownload *self = GST_PINNED_CUDA_DOWNLOAD (base);

  GST_OBJECT_LOCK (self);
  self->pageable_copies = 0;
  GST_OBJECT_UNLOCK (self);

  self->event = gst_pinned_cuda_context_new_event (&base->cuda);
  if (self->event == NULL)
    return FALSE;
  self->in_event = gst_pinned_cuda_context_new_event (&base->cuda);
  return self->in_event != NULL;
}

/* The stream is still open: the base class drains it, after this, before
 * closing it; the last copy was waited for before its buffer went out. */
static void
gst_pinned_cuda_download_stop_cuda (GstPinnedCudaBaseTransform * base)
{
  GstPinnedCudaDownload *self = GST_PINNED_CUDA_DOWNLOAD (base);

  if (self->event) {
    gst_pinned_cuda_context_free_event (&base->cuda, self->event);
    self->event = NULL;
  }
  if (self->in_event) {
    gst_pinned_cuda_context_free_event (&base->cuda, self->in_event);
    self->in_event = NULL;
  }
}

/* Upstream (the upload) allocates its own device pool; nothing to add
 * but the video meta. */
static gboolean
gst_pinned_cuda_download_propose_allocation (GstBaseTransform * trans,
    GstQuery * decide_query, GstQuery * query)
{
  gst_query_add_allocation_meta (query, GST_VIDEO_META_API_TYPE, NULL);
  return TRUE;
}

/* Downstream: a pinned segment pool, registered once, for DMA. */
static gboolean
gst_pinned_cuda_download_decide_allocation (GstBaseTransform * trans,
    GstQuery * query)
{
  GstPinnedCudaDownload *self = GST_PINNED_CUDA_DOWNLOAD (trans);
  GstCaps *caps;
  GstBufferPool *pool;
  GstStructure *config;
  guint min, max, down_min, size = GST_VIDEO_INFO_SIZE (&self->parent.out_info);
  gboolean video_meta;

  if (!gst_pinned_cuda_base_transform_parse_allocation (query, &caps,
          &down_min))
    return FALSE;
  video_meta = gst_query_find_allocation_meta (query, GST_VIDEO_META_API_TYPE,
      NULL);
  min = MAX (2, down_min);
  max = min + 2;

  pool = gst_pinned_cuda_host_pool_new (caps, size, min, max, video_meta);
  if (pool == NULL) {
    /* Still correct, only not DMA: the copies are counted as pageable. */
    GST_WARNING_OBJECT (self, "pinned pool refused its config, using a "
        "plain video pool");
    pool = gst_video_buffer_pool_new ();
    config = gst_buffer_pool_get_config (pool);
    gst_buffer_pool_config_set_params (config, caps, size, min, max);
    if (video_meta)
      gst_buffer_pool_config_add_option (config,
          GST_BUFFER_POOL_OPTION_VIDEO_META);
    if (!gst_buffer_pool_set_config (pool, config)) {
      gst_object_unref (pool);
      return FALSE;
    }
  }
  gst_pinned_cuda_base_transform_put_pool (query, pool, size, min, max);
  return TRUE;
}

/* PinnedflowCUDA memory: its pitched allocation and event. */
static gboolean
device_frame_from_pinned (GstPinnedCudaDownload * self, GstMemory * mem,
    GstPinnedCudaDeviceFrame * f)
{
  GstPinnedCudaMemory *dmem;

  if (!gst_is_pinned_cuda_memory (mem)) {
    GST_ELEMENT_ERROR (self, STREAM, WRONG_TYPE,
        ("Input is not pinnedflow CUDA memory"),
        ("pinnedcudadownload takes the output of pinnedcudaupload"));
    return FALSE;
  }
  dmem = (GstPinnedCudaMemory *) mem;
  if (dmem->layout.total_rows != self->parent.host_layout.total_rows ||
      dmem->layout.n_planes != self->parent.host_layout.n_planes) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Device frame does not match the negotiated caps"), (NULL));
    return FALSE;
  }
  gst_pinned_cuda_device_frame_set_pinned (f, dmem, dmem->layout.row_offset,
      dmem->layout.n_planes);
  return TRUE;
}

/* GstCudaMemory (memory:CUDAMemory): the device pointer of a GST_MAP_CUDA
 * map, the planes from the GstVideoMeta its pool attaches. On 1.24+ a
 * memory whose writes may still be queued on its stream (NEED_SYNC) gives
 * that stream in *@wait_on: our copy is ordered after an event recorded
 * there (on the GPU), never after a host gst_cuda_memory_sync(), which is a
 * cuStreamSynchronize that spins a core in libgstcuda's context (made with
 * CU_CTX_SCHED_AUTO). */
static gboolean
device_frame_from_gst (GstPinnedCudaDownload * self, GstBuffer * inbuf,
    GstPinnedCudaDeviceFrame * f, GstPinnedCudaStream * wait_on)
{
  const GstPinnedCudaGst *gst = self->parent.cuda.gst;
  GstMemory *mem = gst_buffer_peek_memory (inbuf, 0);
  GstVideoMeta *meta = gst_buffer_get_video_meta (inbuf);

  if (gst == NULL || gst_buffer_n_memory (inbuf) != 1 ||
      !gst->is_cuda_memory (mem)) {
    GST_ELEMENT_ERROR (self, STREAM, WRONG_TYPE,
        ("Input is not one GstCudaMemory"),
        ("memory:CUDAMemory negotiated, %u memories", gst_buffer_n_memory
            (inbuf)));
    return FALSE;
  }
  if (meta == NULL || meta->n_planes != self->parent.host_layout.n_planes) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("CUDA memory without a matching GstVideoMeta"), (NULL));
    return FALSE;
  }
  *wait_on = NULL;
  if (gst->has_stream && GST_MEMORY_FLAG_IS_SET (mem,
          GST_PINNED_CUDA_GST_MEMORY_NEED_SYNC)) {
    gpointer stream = gst->memory_get_stream (mem);

    if (stream)
      *wait_on = gst->stream_get_handle (stream);
  }
  if (!gst_pinned_cuda_device_frame_map_gst (f, mem, meta, GST_MAP_READ)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Could not map the CUDA memory for the device"), (NULL));
    return FALSE;
  }
  return TRUE;
}

static GstFlowReturn
gst_pinned_cuda_download_transform (GstBaseTransform * trans,
    GstBuffer * inbuf, GstBuffer * outbuf)
{
  GstPinnedCudaDownload *self = GST_PINNED_CUDA_DOWNLOAD (trans);
  const GstPinnedCudaRuntime *rt = self->parent.cuda.rt;
  GstPinnedCudaDeviceFrame src = { {NULL}, };
  GstPinnedCudaStream wait_on = NULL;
  GstVideoFrame frame;
  const gchar *call = "cudaStreamWaitEvent";
  GstPinnedCudaError err = GST_PINNED_CUDA_SUCCESS;
  gboolean pinned = TRUE;
  guint i, p;
  gsize bytes = 0;
  int prev;

  if (self->parent.cuda_memory ?
      !device_frame_from_gst (self, inbuf, &src, &wait_on) :
      !device_frame_from_pinned (self, gst_buffer_peek_memory (inbuf, 0),
          &src)) {
    gst_pinned_cuda_device_frame_unmap (&src);
    return GST_FLOW_ERROR;
  }

  /* Register the output segment(s) once. */
  for (i = 0; i < gst_buffer_n_memory (outbuf); i++) {
    const GstPinnedCudaRegistration *reg =
        gst_pinned_cuda_base_transform_register_memory (&self->parent,
        gst_buffer_peek_memory (outbuf, i), NULL);
    if (reg == NULL || !reg->registered)
      pinned = FALSE;
  }

  if (!gst_video_frame_map (&frame, &self->parent.out_info, outbuf,
          GST_MAP_WRITE)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Could not map output frame"),
        (NULL));
    gst_pinned_cuda_device_frame_unmap (&src);
    return GST_FLOW_ERROR;
  }

  prev = gst_pinned_cuda_context_enter (&self->parent.cuda);
  /* After the upload's copy into this memory: its event (PinnedflowCUDA),
   * or (GstCudaMemory, 1.24+) one recorded now on the memory's stream. */
  if (wait_on) {
    call = "cudaEventRecord";
    err = rt->EventRecord (self->in_event, wait_on);
    if (err == GST_PINNED_CUDA_SUCCESS) {
      call = "cudaStreamWaitEvent";
      err = rt->StreamWaitEvent (self->parent.cuda.stream, self->in_event, 0);
    }
  } else if (src.event) {
    err = rt->StreamWaitEvent (self->parent.cuda.stream, src.event, 0);
  }
  for (p = 0;
      p < self->parent.host_layout.n_planes && err == GST_PINNED_CUDA_SUCCESS;
      p++) {
    call = "cudaMemcpy2DAsync";
    err = rt->Memcpy2DAsync (GST_VIDEO_FRAME_PLANE_DATA (&frame, p),
        GST_VIDEO_FRAME_PLANE_STRIDE (&frame, p), src.ptr[p], src.pitch[p],
        self->parent.host_layout.width_bytes[p],
        self->parent.host_layout.rows[p], GST_PINNED_CUDA_MEMCPY_DEVICE_TO_HOST,
        self->parent.cuda.stream);
    bytes +=
        self->parent.host_layout.width_bytes[p] *
        self->parent.host_layout.rows[p];
  }
  if (err == GST_PINNED_CUDA_SUCCESS) {
    call = "cudaEventRecord";
    err = rt->EventRecord (self->event, self->parent.cuda.stream);
  }
  if (err == GST_PINNED_CUDA_SUCCESS) {
    call = "cudaEventSynchronize";
    err = rt->EventSynchronize (self->event);
  }
  if (err != GST_PINNED_CUDA_SUCCESS) {
    GST_PINNED_CUDA_CONTEXT_ERROR (&self->parent.cuda, call, err);
    /* Nothing may still write into the frame when it goes back (its
     * error, if any, is the one just posted: not left in the slot). */
    if (rt->StreamSynchronize (self->parent.cuda.stream) !=
        GST_PINNED_CUDA_SUCCESS)
      gst_pinned_cuda_take_last_error (rt);
  }
  gst_pinned_cuda_context_leave (&self->parent.cuda, prev);
  gst_video_frame_unmap (&frame);
  gst_pinned_cuda_device_frame_unmap (&src);
  if (err != GST_PINNED_CUDA_SUCCESS)
    return GST_FLOW_ERROR;

  gst_pinned_cuda_base_transform_count_frame (&self->parent, bytes, pinned);
  if (!pinned) {
    GST_OBJECT_LOCK (self);
    self->pageable_copies++;
    GST_OBJECT_UNLOCK (self);
  }
  return GST_FLOW_OK;
}

static void
gst_pinned_cuda_download_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstPinnedCudaDownload *self = GST_PINNED_CUDA_DOWNLOAD (object);

  GstStructure *s;

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_STATS:
      s = gst_pinned_cuda_base_transform_new_stats_locked (&self->parent,
          "application/x-pinnedcudadownload-stats");
      gst_structure_set (s, "pageable-copies", G_TYPE_UINT64,
          self->pageable_copies, NULL);
      g_value_take_boxed (value, s);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_pinned_cuda_download_class_init (GstPinnedCudaDownloadClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);
  GstPinnedCudaBaseTransformClass *cuda_class =
      (GstPinnedCudaBaseTransformClass *) klass;

  gobject_class->get_property = gst_pinned_cuda_download_get_property;

  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "frames, bytes, pinned-copies (DMA into a registered segment), "
          "pageable-copies, registrations", GST_TYPE_STRUCTURE,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_set_static_metadata (element_class,
      "Pinned CUDA download", "Filter/Video/Hardware",
      "Copies video frames from CUDA device memory into pinned system memory",
      "gst-pinnedflow developers");

  gst_pinned_cuda_base_transform_class_set_features (cuda_class,
      GST_CAPS_FEATURE_MEMORY_PINNEDFLOW_CUDA,
      GST_CAPS_FEATURE_MEMORY_SYSTEM_MEMORY);
  cuda_class->start_cuda =
      GST_DEBUG_FUNCPTR (gst_pinned_cuda_download_start_cuda);
  cuda_class->stop_cuda =
      GST_DEBUG_FUNCPTR (gst_pinned_cuda_download_stop_cuda);
  trans_class->propose_allocation =
      GST_DEBUG_FUNCPTR (gst_pinned_cuda_download_propose_allocation);
  trans_class->decide_allocation =
      GST_DEBUG_FUNCPTR (gst_pinned_cuda_download_decide_allocation);
  trans_class->transform =
      GST_DEBUG_FUNCPTR (gst_pinned_cuda_download_transform);

  GST_DEBUG_CATEGORY_INIT (gst_pinned_cuda_download_debug,
      "pinnedcudadownload", 0, "pinnedflow CUDA download");
}

static void
gst_pinned_cuda_download_init (GstPinnedCudaDownload * self)
{
}
