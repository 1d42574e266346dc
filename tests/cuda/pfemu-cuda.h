/* pfemu-cuda: the part of cuda.h (the driver API's ABI) that the driver-API
 * stand-in (pfemu-cuda.c, built as libcuda.so.1) and its callers in the tests
 * (test-emu-driver.c) both need, declared once
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Types and values as cuda.h declares them; no function is declared here
 * (callers dlsym() them with their own signatures, as GStreamer does).
 */
#ifndef __PFEMU_CUDA_H__
#define __PFEMU_CUDA_H__

#include <stddef.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUevent;
typedef unsigned long long CUdeviceptr;

enum
{
  CU_MEMORYTYPE_HOST = 1,
  CU_MEMORYTYPE_DEVICE = 2,
  CU_MEMORYTYPE_ARRAY = 3,
  CU_MEMORYTYPE_UNIFIED = 4,
};

/* cuda.h's CUDA_MEMCPY2D (the layout is the ABI) */
typedef struct
{
  size_t srcXInBytes, srcY;
  int srcMemoryType;
  const void *srcHost;
  CUdeviceptr srcDevice;
  void *srcArray;
  size_t srcPitch;
  size_t dstXInBytes, dstY;
  int dstMemoryType;
  void *dstHost;
  CUdeviceptr dstDevice;
  void *dstArray;
  size_t dstPitch;
  size_t WidthInBytes, Height;
} CUDA_MEMCPY2D;

_Static_assert (sizeof (CUDA_MEMCPY2D) == 128, "CUDA_MEMCPY2D layout");

#endif /* __PFEMU_CUDA_H__ */
