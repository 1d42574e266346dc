/* GStreamer pinnedflow CUDA: pinnedcudaupload's instance, shared by its
 * two files
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * gstpinnedcudaupload.c (the element) calls gstpinnedcudauploadframe.c
 * (one frame's copy) through the three functions below; not the other
 * way round.
 */
#ifndef __GST_PINNED_CUDA_UPLOAD_PRIVATE_H__
#define __GST_PINNED_CUDA_UPLOAD_PRIVATE_H__

#include "gstpinnedcudaupload.h"
#include <gst/pinnedcuda/gstpinnedcudagst-private.h>
#include <gst/pinnedcuda/gstpinnedcudamemory.h>

#include <gst/video/video.h>
#include <gst/pinnedflow/pinnedflow.h>
#include <pinnedflow/pf-upload.h>

G_BEGIN_DECLS GST_DEBUG_CATEGORY_EXTERN (gst_pinned_cuda_upload_debug);


struct _GstPinnedCudaUpload
{
  GstPinnedCudaBaseTransform parent;

  guint max_inflight;           /* property (object lock) */

  /* The copy engine (libpinnedflow's pf_uploader, the one the node upload
   * API uses): the copies on our stream, max-inflight frames in flight,
   * the input released by its release thread once the copy's event
   * completed, pageable input staged through its registered bounce slots,
   * its failed waits sticky. Created in start_cuda, freed in stop_cuda. */
  pf_uploader *up;
  guint n_events;               /* max-inflight while started */
  const void *bounce_reg_seen;  /* the bounce registration counted */

  GMutex lock;                  /* completed_seq, latency */
  GCond cond;                   /* completed_seq grew */
  guint64 queued_seq;           /* frames queued (streaming thread) */
  guint64 completed_seq;        /* frames whose copies completed (lock) */

  /* memory:CUDAMemory (streaming thread): the GstCudaStream the memory
   * carries (1.24+, else NULL; made by caps_changed on the first
   * memory:CUDAMemory caps, freed at stop); without one (1.22) the
   * streaming thread waits for each frame's own copy before the frame
   * goes out (wait_copy) */
  gpointer gst_stream;
  gboolean wait_copy;
  /* what waiting for the copy adds (lock): the longest wait seen, rounded
   * up to a millisecond, answered in the LATENCY query; a LATENCY message
   * is posted when it grows */
  GstClockTime latency;

  /* stats (object lock) */
  /* (frames, bytes, pinned-copies, registrations: the base class's) */
  guint64 staged_copies, waits_full, inflight_max;
};

/* gstpinnedcudauploadframe.c, on the streaming thread with the context
 * pushed: @inbuf's copies queued into @outbuf (error posted on failure). */
GstFlowReturn gst_pinned_cuda_upload_frame (GstPinnedCudaUpload * self,
    GstBuffer * inbuf, GstBuffer * outbuf);

/* TRUE, or FALSE with the engine's sticky error posted. */
gboolean gst_pinned_cuda_upload_check_error (GstPinnedCudaUpload * self);

/* The 1.22 path: until frame @seq's copy completed; the latency grows to
 * the wait (a LATENCY message when it does). */
void gst_pinned_cuda_upload_wait_copy (GstPinnedCudaUpload * self, guint64 seq);

G_END_DECLS
#endif /* __GST_PINNED_CUDA_UPLOAD_PRIVATE_H__ */
