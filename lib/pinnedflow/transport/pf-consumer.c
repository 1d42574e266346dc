/* pinnedflow: the consumer end of the transport (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One thread calls pf_consumer_receive(); it alone touches the segment table
 * and the receive buffer. What pf_consumer_release(), on any thread, shares
 * with it: the held set, under c->held_spin (a spinlock held for an insert
 * or a removal: issue 13, two mutex pairs per frame were ~115
 * instructions), and the error state (broken, write_closed), written under
 * c->lock and read atomically without it; with a frame ring, the release
 * ring's write side, under the same spinlock. RELEASE messages (no ring,
 * or a full one) are sent without a lock (a SOCK_SEQPACKET send is
 * atomic), so a release stuck on a full socket (SO_SNDTIMEO) does not hold
 * up the receiving thread.
 *
 * Frame ring (docs/protocol.md, 3.10; design.md, "The frame ring"; its
 * shared memory and the order of its index updates: pf-ring.c):
 * receive_event () takes FRAMEs from it in the producer's order with the
 * socket's messages (ring_take (), pf_ring_precedes (), the stash); the
 * doorbell is read off the frame's path (doorbell_settle ()) and emptied,
 * bounded, when nothing is left (doorbell_drain ()); pf_consumer_release ()
 * publishes through its release ring (pf_ring_release_push ()) and rings
 * the release doorbell after it, or, to a producer that rings on demand,
 * only while that one waits for a release (pf_ring_release_ring_needed ()).
 *
 * Nothing the producer controls can make us block (issue 26): every read
 * and write on an fd it shares passes MSG_DONTWAIT (the socket's receives;
 * the doorbells, socketpair ends of our own, pf-doorbell-private.h), whatever
 * flags it sets on its ends; only a release that falls back to the socket
 * waits, for at most SEND_TIMEOUT_MS, and with no lock held.
 *
 * Delivery: the STREAM messages of the producer say which delivery is in
 * force (c->stream, receiving thread). With newest frame, a FRAME about to
 * be returned is replaced by a newer one already queued behind it (peeked
 * without reading), the stale one released at once.
 *
 * How a connection ends: consumers made with the _with() calls (c->v2) tell
 * a producer lost without EOS (-ECONNRESET) from a hang-up after EOS
 * (-EPIPE) and from a producer that stopped reading releases (-ETIMEDOUT);
 * the older calls keep reporting -EPIPE for the three.
 *
 * A failed connection is shut down (shutdown(2), so the producer reclaims
 * everything at once) but its fd stays open until the last unref, so the
 * number returned by pf_consumer_get_fd() is never reused behind the user's
 * back.
 *
 * This file holds receiving (the packets, the frame ring's consumer half,
 * delivery), releasing and the getters; the segment table and
 * consumer_fail () are pf-consumer-segments.c, connecting, the handshake
 * and the last unref pf-consumer-connect.c, struct pf_consumer
 * pf-consumer-private.h. It calls pf-consumer-segments.c, never
 * pf-consumer-connect.c (pf-consumer-private.h).
 */
#include "pf-consumer-private.h"
#include "pf-doorbell-private.h"
#include "pf-ring-private.h"

#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static inline void
held_lock (pf_consumer * c)
{
  unsigned int spins = 0;

  while (atomic_flag_test_and_set_explicit (&c->held_spin,
          memory_order_acquire)) {
    /* the holder may have been preempted: let it run */
    if (++spins % 64 == 0)
      sched_yield ();
#if defined (__x86_64__) || defined (__i386__)
    else
      __builtin_ia32_pause ();
#endif
  }
}

static inline void
held_unlock (pf_consumer * c)
{
  atomic_flag_clear_explicit (&c->held_spin, memory_order_release);
}

static int
held_add_locked (pf_consumer * c, uint64_t seq)
{
  if (c->n_held == c->cap_held) {
    unsigned int cap = c->cap_held ? c->cap_held * 2 : 16;
    uint64_t *n = realloc (c->held, cap * sizeof (*n));

    if (n == NULL)
      return -ENOMEM;
    c->held = n;
    c->cap_held = cap;
  }
  c->held[c->n_held++] = seq;
  return 0;
}

