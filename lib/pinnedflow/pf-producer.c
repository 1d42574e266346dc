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
 * Lock order: a segment's own lock (taken by pf_segment_attach_once() while
 * our create function runs) comes before p->lock. Nothing takes a segment
 * lock while holding p->lock.
 *
 * Nothing is keyed on fd numbers: epoll carries the client id, segments are
 * found by the pf_segment attachment keyed on the producer.
 *
 * This file holds the producer object, its I/O thread, the segments it
 * announced and the public API; the per-consumer state machine (handshake,
 * releases, sending) is pf-producer-client.c, the shared structs
 * pf-producer-private.h.
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
#include <unistd.h>

static void producer_free (pf_producer * p);

/* ---- events ------------------------------------------------------------ */

void
producer_push_event (struct event_list *l, int type,
    const pf_client_info * info)
{
  struct event *e = calloc (1, sizeof (*e));

  if (e == NULL)
    return;                     /* out of memory: the notification is lost */
  e->type = type;
  e->info = *info;
  if (l->tail)
    l->tail->next = e;
  else
    l->head = e;
  l->tail = e;
}

/* Runs the callbacks collected in @l; called without p->lock. Releases come
 * first, so a consumer's frames are given back before its disconnection is
 * reported. */
static void
dispatch_events (pf_producer * p, struct event_list *l)
{
  struct event *e, *next;
  struct pframe *f;

  for (f = l->released; f != NULL; f = f->next)
    if (p->cb.frame_released)
      p->cb.frame_released (p->cb.user_data, f->token);
  if (l->released != NULL) {
    pthread_mutex_lock (&p->lock);
    l->released_tail->next = p->spare;
    p->spare = l->released;
    pthread_mutex_unlock (&p->lock);
    l->released = l->released_tail = NULL;
  }
  for (e = l->head; e != NULL; e = next) {
    next = e->next;
    switch (e->type) {
      case EV_CONNECTED:
        if (p->cb.client_connected)
          p->cb.client_connected (p->cb.user_data, &e->info);
        break;
      case EV_DISCONNECTED:
        if (p->cb.client_disconnected)
          p->cb.client_disconnected (p->cb.user_data, &e->info);
        break;
    }
    free (e);
  }
  l->head = l->tail = NULL;
}

void
producer_wake (pf_producer * p)
{
  uint64_t one = 1;
  ssize_t r;

  if (p->wake_fd >= 0)
    r = write (p->wake_fd, &one, sizeof (one));
  (void) r;
}

static void
listen_pause (pf_producer * p, int pause)
{
  struct epoll_event e = {.events = pause ? 0 : EPOLLIN,
    .data.u64 = TOKEN_LISTEN
  };

  if (p->listen_paused == pause || p->listen_fd < 0 || p->epoll_fd < 0)
    return;
  if (epoll_ctl (p->epoll_fd, EPOLL_CTL_MOD, p->listen_fd, &e) == 0)
    p->listen_paused = pause;
  if (pause)
    p->listen_resume_ns = pf_monotonic_ns () + UINT64_C (500000000);
}

static void
reap_dead (pf_producer * p, struct event_list *ev)
{
  struct client *c, *next;
  int reaped = 0;

  for (c = p->clients; c != NULL; c = next) {
    next = c->next;
    if (c->state == CLIENT_DEAD) {
      client_reap (p, c, ev);
      reaped = 1;
    }
  }
  if (reaped)
    listen_pause (p, 0);
}

static struct client *
find_client (pf_producer * p, uint64_t id)
{
  struct client *c;

  for (c = p->clients; c != NULL; c = c->next)
    if (c->info.client_id == id)
      return c;
  return NULL;
}

/* ---- I/O thread --------------------------------------------------------- */

static void
accept_clients (pf_producer * p)
{
  for (;;) {
    int fd;

    fd = accept4 (p->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED)
        continue;
      /* Out of fds or memory: a level-triggered listen socket would wake
       * us in a loop; accept again once a client went away. */
      if (errno != EAGAIN)
        listen_pause (p, 1);
      return;
    }
    if (p->n_clients >= MAX_CLIENTS || client_new (p, fd) == NULL)
      close (fd);
  }
}

/* Drops our reference; returns 1 if it was the last (p is gone). */
static int
thread_unref (pf_producer * p)
{
  if (atomic_fetch_sub (&p->refcount, 1) != 1)
    return 0;
  producer_free (p);
  return 1;
}

static int
ms_until (uint64_t now, uint64_t deadline, int timeout)
{
  int ms = (int) ((deadline - now) / 1000000) + 1;

  return timeout < 0 || ms < timeout ? ms : timeout;
}

/* With p->lock: resumes accepting (paused for lack of fds) after half a
 * second, fails connections past their HELLO deadline; returns how long
 * epoll may wait (-1: no deadline). O(clients). */
