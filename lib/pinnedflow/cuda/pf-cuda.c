/* pinnedflow: the CUDA runtime, opened at run time (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Threading: `lock` guards `opened` (every runtime loaded so far, keyed by
 * the value of GST_PINNEDFLOW_CUDART, never freed: registrations cached on
 * segments are released through a table whenever those segments die). The
 * tables themselves are immutable once published.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "pf-cuda.h"
#include "pf-msg-private.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ENV_CUDART "GST_PINNEDFLOW_CUDART"
#define ENV_CUDART_PATH "GST_PINNEDFLOW_CUDART_PATH"

/* The one lookup of the CUDA runtime (the GPU kit's probe and every user
 * of the library go through it), in this order:
 *   1. GST_PINNEDFLOW_CUDART: one name or path, and nothing else is tried;
 *   2. each name below through the dynamic linker (a runtime already
 *      loaded in the process under that soname, e.g. by PyTorch, is the
 *      one returned; then LD_LIBRARY_PATH, the ld.so cache);
 *   3. CUDA's usual folders (default_dirs);
 *   4. the folders of GST_PINNEDFLOW_CUDART_PATH (':'-separated: a Python's
 *      site-packages folders), each as it is and with the subfolders a
 *      Python CUDA package installs the runtime in (python_subdirs).
 * Names most recent first. */
static const char *default_names[] = {
  "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so",
};

static const char *default_dirs[] = {
  "/usr/local/cuda/lib64", "/usr/local/cuda/lib",
#if defined(__aarch64__)
  "/usr/local/cuda/targets/sbsa-linux/lib",
#else
  "/usr/local/cuda/targets/x86_64-linux/lib",
#endif
};

/* nvidia-cuda-runtime (CUDA 13: nvidia/cu13/lib; 12: .../cuda_runtime) */
static const char *python_subdirs[] = {
  "", "nvidia/cu13/lib", "nvidia/cuda_runtime/lib",
};

#define N_ELEMENTS(a) (sizeof (a) / sizeof ((a)[0]))

typedef struct opened_rt
{
  pf_cuda_runtime rt;
  struct opened_rt *next;
} opened_rt;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static opened_rt *opened;

/* A growing "why" string: what each library said. */
typedef struct
{
  char buf[2048];
  size_t len;
} why_buf;

static void
why_append (why_buf * w, const char *fmt, ...)
{
  va_list ap;
  int n;

  if (w->len >= sizeof (w->buf) - 1)
    return;
  va_start (ap, fmt);
  n = vsnprintf (w->buf + w->len, sizeof (w->buf) - w->len, fmt, ap);
  va_end (ap);
  if (n > 0)
    w->len += (size_t) n;
  if (w->len >= sizeof (w->buf))
    w->len = sizeof (w->buf) - 1;
}

static const pf_cuda_runtime *
find_opened (const char *key)
{
  opened_rt *o;

  for (o = opened; o != NULL; o = o->next)
    if (strcmp (o->rt.key, key) == 0)
      return &o->rt;
  return NULL;
}

/* The push/pop and primary-context calls, from the library that gave
 * cuCtxGetCurrent: all four or none. */
static void
load_context_calls (void *lib, pf_cuda_runtime * rt)
{
  *(void **) (&rt->CtxPushCurrent) = dlsym (lib, "cuCtxPushCurrent_v2");
  *(void **) (&rt->CtxPopCurrent) = dlsym (lib, "cuCtxPopCurrent_v2");
  *(void **) (&rt->DevicePrimaryCtxRetain) =
      dlsym (lib, "cuDevicePrimaryCtxRetain");
  *(void **) (&rt->DevicePrimaryCtxRelease) =
      dlsym (lib, "cuDevicePrimaryCtxRelease_v2");
  if (rt->CtxPushCurrent == NULL || rt->CtxPopCurrent == NULL ||
      rt->DevicePrimaryCtxRetain == NULL
      || rt->DevicePrimaryCtxRelease == NULL) {
    rt->CtxPushCurrent = NULL;
    rt->CtxPopCurrent = NULL;
    rt->DevicePrimaryCtxRetain = NULL;
    rt->DevicePrimaryCtxRelease = NULL;
  }
}

