/* gstpinnedcudatensor.h from C (issue 33): the rules a C/C++ or TensorRT
 * application relies on, one function each, on the cudart emulator
 * (GST_PINNEDFLOW_CUDART) for the device ones.
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * - host export: a padded-stride RGBA buffer and an NV12 one give tensors
 *   at the mapped address + the video meta's offsets, with its strides; a
 *   versioned tensor says read-only; each tensor holds one buffer
 *   reference, dropped by its deleter;
 * - refusals (stream 0, a plane past the format's, caps that are not
 *   video, an empty buffer) leave the buffer's reference count as it was;
 * - import: a host tensor wrapped (its address, deleter once, at the
 *   buffer's free), copied into a buffer that has memory (deleter at once);
 *   a wrong dtype, device, shape, a row stride shorter than a row, a
 *   non-contiguous row: refused with the code, the deleter not called, the
 *   buffer left empty;
 * - device round trip: a device tensor (cudaMallocPitch) into
 *   memory:PinnedflowCUDA (one device copy), exported again as kDLCUDA,
 *   the consumer's stream made to wait once, bytes read back equal; the
 *   tensor's deleter runs once, after the buffer's free.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/gst.h>
#include <gst/video/video.h>
#include <gst/pinnedcuda/gstpinnedcuda.h>
#include <gst/pinnedcuda/gstpinnedcudaloader.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* DLPack (dlpack.h v0.8), from the specification */
typedef struct
{
  void *data;
  int32_t device_type, device_id;
  int32_t ndim;
  uint8_t code, bits;
  uint16_t lanes;
  int64_t *shape;
  int64_t *strides;
  uint64_t byte_offset;
} DLTensorSpec;

typedef struct ManagedSpec
{
  DLTensorSpec t;
  void *manager_ctx;
  void (*deleter) (struct ManagedSpec * self);
} ManagedSpec;

typedef struct
{
  uint32_t major, minor;
  void *manager_ctx;
  void (*deleter) (void *self);
  uint64_t flags;
  DLTensorSpec t;
} VersionedSpec;

#define CHECK(cond) G_STMT_START {                                        \
  if (!(cond)) {                                                          \
    fprintf (stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,     \
        #cond);                                                           \
    exit (1);                                                             \
  }                                                                       \
} G_STMT_END

static GstCaps *
video_caps (const gchar * fmt, gint w, gint h, const gchar * feature)
{
  GstCaps *caps = gst_caps_new_simple ("video/x-raw", "format",
      G_TYPE_STRING, fmt, "width", G_TYPE_INT, w, "height", G_TYPE_INT, h,
      "framerate", GST_TYPE_FRACTION, 30, 1, NULL);

  if (feature)
    gst_caps_set_features_simple (caps, gst_caps_features_new (feature, NULL));
  return caps;
}

static gint
refs (GstBuffer * buf)
{
  return GST_MINI_OBJECT_REFCOUNT_VALUE (buf);
}

/* ------------------------------------------------------------ export */

