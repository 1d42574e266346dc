/* pinnedflow: the node producer (loan, fill, publish), plain C
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * See pf-node.h. The loan/publish face of pf_pool (pf-pool.h): the pool
 * owns the slots of the one pinned segment, the waits for a free slot and
 * the tickets that catch a double publish; this file adds the video layout,
 * the timestamps and the pf_producer that sends the frames. Nothing of the
 * wire protocol is handled here.
 *
 * A slot's life: pf_pool_loan() (the application's loan, its ticket in
 * loan->loan_id) -> pf_pool_redeem() by publish or discard -> held by the
 * transport (token = slot + 1) until every client that received it
 * released it (frame_released) -> pf_pool_return(); at once when nobody
 * received it, or on discard.
 *
 * Threading: every public function may be called from any thread. @lock
 * guards the video layout and the PTS anchor; @cond (with @lock) is
 * broadcast when a client connects or leaves (wait_clients). The pool has
 * its own lock, a leaf. The transport's callbacks (frame_released,
 * client_*) run without the transport's lock held, on its I/O thread or
 * (frame_released) in publish's pf_producer_wait_ready()/_publish(); the
 * transport's own lock nests inside @lock (pf_producer_get_n_clients()
 * under @lock).
 *
 * Delivery: publish waits for every every-frame consumer to have room
 * (pf_producer_wait_ready(), bounded by the transport's reliable timeout);
 * a loan that finds no free slot asks for the consumers' release
 * doorbells while it waits (pf_producer_want_releases(): they ring only
 * then, issue 35), and asks the transport every LOAN_SLICE_MS to
 * disconnect the consumers that hold slots and released none for that
 * timeout (pf_producer_reclaim_stalled()), so consumers that stop releasing
 * cannot stall the producer for ever, whatever their delivery.
 *
 * Lifetime: the application owns the producer (_new/_free) and the
 * producer the pool. pf_producer_close() in _free() releases every frame
 * still held before the I/O thread stops, so no callback runs after
 * _free() returns.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <pinnedflow/pf-node.h>

#include <pinnedflow/pf-node-private.h>
#include <pinnedflow/pf-pool.h>

#include "pf-time-private.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SLOTS 4096
/* While no slot is free, the reliable timeout is applied this often. */
#define LOAN_SLICE_MS 50

/* The segment every node producer states: TIME from 0, rate 1 (the PTS
 * the application gives are its stream time). */
static const pf_stream_segment default_segment = {
  .format = 3,                  /* GST_FORMAT_TIME */
  .rate = 1.0,
  .applied_rate = 1.0,
  .stop = PF_TIME_NONE,
  .duration = PF_TIME_NONE,
};

struct pf_node_producer
{
  pf_producer *transport;
  pf_pool *pool;
  uint64_t device_base;         /* device pool: its device address, else 0 */
  /* one copy per domain (pf_node_producer_set_domain_hooks ()): set
   * before the first publish, read without the lock after */
  int have_domains;
  pf_node_domain_hooks domains;

  pthread_mutex_t lock;
  pthread_cond_t cond;          /* a client connected or left */
  int have_video;
  pf_node_video_layout video;
  int have_anchor;              /* clock_pts = anchor + pts */
  uint64_t anchor;
};

/* Token handed to pf_producer_publish: the slot index + 1 (never NULL). */
static void *
slot_token (uint32_t slot)
{
  return (void *) (uintptr_t) (slot + 1);
}

static void
on_frame_released (void *user_data, void *token)
{
  pf_node_producer *p = user_data;
  uintptr_t t = (uintptr_t) token;

  if (t >= PF_NODE_DOMAIN_TOKEN_MIN && p->have_domains) {
    p->domains.release (p->domains.data, token);
    return;
  }
  if (t == 0 || t > pf_pool_get_n_slots (p->pool))
    return;
  pf_pool_return (p->pool, (uint32_t) (t - 1));
}

/* Client callbacks only wake waiters: the count itself is the transport's
 * (already up to date when a callback runs, which is after the fact). */
