/* pinnedflow: connecting a consumer (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A consumer's life: pf_consumer_connect*() finds the producer's socket
 * (retried every CONNECT_RETRY_MS while nobody listens, until the timeout
 * or @cancel_fd; each attempt non-blocking, so a full backlog cannot hold
 * us), pf_consumer_new_from_fd*() takes a connected one; both then make
 * the consumer (the socket's SO_SNDTIMEO, the epoll fd that
 * pf_consumer_get_fd () returns when a frame ring may come) and exchange
 * HELLOs (handshake ()): ours says the delivery asked for and whether we
 * take a frame ring (PINNEDFLOW_FRAME_RING=0 says no); the producer's
 * gives its max_held and session id, or a REFUSE. The last
 * pf_consumer_unref () closes every fd and unmaps the ring.
 *
 * Errors: a failure before the consumer exists is told in the calling
 * thread's pf_consumer_connect_error (), in words made only of what this
 * file set (the peer named as "the producer at PATH").
 *
 * The top of the consumer's three files: it calls into pf-consumer.c
 * (consumer_recv_packet (), consumer_wait_readable ()) and
 * pf-consumer-segments.c through pf-consumer-private.h; neither calls
 * back.
 */
#include "pf-consumer-private.h"
#include "pf-ring-private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* The wait for the producer's HELLO after the single connect attempt of
 * a timeout of 0; any other timeout bounds the HELLO too. */
#define HELLO_WAIT_ONCE_MS 5000
/* While nobody listens, connecting is retried this often. */
#define CONNECT_RETRY_MS 20

static __thread char connect_error[256];

const char *
pf_consumer_connect_error (void)
{
  return connect_error;
}

static int handshake_fail (pf_consumer * c, int err, const char *fmt, ...)
    __attribute__((format (printf, 3, 4)));

/* Records why the handshake failed; returns @err. */
static int
handshake_fail (pf_consumer * c, int err, const char *fmt, ...)
{
  va_list ap;

  va_start (ap, fmt);
  vsnprintf (c->error, sizeof (c->error), fmt, ap);
  va_end (ap);
  return err;
}

/* Sends our HELLO and waits up to @timeout_ms (-1: forever, 0: only what
 * is queued) for the producer's. @who names the peer in messages
 * ("the producer at PATH"). Every outcome leaves a sentence in c->error
 * made only of what this function set. */
static int
handshake (pf_consumer * c, const char *who, int timeout_ms, int cancel_fd)
{
  int fds[PF_SOCKET_MAX_RECV_FDS];
  struct timespec start;
  unsigned int n_fds = 0;
  const char *why = NULL;
  ssize_t len;
  size_t n;
  int res;

  /* A fresh connection has room for 40 bytes: never block here. */
  n = pf_msg_write_hello_full (c->rbuf.bytes, PF_PROTOCOL_VERSION,
      PF_ROLE_CONSUMER, 0, c->requested | (c->wait_fd != c->fd ?
          PF_HELLO_FRAME_RING : 0) | (c->want_device ?
          PF_HELLO_DEVICE_SEGMENTS : 0), 0);
  res = pf_socket_send (c->fd, c->rbuf.bytes, n, NULL, 0, MSG_DONTWAIT);
  if (res == -EPIPE || res == -ECONNRESET)
    return handshake_fail (c, res, "%s closed the connection before its "
        "HELLO", who);
  if (res < 0)
    return handshake_fail (c, res, "sending our HELLO to %s failed: %s", who,
        strerror (-res));

  clock_gettime (CLOCK_MONOTONIC, &start);
  do {
    len = consumer_recv_packet (c, remaining (timeout_ms, &start), cancel_fd,
        fds, &n_fds, &why);
  } while (len == -EAGAIN);

  switch (len) {
    case -ETIMEDOUT:
      return handshake_fail (c, -ETIME, "%s accepted the connection but "
          "sent no HELLO within %d ms", who, timeout_ms);
    case -ECANCELED:
      return handshake_fail (c, -ECANCELED, "cancelled while waiting for "
          "the HELLO of %s", who);
    case 0:
      return handshake_fail (c, -EPIPE, "%s closed the connection before "
          "its HELLO", who);
    case -EPIPE:
    case -ECONNRESET:
      return handshake_fail (c, (int) len, "%s reset the connection before "
          "its HELLO", who);
    default:
      break;
  }
  if (len < 0)
    return handshake_fail (c, (int) len, "waiting for the HELLO of %s: %s",
        who, why ? why : strerror ((int) -len));

  res = pf_msg_parse (c->rbuf.bytes, (size_t) len, n_fds, &c->msg);
  pf_socket_close_fds (fds, n_fds);     /* a valid HELLO carries none */
  if (res < 0)
    return handshake_fail (c, res, "bad HELLO from %s: %s", who,
        pf_msg_error ());
  if (c->msg.type == PF_MSG_REFUSE
      && c->msg.u.refuse.reason != PF_REFUSE_TOO_MANY_CONSUMERS)
    return handshake_fail (c, -EPROTO, "%s sent REFUSE (reason %u) instead "
        "of its HELLO", who, c->msg.u.refuse.reason);
  if (c->msg.type == PF_MSG_REFUSE)
    return handshake_fail (c, -EUSERS, "%s refused the connection: it "
        "serves its maximum of %u consumers", who, c->msg.u.refuse.limit);
  if (c->msg.type != PF_MSG_HELLO || c->msg.u.hello.role != PF_ROLE_PRODUCER)
    return handshake_fail (c, -EPROTO, "the first message from %s is not a "
        "producer HELLO (type %u)", who, c->msg.type);
  c->max_held = c->msg.u.hello.max_held;
  c->session_id = c->msg.u.hello.session_id;
  c->ctl_recvd = 1;
  return 0;
}

