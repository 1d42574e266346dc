/* GStreamer pinnedflow CUDA: one frame's copy in pinnedcudaupload
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * What happens to one input buffer (the element, its properties, caps and
 * pools are in gstpinnedcudaupload.c; this file is called from its
 * transform and never calls back into it):
 *   map        the input mapped and held (InFlight), the output's device
 *              planes mapped (GstCudaMemory or PinnedflowCUDA);
 *   register   the segments behind the input registered once per segment
 *              per process (counted; an unregistered one is said once);
 *   submit     the planes handed to the copy engine (pf_uploader_submit):
 *              DMA from a registered segment, else staged through its
 *              bounce segment; the output's event recorded, and on 1.24+
 *              the memory's GstCudaStream made to wait on the GPU;
 *   release    the engine's release thread unmaps and unrefs the input
 *              once the copy's event completed, and counts the frame
 *              completed (completed_seq, for the 1.22 path's wait).
 * The structs are in gstpinnedcudaupload-private.h.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedcudaupload-private.h"

#include <string.h>

#define GST_CAT_DEFAULT gst_pinned_cuda_upload_debug

#define MAX_REGS 4

/* One frame handed to the copy engine: freed by its done callback (or
 * by gst_pinned_cuda_upload_frame() when the submit failed). */
typedef struct
{
  GstPinnedCudaUpload *self;
  GstBuffer *input;             /* held until the engine released it */
  GstVideoFrame frame;          /* mapped while input is held */
  guint64 seq;                  /* order of queuing, from 1 */
} InFlight;

/* ------------------------------------------------------------ release */

/* The engine's callbacks, on its release thread (or in a submit/flush):
 * the input goes back once no copy reads it (at once for a staged
 * frame); the frame counts as completed once its copy's event did. */
static void
inflight_release_input (void *data, int status)
{
  InFlight *e = data;

  if (e->input) {
    gst_video_frame_unmap (&e->frame);
    gst_clear_buffer (&e->input);
  }
}

static void
inflight_done (void *data, int status)
{
  InFlight *e = data;
  GstPinnedCudaUpload *self = e->self;

  g_mutex_lock (&self->lock);
  self->completed_seq = e->seq;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
  inflight_release_input (e, status);
  g_free (e);
}

/* Posts the error of a failed wait in the engine (it sticks until the
 * element stops). */
gboolean
gst_pinned_cuda_upload_check_error (GstPinnedCudaUpload * self)
{
  const char *msg = self->up ? pf_uploader_get_error (self->up) : NULL;

  if (msg == NULL)
    return TRUE;
  GST_ELEMENT_ERROR (self, RESOURCE, FAILED, ("CUDA error in %s", msg),
      ("runtime %s, device %d", self->parent.cuda.rt->library,
          self->parent.cuda.device_id));
  return FALSE;
}

/* ------------------------------------------------------------ 1.22 wait */

/* The 1.22 path (memory:CUDAMemory, no GstCudaStream to carry the copy's
 * event): waits until the copy of frame @seq completed (the engine's
 * release thread signals it after a blocking-sync event wait: no core
 * spins), never for a later frame's. Returns the time waited. */
static GstClockTime
wait_frame_copy (GstPinnedCudaUpload * self, guint64 seq)
{
  gint64 start = g_get_monotonic_time ();

  g_mutex_lock (&self->lock);
  while (self->completed_seq < seq)
    g_cond_wait (&self->cond, &self->lock);
  g_mutex_unlock (&self->lock);
  return (g_get_monotonic_time () - start) * GST_USECOND;
}

/* A frame waited @waited before it could go out: the latency this element
 * adds grows to it (whole milliseconds), and the pipeline is told to ask
 * again. */
static void
note_copy_wait (GstPinnedCudaUpload * self, GstClockTime waited)
{
  GstClockTime rounded = GST_MSECOND *
      ((waited + GST_MSECOND - 1) / GST_MSECOND);
  gboolean grew = FALSE;

  g_mutex_lock (&self->lock);
  if (rounded > self->latency) {
    self->latency = rounded;
    grew = TRUE;
  }
  g_mutex_unlock (&self->lock);
  if (grew) {
    GST_INFO_OBJECT (self, "frames wait up to %" GST_TIME_FORMAT " for their "
        "copy: latency updated", GST_TIME_ARGS (rounded));
    gst_element_post_message (GST_ELEMENT (self),
        gst_message_new_latency (GST_OBJECT (self)));
  }
}


/* The 1.22 path: waits for frame @seq's copy, then grows the latency to
 * the wait. */
