/* pfemu-cuda-ipc: the driver API's legacy IPC (cuIpcGetMemHandle,
 * cuIpcOpenMemHandle, cuIpcCloseMemHandle) in the libcuda.so.1 stand-in
 * (built into it with pfemu-cuda.c)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Off unless PFEMU_IPC=1 (read at each call, and by the core at each
 * allocation): then an allocation keeps its memfd open (one fd per
 * allocation of cuMemAlloc, cuMemAllocPitch or cudaMallocPitch) and the
 * calls below work; otherwise they return CUDA_ERROR_NOT_SUPPORTED, as
 * before.
 *
 * A handle (CUipcMemHandle, 64 bytes) names the exporter's memfd: a
 * marker, the exporter's pid, its fd number, the memfd's inode and
 * device, the allocation's sizes and its device. Opening it in another
 * process opens /proc/PID/fd/FD (the same memory, no copy: a write by one
 * is read by the other), checks the inode and size against the handle (an
 * allocation freed since, whose fd number was reused, is refused) and
 * maps it as device memory of the handle's device: PROT_NONE for the
 * host, a second view for the copy engine, as the core's own allocations.
 * The exporter's memory lives while an importer has it open (the mapping
 * holds it), as the driver keeps it.
 *
 * The driver's rules kept: a current context for all three
 * (CUDA_ERROR_INVALID_CONTEXT); cuIpcGetMemHandle takes any address of a
 * cuMemAlloc allocation (not a cuMemMap mapping nor an opened handle:
 * CUDA_ERROR_INVALID_VALUE) and the handle names the whole allocation;
 * cuIpcOpenMemHandle wants CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS as flags
 * (anything else: 1), refuses a handle of this process
 * (CUDA_ERROR_INVALID_CONTEXT, as the driver answers), one already open
 * here (CUDA_ERROR_ALREADY_MAPPED), one of a device this process lacks or
 * of another device than the current context's (CUDA_ERROR_INVALID_DEVICE:
 * the emulated devices have no peer access), and anything that is no
 * live export (a forged marker, an exporter gone, an allocation freed:
 * 1); it returns the allocation's base. cuIpcCloseMemHandle takes exactly
 * that address, once (else 1); cuMemFree refuses it (1); copies still
 * queued on it fault (700 at their stream's sync), as after cuMemFree.
 *
 * IPC events: cuIpcGetEventHandle takes an event made with
 * CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING (else 1, as the driver
 * documents); its counters move into a page of a memfd (the core's,
 * pfemu-core.h), which the 64-byte handle names as a memory handle names
 * an allocation. cuIpcOpenEventHandle in another process maps that page
 * (refused in the exporter: 201; forged, gone: 1) as an event of its own
 * (cuEventDestroy frees it): cuEventQuery, cuEventSynchronize and
 * cuStreamWaitEvent there see the exporter's records complete (a wait
 * polls every 100 us), and its own records are the exporter's to see.
 *
 * Locking: one mutex (I) guards the list of opened handles; the core
 * takes its own lock inside (I, then the core's).
 */
#include "pfemu-core.h"
#include "pfemu-cuda.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
  INVALID_CONTEXT = 201,
  ALREADY_MAPPED = 208,
  NOT_SUPPORTED = 801,
};

#define LAZY_ENABLE_PEER_ACCESS 0x1
#define MAGIC "PFEMUIPC"

/* cuda.h's CUipcMemHandle: 64 opaque bytes, passed by value */
typedef struct
{
  char reserved[64];
} CUipcMemHandle;

struct handle
{
  char magic[8];
  uint32_t pid;
  int32_t fd;
  uint64_t ino, dev;
  uint64_t size, bytes;
  int32_t device;
  uint32_t reserved[3];
};

_Static_assert (sizeof (struct handle) == sizeof (CUipcMemHandle),
    "a CUipcMemHandle holds the handle");

struct opened
{
  char *va;
  uint64_t ino, dev;
  struct opened *next;
};

static pthread_mutex_t I = PTHREAD_MUTEX_INITIALIZER;
static struct opened *opened;