static int
options_valid (const pf_consumer_options * o)
{
  return o == NULL || (o->delivery <= PF_DELIVERY_NEWEST_FRAME &&
      (o->flags & ~(uint32_t) PF_CONSUMER_OPTION_DEVICE_SEGMENTS) == 0 &&
      o->reserved[0] == 0 && o->reserved[1] == 0);
}

/* PINNEDFLOW_FRAME_RING=0 in the environment: FRAMEs on the socket (the
 * benchmark's A/B runs, and tests of the socket path). */
static int
frame_ring_wanted (void)
{
  const char *v = getenv ("PINNEDFLOW_FRAME_RING");

  return v == NULL || strcmp (v, "0") != 0;
}

static int
new_from_fd (int fd, const char *who, int timeout_ms, int cancel_fd,
    const pf_consumer_options * options, int v2, pf_consumer ** out)
{
  struct timeval tv = {.tv_sec = SEND_TIMEOUT_MS / 1000,
    .tv_usec = (SEND_TIMEOUT_MS % 1000) * 1000
  };
  pf_consumer *c;
  int res;

  if (out == NULL || fd < 0) {
    if (fd >= 0)
      close (fd);
    return -EINVAL;
  }
  *out = NULL;
  if ((c = calloc (1, sizeof (*c))) == NULL) {
    close (fd);
    return -ENOMEM;
  }
  atomic_init (&c->refcount, 1);
  pthread_mutex_init (&c->lock, NULL);
  atomic_flag_clear (&c->held_spin);
  c->fd = fd;
  c->wait_fd = fd;
  c->doorbell = -1;
  c->rel_doorbell = -1;
  c->v2 = v2;
  c->requested = options ? options->delivery : PF_DELIVERY_DEFAULT;
  c->want_device = options != NULL &&
      (options->flags & PF_CONSUMER_OPTION_DEVICE_SEGMENTS) != 0;
  if (frame_ring_wanted ()) {
    /* what the caller polls: the socket and, once offered, the ring's
     * doorbell (one fd for the connection's life) */
    struct epoll_event e = {.events = EPOLLIN };
    int ep = epoll_create1 (EPOLL_CLOEXEC);

    e.data.fd = fd;
    if (ep >= 0 && epoll_ctl (ep, EPOLL_CTL_ADD, fd, &e) == 0)
      c->wait_fd = ep;
    else if (ep >= 0)
      close (ep);
  }
  consumer_budget_fill_defaults (&c->budget);
  setsockopt (fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof (tv));

  if ((res = handshake (c, who, timeout_ms, cancel_fd)) < 0) {
    snprintf (connect_error, sizeof (connect_error), "%s", c->error);
    pf_consumer_unref (c);
    return res;
  }
  *out = c;
  return 0;
}

int
pf_consumer_new_from_fd (int fd, int timeout_ms, pf_consumer ** out)
{
  connect_error[0] = '\0';
  return new_from_fd (fd, "the producer", timeout_ms, -1, NULL, 0, out);
}

int
pf_consumer_new_from_fd_with (int fd, int timeout_ms,
    const pf_consumer_options * options, pf_consumer ** out)
{
  connect_error[0] = '\0';
  if (!options_valid (options)) {
    if (fd >= 0)
      close (fd);
    snprintf (connect_error, sizeof (connect_error), "invalid options");
    if (out)
      *out = NULL;
    return -EINVAL;
  }
  return new_from_fd (fd, "the producer", timeout_ms, -1, options, 1, out);
}

/* One non-blocking connect attempt: a full backlog says -EAGAIN instead of
 * blocking (a blocking connect could not be cancelled). The socket is
 * switched back to blocking mode (releases are sent with SO_SNDTIMEO). */
