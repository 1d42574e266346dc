/* GStreamer pinnedflow CUDA: the CUDA runtime, opened at run time
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Nothing here includes or links CUDA: the few types, enums and functions
 * the elements use are declared below with the values of the real headers
 * (cuda_runtime_api.h, driver_types.h of CUDA 12/13), and the functions are
 * looked up with dlsym() in libcudart.so.13, .12, ... or in the library that
 * the environment variable GST_PINNEDFLOW_CUDART names (a file name or a
 * path; the tests point it at the CPU emulator of tests/cuda/).
 *
 * The loader itself is libpinnedflow's (pinnedflow/pf-cuda.h): this API is a
 * façade over it, so the elements and the node upload API of one process
 * share one table and one registration per segment.
 */
#ifndef __GST_PINNED_CUDA_LOADER_H__
#define __GST_PINNED_CUDA_LOADER_H__

#include <glib.h>
#include <gst/pinnedcuda/pinnedcuda-prelude.h>
#include <stddef.h>

G_BEGIN_DECLS

/* tests/cuda/check-cuda-abi.c defines GST_PINNED_CUDA_ABI_CHECK after including
 * cuda_runtime_api.h: the table below is then spelled with the real types,
 * and each of its function pointers is checked against the real function. */
#ifdef GST_PINNED_CUDA_ABI_CHECK
/* Since: 0.1 */
typedef cudaError_t GstPinnedCudaError;
/* Since: 0.1 */
typedef cudaStream_t GstPinnedCudaStream;
/* Since: 0.1 */
typedef cudaEvent_t GstPinnedCudaEvent;
/* Since: 0.1 */
typedef enum cudaMemcpyKind GstPinnedCudaMemcpyKind;
/* Since: 0.1 */
typedef enum cudaDeviceAttr GstPinnedCudaDeviceAttr;
#else
/* Since: 0.1 */
typedef int GstPinnedCudaError;        /* enum cudaError */
/* Since: 0.1 */
typedef struct GstPinnedCudaStream_st *GstPinnedCudaStream;   /* cudaStream_t */
/* Since: 0.1 */
typedef struct GstPinnedCudaEvent_st *GstPinnedCudaEvent;     /* cudaEvent_t */
/* Since: 0.1 */
typedef int GstPinnedCudaMemcpyKind;   /* enum cudaMemcpyKind */
/* Since: 0.1 */
typedef int GstPinnedCudaDeviceAttr;   /* enum cudaDeviceAttr */
#endif

/* enum cudaError (driver_types.h) */
enum
{
  GST_PINNED_CUDA_SUCCESS = 0,
  GST_PINNED_CUDA_ERROR_INVALID_VALUE = 1,
  GST_PINNED_CUDA_ERROR_MEMORY_ALLOCATION = 2,
  GST_PINNED_CUDA_ERROR_INITIALIZATION = 3,
  GST_PINNED_CUDA_ERROR_INVALID_MEMCPY_DIRECTION = 21,
  GST_PINNED_CUDA_ERROR_INSUFFICIENT_DRIVER = 35,
  GST_PINNED_CUDA_ERROR_NO_DEVICE = 100,
  GST_PINNED_CUDA_ERROR_INVALID_DEVICE = 101,
  GST_PINNED_CUDA_ERROR_INVALID_RESOURCE_HANDLE = 400,
  GST_PINNED_CUDA_ERROR_NOT_READY = 600,
  GST_PINNED_CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  GST_PINNED_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
  GST_PINNED_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
  GST_PINNED_CUDA_ERROR_NOT_SUPPORTED = 801,
  GST_PINNED_CUDA_ERROR_UNKNOWN = 999,
};

/* enum cudaMemcpyKind */
enum
{
  GST_PINNED_CUDA_MEMCPY_HOST_TO_HOST = 0,
  GST_PINNED_CUDA_MEMCPY_HOST_TO_DEVICE = 1,
  GST_PINNED_CUDA_MEMCPY_DEVICE_TO_HOST = 2,
  GST_PINNED_CUDA_MEMCPY_DEVICE_TO_DEVICE = 3,
  GST_PINNED_CUDA_MEMCPY_DEFAULT = 4,
};

