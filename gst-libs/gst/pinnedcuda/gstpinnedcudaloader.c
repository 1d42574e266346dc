/* GStreamer pinnedflow CUDA: the CUDA runtime, opened at run time
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A façade over libpinnedflow's plain-C loader (pf-cuda.h): one loader per
 * process, whoever asks (the elements, the node upload API, pf_uploader).
 * GstPinnedCudaRuntime is pf_cuda_runtime under its GLib-style name; the
 * asserts below keep the two layouts identical, so a table is handed out
 * as it is. Errors become GErrors of GST_PINNED_CUDA_RUNTIME_ERROR with
 * the plain-C layer's message.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/pinnedcuda/gstpinnedcudaloader.h>

#include <errno.h>
#include <pinnedflow/pf-cuda.h>

/* GNU indent spaces the dashes out of the quark name: keep it away.
 * The asserts below tie pf-cuda.h to this header, whose values and
 * function types tests/cuda/check-cuda-abi.c compares with the real
 * cuda_runtime_api.h where the toolkit is installed. */
/* *INDENT-OFF* */
G_DEFINE_QUARK (gst-pinned-cuda-runtime-error-quark, gst_pinned_cuda_runtime_error);

#define SAME_FIELD(f)                                                       \
  G_STATIC_ASSERT (G_STRUCT_OFFSET (GstPinnedCudaRuntime, f) ==             \
      G_STRUCT_OFFSET (pf_cuda_runtime, f));                                \
  G_STATIC_ASSERT (sizeof (((GstPinnedCudaRuntime *) 0)->f) ==              \
      sizeof (((pf_cuda_runtime *) 0)->f))
G_STATIC_ASSERT (sizeof (GstPinnedCudaRuntime) == sizeof (pf_cuda_runtime));
SAME_FIELD (library);
SAME_FIELD (key);
SAME_FIELD (runtime_version);
SAME_FIELD (GetErrorString);
SAME_FIELD (GetErrorName);
SAME_FIELD (RuntimeGetVersion);
SAME_FIELD (DriverGetVersion);
SAME_FIELD (GetDeviceCount);
SAME_FIELD (SetDevice);
SAME_FIELD (GetDevice);
SAME_FIELD (DeviceGetAttribute);
SAME_FIELD (StreamCreateWithFlags);
SAME_FIELD (StreamDestroy);
SAME_FIELD (StreamSynchronize);
SAME_FIELD (StreamWaitEvent);
SAME_FIELD (EventCreateWithFlags);
SAME_FIELD (EventDestroy);
SAME_FIELD (EventRecord);
SAME_FIELD (EventQuery);
SAME_FIELD (EventSynchronize);
SAME_FIELD (MallocPitch);
SAME_FIELD (Free);
SAME_FIELD (Memcpy2D);
SAME_FIELD (Memcpy2DAsync);
SAME_FIELD (HostRegister);
SAME_FIELD (HostUnregister);
SAME_FIELD (GetLastError);
SAME_FIELD (PeekAtLastError);
SAME_FIELD (CtxGetCurrent);
SAME_FIELD (CtxSetCurrent);
SAME_FIELD (CtxPushCurrent);
SAME_FIELD (CtxPopCurrent);
SAME_FIELD (DevicePrimaryCtxRetain);
SAME_FIELD (DevicePrimaryCtxRelease);
G_STATIC_ASSERT (GST_PINNED_CUDA_CONTEXT_PUSHED == PF_CUDA_CONTEXT_PUSHED);
G_STATIC_ASSERT (GST_PINNED_CUDA_DEVICE_NO_CONTEXT == PF_CUDA_DEVICE_NO_CONTEXT);
G_STATIC_ASSERT (GST_PINNED_CUDA_SUCCESS == PF_CUDA_SUCCESS);
G_STATIC_ASSERT (GST_PINNED_CUDA_ERROR_NOT_READY == PF_CUDA_ERROR_NOT_READY);
G_STATIC_ASSERT (GST_PINNED_CUDA_ERROR_INVALID_VALUE == PF_CUDA_ERROR_INVALID_VALUE);
G_STATIC_ASSERT (GST_PINNED_CUDA_ERROR_MEMORY_ALLOCATION == PF_CUDA_ERROR_MEMORY_ALLOCATION);
G_STATIC_ASSERT (GST_PINNED_CUDA_ERROR_INSUFFICIENT_DRIVER == PF_CUDA_ERROR_INSUFFICIENT_DRIVER);
G_STATIC_ASSERT (GST_PINNED_CUDA_ERROR_NO_DEVICE == PF_CUDA_ERROR_NO_DEVICE);
G_STATIC_ASSERT (GST_PINNED_CUDA_ERROR_NOT_SUPPORTED == PF_CUDA_ERROR_NOT_SUPPORTED);
G_STATIC_ASSERT (GST_PINNED_CUDA_HOST_REGISTER_PORTABLE == PF_CUDA_HOST_REGISTER_PORTABLE);
G_STATIC_ASSERT (GST_PINNED_CUDA_HOST_REGISTER_READ_ONLY == PF_CUDA_HOST_REGISTER_READ_ONLY);
G_STATIC_ASSERT (GST_PINNED_CUDA_STREAM_NON_BLOCKING == PF_CUDA_STREAM_NON_BLOCKING);
G_STATIC_ASSERT (GST_PINNED_CUDA_EVENT_BLOCKING_SYNC == PF_CUDA_EVENT_BLOCKING_SYNC);
G_STATIC_ASSERT (GST_PINNED_CUDA_EVENT_DISABLE_TIMING == PF_CUDA_EVENT_DISABLE_TIMING);
G_STATIC_ASSERT (GST_PINNED_CUDA_MEMCPY_HOST_TO_DEVICE == PF_CUDA_MEMCPY_HOST_TO_DEVICE);
G_STATIC_ASSERT (GST_PINNED_CUDA_MEMCPY_DEVICE_TO_HOST == PF_CUDA_MEMCPY_DEVICE_TO_HOST);
G_STATIC_ASSERT (GST_PINNED_CUDA_DEV_ATTR_HOST_REGISTER_SUPPORTED == PF_CUDA_DEV_ATTR_HOST_REGISTER_SUPPORTED);
G_STATIC_ASSERT (GST_PINNED_CUDA_DEV_ATTR_HOST_REGISTER_READ_ONLY_SUPPORTED == PF_CUDA_DEV_ATTR_HOST_REGISTER_READ_ONLY_SUPPORTED);
/* *INDENT-ON* */

