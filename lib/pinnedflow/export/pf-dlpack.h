/* pinnedflow: frames as DLPack tensors, plain C
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * DLPack (https://dmlc.github.io/dlpack/latest/) is how numpy, PyTorch,
 * CuPy, JAX and others share a tensor without a copy: the producer hands
 * out a DLManagedTensor (legacy, DLPack < 1.0; Python capsule "dltensor")
 * or a DLManagedTensorVersioned (DLPack >= 1.0; capsule
 * "dltensor_versioned"), and the consumer calls its deleter when done.
 *
 * Here the tensor views a frame in place (a received host frame in the
 * producer's segment, or a device frame) and holds a reference on the
 * frame's pf_hold: the frame goes back to its producer only when the
 * deleter of its last tensor ran (and every other borrower let go).
 *
 * The structs are declared in pf-dlpack.c from the DLPack specification
 * (no dlpack.h needed; where Debian's libdlpack-dev header is there at
 * build time, the declarations are checked against it). The public
 * functions hand them out as void *: a DLManagedTensor * or, with
 * PF_DLPACK_VERSIONED, a DLManagedTensorVersioned *.
 *
 * Threading: any thread; the deleter may run on any thread.
 */
#ifndef __PF_DLPACK_H__
#define __PF_DLPACK_H__

#include <stdint.h>

#include <pinnedflow/pf-api.h>
#include <pinnedflow/pf-hold.h>
#include <pinnedflow/pf-node.h>
#include <pinnedflow/pf-upload.h>