static int
io_timeout (pf_producer * p)
{
  uint64_t now = pf_monotonic_ns ();
  struct client *c;
  int timeout = -1;

  if (p->listen_paused) {
    if (now >= p->listen_resume_ns)
      listen_pause (p, 0);
    else
      timeout = ms_until (now, p->listen_resume_ns, timeout);
  }
  for (c = p->clients; c != NULL; c = c->next) {
    if (c->state != CLIENT_HANDSHAKE)
      continue;
    if (now >= c->hello_deadline)
      client_fail (p, c, -ETIMEDOUT, "no HELLO within %u s",
          (unsigned int) (HANDSHAKE_TIMEOUT_NS / UINT64_C (1000000000)));
    else
      timeout = ms_until (now, c->hello_deadline, timeout);
  }
  return timeout;
}

static void *
io_thread (void *data)
{
  pf_producer *p = data;
  struct epoll_event evs[16];
  struct event_list ev = { NULL };
  int i, n, timeout, quit;

  for (;;) {
    pthread_mutex_lock (&p->lock);
    if (p->quit) {
      pthread_mutex_unlock (&p->lock);
      break;
    }
    timeout = io_timeout (p);
    pthread_mutex_unlock (&p->lock);

    n = epoll_wait (p->epoll_fd, evs, 16, timeout);
    if (n < 0 && errno != EINTR)
      break;

    pthread_mutex_lock (&p->lock);
    if (p->quit) {
      pthread_mutex_unlock (&p->lock);
      break;
    }
    for (i = 0; i < n; i++) {
      uint64_t token = evs[i].data.u64;
      struct client *c;

      if (token == TOKEN_WAKE) {
        uint64_t v;
        ssize_t r = read (p->wake_fd, &v, sizeof (v));
        (void) r;
        continue;
      }
      if (token == TOKEN_LISTEN) {
        accept_clients (p);
        continue;
      }
      c = find_client (p, token);
      if (c == NULL || c->state == CLIENT_DEAD)
        continue;
      if (evs[i].events & EPOLLOUT)
        client_flush (p, c);
      if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
        client_read (p, c, &ev);
    }
    reap_dead (p, &ev);
    if (ev.head == NULL && ev.released == NULL) {
      pthread_mutex_unlock (&p->lock);
      continue;
    }
    /* Callbacks run unlocked, with a reference of ours so that a callback
     * dropping the last user reference cannot free p under our feet. */
    atomic_fetch_add (&p->refcount, 1);
    pthread_mutex_unlock (&p->lock);
    dispatch_events (p, &ev);
    /* If a callback closed the producer, this thread was detached and
     * nobody waits for it: p must not be touched after our unref. */
    pthread_mutex_lock (&p->lock);
    quit = p->quit;
    pthread_mutex_unlock (&p->lock);
    if (thread_unref (p) || quit)
      return NULL;
  }
  return NULL;
}

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
  for (c = p->clients; c != NULL; c = c->next)
    if (c->state != CLIENT_DEAD)
      client_forget_seg (p, c, s->id);
  pthread_mutex_unlock (&p->lock);

  if (s->fd >= 0)
    close (s->fd);
  free (s);
  pf_producer_unref (p);
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
  pf_producer *p;
  int res;

  if (out == NULL)
    return -EINVAL;
  *out = NULL;
  if (config == NULL || config->socket_path == NULL ||
      config->socket_path[0] == '\0' || config->max_client_frames < 1)
    return -EINVAL;

  p = calloc (1, sizeof (*p));
  if (p == NULL)
    return -ENOMEM;
  atomic_init (&p->refcount, 1);
  pthread_mutex_init (&p->lock, NULL);
  p->listen_fd = p->epoll_fd = p->wake_fd = -1;
  p->max_client_frames = config->max_client_frames;
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
  producer_free (p);
  return res;
}

pf_producer *
pf_producer_ref (pf_producer * p)
{
  atomic_fetch_add (&p->refcount, 1);
  return p;
}

static void
producer_free (pf_producer * p)
{
  struct pframe *f, *next;

  pf_producer_close (p);
  /* Segments hold references, so none is left here; frames neither (close
   * released them), but be thorough. */
  for (f = p->frames; f != NULL; f = next) {
    next = f->next;
    free (f);
  }
  for (f = p->spare; f != NULL; f = next) {
    next = f->next;
    free (f);
  }
  free (p->caps);
  free (p->path);
  pthread_mutex_destroy (&p->lock);
  free (p);
}

void
pf_producer_unref (pf_producer * p)
{
  if (p == NULL || atomic_fetch_sub (&p->refcount, 1) != 1)
    return;
  producer_free (p);
}