/* A frame (held already) with a chunk in a device segment this process
 * could not import: released unseen, counted. 0: nothing to report. */
static int
skip_device_frame (pf_consumer * c, pf_event * ev)
{
  int res;

  c->device_skipped++;
  res = pf_consumer_release (c, ev->frame.seq);
  memset (&ev->frame, 0, sizeof (ev->frame));
  ev->type = 0;
  return res < 0 && res != -ENOENT ? __atomic_load_n (&c->broken,
      __ATOMIC_ACQUIRE) : 0;
}

/* A FRAME decoded into ev->frame (pf_msg_frame_decode (): its own rules
 * hold): checked against this connection's state, then exposed. 1, or the
 * connection failed (pf_consumer_receive () zeroes ev->frame then). */
static int
handle_frame (pf_consumer * c, pf_event * ev)
{
  const pf_consumer_frame *f = &ev->frame;
  struct cseg *s[PF_MAX_CHUNKS];
  unsigned int i, n_held;
  int res;

  /* Everything is checked before anything is exposed. */
  if (c->have_seq && f->seq <= c->last_seq)
    return consumer_fail (c, -EPROTO, "FRAME %" PRIu64 " after frame %"
        PRIu64 ": sequence must increase", f->seq, c->last_seq);
  if (f->caps_seq != c->caps_seq)
    return consumer_fail (c, -EPROTO, "FRAME %" PRIu64 ": caps %u unknown "
        "(current caps %u)", f->seq, f->caps_seq, c->caps_seq);
  for (i = 0; i < f->n_chunks; i++) {
    const pf_frame_chunk *ch = &f->chunks[i];

    if ((s[i] = consumer_find_seg (c, ch->segment_id)) == NULL)
      return consumer_fail (c, -EPROTO, "FRAME %" PRIu64 ": chunk %u in "
          "unknown segment %" PRIu64, f->seq, i, ch->segment_id);
    if (!pf_segment_contains (s[i]->seg, ch->offset, ch->size))
      return consumer_fail (c, -EPROTO, "FRAME %" PRIu64 ": chunk %u (offset %"
          PRIu64 ", size %" PRIu64 ") outside segment %" PRIu64 " (%" PRIu64
          " bytes)", f->seq, i, ch->offset, ch->size, ch->segment_id,
          pf_segment_get_size (s[i]->seg));
  }

  held_lock (c);
  n_held = c->n_held;
  res = n_held >= c->max_held ? -EDQUOT : held_add_locked (c, f->seq);
  held_unlock (c);
  if (res == -EDQUOT)
    return consumer_fail (c, -EPROTO, "FRAME %" PRIu64 ": producer exceeds "
        "its own limit of %u held frames", f->seq, c->max_held);
  if (res < 0)
    return consumer_fail (c, res, "out of memory");

  if (c->have_seq)
    c->stats.frames_missed += f->seq - c->last_seq - 1;
  c->stats.frames_received++;
  c->eos_seen = 0;
  c->last_seq = f->seq;
  c->have_seq = 1;
  ev->type = PF_EVENT_FRAME;
  for (i = 0; i < f->n_chunks; i++) {
    if (s[i]->device_refused)
      return skip_device_frame (c, ev);
  }
  for (i = 0; i < f->n_chunks; i++) {
    ev->segments[i] = pf_segment_ref (s[i]->seg);
    /* a device segment: the device address (no host mapping) */
    ev->data[i] = pf_segment_get_device (s[i]->seg) != NULL ?
        (const void *) (uintptr_t) (s[i]->device_base + f->chunks[i].offset) :
        (const uint8_t *) pf_segment_get_base (s[i]->seg) + f->chunks[i].offset;
  }
  return 1;
}

/* Maps the producer's frame ring (@fds[0]: its frames, which we only
 * read, and our releases) and adds its doorbell (@fds[1]) to the wait
 * set; keeps the release doorbell (@fds[2]); owns @fds. Once, and only
 * when our HELLO asked for it. */
