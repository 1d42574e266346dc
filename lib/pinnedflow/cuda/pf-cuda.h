/* pinnedflow: the CUDA runtime, opened at run time (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Nothing here includes or links CUDA: the few types, enums and functions
 * pinnedflow uses are declared below with the values of the real headers
 * (cuda_runtime_api.h, driver_types.h of CUDA 12/13), and the functions are
 * looked up with dlsym() in libcudart.so.13, .12, ... or in the library
 * that the environment variable GST_PINNEDFLOW_CUDART names (a file name or
 * a path; the tests point it at the CPU emulator of tests/cuda/). A program
 * that never calls pf_cuda_* never loads anything.
 *
 * This is the one loader of the project: libgstpinnedflowcuda's
 * gst_pinned_cuda_runtime_get() returns the same table (its
 * GstPinnedCudaRuntime has this layout, checked at compile time there).
 *
 * Errors are negative errno values with a message written to the caller's
 * buffer:
 *   -ENOENT  no CUDA runtime library could be opened ("no CUDA runtime")
 *   -ENOSYS  a library was opened but a cuda* function is missing
 *   -ENODEV  the runtime reports no usable device (cudaGetDeviceCount
 *            failed, e.g. error 35 without a driver, or 100; or the device
 *            id is out of range) ("no CUDA device")
 *   -EIO     a CUDA call failed (the message names it and its error)
 *
 * Thread-safety: every function may be called from any thread. A runtime
 * table, once returned, lives until the process exits (the library is never
 * closed: registrations cached on segments are released through it when
 * the segments die, whenever that is).
 */
#ifndef __PF_CUDA_H__
#define __PF_CUDA_H__

#include <stddef.h>

#include <pinnedflow/pf-api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Handle types, declared opaque (cudaStream_t, cudaEvent_t are pointers to
 * opaque structs in the real headers). */
typedef int pf_cuda_error;              /* enum cudaError */
typedef struct pf_cuda_stream_st *pf_cuda_stream;       /* cudaStream_t */
typedef struct pf_cuda_event_st *pf_cuda_event; /* cudaEvent_t */

/* enum cudaError values pinnedflow looks at (driver_types.h) */
#define PF_CUDA_SUCCESS 0
#define PF_CUDA_ERROR_INVALID_VALUE 1
#define PF_CUDA_ERROR_MEMORY_ALLOCATION 2
#define PF_CUDA_ERROR_INSUFFICIENT_DRIVER 35
#define PF_CUDA_ERROR_NO_DEVICE 100
#define PF_CUDA_ERROR_NOT_READY 600
#define PF_CUDA_ERROR_NOT_SUPPORTED 801
/* enum cudaMemcpyKind */
#define PF_CUDA_MEMCPY_HOST_TO_DEVICE 1
#define PF_CUDA_MEMCPY_DEVICE_TO_HOST 2
/* cudaHostRegister flags */
#define PF_CUDA_HOST_REGISTER_PORTABLE 0x01
#define PF_CUDA_HOST_REGISTER_READ_ONLY 0x08
/* cudaStreamCreateWithFlags, cudaEventCreateWithFlags */
#define PF_CUDA_STREAM_NON_BLOCKING 0x01
#define PF_CUDA_EVENT_BLOCKING_SYNC 0x01
#define PF_CUDA_EVENT_DISABLE_TIMING 0x02
/* enum cudaDeviceAttr */
#define PF_CUDA_DEV_ATTR_HOST_REGISTER_SUPPORTED 99
#define PF_CUDA_DEV_ATTR_HOST_REGISTER_READ_ONLY_SUPPORTED 113

/**
 * pf_cuda_runtime:
 *
 * The function table ("cuda" + field name, looked up with dlsym()).
 * Layout fixed: libgstpinnedflowcuda's GstPinnedCudaRuntime is the same
 * struct (do not reorder; append only, in both).
 */
