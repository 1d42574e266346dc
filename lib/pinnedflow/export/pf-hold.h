/* pinnedflow: a shared hold on a frame for its borrowers, plain C
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A frame lent out to other code (a DLPack tensor in numpy or PyTorch, an
 * Arrow array, a Python memoryview) must go back to its producer only when
 * the last of its borrowers is done with it, whatever their order. A
 * pf_hold is that count: it owns one frame (any object with a release
 * function: a pf_node_frame, a device frame) and calls the release function
 * exactly once, when its last reference goes.
 *
 * Lifecycle: refcounted (pf_hold_new(), then pf_hold_ref/_unref).
 *
 * Threading: every function may be called from any thread; the release
 * function runs on the thread that dropped the last reference, so it must
 * be thread-safe (pf_node_frame_release() is).
 */
#ifndef __PF_HOLD_H__
#define __PF_HOLD_H__

#include <pinnedflow/pf-api.h>
#include <pinnedflow/pf-node.h>
#include <pinnedflow/pf-node-cuda.h>
#include <pinnedflow/pf-upload.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Since: 0.1 */
typedef struct pf_hold pf_hold;

/* Gives @data back (its return value, if any, is the caller's to ignore).
 * Since: 0.1
 */
typedef void (*pf_hold_release_func) (void *data);

/**
 * pf_hold_new:
 * @data: what the hold owns
 * @release: called with @data once, when the last reference goes
 *
 * Returns: a hold with one reference, or NULL (out of memory: @data is then
 * still the caller's, nothing was released).
 *
 * Since: 0.1
 */
PF_API pf_hold *pf_hold_new (void *data, pf_hold_release_func release);

/**
 * pf_hold_new_node_frame:
 *
 * A hold that owns @frame and gives it back with pf_node_frame_release().
 * NULL when out of memory (the frame is then still the caller's).
 *
 * Since: 0.1
 */
PF_API pf_hold *pf_hold_new_node_frame (pf_node_frame * frame);

/**
 * pf_hold_new_device_frame:
 *
 * A hold that owns @frame (from pf_uploader_upload()) and gives it back to
 * its pool with pf_device_frame_release(). NULL when out of memory.
 *
 * Since: 0.1
 */
PF_API pf_hold *pf_hold_new_device_frame (pf_device_frame * frame);

/**
 * pf_hold_new_segment:
 *
 * A hold that owns one reference of @seg (taken here), dropped with
 * pf_segment_unref() by the last reference: what a view into a node
 * producer's slot (a loan of a device producer lent as a DLPack tensor)
 * keeps alive, so that its memory stays mapped while the view lives. NULL
 * when out of memory or @seg is NULL (no reference taken then).
 *
 * Since: 0.1
 */
PF_API pf_hold *pf_hold_new_segment (pf_segment * seg);

/* Since: 0.1 */
PF_API pf_hold *pf_hold_ref (pf_hold * hold);

/**
 * pf_hold_unref:
 *
 * Drops a reference; the last one releases the data and frees the hold.
 * NULL is ignored.
 *
 * Since: 0.1
 */
PF_API void pf_hold_unref (pf_hold * hold);

/**
 * pf_hold_upload_release:
 * @hold: (type pf_hold *): the hold, as a pf_upload_source's release_data
 *
 * A #pf_upload_release_func that drops one reference of @hold: an upload
 * borrows the host frame until its copy completed, like any other
 * borrower. @status is not looked at (a failed copy is reported by the
 * engine).
 *
 * Since: 0.1
 */
PF_API void pf_hold_upload_release (void *hold, int status);

/**
 * pf_hold_upload_node_frame:
 * @hold: a hold from pf_hold_new_node_frame()
 * @timeout_ms: for a free device buffer (-1 forever)
 * @out: (out): the device frame
 *
 * pf_node_frame_upload() for a frame that has other borrowers: the upload
 * takes a reference of @hold, dropped when its copy completed
 * (pf_hold_upload_release()), instead of owning the frame; the frame goes
 * back to its producer when the copy and every other borrower are done.
 *
 * Returns: 0, or pf_uploader_upload()'s and
 * pf_node_frame_to_upload_source()'s errors (then nothing was taken).
 *
 * Since: 0.1
 */
PF_API int pf_hold_upload_node_frame (pf_uploader * up, pf_hold * hold,
    int timeout_ms, pf_device_frame ** out);

/**
 * pf_hold_get_data:
 *
 * Returns: the data the hold owns (valid while a reference is held).
 *
 * Since: 0.1
 */
PF_API void *pf_hold_get_data (const pf_hold * hold);

/**
 * pf_hold_get_refcount:
 *
 * Returns: the references now held (for tests and leak checks).
 *
 * Since: 0.1
 */
PF_API int pf_hold_get_refcount (const pf_hold * hold);

/**
 * pf_hold_count_live:
 *
 * Returns: how many holds exist in this process (for tests: 0 once every
 * borrower of every frame is gone).
 *
 * Since: 0.1
 */
PF_API int pf_hold_count_live (void);

#ifdef __cplusplus
}
#endif
#endif /* __PF_HOLD_H__ */