#define CALL(name, op) do {                                     \
    CUresult r_ = pfemu_core_enter (name, PFEMU_API_DRIVER_CTX); \
    if (r_ == OK && !enabled ())                                \
      r_ = NOT_SUPPORTED;                                       \
    if (r_ == OK) {                                             \
      pthread_mutex_lock (&I);                                  \
      r_ = (op);                                                \
      pthread_mutex_unlock (&I);                                \
    }                                                           \
    if (r_ == OK)                                               \
      r_ = pfemu_core_take_release_error ();                    \
    return r_;                                                  \
  } while (0)

static int
enabled (void)
{
  const char *e = getenv ("PFEMU_IPC");
  return e && strcmp (e, "1") == 0;
}

static int
get_handle (CUipcMemHandle * out, CUdeviceptr ptr)
{
  struct handle h;
  struct stat st;
  size_t size, bytes;
  int fd, device;

  if (!out)
    return INVALID_VALUE;
  if (pfemu_core_IpcExport ((void *) (uintptr_t) ptr, &fd, &size, &bytes,
          &device) != OK || fstat (fd, &st) < 0)
    return INVALID_VALUE;       /* not cuMemAlloc memory made here */
  memset (&h, 0, sizeof h);
  memcpy (h.magic, MAGIC, sizeof h.magic);
  h.pid = (uint32_t) getpid ();
  h.fd = fd;
  h.ino = (uint64_t) st.st_ino;
  h.dev = (uint64_t) st.st_dev;
  h.size = size;
  h.bytes = bytes;
  h.device = device;
  memcpy (out, &h, sizeof h);
  return OK;
}

EXPORT CUresult
cuIpcGetMemHandle (CUipcMemHandle * handle, CUdeviceptr ptr)
{
  CALL ("cuIpcGetMemHandle", get_handle (handle, ptr));
}

static int
open_handle (CUdeviceptr * out, const CUipcMemHandle * in, unsigned flags)
{
  struct handle h;
  struct opened *o;
  struct stat st;
  char path[64];
  void *va = NULL;
  int fd, err, count = 0, cur = -1;
  CUcontext ctx = NULL;

  memcpy (&h, in, sizeof h);
  if (!out || flags != LAZY_ENABLE_PEER_ACCESS)
    return INVALID_VALUE;
  if (memcmp (h.magic, MAGIC, sizeof h.magic) != 0 || h.fd < 0 ||
      h.size == 0 || h.bytes == 0 || h.bytes > h.size ||
      h.size > ((uint64_t) 1 << 40))
    return INVALID_VALUE;
  if (h.pid == (uint32_t) getpid ())
    return INVALID_CONTEXT;     /* what the driver answers in the exporter */
  if (pfemu_core_GetDeviceCount (&count) != OK || h.device < 0 ||
      h.device >= count)
    return INVALID_DEVICE;
  if (pfemu_core_CtxGetCurrent (&ctx) != OK || !ctx ||
      pfemu_core_CtxGetDevice (&cur) != OK)
    return INVALID_CONTEXT;
  if (cur != h.device)
    return INVALID_DEVICE;      /* no peer access between the devices */
  for (o = opened; o; o = o->next)
    if (o->ino == h.ino && o->dev == h.dev)
      return ALREADY_MAPPED;
  snprintf (path, sizeof path, "/proc/%u/fd/%d", (unsigned) h.pid, h.fd);
  if ((fd = open (path, O_RDWR | O_CLOEXEC)) < 0)
    return INVALID_VALUE;       /* the exporter or its allocation is gone */
  if (fstat (fd, &st) < 0 || !S_ISREG (st.st_mode) ||
      (uint64_t) st.st_ino != h.ino || (uint64_t) st.st_dev != h.dev ||
      (uint64_t) st.st_size != h.size || !(o = calloc (1, sizeof *o))) {
    close (fd);
    return INVALID_VALUE;       /* another file under that number now */
  }
  err = pfemu_core_IpcOpen (fd, (size_t) h.size, (size_t) h.bytes,
      h.device, &va);
  close (fd);
  if (err != OK) {
    free (o);
    return err;
  }
  o->va = va;
  o->ino = h.ino;
  o->dev = h.dev;
  o->next = opened;
  opened = o;
  *out = (CUdeviceptr) (uintptr_t) va;
  return OK;
}

