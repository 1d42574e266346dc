/* pfemu-cuda-vmm: the driver API's virtual memory management in the
 * libcuda.so.1 stand-in (built into it with pfemu-cuda.c)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Off unless PFEMU_VMM=1 (read at each call): then attributes 102
 * (VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) and 103
 * (HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED) read 1 and the calls below
 * work; otherwise they read 0 and every call here returns
 * CUDA_ERROR_NOT_SUPPORTED, as before (GStreamer keeps to plain
 * allocations).
 *
 * An allocation (cuMemCreate) is a sealed memfd (no grow, no shrink): one
 * page of header (a marker, the data size, the granularity, the device's
 * UUID), then the data, a multiple of the granularity (2 MiB, minimum and
 * recommended, as on a GPU). Exporting it as a POSIX fd hands out a
 * duplicate of that memfd, so two processes that pass it over a socket
 * (SCM_RIGHTS) map the same bytes. An import checks the fd like
 * pf_segment_import does a segment: a memfd, sealed, of a size that is
 * the header plus a whole number of granules (1 TiB at most), writable
 * (no write seal), the marker and the sizes in its header matching, the UUID one of this process's devices; anything
 * else (a pipe, /dev/null, a plain memfd) is CUDA_ERROR_INVALID_VALUE,
 * a UUID of no device here CUDA_ERROR_INVALID_DEVICE.
 *
 * A reservation (cuMemAddressReserve) is a PROT_NONE range of host
 * address space, with a shadow range of its size; cuMemMap maps the
 * allocation's data there, still PROT_NONE (a stray host access faults,
 * as device memory does), and a second view of it for the copy engine at
 * the same offset of the shadow (adjacent mappings: adjacent views); the
 * core (pfemu-core.h) learns the mapping and the reservation, so
 * cuMemcpy* and cuMemsetD* on it work like on cuMemAlloc memory, across
 * adjacent mappings of one reservation too, and a range into a hole is
 * refused (CUDA_ERROR_INVALID_VALUE), never touched. Access starts as none for every device;
 * cuMemSetAccess sets it per device for whole mappings; a copy or memset
 * by a context on a device without the access it needs fails with
 * CUDA_ERROR_ILLEGAL_ADDRESS and leaves the context's sticky error (what
 * a GPU's MMU fault does; synchronous copies report it from the call,
 * asynchronous ones at the stream's next sync point). Access for a device
 * other than the allocation's is refused (CUDA_ERROR_INVALID_DEVICE): the
 * emulated devices have no peer access.
 *
 * Order: cuMemRelease may come before cuMemUnmap (the memory lives until
 * its last mapping goes, as the driver documents); cuMemUnmap takes whole
 * mappings only; cuMemAddressFree of a reservation that still has
 * mappings is refused (CUDA_ERROR_INVALID_VALUE) and keeps it. Handles
 * are counted: cuMemCreate or an import makes one reference,
 * cuMemRetainAllocationHandle (any address of a mapping: the same handle
 * value) one more, each cuMemRelease drops one; one more release than
 * references, or a handle never made, is CUDA_ERROR_INVALID_VALUE.
 *
 * Locking: one mutex (V) guards the handle and reservation lists; the
 * core takes its own lock inside (V, then the core's: never the other
 * way round).
 */
#include "pfemu-core.h"
#include "pfemu-cuda.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#pragma GCC diagnostic ignored "-Wmissing-prototypes"

#define EXPORT __attribute__ ((visibility ("default")))

enum
{
  OK = 0,
  INVALID_VALUE = 1,
  OUT_OF_MEMORY = 2,
  INVALID_DEVICE = 101,
  NOT_SUPPORTED = 801,
};

#define GRANULARITY ((size_t) 2 << 20)
#define HEADER 4096
#define MAGIC "PFEMUVMM"
#define SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

struct header
{
  char magic[8];
  uint64_t size, granularity;
  unsigned char uuid[16];
};

struct handle
{
  int fd;
  size_t size;
  int device;
  int types;                    /* requestedHandleTypes */
  int refs;                     /* cuMemCreate/Import 1, +1 per
                                 * cuMemRetainAllocationHandle, -1 per
                                 * cuMemRelease */
  int maps;
  size_t held;
  struct handle *next;
};

