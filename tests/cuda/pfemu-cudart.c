/* pfemu: a CPU emulator of the part of the CUDA runtime pinnedflow uses
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Device memory: each allocation is a memfd mapped twice, once PROT_NONE
 * (the "device pointer" handed out: a stray host access faults) and once
 * read-write (used only inside the emulator). Async copies and event
 * records go to the stream's worker thread and run later, after a delay, in
 * stream order: a host source released or rewritten before the event that
 * follows its copy completes shows up as a corrupted frame. An async copy
 * whose host side is not inside a registration is done at once (after the
 * stream drains), as the real runtime stages pageable memory, and counted
 * as pageable. Registration follows the real rules (see pfemu_host_register
 * below). No CUDA header is used: the values are those of driver_types.h.
 */
#include "pfemu.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__ ((visibility ("default")))

typedef int cudaError_t;
enum
{
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInsufficientDriver = 35,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorHostMemoryAlreadyRegistered = 712,
  cudaErrorHostMemoryNotRegistered = 713,
  cudaErrorLaunchFailure = 719,
  cudaErrorNotSupported = 801,
  cudaErrorUnknown = 999,
};

enum
{
  H2H = 0, H2D = 1, D2H = 2, D2D = 3, DEFAULT_KIND = 4,
};

#define REG_PORTABLE 0x01
#define REG_MAPPED 0x02
#define REG_IOMEMORY 0x04
#define REG_READONLY 0x08
#define STREAM_NON_BLOCKING 0x01
#define EVENT_BLOCKING_SYNC 0x01
#define ATTR_HOST_REGISTER_READ_ONLY_SUPPORTED 113
#define ATTR_MEMORY_CLOCK_RATE 36
#define ATTR_TEXTURE_PITCH_ALIGNMENT 51
#define ATTR_HOST_REGISTER_SUPPORTED 99
#define PITCH_ALIGN 512

/* The cudart functions emulated (signatures of cuda_runtime_api.h, with
 * handles as void *). */
#define API EXPORT
API const char *cudaGetErrorString (cudaError_t err);
API const char *cudaGetErrorName (cudaError_t err);
API cudaError_t cudaRuntimeGetVersion (int *version);
API cudaError_t cudaDriverGetVersion (int *version);
API cudaError_t cudaGetDeviceCount (int *count);
API cudaError_t cudaSetDevice (int device);
API cudaError_t cudaGetDevice (int *device);
API int cuCtxGetCurrent (void **ctx);
API int cuCtxSetCurrent (void *ctx);
API cudaError_t cudaDeviceGetAttribute (int *value, int attr, int device);
API cudaError_t cudaMallocPitch (void **dev_ptr, size_t *pitch, size_t width,
    size_t height);
API cudaError_t cudaFree (void *dev_ptr);
API cudaError_t cudaHostRegister (void *ptr, size_t size, unsigned int flags);
API cudaError_t cudaHostUnregister (void *ptr);
API cudaError_t cudaStreamCreateWithFlags (void **stream, unsigned int flags);
API cudaError_t cudaStreamDestroy (void *stream);
API cudaError_t cudaStreamSynchronize (void *stream);
API cudaError_t cudaStreamWaitEvent (void *stream, void *event,
    unsigned int flags);
API cudaError_t cudaEventCreateWithFlags (void **event, unsigned int flags);
API cudaError_t cudaEventDestroy (void *event);
API cudaError_t cudaEventRecord (void *event, void *stream);
API cudaError_t cudaEventQuery (void *event);
API cudaError_t cudaEventSynchronize (void *event);
API cudaError_t cudaMemcpy2DAsync (void *dst, size_t dpitch, const void *src,
    size_t spitch, size_t width, size_t height, int kind, void *stream);
API cudaError_t cudaMemcpy2D (void *dst, size_t dpitch, const void *src,
    size_t spitch, size_t width, size_t height, int kind);
API cudaError_t cudaGetLastError (void);
API cudaError_t cudaPeekAtLastError (void);
API long pfemu_query (const char *counter);
API void pfemu_reset (void);
API long pfemu_live_total (void);
API const char *pfemu_leak_report (void);

/* ---------------------------------------------------------------- state */

struct alloc
{
  char *dev;                    /* PROT_NONE view: the device pointer */
  char *view;                   /* read-write view, internal */
  size_t size;                  /* mapped: whole pages */
  size_t bytes;                 /* allocated: pitch * height */
  struct alloc *next;
};

struct reg
{
  char *base;
  size_t size;
  unsigned int flags;
  struct reg *next;
};

struct event
{
  uint64_t recorded, completed;
  int refs;                     /* handle + queued ops */
  int alive;
  int device;                   /* current device when created */
  unsigned int flags;           /* cudaEventCreateWithFlags() */
  cudaError_t error;            /* its stream faulted before it */
  uint64_t legacy_lseq;         /* last recorded on the legacy stream: the
                                 * record's number, else 0 */
  struct event *next;
};

enum op_type
{ OP_COPY, OP_RECORD, OP_WAIT };

struct op
{
  enum op_type type;
  char *dst;
  const char *src;
  size_t dpitch, spitch, width, height;
  const char *host_lo, *host_hi;        /* host range read/written */
  int running;                  /* the worker is copying it */
  cudaError_t fail_err;         /* not copied: its memory went away, or
                                 * an injected asynchronous fault */
  int sticky;                   /* fail_err poisons the whole context */
  int owns_src;                 /* src is a staging copy, freed after */
  uint64_t lseq;                /* on the legacy stream: its number */
  struct event *ev;
  uint64_t seq;
  struct op *next;
};

struct stream
{
  unsigned int flags;
  int device;                   /* current device when created */
  pthread_t thread;
  struct op *head, *tail;
  int pending;                  /* queued or running ops */
  cudaError_t error;            /* a faulted copy: every later sync */
  int legacy;                   /* the legacy default stream */
  uint64_t next_lseq, demand;   /* legacy: ops up to demand may run */
  int pending_copies;
  int stop;
  pthread_cond_t cond;          /* work queued / drained */
  struct stream *next;
};

static pthread_mutex_t G = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t events_cond = PTHREAD_COND_INITIALIZER;
static struct alloc *allocs;
static struct reg *regs;
static struct event *events;
static struct stream *streams;

/* configuration */
static long delay_us = 2000;
static int device_count = 1;
static int insufficient_driver;
static int no_readonly;
static int no_host_register;
/* Like the real runtime: the device of the context current to the thread
 * (-1: none). A thread with no context that makes a call needing one gets
 * device 0's primary context, initialised then; cudaSetDevice initialises
 * the device's primary context at once (CUDA >= 12). cudaGetDevice on a
 * thread without a context answers 0 and creates nothing. */
static __thread int current_device = -1;
/* pfemu_reset() tears every primary context down: a thread whose context
 * is from an earlier generation has none current any more. */
static __thread unsigned context_generation;
static unsigned generation;