static void
test_host_export (void)
{
  GstCaps *caps = video_caps ("RGBA", 33, 7, NULL);
  gsize offsets[4] = { 64, 0, 0, 0 };
  gint strides[4] = { 160, 0, 0, 0 };
  GstBuffer *buf = gst_buffer_new_allocate (NULL, 64 + 160 * 7, NULL);
  GstMapInfo map;
  ManagedSpec *m;
  VersionedSpec *v;
  GError *err = NULL;

  gst_buffer_add_video_meta_full (buf, 0, GST_VIDEO_FORMAT_RGBA, 33, 7, 1,
      offsets, strides);
  CHECK (gst_buffer_map (buf, &map, GST_MAP_READ));
  m = gst_pinned_cuda_tensor_from_buffer (buf, caps, 0, -1, 0, &err);
  CHECK (m != NULL && err == NULL);
  CHECK (m->t.data == map.data + 64);
  CHECK (m->t.device_type == 1 && m->t.ndim == 3 && m->t.code == 1 &&
      m->t.bits == 8);
  CHECK (m->t.shape[0] == 7 && m->t.shape[1] == 33 && m->t.shape[2] == 4);
  CHECK (m->t.strides[0] == 160 && m->t.strides[1] == 4 &&
      m->t.strides[2] == 1);
  CHECK (refs (buf) == 2);
  v = gst_pinned_cuda_tensor_from_buffer (buf, caps, 0, -1,
      GST_PINNED_CUDA_TENSOR_VERSIONED, &err);
  CHECK (v != NULL && v->major == 1 && (v->flags & 1) && v->t.data ==
      m->t.data);
  CHECK (refs (buf) == 3);
  m->deleter (m);
  CHECK (refs (buf) == 2);
  gst_pinned_cuda_tensor_free (v, GST_PINNED_CUDA_TENSOR_VERSIONED);
  CHECK (refs (buf) == 1);
  gst_buffer_unmap (buf, &map);
  gst_buffer_unref (buf);
  gst_caps_unref (caps);

  /* NV12: two planes at the default layout (no video meta) */
  caps = video_caps ("NV12", 16, 8, NULL);
  buf = gst_buffer_new_allocate (NULL, 16 * 8 * 3 / 2, NULL);
  CHECK (gst_buffer_map (buf, &map, GST_MAP_READ));
  CHECK (gst_pinned_cuda_tensor_n_planes (caps) == 2);
  m = gst_pinned_cuda_tensor_from_buffer (buf, caps, 1, -1, 0, &err);
  CHECK (m != NULL);
  CHECK (m->t.data == map.data + 16 * 8 && m->t.ndim == 3);
  CHECK (m->t.shape[0] == 4 && m->t.shape[1] == 8 && m->t.shape[2] == 2);
  CHECK (m->t.strides[0] == 16);
  m->deleter (m);
  gst_buffer_unmap (buf, &map);
  CHECK (refs (buf) == 1);

  /* refusals take nothing */
  CHECK (gst_pinned_cuda_tensor_from_buffer (buf, caps, 0, 0, 0, &err) == NULL);
  CHECK (err != NULL);
  g_clear_error (&err);
  CHECK (gst_pinned_cuda_tensor_from_buffer (buf, caps, 2, -1, 0, &err) ==
      NULL);
  CHECK (g_error_matches (err, GST_PINNED_CUDA_TENSOR_ERROR,
          GST_PINNED_CUDA_TENSOR_ERROR_LAYOUT));
  g_clear_error (&err);
  gst_caps_unref (caps);
  caps = gst_caps_new_empty_simple ("audio/x-raw");
  CHECK (gst_pinned_cuda_tensor_from_buffer (buf, caps, 0, -1, 0, &err) ==
      NULL);
  CHECK (g_error_matches (err, GST_PINNED_CUDA_TENSOR_ERROR,
          GST_PINNED_CUDA_TENSOR_ERROR_CAPS));
  g_clear_error (&err);
  CHECK (refs (buf) == 1);
  gst_buffer_unref (buf);
  gst_caps_unref (caps);
  printf ("ok host export (padded RGBA, NV12 plane 1, versioned, refusals)\n");
}

/* ------------------------------------------------------------ import */

typedef struct
{
  ManagedSpec m;
  int64_t shape[3], strides[3];
  gint deleted;
} Producer;

static void
producer_delete (ManagedSpec * self)
{
  ((Producer *) self->manager_ctx)->deleted++;
}

static void
producer_init (Producer * p, void *data, int32_t device, int nd,
    const int64_t * shape, const int64_t * strides, uint8_t code, uint8_t bits)
{
  memset (p, 0, sizeof (*p));
  memcpy (p->shape, shape, sizeof (int64_t) * nd);
  memcpy (p->strides, strides, sizeof (int64_t) * nd);
  p->m.t.data = data;
  p->m.t.device_type = device;
  p->m.t.ndim = nd;
  p->m.t.code = code;
  p->m.t.bits = bits;
  p->m.t.lanes = 1;
  p->m.t.shape = p->shape;
  p->m.t.strides = p->strides;
  p->m.manager_ctx = p;
  p->m.deleter = producer_delete;
}

