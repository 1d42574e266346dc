/* pinnedflow: the node producer (loan, fill, publish), plain C
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * See pf-node.h. A bounded pool of slots in one pinned segment, published
 * through a pf_producer. Nothing of the wire protocol is handled here.
 *
 * Threading: every public function may be called from any thread. @lock
 * guards the slot table, the video layout and the PTS anchor; @cond is
 * broadcast when a slot comes back or a client connects or leaves. The
 * transport's callbacks (frame_released, client_*) run on its I/O thread
 * without the transport's lock held and take @lock; the transport's own
 * lock nests inside @lock (pf_producer_get_n_clients() under @lock).
 *
 * Lifetime: the application owns the producer (_new/_free). A published
 * slot is held by the transport until every client that received it
 * released it; pf_producer_close() in _free() releases them all before the
 * I/O thread stops, so no callback runs after _free() returns.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <pinnedflow/pf-node.h>

#include "pf-time-private.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Rounds @v up to @align (a power of two). */
static uint64_t
align_up (uint64_t v, uint64_t align)
{
  return (v + align - 1) & ~(align - 1);
}

enum slot_state
{
  SLOT_FREE = 0,
  SLOT_LOANED,
  SLOT_PUBLISHED,
};

struct pf_node_producer
{
  pf_producer *transport;
  pf_segment *seg;
  uint8_t *base;
  uint64_t slot_size;
  unsigned int n_slots;

  pthread_mutex_t lock;
  pthread_cond_t cond;          /* a slot came back */
  uint8_t *state;               /* enum slot_state per slot */
  uint64_t *loan_id;            /* per slot, while SLOT_LOANED */
  unsigned int n_free;
  unsigned int n_published;
  unsigned int cursor;          /* next slot to try: round robin */
  uint64_t next_loan_id;

  int have_video;
  pf_node_video_layout video;

  int have_anchor;              /* clock_pts = anchor + pts */
  uint64_t anchor;
};

/* Token handed to pf_producer_publish: the slot index + 1 (never NULL). */
static void *
slot_token (unsigned int slot)
{
  return (void *) (uintptr_t) (slot + 1);
}

static void
slot_return_locked (pf_node_producer * p, unsigned int slot)
{
  if (p->state[slot] == SLOT_PUBLISHED)
    p->n_published--;
  p->state[slot] = SLOT_FREE;
  p->loan_id[slot] = 0;
  p->n_free++;
  pthread_cond_broadcast (&p->cond);
}

