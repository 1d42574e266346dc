/* A consumer of the Arrow C (Device) Data Interface written from the
 * specification alone: https://arrow.apache.org/docs/format/CDataInterface.html
 * and .../CDeviceDataInterface.html. It includes nothing of pinnedflow:
 * the structs are declared here, as the specification prints them, so
 * that the export in lib/pinnedflow/export/pf-arrow.c is checked against the
 * document, not against itself.
 *
 * It imports what a producer handed over the way a real consumer does:
 * MOVES the structs out (copy, then mark the source released), reads the
 * schema (format, metadata), waits on the sync event for device memory,
 * reads the bytes (through a caller-given device-to-host copy for CUDA
 * memory), and calls each release callback exactly once, checking that it
 * marks the struct released.
 *
 * Built as a shared module for the Python tests (ctypes) and linked into
 * test-export (C).
 */
#include "arrow-consumer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- from the specification ------------------------------------------- */
struct ArrowSchema
{
  const char *format;
  const char *name;
  const char *metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema **children;
  struct ArrowSchema *dictionary;
  void (*release) (struct ArrowSchema *);
  void *private_data;
};

struct ArrowArray
{
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void **buffers;
  struct ArrowArray **children;
  struct ArrowArray *dictionary;
  void (*release) (struct ArrowArray *);
  void *private_data;
};

typedef int32_t ArrowDeviceType;
#define ARROW_DEVICE_CPU 1
#define ARROW_DEVICE_CUDA 2
#define ARROW_DEVICE_CUDA_HOST 3

struct ArrowDeviceArray
{
  struct ArrowArray array;
  int64_t device_id;
  ArrowDeviceType device_type;
  void *sync_event;
  int64_t reserved[3];
};
/* ---------------------------------------------------------------------- */

static int
fail (char *err, size_t len, const char *fmt, ...)
{
  va_list ap;

  va_start (ap, fmt);
  vsnprintf (err, len, fmt, ap);
  va_end (ap);
  return -1;
}

/* The value of @key in the encoded metadata (int32 n, then int32-length
 * prefixed keys and values, native byte order), copied into @out. */
static int
metadata_get (const char *md, const char *key, char *out, size_t out_len)
{
  int32_t n, kl, vl, i;
  const char *p = md;

  if (md == NULL)
    return 0;
  memcpy (&n, p, 4);
  p += 4;
  for (i = 0; i < n; i++) {
    memcpy (&kl, p, 4);
    p += 4;
    const char *k = p;
    p += kl;
    memcpy (&vl, p, 4);
    p += 4;
    if ((size_t) kl == strlen (key) && memcmp (k, key, (size_t) kl) == 0) {
      if ((size_t) vl >= out_len)
        return 0;
      memcpy (out, p, (size_t) vl);
      out[vl] = '\0';
      return 1;
    }
    p += vl;
  }
  return 0;
}

static int
parse_list (const char *s, uint64_t * v, int max)
{
  int n = 0;

  while (*s && n < max) {
    char *end;
    v[n++] = strtoull (s, &end, 10);
    s = *end == ',' ? end + 1 : end;
  }
  return n;
}

int
arrow_consumer_import (void *schema_ptr, void *array_ptr, int is_device,
    struct arrow_expect *expect, char *err, size_t err_len)
{
  struct ArrowSchema schema;
  struct ArrowDeviceArray dev;
  char v[256];
  uint64_t off[4], stride[4], rows[4], row_bytes[4], width, height;
  const uint8_t *want = expect->bytes;
  uint8_t *row = NULL;
  int n, p, res = -1;
  uint64_t r;

  /* Move both out, as the specification allows a consumer to. */
  memcpy (&schema, schema_ptr, sizeof (schema));
  ((struct ArrowSchema *) schema_ptr)->release = NULL;
  memset (&dev, 0, sizeof (dev));
  if (is_device) {
    memcpy (&dev, array_ptr, sizeof (dev));
    ((struct ArrowDeviceArray *) array_ptr)->array.release = NULL;
  } else {
    memcpy (&dev.array, array_ptr, sizeof (dev.array));
    ((struct ArrowArray *) array_ptr)->release = NULL;
    dev.device_type = ARROW_DEVICE_CPU;
  }
  if (schema.release == NULL || dev.array.release == NULL) {
    fail (err, err_len, "a struct came released");
    goto out;
  }