static void
expect_refused (void *data, int32_t device, int nd, const int64_t * shape,
    const int64_t * strides, uint8_t code, GstCaps * caps, gint want)
{
  GstPinnedCudaTensorImport imp = { -1, NULL, 7, {NULL} };
  GstBuffer *buf = gst_buffer_new ();
  GError *err = NULL;
  Producer p;

  producer_init (&p, data, device, nd, shape, strides, code, 8);
  CHECK (!gst_pinned_cuda_buffer_fill_from_tensor (buf,
          (struct DLManagedTensor *) &p.m, caps, &imp, &err));
  CHECK (g_error_matches (err, GST_PINNED_CUDA_TENSOR_ERROR, want));
  printf ("  refused: %s\n", err->message);
  g_clear_error (&err);
  CHECK (p.deleted == 0 && gst_buffer_n_memory (buf) == 0);
  gst_buffer_unref (buf);
  CHECK (p.deleted == 0);
}

static void
test_host_import (void)
{
  GstCaps *caps = video_caps ("RGBA", 8, 4, NULL);
  GstCaps *cuda_caps = video_caps ("RGBA", 8, 4, "memory:CUDAMemory");
  static guint8 pixels[4][40];  /* rows padded to 40 bytes */
  int64_t shape[3] = { 4, 8, 4 }, strides[3] = { 40, 4, 1 };
  int64_t bad_row[3] = { 16, 4, 1 }, bad_pix[3] = { 40, 5, 1 };
  GstPinnedCudaTensorImport imp = { -1, NULL, 7, {NULL} };
  GstVideoMeta *meta;
  GstBuffer *buf;
  GstMapInfo map;
  GError *err = NULL;
  Producer p;
  guint r;

  for (r = 0; r < sizeof (pixels); r++)
    ((guint8 *) pixels)[r] = r * 7;
  producer_init (&p, pixels, 1, 3, shape, strides, 1, 8);
  buf = gst_buffer_new ();
  CHECK (gst_pinned_cuda_buffer_fill_from_tensor (buf,
          (struct DLManagedTensor *) &p.m, caps, &imp, &err));
  CHECK (imp.copies == 0 && p.deleted == 0);
  meta = gst_buffer_get_video_meta (buf);
  CHECK (meta && meta->stride[0] == 40 && meta->offset[0] == 0);
  CHECK (gst_buffer_map (buf, &map, GST_MAP_READ));
  CHECK (map.data == (guint8 *) pixels);
  gst_buffer_unmap (buf, &map);
  gst_buffer_unref (buf);
  CHECK (p.deleted == 1);

  /* into memory the buffer has: one copy, the tensor given back at once */
  producer_init (&p, pixels, 1, 3, shape, strides, 1, 8);
  buf = gst_buffer_new_allocate (NULL, 8 * 4 * 4, NULL);
  CHECK (gst_pinned_cuda_buffer_fill_from_tensor (buf,
          (struct DLManagedTensor *) &p.m, caps, &imp, &err));
  CHECK (imp.copies == 1 && p.deleted == 1);
  CHECK (gst_buffer_map (buf, &map, GST_MAP_READ));
  for (r = 0; r < 4; r++)
    CHECK (memcmp (map.data + r * 32, pixels[r], 32) == 0);
  gst_buffer_unmap (buf, &map);
  gst_buffer_unref (buf);
  CHECK (p.deleted == 1);

  expect_refused (pixels, 1, 3, shape, strides, 2 /* float */ , caps,
      GST_PINNED_CUDA_TENSOR_ERROR_DTYPE);
  expect_refused (pixels, 1, 3, shape, strides, 1, cuda_caps,
      GST_PINNED_CUDA_TENSOR_ERROR_DEVICE);
  expect_refused (pixels, 2, 3, shape, strides, 1, caps,
      GST_PINNED_CUDA_TENSOR_ERROR_DEVICE);
  expect_refused (pixels, 1, 2, shape, strides, 1, caps,
      GST_PINNED_CUDA_TENSOR_ERROR_LAYOUT);
  expect_refused (pixels, 1, 3, shape, bad_row, 1, caps,
      GST_PINNED_CUDA_TENSOR_ERROR_LAYOUT);
  expect_refused (pixels, 1, 3, shape, bad_pix, 1, caps,
      GST_PINNED_CUDA_TENSOR_ERROR_LAYOUT);
  gst_caps_unref (caps);
  gst_caps_unref (cuda_caps);
  printf ("ok host import (wrapped, copied into a buffer, refusals)\n");
}

