/* pfemu-cuda: a stand-in for the CUDA driver API library (libcuda.so.1)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Built as libcuda.so.1 in its own build folder (tests/cuda/emu), so that
 * LD_LIBRARY_PATH can put it before a real driver without putting anything
 * else there. It exports every symbol GStreamer's gst_cuda_load_library()
 * resolves, in 1.22 (Debian 12's libgstcuda-1.0) and in 1.28 (the
 * mandatory ones and the three optional groups: virtual memory,
 * stream-ordered allocation, external resource interop), under the names
 * the loader asks for (the _v2 ones where cuda.h maps to them), plus the
 * few more a user of contexts may want (primary contexts, cuCtxGetCurrent,
 * cuMemHostRegister, events, cuPointerGetAttribute).
 *
 * No state here: every call goes to the core in libpfemu-cudart.so (this
 * library links against it; see pfemu-core.h), so device memory, host
 * registrations, streams, events and contexts are one "GPU" shared with
 * the cudart emulator in the same process, and cudart's primary context is
 * this library's primary context. Device memory faults on host access
 * (a PROT_NONE mapping), asynchronous copies run late on the stream's
 * worker, PFEMU_FAIL names driver calls in full (cuMemcpy2DAsync_v2:2:700).
 * The driver's rules are kept: cuInit first (CUDA_ERROR_NOT_INITIALIZED),
 * a current context for what needs one (CUDA_ERROR_INVALID_CONTEXT, never
 * made current by itself), cuCtxCreate pushes, cuCtxPopCurrent pops.
 *
 * What a GPU does and the emulator cannot (kernels, modules, textures,
 * graphics interop, memory pools, external resources)
 * returns CUDA_ERROR_NOT_SUPPORTED (801); the device attributes say those
 * features are absent, so GStreamer does not try them. Virtual memory
 * management (cuMemCreate, cuMemMap, POSIX-fd export and import) is
 * pfemu-cuda-vmm.c's, built into the same library, on with PFEMU_VMM=1;
 * legacy IPC (cuIpcGetMemHandle, cuIpcOpenMemHandle, cuIpcCloseMemHandle,
 * cuIpcGetEventHandle, cuIpcOpenEventHandle) is pfemu-cuda-ipc.c's, on
 * with PFEMU_IPC=1.
 */
#include "pfemu-core.h"
#include "pfemu-cuda.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The functions are declared by their users (cuda.h), not here. */
#pragma GCC diagnostic ignored "-Wmissing-prototypes"

#define EXPORT __attribute__ ((visibility ("default")))

enum
{
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_NOT_SUPPORTED = 801,
};

#define PTR(d) ((void *) (uintptr_t) (d))
#define DPTR(p) ((CUdeviceptr) (uintptr_t) (p))

/* The core speaks cudart's numbers; the one the driver spells otherwise:
 * cudaErrorInvalidMemcpyDirection (21) is CUDA_ERROR_INVALID_VALUE. */
static CUresult
to_cu (int err)
{
  return err == 21 ? CUDA_ERROR_INVALID_VALUE : err;
}

/* A driver call: counted and checked by the core, then run; a release
 * made under a sticky error releases and reports it. */
#define CALL(name, api, op) do {                                \
    CUresult r_ = pfemu_core_enter (name, api);                 \
    if (r_ == CUDA_SUCCESS)                                     \
      r_ = to_cu (op);                                          \
    if (r_ == CUDA_SUCCESS)                                     \
      r_ = pfemu_core_take_release_error ();                    \
    return r_;                                                  \
  } while (0)
#define NOCTX PFEMU_API_DRIVER
#define CTX PFEMU_API_DRIVER_CTX

/* A stream handle: CU_STREAM_LEGACY (1) and CU_STREAM_PER_THREAD (2) are
 * the legacy default stream, as NULL is. */
static void *
stream_of (CUstream s)
{
  return (uintptr_t) s <= 2 ? NULL : s;
}

/* ------------------------------------------------------------- errors */

