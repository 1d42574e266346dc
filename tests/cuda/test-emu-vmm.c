/* pinnedflow CUDA suite: the driver-API stand-in's virtual memory
 * management (issue 32 item 5: tests/cuda/pfemu-cuda-vmm.c)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   test-emu-vmm share|rules|forged|devices
 *
 * Run with the emulator's environment (meson's emu_driver_env, plus
 * PFEMU_VMM=1; "devices" with PFEMU_DEVICE_COUNT=2): libcuda.so.1 is the
 * stand-in, GST_PINNEDFLOW_CUDART the cudart emulator whose pfemu_query()
 * counts what is alive. One case per process; exit 0 pass, 1 fail.
 *
 * share: a child forked before CUDA is initialised anywhere gets an
 *   exported allocation's fd over a socketpair (SCM_RIGHTS), imports it,
 *   maps it read-only, reads the parent's bytes exactly, then the bytes
 *   the parent writes after the import (shared memory, not a copy); its
 *   write through the read-only mapping fails with 700 and leaves the
 *   child's context sticky, and the parent's bytes are intact.
 * rules: granularity, handle types, mapping bounds, access, release order.
 * forged: fds that are no exported allocation are refused.
 * devices: two devices; an allocation of device 0 is not accessible from
 *   device 1.
 * Every case checks that no fd, handle, reservation or mapping is left.
 */
#include "pfemu-cuda.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define GRAN ((size_t) 2 << 20)

static void *drv, *rt_lib;
static long (*emu_query) (const char *);
static void (*emu_reset) (void);
static long (*emu_live_total) (void);
static const char *(*emu_leak_report) (void);
static int failures;

#define CU(name, type) ((type) dlsym (drv, name))
#define CHECK(cond) do {                                                \
    if (!(cond)) {                                                      \
      fprintf (stderr, "%d: %s:%d: check failed: %s\n", (int) getpid (), \
          __FILE__, __LINE__, #cond);                                   \
      failures++;                                                       \
    }                                                                   \
  } while (0)
#define EQ(a, b) do {                                                   \
    long a_ = (long) (a), b_ = (long) (b);                              \
    if (a_ != b_) {                                                     \
      fprintf (stderr, "%d: %s:%d: %s is %ld, expected %ld\n",          \
          (int) getpid (), __FILE__, __LINE__, #a, a_, b_);             \
      failures++;                                                       \
    }                                                                   \
  } while (0)

typedef CUmemGenericAllocationHandle Handle;

static CUresult (*cuInit) (unsigned int);
static CUresult (*cuCtxCreate) (CUcontext *, unsigned int, CUdevice);
static CUresult (*cuCtxDestroy) (CUcontext);
static CUresult (*cuCtxSynchronize) (void);
static CUresult (*cuDeviceGetAttribute) (int *, int, CUdevice);
static CUresult (*cuDeviceGetUuid) (unsigned char *, CUdevice);
static CUresult (*cuMemGetAllocationGranularity) (size_t *,
    const CUmemAllocationProp *, int);
static CUresult (*cuMemCreate) (Handle *, size_t, const CUmemAllocationProp *,
    unsigned long long);
static CUresult (*cuMemRelease) (Handle);
static CUresult (*cuMemExportToShareableHandle) (void *, Handle, int,
    unsigned long long);
static CUresult (*cuMemImportFromShareableHandle) (Handle *, void *, int);
static CUresult (*cuMemAddressReserve) (CUdeviceptr *, size_t, size_t,
    CUdeviceptr, unsigned long long);
static CUresult (*cuMemAddressFree) (CUdeviceptr, size_t);
static CUresult (*cuMemMap) (CUdeviceptr, size_t, size_t, Handle,
    unsigned long long);
static CUresult (*cuMemUnmap) (CUdeviceptr, size_t);
static CUresult (*cuMemSetAccess) (CUdeviceptr, size_t,
    const CUmemAccessDesc *, size_t);
static CUresult (*cuMemGetAccess) (unsigned long long *,
    const CUmemLocation *, CUdeviceptr);
static CUresult (*cuMemGetAllocationPropertiesFromHandle) (CUmemAllocationProp
    *, Handle);
static CUresult (*cuMemcpyHtoD) (CUdeviceptr, const void *, size_t);
static CUresult (*cuMemcpyDtoH) (void *, CUdeviceptr, size_t);
static CUresult (*cuMemcpyDtoD) (CUdeviceptr, CUdeviceptr, size_t);
static CUresult (*cuMemcpyHtoDAsync) (CUdeviceptr, const void *, size_t,
    CUstream);
static CUresult (*cuMemFree) (CUdeviceptr);
static CUresult (*cuMemAllocHost) (void **, size_t);
static CUresult (*cuMemFreeHost) (void *);
static CUresult (*cuStreamCreate) (CUstream *, unsigned int);
static CUresult (*cuStreamDestroy) (CUstream);
static CUresult (*cuStreamSynchronize) (CUstream);
static CUresult (*cuMemRetainAllocationHandle) (Handle *, void *);
static CUresult (*cuPointerGetAttribute) (void *, int, CUdeviceptr);
static CUresult (*cuPointerGetAttributes) (unsigned int, int *, void **,
    CUdeviceptr);
static CUresult (*cuMemAlloc) (CUdeviceptr *, size_t);
static CUresult (*cuMemcpy2D) (const CUDA_MEMCPY2D *);
static CUresult (*cuMemcpy2DAsync) (const CUDA_MEMCPY2D *, CUstream);
static CUresult (*cuMemcpyDtoDAsync) (CUdeviceptr, CUdeviceptr, size_t,
    CUstream);
static CUresult (*cuMemcpyDtoHAsync) (void *, CUdeviceptr, size_t, CUstream);
static CUresult (*cuMemcpy) (CUdeviceptr, CUdeviceptr, size_t);
typedef struct
{
  char reserved[64];
} IpcHandle;
static CUresult (*cuIpcGetMemHandle) (IpcHandle *, CUdeviceptr);
static CUresult (*cuIpcOpenMemHandle) (CUdeviceptr *, IpcHandle, unsigned int);
static CUresult (*cuIpcCloseMemHandle) (CUdeviceptr);
static CUresult (*cuIpcGetEventHandle) (IpcHandle *, CUevent);
static CUresult (*cuIpcOpenEventHandle) (CUevent *, IpcHandle);
static CUresult (*cuEventCreate) (CUevent *, unsigned int);
static CUresult (*cuEventDestroy) (CUevent);
static CUresult (*cuEventRecord) (CUevent, CUstream);
static CUresult (*cuEventQuery) (CUevent);
static CUresult (*cuEventSynchronize) (CUevent);
static CUresult (*cuStreamWaitEvent) (CUstream, CUevent, unsigned int);
static CUresult (*cuStreamQuery) (CUstream);