static void
check_generation (void)
{
  unsigned g = __atomic_load_n (&generation, __ATOMIC_RELAXED);

  if (context_generation != g) {
    context_generation = g;
    current_device = -1;
  }
}

#define MAX_DEVICES 4
/* Primary contexts alive (process-wide), one per device; pfemu_reset()
 * tears them down like cudaDeviceReset() on every device. */
static int primary_alive[MAX_DEVICES];
/* What cuCtxGetCurrent() hands out for each device's primary context. */
static char primary_handle[MAX_DEVICES];

#define MAX_FAIL 8
static struct
{
  char name[64];
  long nth;
  int err;
  int mode;                     /* FAIL_SYNC, FAIL_ASYNC, FAIL_STICKY */
} fails[MAX_FAIL];
enum
{ FAIL_SYNC, FAIL_ASYNC, FAIL_STICKY };
/* An asynchronous injection for the op the current call queues. */
static __thread cudaError_t async_fail;
static __thread int async_sticky;
/* Once a sticky fault has run, every call needing a context fails with it
 * (the context is corrupt: "the process must be terminated and relaunched"
 * for cudaErrorIllegalAddress); pfemu_reset() clears it. */
static cudaError_t sticky_error;
static int n_fails;

#define MAX_CALLS 32
static struct
{
  char name[48];
  long calls;
} calls[MAX_CALLS];
static int n_calls;

static struct
{
  long registrations, registrations_readonly, unregistrations, allocations;
  long copies_pinned, copies_pageable, copies_sync, copies_d2d;
  long streams_blocking, pending_max, unregister_pending, injected;
  long events_recorded, stream_waits;
  long event_syncs, event_syncs_spinning, event_syncs_spun, free_pending;
  long sticky_calls, copies_sync_late;
  /* calls that use a device's context, by the calling thread's device */
  long context_calls[MAX_DEVICES];
  /* primary contexts initialised, and cudaSetDevice calls, per device */
  long contexts_created[MAX_DEVICES], set_device[MAX_DEVICES];
} ctr;

/* G held. Makes @device's primary context current on the calling thread,
 * initialising it (and counting that) when it is not alive. */
static void
make_current_locked (int device)
{
  if (device >= 0 && device < MAX_DEVICES && !primary_alive[device]) {
    primary_alive[device] = 1;
    ctr.contexts_created[device]++;
  }
  current_device = device;
}

static long
count_list_allocs (void)
{
  long n = 0;
  for (struct alloc * a = allocs; a; a = a->next)
    n++;
  return n;
}

static long
count_list_regs (void)
{
  long n = 0;
  for (struct reg * r = regs; r; r = r->next)
    n++;
  return n;
}

static long
count_list_events (void)
{
  long n = 0;
  for (struct event * e = events; e; e = e->next)
    n += e->alive;
  return n;
}

static long
count_list_streams (void)
{
  long n = 0;
  for (struct stream * s = streams; s; s = s->next)
    n += !s->legacy;
  return n;
}

static void
read_env (void)
{
  const char *v;

  delay_us = (v = getenv ("PFEMU_COPY_DELAY_US")) ? atol (v) : 2000;
  device_count = (v = getenv ("PFEMU_DEVICE_COUNT")) ? atoi (v) : 1;
  if (device_count > MAX_DEVICES)
    device_count = MAX_DEVICES;
  insufficient_driver = (v = getenv ("PFEMU_INSUFFICIENT_DRIVER"))
      && atoi (v) != 0;
  no_readonly = (v = getenv ("PFEMU_NO_READONLY_REGISTER")) && atoi (v) != 0;
  no_host_register = (v = getenv ("PFEMU_NO_HOST_REGISTER")) && atoi (v) != 0;
  n_fails = 0;
  if ((v = getenv ("PFEMU_FAIL")) != NULL) {
    char *copy = strdup (v), *save = NULL, *tok;
    for (tok = strtok_r (copy, ",", &save); tok && n_fails < MAX_FAIL;
        tok = strtok_r (NULL, ",", &save)) {
      char name[48], mode[16] = "";
      long nth;
      int err;
      int n = sscanf (tok, "%47[^:]:%ld:%d:%15s", name, &nth, &err, mode);
      if ((n == 3 || (n == 4 && (strcmp (mode, "async") == 0 ||
                      strcmp (mode, "sticky") == 0)))) {
        fails[n_fails].mode = n == 3 ? FAIL_SYNC :
            strcmp (mode, "async") == 0 ? FAIL_ASYNC : FAIL_STICKY;
        snprintf (fails[n_fails].name, sizeof fails[n_fails].name, "%s%s",
            strncmp (name, "cuda", 4) == 0 ? "" : "cuda", name);
        fails[n_fails].nth = nth;
        fails[n_fails].err = err;
        n_fails++;
      } else {
        fprintf (stderr, "pfemu: ignoring malformed PFEMU_FAIL entry '%s'\n",
            tok);
      }
    }
    free (copy);
  }
  n_calls = 0;
}

static void pfemu_exit_report (void);

__attribute__((constructor))
     static void
     pfemu_init (void)
{
  read_env ();
  atexit (pfemu_exit_report);
}

/* Calls that need no context: the device queries and selection. */
static int
uses_context (const char *name)
{
  static const char *no_context[] = {
    "cudaGetDeviceCount", "cudaSetDevice", "cudaGetDevice",
    "cudaDeviceGetAttribute",
  };
  for (size_t i = 0; i < sizeof no_context / sizeof no_context[0]; i++)
    if (strcmp (name, no_context[i]) == 0)
      return 0;
  return 1;
}

static __thread cudaError_t release_sticky;

static int
is_release (const char *name)
{
  return strcmp (name, "cudaFree") == 0 ||
      strcmp (name, "cudaHostUnregister") == 0 ||
      strcmp (name, "cudaStreamDestroy") == 0 ||
      strcmp (name, "cudaEventDestroy") == 0;
}

/* Counts the call and returns the error to inject, or cudaSuccess. */
static cudaError_t
enter (const char *name, int needs_driver)
{
  cudaError_t res = cudaSuccess;
  long n = 0;
  int i;

  pthread_mutex_lock (&G);
  check_generation ();
  if (uses_context (name)) {
    if (current_device < 0) {
      make_current_locked (0);
    }
    if (current_device < MAX_DEVICES)
      ctr.context_calls[current_device]++;
  }
  for (i = 0; i < n_calls; i++)
    if (strcmp (calls[i].name, name) == 0)
      break;
  if (i == n_calls && n_calls < MAX_CALLS) {
    snprintf (calls[i].name, sizeof calls[i].name, "%s", name);
    calls[i].calls = 0;
    n_calls++;
  }
  if (i < n_calls)
    n = ++calls[i].calls;
  for (i = 0; i < n_fails; i++) {
    if (strcmp (fails[i].name, name) == 0 && fails[i].nth == n) {
      if (fails[i].mode == FAIL_SYNC) {
        res = fails[i].err;
      } else {
        async_fail = fails[i].err;
        async_sticky = fails[i].mode == FAIL_STICKY;
      }
      ctr.injected++;
    }
  }
  if (res == cudaSuccess && sticky_error && uses_context (name)) {
    /* Releases still release (the process must be able to tear down),
     * and report the error too. */
    if (is_release (name))
      release_sticky = sticky_error;
    else
      res = sticky_error;
    ctr.sticky_calls++;
  }
  pthread_mutex_unlock (&G);
  if (res == cudaSuccess && needs_driver && insufficient_driver)
    res = cudaErrorInsufficientDriver;
  return res;
}