/* cudaHostRegister flags */
#define GST_PINNED_CUDA_HOST_REGISTER_DEFAULT 0x00
#define GST_PINNED_CUDA_HOST_REGISTER_PORTABLE 0x01
#define GST_PINNED_CUDA_HOST_REGISTER_MAPPED 0x02
#define GST_PINNED_CUDA_HOST_REGISTER_IO_MEMORY 0x04
#define GST_PINNED_CUDA_HOST_REGISTER_READ_ONLY 0x08
/* cudaStreamCreateWithFlags */
#define GST_PINNED_CUDA_STREAM_NON_BLOCKING 0x01
/* cudaEventCreateWithFlags */
#define GST_PINNED_CUDA_EVENT_BLOCKING_SYNC 0x01
#define GST_PINNED_CUDA_EVENT_DISABLE_TIMING 0x02
/* enum cudaDeviceAttr */
#define GST_PINNED_CUDA_DEV_ATTR_HOST_REGISTER_SUPPORTED 99
#define GST_PINNED_CUDA_DEV_ATTR_HOST_REGISTER_READ_ONLY_SUPPORTED 113

/**
 * GstPinnedCudaRuntime:
 *
 * The function table. Valid for the life of the process once returned by
 * gst_pinned_cuda_runtime_get() (the library is never closed: host registrations
 * cached on segments are released through it when the segments die).
 *
 * Since: 0.1
 */
typedef struct
{
  gchar *library;               /* what was opened (name or path) */
  gchar *key;                   /* GST_PINNEDFLOW_CUDART, or "(default)" */
  int runtime_version;          /* cudaRuntimeGetVersion(), 0 if unknown */

  const char *(*GetErrorString) (GstPinnedCudaError err);
  const char *(*GetErrorName) (GstPinnedCudaError err);
  GstPinnedCudaError (*RuntimeGetVersion) (int *version);
  GstPinnedCudaError (*DriverGetVersion) (int *version);
  GstPinnedCudaError (*GetDeviceCount) (int *count);
  GstPinnedCudaError (*SetDevice) (int device);
  GstPinnedCudaError (*GetDevice) (int *device);
  GstPinnedCudaError (*DeviceGetAttribute) (int *value, GstPinnedCudaDeviceAttr attr,
      int device);
  GstPinnedCudaError (*StreamCreateWithFlags) (GstPinnedCudaStream * stream,
      unsigned int flags);
  GstPinnedCudaError (*StreamDestroy) (GstPinnedCudaStream stream);
  GstPinnedCudaError (*StreamSynchronize) (GstPinnedCudaStream stream);
  GstPinnedCudaError (*StreamWaitEvent) (GstPinnedCudaStream stream, GstPinnedCudaEvent event,
      unsigned int flags);
  GstPinnedCudaError (*EventCreateWithFlags) (GstPinnedCudaEvent * event,
      unsigned int flags);
  GstPinnedCudaError (*EventDestroy) (GstPinnedCudaEvent event);
  GstPinnedCudaError (*EventRecord) (GstPinnedCudaEvent event, GstPinnedCudaStream stream);
  GstPinnedCudaError (*EventQuery) (GstPinnedCudaEvent event);
  GstPinnedCudaError (*EventSynchronize) (GstPinnedCudaEvent event);
  GstPinnedCudaError (*MallocPitch) (void **dev_ptr, size_t * pitch, size_t width,
      size_t height);
  GstPinnedCudaError (*Free) (void *dev_ptr);
  GstPinnedCudaError (*Memcpy2D) (void *dst, size_t dpitch, const void *src,
      size_t spitch, size_t width, size_t height, GstPinnedCudaMemcpyKind kind);
  GstPinnedCudaError (*Memcpy2DAsync) (void *dst, size_t dpitch, const void *src,
      size_t spitch, size_t width, size_t height, GstPinnedCudaMemcpyKind kind,
      GstPinnedCudaStream stream);
  GstPinnedCudaError (*HostRegister) (void *ptr, size_t size, unsigned int flags);
  GstPinnedCudaError (*HostUnregister) (void *ptr);
  /* The calling thread's last error: returned and cleared (a sticky error
   * stays), or only returned. */
  GstPinnedCudaError (*GetLastError) (void);
  GstPinnedCudaError (*PeekAtLastError) (void);

  /* The driver's cuCtxGetCurrent/cuCtxSetCurrent (CUresult, 0 = success),
   * looked up in the runtime library, then in libcuda.so.1; NULL when
   * neither has them. They save and restore a thread's context exactly
   * (NULL: none), which cudaSetDevice cannot: see device_enter(). */
  int (*CtxGetCurrent) (void **ctx);
  int (*CtxSetCurrent) (void *ctx);

  /* cuCtxPushCurrent/cuCtxPopCurrent, cuDevicePrimaryCtxRetain/Release,
   * from where the two above came; all four or none (NULL). */
  int (*CtxPushCurrent) (void *ctx);
  int (*CtxPopCurrent) (void **ctx);
  int (*DevicePrimaryCtxRetain) (void **ctx, int device);
  int (*DevicePrimaryCtxRelease) (int device);
} GstPinnedCudaRuntime;

