/* Bridge suite: frames lent out from C (pf-hold, pf-dlpack, pf-arrow)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Usage: test-export CASE
 *   dlpack  a received frame as a DLPack tensor: the frame's address, shape
 *           and strides; the producer gets the slot back only when the
 *           hold's owner AND the tensor's deleter let go, in either order;
 *           bad descriptions refused; nothing leaks
 *   arrow   a received frame through the Arrow C Device Data Interface,
 *           imported by arrow-consumer.c (written from the specification
 *           alone): bytes, layout metadata, device type; the release
 *           callback releases the frame exactly once
 */
#include "bridge-check.h"
#include "arrow-consumer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pinnedflow/pf-arrow.h>
#include <pinnedflow/pf-dlpack.h>
#include <pinnedflow/pf-hold.h>
#include <pinnedflow/pf-node.h>

#define W 64
#define H 48

/* DLManagedTensor as the DLPack specification lays it out (LP64). */
struct spec_tensor
{
  void *data;
  int32_t device_type, device_id;
  int32_t ndim;
  uint8_t code, bits;
  uint16_t lanes;
  int64_t *shape;
  int64_t *strides;
  uint64_t byte_offset;
  void *manager_ctx;
  void (*deleter) (struct spec_tensor *);
};

struct pair
{
  pf_node_producer *prod;
  pf_node_consumer *cons;
  pf_node_video_layout layout;
};

static void
pair_open (struct pair *p, const char *format)
{
  pf_node_producer_config cfg = { 0 };

  CHECK_INT (pf_node_video_layout_compute (format, W, H, 0, &p->layout), ==, 0);
  cfg.socket_path = bc_path ("x.sock");
  cfg.n_slots = 2;
  cfg.slot_size = p->layout.size;
  cfg.flags = PF_NODE_PRODUCER_NO_LOCK;
  CHECK_INT (pf_node_producer_new (&cfg, &p->prod), ==, 0);
  CHECK_INT (pf_node_producer_set_video (p->prod, format, W, H, 30, 1), ==, 0);
  CHECK_INT (pf_node_consumer_new (cfg.socket_path, 5000, &p->cons), ==, 0);
  CHECK_INT (pf_node_producer_wait_clients (p->prod, 1, 10000), ==, 0);
}

static void
pair_close (struct pair *p)
{
  pf_node_consumer_free (p->cons);
  pf_node_producer_free (p->prod);
}

/* Publishes a frame whose byte i is (i * 7 + n) & 0xff; returns it. */
static pf_node_frame *
pair_send (struct pair *p, uint64_t n)
{
  pf_node_loan loan;
  pf_node_frame *f = NULL;
  uint64_t i;

  CHECK_INT (pf_node_producer_loan_video (p->prod, 5000, &loan), ==, 0);
  for (i = 0; i < loan.size; i++)
    ((uint8_t *) loan.data)[i] = (uint8_t) (i * 7 + n);
  loan.pts = n * 1000;
  CHECK_INT (pf_node_producer_publish (p->prod, &loan), ==, 1);
  CHECK_INT (pf_node_consumer_next (p->cons, 10000, &f), ==, 1);
  return f;
}

/* Free slots once the releases in flight arrived (wait_idle times out
 * while a frame is held: then the count is what it is). */
static unsigned int
free_slots (struct pair *p)
{
  (void) pf_node_producer_wait_idle (p->prod, 200);
  return pf_node_producer_get_free_slots (p->prod);
}

