/* pinnedflow: the producer end of the transport (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Threads and locks. One mutex (p->lock) guards all producer state: clients,
 * announced segments, outstanding frames, caps. pf_producer_publish() and the
 * other public calls take it for the duration of a few non-blocking sends.
 * The I/O thread takes it to accept, read releases and reap dead clients.
 *
 * User callbacks are never called with p->lock held: the I/O thread and
 * pf_producer_close() collect what happened under the lock into a private
 * list and run the callbacks after unlocking. A callback may therefore call
 * any pf_producer_* function, including pf_producer_publish() and dropping
 * the last reference of segments (whose destroy notify takes p->lock).
 *
 * Waiting: pf_producer_wait_ready() sleeps on p->cond (CLOCK_MONOTONIC)
 * under p->lock, with the release doorbells asked for while it does
 * (release_want (), pf-producer-release.c: the consumers with a frame
 * ring ring only then); the I/O thread broadcasts it after every round
 * that may have made room (releases, reaped clients, a drained socket),
 * and so do pf_producer_set_flushing(), _set_live(),
 * _set_reliable_timeout() and close. The waiter itself applies the reliable timeout (it knows when it
 * started waiting for whom) and, in a live stream, the lag budget
 * (pf-producer-pacing.c), and dispatches what that caused after
 * unlocking, like pf_producer_publish() does with drop reports.
 *
 * Lock order: a segment's own lock (taken by pf_segment_attach_once() while
 * our create function runs) comes before p->lock. Nothing takes a segment
 * lock while holding p->lock.
 *
 * Nothing is keyed on fd numbers: epoll carries the client id, segments are
 * found by the pf_segment attachment keyed on the producer.
 *
 * This file holds the producer object, the segments it announced and the
 * public API; its I/O thread (poll loop, accept, per-client dispatch), the
 * deferred callbacks and its end (pf_producer_close(), the free on the last
 * reference) are pf-producer-io.c, the per-consumer state machine
 * (handshake, releases, sending) pf-producer-client.c, the live pacing (lag
 * budget, penalties) pf-producer-pacing.c, the shared structs
 * pf-producer-private.h. Calls go one way: this file calls those three;
 * none of them calls a function of this file.
 */
#include "pf-producer-private.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---- segments ----------------------------------------------------------- */

static void
pseg_destroy (void *data)
{
  struct pseg *s = data;
  pf_producer *p = s->p;
  struct client *c;

  pthread_mutex_lock (&p->lock);
  if (s->prev)
    s->prev->next = s->next;
  else
    p->segs = s->next;
  if (s->next)
    s->next->prev = s->prev;
  if (p->cached_pseg == s) {
    p->cached_seg = NULL;
    p->cached_pseg = NULL;
  }
  for (c = p->clients; c != NULL; c = c->next)
    if (c->state != CLIENT_DEAD)
      client_forget_seg (p, c, s->id);
  pthread_mutex_unlock (&p->lock);

  if (s->fd >= 0)
    close (s->fd);
  free (s);
  pf_producer_unref (p);
}

/* A device segment's DEVICE_SEGMENT_ADD, checked by the receiver's rules
 * once, here: a segment its consumers would refuse is refused at publish
 * (-EINVAL). 0 for a host segment. */
static int
pseg_describe_device (struct pseg *s, pf_segment * seg)
{
  const pf_segment_device *d = pf_segment_get_device (seg);
  uint8_t buf[sizeof (struct pf_msg_device_segment_add)];

  if (d == NULL)
    return 0;
  s->is_device = 1;
  s->dmsg.segment_id = s->id;
  s->dmsg.size = s->size;
  s->dmsg.granularity = d->granularity;
  s->dmsg.handle_type = d->handle_type;
  memcpy (s->dmsg.device_uuid, d->uuid, sizeof (d->uuid));
  return pf_msg_write_device_segment_add (buf, &s->dmsg) == 0 ? -EINVAL : 0;
}