void
gst_pinned_cuda_upload_wait_copy (GstPinnedCudaUpload * self, guint64 seq)
{
  note_copy_wait (self, wait_frame_copy (self, seq));
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

/* The engine's bounce segment (pageable input is staged there), counted
 * once per segment, and said so when it could not be registered. */
static void
note_bounce (GstPinnedCudaUpload * self)
{
  const GstPinnedCudaRegistration *reg =
      pf_uploader_get_bounce_registration (self->up);

  if (reg == NULL || reg == self->bounce_reg_seen)
    return;
  self->bounce_reg_seen = reg;
  gst_pinned_cuda_base_transform_count_registration (&self->parent, reg, TRUE);
  /* The fallback (a device that cannot register host memory, e.g.
   * cudaDevAttrHostRegisterSupported 0): the bounce slots are used
   * unregistered, so each copy from them is a pageable cudaMemcpy2DAsync,
   * which the runtime stages through its own pinned buffer before
   * returning (synchronous with the host, slower). */
  if (!reg->registered)
    GST_ELEMENT_WARNING (self, RESOURCE, FAILED,
        ("Could not register the bounce segment with CUDA: copies from "
            "system memory are pageable"), ("%s",
            pf_uploader_get_bounce_warning (self->up)));
}

/* Registers the segments behind @buf's memories (once per segment per
 * process; the engine finds the same registration) and counts them; an
 * input segment that cannot be registered is said once. */
static void
count_registrations (GstPinnedCudaUpload * self, GstBuffer * buf)
{
  guint i, n = 0, n_mem = gst_buffer_n_memory (buf);

  for (i = 0; i < n_mem && n < MAX_REGS; i++) {
    gboolean created;
    const GstPinnedCudaRegistration *reg =
        gst_pinned_cuda_base_transform_register_memory (&self->parent,
        gst_buffer_peek_memory (buf, i), &created);

    if (reg == NULL)
      continue;
    n++;
    if (created && !reg->registered) {
      gchar *desc = reg->error != GST_PINNED_CUDA_SUCCESS ?
          gst_pinned_cuda_error_describe (self->parent.cuda.rt,
          reg->error) : NULL;
      GST_ELEMENT_WARNING (self, RESOURCE, FAILED,
          ("Input segment not registered with CUDA, staging its copies"),
          ("%s%s%s", reg->reason, desc ? ": " : "", desc ? desc : ""));
      g_free (desc);
    }
  }
}

/* The planes of @outbuf's device memory, or FALSE (error posted).
 * GstCudaMemory: the device pointer of a GST_MAP_WRITE | GST_MAP_CUDA map
 * (which, on 1.24+ with a stream, sets the memory's NEED_SYNC flag), the
 * planes from the pool's GstVideoMeta. */
static gboolean
output_frame_map (GstPinnedCudaUpload * self, GstBuffer * outbuf,
    GstPinnedCudaDeviceFrame * f)
{
  GstMemory *omem = gst_buffer_peek_memory (outbuf, 0);
  const GstPinnedCudaGst *gst = self->parent.cuda.gst;
  guint n = self->parent.host_layout.n_planes;

  memset (f, 0, sizeof (*f));
  if (self->parent.cuda_memory) {
    GstVideoMeta *meta = gst_buffer_get_video_meta (outbuf);

    if (!gst->is_cuda_memory (omem) || meta == NULL || meta->n_planes != n) {
      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
          ("Output buffer is not GstCudaMemory with a matching video meta"),
          (NULL));
      return FALSE;
    }
    if (!gst_pinned_cuda_device_frame_map_gst (f, omem, meta, GST_MAP_WRITE)) {
      GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
          ("Could not map the output CUDA memory for the device"), (NULL));
      return FALSE;
    }
    return TRUE;
  }
  if (!gst_is_pinned_cuda_memory (omem)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Output buffer is not pinnedflow CUDA memory"), (NULL));
    return FALSE;
  }
  gst_pinned_cuda_device_frame_set_pinned (f, (GstPinnedCudaMemory *) omem,
      self->parent.host_layout.row_offset, n);
  return TRUE;
}

/* An in-flight entry holding @inbuf mapped, or NULL (error posted) when it
 * cannot be mapped or a plane's stride is below its width. */
static InFlight *
inflight_new (GstPinnedCudaUpload * self, GstBuffer * inbuf)
{
  InFlight *e = g_new0 (InFlight, 1);
  guint p;

  e->self = self;
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
      inflight_release_input (e, 0);
      g_free (e);
      return NULL;
    }
  }
  return e;
}

/* @e's input as the engine's source: its planes, the segments behind its
 * memories, and the callbacks that release it and count it completed. */