#ifdef __cplusplus
extern "C" {
#endif

/* DLDeviceType values used here (the specification's numbers).
 * Since: 0.1
 */
enum pf_dlpack_device {
  PF_DLPACK_CPU = 1,            /* kDLCPU */
  PF_DLPACK_CUDA = 2,           /* kDLCUDA */
  PF_DLPACK_CUDA_HOST = 3,      /* kDLCUDAHost: pinned, registered host memory */
};

/* DLDataTypeCode values used here.
 * Since: 0.1
 */
enum pf_dlpack_dtype_code {
  PF_DLPACK_INT = 0,
  PF_DLPACK_UINT = 1,
  PF_DLPACK_FLOAT = 2,
};

/* Since: 0.1 */
enum pf_dlpack_flags {
  /* Hand out a DLManagedTensorVersioned (DLPack 1.0) instead of the
   * legacy DLManagedTensor. */
  PF_DLPACK_VERSIONED = 1u << 0,
  /* The consumer must not write (DLPACK_FLAG_BITMASK_READ_ONLY; only a
   * versioned tensor can say so: a legacy one has no flags). */
  PF_DLPACK_READ_ONLY = 1u << 1,
};

#define PF_DLPACK_MAX_DIMS 4

/* What the tensor looks like. Strides count elements, not bytes.
 * Since: 0.1
 */
typedef struct {
  void *data;                   /* first element */
  int32_t device_type;          /* enum pf_dlpack_device */
  int32_t device_id;            /* 0 for host memory */
  uint32_t ndim;                /* 1..PF_DLPACK_MAX_DIMS */
  uint8_t dtype_code;           /* enum pf_dlpack_dtype_code */
  uint8_t dtype_bits;           /* 8, 16, 32 */
  uint16_t dtype_lanes;         /* 1 */
  int64_t shape[PF_DLPACK_MAX_DIMS];
  int64_t strides[PF_DLPACK_MAX_DIMS];
} pf_dlpack_desc;

/**
 * pf_dlpack_desc_from_frame:
 * @device_type: for a host frame PF_DLPACK_CPU, or PF_DLPACK_CUDA_HOST
 *   where the frame's segment is registered with CUDA in this process and
 *   the consumer asked for it (PyTorch and numpy refuse kDLCUDAHost: the
 *   Python binding lends kDLCPU unless __dlpack__(dl_device=(3, 0))); for
 *   a device frame (domain PF_NODE_DOMAIN_DEVICE) PF_DLPACK_CUDA only: the
 *   view is then at the frame's device address, device_id its ordinal
 *
 * The tensor view of a received host frame, shaped as the Python binding's
 * Frame.array(): (height, width, channels) uint8 for packed formats (RGBA,
 * BGRx, RGB...), (height, width) for GRAY8 and (uint16) GRAY16_LE, (height,
 * row bytes) for YUY2, UYVY and GRAY16_BE, else the frame's bytes (1-D
 * uint8, e.g. NV12 or I420: planes at the frame's plane offsets).
 *
 * Returns: 0, or -EINVAL (a frame in several chunks, an unknown device
 * type, a host type for a device frame or PF_DLPACK_CUDA for a host
 * frame), -ERANGE (a layout outside the frame).
 *
 * Since: 0.1
 */
PF_API int pf_dlpack_desc_from_frame (const pf_node_frame * frame,
    int32_t device_type, pf_dlpack_desc * desc);

/**
 * pf_dlpack_desc_from_device_frame:
 *
 * The tensor view (PF_DLPACK_CUDA, the frame's device) of a device frame
 * from pf_uploader_upload(): (rows, width, pixel bytes) uint8 with strides
 * (pitch, pixel bytes, 1) for one packed plane ((rows, width) for one byte
 * per pixel, uint16 for GRAY16_LE), else (allocation rows, widest plane
 * row) uint8 with strides (pitch, 1): every plane at its plane_offset /
 * pitch row.
 *
 * Returns: 0, or -EINVAL.
 *
 * Since: 0.1
 */
PF_API int pf_dlpack_desc_from_device_frame (const pf_device_frame * frame,
    pf_dlpack_desc * desc);

/**
 * pf_dlpack_sync_device_frame:
 * @stream: the consumer's stream as DLPack's __dlpack__(stream=) names it:
 *   -1 no synchronisation, 1 the legacy default stream, 2 the per-thread
 *   default stream, else a cudaStream_t value (0 is refused: ambiguous)
 *
 * DLPack's stream rule for a device frame, both ways
 * (pf_device_frame_read_on()): @stream waits for the frame's event
 * (cudaStreamWaitEvent, on the frame's device), so that work the consumer
 * queues on it reads complete bytes, and it is remembered, so that the
 * buffer is written again only after the work queued on it before the
 * frame's release (the tensor's deleter). The host does not wait. With -1
 * neither happens: the consumer's reads must have completed when it
 * drops the tensor.
 *
 * Returns: 0, -EINVAL (stream 0 or below -1, a released frame), -ENOSPC
 * (too many streams named), -EIO (a CUDA call failed).
 *
 * Since: 0.1
 */
PF_API int pf_dlpack_sync_device_frame (const pf_device_frame * frame,
    intptr_t stream);

/**
 * pf_dlpack_export:
 * @hold: what the tensor keeps alive: a reference is taken, dropped by the
 *   tensor's deleter
 * @flags: #pf_dlpack_flags
 * @out: (out): a DLManagedTensor * (or DLManagedTensorVersioned *), to hand
 *   to a consumer or to give back with pf_dlpack_free()
 *
 * Returns: 0, -EINVAL (a bad description, no hold), -ENOMEM.
 *
 * Since: 0.1
 */
PF_API int pf_dlpack_export (const pf_dlpack_desc * desc, pf_hold * hold,
    unsigned int flags, void **out);

/**
 * pf_dlpack_free:
 * @flags: the flags it was exported with (only PF_DLPACK_VERSIONED matters)
 *
 * Calls the tensor's deleter: for a tensor that never reached a consumer.
 * NULL is ignored.
 *
 * Since: 0.1
 */
PF_API void pf_dlpack_free (void *tensor, unsigned int flags);

/**
 * pf_dlpack_capsule_destructor:
 * @capsule: a PyCapsule (PyObject *)
 *
 * A PyCapsule_Destructor for capsules named "dltensor" or
 * "dltensor_versioned" around a tensor from pf_dlpack_export(): the DLPack
 * rule is that a capsule never consumed (still so named; a consumer
 * renames it "used_dltensor") calls the deleter when it dies. Runs with
 * the GIL held (capsules die there); the interpreter's PyCapsule_IsValid and
 * PyCapsule_GetPointer are looked up in the process (dlsym, as ctypes'
 * pythonapi does). Outside Python it is never called.
 *
 * Since: 0.1
 */
PF_API void pf_dlpack_capsule_destructor (void *capsule);

#ifdef __cplusplus
}
#endif
#endif /* __PF_DLPACK_H__ */