void
pf_producer_close (pf_producer * p)
{
  struct event_list ev = { NULL };
  struct client *c;
  struct pseg *s;
  int join;

  pthread_mutex_lock (&p->lock);
  if (p->quit) {
    pthread_mutex_unlock (&p->lock);
    return;
  }
  p->quit = 1;
  p->closed = 1;
  producer_wake (p);
  join = p->thread_started;
  pthread_mutex_unlock (&p->lock);

  if (join) {
    if (pthread_equal (pthread_self (), p->thread))
      pthread_detach (p->thread);       /* called from a callback */
    else
      pthread_join (p->thread, NULL);
  }

  pthread_mutex_lock (&p->lock);
  for (c = p->clients; c != NULL; c = c->next)
    client_fail (p, c, 0, "producer closed");
  reap_dead (p, &ev);
  if (p->listen_fd >= 0) {
    close (p->listen_fd);
    p->listen_fd = -1;
    pf_socket_unlink (p->path, &p->file);
  }
  if (p->epoll_fd >= 0)
    close (p->epoll_fd);
  if (p->wake_fd >= 0)
    close (p->wake_fd);
  p->epoll_fd = p->wake_fd = -1;
  /* Segments outlive us; their notify only needs the list. Give their fds
   * back now. */
  for (s = p->segs; s != NULL; s = s->next) {
    if (s->fd >= 0)
      close (s->fd);
    s->fd = -1;
  }
  pthread_mutex_unlock (&p->lock);

  dispatch_events (p, &ev);
}

int
pf_producer_set_caps (pf_producer * p, const char *caps)
{
  struct client *c;
  char *copy;
  size_t len;

  if (p == NULL || caps == NULL || (len = strlen (caps)) == 0)
    return -EINVAL;
  if (len > PF_MAX_CAPS_LEN)
    return -EMSGSIZE;
  if ((copy = strdup (caps)) == NULL)
    return -ENOMEM;

  pthread_mutex_lock (&p->lock);
  if (p->closed) {
    pthread_mutex_unlock (&p->lock);
    free (copy);
    return -EPIPE;
  }
  free (p->caps);
  p->caps = copy;
  p->caps_seq++;
  for (c = p->clients; c != NULL; c = c->next)
    if (c->state == CLIENT_ACTIVE)
      client_send_caps (p, c);
  pthread_mutex_unlock (&p->lock);
  return 0;
}

static int
check_frame (const pf_producer_frame * frame, pf_segment * const *segments)
{
  unsigned int i;

  if (frame->n_chunks < 1 || frame->n_chunks > PF_MAX_CHUNKS)
    return -EINVAL;
  for (i = 0; i < frame->n_chunks; i++) {
    const pf_frame_chunk *ch = &frame->chunks[i];

    if (segments[i] == NULL || ch->size == 0 ||
        ch->segment_id != pf_segment_get_id (segments[i]) ||
        !pf_segment_contains (segments[i], ch->offset, ch->size))
      return -EINVAL;
  }
  return 0;
}

int
pf_producer_publish (pf_producer * p, const pf_producer_frame * frame,
    pf_segment * const *segments, void *token)
{
  uint8_t buf[sizeof (struct pf_msg_frame)];
  struct pseg *ps[PF_MAX_CHUNKS];
  struct pf_msg check;
  struct pf_msg_frame f;
  struct pframe *pf = NULL;
  struct client *c;
  uint64_t bytes = 0;
  unsigned int i;
  size_t len;
  int res, count = 0;

  if (p == NULL || frame == NULL || segments == NULL)
    return -EINVAL;
  if ((res = check_frame (frame, segments)) < 0)
    return res;
  for (i = 0; i < frame->n_chunks; i++) {
    ps[i] = pf_segment_attach_once (segments[i], p, pseg_create, p,
        pseg_destroy, &res);
    if (ps[i] == NULL)
      return res < 0 ? res : -ENOMEM;
    bytes += frame->chunks[i].size;
  }

  pthread_mutex_lock (&p->lock);
  if (p->closed) {
    res = -EPIPE;
    goto out;
  }
  /* A released pframe when there is one: no allocation per frame. */
  if ((pf = p->spare) != NULL)
    p->spare = pf->next;
  else if ((pf = malloc (sizeof (*pf))) == NULL) {
    res = -ENOMEM;
    goto out;
  }
  memset (pf, 0, sizeof (*pf));
  pf_msg_frame_from_published (&f, frame, p->seq + 1, p->caps_seq,
      pf_monotonic_ns ());
  len = pf_msg_write_frame (buf, &f);
  /* Never send what a receiver must reject. */
  if (pf_msg_parse (buf, len, 0, &check) < 0) {
    res = -EINVAL;
    goto out;
  }
  p->seq = f.seq;
  pf->seq = f.seq;
  pf->token = token;
  for (c = p->clients; c != NULL; c = c->next)
    if (c->state == CLIENT_ACTIVE)
      count += client_offer_frame (p, c, buf, len, ps, f.n_chunks, pf, bytes);
  if (count > 0) {
    pf->next = p->frames;
    if (p->frames)
      p->frames->prev = pf;
    p->frames = pf;
    pf = NULL;
  } else {
    p->unsent++;
  }
  res = count;

out:
  if (pf != NULL) {
    pf->next = p->spare;
    p->spare = pf;
  }
  pthread_mutex_unlock (&p->lock);
  return res;
}

int
pf_producer_send_eos (pf_producer * p)
{
  uint8_t buf[sizeof (struct pf_msg_header)];
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
  pthread_mutex_unlock (&p->lock);
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
