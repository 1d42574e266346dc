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
 */
#ifndef __GST_PINNED_CUDA_LOADER_H__
#define __GST_PINNED_CUDA_LOADER_H__

#include <glib.h>
#include <stddef.h>

G_BEGIN_DECLS

/* tests/cuda/check-cuda-abi.c defines PF_CUDA_ABI_CHECK after including
 * cuda_runtime_api.h: the table below is then spelled with the real types,
 * and each of its function pointers is checked against the real function. */
#ifdef PF_CUDA_ABI_CHECK
typedef cudaError_t PfCudaError;
typedef cudaStream_t PfCudaStream;
typedef cudaEvent_t PfCudaEvent;
typedef enum cudaMemcpyKind PfCudaMemcpyKind;
typedef enum cudaDeviceAttr PfCudaDeviceAttr;
#else
typedef int PfCudaError;        /* enum cudaError */
typedef struct PfCudaStream_st *PfCudaStream;   /* cudaStream_t */
typedef struct PfCudaEvent_st *PfCudaEvent;     /* cudaEvent_t */
typedef int PfCudaMemcpyKind;   /* enum cudaMemcpyKind */
typedef int PfCudaDeviceAttr;   /* enum cudaDeviceAttr */
#endif

/* enum cudaError (driver_types.h) */
enum
{
  PF_CUDA_SUCCESS = 0,
  PF_CUDA_ERROR_INVALID_VALUE = 1,
  PF_CUDA_ERROR_MEMORY_ALLOCATION = 2,
  PF_CUDA_ERROR_INITIALIZATION = 3,
  PF_CUDA_ERROR_INVALID_MEMCPY_DIRECTION = 21,
  PF_CUDA_ERROR_INSUFFICIENT_DRIVER = 35,
  PF_CUDA_ERROR_NO_DEVICE = 100,
  PF_CUDA_ERROR_INVALID_DEVICE = 101,
  PF_CUDA_ERROR_INVALID_RESOURCE_HANDLE = 400,
  PF_CUDA_ERROR_NOT_READY = 600,
  PF_CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  PF_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
  PF_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
  PF_CUDA_ERROR_NOT_SUPPORTED = 801,
  PF_CUDA_ERROR_UNKNOWN = 999,
};

/* enum cudaMemcpyKind */
enum
{
  PF_CUDA_MEMCPY_HOST_TO_HOST = 0,
  PF_CUDA_MEMCPY_HOST_TO_DEVICE = 1,
  PF_CUDA_MEMCPY_DEVICE_TO_HOST = 2,
  PF_CUDA_MEMCPY_DEVICE_TO_DEVICE = 3,
  PF_CUDA_MEMCPY_DEFAULT = 4,
};

/* cudaHostRegister flags */
#define PF_CUDA_HOST_REGISTER_DEFAULT 0x00
#define PF_CUDA_HOST_REGISTER_PORTABLE 0x01
#define PF_CUDA_HOST_REGISTER_MAPPED 0x02
#define PF_CUDA_HOST_REGISTER_IO_MEMORY 0x04
#define PF_CUDA_HOST_REGISTER_READ_ONLY 0x08
/* cudaStreamCreateWithFlags */
#define PF_CUDA_STREAM_NON_BLOCKING 0x01
/* cudaEventCreateWithFlags */
#define PF_CUDA_EVENT_BLOCKING_SYNC 0x01
#define PF_CUDA_EVENT_DISABLE_TIMING 0x02
/* enum cudaDeviceAttr */
#define PF_CUDA_DEV_ATTR_HOST_REGISTER_READ_ONLY_SUPPORTED 113

/**
 * PfCudaRuntime:
 *
 * The function table. Valid for the life of the process once returned by
 * pf_cuda_runtime_get() (the library is never closed: host registrations
 * cached on segments are released through it when the segments die).
 */