static int
load (void)
{
  const char *rt_path = getenv ("GST_PINNEDFLOW_CUDART");
  void *rt;

  if (!rt_path || !(drv = dlopen ("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) ||
      !(rt = dlopen (rt_path, RTLD_NOW | RTLD_LOCAL))) {
    fprintf (stderr, "cannot load the emulators: %s\n", dlerror ());
    return -1;
  }
  rt_lib = rt;
  emu_query = dlsym (rt, "pfemu_query");
  emu_reset = dlsym (rt, "pfemu_reset");
  emu_live_total = dlsym (rt, "pfemu_live_total");
  emu_leak_report = dlsym (rt, "pfemu_leak_report");
#define SYM(var, name) var = dlsym (drv, name)
  SYM (cuInit, "cuInit");
  SYM (cuCtxCreate, "cuCtxCreate_v2");
  SYM (cuCtxDestroy, "cuCtxDestroy_v2");
  SYM (cuCtxSynchronize, "cuCtxSynchronize");
  SYM (cuDeviceGetAttribute, "cuDeviceGetAttribute");
  SYM (cuDeviceGetUuid, "cuDeviceGetUuid");
  SYM (cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity");
  SYM (cuMemCreate, "cuMemCreate");
  SYM (cuMemRelease, "cuMemRelease");
  SYM (cuMemExportToShareableHandle, "cuMemExportToShareableHandle");
  SYM (cuMemImportFromShareableHandle, "cuMemImportFromShareableHandle");
  SYM (cuMemAddressReserve, "cuMemAddressReserve");
  SYM (cuMemAddressFree, "cuMemAddressFree");
  SYM (cuMemMap, "cuMemMap");
  SYM (cuMemUnmap, "cuMemUnmap");
  SYM (cuMemSetAccess, "cuMemSetAccess");
  SYM (cuMemGetAccess, "cuMemGetAccess");
  SYM (cuMemGetAllocationPropertiesFromHandle,
      "cuMemGetAllocationPropertiesFromHandle");
  SYM (cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  SYM (cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  SYM (cuMemcpyDtoD, "cuMemcpyDtoD_v2");
  SYM (cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  SYM (cuMemFree, "cuMemFree_v2");
  SYM (cuMemAllocHost, "cuMemAllocHost_v2");
  SYM (cuMemFreeHost, "cuMemFreeHost");
  SYM (cuStreamCreate, "cuStreamCreate");
  SYM (cuStreamDestroy, "cuStreamDestroy_v2");
  SYM (cuStreamSynchronize, "cuStreamSynchronize");
  SYM (cuMemRetainAllocationHandle, "cuMemRetainAllocationHandle");
  SYM (cuPointerGetAttribute, "cuPointerGetAttribute");
  SYM (cuPointerGetAttributes, "cuPointerGetAttributes");
  SYM (cuMemAlloc, "cuMemAlloc_v2");
  SYM (cuMemcpy2D, "cuMemcpy2D_v2");
  SYM (cuMemcpy2DAsync, "cuMemcpy2DAsync_v2");
  SYM (cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
  SYM (cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  SYM (cuMemcpy, "cuMemcpy");
  SYM (cuIpcGetMemHandle, "cuIpcGetMemHandle");
  SYM (cuIpcOpenMemHandle, "cuIpcOpenMemHandle");
  SYM (cuIpcCloseMemHandle, "cuIpcCloseMemHandle");
  SYM (cuIpcGetEventHandle, "cuIpcGetEventHandle");
  SYM (cuIpcOpenEventHandle, "cuIpcOpenEventHandle");
  SYM (cuEventCreate, "cuEventCreate");
  SYM (cuEventDestroy, "cuEventDestroy_v2");
  SYM (cuEventRecord, "cuEventRecord");
  SYM (cuEventQuery, "cuEventQuery");
  SYM (cuEventSynchronize, "cuEventSynchronize");
  SYM (cuStreamWaitEvent, "cuStreamWaitEvent");
  SYM (cuStreamQuery, "cuStreamQuery");
  if (!emu_query || !emu_reset || !emu_live_total || !cuMemCreate ||
      !cuMemGetAccess || !cuStreamSynchronize || !cuMemRetainAllocationHandle
      || !cuPointerGetAttributes || !cuMemcpy) {
    fprintf (stderr, "a symbol is missing\n");
    return -1;
  }
  return 0;
}

static int
count_fds (void)
{
  DIR *d = opendir ("/proc/self/fd");
  struct dirent *e;
  int n = 0;

  if (!d)
    return -1;
  while ((e = readdir (d)))
    n += e->d_name[0] != '.';
  closedir (d);
  return n - 1;                 /* the directory's own fd */
}

static CUmemAllocationProp
prop_for (int device, int types)
{
  CUmemAllocationProp p;

  memset (&p, 0, sizeof p);
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = device;
  p.requestedHandleTypes = types;
  return p;
}

static CUresult
set_access (CUdeviceptr va, size_t size, int device, int flags)
{
  CUmemAccessDesc d;

  memset (&d, 0, sizeof d);
  d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  d.location.id = device;
  d.flags = flags;
  return cuMemSetAccess (va, size, &d, 1);
}

static void
fill (unsigned char *buf, size_t n, unsigned seed)
{
  for (size_t i = 0; i < n; i++)
    buf[i] = (unsigned char) ((i * 131 + seed * 7 + (i >> 12)) & 0xff);
}

/* Clears the sticky error (pfemu_reset(), which also tears down the
 * calling thread's context stack) and makes @ctx current again. */
static void
unstick (CUcontext ctx)
{
  CUresult (*set) (CUcontext) = CU ("cuCtxSetCurrent", CUresult (*)(CUcontext));

  emu_reset ();
  EQ (set (ctx), 0);
}

/* nothing of the emulator's alive (handles, reservations, mappings,
 * allocations, contexts) */
static void
check_nothing_alive (void)
{
  EQ (emu_query ("live.vmm.handles"), 0);
  EQ (emu_query ("live.vmm.reservations"), 0);
  EQ (emu_query ("live.vmm.mappings"), 0);
  if (emu_live_total () != 0) {
    fprintf (stderr, "%s", emu_leak_report ());
    failures++;
  }
}

/* --------------------------------------------------------------- share */

static int
send_fd (int sock, int fd, char tag)
{
  char cbuf[CMSG_SPACE (sizeof (int))];
  struct iovec iov = { &tag, 1 };
  struct msghdr msg = { 0 };
  struct cmsghdr *c;

  memset (cbuf, 0, sizeof cbuf);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (fd >= 0) {
    msg.msg_control = cbuf;
    msg.msg_controllen = sizeof cbuf;
    c = CMSG_FIRSTHDR (&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN (sizeof (int));
    memcpy (CMSG_DATA (c), &fd, sizeof fd);
  }
  return sendmsg (sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

/* Returns the tag, -1 on error; *fd: the fd received or -1. */
static int
recv_fd (int sock, int *fd)
{
  char cbuf[CMSG_SPACE (sizeof (int))], tag = 0;
  struct iovec iov = { &tag, 1 };
  struct msghdr msg = { 0 };
  struct cmsghdr *c;

  *fd = -1;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = cbuf;
  msg.msg_controllen = sizeof cbuf;
  if (recvmsg (sock, &msg, MSG_CMSG_CLOEXEC) != 1)
    return -1;
  for (c = CMSG_FIRSTHDR (&msg); c; c = CMSG_NXTHDR (&msg, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
      memcpy (fd, CMSG_DATA (c), sizeof *fd);
  return (unsigned char) tag;
}

#define SHARE_SIZE (2 * GRAN)

static int
share_child (int sock)
{
  unsigned char *want = malloc (SHARE_SIZE), *got = malloc (SHARE_SIZE);
  unsigned long long flags = 99;
  CUmemLocation loc = { CU_MEM_LOCATION_TYPE_DEVICE, 0 };
  CUmemAllocationProp prop;
  CUcontext ctx = NULL;
  CUdeviceptr va = 0;
  Handle h = 0;
  int fd = -1, fds_before;

  fds_before = count_fds ();
  EQ (recv_fd (sock, &fd), 'F');
  CHECK (fd >= 0);
  EQ (cuInit (0), 0);
  EQ (cuCtxCreate (&ctx, 0, 0), 0);
  EQ (cuMemImportFromShareableHandle (&h, (void *) (intptr_t) fd,
          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), 0);
  close (fd);
  EQ (cuMemGetAllocationPropertiesFromHandle (&prop, h), 0);
  EQ (prop.location.id, 0);
  EQ (prop.requestedHandleTypes, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  EQ (cuMemAddressReserve (&va, SHARE_SIZE, 0, 0, 0), 0);
  EQ (cuMemMap (va, SHARE_SIZE, 0, h, 0), 0);
  /* the importer needs no handle once mapped */
  EQ (cuMemRelease (h), 0);
  EQ (set_access (va, SHARE_SIZE, 0, CU_MEM_ACCESS_FLAGS_PROT_READ), 0);
  EQ (cuMemGetAccess (&flags, &loc, va + 100), 0);
  EQ (flags, CU_MEM_ACCESS_FLAGS_PROT_READ);

  /* the parent's first bytes */
  fill (want, SHARE_SIZE, 1);
  EQ (cuMemcpyDtoH (got, va, SHARE_SIZE), 0);
  CHECK (memcmp (want, got, SHARE_SIZE) == 0);
  EQ (send_fd (sock, -1, 'R'), 0);
  /* what the parent wrote after our import: the same memory */
  EQ (recv_fd (sock, &fd), 'W');
  fill (want, SHARE_SIZE, 2);
  EQ (cuMemcpyDtoH (got, va, SHARE_SIZE), 0);
  CHECK (memcmp (want, got, SHARE_SIZE) == 0);

  /* a write through the read-only mapping: the MMU fault, sticky */
  memset (got, 0x5A, SHARE_SIZE);
  EQ (cuMemcpyHtoD (va + GRAN, got, 4096), 700);
  EQ (emu_query ("vmm.faults"), 1);
  EQ (cuMemcpyDtoH (got, va, 16), 700);
  EQ (emu_query ("sticky"), 700);

  /* teardown still works */
  EQ (cuMemUnmap (va, SHARE_SIZE), 0);
  EQ (cuMemAddressFree (va, SHARE_SIZE), 0);
  EQ (cuCtxDestroy (ctx), 0);
  check_nothing_alive ();
  /* the received fd closed, the handle's own duplicate gone */
  EQ (count_fds (), fds_before);
  EQ (send_fd (sock, -1, failures ? 'X' : 'D'), 0);
  free (want);
  free (got);
  return failures ? 1 : 0;
}

static void
case_share (void)
{
  CUmemAllocationProp prop =
      prop_for (0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  unsigned char *buf, *want;
  CUcontext ctx = NULL;
  CUdeviceptr va = 0;
  Handle h = 0;
  int sv[2], fd = -1, status = 0, fds_before, tag;
  pid_t pid;

  /* CUDA's process rule: the child is forked before initialisation */
  CHECK (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
  pid = fork ();
  if (pid == 0) {
    close (sv[0]);
    _exit (share_child (sv[1]));
  }
  close (sv[1]);
  fds_before = count_fds ();
  /* after the fork: the child's exit must not leave them lost */
  buf = malloc (SHARE_SIZE);
  want = malloc (SHARE_SIZE);

  EQ (cuInit (0), 0);
  EQ (cuCtxCreate (&ctx, 0, 0), 0);
  EQ (cuMemCreate (&h, SHARE_SIZE, &prop, 0), 0);
  EQ (cuMemAddressReserve (&va, SHARE_SIZE, 0, 0, 0), 0);
  EQ (cuMemMap (va, SHARE_SIZE, 0, h, 0), 0);
  EQ (set_access (va, SHARE_SIZE, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE), 0);
  fill (buf, SHARE_SIZE, 1);
  /* from pageable memory: staged, landing later (as on a GPU): published
   * only once complete */
  EQ (cuMemcpyHtoD (va, buf, SHARE_SIZE), 0);
  EQ (cuCtxSynchronize (), 0);
  EQ (cuMemExportToShareableHandle (&fd, h,
          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), 0);
  CHECK (fd >= 0);
  EQ (send_fd (sv[0], fd, 'F'), 0);
  close (fd);
  EQ (recv_fd (sv[0], &fd), 'R');
  fill (buf, SHARE_SIZE, 2);
  EQ (cuMemcpyHtoD (va, buf, SHARE_SIZE), 0);
  EQ (cuCtxSynchronize (), 0);
  EQ (send_fd (sv[0], -1, 'W'), 0);
  tag = recv_fd (sv[0], &fd);
  EQ (tag, 'D');
  CHECK (waitpid (pid, &status, 0) == pid);
  CHECK (WIFEXITED (status) && WEXITSTATUS (status) == 0);
  /* the child's refused write left the bytes as they were */
  fill (want, SHARE_SIZE, 2);
  EQ (cuMemcpyDtoH (buf, va, SHARE_SIZE), 0);
  CHECK (memcmp (want, buf, SHARE_SIZE) == 0);
  EQ (emu_query ("vmm.faults"), 0);

  EQ (cuMemUnmap (va, SHARE_SIZE), 0);
  EQ (cuMemRelease (h), 0);
  EQ (cuMemAddressFree (va, SHARE_SIZE), 0);
  EQ (cuCtxDestroy (ctx), 0);
  check_nothing_alive ();
  EQ (count_fds (), fds_before);
  close (sv[0]);
  free (buf);
  free (want);
}

/* --------------------------------------------------------------- rules */

static void
case_rules (void)
{
  CUmemAllocationProp prop =
      prop_for (0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), bad;
  CUmemAllocationProp noexport = prop_for (0, CU_MEM_HANDLE_TYPE_NONE);
  unsigned char *buf = malloc (GRAN), *back = malloc (GRAN);
  void *pinned = NULL;
  CUstream stream = NULL;
  CUcontext ctx = NULL;
  CUdeviceptr va = 0;
  Handle h = 0, h2 = 0;
  size_t g = 0;
  int v = -1, fd = -1, fds_before = count_fds ();

  EQ (cuInit (0), 0);
  EQ (cuCtxCreate (&ctx, 0, 0), 0);

  /* off without PFEMU_VMM=1: the attributes say so, the calls refuse */
  unsetenv ("PFEMU_VMM");
  EQ (cuDeviceGetAttribute (&v, 102, 0), 0);
  EQ (v, 0);
  EQ (cuMemCreate (&h, GRAN, &prop, 0), 801);
  setenv ("PFEMU_VMM", "1", 1);
  EQ (cuDeviceGetAttribute (&v, 102, 0), 0);
  EQ (v, 1);
  EQ (cuDeviceGetAttribute (&v, 103, 0), 0);
  EQ (v, 1);

  /* granularity */
  EQ (cuMemGetAllocationGranularity (&g, &prop,
          CU_MEM_ALLOC_GRANULARITY_MINIMUM), 0);
  EQ (g, GRAN);
  EQ (cuMemGetAllocationGranularity (&g, &prop,
          CU_MEM_ALLOC_GRANULARITY_RECOMMENDED), 0);
  EQ (g, GRAN);
  EQ (cuMemGetAllocationGranularity (&g, &prop, 7), 1);
  EQ (cuMemCreate (&h, GRAN + 4096, &prop, 0), 1);
  EQ (cuMemCreate (&h, GRAN / 2, &prop, 0), 1);
  EQ (cuMemCreate (&h, 0, &prop, 0), 1);
  EQ (cuMemCreate (&h, GRAN, &prop, 1), 1);
  EQ (cuMemCreate (&h, GRAN, NULL, 0), 1);
  bad = prop;
  bad.type = 2;
  EQ (cuMemCreate (&h, GRAN, &bad, 0), 1);
  bad = prop;
  bad.location.type = 2;        /* host */
  EQ (cuMemCreate (&h, GRAN, &bad, 0), 1);
  bad = prop;
  bad.location.id = 7;
  EQ (cuMemCreate (&h, GRAN, &bad, 0), 101);
  EQ (cuMemGetAllocationGranularity (&g, &bad, 0), 101);
  bad = prop;
  bad.requestedHandleTypes = 0x2;       /* Win32 */
  EQ (cuMemCreate (&h, GRAN, &bad, 0), 801);
  EQ (emu_query ("live.vmm.handles"), 0);
  EQ (cuMemAddressReserve (&va, GRAN + 1, 0, 0, 0), 1);
  EQ (cuMemAddressReserve (&va, GRAN + 4096, 0, 0, 0), 0);      /* pages */
  EQ (cuMemAddressFree (va, GRAN + 4096), 0);
  EQ (cuMemAddressReserve (&va, GRAN, 3, 0, 0), 1);
  EQ (cuMemAddressReserve (&va, GRAN, 0, 0, 1), 1);

  /* export needs the handle type at create */
  EQ (cuMemCreate (&h2, GRAN, &noexport, 0), 0);
  EQ (cuMemExportToShareableHandle (&fd, h2,
          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), 1);
  EQ (fd, -1);
  EQ (cuMemRelease (h2), 0);
  EQ (cuMemRelease (h2), 1);    /* released twice */
  EQ (cuMemRelease (12345), 1); /* never made */

  /* mappings: alignment and bounds */
  EQ (cuMemCreate (&h, 2 * GRAN, &prop, 0), 0);
  EQ (cuMemExportToShareableHandle (&fd, h, 0x2, 0), 801);
  EQ (cuMemExportToShareableHandle (&fd, h, 1, 1), 1);
  EQ (cuMemAddressReserve (&va, 4 * GRAN, 0, 0, 0), 0);
  EQ (va % GRAN, 0);
  EQ (cuMemMap (va + 4096, GRAN, 0, h, 0), 1);
  EQ (cuMemMap (va, GRAN + 4096, 0, h, 0), 1);
  EQ (cuMemMap (va, GRAN, 4096, h, 0), 1);
  EQ (cuMemMap (va, 2 * GRAN, GRAN, h, 0), 1);  /* past the allocation */
  EQ (cuMemMap (va + 3 * GRAN, 2 * GRAN, 0, h, 0), 1);  /* past the range */
  EQ (cuMemMap (va, GRAN, 0, h, 1), 1);
  EQ (cuMemMap (va, GRAN, 0, 12345, 0), 1);
  EQ (cuMemMap (va, 2 * GRAN, 0, h, 0), 0);
  EQ (cuMemMap (va + GRAN, GRAN, 0, h, 0), 1);  /* overlaps */
  EQ (cuMemMap (va + 2 * GRAN, GRAN, GRAN, h, 0), 0);   /* a second view */
  EQ (emu_query ("live.vmm.mappings"), 2);

  /* no access until cuMemSetAccess: a copy faults, sticky */
  EQ (cuMemcpyDtoH (buf, va, 64), 700);
  EQ (cuMemcpyDtoH (buf, va, 64), 700);
  unstick (ctx);
  EQ (set_access (va, GRAN, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE), 1);
  EQ (set_access (va, 2 * GRAN, 0, 2), 1);
  EQ (set_access (va, 2 * GRAN, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE), 0);
  EQ (set_access (va + 2 * GRAN, GRAN, 0, CU_MEM_ACCESS_FLAGS_PROT_READ), 0);
  EQ (set_access (va, 4 * GRAN, 0, CU_MEM_ACCESS_FLAGS_PROT_READ), 1);

  /* bytes through one mapping show in the other (the same allocation) */
  fill (buf, GRAN, 3);
  EQ (cuMemcpyHtoD (va + GRAN, buf, GRAN), 0);
  EQ (cuMemcpyDtoH (back, va + 2 * GRAN, GRAN), 0);
  CHECK (memcmp (buf, back, GRAN) == 0);
  EQ (cuMemcpyDtoD (va, va + 2 * GRAN, 4096), 0);
  EQ (cuMemcpyDtoH (back, va, 4096), 0);
  CHECK (memcmp (buf, back, 4096) == 0);
  /* the mapped address is device memory: a host read faults (in a child
   * that makes no CUDA call) */
  {
    int status = 0;
    pid_t pid = fork ();
    if (pid == 0) {
      volatile char c = *(volatile char *) (uintptr_t) (va + GRAN);
      (void) c;
      _exit (0);
    }
    CHECK (pid > 0 && waitpid (pid, &status, 0) == pid);
    CHECK (WIFSIGNALED (status) && WTERMSIG (status) == SIGSEGV);
  }
  /* a memset into the read-only view faults too */
  {
    CUresult (*memset8) (CUdeviceptr, size_t, unsigned char, size_t,
        size_t) = CU ("cuMemsetD2D8_v2", CUresult (*)(CUdeviceptr, size_t,
            unsigned char, size_t, size_t));
    EQ (memset8 (va + 2 * GRAN, 4096, 0x11, 4096, 1), 700);
    EQ (emu_query ("sticky"), 700);
    unstick (ctx);
    EQ (memset8 (va, 4096, 0x11, 4096, 1), 0);
    EQ (cuMemcpyDtoH (back, va, 4096), 0);
    CHECK (back[0] == 0x11 && back[4095] == 0x11);
  }
  /* cuMemFree is no way to free a mapping */
  EQ (cuMemFree (va), 1);

  /* an asynchronous write to the read-only view: the call succeeds, the
   * stream reports the fault */
  EQ (cuMemAllocHost (&pinned, 4096), 0);
  EQ (cuStreamCreate (&stream, 0), 0);
  EQ (cuMemcpyHtoDAsync (va + 2 * GRAN, pinned, 4096, stream), 0);
  EQ (cuStreamSynchronize (stream), 700);
  EQ (emu_query ("sticky"), 700);
  EQ (cuStreamDestroy (stream), 700);   /* releases, reports it */
  EQ (cuMemFreeHost (pinned), 700);
  unstick (ctx);
  EQ (cuMemcpyDtoH (back, va + 2 * GRAN, GRAN), 0);
  CHECK (memcmp (buf, back, GRAN) == 0);        /* not written */

  /* release order: the handle may go first, the memory stays while
   * mapped; the reservation may not go while mapped; whole mappings */
  EQ (cuMemRelease (h), 0);
  EQ (cuMemExportToShareableHandle (&fd, h, 1, 0), 1);
  EQ (cuMemcpyDtoH (back, va + GRAN, GRAN), 0);
  CHECK (memcmp (buf, back, GRAN) == 0);
  EQ (emu_query ("live.vmm.handles"), 1);
  EQ (cuMemAddressFree (va, 4 * GRAN), 1);
  EQ (cuMemUnmap (va, GRAN), 1);        /* half a mapping */
  EQ (cuMemUnmap (va, 4 * GRAN), 1);    /* a hole in the range */
  EQ (cuMemUnmap (va, 3 * GRAN), 0);
  EQ (emu_query ("live.vmm.mappings"), 0);
  EQ (emu_query ("live.vmm.handles"), 0);
  EQ (cuMemUnmap (va, 2 * GRAN), 1);
  EQ (cuMemAddressFree (va, 2 * GRAN), 1);      /* not the reserved size */
  EQ (cuMemAddressFree (va, 4 * GRAN), 0);
  EQ (cuMemAddressFree (va, 4 * GRAN), 1);

  EQ (cuCtxDestroy (ctx), 0);
  check_nothing_alive ();
  EQ (count_fds (), fds_before);
  free (buf);
  free (back);
}

/* -------------------------------------------------------------- forged */

struct fake_header
{
  char magic[8];
  uint64_t size, granularity;
  unsigned char uuid[16];
};

/* A memfd shaped like an export, with @magic / @size / @uuid; @seal 1:
 * sealed as exports are, 2: write-sealed too. */
static int
forge (const char *magic, uint64_t size, const char *uuid, int seal)
{
  struct fake_header h;
  int fd = memfd_create ("forged", MFD_CLOEXEC | MFD_ALLOW_SEALING);

  memset (&h, 0, sizeof h);
  memcpy (h.magic, magic, 8);
  h.size = size;
  h.granularity = GRAN;
  memcpy (h.uuid, uuid, 16);
  if (fd < 0 || ftruncate (fd, 4096 + GRAN) < 0 ||
      pwrite (fd, &h, sizeof h, 0) != (ssize_t) sizeof h)
    return -1;
  if (seal && fcntl (fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
          (seal == 2 ? F_SEAL_WRITE : 0) | F_SEAL_SEAL) < 0)
    return -1;
  return fd;
}

static CUresult
import (int fd)
{
  Handle h = 0;
  CUresult r = cuMemImportFromShareableHandle (&h, (void *) (intptr_t) fd,
      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);

  if (r == 0)
    cuMemRelease (h);
  return r;
}

static void
case_forged (void)
{
  CUmemAllocationProp prop =
      prop_for (0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUcontext ctx = NULL;
  Handle h = 0;
  int fds_before = count_fds (), p[2], fd, good = -1, null_fd;

  EQ (cuInit (0), 0);
  EQ (cuCtxCreate (&ctx, 0, 0), 0);
  CHECK (pipe (p) == 0);
  EQ (import (p[0]), 1);
  EQ (import (p[1]), 1);
  close (p[0]);
  close (p[1]);
  null_fd = open ("/dev/null", O_RDWR | O_CLOEXEC);
  EQ (import (null_fd), 1);
  close (null_fd);
  EQ (import (-1), 1);
  EQ (import (1000000), 1);
  fd = memfd_create ("plain", MFD_CLOEXEC);     /* no seals, no marker */
  CHECK (fd >= 0 && ftruncate (fd, 4096 + GRAN) == 0);
  EQ (import (fd), 1);
  close (fd);
  fd = forge ("PFEMUVMM", GRAN, "pfemu-device-000", 0); /* unsealed */
  EQ (import (fd), 1);
  close (fd);
  fd = forge ("NOTOURS!", GRAN, "pfemu-device-000", 1);
  EQ (import (fd), 1);
  close (fd);
  fd = forge ("PFEMUVMM", 2 * GRAN, "pfemu-device-000", 1);     /* size */
  EQ (import (fd), 1);
  close (fd);
  fd = forge ("PFEMUVMM", GRAN, "pfemu-device-000", 2); /* write-sealed */
  EQ (import (fd), 1);
  close (fd);
  fd = forge ("PFEMUVMM", GRAN, "pfemu-device-009", 1); /* no device 9 */
  EQ (import (fd), 101);
  close (fd);
  /* the same shape with the right fields is accepted (the checks above
   * refuse for the reason given, not for any memfd) */
  fd = forge ("PFEMUVMM", GRAN, "pfemu-device-000", 1);
  EQ (import (fd), 0);
  close (fd);
  /* a real export, then the wrong handle type */
  EQ (cuMemCreate (&h, GRAN, &prop, 0), 0);
  EQ (cuMemExportToShareableHandle (&good, h,
          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), 0);
  {
    Handle h2 = 0;
    EQ (cuMemImportFromShareableHandle (&h2, (void *) (intptr_t) good, 0x2),
        801);
    EQ (cuMemImportFromShareableHandle (NULL, (void *) (intptr_t) good,
            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), 1);
  }
  EQ (import (good), 0);
  close (good);
  EQ (cuMemRelease (h), 0);
  EQ (cuCtxDestroy (ctx), 0);
  check_nothing_alive ();
  EQ (count_fds (), fds_before);
}

/* ------------------------------------------------------------- devices */

static void
case_devices (void)
{
  CUmemAllocationProp prop =
      prop_for (0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUmemAllocationProp prop1 = prop_for (1, CU_MEM_HANDLE_TYPE_NONE);
  CUmemAccessDesc two[2];
  unsigned char u0[16], u1[16], buf[64];
  unsigned long long flags = 9;
  CUmemLocation loc1 = { CU_MEM_LOCATION_TYPE_DEVICE, 1 };
  CUcontext ctx0 = NULL, ctx1 = NULL, popped;
  CUdeviceptr va = 0;
  Handle h = 0, imported = 0, h1 = 0;
  int fd = -1, fds_before = count_fds ();
  CUresult (*pop) (CUcontext *) = CU ("cuCtxPopCurrent_v2",
      CUresult (*)(CUcontext *));

  EQ (cuInit (0), 0);
  EQ (cuDeviceGetUuid (u0, 0), 0);
  EQ (cuDeviceGetUuid (u1, 1), 0);
  CHECK (memcmp (u0, u1, 16) != 0);
  EQ (cuCtxCreate (&ctx0, 0, 0), 0);
  EQ (cuMemCreate (&h, GRAN, &prop, 0), 0);
  EQ (cuMemCreate (&h1, GRAN, &prop1, 0), 0);
  EQ (cuMemExportToShareableHandle (&fd, h, 1, 0), 0);
  EQ (pop (&popped), 0);
  /* a context on device 1 imports device 0's allocation */
  EQ (cuCtxCreate (&ctx1, 0, 1), 0);
  EQ (cuMemImportFromShareableHandle (&imported, (void *) (intptr_t) fd,
          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), 0);
  close (fd);
  EQ (cuMemAddressReserve (&va, GRAN, 0, 0, 0), 0);
  EQ (cuMemMap (va, GRAN, 0, imported, 0), 0);
  /* device 1 may not access device 0's memory: refused */
  EQ (set_access (va, GRAN, 1, CU_MEM_ACCESS_FLAGS_PROT_READ), 101);
  memset (two, 0, sizeof two);
  two[0].location.type = two[1].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  two[0].location.id = 0;
  two[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  two[1].location.id = 1;
  two[1].flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
  EQ (cuMemSetAccess (va, GRAN, two, 2), 101);
  EQ (cuMemGetAccess (&flags, &loc1, va), 0);
  EQ (flags, 0);                /* nothing applied */
  EQ (set_access (va, GRAN, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE), 0);
  /* a copy by device 1's context: no access for device 1 */
  EQ (cuMemcpyDtoH (buf, va, sizeof buf), 700);
  unstick (ctx1);
  EQ (cuMemUnmap (va, GRAN), 0);
  EQ (cuMemAddressFree (va, GRAN), 0);
  EQ (cuMemRelease (imported), 0);
  EQ (cuMemRelease (h), 0);
  EQ (cuMemRelease (h1), 0);
  EQ (cuCtxDestroy (ctx1), 0);
  EQ (cuCtxDestroy (ctx0), 0);
  check_nothing_alive ();
  EQ (count_fds (), fds_before);
}

/* -------------------------------------------------------------- retain */

/* cuMemRetainAllocationHandle: the handle mapped at any address of a
 * mapping (the same value), one more reference each, released by as many
 * cuMemRelease; an address no mapping holds: 1. */
static void
case_retain (void)
{
  CUmemAllocationProp prop =
      prop_for (0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  unsigned char *buf = malloc (GRAN), *back = malloc (GRAN);
  CUcontext ctx = NULL;
  CUdeviceptr va = 0, plain = 0;
  Handle h = 0, r1 = 0, r2 = 0, r3 = 0;
  int fd = -1, fds_before = count_fds ();

  EQ (cuInit (0), 0);
  EQ (cuCtxCreate (&ctx, 0, 0), 0);
  EQ (cuMemCreate (&h, 2 * GRAN, &prop, 0), 0);
  EQ (cuMemAddressReserve (&va, 4 * GRAN, 0, 0, 0), 0);
  /* nothing mapped yet: not an allocation's address */
  EQ (cuMemRetainAllocationHandle (&r1, (void *) (uintptr_t) va), 1);
  EQ (cuMemMap (va, 2 * GRAN, 0, h, 0), 0);
  EQ (set_access (va, 2 * GRAN, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE), 0);
  EQ (cuMemRetainAllocationHandle (NULL, (void *) (uintptr_t) va), 1);
  /* the start, the middle, the last byte: the same handle */
  EQ (cuMemRetainAllocationHandle (&r1, (void *) (uintptr_t) va), 0);
  EQ (r1, h);
  EQ (cuMemRetainAllocationHandle (&r2,
          (void *) (uintptr_t) (va + GRAN + 12345)), 0);
  EQ (r2, h);
  EQ (cuMemRetainAllocationHandle (&r3,
          (void *) (uintptr_t) (va + 2 * GRAN - 1)), 0);
  EQ (r3, h);
  /* past the mapping, in the reservation's hole; host and cuMemAlloc
   * memory: refused */
  EQ (cuMemRetainAllocationHandle (&r1,
          (void *) (uintptr_t) (va + 2 * GRAN)), 1);
  EQ (cuMemRetainAllocationHandle (&r1, buf), 1);
  EQ (cuMemAlloc (&plain, 4096), 0);
  EQ (cuMemRetainAllocationHandle (&r1, (void *) (uintptr_t) plain), 1);
  EQ (cuMemFree (plain), 0);

  /* four references: the creator's and three retained; the handle works
   * until the last is released, the memory until the unmap */
  EQ (cuMemRelease (h), 0);
  EQ (cuMemRelease (h), 0);
  EQ (cuMemRelease (h), 0);
  EQ (cuMemExportToShareableHandle (&fd, h,
          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), 0);
  CHECK (fd >= 0);
  close (fd);
  EQ (cuMemRelease (h), 0);
  EQ (cuMemRelease (h), 1);     /* one release too many */
  EQ (cuMemExportToShareableHandle (&fd, h,
          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), 1);
  EQ (emu_query ("live.vmm.handles"), 1);       /* kept by the mapping */
  fill (buf, GRAN, 4);
  EQ (cuMemcpyHtoD (va + GRAN, buf, GRAN), 0);
  EQ (cuMemcpyDtoH (back, va + GRAN, GRAN), 0);
  CHECK (memcmp (buf, back, GRAN) == 0);
  /* retained from the mapping after every reference went: the same value
   * again, usable, and it keeps the memory past the unmap */
  EQ (cuMemRetainAllocationHandle (&r1, (void *) (uintptr_t) va), 0);
  EQ (r1, h);
  EQ (cuMemUnmap (va, 2 * GRAN), 0);
  EQ (emu_query ("live.vmm.handles"), 1);
  EQ (cuMemRetainAllocationHandle (&r2, (void *) (uintptr_t) va), 1);
  EQ (cuMemMap (va + 2 * GRAN, 2 * GRAN, 0, r1, 0), 0);
  EQ (set_access (va + 2 * GRAN, 2 * GRAN, 0,
          CU_MEM_ACCESS_FLAGS_PROT_READ), 0);
  EQ (cuMemcpyDtoH (back, va + 3 * GRAN, GRAN), 0);
  CHECK (memcmp (buf, back, GRAN) == 0);        /* the same bytes */
  EQ (cuMemRelease (r1), 0);
  EQ (cuMemUnmap (va + 2 * GRAN, 2 * GRAN), 0);
  EQ (emu_query ("live.vmm.handles"), 0);
  EQ (cuMemAddressFree (va, 4 * GRAN), 0);
  EQ (cuCtxDestroy (ctx), 0);
  check_nothing_alive ();
  EQ (count_fds (), fds_before);
  free (buf);
  free (back);
}

/* --------------------------------------------------------------- attrs */

enum
{
  ATTR_CONTEXT = 1, ATTR_MEMORY_TYPE = 2, ATTR_DEVICE_POINTER = 3,
  ATTR_HOST_POINTER = 4, ATTR_BUFFER_ID = 7, ATTR_DEVICE_ORDINAL = 9,
  ATTR_IPC_CAPABLE = 10, ATTR_RANGE_START = 11, ATTR_RANGE_SIZE = 12,
  ATTR_MAPPED = 13, ATTR_HANDLE_TYPES = 14, ATTR_ACCESS_FLAGS = 16,
  ATTR_MAPPING_SIZE = 18, ATTR_MAPPING_BASE = 19,
};

static long
attr_int (int attr, CUdeviceptr p)
{
  int v = -77;
  CUresult r = cuPointerGetAttribute (&v, attr, p);
  return r == 0 ? v : -1000 - r;
}

/* cuPointerGetAttribute(s) on two devices: each allocation and mapping
 * says the device its memory is on, its range, its context, its access. */
static void
case_attrs (void)
{
  CUmemAllocationProp prop1 =
      prop_for (1, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUmemAllocationProp prop0 = prop_for (0, CU_MEM_HANDLE_TYPE_NONE);
  CUresult (*pop) (CUcontext *) = CU ("cuCtxPopCurrent_v2",
      CUresult (*)(CUcontext *));
  CUresult (*push) (CUcontext) = CU ("cuCtxPushCurrent_v2",
      CUresult (*)(CUcontext));
  CUcontext ctx0 = NULL, ctx1 = NULL, got = NULL, popped;
  CUdeviceptr d0 = 0, d1 = 0, va = 0, va0 = 0, v = 0;
  unsigned long long id0 = 0, id1 = 0, types = 9;
  unsigned int mtype = 0;
  unsigned char flag = 9;
  size_t size = 0;
  void *host = NULL, *hp = NULL;
  Handle h = 0, h0 = 0;
  int fds_before = count_fds ();

  EQ (cuInit (0), 0);
  EQ (cuCtxCreate (&ctx0, 0, 0), 0);
  EQ (cuMemAlloc (&d0, 10000), 0);
  EQ (cuMemAllocHost (&host, 8192), 0);
  EQ (pop (&popped), 0);
  EQ (cuCtxCreate (&ctx1, 0, 1), 0);
  EQ (cuMemAlloc (&d1, 5000), 0);

  /* cuMemAlloc memory: its device, context, range; asked from the other
   * device's context too */
  EQ (attr_int (ATTR_DEVICE_ORDINAL, d0), 0);
  EQ (attr_int (ATTR_DEVICE_ORDINAL, d1 + 4999), 1);
  EQ (cuPointerGetAttribute (&got, ATTR_CONTEXT, d0 + 5), 0);
  CHECK (got == ctx0);
  EQ (cuPointerGetAttribute (&got, ATTR_CONTEXT, d1), 0);
  CHECK (got == ctx1);
  EQ (cuPointerGetAttribute (&mtype, ATTR_MEMORY_TYPE, d1), 0);
  EQ (mtype, CU_MEMORYTYPE_DEVICE);
  EQ (cuPointerGetAttribute (&v, ATTR_RANGE_START, d0 + 9999), 0);
  EQ (v, d0);
  EQ (cuPointerGetAttribute (&size, ATTR_RANGE_SIZE, d0 + 100), 0);
  EQ (size, 10000);
  EQ (cuPointerGetAttribute (&flag, ATTR_IPC_CAPABLE, d0), 0);
  EQ (flag, 1);
  EQ (cuPointerGetAttribute (&id0, ATTR_BUFFER_ID, d0), 0);
  EQ (cuPointerGetAttribute (&id1, ATTR_BUFFER_ID, d1), 0);
  CHECK (id0 != 0 && id1 != 0 && id0 != id1);
  /* the current context is device 1's: read-write on its own memory,
   * none on device 0's (no peer access) */
  EQ (attr_int (ATTR_ACCESS_FLAGS, d1), 3);
  EQ (attr_int (ATTR_ACCESS_FLAGS, d0), 0);
  EQ (cuPointerGetAttribute (&hp, ATTR_HOST_POINTER, d1), 1);
  /* page-locked host memory: host, its context's device */
  EQ (cuPointerGetAttribute (&mtype, ATTR_MEMORY_TYPE,
          (CUdeviceptr) (uintptr_t) host), 0);
  EQ (mtype, CU_MEMORYTYPE_HOST);
  EQ (cuPointerGetAttribute (&hp, ATTR_HOST_POINTER,
          (CUdeviceptr) (uintptr_t) host + 8), 0);
  CHECK (hp == (char *) host + 8);
  /* unknown to the device */
  EQ (attr_int (ATTR_DEVICE_ORDINAL, (CUdeviceptr) (uintptr_t) & fds_before),
      -1001);
  EQ (cuPointerGetAttribute (NULL, ATTR_DEVICE_ORDINAL, d1), 1);
  EQ (attr_int (6, d1), -1801); /* SYNC_MEMOPS: not here */

  /* a mapping of a device 1 allocation (made in device 1's context):
   * device 1, no context, the mapping's range and handle types, the
   * access set for device 1 */
  EQ (cuMemCreate (&h, 2 * GRAN, &prop1, 0), 0);
  EQ (cuMemAddressReserve (&va, 2 * GRAN, 0, 0, 0), 0);
  EQ (cuMemMap (va, 2 * GRAN, 0, h, 0), 0);
  EQ (attr_int (ATTR_DEVICE_ORDINAL, va + GRAN), 1);
  EQ (attr_int (ATTR_ACCESS_FLAGS, va), 0);
  EQ (set_access (va, 2 * GRAN, 1, CU_MEM_ACCESS_FLAGS_PROT_READ), 0);
  EQ (attr_int (ATTR_ACCESS_FLAGS, va), CU_MEM_ACCESS_FLAGS_PROT_READ);
  got = ctx0;
  EQ (cuPointerGetAttribute (&got, ATTR_CONTEXT, va), 0);
  CHECK (got == NULL);
  EQ (cuPointerGetAttribute (&v, ATTR_MAPPING_BASE, va + 77), 0);
  EQ (v, va);
  EQ (cuPointerGetAttribute (&size, ATTR_MAPPING_SIZE, va + 77), 0);
  EQ (size, 2 * GRAN);
  EQ (cuPointerGetAttribute (&types, ATTR_HANDLE_TYPES, va), 0);
  EQ (types, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  EQ (cuPointerGetAttribute (&flag, ATTR_MAPPED, va), 0);
  EQ (flag, 1);
  EQ (cuPointerGetAttribute (&flag, ATTR_IPC_CAPABLE, va), 0);
  EQ (flag, 0);
  /* a device 0 mapping asked from device 0's context */
  EQ (cuMemCreate (&h0, GRAN, &prop0, 0), 0);
  EQ (cuMemAddressReserve (&va0, GRAN, 0, 0, 0), 0);
  EQ (cuMemMap (va0, GRAN, 0, h0, 0), 0);
  EQ (pop (&popped), 0);
  EQ (push (ctx0), 0);
  EQ (set_access (va0, GRAN, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE), 0);
  EQ (attr_int (ATTR_DEVICE_ORDINAL, va0), 0);
  EQ (attr_int (ATTR_ACCESS_FLAGS, va0), 3);
  EQ (attr_int (ATTR_ACCESS_FLAGS, va), 0);     /* device 1's mapping */
  EQ (cuPointerGetAttribute (&types, ATTR_HANDLE_TYPES, va0), 0);
  EQ (types, 0);

  /* several at once; an unknown pointer is no error there */
  {
    int attrs[4] = { ATTR_DEVICE_ORDINAL, ATTR_MEMORY_TYPE, ATTR_RANGE_SIZE,
      ATTR_HOST_POINTER
    };
    int ord = -5;
    unsigned int t = 9;
    size_t sz = 1;
    void *hptr = &sz;
    void *data[4] = { &ord, &t, &sz, &hptr };
    EQ (cuPointerGetAttributes (4, attrs, data, va + 5), 0);
    EQ (ord, 1);
    EQ (t, CU_MEMORYTYPE_DEVICE);
    EQ (sz, 2 * GRAN);
    CHECK (hptr == NULL);
    EQ (cuPointerGetAttributes (4, attrs, data,
            (CUdeviceptr) (uintptr_t) & ord), 0);
    EQ (ord, 0);
    EQ (t, 0);
    EQ (sz, 0);
    EQ (cuPointerGetAttributes (0, attrs, data, va), 1);
  }

  EQ (cuMemUnmap (va, 2 * GRAN), 0);
  EQ (cuMemUnmap (va0, GRAN), 0);
  EQ (cuMemAddressFree (va, 2 * GRAN), 0);
  EQ (cuMemAddressFree (va0, GRAN), 0);
  EQ (cuMemRelease (h), 0);
  EQ (cuMemRelease (h0), 0);
  EQ (attr_int (ATTR_DEVICE_ORDINAL, va), -1001);       /* gone */
  EQ (cuMemFree (d0), 0);
  EQ (cuMemFree (d1), 0);
  EQ (cuMemFreeHost (host), 0);
  EQ (cuCtxDestroy (ctx1), 0);
  EQ (cuCtxDestroy (ctx0), 0);
  check_nothing_alive ();
  EQ (count_fds (), fds_before);
}

/* ---------------------------------------------------------------- span */

/* Copies over two adjacent mappings of one reservation (two allocations)
 * run as over contiguous device memory; one that runs into an unmapped
 * hole, or into a mapping without access, is refused, never a host
 * SIGSEGV. */
static void
case_span (void)
{
  CUmemAllocationProp prop = prop_for (0, CU_MEM_HANDLE_TYPE_NONE);
  size_t n = 3 * GRAN, w = 1000, pitch = 4096, rows;
  unsigned char *buf = malloc (n), *back = malloc (n), *pinned = NULL;
  CUstream stream = NULL;
  CUcontext ctx = NULL;
  CUdeviceptr va = 0, a1, a2, d = 0;
  CUDA_MEMCPY2D c;
  Handle h1 = 0, h2 = 0, h3 = 0;
  int fds_before = count_fds ();

  EQ (cuInit (0), 0);
  EQ (cuCtxCreate (&ctx, 0, 0), 0);
  EQ (cuMemCreate (&h1, GRAN, &prop, 0), 0);
  EQ (cuMemCreate (&h2, 2 * GRAN, &prop, 0), 0);
  EQ (cuMemCreate (&h3, GRAN, &prop, 0), 0);
  EQ (cuMemAddressReserve (&va, 6 * GRAN, 0, 0, 0), 0);
  /* [h1][h2 h2][hole][h3] */
  EQ (cuMemMap (va, GRAN, 0, h1, 0), 0);
  EQ (cuMemMap (va + GRAN, 2 * GRAN, 0, h2, 0), 0);
  EQ (cuMemMap (va + 4 * GRAN, GRAN, 0, h3, 0), 0);
  EQ (set_access (va, 3 * GRAN, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE), 0);
  EQ (set_access (va + 4 * GRAN, GRAN, 0,
          CU_MEM_ACCESS_FLAGS_PROT_READWRITE), 0);
  EQ (cuMemRelease (h1), 0);
  EQ (cuMemRelease (h2), 0);
  EQ (cuMemRelease (h3), 0);

  /* one copy in, one copy out, over the boundary between h1 and h2 */
  fill (buf, n, 5);
  a1 = va + GRAN / 2;
  EQ (cuMemcpyHtoD (a1, buf, 2 * GRAN), 0);
  EQ (cuCtxSynchronize (), 0);
  EQ (cuMemcpyDtoH (back, a1, 2 * GRAN), 0);
  CHECK (memcmp (buf, back, 2 * GRAN) == 0);
  /* the bytes landed in both allocations: read each on its own */
  EQ (cuMemcpyDtoH (back, va + GRAN, GRAN), 0);
  CHECK (memcmp (buf + GRAN / 2, back, GRAN) == 0);
  /* the whole of both, device to device (cuMemcpy, DtoD, async) */
  EQ (cuMemcpyHtoD (va, buf, 3 * GRAN), 0);
  EQ (cuCtxSynchronize (), 0);
  EQ (cuMemAlloc (&d, 3 * GRAN), 0);
  EQ (cuMemcpyDtoD (d, va, 3 * GRAN), 0);
  EQ (cuMemcpyDtoH (back, d, 3 * GRAN), 0);
  CHECK (memcmp (buf, back, 3 * GRAN) == 0);
  fill (back, n, 6);
  EQ (cuMemcpyHtoD (d, back, 3 * GRAN), 0);
  EQ (cuMemcpy (va, d, 3 * GRAN), 0);
  EQ (cuStreamCreate (&stream, 0), 0);
  EQ (cuMemAllocHost ((void **) &pinned, n), 0);
  EQ (cuMemcpyDtoHAsync (pinned, va, 3 * GRAN, stream), 0);
  EQ (cuStreamSynchronize (stream), 0);
  CHECK (memcmp (back, pinned, 3 * GRAN) == 0);
  EQ (cuMemcpyHtoD (d, buf, 3 * GRAN), 0);
  EQ (cuCtxSynchronize (), 0);
  EQ (cuMemcpyDtoDAsync (va, d, 3 * GRAN, stream), 0);
  EQ (cuMemcpyDtoHAsync (pinned, va, 3 * GRAN, stream), 0);
  EQ (cuStreamSynchronize (stream), 0);
  CHECK (memcmp (buf, pinned, 3 * GRAN) == 0);
  /* 2D, rows crossing the boundary at GRAN */
  rows = 64;
  a2 = va + GRAN - 30 * pitch;
  memset (&c, 0, sizeof c);
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = buf;
  c.srcPitch = w;
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.dstDevice = a2;
  c.dstPitch = pitch;
  c.WidthInBytes = w;
  c.Height = rows;
  EQ (cuMemcpy2D (&c), 0);
  EQ (cuCtxSynchronize (), 0);
  memset (&c, 0, sizeof c);
  c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  c.srcDevice = a2;
  c.srcPitch = pitch;
  c.dstMemoryType = CU_MEMORYTYPE_HOST;
  c.dstHost = pinned;
  c.dstPitch = w;
  c.WidthInBytes = w;
  c.Height = rows;
  EQ (cuMemcpy2DAsync (&c, stream), 0);
  EQ (cuStreamSynchronize (stream), 0);
  CHECK (memcmp (buf, pinned, w * rows) == 0);

  /* into the hole at 3 * GRAN: refused, nothing written, no SIGSEGV */
  EQ (emu_query ("vmm.faults"), 0);
  EQ (cuMemcpyHtoD (va + 3 * GRAN - 4096, buf, 8192), 1);
  EQ (cuMemcpyDtoH (back, va + 3 * GRAN - 4096, 8192), 1);
  EQ (cuMemcpyDtoD (va + 2 * GRAN, va + 3 * GRAN - 100, 200), 1);
  EQ (cuMemcpyDtoDAsync (d, va + 2 * GRAN, GRAN + 1, stream), 1);
  EQ (cuMemcpyHtoD (va + 3 * GRAN, buf, 16), 1);        /* in the hole */
  /* cuMemcpy infers the direction: a hole is no host memory either */
  EQ (cuMemcpy (va + 3 * GRAN, d, 16), 1);
  EQ (cuMemcpy (d, va + 3 * GRAN + 64, 16), 1);
  EQ (cuMemcpy (va + 3 * GRAN - 8, d, 16), 1);
  /* over the hole into h3: still refused (not contiguous) */
  EQ (cuMemcpyDtoH (back, va + 2 * GRAN, 3 * GRAN), 1);
  EQ (cuStreamSynchronize (stream), 0);
  EQ (emu_query ("sticky"), 0);
  EQ (cuMemcpyDtoH (back, va + 3 * GRAN - 4096, 4096), 0);
  CHECK (memcmp (buf + 3 * GRAN - 4096, back, 4096) == 0);

  /* access: read-only on h2: a write over h1 and h2 faults (700) */
  EQ (set_access (va + GRAN, 2 * GRAN, 0, CU_MEM_ACCESS_FLAGS_PROT_READ), 0);
  EQ (cuMemcpyDtoH (back, va, 2 * GRAN), 0);    /* reading is fine */
  memset (pinned, 0xEE, 32);
  EQ (cuMemcpyHtoD (va + GRAN - 16, pinned, 32), 700);
  unstick (ctx);
  EQ (cuMemcpyDtoH (pinned, va + GRAN - 16, 32), 0);
  CHECK (memcmp (back + GRAN - 16, pinned, 32) == 0);   /* not written */
  /* a late reader (a consumer's kernel) on a mapping without access for
   * its device: the fault at the stream's sync, sticky, nothing read */
  {
    int (*stream_read) (void *, const void *, size_t, size_t, size_t,
        void *, long) = (int (*)(void *, const void *, size_t, size_t,
            size_t, void *, long)) dlsym (rt_lib, "pfemu_stream_read");
    CUstream s2 = NULL;
    CHECK (stream_read != NULL);
    EQ (cuStreamCreate (&s2, 0), 0);
    EQ (stream_read (s2, (void *) (uintptr_t) (va + GRAN - 512), 1024, 1024, 1, back, 0), 0);   /* readable: a and b */
    EQ (cuStreamSynchronize (s2), 0);
    EQ (set_access (va + 4 * GRAN, GRAN, 0, CU_MEM_ACCESS_FLAGS_PROT_NONE), 0);
    EQ (stream_read (s2, (void *) (uintptr_t) (va + 4 * GRAN), 4096, 4096,
            1, back, 0), 0);
    EQ (cuStreamSynchronize (s2), 700);
    EQ (emu_query ("reads.faulted"), 1);
    EQ (emu_query ("reads"), 1);
    EQ (cuStreamDestroy (s2), 700);
    unstick (ctx);
  }
  /* unmapping the second part leaves a hole: copies across it refused */
  EQ (cuMemUnmap (va + GRAN, 2 * GRAN), 0);
  EQ (cuMemcpyDtoH (back, va + GRAN - 16, 32), 1);
  EQ (cuMemcpyDtoH (back, va + GRAN - 16, 16), 0);

  EQ (cuStreamDestroy (stream), 0);
  EQ (cuMemFreeHost (pinned), 0);
  EQ (cuMemFree (d), 0);
  EQ (cuMemUnmap (va, GRAN), 0);
  EQ (cuMemUnmap (va + 4 * GRAN, GRAN), 0);
  EQ (cuMemAddressFree (va, 6 * GRAN), 0);
  EQ (cuCtxDestroy (ctx), 0);
  check_nothing_alive ();
  EQ (count_fds (), fds_before);
  free (buf);
  free (back);
}

/* ----------------------------------------------------------------- ipc */

/* a stream's host function that holds the stream until a byte arrives */
static void
gate_fn (void *data)
{
  char c;

  if (read (*(int *) data, &c, 1) != 1)
    fprintf (stderr, "gate: read failed\n");
}

#define IPC_SIZE ((size_t) (1 << 20) + 123)

static int
send_msg (int sock, char tag, const void *data, size_t n)
{
  char buf[1 + sizeof (IpcHandle)];

  buf[0] = tag;
  if (n)
    memcpy (buf + 1, data, n);
  return send (sock, buf, 1 + n, MSG_NOSIGNAL) == (ssize_t) (1 + n) ? 0 : -1;
}

static int
recv_msg (int sock, void *data, size_t n)
{
  char buf[1 + sizeof (IpcHandle)];
  ssize_t got = recv (sock, buf, sizeof buf, 0);

  if (got < 1 || (size_t) got != 1 + n)
    return -1;
  if (n)
    memcpy (data, buf + 1, n);
  return (unsigned char) buf[0];
}

static int
ipc_child (int sock)
{
  unsigned char *want = malloc (IPC_SIZE), *got = malloc (IPC_SIZE);
  IpcHandle h, forged, stale;
  CUcontext ctx = NULL;
  CUdeviceptr p = 0, p2 = 0;
  unsigned char flag = 9;
  size_t size = 0;
  int fds_before = count_fds (), dev = -1;

  EQ (recv_msg (sock, &h, sizeof h), 'H');
  EQ (cuInit (0), 0);
  /* no context: refused */
  EQ (cuIpcOpenMemHandle (&p, h, 1), 201);
  EQ (cuCtxCreate (&ctx, 0, 0), 0);
  EQ (cuIpcOpenMemHandle (&p, h, 0), 1);        /* flags: LAZY only */
  EQ (cuIpcOpenMemHandle (NULL, h, 1), 1);
  forged = h;
  forged.reserved[0] ^= 1;
  EQ (cuIpcOpenMemHandle (&p, forged, 1), 1);
  memset (&forged, 0, sizeof forged);
  EQ (cuIpcOpenMemHandle (&p, forged, 1), 1);
  forged = h;
  forged.reserved[48] = 5;      /* the device field: no device 5 */
  EQ (cuIpcOpenMemHandle (&p, forged, 1), 101);
  EQ (cuIpcOpenMemHandle (&p, h, 1), 0);
  CHECK (p != 0);
  EQ (cuIpcOpenMemHandle (&p2, h, 1), 208);     /* once per process */
  /* hostile handles: the marker right, the exporter's pid, any fd number
   * of it (its other files, closed ones), random sizes and inodes: all
   * refused, nothing mapped, no crash */
  srand (7);
  for (int i = 0; i < 500; i++) {
    IpcHandle bad = h;
    CUresult r;
    for (int b = 12; b < 64; b++)
      if (rand () % 3 == 0)
        bad.reserved[b] = (char) rand ();
    if (i % 2 == 0) {
      int fdn = rand () % 64;
      memcpy (bad.reserved + 12, &fdn, sizeof fdn);
    }
    if (memcmp (&bad, &h, sizeof h) == 0)
      continue;
    p2 = 0;
    r = cuIpcOpenMemHandle (&p2, bad, 1);
    CHECK (r == 1 || r == 101 || r == 208);
    CHECK (p2 == 0);
  }
  EQ (emu_query ("live.ipc.mappings"), 1);
  /* device memory of device 0, opened, not exportable again */
  EQ (cuPointerGetAttribute (&dev, 9, p), 0);
  EQ (dev, 0);
  EQ (cuPointerGetAttribute (&size, 12, p + 5), 0);
  EQ (size, IPC_SIZE);
  EQ (cuPointerGetAttribute (&flag, 10, p), 0);
  EQ (flag, 0);
  EQ (cuIpcGetMemHandle (&forged, p), 1);
  /* the exporter's bytes, exactly */
  fill (want, IPC_SIZE, 1);
  EQ (cuMemcpyDtoH (got, p, IPC_SIZE), 0);
  CHECK (memcmp (want, got, IPC_SIZE) == 0);
  EQ (cuMemFree (p), 1);        /* closed by cuIpcCloseMemHandle only */
  /* written here, read there (read-write, the same memory) */
  fill (want, IPC_SIZE / 2, 3);
  EQ (cuMemcpyHtoD (p + IPC_SIZE / 2, want, IPC_SIZE / 2), 0);
  EQ (cuCtxSynchronize (), 0);
  EQ (send_msg (sock, 'R', NULL, 0), 0);

  /* an IPC event: the exporter's copy into the memory, held back on its
   * stream, then recorded; here a stream waits for that record before it
   * reads the memory */
  {
    IpcHandle eh, bad;
    CUevent iev = NULL;
    CUstream cs = NULL;
    unsigned char *cpin = NULL;

    EQ (recv_msg (sock, &eh, sizeof eh), 'E');
    bad = eh;
    bad.reserved[0] ^= 1;
    EQ (cuIpcOpenEventHandle (&iev, bad), 1);
    bad = eh;
    bad.reserved[16] ^= 1;      /* the inode */
    EQ (cuIpcOpenEventHandle (&iev, bad), 1);
    EQ (cuIpcOpenEventHandle (&iev, eh), 0);
    EQ (cuEventQuery (iev), 600);       /* held back there */
    EQ (cuStreamCreate (&cs, 0), 0);
    EQ (cuMemAllocHost ((void **) &cpin, IPC_SIZE), 0);
    EQ (cuStreamWaitEvent (cs, iev, 0), 0);
    EQ (cuMemcpyDtoHAsync (cpin, p, IPC_SIZE, cs), 0);
    /* 50 ms, 25 times a copy's time here: the copy waits still */
    usleep (50000);
    EQ (cuStreamQuery (cs), 600);
    EQ (cuEventQuery (iev), 600);
    EQ (send_msg (sock, 'Q', NULL, 0), 0);
    /* after the exporter's record: its copy's bytes, all of them */
    EQ (cuStreamSynchronize (cs), 0);
    fill (want, IPC_SIZE, 7);
    CHECK (memcmp (want, cpin, IPC_SIZE) == 0);
    EQ (cuEventSynchronize (iev), 0);
    EQ (cuEventQuery (iev), 0);
    EQ (cuEventDestroy (iev), 0);
    EQ (cuStreamDestroy (cs), 0);
    EQ (cuMemFreeHost (cpin), 0);
    EQ (send_msg (sock, 'V', NULL, 0), 0);
  }

  /* the exporter freed it: still alive here while open */
  EQ (recv_msg (sock, &stale, sizeof stale), 'F');
  fill (want, IPC_SIZE, 7);
  EQ (cuMemcpyDtoH (got, p, IPC_SIZE / 2), 0);
  CHECK (memcmp (want, got, IPC_SIZE / 2) == 0);
  /* a handle of an allocation freed since: refused */
  EQ (cuIpcOpenMemHandle (&p2, stale, 1), 1);
  EQ (cuIpcCloseMemHandle (p + 1), 1);  /* not the base */
  EQ (cuIpcCloseMemHandle (p), 0);
  EQ (cuIpcCloseMemHandle (p), 1);      /* twice */
  EQ (cuMemcpyDtoH (got, p, 16), 1);    /* gone */
  EQ (cuCtxDestroy (ctx), 0);
  check_nothing_alive ();
  EQ (count_fds (), fds_before);
  EQ (send_msg (sock, failures ? 'X' : 'D', NULL, 0), 0);
  free (want);
  free (got);
  return failures ? 1 : 0;
}

/* Legacy IPC (PFEMU_IPC=1): a cuMemAlloc allocation's handle opened in a
 * forked child maps the same bytes both ways; the rules of pfemu-cuda-ipc.c
 * (flags, forged handles, twice, in the exporter, stale, close order). */
static void
case_ipc (void)
{
  CUmemAllocationProp prop = prop_for (0, CU_MEM_HANDLE_TYPE_NONE);
  unsigned char *buf, *want;
  IpcHandle h, h_mid, h2;
  CUcontext ctx = NULL;
  CUdeviceptr d = 0, d2 = 0, p = 0, va = 0;
  void *host = NULL;
  Handle vh = 0;
  int sv[2], status = 0, fds_before;
  pid_t pid;

  CHECK (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
  pid = fork ();
  if (pid == 0) {
    close (sv[0]);
    _exit (ipc_child (sv[1]));
  }
  close (sv[1]);
  fds_before = count_fds ();
  buf = malloc (IPC_SIZE);
  want = malloc (IPC_SIZE);

  EQ (cuInit (0), 0);
  EQ (cuCtxCreate (&ctx, 0, 0), 0);
  /* off without PFEMU_IPC=1 */
  unsetenv ("PFEMU_IPC");
  EQ (cuMemAlloc (&d, 4096), 0);
  EQ (cuIpcGetMemHandle (&h, d), 801);
  setenv ("PFEMU_IPC", "1", 1);
  /* made before it was on: its memfd is gone, no handle */
  EQ (cuIpcGetMemHandle (&h, d), 1);
  EQ (cuMemFree (d), 0);

  EQ (cuMemAlloc (&d, IPC_SIZE), 0);
  fill (buf, IPC_SIZE, 1);
  EQ (cuMemcpyHtoD (d, buf, IPC_SIZE), 0);
  EQ (cuCtxSynchronize (), 0);
  EQ (cuIpcGetMemHandle (NULL, d), 1);
  EQ (cuIpcGetMemHandle (&h, d), 0);
  EQ (cuIpcGetMemHandle (&h_mid, d + 4000), 0); /* the same allocation */
  CHECK (memcmp (&h, &h_mid, sizeof h) == 0);
  /* not in the exporting process */
  EQ (cuIpcOpenMemHandle (&p, h, 1), 201);
  /* not cuMemAlloc memory: a mapping, host memory, a stack address */
  EQ (cuMemCreate (&vh, GRAN, &prop, 0), 0);
  EQ (cuMemAddressReserve (&va, GRAN, 0, 0, 0), 0);
  EQ (cuMemMap (va, GRAN, 0, vh, 0), 0);
  EQ (cuIpcGetMemHandle (&h2, va), 1);
  EQ (cuMemUnmap (va, GRAN), 0);
  EQ (cuMemAddressFree (va, GRAN), 0);
  EQ (cuMemRelease (vh), 0);
  EQ (cuMemAllocHost (&host, 4096), 0);
  EQ (cuIpcGetMemHandle (&h2, (CUdeviceptr) (uintptr_t) host), 1);
  EQ (cuMemFreeHost (host), 0);
  EQ (cuIpcGetMemHandle (&h2, (CUdeviceptr) (uintptr_t) & status), 1);

  EQ (send_msg (sv[0], 'H', &h, sizeof h), 0);
  EQ (recv_msg (sv[0], NULL, 0), 'R');
  /* the child's write, here */
  EQ (cuMemcpyDtoH (buf, d, IPC_SIZE), 0);
  fill (want, IPC_SIZE, 1);
  CHECK (memcmp (want, buf, IPC_SIZE / 2) == 0);
  fill (want, IPC_SIZE / 2, 3);
  CHECK (memcmp (want, buf + IPC_SIZE / 2, IPC_SIZE / 2) == 0);
  /* an IPC event: INTERPROCESS | DISABLE_TIMING only; recorded after a
   * copy held back on the stream (a host function waiting on a pipe)
   * until the child has queried it and queued its wait */
  {
    int (*launch_host) (void *, void (*)(void *), void *) =
        (int (*)(void *, void (*)(void *), void *)) dlsym (rt_lib,
        "cudaLaunchHostFunc");
    CUevent ev = NULL, plain = NULL, own = NULL;
    CUstream s = NULL;
    IpcHandle eh;
    void *pin = NULL;
    int gate[2];

    CHECK (launch_host != NULL && pipe (gate) == 0);
    EQ (cuEventCreate (&plain, 0x2), 0);        /* no INTERPROCESS */
    EQ (cuIpcGetEventHandle (&eh, plain), 1);
    EQ (cuEventDestroy (plain), 0);
    EQ (cuEventCreate (&ev, 0x6), 0);
    EQ (cuIpcGetEventHandle (NULL, ev), 1);
    EQ (cuIpcGetEventHandle (&eh, ev), 0);
    EQ (cuIpcOpenEventHandle (&own, eh), 201);  /* not in the exporter */
    EQ (cuStreamCreate (&s, 0), 0);
    EQ (cuMemAllocHost (&pin, IPC_SIZE), 0);
    fill (pin, IPC_SIZE, 7);
    EQ (launch_host (s, gate_fn, &gate[0]), 0);
    EQ (cuMemcpyHtoDAsync (d, pin, IPC_SIZE, s), 0);
    EQ (cuEventRecord (ev, s), 0);
    EQ (send_msg (sv[0], 'E', &eh, sizeof eh), 0);
    EQ (recv_msg (sv[0], NULL, 0), 'Q');
    EQ (cuEventQuery (ev), 600);
    CHECK (write (gate[1], "g", 1) == 1);
    EQ (cuStreamSynchronize (s), 0);
    EQ (cuEventQuery (ev), 0);
    EQ (recv_msg (sv[0], NULL, 0), 'V');
    EQ (cuEventDestroy (ev), 0);
    EQ (cuStreamDestroy (s), 0);
    EQ (cuMemFreeHost (pin), 0);
    close (gate[0]);
    close (gate[1]);
  }
  /* freed while the child has it open; a second allocation's handle,
   * freed before the child opens it */
  EQ (cuMemFree (d), 0);
  EQ (cuMemAlloc (&d2, 8192), 0);
  EQ (cuIpcGetMemHandle (&h2, d2), 0);
  EQ (cuMemFree (d2), 0);
  EQ (send_msg (sv[0], 'F', &h2, sizeof h2), 0);
  EQ (recv_msg (sv[0], NULL, 0), 'D');
  CHECK (waitpid (pid, &status, 0) == pid);
  CHECK (WIFEXITED (status) && WEXITSTATUS (status) == 0);

  EQ (cuCtxDestroy (ctx), 0);
  check_nothing_alive ();
  EQ (count_fds (), fds_before);
  close (sv[0]);
  free (buf);
  free (want);
}

int
main (int argc, char **argv)
{
  const char *c = argc > 1 ? argv[1] : "";

  if (load () < 0)
    return 1;
  if (strcmp (c, "share") == 0)
    case_share ();
  else if (strcmp (c, "rules") == 0)
    case_rules ();
  else if (strcmp (c, "forged") == 0)
    case_forged ();
  else if (strcmp (c, "devices") == 0)
    case_devices ();
  else if (strcmp (c, "retain") == 0)
    case_retain ();
  else if (strcmp (c, "attrs") == 0)
    case_attrs ();
  else if (strcmp (c, "span") == 0)
    case_span ();
  else if (strcmp (c, "ipc") == 0)
    case_ipc ();
  else {
    fprintf (stderr, "usage: %s share|rules|forged|devices|retain|attrs|"
        "span|ipc\n", argv[0]);
    return 2;
  }
  if (failures)
    fprintf (stderr, "%s: %d check(s) failed\n", c, failures);
  else
    printf ("%s: ok\n", c);
  return failures ? 1 : 0;
}