static int
handle_frame_ring (pf_consumer * c, const struct pf_msg_frame_ring *m, int *fds)
{
  struct epoll_event e = {.events = EPOLLIN };
  const char *what = NULL;
  void *map = NULL;

  if (c->ring != NULL || c->wait_fd == c->fd) {
    what = c->ring ? "sent twice" : "not asked for";
    goto fail;
  }
  /* the memfd (its type, size and seals), the doorbells, the header */
  if (pf_ring_attach (m, fds, &map, &what) < 0)
    goto fail;
  e.data.fd = fds[1];
  if (epoll_ctl (c->wait_fd, EPOLL_CTL_ADD, fds[1], &e) < 0) {
    what = "the doorbell cannot be waited on";
    goto fail;
  }
  close (fds[0]);
  c->ring = map;
  c->ring_mask = m->n_entries - 1;
  c->ring_r = 0;
  c->doorbell = fds[1];
  held_lock (c);
  c->rel = pf_ring_release_ring (map, m->n_entries);
  c->rel_w = 0;
  c->rel_doorbell = fds[2];
  /* read once: a producer of before issue 35 left zeros (ring always) */
  c->rel_want = pf_ring_release_on_demand (map, m->n_entries) ? map : NULL;
  held_unlock (c);
  return 0;

fail:
  if (map != NULL)
    pf_ring_unmap (map, m->n_entries);
  pf_socket_close_fds (fds, 3);
  return consumer_fail (c, -EPROTO, "FRAME_RING: %s", what);
}

/* The next ring entry, unless socket packets come before it: 1, copied
 * into c->rbuf and counted off the doorbell; 0: none; 2: one is published
 * but socket packets come first; < 0: the ring is broken. */
static int
ring_take (pf_consumer * c)
{
  uint64_t w;

  switch (pf_ring_take (c->ring, c->ring_mask, &c->ring_r, c->ctl_recvd,
          &c->rbuf.frame, &w)) {
    case PF_RING_EMPTY:
      return 0;
    case PF_RING_SOCKET_FIRST:
      return 2;
    case PF_RING_OVERRUN:
      return consumer_fail (c, -EPROTO, "FRAME_RING: %" PRIu64 " entries "
          "published, %" PRIu64 " read: more than the ring's %u", w,
          c->ring_r, c->ring_mask + 1);
    case PF_RING_NOT_FRAME:
      return consumer_fail (c, -EPROTO, "FRAME_RING: entry %" PRIu64 " is a "
          "message of type %u, not a FRAME", c->ring_r, c->rbuf.frame.hdr.type);
    default:
      /* its ring is read later, off the frame's path: doorbell_settle () */
      c->doorbell_owed++;
      return 1;
  }
}

/* The producer closed its end of the doorbell (it closed the connection,
 * whose socket says so next; or it is hostile): no more rings, and an fd
 * at end of file would poll readable for ever. Entries are still taken
 * whenever the socket wakes us. */
static void
doorbell_hangup (pf_consumer * c)
{
  epoll_ctl (c->wait_fd, EPOLL_CTL_DEL, c->doorbell, NULL);
  close (c->doorbell);
  c->doorbell = -1;
  c->doorbell_owed = 0;
}

/* Reads the rings of the entries taken (one byte each; never more, so a
 * ring that came for an entry not taken yet stays). A ring not there yet
 * (the entry seen before its ring) is left to doorbell_drain (). Before
 * the caller sleeps (pf_consumer_prepare_wait ()), or when it did not,
 * before the next receive: the read is not on a frame's path. Never
 * blocks (pf_doorbell_read ()). */
static int
doorbell_settle (pf_consumer * c)
{
  int n;

  while (c->doorbell_owed > 0 && c->doorbell >= 0) {
    n = pf_doorbell_read (c->doorbell, c->doorbell_owed);
    if (n > 0) {
      c->doorbell_owed -= (unsigned int) n;
      continue;
    }
    if (n == 0) {
      doorbell_hangup (c);
      return 0;
    }
    c->doorbell_owed = 0;
    if (n == -EAGAIN)
      return 0;
    return consumer_fail (c, -EPROTO, "FRAME_RING: the doorbell cannot be "
        "read (%s)", strerror (-n));
  }
  c->doorbell_owed = 0;
  return 0;
}

