/* pinnedflow: frames through the Arrow C Device Data Interface, plain C
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * See pf-arrow.h. The array's private data holds the hold reference, the
 * buffer pointers and the copy of the CUDA event the sync_event points at;
 * the schema's holds its encoded metadata. Neither points into the public
 * structs, so a consumer may move them.
 *
 * Lifetime: array release: drops the hold reference, frees the private
 * data, sets release to NULL (exactly once: a released array has no
 * release callback left to call). Schema release: frees the metadata.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <pinnedflow/pf-arrow.h>

#include "pf-pycapsule-private.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The ABI, as the specification fixes it on LP64. */
#if defined(__x86_64__) || defined(__aarch64__)
_Static_assert (sizeof (struct ArrowSchema) == 72, "ArrowSchema");
_Static_assert (sizeof (struct ArrowArray) == 80, "ArrowArray");
_Static_assert (sizeof (struct ArrowDeviceArray) == 128, "ArrowDeviceArray");
#endif

struct array_private
{
  pf_hold *hold;
  const void *buffers[2];       /* validity (none), data */
  void *cuda_event;             /* what sync_event points at */
};

/* ------------------------------------------------------------------------ */
/* Metadata: int32 count, then per pair int32 length + key bytes, int32     */
/* length + value bytes, all in native byte order (the specification's).    */
/* ------------------------------------------------------------------------ */

#define MAX_PAIRS 11
#define VALUE_LEN 96

struct meta
{
  int n;
  const char *key[MAX_PAIRS];
  char value[MAX_PAIRS][VALUE_LEN];
};

static void
meta_add (struct meta *m, const char *key, const char *value)
{
  m->key[m->n] = key;
  snprintf (m->value[m->n], VALUE_LEN, "%s", value);
  m->n++;
}

static void
meta_add_u64 (struct meta *m, const char *key, uint64_t v)
{
  char buf[32];

  snprintf (buf, sizeof (buf), "%" PRIu64, v);
  meta_add (m, key, buf);
}

static void
meta_add_list (struct meta *m, const char *key, const uint64_t * v, uint32_t n)
{
  char buf[VALUE_LEN] = "";
  size_t len = 0;
  uint32_t i;

  for (i = 0; i < n && len < sizeof (buf); i++)
    len += snprintf (buf + len, sizeof (buf) - len, "%s%" PRIu64,
        i ? "," : "", v[i]);
  meta_add (m, key, buf);
}

static char *
meta_encode (const struct meta *m)
{
  size_t size = 4, off = 0;
  int32_t n;
  char *out;
  int i;

  for (i = 0; i < m->n; i++)
    size += 8 + strlen (m->key[i]) + strlen (m->value[i]);
  out = malloc (size);
  if (out == NULL)
    return NULL;
#define PUT(ptr, len) do { memcpy (out + off, (ptr), (len)); off += (len); } while (0)
  n = m->n;
  PUT (&n, 4);
  for (i = 0; i < m->n; i++) {
    int32_t kl = (int32_t) strlen (m->key[i]);
    int32_t vl = (int32_t) strlen (m->value[i]);
    PUT (&kl, 4);
    PUT (m->key[i], (size_t) kl);
    PUT (&vl, 4);
    PUT (m->value[i], (size_t) vl);
  }
#undef PUT
  return out;
}

static char *
metadata_new (const pf_arrow_desc * d)
{
  struct meta m = { 0 };
  uint64_t rows[PF_MAX_PLANES], row_bytes[PF_MAX_PLANES];
  uint32_t i, n = d->n_planes;

  meta_add (&m, "pinnedflow.format", d->format ? d->format : "");
  meta_add_u64 (&m, "pinnedflow.width", d->width);
  meta_add_u64 (&m, "pinnedflow.height", d->height);
  meta_add_u64 (&m, "pinnedflow.n_planes", n);
  for (i = 0; i < n; i++) {
    rows[i] = d->plane_rows[i];
    row_bytes[i] = d->plane_row_bytes[i];
  }
  meta_add_list (&m, "pinnedflow.plane_offsets", d->plane_offset, n);
  meta_add_list (&m, "pinnedflow.plane_strides", d->plane_stride, n);
  meta_add_list (&m, "pinnedflow.plane_rows", rows, n);
  meta_add_list (&m, "pinnedflow.plane_row_bytes", row_bytes, n);
  meta_add_u64 (&m, "pinnedflow.seq", d->seq);
  if (d->pts != PF_TIME_NONE)
    meta_add_u64 (&m, "pinnedflow.pts", d->pts);
  return meta_encode (&m);
}