/* Runs under the segment's lock, at most once per segment and producer. */
static void *
pseg_create (pf_segment * seg, void *user_data, int *err)
{
  pf_producer *p = user_data;
  struct pseg *s;
  int closed;

  /* A closed producer announces nothing: keep no fd for it. */
  pthread_mutex_lock (&p->lock);
  closed = p->closed;
  pthread_mutex_unlock (&p->lock);
  if (closed) {
    *err = -EPIPE;
    return NULL;
  }
  if ((s = calloc (1, sizeof (*s))) == NULL) {
    *err = -ENOMEM;
    return NULL;
  }
  s->fd = fcntl (pf_segment_get_fd (seg), F_DUPFD_CLOEXEC, 3);
  if (s->fd < 0) {
    *err = -errno;
    free (s);
    return NULL;
  }
  s->id = pf_segment_get_id (seg);
  s->size = pf_segment_get_size (seg);
  if (pseg_describe_device (s, seg) < 0) {
    /* what a consumer would have refused, in its words */
    pthread_mutex_lock (&p->lock);
    snprintf (p->error, sizeof (p->error), "%s", pf_msg_error ());
    pthread_mutex_unlock (&p->lock);
    close (s->fd);
    free (s);
    *err = -EINVAL;
    return NULL;
  }
  s->p = pf_producer_ref (p);

  pthread_mutex_lock (&p->lock);
  s->next = p->segs;
  if (p->segs)
    p->segs->prev = s;
  p->segs = s;
  pthread_mutex_unlock (&p->lock);
  return s;
}

/* ---- public API ---------------------------------------------------------- */

static uint64_t
random_session_id (void)
{
  uint64_t id = 0;

  if (getrandom (&id, sizeof (id), GRND_NONBLOCK) != sizeof (id) || id == 0)
    id = pf_monotonic_ns () ^ ((uint64_t) getpid () << 32) ^ (uintptr_t) & id;
  return id ? id : 1;
}