static void
on_frame_released (void *user_data, void *token)
{
  pf_node_producer *p = user_data;
  uintptr_t t = (uintptr_t) token;

  if (t == 0 || t > p->n_slots)
    return;
  pthread_mutex_lock (&p->lock);
  if (p->state[t - 1] == SLOT_PUBLISHED)
    slot_return_locked (p, (unsigned int) (t - 1));
  pthread_mutex_unlock (&p->lock);
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

int
pf_node_producer_new (const pf_node_producer_config * config,
    pf_node_producer ** out)
{
  pf_node_producer *p = NULL;
  pf_producer_config pc;
  pthread_condattr_t ca;
  unsigned int flags;
  uint64_t total;
  int res;

  if (out == NULL)
    return -EINVAL;
  *out = NULL;
  if (config == NULL || config->socket_path == NULL ||
      config->socket_path[0] == '\0' || config->slot_size == 0)
    return -EINVAL;

  p = calloc (1, sizeof (*p));
  if (p == NULL)
    return -ENOMEM;
  p->n_slots = config->n_slots ? config->n_slots : 4;
  if (p->n_slots > 4096) {
    res = -EINVAL;
    goto fail_alloc;
  }
  p->slot_size = align_up (config->slot_size, pf_page_size ());
  if (p->slot_size < config->slot_size ||
      p->slot_size > UINT64_MAX / p->n_slots) {
    res = -EOVERFLOW;
    goto fail_alloc;
  }
  total = p->slot_size * p->n_slots;

  p->state = calloc (p->n_slots, sizeof (*p->state));
  p->loan_id = calloc (p->n_slots, sizeof (*p->loan_id));
  if (p->state == NULL || p->loan_id == NULL) {
    res = -ENOMEM;
    goto fail_alloc;
  }
  p->n_free = p->n_slots;
  p->next_loan_id = 1;

  pthread_mutex_init (&p->lock, NULL);
  pthread_condattr_init (&ca);
  pthread_condattr_setclock (&ca, CLOCK_MONOTONIC);
  pthread_cond_init (&p->cond, &ca);
  pthread_condattr_destroy (&ca);

  flags = PF_SEGMENT_FLAG_SEAL_WRITERS;
  if (!(config->flags & PF_NODE_PRODUCER_NO_LOCK))
    flags |= PF_SEGMENT_FLAG_LOCK;
  if (config->flags & PF_NODE_PRODUCER_HUGEPAGES)
    flags |= PF_SEGMENT_FLAG_HUGEPAGES;
  res = pf_segment_new ("pinnedflow-node-pool", total, flags, &p->seg);
  if (res < 0)
    goto fail_sync;
  p->base = pf_segment_get_base (p->seg);

  memset (&pc, 0, sizeof (pc));
  pc.socket_path = config->socket_path;
  pc.perms = config->perms ? config->perms : 0600;
  pc.max_client_frames = config->max_client_frames ?
      config->max_client_frames : p->n_slots;
  pc.callbacks.frame_released = on_frame_released;
  pc.callbacks.client_connected = on_client_change;
  pc.callbacks.client_disconnected = on_client_change;
  pc.callbacks.user_data = p;
  res = pf_producer_new (&pc, &p->transport);
  if (res < 0)
    goto fail_seg;

  *out = p;
  return 0;

fail_seg:
  pf_segment_unref (p->seg);
fail_sync:
  pthread_cond_destroy (&p->cond);
  pthread_mutex_destroy (&p->lock);
fail_alloc:
  free (p->state);
  free (p->loan_id);
  free (p);
  return res;
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
  pf_segment_unref (p->seg);
  pthread_cond_destroy (&p->cond);
  pthread_mutex_destroy (&p->lock);
  free (p->state);
  free (p->loan_id);
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
  if (layout.size > p->slot_size)
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

/* Takes a free slot, waiting as asked. Called with the lock held. */
static int
take_slot_locked (pf_node_producer * p, int timeout_ms, unsigned int *slot)
{
  struct timespec deadline;
  unsigned int i, s;
  int r;

  if (timeout_ms > 0)
    pf_deadline_after (&deadline, timeout_ms);
  while (p->n_free == 0) {
    if (timeout_ms == 0)
      return -EAGAIN;
    if (timeout_ms < 0) {
      pthread_cond_wait (&p->cond, &p->lock);
    } else {
      r = pthread_cond_timedwait (&p->cond, &p->lock, &deadline);
      if (r == ETIMEDOUT && p->n_free == 0)
        return -ETIMEDOUT;
    }
  }
  for (i = 0; i < p->n_slots; i++) {
    s = (p->cursor + i) % p->n_slots;
    if (p->state[s] == SLOT_FREE) {
      p->cursor = (s + 1) % p->n_slots;
      p->state[s] = SLOT_LOANED;
      p->loan_id[s] = p->next_loan_id++;
      p->n_free--;
      *slot = s;
      return 0;
    }
  }
  return -EIO;                  /* n_free out of sync: cannot happen */
}

static int
loan_common (pf_node_producer * p, int timeout_ms, int video,
    pf_node_loan * loan)
{
  unsigned int slot;
  int res;

  if (p == NULL || loan == NULL)
    return -EINVAL;
  memset (loan, 0, sizeof (*loan));
  pthread_mutex_lock (&p->lock);
  if (video && !p->have_video) {
    pthread_mutex_unlock (&p->lock);
    return -EINVAL;
  }
  res = take_slot_locked (p, timeout_ms, &slot);
  if (res == 0) {
    loan->slot = slot;
    loan->loan_id = p->loan_id[slot];
    loan->segment_offset = (uint64_t) slot *p->slot_size;
    loan->data = p->base + loan->segment_offset;
    loan->capacity = p->slot_size;
    loan->size = p->slot_size;
    if (video) {
      loan->has_video_meta = 1;
      loan->layout = p->video;
      loan->size = p->video.size;
    }
    loan->pts = loan->dts = loan->duration = PF_TIME_NONE;
    loan->clock_pts = PF_TIME_NONE;
  }
  pthread_mutex_unlock (&p->lock);
  return res;
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

/* Checks that @loan is a live loan of @p. Called with the lock held. */
static int
check_loan_locked (pf_node_producer * p, const pf_node_loan * loan)
{
  if (loan->slot >= p->n_slots || loan->loan_id == 0 ||
      p->state[loan->slot] != SLOT_LOANED ||
      p->loan_id[loan->slot] != loan->loan_id)
    return -EINVAL;
  return 0;
}

int
pf_node_producer_publish (pf_node_producer * p, pf_node_loan * loan)
{
  pf_frame frame;
  pf_segment *segs[1];
  uint64_t clock_pts;
  unsigned int i, slot;
  int res;

  if (p == NULL || loan == NULL)
    return -EINVAL;
  pthread_mutex_lock (&p->lock);
  res = check_loan_locked (p, loan);
  if (res == 0 && (loan->size == 0 || loan->size > p->slot_size))
    res = -EINVAL;
  if (res == 0 && loan->has_video_meta &&
      (loan->layout.n_planes > PF_MAX_PLANES || loan->layout.size > loan->size))
    res = -EINVAL;
  if (res < 0) {
    /* A bad size still consumes a genuine loan, as documented. */
    if (check_loan_locked (p, loan) == 0)
      slot_return_locked (p, loan->slot);
    pthread_mutex_unlock (&p->lock);
    loan->loan_id = 0;
    return res;
  }
  slot = loan->slot;
  p->state[slot] = SLOT_PUBLISHED;
  p->n_published++;
  clock_pts = loan->clock_pts;
  if (clock_pts == PF_TIME_NONE && loan->pts != PF_TIME_NONE) {
    if (!p->have_anchor) {
      uint64_t now = pf_monotonic_ns ();
      p->anchor = now > loan->pts ? now - loan->pts : 0;
      p->have_anchor = 1;
    }
    clock_pts = p->anchor + loan->pts;
  }
  pthread_mutex_unlock (&p->lock);

  memset (&frame, 0, sizeof (frame));
  frame.n_chunks = 1;
  frame.chunks[0].segment_id = pf_segment_get_id (p->seg);
  frame.chunks[0].offset = (uint64_t) slot *p->slot_size;
  frame.chunks[0].size = loan->size;
  frame.pts = loan->pts;
  frame.dts = loan->dts;
  frame.duration = loan->duration;
  frame.offset = UINT64_MAX;
  frame.offset_end = UINT64_MAX;
  frame.clock_pts = clock_pts;
  frame.buffer_flags = loan->buffer_flags;
  if (loan->has_video_meta) {
    frame.meta_flags = PF_FRAME_HAS_VIDEO_META;
    frame.width = loan->layout.width;
    frame.height = loan->layout.height;
    frame.n_planes = loan->layout.n_planes;
    for (i = 0; i < loan->layout.n_planes; i++) {
      frame.plane_offset[i] = loan->layout.plane_offset[i];
      frame.plane_stride[i] = loan->layout.plane_stride[i];
    }
  }
  segs[0] = p->seg;
  loan->loan_id = 0;

  res = pf_producer_publish (p->transport, &frame, segs, slot_token (slot));
  if (res <= 0) {
    /* Nobody holds it: frame_released will not run. */
    pthread_mutex_lock (&p->lock);
    if (p->state[slot] == SLOT_PUBLISHED)
      slot_return_locked (p, slot);
    pthread_mutex_unlock (&p->lock);
  }
  return res;
}

int
pf_node_producer_discard (pf_node_producer * p, pf_node_loan * loan)
{
  int res;

  if (p == NULL || loan == NULL)
    return -EINVAL;
  pthread_mutex_lock (&p->lock);
  res = check_loan_locked (p, loan);
  if (res == 0)
    slot_return_locked (p, loan->slot);
  pthread_mutex_unlock (&p->lock);
  loan->loan_id = 0;
  return res;
}

int
pf_node_producer_send_eos (pf_node_producer * p)
{
  if (p == NULL)
    return -EINVAL;
  return pf_producer_send_eos (p->transport);
}

/* Waits on the condition until done (p) returns true. Lock held. */
static int
wait_until_locked (pf_node_producer * p, int timeout_ms,
    int (*done) (pf_node_producer * p, unsigned int arg), unsigned int arg)
{
  struct timespec deadline;

  if (timeout_ms > 0)
    pf_deadline_after (&deadline, timeout_ms);
  while (!done (p, arg)) {
    if (timeout_ms == 0)
      return -ETIMEDOUT;
    if (timeout_ms < 0) {
      pthread_cond_wait (&p->cond, &p->lock);
    } else if (pthread_cond_timedwait (&p->cond, &p->lock, &deadline) ==
        ETIMEDOUT && !done (p, arg)) {
      return -ETIMEDOUT;
    }
  }
  return 0;
}

static int
is_idle (pf_node_producer * p, unsigned int unused)
{
  return p->n_published == 0;
}

static int
has_clients (pf_node_producer * p, unsigned int n)
{
  /* The transport's lock nests inside ours; its callbacks run unlocked. */
  return pf_producer_get_n_clients (p->transport) >= n;
}

int
pf_node_producer_wait_idle (pf_node_producer * p, int timeout_ms)
{
  int res;

  if (p == NULL)
    return -EINVAL;
  pthread_mutex_lock (&p->lock);
  res = wait_until_locked (p, timeout_ms, is_idle, 0);
  pthread_mutex_unlock (&p->lock);
  return res;
}

int
pf_node_producer_wait_clients (pf_node_producer * p, unsigned int n_clients,
    int timeout_ms)
{
  int res;

  if (p == NULL)
    return -EINVAL;
  pthread_mutex_lock (&p->lock);
  res = wait_until_locked (p, timeout_ms, has_clients, n_clients);
  pthread_mutex_unlock (&p->lock);
  return res;
}

unsigned int
pf_node_producer_get_n_slots (pf_node_producer * p)
{
  return p ? p->n_slots : 0;
}

unsigned int
pf_node_producer_get_free_slots (pf_node_producer * p)
{
  unsigned int n;

  if (p == NULL)
    return 0;
  pthread_mutex_lock (&p->lock);
  n = p->n_free;
  pthread_mutex_unlock (&p->lock);
  return n;
}

unsigned int
pf_node_producer_get_n_clients (pf_node_producer * p)
{
  return p ? pf_producer_get_n_clients (p->transport) : 0;
}

pf_segment *
pf_node_producer_get_segment (pf_node_producer * p)
{
  return p ? p->seg : NULL;
}

pf_producer *
pf_node_producer_get_transport (pf_node_producer * p)
{
  return p ? p->transport : NULL;
}