/* A doorbell holds at most one ring per entry not yet taken, plus one per
 * entry taken before its ring came (a race, made up for at the next
 * drain): more than this many is a forged count. */
#define DOORBELL_DRAIN_MAX 1024u

/* Nothing to read on the socket: empties the doorbell (a ring it got
 * after we took its entry, or a forged one, would wake the caller for
 * ever) and says whether an entry came meanwhile (1; its ring may have
 * been emptied too), or < 0: a doorbell that does not empty. */
static int
doorbell_drain (pf_consumer * c)
{
  unsigned int got = 0, max = c->ring_mask + 1 + DOORBELL_DRAIN_MAX;
  int n;

  c->doorbell_owed = 0;         /* read here with the rest */
  while (c->doorbell >= 0) {
    n = pf_doorbell_read (c->doorbell, max + 1 - got);
    if (n == -EAGAIN)
      break;
    if (n == 0) {
      doorbell_hangup (c);
      break;
    }
    if (n < 0)
      return consumer_fail (c, -EPROTO, "FRAME_RING: the doorbell cannot be "
          "read (%s)", strerror (-n));
    got += (unsigned int) n;
    if (got > max)
      return consumer_fail (c, -EPROTO, "FRAME_RING: the doorbell rang more "
          "than %u times with nothing in the ring", max);
  }
  return pf_ring_pending (c->ring, c->ring_r);
}

/* Handles one received packet; owns @fds. 1: @ev filled; 0: internal
 * message; < 0: the connection failed. */
static int
handle_packet (pf_consumer * c, size_t len, int *fds, unsigned int n_fds,
    pf_event * ev)
{
  struct pf_msg *msg = &c->msg;
  int res;

  /* A FRAME, every frame, is decoded straight into the event (checked in
   * place on a little-endian host, one copy); anything else is parsed. */
  res = pf_msg_frame_decode (c->rbuf.bytes, len, n_fds, &ev->frame);
  if (res == 0)
    return handle_frame (c, ev);
  if (res == -ENOMSG)
    res = pf_msg_parse (c->rbuf.bytes, len, n_fds, msg);
  if (res < 0) {
    pf_socket_close_fds (fds, n_fds);
    return consumer_fail (c, res, "%s", pf_msg_error ());
  }
  switch (msg->type) {
    case PF_MSG_SEGMENT_ADD:
      return consumer_handle_segment_add (c, &msg->u.segment_add, fds[0]);
    case PF_MSG_FRAME_RING:
      return handle_frame_ring (c, &msg->u.frame_ring, fds);
    case PF_MSG_DEVICE_SEGMENT_ADD:
      return consumer_handle_device_segment_add (c,
          &msg->u.device_segment_add, fds[0]);
    case PF_MSG_SEGMENT_REMOVE:
      return consumer_handle_segment_remove (c,
          msg->u.segment_remove.segment_id);
    case PF_MSG_CAPS:
      if (msg->u.caps.caps_seq == 0 || msg->u.caps.caps_seq <= c->caps_seq)
        return consumer_fail (c, -EPROTO, "CAPS: sequence %u after %u must "
            "increase", msg->u.caps.caps_seq, c->caps_seq);
      c->caps_seq = msg->u.caps.caps_seq;
      c->eos_seen = 0;
      memcpy (c->caps, msg->u.caps.text, msg->u.caps.length + 1);
      ev->type = PF_EVENT_CAPS;
      ev->caps = c->caps;
      ev->caps_seq = c->caps_seq;
      return 1;
    case PF_MSG_EOS:
      c->eos_seen = 1;
      ev->type = PF_EVENT_EOS;
      return 1;
    case PF_MSG_STREAM:
      pf_msg_stream_to_info (&msg->u.stream, &c->stream);
      c->stats.delivery = c->stream.delivery;
      if (c->stream.flags & PF_STREAM_DEMOTED)
        c->stats.demoted = 1;
      c->eos_seen = 0;
      if (!c->v2)
        return 0;
      ev->type = PF_EVENT_STREAM;
      ev->stream = c->stream;
      return 1;
    case PF_MSG_REFUSE:
      /* mid-stream: the producer says why it is about to close */
      if (msg->u.refuse.reason == PF_REFUSE_FELL_BEHIND)
        return consumer_fail (c, -ECONNABORTED, "the producer disconnected "
            "this consumer for falling behind: it held its frames past the "
            "producer's reliable timeout (%u ms; 0: while the producer had "
            "no free frame)", msg->u.refuse.limit);
      return consumer_fail (c, -EPROTO, "REFUSE (reason %u) after the "
          "handshake", msg->u.refuse.reason);
    default:
      return consumer_fail (c, -EPROTO, "unexpected message type %u from "
          "the producer", msg->type);
  }
}