#define ENTER(name) G_ENTER (name, 1)
#define G_ENTER(name, drv) do {                 \
    cudaError_t e_ = enter (name, drv);         \
    if (e_ != cudaSuccess) return e_;           \
  } while (0)

/* ----------------------------------------------------------- errors */

static const struct
{
  int code;
  const char *name, *str;
} error_table[] = {
  {cudaSuccess, "cudaSuccess", "no error"},
  {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
  {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
  {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection",
      "invalid copy direction for memcpy"},
  {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
      "CUDA driver version is insufficient for CUDA runtime version"},
  {cudaErrorNoDevice, "cudaErrorNoDevice",
      "no CUDA-capable device is detected"},
  {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
  {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle",
      "invalid resource handle"},
  {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
  {cudaErrorIllegalAddress, "cudaErrorIllegalAddress",
      "an illegal memory access was encountered"},
  {cudaErrorHostMemoryAlreadyRegistered,
        "cudaErrorHostMemoryAlreadyRegistered",
      "part or all of the requested memory range is already mapped"},
  {cudaErrorHostMemoryNotRegistered, "cudaErrorHostMemoryNotRegistered",
      "pointer does not correspond to a registered memory region"},
  {cudaErrorLaunchFailure, "cudaErrorLaunchFailure",
      "unspecified launch failure"},
  {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
  {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

EXPORT const char *
cudaGetErrorString (cudaError_t err)
{
  for (size_t i = 0; i < sizeof error_table / sizeof error_table[0]; i++)
    if (error_table[i].code == err)
      return error_table[i].str;
  return "unrecognized error code";
}

EXPORT const char *
cudaGetErrorName (cudaError_t err)
{
  for (size_t i = 0; i < sizeof error_table / sizeof error_table[0]; i++)
    if (error_table[i].code == err)
      return error_table[i].name;
  /* what the real call gives for a code it does not know */
  return "unrecognized error code";
}

static cudaError_t
impl_cudaRuntimeGetVersion (int *version)
{
  if (!version)
    return cudaErrorInvalidValue;
  *version = 13000;
  return cudaSuccess;
}

static cudaError_t
impl_cudaDriverGetVersion (int *version)
{
  if (!version)
    return cudaErrorInvalidValue;
  *version = insufficient_driver ? 0 : 13000;
  return cudaSuccess;
}

/* ----------------------------------------------------------- device */

static cudaError_t
impl_cudaGetDeviceCount (int *count)
{
  ENTER ("cudaGetDeviceCount");
  if (!count)
    return cudaErrorInvalidValue;
  *count = device_count > 0 ? device_count : 0;
  return device_count > 0 ? cudaSuccess : cudaErrorNoDevice;
}

static cudaError_t
impl_cudaSetDevice (int device)
{
  ENTER ("cudaSetDevice");
  if (device_count <= 0)
    return cudaErrorNoDevice;
  if (device < 0 || device >= device_count)
    return cudaErrorInvalidDevice;
  pthread_mutex_lock (&G);
  if (device < MAX_DEVICES)
    ctr.set_device[device]++;
  make_current_locked (device);
  pthread_mutex_unlock (&G);
  return cudaSuccess;
}

static cudaError_t
impl_cudaGetDevice (int *device)
{
  ENTER ("cudaGetDevice");
  if (!device)
    return cudaErrorInvalidValue;
  check_generation ();
  *device = current_device < 0 ? 0 : current_device;
  return cudaSuccess;
}

/* The two driver-API calls that save and restore a thread's context
 * (libcuda's, exported here because the emulator stands for both):
 * CUresult, 0 = CUDA_SUCCESS; 201 = CUDA_ERROR_INVALID_CONTEXT. */
EXPORT int
cuCtxGetCurrent (void **ctx)
{
  if (!ctx)
    return 1;
  check_generation ();
  *ctx = current_device < 0 ? NULL : &primary_handle[current_device];
  return 0;
}

EXPORT int
cuCtxSetCurrent (void *ctx)
{
  char *c = ctx;

  check_generation ();
  if (c == NULL) {
    current_device = -1;
    return 0;
  }
  if (c < primary_handle || c >= primary_handle + MAX_DEVICES)
    return 201;
  current_device = (int) (c - primary_handle);
  return 0;
}

static cudaError_t
impl_cudaDeviceGetAttribute (int *value, int attr, int device)
{
  ENTER ("cudaDeviceGetAttribute");
  if (!value)
    return cudaErrorInvalidValue;
  if (device < 0 || device >= device_count)
    return cudaErrorInvalidDevice;
  switch (attr) {
    case ATTR_HOST_REGISTER_READ_ONLY_SUPPORTED:
      *value = no_readonly ? 0 : 1;
      return cudaSuccess;
    case ATTR_TEXTURE_PITCH_ALIGNMENT:
      *value = PITCH_ALIGN;
      return cudaSuccess;
    case ATTR_MEMORY_CLOCK_RATE:
      *value = 1593000;         /* kHz */
      return cudaSuccess;
    case ATTR_HOST_REGISTER_SUPPORTED:
      *value = no_host_register ? 0 : 1;
      return cudaSuccess;
    default:
      return cudaErrorInvalidValue;
  }
}

/* ----------------------------------------------------------- memory */

/* G held. The allocation holding [p, p + len), or NULL. */
static struct alloc *
find_alloc (const void *p, size_t len)
{
  const char *c = p;
  for (struct alloc * a = allocs; a; a = a->next)
    if (c >= a->dev && c < a->dev + a->size)
      /* exact bounds, not the page the allocation ends in */
      return (c < a->dev + a->bytes &&
          len <= (size_t) (a->dev + a->bytes - c)) ? a : NULL;
  return NULL;
}

static int
is_device_pointer (const void *p)
{
  const char *c = p;
  for (struct alloc * a = allocs; a; a = a->next)
    if (c >= a->dev && c < a->dev + a->size)
      return 1;
  return 0;
}

/* G held. The registration covering all of [p, p + len), or NULL. */
static struct reg *
find_reg (const void *p, size_t len)
{
  const char *c = p;
  for (struct reg * r = regs; r; r = r->next)
    if (c >= r->base && c < r->base + r->size)
      return (len <= (size_t) (r->base + r->size - c)) ? r : NULL;
  return NULL;
}

struct event;
static void demand_event_locked (struct event *e);
static long fault_pending_locked (const char *lo, const char *hi);

static cudaError_t
impl_cudaMallocPitch (void **dev_ptr, size_t *pitch, size_t width,
    size_t height)
{
  struct alloc *a;
  size_t p, size, page = (size_t) sysconf (_SC_PAGESIZE);
  int fd;

  ENTER ("cudaMallocPitch");
  if (!dev_ptr || !pitch || width == 0 || height == 0)
    return cudaErrorInvalidValue;
  p = (width + PITCH_ALIGN - 1) / PITCH_ALIGN * PITCH_ALIGN;
  if (height > SIZE_MAX / p)
    return cudaErrorMemoryAllocation;
  size = (p * height + page - 1) / page * page;
  fd = memfd_create ("pfemu-device", MFD_CLOEXEC);
  if (fd < 0)
    return cudaErrorMemoryAllocation;
  if (ftruncate (fd, (off_t) size) < 0) {
    close (fd);
    return cudaErrorMemoryAllocation;
  }
  a = calloc (1, sizeof *a);
  a->size = size;
  a->bytes = p * height;
  a->dev = mmap (NULL, size, PROT_NONE, MAP_SHARED, fd, 0);
  a->view = mmap (NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close (fd);
  if (a->dev == MAP_FAILED || a->view == MAP_FAILED) {
    if (a->dev != MAP_FAILED)
      munmap (a->dev, size);
    if (a->view != MAP_FAILED)
      munmap (a->view, size);
    free (a);
    return cudaErrorMemoryAllocation;
  }
  /* Fresh device memory is not zero on a GPU either. */
  memset (a->view, 0xA5, size);
  pthread_mutex_lock (&G);
  a->next = allocs;
  allocs = a;
  ctr.allocations++;
  pthread_mutex_unlock (&G);
  *dev_ptr = a->dev;
  *pitch = p;
  return cudaSuccess;
}

static cudaError_t
impl_cudaFree (void *dev_ptr)
{
  struct alloc **l, *a = NULL;

  ENTER ("cudaFree");
  if (dev_ptr == NULL)
    return cudaSuccess;
  pthread_mutex_lock (&G);
  for (l = &allocs; *l; l = &(*l)->next) {
    if ((*l)->dev == dev_ptr) {
      a = *l;
      *l = a->next;
      break;
    }
  }
  /* cudaFree "may" synchronise; the caller must have waited for the copies
   * that use the allocation: those still queued fault. */
  if (a && fault_pending_locked (a->view, a->view + a->size) > 0)
    ctr.free_pending++;
  pthread_mutex_unlock (&G);
  if (!a)
    return cudaErrorInvalidValue;
  munmap (a->dev, a->size);
  munmap (a->view, a->size);
  free (a);
  return cudaSuccess;
}

/* Protection of [p, p + len) from /proc/self/maps: sets *readable and
 * *writable for the whole range; returns 0 when some byte is unmapped. */
static int
range_protection (const char *p, size_t len, int *readable, int *writable)
{
  FILE *f = fopen ("/proc/self/maps", "re");
  char line[512];
  uintptr_t want = (uintptr_t) p, end = (uintptr_t) p + len;

  *readable = *writable = 1;
  if (!f)
    return 0;
  while (want < end && fgets (line, sizeof line, f)) {
    unsigned long lo, hi;
    char perms[8];
    if (sscanf (line, "%lx-%lx %7s", &lo, &hi, perms) != 3)
      continue;
    if (hi <= want)
      continue;
    if (lo > want)
      break;                    /* a hole */
    if (perms[0] != 'r')
      *readable = 0;
    if (perms[1] != 'w')
      *writable = 0;
    want = hi;
  }
  fclose (f);
  return want >= end;
}

/* The real rules: the range must be mapped host memory, not overlap a
 * registration (cudaErrorHostMemoryAlreadyRegistered), and a mapping that
 * is not writable needs cudaHostRegisterReadOnly, which needs
 * cudaDevAttrHostRegisterReadOnlySupported (else cudaErrorNotSupported). */
static cudaError_t
impl_cudaHostRegister (void *ptr, size_t size, unsigned int flags)
{
  struct reg *r;
  char *c = ptr;
  int readable, writable;

  ENTER ("cudaHostRegister");
  if (!ptr || size == 0 || (flags & ~0x0fu) != 0)
    return cudaErrorInvalidValue;
  if (device_count <= 0)
    return cudaErrorNoDevice;
  if (((flags & REG_READONLY) && no_readonly) || no_host_register)
    return cudaErrorNotSupported;
  if (!range_protection (c, size, &readable, &writable) || !readable)
    return cudaErrorInvalidValue;
  if (!writable && !(flags & REG_READONLY))
    return cudaErrorInvalidValue;
  pthread_mutex_lock (&G);
  if (find_alloc (c, 1) != NULL) {
    pthread_mutex_unlock (&G);
    return cudaErrorInvalidValue;
  }
  for (r = regs; r; r = r->next) {
    if (c < r->base + r->size && r->base < c + size) {
      pthread_mutex_unlock (&G);
      return cudaErrorHostMemoryAlreadyRegistered;
    }
  }
  r = calloc (1, sizeof *r);
  r->base = c;
  r->size = size;
  r->flags = flags;
  r->next = regs;
  regs = r;
  ctr.registrations++;
  if (flags & REG_READONLY)
    ctr.registrations_readonly++;
  pthread_mutex_unlock (&G);
  return cudaSuccess;
}

static int
stream_uses_range_locked (const char *lo, const char *hi)
{
  for (struct stream * s = streams; s; s = s->next)
    for (struct op * o = s->head; o; o = o->next)
      if (o->type == OP_COPY && o->host_lo < hi && lo < o->host_hi)
        return 1;
  return 0;
}

/* G held. Queued copies that read or write [lo, hi) (host or device view)
 * while it goes away: a GPU would fault (or move whatever is mapped there
 * by then); they are not copied, and their stream reports
 * cudaErrorIllegalAddress at its next sync point. A copy already running
 * finishes first (the memory must stay mapped for it). Returns how many. */
static long
fault_pending_locked (const char *lo, const char *hi)
{
  long n = 0;
  int again;

  do {
    again = 0;
    for (struct stream * s = streams; s; s = s->next)
      for (struct op * o = s->head; o; o = o->next) {
        if (o->type != OP_COPY || o->fail_err)
          continue;
        if (!((o->host_lo < hi && lo < o->host_hi) ||
                (o->dst < hi && lo < o->dst + o->dpitch * o->height) ||
                (o->src < hi && lo < o->src + o->spitch * o->height)))
          continue;
        if (o->running) {
          pthread_cond_wait (&events_cond, &G);
          again = 1;
          break;
        }
        o->fail_err = cudaErrorIllegalAddress;
        n++;
      }
  } while (again);
  return n;
}

static cudaError_t
impl_cudaHostUnregister (void *ptr)
{
  struct reg **l, *r = NULL;

  ENTER ("cudaHostUnregister");
  pthread_mutex_lock (&G);
  for (l = &regs; *l; l = &(*l)->next) {
    if ((*l)->base == ptr) {
      r = *l;
      break;
    }
  }
  if (!r) {
    pthread_mutex_unlock (&G);
    return cudaErrorHostMemoryNotRegistered;
  }
  if (stream_uses_range_locked (r->base, r->base + r->size)) {
    /* A DMA still uses this memory: a bug in the caller. The runtime does
     * not promise to wait for it. */
    ctr.unregister_pending++;
    fault_pending_locked (r->base, r->base + r->size);
  }
  for (l = &regs; *l; l = &(*l)->next) {
    if (*l == r) {
      *l = r->next;
      break;
    }
  }
  ctr.unregistrations++;
  pthread_mutex_unlock (&G);
  free (r);
  return cudaSuccess;
}

/* ----------------------------------------------------------- streams */

static void
sleep_us (long us)
{
  struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
  while (us > 0 && nanosleep (&ts, &ts) < 0 && errno == EINTR);
}

static void
do_copy (struct op *o)
{
  for (size_t row = 0; row < o->height; row++)
    memmove (o->dst + row * o->dpitch, o->src + row * o->spitch, o->width);
}

static void
event_unref_locked (struct event *ev)
{
  if (--ev->refs == 0) {
    struct event **l;
    for (l = &events; *l; l = &(*l)->next) {
      if (*l == ev) {
        *l = ev->next;
        break;
      }
    }
    free (ev);
  }
}

static void *
stream_worker (void *data)
{
  struct stream *s = data;
  struct op *o;

  pthread_mutex_lock (&G);
  for (;;) {
    /* The legacy stream runs an op only once something waits for it:
     * "late", as late as a GPU may be. */
    while ((!s->head || (s->legacy && s->head->lseq > s->demand)) && !s->stop)
      pthread_cond_wait (&s->cond, &G);
    if (!s->head || (s->legacy && s->head->lseq > s->demand))
      break;
    o = s->head;
    pthread_mutex_unlock (&G);
    if (o->type == OP_COPY) {
      sleep_us (delay_us);
      pthread_mutex_lock (&G);
      o->running = !o->fail_err;
      pthread_mutex_unlock (&G);
      if (o->running)
        do_copy (o);
      if (o->owns_src)
        free ((void *) o->src);
    }
    pthread_mutex_lock (&G);
    o->running = 0;
    if (o->fail_err && !s->error)
      s->error = o->fail_err;
    if (o->fail_err && o->sticky && !sticky_error)
      sticky_error = o->fail_err;
    if (o->type == OP_RECORD && s->error)
      o->ev->error = s->error;
    if (o->type == OP_WAIT) {
      demand_event_locked (o->ev);
      while (o->ev->completed < o->seq)
        pthread_cond_wait (&events_cond, &G);
    } else if (o->type == OP_RECORD) {
      if (o->ev->completed < o->seq)
        o->ev->completed = o->seq;
    } else {
      s->pending_copies--;
    }
    if (o->ev)
      event_unref_locked (o->ev);
    s->head = o->next;
    if (!s->head)
      s->tail = NULL;
    s->pending--;
    free (o);
    pthread_cond_broadcast (&events_cond);
    pthread_cond_broadcast (&s->cond);
  }
  pthread_mutex_unlock (&G);
  return NULL;
}

static struct stream *
find_stream_locked (void *handle)
{
  for (struct stream * s = streams; s; s = s->next)
    if ((void *) s == handle)
      return s;
  return NULL;
}

static struct event *
find_event_locked (void *handle)
{
  for (struct event * e = events; e; e = e->next)
    if ((void *) e == handle && e->alive)
      return e;
  return NULL;
}

static void
drain_locked (struct stream *s)
{
  if (s->legacy && s->demand < s->next_lseq) {
    s->demand = s->next_lseq;
    pthread_cond_broadcast (&s->cond);
  }
  while (s->pending > 0)
    pthread_cond_wait (&s->cond, &G);
}

/* The legacy default stream, its own queue (created on first use, never
 * destroyed, not counted as a live stream). */
static struct stream *legacy;

static struct stream *
legacy_locked (void)
{
  if (!legacy) {
    legacy = calloc (1, sizeof *legacy);
    legacy->legacy = 1;
    legacy->device = current_device;
    pthread_cond_init (&legacy->cond, NULL);
    if (pthread_create (&legacy->thread, NULL, stream_worker, legacy) != 0)
      abort ();
    pthread_detach (legacy->thread);
    legacy->next = streams;
    streams = legacy;
  }
  return legacy;
}

/* G held. What a call on the legacy stream waits for first: the work
 * queued on blocking streams (non-blocking ones are not waited for). */
static void
drain_blocking_locked (void)
{
  for (struct stream * s = streams; s; s = s->next)
    if (!s->legacy && !(s->flags & STREAM_NON_BLOCKING))
      drain_locked (s);
}

/* G held. Someone waits for @e: let the legacy stream run up to it. */
static void
demand_event_locked (struct event *e)
{
  if (legacy && e->legacy_lseq > legacy->demand) {
    legacy->demand = e->legacy_lseq;
    pthread_cond_broadcast (&legacy->cond);
  }
}

static void
enqueue_locked (struct stream *s, struct op *o)
{
  if (s->legacy)
    o->lseq = ++s->next_lseq;
  if (s->tail)
    s->tail->next = o;
  else
    s->head = o;
  s->tail = o;
  s->pending++;
  if (o->type == OP_COPY) {
    s->pending_copies++;
    if (s->pending_copies > ctr.pending_max)
      ctr.pending_max = s->pending_copies;
  }
  pthread_cond_broadcast (&s->cond);
}

static cudaError_t
impl_cudaStreamCreateWithFlags (void **stream, unsigned int flags)
{
  struct stream *s;

  ENTER ("cudaStreamCreateWithFlags");
  if (!stream || (flags & ~1u))
    return cudaErrorInvalidValue;
  if (device_count <= 0)
    return cudaErrorNoDevice;
  s = calloc (1, sizeof *s);
  s->flags = flags;
  s->device = current_device;
  pthread_cond_init (&s->cond, NULL);
  if (pthread_create (&s->thread, NULL, stream_worker, s) != 0) {
    free (s);
    return cudaErrorMemoryAllocation;
  }
  pthread_mutex_lock (&G);
  s->next = streams;
  streams = s;
  if (!(flags & STREAM_NON_BLOCKING))
    ctr.streams_blocking++;
  pthread_mutex_unlock (&G);
  *stream = s;
  return cudaSuccess;
}

static cudaError_t
impl_cudaStreamDestroy (void *stream)
{
  struct stream *s, **l;

  ENTER ("cudaStreamDestroy");
  pthread_mutex_lock (&G);
  if (!(s = find_stream_locked (stream))) {
    pthread_mutex_unlock (&G);
    return cudaErrorInvalidResourceHandle;
  }
  /* The real call returns at once and frees after the work is done. */
  drain_locked (s);
  s->stop = 1;
  pthread_cond_broadcast (&s->cond);
  for (l = &streams; *l; l = &(*l)->next) {
    if (*l == s) {
      *l = s->next;
      break;
    }
  }
  pthread_mutex_unlock (&G);
  pthread_join (s->thread, NULL);
  pthread_cond_destroy (&s->cond);
  free (s);
  return cudaSuccess;
}

static cudaError_t
impl_cudaStreamSynchronize (void *stream)
{
  struct stream *s;
  cudaError_t err = cudaSuccess;

  ENTER ("cudaStreamSynchronize");
  pthread_mutex_lock (&G);
  if (stream == NULL) {
    drain_blocking_locked ();
    drain_locked (legacy_locked ());
  } else if ((s = find_stream_locked (stream)) != NULL) {
    drain_locked (s);
    err = s->error;
  } else {
    pthread_mutex_unlock (&G);
    return cudaErrorInvalidResourceHandle;
  }
  pthread_mutex_unlock (&G);
  return err;
}

/* ----------------------------------------------------------- events */

static cudaError_t
impl_cudaEventCreateWithFlags (void **event, unsigned int flags)
{
  struct event *e;

  ENTER ("cudaEventCreateWithFlags");
  if (!event || (flags & ~0x0fu))
    return cudaErrorInvalidValue;
  if (device_count <= 0)
    return cudaErrorNoDevice;
  e = calloc (1, sizeof *e);
  e->refs = 1;
  e->alive = 1;
  e->device = current_device;
  e->flags = flags;
  pthread_mutex_lock (&G);
  e->next = events;
  events = e;
  pthread_mutex_unlock (&G);
  *event = e;
  return cudaSuccess;
}

static cudaError_t
impl_cudaEventDestroy (void *event)
{
  struct event *e;

  ENTER ("cudaEventDestroy");
  pthread_mutex_lock (&G);
  if (!(e = find_event_locked (event))) {
    pthread_mutex_unlock (&G);
    return cudaErrorInvalidResourceHandle;
  }
  e->alive = 0;
  event_unref_locked (e);
  pthread_mutex_unlock (&G);
  return cudaSuccess;
}

static cudaError_t
impl_cudaEventRecord (void *event, void *stream)
{
  struct event *e;
  struct stream *s = NULL;
  struct op *o;

  ENTER ("cudaEventRecord");
  pthread_mutex_lock (&G);
  if (!(e = find_event_locked (event)) ||
      (stream && !(s = find_stream_locked (stream)))) {
    pthread_mutex_unlock (&G);
    return cudaErrorInvalidResourceHandle;
  }
  /* "cudaEventRecord() will fail if the input event and input stream are
   * associated to different devices" (programming guide). */
  if (s && s->device != e->device) {
    pthread_mutex_unlock (&G);
    return cudaErrorInvalidResourceHandle;
  }
  ctr.events_recorded++;
  e->recorded++;
  if (!s) {
    /* The legacy default stream: after the blocking streams' work, queued
     * behind what the legacy stream has (late synchronous copies). */
    drain_blocking_locked ();
    s = legacy_locked ();
  }
  o = calloc (1, sizeof *o);
  o->type = OP_RECORD;
  o->ev = e;
  o->seq = e->recorded;
  e->refs++;
  enqueue_locked (s, o);
  e->legacy_lseq = s->legacy ? o->lseq : 0;
  pthread_mutex_unlock (&G);
  return cudaSuccess;
}

static cudaError_t
impl_cudaEventQuery (void *event)
{
  struct event *e;
  cudaError_t res;

  ENTER ("cudaEventQuery");
  pthread_mutex_lock (&G);
  if (!(e = find_event_locked (event))) {
    res = cudaErrorInvalidResourceHandle;
  } else {
    demand_event_locked (e);
    res = e->completed >= e->recorded ? e->error : cudaErrorNotReady;
  }
  pthread_mutex_unlock (&G);
  return res;
}

static cudaError_t
impl_cudaEventSynchronize (void *event)
{
  struct event *e;
  uint64_t target;
  cudaError_t err;

  ENTER ("cudaEventSynchronize");
  pthread_mutex_lock (&G);
  if (!(e = find_event_locked (event))) {
    pthread_mutex_unlock (&G);
    return cudaErrorInvalidResourceHandle;
  }
  target = e->recorded;
  demand_event_locked (e);
  /* Without cudaEventBlockingSync the calling thread busy-waits for the
   * event on a GPU ("will actively spin", cudaEventCreateWithFlags); the
   * emulator blocks either way and counts the syncs that would spin, and
   * those that had something to wait for. */
  ctr.event_syncs++;
  if (!(e->flags & EVENT_BLOCKING_SYNC)) {
    ctr.event_syncs_spinning++;
    if (e->completed < target)
      ctr.event_syncs_spun++;
  }
  e->refs++;
  while (e->completed < target)
    pthread_cond_wait (&events_cond, &G);
  err = e->error;
  event_unref_locked (e);
  pthread_mutex_unlock (&G);
  return err;
}

static cudaError_t
impl_cudaStreamWaitEvent (void *stream, void *event, unsigned int flags)
{
  struct event *e;
  struct stream *s;
  struct op *o;

  ENTER ("cudaStreamWaitEvent");
  pthread_mutex_lock (&G);
  if (!(e = find_event_locked (event)) || !(s = find_stream_locked (stream))) {
    pthread_mutex_unlock (&G);
    return cudaErrorInvalidResourceHandle;
  }
  ctr.stream_waits++;
  o = calloc (1, sizeof *o);
  o->type = OP_WAIT;
  o->ev = e;
  o->seq = e->recorded;
  e->refs++;
  enqueue_locked (s, o);
  pthread_mutex_unlock (&G);
  return cudaSuccess;
}

/* ----------------------------------------------------------- copies */

/* G held. Resolves both sides of a 2D copy; on success fills @o's
 * dst/src with internal pointers and host_lo/host_hi, and *pinned. */
static cudaError_t
resolve_copy (struct op *o, void *dst, size_t dpitch, const void *src,
    size_t spitch, size_t width, size_t height, int kind, int *pinned)
{
  size_t dspan, sspan;
  int dst_dev = is_device_pointer (dst), src_dev = is_device_pointer (src);
  struct alloc *a;
  struct reg *r;

  if (!dst || !src || width > dpitch || width > spitch)
    return cudaErrorInvalidValue;
  if (width == 0 || height == 0) {
    o->width = o->height = 0;
    *pinned = 1;
    return cudaSuccess;
  }
  dspan = dpitch * (height - 1) + width;
  sspan = spitch * (height - 1) + width;
  if (kind == DEFAULT_KIND)
    kind = (src_dev ? 2 : 0) | (dst_dev ? 1 : 0);
  else if (kind < 0 || kind > 3)
    return cudaErrorInvalidMemcpyDirection;
  if (((kind & 1) != 0) != dst_dev || ((kind & 2) != 0) != src_dev)
    return cudaErrorInvalidValue;       /* e.g. H2D into host memory */
  if (kind == H2H)
    return cudaErrorInvalidMemcpyDirection;     /* not used by pinnedflow */

  o->dpitch = dpitch;
  o->spitch = spitch;
  o->width = width;
  o->height = height;
  *pinned = 1;
  if (dst_dev) {
    if (!(a = find_alloc (dst, dspan)))
      return cudaErrorInvalidValue;
    o->dst = a->view + ((const char *) dst - a->dev);
  } else {
    if (!(r = find_reg (dst, dspan)))
      *pinned = 0;
    else if (r->flags & REG_READONLY)
      return cudaErrorInvalidValue;     /* DMA into read-only memory */
    o->dst = dst;
    o->host_lo = dst;
    o->host_hi = (const char *) dst + dspan;
  }
  if (src_dev) {
    if (!(a = find_alloc (src, sspan)))
      return cudaErrorInvalidValue;
    o->src = a->view + ((const char *) src - a->dev);
  } else {
    if (!find_reg (src, sspan))
      *pinned = 0;
    o->src = src;
    o->host_lo = src;
    o->host_hi = (const char *) src + sspan;
  }
  return cudaSuccess;
}

static cudaError_t
impl_cudaMemcpy2DAsync (void *dst, size_t dpitch, const void *src,
    size_t spitch, size_t width, size_t height, int kind, void *stream)
{
  struct stream *s = NULL;
  struct op *o;
  cudaError_t res;
  int pinned;

  async_fail = cudaSuccess;
  ENTER ("cudaMemcpy2DAsync");
  o = calloc (1, sizeof *o);
  o->type = OP_COPY;
  /* An asynchronous injection: the call succeeds, the copy faults when its
   * turn comes and the stream reports it at its next sync point. */
  o->fail_err = async_fail;
  o->sticky = async_sticky;
  async_fail = cudaSuccess;
  pthread_mutex_lock (&G);
  if (stream && !(s = find_stream_locked (stream))) {
    res = cudaErrorInvalidResourceHandle;
    goto fail;
  }
  res = resolve_copy (o, dst, dpitch, src, spitch, width, height, kind,
      &pinned);
  if (res != cudaSuccess)
    goto fail;
  if (!o->host_lo)
    ctr.copies_d2d++;
  else if (pinned)
    ctr.copies_pinned++;
  else
    ctr.copies_pageable++;
  if (!s || !pinned) {
    /* Pageable (or the legacy stream): staged, done before returning. */
    if (s) {
      drain_locked (s);
    } else {
      drain_blocking_locked ();
      drain_locked (legacy_locked ());
    }
    if (o->fail_err) {
      res = o->fail_err;
      if (o->sticky)
        sticky_error = res;
      goto fail;
    }
    pthread_mutex_unlock (&G);
    do_copy (o);
    free (o);
    return cudaSuccess;
  }
  enqueue_locked (s, o);
  pthread_mutex_unlock (&G);
  return cudaSuccess;

fail:
  pthread_mutex_unlock (&G);
  free (o);
  return res;
}

static cudaError_t
impl_cudaMemcpy2D (void *dst, size_t dpitch, const void *src, size_t spitch,
    size_t width, size_t height, int kind)
{
  struct op o = { 0 };
  cudaError_t res;
  int pinned;

  ENTER ("cudaMemcpy2D");
  pthread_mutex_lock (&G);
  res = resolve_copy (&o, dst, dpitch, src, spitch, width, height, kind,
      &pinned);
  if (res != cudaSuccess) {
    pthread_mutex_unlock (&G);
    return res;
  }
  ctr.copies_sync++;
  /* On the legacy default stream: after the blocking streams' work (not
   * the non-blocking ones'). */
  drain_blocking_locked ();
  if (o.host_lo && o.src == o.host_lo && !pinned) {
    /* From pageable memory to the device: "will return once the pageable
     * buffer has been copied to the staging memory for DMA transfer to
     * device memory, but the DMA to final destination may not have
     * completed" (API synchronization behavior). Staged now, queued on the
     * legacy stream, landing when something waits for it. */
    struct op *late = calloc (1, sizeof *late);
    char *staging = malloc (width * height + 1);

    for (size_t row = 0; row < height; row++)
      memcpy (staging + row * width, o.src + row * o.spitch, width);
    *late = o;
    late->type = OP_COPY;
    late->src = staging;
    late->spitch = width;
    late->owns_src = 1;
    late->host_lo = late->host_hi = NULL;
    ctr.copies_sync_late++;
    enqueue_locked (legacy_locked (), late);
    pthread_mutex_unlock (&G);
    return cudaSuccess;
  }
  drain_locked (legacy_locked ());
  pthread_mutex_unlock (&G);
  do_copy (&o);
  return res;
}

/* ----------------------------------------------------------- queries */

/* ------------------------------------------------------ last error */

/* Every cudart call that fails leaves its error in the calling thread's
 * last-error slot (cudaErrorNotReady is not an error); cudaGetLastError
 * returns and clears it, cudaPeekAtLastError returns it; a sticky error
 * cannot be cleared. */
static __thread cudaError_t last_error;
/* Threads whose last-error slot holds an error nobody has read. */
static long slots_set;

static cudaError_t
set_last (cudaError_t e)
{
  if (e == cudaSuccess)
    e = release_sticky;
  release_sticky = cudaSuccess;
  if (e != cudaSuccess && e != cudaErrorNotReady && last_error == cudaSuccess)
    __atomic_add_fetch (&slots_set, 1, __ATOMIC_RELAXED);
  if (e != cudaSuccess && e != cudaErrorNotReady)
    last_error = e;
  return e;
}

EXPORT cudaError_t
cudaGetLastError (void)
{
  cudaError_t e = last_error;

  pthread_mutex_lock (&G);
  if (last_error != cudaSuccess && sticky_error == cudaSuccess &&
      __atomic_load_n (&slots_set, __ATOMIC_RELAXED) > 0)
    __atomic_sub_fetch (&slots_set, 1, __ATOMIC_RELAXED);
  last_error = sticky_error;
  if (e == cudaSuccess)
    e = sticky_error;
  pthread_mutex_unlock (&G);
  return e;
}

EXPORT cudaError_t
cudaPeekAtLastError (void)
{
  cudaError_t e = last_error;

  pthread_mutex_lock (&G);
  if (e == cudaSuccess)
    e = sticky_error;
  pthread_mutex_unlock (&G);
  return e;
}

EXPORT cudaError_t
cudaRuntimeGetVersion (int *version)
{
  return set_last (impl_cudaRuntimeGetVersion (version));
}

EXPORT cudaError_t
cudaDriverGetVersion (int *version)
{
  return set_last (impl_cudaDriverGetVersion (version));
}

EXPORT cudaError_t
cudaGetDeviceCount (int *count)
{
  return set_last (impl_cudaGetDeviceCount (count));
}

EXPORT cudaError_t
cudaSetDevice (int device)
{
  return set_last (impl_cudaSetDevice (device));
}

EXPORT cudaError_t
cudaGetDevice (int *device)
{
  return set_last (impl_cudaGetDevice (device));
}

EXPORT cudaError_t
cudaDeviceGetAttribute (int *value, int attr, int device)
{
  return set_last (impl_cudaDeviceGetAttribute (value, attr, device));
}

EXPORT cudaError_t
cudaMallocPitch (void **dev_ptr, size_t *pitch, size_t width, size_t height)
{
  return set_last (impl_cudaMallocPitch (dev_ptr, pitch, width, height));
}

EXPORT cudaError_t
cudaFree (void *dev_ptr)
{
  return set_last (impl_cudaFree (dev_ptr));
}

EXPORT cudaError_t
cudaHostRegister (void *ptr, size_t size, unsigned int flags)
{
  return set_last (impl_cudaHostRegister (ptr, size, flags));
}

EXPORT cudaError_t
cudaHostUnregister (void *ptr)
{
  return set_last (impl_cudaHostUnregister (ptr));
}

EXPORT cudaError_t
cudaStreamCreateWithFlags (void **stream, unsigned int flags)
{
  return set_last (impl_cudaStreamCreateWithFlags (stream, flags));
}

EXPORT cudaError_t
cudaStreamDestroy (void *stream)
{
  return set_last (impl_cudaStreamDestroy (stream));
}

EXPORT cudaError_t
cudaStreamSynchronize (void *stream)
{
  return set_last (impl_cudaStreamSynchronize (stream));
}

EXPORT cudaError_t
cudaStreamWaitEvent (void *stream, void *event, unsigned int flags)
{
  return set_last (impl_cudaStreamWaitEvent (stream, event, flags));
}

EXPORT cudaError_t
cudaEventCreateWithFlags (void **event, unsigned int flags)
{
  return set_last (impl_cudaEventCreateWithFlags (event, flags));
}

EXPORT cudaError_t
cudaEventDestroy (void *event)
{
  return set_last (impl_cudaEventDestroy (event));
}

EXPORT cudaError_t
cudaEventRecord (void *event, void *stream)
{
  return set_last (impl_cudaEventRecord (event, stream));
}

EXPORT cudaError_t
cudaEventQuery (void *event)
{
  return set_last (impl_cudaEventQuery (event));
}

EXPORT cudaError_t
cudaEventSynchronize (void *event)
{
  return set_last (impl_cudaEventSynchronize (event));
}

EXPORT cudaError_t
cudaMemcpy2DAsync (void *dst, size_t dpitch, const void *src,
    size_t spitch, size_t width, size_t height, int kind, void *stream)
{
  return set_last (impl_cudaMemcpy2DAsync (dst, dpitch, src, spitch, width,
          height, kind, stream));
}

EXPORT cudaError_t
cudaMemcpy2D (void *dst, size_t dpitch, const void *src,
    size_t spitch, size_t width, size_t height, int kind)
{
  return set_last (impl_cudaMemcpy2D (dst, dpitch, src, spitch, width, height,
          kind));
}

EXPORT long
pfemu_query (const char *name)
{
  long v = -1;

  pthread_mutex_lock (&G);
#define C(str, val) if (strcmp (name, str) == 0) v = (val)
  C ("live.registrations", count_list_regs ());
  C ("live.allocations", count_list_allocs ());
  C ("live.streams", count_list_streams ());
  C ("live.events", count_list_events ());
  C ("registrations", ctr.registrations);
  C ("registrations.readonly", ctr.registrations_readonly);
  C ("unregistrations", ctr.unregistrations);
  C ("allocations", ctr.allocations);
  C ("copies.pinned", ctr.copies_pinned);
  C ("copies.pageable", ctr.copies_pageable);
  C ("copies.sync", ctr.copies_sync);
  C ("copies.d2d", ctr.copies_d2d);
  C ("streams.blocking", ctr.streams_blocking);
  C ("pending.max", ctr.pending_max);
  C ("unregister.pending", ctr.unregister_pending);
  C ("injected", ctr.injected);
  C ("events.recorded", ctr.events_recorded);
  C ("stream.waits", ctr.stream_waits);
  C ("calls.device0", ctr.context_calls[0]);
  C ("calls.device1", ctr.context_calls[1]);
  C ("contexts.device0", ctr.contexts_created[0]);
  C ("contexts.device1", ctr.contexts_created[1]);
  C ("setdevice.device0", ctr.set_device[0]);
  C ("setdevice.device1", ctr.set_device[1]);
  check_generation ();
  C ("thread.context", current_device);
  C ("free.pending", ctr.free_pending);
  C ("sticky", sticky_error);
  C ("copies.sync.late", ctr.copies_sync_late);
  C ("lasterror.set", slots_set);
  C ("sticky.calls", ctr.sticky_calls);
  C ("events.sync", ctr.event_syncs);
  C ("events.sync.spinning", ctr.event_syncs_spinning);
  C ("events.sync.spun", ctr.event_syncs_spun);
#undef C
  pthread_mutex_unlock (&G);
  return v;
}

EXPORT void
pfemu_reset (void)
{
  pthread_mutex_lock (&G);
  read_env ();
  memset (&ctr, 0, sizeof ctr);
  memset (primary_alive, 0, sizeof primary_alive);
  __atomic_add_fetch (&generation, 1, __ATOMIC_RELAXED);
  sticky_error = cudaSuccess;
  slots_set = 0;
  pthread_mutex_unlock (&G);
}

EXPORT long
pfemu_live_total (void)
{
  long n;

  pthread_mutex_lock (&G);
  n = count_list_regs () + count_list_allocs () + count_list_streams () +
      count_list_events ();
  pthread_mutex_unlock (&G);
  return n;
}

EXPORT const char *
pfemu_leak_report (void)
{
  static char buf[4096];
  size_t off = 0;

  pthread_mutex_lock (&G);
  off += snprintf (buf + off, sizeof buf - off,
      "pfemu leak report (pid %d): %ld registration(s), %ld allocation(s), "
      "%ld stream(s), %ld event(s) alive\n", (int) getpid (),
      count_list_regs (), count_list_allocs (), count_list_streams (),
      count_list_events ());
  for (struct reg * r = regs; r && off < sizeof buf - 128; r = r->next)
    off += snprintf (buf + off, sizeof buf - off,
        "  registration %p size %zu flags 0x%x\n", (void *) r->base, r->size,
        r->flags);
  for (struct alloc * a = allocs; a && off < sizeof buf - 128; a = a->next)
    off += snprintf (buf + off, sizeof buf - off,
        "  allocation %p size %zu\n", (void *) a->dev, a->size);
  pthread_mutex_unlock (&G);
  return buf;
}

static void
pfemu_exit_report (void)
{
  const char *path = getenv ("PFEMU_LEAK_REPORT");
  const char *abort_env = getenv ("PFEMU_LEAK_ABORT");
  long live = pfemu_live_total ();

  if (path && *path) {
    FILE *f = fopen (path, "ae");
    if (f) {
      fputs (pfemu_leak_report (), f);
      fclose (f);
    }
  }
  if (live > 0 && abort_env && atoi (abort_env)) {
    fputs (pfemu_leak_report (), stderr);
    _exit (3);
  }
}
