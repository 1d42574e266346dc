/* pinnedflow: frames through the Arrow C Device Data Interface, plain C
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Apache Arrow's C Data Interface and C Device Data Interface
 * (https://arrow.apache.org/docs/format/CDataInterface.html,
 * .../CDeviceDataInterface.html) are ABIs: the structs below are declared
 * from the specification, guarded by its macros so that another copy of
 * them (nanoarrow's, Arrow's own) may come first. No Arrow library is
 * linked.
 *
 * A frame is exported as ONE uint8 array (format "C") whose elements are
 * the frame's bytes, in place: length = the frame's size, no nulls
 * (validity buffer NULL), buffer 1 = the first byte. One array for the whole
 * frame (not one element per row) because planes differ in row length
 * (NV12, I420) and padding between rows is part of the layout. The layout
 * rides in the schema's metadata (keys below, decimal ASCII values), so a
 * consumer can cut planes and rows without asking pinnedflow:
 *   pinnedflow.format        "RGBA", "NV12", ... ("" when unknown)
 *   pinnedflow.width         pixels
 *   pinnedflow.height        pixels
 *   pinnedflow.n_planes      planes (0: no known layout)
 *   pinnedflow.plane_offsets "o0,o1,..." bytes from the array's first byte
 *   pinnedflow.plane_strides "s0,s1,..." bytes from row to row
 *   pinnedflow.plane_rows    "r0,r1,..." rows of each plane
 *   pinnedflow.plane_row_bytes "b0,b1,..." bytes of pixels in each row
 *   pinnedflow.seq           the producer's frame number
 *   pinnedflow.pts           ns, absent when the frame has none
 *
 * Device type: ARROW_DEVICE_CPU for a host frame (what the Python binding
 * exports, registered or not), ARROW_DEVICE_CUDA_HOST where the caller
 * chooses it for a host frame whose segment is registered with CUDA in
 * this process (pinned: cudaMemcpyAsync from it is a DMA; a consumer built
 * without CUDA refuses it), ARROW_DEVICE_CUDA for a device frame (pf-upload.h) with sync_event pointing at its cudaEvent_t:
 * the consumer waits on it before reading; ARROW_DEVICE_CUDA with
 * sync_event NULL for a received device frame (pf_node_frame.domain
 * PF_NODE_DOMAIN_DEVICE: published complete, nothing to wait for).
 *
 * Lifetime: the array holds a reference on the frame's pf_hold from the
 * export to its release callback, which runs once and drops it (the frame
 * goes back to its producer when the last borrower let go). The schema
 * holds nothing of the frame (its metadata is a copy) and has its own
 * release callback. Both structs may be moved by the consumer (memcpy,
 * then the source's release set to NULL), as the specification allows:
 * nothing points into them.
 *
 * Threading: any thread; release callbacks may run on any thread.
 */
#ifndef __PF_ARROW_H__
#define __PF_ARROW_H__

#include <stdint.h>

#include <pinnedflow/pf-api.h>
#include <pinnedflow/pf-hold.h>
#include <pinnedflow/pf-node.h>
#include <pinnedflow/pf-upload.h>

