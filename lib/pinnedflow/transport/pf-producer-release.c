/* pinnedflow: the releases a consumer publishes in its release ring,
 * producer side (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A consumer with a frame ring (docs/protocol.md, 3.10) publishes its
 * releases in the release ring and rings the release doorbell. They are
 * taken by the I/O thread when the doorbell rings (client_read_releases ()),
 * and by a publisher before it judges whether the client has room
 * (client_take_releases (): pf_producer_publish (), _wait_ready (),
 * _reclaim_stalled ()), so a consumer that released is never dropped or
 * waited for because the I/O thread has not run yet. The ring's memory
 * order is pf-ring.c's; each release is checked as a RELEASE message is
 * (client_handle_release (), pf-producer-client.c).
 *
 * The release doorbell on demand (issue 35; docs/protocol.md, 3.10; the
 * memory order: pf-ring.c, SYNC POINT 4). Since a publisher takes the
 * releases itself, the doorbell only matters to a thread that sleeps until
 * a release comes. The producer announces in every ring it makes that its
 * consumer need ring only while the ring's release_want is set, and sets
 * it while p->want_releases counts a wait (release_want ()): a blocked
 * pf_producer_wait_ready (), each pf_producer_want_releases (1) not yet
 * ended (the pools' waits for a free slot), and the idle I/O thread. A
 * wait that begins sets the word, fences, then takes every ring's
 * releases before its caller sleeps: a release published after that is
 * rung for. The idle rescan keeps frame_released coming when nobody
 * publishes (the end of a stream, a paused pipeline): with a client on a
 * ring and nothing published for idle_delay () (sixteen of the stream's
 * usual gaps between publishes, at most RELEASE_IDLE_NS), the I/O thread takes the
 * releases and wants the doorbell until the next publish (which wakes it
 * to count from there again); while it stays idle with frames held, it
 * takes the releases again every RELEASE_IDLE_NS, so a consumer that does
 * not ring when asked holds the producer's frames no longer than one that
 * does not release (the reliable timeout and the pools' reclaim still
 * apply to it). So while a stream flows, the I/O thread is woken about
 * once in sixteen frames for it (its timer), not once per frame.
 *
 * What the producer's application waits for without telling us (a pool
 * of its own that feeds the publisher, the upstream producer of a relay,
 * whose frames a pinnedshmsrc ! pinnedshmsink holds) is covered by the
 * held rule (release_held ()): a consumer that holds more than half its
 * max_client_frames after a publish is asked to ring until a publish finds
 * it below that again (a pool sized for the consumers' limits runs dry
 * only past it). A consumer that keeps up holds one or two frames at a
 * publish (a GStreamer consumer often keeps the previous one: a sink's
 * last sample) and is not asked, unless its limit is 1 or 2; one that lags
 * rings, and its frames come back as they are released, as before issue
 * 35. The end of a stream (pf_producer_send_eos ()) counts as idle at
 * once. A relay's upstream that waits for frames the relay still holds,
 * with the relay's consumers below half their limit, is not seen: it waits
 * for the relay's next publish or its idle rescan.
 *
 * Threads and locks: p->lock held; nothing blocks (the doorbell is read
 * with MSG_DONTWAIT); no user callback (released frames go on the
 * caller's event_list). Calls go one way: pf-producer.c and
 * pf-producer-io.c call this file, it calls pf-producer-client.c.
 */
#include "pf-producer-private.h"
#include "pf-doorbell-private.h"
#include "pf-ring-private.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

/* the shortest idle delay (idle_delay ()) */
#define IDLE_MIN_NS UINT64_C (2000000)

/* Rings a consumer may send beyond its releases taken: an honest one
 * rings once per release, after publishing it, so never more than n
 * beyond (pf_ring_releases_published ()); the rest is slack, as the
 * consumer side allows (DOORBELL_DRAIN_MAX, pf-consumer.c). */
#define RELEASE_RINGS_SLACK 1024u