  /* The schema: uint8, no children, the layout in the metadata. */
  if (strcmp (schema.format, "C") != 0 || schema.n_children != 0 ||
      schema.dictionary != NULL) {
    fail (err, err_len, "schema format '%s' children %lld", schema.format,
        (long long) schema.n_children);
    goto out;
  }
  if (!metadata_get (schema.metadata, "pinnedflow.format", v, sizeof (v)) ||
      strcmp (v, expect->format) != 0) {
    fail (err, err_len, "metadata format '%s', expected '%s'", v,
        expect->format);
    goto out;
  }
  if (!metadata_get (schema.metadata, "pinnedflow.width", v, sizeof (v)) ||
      (width = strtoull (v, NULL, 10)) != expect->width ||
      !metadata_get (schema.metadata, "pinnedflow.height", v, sizeof (v)) ||
      (height = strtoull (v, NULL, 10)) != expect->height) {
    fail (err, err_len, "metadata size is not %ux%u", expect->width,
        expect->height);
    goto out;
  }
  metadata_get (schema.metadata, "pinnedflow.n_planes", v, sizeof (v));
  n = atoi (v);
  if (n != (int) expect->n_planes || n > 4) {
    fail (err, err_len, "metadata n_planes %d, expected %u", n,
        expect->n_planes);
    goto out;
  }
  metadata_get (schema.metadata, "pinnedflow.plane_offsets", v, sizeof (v));
  parse_list (v, off, 4);
  metadata_get (schema.metadata, "pinnedflow.plane_strides", v, sizeof (v));
  parse_list (v, stride, 4);
  metadata_get (schema.metadata, "pinnedflow.plane_rows", v, sizeof (v));
  parse_list (v, rows, 4);
  metadata_get (schema.metadata, "pinnedflow.plane_row_bytes", v, sizeof (v));
  if (parse_list (v, row_bytes, 4) != n) {
    fail (err, err_len, "metadata plane_row_bytes '%s'", v);
    goto out;
  }
  if (metadata_get (schema.metadata, "pinnedflow.pts", v, sizeof (v)))
    expect->pts_seen = strtoull (v, NULL, 10);

  /* The array: uint8, no nulls, two buffers. */
  if (dev.array.n_buffers != 2 || dev.array.buffers == NULL ||
      dev.array.buffers[0] != NULL || dev.array.buffers[1] == NULL ||
      dev.array.offset != 0 || dev.array.null_count != 0 ||
      dev.array.n_children != 0 || dev.array.dictionary != NULL) {
    fail (err, err_len, "array shape: %lld buffers, offset %lld, nulls %lld",
        (long long) dev.array.n_buffers, (long long) dev.array.offset,
        (long long) dev.array.null_count);
    goto out;
  }
  if (dev.device_type != expect->device_type) {
    fail (err, err_len, "device type %d, expected %d", (int) dev.device_type,
        (int) expect->device_type);
    goto out;
  }
  expect->length_seen = dev.array.length;
  expect->data_seen = (uint64_t) (uintptr_t) dev.array.buffers[1];

  /* Device memory: wait on the sync event first (a cudaEvent_t *). The
   * specification lets it be NULL when nothing needs waiting for: accepted
   * only where the caller expects none (event_sync NULL). */
  if (dev.device_type == ARROW_DEVICE_CUDA) {
    if (expect->d2h == NULL) {
      fail (err, err_len, "CUDA array and no way to read it here");
      goto out;
    }
    if ((dev.sync_event == NULL) != (expect->event_sync == NULL)) {
      fail (err, err_len, "CUDA array %s sync_event, expected %s",
          dev.sync_event ? "with a" : "without", expect->event_sync ?
          "one" : "none");
      goto out;
    }
    if (dev.sync_event && expect->event_sync (*(void **) dev.sync_event) != 0) {
      fail (err, err_len, "waiting on the sync event failed");
      goto out;
    }
  }

  /* The bytes, plane by plane, row by row, against the packed rows. */
  for (p = 0; p < n; p++) {
    row = realloc (row, row_bytes[p] ? row_bytes[p] : 1);
    for (r = 0; r < rows[p]; r++) {
      uint64_t at = off[p] + r * stride[p];
      const uint8_t *src = (const uint8_t *) dev.array.buffers[1] + at;

      if (at + row_bytes[p] > (uint64_t) dev.array.length) {
        fail (err, err_len, "plane %d row %llu outside the array", p,
            (unsigned long long) r);
        goto out;
      }
      if (dev.device_type == ARROW_DEVICE_CUDA) {
        if (expect->d2h (row, row_bytes[p], src, row_bytes[p], row_bytes[p],
                1, 2) != 0) {
          fail (err, err_len, "device-to-host copy failed");
          goto out;
        }
      } else {
        memcpy (row, src, row_bytes[p]);
      }
      if (memcmp (row, want, row_bytes[p]) != 0) {
        fail (err, err_len, "plane %d row %llu differs", p,
            (unsigned long long) r);
        goto out;
      }
      want += row_bytes[p];
    }
  }
  if ((uint64_t) (want - expect->bytes) != expect->size) {
    fail (err, err_len, "compared %llu bytes, expected %llu",
        (unsigned long long) (want - expect->bytes),
        (unsigned long long) expect->size);
    goto out;
  }
  res = 0;

out:
  free (row);
  /* Release each once; a producer's release must mark it released. */
  if (dev.array.release) {
    dev.array.release (&dev.array);
    expect->releases++;
    if (dev.array.release != NULL && res == 0)
      res = fail (err, err_len, "array release left release set");
  }
  if (schema.release) {
    schema.release (&schema);
    expect->releases++;
    if (schema.release != NULL && res == 0)
      res = fail (err, err_len, "schema release left release set");
  }
  return res;
}