static void
case_dlpack (void)
{
  struct pair p;
  pf_node_frame *f;
  pf_hold *hold;
  pf_dlpack_desc desc;
  struct spec_tensor *t;
  void *out;
  int fds0 = pf_test_count_fds (), order;

  pair_open (&p, "RGBA");
  for (order = 0; order < 2; order++) {
    f = pair_send (&p, order);
    hold = pf_hold_new_node_frame (f);
    CHECK (hold != NULL);
    CHECK_INT (pf_dlpack_desc_from_frame (f, PF_DLPACK_CPU, &desc), ==, 0);
    CHECK_INT (pf_dlpack_export (&desc, hold, 0, &out), ==, 0);
    CHECK_INT (pf_hold_get_refcount (hold), ==, 2);
    t = out;
    /* the frame in place: address, (h, w, 4) uint8, strides in elements */
    CHECK (t->data == f->data);
    CHECK_INT (t->device_type, ==, 1);
    CHECK_INT (t->ndim, ==, 3);
    CHECK (t->code == 1 && t->bits == 8 && t->lanes == 1);
    CHECK (t->shape[0] == H && t->shape[1] == W && t->shape[2] == 4);
    CHECK (t->strides[0] == p.layout.plane_stride[0] && t->strides[1] == 4 &&
        t->strides[2] == 1);
    CHECK (t->byte_offset == 0 && t->manager_ctx != NULL);
    CHECK (((const uint8_t *) t->data)[5] == (uint8_t) (5 * 7 + order));
    if (order == 0) {
      /* the owner first: the tensor still holds the frame */
      pf_hold_unref (hold);
      CHECK_INT (free_slots (&p), ==, 1);
      CHECK (((const uint8_t *) t->data)[9] == (uint8_t) (9 * 7 + order));
      t->deleter (t);
    } else {
      /* the tensor first (pf_dlpack_free calls its deleter) */
      pf_dlpack_free (out, 0);
      CHECK_INT (pf_hold_get_refcount (hold), ==, 1);
      CHECK_INT (free_slots (&p), ==, 1);
      pf_hold_unref (hold);
    }
    CHECK_INT (free_slots (&p), ==, 2);
    CHECK_INT (pf_hold_count_live (), ==, 0);
  }

  /* A versioned tensor (DLPack 1.0) with the read-only flag; GRAY8 and
   * NV12 shapes come from the frame's layout. */
  f = pair_send (&p, 3);
  hold = pf_hold_new_node_frame (f);
  CHECK_INT (pf_dlpack_desc_from_frame (f, PF_DLPACK_CUDA_HOST, &desc), ==, 0);
  CHECK_INT (desc.device_type, ==, PF_DLPACK_CUDA_HOST);
  CHECK_INT (pf_dlpack_export (&desc, hold, PF_DLPACK_VERSIONED |
          PF_DLPACK_READ_ONLY, &out), ==, 0);
  CHECK_INT (((uint32_t *) out)[0], ==, 1);     /* version.major */
  CHECK_INT (((uint64_t *) out)[3], ==, 1);     /* flags: READ_ONLY */
  pf_dlpack_free (out, PF_DLPACK_VERSIONED);
  /* refused: a device type a host frame cannot be, no hold, bad dims */
  CHECK_INT (pf_dlpack_desc_from_frame (f, PF_DLPACK_CUDA, &desc), ==, -EINVAL);
  CHECK_INT (pf_dlpack_desc_from_frame (f, PF_DLPACK_CPU, &desc), ==, 0);
  CHECK_INT (pf_dlpack_export (&desc, NULL, 0, &out), ==, -EINVAL);
  CHECK (out == NULL);
  desc.ndim = 0;
  CHECK_INT (pf_dlpack_export (&desc, hold, 0, &out), ==, -EINVAL);
  desc.ndim = 3;
  CHECK_INT (pf_dlpack_export (&desc, hold, 1u << 7, &out), ==, -EINVAL);
  CHECK_INT (pf_hold_get_refcount (hold), ==, 1);
  pf_hold_unref (hold);
  CHECK_INT (free_slots (&p), ==, 2);
  pair_close (&p);

  pair_open (&p, "NV12");
  f = pair_send (&p, 4);
  CHECK_INT (pf_dlpack_desc_from_frame (f, PF_DLPACK_CPU, &desc), ==, 0);
  CHECK (desc.ndim == 1 && desc.shape[0] == (int64_t) f->size &&
      desc.data == f->data);
  pf_node_frame_release (f);
  pair_close (&p);
  CHECK_INT (pf_hold_count_live (), ==, 0);
  CHECK_INT (pf_segment_count_live (), ==, 0);
  CHECK_INT (pf_test_count_fds (), ==, fds0);
}

/* Every plane's rows, packed. */
static uint8_t *
packed (const pf_node_frame * f, uint64_t * size)
{
  const pf_node_video_layout *l = &f->layout;
  uint8_t *out = malloc (l->size), *o = out;
  uint32_t i, r;

  for (i = 0; i < l->n_planes; i++)
    for (r = 0; r < l->plane_height[i]; r++) {
      memcpy (o, (const uint8_t *) f->data + l->plane_offset[i] +
          (uint64_t) r * l->plane_stride[i], l->plane_row_bytes[i]);
      o += l->plane_row_bytes[i];
    }
  *size = (uint64_t) (o - out);
  return out;
}