int
pf_producer_new (const pf_producer_config * config, pf_producer ** out)
{
  struct epoll_event e = {.events = EPOLLIN };
  pthread_condattr_t ca;
  const char *env;
  pf_producer *p;
  uint64_t i, n_spare;
  int res;

  if (out == NULL)
    return -EINVAL;
  *out = NULL;
  if (config == NULL || config->socket_path == NULL ||
      config->socket_path[0] == '\0' || config->max_client_frames < 1 ||
      config->reliable_timeout_ms < -1 ||
      (config->reliable_action != PF_RELIABLE_TIMEOUT_DEMOTE &&
          config->reliable_action != PF_RELIABLE_TIMEOUT_DISCONNECT))
    return -EINVAL;

  p = calloc (1, sizeof (*p));
  if (p == NULL)
    return -ENOMEM;
  atomic_init (&p->refcount, 1);
  pthread_mutex_init (&p->lock, NULL);
  pthread_condattr_init (&ca);
  pthread_condattr_setclock (&ca, CLOCK_MONOTONIC);
  pthread_cond_init (&p->cond, &ca);
  pthread_condattr_destroy (&ca);
  p->live = config->live ? 1 : 0;
  p->reliable_timeout_ms = config->reliable_timeout_ms == 0 ?
      PF_PRODUCER_DEFAULT_RELIABLE_TIMEOUT_MS : config->reliable_timeout_ms;
  p->reliable_action = config->reliable_action;
  p->live_max_lag_ms = PF_PRODUCER_DEFAULT_LIVE_MAX_LAG_MS;
  p->idle_ns = RELEASE_IDLE_NS;
  if ((env = getenv ("PINNEDFLOW_RELEASE_IDLE_MS")) != NULL && *env != '\0')
    p->idle_ns = strtoull (env, NULL, 10) * UINT64_C (1000000);
  p->listen_fd = p->epoll_fd = p->wake_fd = -1;
  p->max_client_frames = config->max_client_frames;
  p->max_clients = config->max_clients;
  p->cb = config->callbacks;
  p->session_id = random_session_id ();
  p->closed = 1;                /* until the thread runs */
  if ((p->path = strdup (config->socket_path)) == NULL) {
    res = -ENOMEM;
    goto error;
  }

  if ((p->epoll_fd = epoll_create1 (EPOLL_CLOEXEC)) < 0 ||
      (p->wake_fd = eventfd (0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
    res = -errno;
    goto error;
  }
  e.data.u64 = TOKEN_WAKE;
  if (epoll_ctl (p->epoll_fd, EPOLL_CTL_ADD, p->wake_fd, &e) < 0) {
    res = -errno;
    goto error;
  }
  p->listen_fd = pf_socket_listen (p->path, config->perms, LISTEN_BACKLOG,
      &p->file);
  if (p->listen_fd < 0) {
    res = p->listen_fd;
    p->listen_fd = -1;
    goto error;
  }
  e.data.u64 = TOKEN_LISTEN;
  if (epoll_ctl (p->epoll_fd, EPOLL_CTL_ADD, p->listen_fd, &e) < 0) {
    res = -errno;
    goto error_unlink;
  }
  /* Frames on loan: one client holds at most max_client_frames; twice that
   * covers those released but not yet given back by the I/O thread. Made
   * now, so that publishing allocates none (issue 13), not even when the
   * number of frames out reaches a new high. */
  n_spare = 2 * (uint64_t) config->max_client_frames;
  if (n_spare > SPARE_FRAMES_MAX)
    n_spare = SPARE_FRAMES_MAX;
  for (i = 0; i < n_spare; i++) {
    struct pframe *f = calloc (1, sizeof (*f));

    if (f == NULL) {
      res = -ENOMEM;
      goto error_unlink;
    }
    f->next = p->spare;
    p->spare = f;
  }
  p->closed = 0;
  if ((res = -pthread_create (&p->thread, NULL, io_thread, p)) < 0) {
    p->closed = 1;
    goto error_unlink;
  }
  p->thread_started = 1;
  *out = p;
  return 0;

error_unlink:
  pf_socket_unlink (p->path, &p->file);
error:
  io_producer_free (p);
  return res;
}

pf_producer *
pf_producer_ref (pf_producer * p)
{
  atomic_fetch_add (&p->refcount, 1);
  return p;
}

void
pf_producer_unref (pf_producer * p)
{
  if (p == NULL || atomic_fetch_sub (&p->refcount, 1) != 1)
    return;
  io_producer_free (p);
}

int
pf_producer_set_caps (pf_producer * p, const char *caps)
{
  return pf_producer_set_caps_full (p, caps, NULL);
}

int
pf_producer_set_caps_full (pf_producer * p, const char *caps,
    const char *host_caps)
{
  struct client *c;
  char *copy, *host_copy = NULL;
  size_t len;

  if (p == NULL || caps == NULL || (len = strlen (caps)) == 0)
    return -EINVAL;
  if (len > PF_MAX_CAPS_LEN)
    return -EMSGSIZE;
  if (host_caps != NULL) {
    if ((len = strlen (host_caps)) == 0)
      return -EINVAL;
    if (len > PF_MAX_CAPS_LEN)
      return -EMSGSIZE;
  }
  if ((copy = strdup (caps)) == NULL)
    return -ENOMEM;
  if (host_caps != NULL && (host_copy = strdup (host_caps)) == NULL) {
    free (copy);
    return -ENOMEM;
  }

  pthread_mutex_lock (&p->lock);
  if (p->closed) {
    pthread_mutex_unlock (&p->lock);
    free (copy);
    free (host_copy);
    return -EPIPE;
  }
  free (p->caps);
  p->caps = copy;
  free (p->host_caps);
  p->host_caps = host_copy;
  p->caps_seq++;
  for (c = p->clients; c != NULL; c = c->next)
    if (c->state == CLIENT_ACTIVE)
      client_send_caps (p, c);
  pthread_mutex_unlock (&p->lock);
  return 0;
}

/* The announced segment of each chunk, in @ps; with p->lock held (it is
 * dropped and taken again on a miss). A one-entry cache, keyed on the
 * pf_segment and cleared by pseg_destroy(), serves the common case (every
 * frame from the same pool segment) without the segment's lock and list;
 * it is safe because the caller holds @segments for the call, so a cached
 * pseg found for one is alive. 0, or a negative errno (p->lock held). */
int
producer_lookup_psegs (pf_producer * p, unsigned int n,
    pf_segment * const *segments, struct pseg **ps)
{
  unsigned int i, miss = 0;
  int res = 0;

  for (i = 0; i < n; i++) {
    if (segments[i] == NULL)
      return -EINVAL;
    ps[i] = segments[i] == p->cached_seg ? p->cached_pseg : NULL;
    miss |= ps[i] == NULL;
  }
  if (!miss)
    return 0;
  /* pseg_create() takes p->lock (lock order: the segment's first) */
  pthread_mutex_unlock (&p->lock);
  for (i = 0; i < n && res == 0; i++) {
    if (ps[i] == NULL && (ps[i] = pf_segment_attach_once (segments[i], p,
                pseg_create, p, pseg_destroy, &res)) == NULL && res == 0)
      res = -ENOMEM;
  }
  pthread_mutex_lock (&p->lock);
  if (res == 0) {
    p->cached_seg = segments[0];
    p->cached_pseg = ps[0];
  }
  return res;
}

/* After the lookups (p->lock held; a miss may have dropped it): -EPIPE
 * if the producer closed meanwhile, else 0 with *@now the clock, and the
 * releases taken now: no doorbell for them while we publish. */
int
producer_publish_start (pf_producer * p, uint64_t * now)
{
  if (p->closed)
    return -EPIPE;
  *now = pf_monotonic_ns ();
  release_publish (p, *now);
  return 0;
}

/* The chunks of @frame against the segments they name (@ps, whose ids are
 * never 0): each a range inside its segment, what only the producer can
 * check (the FRAME's own rules are the codec's, pf_msg_frame_encode ()).
 * 0 with *@total the frame's bytes, or -EINVAL with p->error set. Under
 * p->lock. */
int
producer_chunks_check (pf_producer * p, const pf_producer_frame * frame,
    struct pseg *const *ps, uint64_t * total)
{
  unsigned int i;
  uint64_t bytes = 0;

  for (i = 0; i < frame->n_chunks; i++) {
    const pf_frame_chunk *ch = &frame->chunks[i];

    if (ch->segment_id != ps[i]->id) {
      snprintf (p->error, sizeof (p->error), "chunk %u names segment %"
          PRIu64 ", not the segment given for it (%" PRIu64 ")", i,
          ch->segment_id, ps[i]->id);
      return -EINVAL;
    }
    if (ch->offset > ps[i]->size || ch->size > ps[i]->size - ch->offset) {
      snprintf (p->error, sizeof (p->error), "chunk %u (offset %" PRIu64
          ", size %" PRIu64 ") outside segment %" PRIu64 " (%" PRIu64
          " bytes)", i, ch->offset, ch->size, ch->segment_id, ps[i]->size);
      return -EINVAL;
    }
    /* each is within a segment (< 2^40 bytes): the sum cannot wrap */
    bytes += ch->size;
  }
  *total = bytes;
  return 0;
}

const char *
pf_producer_get_error (pf_producer * p)
{
  return p != NULL ? p->error : "";
}

int
pf_producer_publish (pf_producer * p, const pf_producer_frame * frame,
    pf_segment * const *segments, void *token)
{
  struct event_list ev = { NULL };
  struct pseg *ps[PF_MAX_CHUNKS];
  struct pf_msg_frame msg;
  struct pframe *pf = NULL;
  struct client *c;
  uint64_t bytes = 0, now;
  int res, count = 0;

  if (p == NULL || frame == NULL || segments == NULL ||
      frame->n_chunks < 1 || frame->n_chunks > PF_MAX_CHUNKS)
    return -EINVAL;

  pthread_mutex_lock (&p->lock);
  if (p->closed) {
    res = -EPIPE;
    goto out;
  }
  if ((res = producer_lookup_psegs (p, frame->n_chunks, segments, ps)) < 0)
    goto out;
  if ((res = producer_publish_start (p, &now)) < 0)
    goto out;
  if (producer_chunks_check (p, frame, ps, &bytes) < 0) {
    res = -EINVAL;
    goto out;
  }
  if (pf_msg_frame_encode (&msg, frame, p->seq + 1, p->caps_seq, now) < 0) {
    /* the receiver's words: what a consumer would have refused */
    snprintf (p->error, sizeof (p->error), "%s", pf_msg_error ());
    res = -EINVAL;
    goto out;
  }
  /* A released pframe when there is one: no allocation per frame. */
  if ((pf = p->spare) != NULL)
    p->spare = pf->next;
  else if ((pf = malloc (sizeof (*pf))) == NULL) {
    res = -ENOMEM;
    goto out;
  }
  p->seq++;
  pf->seq = p->seq;
  pf->token = token;
  pf->holders = 0;
  pf->prev = NULL;
  for (c = p->clients; c != NULL; c = c->next) {
    if (c->state != CLIENT_ACTIVE)
      continue;
    /* what it released since the I/O thread last ran counts now */
    client_take_releases (p, c, &ev);
    if (c->state != CLIENT_ACTIVE)
      continue;
    count += client_offer_frame (p, c, (const uint8_t *) &msg, sizeof (msg),
        ps, frame->n_chunks, pf, bytes, frame->buffer_flags, now, &ev);
    /* the next wait_ready must look at this one */
    if (c->state == CLIENT_ACTIVE &&
        c->stats.delivery == PF_DELIVERY_EVERY_FRAME &&
        c->n_held >= p->max_client_frames)
      atomic_store (&p->ready_fast, 0);
  }
  if (count > 0) {
    pf->next = p->frames;
    if (p->frames)
      p->frames->prev = pf;
    p->frames = pf;
    pf = NULL;
  } else {
    p->unsent++;
  }
  /* lagging clients: their releases rung from now on
   * (pf-producer-release.c); only now, with the new frame in p->frames,
   * since asking takes the releases, and a fast consumer may have
   * released this frame already */
  for (c = p->clients; c != NULL; c = c->next)
    if (c->state == CLIENT_ACTIVE)
      release_held (p, c, &ev);
  res = count;

out:
  if (pf != NULL) {
    pf->next = p->spare;
    p->spare = pf;
  }
  pthread_mutex_unlock (&p->lock);
  /* releases and drop reports, on the caller's thread (it holds a
   * reference) */
  if (ev.head != NULL || ev.released != NULL)
    io_dispatch_events (p, &ev);
  return res;
}

int
pf_producer_send_eos (pf_producer * p)
{
  uint8_t buf[sizeof (struct pf_msg_header)];
  struct event_list ev = { NULL };
  struct client *c;
  size_t len = pf_msg_write_eos (buf);

  pthread_mutex_lock (&p->lock);
  if (p->closed) {
    pthread_mutex_unlock (&p->lock);
    return -EPIPE;
  }
  for (c = p->clients; c != NULL; c = c->next)
    if (c->state == CLIENT_ACTIVE)
      client_send_ctl (p, c, buf, len, -1);
  /* no publish comes to take the last releases: the doorbells now, as
   * when idle (pf-producer-release.c) */
  release_idle_now (p, &ev);
  pthread_mutex_unlock (&p->lock);
  if (ev.head != NULL || ev.released != NULL)
    io_dispatch_events (p, &ev);
  return 0;
}

unsigned int
pf_producer_get_n_clients (pf_producer * p)
{
  struct client *c;
  unsigned int n = 0;

  pthread_mutex_lock (&p->lock);
  for (c = p->clients; c != NULL; c = c->next)
    if (c->state == CLIENT_ACTIVE)
      n++;
  pthread_mutex_unlock (&p->lock);
  return n;
}

unsigned int
pf_producer_get_client_stats (pf_producer * p, pf_client_stats * stats,
    unsigned int max)
{
  struct client *c;
  unsigned int n = 0;

  pthread_mutex_lock (&p->lock);
  for (c = p->clients; c != NULL; c = c->next) {
    if (c->state != CLIENT_ACTIVE)
      continue;
    if (stats && n < max) {
      stats[n] = c->stats;
      stats[n].held = c->n_held;
      stats[n].requested = c->info.requested;
      stats[n].delivery = c->info.delivery;
      stats[n].demoted = c->demoted;
      stats[n].release_rings = (uint32_t) c->rel_rings;
    }
    n++;
  }
  pthread_mutex_unlock (&p->lock);
  return n;
}

uint64_t
pf_producer_get_unsent (pf_producer * p)
{
  uint64_t n;

  pthread_mutex_lock (&p->lock);
  n = p->unsent;
  pthread_mutex_unlock (&p->lock);
  return n;
}

/* Sends every active client its STREAM again if its delivery changed, or
 * always with @force (the segment changed). */
static void
update_streams (pf_producer * p, int force)
{
  struct client *c;

  for (c = p->clients; c != NULL; c = c->next)
    if (c->state == CLIENT_ACTIVE)
      client_update_stream (p, c, force);
}

int
pf_producer_set_live (pf_producer * p, int live)
{
  if (p == NULL)
    return -EINVAL;
  pthread_mutex_lock (&p->lock);
  if (p->closed) {
    pthread_mutex_unlock (&p->lock);
    return -EPIPE;
  }
  live = live ? 1 : 0;
  if (p->live != live) {
    p->live = live;
    update_streams (p, 1);
    pthread_cond_broadcast (&p->cond);
  }
  pthread_mutex_unlock (&p->lock);
  return 0;
}

static int
segment_valid (const pf_stream_segment * s)
{
  return s->format != 0 && s->rate == s->rate && s->rate != 0.0 &&
      s->rate - s->rate == 0.0 && s->applied_rate == s->applied_rate &&
      s->applied_rate != 0.0 && s->applied_rate - s->applied_rate == 0.0;
}

int
pf_producer_set_segment (pf_producer * p, const pf_stream_segment * segment)
{
  if (p == NULL || (segment != NULL && !segment_valid (segment)))
    return -EINVAL;
  pthread_mutex_lock (&p->lock);
  if (p->closed) {
    pthread_mutex_unlock (&p->lock);
    return -EPIPE;
  }
  p->have_segment = segment != NULL;
  if (segment)
    p->segment = *segment;
  else
    memset (&p->segment, 0, sizeof (p->segment));
  update_streams (p, 1);
  pthread_mutex_unlock (&p->lock);
  return 0;
}

int
pf_producer_set_reliable_timeout (pf_producer * p, int timeout_ms, int action)
{
  if (p == NULL || timeout_ms < -1 || (action != PF_RELIABLE_TIMEOUT_DEMOTE
          && action != PF_RELIABLE_TIMEOUT_DISCONNECT))
    return -EINVAL;
  pthread_mutex_lock (&p->lock);
  p->reliable_timeout_ms = timeout_ms == 0 ?
      PF_PRODUCER_DEFAULT_RELIABLE_TIMEOUT_MS : timeout_ms;
  p->reliable_action = action;
  pthread_cond_broadcast (&p->cond);
  pthread_mutex_unlock (&p->lock);
  return 0;
}

void
pf_producer_set_flushing (pf_producer * p, int flushing)
{
  if (p == NULL)
    return;
  pthread_mutex_lock (&p->lock);
  p->flushing = flushing ? 1 : 0;
  atomic_store (&p->ready_fast, 0);
  pthread_cond_broadcast (&p->cond);
  pthread_mutex_unlock (&p->lock);
}

/* With p->lock: 1 when every every-frame client can take a frame. Applies
 * the reliable timeout to those that cannot, and from @live_deadline on
 * (a live stream's lag budget spent, pf-producer-pacing.c) the same to
 * every one that cannot; *next_ns: the earliest such deadline (UINT64_MAX:
 * none). *@now: the time, read here when a client is blocked and it is
 * still 0 (a publisher that need not wait reads no clock). */
static int
reliable_ready (pf_producer * p, uint64_t * now_ns, uint64_t * next_ns,
    uint64_t live_deadline, struct event_list *ev)
{
  uint64_t now = *now_ns;
  uint64_t limit = p->reliable_timeout_ms < 0 ? UINT64_MAX :
      (uint64_t) p->reliable_timeout_ms * UINT64_C (1000000);
  struct client *c;
  int ready = 1;

  *next_ns = UINT64_MAX;
  for (c = p->clients; c != NULL; c = c->next) {
    if (c->state != CLIENT_ACTIVE ||
        c->info.delivery != PF_DELIVERY_EVERY_FRAME)
      continue;
    /* at its limit: what it released since the I/O thread last ran
     * counts now */
    if (c->n_held >= p->max_client_frames)
      client_take_releases (p, c, ev);
    if (c->state != CLIENT_ACTIVE || c->n_held < p->max_client_frames)
      continue;
    if (now == 0)
      *now_ns = now = pf_monotonic_ns ();
    if (c->blocked_since == 0)
      c->blocked_since = now;
    if (limit != UINT64_MAX && now - c->blocked_since >= limit) {
      client_reliable_timeout (p, c, now - c->blocked_since,
          RELIABLE_TIMEOUT, ev);
      continue;
    }
    if (now >= live_deadline) {
      client_reliable_timeout (p, c, now - c->blocked_since,
          RELIABLE_LIVE_LAG, ev);
      continue;
    }
    ready = 0;
    if (limit != UINT64_MAX && c->blocked_since + limit < *next_ns)
      *next_ns = c->blocked_since + limit;
    if (live_deadline < *next_ns)
      *next_ns = live_deadline;
  }
  return ready;
}

int
pf_producer_wait_ready (pf_producer * p, int timeout_ms)
{
  struct event_list ev = { NULL };
  uint64_t now, next, deadline, left;
  /* a live stream's wait: when it began, when its lag budget runs out */
  uint64_t wait_start = 0, live_deadline = UINT64_MAX;
  struct timespec ts;
  int res, wanting = 0;

  if (p == NULL)
    return -EINVAL;
  /* The common case, every frame: nothing changed since a wait found every
   * every-frame client with room (see ready_fast); no lock, no scan. */
  if (atomic_load (&p->ready_fast))
    return 0;
  deadline = timeout_ms < 0 ? UINT64_MAX :
      pf_monotonic_ns () + (uint64_t) timeout_ms *UINT64_C (1000000);
  pthread_mutex_lock (&p->lock);
  p->n_waiters++;
  for (;;) {
    if (p->closed) {
      res = -EPIPE;
      break;
    }
    if (p->flushing) {
      res = -ECANCELED;
      break;
    }
    now = 0;
    if (reliable_ready (p, &now, &next, live_deadline, &ev)) {
      atomic_store (&p->ready_fast, 1);
      res = 0;
      break;
    }
    /* blocked (so @now is read): a live stream spends its lag budget
     * from here on; re-read each round (liveness and budget may change) */
    left = pacing_budget_left (p, wait_start ? wait_start : now);
    if (left == UINT64_MAX) {
      live_deadline = UINT64_MAX;
    } else {
      if (wait_start == 0)
        wait_start = now;
      if (live_deadline != wait_start + left) {
        live_deadline = wait_start + left;
        continue;               /* apply it (now, if the budget is spent) */
      }
    }
    if (deadline != UINT64_MAX && now >= deadline) {
      res = -ETIMEDOUT;
      break;
    }
    if (deadline < next)
      next = deadline;
    if (!wanting) {
      /* about to sleep until a release: the release doorbells from now
       * on, and the releases published before that (pf-producer-release.c);
       * then look again */
      release_want (p, +1, &ev);
      wanting = 1;
      continue;
    }
    if (next == UINT64_MAX) {
      pthread_cond_wait (&p->cond, &p->lock);
    } else {
      ts.tv_sec = (time_t) (next / UINT64_C (1000000000));
      ts.tv_nsec = (long) (next % UINT64_C (1000000000));
      pthread_cond_timedwait (&p->cond, &p->lock, &ts);
    }
  }
  if (wait_start != 0)
    pacing_spend (p, wait_start, pf_monotonic_ns ());
  if (wanting)
    release_want (p, -1, &ev);
  p->n_waiters--;
  pthread_mutex_unlock (&p->lock);
  if (ev.head != NULL || ev.released != NULL)
    io_dispatch_events (p, &ev);
  return res;
}

int
pf_producer_want_releases (pf_producer * p, int want)
{
  struct event_list ev = { NULL };

  if (p == NULL)
    return -EINVAL;
  pthread_mutex_lock (&p->lock);
  release_want (p, want ? +1 : -1, &ev);
  pthread_mutex_unlock (&p->lock);
  if (ev.head != NULL || ev.released != NULL)
    io_dispatch_events (p, &ev);
  return 0;
}

int
pf_producer_reclaim_stalled (pf_producer * p)
{
  struct event_list ev = { NULL };
  struct client *c;
  uint64_t now, limit;
  int n = 0;

  if (p == NULL)
    return -EINVAL;
  pthread_mutex_lock (&p->lock);
  /* read under the lock: a release may have moved progress_ns just now */
  now = pf_monotonic_ns ();
  if (p->reliable_timeout_ms >= 0) {
    limit = (uint64_t) p->reliable_timeout_ms * UINT64_C (1000000);
    for (c = p->clients; c != NULL; c = c->next) {
      /* a release in the ring is progress, rung or not */
      if (c->state == CLIENT_ACTIVE && c->n_held > 0)
        client_take_releases (p, c, &ev);
      if (c->state != CLIENT_ACTIVE || c->n_held == 0 ||
          now < c->progress_ns || now - c->progress_ns < limit)
        continue;
      client_evict_stalled (p, c, now - c->progress_ns, &ev);
      n++;
    }
  }
  pthread_mutex_unlock (&p->lock);
  if (ev.head != NULL || ev.released != NULL)
    io_dispatch_events (p, &ev);
  return n;
}