/* ------------------------------------------------------------------------ */
/* Release callbacks                                                         */
/* ------------------------------------------------------------------------ */

static void
schema_release (struct ArrowSchema *schema)
{
  if (schema == NULL || schema->release == NULL)
    return;
  free ((char *) schema->metadata);
  schema->metadata = NULL;
  schema->release = NULL;
}

static void
array_release (struct ArrowArray *array)
{
  struct array_private *p;

  if (array == NULL || array->release == NULL)
    return;
  p = array->private_data;
  pf_hold_unref (p->hold);
  free (p);
  array->private_data = NULL;
  array->buffers = NULL;
  array->release = NULL;
}

/* ------------------------------------------------------------------------ */
/* Export                                                                    */
/* ------------------------------------------------------------------------ */

static int
desc_valid (const pf_arrow_desc * d)
{
  uint32_t i;

  if (d->data == NULL || d->size > INT64_MAX || d->n_planes > PF_MAX_PLANES)
    return 0;
  if (d->device_type != ARROW_DEVICE_CPU &&
      d->device_type != ARROW_DEVICE_CUDA_HOST &&
      d->device_type != ARROW_DEVICE_CUDA)
    return 0;
  for (i = 0; i < d->n_planes; i++)
    if (d->plane_offset[i] > d->size)
      return 0;
  return 1;
}

int
pf_arrow_export (const pf_arrow_desc * desc, pf_hold * hold,
    struct ArrowSchema *schema, struct ArrowDeviceArray *array)
{
  struct array_private *p = NULL;
  char *metadata = NULL;

  if (array)
    memset (array, 0, sizeof (*array));
  if (schema)
    memset (schema, 0, sizeof (*schema));
  if (desc == NULL || hold == NULL || array == NULL || !desc_valid (desc))
    return -EINVAL;
  p = calloc (1, sizeof (*p));
  if (p == NULL)
    goto nomem;
  if (schema) {
    metadata = metadata_new (desc);
    if (metadata == NULL)
      goto nomem;
    schema->format = "C";       /* uint8 */
    schema->name = "frame";
    schema->metadata = metadata;
    schema->flags = 0;          /* no nulls */
    schema->release = schema_release;
  }
  p->hold = pf_hold_ref (hold);
  p->buffers[0] = NULL;
  p->buffers[1] = desc->data;
  p->cuda_event = desc->cuda_event;
  array->array.length = (int64_t) desc->size;
  array->array.n_buffers = 2;
  array->array.buffers = p->buffers;
  array->array.release = array_release;
  array->array.private_data = p;
  array->device_id = desc->device_id;
  array->device_type = desc->device_type;
  if (desc->device_type == ARROW_DEVICE_CUDA && desc->cuda_event)
    array->sync_event = &p->cuda_event;
  return 0;

nomem:
  free (p);
  free (metadata);
  if (schema)
    memset (schema, 0, sizeof (*schema));
  return -ENOMEM;
}

int
pf_arrow_export_new (const pf_arrow_desc * desc, pf_hold * hold,
    struct ArrowSchema **schema, struct ArrowDeviceArray **array)
{
  struct ArrowSchema *s = NULL;
  struct ArrowDeviceArray *a = NULL;
  int res;

  if (schema)
    *schema = NULL;
  if (array == NULL)
    return -EINVAL;
  *array = NULL;
  a = calloc (1, sizeof (*a));
  if (schema)
    s = calloc (1, sizeof (*s));
  if (a == NULL || (schema && s == NULL)) {
    res = -ENOMEM;
    goto fail;
  }
  res = pf_arrow_export (desc, hold, s, a);
  if (res < 0)
    goto fail;
  if (schema)
    *schema = s;
  *array = a;
  return 0;

fail:
  free (s);
  free (a);
  return res;
}

void
pf_arrow_schema_free (struct ArrowSchema *schema)
{
  if (schema == NULL)
    return;
  if (schema->release)
    schema->release (schema);
  free (schema);
}

