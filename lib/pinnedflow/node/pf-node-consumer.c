/* pinnedflow: the node consumer (receive, read, release), plain C
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * See pf-node.h. Frames on top of a pf_consumer; caps parsed once per caps
 * string and shared by the frames that belong to it.
 *
 * Threading: pf_node_consumer_next(), _get_caps() and _get_error() belong
 * to one receiving thread at a time. pf_node_frame_release() may run on
 * any thread: it touches only the frame, the refcounts (atomic) and the
 * spare list (under @spare_lock); for a device frame with named readers it
 * first blocks in the CUDA layer's wait for their streams
 * (pf_node_frame_read_on(), one caller at a time per frame).
 *
 * Lifetime: the consumer is refcounted internally: the application's
 * handle (dropped by pf_node_consumer_free()) plus one per frame handed
 * out. The transport and the spare frames go with the last reference, so
 * frames stay valid after the handle is freed. A frame holds one reference
 * on each of its segments and on its caps.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <pinnedflow/pf-node.h>
#include <pinnedflow/pf-node-private.h>

#include "pf-time-private.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One caps string, shared by the frames that belong to it. */
struct node_caps
{
  atomic_int refcount;
  pf_node_caps_info info;
  int has_layout;
  pf_node_video_layout layout;  /* default layout from the caps */
  char text[];
};

struct node_frame
{
  pf_node_frame pub;            /* first: the public pointer is ours */
  pf_node_consumer *owner;
  struct node_caps *caps;
  pf_segment *segs[PF_MAX_CHUNKS];
  uint64_t dev_ptr[PF_MAX_CHUNKS];      /* device frames: chunk addresses */
  /* device frames: streams whose work must complete before the release */
  uintptr_t readers[PF_NODE_MAX_READERS];
  uint32_t n_readers;
  struct node_frame *next_spare;
};

struct pf_node_consumer
{
  atomic_int refcount;          /* the application's handle + one per frame */
  pf_consumer *transport;
  struct node_caps *caps;       /* latest, or NULL; receiving thread only */
  int broken;                   /* a violation seen here: next() fails */
  /* device frames: the access of our mapping (the CUDA layer's) */
  pf_node_device_access_func device_access;
  pf_node_device_sync_func device_sync; /* set before the first frame */
  char error[256];
  /* Released frames, reused by next(): no allocation per frame once as
   * many frames as the application holds at most have been made. Frames
   * may be released from any thread. */
  pthread_mutex_t spare_lock;
  struct node_frame *spare;
};

static struct node_caps *
node_caps_new (const char *text)
{
  size_t len = strlen (text);
  struct node_caps *nc = malloc (sizeof (*nc) + len + 1);

  if (nc == NULL)
    return NULL;
  atomic_init (&nc->refcount, 1);
  memcpy (nc->text, text, len + 1);
  if (pf_node_caps_parse (text, &nc->info) < 0)
    memset (&nc->info, 0, sizeof (nc->info));
  nc->has_layout = nc->info.width && nc->info.height &&
      pf_node_video_layout_compute (nc->info.format, nc->info.width,
      nc->info.height, 0, &nc->layout) == 0;
  if (!nc->has_layout)
    memset (&nc->layout, 0, sizeof (nc->layout));
  return nc;
}

static struct node_caps *
node_caps_ref (struct node_caps *nc)
{
  if (nc)
    atomic_fetch_add (&nc->refcount, 1);
  return nc;
}

static void
node_caps_unref (struct node_caps *nc)
{
  if (nc && atomic_fetch_sub (&nc->refcount, 1) == 1)
    free (nc);
}

static void
consumer_unref (pf_node_consumer * c)
{
  struct node_frame *f;

  if (atomic_fetch_sub (&c->refcount, 1) != 1)
    return;
  pf_consumer_unref (c->transport);
  node_caps_unref (c->caps);
  while ((f = c->spare) != NULL) {
    c->spare = f->next_spare;
    free (f);
  }
  pthread_mutex_destroy (&c->spare_lock);
  free (c);
}

int
pf_node_consumer_new (const char *socket_path, int timeout_ms,
    pf_node_consumer ** out)
{
  return pf_node_consumer_new_with (socket_path, timeout_ms,
      PF_DELIVERY_DEFAULT, out);
}

int
pf_node_consumer_new_with (const char *socket_path, int timeout_ms,
    uint32_t delivery, pf_node_consumer ** out)
{
  return pf_node_consumer_connect (socket_path, timeout_ms, delivery, 0,
      NULL, out);
}

