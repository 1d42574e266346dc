/* The GPU kit's C programs' common part (gpu-kit/devseg.c, domains.c;
 * docs/cuda.md "GPU kit"): the CUDA driver opened with dlopen (no CUDA
 * headers), the failure macros, timers, fd counting.
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Included once, by the program's one source file: everything here is
 * static. The program defines kit_on_fail() (what a failure ends besides
 * this process: its consumer processes) and may set `who` ("producer"
 * until then), the name its lines start with.
 *
 * Threads: the driver entry points are filled once, by cuda_up(), before
 * any thread of the program's own uses them.
 */
#ifndef __GPUKIT_KITCU_H__
#define __GPUKIT_KITCU_H__

#include <dirent.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define ATTR_VMM 102
#define ATTR_POSIX_FD 103

typedef unsigned long long cu_ptr;

static struct
{
  int (*Init) (unsigned int);
  int (*DeviceGet) (int *, int);
  int (*DeviceGetName) (char *, int, int);
  int (*DeviceGetAttribute) (int *, int, int);
  int (*PrimaryCtxRetain) (void **, int);
  int (*CtxSetCurrent) (void *);
  int (*CtxSynchronize) (void);
  int (*MemcpyHtoD) (cu_ptr, const void *, size_t);
  int (*MemcpyDtoH) (void *, cu_ptr, size_t);
  int (*GetErrorName) (int, const char **);
  long (*emu_query) (const char *);     /* the driver stand-in's only */
} cu;

static const char *who = "producer";

/* Defined by the program: kills its other processes (a failure's end). */
static void kit_on_fail (void);

#define FAIL(...) do {                                  \
    printf ("FAIL: %s: ", who);                         \
    printf (__VA_ARGS__);                               \
    printf ("\n");                                      \
    fflush (stdout);                                    \
    kit_on_fail ();                                     \
    _exit (1);                                          \
  } while (0)

#define CHECK(cond, ...) do {                           \
    if (!(cond))                                        \
      FAIL (__VA_ARGS__);                               \
  } while (0)

static const char *
err_name (int err)
{
  const char *n = NULL;

  if (cu.GetErrorName == NULL || cu.GetErrorName (err, &n) != 0 || !n)
    return "CUDA_ERROR_?";
  return n;
}

#define CU(call) do {                                                   \
    int err_ = (call);                                                  \
    CHECK (err_ == 0, "%s failed with %s (%d)", #call, err_name (err_), \
        err_);                                                          \
  } while (0)

static uint64_t
now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static int
count_fds (void)
{
  DIR *d = opendir ("/proc/self/fd");
  struct dirent *e;
  int n = 0;

  if (d == NULL)
    return -1;
  while ((e = readdir (d)) != NULL)
    n += e->d_name[0] != '.';
  closedir (d);
  return n - 1;                 /* the DIR's own */
}

/* libcuda.so.1, device 0's primary context current on this thread. Prints
 * the device (the producer only, @verbose). Returns 0, or 77 (after the
 * "SKIP: PARTIAL" line) when the driver says the device cannot share
 * virtual memory as POSIX fds. */
static int
cuda_up (int verbose)
{
  void *lib = dlopen ("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  void *ctx = NULL;
  char name[256] = "";
  int dev = -1, vmm = -1, posix = -1, err;

  if (lib == NULL) {
    printf ("NO CUDA DEVICE: %s: libcuda.so.1 cannot be opened: %s\n", who,
        dlerror ());
    fflush (stdout);
    kit_on_fail ();
    _exit (1);
  }
#define SYM(f, n) do {                                          \
    *(void **) &cu.f = dlsym (lib, n);                          \
    CHECK (cu.f != NULL, "libcuda.so.1 has no %s", n);          \
  } while (0)
  SYM (Init, "cuInit");
  SYM (DeviceGet, "cuDeviceGet");
  SYM (DeviceGetName, "cuDeviceGetName");
  SYM (DeviceGetAttribute, "cuDeviceGetAttribute");
  SYM (PrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  SYM (CtxSetCurrent, "cuCtxSetCurrent");
  SYM (CtxSynchronize, "cuCtxSynchronize");
  SYM (MemcpyHtoD, "cuMemcpyHtoD_v2");
  SYM (MemcpyDtoH, "cuMemcpyDtoH_v2");
  SYM (GetErrorName, "cuGetErrorName");
#undef SYM
  /* the driver stand-in links the cudart emulator, whose counters are
   * found through it; a real driver has none */
  *(void **) &cu.emu_query = dlsym (lib, "pfemu_query");
  if ((err = cu.Init (0)) != 0) {
    printf ("NO CUDA DEVICE: %s: cuInit failed with %s (%d)\n", who,
        err_name (err), err);
    fflush (stdout);
    kit_on_fail ();
    _exit (1);
  }
  CU (cu.DeviceGet (&dev, 0));
  CU (cu.DeviceGetName (name, sizeof (name), dev));
  CU (cu.DeviceGetAttribute (&vmm, ATTR_VMM, dev));
  CU (cu.DeviceGetAttribute (&posix, ATTR_POSIX_FD, dev));
  if (verbose) {
    printf ("device: %s\n", name);
    printf ("attribute 102 (virtual memory management): %d\n", vmm);
    printf ("attribute 103 (POSIX fd handles): %d\n", posix);
  }
  if (!vmm || !posix) {
    printf ("SKIP: PARTIAL: %s: the driver reports attribute 102 = %d, "
        "103 = %d on %s: no virtual memory shared as POSIX fds here, "
        "device segments cannot run\n", who, vmm, posix, name);
    fflush (stdout);
    return 77;
  }
  CU (cu.PrimaryCtxRetain (&ctx, dev));
  CU (cu.CtxSetCurrent (ctx));
  return 0;
}

#endif /* __GPUKIT_KITCU_H__ */
