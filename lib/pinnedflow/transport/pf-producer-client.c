/* pinnedflow: the producer's per-consumer state machine (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One struct client per accepted connection, through its states:
 * HANDSHAKE (accepted, waiting for its HELLO; answered with ours, every live
 * segment and the caps) -> ACTIVE (gets segments, caps and frames; sends
 * RELEASEs) -> DEAD (a failed send or receive, a protocol error, a hang-up
 * or the producer closing; reaped by the I/O thread or pf_producer_close(),
 * which give back every frame it held). Control messages a full socket
 * cannot take are queued (never dropped, at most MAX_CTL_QUEUE); frames are
 * skipped instead (counted as drops with a reason) for a newest-frame
 * client, and queued like control messages for an every-frame client (its
 * held count, which includes them, bounds that queue).
 *
 * Delivery: info.requested is what the HELLO asked for, info.delivery what
 * is in force (client_update_stream(): the request, else the producer's
 * liveness; newest frame for good once demoted). Every change is told to
 * the consumer with a STREAM message, which also carries the liveness and
 * the segment. A client waits for a key frame (skips DELTA_UNIT frames)
 * after it connected and after every drop.
 *
 * Threads and locks: every function here runs with p->lock held (the
 * producer's one mutex, pf-producer.c), on the I/O thread or in a caller of
 * the public API; none blocks: every send and receive on an fd a consumer
 * shares passes MSG_DONTWAIT (the socket, the doorbells of pf-doorbell-private.h),
 * so no flag a consumer sets on its end, and nothing it fills or empties,
 * can make us wait (issue 26). Nothing here
 * calls a user callback: what must be reported is pushed on the caller's
 * event_list and dispatched after unlocking (pf-producer-io.c).
 *
 * Calls go one way: pf-producer.c and pf-producer-io.c call this file; it
 * calls only pf-producer-pacing.c and the inline helpers of
 * pf-producer-private.h (producer_push_event(),
 * producer_push_client_event(), producer_wake()), never back up.
 *
 * Lifetimes: a client is owned by p->clients from client_new() to
 * client_reap(), which closes its socket and frees it; its held[] entries
 * point at pframes that stay alive while any holder remains.
 */
#include "pf-producer-private.h"
#include "pf-doorbell-private.h"
#include "pf-ring-private.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* Marks @c dead; the I/O thread (or close) reaps it. The first reason
 * wins. */
void
client_fail (pf_producer * p, struct client *c, int error, const char *fmt, ...)
{
  va_list ap;

  if (c->state == CLIENT_DEAD)
    return;
  c->state = CLIENT_DEAD;
  c->info.error = error;
  va_start (ap, fmt);
  vsnprintf (c->info.reason, sizeof (c->info.reason), fmt, ap);
  va_end (ap);
  producer_wake (p);
}

/* A failed send or receive: the peer closing (with unread data, AF_UNIX
 * says ECONNRESET) is a hang-up, not an error. */
static void
client_fail_io (pf_producer * p, struct client *c, int err, const char *what)
{
  if (err == -EPIPE || err == -ECONNRESET)
    client_fail (p, c, 0, "consumer hung up");
  else
    client_fail (p, c, err, "%s failed: %s", what, strerror (-err));
}

static void
frame_unhold (pf_producer * p, struct pframe *f, struct event_list *ev)
{
  if (--f->holders > 0)
    return;
  if (f->prev)
    f->prev->next = f->next;
  else
    p->frames = f->next;
  if (f->next)
    f->next->prev = f->prev;
  f->prev = f->next = NULL;
  if (ev->released_tail)
    ev->released_tail->next = f;
  else
    ev->released = f;
  ev->released_tail = f;
}

static void
update_epoll (pf_producer * p, struct client *c, int want_out)
{
  struct epoll_event e = {.events = EPOLLIN | (want_out ? EPOLLOUT : 0),
    .data.u64 = c->info.client_id
  };

  if (c->want_out == want_out || p->epoll_fd < 0)
    return;
  if (epoll_ctl (p->epoll_fd, EPOLL_CTL_MOD, c->fd, &e) == 0)
    c->want_out = want_out;
}