int
pf_node_consumer_connect (const char *socket_path, int timeout_ms,
    uint32_t delivery, uint32_t options, pf_node_device_access_func access,
    pf_node_consumer ** out)
{
  pf_consumer_options opts = {.delivery = delivery,.flags = options };
  pf_node_consumer *c;
  int res;

  if (out == NULL)
    return -EINVAL;
  *out = NULL;
  if (socket_path == NULL || socket_path[0] == '\0' ||
      delivery > PF_DELIVERY_NEWEST_FRAME)
    return -EINVAL;
  c = calloc (1, sizeof (*c));
  if (c == NULL)
    return -ENOMEM;
  atomic_init (&c->refcount, 1);
  /* the version-2 connect: a lost producer (-ECONNRESET) is told from a
   * hang-up after EOS (-EPIPE) */
  res = pf_consumer_connect_with (socket_path, timeout_ms, -1, &opts,
      &c->transport);
  if (res < 0) {
    free (c);
    return res;
  }
  c->device_access = access;
  pthread_mutex_init (&c->spare_lock, NULL);
  *out = c;
  return 0;
}

int
pf_node_consumer_set_budget (pf_node_consumer * c, uint64_t max_bytes,
    uint32_t max_segments, uint32_t flags)
{
  pf_consumer_budget budget = {.max_bytes = max_bytes,
    .max_segments = max_segments,.flags = flags
  };

  if (c == NULL)
    return -EINVAL;
  return pf_consumer_set_budget (c->transport, &budget);
}

void
pf_node_consumer_free (pf_node_consumer * c)
{
  if (c)
    consumer_unref (c);
}

int
pf_node_consumer_get_fd (pf_node_consumer * c)
{
  return c ? pf_consumer_get_fd (c->transport) : -EINVAL;
}

/* TRUE when every plane of @l lies inside @size bytes. Planes whose row
 * count is unknown (no layout from the caps) only need to start inside. */
static int
layout_fits (const pf_node_video_layout * l, uint64_t size)
{
  uint64_t end;
  uint32_t i;

  for (i = 0; i < l->n_planes; i++) {
    if (l->plane_stride[i] <= 0 || l->plane_offset[i] >= size)
      return 0;
    if (l->plane_height[i] == 0)
      continue;
    end = l->plane_offset[i] + (uint64_t) l->plane_stride[i] *
        (l->plane_height[i] - 1) + l->plane_row_bytes[i];
    if ((uint64_t) l->plane_stride[i] < l->plane_row_bytes[i] || end > size)
      return 0;
  }
  return 1;
}