static gint
error_code (int res)
{
  switch (res) {
    case -ENOSYS:
      return GST_PINNED_CUDA_RUNTIME_ERROR_SYMBOL;
    case -ENODEV:
      return GST_PINNED_CUDA_RUNTIME_ERROR_NO_DEVICE;
    case -EIO:
      return GST_PINNED_CUDA_RUNTIME_ERROR_CALL;
    default:
      return GST_PINNED_CUDA_RUNTIME_ERROR_NOT_FOUND;
  }
}

/* The façade's answer to one of pf-cuda's three lookups: the runtime, or
 * NULL with @error set from the negative errno and its reason (the calling
 * thread's pf_cuda_runtime_error ()). */
static const GstPinnedCudaRuntime *
runtime_result (int res, const pf_cuda_runtime * rt, GError ** error)
{
  if (res < 0) {
    g_set_error_literal (error, GST_PINNED_CUDA_RUNTIME_ERROR,
        error_code (res), pf_cuda_runtime_error ());
    return NULL;
  }
  return (const GstPinnedCudaRuntime *) rt;
}

const GstPinnedCudaRuntime *
gst_pinned_cuda_runtime_get (GError ** error)
{
  const pf_cuda_runtime *rt = NULL;
  int res = pf_cuda_runtime_get (&rt, NULL, 0);

  return runtime_result (res, rt, error);
}

const GstPinnedCudaRuntime *
gst_pinned_cuda_runtime_open_device (int device_id, GError ** error)
{
  const pf_cuda_runtime *rt = NULL;
  int res = pf_cuda_runtime_open_device (device_id, &rt, NULL, 0);

  return runtime_result (res, rt, error);
}

const GstPinnedCudaRuntime *
gst_pinned_cuda_runtime_find_device (int device_id, GError ** error)
{
  const pf_cuda_runtime *rt = NULL;
  int res = pf_cuda_runtime_find_device (device_id, &rt, NULL, 0);

  return runtime_result (res, rt, error);
}

gchar *
gst_pinned_cuda_error_describe (const GstPinnedCudaRuntime * rt,
    GstPinnedCudaError err)
{
  gchar buf[256];

  return g_strdup (pf_cuda_error_describe ((const pf_cuda_runtime *) rt,
          (pf_cuda_error) err, buf, sizeof (buf)));
}

int
gst_pinned_cuda_device_enter (const GstPinnedCudaRuntime * rt, int device_id)
{
  return pf_cuda_device_enter ((const pf_cuda_runtime *) rt, device_id);
}

void
gst_pinned_cuda_device_leave (const GstPinnedCudaRuntime * rt, int device_id,
    int previous)
{
  pf_cuda_device_leave ((const pf_cuda_runtime *) rt, device_id, previous);
}

int
gst_pinned_cuda_context_push_enter (const GstPinnedCudaRuntime * rt,
    int device_id, gpointer cu_ctx)
{
  return pf_cuda_context_enter ((const pf_cuda_runtime *) rt, device_id,
      cu_ctx);
}

gboolean
gst_pinned_cuda_take_last_error (const GstPinnedCudaRuntime * rt)
{
  return pf_cuda_take_last_error ((const pf_cuda_runtime *) rt) != 0;
}