#define GST_PINNED_CUDA_RUNTIME_ERROR (gst_pinned_cuda_runtime_error_quark ())
/* Since: 0.1 */
GST_PINNEDCUDA_API GQuark gst_pinned_cuda_runtime_error_quark (void);

/* Since: 0.1 */
typedef enum
{
  GST_PINNED_CUDA_RUNTIME_ERROR_NOT_FOUND,      /* no library could be opened */
  GST_PINNED_CUDA_RUNTIME_ERROR_SYMBOL,         /* a function is missing */
  GST_PINNED_CUDA_RUNTIME_ERROR_NO_DEVICE,      /* cudaGetDeviceCount failed or 0 */
  GST_PINNED_CUDA_RUNTIME_ERROR_CALL,           /* a CUDA call failed */
} GstPinnedCudaRuntimeError;

/* The runtime for the current value of GST_PINNEDFLOW_CUDART (or the
 * default names). Thread-safe; a library that failed is tried again on the
 * next call. The error message names every library tried.
 * Since: 0.1
 */
GST_PINNEDCUDA_API const GstPinnedCudaRuntime *gst_pinned_cuda_runtime_get (GError ** error);

/* Loads the runtime and checks that @device_id exists and can be made
 * current (cudaSetDevice, which initialises its primary context); the
 * calling thread's context is restored as device_enter/leave do. The error
 * names the library and gives the error string of
 * cudaGetDeviceCount()/cudaSetDevice().
 * Since: 0.1
 */
GST_PINNEDCUDA_API const GstPinnedCudaRuntime *gst_pinned_cuda_runtime_open_device (int device_id,
    GError ** error);

/* The same check without making the device current (no context is
 * initialised): for a caller that works in a context of its own, a
 * GstCudaContext.
 * Since: 0.1
 */
GST_PINNEDCUDA_API const GstPinnedCudaRuntime *gst_pinned_cuda_runtime_find_device (int device_id,
    GError ** error);

/* "cudaErrorX (N): string" for @err, from the runtime's own strings.
 * Since: 0.1
 */
GST_PINNEDCUDA_API gchar *gst_pinned_cuda_error_describe (const GstPinnedCudaRuntime * rt, GstPinnedCudaError err);

/* Makes @device_id current on the calling thread (cudaSetDevice, only when
 * another device's context, or none, is current) before CUDA calls on a
 * thread that may not have set it: pool frees, segment destroy notifies,
 * CPU maps, application threads. Returns what gst_pinned_cuda_device_leave()
 * needs to restore the caller's context: -1 nothing to restore,
 * GST_PINNED_CUDA_DEVICE_NO_CONTEXT the thread had no context (leave makes
 * none current again with cuCtxSetCurrent(NULL), so a thread that never
 * used CUDA does not get device 0's primary context initialised, as
 * cudaSetDevice(0) would), else the device to make current again. Without
 * the driver's two calls, a thread without a context is left on
 * @device_id rather than switched to device 0. */
#define GST_PINNED_CUDA_DEVICE_NO_CONTEXT (-2)
/* Since: 0.1 */
GST_PINNEDCUDA_API int gst_pinned_cuda_device_enter (const GstPinnedCudaRuntime * rt, int device_id);
/* Since: 0.1 */
GST_PINNEDCUDA_API void gst_pinned_cuda_device_leave (const GstPinnedCudaRuntime * rt, int device_id,
    int previous);

/* Pushes the driver context @cu_ctx (a CUcontext, e.g. a GstCudaContext's)
 * on the calling thread, so that what follows is made in it; with @cu_ctx
 * NULL (or without the driver's calls) gst_pinned_cuda_device_enter().
 * gst_pinned_cuda_device_leave() undoes either. */
#define GST_PINNED_CUDA_CONTEXT_PUSHED (-3)
/* Since: 0.1 */
GST_PINNEDCUDA_API int gst_pinned_cuda_context_push_enter (const GstPinnedCudaRuntime * rt,
    int device_id, gpointer cu_ctx);

/* After a failure the caller has handled or reported: takes the calling
 * thread's last error (cudaGetLastError), so that CUDA code running on the
 * thread later does not find it. Returns TRUE when the error is sticky (a
 * second cudaGetLastError still returns it): the device's context is
 * unusable until the process exits.
 * Since: 0.1
 */
GST_PINNEDCUDA_API gboolean gst_pinned_cuda_take_last_error (const GstPinnedCudaRuntime * rt);

G_END_DECLS
#endif /* __GST_PINNED_CUDA_LOADER_H__ */
