/* pinnedflow node API: received frames onto a CUDA device
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A consumer node hands a received pf_node_frame to a pf_uploader (the
 * engine pinnedcudaupload uses, pf-upload.h): the frame's segment is
 * registered once per process, its planes are copied by DMA on the
 * engine's stream into a device buffer of the engine's bounded pool, and
 * the node frame is released (pf_node_frame_release()) only when the
 * copy's event has completed. The caller gets a pf_device_frame with the
 * device pointers, pitch, plane layout and the event to wait on.
 *
 *   pf_uploader *up;
 *   pf_uploader_config cfg = { 0 };
 *   pf_uploader_new (&cfg, &up, NULL, 0);   // -ENOENT / -ENODEV: pf_cuda_runtime_error ()
 *   while (pf_node_consumer_next (c, -1, &f) == 1) {
 *     pf_device_frame *d;
 *     if (pf_node_frame_upload (up, f, -1, &d) < 0) { ... f still yours }
 *     // f now belongs to the engine: released after the copy
 *     cudaStreamWaitEvent (my_stream, d->event, 0); launch (d->data[0]...);
 *     ...
 *     pf_device_frame_release (d);
 *   }
 *
 * Frames without a video layout (layout.n_planes 0) are uploaded as one
 * plane of one row of size bytes. Frames in more than one chunk are
 * refused (-ENOTSUP).
 */
#ifndef __PF_NODE_CUDA_H__
#define __PF_NODE_CUDA_H__

#include <pinnedflow/pf-api.h>
#include <pinnedflow/pf-node.h>
#include <pinnedflow/pf-upload.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * pf_node_frame_upload:
 * @frame: a received frame; on success the engine owns it
 * @timeout_ms: for a free device buffer (-1 forever)
 * @out: (out): the device frame
 *
 * Returns: 0, -ENOTSUP (several chunks), -EINVAL, or
 * pf_uploader_upload()'s errors; on failure @frame is still the caller's.
 *
 * Since: 0.1
 */
PF_API int pf_node_frame_upload (pf_uploader * up, pf_node_frame * frame,
    int timeout_ms, pf_device_frame ** out);

/**
 * pf_node_frame_to_upload_source:
 *
 * Fills @src from @frame (planes from its layout, its segment); the
 * release callback is left NULL. Returns 0, -ENOTSUP, -EINVAL.
 *
 * Since: 0.1
 */
PF_API int pf_node_frame_to_upload_source (const pf_node_frame * frame,
    pf_upload_source * src);

/**
 * pf_node_frame_cuda_registered:
 *
 * 1 when the frame's segment is registered with CUDA in this process (its
 * host memory is pinned: a cudaMemcpyAsync from it is a DMA), else 0.
 * Loads nothing. The Python binding exports host frames as CPU memory
 * either way (kDLCPU, ARROW_DEVICE_CPU: most consumers refuse the CUDA
 * host types, and the answer must not change with unrelated uploads);
 * this is how a consumer that cares learns it, and may then ask for
 * kDLCUDAHost (pf_dlpack_desc_from_frame()).
 *
 * Since: 0.1
 */
PF_API int pf_node_frame_cuda_registered (const pf_node_frame * frame);

#ifdef __cplusplus
}
#endif
#endif /* __PF_NODE_CUDA_H__ */
