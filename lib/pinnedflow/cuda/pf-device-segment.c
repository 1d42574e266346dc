/* pinnedflow: device segments, CUDA virtual memory shared as fds (plain C)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * What pf-device-segment.h promises, over the driver API opened with
 * dlopen ("libcuda.so.1"): the producer's allocation (create, export,
 * reserve, map, read-write access) and the consumer's import (find the
 * device by UUID, import, reserve, map, read-only access or read-write
 * where refused). Each keeps its mapping in a struct devmap attached to
 * the pf_segment under devmap_key; devmap_destroy () undoes it in the
 * driver's order (unmap, free the range, release the handle) when the
 * segment dies, before pf-segment.c closes the fd.
 *
 * The CUDA types and values used are declared below from cuda.h (their
 * layout is the driver's ABI, the same as tests/cuda/pfemu-cuda.h's).
 *
 * Threads: any. The driver table is loaded once (pthread_once) and kept
 * for the life of the process (mappings are undone through it whenever a
 * segment dies). The error text is per thread.
 */
#include "pf-device-segment.h"
#include "pf-msg-private.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef unsigned long long cu_ptr;      /* CUdeviceptr */
typedef unsigned long long cu_handle;   /* CUmemGenericAllocationHandle */

/* cuda.h values */
#define CU_ALLOCATION_TYPE_PINNED 1
#define CU_LOCATION_TYPE_DEVICE 1
#define CU_GRANULARITY_RECOMMENDED 1
#define CU_ATTR_VMM_SUPPORTED 102
#define CU_ATTR_POSIX_FD_SUPPORTED 103
#define CU_ERROR_NOT_SUPPORTED 801

typedef struct
{
  int type;
  int id;
} cu_location;                  /* CUmemLocation */

