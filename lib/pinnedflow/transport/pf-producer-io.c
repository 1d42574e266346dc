/* pinnedflow: the producer's I/O thread and its end (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The I/O thread (io_thread(), started by pf_producer_new()): one epoll
 * loop over the listen socket, the wake eventfd, every client's socket and
 * every release doorbell (epoll carries a token: TOKEN_LISTEN, TOKEN_WAKE,
 * a client id, or a client id | TOKEN_RELEASES). It accepts connections
 * (client_new()), hands each ready client to pf-producer-client.c
 * (client_flush(), client_read(), client_read_releases()), fails the
 * handshakes past their deadline, takes the releases when nothing was
 * published for a while (release_idle(), pf-producer-release.c: release
 * doorbells ring only on demand), reaps dead clients and broadcasts
 * p->cond after every round that may have made room.
 *
 * Contract: the loop holds p->lock except in epoll_wait() and the user
 * callbacks. What happened under the lock is collected on an event_list
 * (pf-producer-private.h) and run after unlocking by run_callbacks() /
 * io_dispatch_events(), which the public API (pf-producer.c) uses too; the
 * released pframes then go back to p->spare under the lock.
 *
 * The end of the producer lives here with the thread, because the two are
 * one argument: pf_producer_close() stops the thread (joins it, or detaches
 * it when a callback on the thread itself closes), fails and reaps every
 * client and closes the fds; io_producer_free() closes and frees on the
 * last reference, which the thread may drop itself (it holds one while its
 * callbacks run).
 *
 * Calls go one way: pf-producer.c -> this file -> pf-producer-client.c,
 * and the inline helpers of pf-producer-private.h. Nothing here calls
 * pf-producer.c, and pf-producer-client.c calls nothing here.
 */
#include "pf-producer-private.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- deferred callbacks ------------------------------------------------ */

/* Runs the callbacks collected in @l, without p->lock. Releases come
 * first, so a consumer's frames are given back before its disconnection is
 * reported. The released pframes stay on @l for spares_return_locked(). */
static void
run_callbacks (pf_producer * p, struct event_list *l)
{
  struct event *e, *next;
  struct pframe *f;

  for (f = l->released; f != NULL; f = f->next)
    if (p->cb.frame_released)
      p->cb.frame_released (p->cb.user_data, f->token);
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
      case EV_CLIENT_EVENT:
        if (p->cb.client_event)
          p->cb.client_event (p->cb.user_data, &e->cev);
        break;
    }
    free (e);
  }
  l->head = l->tail = NULL;
}

/* With p->lock: the released pframes of @l become spares. */
static void
spares_return_locked (pf_producer * p, struct event_list *l)
{
  if (l->released == NULL)
    return;
  l->released_tail->next = p->spare;
  p->spare = l->released;
  l->released = l->released_tail = NULL;
}

/* run_callbacks(), then the spares back under p->lock. */
void
io_dispatch_events (pf_producer * p, struct event_list *l)
{
  run_callbacks (p, l);
  if (l->released != NULL) {
    pthread_mutex_lock (&p->lock);
    spares_return_locked (p, l);
    pthread_mutex_unlock (&p->lock);
  }
}

/* ---- clients and the listen socket -------------------------------------- */

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
  io_producer_free (p);
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
 * epoll may wait (-1: no deadline), the idle rescan of the releases
 * (pf-producer-release.c) included. O(clients). */
static int
io_timeout (pf_producer * p)
{
  uint64_t now = 0;
  struct client *c;
  int timeout = -1, idle;

  /* the clock is read only when something has a deadline (not for the
   * wake-ups of a stream's releases) */
  if (p->listen_paused) {
    now = pf_monotonic_ns ();
    if (now >= p->listen_resume_ns)
      listen_pause (p, 0);
    else
      timeout = ms_until (now, p->listen_resume_ns, timeout);
  }
  for (c = p->clients; c != NULL; c = c->next) {
    if (c->state != CLIENT_HANDSHAKE)
      continue;
    if (now == 0)
      now = pf_monotonic_ns ();
    if (now >= c->hello_deadline)
      client_fail (p, c, -ETIMEDOUT, "no HELLO within %u s",
          (unsigned int) (HANDSHAKE_TIMEOUT_NS / UINT64_C (1000000000)));
    else
      timeout = ms_until (now, c->hello_deadline, timeout);
  }
  idle = release_idle_ms (p, &now);
  if (idle >= 0 && (timeout < 0 || idle < timeout))
    timeout = idle;
  return timeout;
}

/* The loop holds p->lock except in epoll_wait() and the callbacks: one
 * lock round per wake-up without callbacks, two with (a RELEASE's). */
void *
io_thread (void *data)
{
  pf_producer *p = data;
  struct epoll_event evs[16];
  struct event_list ev = { NULL };
  int i, n, timeout, err;

  pthread_mutex_lock (&p->lock);
  for (;;) {
    if (p->quit)
      break;
    timeout = io_timeout (p);
    pthread_mutex_unlock (&p->lock);

    n = epoll_wait (p->epoll_fd, evs, 16, timeout);
    err = n < 0 ? errno : 0;
    pthread_mutex_lock (&p->lock);
    if (n < 0 && err != EINTR)
      break;
    if (p->quit)
      break;
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
      if (token & TOKEN_RELEASES) {
        c = find_client (p, token & ~TOKEN_RELEASES);
        if (c != NULL && c->state != CLIENT_DEAD)
          client_read_releases (p, c, &ev);
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
    /* nothing published for a while: the releases now, and the
     * release doorbells from now on (pf-producer-release.c) */
    release_idle (p, &ev);
    reap_dead (p, &ev);
    /* releases, reaps and drained sockets may have made room */
    if (p->n_waiters > 0)
      pthread_cond_broadcast (&p->cond);
    if (ev.head == NULL && ev.released == NULL)
      continue;
    /* Callbacks run unlocked, with a reference of ours so that a callback
     * dropping the last user reference cannot free p under our feet. */
    atomic_fetch_add (&p->refcount, 1);
    pthread_mutex_unlock (&p->lock);
    run_callbacks (p, &ev);
    pthread_mutex_lock (&p->lock);
    spares_return_locked (p, &ev);
    if (p->quit) {
      /* A callback closed the producer: this thread may be detached and
       * nobody waits for it; p must not be touched after our unref. */
      pthread_mutex_unlock (&p->lock);
      thread_unref (p);
      return NULL;
    }
    /* Not closed, so not detached: whoever drops the last reference
     * after ours closes p, which joins us. If ours is the last, a
     * callback dropped the user's: p goes now. */
    if (atomic_fetch_sub (&p->refcount, 1) == 1) {
      pthread_mutex_unlock (&p->lock);
      io_producer_free (p);
      return NULL;
    }
  }
  pthread_mutex_unlock (&p->lock);
  return NULL;
}

/* ---- the end of the producer ------------------------------------------ */

void
io_producer_free (pf_producer * p)
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
  free (p->host_caps);
  free (p->path);
  pthread_cond_destroy (&p->cond);
  pthread_mutex_destroy (&p->lock);
  free (p);
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
  atomic_store (&p->ready_fast, 0);
  pthread_cond_broadcast (&p->cond);
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

  io_dispatch_events (p, &ev);
}