static void
on_client_change (void *user_data, const pf_client_info * info)
{
  pf_node_producer *p = user_data;

  pthread_mutex_lock (&p->lock);
  pthread_cond_broadcast (&p->cond);
  pthread_mutex_unlock (&p->lock);
}

/* The pool: one segment of @n_slots slots of @slot_size bytes; in @given
 * when not NULL (pf_node_producer_new_in()). */
static int
make_pool (const pf_node_producer_config * config, uint32_t n_slots,
    pf_segment * given, pf_pool ** out)
{
  pf_segment *seg = NULL;
  uint64_t stride;
  unsigned int flags;
  int res;

  res = pf_pool_slot_stride (config->slot_size, &stride);
  if (res < 0)
    return res;
  if (stride > UINT64_MAX / n_slots)
    return -EOVERFLOW;
  flags = PF_SEGMENT_FLAG_SEAL_WRITERS;
  if (!(config->flags & PF_NODE_PRODUCER_NO_LOCK))
    flags |= PF_SEGMENT_FLAG_LOCK;
  if (config->flags & PF_NODE_PRODUCER_HUGEPAGES)
    flags |= PF_SEGMENT_FLAG_HUGEPAGES;
  if (given != NULL) {
    if (pf_segment_get_size (given) < stride * n_slots)
      return -EINVAL;
    seg = pf_segment_ref (given);
    res = 0;
  } else {
    res = pf_segment_new ("pinnedflow-node-pool", stride * n_slots, flags,
        &seg);
  }
  if (res < 0)
    return res;
  res = pf_pool_new (seg, stride, n_slots, out);
  pf_segment_unref (seg);       /* the pool holds it */
  return res;
}

int
pf_node_producer_new (const pf_node_producer_config * config,
    pf_node_producer ** out)
{
  return pf_node_producer_new_in (config, NULL, 0, out);
}

int
pf_node_producer_new_in (const pf_node_producer_config * config,
    pf_segment * seg, uint64_t device_base, pf_node_producer ** out)
{
  pf_node_producer *p = NULL;
  pf_producer_config pc;
  uint32_t n_slots;
  int res;

  if (out == NULL)
    return -EINVAL;
  *out = NULL;
  if (config == NULL || config->socket_path == NULL ||
      config->socket_path[0] == '\0' || config->slot_size == 0)
    return -EINVAL;
  n_slots = config->n_slots ? config->n_slots : 4;
  if (n_slots > MAX_SLOTS)
    return -EINVAL;

  p = calloc (1, sizeof (*p));
  if (p == NULL)
    return -ENOMEM;
  res = make_pool (config, n_slots, seg, &p->pool);
  if (res < 0) {
    free (p);
    return res;
  }
  p->device_base = device_base;
  pthread_mutex_init (&p->lock, NULL);
  pf_cond_init_monotonic (&p->cond);

  memset (&pc, 0, sizeof (pc));
  pc.socket_path = config->socket_path;
  pc.perms = config->perms ? config->perms : 0600;
  pc.max_client_frames = config->max_client_frames ?
      config->max_client_frames : n_slots;
  pc.callbacks.frame_released = on_frame_released;
  pc.callbacks.client_connected = on_client_change;
  pc.callbacks.client_disconnected = on_client_change;
  pc.callbacks.user_data = p;
  res = pf_producer_new (&pc, &p->transport);
  if (res < 0) {
    pthread_cond_destroy (&p->cond);
    pthread_mutex_destroy (&p->lock);
    pf_pool_unref (p->pool);
    free (p);
    return res;
  }
  /* A STREAM with a segment says the liveness is known (not live until
   * pf_node_producer_set_live()): a consumer with delivery auto starts at
   * once instead of waiting for one (pinnedshmsrc waited 1 s). */
  pf_producer_set_segment (p->transport, &default_segment);
  *out = p;
  return 0;
}