void
pf_arrow_array_free (struct ArrowArray *array)
{
  if (array == NULL)
    return;
  if (array->release)
    array->release (array);
  free (array);
}

int
pf_arrow_desc_from_frame (const pf_node_frame * frame,
    ArrowDeviceType device_type, pf_arrow_desc * desc)
{
  const pf_node_video_layout *lay;
  pf_node_device_info dev;
  uint32_t i;

  if (frame == NULL || desc == NULL || frame->n_chunks != 1)
    return -EINVAL;
  if (frame->domain == PF_NODE_DOMAIN_DEVICE) {
    /* device memory is lent as ARROW_DEVICE_CUDA only */
    if (device_type != ARROW_DEVICE_CUDA ||
        pf_node_frame_get_device (frame, &dev) < 0 || dev.ptr == 0)
      return -EINVAL;
  } else if ((device_type != ARROW_DEVICE_CPU &&
          device_type != ARROW_DEVICE_CUDA_HOST) || frame->data == NULL) {
    return -EINVAL;
  }
  memset (desc, 0, sizeof (*desc));
  if (frame->domain == PF_NODE_DOMAIN_DEVICE) {
    desc->data = (const void *) (uintptr_t) dev.ptr;
    desc->device_id = dev.ordinal;
    /* the producer published the frame once its writes were complete
     * (pf_node_producer_new_device()): nothing to wait for, sync_event
     * NULL as the specification allows */
    desc->cuda_event = NULL;
  } else {
    desc->data = frame->data;
  }
  desc->size = frame->size;
  desc->device_type = device_type;
  desc->format = frame->info.format;
  desc->width = frame->info.width;
  desc->height = frame->info.height;
  desc->seq = frame->seq;
  desc->pts = frame->pts;
  lay = &frame->layout;
  if (lay->n_planes <= PF_MAX_PLANES) {
    for (i = 0; i < lay->n_planes; i++) {
      if (lay->plane_stride[i] < 0)
        break;
      desc->plane_offset[i] = lay->plane_offset[i];
      desc->plane_stride[i] = (uint64_t) lay->plane_stride[i];
      desc->plane_rows[i] = lay->plane_height[i];
      desc->plane_row_bytes[i] = lay->plane_row_bytes[i];
    }
    /* a negative stride has no place in the metadata: no layout then */
    desc->n_planes = i == lay->n_planes ? lay->n_planes : 0;
  }
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Capsule destructors (the Arrow PyCapsule interface)                       */
/* ------------------------------------------------------------------------ */

void
pf_arrow_schema_capsule_destructor (void *capsule)
{
  if (pf_pycapsule_is (capsule, "arrow_schema"))
    pf_arrow_schema_free (pf_pycapsule_pointer (capsule, "arrow_schema"));
}

void
pf_arrow_array_capsule_destructor (void *capsule)
{
  if (pf_pycapsule_is (capsule, "arrow_array"))
    pf_arrow_array_free (pf_pycapsule_pointer (capsule, "arrow_array"));
}

void
pf_arrow_device_array_capsule_destructor (void *capsule)
{
  if (pf_pycapsule_is (capsule, "arrow_device_array"))
    pf_arrow_array_free (pf_pycapsule_pointer (capsule, "arrow_device_array"));
}

int
pf_arrow_desc_from_device_frame (const pf_device_frame * frame,
    pf_arrow_desc * desc)
{
  uint32_t i;

  if (frame == NULL || desc == NULL || frame->base == NULL ||
      frame->n_planes > PF_MAX_PLANES)
    return -EINVAL;
  memset (desc, 0, sizeof (*desc));
  desc->data = frame->base;
  desc->size = frame->alloc_size;
  desc->device_type = ARROW_DEVICE_CUDA;
  desc->device_id = frame->device_id;
  desc->cuda_event = frame->event;
  desc->format = frame->format;
  desc->width = frame->width;
  desc->height = frame->height;
  desc->n_planes = frame->n_planes;
  for (i = 0; i < frame->n_planes; i++) {
    desc->plane_offset[i] = frame->plane_offset[i];
    desc->plane_stride[i] = frame->pitch;
    desc->plane_rows[i] = frame->plane_rows[i];
    desc->plane_row_bytes[i] = frame->plane_row_bytes[i];
  }
  desc->seq = frame->seq;
  desc->pts = frame->pts;
  return 0;
}