typedef struct pf_cuda_runtime {
  char *library;                /* what was opened (name or path) */
  char *key;                    /* GST_PINNEDFLOW_CUDART, or "(default)" */
  int runtime_version;          /* cudaRuntimeGetVersion(), 0 if unknown */

  const char *(*GetErrorString) (pf_cuda_error err);
  const char *(*GetErrorName) (pf_cuda_error err);
  pf_cuda_error (*RuntimeGetVersion) (int *version);
  pf_cuda_error (*DriverGetVersion) (int *version);
  pf_cuda_error (*GetDeviceCount) (int *count);
  pf_cuda_error (*SetDevice) (int device);
  pf_cuda_error (*GetDevice) (int *device);
  pf_cuda_error (*DeviceGetAttribute) (int *value, int attr, int device);
  pf_cuda_error (*StreamCreateWithFlags) (pf_cuda_stream * stream,
      unsigned int flags);
  pf_cuda_error (*StreamDestroy) (pf_cuda_stream stream);
  pf_cuda_error (*StreamSynchronize) (pf_cuda_stream stream);
  pf_cuda_error (*StreamWaitEvent) (pf_cuda_stream stream,
      pf_cuda_event event, unsigned int flags);
  pf_cuda_error (*EventCreateWithFlags) (pf_cuda_event * event,
      unsigned int flags);
  pf_cuda_error (*EventDestroy) (pf_cuda_event event);
  pf_cuda_error (*EventRecord) (pf_cuda_event event, pf_cuda_stream stream);
  pf_cuda_error (*EventQuery) (pf_cuda_event event);
  pf_cuda_error (*EventSynchronize) (pf_cuda_event event);
  pf_cuda_error (*MallocPitch) (void **dev_ptr, size_t * pitch, size_t width,
      size_t height);
  pf_cuda_error (*Free) (void *dev_ptr);
  pf_cuda_error (*Memcpy2D) (void *dst, size_t dpitch, const void *src,
      size_t spitch, size_t width, size_t height, int kind);
  pf_cuda_error (*Memcpy2DAsync) (void *dst, size_t dpitch, const void *src,
      size_t spitch, size_t width, size_t height, int kind,
      pf_cuda_stream stream);
  pf_cuda_error (*HostRegister) (void *ptr, size_t size, unsigned int flags);
  pf_cuda_error (*HostUnregister) (void *ptr);
  /* The calling thread's last error: returned and cleared (a sticky error
   * stays), or only returned. */
  pf_cuda_error (*GetLastError) (void);
  pf_cuda_error (*PeekAtLastError) (void);

  /* The driver's cuCtxGetCurrent/cuCtxSetCurrent (CUresult, 0 = success),
   * looked up in the runtime library, then in libcuda.so.1; NULL when
   * neither has them. */
  int (*CtxGetCurrent) (void **ctx);
  int (*CtxSetCurrent) (void *ctx);

  /* cuCtxPushCurrent/cuCtxPopCurrent, cuDevicePrimaryCtxRetain/Release,
   * from where the two above came; all four or none (NULL). */
  int (*CtxPushCurrent) (void *ctx);
  int (*CtxPopCurrent) (void **ctx);
  int (*DevicePrimaryCtxRetain) (void **ctx, int device);
  int (*DevicePrimaryCtxRelease) (int device);
} pf_cuda_runtime;

/**
 * pf_cuda_runtime_get:
 * @out: (out): the table
 * @msg: (nullable): receives a one-line reason on failure
 *
 * The runtime for the current value of GST_PINNEDFLOW_CUDART (one name or
 * path), else the first found of: libcudart.so.13, .12, .11.0, libcudart.so
 * through the dynamic linker (a runtime already loaded in the process is
 * the one it returns), the same names in /usr/local/cuda/lib64, lib and
 * targets/<arch>/lib, then in each folder of GST_PINNEDFLOW_CUDART_PATH
 * (':'-separated) and its nvidia/cu13/lib and nvidia/cuda_runtime/lib (where
 * a Python CUDA package puts the runtime). Once a default runtime is
 * opened, later calls return it. A library that failed is tried again on
 * the next call. The message names every library tried.
 *
 * Returns: 0, -ENOENT (none could be opened), -ENOSYS (a function is
 * missing).
 */