static void
load_driver_calls (void *handle, pf_cuda_runtime * rt)
{
  void *driver;

  /* Optional: the driver's context save/restore. The emulator exports
   * them itself; the real runtime loads libcuda.so.1, which has them. */
  *(void **) (&rt->CtxGetCurrent) = dlsym (handle, "cuCtxGetCurrent");
  *(void **) (&rt->CtxSetCurrent) = dlsym (handle, "cuCtxSetCurrent");
  if (rt->CtxGetCurrent != NULL && rt->CtxSetCurrent != NULL) {
    load_context_calls (handle, rt);
    return;
  }
  rt->CtxGetCurrent = NULL;
  rt->CtxSetCurrent = NULL;
  driver = dlopen ("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == NULL)
    return;
  *(void **) (&rt->CtxGetCurrent) = dlsym (driver, "cuCtxGetCurrent");
  *(void **) (&rt->CtxSetCurrent) = dlsym (driver, "cuCtxSetCurrent");
  if (rt->CtxGetCurrent == NULL || rt->CtxSetCurrent == NULL) {
    rt->CtxGetCurrent = NULL;
    rt->CtxSetCurrent = NULL;
    dlclose (driver);
    return;
  }
  /* kept open, like the runtime itself */
  load_context_calls (driver, rt);
}

/* 0, or -ENOSYS with the missing symbol in @why. */
static int
load_symbols (void *handle, const char *library, pf_cuda_runtime * rt,
    why_buf * why)
{
  const char *missing = NULL;

  /* *INDENT-OFF* */
#define LOAD(field) do {                                        \
    *(void **) (&rt->field) = dlsym (handle, "cuda" #field);    \
    if (rt->field == NULL && missing == NULL)                   \
      missing = "cuda" #field;                                  \
  } while (0)
  /* *INDENT-ON* */

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
    why_append (why, "%s: symbol %s missing; ", library, missing);
    return -ENOSYS;
  }
  load_driver_calls (handle, rt);
  if (rt->RuntimeGetVersion (&rt->runtime_version) != PF_CUDA_SUCCESS)
    rt->runtime_version = 0;
  return 0;
}

/* A new table for @library, or NULL (@why says why; *@symbol_error set
 * when the library opened but lacked a function). */
static opened_rt *
try_open (const char *library, why_buf * why, int *symbol_error)
{
  void *handle;
  opened_rt *o;

  handle = dlopen (library, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    const char *err = dlerror ();
    why_append (why, "%s; ", err ? err : library);
    return NULL;
  }
  o = calloc (1, sizeof (*o));
  if (o == NULL || load_symbols (handle, library, &o->rt, why) < 0
      || (o->rt.library = strdup (library)) == NULL) {
    if (o != NULL)
      *symbol_error = 1;
    free (o);
    dlclose (handle);
    return NULL;
  }
  return o;
}

/* Every name of default_names in @dir (+ @sub), those that exist. */
static opened_rt *
open_in_dir (const char *dir, size_t dir_len, const char *sub, why_buf * why,
    int *symbol_error)
{
  opened_rt *o = NULL;
  char path[1024];
  size_t j;
  int n;

  for (j = 0; o == NULL && j < N_ELEMENTS (default_names); j++) {
    n = snprintf (path, sizeof (path), "%.*s%s%s/%s", (int) dir_len, dir,
        *sub ? "/" : "", sub, default_names[j]);
    if (n > 0 && (size_t) n < sizeof (path) && access (path, F_OK) == 0)
      o = try_open (path, why, symbol_error);
  }
  return o;
}

static opened_rt *
open_default (why_buf * why, int *symbol_error)
{
  const char *extra = getenv (ENV_CUDART_PATH), *p, *end;
  opened_rt *o = NULL;
  size_t i;

  for (i = 0; o == NULL && i < N_ELEMENTS (default_names); i++)
    o = try_open (default_names[i], why, symbol_error);
  for (i = 0; o == NULL && i < N_ELEMENTS (default_dirs); i++)
    o = open_in_dir (default_dirs[i], strlen (default_dirs[i]), "", why,
        symbol_error);
  for (p = extra; o == NULL && p != NULL && *p != '\0'; p = end) {
    end = strchr (p, ':');
    if (end == NULL)
      end = p + strlen (p);
    for (i = 0; o == NULL && end > p && i < N_ELEMENTS (python_subdirs); i++)
      o = open_in_dir (p, (size_t) (end - p), python_subdirs[i], why,
          symbol_error);
    if (*end == ':')
      end++;
  }
  return o;
}