static void
inflight_source (GstPinnedCudaUpload * self, InFlight * e,
    pf_upload_source * src)
{
  guint p, i, n_mem = gst_buffer_n_memory (e->input);

  memset (src, 0, sizeof (*src));
  src->n_planes = self->parent.host_layout.n_planes;
  for (p = 0; p < src->n_planes; p++) {
    src->plane_data[p] = GST_VIDEO_FRAME_PLANE_DATA (&e->frame, p);
    src->plane_stride[p] = GST_VIDEO_FRAME_PLANE_STRIDE (&e->frame, p);
    src->plane_rows[p] = self->parent.host_layout.rows[p];
    src->plane_row_bytes[p] = self->parent.host_layout.width_bytes[p];
  }
  for (i = 0; i < n_mem && src->n_segments < PF_MAX_CHUNKS; i++) {
    GstMemory *mem = gst_buffer_peek_memory (e->input, i);
    GstPinnedSegment *seg;

    if (!gst_is_pinned_memory (mem))
      continue;
    if ((seg = gst_pinned_memory_get_segment (mem, NULL)) != NULL)
      src->segments[src->n_segments++] = seg;
  }
  src->release = inflight_release_input;
  src->release_data = e;
  src->done = inflight_done;
  src->done_data = e;
}

/* Where the engine copies to: the output's planes, the PinnedflowCUDA
 * memory's event recorded after them, and on the 1.24+ path the
 * GstCudaStream the memory carries made to wait on the copies (on the
 * GPU). */
static void
output_dest (GstPinnedCudaUpload * self, const GstPinnedCudaDeviceFrame * dst,
    pf_upload_dest * dest)
{
  guint p;

  memset (dest, 0, sizeof (*dest));
  for (p = 0; p < self->parent.host_layout.n_planes; p++) {
    dest->plane_ptr[p] = dst->ptr[p];
    dest->plane_pitch[p] = dst->pitch[p];
  }
  dest->record_event = (pf_cuda_event) dst->event;
  if (dst->mapped && self->gst_stream)
    dest->wait_stream = (pf_cuda_stream)
        self->parent.cuda.gst->stream_get_handle (self->gst_stream);
}

/* Counts a frame the engine queued. */
static void
count_queued (GstPinnedCudaUpload * self, const pf_upload_result * res)
{
  if (res->staged)
    note_bounce (self);
  gst_pinned_cuda_base_transform_count_frame (&self->parent,
      packed_offset (self, self->parent.host_layout.n_planes), !res->staged);
  GST_OBJECT_LOCK (self);
  if (res->staged)
    self->staged_copies++;
  if (res->waited_full)
    self->waits_full++;
  self->inflight_max = MAX (self->inflight_max, res->inflight);
  GST_OBJECT_UNLOCK (self);
}

/* One frame to the engine: it waits on the oldest when max-inflight frames
 * are in flight, stages pageable input, queues the copies of every plane,
 * records the events and releases the input after the copy's event. */
GstFlowReturn
gst_pinned_cuda_upload_frame (GstPinnedCudaUpload * self, GstBuffer * inbuf,
    GstBuffer * outbuf)
{
  GstPinnedCudaDeviceFrame dst;
  pf_upload_source src;
  pf_upload_dest dest;
  pf_upload_result res;
  InFlight *e;
  int r;

  if (!gst_pinned_cuda_upload_check_error (self))
    return GST_FLOW_ERROR;

  e = inflight_new (self, inbuf);
  if (e == NULL)
    return GST_FLOW_ERROR;
  if (!output_frame_map (self, outbuf, &dst))
    goto failed;
  count_registrations (self, e->input);
  inflight_source (self, e, &src);
  output_dest (self, &dst, &dest);
  e->seq = self->queued_seq + 1;

  r = pf_uploader_submit (self->up, &src, &dest, &res);
  if (r == 0 && dest.wait_stream)
    GST_MINI_OBJECT_FLAG_SET (dst.mapped, GST_PINNED_CUDA_GST_MEMORY_NEED_SYNC);
  gst_pinned_cuda_device_frame_unmap (&dst);
  if (r < 0) {
    /* Nothing is queued any more and no callback will run. */
    if (res.sticky)
      gst_pinned_cuda_upload_check_error (self);
    else if (res.failed_call)
      GST_PINNED_CUDA_CONTEXT_ERROR (&self->parent.cuda, res.failed_call,
          res.cuda_error);
    else
      GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
          ("Could not queue the copies of a frame: %s", g_strerror (-r)),
          ("pf_uploader_submit"));
    goto failed;
  }
  /* @e belongs to the engine now (and may be gone already) */
  self->queued_seq++;
  count_queued (self, &res);
  return GST_FLOW_OK;

failed:
  inflight_release_input (e, 0);
  g_free (e);
  return GST_FLOW_ERROR;
}