typedef struct
{
  gchar *library;               /* what was opened (name or path) */
  gchar *key;                   /* GST_PINNEDFLOW_CUDART, or "(default)" */
  int runtime_version;          /* cudaRuntimeGetVersion(), 0 if unknown */

  const char *(*GetErrorString) (PfCudaError err);
  const char *(*GetErrorName) (PfCudaError err);
  PfCudaError (*RuntimeGetVersion) (int *version);
  PfCudaError (*DriverGetVersion) (int *version);
  PfCudaError (*GetDeviceCount) (int *count);
  PfCudaError (*SetDevice) (int device);
  PfCudaError (*GetDevice) (int *device);
  PfCudaError (*DeviceGetAttribute) (int *value, PfCudaDeviceAttr attr,
      int device);
  PfCudaError (*StreamCreateWithFlags) (PfCudaStream * stream,
      unsigned int flags);
  PfCudaError (*StreamDestroy) (PfCudaStream stream);
  PfCudaError (*StreamSynchronize) (PfCudaStream stream);
  PfCudaError (*StreamWaitEvent) (PfCudaStream stream, PfCudaEvent event,
      unsigned int flags);
  PfCudaError (*EventCreateWithFlags) (PfCudaEvent * event,
      unsigned int flags);
  PfCudaError (*EventDestroy) (PfCudaEvent event);
  PfCudaError (*EventRecord) (PfCudaEvent event, PfCudaStream stream);
  PfCudaError (*EventQuery) (PfCudaEvent event);
  PfCudaError (*EventSynchronize) (PfCudaEvent event);
  PfCudaError (*MallocPitch) (void **dev_ptr, size_t * pitch, size_t width,
      size_t height);
  PfCudaError (*Free) (void *dev_ptr);
  PfCudaError (*Memcpy2D) (void *dst, size_t dpitch, const void *src,
      size_t spitch, size_t width, size_t height, PfCudaMemcpyKind kind);
  PfCudaError (*Memcpy2DAsync) (void *dst, size_t dpitch, const void *src,
      size_t spitch, size_t width, size_t height, PfCudaMemcpyKind kind,
      PfCudaStream stream);
  PfCudaError (*HostRegister) (void *ptr, size_t size, unsigned int flags);
  PfCudaError (*HostUnregister) (void *ptr);
} PfCudaRuntime;

#define PF_CUDA_RUNTIME_ERROR (pf_cuda_runtime_error_quark ())
GQuark pf_cuda_runtime_error_quark (void);

typedef enum
{
  PF_CUDA_RUNTIME_ERROR_NOT_FOUND,      /* no library could be opened */
  PF_CUDA_RUNTIME_ERROR_SYMBOL,         /* a function is missing */
  PF_CUDA_RUNTIME_ERROR_NO_DEVICE,      /* cudaGetDeviceCount failed or 0 */
  PF_CUDA_RUNTIME_ERROR_CALL,           /* a CUDA call failed */
} PfCudaRuntimeError;

/* The runtime for the current value of GST_PINNEDFLOW_CUDART (or the
 * default names). Thread-safe; a library that failed is tried again on the
 * next call. The error message names every library tried. */
const PfCudaRuntime *pf_cuda_runtime_get (GError ** error);

/* Loads the runtime, checks that @device_id exists and makes it current on
 * the calling thread. The error names the library and gives the error
 * string of cudaGetDeviceCount()/cudaSetDevice(). */
const PfCudaRuntime *pf_cuda_runtime_open_device (int device_id,
    GError ** error);

/* "cudaErrorX (N): string" for @err, from the runtime's own strings. */
gchar *pf_cuda_error_describe (const PfCudaRuntime * rt, PfCudaError err);

/* Makes @device_id current on the calling thread (cudaSetDevice, only when
 * another device is current) before CUDA calls on a thread that may not
 * have set it: pool frees, segment destroy notifies, CPU maps, application
 * threads. Returns what pf_cuda_device_leave() needs to restore the
 * caller's device (-1: nothing to restore). */
int pf_cuda_device_enter (const PfCudaRuntime * rt, int device_id);
void pf_cuda_device_leave (const PfCudaRuntime * rt, int device_id,
    int previous);

G_END_DECLS
#endif /* __GST_PINNED_CUDA_LOADER_H__ */