static const struct
{
  CUresult code;
  const char *name, *str;
} errors[] = {
  {0, "CUDA_SUCCESS", "no error"},
  {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
  {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
  {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
  {46, "CUDA_ERROR_DEVICES_UNAVAILABLE",
      "all CUDA-capable devices are busy or unavailable"},
  {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
  {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
  {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
  {208, "CUDA_ERROR_ALREADY_MAPPED", "resource already mapped"},
  {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
  {600, "CUDA_ERROR_NOT_READY", "device not ready"},
  {700, "CUDA_ERROR_ILLEGAL_ADDRESS",
      "an illegal memory access was encountered"},
  {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
  {712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
      "part or all of the requested memory range is already mapped"},
  {713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
      "pointer does not correspond to a registered memory region"},
  {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
  {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
  {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static CUresult
error_text (CUresult error, const char **str, int name)
{
  if (!str)
    return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
    if (errors[i].code == error) {
      *str = name ? errors[i].name : errors[i].str;
      return CUDA_SUCCESS;
    }
  }
  *str = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult
cuGetErrorName (CUresult error, const char **str)
{
  CALL ("cuGetErrorName", NOCTX, error_text (error, str, 1));
}

EXPORT CUresult
cuGetErrorString (CUresult error, const char **str)
{
  CALL ("cuGetErrorString", NOCTX, error_text (error, str, 0));
}

/* ---------------------------------------------------- init and device */

static int
driver_version (int *v)
{
  if (!v)
    return CUDA_ERROR_INVALID_VALUE;
  *v = 13000;
  return CUDA_SUCCESS;
}

EXPORT CUresult
cuInit (unsigned int flags)
{
  CALL ("cuInit", NOCTX, pfemu_core_Init (flags));
}

EXPORT CUresult
cuDriverGetVersion (int *version)
{
  CALL ("cuDriverGetVersion", NOCTX, driver_version (version));
}

static int
device_get (CUdevice * dev, int ordinal)
{
  int count = 0, err;

  if (!dev)
    return CUDA_ERROR_INVALID_VALUE;
  if ((err = pfemu_core_GetDeviceCount (&count)) != 0)
    return err;
  if (ordinal < 0 || ordinal >= count)
    return 101;
  *dev = ordinal;
  return CUDA_SUCCESS;
}

static int
check_device (CUdevice dev)
{
  int count = 0, err;

  if ((err = pfemu_core_GetDeviceCount (&count)) != 0)
    return err;
  return dev >= 0 && dev < count ? CUDA_SUCCESS : 101;
}

EXPORT CUresult
cuDeviceGet (CUdevice * dev, int ordinal)
{
  CALL ("cuDeviceGet", NOCTX, device_get (dev, ordinal));
}

EXPORT CUresult
cuDeviceGetCount (int *count)
{
  CALL ("cuDeviceGetCount", NOCTX, pfemu_core_GetDeviceCount (count));
}

static int
device_name (char *name, int len, CUdevice dev)
{
  int err;

  if (!name || len <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  if ((err = check_device (dev)) != 0)
    return err;
  snprintf (name, (size_t) len, "pfemu emulated CUDA device %d", dev);
  return CUDA_SUCCESS;
}

EXPORT CUresult
cuDeviceGetName (char *name, int len, CUdevice dev)
{
  CALL ("cuDeviceGetName", NOCTX, device_name (name, len, dev));
}

static int
device_uuid (unsigned char *uuid, CUdevice dev)
{
  int err;

  if (!uuid)
    return CUDA_ERROR_INVALID_VALUE;
  if ((err = check_device (dev)) != 0)
    return err;
  memcpy (uuid, "pfemu-device-000", 16);
  uuid[15] = (unsigned char) ('0' + dev);
  return CUDA_SUCCESS;
}

EXPORT CUresult
cuDeviceGetUuid (void *uuid, CUdevice dev)
{
  CALL ("cuDeviceGetUuid", NOCTX, device_uuid (uuid, dev));
}

EXPORT CUresult
cuDeviceGetUuid_v2 (void *uuid, CUdevice dev)
{
  CALL ("cuDeviceGetUuid_v2", NOCTX, device_uuid (uuid, dev));
}

static int
device_total_mem (size_t *bytes, CUdevice dev)
{
  int err;

  if (!bytes)
    return CUDA_ERROR_INVALID_VALUE;
  if ((err = check_device (dev)) != 0)
    return err;
  *bytes = (size_t) 8 << 30;
  return CUDA_SUCCESS;
}

EXPORT CUresult
cuDeviceTotalMem_v2 (size_t *bytes, CUdevice dev)
{
  CALL ("cuDeviceTotalMem_v2", NOCTX, device_total_mem (bytes, dev));
}

/* The attributes of an 8.6 device without memory pools, and without
 * virtual memory management or exportable handles unless PFEMU_VMM=1
 * (102 and 103; so GStreamer keeps to plain allocations). Those cudart
 * shares (20 compute mode, 36, 51, 99, 113: see pfemu.h's
 * switches) come from the core; any other valid attribute is 0. */
static int
device_attribute (int *value, int attr, CUdevice dev)
{
  static const struct
  {
    int attr, value;
  } table[] = {
    {1, 1024}, {2, 1024}, {3, 1024}, {4, 64}, {5, 2147483647}, {6, 65535},
    {7, 65535}, {8, 49152}, {9, 65536}, {10, 32}, {11, 2147483647},
    {12, 65536}, {13, 1710000}, {14, 512}, {15, 1}, {16, 68}, {19, 1},
    {31, 1}, {33, 1}, {37, 320}, {38, 5242880}, {39, 1536}, {40, 2},
    {41, 1}, {75, 8}, {76, 6}, {102, 0}, {103, 0}, {104, 0}, {105, 0},
    {115, 0},
  };
  int err;

  if (!value)
    return CUDA_ERROR_INVALID_VALUE;
  if ((err = check_device (dev)) != 0)
    return err;
  if (attr == 20 || attr == 36 || attr == 51 || attr == 99 || attr == 113)
    return pfemu_core_DeviceGetAttribute (value, attr, dev);
  if (attr == 102 || attr == 103) {
    /* virtual memory and its POSIX-fd handles (pfemu-cuda-vmm.c) */
    const char *vmm = getenv ("PFEMU_VMM");
    *value = vmm && strcmp (vmm, "1") == 0;
    return CUDA_SUCCESS;
  }
  if (attr <= 0 || attr >= 140)
    return CUDA_ERROR_INVALID_VALUE;
  *value = 0;
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (table[i].attr == attr)
      *value = table[i].value;
  return CUDA_SUCCESS;
}

EXPORT CUresult
cuDeviceGetAttribute (int *value, int attr, CUdevice dev)
{
  CALL ("cuDeviceGetAttribute", NOCTX, device_attribute (value, attr, dev));
}

static int
can_access_peer (int *can, CUdevice dev, CUdevice peer)
{
  int err;

  if (!can)
    return CUDA_ERROR_INVALID_VALUE;
  if ((err = check_device (dev)) != 0 || (err = check_device (peer)) != 0)
    return err;
  *can = 0;
  return CUDA_SUCCESS;
}

EXPORT CUresult
cuDeviceCanAccessPeer (int *can, CUdevice dev, CUdevice peer)
{
  CALL ("cuDeviceCanAccessPeer", NOCTX, can_access_peer (can, dev, peer));
}

/* ----------------------------------------------------------- contexts */

EXPORT CUresult
cuCtxCreate_v2 (CUcontext * ctx, unsigned int flags, CUdevice dev)
{
  CALL ("cuCtxCreate_v2", NOCTX, pfemu_core_CtxCreate (ctx, flags, dev));
}

EXPORT CUresult
cuCtxDestroy_v2 (CUcontext ctx)
{
  CALL ("cuCtxDestroy_v2", NOCTX, pfemu_core_CtxDestroy (ctx));
}

EXPORT CUresult
cuCtxPushCurrent_v2 (CUcontext ctx)
{
  CALL ("cuCtxPushCurrent_v2", NOCTX, pfemu_core_CtxPushCurrent (ctx));
}

EXPORT CUresult
cuCtxPopCurrent_v2 (CUcontext * ctx)
{
  CALL ("cuCtxPopCurrent_v2", NOCTX, pfemu_core_CtxPopCurrent (ctx));
}

/* the same ABI under the old names */
EXPORT CUresult
cuCtxCreate (CUcontext * ctx, unsigned int flags, CUdevice dev)
{
  CALL ("cuCtxCreate", NOCTX, pfemu_core_CtxCreate (ctx, flags, dev));
}

EXPORT CUresult
cuCtxDestroy (CUcontext ctx)
{
  CALL ("cuCtxDestroy", NOCTX, pfemu_core_CtxDestroy (ctx));
}

EXPORT CUresult
cuCtxPushCurrent (CUcontext ctx)
{
  CALL ("cuCtxPushCurrent", NOCTX, pfemu_core_CtxPushCurrent (ctx));
}

EXPORT CUresult
cuCtxPopCurrent (CUcontext * ctx)
{
  CALL ("cuCtxPopCurrent", NOCTX, pfemu_core_CtxPopCurrent (ctx));
}

EXPORT CUresult
cuCtxGetCurrent (CUcontext * ctx)
{
  CALL ("cuCtxGetCurrent", NOCTX, pfemu_core_CtxGetCurrent (ctx));
}

EXPORT CUresult
cuCtxSetCurrent (CUcontext ctx)
{
  CALL ("cuCtxSetCurrent", NOCTX, pfemu_core_CtxSetCurrent (ctx));
}

EXPORT CUresult
cuCtxGetDevice (CUdevice * dev)
{
  CALL ("cuCtxGetDevice", CTX, pfemu_core_CtxGetDevice (dev));
}

EXPORT CUresult
cuCtxSynchronize (void)
{
  CALL ("cuCtxSynchronize", CTX, pfemu_core_CtxSynchronize ());
}

EXPORT CUresult
cuCtxGetLimit (size_t *value, int limit)
{
  CALL ("cuCtxGetLimit", CTX, pfemu_core_CtxGetLimit (value, limit));
}

EXPORT CUresult
cuCtxSetLimit (int limit, size_t value)
{
  CALL ("cuCtxSetLimit", CTX, pfemu_core_CtxSetLimit (limit, value));
}

EXPORT CUresult
cuDevicePrimaryCtxRetain (CUcontext * ctx, CUdevice dev)
{
  CALL ("cuDevicePrimaryCtxRetain", NOCTX,
      pfemu_core_PrimaryCtxRetain (ctx, dev));
}

EXPORT CUresult
cuDevicePrimaryCtxRelease_v2 (CUdevice dev)
{
  CALL ("cuDevicePrimaryCtxRelease_v2", NOCTX,
      pfemu_core_PrimaryCtxRelease (dev));
}

EXPORT CUresult
cuDevicePrimaryCtxRelease (CUdevice dev)
{
  CALL ("cuDevicePrimaryCtxRelease", NOCTX, pfemu_core_PrimaryCtxRelease (dev));
}

EXPORT CUresult
cuDevicePrimaryCtxGetState (CUdevice dev, unsigned int *flags, int *active)
{
  CALL ("cuDevicePrimaryCtxGetState", NOCTX,
      pfemu_core_PrimaryCtxGetState (dev, flags, active));
}

EXPORT CUresult
cuDevicePrimaryCtxSetFlags_v2 (CUdevice dev, unsigned int flags)
{
  CALL ("cuDevicePrimaryCtxSetFlags_v2", NOCTX, check_device (dev));
}

EXPORT CUresult
cuDevicePrimaryCtxSetFlags (CUdevice dev, unsigned int flags)
{
  CALL ("cuDevicePrimaryCtxSetFlags", NOCTX, check_device (dev));
}

/* ------------------------------------------------------------- memory */

EXPORT CUresult
cuMemAlloc_v2 (CUdeviceptr * dptr, size_t bytes)
{
  void *p = NULL;
  CUresult r = pfemu_core_enter ("cuMemAlloc_v2", CTX);

  if (r == CUDA_SUCCESS && !dptr)
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS && (r = to_cu (pfemu_core_Malloc (&p, bytes))) == 0)
    *dptr = DPTR (p);
  return r;
}

/* ElementSizeBytes must be 4, 8 or 16, as the driver requires. */
EXPORT CUresult
cuMemAllocPitch_v2 (CUdeviceptr * dptr, size_t *pitch, size_t width,
    size_t height, unsigned int element_size)
{
  void *p = NULL;
  CUresult r = pfemu_core_enter ("cuMemAllocPitch_v2", CTX);

  if (r == CUDA_SUCCESS && (!dptr || (element_size != 4 && element_size != 8
              && element_size != 16)))
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS &&
      (r = to_cu (pfemu_core_MallocPitch (&p, pitch, width, height))) == 0)
    *dptr = DPTR (p);
  return r;
}

EXPORT CUresult
cuMemFree_v2 (CUdeviceptr dptr)
{
  CALL ("cuMemFree_v2", CTX, pfemu_core_Free (PTR (dptr)));
}

EXPORT CUresult
cuMemAllocHost_v2 (void **pp, size_t bytes)
{
  CALL ("cuMemAllocHost_v2", CTX, pfemu_core_HostAlloc (pp, bytes));
}

EXPORT CUresult
cuMemHostAlloc (void **pp, size_t bytes, unsigned int flags)
{
  CALL ("cuMemHostAlloc", CTX, pfemu_core_HostAlloc (pp, bytes));
}

EXPORT CUresult
cuMemFreeHost (void *p)
{
  CALL ("cuMemFreeHost", CTX, pfemu_core_HostFree (p));
}

EXPORT CUresult
cuMemHostRegister_v2 (void *p, size_t bytes, unsigned int flags)
{
  CALL ("cuMemHostRegister_v2", CTX, pfemu_core_HostRegister (p, bytes, flags));
}

EXPORT CUresult
cuMemHostRegister (void *p, size_t bytes, unsigned int flags)
{
  CALL ("cuMemHostRegister", CTX, pfemu_core_HostRegister (p, bytes, flags));
}

EXPORT CUresult
cuMemHostUnregister (void *p)
{
  CALL ("cuMemHostUnregister", CTX, pfemu_core_HostUnregister (p));
}

static int
mem_get_info (size_t *free_bytes, size_t *total)
{
  if (!free_bytes || !total)
    return CUDA_ERROR_INVALID_VALUE;
  *total = (size_t) 8 << 30;
  *free_bytes = (size_t) 7 << 30;
  return CUDA_SUCCESS;
}

EXPORT CUresult
cuMemGetInfo_v2 (size_t *free_bytes, size_t *total)
{
  CALL ("cuMemGetInfo_v2", CTX, mem_get_info (free_bytes, total));
}

/* cuPointerGetAttribute: what the core knows of the pointer (its
 * allocation, cuMemMap mapping, IPC-opened allocation or host
 * registration), as cuda.h types each attribute: CONTEXT (1) the
 * allocating, opening or registering context, NULL for a mapping (it
 * belongs to none); MEMORY_TYPE (2); DEVICE_POINTER (3); HOST_POINTER (4,
 * host memory only); BUFFER_ID (7, unsigned long long, unique per
 * allocation or mapping); IS_MANAGED (8, a bool: 0); DEVICE_ORDINAL (9,
 * the device the memory is on); IS_LEGACY_CUDA_IPC_CAPABLE (10, a bool: 1
 * for cuMemAlloc memory); RANGE_START_ADDR / RANGE_SIZE (11, 12) and
 * MAPPING_BASE_ADDR / MAPPING_SIZE (19, 18): the allocation or mapping
 * holding it; MAPPED (13, a bool: 1); ALLOWED_HANDLE_TYPES (14, unsigned
 * long long: a mapping's requestedHandleTypes, 0 otherwise); ACCESS_FLAGS
 * (16, int: the current context's device's access, 0 none, 1 read, 3
 * read-write). A pointer the device does not know:
 * CUDA_ERROR_INVALID_VALUE; any other attribute: CUDA_ERROR_NOT_SUPPORTED.
 * (The bools are one byte, as cuda-python's binding reads them.) */
static int
pointer_attribute (void *data, int attr, CUdeviceptr ptr)
{
  struct pfemu_core_ptr info;

  if (!data || pfemu_core_PointerInfo (PTR (ptr), &info) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  switch (attr) {
    case 1:
      *(void **) data = info.ctx;
      return CUDA_SUCCESS;
    case 2:
      *(unsigned int *) data = (unsigned int) info.type;
      return CUDA_SUCCESS;
    case 3:
      *(CUdeviceptr *) data = ptr;
      return CUDA_SUCCESS;
    case 4:
      if (info.type != CU_MEMORYTYPE_HOST)
        return CUDA_ERROR_INVALID_VALUE;
      *(void **) data = PTR (ptr);
      return CUDA_SUCCESS;
    case 7:
      *(unsigned long long *) data = info.id;
      return CUDA_SUCCESS;
    case 8:
      *(unsigned char *) data = 0;
      return CUDA_SUCCESS;
    case 9:
      *(int *) data = info.device;
      return CUDA_SUCCESS;
    case 10:
      *(unsigned char *) data = info.kind == PFEMU_PTR_ALLOC;
      return CUDA_SUCCESS;
    case 11:
    case 19:
      *(CUdeviceptr *) data = DPTR (info.base);
      return CUDA_SUCCESS;
    case 12:
    case 18:
      *(size_t *) data = info.size;
      return CUDA_SUCCESS;
    case 13:
      *(unsigned char *) data = 1;
      return CUDA_SUCCESS;
    case 14:
      *(unsigned long long *) data = (unsigned long long) info.handle_types;
      return CUDA_SUCCESS;
    case 16:
      *(int *) data = (int) info.access;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_NOT_SUPPORTED;
  }
}

EXPORT CUresult
cuPointerGetAttribute (void *data, int attr, CUdeviceptr ptr)
{
  CALL ("cuPointerGetAttribute", NOCTX, pointer_attribute (data, attr, ptr));
}

/* cuPointerGetAttributes: each attribute as above; a pointer the device
 * does not know is no error here (as the driver documents): every
 * attribute reads its zero (NULL, 0, false); one not supported: 801,
 * nothing written after it. */
static int
pointer_attributes (unsigned int n, const int *attrs, void **data,
    CUdeviceptr ptr)
{
  struct pfemu_core_ptr info;
  int known;

  if (n == 0 || !attrs || !data)
    return CUDA_ERROR_INVALID_VALUE;
  known = pfemu_core_PointerInfo (PTR (ptr), &info) == 0;
  for (unsigned int i = 0; i < n; i++) {
    int r;
    if (!data[i])
      return CUDA_ERROR_INVALID_VALUE;
    if (known) {
      if ((r = pointer_attribute (data[i], attrs[i], ptr)) == CUDA_SUCCESS)
        continue;
      if (r != CUDA_ERROR_INVALID_VALUE || attrs[i] != 4)
        return r;
    }
    switch (attrs[i]) {
      case 1:
      case 3:
      case 4:
      case 11:
      case 19:
        *(void **) data[i] = NULL;
        break;
      case 2:
      case 9:
      case 16:
        *(int *) data[i] = 0;
        break;
      case 7:
      case 14:
        *(unsigned long long *) data[i] = 0;
        break;
      case 8:
      case 10:
      case 13:
        *(unsigned char *) data[i] = 0;
        break;
      case 12:
      case 18:
        *(size_t *) data[i] = 0;
        break;
      default:
        return CUDA_ERROR_NOT_SUPPORTED;
    }
  }
  return CUDA_SUCCESS;
}

EXPORT CUresult
cuPointerGetAttributes (unsigned int n, int *attrs, void **data,
    CUdeviceptr ptr)
{
  CALL ("cuPointerGetAttributes", NOCTX, pointer_attributes (n, attrs, data,
          ptr));
}

/* ------------------------------------------------------------- copies */

/* One side of a CUDA_MEMCPY2D: its first byte and whether it is device
 * memory (-1: the type says "unified", inferred from the pointer). */
static int
copy_side (int type, const void *host, CUdeviceptr dev, size_t x, size_t y,
    size_t pitch, const char **p, int *is_dev)
{
  switch (type) {
    case CU_MEMORYTYPE_HOST:
      *p = host;
      *is_dev = 0;
      break;
    case CU_MEMORYTYPE_DEVICE:
      *p = PTR (dev);
      *is_dev = 1;
      break;
    case CU_MEMORYTYPE_UNIFIED:
      *p = PTR (dev);
      *is_dev = -1;
      break;
    case CU_MEMORYTYPE_ARRAY:
      return CUDA_ERROR_NOT_SUPPORTED;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  if (!*p)
    return CUDA_ERROR_INVALID_VALUE;
  *p += y * pitch + x;
  return CUDA_SUCCESS;
}

static int
copy2d (const CUDA_MEMCPY2D * c, CUstream stream, int async)
{
  const char *src, *dst;
  int src_dev, dst_dev, kind, err;

  if (!c)
    return CUDA_ERROR_INVALID_VALUE;
  if ((err = copy_side (c->srcMemoryType, c->srcHost, c->srcDevice,
              c->srcXInBytes, c->srcY, c->srcPitch, &src, &src_dev)) != 0 ||
      (err = copy_side (c->dstMemoryType, c->dstHost, c->dstDevice,
              c->dstXInBytes, c->dstY, c->dstPitch, &dst, &dst_dev)) != 0)
    return err;
  if (src_dev < 0 || dst_dev < 0)
    kind = 4;
  else
    kind = (src_dev ? 2 : 0) | (dst_dev ? 1 : 0);
  if (async)
    return pfemu_core_Memcpy2DAsync ((void *) dst, c->dstPitch, src,
        c->srcPitch, c->WidthInBytes, c->Height, kind, stream_of (stream));
  return pfemu_core_Memcpy2D ((void *) dst, c->dstPitch, src, c->srcPitch,
      c->WidthInBytes, c->Height, kind);
}

EXPORT CUresult
cuMemcpy2D_v2 (const CUDA_MEMCPY2D * copy)
{
  CALL ("cuMemcpy2D_v2", CTX, copy2d (copy, NULL, 0));
}

EXPORT CUresult
cuMemcpy2DAsync_v2 (const CUDA_MEMCPY2D * copy, CUstream stream)
{
  CALL ("cuMemcpy2DAsync_v2", CTX, copy2d (copy, stream, 1));
}

EXPORT CUresult
cuMemcpy2DUnaligned_v2 (const CUDA_MEMCPY2D * copy)
{
  CALL ("cuMemcpy2DUnaligned_v2", CTX, copy2d (copy, NULL, 0));
}

/* 1D copies: one row of @bytes. */
static int
copy1d (void *dst, const void *src, size_t bytes, int kind, CUstream stream,
    int async)
{
  if (bytes == 0)
    return CUDA_SUCCESS;
  if (async)
    return pfemu_core_Memcpy2DAsync (dst, bytes, src, bytes, bytes, 1, kind,
        stream_of (stream));
  return pfemu_core_Memcpy2D (dst, bytes, src, bytes, bytes, 1, kind);
}

EXPORT CUresult
cuMemcpyHtoD_v2 (CUdeviceptr dst, const void *src, size_t bytes)
{
  CALL ("cuMemcpyHtoD_v2", CTX, copy1d (PTR (dst), src, bytes, 1, NULL, 0));
}

EXPORT CUresult
cuMemcpyDtoH_v2 (void *dst, CUdeviceptr src, size_t bytes)
{
  CALL ("cuMemcpyDtoH_v2", CTX, copy1d (dst, PTR (src), bytes, 2, NULL, 0));
}

EXPORT CUresult
cuMemcpyDtoD_v2 (CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
  CALL ("cuMemcpyDtoD_v2", CTX, copy1d (PTR (dst), PTR (src), bytes, 3, NULL,
          0));
}

EXPORT CUresult
cuMemcpyHtoDAsync_v2 (CUdeviceptr dst, const void *src, size_t bytes,
    CUstream s)
{
  CALL ("cuMemcpyHtoDAsync_v2", CTX, copy1d (PTR (dst), src, bytes, 1, s, 1));
}

EXPORT CUresult
cuMemcpyDtoHAsync_v2 (void *dst, CUdeviceptr src, size_t bytes, CUstream s)
{
  CALL ("cuMemcpyDtoHAsync_v2", CTX, copy1d (dst, PTR (src), bytes, 2, s, 1));
}

EXPORT CUresult
cuMemcpyDtoDAsync_v2 (CUdeviceptr dst, CUdeviceptr src, size_t bytes,
    CUstream s)
{
  CALL ("cuMemcpyDtoDAsync_v2", CTX, copy1d (PTR (dst), PTR (src), bytes, 3,
          s, 1));
}

EXPORT CUresult
cuMemcpy (CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
  CALL ("cuMemcpy", CTX, copy1d (PTR (dst), PTR (src), bytes, 4, NULL, 0));
}

/* cuMemcpyPeer: @bytes of device memory of @src_ctx's device into
 * @dst_ctx's device, complete when it returns. As strict as a GPU's MMU:
 * the source is read as @src_ctx's device and the destination written as
 * @dst_ctx's (a mapping without that device's access faults: 700,
 * sticky), so a plain cuMemcpyDtoD between two devices' mappings fails
 * where this works. Staged through host memory, as a copy between devices
 * without peer access is. */
static int
copy_peer (CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
    CUcontext src_ctx, size_t bytes)
{
  void *stage, *popped;
  int err;

  if (!dst_ctx || !src_ctx ||
      pfemu_core_PointerMemoryType (PTR (dst)) != CU_MEMORYTYPE_DEVICE ||
      pfemu_core_PointerMemoryType (PTR (src)) != CU_MEMORYTYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  if (bytes == 0)
    return CUDA_SUCCESS;
  if (!(stage = malloc (bytes)))
    return 2;                   /* CUDA_ERROR_OUT_OF_MEMORY */
  if ((err = pfemu_core_CtxPushCurrent (src_ctx)) != 0)
    goto out;
  err = pfemu_core_Memcpy2D (stage, bytes, PTR (src), bytes, bytes, 1, 2);
  pfemu_core_CtxPopCurrent (&popped);
  if (err != 0 || (err = pfemu_core_CtxPushCurrent (dst_ctx)) != 0)
    goto out;
  err = pfemu_core_Memcpy2D (PTR (dst), bytes, stage, bytes, bytes, 1, 1);
  if (err == 0)
    err = pfemu_core_CtxSynchronize (); /* the staged half has landed */
  pfemu_core_CtxPopCurrent (&popped);
out:
  free (stage);
  return err;
}

EXPORT CUresult
cuMemcpyPeer (CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
    CUcontext src_ctx, size_t bytes)
{
  CALL ("cuMemcpyPeer", NOCTX, copy_peer (dst, dst_ctx, src, src_ctx, bytes));
}

EXPORT CUresult
cuMemcpyAsync (CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s)
{
  CALL ("cuMemcpyAsync", CTX, copy1d (PTR (dst), PTR (src), bytes, 4, s, 1));
}

/* the synchronous ones are _v2, the Async ones are not */
#define MEMSET2D(name, async_name, type, size)                          \
EXPORT CUresult                                                         \
name (CUdeviceptr dst, size_t pitch, type value, size_t width,          \
    size_t height)                                                      \
{                                                                       \
  CALL (#name, CTX, pfemu_core_Memset2D (PTR (dst), pitch, value,       \
          size, width, height, NULL, 0));                               \
}                                                                       \
EXPORT CUresult                                                         \
async_name (CUdeviceptr dst, size_t pitch, type value, size_t width,    \
    size_t height, CUstream s)                                          \
{                                                                       \
  CALL (#async_name, CTX, pfemu_core_Memset2D (PTR (dst), pitch,        \
          value, size, width, height, stream_of (s), 1));               \
}

/* *INDENT-OFF* */
MEMSET2D (cuMemsetD2D8_v2, cuMemsetD2D8Async, unsigned char, 1)
MEMSET2D (cuMemsetD2D16_v2, cuMemsetD2D16Async, unsigned short, 2)
MEMSET2D (cuMemsetD2D32_v2, cuMemsetD2D32Async, unsigned int, 4)
/* *INDENT-ON* */

/* ---------------------------------------------------- streams, events */

EXPORT CUresult
cuStreamCreate (CUstream * s, unsigned int flags)
{
  CALL ("cuStreamCreate", CTX, pfemu_core_StreamCreateWithFlags (s, flags));
}

EXPORT CUresult
cuStreamCreateWithPriority (CUstream * s, unsigned int flags, int priority)
{
  CALL ("cuStreamCreateWithPriority", CTX,
      pfemu_core_StreamCreateWithFlags (s, flags));
}

EXPORT CUresult
cuStreamDestroy_v2 (CUstream s)
{
  CALL ("cuStreamDestroy_v2", CTX, pfemu_core_StreamDestroy (s));
}

EXPORT CUresult
cuStreamDestroy (CUstream s)
{
  CALL ("cuStreamDestroy", CTX, pfemu_core_StreamDestroy (s));
}

EXPORT CUresult
cuStreamSynchronize (CUstream s)
{
  CALL ("cuStreamSynchronize", CTX,
      pfemu_core_StreamSynchronize (stream_of (s)));
}

EXPORT CUresult
cuStreamQuery (CUstream s)
{
  CALL ("cuStreamQuery", CTX, pfemu_core_StreamQuery (stream_of (s)));
}

EXPORT CUresult
cuStreamWaitEvent (CUstream s, CUevent e, unsigned int flags)
{
  CALL ("cuStreamWaitEvent", CTX,
      pfemu_core_StreamWaitEvent (stream_of (s), e, flags));
}

EXPORT CUresult
cuEventCreate (CUevent * e, unsigned int flags)
{
  CALL ("cuEventCreate", CTX, pfemu_core_EventCreateWithFlags (e, flags));
}

EXPORT CUresult
cuEventDestroy_v2 (CUevent e)
{
  CALL ("cuEventDestroy_v2", CTX, pfemu_core_EventDestroy (e));
}

EXPORT CUresult
cuEventDestroy (CUevent e)
{
  CALL ("cuEventDestroy", CTX, pfemu_core_EventDestroy (e));
}

EXPORT CUresult
cuEventRecord (CUevent e, CUstream s)
{
  CALL ("cuEventRecord", CTX, pfemu_core_EventRecord (e, stream_of (s)));
}

EXPORT CUresult
cuEventQuery (CUevent e)
{
  CALL ("cuEventQuery", CTX, pfemu_core_EventQuery (e));
}

EXPORT CUresult
cuEventSynchronize (CUevent e)
{
  CALL ("cuEventSynchronize", CTX, pfemu_core_EventSynchronize (e));
}

/* ------------------------------------------------------ not supported */

/* The driver's private interface tables (NVRTC of CUDA 13 dlopens
 * libcuda.so.1 and asks for one: without the symbol it calls NULL, which
 * crashed GStreamer 1.28's nvcodec at plugin load). There are none here. */
static int
no_export_table (const void **table, const void *id)
{
  if (!table || !id)
    return CUDA_ERROR_INVALID_VALUE;
  *table = NULL;
  return CUDA_ERROR_NOT_SUPPORTED;
}

EXPORT CUresult
cuGetExportTable (const void **table, const void *id)
{
  CALL ("cuGetExportTable", NOCTX, no_export_table (table, id));
}

/* cuGetProcAddress (CUDA 11.3+; cudart 12+ gets every entry point with
 * it): not offered, callers dlsym() the names as GStreamer does. */
static int
no_proc_address (const char *symbol, void **pfn)
{
  if (!symbol || !pfn)
    return CUDA_ERROR_INVALID_VALUE;
  *pfn = NULL;
  return CUDA_ERROR_NOT_SUPPORTED;
}

EXPORT CUresult
cuGetProcAddress (const char *symbol, void **pfn, int version,
    unsigned long long flags)
{
  CALL ("cuGetProcAddress", NOCTX, no_proc_address (symbol, pfn));
}

EXPORT CUresult
cuGetProcAddress_v2 (const char *symbol, void **pfn, int version,
    unsigned long long flags, void *status)
{
  CALL ("cuGetProcAddress_v2", NOCTX, no_proc_address (symbol, pfn));
}

/* Counted (calls.<name>), then refused: no kernels, modules, textures,
 * graphics interop, peer access, memory pools or external resources on
 * the emulated device (legacy IPC is pfemu-cuda-ipc.c's). Arguments
 * are ignored, so one signature serves them all (the caller's arguments
 * are in registers or on its own stack; nothing here reads them). */
#define UNSUPPORTED(name)                                       \
EXPORT CUresult name (void);                                    \
EXPORT CUresult                                                 \
name (void)                                                     \
{                                                               \
  CALL (#name, NOCTX, CUDA_ERROR_NOT_SUPPORTED);                \
}

/* *INDENT-OFF* */
UNSUPPORTED (cuCtxEnablePeerAccess)
UNSUPPORTED (cuCtxDisablePeerAccess)
UNSUPPORTED (cuDevicePrimaryCtxReset_v2)
UNSUPPORTED (cuDevicePrimaryCtxReset)
UNSUPPORTED (cuEventElapsedTime)
UNSUPPORTED (cuMemHostGetDevicePointer_v2)
UNSUPPORTED (cuGraphicsMapResources)
UNSUPPORTED (cuGraphicsUnmapResources)
UNSUPPORTED (cuGraphicsResourceSetMapFlags_v2)
UNSUPPORTED (cuGraphicsResourceSetMapFlags)
UNSUPPORTED (cuGraphicsSubResourceGetMappedArray)
UNSUPPORTED (cuGraphicsResourceGetMappedPointer_v2)
UNSUPPORTED (cuGraphicsUnregisterResource)
UNSUPPORTED (cuGraphicsGLRegisterImage)
UNSUPPORTED (cuGraphicsGLRegisterBuffer)
UNSUPPORTED (cuGLGetDevices_v2)
UNSUPPORTED (cuGraphicsEGLRegisterImage)
UNSUPPORTED (cuGraphicsResourceGetMappedEglFrame)
UNSUPPORTED (cuModuleLoadData)
UNSUPPORTED (cuModuleUnload)
UNSUPPORTED (cuModuleGetFunction)
UNSUPPORTED (cuTexObjectCreate)
UNSUPPORTED (cuTexObjectDestroy)
UNSUPPORTED (cuLaunchKernel)
UNSUPPORTED (cuMemAllocAsync)
UNSUPPORTED (cuMemAllocFromPoolAsync)
UNSUPPORTED (cuMemFreeAsync)
UNSUPPORTED (cuMemPoolCreate)
UNSUPPORTED (cuMemPoolDestroy)
UNSUPPORTED (cuMemPoolSetAttribute)
UNSUPPORTED (cuMemPoolGetAttribute)
UNSUPPORTED (cuDestroyExternalMemory)
UNSUPPORTED (cuDestroyExternalSemaphore)
UNSUPPORTED (cuExternalMemoryGetMappedBuffer)
UNSUPPORTED (cuExternalMemoryGetMappedMipmappedArray)
UNSUPPORTED (cuImportExternalMemory)
UNSUPPORTED (cuImportExternalSemaphore)
UNSUPPORTED (cuSignalExternalSemaphoresAsync)
UNSUPPORTED (cuWaitExternalSemaphoresAsync)
/* *INDENT-ON* */
