/* GStreamer pinnedflow CUDA: host registration of segments, once each
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A façade over libpinnedflow's registration cache
 * (pinnedflow/pf-cuda-registration.h): one registration per segment and
 * process, shared with pf_uploader and the node upload API, so an element
 * and a node in one process never register a segment twice.
 * GstPinnedCudaRegistration is pf_cuda_registration under its GLib-style
 * name (layouts asserted identical below). What this layer adds: the debug
 * log of each attempt, made by the call that made it.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/pinnedcuda/gstpinnedcudaregistration.h>

#include <gst/gst.h>
#include <pinnedflow/pf-cuda-registration.h>

GST_DEBUG_CATEGORY_STATIC (gst_pinned_cuda_registration_debug);
#define GST_CAT_DEFAULT gst_pinned_cuda_registration_debug

/* *INDENT-OFF* */
#define SAME_FIELD(f)                                                       \
  G_STATIC_ASSERT (G_STRUCT_OFFSET (GstPinnedCudaRegistration, f) ==        \
      G_STRUCT_OFFSET (pf_cuda_registration, f));                           \
  G_STATIC_ASSERT (sizeof (((GstPinnedCudaRegistration *) 0)->f) ==         \
      sizeof (((pf_cuda_registration *) 0)->f))
G_STATIC_ASSERT (sizeof (GstPinnedCudaRegistration) ==
    sizeof (pf_cuda_registration));
SAME_FIELD (rt);
SAME_FIELD (device_id);
SAME_FIELD (base);
SAME_FIELD (size);
SAME_FIELD (registered);
SAME_FIELD (readonly);
SAME_FIELD (error);
SAME_FIELD (reason);
/* *INDENT-ON* */

static void
hold_ref (void *data)
{
  gst_object_ref (data);
}

static void
hold_unref (void *data)
{
  gst_object_unref (data);
}

const GstPinnedCudaRegistration *
gst_pinned_cuda_segment_register_in (const GstPinnedCudaRuntime * rt,
    gint device_id, pf_segment * seg, GstObject * owner, gpointer cu_ctx,
    gboolean * created)
{
  static gsize init = 0;
  const pf_cuda_registration *reg;
  pf_cuda_context_hold hold = { cu_ctx, hold_ref, hold_unref, owner };
  int made = 0;

  if (g_once_init_enter (&init)) {
    GST_DEBUG_CATEGORY_INIT (gst_pinned_cuda_registration_debug,
        "pinnedcudaregister", 0, "pinnedflow CUDA host registration");
    g_once_init_leave (&init, 1);
  }
  if (owner == NULL) {
    hold.ref = NULL;
    hold.unref = NULL;
  }
  reg = pf_cuda_segment_register_in ((const pf_cuda_runtime *) rt, device_id,
      seg, cu_ctx ? &hold : NULL, &made);
  /* NULL only when calloc failed */
  g_assert (reg != NULL);
  if (made && reg->registered) {
    GST_INFO ("segment %" G_GUINT64_FORMAT ": registered %p + %"
        G_GSIZE_FORMAT "%s in %s context %p", pf_segment_get_id (seg),
        reg->base, reg->size, reg->readonly ? " read-only" : "",
        cu_ctx ? "the caller's" : "the current or primary", cu_ctx);
  } else if (made) {
    GST_WARNING ("segment %" G_GUINT64_FORMAT ": %p + %" G_GSIZE_FORMAT
        " not registered: %s (%s)", pf_segment_get_id (seg), reg->base,
        reg->size, reg->reason, rt->GetErrorString (reg->error));
  }
  if (created)
    *created = made != 0;
  return (const GstPinnedCudaRegistration *) reg;
}

const GstPinnedCudaRegistration *
gst_pinned_cuda_segment_register (const GstPinnedCudaRuntime * rt,
    gint device_id, pf_segment * seg, gboolean * created)
{
  return gst_pinned_cuda_segment_register_in (rt, device_id, seg, NULL, NULL,
      created);
}

gboolean
gst_pinned_cuda_registration_covers (const GstPinnedCudaRegistration * reg,
    const GstPinnedCudaRuntime * rt, const void *ptr, gsize len)
{
  return pf_cuda_registration_covers ((const pf_cuda_registration *) reg,
      (const pf_cuda_runtime *) rt, ptr, len) != 0;
}