/* cuda.h maps cuIpcOpenMemHandle to the _v2 name since CUDA 11; the ABI is
 * the same (GStreamer's loader asks for the old name) */
EXPORT CUresult
cuIpcOpenMemHandle (CUdeviceptr * ptr, CUipcMemHandle handle,
    unsigned int flags)
{
  CALL ("cuIpcOpenMemHandle", open_handle (ptr, &handle, flags));
}

EXPORT CUresult
cuIpcOpenMemHandle_v2 (CUdeviceptr * ptr, CUipcMemHandle handle,
    unsigned int flags)
{
  CALL ("cuIpcOpenMemHandle_v2", open_handle (ptr, &handle, flags));
}

static int
close_handle (CUdeviceptr ptr)
{
  char *va = (char *) (uintptr_t) ptr;
  struct opened **l, *o;

  for (l = &opened; *l; l = &(*l)->next)
    if ((*l)->va == va)
      break;
  if (!(o = *l))
    return INVALID_VALUE;       /* not an opened handle's base, or closed */
  *l = o->next;
  free (o);
  return pfemu_core_IpcClose (va);
}

EXPORT CUresult
cuIpcCloseMemHandle (CUdeviceptr ptr)
{
  CALL ("cuIpcCloseMemHandle", close_handle (ptr));
}

/* ------------------------------------------------------------ events */

#define EVENT_MAGIC "PFEMUIEV"

struct event_handle
{
  char magic[8];
  uint32_t pid;
  int32_t fd;
  uint64_t ino, dev;
  char reserved[32];
};

_Static_assert (sizeof (struct event_handle) == sizeof (CUipcMemHandle),
    "a CUipcEventHandle (64 bytes) holds the handle");

static int
get_event_handle (CUipcMemHandle * out, CUevent event)
{
  struct event_handle h;
  struct stat st;
  int fd;

  if (!out || pfemu_core_IpcEventExport (event, &fd) != OK ||
      fstat (fd, &st) < 0)
    return INVALID_VALUE;       /* no event, or not INTERPROCESS */
  memset (&h, 0, sizeof h);
  memcpy (h.magic, EVENT_MAGIC, sizeof h.magic);
  h.pid = (uint32_t) getpid ();
  h.fd = fd;
  h.ino = (uint64_t) st.st_ino;
  h.dev = (uint64_t) st.st_dev;
  memcpy (out, &h, sizeof h);
  return OK;
}

EXPORT CUresult
cuIpcGetEventHandle (CUipcMemHandle * handle, CUevent event)
{
  CALL ("cuIpcGetEventHandle", get_event_handle (handle, event));
}

static int
open_event_handle (CUevent * out, const CUipcMemHandle * in)
{
  struct event_handle h;
  struct stat st;
  char path[64];
  int fd, err;

  memcpy (&h, in, sizeof h);
  if (!out || memcmp (h.magic, EVENT_MAGIC, sizeof h.magic) != 0 || h.fd < 0)
    return INVALID_VALUE;
  if (h.pid == (uint32_t) getpid ())
    return INVALID_CONTEXT;
  snprintf (path, sizeof path, "/proc/%u/fd/%d", (unsigned) h.pid, h.fd);
  if ((fd = open (path, O_RDWR | O_CLOEXEC)) < 0)
    return INVALID_VALUE;       /* the exporter or its event is gone */
  if (fstat (fd, &st) < 0 || !S_ISREG (st.st_mode) || (uint64_t) st.st_ino != h.ino || (uint64_t) st.st_dev != h.dev || st.st_size != 4096) {   /* the core's page */
    close (fd);
    return INVALID_VALUE;
  }
  err = pfemu_core_IpcEventOpen (fd, out);
  close (fd);
  return err;
}

EXPORT CUresult
cuIpcOpenEventHandle (CUevent * event, CUipcMemHandle handle)
{
  CALL ("cuIpcOpenEventHandle", open_event_handle (event, &handle));
}