void
pf_node_producer_free (pf_node_producer * p)
{
  if (p == NULL)
    return;
  /* Runs frame_released for every frame still held, then stops the I/O
   * thread: no callback can arrive after this. */
  pf_producer_close (p->transport);
  pf_producer_unref (p->transport);
  if (p->have_domains && p->domains.destroy)
    p->domains.destroy (p->domains.data);
  pf_pool_unref (p->pool);
  pthread_cond_destroy (&p->cond);
  pthread_mutex_destroy (&p->lock);
  free (p);
}

int
pf_node_producer_set_caps (pf_node_producer * p, const char *caps)
{
  if (p == NULL || caps == NULL)
    return -EINVAL;
  pthread_mutex_lock (&p->lock);
  p->have_video = 0;
  pthread_mutex_unlock (&p->lock);
  return pf_producer_set_caps (p->transport, caps);
}

int
pf_node_producer_set_video (pf_node_producer * p, const char *format,
    uint32_t width, uint32_t height, int32_t fps_n, int32_t fps_d)
{
  pf_node_video_layout layout;
  char caps[256];
  int res;

  if (p == NULL)
    return -EINVAL;
  res = pf_node_video_layout_compute (format, width, height, 0, &layout);
  if (res < 0)
    return res;
  if (layout.size > pf_pool_get_slot_stride (p->pool))
    return -EMSGSIZE;
  res = pf_node_video_caps (caps, sizeof (caps), format, width, height,
      fps_n, fps_d);
  if (res < 0)
    return res;
  res = pf_producer_set_caps (p->transport, caps);
  if (res < 0)
    return res;
  pthread_mutex_lock (&p->lock);
  p->video = layout;
  p->have_video = 1;
  pthread_mutex_unlock (&p->lock);
  return 0;
}

/* pf_pool_loan() that applies the transport's reliable timeout while it
 * waits, with the release doorbells asked for meanwhile (a consumer with
 * a frame ring rings only while the producer waits for a release:
 * pf_producer_want_releases ()). */
static int
pool_loan (pf_node_producer * p, int timeout_ms, pf_pool_slot * slot)
{
  struct timespec deadline;
  int res, slice, left, wanting = 0;

  if (timeout_ms > 0)
    pf_deadline_after (&deadline, timeout_ms);
  for (;;) {
    res = pf_pool_loan (p->pool, 0, slot);
    if (res != -EAGAIN || timeout_ms == 0)
      break;
    /* every slot is out: consumers that hold frames and have released
     * none for the reliable timeout are disconnected, which gives their
     * slots back (demoting them would free nothing) */
    pf_producer_reclaim_stalled (p->transport);
    if (!wanting) {
      /* takes what was released so far (frame_released returns those
       * slots, on this thread); what comes after rings: look again */
      pf_producer_want_releases (p->transport, 1);
      wanting = 1;
      continue;
    }
    slice = LOAN_SLICE_MS;
    if (timeout_ms > 0) {
      left = pf_deadline_remaining_ms (&deadline);
      if (left <= 0) {
        res = -ETIMEDOUT;
        break;
      }
      if (left < slice)
        slice = left;
    }
    res = pf_pool_loan (p->pool, slice, slot);
    if (res != -ETIMEDOUT && res != -EAGAIN)
      break;
  }
  if (wanting)
    pf_producer_want_releases (p->transport, 0);
  return res;
}

static int
loan_common (pf_node_producer * p, int timeout_ms, int video,
    pf_node_loan * loan)
{
  pf_pool_slot slot;
  int res;

  if (p == NULL || loan == NULL)
    return -EINVAL;
  memset (loan, 0, sizeof (*loan));
  if (video) {
    pthread_mutex_lock (&p->lock);
    if (p->have_video) {
      loan->has_video_meta = 1;
      loan->layout = p->video;
    }
    pthread_mutex_unlock (&p->lock);
    if (!loan->has_video_meta)
      return -EINVAL;
  }
  res = pool_loan (p, timeout_ms, &slot);
  if (res < 0) {
    memset (loan, 0, sizeof (*loan));
    return res;
  }
  loan->slot = slot.index;
  loan->loan_id = slot.id;
  loan->segment_offset = slot.offset;
  if (p->device_base) {
    /* a device slot: its device address, never host memory */
    loan->data = (void *) (uintptr_t) (p->device_base + slot.offset);
    loan->domain = PF_NODE_DOMAIN_DEVICE;
  } else {
    loan->data = slot.data;
  }
  loan->capacity = slot.size;
  loan->size = video ? loan->layout.size : slot.size;
  loan->pts = loan->dts = loan->duration = PF_TIME_NONE;
  loan->clock_pts = PF_TIME_NONE;
  return 0;
}