int
pf_cuda_runtime_get (const pf_cuda_runtime ** out, char *msg, size_t msg_len)
{
  const char *env = getenv (ENV_CUDART);
  const char *key = (env != NULL && *env != '\0') ? env : "(default)";
  const pf_cuda_runtime *found;
  opened_rt *o = NULL;
  why_buf why = { {0}, 0 };
  int symbol_error = 0, res;

  if (out == NULL)
    return -EINVAL;
  *out = NULL;
  pthread_mutex_lock (&lock);
  if ((found = find_opened (key)) != NULL) {
    pthread_mutex_unlock (&lock);
    *out = found;
    return 0;
  }

  if (env != NULL && *env != '\0')
    o = try_open (env, &why, &symbol_error);
  else
    o = open_default (&why, &symbol_error);

  if (o != NULL && (o->rt.key = strdup (key)) != NULL) {
    /* Looked up under the key it was asked for. */
    o->next = opened;
    opened = o;
    pthread_mutex_unlock (&lock);
    *out = &o->rt;
    return 0;
  }
  if (o != NULL) {
    /* strdup failed; the handle stays open (harmless) */
    free (o->rt.library);
    free (o);
    pthread_mutex_unlock (&lock);
    pf_set_msg (msg, msg_len, "Could not load the CUDA runtime: out of memory");
    return -ENOMEM;
  }
  pthread_mutex_unlock (&lock);

  if (why.len >= 2)
    why.buf[why.len - 2] = '\0';
  res = symbol_error ? -ENOSYS : -ENOENT;
  if (env != NULL && *env != '\0')
    pf_set_msg (msg, msg_len, "Could not load the CUDA runtime " ENV_CUDART
        "=%s: %s", env, why.buf);
  else
    pf_set_msg (msg, msg_len, "Could not load the CUDA runtime (tried "
        "libcudart.so.13, .so.12, .so.11.0, libcudart.so by the dynamic "
        "linker, in /usr/local/cuda/lib64, lib, targets/*/lib and in the "
        "folders of " ENV_CUDART_PATH "=%s; set " ENV_CUDART " to a name or "
        "path): %s", getenv (ENV_CUDART_PATH) ? getenv (ENV_CUDART_PATH) :
        "(unset)", why.buf);
  return res;
}

char *
pf_cuda_error_describe (const pf_cuda_runtime * rt, pf_cuda_error err,
    char *buf, size_t len)
{
  const char *name = rt->GetErrorName (err);
  const char *str = rt->GetErrorString (err);

  snprintf (buf, len, "%s (%d): %s", name ? name : "cudaError", (int) err,
      str ? str : "unknown error");
  return buf;
}

/* The calling thread's device, or PF_CUDA_DEVICE_NO_CONTEXT when no
 * context is current on it (known only with the driver's calls:
 * cudaGetDevice answers 0 for such a thread). -1 on failure. */
static int
current_device (const pf_cuda_runtime * rt)
{
  void *ctx = NULL;
  int dev = -1;

  if (rt->CtxGetCurrent != NULL && rt->CtxGetCurrent (&ctx) == 0 && ctx == NULL)
    return PF_CUDA_DEVICE_NO_CONTEXT;
  if (rt->GetDevice (&dev) != PF_CUDA_SUCCESS)
    return -1;
  return dev;
}

static int
device_enter (const pf_cuda_runtime * rt, int device_id, pf_cuda_error * err)
{
  int prev = current_device (rt);

  *err = PF_CUDA_SUCCESS;
  if (prev == device_id)
    return -1;
  *err = rt->SetDevice (device_id);
  if (prev == PF_CUDA_DEVICE_NO_CONTEXT)
    return prev;
  /* Without the driver's calls a thread that had no context reads as
   * device 0: restoring it would initialise device 0's primary context,
   * so such a thread stays on @device_id (see the header). */
  if (rt->CtxSetCurrent == NULL)
    return -1;
  return prev;
}