static void
case_arrow (void)
{
  static const char *formats[] = { "RGBA", "I420" };
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  struct arrow_expect ex;
  struct pair p;
  pf_arrow_desc desc;
  pf_node_frame *f;
  pf_hold *hold;
  char err[256];
  const void *data;
  uint64_t size;
  unsigned int k;
  int fds0 = pf_test_count_fds ();

  for (k = 0; k < 2; k++) {
    pair_open (&p, formats[k]);
    f = pair_send (&p, k);
    hold = pf_hold_new_node_frame (f);
    CHECK_INT (pf_arrow_desc_from_frame (f, ARROW_DEVICE_CPU, &desc), ==, 0);
    CHECK_INT (pf_arrow_export (&desc, hold, &schema, &array), ==, 0);
    CHECK_INT (pf_hold_get_refcount (hold), ==, 2);
    /* the owner lets go: the array holds the frame */
    pf_hold_unref (hold);
    CHECK_INT (free_slots (&p), ==, 1);

    memset (&ex, 0, sizeof (ex));
    ex.device_type = ARROW_DEVICE_CPU;
    ex.width = W;
    ex.height = H;
    ex.n_planes = p.layout.n_planes;
    ex.format = formats[k];
    ex.bytes = packed (f, &ex.size);
    data = f->data;             /* f is zeroed once released */
    size = f->size;
    CHECK_MSG (arrow_consumer_import (&schema, &array, 1, &ex, err,
            sizeof (err)) == 0, "%s: %s", formats[k], err);
    CHECK_INT (ex.releases, ==, 2);
    CHECK (ex.data_seen == (uint64_t) (uintptr_t) data);
    CHECK (ex.length_seen == (int64_t) size);
    CHECK (ex.pts_seen == k * 1000);
    free ((void *) ex.bytes);
    /* moved out and released by the consumer: the frame went back once */
    CHECK (schema.release == NULL && array.array.release == NULL);
    CHECK_INT (free_slots (&p), ==, 2);
    CHECK_INT (pf_hold_count_live (), ==, 0);
    pair_close (&p);
  }

  /* An export nobody takes: release callbacks straight away; refusals
   * leave the structs released and take no reference. */
  pair_open (&p, "RGBA");
  f = pair_send (&p, 5);
  hold = pf_hold_new_node_frame (f);
  CHECK_INT (pf_arrow_desc_from_frame (f, ARROW_DEVICE_CUDA_HOST, &desc), ==,
      0);
  CHECK_INT (pf_arrow_export (&desc, hold, NULL, &array), ==, 0);
  CHECK_INT (array.device_type, ==, ARROW_DEVICE_CUDA_HOST);
  CHECK (array.sync_event == NULL);
  array.array.release (&array.array);
  CHECK (array.array.release == NULL);
  CHECK_INT (pf_hold_get_refcount (hold), ==, 1);
  desc.device_type = 99;
  CHECK_INT (pf_arrow_export (&desc, hold, &schema, &array), ==, -EINVAL);
  CHECK (schema.release == NULL && array.array.release == NULL);
  CHECK_INT (pf_arrow_desc_from_frame (f, ARROW_DEVICE_CUDA, &desc), ==,
      -EINVAL);
  CHECK_INT (pf_hold_get_refcount (hold), ==, 1);
  pf_hold_unref (hold);
  CHECK_INT (free_slots (&p), ==, 2);
  pair_close (&p);
  CHECK_INT (pf_hold_count_live (), ==, 0);
  CHECK_INT (pf_segment_count_live (), ==, 0);
  CHECK_INT (pf_test_count_fds (), ==, fds0);
}

int
main (int argc, char **argv)
{
  bc_init ();
  if (argc == 2 && strcmp (argv[1], "dlpack") == 0)
    case_dlpack ();
  else if (argc == 2 && strcmp (argv[1], "arrow") == 0)
    case_arrow ();
  else {
    fprintf (stderr, "usage: %s dlpack|arrow\n", argv[0]);
    return 2;
  }
  printf ("ok %s\n", argv[1]);
  return 0;
}