int
pf_node_producer_loan (pf_node_producer * p, int timeout_ms,
    pf_node_loan * loan)
{
  return loan_common (p, timeout_ms, 0, loan);
}

int
pf_node_producer_loan_video (pf_node_producer * p, int timeout_ms,
    pf_node_loan * loan)
{
  return loan_common (p, timeout_ms, 1, loan);
}

/* The CLOCK_MONOTONIC due time of @loan (see pf_node_loan.clock_pts). */
static uint64_t
loan_clock_pts (pf_node_producer * p, const pf_node_loan * loan)
{
  uint64_t clock_pts = loan->clock_pts, now;

  if (clock_pts != PF_TIME_NONE || loan->pts == PF_TIME_NONE)
    return clock_pts;
  pthread_mutex_lock (&p->lock);
  if (!p->have_anchor) {
    now = pf_monotonic_ns ();
    p->anchor = now > loan->pts ? now - loan->pts : 0;
    p->have_anchor = 1;
  }
  clock_pts = p->anchor + loan->pts;
  pthread_mutex_unlock (&p->lock);
  return clock_pts;
}

static void
fill_frame (pf_node_producer * p, const pf_node_loan * loan,
    pf_producer_frame * frame)
{
  uint32_t i;

  memset (frame, 0, sizeof (*frame));
  frame->n_chunks = 1;
  frame->chunks[0].segment_id = pf_segment_get_id (pf_pool_get_segment
      (p->pool));
  frame->chunks[0].offset =
      (uint64_t) loan->slot * pf_pool_get_slot_stride (p->pool);
  frame->chunks[0].size = loan->size;
  frame->pts = loan->pts;
  frame->dts = loan->dts;
  frame->duration = loan->duration;
  frame->offset = UINT64_MAX;
  frame->offset_end = UINT64_MAX;
  frame->clock_pts = loan_clock_pts (p, loan);
  frame->buffer_flags = loan->buffer_flags;
  if (loan->has_video_meta) {
    frame->meta_flags = PF_FRAME_HAS_VIDEO_META;
    frame->width = loan->layout.width;
    frame->height = loan->layout.height;
    frame->n_planes = loan->layout.n_planes;
    for (i = 0; i < loan->layout.n_planes; i++) {
      frame->plane_offset[i] = loan->layout.plane_offset[i];
      frame->plane_stride[i] = loan->layout.plane_stride[i];
    }
  }
}

/* publish with the device variants the domain hooks made: each variant's
 * token comes back when its consumers released it, at once when nobody
 * got it. */
static int
publish_domains (pf_node_producer * p, const pf_producer_frame * host,
    pf_segment * seg, uint32_t slot)
{
  pf_producer_frame frames[PF_PRODUCER_MAX_VARIANTS];
  pf_segment *segs[PF_PRODUCER_MAX_VARIANTS];
  void *tokens[PF_PRODUCER_MAX_VARIANTS];
  pf_producer_variant v[PF_PRODUCER_MAX_VARIANTS];
  int sent[PF_PRODUCER_MAX_VARIANTS];
  unsigned int n, i;
  int res;

  n = p->domains.prepare (p->domains.data, p->transport, host,
      (const uint8_t *) pf_segment_get_base (seg) + host->chunks[0].offset,
      frames + 1, segs + 1, tokens + 1, PF_PRODUCER_MAX_VARIANTS - 1);
  v[0].frame = host;
  v[0].segments = &seg;
  v[0].token = slot_token (slot);
  for (i = 1; i <= n; i++) {
    v[i].frame = &frames[i];
    v[i].segments = &segs[i];
    v[i].token = tokens[i];
  }
  res = pf_producer_publish_domains (p->transport, v, n + 1, sent);
  if (res < 0 || sent[0] == 0)  /* nobody holds it: no frame_released */
    pf_pool_return (p->pool, slot);
  for (i = 1; i <= n; i++)
    if (res < 0 || sent[i] == 0)
      p->domains.release (p->domains.data, tokens[i]);
  return res;
}

