/* pfemu core: the emulated "GPU" both stand-ins share
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * libpfemu-cudart.so holds the one state of the emulated device (device
 * allocations, host registrations and page-locked host memory, streams
 * with their worker threads, events, contexts, counters, fault
 * injection) and exports these functions for the driver-API stand-in
 * (libcuda.so.1, pfemu-cuda.c), which links against it: one process, one
 * "GPU", whichever API a caller uses. Not for tests: they use pfemu.h.
 *
 * Every function returns an error code whose value is the same in both
 * APIs for every code the core produces (0, 1, 2, 100, 101, 201, 400,
 * 600, 700, 709, 712, 713, 719, 801, 999), except cudaErrorInvalidMemcpyDirection
 * (21), which the driver reports as CUDA_ERROR_INVALID_VALUE (1). Handles
 * (contexts, streams, events) are opaque pointers; device pointers are
 * host addresses of PROT_NONE mappings.
 *
 * A driver call is made as: r = pfemu_core_enter (name, api); if r == 0,
 * r = pfemu_core_<Op> (...). pfemu_core_enter counts the call under
 * @name, applies PFEMU_FAIL and a standing sticky error, and the driver's
 * rules: cuInit first (3), a current context for PFEMU_API_DRIVER_CTX
 * (201), not destroyed (709).
 */
#ifndef __PFEMU_CORE_H__
#define __PFEMU_CORE_H__

#include <stddef.h>

#define PFEMU_CORE __attribute__ ((visibility ("default")))

enum
{
  PFEMU_API_RUNTIME = 0,
  PFEMU_API_DRIVER = 1,         /* a driver call needing no context */
  PFEMU_API_DRIVER_CTX = 2,     /* a driver call needing a current one */
};

PFEMU_CORE int pfemu_core_enter (const char *name, int api);
PFEMU_CORE int pfemu_core_take_release_error (void);

/* driver-only */
PFEMU_CORE int pfemu_core_Init (unsigned int flags);
PFEMU_CORE int pfemu_core_CtxGetCurrent (void **ctx);
PFEMU_CORE int pfemu_core_CtxSetCurrent (void *ctx);
PFEMU_CORE int pfemu_core_CtxPushCurrent (void *ctx);
PFEMU_CORE int pfemu_core_CtxPopCurrent (void **ctx);
PFEMU_CORE int pfemu_core_CtxCreate (void **ctx, unsigned int flags,
    int device);
PFEMU_CORE int pfemu_core_CtxDestroy (void *ctx);
PFEMU_CORE int pfemu_core_CtxGetDevice (int *device);
PFEMU_CORE int pfemu_core_CtxSynchronize (void);
PFEMU_CORE int pfemu_core_CtxGetLimit (size_t *value, int limit);
PFEMU_CORE int pfemu_core_CtxSetLimit (int limit, size_t value);
PFEMU_CORE int pfemu_core_PrimaryCtxRetain (void **ctx, int device);
PFEMU_CORE int pfemu_core_PrimaryCtxRelease (int device);
PFEMU_CORE int pfemu_core_PrimaryCtxGetState (int device,
    unsigned int *flags, int *active);
PFEMU_CORE int pfemu_core_Malloc (void **dev_ptr, size_t bytes);
PFEMU_CORE int pfemu_core_HostAlloc (void **ptr, size_t size);
PFEMU_CORE int pfemu_core_HostFree (void *ptr);
PFEMU_CORE int pfemu_core_Memset2D (void *dst, size_t pitch,
    unsigned int value, int element_size, size_t width, size_t height,
    void *stream, int async);
/* 2 (CU_MEMORYTYPE_DEVICE): inside a device allocation; 1 (HOST):
 * page-locked or registered host memory; 0: unknown to the device */
PFEMU_CORE int pfemu_core_PointerMemoryType (const void *ptr);

/* What cuPointerGetAttribute reports of @ptr: 1 (invalid value) when the
 * device knows no such pointer. type: as above; device: the one the
 * memory is on (a host registration: its context's); ctx: the context it
 * was allocated, opened or registered in (NULL for a cuMemMap mapping,
 * which belongs to none); base, size: the allocation, mapping or
 * registration holding it; handle_types: a mapping's
 * requestedHandleTypes; access: the calling thread's device's
 * (CU_MEM_ACCESS_FLAGS_PROT_*); id: unique per allocation or mapping. */
enum
{
  PFEMU_PTR_ALLOC = 0,          /* cuMemAlloc, cudaMallocPitch */
  PFEMU_PTR_MAPPING = 1,        /* cuMemMap */
  PFEMU_PTR_IPC = 2,            /* cuIpcOpenMemHandle */
  PFEMU_PTR_HOST = 3,           /* page-locked or registered host memory */
};
struct pfemu_core_ptr
{
  int type, device, kind, handle_types;
  void *ctx;
  char *base;
  size_t size;
  unsigned access;
  unsigned long long id;
};
PFEMU_CORE int pfemu_core_PointerInfo (const void *ptr,
    struct pfemu_core_ptr *out);

/* shared with cudart (the cuda* function of the same name does this) */
PFEMU_CORE int pfemu_core_GetDeviceCount (int *count);
PFEMU_CORE int pfemu_core_DeviceGetAttribute (int *value, int attr, int device);
PFEMU_CORE int pfemu_core_MallocPitch (void **dev_ptr, size_t *pitch,
    size_t width, size_t height);