#ifdef __cplusplus
extern "C" {
#endif

/* From the Arrow C Data Interface specification. */
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

/* Since: 0.1 */
struct ArrowSchema {
  /* Array type description */
  const char *format;
  const char *name;
  const char *metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema **children;
  struct ArrowSchema *dictionary;

  /* Release callback */
  void (*release) (struct ArrowSchema *);
  /* Opaque producer-specific data */
  void *private_data;
};

/* Since: 0.1 */
struct ArrowArray {
  /* Array data description */
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void **buffers;
  struct ArrowArray **children;
  struct ArrowArray *dictionary;

  /* Release callback */
  void (*release) (struct ArrowArray *);
  /* Opaque producer-specific data */
  void *private_data;
};

#endif /* ARROW_C_DATA_INTERFACE */

/* From the Arrow C Device Data Interface specification. */
#ifndef ARROW_C_DEVICE_DATA_INTERFACE
#define ARROW_C_DEVICE_DATA_INTERFACE

/* Since: 0.1 */
typedef int32_t ArrowDeviceType;

#define ARROW_DEVICE_CPU 1
#define ARROW_DEVICE_CUDA 2
#define ARROW_DEVICE_CUDA_HOST 3
#define ARROW_DEVICE_OPENCL 4
#define ARROW_DEVICE_VULKAN 7
#define ARROW_DEVICE_METAL 8
#define ARROW_DEVICE_VPI 9
#define ARROW_DEVICE_ROCM 10
#define ARROW_DEVICE_ROCM_HOST 11
#define ARROW_DEVICE_EXT_DEV 12
#define ARROW_DEVICE_CUDA_MANAGED 13
#define ARROW_DEVICE_ONEAPI 14
#define ARROW_DEVICE_WEBGPU 15
#define ARROW_DEVICE_HEXAGON 16

/* Since: 0.1 */
struct ArrowDeviceArray {
  struct ArrowArray array;
  int64_t device_id;
  ArrowDeviceType device_type;
  void *sync_event;
  int64_t reserved[3];
};

#endif /* ARROW_C_DEVICE_DATA_INTERFACE */

/* What to export: the bytes, where they are, and the layout for the
 * schema's metadata.
 * Since: 0.1
 */
typedef struct {
  const void *data;             /* first byte (host or device pointer) */
  uint64_t size;                /* bytes: the array's length */
  ArrowDeviceType device_type;  /* CPU, CUDA_HOST or CUDA */
  int32_t reserved0;
  int64_t device_id;            /* 0 for host memory */
  /* ARROW_DEVICE_CUDA: the cudaEvent_t (its value) that completes when the
   * bytes are valid; the array's sync_event points at a copy of it. NULL:
   * nothing to wait for. The event must live as long as the hold. */
  void *cuda_event;
  const char *format;           /* NULL or "" when unknown */
  uint32_t width, height;
  uint32_t n_planes;            /* 0: no layout */
  uint32_t reserved1;
  uint64_t plane_offset[PF_MAX_PLANES]; /* from data */
  uint64_t plane_stride[PF_MAX_PLANES];
  uint32_t plane_rows[PF_MAX_PLANES];
  uint32_t plane_row_bytes[PF_MAX_PLANES];
  uint64_t seq;
  uint64_t pts;                 /* PF_TIME_NONE: none */
} pf_arrow_desc;

/**
 * pf_arrow_desc_from_frame:
 * @device_type: for a host frame ARROW_DEVICE_CPU, or
 *   ARROW_DEVICE_CUDA_HOST where the frame's segment is registered with
 *   CUDA in this process; for a device frame (domain
 *   PF_NODE_DOMAIN_DEVICE) ARROW_DEVICE_CUDA only
 *
 * The description of a received frame: its bytes and its layout. A
 * device frame is described at its device address on its device, with no
 * sync event (NULL): its producer published it once its writes had
 * completed, so there is nothing to wait for.
 *
 * Returns: 0, or -EINVAL (a frame in several chunks, another device type).
 *
 * Since: 0.1
 */
PF_API int pf_arrow_desc_from_frame (const pf_node_frame * frame,
    ArrowDeviceType device_type, pf_arrow_desc * desc);

/**
 * pf_arrow_desc_from_device_frame:
 *
 * The description of a device frame from pf_uploader_upload():
 * ARROW_DEVICE_CUDA on its device, the whole pitched allocation (planes at
 * their offsets, rows pitch apart: the metadata's plane_strides), the
 * frame's event as the sync event.
 *
 * Returns: 0, or -EINVAL.
 *
 * Since: 0.1
 */
PF_API int pf_arrow_desc_from_device_frame (const pf_device_frame * frame,
    pf_arrow_desc * desc);

/**
 * pf_arrow_export:
 * @hold: what the array keeps alive (a reference is taken, dropped by the
 *   array's release callback)
 * @schema: (out) (optional): the schema: uint8, named "frame", the layout
 *   in its metadata
 * @array: (out): the device array
 *
 * Fills @schema and @array; the consumer owns them and calls their release
 * callbacks. On failure neither is set (release NULL) and no reference is
 * taken.
 *
 * Returns: 0, -EINVAL, -ENOMEM.
 *
 * Since: 0.1
 */
PF_API int pf_arrow_export (const pf_arrow_desc * desc, pf_hold * hold,
    struct ArrowSchema *schema, struct ArrowDeviceArray *array);

/**
 * pf_arrow_export_new:
 *
 * pf_arrow_export() into structs allocated here (the Arrow PyCapsule
 * interface's capsules own them): free them with pf_arrow_schema_free()
 * and pf_arrow_array_free() (an ArrowDeviceArray * is also its ArrowArray
 * *). @schema may be NULL.
 *
 * Since: 0.1
 */
PF_API int pf_arrow_export_new (const pf_arrow_desc * desc, pf_hold * hold,
    struct ArrowSchema **schema, struct ArrowDeviceArray **array);

/**
 * pf_arrow_schema_free:
 *
 * Releases @schema if not released (moved) yet, then frees the struct from
 * pf_arrow_export_new(). NULL is ignored.
 *
 * Since: 0.1
 */
PF_API void pf_arrow_schema_free (struct ArrowSchema *schema);

/**
 * pf_arrow_array_free:
 *
 * Releases @array if not released (moved) yet, then frees the struct from
 * pf_arrow_export_new() (its ArrowDeviceArray). NULL is ignored.
 *
 * Since: 0.1
 */
PF_API void pf_arrow_array_free (struct ArrowArray *array);

/**
 * pf_arrow_schema_capsule_destructor:
 * @capsule: a PyCapsule named "arrow_schema"
 *
 * PyCapsule_Destructor for the Arrow PyCapsule interface
 * (__arrow_c_array__, __arrow_c_device_array__): releases what the consumer
 * did not move out, frees the struct. As pf_dlpack_capsule_destructor(),
 * it looks the interpreter's capsule functions up in the process.
 *
 * Since: 0.1
 */
PF_API void pf_arrow_schema_capsule_destructor (void *capsule);

/* The same for capsules named "arrow_array" (an ArrowArray *).
 * Since: 0.1
 */
PF_API void pf_arrow_array_capsule_destructor (void *capsule);

/* The same for capsules named "arrow_device_array".
 * Since: 0.1
 */
PF_API void pf_arrow_device_array_capsule_destructor (void *capsule);

#ifdef __cplusplus
}
#endif
#endif /* __PF_ARROW_H__ */
