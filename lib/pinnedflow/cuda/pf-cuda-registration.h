/* pinnedflow: CUDA host registration of segments, once each per process
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * cudaHostRegister is per process and per mapping, and costs about 0.1-0.5 s
 * per GB: a segment is registered once, off the per-frame path, and the
 * outcome is cached on the segment (pf_segment_attach_once()) whatever it
 * is, so a segment that cannot be registered is not retried per frame.
 * Every user in the process (the GStreamer elements through
 * gst_pinned_cuda_segment_register(), the node upload API, pf_uploader)
 * shares that one cache: a segment is never registered twice.
 *
 * Teardown: cudaHostUnregister() runs in the attachment's destroy notify
 * when the segment dies, before it is unmapped (pf_segment_unref()), with
 * the registering context pushed on whatever thread that is. Users
 * wait for their copies from the segment before they drop their reference.
 *
 * Context: a registration belongs to the context current when it was made
 * and dies with it (cudaHostRegisterPortable only makes the pages pinned
 * for every other context meanwhile). So a registration holds the context
 * it was made in for as long as the segment lives: the caller's
 * (pf_cuda_segment_register_in(): e.g. the pipeline's GstCudaContext, with
 * a reference on it), else the context current on the calling thread
 * (whose owner must keep it alive as long as the segment), else the
 * device's primary context, retained (cuDevicePrimaryCtxRetain); the
 * context is pushed for the register and the unregister. Without the
 * driver's calls (or where the primary context cannot be had:
 * EXCLUSIVE_PROCESS with another context alive) it is made as cudart
 * would, in the primary context made current with cudaSetDevice.
 *
 * Lifecycle: the registration belongs to the segment (no free).
 */
#ifndef __PF_CUDA_REGISTRATION_H__
#define __PF_CUDA_REGISTRATION_H__

#include <stddef.h>

#include <pinnedflow/pf-api.h>
#include <pinnedflow/pf-cuda.h>
#include <pinnedflow/pf-segment.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * pf_cuda_registration:
 *
 * Layout fixed: libgstpinnedflowcuda's GstPinnedCudaRegistration is the
 * same struct.
 *
 * Since: 0.1
 */
typedef struct {
  const pf_cuda_runtime *rt;
  int device_id;
  void *base;
  size_t size;
  int registered;               /* usable for DMA */
  int readonly;                 /* registered with cudaHostRegisterReadOnly */
  pf_cuda_error error;          /* cudaHostRegister's error when not */
  const char *reason;           /* why not registered, or NULL */
} pf_cuda_registration;

/**
 * pf_cuda_segment_register:
 * @created: (out) (optional): 1 when this call made the attempt
 *
 * Returns the registration of @seg (NULL only when out of memory). Flags
 * cudaHostRegisterPortable. Read-only mappings (PF_SEGMENT_STATE_READONLY)
 * are registered with cudaHostRegisterReadOnly where
 * cudaDevAttrHostRegisterReadOnlySupported is set on @device_id, and not
 * at all where it is not (callers stage those copies). A failed
 * cudaHostRegister leaves nothing in the thread's last-error slot.
 *
 * Since: 0.1
 */
PF_API const pf_cuda_registration *pf_cuda_segment_register (const
    pf_cuda_runtime * rt, int device_id, pf_segment * seg, int *created);

/**
 * pf_cuda_context_hold:
 * @ctx: the CUcontext to register in (pushed for the register and the
 *   unregister)
 * @ref: (nullable): called on @data once, when a registration keeps @ctx
 * @unref: (nullable): called on @data when that registration dies (after
 *   cudaHostUnregister)
 *
 * What keeps @ctx alive while the registration lives.
 *
 * Since: 0.1
 */
typedef struct {
  void *ctx;
  void (*ref) (void *data);
  void (*unref) (void *data);
  void *data;
} pf_cuda_context_hold;

/**
 * pf_cuda_segment_register_in:
 * @hold: (nullable): the context to register in and what keeps it alive;
 *   NULL: as pf_cuda_segment_register()
 *
 * pf_cuda_segment_register() in the context @hold gives, when this call
 * makes the registration (an existing one is returned as it is: portable,
 * it serves every context).
 *
 * Since: 0.1
 */
PF_API const pf_cuda_registration *pf_cuda_segment_register_in (const
    pf_cuda_runtime * rt, int device_id, pf_segment * seg,
    const pf_cuda_context_hold * hold, int *created);

/**
 * pf_cuda_segment_get_registration:
 *
 * The registration of @seg made earlier in this process, or NULL (nothing
 * is attempted).
 *
 * Since: 0.1
 */
PF_API const pf_cuda_registration *pf_cuda_segment_get_registration
    (pf_segment * seg);

/* 1 when [ptr, ptr + len) lies inside a usable registration of @seg made
 * with @rt.
 * Since: 0.1
 */
PF_API int pf_cuda_registration_covers (const pf_cuda_registration * reg,
    const pf_cuda_runtime * rt, const void *ptr, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* __PF_CUDA_REGISTRATION_H__ */
