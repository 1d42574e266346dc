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
 *
 * This library is also the core of the driver-API stand-in (libcuda.so.1,
 * pfemu-cuda.c, which links against it): the pfemu_core_* functions of
 * pfemu-core.h are the operations behind both APIs' calls, so one process
 * has one emulated device. Contexts follow the driver's model, which
 * cudart shares: a per-thread stack whose top is current; cudart's primary
 * context on a device is the handle cuDevicePrimaryCtxRetain returns.
 * Locking: G guards every list, counter and the configuration; the
 * context stack and the last-error slot are thread-local.
 */
#include "pfemu.h"
#include "pfemu-core.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__ ((visibility ("default")))

typedef int cudaError_t;
enum
{
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInsufficientDriver = 35,
  cudaErrorDevicesUnavailable = 46,
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
#define ATTR_COMPUTE_MODE 20
/* cudaStreamLegacy, cudaStreamPerThread (CU_STREAM_LEGACY,
 * CU_STREAM_PER_THREAD): the legacy default stream, as NULL is (the
 * per-thread one is emulated by it: one more ordering, never less). */
#define STREAM_HANDLE(h) ((uintptr_t) (h) <= 2 ? NULL : (h))
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
API int cuCtxPushCurrent_v2 (void *ctx);
API int cuCtxPopCurrent_v2 (void **ctx);
API int cuDevicePrimaryCtxRetain (void **ctx, int device);
API int cuDevicePrimaryCtxRelease_v2 (int device);
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
API cudaError_t cudaStreamQuery (void *stream);
API cudaError_t cudaLaunchHostFunc (void *stream, void (*fn) (void *),
    void *data);
API cudaError_t cudaMemcpy2DAsync (void *dst, size_t dpitch, const void *src,
    size_t spitch, size_t width, size_t height, int kind, void *stream);
API cudaError_t cudaMemcpy2D (void *dst, size_t dpitch, const void *src,
    size_t spitch, size_t width, size_t height, int kind);
API cudaError_t cudaGetLastError (void);
API cudaError_t cudaPeekAtLastError (void);
API long pfemu_query (const char *counter);
API long pfemu_stream_syncs (void *stream);
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
  void *ctx;                    /* the context current when allocated */
  /* a cuMemMap mapping (pfemu-cuda-vmm.c): view is the caller's; access
   * per device, CU_MEM_ACCESS_FLAGS_PROT_* (0 none, 1 read, 3 read-write);
   * device: the one its memory is on */
  int vmm;
  unsigned access[4];
  int device;
  int handle_types;             /* a mapping's: requestedHandleTypes */
  /* legacy IPC (pfemu-cuda-ipc.c): ipc 1: opened from another process's
   * handle (cuIpcOpenMemHandle), closed by cuIpcCloseMemHandle only; fd:
   * the allocation's memfd, kept open with PFEMU_IPC=1 so that
   * cuIpcGetMemHandle can name it (else -1) */
  int ipc;
  int fd;
  unsigned long long id;        /* CU_POINTER_ATTRIBUTE_BUFFER_ID */
  struct alloc *next;
};

struct reg
{
  char *base;
  size_t size;
  unsigned int flags;
  int host_alloc;               /* cuMemAllocHost: owned, mmap()ed here */
  void *ctx;                    /* the context current when registered:
                                 * its destruction drops the registration */
  struct reg *next;
};

/* A context made by cuCtxCreate (primary contexts are primary_handle[]).
 * Never freed: a handle another thread still has on its stack must not
 * point at freed memory (a destroyed one is alive = 0). */
struct ctx
{
  int device;
  int alive;
  unsigned int flags;           /* cuCtxCreate's (CU_CTX_SCHED_*) */
  struct ctx *next;
};

/* An IPC event's counters (pfemu-cuda-ipc.c), in a page the exporting
 * and the importing processes share: read and written there, with
 * atomics, instead of in struct event. */
#define EV_SHARED_MAGIC "PFEMUEVT"
struct ev_shared
{
  char magic[8];
  uint64_t recorded, completed;
  int32_t error, pad;
};

struct event
{
  uint64_t recorded, completed;
  struct ev_shared *sh;         /* exported or imported: its counters */
  int sh_fd;                    /* exported: the page's memfd, else -1 */
  int imported;
  int refs;                     /* handle + queued ops */
  int alive;
  int device;                   /* current device when created */
  void *ctx;                    /* current context when created */
  unsigned int flags;           /* cudaEventCreateWithFlags() */
  cudaError_t error;            /* its stream faulted before it */
  uint64_t legacy_lseq;         /* last recorded on the legacy stream: the
                                 * record's number, else 0 */
  struct event *next;
};

enum op_type
{ OP_COPY, OP_RECORD, OP_WAIT, OP_READ, OP_HOST };

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
  int h2h;                      /* host to host (driver API only) */
  int dir;                      /* 0 H2H, 1 H2D, 2 D2H, 3 D2D */
  long late_us;                 /* OP_READ: how long the reader runs */
  void (*host_fn) (void *);     /* OP_HOST: cudaLaunchHostFunc's */
  void *host_data;
  uint64_t lseq;                /* on the legacy stream: its number */
  struct event *ev;
  uint64_t seq;
  struct op *next;
};

struct stream
{
  unsigned int flags;
  int device;                   /* current device when created */
  void *ctx;                    /* current context when created (the
                                 * legacy stream: none, it is every
                                 * context's) */
  pthread_t thread;
  struct op *head, *tail;
  int pending;                  /* queued or running ops */
  cudaError_t error;            /* a faulted copy: every later sync */
  int legacy;                   /* the legacy default stream */
  uint64_t next_lseq, demand;   /* legacy: ops up to demand may run */
  int pending_copies;
  long syncs;                   /* cudaStreamSynchronize/cuStreamSynchronize */
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
static struct ctx *contexts;

/* configuration */
static long delay_us = 2000;
static int device_count = 1;
static int insufficient_driver;
static int no_readonly;
static int no_host_register;
/* PFEMU_COMPUTE_MODE=exclusive-process: one context per device at a time
 * (a second one fails with cudaErrorDevicesUnavailable, 46). */
static int exclusive_process;
/* Like the real runtime: the device of the context current to the thread
 * (-1: none). A thread with no context that makes a call needing one gets
 * device 0's primary context, initialised then; cudaSetDevice initialises
 * the device's primary context at once (CUDA >= 12). cudaGetDevice on a
 * thread without a context answers 0 and creates nothing. */
static __thread int current_device = -1;
/* The thread's context stack (the driver's model, which cudart shares):
 * the top is the current context; current_device is its device. Entries
 * are &primary_handle[device] or a struct ctx. cudaSetDevice and the
 * implicit initialisation replace the top, as cuCtxSetCurrent does. */
#define CTX_STACK_MAX 16
static __thread void *ctx_stack[CTX_STACK_MAX];
static __thread int ctx_depth;
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
    ctx_depth = 0;
  }
}

#define MAX_DEVICES 4
/* Primary contexts alive (process-wide), one per device; pfemu_reset()
 * tears them down like cudaDeviceReset() on every device. */
static int primary_alive[MAX_DEVICES];
/* What cuCtxGetCurrent() and cuDevicePrimaryCtxRetain() hand out for each
 * device's primary context. */
static char primary_handle[MAX_DEVICES];
/* The primary context's references: cuDevicePrimaryCtxRetain's, and the
 * runtime's own (rt_uses: cudart made it current since the last reset; it
 * keeps it until cudaDeviceReset, i.e. pfemu_reset()). */
static int primary_refs[MAX_DEVICES];
static int rt_uses[MAX_DEVICES];
/* cuInit called (cudart calls it for its users); survives pfemu_reset(). */
static int driver_initialized;
/* CUDA's process rule: a process forked after CUDA was initialised in its
 * parent cannot use CUDA. Set in such a child (pthread_atfork); from then
 * on every call but the version queries, the error strings and the
 * last-error reads fails with 3 (cudaErrorInitializationError /
 * CUDA_ERROR_NOT_INITIALIZED); pfemu_reset() keeps it. fork_refused counts
 * those calls (atomic: G is not needed to refuse). */
static int forked_after_init;
static long fork_refused;
static long stack_limit = 1024; /* CU_LIMIT_STACK_SIZE */

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

#define MAX_CALLS 192
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
  /* blocking streams made through cudart (pinnedflow's own; libgstcuda
   * and nvcodec make theirs through the driver API) */
  long streams_blocking_runtime;
  long events_recorded, stream_waits;
  long event_syncs, event_syncs_spinning, event_syncs_spun, free_pending;
  long sticky_calls, copies_sync_late;
  /* calls that use a device's context, by the calling thread's device */
  long context_calls[MAX_DEVICES];
  /* primary contexts initialised, and cudaSetDevice calls, per device */
  long contexts_created[MAX_DEVICES], set_device[MAX_DEVICES];
  /* driver API: cuCtxCreate / cuCtxDestroy, cuDevicePrimaryCtxRetain /
   * Release, cuInit; stream syncs (both APIs, and the legacy stream's);
   * cuMemAllocHost; host-to-host copies */
  long ctx_created, ctx_destroyed, primary_retains, primary_releases;
  long driver_inits, stream_syncs, stream_syncs_legacy;
  long host_allocs, copies_h2h;
  /* contexts: registrations dropped with their context, event records
   * refused across contexts, contexts refused by EXCLUSIVE_PROCESS */
  long regs_dropped, cross_context_records, exclusive_refused;
  /* host waits that would spin a core on a GPU: stream (and context)
   * syncs in a context not made with CU_CTX_SCHED_BLOCKING_SYNC */
  long stream_syncs_spinning, ctx_syncs_spinning;
  /* virtual memory (pfemu-cuda-vmm.c): copies and memsets refused by a
   * mapping's access flags (sticky 700) */
  long vmm_faults;
  /* copies by direction (0 host to host, 1 HtoD, 2 DtoH, 3 DtoD), sync
   * and async, each plane a copy; their bytes */
  long dir_copies[4], dir_bytes[4];
} ctr;

/* device memory held by this process: cuMemAlloc / cudaMallocPitch
 * allocations and cuMemCreate handles (not imported or IPC-opened ones:
 * those are another process's), now and at most (kept by pfemu_reset) */
static long device_bytes, device_bytes_peak;

static void
device_bytes_add_locked (long delta)
{
  device_bytes += delta;
  if (device_bytes > device_bytes_peak)
    device_bytes_peak = device_bytes;
}

/* live virtual-memory handles and reservations (pfemu-cuda-vmm.c's, kept
 * by pfemu_reset()) */
static long vmm_handles, vmm_reservations;

/* the reservations' address ranges (pfemu_core_VmmReserved): a copy whose
 * "host" side lies in one is an unmapped device address, refused */
#define MAX_RESERVED 256
static struct
{
  const char *base;
  size_t size;
} reserved[MAX_RESERVED];
static int n_reserved;

/* CU_CTX_SCHED_MASK and CU_CTX_SCHED_BLOCKING_SYNC (cuda.h) */
#define CTX_SCHED_MASK 0x07u
#define CTX_SCHED_BLOCKING_SYNC 0x04u

