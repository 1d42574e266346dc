/* pinnedflow: frames as DLPack tensors, plain C
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * See pf-dlpack.h. One allocation per exported tensor: the managed tensor
 * (legacy or versioned), its shape and strides, and a reference on the
 * frame's pf_hold; the deleter drops the reference and frees the lot.
 *
 * Lifetime: the tensor owns one pf_hold reference from pf_dlpack_export()
 * to its deleter, which runs exactly once (a consumer calls it when its
 * array dies; pf_dlpack_free() or the capsule destructor calls it for a
 * tensor nobody consumed).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <pinnedflow/pf-dlpack.h>

#include "pf-pycapsule-private.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* The DLPack ABI, from the specification (dlpack.h v1.0: DLDevice,
 * DLDataType, DLTensor, DLManagedTensor, DLPackVersion,
 * DLManagedTensorVersioned). Our own names, the specification's layout. */
typedef struct
{
  int32_t device_type;          /* DLDeviceType, an int-sized enum */
  int32_t device_id;
} dl_device;

typedef struct
{
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} dl_data_type;

typedef struct
{
  void *data;
  dl_device device;
  int32_t ndim;
  dl_data_type dtype;
  int64_t *shape;
  int64_t *strides;             /* in elements; NULL means compact row-major */
  uint64_t byte_offset;
} dl_tensor;

typedef struct dl_managed_tensor
{
  dl_tensor dl_tensor;
  void *manager_ctx;
  void (*deleter) (struct dl_managed_tensor * self);
} dl_managed_tensor;

typedef struct
{
  uint32_t major;
  uint32_t minor;
} dl_pack_version;

typedef struct dl_managed_tensor_versioned
{
  dl_pack_version version;
  void *manager_ctx;
  void (*deleter) (struct dl_managed_tensor_versioned * self);
  uint64_t flags;
  dl_tensor dl_tensor;
} dl_managed_tensor_versioned;

#define DL_FLAG_BITMASK_READ_ONLY (UINT64_C (1) << 0)
#define DL_PACK_MAJOR 1
#define DL_PACK_MINOR 0

#if defined(__x86_64__) || defined(__aarch64__)
_Static_assert (sizeof (dl_tensor) == 48, "DLTensor is 48 bytes on LP64");
_Static_assert (sizeof (dl_managed_tensor) == 64,
    "DLManagedTensor is 64 bytes on LP64");
_Static_assert (offsetof (dl_managed_tensor_versioned, dl_tensor) == 32,
    "DLManagedTensorVersioned.dl_tensor at 32 on LP64");
#endif

#ifdef PF_HAVE_DLPACK_H
/* Debian's libdlpack-dev is there: our declarations must match it. */
#include <dlpack/dlpack.h>
_Static_assert (sizeof (DLTensor) == sizeof (dl_tensor), "DLTensor");
_Static_assert (offsetof (DLTensor, byte_offset) ==
    offsetof (dl_tensor, byte_offset), "DLTensor.byte_offset");
_Static_assert (offsetof (DLTensor, dtype) == offsetof (dl_tensor, dtype),
    "DLTensor.dtype");
_Static_assert (offsetof (DLTensor, strides) ==
    offsetof (dl_tensor, strides), "DLTensor.strides");
_Static_assert (sizeof (DLManagedTensor) == sizeof (dl_managed_tensor),
    "DLManagedTensor");
_Static_assert (offsetof (DLManagedTensor, deleter) ==
    offsetof (dl_managed_tensor, deleter), "DLManagedTensor.deleter");
_Static_assert ((int) kDLCPU == (int) PF_DLPACK_CPU &&
    (int) kDLCUDA == (int) PF_DLPACK_CUDA &&
    (int) kDLCUDAHost == (int) PF_DLPACK_CUDA_HOST, "DLDeviceType values");
_Static_assert ((int) kDLUInt == (int) PF_DLPACK_UINT, "DLDataTypeCode values");
#endif

struct export
{
  union
  {
    dl_managed_tensor legacy;
    dl_managed_tensor_versioned versioned;
  } t;
  pf_hold *hold;
  int64_t shape[PF_DLPACK_MAX_DIMS];
  int64_t strides[PF_DLPACK_MAX_DIMS];
};

static void
export_free (struct export *e)
{
  pf_hold_unref (e->hold);
  memset (e, 0, sizeof (*e));   /* a second call reads NULLs, not a hold */
  free (e);
}

static void
delete_legacy (dl_managed_tensor * self)
{
  if (self)
    export_free (self->manager_ctx);
}

static void
delete_versioned (dl_managed_tensor_versioned * self)
{
  if (self)
    export_free (self->manager_ctx);
}