/* pf-consumer-private.h */
int
consumer_wait_readable (int fd, int cancel_fd, int timeout_ms)
{
  struct pollfd pfd[2] = {
    {.fd = fd,.events = POLLIN},
    {.fd = cancel_fd,.events = POLLIN},
  };
  nfds_t n = cancel_fd >= 0 ? 2 : 1;
  int r;

  do {
    r = poll (pfd, n, timeout_ms);
  } while (r < 0 && errno == EINTR);
  if (r < 0)
    return -errno;
  if (n == 2 && (pfd[1].revents & (POLLIN | POLLERR | POLLHUP | POLLNVAL)))
    return -ECANCELED;
  return r > 0 ? 1 : 0;
}

/* pf-consumer-private.h */
ssize_t
consumer_recv_packet (pf_consumer * c, int timeout_ms, int cancel_fd,
    int *fds, unsigned int *n_fds, const char **why)
{
  ssize_t len;
  int r;

  /* every return leaves the outputs defined */
  *n_fds = 0;
  *why = NULL;
  if (timeout_ms != 0) {
    if (c->doorbell_owed > 0 && (r = doorbell_settle (c)) < 0)
      return r;
    /* A ring read for an entry taken may have been a later entry's (the
     * producer could not send one: a doorbell full of rings nobody read,
     * pf_doorbell_ring ()): an entry published is taken before sleeping.
     * (Not on a frame's path: we only get here with the ring empty.) */
    if (c->ring != NULL && pf_ring_pending (c->ring, c->ring_r))
      return -EAGAIN;
    r = consumer_wait_readable (c->wait_fd, cancel_fd, timeout_ms);
    if (r < 0)
      return r;
    if (r == 0)
      return -ETIMEDOUT;
  }
  len = pf_socket_recv (c->fd, c->rbuf.bytes, sizeof (c->rbuf), MSG_DONTWAIT,
      fds, n_fds, why);
  if (len == -EAGAIN && timeout_ms == 0)
    return -ETIMEDOUT;
  return len;
}

/* The type of the next queued packet, peeked (not read; fds stay queued):
 * 0 when none is queued or it cannot be peeked. */
