/* pinnedflow: a shared hold on a frame for its borrowers, plain C
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * See pf-hold.h. The count is atomic; the release function runs once, on
 * the thread that dropped the last reference, with no lock held.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <pinnedflow/pf-hold.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

struct pf_hold
{
  atomic_int refcount;
  void *data;
  pf_hold_release_func release;
};

static atomic_int live_holds;

pf_hold *
pf_hold_new (void *data, pf_hold_release_func release)
{
  pf_hold *h = calloc (1, sizeof (*h));

  if (h == NULL)
    return NULL;
  atomic_init (&h->refcount, 1);
  h->data = data;
  h->release = release;
  atomic_fetch_add (&live_holds, 1);
  return h;
}

static void
release_node_frame (void *data)
{
  /* -EPIPE (the producer is gone) still frees the frame: nothing to do */
  (void) pf_node_frame_release (data);
}

pf_hold *
pf_hold_new_node_frame (pf_node_frame * frame)
{
  if (frame == NULL)
    return NULL;
  return pf_hold_new (frame, release_node_frame);
}

static void
release_device_frame (void *data)
{
  pf_device_frame_release (data);
}

pf_hold *
pf_hold_new_device_frame (pf_device_frame * frame)
{
  if (frame == NULL)
    return NULL;
  return pf_hold_new (frame, release_device_frame);
}

static void
release_segment (void *data)
{
  pf_segment_unref (data);
}

pf_hold *
pf_hold_new_segment (pf_segment * seg)
{
  pf_hold *h;

  if (seg == NULL)
    return NULL;
  h = pf_hold_new (seg, release_segment);
  if (h != NULL)
    pf_segment_ref (seg);
  return h;
}

void
pf_hold_upload_release (void *hold, int status)
{
  pf_hold_unref (hold);
}

int
pf_hold_upload_node_frame (pf_uploader * up, pf_hold * hold, int timeout_ms,
    pf_device_frame ** out)
{
  pf_upload_source src;
  const pf_node_frame *f;
  int res;

  if (out)
    *out = NULL;
  if (up == NULL || hold == NULL || out == NULL ||
      hold->release != release_node_frame)
    return -EINVAL;
  res = pf_node_frame_to_upload_source (hold->data, &src);
  if (res < 0)
    return res;
  src.release = pf_hold_upload_release;
  src.release_data = pf_hold_ref (hold);
  res = pf_uploader_upload (up, &src, timeout_ms, out, NULL);
  if (res < 0) {
    pf_hold_unref (hold);       /* not queued: the callback will not run */
    return res;
  }
  /* what the frame is, as pf_node_frame_upload() says it (the frame is
   * still held: the caller's reference) */
  f = hold->data;
  (*out)->width = f->layout.n_planes ? f->layout.width : f->info.width;
  (*out)->height = f->layout.n_planes ? f->layout.height : f->info.height;
  (*out)->pixel_stride = f->layout.pixel_stride;
  (*out)->seq = f->seq;
  (*out)->pts = f->pts;
  snprintf ((*out)->format, sizeof ((*out)->format), "%s", f->info.format);
  return 0;
}

pf_hold *
pf_hold_ref (pf_hold * hold)
{
  if (hold)
    atomic_fetch_add (&hold->refcount, 1);
  return hold;
}

void
pf_hold_unref (pf_hold * hold)
{
  if (hold == NULL || atomic_fetch_sub (&hold->refcount, 1) != 1)
    return;
  if (hold->release)
    hold->release (hold->data);
  free (hold);
  atomic_fetch_sub (&live_holds, 1);
}

void *
pf_hold_get_data (const pf_hold * hold)
{
  return hold ? hold->data : NULL;
}

int
pf_hold_get_refcount (const pf_hold * hold)
{
  return hold ? atomic_load (&((pf_hold *) hold)->refcount) : 0;
}

int
pf_hold_count_live (void)
{
  return atomic_load (&live_holds);
}