static int
desc_valid (const pf_dlpack_desc * d)
{
  uint32_t i;

  if (d->data == NULL || d->ndim < 1 || d->ndim > PF_DLPACK_MAX_DIMS)
    return 0;
  if (d->device_type != PF_DLPACK_CPU && d->device_type != PF_DLPACK_CUDA &&
      d->device_type != PF_DLPACK_CUDA_HOST)
    return 0;
  if (d->dtype_bits == 0 || d->dtype_bits % 8 || d->dtype_lanes == 0)
    return 0;
  for (i = 0; i < d->ndim; i++)
    if (d->shape[i] < 0)
      return 0;
  return 1;
}

int
pf_dlpack_export (const pf_dlpack_desc * desc, pf_hold * hold,
    unsigned int flags, void **out)
{
  struct export *e;
  dl_tensor *t;

  if (out)
    *out = NULL;
  if (desc == NULL || hold == NULL || out == NULL || !desc_valid (desc))
    return -EINVAL;
  if (flags & ~(PF_DLPACK_VERSIONED | PF_DLPACK_READ_ONLY))
    return -EINVAL;
  e = calloc (1, sizeof (*e));
  if (e == NULL)
    return -ENOMEM;
  memcpy (e->shape, desc->shape, sizeof (e->shape));
  memcpy (e->strides, desc->strides, sizeof (e->strides));
  e->hold = pf_hold_ref (hold);
  if (flags & PF_DLPACK_VERSIONED) {
    e->t.versioned.version.major = DL_PACK_MAJOR;
    e->t.versioned.version.minor = DL_PACK_MINOR;
    e->t.versioned.manager_ctx = e;
    e->t.versioned.deleter = delete_versioned;
    if (flags & PF_DLPACK_READ_ONLY)
      e->t.versioned.flags = DL_FLAG_BITMASK_READ_ONLY;
    t = &e->t.versioned.dl_tensor;
  } else {
    e->t.legacy.manager_ctx = e;
    e->t.legacy.deleter = delete_legacy;
    t = &e->t.legacy.dl_tensor;
  }
  /* byte_offset stays 0: PyTorch 1.13 ignores it, so data is the first
   * element itself (numpy's own exports do the same) */
  t->data = desc->data;
  t->device.device_type = desc->device_type;
  t->device.device_id = desc->device_id;
  t->ndim = (int32_t) desc->ndim;
  t->dtype.code = desc->dtype_code;
  t->dtype.bits = desc->dtype_bits;
  t->dtype.lanes = desc->dtype_lanes;
  t->shape = e->shape;
  t->strides = e->strides;
  *out = &e->t;
  return 0;
}

void
pf_dlpack_free (void *tensor, unsigned int flags)
{
  if (tensor == NULL)
    return;
  if (flags & PF_DLPACK_VERSIONED) {
    dl_managed_tensor_versioned *v = tensor;
    if (v->deleter)
      v->deleter (v);
  } else {
    dl_managed_tensor *m = tensor;
    if (m->deleter)
      m->deleter (m);
  }
}

void
pf_dlpack_capsule_destructor (void *capsule)
{
  /* a consumed capsule is renamed "used_dltensor[_versioned]": its tensor
   * belongs to the consumer, which calls the deleter itself */
  if (pf_pycapsule_is (capsule, "dltensor"))
    pf_dlpack_free (pf_pycapsule_pointer (capsule, "dltensor"), 0);
  else if (pf_pycapsule_is (capsule, "dltensor_versioned"))
    pf_dlpack_free (pf_pycapsule_pointer (capsule, "dltensor_versioned"),
        PF_DLPACK_VERSIONED);
}

/* ------------------------------------------------------------------------ */
/* A received frame as a tensor                                              */
/* ------------------------------------------------------------------------ */

/* uint elements of @bits, dimensions (d0[, d1[, d2]]) of strides (s0...):
 * n of them (the unused ones are ignored) */
static void
set_dims (pf_dlpack_desc * d, uint32_t n, uint8_t bits, int64_t d0,
    int64_t s0, int64_t d1, int64_t s1, int64_t d2, int64_t s2)
{
  d->ndim = n;
  d->shape[0] = d0;
  d->strides[0] = s0;
  d->shape[1] = d1;
  d->strides[1] = s1;
  d->shape[2] = d2;
  d->strides[2] = s2;
  d->dtype_code = PF_DLPACK_UINT;
  d->dtype_bits = bits;
  d->dtype_lanes = 1;
}