/* Fills a frame from a FRAME event, taking references. */
static int
make_frame (pf_node_consumer * c, const pf_event * ev, pf_node_frame ** out)
{
  const pf_consumer_frame *m = &ev->frame;
  struct node_frame *f;
  uint32_t i, n_dev;

  pthread_mutex_lock (&c->spare_lock);
  if ((f = c->spare) != NULL)
    c->spare = f->next_spare;
  pthread_mutex_unlock (&c->spare_lock);
  if (f == NULL && (f = malloc (sizeof (*f))) == NULL)
    return -ENOMEM;
  memset (f, 0, sizeof (*f));
  f->owner = c;
  atomic_fetch_add (&c->refcount, 1);
  f->caps = node_caps_ref (c->caps);

  f->pub.seq = m->seq;
  f->pub.caps_seq = m->caps_seq;
  f->pub.n_chunks = m->n_chunks;
  n_dev = 0;
  for (i = 0; i < m->n_chunks && i < PF_MAX_CHUNKS; i++) {
    f->segs[i] = pf_segment_ref (ev->segments[i]);
    if (pf_segment_get_device (ev->segments[i]) != NULL) {
      /* the transport gives a device chunk's device address: never a
       * host pointer in a field host code reads */
      f->dev_ptr[i] = (uint64_t) (uintptr_t) ev->data[i];
      n_dev++;
    } else {
      f->pub.chunk_data[i] = ev->data[i];
    }
    f->pub.chunk_size[i] = m->chunks[i].size;
    f->pub.size += m->chunks[i].size;
  }
  f->pub.domain = n_dev ? PF_NODE_DOMAIN_DEVICE : PF_NODE_DOMAIN_HOST;
  f->pub.data = m->n_chunks == 1 ? f->pub.chunk_data[0] : NULL;
  if (n_dev != 0 && n_dev != m->n_chunks) {
    snprintf (c->error, sizeof (c->error), "FRAME %" PRIu64 ": chunks in "
        "host and device memory at once (%u of %u on a device)", m->seq,
        n_dev, m->n_chunks);
    pf_node_frame_release (&f->pub);
    return -EPROTO;
  }

  if (f->caps) {
    f->pub.caps = f->caps->text;
    f->pub.info = f->caps->info;
  } else {
    f->pub.caps = "";
  }
  if (m->meta_flags & PF_FRAME_HAS_VIDEO_META) {
    f->pub.has_video_meta = 1;
    if (f->caps && f->caps->has_layout &&
        f->caps->layout.n_planes == m->n_planes)
      f->pub.layout = f->caps->layout;  /* row bytes, plane heights */
    f->pub.layout.width = m->width;
    f->pub.layout.height = m->height;
    f->pub.layout.n_planes = m->n_planes;
    for (i = 0; i < m->n_planes && i < PF_MAX_PLANES; i++) {
      f->pub.layout.plane_offset[i] = m->plane_offset[i];
      f->pub.layout.plane_stride[i] = m->plane_stride[i];
    }
    f->pub.layout.size = f->pub.size;
  } else if (f->caps && f->caps->has_layout &&
      f->caps->layout.size <= f->pub.size) {
    f->pub.layout = f->caps->layout;
  }
  /* The meta comes from the peer: a plane outside the frame would send an
   * application reading by stride past the frame's memory. */
  if (!layout_fits (&f->pub.layout, f->pub.size)) {
    snprintf (c->error, sizeof (c->error), "FRAME %" PRIu64 ": video meta "
        "(%u planes) lies outside the frame's %" PRIu64 " bytes", m->seq,
        f->pub.layout.n_planes, f->pub.size);
    pf_node_frame_release (&f->pub);
    return -EPROTO;
  }

  f->pub.pts = m->pts;
  f->pub.dts = m->dts;
  f->pub.duration = m->duration;
  f->pub.clock_pts = m->clock_pts;
  f->pub.send_time = m->send_time;
  f->pub.recv_time = pf_monotonic_ns ();
  f->pub.buffer_flags = m->buffer_flags;
  /* a device mapping: read-only where its access is PF_DEVICE_ACCESS_READ
   * (1), what the CUDA layer's importer asks the driver for */
  if (f->pub.domain == PF_NODE_DOMAIN_DEVICE)
    f->pub.readonly = c->device_access && c->device_access (f->segs[0]) == 1;
  else
    f->pub.readonly = (pf_segment_get_state (f->segs[0]) &
        PF_SEGMENT_STATE_READONLY) ? 1 : 0;
  f->pub.segment = f->segs[0];
  f->pub.segment_base = pf_segment_get_base (f->segs[0]);
  f->pub.segment_size = pf_segment_get_size (f->segs[0]);
  f->pub.segment_fd = pf_segment_get_fd (f->segs[0]);
  f->pub.segment_id = pf_segment_get_id (f->segs[0]);
  f->pub.segment_offset = m->chunks[0].offset;
  *out = &f->pub;
  return 0;
}

int
pf_node_consumer_next (pf_node_consumer * c, int timeout_ms,
    pf_node_frame ** frame)
{
  struct timespec deadline;
  struct node_caps *nc;
  pf_event ev;
  uint64_t seq;
  int res, t = timeout_ms;

  if (c == NULL || frame == NULL)
    return -EINVAL;
  *frame = NULL;
  if (c->broken)
    return -EPROTO;
  if (timeout_ms > 0)
    pf_deadline_after (&deadline, timeout_ms);

  for (;;) {
    memset (&ev, 0, sizeof (ev));
    res = pf_consumer_receive (c->transport, t, &ev);
    if (res <= 0) {
      if (res < 0)
        snprintf (c->error, sizeof (c->error), "%s",
            pf_consumer_get_error (c->transport)[0] ?
            pf_consumer_get_error (c->transport) : pf_node_strerror (res));
      return res;
    }
    switch (ev.type) {
      case PF_EVENT_CAPS:
        nc = node_caps_new (ev.caps ? ev.caps : "");
        pf_consumer_event_clear (&ev);
        if (nc == NULL)
          return -ENOMEM;
        node_caps_unref (c->caps);
        c->caps = nc;
        break;
      case PF_EVENT_FRAME:
        /* pf_consumer validated the message: 1..4 chunks, each mapped. */
        seq = ev.frame.seq;
        res = make_frame (c, &ev, frame);
        pf_consumer_event_clear (&ev);  /* zeroes ev: seq saved above */
        if (res == -EPROTO)
          c->broken = 1;
        else if (res == -ENOMEM)
          pf_consumer_release (c->transport, seq);      /* never handed out */
        return res < 0 ? res : 1;
      case PF_EVENT_EOS:
        pf_consumer_event_clear (&ev);
        return PF_NODE_EOS;
      case PF_EVENT_STREAM:
        /* absorbed: pf_node_consumer_get_stream(), _get_delivery() */
        pf_consumer_event_clear (&ev);
        break;
      default:
        pf_consumer_event_clear (&ev);
        break;
    }
    if (timeout_ms > 0)
      t = pf_deadline_remaining_ms (&deadline);
  }
}