/* A device producer's publish: the device frame @dev, with its variants
 * in the other domains the hooks made (the host one first, when a
 * consumer in the host domain wants it; then other devices'). */
static int
publish_device_domains (pf_node_producer * p, const pf_producer_frame * dev,
    pf_segment * seg, uint32_t slot)
{
  pf_producer_frame frames[PF_PRODUCER_MAX_VARIANTS];
  pf_segment *segs[PF_PRODUCER_MAX_VARIANTS];
  void *tokens[PF_PRODUCER_MAX_VARIANTS];
  pf_producer_variant v[PF_PRODUCER_MAX_VARIANTS];
  int sent[PF_PRODUCER_MAX_VARIANTS], res;
  unsigned int n, n_host = 0, i, mine;

  n = p->domains.download (p->domains.data, p->transport, dev,
      p->device_base + dev->chunks[0].offset, frames, segs, tokens,
      PF_PRODUCER_MAX_VARIANTS - 1, &n_host);
  if (n == 0) {
    res = pf_producer_publish (p->transport, dev, &seg, slot_token (slot));
    if (res <= 0)
      pf_pool_return (p->pool, slot);
    return res;
  }
  /* [host,] the device frame, the other devices' */
  mine = n_host;
  for (i = 0; i <= n; i++) {
    unsigned int k = i < mine ? i : i - 1;

    if (i == mine) {
      v[i].frame = dev;
      v[i].segments = &seg;
      v[i].token = slot_token (slot);
    } else {
      v[i].frame = &frames[k];
      v[i].segments = &segs[k];
      v[i].token = tokens[k];
    }
  }
  /* consumers of device segments that named no domain: the device frame,
   * as before */
  res = pf_producer_publish_domains_full (p->transport, v, n + 1, mine, sent);
  for (i = 0; i <= n; i++) {
    if (res >= 0 && sent[i] != 0)
      continue;
    if (i == mine)
      pf_pool_return (p->pool, slot);
    else
      p->domains.release (p->domains.data, v[i].token);
  }
  return res;
}

int
pf_node_producer_publish (pf_node_producer * p, pf_node_loan * loan)
{
  pf_producer_frame frame;
  pf_segment *segs[1];
  uint32_t slot;
  int res;

  if (p == NULL || loan == NULL)
    return -EINVAL;
  /* Spends the ticket: a second publish of the same loan fails here. */
  res = pf_pool_redeem (p->pool, loan->slot, loan->loan_id);
  loan->loan_id = 0;
  if (res < 0)
    return res;
  slot = loan->slot;
  if (loan->size == 0 || loan->size > pf_pool_get_slot_stride (p->pool) ||
      (loan->has_video_meta && (loan->layout.n_planes > PF_MAX_PLANES ||
              loan->layout.size > loan->size))) {
    /* A bad size still consumes a genuine loan, as documented. */
    pf_pool_return (p->pool, slot);
    return -EINVAL;
  }

  fill_frame (p, loan, &frame);
  segs[0] = pf_pool_get_segment (p->pool);
  /* every-frame consumers are never skipped: wait for their room (at most
   * the reliable timeout, then they are demoted or disconnected) */
  pf_producer_wait_ready (p->transport, -1);
  if (p->have_domains && p->device_base != 0)
    return publish_device_domains (p, &frame, segs[0], slot);
  if (p->have_domains)
    return publish_domains (p, &frame, segs[0], slot);
  res = pf_producer_publish (p->transport, &frame, segs, slot_token (slot));
  if (res <= 0)                 /* nobody holds it: no frame_released */
    pf_pool_return (p->pool, slot);
  return res;
}

