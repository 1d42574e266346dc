/* GStreamer pinnedflow CUDA: the CUDA runtime, opened at run time
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/pinnedcuda/gstpinnedcudaloader.h>

#include <dlfcn.h>
#include <string.h>

#define ENV_CUDART "GST_PINNEDFLOW_CUDART"

/* GNU indent spaces the dashes out of the quark name: keep it away. */
/* *INDENT-OFF* */
G_DEFINE_QUARK (gst-pinned-cuda-runtime-error-quark, gst_pinned_cuda_runtime_error);
/* *INDENT-ON* */

/* Most recent first. Bare names go through the dynamic linker's search
 * path; the toolkit's default directories are tried after it. */
static const gchar *default_names[] = {
  "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so",
};

static const gchar *default_dirs[] = {
  "/usr/local/cuda/lib64", "/usr/local/cuda/lib",
};

static GMutex lock;
/* Every runtime opened so far (never freed: see the header). */
static GSList *opened;

static const GstPinnedCudaRuntime *
find_opened (const gchar * key)
{
  GSList *l;

  for (l = opened; l != NULL; l = l->next) {
    GstPinnedCudaRuntime *rt = l->data;
    if (g_strcmp0 (rt->key, key) == 0)
      return rt;
  }
  return NULL;
}

static GstPinnedCudaRuntime *
load_symbols (void *handle, const gchar * library, GString * why)
{
  GstPinnedCudaRuntime *rt = g_new0 (GstPinnedCudaRuntime, 1);
  const gchar *missing = NULL;

#define LOAD(field) G_STMT_START {                              \
    *(void **) (&rt->field) = dlsym (handle, "cuda" #field);    \
    if (rt->field == NULL && missing == NULL)                   \
      missing = "cuda" #field;                                  \
  } G_STMT_END

  LOAD (GetErrorString);
  LOAD (GetErrorName);
  LOAD (RuntimeGetVersion);
  LOAD (DriverGetVersion);
  LOAD (GetDeviceCount);
  LOAD (SetDevice);
  LOAD (GetDevice);
  LOAD (DeviceGetAttribute);
  LOAD (StreamCreateWithFlags);
  LOAD (StreamDestroy);
  LOAD (StreamSynchronize);
  LOAD (StreamWaitEvent);
  LOAD (EventCreateWithFlags);
  LOAD (EventDestroy);
  LOAD (EventRecord);
  LOAD (EventQuery);
  LOAD (EventSynchronize);
  LOAD (MallocPitch);
  LOAD (Free);
  LOAD (Memcpy2D);
  LOAD (Memcpy2DAsync);
  LOAD (HostRegister);
  LOAD (HostUnregister);
  LOAD (GetLastError);
  LOAD (PeekAtLastError);
#undef LOAD

  if (missing != NULL) {
    g_string_append_printf (why, "%s: symbol %s missing; ", library, missing);
    g_free (rt);
    return NULL;
  }
  /* Optional: the driver's context save/restore. The emulator exports
   * them itself; the real runtime loads libcuda.so.1, which has them. */
  *(void **) (&rt->CtxGetCurrent) = dlsym (handle, "cuCtxGetCurrent");
  *(void **) (&rt->CtxSetCurrent) = dlsym (handle, "cuCtxSetCurrent");
  if (rt->CtxGetCurrent == NULL || rt->CtxSetCurrent == NULL) {
    void *driver = dlopen ("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    rt->CtxGetCurrent = NULL;
    rt->CtxSetCurrent = NULL;
    if (driver != NULL) {
      *(void **) (&rt->CtxGetCurrent) = dlsym (driver, "cuCtxGetCurrent");
      *(void **) (&rt->CtxSetCurrent) = dlsym (driver, "cuCtxSetCurrent");
      if (rt->CtxGetCurrent == NULL || rt->CtxSetCurrent == NULL) {
        rt->CtxGetCurrent = NULL;
        rt->CtxSetCurrent = NULL;
        dlclose (driver);
      }
      /* else kept open, like the runtime itself */
    }
  }
  rt->library = g_strdup (library);
  if (rt->RuntimeGetVersion (&rt->runtime_version) != GST_PINNED_CUDA_SUCCESS)
    rt->runtime_version = 0;
  return rt;
}

static GstPinnedCudaRuntime *
try_open (const gchar * library, GString * why, gboolean * symbol_error)
{
  void *handle;
  GstPinnedCudaRuntime *rt;

  handle = dlopen (library, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    const char *msg = dlerror ();
    g_string_append_printf (why, "%s; ", msg ? msg : library);
    return NULL;
  }
  rt = load_symbols (handle, library, why);
  if (rt == NULL) {
    *symbol_error = TRUE;
    dlclose (handle);
  }
  return rt;
}

const GstPinnedCudaRuntime *
gst_pinned_cuda_runtime_get (GError ** error)
{
  const gchar *env = g_getenv (ENV_CUDART);
  const gchar *key = (env != NULL && *env != '\0') ? env : "(default)";
  const GstPinnedCudaRuntime *found;
  GstPinnedCudaRuntime *rt = NULL;
  GString *why;
  gboolean symbol_error = FALSE;
  guint i, j;

  g_mutex_lock (&lock);
  if ((found = find_opened (key)) != NULL) {
    g_mutex_unlock (&lock);
    return found;
  }

  why = g_string_new (NULL);
  if (env != NULL && *env != '\0') {
    rt = try_open (env, why, &symbol_error);
  } else {
    for (i = 0; rt == NULL && i < G_N_ELEMENTS (default_names); i++)
      rt = try_open (default_names[i], why, &symbol_error);
    for (i = 0; rt == NULL && i < G_N_ELEMENTS (default_dirs); i++) {
      for (j = 0; rt == NULL && j < G_N_ELEMENTS (default_names); j++) {
        gchar *path = g_build_filename (default_dirs[i], default_names[j],
            NULL);
        if (g_file_test (path, G_FILE_TEST_EXISTS))
          rt = try_open (path, why, &symbol_error);
        g_free (path);
      }
    }
  }

  if (rt != NULL) {
    /* Looked up under the key it was asked for. */
    rt->key = g_strdup (key);
    opened = g_slist_prepend (opened, rt);
  } else {
    if (why->len >= 2)
      g_string_truncate (why, why->len - 2);
    if (env != NULL && *env != '\0')
      g_set_error (error, GST_PINNED_CUDA_RUNTIME_ERROR, symbol_error ?
          GST_PINNED_CUDA_RUNTIME_ERROR_SYMBOL :
          GST_PINNED_CUDA_RUNTIME_ERROR_NOT_FOUND,
          "Could not load the CUDA runtime " ENV_CUDART "=%s: %s", env,
          why->str);
    else
      g_set_error (error, GST_PINNED_CUDA_RUNTIME_ERROR, symbol_error ?
          GST_PINNED_CUDA_RUNTIME_ERROR_SYMBOL :
          GST_PINNED_CUDA_RUNTIME_ERROR_NOT_FOUND,
          "Could not load the CUDA runtime (tried libcudart.so.13, .so.12, "
          ".so.11.0, libcudart.so; set " ENV_CUDART " to a name or path): %s",
          why->str);
  }
  g_string_free (why, TRUE);
  g_mutex_unlock (&lock);
  return rt;
}

gchar *
gst_pinned_cuda_error_describe (const GstPinnedCudaRuntime * rt,
    GstPinnedCudaError err)
{
  const char *name = rt->GetErrorName (err);
  const char *str = rt->GetErrorString (err);

  return g_strdup_printf ("%s (%d): %s", name ? name : "cudaError",
      (int) err, str ? str : "unknown error");
}

/* The calling thread's device, or GST_PINNED_CUDA_DEVICE_NO_CONTEXT when
 * no context is current on it (known only with the driver's calls:
 * cudaGetDevice answers 0 for such a thread). -1 on failure. */
static int
current_device (const GstPinnedCudaRuntime * rt)
{
  void *ctx = NULL;
  int dev = -1;

  if (rt->CtxGetCurrent != NULL && rt->CtxGetCurrent (&ctx) == 0 && ctx == NULL)
    return GST_PINNED_CUDA_DEVICE_NO_CONTEXT;
  if (rt->GetDevice (&dev) != GST_PINNED_CUDA_SUCCESS)
    return -1;
  return dev;
}

static int
device_enter (const GstPinnedCudaRuntime * rt, int device_id,
    GstPinnedCudaError * err)
{
  int prev = current_device (rt);

  *err = GST_PINNED_CUDA_SUCCESS;
  if (prev == device_id)
    return -1;
  *err = rt->SetDevice (device_id);
  if (prev == GST_PINNED_CUDA_DEVICE_NO_CONTEXT)
    return prev;
  /* Without the driver's calls a thread that had no context reads as
   * device 0: restoring it would initialise device 0's primary context,
   * so such a thread stays on @device_id (see the header). */
  if (rt->CtxSetCurrent == NULL)
    return -1;
  return prev;
}

int
gst_pinned_cuda_device_enter (const GstPinnedCudaRuntime * rt, int device_id)
{
  GstPinnedCudaError err;

  /* A failure shows in the call that follows, which reports it. */
  return device_enter (rt, device_id, &err);
}

void
gst_pinned_cuda_device_leave (const GstPinnedCudaRuntime * rt, int device_id,
    int previous)
{
  if (previous == GST_PINNED_CUDA_DEVICE_NO_CONTEXT && rt->CtxSetCurrent)
    rt->CtxSetCurrent (NULL);
  else if (previous >= 0 && previous != device_id)
    rt->SetDevice (previous);
}

const GstPinnedCudaRuntime *
gst_pinned_cuda_runtime_open_device (int device_id, GError ** error)
{
  const GstPinnedCudaRuntime *rt;
  GstPinnedCudaError err;
  int count = 0;
  gchar *desc;

  if ((rt = gst_pinned_cuda_runtime_get (error)) == NULL)
    return NULL;

  err = rt->GetDeviceCount (&count);
  if (err != GST_PINNED_CUDA_SUCCESS) {
    int driver = 0;
    desc = gst_pinned_cuda_error_describe (rt, err);
    rt->DriverGetVersion (&driver);
    g_set_error (error, GST_PINNED_CUDA_RUNTIME_ERROR,
        GST_PINNED_CUDA_RUNTIME_ERROR_NO_DEVICE,
        "No usable CUDA device: cudaGetDeviceCount failed with %s "
        "(runtime %s, version %d; driver version %d%s)", desc, rt->library,
        rt->runtime_version, driver,
        driver == 0 ? ": no NVIDIA driver is installed" : "");
    g_free (desc);
    return NULL;
  }
  if (count <= 0 || device_id < 0 || device_id >= count) {
    g_set_error (error, GST_PINNED_CUDA_RUNTIME_ERROR,
        GST_PINNED_CUDA_RUNTIME_ERROR_NO_DEVICE,
        "No CUDA device %d: cudaGetDeviceCount reports %d device(s) "
        "(runtime %s)", device_id, count, rt->library);
    return NULL;
  }
  gst_pinned_cuda_device_leave (rt, device_id, device_enter (rt, device_id,
          &err));
  if (err != GST_PINNED_CUDA_SUCCESS) {
    desc = gst_pinned_cuda_error_describe (rt, err);
    g_set_error (error, GST_PINNED_CUDA_RUNTIME_ERROR,
        GST_PINNED_CUDA_RUNTIME_ERROR_CALL,
        "cudaSetDevice(%d) failed: %s (runtime %s)", device_id, desc,
        rt->library);
    g_free (desc);
    return NULL;
  }
  return rt;
}

gboolean
gst_pinned_cuda_take_last_error (const GstPinnedCudaRuntime * rt)
{
  if (rt->GetLastError () == GST_PINNED_CUDA_SUCCESS)
    return FALSE;
  return rt->GetLastError () != GST_PINNED_CUDA_SUCCESS;
}