/* G held. Whether a host wait for a stream or the whole context, made by
 * the calling thread, spins a core on a GPU: it does unless the context
 * current on the thread was made with CU_CTX_SCHED_BLOCKING_SYNC. The
 * default, CU_CTX_SCHED_AUTO, spins while the process has fewer active
 * contexts than cores (always, in practice); SPIN and YIELD poll. Primary
 * contexts (cudart's, a thread with none current gets one) keep the
 * default flags here: the emulator has no cudaSetDeviceFlags. */
static int
thread_sync_spins_locked (void)
{
  void *top;

  check_generation ();
  if (ctx_depth == 0)
    return 1;
  top = ctx_stack[ctx_depth - 1];
  for (struct ctx * x = contexts; x; x = x->next)
    if ((void *) x == top)
      return (x->flags & CTX_SCHED_MASK) != CTX_SCHED_BLOCKING_SYNC;
  return 1;
}

/* G held. The device of a context handle, -1 when it is none of ours;
 * *alive tells whether it can be used. */
static int
handle_device_locked (void *h, int *alive)
{
  char *c = h;

  *alive = 0;
  if (c >= primary_handle && c < primary_handle + MAX_DEVICES) {
    *alive = primary_alive[c - primary_handle];
    return (int) (c - primary_handle);
  }
  for (struct ctx * x = contexts; x; x = x->next)
    if ((void *) x == h) {
      *alive = x->alive;
      return x->device;
    }
  return -1;
}

/* Makes current_device follow the top of the thread's stack. */
static void
sync_current_locked (void)
{
  int alive;

  current_device = ctx_depth > 0 ?
      handle_device_locked (ctx_stack[ctx_depth - 1], &alive) : -1;
}

/* G held. Replaces the top of the thread's stack (pushes onto an empty
 * one); NULL pops it, as cuCtxSetCurrent does. */
static void
set_top_locked (void *h)
{
  if (h == NULL) {
    if (ctx_depth > 0)
      ctx_depth--;
  } else if (ctx_depth == 0) {
    ctx_stack[ctx_depth++] = h;
  } else {
    ctx_stack[ctx_depth - 1] = h;
  }
  sync_current_locked ();
}

/* The calling thread's current context handle, or NULL. */
static void *
cur_ctx (void)
{
  check_generation ();
  return ctx_depth > 0 ? ctx_stack[ctx_depth - 1] : NULL;
}

/* G held. 1 when a context other than @except is alive on @device. */
static int
other_context_locked (int device, void *except)
{
  if (primary_alive[device] && except != &primary_handle[device])
    return 1;
  for (struct ctx * x = contexts; x; x = x->next)
    if (x->alive && x->device == device && (void *) x != except)
      return 1;
  return 0;
}

/* G held. In EXCLUSIVE_PROCESS compute mode a device takes one context:
 * creating another fails (CUDA_ERROR_DEVICES_UNAVAILABLE,
 * cudaErrorDevicesUnavailable: 46, counted). */
static int
exclusive_refuses_locked (int device, void *except)
{
  if (!exclusive_process || !other_context_locked (device, except))
    return 0;
  ctr.exclusive_refused++;
  return 1;
}

/* G held. Makes @device's primary context current on the calling thread,
 * initialising it (and counting that) when it is not alive. 0, or 46 when
 * EXCLUSIVE_PROCESS refuses it (nothing changes). */
static int
make_current_locked (int device)
{
  if (device >= 0 && device < MAX_DEVICES && !primary_alive[device]) {
    if (exclusive_refuses_locked (device, &primary_handle[device]))
      return 46;
    primary_alive[device] = 1;
    ctr.contexts_created[device]++;
  }
  if (device >= 0 && device < MAX_DEVICES) {
    rt_uses[device] = 1;
    set_top_locked (&primary_handle[device]);
  }
  driver_initialized = 1;
  return 0;
}

/* G held. Drops the registrations made in the context @h (it is being
 * destroyed): the pages are no longer pinned for anyone, later copies from
 * them are staged (copies.pageable) and cudaHostUnregister does not know
 * them (713). */
static void
drop_context_registrations_locked (void *h)
{
  struct reg **l = &regs;

  while (*l) {
    struct reg *r = *l;
    if (r->ctx == h && !r->host_alloc) {
      *l = r->next;
      ctr.regs_dropped++;
      free (r);
    } else {
      l = &r->next;
    }
  }
}

static long
count_list_allocs (void)
{
  long n = 0;
  for (struct alloc * a = allocs; a; a = a->next)
    n += !a->vmm && !a->ipc;
  return n;
}

static long
count_list_ipc_maps (void)
{
  long n = 0;
  for (struct alloc * a = allocs; a; a = a->next)
    n += a->ipc;
  return n;
}

static long
count_list_vmm_maps (void)
{
  long n = 0;
  for (struct alloc * a = allocs; a; a = a->next)
    n += a->vmm;
  return n;
}

/* Live registrations (@host_alloc 0) or host allocations (1: cudaHostAlloc,
 * cuMemAllocHost): regs keeps both. */
static long
count_list_regs (int host_alloc)
{
  long n = 0;
  for (struct reg * r = regs; r; r = r->next)
    n += !r->host_alloc == !host_alloc;
  return n;
}