/* Sends what is queued; 0 when the queue is empty, -EAGAIN if not. */
int
client_flush (pf_producer * p, struct client *c)
{
  struct ctlmsg *m;
  int res;

  while ((m = c->q_head) != NULL) {
    res = pf_socket_send (c->fd, m->data, m->len, m->fd >= 0 ? &m->fd : NULL,
        m->fd >= 0 ? 1 : 0, MSG_DONTWAIT);
    if (res == -EAGAIN)
      break;
    if (res < 0) {
      client_fail_io (p, c, res, "send");
      return res;
    }
    c->q_head = m->next;
    if (c->q_head == NULL)
      c->q_tail = NULL;
    c->q_len--;
    if (m->fd >= 0)
      close (m->fd);
    free (m);
  }
  update_epoll (p, c, c->q_head != NULL);
  return c->q_head ? -EAGAIN : 0;
}

/* Sends a control message now, or queues it behind earlier ones. Control
 * messages are never dropped (frames are). */
int
client_send_ctl (pf_producer * p, struct client *c, const void *buf,
    size_t len, int fd)
{
  struct ctlmsg *m;
  int res;

  if (c->state == CLIENT_DEAD)
    return -EPIPE;
  if (c->q_head == NULL) {
    res = pf_socket_send (c->fd, buf, len, fd >= 0 ? &fd : NULL,
        fd >= 0 ? 1 : 0, MSG_DONTWAIT);
    if (res == 0) {
      c->ctl_sent++;
      return 0;
    }
    if (res != -EAGAIN) {
      client_fail_io (p, c, res, "send");
      return res;
    }
  }
  if (c->q_len >= MAX_CTL_QUEUE) {
    client_fail (p, c, -ENOBUFS, "consumer does not read: %u control "
        "messages pending", c->q_len);
    return -ENOBUFS;
  }
  m = malloc (sizeof (*m) + len);
  if (m == NULL) {
    client_fail (p, c, -ENOMEM, "out of memory");
    return -ENOMEM;
  }
  m->next = NULL;
  m->len = len;
  memcpy (m->data, buf, len);
  m->fd = -1;
  if (fd >= 0 && (m->fd = fcntl (fd, F_DUPFD_CLOEXEC, 3)) < 0) {
    res = -errno;
    free (m);
    client_fail (p, c, res, "dup failed: %s", strerror (-res));
    return res;
  }
  if (c->q_tail)
    c->q_tail->next = m;
  else
    c->q_head = m;
  c->q_tail = m;
  c->q_len++;
  c->ctl_sent++;
  update_epoll (p, c, 1);
  return 0;
}

static int
client_has_seg (struct client *c, uint64_t id)
{
  unsigned int i;

  for (i = 0; i < c->n_segs; i++)
    if (c->segs[i] == id)
      return 1;
  return 0;
}

static int
client_announce_seg (pf_producer * p, struct client *c, struct pseg *s)
{
  uint8_t buf[sizeof (struct pf_msg_device_segment_add)];
  size_t len;
  int res;

  if (client_has_seg (c, s->id))
    return 0;
  if (s->is_device && !c->wants_device)
    return 0;                   /* never: it did not ask */
  if (c->n_segs == c->cap_segs) {
    unsigned int cap = c->cap_segs ? c->cap_segs * 2 : 16;
    uint64_t *n = realloc (c->segs, cap * sizeof (*n));

    if (n == NULL) {
      client_fail (p, c, -ENOMEM, "out of memory");
      return -ENOMEM;
    }
    c->segs = n;
    c->cap_segs = cap;
  }
  /* a device segment's message was checked when it was described */
  len = s->is_device ? pf_msg_write_device_segment_add (buf, &s->dmsg) :
      pf_msg_write_segment_add (buf, s->id, s->size);
  if ((res = client_send_ctl (p, c, buf, len, s->fd)) < 0)
    return res;
  c->segs[c->n_segs++] = s->id;
  return 0;
}

