/* GStreamer pinnedflow CUDA: host registration of segments, once each
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/pinnedcuda/gstpinnedcudaregistration.h>

#include <gst/gst.h>

GST_DEBUG_CATEGORY_STATIC (gst_pinned_cuda_registration_debug);
#define GST_CAT_DEFAULT gst_pinned_cuda_registration_debug

/* The attachment key: one registration per segment per process. */
static const char registration_key = 0;

typedef struct
{
  const GstPinnedCudaRuntime *rt;
  gint device_id;
  gboolean created;
} CreateArgs;

static void *
registration_create (pf_segment * seg, void *user_data, int *err_out)
{
  CreateArgs *args = user_data;
  const GstPinnedCudaRuntime *rt = args->rt;
  GstPinnedCudaRegistration *reg = g_new0 (GstPinnedCudaRegistration, 1);
  unsigned int flags = GST_PINNED_CUDA_HOST_REGISTER_PORTABLE;
  GstPinnedCudaError err;
  int supported = 0, prev;

  args->created = TRUE;
  reg->rt = rt;
  reg->device_id = args->device_id;
  reg->base = pf_segment_get_base (seg);
  reg->size = pf_segment_get_size (seg);

  if (pf_segment_get_state (seg) & PF_SEGMENT_STATE_READONLY) {
    err = rt->DeviceGetAttribute (&supported,
        GST_PINNED_CUDA_DEV_ATTR_HOST_REGISTER_READ_ONLY_SUPPORTED,
        args->device_id);
    if (err != GST_PINNED_CUDA_SUCCESS || !supported) {
      reg->error = err;
      reg->reason = "read-only mapping and the device does not support "
          "cudaHostRegisterReadOnly (cudaDevAttrHostRegisterReadOnlySupported"
          " is 0): copies from it are staged";
      GST_WARNING ("segment %" G_GUINT64_FORMAT ": %s",
          pf_segment_get_id (seg), reg->reason);
      return reg;
    }
    flags |= GST_PINNED_CUDA_HOST_REGISTER_READ_ONLY;
    reg->readonly = TRUE;
  }

  prev = gst_pinned_cuda_device_enter (rt, args->device_id);
  err = rt->HostRegister (reg->base, reg->size, flags);
  /* Handled (copies are staged): leave nothing in this thread's last-error
   * slot for CUDA code that runs on it after us. */
  if (err != GST_PINNED_CUDA_SUCCESS)
    gst_pinned_cuda_take_last_error (rt);
  gst_pinned_cuda_device_leave (rt, args->device_id, prev);
  if (err != GST_PINNED_CUDA_SUCCESS) {
    reg->error = err;
    reg->readonly = FALSE;
    reg->reason = "cudaHostRegister failed: copies from it are staged";
    GST_WARNING ("segment %" G_GUINT64_FORMAT ": cudaHostRegister (%p, %"
        G_GSIZE_FORMAT ", 0x%x) failed: %s", pf_segment_get_id (seg),
        reg->base, reg->size, flags, rt->GetErrorString (err));
    return reg;
  }
  reg->registered = TRUE;
  GST_INFO ("segment %" G_GUINT64_FORMAT ": registered %p + %" G_GSIZE_FORMAT
      "%s", pf_segment_get_id (seg), reg->base, reg->size,
      reg->readonly ? " read-only" : "");
  return reg;
}

/* Runs when the segment dies, before munmap. Copies from it were waited
 * for by their users before they released the segment's memory. */
static void
registration_destroy (void *data)
{
  GstPinnedCudaRegistration *reg = data;
  const GstPinnedCudaRuntime *rt = reg->rt;
  GstPinnedCudaError err;
  int prev;

  if (reg->registered) {
    /* The last unref of a segment can come from any thread. */
    prev = gst_pinned_cuda_device_enter (rt, reg->device_id);
    err = rt->HostUnregister (reg->base);
    if (err != GST_PINNED_CUDA_SUCCESS)
      GST_ERROR ("cudaHostUnregister (%p) failed: %s", reg->base,
          rt->GetErrorString (err));
    else
      GST_INFO ("unregistered %p", reg->base);
    gst_pinned_cuda_device_leave (rt, reg->device_id, prev);
  }
  g_free (reg);
}

const GstPinnedCudaRegistration *
gst_pinned_cuda_segment_register (const GstPinnedCudaRuntime * rt,
    gint device_id, pf_segment * seg, gboolean * created)
{
  static gsize init = 0;
  CreateArgs args = { rt, device_id, FALSE };
  GstPinnedCudaRegistration *reg;
  int err = 0;

  if (g_once_init_enter (&init)) {
    GST_DEBUG_CATEGORY_INIT (gst_pinned_cuda_registration_debug,
        "pinnedcudaregister", 0, "pinnedflow CUDA host registration");
    g_once_init_leave (&init, 1);
  }
  reg = pf_segment_attach_once (seg, &registration_key, registration_create,
      &args, registration_destroy, &err);
  /* create never fails; only an allocation failure inside attach could. */
  g_assert (reg != NULL);
  if (created)
    *created = args.created;
  return reg;
}

gboolean
gst_pinned_cuda_registration_covers (const GstPinnedCudaRegistration * reg,
    const GstPinnedCudaRuntime * rt, const void *ptr, gsize len)
{
  const guint8 *p = ptr, *base = reg->base;

  return reg->registered && reg->rt == rt && p >= base &&
      (gsize) (p - base) <= reg->size && len <= reg->size - (gsize) (p - base);
}