PF_API int pf_cuda_runtime_get (const pf_cuda_runtime ** out, char *msg,
    size_t msg_len);

/**
 * pf_cuda_runtime_open_device:
 *
 * pf_cuda_runtime_get(), then checks that @device_id exists and can be
 * made current (cudaSetDevice, which initialises its primary context); the
 * calling thread's context is restored as pf_cuda_device_enter/leave do.
 *
 * Returns: 0, -ENOENT, -ENOSYS, -ENODEV ("No usable CUDA device:
 * cudaGetDeviceCount failed with cudaErrorInsufficientDriver (35) ..." or
 * "No CUDA device N ..."), -EIO (cudaSetDevice failed).
 */
PF_API int pf_cuda_runtime_open_device (int device_id,
    const pf_cuda_runtime ** out, char *msg, size_t msg_len);

/**
 * pf_cuda_runtime_find_device:
 *
 * pf_cuda_runtime_open_device() without making the device current: checks
 * that @device_id exists (cudaGetDeviceCount, which needs no context) and
 * initialises no context, so a caller that will work in a context of its
 * own (a GstCudaContext) does not make the primary context as well.
 *
 * Returns: 0, -ENOENT, -ENOSYS, -ENODEV.
 */
PF_API int pf_cuda_runtime_find_device (int device_id,
    const pf_cuda_runtime ** out, char *msg, size_t msg_len);

/**
 * pf_cuda_error_describe:
 *
 * Writes "cudaErrorX (N): string" for @err, from the runtime's own
 * strings, into @buf. Returns @buf.
 */
PF_API char *pf_cuda_error_describe (const pf_cuda_runtime * rt,
    pf_cuda_error err, char *buf, size_t len);

/* Makes @device_id current on the calling thread (cudaSetDevice, only when
 * another device's context, or none, is current) before CUDA calls on a
 * thread that may not have set it. Returns what pf_cuda_device_leave()
 * needs to restore the caller's context: -1 nothing to restore,
 * PF_CUDA_DEVICE_NO_CONTEXT the thread had no context (leave makes none
 * current again with cuCtxSetCurrent(NULL)), else the device to make
 * current again. Without the driver's two calls, a thread without a
 * context is left on @device_id rather than switched to device 0. */
#define PF_CUDA_DEVICE_NO_CONTEXT (-2)
PF_API int pf_cuda_device_enter (const pf_cuda_runtime * rt, int device_id);
PF_API void pf_cuda_device_leave (const pf_cuda_runtime * rt, int device_id,
    int previous);

/* Makes the driver context @ctx (a CUcontext: a GstCudaContext's, a
 * retained primary one) current on the calling thread with
 * cuCtxPushCurrent, so that what follows is made in it; returns
 * PF_CUDA_CONTEXT_PUSHED, which pf_cuda_device_leave() pops. With @ctx
 * NULL, or without the driver's calls, it is pf_cuda_device_enter(). */
#define PF_CUDA_CONTEXT_PUSHED (-3)
PF_API int pf_cuda_context_enter (const pf_cuda_runtime * rt, int device_id,
    void *ctx);

/**
 * pf_cuda_take_last_error:
 *
 * After a failure the caller has handled or reported: takes the calling
 * thread's last error (cudaGetLastError). Returns 1 when the error is
 * sticky (a second cudaGetLastError still returns it: the device's context
 * is unusable until the process exits), else 0.
 */
PF_API int pf_cuda_take_last_error (const pf_cuda_runtime * rt);

#ifdef __cplusplus
}
#endif
#endif /* __PF_CUDA_H__ */