struct map
{
  char *va, *view;
  size_t size;
  struct handle *h;
  unsigned access[4];
  struct map *next;
};

struct resv
{
  char *base;
  char *shadow;                 /* the copy engine's views, at the same
                                 * offsets: contiguous where the
                                 * mappings are */
  size_t size;
  struct map *maps;
  struct resv *next;
};

static pthread_mutex_t V = PTHREAD_MUTEX_INITIALIZER;
static struct handle *handles;
static struct resv *resvs;

#define CALL(name, op) do {                                     \
    CUresult r_ = pfemu_core_enter (name, PFEMU_API_DRIVER);    \
    if (r_ == OK && !enabled ())                                \
      r_ = NOT_SUPPORTED;                                       \
    if (r_ == OK) {                                             \
      pthread_mutex_lock (&V);                                  \
      r_ = (op);                                                \
      pthread_mutex_unlock (&V);                                \
    }                                                           \
    return r_;                                                  \
  } while (0)

static int
enabled (void)
{
  const char *e = getenv ("PFEMU_VMM");
  return e && strcmp (e, "1") == 0;
}

static int
device_count (void)
{
  int n = 0;
  return pfemu_core_GetDeviceCount (&n) == 0 ? n : 0;
}

/* cuDeviceGetUuid's value (pfemu-cuda.c) */
static void
uuid_of (unsigned char uuid[16], int dev)
{
  memcpy (uuid, "pfemu-device-000", 16);
  uuid[15] = (unsigned char) ('0' + dev);
}

static int
check_location (const CUmemLocation * loc)
{
  if (!loc || loc->type != CU_MEM_LOCATION_TYPE_DEVICE)
    return INVALID_VALUE;
  if (loc->id < 0 || loc->id >= device_count () || loc->id >= 4)
    return INVALID_DEVICE;
  return OK;
}

static int
check_prop (const CUmemAllocationProp * prop)
{
  if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
    return INVALID_VALUE;
  return check_location (&prop->location);
}

static struct handle *
find_handle (CUmemGenericAllocationHandle hv)
{
  for (struct handle * h = handles; h; h = h->next)
    if ((CUmemGenericAllocationHandle) (uintptr_t) h == hv)
      return h;
  return NULL;
}

/* V held. Frees @h once released and unmapped. */
static void
handle_maybe_free (struct handle *h)
{
  struct handle **l;

  if (h->refs > 0 || h->maps > 0)
    return;
  for (l = &handles; *l; l = &(*l)->next) {
    if (*l == h) {
      *l = h->next;
      break;
    }
  }
  close (h->fd);
  pfemu_core_VmmCount (-1, 0, -(long) h->held);
  free (h);
}

/* @held: the bytes this process holds by it (cuMemCreate's; 0 for an
 * import: another process's memory) */
static CUmemGenericAllocationHandle
add_handle (int fd, size_t size, int device, int types, size_t held)
{
  struct handle *h = calloc (1, sizeof *h);

  if (!h)
    return 0;
  h->fd = fd;
  h->size = size;
  h->device = device;
  h->types = types;
  h->refs = 1;
  h->held = held;
  h->next = handles;
  handles = h;
  pfemu_core_VmmCount (1, 0, (long) held);
  return (CUmemGenericAllocationHandle) (uintptr_t) h;
}

/* ------------------------------------------------------ granularity */