static long
count_list_contexts (void)
{
  long n = 0;
  for (struct ctx * x = contexts; x; x = x->next)
    n += x->alive;
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
  exclusive_process = (v = getenv ("PFEMU_COMPUTE_MODE")) &&
      (strcmp (v, "exclusive-process") == 0 || strcmp (v, "3") == 0);
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
        /* "cuda" is implied; a driver call is named in full (cuInit) */
        snprintf (fails[n_fails].name, sizeof fails[n_fails].name, "%s%s",
            strncmp (name, "cuda", 4) == 0 || (strncmp (name, "cu", 2) == 0
                && name[2] >= 'A' && name[2] <= 'Z') ? "" : "cuda", name);
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

/* fork(): G is taken across it, so the child's copy is consistent (the
 * stream workers do not survive in the child; a child forked after CUDA
 * was initialised never queues work again). */
static void
fork_prepare (void)
{
  pthread_mutex_lock (&G);
}

static void
fork_parent (void)
{
  pthread_mutex_unlock (&G);
}

static void
fork_child (void)
{
  if (driver_initialized)
    forked_after_init = 1;
  pthread_mutex_unlock (&G);
}

__attribute__((constructor))
     static void
     pfemu_init (void)
{
  read_env ();
  pthread_atfork (fork_prepare, fork_parent, fork_child);
  atexit (pfemu_exit_report);
}

/* Runtime calls that need no context: the device queries and selection. */
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
/* The calling thread's current call is a driver-API one. */
static __thread int driver_call;

static int
is_release (const char *name)
{
  static const char *releases[] = {
    "cudaFree", "cudaHostUnregister", "cudaStreamDestroy", "cudaEventDestroy",
    "cuMemFree_v2", "cuMemFreeHost", "cuMemHostUnregister",
    "cuStreamDestroy_v2", "cuStreamDestroy", "cuEventDestroy_v2",
    "cuEventDestroy", "cuCtxDestroy_v2", "cuDevicePrimaryCtxRelease_v2",
    "cuDevicePrimaryCtxRelease", "cuIpcCloseMemHandle",
  };
  for (size_t i = 0; i < sizeof releases / sizeof releases[0]; i++)
    if (strcmp (name, releases[i]) == 0)
      return 1;
  return 0;
}

/* Driver calls that need no cuInit first. */
static int
before_init (const char *name)
{
  return strcmp (name, "cuInit") == 0 ||
      strcmp (name, "cuDriverGetVersion") == 0 ||
      strcmp (name, "cuGetErrorName") == 0 ||
      strcmp (name, "cuGetErrorString") == 0;
}

/* G held. The driver's checks before a call: cuInit done
 * (CUDA_ERROR_NOT_INITIALIZED = 3); for one that needs a context, a
 * context current (CUDA_ERROR_INVALID_CONTEXT = 201) and not destroyed
 * (CUDA_ERROR_CONTEXT_IS_DESTROYED = 709). The driver, unlike cudart,
 * never makes a context current by itself. */
static cudaError_t
driver_check_locked (const char *name, int api)
{
  int alive;

  if (!driver_initialized && !before_init (name))
    return 3;
  if (api != PFEMU_API_DRIVER_CTX)
    return cudaSuccess;
  if (ctx_depth == 0)
    return 201;
  handle_device_locked (ctx_stack[ctx_depth - 1], &alive);
  if (!alive)
    return 709;
  if (current_device < MAX_DEVICES)
    ctr.context_calls[current_device]++;
  return cudaSuccess;
}

/* Counts the call and returns the error to inject, or cudaSuccess. @api:
 * PFEMU_API_RUNTIME (a cudart call), PFEMU_API_DRIVER (a driver call that
 * needs no context) or PFEMU_API_DRIVER_CTX. */
static cudaError_t
enter (const char *name, int api)
{
  cudaError_t res = cudaSuccess;
  int needs_context;
  long n = 0;
  int i;

  async_fail = cudaSuccess;
  async_sticky = 0;
  driver_call = api != PFEMU_API_RUNTIME;
  /* A child forked after its parent initialised CUDA: the driver's
   * initialisation error, whatever the call (the driver's own version and
   * error-string queries excepted). */
  if (forked_after_init && (api == PFEMU_API_RUNTIME ||
          strcmp (name, "cuInit") == 0 || !before_init (name))) {
    __atomic_add_fetch (&fork_refused, 1, __ATOMIC_RELAXED);
    return cudaErrorInitializationError;
  }
  pthread_mutex_lock (&G);
  check_generation ();
  if (api == PFEMU_API_RUNTIME) {
    /* cudart initialises the driver at its first call, whichever it is
     * (cudaGetDeviceCount included): a fork after it is one after
     * initialisation */
    if (device_count > 0 && !insufficient_driver)
      driver_initialized = 1;
    needs_context = uses_context (name);
    if (needs_context) {
      if (current_device < 0)
        res = make_current_locked (0);
      if (current_device >= 0 && current_device < MAX_DEVICES)
        ctr.context_calls[current_device]++;
    }
  } else {
    needs_context = api == PFEMU_API_DRIVER_CTX;
    res = driver_check_locked (name, api);
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
  if (res == cudaSuccess && sticky_error && needs_context) {
    /* Releases still release (the process must be able to tear down),
     * and report the error too. */
    if (is_release (name))
      release_sticky = sticky_error;
    else
      res = sticky_error;
    ctr.sticky_calls++;
  }
  pthread_mutex_unlock (&G);
  /* a runtime newer than the driver fails; the driver itself works */
  if (res == cudaSuccess && api == PFEMU_API_RUNTIME && insufficient_driver)
    res = cudaErrorInsufficientDriver;
  return res;
}

/* A cudart call: counted, checked, run, its error left in the thread's
 * last-error slot. */
#define RT_CALL(name, call) do {                                \
    cudaError_t e_ = enter (name, PFEMU_API_RUNTIME);           \
    return set_last (e_ != cudaSuccess ? e_ : (call));          \
  } while (0)

PFEMU_CORE int
pfemu_core_enter (const char *name, int api)
{
  return enter (name, api);
}

/* A release made while a sticky error stands reports it (after
 * releasing); the driver layer takes it here. */
PFEMU_CORE int
pfemu_core_take_release_error (void)
{
  cudaError_t e = release_sticky;

  release_sticky = cudaSuccess;
  return e;
}

/* ----------------------------------------------------------- errors */

static const struct
{
  int code;
  const char *name, *str;
} error_table[] = {
  {cudaSuccess, "cudaSuccess", "no error"},
  {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
  {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
  {cudaErrorInitializationError, "cudaErrorInitializationError",
      "initialization error"},
  {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection",
      "invalid copy direction for memcpy"},
  {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
      "CUDA driver version is insufficient for CUDA runtime version"},
  {cudaErrorDevicesUnavailable, "cudaErrorDevicesUnavailable",
      "CUDA-capable device(s) is/are busy or unavailable"},
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
pfemu_core_RuntimeGetVersion (int *version)
{
  if (!version)
    return cudaErrorInvalidValue;
  *version = 13000;
  return cudaSuccess;
}

static cudaError_t
pfemu_core_DriverGetVersion (int *version)
{
  if (!version)
    return cudaErrorInvalidValue;
  *version = insufficient_driver ? 0 : 13000;
  return cudaSuccess;
}

/* ----------------------------------------------------------- device */

PFEMU_CORE cudaError_t
pfemu_core_GetDeviceCount (int *count)
{
  if (!count)
    return cudaErrorInvalidValue;
  *count = device_count > 0 ? device_count : 0;
  return device_count > 0 ? cudaSuccess : cudaErrorNoDevice;
}

static cudaError_t
pfemu_core_SetDevice (int device)
{
  cudaError_t res;

  if (device_count <= 0)
    return cudaErrorNoDevice;
  if (device < 0 || device >= device_count)
    return cudaErrorInvalidDevice;
  pthread_mutex_lock (&G);
  if (device < MAX_DEVICES)
    ctr.set_device[device]++;
  res = make_current_locked (device);
  pthread_mutex_unlock (&G);
  return res;
}

static cudaError_t
pfemu_core_GetDevice (int *device)
{
  if (!device)
    return cudaErrorInvalidValue;
  check_generation ();
  *device = current_device < 0 ? 0 : current_device;
  return cudaSuccess;
}

/* ----------------------------------------------------------- contexts */

struct stream;
static void drain_locked (struct stream *s);

/* G held. A handle a thread may make current: a primary context's (alive
 * or not: the runtime initialises it again on its next call, as before),
 * or a created context not destroyed. */
static int
valid_handle_locked (void *h)
{
  int alive, dev = handle_device_locked (h, &alive);

  if (dev < 0)
    return 0;
  return alive || ((char *) h >= primary_handle &&
      (char *) h < primary_handle + MAX_DEVICES);
}

PFEMU_CORE int
pfemu_core_CtxGetCurrent (void **ctx)
{
  if (!ctx)
    return cudaErrorInvalidValue;
  pthread_mutex_lock (&G);
  check_generation ();
  *ctx = ctx_depth > 0 ? ctx_stack[ctx_depth - 1] : NULL;
  pthread_mutex_unlock (&G);
  return cudaSuccess;
}

PFEMU_CORE int
pfemu_core_CtxSetCurrent (void *ctx)
{
  int res = cudaSuccess;

  pthread_mutex_lock (&G);
  check_generation ();
  if (ctx && !valid_handle_locked (ctx))
    res = 201;                  /* CUDA_ERROR_INVALID_CONTEXT */
  else
    set_top_locked (ctx);
  pthread_mutex_unlock (&G);
  return res;
}

PFEMU_CORE int
pfemu_core_CtxPushCurrent (void *ctx)
{
  int res = cudaSuccess;

  pthread_mutex_lock (&G);
  check_generation ();
  if (!ctx || !valid_handle_locked (ctx)) {
    res = 201;
  } else if (ctx_depth == CTX_STACK_MAX) {
    res = cudaErrorMemoryAllocation;
  } else {
    ctx_stack[ctx_depth++] = ctx;
    sync_current_locked ();
  }
  pthread_mutex_unlock (&G);
  return res;
}

PFEMU_CORE int
pfemu_core_CtxPopCurrent (void **ctx)
{
  int res = cudaSuccess;

  pthread_mutex_lock (&G);
  check_generation ();
  if (ctx_depth == 0) {
    res = 201;
  } else {
    ctx_depth--;
    if (ctx)
      *ctx = ctx_stack[ctx_depth];
    sync_current_locked ();
  }
  pthread_mutex_unlock (&G);
  return res;
}

/* cuCtxCreate: a context of its own, pushed on the calling thread. */
PFEMU_CORE int
pfemu_core_CtxCreate (void **ctx, unsigned int flags, int device)
{
  struct ctx *x;

  if (!ctx)
    return cudaErrorInvalidValue;
  if (device < 0 || device >= device_count)
    return cudaErrorInvalidDevice;
  pthread_mutex_lock (&G);
  check_generation ();
  if (ctx_depth == CTX_STACK_MAX) {
    pthread_mutex_unlock (&G);
    return cudaErrorMemoryAllocation;
  }
  if (exclusive_refuses_locked (device, NULL)) {
    pthread_mutex_unlock (&G);
    return 46;
  }
  x = calloc (1, sizeof *x);
  x->device = device;
  x->alive = 1;
  x->flags = flags;
  x->next = contexts;
  contexts = x;
  ctr.ctx_created++;
  ctx_stack[ctx_depth++] = x;
  sync_current_locked ();
  pthread_mutex_unlock (&G);
  *ctx = x;
  return cudaSuccess;
}

/* cuCtxDestroy: a created context only (a primary one is released); it
 * leaves the calling thread's stack. */
PFEMU_CORE int
pfemu_core_CtxDestroy (void *ctx)
{
  struct ctx *x;
  int i, j;

  pthread_mutex_lock (&G);
  check_generation ();
  for (x = contexts; x; x = x->next)
    if ((void *) x == ctx && x->alive)
      break;
  if (!x) {
    pthread_mutex_unlock (&G);
    return 201;
  }
  x->alive = 0;
  ctr.ctx_destroyed++;
  drop_context_registrations_locked (x);
  for (i = j = 0; i < ctx_depth; i++)
    if (ctx_stack[i] != ctx)
      ctx_stack[j++] = ctx_stack[i];
  ctx_depth = j;
  sync_current_locked ();
  pthread_mutex_unlock (&G);
  return cudaSuccess;
}

PFEMU_CORE int
pfemu_core_CtxGetDevice (int *device)
{
  if (!device)
    return cudaErrorInvalidValue;
  check_generation ();
  *device = current_device;
  return cudaSuccess;
}

/* cuCtxSynchronize: every stream's work done (all of them: one device
 * is all the emulator has in one context at a time, near enough). */
PFEMU_CORE int
pfemu_core_CtxSynchronize (void)
{
  cudaError_t err = cudaSuccess;

  pthread_mutex_lock (&G);
  if (thread_sync_spins_locked ())
    ctr.ctx_syncs_spinning++;
  for (struct stream * s = streams; s; s = s->next) {
    drain_locked (s);
    if (s->error && !err)
      err = s->error;
  }
  pthread_mutex_unlock (&G);
  return err;
}

PFEMU_CORE int
pfemu_core_CtxGetLimit (size_t *value, int limit)
{
  if (!value || limit != 0)     /* CU_LIMIT_STACK_SIZE only */
    return cudaErrorNotSupported;
  *value = (size_t) __atomic_load_n (&stack_limit, __ATOMIC_RELAXED);
  return cudaSuccess;
}

PFEMU_CORE int
pfemu_core_CtxSetLimit (int limit, size_t value)
{
  if (limit != 0)
    return cudaErrorNotSupported;
  __atomic_store_n (&stack_limit, (long) value, __ATOMIC_RELAXED);
  return cudaSuccess;
}

/* cuDevicePrimaryCtxRetain: the same context cudart uses on the device
 * (&primary_handle[device]), initialised if it is not (counted in
 * contexts.deviceN, like cudart's initialisation). Not made current. */
PFEMU_CORE int
pfemu_core_PrimaryCtxRetain (void **ctx, int device)
{
  if (!ctx)
    return cudaErrorInvalidValue;
  if (device < 0 || device >= device_count)
    return cudaErrorInvalidDevice;
  pthread_mutex_lock (&G);
  if (!primary_alive[device]) {
    if (exclusive_refuses_locked (device, &primary_handle[device])) {
      pthread_mutex_unlock (&G);
      return 46;
    }
    primary_alive[device] = 1;
    ctr.contexts_created[device]++;
  }
  primary_refs[device]++;
  ctr.primary_retains++;
  pthread_mutex_unlock (&G);
  *ctx = &primary_handle[device];
  return cudaSuccess;
}

/* The last release destroys it unless the runtime uses it too. */
PFEMU_CORE int
pfemu_core_PrimaryCtxRelease (int device)
{
  int res = cudaSuccess;

  if (device < 0 || device >= device_count)
    return cudaErrorInvalidDevice;
  pthread_mutex_lock (&G);
  if (primary_refs[device] == 0) {
    res = 201;
  } else {
    ctr.primary_releases++;
    if (--primary_refs[device] == 0 && !rt_uses[device]) {
      primary_alive[device] = 0;
      drop_context_registrations_locked (&primary_handle[device]);
    }
  }
  pthread_mutex_unlock (&G);
  return res;
}

PFEMU_CORE int
pfemu_core_PrimaryCtxGetState (int device, unsigned int *flags, int *active)
{
  if (!flags || !active)
    return cudaErrorInvalidValue;
  if (device < 0 || device >= device_count)
    return cudaErrorInvalidDevice;
  pthread_mutex_lock (&G);
  *flags = 0;
  *active = primary_alive[device];
  pthread_mutex_unlock (&G);
  return cudaSuccess;
}

/* cuInit: flags must be 0; no device: CUDA_ERROR_NO_DEVICE. */
PFEMU_CORE int
pfemu_core_Init (unsigned int flags)
{
  if (flags != 0)
    return cudaErrorInvalidValue;
  if (device_count <= 0)
    return cudaErrorNoDevice;
  pthread_mutex_lock (&G);
  driver_initialized = 1;
  ctr.driver_inits++;
  pthread_mutex_unlock (&G);
  return cudaSuccess;
}

/* In a child forked after initialisation, 3 (CUDA_ERROR_NOT_INITIALIZED)
 * instead of the call. */
#define FORK_CHECK(call) (forked_after_init ?                   \
    (__atomic_add_fetch (&fork_refused, 1, __ATOMIC_RELAXED), 3) : (call))

/* The runtime's own two driver calls (the plugin saves and restores a
 * thread's context with them, from this library): CUresult, 0 =
 * CUDA_SUCCESS, 201 = CUDA_ERROR_INVALID_CONTEXT; no cuInit needed. */
EXPORT int
cuCtxGetCurrent (void **ctx)
{
  return FORK_CHECK (pfemu_core_CtxGetCurrent (ctx));
}

EXPORT int
cuCtxSetCurrent (void *ctx)
{
  return FORK_CHECK (pfemu_core_CtxSetCurrent (ctx));
}

/* The other driver calls pinnedflow's loader takes with those two
 * (pf-cuda.c): push and pop a context, the primary context's references.
 * The real ones come from libcuda.so.1; so do these under the driver
 * stand-in (tests/cuda/emu), the same core either way. */
EXPORT int
cuCtxPushCurrent_v2 (void *ctx)
{
  return FORK_CHECK (pfemu_core_CtxPushCurrent (ctx));
}

EXPORT int
cuCtxPopCurrent_v2 (void **ctx)
{
  return FORK_CHECK (pfemu_core_CtxPopCurrent (ctx));
}

EXPORT int
cuDevicePrimaryCtxRetain (void **ctx, int device)
{
  return FORK_CHECK (pfemu_core_PrimaryCtxRetain (ctx, device));
}

EXPORT int
cuDevicePrimaryCtxRelease_v2 (int device)
{
  return FORK_CHECK (pfemu_core_PrimaryCtxRelease (device));
}

PFEMU_CORE cudaError_t
pfemu_core_DeviceGetAttribute (int *value, int attr, int device)
{
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
    case ATTR_COMPUTE_MODE:
      /* cudaComputeModeExclusiveProcess = 3, Default = 0 */
      *value = exclusive_process ? 3 : 0;
      return cudaSuccess;
    default:
      return cudaErrorInvalidValue;
  }
}

/* ----------------------------------------------------------- memory */

/* G held. The cuMemMap mapping that starts where @a ends, in the same
 * reservation: its copy-engine view continues @a's too (pfemu-cuda-vmm.c
 * maps the views at the same offsets of one shadow range), so a copy can
 * run across both as a GPU's does over contiguous virtual addresses. */
static struct alloc *
next_mapping (const struct alloc *a)
{
  if (!a->vmm)
    return NULL;
  for (struct alloc * b = allocs; b; b = b->next)
    if (b->vmm && b->dev == a->dev + a->size && b->view == a->view + a->size)
      return b;
  return NULL;
}

/* G held. The allocation holding [p, p + len), or NULL; a range over
 * adjacent mappings of one reservation is held by the first (its view
 * reaches the others); a range running into a hole, or past an
 * allocation's end, is held by none. */
static struct alloc *
find_alloc (const void *p, size_t len)
{
  const char *c = p;
  for (struct alloc * a = allocs; a; a = a->next) {
    if (c >= a->dev && c < a->dev + a->size) {
      /* exact bounds, not the page the allocation ends in */
      const struct alloc *m = a;
      size_t left;
      if (c >= a->dev + a->bytes)
        return NULL;
      left = (size_t) (a->dev + a->bytes - c);
      while (len > left) {
        if (!(m = next_mapping (m)))
          return NULL;
        left += m->bytes;
      }
      return a;
    }
  }
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

/* G held. A registration pins its pages for the context that made it, or
 * for every context with cudaHostRegisterPortable (page-locked host
 * allocations here are portable). */
static struct reg *
find_pinning_reg (const void *p, size_t len)
{
  struct reg *r = find_reg (p, len);

  if (r && !(r->flags & REG_PORTABLE) && r->ctx != cur_ctx ())
    return NULL;
  return r;
}

struct event;
static void demand_event_locked (struct event *e);
static long fault_pending_locked (const char *lo, const char *hi);

static unsigned long long alloc_ids;

/* PFEMU_IPC=1: legacy IPC (cuIpc*) on, read at each allocation */
static int
ipc_enabled (void)
{
  const char *e = getenv ("PFEMU_IPC");
  return e && strcmp (e, "1") == 0;
}

/* G held. The device memory allocated in @ctx is on: the context's, else
 * the calling thread's current one (cudart), else 0. */
static int
alloc_device_of_locked (void *ctx)
{
  int alive, dev = ctx ? handle_device_locked (ctx, &alive) : -1;

  if (dev < 0)
    dev = current_device;
  return dev >= 0 && dev < MAX_DEVICES ? dev : 0;
}

/* A device allocation of exactly @bytes (accessible: whole pages). */
static cudaError_t
alloc_device (void **dev_ptr, size_t bytes)
{
  struct alloc *a;
  size_t size, page = (size_t) sysconf (_SC_PAGESIZE);
  int fd;

  if (bytes > SIZE_MAX - page)
    return cudaErrorMemoryAllocation;
  size = (bytes + page - 1) / page * page;
  fd = memfd_create ("pfemu-device", MFD_CLOEXEC);
  if (fd < 0)
    return cudaErrorMemoryAllocation;
  if (ftruncate (fd, (off_t) size) < 0 || !(a = calloc (1, sizeof *a))) {
    close (fd);
    return cudaErrorMemoryAllocation;
  }
  a->size = size;
  a->bytes = bytes;
  a->dev = mmap (NULL, size, PROT_NONE, MAP_SHARED, fd, 0);
  a->view = mmap (NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  /* kept for cuIpcGetMemHandle only where legacy IPC is on */
  a->fd = ipc_enabled ()? fd : -1;
  if (a->fd < 0)
    close (fd);
  if (a->dev == MAP_FAILED || a->view == MAP_FAILED) {
    if (a->dev != MAP_FAILED)
      munmap (a->dev, size);
    if (a->view != MAP_FAILED)
      munmap (a->view, size);
    if (a->fd >= 0)
      close (a->fd);
    free (a);
    return cudaErrorMemoryAllocation;
  }
  /* Fresh device memory is not zero on a GPU either. */
  memset (a->view, 0xA5, size);
  a->ctx = cur_ctx ();
  pthread_mutex_lock (&G);
  a->device = alloc_device_of_locked (a->ctx);
  a->id = ++alloc_ids;
  a->next = allocs;
  allocs = a;
  ctr.allocations++;
  device_bytes_add_locked ((long) a->bytes);
  pthread_mutex_unlock (&G);
  *dev_ptr = a->dev;
  return cudaSuccess;
}

PFEMU_CORE cudaError_t
pfemu_core_MallocPitch (void **dev_ptr, size_t *pitch, size_t width,
    size_t height)
{
  size_t p;
  cudaError_t err;

  if (!dev_ptr || !pitch || width == 0 || height == 0)
    return cudaErrorInvalidValue;
  p = (width + PITCH_ALIGN - 1) / PITCH_ALIGN * PITCH_ALIGN;
  if (height > SIZE_MAX / p)
    return cudaErrorMemoryAllocation;
  if ((err = alloc_device (dev_ptr, p * height)) == cudaSuccess)
    *pitch = p;
  return err;
}

/* cuMemAlloc: exactly @bytes, no pitch. */
PFEMU_CORE cudaError_t
pfemu_core_Malloc (void **dev_ptr, size_t bytes)
{
  if (!dev_ptr || bytes == 0)
    return cudaErrorInvalidValue;
  return alloc_device (dev_ptr, bytes);
}

PFEMU_CORE cudaError_t
pfemu_core_Free (void *dev_ptr)
{
  struct alloc **l, *a = NULL;

  if (dev_ptr == NULL)
    return cudaSuccess;
  pthread_mutex_lock (&G);
  for (l = &allocs; *l; l = &(*l)->next) {
    if ((*l)->dev == dev_ptr && !(*l)->vmm && !(*l)->ipc) {
      a = *l;
      *l = a->next;
      break;
    }
  }
  /* cudaFree "may" synchronise; the caller must have waited for the copies
   * that use the allocation: those still queued fault. */
  if (a && fault_pending_locked (a->view, a->view + a->size) > 0)
    ctr.free_pending++;
  if (a)
    device_bytes_add_locked (-(long) a->bytes);
  pthread_mutex_unlock (&G);
  if (!a)
    return cudaErrorInvalidValue;
  munmap (a->dev, a->size);
  munmap (a->view, a->size);
  if (a->fd >= 0)
    close (a->fd);
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
PFEMU_CORE cudaError_t
pfemu_core_HostRegister (void *ptr, size_t size, unsigned int flags)
{
  struct reg *r;
  char *c = ptr;
  int readable, writable;

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
  r->ctx = cur_ctx ();
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
        if ((o->type != OP_COPY && o->type != OP_READ) || o->fail_err)
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

PFEMU_CORE cudaError_t
pfemu_core_HostUnregister (void *ptr)
{
  struct reg **l, *r = NULL;

  pthread_mutex_lock (&G);
  for (l = &regs; *l; l = &(*l)->next) {
    if ((*l)->base == ptr && !(*l)->host_alloc) {
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

/* cuMemAllocHost: page-locked host memory the emulator owns, registered
 * for the device (copies from or to it are pinned ones). Its own mapping,
 * so registering any part of it again is refused (712), and
 * cuMemHostUnregister does not know it (713). */
PFEMU_CORE cudaError_t
pfemu_core_HostAlloc (void **ptr, size_t size)
{
  struct reg *r;
  char *p;

  if (!ptr || size == 0)
    return cudaErrorInvalidValue;
  if (device_count <= 0)
    return cudaErrorNoDevice;
  p = mmap (NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
      -1, 0);
  if (p == MAP_FAILED)
    return cudaErrorMemoryAllocation;
  r = calloc (1, sizeof *r);
  r->base = p;
  r->size = size;
  r->flags = REG_PORTABLE | REG_MAPPED;
  r->host_alloc = 1;
  r->ctx = cur_ctx ();
  pthread_mutex_lock (&G);
  r->next = regs;
  regs = r;
  ctr.host_allocs++;
  pthread_mutex_unlock (&G);
  *ptr = p;
  return cudaSuccess;
}

PFEMU_CORE cudaError_t
pfemu_core_HostFree (void *ptr)
{
  struct reg **l, *r = NULL;

  pthread_mutex_lock (&G);
  for (l = &regs; *l; l = &(*l)->next) {
    if ((*l)->base == ptr && (*l)->host_alloc) {
      r = *l;
      *l = r->next;
      break;
    }
  }
  /* copies still queued that use it fault, as after cudaFree */
  if (r && fault_pending_locked (r->base, r->base + r->size) > 0)
    ctr.free_pending++;
  pthread_mutex_unlock (&G);
  if (!r)
    return cudaErrorInvalidValue;
  munmap (r->base, r->size);
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
    if (ev->sh)
      munmap (ev->sh, sizeof *ev->sh);
    if (ev->sh_fd >= 0)
      close (ev->sh_fd);
    free (ev);
  }
}

static void run_read (struct op *o);

/* An event's counters: its shared page's for an IPC event. */
static uint64_t
ev_recorded (const struct event *e)
{
  return e->sh ? __atomic_load_n (&e->sh->recorded, __ATOMIC_ACQUIRE) :
      e->recorded;
}

static uint64_t
ev_completed (const struct event *e)
{
  return e->sh ? __atomic_load_n (&e->sh->completed, __ATOMIC_ACQUIRE) :
      e->completed;
}

static cudaError_t
ev_error (const struct event *e)
{
  return e->sh ? (cudaError_t) __atomic_load_n (&e->sh->error,
      __ATOMIC_ACQUIRE) : e->error;
}

/* G held. Until @e's record @seq completed: signalled in this process;
 * an IPC event may be completed by another process: polled (100 us). */
static void
ev_wait_locked (struct event *e, uint64_t seq)
{
  while (ev_completed (e) < seq) {
    if (e->sh) {
      pthread_mutex_unlock (&G);
      usleep (100);
      pthread_mutex_lock (&G);
    } else {
      pthread_cond_wait (&events_cond, &G);
    }
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
    } else if (o->type == OP_READ) {
      run_read (o);
    } else if (o->type == OP_HOST) {
      o->host_fn (o->host_data);
    }
    pthread_mutex_lock (&G);
    o->running = 0;
    if (o->fail_err && !s->error)
      s->error = o->fail_err;
    if (o->fail_err && o->sticky && !sticky_error)
      sticky_error = o->fail_err;
    if (o->type == OP_RECORD && s->error) {
      o->ev->error = s->error;
      if (o->ev->sh)
        __atomic_store_n (&o->ev->sh->error, s->error, __ATOMIC_RELEASE);
    }
    if (o->type == OP_WAIT) {
      demand_event_locked (o->ev);
      ev_wait_locked (o->ev, o->seq);
    } else if (o->type == OP_RECORD) {
      if (o->ev->sh) {
        uint64_t done = __atomic_load_n (&o->ev->sh->completed,
            __ATOMIC_ACQUIRE);
        /* records complete in order in one process; another process's
         * later record may have completed first: keep the highest */
        while (done < o->seq && !__atomic_compare_exchange_n
            (&o->ev->sh->completed, &done, o->seq, 0, __ATOMIC_RELEASE,
                __ATOMIC_ACQUIRE));
      } else if (o->ev->completed < o->seq) {
        o->ev->completed = o->seq;
      }
    } else if (o->type == OP_COPY) {
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

PFEMU_CORE cudaError_t
pfemu_core_StreamCreateWithFlags (void **stream, unsigned int flags)
{
  struct stream *s;

  if (!stream || (flags & ~1u))
    return cudaErrorInvalidValue;
  if (device_count <= 0)
    return cudaErrorNoDevice;
  s = calloc (1, sizeof *s);
  s->flags = flags;
  s->device = current_device;
  s->ctx = cur_ctx ();
  pthread_cond_init (&s->cond, NULL);
  if (pthread_create (&s->thread, NULL, stream_worker, s) != 0) {
    free (s);
    return cudaErrorMemoryAllocation;
  }
  pthread_mutex_lock (&G);
  s->next = streams;
  streams = s;
  if (!(flags & STREAM_NON_BLOCKING)) {
    ctr.streams_blocking++;
    if (!driver_call)
      ctr.streams_blocking_runtime++;
  }
  pthread_mutex_unlock (&G);
  *stream = s;
  return cudaSuccess;
}

PFEMU_CORE cudaError_t
pfemu_core_StreamDestroy (void *stream)
{
  struct stream *s, **l;

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

PFEMU_CORE cudaError_t
pfemu_core_StreamSynchronize (void *stream)
{
  struct stream *s;
  cudaError_t err = cudaSuccess;

  stream = STREAM_HANDLE (stream);
  pthread_mutex_lock (&G);
  if ((stream == NULL || find_stream_locked (stream) != NULL) &&
      thread_sync_spins_locked ())
    ctr.stream_syncs_spinning++;
  if (stream == NULL) {
    ctr.stream_syncs++;
    ctr.stream_syncs_legacy++;
    drain_blocking_locked ();
    drain_locked (legacy_locked ());
  } else if ((s = find_stream_locked (stream)) != NULL) {
    ctr.stream_syncs++;
    s->syncs++;
    drain_locked (s);
    err = s->error;
  } else {
    pthread_mutex_unlock (&G);
    return cudaErrorInvalidResourceHandle;
  }
  pthread_mutex_unlock (&G);
  return err;
}

PFEMU_CORE cudaError_t
pfemu_core_StreamQuery (void *stream)
{
  struct stream *s;
  cudaError_t err;

  stream = STREAM_HANDLE (stream);
  pthread_mutex_lock (&G);
  s = stream ? find_stream_locked (stream) : legacy_locked ();
  if (!s)
    err = cudaErrorInvalidResourceHandle;
  else if (s->pending > 0)
    err = cudaErrorNotReady;
  else
    err = s->error;
  pthread_mutex_unlock (&G);
  return err;
}

/* ----------------------------------------------------------- events */

PFEMU_CORE cudaError_t
pfemu_core_EventCreateWithFlags (void **event, unsigned int flags)
{
  struct event *e;

  if (!event || (flags & ~0x0fu))
    return cudaErrorInvalidValue;
  if (device_count <= 0)
    return cudaErrorNoDevice;
  e = calloc (1, sizeof *e);
  e->sh_fd = -1;
  e->refs = 1;
  e->alive = 1;
  e->device = current_device;
  e->ctx = cur_ctx ();
  e->flags = flags;
  pthread_mutex_lock (&G);
  e->next = events;
  events = e;
  pthread_mutex_unlock (&G);
  *event = e;
  return cudaSuccess;
}

PFEMU_CORE cudaError_t
pfemu_core_EventDestroy (void *event)
{
  struct event *e;

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

PFEMU_CORE cudaError_t
pfemu_core_EventRecord (void *event, void *stream)
{
  struct event *e;
  struct stream *s = NULL;
  struct op *o;
  uint64_t seq;

  stream = STREAM_HANDLE (stream);
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
  /* ... or to different contexts: "CUDA_ERROR_INVALID_HANDLE ... if hEvent
   * and hStream are not from the same context" (cuEventRecord). The legacy
   * stream is the current context's. */
  if (e->ctx != (s ? s->ctx : cur_ctx ())) {
    ctr.cross_context_records++;
    pthread_mutex_unlock (&G);
    return cudaErrorInvalidResourceHandle;
  }
  ctr.events_recorded++;
  if (e->sh)
    seq = __atomic_add_fetch (&e->sh->recorded, 1, __ATOMIC_ACQ_REL);
  else
    seq = ++e->recorded;
  if (!s) {
    /* The legacy default stream: after the blocking streams' work, queued
     * behind what the legacy stream has (late synchronous copies). */
    drain_blocking_locked ();
    s = legacy_locked ();
  }
  o = calloc (1, sizeof *o);
  o->type = OP_RECORD;
  o->ev = e;
  o->seq = seq;
  e->refs++;
  enqueue_locked (s, o);
  e->legacy_lseq = s->legacy ? o->lseq : 0;
  /* another process may wait for it: the legacy stream runs it now */
  if (e->sh)
    demand_event_locked (e);
  pthread_mutex_unlock (&G);
  return cudaSuccess;
}

PFEMU_CORE cudaError_t
pfemu_core_EventQuery (void *event)
{
  struct event *e;
  cudaError_t res;

  pthread_mutex_lock (&G);
  if (!(e = find_event_locked (event))) {
    res = cudaErrorInvalidResourceHandle;
  } else {
    demand_event_locked (e);
    res = ev_completed (e) >= ev_recorded (e) ? ev_error (e) :
        cudaErrorNotReady;
  }
  pthread_mutex_unlock (&G);
  return res;
}

PFEMU_CORE cudaError_t
pfemu_core_EventSynchronize (void *event)
{
  struct event *e;
  uint64_t target;
  cudaError_t err;

  pthread_mutex_lock (&G);
  if (!(e = find_event_locked (event))) {
    pthread_mutex_unlock (&G);
    return cudaErrorInvalidResourceHandle;
  }
  target = ev_recorded (e);
  demand_event_locked (e);
  /* Without cudaEventBlockingSync the calling thread busy-waits for the
   * event on a GPU ("will actively spin", cudaEventCreateWithFlags); the
   * emulator blocks either way and counts the syncs that would spin, and
   * those that had something to wait for. */
  ctr.event_syncs++;
  if (!(e->flags & EVENT_BLOCKING_SYNC)) {
    ctr.event_syncs_spinning++;
    if (ev_completed (e) < target)
      ctr.event_syncs_spun++;
  }
  e->refs++;
  ev_wait_locked (e, target);
  err = ev_error (e);
  event_unref_locked (e);
  pthread_mutex_unlock (&G);
  return err;
}

PFEMU_CORE cudaError_t
pfemu_core_StreamWaitEvent (void *stream, void *event, unsigned int flags)
{
  struct event *e;
  struct stream *s;
  struct op *o;

  /* The event may be of another context than the stream (documented for
   * cuStreamWaitEvent and cudaStreamWaitEvent): no context check. */
  stream = STREAM_HANDLE (stream);
  pthread_mutex_lock (&G);
  if (!(e = find_event_locked (event)) ||
      !(s = stream ? find_stream_locked (stream) : legacy_locked ())) {
    pthread_mutex_unlock (&G);
    return cudaErrorInvalidResourceHandle;
  }
  ctr.stream_waits++;
  o = calloc (1, sizeof *o);
  o->type = OP_WAIT;
  o->ev = e;
  o->seq = ev_recorded (e);
  e->refs++;
  enqueue_locked (s, o);
  pthread_mutex_unlock (&G);
  return cudaSuccess;
}

/* ----------------------------------------------------------- copies */

/* G held. Whether the calling thread's device may not access @a as @bit
 * asks (1 read, 2 write): a cuMemMap mapping without that access for it
 * (a GPU's MMU faults: CUDA_ERROR_ILLEGAL_ADDRESS, and the context is
 * unusable from then on). Counted in vmm.faults. */
static int
vmm_denies (const struct alloc *a, const void *p, size_t len, unsigned bit)
{
  int dev = current_device >= 0 && current_device < MAX_DEVICES ?
      current_device : 0;
  size_t covered = (size_t) (a->dev + a->bytes - (const char *) p);

  if (!a->vmm)
    return 0;
  /* every mapping the range touches (find_alloc checked they follow) */
  while (a && (a->access[dev] & bit)) {
    if (covered >= len)
      return 0;
    if ((a = next_mapping (a)))
      covered += a->bytes;
  }
  ctr.vmm_faults++;
  return 1;
}

/* G held. Whether [p, p + len) overlaps a reservation. */
static int
in_reserved_locked (const void *p, size_t len)
{
  const char *c = p;

  for (int i = 0; i < n_reserved; i++)
    if (c < reserved[i].base + reserved[i].size && reserved[i].base < c + len)
      return 1;
  return 0;
}

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
  /* a side in a reservation but in no mapping: a hole of device address
   * space, not host memory (touching it from the host would fault) */
  if ((!dst_dev && in_reserved_locked (dst, dspan)) ||
      (!src_dev && in_reserved_locked (src, sspan)))
    return cudaErrorInvalidValue;
  /* not used by pinnedflow: refused through cudart; the driver's copies
   * (cuMemcpy2D with two host sides) do it */
  if (kind == H2H && !driver_call)
    return cudaErrorInvalidMemcpyDirection;
  o->h2h = kind == H2H;
  o->dir = kind;

  o->dpitch = dpitch;
  o->spitch = spitch;
  o->width = width;
  o->height = height;
  *pinned = 1;
  if (dst_dev) {
    if (!(a = find_alloc (dst, dspan)))
      return cudaErrorInvalidValue;
    if (vmm_denies (a, dst, dspan, 2))
      o->fail_err = cudaErrorIllegalAddress, o->sticky = 1;
    o->dst = a->view + ((const char *) dst - a->dev);
  } else {
    if (!(r = find_pinning_reg (dst, dspan)))
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
    if (vmm_denies (a, src, sspan, 1))
      o->fail_err = cudaErrorIllegalAddress, o->sticky = 1;
    o->src = a->view + ((const char *) src - a->dev);
  } else {
    if (!find_pinning_reg (src, sspan))
      *pinned = 0;
    o->src = src;
    o->host_lo = src;
    o->host_hi = (const char *) src + sspan;
  }
  return cudaSuccess;
}

PFEMU_CORE cudaError_t
pfemu_core_Memcpy2DAsync (void *dst, size_t dpitch, const void *src,
    size_t spitch, size_t width, size_t height, int kind, void *stream)
{
  struct stream *s = NULL;
  struct op *o;
  cudaError_t res;
  int pinned;

  o = calloc (1, sizeof *o);
  o->type = OP_COPY;
  /* An asynchronous injection: the call succeeds, the copy faults when its
   * turn comes and the stream reports it at its next sync point. */
  o->fail_err = async_fail;
  o->sticky = async_sticky;
  async_fail = cudaSuccess;
  stream = STREAM_HANDLE (stream);
  pthread_mutex_lock (&G);
  if (stream && !(s = find_stream_locked (stream))) {
    res = cudaErrorInvalidResourceHandle;
    goto fail;
  }
  res = resolve_copy (o, dst, dpitch, src, spitch, width, height, kind,
      &pinned);
  if (res != cudaSuccess)
    goto fail;
  ctr.dir_copies[o->dir & 3]++;
  ctr.dir_bytes[o->dir & 3] += (long) (o->width * o->height);
  if (o->h2h)
    ctr.copies_h2h++;
  else if (!o->host_lo)
    ctr.copies_d2d++;
  else if (pinned)
    ctr.copies_pinned++;
  else
    ctr.copies_pageable++;
  if (!pinned) {
    /* Pageable: staged, done before returning. */
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
  if (!s) {
    /* The legacy default stream: after the blocking streams' work, queued
     * behind what it has, landing when something waits for it. */
    drain_blocking_locked ();
    s = legacy_locked ();
  }
  enqueue_locked (s, o);
  pthread_mutex_unlock (&G);
  return cudaSuccess;

fail:
  pthread_mutex_unlock (&G);
  free (o);
  return res;
}

PFEMU_CORE cudaError_t
pfemu_core_Memcpy2D (void *dst, size_t dpitch, const void *src, size_t spitch,
    size_t width, size_t height, int kind)
{
  struct op o = { 0 };
  cudaError_t res;
  int pinned;

  pthread_mutex_lock (&G);
  res = resolve_copy (&o, dst, dpitch, src, spitch, width, height, kind,
      &pinned);
  if (res != cudaSuccess) {
    pthread_mutex_unlock (&G);
    return res;
  }
  if (o.fail_err) {
    /* a mapping's access flags refuse it: reported by the call itself */
    sticky_error = o.fail_err;
    pthread_mutex_unlock (&G);
    return o.fail_err;
  }
  ctr.copies_sync++;
  ctr.dir_copies[o.dir & 3]++;
  ctr.dir_bytes[o.dir & 3] += (long) (o.width * o.height);
  /* On the legacy default stream: after the blocking streams' work (not
   * the non-blocking ones'). */
  drain_blocking_locked ();
  if (o.h2h)
    ctr.copies_h2h++;
  if (o.host_lo && o.src == o.host_lo && !pinned && !o.h2h) {
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

/* cuMemsetD2D8/16/32 (and Async): after the stream's work (the legacy
 * stream's and the blocking streams' for NULL), done before returning. */
PFEMU_CORE int
pfemu_core_Memset2D (void *dst, size_t pitch, unsigned int value,
    int element_size, size_t width, size_t height, void *stream, int async)
{
  struct stream *s = NULL;
  struct alloc *a;
  size_t bytes = width * (size_t) element_size;
  uint16_t v16 = (uint16_t) value;
  char *view;

  if (element_size != 1 && element_size != 2 && element_size != 4)
    return cudaErrorInvalidValue;
  if (width == 0 || height == 0)
    return cudaSuccess;
  if (!dst || bytes > pitch)
    return cudaErrorInvalidValue;
  stream = STREAM_HANDLE (stream);
  pthread_mutex_lock (&G);
  if (stream && !(s = find_stream_locked (stream))) {
    pthread_mutex_unlock (&G);
    return cudaErrorInvalidResourceHandle;
  }
  if (!(a = find_alloc (dst, pitch * (height - 1) + bytes))) {
    pthread_mutex_unlock (&G);
    return cudaErrorInvalidValue;
  }
  if (vmm_denies (a, dst, pitch * (height - 1) + bytes, 2)) {
    sticky_error = cudaErrorIllegalAddress;
    pthread_mutex_unlock (&G);
    return cudaErrorIllegalAddress;
  }
  view = a->view + ((const char *) dst - a->dev);
  if (s) {
    drain_locked (s);
  } else {
    drain_blocking_locked ();
    drain_locked (legacy_locked ());
  }
  (void) async;                 /* both variants are done before returning */
  pthread_mutex_unlock (&G);
  for (size_t row = 0; row < height; row++) {
    char *p = view + row * pitch;
    for (size_t x = 0; x < width; x++) {
      if (element_size == 1)
        p[x] = (char) value;
      else if (element_size == 2)
        memcpy (p + 2 * x, &v16, 2);
      else
        memcpy (p + 4 * x, &value, 4);
    }
  }
  return cudaSuccess;
}

PFEMU_CORE int
pfemu_core_PointerMemoryType (const void *ptr)
{
  int t = 0;

  pthread_mutex_lock (&G);
  if (is_device_pointer (ptr))
    t = 2;
  else if (find_reg (ptr, 1))
    t = 1;
  pthread_mutex_unlock (&G);
  return t;
}

PFEMU_CORE int
pfemu_core_PointerInfo (const void *ptr, struct pfemu_core_ptr *out)
{
  const char *c = ptr;
  int dev, alive, found = 0;
  struct reg *r;

  memset (out, 0, sizeof *out);
  pthread_mutex_lock (&G);
  check_generation ();
  dev = current_device >= 0 && current_device < MAX_DEVICES ?
      current_device : -1;
  for (struct alloc * a = allocs; a && !found; a = a->next) {
    if (c < a->dev || c >= a->dev + a->size)
      continue;
    found = 1;
    out->type = 2;
    out->device = a->device;
    out->ctx = a->ctx;
    out->base = a->dev;
    out->size = a->bytes;
    out->kind = a->vmm ? PFEMU_PTR_MAPPING : a->ipc ? PFEMU_PTR_IPC :
        PFEMU_PTR_ALLOC;
    out->handle_types = a->handle_types;
    out->id = a->id;
    if (a->vmm)
      out->access = dev >= 0 ? a->access[dev] : 0;
    else
      out->access = dev == a->device ? 3 : 0;
  }
  if (!found && (r = find_reg (ptr, 1))) {
    found = 1;
    out->type = 1;
    out->ctx = r->ctx;
    out->device = r->ctx ? handle_device_locked (r->ctx, &alive) : 0;
    if (out->device < 0)
      out->device = 0;
    out->base = r->base;
    out->size = r->size;
    out->kind = PFEMU_PTR_HOST;
    out->access = 3;
  }
  pthread_mutex_unlock (&G);
  return found ? cudaSuccess : cudaErrorInvalidValue;
}

/* ------------------------------------------------ legacy IPC hooks */

PFEMU_CORE int
pfemu_core_IpcExport (const void *ptr, int *fd, size_t *size, size_t *bytes,
    int *device)
{
  const char *c = ptr;
  int res = cudaErrorInvalidValue;

  pthread_mutex_lock (&G);
  for (struct alloc * a = allocs; a; a = a->next) {
    if (c < a->dev || c >= a->dev + a->size)
      continue;
    /* only what cuMemAlloc made here, and was made with its memfd kept */
    if (!a->vmm && !a->ipc && a->fd >= 0) {
      *fd = a->fd;
      *size = a->size;
      *bytes = a->bytes;
      *device = a->device;
      res = cudaSuccess;
    }
    break;
  }
  pthread_mutex_unlock (&G);
  return res;
}

PFEMU_CORE int
pfemu_core_IpcOpen (int fd, size_t size, size_t bytes, int device, void **va)
{
  struct alloc *a = calloc (1, sizeof *a);

  if (!a)
    return cudaErrorMemoryAllocation;
  a->dev = mmap (NULL, size, PROT_NONE, MAP_SHARED, fd, 0);
  a->view = mmap (NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (a->dev == MAP_FAILED || a->view == MAP_FAILED) {
    if (a->dev != MAP_FAILED)
      munmap (a->dev, size);
    if (a->view != MAP_FAILED)
      munmap (a->view, size);
    free (a);
    return cudaErrorMemoryAllocation;
  }
  a->size = size;
  a->bytes = bytes;
  a->ipc = 1;
  a->fd = -1;
  a->device = device;
  a->ctx = cur_ctx ();
  pthread_mutex_lock (&G);
  a->id = ++alloc_ids;
  a->next = allocs;
  allocs = a;
  pthread_mutex_unlock (&G);
  *va = a->dev;
  return cudaSuccess;
}

PFEMU_CORE int
pfemu_core_IpcClose (void *va)
{
  struct alloc **l, *a = NULL;

  pthread_mutex_lock (&G);
  for (l = &allocs; *l; l = &(*l)->next) {
    if ((*l)->dev == va && (*l)->ipc) {
      a = *l;
      *l = a->next;
      break;
    }
  }
  /* the copies still queued on it fault, as after cuMemFree */
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

PFEMU_CORE int
pfemu_core_IpcEventExport (void *event, int *fd)
{
  struct ev_shared *sh;
  struct event *e;
  int res = cudaErrorInvalidValue, f = -1;

  pthread_mutex_lock (&G);
  /* CU_EVENT_INTERPROCESS and CU_EVENT_DISABLE_TIMING, as the driver
   * requires; not an imported one */
  if (!(e = find_event_locked (event)) || (e->flags & 0x6) != 0x6 ||
      e->imported)
    goto out;
  if (!e->sh) {
    res = cudaErrorMemoryAllocation;
    if ((f = memfd_create ("pfemu-ipc-event", MFD_CLOEXEC)) < 0 ||
        ftruncate (f, 4096) < 0)
      goto out;
    sh = mmap (NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
    if (sh == MAP_FAILED)
      goto out;
    memcpy (sh->magic, EV_SHARED_MAGIC, sizeof sh->magic);
    sh->recorded = e->recorded;
    sh->completed = e->completed;
    sh->error = e->error;
    e->sh = sh;
    e->sh_fd = f;
    f = -1;
  }
  *fd = e->sh_fd;
  res = cudaSuccess;
out:
  pthread_mutex_unlock (&G);
  if (f >= 0)
    close (f);
  return res;
}

PFEMU_CORE int
pfemu_core_IpcEventOpen (int fd, void **event)
{
  struct ev_shared *sh;
  struct event *e;

  sh = mmap (NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (sh == MAP_FAILED)
    return cudaErrorInvalidValue;
  if (memcmp (sh->magic, EV_SHARED_MAGIC, sizeof sh->magic) != 0 ||
      !(e = calloc (1, sizeof *e))) {
    munmap (sh, sizeof *sh);
    return cudaErrorInvalidValue;
  }
  e->sh = sh;
  e->sh_fd = -1;
  e->imported = 1;
  e->refs = 1;
  e->alive = 1;
  e->device = current_device;
  e->ctx = cur_ctx ();
  e->flags = 0x6;               /* it behaves as one made with DISABLE_TIMING */
  pthread_mutex_lock (&G);
  e->next = events;
  events = e;
  pthread_mutex_unlock (&G);
  *event = e;
  return cudaSuccess;
}

/* ---------------------------------------------- virtual memory hooks */

PFEMU_CORE int
pfemu_core_VmmMap (void *va, void *view, size_t size, int device,
    int handle_types)
{
  struct alloc *a;

  if (!va || !view || size == 0 || device < 0 || device >= MAX_DEVICES)
    return cudaErrorInvalidValue;
  a = calloc (1, sizeof *a);
  if (!a)
    return cudaErrorMemoryAllocation;
  a->dev = va;
  a->view = view;
  a->size = a->bytes = size;
  a->vmm = 1;
  a->device = device;
  a->handle_types = handle_types;
  a->fd = -1;
  /* a mapping belongs to no context (CU_POINTER_ATTRIBUTE_CONTEXT: NULL) */
  a->ctx = NULL;
  pthread_mutex_lock (&G);
  a->id = ++alloc_ids;
  a->next = allocs;
  allocs = a;
  pthread_mutex_unlock (&G);
  return cudaSuccess;
}

PFEMU_CORE int
pfemu_core_VmmUnmap (void *va)
{
  struct alloc **l, *a = NULL;

  pthread_mutex_lock (&G);
  for (l = &allocs; *l; l = &(*l)->next) {
    if ((*l)->dev == va && (*l)->vmm) {
      a = *l;
      *l = a->next;
      break;
    }
  }
  if (a && fault_pending_locked (a->view, a->view + a->size) > 0)
    ctr.free_pending++;
  pthread_mutex_unlock (&G);
  free (a);
  return a ? cudaSuccess : cudaErrorInvalidValue;
}

PFEMU_CORE int
pfemu_core_VmmSetAccess (void *va, int device, unsigned access)
{
  int res = cudaErrorInvalidValue;

  if (device < 0 || device >= MAX_DEVICES)
    return cudaErrorInvalidDevice;
  pthread_mutex_lock (&G);
  for (struct alloc * a = allocs; a; a = a->next) {
    if (a->dev == va && a->vmm) {
      a->access[device] = access;
      res = cudaSuccess;
      break;
    }
  }
  pthread_mutex_unlock (&G);
  return res;
}

PFEMU_CORE void
pfemu_core_VmmReserved (void *base, size_t size, int add)
{
  pthread_mutex_lock (&G);
  if (add && n_reserved < MAX_RESERVED) {
    reserved[n_reserved].base = base;
    reserved[n_reserved].size = size;
    n_reserved++;
  } else if (!add) {
    for (int i = 0; i < n_reserved; i++) {
      if (reserved[i].base == base) {
        reserved[i] = reserved[--n_reserved];
        break;
      }
    }
  }
  pthread_mutex_unlock (&G);
}

PFEMU_CORE void
pfemu_core_VmmCount (int handles, int reservations, long bytes)
{
  pthread_mutex_lock (&G);
  device_bytes_add_locked (bytes);
  vmm_handles += handles;
  vmm_reservations += reservations;
  pthread_mutex_unlock (&G);
}

/* ------------------------------------------------------ late readers */

/* A consumer's kernel that reads device memory late (pfemu_stream_read):
 * what a GPU does when the consumer's stream is busy, so that the reads
 * of frame N happen while frame N+1 is being uploaded. Counted under G
 * (zeroed by pfemu_reset()). */
static struct
{
  long reads, overwritten, faulted;
} rd;

static void
read_rows (char *dst, size_t dpitch, const char *src, size_t spitch,
    size_t width, size_t height)
{
  for (size_t row = 0; row < height; row++)
    memcpy (dst + row * dpitch, src + row * spitch, width);
}

/* On the stream's worker, without G: the bytes when the reader's turn
 * came (after every wait queued before it), then, @late_us later, the
 * bytes it hands back; a difference means the memory was written while a
 * reader queued before that write was still running. */
static void
run_read (struct op *o)
{
  size_t n = o->width * o->height;
  char *first = malloc (n ? n : 1);
  int running;

  pthread_mutex_lock (&G);
  running = o->running = !o->fail_err && first != NULL;
  pthread_mutex_unlock (&G);
  if (running) {
    read_rows (first, o->width, o->src, o->spitch, o->width, o->height);
    sleep_us (o->late_us);
    read_rows (o->dst, o->dpitch, o->src, o->spitch, o->width, o->height);
  }
  pthread_mutex_lock (&G);
  if (running) {
    rd.reads++;
    for (size_t row = 0; row < o->height; row++)
      if (memcmp (first + row * o->width, o->dst + row * o->dpitch,
              o->width) != 0) {
        rd.overwritten++;
        break;
      }
  } else {
    rd.faulted++;
  }
  pthread_mutex_unlock (&G);
  free (first);
}

/* Queues a reader of @height rows of @width bytes at @dev (@pitch apart)
 * on @stream (a live stream; NULL, 1 or 2: the legacy stream, as
 * STREAM_HANDLE maps cudaStreamLegacy and cudaStreamPerThread): when its turn
 * comes it runs @late_us, then leaves the rows it read at the end in
 * @dst (packed). @dst is valid once the stream was synchronised. Counters
 * "reads" (readers run), "reads.overwritten" (readers whose memory
 * changed while they ran: written too early by a stream not ordered after
 * them), "reads.faulted" (its memory was freed before it ran: the stream
 * reports cudaErrorIllegalAddress). */
EXPORT int
pfemu_stream_read (void *stream, const void *dev, size_t pitch, size_t width,
    size_t height, void *dst, long late_us)
{
  struct stream *s;
  struct alloc *a;
  struct op *o;

  if (!dev || !dst || width == 0 || height == 0 || width > pitch || late_us < 0)
    return cudaErrorInvalidValue;
  stream = STREAM_HANDLE (stream);
  pthread_mutex_lock (&G);
  s = stream ? find_stream_locked (stream) : legacy_locked ();
  if (!s) {
    pthread_mutex_unlock (&G);
    return cudaErrorInvalidResourceHandle;
  }
  if (!(a = find_alloc (dev, pitch * (height - 1) + width))) {
    pthread_mutex_unlock (&G);
    return cudaErrorInvalidValue;
  }
  o = calloc (1, sizeof *o);
  o->type = OP_READ;
  /* a kernel reading a mapping its device may not read: the MMU fault */
  if (vmm_denies (a, dev, pitch * (height - 1) + width, 1)) {
    o->fail_err = cudaErrorIllegalAddress;
    o->sticky = 1;
  }
  o->src = a->view + ((const char *) dev - a->dev);
  o->spitch = pitch;
  o->dst = dst;
  o->dpitch = width;
  o->width = width;
  o->height = height;
  o->late_us = late_us;
  enqueue_locked (s, o);
  pthread_mutex_unlock (&G);
  return cudaSuccess;
}

/* ----------------------------------------------------------- queries */

/* ------------------------------------------------------ last error */

/* Every cudart call that returns an error leaves it in the calling
 * thread's last-error slot, the latest one replacing an earlier one:
 * cudaErrorNotReady from cudaEventQuery / cudaStreamQuery too (as upstream
 * reports of the real runtime say, and why PyTorch calls cudaGetLastError
 * after such queries: a library that leaves its "not ready" there fails
 * the application's next check). cudaGetLastError returns and clears it,
 * cudaPeekAtLastError returns it; a sticky error cannot be cleared. */
static __thread cudaError_t last_error;
/* Threads whose last-error slot holds an error nobody has read. */
static long slots_set;

static cudaError_t
set_last (cudaError_t e)
{
  if (e == cudaSuccess)
    e = release_sticky;
  release_sticky = cudaSuccess;
  if (e != cudaSuccess && last_error == cudaSuccess)
    __atomic_add_fetch (&slots_set, 1, __ATOMIC_RELAXED);
  if (e != cudaSuccess)
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
  return set_last (pfemu_core_RuntimeGetVersion (version));
}

EXPORT cudaError_t
cudaDriverGetVersion (int *version)
{
  return set_last (pfemu_core_DriverGetVersion (version));
}

EXPORT cudaError_t
cudaGetDeviceCount (int *count)
{
  RT_CALL ("cudaGetDeviceCount", pfemu_core_GetDeviceCount (count));
}

EXPORT cudaError_t
cudaSetDevice (int device)
{
  RT_CALL ("cudaSetDevice", pfemu_core_SetDevice (device));
}

EXPORT cudaError_t
cudaGetDevice (int *device)
{
  RT_CALL ("cudaGetDevice", pfemu_core_GetDevice (device));
}

EXPORT cudaError_t
cudaDeviceGetAttribute (int *value, int attr, int device)
{
  RT_CALL ("cudaDeviceGetAttribute", pfemu_core_DeviceGetAttribute (value, attr,
          device));
}

EXPORT cudaError_t
cudaMallocPitch (void **dev_ptr, size_t *pitch, size_t width, size_t height)
{
  RT_CALL ("cudaMallocPitch", pfemu_core_MallocPitch (dev_ptr, pitch, width,
          height));
}

EXPORT cudaError_t
cudaFree (void *dev_ptr)
{
  RT_CALL ("cudaFree", pfemu_core_Free (dev_ptr));
}

EXPORT cudaError_t
cudaHostRegister (void *ptr, size_t size, unsigned int flags)
{
  RT_CALL ("cudaHostRegister", pfemu_core_HostRegister (ptr, size, flags));
}

EXPORT cudaError_t
cudaHostUnregister (void *ptr)
{
  RT_CALL ("cudaHostUnregister", pfemu_core_HostUnregister (ptr));
}

EXPORT cudaError_t
cudaStreamCreateWithFlags (void **stream, unsigned int flags)
{
  RT_CALL ("cudaStreamCreateWithFlags",
      pfemu_core_StreamCreateWithFlags (stream, flags));
}

EXPORT cudaError_t
cudaStreamDestroy (void *stream)
{
  RT_CALL ("cudaStreamDestroy", pfemu_core_StreamDestroy (stream));
}

EXPORT cudaError_t
cudaStreamSynchronize (void *stream)
{
  RT_CALL ("cudaStreamSynchronize", pfemu_core_StreamSynchronize (stream));
}

EXPORT cudaError_t
cudaStreamWaitEvent (void *stream, void *event, unsigned int flags)
{
  RT_CALL ("cudaStreamWaitEvent", pfemu_core_StreamWaitEvent (stream, event,
          flags));
}

EXPORT cudaError_t
cudaEventCreateWithFlags (void **event, unsigned int flags)
{
  RT_CALL ("cudaEventCreateWithFlags", pfemu_core_EventCreateWithFlags (event,
          flags));
}

EXPORT cudaError_t
cudaEventDestroy (void *event)
{
  RT_CALL ("cudaEventDestroy", pfemu_core_EventDestroy (event));
}

EXPORT cudaError_t
cudaEventRecord (void *event, void *stream)
{
  RT_CALL ("cudaEventRecord", pfemu_core_EventRecord (event, stream));
}

EXPORT cudaError_t
cudaEventQuery (void *event)
{
  RT_CALL ("cudaEventQuery", pfemu_core_EventQuery (event));
}

EXPORT cudaError_t
cudaStreamQuery (void *stream)
{
  RT_CALL ("cudaStreamQuery", pfemu_core_StreamQuery (stream));
}

/* cudaLaunchHostFunc: @fn (@data) runs on the stream's worker in stream
 * order (a host function that sleeps delays the work queued after it, as
 * on a GPU); it must make no CUDA call. */
static cudaError_t
launch_host_func (void *stream, void (*fn) (void *), void *data)
{
  struct stream *s;
  struct op *o;

  if (!fn)
    return cudaErrorInvalidValue;
  stream = STREAM_HANDLE (stream);
  pthread_mutex_lock (&G);
  s = stream ? find_stream_locked (stream) : NULL;
  if (stream && !s) {
    pthread_mutex_unlock (&G);
    return cudaErrorInvalidResourceHandle;
  }
  if (!s) {
    /* the legacy stream: after the blocking streams' work */
    drain_blocking_locked ();
    s = legacy_locked ();
  }
  o = calloc (1, sizeof *o);
  o->type = OP_HOST;
  o->host_fn = fn;
  o->host_data = data;
  enqueue_locked (s, o);
  pthread_mutex_unlock (&G);
  return cudaSuccess;
}

EXPORT cudaError_t
cudaLaunchHostFunc (void *stream, void (*fn) (void *), void *data)
{
  RT_CALL ("cudaLaunchHostFunc", launch_host_func (stream, fn, data));
}

EXPORT cudaError_t
cudaEventSynchronize (void *event)
{
  RT_CALL ("cudaEventSynchronize", pfemu_core_EventSynchronize (event));
}

EXPORT cudaError_t
cudaMemcpy2DAsync (void *dst, size_t dpitch, const void *src,
    size_t spitch, size_t width, size_t height, int kind, void *stream)
{
  RT_CALL ("cudaMemcpy2DAsync", pfemu_core_Memcpy2DAsync (dst, dpitch, src,
          spitch, width, height, kind, stream));
}

EXPORT cudaError_t
cudaMemcpy2D (void *dst, size_t dpitch, const void *src,
    size_t spitch, size_t width, size_t height, int kind)
{
  RT_CALL ("cudaMemcpy2D", pfemu_core_Memcpy2D (dst, dpitch, src, spitch, width,
          height, kind));
}

EXPORT long
pfemu_query (const char *name)
{
  long v = -1;

  pthread_mutex_lock (&G);
#define C(str, val) if (strcmp (name, str) == 0) v = (val)
  C ("live.registrations", count_list_regs (0));
  C ("live.allocations", count_list_allocs ());
  C ("live.vmm.mappings", count_list_vmm_maps ());
  C ("live.ipc.mappings", count_list_ipc_maps ());
  C ("copies.htod", ctr.dir_copies[1]);
  C ("copies.dtoh", ctr.dir_copies[2]);
  C ("copies.dtod", ctr.dir_copies[3]);
  C ("bytes.htod", ctr.dir_bytes[1]);
  C ("bytes.dtoh", ctr.dir_bytes[2]);
  C ("bytes.dtod", ctr.dir_bytes[3]);
  C ("live.device.bytes", device_bytes);
  C ("device.bytes.peak", device_bytes_peak);
  C ("live.vmm.handles", vmm_handles);
  C ("live.vmm.reservations", vmm_reservations);
  C ("vmm.faults", ctr.vmm_faults);
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
  C ("streams.blocking.runtime", ctr.streams_blocking_runtime);
  C ("pending.max", ctr.pending_max);
  C ("unregister.pending", ctr.unregister_pending);
  C ("injected", ctr.injected);
  C ("events.recorded", ctr.events_recorded);
  C ("stream.waits", ctr.stream_waits);
  C ("reads", rd.reads);
  C ("reads.overwritten", rd.overwritten);
  C ("reads.faulted", rd.faulted);
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
  C ("contexts.created", ctr.ctx_created);
  C ("contexts.destroyed", ctr.ctx_destroyed);
  C ("live.contexts", count_list_contexts ());
  C ("primary.retains", ctr.primary_retains);
  C ("primary.releases", ctr.primary_releases);
  C ("primary.refs.device0", primary_refs[0]);
  C ("primary.refs.device1", primary_refs[1]);
  C ("driver.inits", ctr.driver_inits);
  C ("driver.initialized", driver_initialized);
  C ("forked", forked_after_init);
  C ("fork.refused", __atomic_load_n (&fork_refused, __ATOMIC_RELAXED));
  C ("stream.syncs", ctr.stream_syncs);
  C ("stream.syncs.legacy", ctr.stream_syncs_legacy);
  C ("host.allocations", ctr.host_allocs);
  C ("live.host.allocations", count_list_regs (1));
  C ("copies.h2h", ctr.copies_h2h);
  C ("registrations.dropped", ctr.regs_dropped);
  C ("events.cross_context", ctr.cross_context_records);
  C ("contexts.refused", ctr.exclusive_refused);
  C ("stream.syncs.spinning", ctr.stream_syncs_spinning);
  C ("syncs.spinning", ctr.stream_syncs_spinning + ctr.ctx_syncs_spinning +
      ctr.event_syncs_spinning);
  if (v == -1 && strncmp (name, "calls.cu", 8) == 0) {
    /* calls.<function>: calls made to it (either API), 0 if none */
    v = 0;
    for (int i = 0; i < n_calls; i++)
      if (strcmp (calls[i].name, name + 6) == 0)
        v = calls[i].calls;
  }
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
  memset (&rd, 0, sizeof rd);
  memset (primary_alive, 0, sizeof primary_alive);
  memset (primary_refs, 0, sizeof primary_refs);
  memset (rt_uses, 0, sizeof rt_uses);
  for (struct stream * s = streams; s; s = s->next)
    s->syncs = 0;
  __atomic_add_fetch (&generation, 1, __ATOMIC_RELAXED);
  sticky_error = cudaSuccess;
  slots_set = 0;
  pthread_mutex_unlock (&G);
}

EXPORT long
pfemu_stream_syncs (void *stream)
{
  long v = -1;
  struct stream *s;

  pthread_mutex_lock (&G);
  if (stream == NULL)
    v = ctr.stream_syncs_legacy;
  else if ((s = find_stream_locked (stream)) != NULL)
    v = s->syncs;
  pthread_mutex_unlock (&G);
  return v;
}

EXPORT long
pfemu_live_total (void)
{
  long n;

  pthread_mutex_lock (&G);
  n = count_list_regs (0) + count_list_allocs () + count_list_streams () +
      count_list_events () + count_list_regs (1) + count_list_vmm_maps () +
      vmm_handles + vmm_reservations + count_list_ipc_maps ();
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
      "%ld stream(s), %ld event(s), %ld page-locked host allocation(s) "
      "alive; %ld created context(s) not destroyed\n", (int) getpid (),
      count_list_regs (0), count_list_allocs (), count_list_streams (),
      count_list_events (), count_list_regs (1), count_list_contexts ());
  if (count_list_vmm_maps () + vmm_handles + vmm_reservations > 0)
    off += snprintf (buf + off, sizeof buf - off,
        "  virtual memory: %ld mapping(s), %ld handle(s), %ld "
        "reservation(s) alive\n", count_list_vmm_maps (), vmm_handles,
        vmm_reservations);
  if (count_list_ipc_maps () > 0)
    off += snprintf (buf + off, sizeof buf - off,
        "  legacy IPC: %ld opened handle(s) not closed\n",
        count_list_ipc_maps ());
  for (struct reg * r = regs; r && off < sizeof buf - 128; r = r->next)
    off += snprintf (buf + off, sizeof buf - off,
        "  %s %p size %zu flags 0x%x\n",
        r->host_alloc ? "host allocation" : "registration", (void *) r->base,
        r->size, r->flags);
  for (struct alloc * a = allocs; a && off < sizeof buf - 128; a = a->next)
    off += snprintf (buf + off, sizeof buf - off,
        "  allocation %p size %zu\n", (void *) a->dev, a->size);
  pthread_mutex_unlock (&G);
  return buf;
}

/* PFEMU_STATS=FILE: at exit, one line appended per process that used the
 * emulated device: its copies by direction and their bytes, the device
 * memory it held at most, the IPC and export calls it made, its CPU time
 * (getrusage) and its command line's first word. For benchmarks
 * (bench/domains/ipc-compare.sh), not tests. */
static void
stats_report (void)
{
  static const char *names[] = {
    "copies.htod", "copies.dtoh", "copies.dtod", "bytes.htod",
    "bytes.dtoh", "bytes.dtod", "device.bytes.peak",
    "calls.cuIpcGetMemHandle", "calls.cuIpcOpenMemHandle",
    "calls.cuIpcCloseMemHandle", "calls.cuMemExportToShareableHandle",
    "calls.cuMemImportFromShareableHandle", "calls.cuMemCreate",
    "calls.cuMemAllocPitch_v2", "calls.cuMemAlloc_v2",
    "calls.cudaMallocPitch",
  };
  const char *path = getenv ("PFEMU_STATS");
  struct rusage ru;
  char exe[64] = "?";
  FILE *f;

  if (!path || !*path || n_calls == 0)
    return;
  if ((f = fopen ("/proc/self/comm", "re"))) {
    if (fgets (exe, sizeof exe, f))
      exe[strcspn (exe, "\n")] = 0;
    fclose (f);
  }
  if (!(f = fopen (path, "ae")))
    return;
  getrusage (RUSAGE_SELF, &ru);
  fprintf (f, "pfemu-stats pid=%d comm=%s cpu.ms=%ld", (int) getpid (), exe,
      (long) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
      (long) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    fprintf (f, " %s=%ld", names[i], pfemu_query (names[i]));
  fputc ('\n', f);
  fclose (f);
}

static void
pfemu_exit_report (void)
{
  const char *path = getenv ("PFEMU_LEAK_REPORT");
  const char *abort_env = getenv ("PFEMU_LEAK_ABORT");
  long live;

  /* a child forked after initialisation could make nothing: what is
   * alive is its parent's, reported by the parent */
  if (forked_after_init)
    return;
  stats_report ();
  live = pfemu_live_total ();
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