static int
connect_once (const char *path)
{
  struct sockaddr_un addr;
  size_t len;
  int fd, flags, res;

  /* an empty path would be an abstract (or autobound) socket */
  if (path[0] == '\0')
    return -EINVAL;
  len = strlen (path);
  if (len >= sizeof (addr.sun_path))
    return -ENAMETOOLONG;
  memset (&addr, 0, sizeof (addr));
  addr.sun_family = AF_UNIX;
  memcpy (addr.sun_path, path, len + 1);

  fd = socket (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return -errno;
  if (connect (fd, (struct sockaddr *) &addr, sizeof (addr)) < 0) {
    res = -errno;
    goto fail;
  }
  if ((flags = fcntl (fd, F_GETFL)) < 0
      || fcntl (fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
    res = -errno;
    goto fail;
  }
  return fd;

fail:
  close (fd);
  /* AF_UNIX reports a full backlog of a non-blocking connect as EAGAIN;
   * EINPROGRESS is not expected, treat it the same */
  return res == -EINPROGRESS ? -EAGAIN : res;
}

static int
connect_path (const char *socket_path, int timeout_ms, int cancel_fd,
    const pf_consumer_options * options, int v2, pf_consumer ** out)
{
  char who[sizeof (((struct sockaddr_un *) 0)->sun_path) + 32];
  struct timespec start;
  int fd, left, hs, res;

  connect_error[0] = '\0';
  if (out == NULL || socket_path == NULL)
    return -EINVAL;
  *out = NULL;
  clock_gettime (CLOCK_MONOTONIC, &start);
  for (;;) {
    /* a cancellation that came before we even started counts */
    if (cancel_fd >= 0 && consumer_wait_readable (-1, cancel_fd, 0) ==
        -ECANCELED) {
      snprintf (connect_error, sizeof (connect_error), "connecting to %s "
          "cancelled", socket_path);
      return -ECANCELED;
    }
    fd = connect_once (socket_path);
    if (fd >= 0)
      break;
    /* Producer not up yet (no file, or a stale one), or its backlog is
     * full: retry until the deadline. */
    if (fd != -ENOENT && fd != -ECONNREFUSED && fd != -EAGAIN) {
      snprintf (connect_error, sizeof (connect_error), "connect to %s: %s",
          socket_path, strerror (-fd));
      return fd;
    }
    left = remaining (timeout_ms, &start);
    if (left == 0) {
      snprintf (connect_error, sizeof (connect_error), "no producer at %s "
          "after %d ms: %s", socket_path, timeout_ms, strerror (-fd));
      return -ETIMEDOUT;
    }
    /* sleep until the next attempt, or until cancelled */
    res = consumer_wait_readable (-1, cancel_fd, left < 0
        || left > CONNECT_RETRY_MS ? CONNECT_RETRY_MS : left);
    if (res == -ECANCELED) {
      snprintf (connect_error, sizeof (connect_error), "connecting to %s "
          "cancelled", socket_path);
      return -ECANCELED;
    }
  }
  /* The deadline covers the HELLO too (-1: for ever, interruptible
   * through @cancel_fd); 0 meant one connect attempt, not no HELLO. */
  hs = timeout_ms == 0 ? HELLO_WAIT_ONCE_MS : remaining (timeout_ms, &start);
  snprintf (who, sizeof (who), "the producer at %s", socket_path);
  return new_from_fd (fd, who, hs, cancel_fd, options, v2, out);
}

int
pf_consumer_connect_cancellable (const char *socket_path, int timeout_ms,
    int cancel_fd, pf_consumer ** out)
{
  return connect_path (socket_path, timeout_ms, cancel_fd, NULL, 0, out);
}

int
pf_consumer_connect_with (const char *socket_path, int timeout_ms,
    int cancel_fd, const pf_consumer_options * options, pf_consumer ** out)
{
  if (!options_valid (options)) {
    snprintf (connect_error, sizeof (connect_error), "invalid options");
    if (out)
      *out = NULL;
    return -EINVAL;
  }
  return connect_path (socket_path, timeout_ms, cancel_fd, options, 1, out);
}

int
pf_consumer_connect (const char *socket_path, int timeout_ms,
    pf_consumer ** out)
{
  return pf_consumer_connect_cancellable (socket_path, timeout_ms, -1, out);
}

pf_consumer *
pf_consumer_ref (pf_consumer * c)
{
  atomic_fetch_add (&c->refcount, 1);
  return c;
}

void
pf_consumer_unref (pf_consumer * c)
{
  if (c == NULL || atomic_fetch_sub (&c->refcount, 1) != 1)
    return;
  close (c->fd);
  if (c->wait_fd != c->fd)
    close (c->wait_fd);
  if (c->doorbell >= 0)
    close (c->doorbell);
  if (c->rel_doorbell >= 0)
    close (c->rel_doorbell);
  if (c->ring != NULL)
    pf_ring_unmap (c->ring, c->ring_mask + 1);
  pf_socket_close_fds (c->stash_fds, c->stash_n_fds);
  free (c->stash);
  consumer_drop_segments (c);
  free (c->held);
  pthread_mutex_destroy (&c->lock);
  free (c);
}