static uint32_t
peek_type (pf_consumer * c)
{
  uint8_t hdr[sizeof (struct pf_msg_header)];
  ssize_t n;
  uint32_t type;

  do {
    n = recv (c->fd, hdr, sizeof (hdr), MSG_PEEK | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n < (ssize_t) sizeof (hdr))
    return 0;
  memcpy (&type, hdr, sizeof (type));
  return le32toh (type);
}

/* Newest frame: while the packets queued behind the FRAME in @ev are
 * segment messages or FRAMEs, reads them; each newer FRAME replaces @ev's,
 * which is released at once. Stops before anything else (CAPS, STREAM,
 * EOS), so that a frame is never reported out of order with them. A
 * failure on the way is left for the next pf_consumer_receive(). */
static void
skip_stale (pf_consumer * c, pf_event * ev)
{
  int fds[PF_SOCKET_MAX_RECV_FDS];
  unsigned int n_fds;
  const char *why;
  pf_event next;
  uint32_t type;
  ssize_t len;
  int res;

  /* with a ring: the newer entries published, up to anything on the
   * socket before them */
  while (c->ring != NULL && ring_take (c) == 1) {
    memset (&next, 0, sizeof (next));
    if (handle_packet (c, sizeof (struct pf_msg_frame), fds, 0, &next) != 1)
      return;                   /* failed: reported by the next receive */
    pf_consumer_release (c, ev->frame.seq);
    pf_consumer_event_clear (ev);
    *ev = next;
    c->stats.frames_stale_dropped++;
  }
  if (c->ring != NULL)
    return;
  for (;;) {
    type = peek_type (c);
    if (type != PF_MSG_FRAME && type != PF_MSG_SEGMENT_ADD &&
        type != PF_MSG_SEGMENT_REMOVE && type != PF_MSG_DEVICE_SEGMENT_ADD)
      return;
    len = consumer_recv_packet (c, 0, -1, fds, &n_fds, &why);
    /* end of file (it stays), nothing after all, or a reset reported once
     * before what is still queued: the next receive sees to them */
    if (len == 0 || len == -ETIMEDOUT || len == -EAGAIN || len == -ECONNRESET
        || len == -EPIPE)
      return;
    if (len < 0) {              /* the packet is gone: fail now */
      consumer_fail (c, len == -EPROTO ? -EPROTO : (int) len,
          "receive failed: %s", why ? why : strerror ((int) -len));
      return;
    }
    memset (&next, 0, sizeof (next));
    res = handle_packet (c, (size_t) len, fds, n_fds, &next);
    if (res < 0)
      return;                   /* failed: reported by the next receive */
    if (res == 0)
      continue;                 /* a segment message, handled */
    pf_consumer_release (c, ev->frame.seq);
    pf_consumer_event_clear (ev);
    *ev = next;
    c->stats.frames_stale_dropped++;
  }
}

/* The producer's end of the connection (end of file). */
static int
producer_gone (pf_consumer * c)
{
  if (!c->v2)
    return consumer_fail (c, -EPIPE, "producer went away");
  if (c->eos_seen)
    return consumer_fail (c, -EPIPE, "the producer hung up after EOS");
  return consumer_fail (c, -ECONNRESET, "the producer went away without EOS "
      "(crashed, killed, or closed mid-stream)");
}

/* pf_consumer_receive () on an event whose fields but the frame are zero */
static int
receive_event (pf_consumer * c, int timeout_ms, pf_event * ev)
{
  int fds[PF_SOCKET_MAX_RECV_FDS];
  struct timespec start = { 0, 0 };
  unsigned int n_fds;
  const char *why;
  ssize_t len;
  int res;

  /* 0 (what is queued) and -1 (forever) need no clock */
  if (timeout_ms > 0)
    clock_gettime (CLOCK_MONOTONIC, &start);

  for (;;) {
    int ring_first = 0;

    /* set by a release failing on another thread, or by us */
    res = __atomic_load_n (&c->broken, __ATOMIC_ACQUIRE);
    if (res < 0)
      return res;

    /* The frame ring, first: a FRAME there is ours unless packets sent on
     * the socket before it are still to be read. */
    if (c->ring != NULL) {
      /* the rings of the entries taken last time, if the caller did not
       * pf_consumer_prepare_wait (): a doorbell never counts more than
       * the ring holds */
      if (c->doorbell_owed > 0 && (res = doorbell_settle (c)) < 0)
        return res;
      res = ring_take (c);
      if (res < 0)
        return res;
      if (res == 1) {
        len = sizeof (struct pf_msg_frame);
        n_fds = 0;
        goto handle;
      }
      ring_first = res == 2;
    }
    if (c->stash_len > 0) {
      len = (ssize_t) c->stash_len;
      memcpy (c->rbuf.bytes, c->stash, c->stash_len);
      n_fds = c->stash_n_fds;
      memcpy (fds, c->stash_fds, n_fds * sizeof (int));
      c->stash_len = 0;
      c->stash_n_fds = 0;
      c->ctl_recvd++;
      goto handle;
    }

    len = consumer_recv_packet (c, ring_first ? 0 : remaining (timeout_ms,
            &start), -1, fds, &n_fds, &why);
    if (len == -ETIMEDOUT || len == -EAGAIN) {
      if (ring_first)
        return consumer_fail (c, -EPROTO, "FRAME_RING: entry %" PRIu64
            " follows socket messages that never came", c->ring_r);
      if (c->ring != NULL && (res = doorbell_drain (c)) != 0) {
        if (res < 0)
          return res;
        continue;
      }
      if (len == -ETIMEDOUT)
        return 0;
      continue;
    }
    /* A producer that closes with our RELEASEs unread in its queue makes
     * AF_UNIX report ECONNRESET once, BEFORE the packets it sent last
     * (its final FRAMEs and EOS), which stay readable: read on until the
     * end of file. */
    if (len == -ECONNRESET)
      continue;
    if (len == 0 || len == -EPIPE)
      return producer_gone (c);
    if (len < 0)
      return consumer_fail (c, len == -EPROTO ? -EPROTO : (int) len,
          "receive failed: %s", why ? why : strerror ((int) -len));
    if (c->ring != NULL && pf_ring_precedes (c->ring, c->ring_mask,
            c->ring_r, c->ctl_recvd)) {
      /* an entry published before this packet was sent: it goes first */
      if (c->stash == NULL && (c->stash = malloc (PF_MAX_MSG_SIZE)) == NULL) {
        pf_socket_close_fds (fds, n_fds);
        return consumer_fail (c, -ENOMEM, "out of memory");
      }
      memcpy (c->stash, c->rbuf.bytes, (size_t) len);
      c->stash_len = (size_t) len;
      memcpy (c->stash_fds, fds, n_fds * sizeof (int));
      c->stash_n_fds = n_fds;
      continue;
    }
    c->ctl_recvd++;
  handle:
    /* Internal messages: go on while time (or, with 0, data) is left. */
    if ((res = handle_packet (c, (size_t) len, fds, n_fds, ev)) == 0)
      continue;
    if (res == 1 && ev->type == PF_EVENT_FRAME &&
        c->stream.delivery == PF_DELIVERY_NEWEST_FRAME)
      skip_stale (c, ev);
    return res;
  }
}

int
pf_consumer_receive (pf_consumer * c, int timeout_ms, pf_event * ev)
{
  int res;

  if (c == NULL || ev == NULL)
    return -EINVAL;
  /* All but the frame: a FRAME event gets it whole (handle_frame ()),
   * any other outcome zero (issue 13: a FRAME's was zeroed, then copied) */
  ev->type = 0;
  ev->caps = NULL;
  ev->caps_seq = 0;
  memset (ev->segments, 0, sizeof (ev->segments));
  memset (ev->data, 0, sizeof (ev->data));
  memset (&ev->stream, 0, sizeof (ev->stream));
  /* removed segments whose last frame was released since: unmapped now,
   * not at the next SEGMENT_ADD (a device segment's mapping with them) */
  if (c->retired != NULL)
    consumer_prune_retired (c);
  res = receive_event (c, timeout_ms, ev);
  if (res != 1 || ev->type != PF_EVENT_FRAME)
    memset (&ev->frame, 0, sizeof (ev->frame));
  return res;
}

void
pf_consumer_event_clear (pf_event * ev)
{
  unsigned int i;

  if (ev == NULL)
    return;
  /* the references, and what pointed into them; the rest is plain data
   * (zeroing all of it was a third of the cost, every frame) */
  for (i = 0; i < PF_MAX_CHUNKS; i++) {
    if (ev->segments[i])
      pf_segment_unref (ev->segments[i]);
    ev->segments[i] = NULL;
    ev->data[i] = NULL;
  }
  ev->type = 0;
  ev->caps = NULL;
}

int
pf_consumer_release (pf_consumer * c, uint64_t seq)
{
  uint8_t buf[sizeof (struct pf_msg_release)];
  const struct pf_frame_ring *want = NULL;
  int rel_doorbell = -1, in_ring = 0;
  unsigned int i;
  size_t len;
  int res;

  if (c == NULL)
    return -EINVAL;
  held_lock (c);
  for (i = 0; i < c->n_held; i++)
    if (c->held[i] == seq)
      break;
  if (i == c->n_held) {
    held_unlock (c);
    return -ENOENT;
  }
  c->held[i] = c->held[--c->n_held];
  /* through the release ring if it has room (it always has with an
   * honest producer), else a RELEASE message */
  if (c->rel != NULL && pf_ring_release_push (c->rel, c->ring_mask,
          &c->rel_w, seq)) {
    in_ring = 1;
    rel_doorbell = c->rel_doorbell;
    want = c->rel_want;
  }
  held_unlock (c);
  if (__atomic_load_n (&c->broken, __ATOMIC_ACQUIRE)
      || __atomic_load_n (&c->write_closed, __ATOMIC_ACQUIRE))
    return -EPIPE;
  if (in_ring) {
    /* rung only if the producer waits for a release, or did not say
     * (pf-ring.c, SYNC POINT 4); never blocks: a full doorbell is rung
     * already, and one the producer closed changes nothing (the release
     * is in the ring) */
    if (want == NULL || pf_ring_release_ring_needed (want))
      (void) pf_doorbell_ring (rel_doorbell);
    return 0;
  }
  len = pf_msg_write_release (buf, seq);
  res = pf_socket_send (c->fd, buf, len, NULL, 0, 0);
  if (res == 0)
    return 0;

  pthread_mutex_lock (&c->lock);
  if (c->broken) {
    /* failed meanwhile (another release, or the receiving thread) */
    res = -EPIPE;
  } else if (res == -EPIPE || res == -ECONNRESET) {
    /* The producer closed: it reclaimed everything. Its last FRAMEs and
     * EOS may still be queued for us: leave the read side alone. */
    __atomic_store_n (&c->write_closed, 1, __ATOMIC_RELEASE);
    res = -EPIPE;
  } else {
    /* A producer that stops reading fails the connection (it is not an
     * end of stream): -ETIMEDOUT for the _with() consumers. */
    int err = c->v2 && res == -EAGAIN ? -ETIMEDOUT : -EPIPE;

    if (res == -EAGAIN)
      snprintf (c->error, sizeof (c->error), "the producer stopped reading: "
          "a RELEASE could not be sent within %d ms", SEND_TIMEOUT_MS);
    else
      snprintf (c->error, sizeof (c->error), "sending a release failed: %s",
          strerror (-res));
    __atomic_store_n (&c->broken, err, __ATOMIC_RELEASE);
    shutdown (c->fd, SHUT_RDWR);
    res = err;
  }
  pthread_mutex_unlock (&c->lock);
  return res;
}

int
pf_consumer_get_fd (pf_consumer * c)
{
  return c->wait_fd;
}

int
pf_consumer_prepare_wait (pf_consumer * c)
{
  if (c == NULL)
    return -EINVAL;
  if (c->doorbell_owed > 0)
    return doorbell_settle (c);
  return 0;
}

unsigned int
pf_consumer_get_held (pf_consumer * c)
{
  unsigned int n;

  held_lock (c);
  n = c->n_held;
  held_unlock (c);
  return n;
}

uint32_t
pf_consumer_get_max_held (pf_consumer * c)
{
  return c->max_held;
}

uint64_t
pf_consumer_get_session_id (pf_consumer * c)
{
  return c->session_id;
}

const char *
pf_consumer_get_error (pf_consumer * c)
{
  return c->error;
}

uint32_t
pf_consumer_get_delivery (pf_consumer * c)
{
  return c->stream.delivery;
}

void
pf_consumer_get_stream (pf_consumer * c, pf_stream_info * info)
{
  *info = c->stream;
}

void
pf_consumer_get_stats (pf_consumer * c, pf_consumer_stats * stats)
{
  *stats = c->stats;
}
