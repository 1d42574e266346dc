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

/* Virtual memory management (cuda.h's CUmem* types and values) */
typedef unsigned long long CUmemGenericAllocationHandle;

enum
{
  CU_MEM_ALLOCATION_TYPE_PINNED = 0x1,
  CU_MEM_LOCATION_TYPE_DEVICE = 0x1,
  CU_MEM_HANDLE_TYPE_NONE = 0x0,
  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 0x1,
  CU_MEM_ACCESS_FLAGS_PROT_NONE = 0x0,
  CU_MEM_ACCESS_FLAGS_PROT_READ = 0x1,
  CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 0x3,
  CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0x0,
  CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 0x1,
};

typedef struct
{
  int type;
  int id;
} CUmemLocation;

typedef struct
{
  int type;                     /* CUmemAllocationType */
  int requestedHandleTypes;     /* CUmemAllocationHandleType */
  CUmemLocation location;
  void *win32HandleMetaData;
  struct
  {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
} CUmemAllocationProp;

typedef struct
{
  CUmemLocation location;
  int flags;                    /* CUmemAccess_flags */
} CUmemAccessDesc;

_Static_assert (sizeof (CUmemAllocationProp) == 32,
    "CUmemAllocationProp layout");
_Static_assert (sizeof (CUmemAccessDesc) == 12, "CUmemAccessDesc layout");

#endif /* __PFEMU_CUDA_H__ */
