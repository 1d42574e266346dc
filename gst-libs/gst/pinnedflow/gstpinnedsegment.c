/* GStreamer pinnedflow: GLib face of pf_segment
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/pinnedflow/gstpinnedsegment.h>

#include <errno.h>

GST_DEBUG_CATEGORY_STATIC (gst_pinned_segment_debug);
#define GST_CAT_DEFAULT gst_pinned_segment_debug

static void
ensure_debug_category (void)
{
  static gsize done = 0;

  if (g_once_init_enter (&done)) {
    GST_DEBUG_CATEGORY_INIT (gst_pinned_segment_debug, "pinnedsegment", 0,
        "pinnedflow memfd segments (creation, import, lock/hugepage outcome)");
    g_once_init_leave (&done, 1);
  }
}

G_DEFINE_BOXED_TYPE (GstPinnedSegment, gst_pinned_segment,
    (GBoxedCopyFunc) pf_segment_ref, (GBoxedFreeFunc) pf_segment_unref);

/* GNU indent spaces the dashes out of the quark name: keep it away. */
/* *INDENT-OFF* */
G_DEFINE_QUARK (gst-pinned-segment-error-quark, gst_pinned_segment_error);
/* *INDENT-ON* */

GType
gst_pinned_segment_flags_get_type (void)
{
  static gsize type = 0;
  static const GFlagsValue values[] = {
    {GST_PINNED_SEGMENT_FLAG_HUGEPAGES, "Try huge pages, fall back",
        "hugepages"},
    {GST_PINNED_SEGMENT_FLAG_LOCK, "Try mlock(), fall back", "lock"},
    {GST_PINNED_SEGMENT_FLAG_SEAL_WRITERS,
          "Seal F_SEAL_FUTURE_WRITE: other mappings are read-only",
        "seal-writers"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_flags_register_static ("GstPinnedSegmentFlags", values);
    g_once_init_leave (&type, t);
  }
  return (GType) type;
}

gchar *
gst_pinned_segment_describe_state (guint state)
{
  GString *s = g_string_new (NULL);

#define ADD(bit, text) G_STMT_START { \
    if (state & (bit)) { \
      if (s->len) g_string_append (s, ", "); \
      g_string_append (s, text); \
    } } G_STMT_END
  ADD (PF_SEGMENT_STATE_IMPORTED, "imported");
  ADD (PF_SEGMENT_STATE_READONLY, "read-only");
  ADD (PF_SEGMENT_STATE_LOCKED, "locked");
  ADD (PF_SEGMENT_STATE_LOCK_REFUSED, "lock refused (unlocked)");
  ADD (PF_SEGMENT_STATE_HUGEPAGES, "hugepages");
  ADD (PF_SEGMENT_STATE_HUGEPAGES_REFUSED, "hugepages refused (normal pages)");
  ADD (PF_SEGMENT_STATE_WRITE_SEALED, "write-sealed");
#undef ADD
  if (s->len == 0)
    g_string_append (s, "plain");
  return g_string_free (s, FALSE);
}

static void
log_segment (GstPinnedSegment * seg, const gchar * what)
{
  guint state = pf_segment_get_state (seg);
  GstDebugLevel level = (state & PF_SEGMENT_STATE_LOCK_REFUSED) ?
      GST_LEVEL_WARNING : GST_LEVEL_INFO;
  gchar *desc;

  if (gst_debug_category_get_threshold (GST_CAT_DEFAULT) < level)
    return;
  desc = gst_pinned_segment_describe_state (state);
  if (state & PF_SEGMENT_STATE_LOCK_REFUSED)
    GST_WARNING ("%s segment %" G_GUINT64_FORMAT " fd %d size %"
        G_GUINT64_FORMAT " at %p: %s (mlock refused: RLIMIT_MEMLOCK or "
        "missing CAP_IPC_LOCK)", what, pf_segment_get_id (seg),
        pf_segment_get_fd (seg), pf_segment_get_size (seg),
        pf_segment_get_base (seg), desc);
  else
    GST_INFO ("%s segment %" G_GUINT64_FORMAT " fd %d size %"
        G_GUINT64_FORMAT " at %p: %s", what, pf_segment_get_id (seg),
        pf_segment_get_fd (seg), pf_segment_get_size (seg),
        pf_segment_get_base (seg), desc);
  g_free (desc);
}

GstPinnedSegment *
gst_pinned_segment_new_full (const gchar * name, gsize size,
    GstPinnedSegmentFlags flags, GError ** error)
{
  pf_segment *seg = NULL;
  int res;

  ensure_debug_category ();
  res = pf_segment_new (name ? name : "gst-pinnedflow", size, flags, &seg);
  if (res < 0) {
    GST_WARNING ("cannot create a segment of %" G_GSIZE_FORMAT " bytes: %s",
        size, g_strerror (-res));
    g_set_error (error, GST_PINNED_SEGMENT_ERROR,
        res == -EINVAL ? GST_PINNED_SEGMENT_ERROR_INVALID :
        GST_PINNED_SEGMENT_ERROR_FAILED,
        "Cannot create a pinned segment of %" G_GSIZE_FORMAT " bytes: %s",
        size, g_strerror (-res));
    return NULL;
  }
  log_segment (seg, "created");
  return seg;
}

GstPinnedSegment *
gst_pinned_segment_new (gsize size, GstPinnedSegmentFlags flags,
    GError ** error)
{
  return gst_pinned_segment_new_full (NULL, size, flags, error);
}

GstPinnedSegmentError
gst_pinned_segment_error_from_errno (int err)
{
  switch (err) {
    case -ENOTTY:
      return GST_PINNED_SEGMENT_ERROR_NOT_SEALABLE;
    case -EPERM:
      return GST_PINNED_SEGMENT_ERROR_NOT_SEALED;
    case -ERANGE:
      return GST_PINNED_SEGMENT_ERROR_TOO_SMALL;
    case -EBADF:
    case -EINVAL:
    case -EOVERFLOW:
      return GST_PINNED_SEGMENT_ERROR_INVALID;
    case -EACCES:
      return GST_PINNED_SEGMENT_ERROR_ACCESS;
    default:
      return GST_PINNED_SEGMENT_ERROR_FAILED;
  }
}

GstPinnedSegment *
gst_pinned_segment_import (gint fd, gsize size, gboolean writable,
    GError ** error)
{
  pf_segment *seg = NULL;
  int res;

  ensure_debug_category ();
  res = pf_segment_import (fd, size,
      writable ? PF_SEGMENT_IMPORT_WRITABLE : PF_SEGMENT_IMPORT_READONLY, &seg);
  if (res < 0) {
    GST_WARNING ("refused to import fd %d (%" G_GSIZE_FORMAT " bytes, %s): %s",
        fd, size, writable ? "writable" : "read-only",
        pf_segment_import_strerror (res));
    g_set_error (error, GST_PINNED_SEGMENT_ERROR,
        gst_pinned_segment_error_from_errno (res),
        "Cannot import fd %d as a %s segment of %" G_GSIZE_FORMAT
        " bytes: %s", fd, writable ? "writable" : "read-only", size,
        pf_segment_import_strerror (res));
    return NULL;
  }
  log_segment (seg, "imported");
  return seg;
}