/* Empties @c's release doorbell in one go (docs/protocol.md, 3.10; issue
 * 35: reading less left the level-triggered fd readable, the I/O thread
 * spinning on a consumer that rang without releasing). Reads of up to 256
 * rings, never blocking, until one comes back short (one recv () per
 * wake-up for an honest consumer); fails @c once all the rings it sent
 * pass its releases by more than n + RELEASE_RINGS_SLACK. 1: read; 0: @c
 * failed. */
static int
client_drain_release_doorbell (pf_producer * p, struct client *c)
{
  uint64_t most = c->rel_r + c->ring_mask + 1 + RELEASE_RINGS_SLACK;
  int res;

  for (;;) {
    res = pf_doorbell_read (c->rel_doorbell, 256);
    if (res == -EAGAIN)
      return 1;
    if (res == 0) {
      client_fail (p, c, 0, "consumer hung up");
      return 0;
    }
    if (res < 0) {
      client_fail (p, c, res, "release doorbell: %s", strerror (-res));
      return 0;
    }
    c->rel_rings += (uint64_t) res;
    if (c->rel_rings > most) {
      client_fail (p, c, -EPROTO, "release doorbell: rung %" PRIu64
          " times for %" PRIu64 " releases taken (at most %u more are "
          "allowed)", c->rel_rings, c->rel_r, c->ring_mask + 1 +
          RELEASE_RINGS_SLACK);
      return 0;
    }
    /* short: the stream socket was empty (a later ring wakes epoll) */
    if (res < 256)
      return 1;
  }
}

/* Takes the releases @c published in its release ring, each checked as a
 * RELEASE message is. The I/O thread calls it after emptying the doorbell
 * (client_read_releases ()); a publisher calls it as it is, before judging
 * whether @c has room (issue 35: a consumer that released is not dropped
 * because the I/O thread has not run yet). */
void
client_take_releases (pf_producer * p, struct client *c, struct event_list *ev)
{
  uint64_t w;

  if (c->rel == NULL || c->state == CLIENT_DEAD)
    return;
  if (pf_ring_releases_published (c->rel, c->ring_mask, c->rel_r, &w) < 0) {
    client_fail (p, c, -EPROTO, "release ring: %" PRIu64 " releases "
        "published, %" PRIu64 " taken: more than its %u entries", w,
        c->rel_r, c->ring_mask + 1);
    return;
  }
  if (w == c->rel_r)
    return;
  while (c->rel_r != w && c->state != CLIENT_DEAD) {
    uint64_t seq = pf_ring_release_get (c->rel, c->ring_mask, c->rel_r);

    c->rel_r++;
    client_handle_release (p, c, seq, ev);
  }
  pf_ring_releases_taken (c->rel, c->rel_r);
}

/* The doorbell emptied first (a release published after that rings
 * again, and the fd, level-triggered, wakes us again only then), then the
 * releases. A doorbell closed at the other end is a hang-up (else it would
 * stay readable for ever). */
void
client_read_releases (pf_producer * p, struct client *c, struct event_list *ev)
{
  if (client_drain_release_doorbell (p, c))
    client_take_releases (p, c, ev);
}

/* Sets or clears the release_want of every ring (active clients). */
static void
want_set_all (pf_producer * p, int want)
{
  struct client *c;

  for (c = p->clients; c != NULL; c = c->next)
    if (c->ring != NULL && c->state != CLIENT_DEAD)
      pf_ring_release_want (c->ring, want || c->held_want);
}

void
release_want (pf_producer * p, int delta, struct event_list *ev)
{
  struct client *c;

  if (delta < 0) {
    /* no fence: a consumer that still sees the word set rings once more */
    if (p->want_releases > 0 && --p->want_releases == 0)
      want_set_all (p, 0);
    return;
  }
  if (p->want_releases++ == 0)
    want_set_all (p, 1);
  /* SYNC POINT 4: the word, the fence, then the releases (pf-ring.c):
   * what this does not take, its consumer rings for */
  pf_ring_release_want_fence ();
  for (c = p->clients; c != NULL; c = c->next)
    if (c->state == CLIENT_ACTIVE && c->rel != NULL)
      client_take_releases (p, c, ev);
}