int
pf_cuda_device_enter (const pf_cuda_runtime * rt, int device_id)
{
  pf_cuda_error err;

  /* A failure shows in the call that follows, which reports it. */
  return device_enter (rt, device_id, &err);
}

int
pf_cuda_context_enter (const pf_cuda_runtime * rt, int device_id, void *ctx)
{
  if (ctx != NULL && rt->CtxPushCurrent != NULL &&
      rt->CtxPushCurrent (ctx) == 0)
    return PF_CUDA_CONTEXT_PUSHED;
  return pf_cuda_device_enter (rt, device_id);
}

void
pf_cuda_device_leave (const pf_cuda_runtime * rt, int device_id, int previous)
{
  if (previous == PF_CUDA_CONTEXT_PUSHED && rt->CtxPopCurrent)
    rt->CtxPopCurrent (NULL);
  else if (previous == PF_CUDA_DEVICE_NO_CONTEXT && rt->CtxSetCurrent)
    rt->CtxSetCurrent (NULL);
  else if (previous >= 0 && previous != device_id)
    rt->SetDevice (previous);
}

int
pf_cuda_runtime_find_device (int device_id, const pf_cuda_runtime ** out,
    char *msg, size_t msg_len)
{
  const pf_cuda_runtime *rt;
  pf_cuda_error err;
  char desc[256];
  int count = 0, res;

  if (out == NULL)
    return -EINVAL;
  *out = NULL;
  if ((res = pf_cuda_runtime_get (&rt, msg, msg_len)) < 0)
    return res;

  err = rt->GetDeviceCount (&count);
  if (err != PF_CUDA_SUCCESS) {
    int driver = 0;
    pf_cuda_error_describe (rt, err, desc, sizeof (desc));
    rt->DriverGetVersion (&driver);
    /* reported in @msg: the caller's thread (an application's, which may
     * check cudaGetLastError after its own work) keeps no error of ours */
    pf_cuda_take_last_error (rt);
    pf_set_msg (msg, msg_len, "No usable CUDA device: cudaGetDeviceCount "
        "failed with %s (runtime %s, version %d; driver version %d%s)", desc,
        rt->library, rt->runtime_version, driver,
        driver == 0 ? ": no NVIDIA driver is installed" : "");
    return -ENODEV;
  }
  if (count <= 0 || device_id < 0 || device_id >= count) {
    pf_set_msg (msg, msg_len, "No CUDA device %d: cudaGetDeviceCount reports "
        "%d device(s) (runtime %s)", device_id, count, rt->library);
    return -ENODEV;
  }
  *out = rt;
  return 0;
}

int
pf_cuda_runtime_open_device (int device_id, const pf_cuda_runtime ** out,
    char *msg, size_t msg_len)
{
  const pf_cuda_runtime *rt;
  pf_cuda_error err;
  char desc[256];
  int res;

  if (out == NULL)
    return -EINVAL;
  *out = NULL;
  if ((res = pf_cuda_runtime_find_device (device_id, &rt, msg, msg_len)) < 0)
    return res;
  pf_cuda_device_leave (rt, device_id, device_enter (rt, device_id, &err));
  if (err != PF_CUDA_SUCCESS) {
    pf_cuda_take_last_error (rt);       /* reported in @msg, as above */
    pf_cuda_error_describe (rt, err, desc, sizeof (desc));
    pf_set_msg (msg, msg_len, "cudaSetDevice(%d) failed: %s (runtime %s)",
        device_id, desc, rt->library);
    return -EIO;
  }
  *out = rt;
  return 0;
}

int
pf_cuda_take_last_error (const pf_cuda_runtime * rt)
{
  if (rt->GetLastError () == PF_CUDA_SUCCESS)
    return 0;
  return rt->GetLastError () != PF_CUDA_SUCCESS;
}

/* The text of the last failed runtime lookup or uploader construction of
 * each thread (pf-msg-private.h). */
__thread char pf_cuda_thread_error[PF_CUDA_THREAD_ERROR_LEN];

const char *
pf_cuda_runtime_error (void)
{
  return pf_cuda_thread_error;
}