PFEMU_CORE int pfemu_core_Free (void *dev_ptr);
PFEMU_CORE int pfemu_core_HostRegister (void *ptr, size_t size,
    unsigned int flags);
PFEMU_CORE int pfemu_core_HostUnregister (void *ptr);
PFEMU_CORE int pfemu_core_StreamCreateWithFlags (void **stream,
    unsigned int flags);
PFEMU_CORE int pfemu_core_StreamDestroy (void *stream);
PFEMU_CORE int pfemu_core_StreamSynchronize (void *stream);
PFEMU_CORE int pfemu_core_StreamQuery (void *stream);
PFEMU_CORE int pfemu_core_StreamWaitEvent (void *stream, void *event,
    unsigned int flags);
PFEMU_CORE int pfemu_core_EventCreateWithFlags (void **event,
    unsigned int flags);
PFEMU_CORE int pfemu_core_EventDestroy (void *event);
PFEMU_CORE int pfemu_core_EventRecord (void *event, void *stream);
PFEMU_CORE int pfemu_core_EventQuery (void *event);
PFEMU_CORE int pfemu_core_EventSynchronize (void *event);
/* kind: 0 host to host (driver only), 1 H2D, 2 D2H, 3 D2D, 4 inferred */
PFEMU_CORE int pfemu_core_Memcpy2DAsync (void *dst, size_t dpitch,
    const void *src, size_t spitch, size_t width, size_t height, int kind,
    void *stream);
PFEMU_CORE int pfemu_core_Memcpy2D (void *dst, size_t dpitch,
    const void *src, size_t spitch, size_t width, size_t height, int kind);

/* Virtual memory (pfemu-cuda-vmm.c keeps handles and reservations; the
 * core knows mappings, so that copies reach them): [va, va + size) is
 * device memory of @device whose bytes are at @view (the caller's,
 * mapped until pfemu_core_VmmUnmap), accessible to no device until
 * pfemu_core_VmmSetAccess. A copy or memset the calling thread's device
 * has no access for fails with 700, sticky (a GPU's MMU fault); a
 * synchronous one from the call, an asynchronous one at its stream's
 * next sync point. cuMemFree refuses a mapping. VmmUnmap faults the
 * copies still queued on it (as cudaFree does). VmmCount: +/- the live
 * handles and reservations pfemu_query reports, and the device memory
 * bytes this process holds (created handles, not imported ones). A copy
 * may run over adjacent mappings whose views are adjacent too (one
 * reservation: pfemu-cuda-vmm.c maps the views into a shadow of it). */
PFEMU_CORE int pfemu_core_VmmMap (void *va, void *view, size_t size,
    int device, int handle_types);
PFEMU_CORE int pfemu_core_VmmUnmap (void *va);
PFEMU_CORE int pfemu_core_VmmSetAccess (void *va, int device, unsigned access);
PFEMU_CORE void pfemu_core_VmmCount (int handles, int reservations,
    long bytes);
/* @add 1: [base, base + size) is a reservation (cuMemAddressReserve); 0:
 * it went. A copy whose host side lies in one (an unmapped hole of device
 * address space, e.g. cuMemcpy's inferred direction) is refused (1)
 * rather than run into a PROT_NONE page. */
PFEMU_CORE void pfemu_core_VmmReserved (void *base, size_t size, int add);

/* Legacy IPC (pfemu-cuda-ipc.c). With PFEMU_IPC=1 (read at each
 * allocation) an allocation keeps its memfd open. IpcExport: the
 * allocation holding @ptr (cuMemAlloc / cudaMallocPitch memory, not a
 * mapping nor an opened handle, made with its memfd kept): the memfd (the
 * core's: not to be closed), its whole-page size, its bytes, its device;
 * 1 when there is none. IpcOpen: maps @fd (another process's allocation,
 * the caller's fd) as device memory of @device, opened in the current
 * context: *va; freed by IpcClose only (cuMemFree refuses it), which
 * faults the copies still queued on it; 1 when @va is not one. Counted in
 * live.ipc.mappings. */
PFEMU_CORE int pfemu_core_IpcExport (const void *ptr, int *fd, size_t *size,
    size_t *bytes, int *device);
PFEMU_CORE int pfemu_core_IpcOpen (int fd, size_t size, size_t bytes,
    int device, void **va);
PFEMU_CORE int pfemu_core_IpcClose (void *va);
/* IPC events: IpcEventExport gives @event's shared page (made at the first
 * export: the event's counters move there; the core's memfd, not to be
 * closed) when it was made with CU_EVENT_INTERPROCESS |
 * CU_EVENT_DISABLE_TIMING (else 1); IpcEventOpen maps such a page (@fd:
 * the caller's) as an event of this process, destroyed as any other.
 * Either side records, queries, synchronises and waits on the shared
 * counters (a wait for another process's record polls); a record of an
 * exported event on the legacy stream runs without a local waiter. */
PFEMU_CORE int pfemu_core_IpcEventExport (void *event, int *fd);
PFEMU_CORE int pfemu_core_IpcEventOpen (int fd, void **event);

#endif