/* ------------------------------------------------------------ device */

static void
test_device_roundtrip (void)
{
  const gint w = 16, h = 8, rows = h * 3 / 2;
  GstCaps *caps = video_caps ("NV12", w, h, "memory:PinnedflowCUDA");
  GstPinnedCudaTensorImport imp = { 1, NULL, 7, {NULL} };
  const GstPinnedCudaRuntime *rt;
  long (*query) (const char *);
  guint8 host[12][16], back[12][16];
  int64_t shape[2] = { rows, w }, strides[2];
  void *dev = NULL, *emu;
  size_t pitch = 0;
  GstBuffer *buf;
  GError *err = NULL;
  ManagedSpec *m;
  Producer p;
  long waits;
  gint r, c;

  emu = dlopen (g_getenv ("GST_PINNEDFLOW_CUDART"), RTLD_NOW | RTLD_NOLOAD);
  rt = gst_pinned_cuda_runtime_get (&err);
  CHECK (rt != NULL);
  if (emu == NULL)
    emu = dlopen (g_getenv ("GST_PINNEDFLOW_CUDART"), RTLD_NOW);
  CHECK (emu != NULL);
  *(void **) (&query) = dlsym (emu, "pfemu_query");
  CHECK (query != NULL);
  for (r = 0; r < rows; r++)
    for (c = 0; c < w; c++)
      host[r][c] = (guint8) (r * 31 + c * 3);
  CHECK (rt->MallocPitch (&dev, &pitch, w, rows) == 0);
  CHECK (rt->Memcpy2D (dev, pitch, host, w, w, rows,
          GST_PINNED_CUDA_MEMCPY_HOST_TO_DEVICE) == 0);
  strides[0] = pitch;
  strides[1] = 1;
  producer_init (&p, dev, 2, 2, shape, strides, 1, 8);
  buf = gst_buffer_new ();
  CHECK (gst_pinned_cuda_buffer_fill_from_tensor (buf,
          (struct DLManagedTensor *) &p.m, caps, &imp, &err));
  CHECK (imp.copies == 1 && p.deleted == 0);
  CHECK (gst_is_pinned_cuda_memory (gst_buffer_peek_memory (buf, 0)));

  /* ... and out again, plane by plane, the consumer's stream waiting */
  for (c = 0; c < 2; c++) {
    waits = query ("stream.waits");
    m = gst_pinned_cuda_tensor_from_buffer (buf, caps, c, 1, 0, &err);
    CHECK (m != NULL && m->t.device_type == 2 && m->t.device_id == 0);
    CHECK (query ("stream.waits") == waits + 1);
    CHECK (rt->Memcpy2D (back[c ? h : 0], w, m->t.data, m->t.strides[0], w,
            m->t.shape[0], GST_PINNED_CUDA_MEMCPY_DEVICE_TO_HOST) == 0);
    m->deleter (m);
  }
  CHECK (memcmp (back, host, sizeof (host)) == 0);
  CHECK (p.deleted == 0);
  gst_buffer_unref (buf);
  CHECK (p.deleted == 1);
  CHECK (rt->Free (dev) == 0);
  gst_caps_unref (caps);
  printf ("ok device round trip (NV12 into memory:PinnedflowCUDA, one copy, "
      "out as kDLCUDA, bytes equal)\n");
}

int
main (int argc, char **argv)
{
  if (!g_getenv ("GST_PINNEDFLOW_CUDART")) {
    printf ("SKIP: GST_PINNEDFLOW_CUDART (the emulator) not set\n");
    return 77;
  }
  gst_init (&argc, &argv);
  test_host_export ();
  test_host_import ();
  test_device_roundtrip ();
  gst_deinit ();
  return 0;
}