int
pf_node_frame_release (pf_node_frame * frame)
{
  struct node_frame *f = (struct node_frame *) frame;
  pf_node_consumer *c;
  uint32_t i;
  int res, sync_res;

  if (f == NULL)
    return 0;
  c = f->owner;
  /* a device frame goes back only once its readers' streams are done */
  sync_res = f->n_readers && c->device_sync ?
      c->device_sync (f->segs[0], f->readers, f->n_readers) : 0;
  res = pf_consumer_release (c->transport, f->pub.seq);
  if (res == 0)
    res = sync_res;
  for (i = 0; i < PF_MAX_CHUNKS; i++)
    if (f->segs[i])
      pf_segment_unref (f->segs[i]);
  node_caps_unref (f->caps);
  memset (f, 0, sizeof (*f));   /* a stale pointer reads zeros, not data */
  pthread_mutex_lock (&c->spare_lock);
  f->next_spare = c->spare;
  c->spare = f;
  pthread_mutex_unlock (&c->spare_lock);
  consumer_unref (c);
  return res;
}

void
pf_node_consumer_set_device_sync (pf_node_consumer * c,
    pf_node_device_sync_func sync)
{
  if (c)
    c->device_sync = sync;
}

int
pf_node_frame_add_reader (pf_node_frame * frame, uintptr_t stream)
{
  struct node_frame *f = (struct node_frame *) frame;
  uint32_t i;

  if (f == NULL || stream == 0 || f->pub.domain != PF_NODE_DOMAIN_DEVICE)
    return -EINVAL;
  for (i = 0; i < f->n_readers; i++)
    if (f->readers[i] == stream)
      return 0;
  if (f->n_readers == PF_NODE_MAX_READERS)
    return -ENOSPC;
  f->readers[f->n_readers++] = stream;
  return 0;
}

int
pf_node_frame_get_chunk_ptrs (const pf_node_frame * frame,
    uint64_t ptr[PF_MAX_CHUNKS])
{
  const struct node_frame *f = (const struct node_frame *) frame;

  if (ptr)
    memset (ptr, 0, sizeof (uint64_t) * PF_MAX_CHUNKS);
  if (f == NULL || ptr == NULL || f->pub.domain != PF_NODE_DOMAIN_DEVICE)
    return -EINVAL;
  memcpy (ptr, f->dev_ptr, sizeof (f->dev_ptr));
  return 0;
}

const char *
pf_node_consumer_get_device_stats (pf_node_consumer * c, uint64_t * skipped,
    uint32_t * refused)
{
  if (c == NULL) {
    if (skipped)
      *skipped = 0;
    if (refused)
      *refused = 0;
    return "";
  }
  return pf_consumer_get_device_stats (c->transport, skipped, refused);
}

const char *
pf_node_consumer_get_caps (pf_node_consumer * c)
{
  return c && c->caps ? c->caps->text : NULL;
}

unsigned int
pf_node_consumer_get_held (pf_node_consumer * c)
{
  return c ? pf_consumer_get_held (c->transport) : 0;
}

uint32_t
pf_node_consumer_get_max_held (pf_node_consumer * c)
{
  return c ? pf_consumer_get_max_held (c->transport) : 0;
}

const char *
pf_node_consumer_get_error (pf_node_consumer * c)
{
  if (c == NULL)
    return "";
  if (c->error[0])
    return c->error;
  return pf_consumer_get_error (c->transport);
}

uint32_t
pf_node_consumer_get_delivery (pf_node_consumer * c)
{
  return c ? pf_consumer_get_delivery (c->transport) : 0;
}

void
pf_node_consumer_get_stream (pf_node_consumer * c, pf_stream_info * info)
{
  if (info == NULL)
    return;
  if (c == NULL) {
    memset (info, 0, sizeof (*info));
    return;
  }
  pf_consumer_get_stream (c->transport, info);
}

void
pf_node_consumer_get_stats (pf_node_consumer * c, pf_consumer_stats * stats)
{
  if (stats == NULL)
    return;
  if (c == NULL) {
    memset (stats, 0, sizeof (*stats));
    return;
  }
  pf_consumer_get_stats (c->transport, stats);
}

pf_consumer *
pf_node_consumer_get_transport (pf_node_consumer * c)
{
  return c ? c->transport : NULL;
}