/* 1 when a client has a ring (only its releases can go unrung). Not
 * only those that hold frames: a publish would have to wake the I/O
 * thread to count from it when the first is held. */
static int
ring_clients (pf_producer * p)
{
  struct client *c;

  for (c = p->clients; c != NULL; c = c->next)
    if (c->state == CLIENT_ACTIVE && c->rel != NULL)
      return 1;
  return 0;
}

/* How long without a publish makes the stream idle: sixteen of its usual
 * gaps between publishes (their running mean), at least IDLE_MIN_NS and at
 * most p->idle_ns. A relay's sink (pinnedshmsrc ! pinnedshmsink) holds its
 * upstream's frames until its consumers' releases are taken, and its next
 * publish waits for the upstream, which waits for them: the stall is
 * bounded by a few frame periods, not by p->idle_ns; a stream that flows
 * never reaches it. */
static uint64_t
idle_delay (pf_producer * p)
{
  uint64_t d = 16 * p->publish_gap_ns;

  if (p->publish_gap_ns == 0 || d > p->idle_ns)
    return p->idle_ns;
  return d < IDLE_MIN_NS ? IDLE_MIN_NS : d;
}

/* 1 when a client on a ring holds frames. */
static int
ring_frames_held (pf_producer * p)
{
  struct client *c;

  for (c = p->clients; c != NULL; c = c->next)
    if (c->state == CLIENT_ACTIVE && c->rel != NULL && c->n_held > 0)
      return 1;
  return 0;
}

int
release_idle_ms (pf_producer * p, uint64_t * now)
{
  uint64_t due;

  if (p->idle_ns == 0 || !ring_clients (p))
    return -1;
  if (!p->idle_want) {
    due = p->last_publish_ns + idle_delay (p);
  } else if (ring_frames_held (p)) {
    /* idle already: the doorbells are wanted, but a consumer that does
     * not ring when asked must not keep its frames for ever either */
    due = p->idle_scan_ns + p->idle_ns;
  } else {
    return -1;
  }
  if (*now == 0)
    *now = pf_monotonic_ns ();
  return *now >= due ? 0 : (int) ((due - *now) / 1000000) + 1;
}

void
release_idle (pf_producer * p, struct event_list *ev)
{
  uint64_t now = 0;
  struct client *c;

  if (release_idle_ms (p, &now) != 0)
    return;
  p->idle_scan_ns = now;
  if (!p->idle_want) {
    p->idle_want = 1;
    release_want (p, +1, ev);
    return;
  }
  for (c = p->clients; c != NULL; c = c->next)
    if (c->state == CLIENT_ACTIVE && c->rel != NULL)
      client_take_releases (p, c, ev);
}

void
release_held (pf_producer * p, struct client *c, struct event_list *ev)
{
  int want = c->n_held > p->max_client_frames / 2;

  if (c->ring == NULL || want == c->held_want)
    return;
  c->held_want = want;
  /* wanted anyway while something waits */
  if (p->want_releases > 0)
    return;
  pf_ring_release_want (c->ring, want);
  if (want) {
    /* SYNC POINT 4, as in release_want () */
    pf_ring_release_want_fence ();
    client_take_releases (p, c, ev);
  }
}

void
release_idle_now (pf_producer * p, struct event_list *ev)
{
  if (p->idle_want)
    return;
  p->idle_want = 1;
  p->idle_scan_ns = pf_monotonic_ns ();
  release_want (p, +1, ev);
}

void
release_publish (pf_producer * p, uint64_t now)
{
  if (p->last_publish_ns != 0 && now > p->last_publish_ns) {
    uint64_t gap = now - p->last_publish_ns;

    /* a running mean (1/8 of each new gap); a pause (the stream idle)
     * does not count */
    if (gap < p->idle_ns)
      p->publish_gap_ns = p->publish_gap_ns == 0 ? gap :
          p->publish_gap_ns - p->publish_gap_ns / 8 + gap / 8;
  }
  p->last_publish_ns = now;
  if (!p->idle_want)
    return;
  p->idle_want = 0;
  release_want (p, -1, NULL);
  /* asleep without a deadline: it counts from this publish again */
  producer_wake (p);
}
