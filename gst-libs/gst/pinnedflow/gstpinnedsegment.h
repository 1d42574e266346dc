/* GStreamer pinnedflow: GLib face of pf_segment
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef __GST_PINNED_SEGMENT_H__
#define __GST_PINNED_SEGMENT_H__

#include <gst/gst.h>
#include <gst/pinnedflow/pinnedflow-prelude.h>
#include <pinnedflow/pf-segment.h>

G_BEGIN_DECLS

/**
 * GstPinnedSegment:
 *
 * A sealed memfd, its size and its single mapping; see pf-segment.h. This is
 * the same object as #pf_segment, given a boxed #GType and #GError-returning
 * constructors. Reference counting is pf_segment_ref()/pf_segment_unref().
 *
 * Since: 0.1
 */
typedef struct pf_segment GstPinnedSegment;

#define GST_TYPE_PINNED_SEGMENT (gst_pinned_segment_get_type ())
/**
 * gst_pinned_segment_get_type:
 *
 * Returns: the boxed #GType of #GstPinnedSegment (copy = ref, free = unref).
 *
 * Since: 0.1
 */
GST_PINNEDFLOW_API GType gst_pinned_segment_get_type (void);

/**
 * GstPinnedSegmentFlags:
 * @GST_PINNED_SEGMENT_FLAG_NONE: plain pages, not locked
 * @GST_PINNED_SEGMENT_FLAG_HUGEPAGES: try huge pages, fall back
 * @GST_PINNED_SEGMENT_FLAG_LOCK: try mlock(), fall back
 * @GST_PINNED_SEGMENT_FLAG_SEAL_WRITERS: later mappings are read-only
 *
 * Since: 0.1
 */
typedef enum
{
  GST_PINNED_SEGMENT_FLAG_NONE = 0,
  GST_PINNED_SEGMENT_FLAG_HUGEPAGES = PF_SEGMENT_FLAG_HUGEPAGES,
  GST_PINNED_SEGMENT_FLAG_LOCK = PF_SEGMENT_FLAG_LOCK,
  GST_PINNED_SEGMENT_FLAG_SEAL_WRITERS = PF_SEGMENT_FLAG_SEAL_WRITERS,
} GstPinnedSegmentFlags;

#define GST_PINNED_SEGMENT_ERROR (gst_pinned_segment_error_quark ())
/**
 * gst_pinned_segment_error_quark:
 *
 * Returns: the #GError domain of #GstPinnedSegmentError.
 *
 * Since: 0.1
 */
GST_PINNEDFLOW_API GQuark gst_pinned_segment_error_quark (void);

/**
 * GstPinnedSegmentError:
 * @GST_PINNED_SEGMENT_ERROR_FAILED: creation failed (system error)
 * @GST_PINNED_SEGMENT_ERROR_NOT_SEALABLE: the fd is not a memfd
 * @GST_PINNED_SEGMENT_ERROR_NOT_SEALED: SHRINK/GROW seals missing
 * @GST_PINNED_SEGMENT_ERROR_TOO_SMALL: the file is smaller than claimed
 * @GST_PINNED_SEGMENT_ERROR_INVALID: bad fd or bad size
 * @GST_PINNED_SEGMENT_ERROR_ACCESS: writable import of a write-sealed memfd
 *
 * Since: 0.1
 */
typedef enum
{
  GST_PINNED_SEGMENT_ERROR_FAILED,
  GST_PINNED_SEGMENT_ERROR_NOT_SEALABLE,
  GST_PINNED_SEGMENT_ERROR_NOT_SEALED,
  GST_PINNED_SEGMENT_ERROR_TOO_SMALL,
  GST_PINNED_SEGMENT_ERROR_INVALID,
  GST_PINNED_SEGMENT_ERROR_ACCESS,
} GstPinnedSegmentError;

#define GST_TYPE_PINNED_SEGMENT_FLAGS (gst_pinned_segment_flags_get_type ())
/**
 * gst_pinned_segment_flags_get_type:
 *
 * Returns: the flags #GType of #GstPinnedSegmentFlags.
 *
 * Since: 0.1
 */
GST_PINNEDFLOW_API GType gst_pinned_segment_flags_get_type (void);

/**
 * gst_pinned_segment_new:
 * @size: requested size, rounded up to the page (or huge page) size
 * @flags: what to try; each of hugepages and mlock falls back cleanly and
 *   the outcome is in pf_segment_get_state() and the `pinnedsegment` log
 *
 * Returns: (transfer full) (nullable): a new segment, or NULL with
 * GST_PINNED_SEGMENT_ERROR_FAILED set.
 *
 * Since: 0.1
 */
GST_PINNEDFLOW_API GstPinnedSegment *gst_pinned_segment_new (gsize size,
    GstPinnedSegmentFlags flags, GError ** error);

/**
 * gst_pinned_segment_new_full:
 * @name: (nullable): name of the memfd, shown as /memfd:NAME in
 *   /proc/PID/maps
 * @size: requested size, rounded up to the page (or huge page) size
 * @flags: as for gst_pinned_segment_new()
 * @error: return location for a #GError
 *
 * gst_pinned_segment_new() with a name.
 *
 * Returns: (transfer full) (nullable): a new segment, or NULL with @error set.
 *
 * Since: 0.1
 */
GST_PINNEDFLOW_API GstPinnedSegment *gst_pinned_segment_new_full (const gchar * name,
    gsize size, GstPinnedSegmentFlags flags, GError ** error);

/**
 * gst_pinned_segment_error_from_errno:
 * @err: a pf_segment_import() result (negative errno)
 *
 * Returns: the #GstPinnedSegmentError for @err (-ENOTTY: NOT_SEALABLE,
 * -EPERM: NOT_SEALED, -ERANGE: TOO_SMALL, -EBADF/-EINVAL/-EOVERFLOW: INVALID,
 * -EACCES: ACCESS, anything else: FAILED).
 *
 * Since: 0.1
 */
GST_PINNEDFLOW_API GstPinnedSegmentError gst_pinned_segment_error_from_errno (int err);

/**
 * gst_pinned_segment_describe_state:
 * @state: pf_segment_get_state() bits
 *
 * Returns: (transfer full): e.g. "locked, hugepages refused, write-sealed"
 *
 * Since: 0.1
 */
GST_PINNEDFLOW_API gchar *gst_pinned_segment_describe_state (guint state);

/**
 * gst_pinned_segment_import:
 * @fd: a received file descriptor
 * @size: the size the peer claims; the mapping covers [0, @size)
 * @writable: map read-write (refused for a write-sealed memfd) instead of
 *   read-only
 * @error: return location for a #GError
 *
 * pf_segment_import(): @fd must be a memfd sealed F_SEAL_SHRINK |
 * F_SEAL_GROW whose size covers @size (overflow-checked) before it is
 * mapped. On success the segment owns @fd; on failure @fd is left open and
 * @error says which rule was broken (#GstPinnedSegmentError).
 *
 * Returns: (transfer full) (nullable): the segment, or NULL with @error set.
 *
 * Since: 0.1
 */
GST_PINNEDFLOW_API GstPinnedSegment *gst_pinned_segment_import (gint fd, gsize size,
    gboolean writable, GError ** error);

G_END_DECLS
#endif /* __GST_PINNED_SEGMENT_H__ */