static int
granularity (size_t *g, const CUmemAllocationProp * prop, int option)
{
  int err;

  if (!g || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
          option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
    return INVALID_VALUE;
  if ((err = check_prop (prop)) != OK)
    return err;
  *g = GRANULARITY;
  return OK;
}

EXPORT CUresult
cuMemGetAllocationGranularity (size_t *g, const CUmemAllocationProp * prop,
    int option)
{
  CALL ("cuMemGetAllocationGranularity", granularity (g, prop, option));
}

/* ----------------------------------------------------- create, release */

static int
create (CUmemGenericAllocationHandle * out, size_t size,
    const CUmemAllocationProp * prop, unsigned long long flags)
{
  /* the magic is 8 bytes with no NUL: copied, not a string initialiser
   * (gcc 15's -Wunterminated-string-initialization) */
  struct header hdr = { {0}, size, GRANULARITY, {0} };
  CUmemGenericAllocationHandle hv;
  char *p;
  int fd, err;

  memcpy (hdr.magic, MAGIC, sizeof (hdr.magic));

  if (!out || flags != 0)
    return INVALID_VALUE;
  if ((err = check_prop (prop)) != OK)
    return err;
  if (prop->requestedHandleTypes & ~CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return NOT_SUPPORTED;       /* Win32 and fabric handles: not here */
  if (size == 0 || size % GRANULARITY != 0 || size > ((size_t) 1 << 40))
    return INVALID_VALUE;
  uuid_of (hdr.uuid, prop->location.id);
  fd = memfd_create ("pfemu-vmm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    return OUT_OF_MEMORY;
  if (ftruncate (fd, (off_t) (HEADER + size)) < 0 ||
      pwrite (fd, &hdr, sizeof hdr, 0) != (ssize_t) sizeof hdr ||
      fcntl (fd, F_ADD_SEALS, SEALS) < 0)
    goto oom;
  /* fresh device memory is not zero on a GPU either */
  p = mmap (NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, HEADER);
  if (p == MAP_FAILED)
    goto oom;
  memset (p, 0xA5, size);
  munmap (p, size);
  if (!(hv = add_handle (fd, size, prop->location.id,
              prop->requestedHandleTypes, size)))
    goto oom;
  *out = hv;
  return OK;

oom:
  close (fd);
  return OUT_OF_MEMORY;
}

EXPORT CUresult
cuMemCreate (CUmemGenericAllocationHandle * handle, size_t size,
    const CUmemAllocationProp * prop, unsigned long long flags)
{
  CALL ("cuMemCreate", create (handle, size, prop, flags));
}

static int
release (CUmemGenericAllocationHandle hv)
{
  struct handle *h = find_handle (hv);

  if (!h || h->refs == 0)
    return INVALID_VALUE;
  h->refs--;
  handle_maybe_free (h);
  return OK;
}

EXPORT CUresult
cuMemRelease (CUmemGenericAllocationHandle handle)
{
  CALL ("cuMemRelease", release (handle));
}

static int
properties (CUmemAllocationProp * prop, CUmemGenericAllocationHandle hv)
{
  struct handle *h = find_handle (hv);

  if (!prop || !h || h->refs == 0)
    return INVALID_VALUE;
  memset (prop, 0, sizeof *prop);
  prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop->requestedHandleTypes = h->types;
  prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop->location.id = h->device;
  return OK;
}

EXPORT CUresult
cuMemGetAllocationPropertiesFromHandle (CUmemAllocationProp * prop,
    CUmemGenericAllocationHandle handle)
{
  CALL ("cuMemGetAllocationPropertiesFromHandle", properties (prop, handle));
}

/* ---------------------------------------------------- export, import */

static int
export_fd (void *shareable, CUmemGenericAllocationHandle hv, int type,
    unsigned long long flags)
{
  struct handle *h = find_handle (hv);
  int fd;

  if (!shareable || !h || h->refs == 0 || flags != 0)
    return INVALID_VALUE;
  if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return NOT_SUPPORTED;
  /* not requested at cuMemCreate: not exportable */
  if (!(h->types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    return INVALID_VALUE;
  if ((fd = fcntl (h->fd, F_DUPFD_CLOEXEC, 3)) < 0)
    return OUT_OF_MEMORY;
  *(int *) shareable = fd;
  return OK;
}

EXPORT CUresult
cuMemExportToShareableHandle (void *shareable,
    CUmemGenericAllocationHandle handle, int type, unsigned long long flags)
{
  CALL ("cuMemExportToShareableHandle", export_fd (shareable, handle, type,
          flags));
}

/* The fd is the caller's (it closes it); the handle holds a duplicate. */
static int
import_fd (CUmemGenericAllocationHandle * out, void *os_handle, int type)
{
  struct header hdr;
  struct stat st;
  intptr_t v = (intptr_t) os_handle;
  int fd = (int) v, seals, dev, mine = -1;
  CUmemGenericAllocationHandle hv;

  if (!out)
    return INVALID_VALUE;
  if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return NOT_SUPPORTED;
  if (v < 0 || v > INT32_MAX || fstat (fd, &st) < 0 || !S_ISREG (st.st_mode))
    return INVALID_VALUE;
  seals = fcntl (fd, F_GET_SEALS);
  if (seals < 0 || (seals & SEALS) != SEALS)
    return INVALID_VALUE;       /* not a sealed memfd: not ours */
  if (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE))
    return INVALID_VALUE;       /* ours are writable: not ours */
  if (st.st_size < HEADER + (off_t) GRANULARITY ||
      st.st_size > HEADER + ((off_t) 1 << 40) ||
      (st.st_size - HEADER) % (off_t) GRANULARITY != 0)
    return INVALID_VALUE;
  if (pread (fd, &hdr, sizeof hdr, 0) != (ssize_t) sizeof hdr ||
      memcmp (hdr.magic, MAGIC, 8) != 0 || hdr.granularity != GRANULARITY ||
      hdr.size != (uint64_t) (st.st_size - HEADER))
    return INVALID_VALUE;
  for (dev = 0; dev < device_count () && dev < 4; dev++) {
    unsigned char u[16];
    uuid_of (u, dev);
    if (memcmp (u, hdr.uuid, 16) == 0)
      mine = dev;
  }
  if (mine < 0)
    return INVALID_DEVICE;      /* made on a device this process lacks */
  if ((fd = fcntl (fd, F_DUPFD_CLOEXEC, 3)) < 0)
    return OUT_OF_MEMORY;
  if (!(hv = add_handle (fd, (size_t) hdr.size, mine,
              CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0))) {
    close (fd);
    return OUT_OF_MEMORY;
  }
  *out = hv;
  return OK;
}

EXPORT CUresult
cuMemImportFromShareableHandle (CUmemGenericAllocationHandle * handle,
    void *os_handle, int type)
{
  CALL ("cuMemImportFromShareableHandle", import_fd (handle, os_handle, type));
}

/* ------------------------------------------------------- reservations */

static int
reserve (CUdeviceptr * ptr, size_t size, size_t align, CUdeviceptr addr,
    unsigned long long flags)
{
  struct resv *r;
  char *p, *base, *shadow;
  size_t span;

  (void) addr;                  /* a hint: not followed */
  /* "a multiple of the host page size" (cuda.h); mappings inside it
   * still need granularity-aligned addresses and sizes */
  if (!ptr || flags != 0 || size == 0 || size % (size_t) getpagesize () ||
      size > ((size_t) 1 << 40) || (align & (align - 1)) != 0)
    return INVALID_VALUE;
  if (align < GRANULARITY)
    align = GRANULARITY;
  if (align > ((size_t) 1 << 30))
    return INVALID_VALUE;
  span = size + align;
  p = mmap (NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
      MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return OUT_OF_MEMORY;
  base = (char *) (((uintptr_t) p + align - 1) & ~(uintptr_t) (align - 1));
  if (base > p)
    munmap (p, (size_t) (base - p));
  if (base + size < p + span)
    munmap (base + size, (size_t) (p + span - (base + size)));
  shadow = mmap (NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
      MAP_NORESERVE, -1, 0);
  if (shadow == MAP_FAILED || !(r = calloc (1, sizeof *r))) {
    if (shadow != MAP_FAILED)
      munmap (shadow, size);
    munmap (base, size);
    return OUT_OF_MEMORY;
  }
  r->base = base;
  r->shadow = shadow;
  r->size = size;
  r->next = resvs;
  resvs = r;
  pfemu_core_VmmCount (0, 1, 0);
  pfemu_core_VmmReserved (base, size, 1);
  *ptr = (CUdeviceptr) (uintptr_t) base;
  return OK;
}

EXPORT CUresult
cuMemAddressReserve (CUdeviceptr * ptr, size_t size, size_t align,
    CUdeviceptr addr, unsigned long long flags)
{
  CALL ("cuMemAddressReserve", reserve (ptr, size, align, addr, flags));
}

static int
address_free (CUdeviceptr ptr, size_t size)
{
  struct resv **l, *r;

  for (l = &resvs; *l; l = &(*l)->next)
    if ((*l)->base == (char *) (uintptr_t) ptr && (*l)->size == size)
      break;
  if (!(r = *l) || r->maps)
    return INVALID_VALUE;       /* not a reservation, or still mapped */
  *l = r->next;
  munmap (r->base, r->size);
  munmap (r->shadow, r->size);
  pfemu_core_VmmReserved (r->base, r->size, 0);
  free (r);
  pfemu_core_VmmCount (0, -1, 0);
  return OK;
}

EXPORT CUresult
cuMemAddressFree (CUdeviceptr ptr, size_t size)
{
  CALL ("cuMemAddressFree", address_free (ptr, size));
}

/* ---------------------------------------------------------- mappings */

/* Back to reserved address space (PROT_NONE, no memory behind it). */
static void
unreserve (void *p, size_t size)
{
  mmap (p, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED |
      MAP_NORESERVE, -1, 0);
}

/* V held. The reservation holding all of [p, p + size), or NULL. */
static struct resv *
find_resv (const char *p, size_t size)
{
  for (struct resv * r = resvs; r; r = r->next)
    if (p >= r->base && p < r->base + r->size &&
        size <= (size_t) (r->base + r->size - p))
      return r;
  return NULL;
}

static int
map (CUdeviceptr ptr, size_t size, size_t offset,
    CUmemGenericAllocationHandle hv, unsigned long long flags)
{
  char *va = (char *) (uintptr_t) ptr, *got, *view;
  struct handle *h = find_handle (hv);
  struct resv *r;
  struct map *m;
  int err;

  if (!h || h->refs == 0 || flags != 0 || size == 0)
    return INVALID_VALUE;
  if (ptr % GRANULARITY || size % GRANULARITY || offset % GRANULARITY ||
      offset > h->size || size > h->size - offset)
    return INVALID_VALUE;
  if (!(r = find_resv (va, size)))
    return INVALID_VALUE;
  for (m = r->maps; m; m = m->next)
    if (va < m->va + m->size && m->va < va + size)
      return INVALID_VALUE;     /* already mapped */
  /* the copy engine's view: read-write (the core checks the access of
   * every copy; a copy queued before cuMemSetAccess took the access away
   * must not crash the worker), at the mapping's offset in the
   * reservation's shadow, so that adjacent mappings have adjacent views
   * and one copy runs across them */
  view = mmap (r->shadow + (va - r->base), size, PROT_READ | PROT_WRITE,
      MAP_SHARED | MAP_FIXED, h->fd, (off_t) (HEADER + offset));
  if (view == MAP_FAILED) {
    unreserve (r->shadow + (va - r->base), size);
    return OUT_OF_MEMORY;
  }
  got = mmap (va, size, PROT_NONE, MAP_SHARED | MAP_FIXED, h->fd,
      (off_t) (HEADER + offset));
  if (got == MAP_FAILED || !(m = calloc (1, sizeof *m))) {
    unreserve (view, size);
    if (got != MAP_FAILED)
      unreserve (va, size);
    return OUT_OF_MEMORY;
  }
  if ((err = pfemu_core_VmmMap (va, view, size, h->device, h->types)) != OK) {
    free (m);
    unreserve (view, size);
    unreserve (va, size);
    return err;
  }
  m->va = va;
  m->view = view;
  m->size = size;
  m->h = h;
  m->next = r->maps;
  r->maps = m;
  h->maps++;
  return OK;
}

EXPORT CUresult
cuMemMap (CUdeviceptr ptr, size_t size, size_t offset,
    CUmemGenericAllocationHandle handle, unsigned long long flags)
{
  CALL ("cuMemMap", map (ptr, size, offset, handle, flags));
}

/* V held. Whether [p, p + size) is exactly whole mappings of one
 * reservation, every byte mapped; *out: that reservation. */
static int
whole_maps (const char *p, size_t size, struct resv **out)
{
  struct resv *r = find_resv (p, size);
  size_t covered = 0;

  if (!r || size == 0)
    return 0;
  for (struct map * m = r->maps; m; m = m->next) {
    if (!(m->va < p + size && p < m->va + m->size))
      continue;
    if (m->va < p || m->va + m->size > p + size)
      return 0;                 /* a part of a mapping */
    covered += m->size;
  }
  *out = r;
  return covered == size;
}

static int
unmap (CUdeviceptr ptr, size_t size)
{
  char *p = (char *) (uintptr_t) ptr;
  struct resv *r;
  struct map **l;

  if (!whole_maps (p, size, &r))
    return INVALID_VALUE;
  for (l = &r->maps; *l;) {
    struct map *m = *l;
    if (m->va < p || m->va >= p + size) {
      l = &m->next;
      continue;
    }
    *l = m->next;
    pfemu_core_VmmUnmap (m->va);
    /* back to reserved address space, the view's too */
    unreserve (m->va, m->size);
    unreserve (m->view, m->size);
    m->h->maps--;
    handle_maybe_free (m->h);
    free (m);
  }
  return OK;
}

EXPORT CUresult
cuMemUnmap (CUdeviceptr ptr, size_t size)
{
  CALL ("cuMemUnmap", unmap (ptr, size));
}

/* V held. The mapping holding @p, or NULL. */
static struct map *
find_map (const char *p)
{
  for (struct resv * r = resvs; r; r = r->next)
    for (struct map * m = r->maps; m; m = m->next)
      if (p >= m->va && p < m->va + m->size)
        return m;
  return NULL;
}

/* The handle mapped at any address of a mapping, the same value cuMemMap
 * was given (one more reference: the caller releases it), even where the
 * mapper released its own already. */
static int
retain (CUmemGenericAllocationHandle * out, void *addr)
{
  struct map *m = find_map (addr);

  if (!out || !m)
    return INVALID_VALUE;
  m->h->refs++;
  *out = (CUmemGenericAllocationHandle) (uintptr_t) m->h;
  return OK;
}

EXPORT CUresult
cuMemRetainAllocationHandle (CUmemGenericAllocationHandle * handle, void *addr)
{
  CALL ("cuMemRetainAllocationHandle", retain (handle, addr));
}

/* ------------------------------------------------------------ access */

static int
set_access (CUdeviceptr ptr, size_t size, const CUmemAccessDesc * desc,
    size_t count)
{
  char *p = (char *) (uintptr_t) ptr;
  struct resv *r;
  int err;

  if (!desc || count == 0 || !whole_maps (p, size, &r))
    return INVALID_VALUE;
  /* all checked before any is applied */
  for (size_t i = 0; i < count; i++) {
    int f = desc[i].flags;
    if ((err = check_location (&desc[i].location)) != OK)
      return err;
    if (f != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
        f != CU_MEM_ACCESS_FLAGS_PROT_READ &&
        f != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
      return INVALID_VALUE;
    for (struct map * m = r->maps; m; m = m->next)
      if (m->va >= p && m->va < p + size && m->h->device != desc[i].location.id)
        return INVALID_DEVICE;  /* no peer access between the devices */
  }
  for (struct map * m = r->maps; m; m = m->next) {
    if (m->va < p || m->va >= p + size)
      continue;
    for (size_t i = 0; i < count; i++) {
      m->access[desc[i].location.id] = (unsigned) desc[i].flags;
      pfemu_core_VmmSetAccess (m->va, desc[i].location.id,
          (unsigned) desc[i].flags);
    }
  }
  return OK;
}

EXPORT CUresult
cuMemSetAccess (CUdeviceptr ptr, size_t size, const CUmemAccessDesc * desc,
    size_t count)
{
  CALL ("cuMemSetAccess", set_access (ptr, size, desc, count));
}

static int
get_access (unsigned long long *flags, const CUmemLocation * loc,
    CUdeviceptr ptr)
{
  struct map *m;
  int err;

  if (!flags)
    return INVALID_VALUE;
  if ((err = check_location (loc)) != OK)
    return err;
  if (!(m = find_map ((const char *) (uintptr_t) ptr)))
    return INVALID_VALUE;
  *flags = m->access[loc->id];
  return OK;
}

EXPORT CUresult
cuMemGetAccess (unsigned long long *flags, const CUmemLocation * location,
    CUdeviceptr ptr)
{
  CALL ("cuMemGetAccess", get_access (flags, location, ptr));
}