void
client_forget_seg (pf_producer * p, struct client *c, uint64_t id)
{
  uint8_t buf[sizeof (struct pf_msg_segment_remove)];
  unsigned int i;

  for (i = 0; i < c->n_segs; i++) {
    if (c->segs[i] == id) {
      c->segs[i] = c->segs[--c->n_segs];
      client_send_ctl (p, c, buf, pf_msg_write_segment_remove (buf, id), -1);
      return;
    }
  }
}

void
client_send_caps (pf_producer * p, struct client *c)
{
  uint8_t buf[PF_MAX_MSG_SIZE];
  size_t len;

  const char *caps = p->caps;

  if (caps == NULL)
    return;
  /* a device stream's caps to those that may get its device frames, the
   * host variant's to the others */
  if (p->host_caps != NULL && !c->wants_device)
    caps = p->host_caps;
  len = pf_msg_write_caps (buf, p->caps_seq, caps);
  if (len > 0)
    client_send_ctl (p, c, buf, len, -1);
}

/* Removes @c from the list, gives back what it held, closes its socket. */
void
client_reap (pf_producer * p, struct client *c, struct event_list *ev)
{
  struct client **l;
  struct ctlmsg *m, *next;
  unsigned int i;

  for (l = &p->clients; *l != NULL; l = &(*l)->next) {
    if (*l == c) {
      *l = c->next;
      p->n_clients--;
      break;
    }
  }
  if (p->epoll_fd >= 0)
    epoll_ctl (p->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
  close (c->fd);
  if (c->ring)
    pf_ring_unmap (c->ring, c->ring_mask + 1);
  if (c->doorbell >= 0)
    close (c->doorbell);
  if (c->rel_doorbell >= 0) {
    if (p->epoll_fd >= 0)
      epoll_ctl (p->epoll_fd, EPOLL_CTL_DEL, c->rel_doorbell, NULL);
    close (c->rel_doorbell);
  }
  for (i = 0; i < c->n_held; i++)
    frame_unhold (p, c->held[i].frame, ev);
  for (m = c->q_head; m != NULL; m = next) {
    next = m->next;
    if (m->fd >= 0)
      close (m->fd);
    free (m);
  }
  if (c->connected_notified)
    producer_push_event (ev, EV_DISCONNECTED, &c->info);
  free (c->held);
  free (c->segs);
  free (c);
}

/* A new connection on @fd, waiting for its HELLO, added to p->clients;
 * NULL (the caller closes @fd) when out of memory or epoll refuses it. */
struct client *
client_new (pf_producer * p, int fd)
{
  struct epoll_event e = {.events = EPOLLIN };
  struct client *c = calloc (1, sizeof (*c));

  if (c == NULL)
    return NULL;
  c->fd = fd;
  c->doorbell = -1;
  c->rel_doorbell = -1;
  c->state = CLIENT_HANDSHAKE;
  c->hello_deadline = pf_monotonic_ns () + HANDSHAKE_TIMEOUT_NS;
  c->info.client_id = ++p->next_client_id;
  c->info.pid = -1;
  pf_socket_peercred (fd, &c->info.pid, &c->info.uid, &c->info.gid);
  c->stats.client_id = c->info.client_id;
  c->stats.pid = c->info.pid;
  c->stats.uid = c->info.uid;
  e.data.u64 = c->info.client_id;
  if (epoll_ctl (p->epoll_fd, EPOLL_CTL_ADD, fd, &e) < 0) {
    free (c);
    return NULL;
  }
  c->next = p->clients;
  p->clients = c;
  p->n_clients++;
  return c;
}

static unsigned int
count_active (pf_producer * p)
{
  struct client *c;
  unsigned int n = 0;

  for (c = p->clients; c != NULL; c = c->next)
    if (c->state == CLIENT_ACTIVE)
      n++;
  return n;
}

/* One consumer too many: a REFUSE instead of our HELLO, then closed. */
static void
client_refuse (pf_producer * p, struct client *c, struct event_list *ev)
{
  uint8_t buf[sizeof (struct pf_msg_refuse)];
  pf_client_event e;

  client_send_ctl (p, c, buf, pf_msg_write_refuse (buf,
          PF_REFUSE_TOO_MANY_CONSUMERS, p->max_clients), -1);
  memset (&e, 0, sizeof (e));
  e.type = PF_CLIENT_EVENT_REFUSED;
  e.client_id = c->info.client_id;
  e.pid = c->info.pid;
  snprintf (e.message, sizeof (e.message), "consumer %u (pid %d) refused: "
      "this producer serves at most %u consumers", c->info.client_id,
      (int) c->info.pid, p->max_clients);
  producer_push_client_event (ev, &e);
  client_fail (p, c, -EUSERS, "refused: %u consumers connected already",
      p->max_clients);
}

/* Offers @c a frame ring (PF_MSG_FRAME_RING): entries for as many frames
 * as it may hold, so that an entry is never overwritten before the
 * consumer read it (it cannot release a frame it has not read), and as
 * many for its releases. Its doorbells are socketpairs (pf-doorbell-private.h):
 * the consumer gets its ends, whose flags do not reach ours. Without one
 * (no memfd or socketpair, a limit beyond PF_FRAME_RING_MAX) its FRAMEs
 * and RELEASEs go on the socket, as with a consumer that did not ask. */
static void
client_offer_ring (pf_producer * p, struct client *c)
{
  struct epoll_event e = {.events = EPOLLIN };
  uint8_t buf[sizeof (struct pf_msg_frame_ring)];
  uint32_t n = pf_ring_entries_for (p->max_client_frames);
  void *map = NULL;
  /* sent: the memfd and the consumer's ends of the doorbells */
  int fds[3] = { -1, -1, -1 };
  int bell[2] = { -1, -1 }, relbell[2] = { -1, -1 };

  if (n == 0)
    return;
  if (pf_ring_create (n, &fds[0], &map) < 0
      || pf_doorbell_new (PF_DOORBELL_WE_RING, bell) < 0
      || pf_doorbell_new (PF_DOORBELL_PEER_RINGS, relbell) < 0)
    goto out;
  /* its release doorbell on demand: wanted now if something waits for a
   * release already (pf-producer-release.c) */
  pf_ring_release_want (map, p->want_releases > 0);
  fds[1] = bell[1];
  fds[2] = relbell[1];
  bell[1] = relbell[1] = -1;
  e.data.u64 = c->info.client_id | TOKEN_RELEASES;
  if (epoll_ctl (p->epoll_fd, EPOLL_CTL_ADD, relbell[0], &e) < 0)
    goto out;
  /* the socket message that hands it over is sent now, or not at all:
   * a queued one would hold its fds past a failure */
  if (c->q_head != NULL || pf_socket_send (c->fd, buf,
          pf_msg_write_frame_ring (buf, n), fds, 3, MSG_DONTWAIT) < 0) {
    epoll_ctl (p->epoll_fd, EPOLL_CTL_DEL, relbell[0], NULL);
    goto out;
  }
  c->ctl_sent++;
  c->ring = map;
  c->ring_mask = n - 1;
  c->doorbell = bell[0];
  c->rel = pf_ring_release_ring (map, n);
  c->rel_doorbell = relbell[0];
  pf_socket_close_fds (fds, 3);
  return;

out:
  if (map != NULL)
    pf_ring_unmap (map, n);
  pf_socket_close_fds (fds, 3);
  pf_socket_close_fds (bell, 2);
  pf_socket_close_fds (relbell, 2);
}

/* Publishes the encoded FRAME @buf in @c's ring and rings its doorbell. */
static void
client_ring_frame (struct client *c, const uint8_t * buf)
{
  pf_ring_publish (c->ring, c->ring_mask, &c->ring_w, buf, c->ctl_sent);
  /* never blocks (MSG_DONTWAIT): -EAGAIN, a full doorbell, is one rung
   * already; -EPIPE, a consumer that closed its end, is its loss (the
   * entry is there anyway, the socket tells of the hang-up) */
  (void) pf_doorbell_ring (c->doorbell);
}

static void
client_handle_hello (pf_producer * p, struct client *c,
    const struct pf_msg *msg, struct event_list *ev)
{
  uint8_t buf[sizeof (struct pf_msg_hello)];
  struct pseg *s;

  if (msg->type != PF_MSG_HELLO) {
    client_fail (p, c, -EPROTO, "first message is type %u, not HELLO",
        msg->type);
    return;
  }
  if (msg->u.hello.role != PF_ROLE_CONSUMER) {
    client_fail (p, c, -EPROTO, "HELLO with role %u, not consumer",
        msg->u.hello.role);
    return;
  }
  if (p->max_clients > 0 && count_active (p) >= p->max_clients) {
    client_refuse (p, c, ev);
    return;
  }
  c->info.requested = msg->u.hello.flags & PF_HELLO_DELIVERY_MASK;
  c->stats.requested = c->info.requested;
  c->need_key = 1;
  c->wants_device = (msg->u.hello.flags & PF_HELLO_DEVICE_SEGMENTS) != 0;
  /* demoted in this live stream lately: newest frame again, at once (its
   * STREAM says DEMOTED), so that reconnecting cannot make the camera
   * wait again (pf-producer-pacing.c) */
  if (p->live && pacing_penalized (p, c, pf_monotonic_ns ())) {
    c->demoted = 1;
    c->stats.demoted = 1;
  }
  /* Answer, then bring the consumer up to date: its delivery, liveness and
   * segment, every live segment and the current caps, before any frame. */
  client_send_ctl (p, c, buf, pf_msg_write_hello (buf, PF_ROLE_PRODUCER,
          p->max_client_frames, p->session_id), -1);
  /* PF_HELLO_FRAME_RING_EVENTFD alone gets no ring (pf-wire-private.h) */
  if ((msg->u.hello.flags & PF_HELLO_FRAME_RING) && c->state != CLIENT_DEAD)
    client_offer_ring (p, c);
  client_update_stream (p, c, 1);
  for (s = p->segs; s != NULL && c->state != CLIENT_DEAD; s = s->next)
    if (s->fd >= 0)
      client_announce_seg (p, c, s);
  client_send_caps (p, c);
  if (c->state == CLIENT_DEAD)
    return;
  c->state = CLIENT_ACTIVE;
  c->connected_notified = 1;
  producer_push_event (ev, EV_CONNECTED, &c->info);
}

void
client_handle_release (pf_producer * p, struct client *c, uint64_t seq,
    struct event_list *ev)
{
  unsigned int i;

  for (i = 0; i < c->n_held; i++) {
    if (c->held[i].seq == seq) {
      struct pframe *f = c->held[i].frame;

      c->held[i] = c->held[--c->n_held];
      c->stats.frames_released++;
      c->blocked_since = 0;     /* it moves: the reliable timeout restarts */
      c->progress_ns = pf_monotonic_ns ();
      frame_unhold (p, f, ev);
      return;
    }
  }
  client_fail (p, c, -EPROTO, "released frame %" PRIu64 " it does not hold",
      seq);
}

/* Reads one message of @c per wake-up: epoll is level-triggered and
 * brings us back for the next. A consumer sends about one RELEASE per
 * frame, so there is no second read that would only answer EAGAIN (a
 * syscall per frame, issue 13); nor can one chatty consumer starve the
 * others. */
void
client_read (pf_producer * p, struct client *c, struct event_list *ev)
{
  uint8_t buf[PF_MAX_MSG_SIZE];
  int fds[PF_SOCKET_MAX_RECV_FDS];
  unsigned int n_fds;
  const char *why;
  struct pf_msg msg;
  ssize_t len;
  int res;

  if (c->state == CLIENT_DEAD)
    return;
  len = pf_socket_recv (c->fd, buf, sizeof (buf), MSG_DONTWAIT, fds,
      &n_fds, &why);
  if (len == -EAGAIN)
    return;
  if (len == 0) {
    client_fail (p, c, 0, "consumer hung up");
    return;
  }
  if (len < 0) {
    if (why)
      client_fail (p, c, (int) len, "receive failed: %s", why);
    else
      client_fail_io (p, c, (int) len, "receive");
    return;
  }
  if (n_fds > 0) {
    pf_socket_close_fds (fds, n_fds);
    client_fail (p, c, -EPROTO, "consumer sent %u file descriptors", n_fds);
    return;
  }
  if ((res = pf_msg_parse (buf, (size_t) len, 0, &msg)) < 0) {
    /* A consumer speaking another version learns ours before we hang
     * up, so it can report the mismatch; a peer with another magic is
     * not a pinnedflow consumer and gets no answer. */
    if (res == -EPROTONOSUPPORT && c->state == CLIENT_HANDSHAKE &&
        msg.type == PF_MSG_HELLO && msg.u.hello.magic == PF_PROTOCOL_MAGIC) {
      uint8_t hello[sizeof (struct pf_msg_hello)];

      client_send_ctl (p, c, hello, pf_msg_write_hello (hello,
              PF_ROLE_PRODUCER, p->max_client_frames, p->session_id), -1);
    }
    client_fail (p, c, res, "%s", pf_msg_error ());
    return;
  }
  if (c->state == CLIENT_HANDSHAKE) {
    client_handle_hello (p, c, &msg, ev);
    return;
  }
  if (msg.type == PF_MSG_DOMAIN && c->wants_device) {
    /* its domain (pf_producer_publish_domains ()): the last one counts */
    memcpy (c->domain_uuid, msg.u.domain.device_uuid, 16);
    c->has_domain = 1;
    return;
  }
  if (msg.type != PF_MSG_RELEASE) {
    client_fail (p, c, -EPROTO, "unexpected message type %u from a "
        "consumer", msg.type);
    return;
  }
  client_handle_release (p, c, msg.u.release.seq, ev);
}

/* @e cleared and naming @c: its type, client id, pid and delivery. */
static void
client_event_init (const struct client *c, pf_client_event * e, int type)
{
  memset (e, 0, sizeof (*e));
  e->type = type;
  e->client_id = c->info.client_id;
  e->pid = c->info.pid;
  e->delivery = c->info.delivery;
}

/* Counts a drop of frame @seq for @c and reports it, at most once per
 * DROP_REPORT_INTERVAL_NS (the first at once). The client then waits for a
 * key frame: a delta frame after a gap would not decode. */
static void
client_drop (pf_producer * p, struct client *c, int reason, uint64_t seq,
    struct event_list *ev)
{
  static const char *const why[] = {
    [PF_DROP_LIMIT] = "it holds its limit of frames",
    [PF_DROP_SOCKET_FULL] = "its socket is full",
    [PF_DROP_NOT_READY] = "every-frame consumer at its limit, publisher "
        "did not wait",
  };
  pf_client_event e;
  uint64_t now;

  switch (reason) {
    case PF_DROP_LIMIT:
      c->stats.dropped_limit++;
      break;
    case PF_DROP_SOCKET_FULL:
      c->stats.dropped_socket++;
      break;
    default:
      c->stats.dropped_not_ready++;
      break;
  }
  c->stats.frames_dropped++;
  c->drops_unreported++;
  c->need_key = 1;
  now = pf_monotonic_ns ();
  if (now < c->next_drop_report)
    return;
  c->next_drop_report = now + DROP_REPORT_INTERVAL_NS;
  client_event_init (c, &e, PF_CLIENT_EVENT_DROPPED);
  e.reason = reason;
  e.dropped = c->drops_unreported;
  e.frames_dropped = c->stats.frames_dropped;
  e.last_seq = seq;
  snprintf (e.message, sizeof (e.message), "consumer %u (pid %d) missed %"
      PRIu64 " frame(s) (%" PRIu64 " so far), last %" PRIu64 ": %s",
      c->info.client_id, (int) c->info.pid, e.dropped, e.frames_dropped, seq,
      why[reason]);
  c->drops_unreported = 0;
  producer_push_client_event (ev, &e);
}

void
client_update_stream (pf_producer * p, struct client *c, int force)
{
  uint8_t buf[sizeof (struct pf_msg_stream)];
  pf_stream_info info;
  uint32_t d;

  if (c->demoted)
    d = PF_DELIVERY_NEWEST_FRAME;
  else if (c->info.requested != PF_DELIVERY_DEFAULT)
    d = c->info.requested;
  else
    d = p->live ? PF_DELIVERY_NEWEST_FRAME : PF_DELIVERY_EVERY_FRAME;
  if (d == c->info.delivery && !force)
    return;
  c->info.delivery = d;
  c->stats.delivery = d;
  c->blocked_since = 0;
  /* an every-frame client now, maybe at its limit: wait_ready looks */
  atomic_store (&p->ready_fast, 0);
  memset (&info, 0, sizeof (info));
  info.delivery = d;
  info.flags = (p->live ? PF_STREAM_LIVE : 0) |
      (c->demoted ? PF_STREAM_DEMOTED : 0);
  if (p->have_segment) {
    info.flags |= PF_STREAM_HAS_SEGMENT;
    info.segment = p->segment;
  }
  client_send_ctl (p, c, buf, pf_msg_write_stream (buf, &info), -1);
}

/* Before disconnecting @c for falling behind: a REFUSE that tells it why
 * (issue 25: not the words of a crash). Best effort: a full socket
 * loses it. */
static void
client_say_fell_behind (pf_producer * p, struct client *c, uint32_t limit)
{
  uint8_t buf[sizeof (struct pf_msg_refuse)];

  /* queued behind others, it would be dropped with them by client_fail */
  if (c->q_head != NULL)
    return;
  client_send_ctl (p, c, buf, pf_msg_write_refuse (buf,
          PF_REFUSE_FELL_BEHIND, limit), -1);
}

void
client_reliable_timeout (pf_producer * p, struct client *c,
    uint64_t blocked_ns, int why, struct event_list *ev)
{
  const char *cause = why == RELIABLE_LIVE_LAG ? "live lag budget" :
      "reliable timeout";
  int bound = why == RELIABLE_LIVE_LAG ? p->live_max_lag_ms :
      p->reliable_timeout_ms;
  pf_client_event e;

  memset (&e, 0, sizeof (e));
  e.client_id = c->info.client_id;
  e.pid = c->info.pid;
  e.blocked_ns = blocked_ns;
  e.frames_dropped = c->stats.frames_dropped;
  c->blocked_since = 0;
  /* in a live stream, its process comes back as newest frame for a while */
  pacing_penalize (p, c, pf_monotonic_ns ());
  if (p->reliable_action == PF_RELIABLE_TIMEOUT_DISCONNECT) {
    e.type = PF_CLIENT_EVENT_TIMED_OUT;
    e.delivery = c->info.delivery;
    snprintf (e.message, sizeof (e.message), "every-frame consumer %u (pid "
        "%d) held its %u frames for %" PRIu64 " ms (%s %d ms): "
        "disconnected", c->info.client_id, (int) c->info.pid, c->n_held,
        blocked_ns / 1000000, cause, bound);
    producer_push_client_event (ev, &e);
    client_say_fell_behind (p, c, bound > 0 ? (uint32_t) bound : 0);
    client_fail (p, c, -ETIMEDOUT, "held its %u frames past the %s of %d ms",
        c->n_held, cause, bound);
    return;
  }
  c->demoted = 1;
  c->stats.demoted = 1;
  client_update_stream (p, c, 1);
  e.type = PF_CLIENT_EVENT_DEMOTED;
  e.delivery = c->info.delivery;
  snprintf (e.message, sizeof (e.message), "every-frame consumer %u (pid %d) "
      "held its %u frames for %" PRIu64 " ms (%s %d ms): "
      "demoted to newest frame", c->info.client_id, (int) c->info.pid,
      c->n_held, blocked_ns / 1000000, cause, bound);
  producer_push_client_event (ev, &e);
}

void
client_evict_stalled (pf_producer * p, struct client *c, uint64_t stalled_ns,
    struct event_list *ev)
{
  pf_client_event e;

  client_event_init (c, &e, PF_CLIENT_EVENT_TIMED_OUT);
  e.blocked_ns = stalled_ns;
  e.frames_dropped = c->stats.frames_dropped;
  snprintf (e.message, sizeof (e.message), "consumer %u (pid %d) held %u "
      "frames without releasing any for %" PRIu64 " ms while the producer had "
      "no free frame: disconnected", c->info.client_id, (int) c->info.pid,
      c->n_held, stalled_ns / 1000000);
  producer_push_client_event (ev, &e);
  client_say_fell_behind (p, c, 0);
  client_fail (p, c, -ETIMEDOUT, "held %u frames without releasing any for "
      "%" PRIu64 " ms while the producer had no free frame", c->n_held,
      stalled_ns / 1000000);
}

/* Sends @buf (an encoded FRAME) to @c if it can take it; 1 if it did.
 * Newest frame: skipped at its limit or when its socket is full.
 * Every frame: skipped only at its limit (the publisher did not wait);
 * queued behind control messages or a full socket. */
int
client_offer_frame (pf_producer * p, struct client *c, const uint8_t * buf,
    size_t len, struct pseg *const *ps, unsigned int n_chunks,
    struct pframe *f, uint64_t bytes, uint32_t buffer_flags, uint64_t now,
    struct event_list *ev)
{
  int reliable = c->stats.delivery == PF_DELIVERY_EVERY_FRAME;
  unsigned int i;
  int res;

  if (!c->wants_device) {
    for (i = 0; i < n_chunks; i++) {
      if (ps[i]->is_device) {
        c->stats.frames_skipped_device++;
        return 0;
      }
    }
  }
  if (c->need_key && (buffer_flags & PF_BUFFER_FLAG_DELTA_UNIT)) {
    c->stats.frames_skipped_key++;
    return 0;
  }
  if (c->n_held >= p->max_client_frames) {
    client_drop (p, c, reliable ? PF_DROP_NOT_READY : PF_DROP_LIMIT, f->seq,
        ev);
    return 0;
  }
  /* Segments first (queued if need be: never dropped). */
  for (i = 0; i < n_chunks && c->state != CLIENT_DEAD; i++)
    client_announce_seg (p, c, ps[i]);
  if (c->state == CLIENT_DEAD)
    return 0;
  /* A frame may not overtake queued control messages. */
  if (!reliable && c->q_head != NULL && client_flush (p, c) < 0) {
    if (c->state != CLIENT_DEAD)
      client_drop (p, c, PF_DROP_SOCKET_FULL, f->seq, ev);
    return 0;
  }
  if (c->n_held == c->cap_held) {
    unsigned int cap = c->cap_held ? c->cap_held * 2 : 16;
    struct held *n;

    if (cap > p->max_client_frames)
      cap = p->max_client_frames;
    if ((n = realloc (c->held, cap * sizeof (*n))) == NULL) {
      client_fail (p, c, -ENOMEM, "out of memory");
      return 0;
    }
    c->held = n;
    c->cap_held = cap;
  }
  if (c->ring != NULL && c->q_head == NULL) {
    /* nothing queued before it: through the ring (never full: it has an
     * entry for every frame the client may hold) */
    client_ring_frame (c, buf);
  } else if (reliable) {
    /* sent now, or queued in order: never dropped */
    if (client_send_ctl (p, c, buf, len, -1) < 0)
      return 0;
  } else {
    res = pf_socket_send (c->fd, buf, len, NULL, 0, MSG_DONTWAIT);
    if (res == -EAGAIN) {
      client_drop (p, c, PF_DROP_SOCKET_FULL, f->seq, ev);
      return 0;
    }
    if (res < 0) {
      client_fail_io (p, c, res, "send");
      return 0;
    }
    c->ctl_sent++;
  }
  if (c->n_held == 0)
    c->progress_ns = now;
  c->held[c->n_held].seq = f->seq;
  c->held[c->n_held].frame = f;
  c->n_held++;
  c->need_key = 0;
  c->stats.frames_sent++;
  c->stats.bytes_sent += bytes;
  f->holders++;
  return 1;
}