int
pf_dlpack_desc_from_frame (const pf_node_frame * frame, int32_t device_type,
    pf_dlpack_desc * desc)
{
  const pf_node_video_layout *lay;
  pf_node_device_info dev;
  const char *fmt;
  uint8_t *base;
  uint64_t off, stride, last;
  uint32_t h, w, c;

  if (frame == NULL || desc == NULL || frame->n_chunks != 1)
    return -EINVAL;
  if (frame->domain == PF_NODE_DOMAIN_DEVICE) {
    /* device memory is lent as kDLCUDA only: never as host memory */
    if (device_type != PF_DLPACK_CUDA ||
        pf_node_frame_get_device (frame, &dev) < 0 || dev.ptr == 0)
      return -EINVAL;
    base = (uint8_t *) (uintptr_t) dev.ptr;
  } else {
    if (device_type != PF_DLPACK_CPU && device_type != PF_DLPACK_CUDA_HOST)
      return -EINVAL;
    if (frame->data == NULL)
      return -EINVAL;
    base = (uint8_t *) frame->data;
    dev.ordinal = 0;
  }
  memset (desc, 0, sizeof (*desc));
  desc->device_type = device_type;
  desc->device_id = dev.ordinal;
  lay = &frame->layout;
  fmt = frame->info.format;
  if (lay->n_planes == 1 && lay->pixel_stride && lay->width && lay->height &&
      lay->plane_stride[0] > 0) {
    h = lay->height;
    w = lay->width;
    c = lay->pixel_stride;
    off = lay->plane_offset[0];
    stride = (uint64_t) lay->plane_stride[0];
    last = off + (uint64_t) (h - 1) * stride + lay->plane_row_bytes[0];
    if (last > frame->size || lay->plane_row_bytes[0] > stride)
      return -ERANGE;
    desc->data = base + off;
    if (strcmp (fmt, "GRAY16_LE") == 0 && stride % 2 == 0) {
      set_dims (desc, 2, 16, h, (int64_t) stride / 2, w, 1, 0, 0);
    } else if (c == 1) {
      set_dims (desc, 2, 8, h, (int64_t) stride, w, 1, 0, 0);
    } else if (strcmp (fmt, "YUY2") == 0 || strcmp (fmt, "UYVY") == 0 ||
        strcmp (fmt, "GRAY16_LE") == 0 || strcmp (fmt, "GRAY16_BE") == 0) {
      set_dims (desc, 2, 8, h, (int64_t) stride, lay->plane_row_bytes[0], 1,
          0, 0);
    } else {
      set_dims (desc, 3, 8, h, (int64_t) stride, w, c, c, 1);
    }
    return 0;
  }
  desc->data = base;
  set_dims (desc, 1, 8, (int64_t) frame->size, 1, 0, 0, 0, 0);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* A device frame as a tensor                                                */
/* ------------------------------------------------------------------------ */

int
pf_dlpack_desc_from_device_frame (const pf_device_frame * frame,
    pf_dlpack_desc * desc)
{
  uint32_t ps, i, widest = 0;
  int64_t rows, pitch;

  if (frame == NULL || desc == NULL || frame->n_planes < 1 ||
      frame->n_planes > PF_MAX_PLANES || frame->data[0] == NULL ||
      frame->pitch == 0 || frame->pitch > INT64_MAX)
    return -EINVAL;
  memset (desc, 0, sizeof (*desc));
  desc->device_type = PF_DLPACK_CUDA;
  desc->device_id = frame->device_id;
  pitch = (int64_t) frame->pitch;
  ps = frame->pixel_stride;
  if (frame->n_planes == 1 && ps && frame->width &&
      (uint64_t) frame->width * ps <= frame->plane_row_bytes[0]) {
    rows = frame->plane_rows[0];
    desc->data = frame->data[0];
    if (strcmp (frame->format, "GRAY16_LE") == 0 && ps == 2 && pitch % 2 == 0)
      set_dims (desc, 2, 16, rows, pitch / 2, frame->width, 1, 0, 0);
    else if (ps == 1)
      set_dims (desc, 2, 8, rows, pitch, frame->width, 1, 0, 0);
    else
      set_dims (desc, 3, 8, rows, pitch, frame->width, ps, ps, 1);
    return 0;
  }
  if (frame->base == NULL || frame->alloc_size < frame->pitch)
    return -EINVAL;
  for (i = 0; i < frame->n_planes; i++)
    if (frame->plane_row_bytes[i] > widest)
      widest = frame->plane_row_bytes[i];
  if (widest == 0 || widest > frame->pitch)
    return -EINVAL;
  desc->data = frame->base;
  set_dims (desc, 2, 8, (int64_t) (frame->alloc_size / frame->pitch), pitch,
      widest, 1, 0, 0);
  return 0;
}

int
pf_dlpack_sync_device_frame (const pf_device_frame * frame, intptr_t stream)
{
  if (frame == NULL || stream == 0 || stream < -1)
    return -EINVAL;
  /* -1: the consumer synchronises itself (and must be done reading when
   * it releases the tensor) */
  if (stream == -1)
    return 0;
  /* 1: cudaStreamLegacy, 2: cudaStreamPerThread, the same handle values
   * in cudart; else a cudaStream_t. The frame is lent to the consumer:
   * naming its stream is the one change made to it. */
  return pf_device_frame_read_on ((pf_device_frame *) frame,
      (pf_cuda_stream) stream, 0);
}