void *
pf_node_producer_get_domain_data (pf_node_producer * p)
{
  return p != NULL && p->have_domains ? p->domains.data : NULL;
}

int
pf_node_producer_set_domain_hooks (pf_node_producer * p,
    const pf_node_domain_hooks * hooks)
{
  if (p == NULL || hooks == NULL || hooks->release == NULL ||
      (p->device_base == 0 && hooks->prepare == NULL) ||
      (p->device_base != 0 && hooks->download == NULL))
    return -EINVAL;
  if (p->have_domains)
    return -EBUSY;
  p->domains = *hooks;
  p->have_domains = 1;
  return 0;
}

int
pf_node_producer_set_live (pf_node_producer * p, int live)
{
  if (p == NULL)
    return -EINVAL;
  return pf_producer_set_live (p->transport, live);
}

int
pf_node_producer_set_reliable_timeout (pf_node_producer * p, int timeout_ms,
    int action)
{
  if (p == NULL)
    return -EINVAL;
  return pf_producer_set_reliable_timeout (p->transport, timeout_ms, action);
}

int
pf_node_producer_discard (pf_node_producer * p, pf_node_loan * loan)
{
  int res;

  if (p == NULL || loan == NULL)
    return -EINVAL;
  res = pf_pool_redeem (p->pool, loan->slot, loan->loan_id);
  loan->loan_id = 0;
  if (res == 0)
    pf_pool_return (p->pool, loan->slot);
  return res;
}

int
pf_node_producer_send_eos (pf_node_producer * p)
{
  if (p == NULL)
    return -EINVAL;
  return pf_producer_send_eos (p->transport);
}

int
pf_node_producer_wait_idle (pf_node_producer * p, int timeout_ms)
{
  int res;

  if (p == NULL)
    return -EINVAL;
  /* a wait for releases: the consumers' release doorbells meanwhile (and
   * what they released so far taken now) */
  pf_producer_want_releases (p->transport, 1);
  res = pf_pool_wait_idle (p->pool, timeout_ms);
  pf_producer_want_releases (p->transport, 0);
  return res;
}

typedef struct
{
  pf_node_producer *p;
  unsigned int n;
} ClientsWait;

/* The transport's lock nests inside ours; its callbacks run unlocked. */
static int
has_clients (void *data)
{
  ClientsWait *w = data;

  return pf_producer_get_n_clients (w->p->transport) >= w->n;
}

int
pf_node_producer_wait_clients (pf_node_producer * p, unsigned int n_clients,
    int timeout_ms)
{
  ClientsWait w = { p, n_clients };
  int res;

  if (p == NULL)
    return -EINVAL;
  pthread_mutex_lock (&p->lock);
  res = pf_cond_wait_until (&p->cond, &p->lock, timeout_ms, has_clients, &w);
  pthread_mutex_unlock (&p->lock);
  return res;
}

unsigned int
pf_node_producer_get_n_slots (pf_node_producer * p)
{
  return p ? pf_pool_get_n_slots (p->pool) : 0;
}

uint64_t
pf_node_producer_get_slot_stride (pf_node_producer * p)
{
  return p ? pf_pool_get_slot_stride (p->pool) : 0;
}

unsigned int
pf_node_producer_get_free_slots (pf_node_producer * p)
{
  pf_pool_stats st;

  if (p == NULL)
    return 0;
  pf_pool_get_stats (p->pool, &st);
  return st.n_free;
}

unsigned int
pf_node_producer_get_n_clients (pf_node_producer * p)
{
  return p ? pf_producer_get_n_clients (p->transport) : 0;
}

pf_segment *
pf_node_producer_get_segment (pf_node_producer * p)
{
  return p ? pf_pool_get_segment (p->pool) : NULL;
}

pf_producer *
pf_node_producer_get_transport (pf_node_producer * p)
{
  return p ? p->transport : NULL;
}