typedef struct
{
  int type;
  int requestedHandleTypes;
  cu_location location;
  void *win32HandleMetaData;
  struct
  {
    unsigned char compressionType, gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
} cu_prop;                      /* CUmemAllocationProp */

typedef struct
{
  cu_location location;
  int flags;
} cu_access;                    /* CUmemAccessDesc */

_Static_assert (sizeof (cu_prop) == 32, "CUmemAllocationProp layout");
_Static_assert (sizeof (cu_access) == 12, "CUmemAccessDesc layout");

struct drv
{
  int (*Init) (unsigned int flags);
  int (*DeviceGet) (int *dev, int ordinal);
  int (*DeviceGetCount) (int *count);
  int (*DeviceGetUuid) (void *uuid, int dev);
  int (*DeviceGetAttribute) (int *v, int attr, int dev);
  int (*GetErrorName) (int err, const char **name);
  int (*MemGetAllocationGranularity) (size_t *g, const cu_prop * p, int opt);
  int (*MemCreate) (cu_handle * h, size_t size, const cu_prop * p,
      unsigned long long flags);
  int (*MemRelease) (cu_handle h);
  int (*MemExportToShareableHandle) (void *out, cu_handle h, int type,
      unsigned long long flags);
  int (*MemImportFromShareableHandle) (cu_handle * h, void *os, int type);
  int (*MemGetAllocationPropertiesFromHandle) (cu_prop * p, cu_handle h);
  int (*MemAddressReserve) (cu_ptr * p, size_t size, size_t align,
      cu_ptr addr, unsigned long long flags);
  int (*MemAddressFree) (cu_ptr p, size_t size);
  int (*MemMap) (cu_ptr p, size_t size, size_t offset, cu_handle h,
      unsigned long long flags);
  int (*MemUnmap) (cu_ptr p, size_t size);
  int (*MemSetAccess) (cu_ptr p, size_t size, const cu_access * d,
      size_t count);
};

static struct drv drv;
static int drv_result;
static char drv_why[256];
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;

static __thread char last_error[320];
static atomic_uint_fast64_t teardown_errors;

/* The key of our mapping among a segment's attachments. */
static const char devmap_key = 0;

struct devmap
{
  cu_ptr va;
  size_t size;
  cu_handle handle;
  int ordinal;
  unsigned int access;
};

static int fail (int err, char *why, size_t why_len, const char *fmt, ...)
    __attribute__((format (printf, 4, 5)));

/* Records the reason in the thread's text and in @why (if any). */
static int
fail (int err, char *why, size_t why_len, const char *fmt, ...)
{
  va_list ap;

  va_start (ap, fmt);
  pf_vset_msg_in (last_error, sizeof (last_error), why, why_len, fmt, ap);
  va_end (ap);
  return err;
}

const char *
pf_device_segment_error (void)
{
  return last_error;
}

static const char *
cu_name (int err)
{
  const char *n = NULL;

  if (drv.GetErrorName == NULL || drv.GetErrorName (err, &n) != 0 || !n)
    return "CUDA_ERROR_?";
  return n;
}

static void
load_driver (void)
{
  void *lib = dlopen ("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  const char *missing = NULL;

  if (lib == NULL) {
    snprintf (drv_why, sizeof (drv_why), "no CUDA driver: libcuda.so.1 "
        "cannot be opened (%s)", dlerror ());
    drv_result = -ENOENT;
    return;
  }
#define SYM(field, name) do {                                   \
    *(void **) (&drv.field) = dlsym (lib, name);                \
    if (drv.field == NULL && missing == NULL)                   \
      missing = name;                                           \
  } while (0)
  SYM (Init, "cuInit");
  SYM (DeviceGet, "cuDeviceGet");
  SYM (DeviceGetCount, "cuDeviceGetCount");
  SYM (DeviceGetAttribute, "cuDeviceGetAttribute");
  SYM (GetErrorName, "cuGetErrorName");
  SYM (MemGetAllocationGranularity, "cuMemGetAllocationGranularity");
  SYM (MemCreate, "cuMemCreate");
  SYM (MemRelease, "cuMemRelease");
  SYM (MemExportToShareableHandle, "cuMemExportToShareableHandle");
  SYM (MemImportFromShareableHandle, "cuMemImportFromShareableHandle");
  SYM (MemGetAllocationPropertiesFromHandle,
      "cuMemGetAllocationPropertiesFromHandle");
  SYM (MemAddressReserve, "cuMemAddressReserve");
  SYM (MemAddressFree, "cuMemAddressFree");
  SYM (MemMap, "cuMemMap");
  SYM (MemUnmap, "cuMemUnmap");
  SYM (MemSetAccess, "cuMemSetAccess");
#undef SYM
  /* CUDA 11.4+ names it _v2 (the same 16 bytes) */
  *(void **) (&drv.DeviceGetUuid) = dlsym (lib, "cuDeviceGetUuid_v2");
  if (drv.DeviceGetUuid == NULL)
    *(void **) (&drv.DeviceGetUuid) = dlsym (lib, "cuDeviceGetUuid");
  if (drv.DeviceGetUuid == NULL && missing == NULL)
    missing = "cuDeviceGetUuid";
  if (missing != NULL) {
    snprintf (drv_why, sizeof (drv_why), "the CUDA driver libcuda.so.1 has "
        "no %s", missing);
    drv_result = -ENOENT;
    memset (&drv, 0, sizeof (drv));
    /* kept open: dlclose of a driver is not worth the risk */
    return;
  }
  drv_result = 0;
}

/* The driver, initialised: 0, or -ENOENT/-ENODEV with the reason. */
static int
driver_get (char *why, size_t why_len)
{
  int err;

  pthread_once (&drv_once, load_driver);
  if (drv_result < 0)
    return fail (drv_result, why, why_len, "%s", drv_why);
  if ((err = drv.Init (0)) != 0)
    return fail (-ENODEV, why, why_len, "cuInit failed with %s (%d)",
        cu_name (err), err);
  return 0;
}

static void
devmap_undo (struct devmap *m)
{
  /* the driver's order: the mapping, the range, then the handle (the
   * memory lives until the last of them goes) */
  int bad = drv.MemUnmap (m->va, m->size) != 0;

  bad += drv.MemAddressFree (m->va, m->size) != 0;
  bad += drv.MemRelease (m->handle) != 0;
  /* nobody to tell in a destroy notify: counted (tests read it) */
  if (bad)
    atomic_fetch_add (&teardown_errors, (uint64_t) bad);
}

uint64_t
pf_device_segment_teardown_errors (void)
{
  return atomic_load (&teardown_errors);
}

static void
devmap_destroy (void *data)
{
  struct devmap *m = data;

  devmap_undo (m);
  free (m);
}

/* Reserves a range for @h (@size bytes, @g aligned), maps it, and gives
 * @ordinal's device @access, falling back to read-write when read-only is
 * refused and @fallback allows. 0 with @m filled (owning @h from then
 * on: undone by devmap_undo ()), or a negative errno (@h not released). */
static int
map_handle (cu_handle h, size_t size, size_t g, int ordinal, int access,
    int fallback, struct devmap *m, char *why, size_t why_len)
{
  cu_access d = { {CU_LOCATION_TYPE_DEVICE, ordinal}, access };
  cu_ptr va = 0;
  int err;

  if ((err = drv.MemAddressReserve (&va, size, g, 0, 0)) != 0)
    return fail (-EIO, why, why_len, "cuMemAddressReserve of %zu bytes "
        "failed with %s (%d)", size, cu_name (err), err);
  if ((err = drv.MemMap (va, size, 0, h, 0)) != 0) {
    drv.MemAddressFree (va, size);
    /* a size past the allocation, or a handle that is no allocation */
    return fail (-EINVAL, why, why_len, "cuMemMap of %zu bytes failed with "
        "%s (%d)", size, cu_name (err), err);
  }
  err = drv.MemSetAccess (va, size, &d, 1);
  if (err != 0 && fallback) {
    /* read-only refused by this driver: read-write, and say so */
    d.flags = PF_DEVICE_ACCESS_READWRITE;
    err = drv.MemSetAccess (va, size, &d, 1);
  }
  if (err != 0) {
    drv.MemUnmap (va, size);
    drv.MemAddressFree (va, size);
    return fail (-EIO, why, why_len, "cuMemSetAccess for device %d failed "
        "with %s (%d)", ordinal, cu_name (err), err);
  }
  m->va = va;
  m->size = size;
  m->handle = h;
  m->ordinal = ordinal;
  m->access = (unsigned int) d.flags;
  return 0;
}

/* Attributes 102 and 103: virtual memory management and POSIX-fd handles
 * (a container or VM may refuse them on a real GPU). */
static int
vmm_supported (int dev)
{
  int vmm = 0, posix = 0;

  return drv.DeviceGetAttribute (&vmm, CU_ATTR_VMM_SUPPORTED, dev) == 0 &&
      drv.DeviceGetAttribute (&posix, CU_ATTR_POSIX_FD_SUPPORTED, dev) == 0 &&
      vmm && posix;
}

static cu_prop
prop_for (int ordinal)
{
  cu_prop p;

  memset (&p, 0, sizeof (p));
  p.type = CU_ALLOCATION_TYPE_PINNED;
  p.requestedHandleTypes = PF_DEVICE_HANDLE_POSIX_FD;
  p.location.type = CU_LOCATION_TYPE_DEVICE;
  p.location.id = ordinal;
  return p;
}

int
pf_device_segment_new (int device, uint64_t size, pf_segment ** out)
{
  pf_segment_device dev;
  cu_prop prop = prop_for (device);
  struct devmap *m = NULL;
  cu_handle h = 0;
  size_t g = 0, rounded;
  int cu_dev, fd = -1, err, res;

  if (out == NULL)
    return fail (-EINVAL, NULL, 0, "no out argument");
  *out = NULL;
  if (size == 0 || size > (UINT64_C (1) << 40))
    return fail (-EINVAL, NULL, 0, "size %llu (1 byte .. 1 TiB)",
        (unsigned long long) size);
  if ((res = driver_get (NULL, 0)) < 0)
    return res;
  if ((err = drv.DeviceGet (&cu_dev, device)) != 0)
    return fail (-ENODEV, NULL, 0, "no CUDA device %d: cuDeviceGet failed "
        "with %s (%d)", device, cu_name (err), err);
  if (!vmm_supported (cu_dev))
    return fail (-ENOTSUP, NULL, 0, "CUDA device %d cannot share virtual "
        "memory as a POSIX fd (device attributes 102 and 103)", device);
  memset (&dev, 0, sizeof (dev));
  if ((err = drv.DeviceGetUuid (dev.uuid, cu_dev)) != 0)
    return fail (-EIO, NULL, 0, "cuDeviceGetUuid failed with %s (%d)",
        cu_name (err), err);
  if ((err = drv.MemGetAllocationGranularity (&g, &prop,
              CU_GRANULARITY_RECOMMENDED)) != 0 || g == 0 || (g & (g - 1)))
    return fail (-EIO, NULL, 0, "cuMemGetAllocationGranularity failed with "
        "%s (%d), granularity %zu", cu_name (err), err, g);
  rounded = (size_t) ((size + g - 1) / g * g);
  if ((err = drv.MemCreate (&h, rounded, &prop, 0)) != 0)
    return fail (err == 2 ? -ENOMEM : -EIO, NULL, 0, "cuMemCreate of %zu "
        "bytes on device %d failed with %s (%d)", rounded, device,
        cu_name (err), err);
  if ((err = drv.MemExportToShareableHandle (&fd, h,
              PF_DEVICE_HANDLE_POSIX_FD, 0)) != 0) {
    res = fail (err == CU_ERROR_NOT_SUPPORTED ? -ENOTSUP : -EIO, NULL, 0,
        "cuMemExportToShareableHandle failed with %s (%d)", cu_name (err), err);
    goto release;
  }
  if ((m = calloc (1, sizeof (*m))) == NULL) {
    res = fail (-ENOMEM, NULL, 0, "out of memory");
    goto release;
  }
  if ((res = map_handle (h, rounded, g, cu_dev, PF_DEVICE_ACCESS_READWRITE,
              0, m, NULL, 0)) < 0)
    goto release;
  dev.granularity = g;
  dev.handle_type = PF_DEVICE_HANDLE_POSIX_FD;
  dev.ordinal = device;
  if ((res = pf_segment_new_device (fd, rounded, &dev, out)) < 0) {
    fail (res, NULL, 0, "the segment of device memory: %s", strerror (-res));
    devmap_undo (m);
    h = 0;
    goto release;
  }
  fd = -1;                      /* the segment's */
  if ((res = pf_segment_attach (*out, &devmap_key, m, devmap_destroy)) < 0) {
    fail (res, NULL, 0, "attaching the mapping: %s", strerror (-res));
    devmap_undo (m);
    free (m);
    pf_segment_unref (*out);
    *out = NULL;
    return res;
  }
  return 0;

release:
  free (m);
  if (fd >= 0)
    close (fd);
  if (h != 0)
    drv.MemRelease (h);
  return res;
}

/* The ordinal of the device with @uuid, or -1. */
static int
find_device (const uint8_t uuid[16], int *n_devices)
{
  uint8_t u[16];
  int n = 0, i, dev;

  if (drv.DeviceGetCount (&n) != 0)
    n = 0;
  *n_devices = n;
  for (i = 0; i < n; i++) {
    if (drv.DeviceGet (&dev, i) == 0 && drv.DeviceGetUuid (u, dev) == 0 &&
        memcmp (u, uuid, sizeof (u)) == 0)
      return i;
  }
  return -1;
}

static void
uuid_text (const uint8_t uuid[16], char out[33])
{
  int i;

  for (i = 0; i < 16; i++)
    snprintf (out + 2 * i, 3, "%02x", uuid[i]);
}

int
pf_device_segment_import (pf_segment * seg, void *user_data,
    uint64_t * device_base, char *why, size_t why_len)
{
  const pf_segment_device *dev = seg ? pf_segment_get_device (seg) : NULL;
  struct devmap *m;
  cu_handle h = 0;
  cu_prop prop;
  char text[33];
  int ordinal, n_devices, err, res;

  (void) user_data;
  if (dev == NULL || device_base == NULL)
    return fail (-EINVAL, why, why_len, "not a device segment");
  if (pf_segment_get_attached (seg, &devmap_key) != NULL)
    return fail (-EINVAL, why, why_len, "imported already");
  if ((res = driver_get (why, why_len)) < 0)
    return res == -ENOENT ? -ENODEV : res;
  uuid_text (dev->uuid, text);
  if ((ordinal = find_device (dev->uuid, &n_devices)) < 0)
    return fail (-ENODEV, why, why_len, "no CUDA device with UUID %s in "
        "this process (%d devices)", text, n_devices);
  if (!vmm_supported (ordinal))
    return fail (-ENODEV, why, why_len, "CUDA device %s (ordinal %d) cannot "
        "import virtual memory from a POSIX fd", text, ordinal);
  if ((err = drv.MemImportFromShareableHandle (&h,
              (void *) (intptr_t) pf_segment_get_fd (seg),
              PF_DEVICE_HANDLE_POSIX_FD)) != 0)
    return fail (-EINVAL, why, why_len, "the fd is no exported device "
        "memory: cuMemImportFromShareableHandle failed with %s (%d)",
        cu_name (err), err);
  /* the handle's device must be the one the message named */
  if ((err = drv.MemGetAllocationPropertiesFromHandle (&prop, h)) != 0 ||
      prop.location.type != CU_LOCATION_TYPE_DEVICE ||
      prop.location.id != ordinal) {
    res = fail (-EINVAL, why, why_len, "the fd's memory is not on device %s "
        "(ordinal %d) as announced (%s, device %d)", text, ordinal,
        err ? cu_name (err) : "properties read", err ? -1 : prop.location.id);
    goto release;
  }
  if ((m = calloc (1, sizeof (*m))) == NULL) {
    res = fail (-ENOMEM, why, why_len, "out of memory");
    goto release;
  }
  if ((res = map_handle (h, (size_t) pf_segment_get_size (seg),
              (size_t) dev->granularity, ordinal, PF_DEVICE_ACCESS_READ, 1, m,
              why, why_len)) < 0) {
    free (m);
    goto release;
  }
  if ((res = pf_segment_attach (seg, &devmap_key, m, devmap_destroy)) < 0) {
    fail (res, why, why_len, "attaching the mapping: %s", strerror (-res));
    devmap_destroy (m);
    return res;
  }
  *device_base = m->va;
  return 0;

release:
  drv.MemRelease (h);
  return res;
}

int
pf_device_consumer_enable (pf_consumer * c)
{
  return pf_consumer_set_device_import (c, pf_device_segment_import, NULL);
}

uint64_t
pf_device_segment_get_ptr (pf_segment * seg)
{
  struct devmap *m = seg ? pf_segment_get_attached (seg, &devmap_key) : NULL;

  return m ? m->va : 0;
}

unsigned int
pf_device_segment_get_access (pf_segment * seg)
{
  struct devmap *m = seg ? pf_segment_get_attached (seg, &devmap_key) : NULL;

  return m ? m->access : PF_DEVICE_ACCESS_NONE;
}

int
pf_device_segment_get_ordinal (pf_segment * seg)
{
  struct devmap *m = seg ? pf_segment_get_attached (seg, &devmap_key) : NULL;

  return m ? m->ordinal : -1;
}
