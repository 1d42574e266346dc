/* pinnedflow transport: delivery policies, stream info, ends of a stream
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The rules of docs/protocol.md section 7.1 (Delivery), the STREAM and
 * REFUSE messages, late joiners at key frames and how a connection ends
 * (sections 4 and 7), checked on pf_producer/pf_consumer, across processes
 * where a process boundary matters. No timing is asserted: where a test
 * waits for the reliable timeout it checks what happened, not when.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define FRAME_SIZE 4096
#define N_SLOTS 8
#define SEG_SIZE (N_SLOTS * FRAME_SIZE)
#define DELTA_UNIT 0x2000u

static const pf_consumer_options every = {.delivery = PF_DELIVERY_EVERY_FRAME
};

static const pf_consumer_options newest = {.delivery = PF_DELIVERY_NEWEST_FRAME
};

/* The case's producer on t_path ("sock"), at most @max_frames held per
 * consumer, and a segment of N_SLOTS frames for it in *@seg (a variable of
 * the case: children it forks inherit the pointer there, so their leak
 * check finds the segment reachable). */
static void
start (t_producer * tp, unsigned int max_frames, pf_segment ** seg)
{
  CHECK_INT (t_producer_start (tp, t_path ("sock"), max_frames), ==, 0);
  CHECK_INT (pf_segment_new ("t", SEG_SIZE, 0, seg), ==, 0);
}

/* Frame @seed in @slot, timestamps derived from @seed. */
static int
publish_slot (t_producer * tp, pf_segment * seg, uint64_t seed,
    unsigned int slot, uint32_t flags)
{
  pf_producer_frame f;

  t_frame_init (&f, seg, (uint64_t) slot * FRAME_SIZE, FRAME_SIZE, seed);
  f.pts = UINT64_C (3600000000000) + seed * 40000000;   /* 1 h in */
  f.dts = seed % 3 ? f.pts - 1 : PF_TIME_NONE;
  f.duration = 40000000 + seed;
  f.buffer_flags = flags;
  return pf_producer_publish (tp->p, &f, &seg, (void *) (uintptr_t) seed);
}

/* ... in slot (seed % N_SLOTS) */
static int
publish_flags (t_producer * tp, pf_segment * seg, uint64_t seed, uint32_t flags)
{
  return publish_slot (tp, seg, seed, seed % N_SLOTS, flags);
}

static int
publish (t_producer * tp, pf_segment * seg, uint64_t seed)
{
  return publish_flags (tp, seg, seed, 0);
}

/* A raw producer's FRAME: the first FRAME_SIZE bytes of segment 1, no
 * timestamps; the caller sets seq. */
static void
raw_frame_init (struct pf_msg_frame *f)
{
  memset (f, 0, sizeof (*f));
  f->n_chunks = 1;
  f->chunks[0].segment_id = 1;
  f->chunks[0].size = FRAME_SIZE;
  f->pts = f->dts = f->duration = f->clock_pts = PF_TIME_NONE;
  f->offset = f->offset_end = UINT64_MAX;
}

/* The next event of @c, not a STREAM (those are checked where expected). */
static void
next_event (pf_consumer * c, pf_event * ev, int skip_stream)
{
  int res;

  do {
    pf_consumer_event_clear (ev);
    res = pf_consumer_receive (c, 30000, ev);
    CHECK_MSG (res == 1, "receive: %d (%s)", res, pf_consumer_get_error (c));
  } while (skip_stream && ev->type == PF_EVENT_STREAM);
}

/* Receives frame @seq (its bytes and timestamps checked) and releases it
 * unless @keep. */
static void
expect_frame (pf_consumer * c, uint64_t seq, int keep)
{
  pf_event ev = { 0 };

  next_event (c, &ev, 1);
  CHECK_INT (ev.type, ==, PF_EVENT_FRAME);
  CHECK_INT (ev.frame.seq, ==, seq);
  CHECK (t_check_fill (ev.data[0], FRAME_SIZE, seq));
  CHECK (ev.frame.pts == UINT64_C (3600000000000) + seq * 40000000);
  CHECK (ev.frame.duration == 40000000 + seq);
  CHECK (ev.frame.dts == (seq % 3 ? ev.frame.pts - 1 : PF_TIME_NONE));
  if (!keep)
    CHECK_INT (pf_consumer_release (c, seq), ==, 0);
  pf_consumer_event_clear (&ev);
}

static void
expect_stream (pf_consumer * c, uint32_t flags, uint32_t delivery)
{
  pf_event ev = { 0 };

  next_event (c, &ev, 0);
  CHECK_INT (ev.type, ==, PF_EVENT_STREAM);
  CHECK_INT (ev.stream.flags, ==, flags);
  CHECK_INT (ev.stream.delivery, ==, delivery);
  CHECK_INT (pf_consumer_get_delivery (c), ==, delivery);
  pf_consumer_event_clear (&ev);
}

static pf_client_stats
stats_of (t_producer * tp, uint32_t delivery_requested)
{
  pf_client_stats st[8];
  unsigned int i, n = pf_producer_get_client_stats (tp->p, st, 8);

  for (i = 0; i < n; i++)
    if (st[i].requested == delivery_requested)
      return st[i];
  CHECK_MSG (0, "no consumer asked for delivery %u", delivery_requested);
  t_fail ();
}

/* ---- every frame across processes ---------------------------------------- */

struct child_args
{
  const char *path;
  int n;
  const pf_consumer_options *opts;
  int slow_ms;                  /* sleep per frame */
};

/* An every-frame consumer in its own process: N of N frames, in order,
 * byte-exact, then EOS. It is slow now and then. Exit 0 when all is well. */
static int
reliable_child (void *data)
{
  struct child_args *a = data;
  pf_consumer *c;
  pf_event ev;
  int n = 0, res;

  if (pf_consumer_connect_with (a->path, 10000, -1, a->opts, &c) < 0)
    return 10;
  for (;;) {
    memset (&ev, 0, sizeof (ev));
    res = pf_consumer_receive (c, 30000, &ev);
    if (res != 1)
      return 11;
    if (ev.type == PF_EVENT_EOS)
      break;
    if (ev.type != PF_EVENT_FRAME)
      continue;
    n++;
    if (ev.frame.seq != (uint64_t) n || !t_check_fill (ev.data[0],
            FRAME_SIZE, ev.frame.seq) || ev.frame.duration != 40000000 +
        ev.frame.seq)
      return 12;
    if (a->slow_ms)
      t_sleep_ms (a->slow_ms);
    else if (n % 16 == 0)
      t_sleep_ms (5);
    pf_consumer_release (c, ev.frame.seq);
    pf_consumer_event_clear (&ev);
  }
  pf_consumer_unref (c);
  return n == a->n ? 0 : 13;
}

/* A newest-frame consumer that takes its frames and then never reads nor
 * releases again (killed at the end of the case). */
static int
stuck_child (void *data)
{
  struct child_args *a = data;
  pf_consumer *c;

  if (pf_consumer_connect_with (a->path, 10000, -1, a->opts, &c) < 0)
    return 10;
  for (;;)
    pause ();
  return 0;
}

/* Every frame, across processes: three every-frame consumers, one of them
 * slow (1 ms a frame), each get N of N frames byte-exact; the publisher
 * that waits is held back, never skips them; a stuck newest-frame consumer
 * beside them stalls nobody and loses frames, counted as "limit". */
static void
test_reliable_and_stuck (void)
{
  int fds0 = t_count_fds ();
  struct child_args ra = { t_path ("sock"), 300, &every, 0 };
  struct child_args slow = { t_path ("sock"), 300, &every, 1 };
  struct child_args sa = { t_path ("sock"), 0, &newest, 0 };
  pf_client_stats st[4], ss;
  t_producer tp;
  pf_segment *seg;
  pid_t reliable[3], stuck;
  unsigned int k;
  int i;

  start (&tp, 2, &seg);
  reliable[0] = t_spawn (reliable_child, &ra);
  reliable[1] = t_spawn (reliable_child, &slow);
  reliable[2] = t_spawn (reliable_child, &ra);
  stuck = t_spawn (stuck_child, &sa);
  WAIT_FOR (tp.connected == 4);
  CHECK_INT (tp.connected, ==, 4);
  for (i = 1; i <= ra.n; i++) {
    /* The stuck one keeps frames 1 and 2 (slots 1, 2) for ever; the
     * reliable one holds at most one frame when the wait returns, so a
     * ring of slots 3..6 never rewrites a frame someone holds. */
    CHECK_INT (pf_producer_wait_ready (tp.p, -1), ==, 0);
    CHECK_INT (publish_slot (&tp, seg, i, i <= 2 ? i : 3 + i % 4, 0), >=, 3);
  }
  CHECK_INT (pf_producer_get_client_stats (tp.p, st, 4), ==, 4);
  for (k = 0; k < 4; k++) {
    if (st[k].requested != PF_DELIVERY_EVERY_FRAME)
      continue;
    CHECK_INT (st[k].frames_sent, ==, ra.n);
    CHECK_INT (st[k].frames_dropped, ==, 0);
    CHECK_INT (st[k].delivery, ==, PF_DELIVERY_EVERY_FRAME);
    CHECK_INT (st[k].demoted, ==, 0);
  }
  ss = stats_of (&tp, PF_DELIVERY_NEWEST_FRAME);
  CHECK_INT (pf_producer_send_eos (tp.p), ==, 0);
  for (k = 0; k < 3; k++)
    CHECK_INT (t_wait (reliable[k]), ==, 0);
  CHECK_INT (ss.frames_sent, ==, 2);
  CHECK_INT (ss.dropped_limit, ==, ra.n - 2);
  CHECK_INT (ss.frames_dropped, ==, ra.n - 2);
  CHECK_INT (ss.delivery, ==, PF_DELIVERY_NEWEST_FRAME);
  /* its drops were reported, first one at once, with their reason */
  CHECK (tp.events[PF_CLIENT_EVENT_DROPPED] >= 1);
  CHECK (tp.events_dropped >= 1 && tp.events_dropped <= (uint64_t) ra.n - 2);
  CHECK_INT (tp.last_event.reason, ==, PF_DROP_LIMIT);
  CHECK (strstr (tp.last_event.message, "limit") != NULL);
  CHECK_INT (tp.events[PF_CLIENT_EVENT_DEMOTED], ==, 0);
  kill (stuck, SIGKILL);
  t_wait (stuck);
  WAIT_FOR (tp.released == ra.n);
  t_finish (&tp, seg, fds0);
}

/* A frame that an every-frame consumer's full socket cannot take now is
 * queued behind the control messages that wait, never dropped; for a
 * newest-frame consumer in the same state it is a drop, "socket full".
 * (80 CAPS of 4 KB fill a socket's default send buffer.) */
static void
test_reliable_queued (void)
{
  int fds0 = t_count_fds ();
  char caps[4001];
  t_producer tp;
  pf_segment *seg;
  pf_consumer *c, *leaky;
  pf_client_stats st;
  pf_event ev = { 0 };
  int i, n_caps = 0, n_frames = 0;

  start (&tp, 64, &seg);
  c = t_connect (&every);
  leaky = t_connect (&newest);
  WAIT_FOR (tp.connected == 2);
  memset (caps, 'x', sizeof (caps) - 1);
  caps[sizeof (caps) - 1] = '\0';
  memcpy (caps, "video/x-raw,p=", 14);
  for (i = 1; i <= 80; i++) {
    snprintf (caps + 14, 8, "%05d", i);
    caps[19] = 'x';
    CHECK_INT (pf_producer_set_caps (tp.p, caps), ==, 0);
  }
  for (i = 1; i <= N_SLOTS; i++)
    CHECK_INT (publish (&tp, seg, i), ==, 1);
  st = stats_of (&tp, PF_DELIVERY_EVERY_FRAME);
  CHECK_INT (st.frames_sent, ==, N_SLOTS);
  CHECK_INT (st.frames_dropped, ==, 0);
  st = stats_of (&tp, PF_DELIVERY_NEWEST_FRAME);
  CHECK_INT (st.frames_sent, ==, 0);
  CHECK_INT (st.dropped_socket, ==, N_SLOTS);
  /* everything arrives, in order: the 80 CAPS, then the frames */
  while (n_frames < N_SLOTS) {
    next_event (c, &ev, 1);
    if (ev.type == PF_EVENT_CAPS) {
      CHECK_INT (n_frames, ==, 0);
      CHECK_INT (ev.caps_seq, ==, ++n_caps);
    } else {
      CHECK_INT (ev.type, ==, PF_EVENT_FRAME);
      CHECK_INT (ev.frame.seq, ==, ++n_frames);
      CHECK_INT (ev.frame.caps_seq, ==, 80);
      CHECK (t_check_fill (ev.data[0], FRAME_SIZE, ev.frame.seq));
      CHECK_INT (pf_consumer_release (c, ev.frame.seq), ==, 0);
    }
    pf_consumer_event_clear (&ev);
  }
  CHECK_INT (n_caps, ==, 80);
  WAIT_FOR (tp.released == N_SLOTS);
  CHECK_INT (tp.released, ==, N_SLOTS);
  pf_consumer_unref (c);
  pf_consumer_unref (leaky);
  t_finish (&tp, seg, fds0);
}

/* ---- waiting, flushing, the reliable timeout ------------------------------ */

static void *
wait_thread (void *data)
{
  t_producer *tp = data;

  return (void *) (intptr_t) pf_producer_wait_ready (tp->p, -1);
}

/* pf_producer_wait_ready() waits for an every-frame consumer at its limit,
 * returns once it released; a publish that did not wait skips it and says
 * so (dropped_not_ready, reported); flushing interrupts a wait. */
static void
test_wait_ready (void)
{
  int fds0 = t_count_fds ();
  t_producer tp;
  pf_segment *seg;
  pf_consumer *c;
  pthread_t th;
  void *ret;
  pf_client_stats st;

  CHECK_INT (t_producer_start (&tp, t_path ("sock"), 2), ==, 0);
  CHECK_INT (pf_producer_set_reliable_timeout (tp.p, -1, 0), ==, 0);
  CHECK_INT (pf_segment_new ("t", SEG_SIZE, 0, &seg), ==, 0);
  /* nobody connected: ready */
  CHECK_INT (pf_producer_wait_ready (tp.p, 0), ==, 0);
  c = t_connect (&every);
  WAIT_FOR (tp.connected == 1);
  CHECK_INT (pf_producer_wait_ready (tp.p, 0), ==, 0);
  CHECK_INT (publish (&tp, seg, 1), ==, 1);
  CHECK_INT (publish (&tp, seg, 2), ==, 1);
  /* it holds 2 of 2: not ready */
  CHECK_INT (pf_producer_wait_ready (tp.p, 0), ==, -ETIMEDOUT);
  CHECK_INT (pf_producer_wait_ready (tp.p, 20), ==, -ETIMEDOUT);
  /* publishing anyway skips it, as a drop of its own reason */
  CHECK_INT (publish (&tp, seg, 3), ==, 0);
  st = stats_of (&tp, PF_DELIVERY_EVERY_FRAME);
  CHECK_INT (st.dropped_not_ready, ==, 1);
  CHECK_INT (st.frames_dropped, ==, 1);
  CHECK_INT (tp.events[PF_CLIENT_EVENT_DROPPED], ==, 1);
  CHECK_INT (tp.last_event.reason, ==, PF_DROP_NOT_READY);
  CHECK_INT (tp.last_event.dropped, ==, 1);
  CHECK_INT (tp.last_event.last_seq, ==, 3);

  /* a wait in another thread, interrupted by flushing */
  CHECK_INT (pthread_create (&th, NULL, wait_thread, &tp), ==, 0);
  t_sleep_ms (50);
  pf_producer_set_flushing (tp.p, 1);
  CHECK_INT (pthread_join (th, &ret), ==, 0);
  CHECK_INT ((intptr_t) ret, ==, -ECANCELED);
  CHECK_INT (pf_producer_wait_ready (tp.p, 0), ==, -ECANCELED);
  pf_producer_set_flushing (tp.p, 0);
  CHECK_INT (pf_producer_wait_ready (tp.p, 0), ==, -ETIMEDOUT);

  /* a wait in another thread, ended by the consumer's release */
  CHECK_INT (pthread_create (&th, NULL, wait_thread, &tp), ==, 0);
  expect_stream (c, 0, PF_DELIVERY_EVERY_FRAME);
  expect_frame (c, 1, 0);
  CHECK_INT (pthread_join (th, &ret), ==, 0);
  CHECK_INT ((intptr_t) ret, ==, 0);
  expect_frame (c, 2, 0);
  CHECK_INT (publish (&tp, seg, 4), ==, 1);
  /* frame 3 skipped it: the gap is seen on its side */
  expect_frame (c, 4, 0);
  {
    pf_consumer_stats cs;

    pf_consumer_get_stats (c, &cs);
    CHECK_INT (cs.frames_missed, ==, 1);
    CHECK_INT (cs.frames_received, ==, 3);
  }
  pf_consumer_unref (c);
  /* closing ends a wait too */
  t_finish (&tp, seg, fds0);
}

/* The bound: an every-frame consumer that keeps its frames blocks the wait
 * for the reliable timeout, then is demoted (told with a STREAM flagged
 * DEMOTED) and the wait returns; with the other action it is disconnected,
 * told why first (REFUSE, fell behind: -ECONNABORTED, not a crash's
 * -ECONNRESET). */
static void
test_reliable_timeout (void)
{
  int fds0 = t_count_fds ();
  t_producer tp;
  pf_segment *seg;
  pf_consumer *c;
  pf_client_stats st;
  pf_consumer_stats cs;
  pf_event ev = { 0 };

  CHECK_INT (t_producer_start (&tp, t_path ("sock"), 2), ==, 0);
  CHECK_INT (pf_producer_set_reliable_timeout (tp.p, 200,
          PF_RELIABLE_TIMEOUT_DEMOTE), ==, 0);
  CHECK_INT (pf_producer_set_reliable_timeout (tp.p, 200, 7), ==, -EINVAL);
  CHECK_INT (pf_segment_new ("t", SEG_SIZE, 0, &seg), ==, 0);
  c = t_connect (&every);
  WAIT_FOR (tp.connected == 1);
  CHECK_INT (publish (&tp, seg, 1), ==, 1);
  CHECK_INT (publish (&tp, seg, 2), ==, 1);
  CHECK_INT (pf_producer_wait_ready (tp.p, -1), ==, 0);
  CHECK_INT (tp.events[PF_CLIENT_EVENT_DEMOTED], ==, 1);
  CHECK_INT (tp.last_event.delivery, ==, PF_DELIVERY_NEWEST_FRAME);
  CHECK (tp.last_event.blocked_ns >= UINT64_C (200000000));
  CHECK (strstr (tp.last_event.message, "demoted") != NULL);
  st = stats_of (&tp, PF_DELIVERY_EVERY_FRAME);
  CHECK_INT (st.demoted, ==, 1);
  CHECK_INT (st.delivery, ==, PF_DELIVERY_NEWEST_FRAME);
  /* now newest frame: skipped at its limit */
  CHECK_INT (publish (&tp, seg, 3), ==, 0);
  st = stats_of (&tp, PF_DELIVERY_EVERY_FRAME);
  CHECK_INT (st.dropped_limit, ==, 1);
  /* its side: the frames it got, then the STREAM that demotes it */
  expect_stream (c, 0, PF_DELIVERY_EVERY_FRAME);
  expect_frame (c, 1, 0);
  expect_frame (c, 2, 0);
  expect_stream (c, PF_STREAM_DEMOTED, PF_DELIVERY_NEWEST_FRAME);
  pf_consumer_get_stats (c, &cs);
  CHECK_INT (cs.demoted, ==, 1);
  CHECK_INT (cs.delivery, ==, PF_DELIVERY_NEWEST_FRAME);
  pf_consumer_unref (c);
  WAIT_FOR (tp.disconnected == 1);

  /* the other action: disconnected, reported, seen as lost */
  CHECK_INT (pf_producer_set_reliable_timeout (tp.p, 200,
          PF_RELIABLE_TIMEOUT_DISCONNECT), ==, 0);
  c = t_connect (&every);
  WAIT_FOR (tp.connected == 2);
  CHECK_INT (publish (&tp, seg, 4), ==, 1);
  CHECK_INT (publish (&tp, seg, 5), ==, 1);
  CHECK_INT (pf_producer_wait_ready (tp.p, -1), ==, 0);
  CHECK_INT (tp.events[PF_CLIENT_EVENT_TIMED_OUT], ==, 1);
  WAIT_FOR (tp.disconnected == 2);
  CHECK_INT (tp.last_error, ==, -ETIMEDOUT);
  CHECK (strstr (tp.last_reason, "reliable timeout") != NULL);
  expect_stream (c, 0, PF_DELIVERY_EVERY_FRAME);
  expect_frame (c, 4, 1);
  expect_frame (c, 5, 1);
  /* told why (REFUSE, fell behind) before the hang-up: not a crash */
  CHECK_INT (pf_consumer_receive (c, 30000, &ev), ==, -ECONNABORTED);
  CHECK (strstr (pf_consumer_get_error (c), "falling behind") != NULL);
  CHECK_INT (pf_consumer_release (c, 4), ==, -EPIPE);
  pf_consumer_unref (c);
  t_finish (&tp, seg, fds0);
}

/* Newest frame on the consumer's side: stale queued frames are released
 * unseen for the newest one, and counted; a CAPS stops the skipping. */
static void
test_newest_stale (void)
{
  int fds0 = t_count_fds ();
  t_producer tp;
  pf_segment *seg;
  pf_consumer *c;
  pf_consumer_stats cs;
  pf_event ev = { 0 };
  int i;

  start (&tp, 8, &seg);
  c = t_connect (&newest);
  WAIT_FOR (tp.connected == 1);
  expect_stream (c, 0, PF_DELIVERY_NEWEST_FRAME);
  for (i = 1; i <= 5; i++)
    CHECK_INT (publish (&tp, seg, i), ==, 1);
  CHECK_INT (pf_producer_set_caps (tp.p, "video/x-raw"), ==, 0);
  CHECK_INT (publish (&tp, seg, 6), ==, 1);
  /* 1..5 queued: 5, the newest before the CAPS */
  expect_frame (c, 5, 0);
  pf_consumer_get_stats (c, &cs);
  CHECK_INT (cs.frames_stale_dropped, ==, 4);
  CHECK_INT (cs.frames_received, ==, 5);
  WAIT_FOR (tp.released == 5);
  next_event (c, &ev, 1);
  CHECK_INT (ev.type, ==, PF_EVENT_CAPS);
  pf_consumer_event_clear (&ev);
  expect_frame (c, 6, 0);
  WAIT_FOR (tp.released == 6);
  CHECK_INT (tp.released, ==, 6);
  pf_consumer_unref (c);
  t_finish (&tp, seg, fds0);
}

/* The same against a raw producer: a SEGMENT_ADD between queued frames is
 * handled on the way (the newer frame in the new segment wins); a packet
 * that cannot be received whole behind a frame fails the connection once
 * that frame is returned, it is not lost. */
static void
test_newest_stale_raw (void)
{
  int fds0 = t_count_fds ();
  uint8_t b[PF_MAX_MSG_SIZE + 1024];
  pf_stream_info si = {.delivery = PF_DELIVERY_NEWEST_FRAME };
  struct pf_msg_frame f;
  pf_consumer_stats cs;
  pf_segment *s1, *s2;
  pf_consumer *c;
  pf_event ev = { 0 };
  int sv[2], fd;
  size_t n;

  CHECK_INT (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), ==, 0);
  CHECK_INT (pf_segment_new ("t", FRAME_SIZE, 0, &s1), ==, 0);
  CHECK_INT (pf_segment_new ("t", FRAME_SIZE, 0, &s2), ==, 0);
  CHECK_INT (pf_test_send_fds (sv[1], b, pf_msg_write_hello (b,
              PF_ROLE_PRODUCER, 8, 1), NULL, 0), ==, 0);
  CHECK_INT (pf_consumer_new_from_fd_with (sv[0], 5000, &newest, &c), ==, 0);
  CHECK_INT (pf_test_send_fds (sv[1], b, pf_msg_write_stream (b, &si), NULL,
          0), ==, 0);
  fd = pf_segment_get_fd (s1);
  CHECK_INT (pf_test_send_fds (sv[1], b, pf_msg_write_segment_add (b, 1,
              FRAME_SIZE), &fd, 1), ==, 0);
  raw_frame_init (&f);
  f.seq = 1;
  CHECK_INT (pf_test_send_fds (sv[1], b, pf_msg_write_frame (b, &f), NULL,
          0), ==, 0);
  fd = pf_segment_get_fd (s2);
  CHECK_INT (pf_test_send_fds (sv[1], b, pf_msg_write_segment_add (b, 2,
              FRAME_SIZE), &fd, 1), ==, 0);
  f.seq = 2;
  f.chunks[0].segment_id = 2;
  CHECK_INT (pf_test_send_fds (sv[1], b, pf_msg_write_frame (b, &f), NULL,
          0), ==, 0);
  /* a FRAME header on a packet longer than any message */
  n = pf_msg_write_frame (b, &f);
  memset (b + n, 0, sizeof (b) - n);
  CHECK_INT (pf_test_send_fds (sv[1], b, sizeof (b), NULL, 0), ==, 0);

  expect_stream (c, 0, PF_DELIVERY_NEWEST_FRAME);
  next_event (c, &ev, 1);
  CHECK_INT (ev.type, ==, PF_EVENT_FRAME);
  CHECK_INT (ev.frame.seq, ==, 2);
  CHECK (ev.segments[0] != NULL
      && pf_segment_get_size (ev.segments[0]) == FRAME_SIZE);
  pf_consumer_get_stats (c, &cs);
  CHECK_INT (cs.frames_stale_dropped, ==, 1);
  pf_consumer_event_clear (&ev);
  /* the oversized packet: an error now, with its reason */
  CHECK_INT (pf_consumer_receive (c, 1000, &ev), ==, -EPROTO);
  CHECK (pf_consumer_get_error (c)[0] != '\0');
  /* the stale frame was released: its RELEASE is the first thing sent
   * after our HELLO */
  CHECK_INT (recv (sv[1], b, sizeof (b), 0), ==, 40);
  CHECK_INT (recv (sv[1], b, sizeof (b), 0), ==, 24);
  CHECK_INT (b[0], ==, PF_MSG_RELEASE);
  CHECK_INT (b[16], ==, 1);
  pf_consumer_unref (c);
  close (sv[1]);
  pf_segment_unref (s1);
  pf_segment_unref (s2);
  CHECK_INT (t_count_fds (), ==, fds0);
}

/* ---- stream info ------------------------------------------------------------ */

/* A non-live producer's segment reaches the consumer exactly, before any
 * frame, and again when it changes, in order with the frames; timestamps
 * cross exactly; liveness switches the default delivery and not an
 * explicit one; a consumer of the older API sees the same frames and no
 * STREAM event. */
static void
test_segment_pts (void)
{
  int fds0 = t_count_fds ();
  pf_stream_segment s1 = {.format = 3,.flags = 0x1,.rate = 1.0,
    .applied_rate = 1.0,.base = 0,.offset = 0,.start = UINT64_C (3600000000000),
    .stop = PF_TIME_NONE,.time = 5,.position = UINT64_C (3600000000000),
    .duration = UINT64_C (7200000000000)
  }, s2 = s1;
  pf_consumer *dflt, *ev_every, *old;
  pf_stream_info si;
  t_producer tp;
  pf_segment *seg;
  pf_event ev = { 0 };

  s2.rate = -2.0;
  s2.base = 123456789;
  CHECK_INT (t_producer_start (&tp, t_path ("sock"), 4), ==, 0);
  CHECK_INT (pf_producer_set_segment (tp.p, &s1), ==, 0);
  s2.format = 0;
  CHECK_INT (pf_producer_set_segment (tp.p, &s2), ==, -EINVAL);
  s2.format = 3;
  CHECK_INT (pf_segment_new ("t", SEG_SIZE, 0, &seg), ==, 0);
  dflt = t_connect (NULL);
  ev_every = t_connect (&every);
  CHECK_INT (pf_consumer_connect (t_path ("sock"), 5000, &old), ==, 0);
  WAIT_FOR (tp.connected == 3);

  next_event (dflt, &ev, 0);
  CHECK_INT (ev.type, ==, PF_EVENT_STREAM);
  CHECK_INT (ev.stream.flags, ==, PF_STREAM_HAS_SEGMENT);
  CHECK_INT (ev.stream.delivery, ==, PF_DELIVERY_EVERY_FRAME);
  CHECK (memcmp (&ev.stream.segment, &s1, sizeof (s1)) == 0);
  pf_consumer_event_clear (&ev);

  CHECK_INT (publish (&tp, seg, 1), ==, 3);
  CHECK_INT (pf_producer_set_segment (tp.p, &s2), ==, 0);
  CHECK_INT (publish (&tp, seg, 2), ==, 3);
  expect_frame (dflt, 1, 0);
  next_event (dflt, &ev, 0);
  CHECK_INT (ev.type, ==, PF_EVENT_STREAM);
  CHECK (memcmp (&ev.stream.segment, &s2, sizeof (s2)) == 0);
  pf_consumer_event_clear (&ev);
  pf_consumer_get_stream (dflt, &si);
  CHECK (si.segment.rate == -2.0 && si.segment.base == 123456789);
  expect_frame (dflt, 2, 0);

  /* live: the default follows, the explicit request stays */
  CHECK_INT (pf_producer_set_live (tp.p, 1), ==, 0);
  CHECK_INT (publish (&tp, seg, 3), ==, 3);
  expect_stream (dflt, PF_STREAM_LIVE | PF_STREAM_HAS_SEGMENT,
      PF_DELIVERY_NEWEST_FRAME);
  expect_frame (dflt, 3, 0);
  expect_stream (ev_every, PF_STREAM_HAS_SEGMENT, PF_DELIVERY_EVERY_FRAME);
  expect_frame (ev_every, 1, 0);
  expect_stream (ev_every, PF_STREAM_HAS_SEGMENT, PF_DELIVERY_EVERY_FRAME);
  expect_frame (ev_every, 2, 0);
  expect_stream (ev_every, PF_STREAM_LIVE | PF_STREAM_HAS_SEGMENT,
      PF_DELIVERY_EVERY_FRAME);
  expect_frame (ev_every, 3, 0);
  /* the older API: no STREAM event, the same frames, the info kept */
  expect_frame (old, 1, 0);
  expect_frame (old, 2, 0);
  expect_frame (old, 3, 0);
  pf_consumer_get_stream (old, &si);
  CHECK_INT (si.flags, ==, PF_STREAM_LIVE | PF_STREAM_HAS_SEGMENT);
  /* a segment cleared */
  CHECK_INT (pf_producer_set_segment (tp.p, NULL), ==, 0);
  expect_stream (dflt, PF_STREAM_LIVE, PF_DELIVERY_NEWEST_FRAME);
  pf_consumer_get_stream (dflt, &si);
  CHECK_INT (si.segment.format, ==, 0);

  pf_consumer_unref (dflt);
  pf_consumer_unref (ev_every);
  pf_consumer_unref (old);
  t_finish (&tp, seg, fds0);
}

/* A consumer that joins mid-stream starts at the next key frame (frames
 * flagged DELTA_UNIT skipped, not counted as drops); one connected from the
 * start gets every frame. */
static void
test_late_joiner (void)
{
  int fds0 = t_count_fds ();
  t_producer tp;
  pf_segment *seg;
  pf_consumer *early, *late;
  pf_client_stats st[2];
  pf_consumer_stats cs;
  unsigned int i;
  int k;

  start (&tp, 8, &seg);
  early = t_connect (&every);
  WAIT_FOR (tp.connected == 1);
  CHECK_INT (publish_flags (&tp, seg, 1, 0), ==, 1);
  CHECK_INT (publish_flags (&tp, seg, 2, DELTA_UNIT), ==, 1);
  CHECK_INT (publish_flags (&tp, seg, 3, DELTA_UNIT), ==, 1);
  late = t_connect (&every);
  WAIT_FOR (tp.connected == 2);
  CHECK_INT (publish_flags (&tp, seg, 4, DELTA_UNIT), ==, 1);
  CHECK_INT (publish_flags (&tp, seg, 5, DELTA_UNIT), ==, 1);
  CHECK_INT (publish_flags (&tp, seg, 6, 0), ==, 2);
  CHECK_INT (publish_flags (&tp, seg, 7, DELTA_UNIT), ==, 2);
  for (k = 1; k <= 7; k++)
    expect_frame (early, k, 0);
  expect_frame (late, 6, 0);
  expect_frame (late, 7, 0);
  pf_consumer_get_stats (late, &cs);
  CHECK_INT (cs.frames_missed, ==, 0);
  CHECK_INT (pf_producer_get_client_stats (tp.p, st, 2), ==, 2);
  for (i = 0; i < 2; i++) {
    CHECK_INT (st[i].frames_dropped, ==, 0);
    if (st[i].frames_sent == 2)
      CHECK_INT (st[i].frames_skipped_key, ==, 2);
    else
      CHECK_INT (st[i].frames_skipped_key, ==, 0);
  }
  pf_consumer_unref (early);
  pf_consumer_unref (late);
  t_finish (&tp, seg, fds0);
}

/* ---- ends of a connection --------------------------------------------------- */

struct producer_args
{
  const char *path;
  int crash;
};

/* A producer in its own process: waits for 2 consumers, publishes 3
 * frames, then ends cleanly (EOS, close) or, once they are released, is
 * killed. */
static int
producer_child (void *data)
{
  struct producer_args *a = data;
  t_producer tp;
  pf_segment *seg;
  int i;

  if (t_producer_start (&tp, a->path, 8) < 0 ||
      pf_segment_new ("t", SEG_SIZE, 0, &seg) < 0)
    return 10;
  while (pf_producer_get_n_clients (tp.p) < 2)
    t_sleep_ms (1);
  for (i = 1; i <= 3; i++)
    if (publish (&tp, seg, i) != 2)
      return 11;
  if (a->crash) {
    /* killed once both consumers released the 3 frames: a published
     * frame may still wait in this process (its frame ring not taken up
     * yet by a slow consumer, on a loaded machine) and die with it; the
     * case is about the end the consumers see, not those frames */
    for (i = 0; i < 30000 && tp.released < 3; i++)
      t_sleep_ms (1);
    raise (SIGKILL);
  }
  pf_producer_send_eos (tp.p);
  t_producer_stop (&tp);
  pf_segment_unref (seg);
  return 0;
}

/* A producer that ends with EOS: EOS, then -EPIPE. One killed mid-stream:
 * -ECONNRESET for a version-2 consumer, distinct from any end of stream;
 * -EPIPE for one of the older API (unchanged). */
static void
test_crash_vs_eos (void)
{
  int fds0 = t_count_fds ();
  struct producer_args a = { t_path ("sock"), 0 };
  pf_consumer *c, *old;
  pf_event ev = { 0 };
  pid_t pid;
  int crash, k;

  for (crash = 0; crash <= 1; crash++) {
    a.crash = crash;
    pid = t_spawn (producer_child, &a);
    CHECK_INT (pf_consumer_connect_with (t_path ("sock"), 10000, -1, NULL,
            &c), ==, 0);
    CHECK_INT (pf_consumer_connect (t_path ("sock"), 10000, &old), ==, 0);
    for (k = 1; k <= 3; k++) {
      int r;

      /* released, or the producer has ended already */
      expect_frame (c, k, 1);
      r = pf_consumer_release (c, k);
      CHECK (r == 0 || r == -EPIPE);
      expect_frame (old, k, 1);
      r = pf_consumer_release (old, k);
      CHECK (r == 0 || r == -EPIPE);
    }
    CHECK_INT (t_wait (pid), ==, crash ? 128 + SIGKILL : 0);
    if (!crash) {
      next_event (c, &ev, 1);
      CHECK_INT (ev.type, ==, PF_EVENT_EOS);
      CHECK_INT (pf_consumer_receive (c, 30000, &ev), ==, -EPIPE);
      CHECK (strstr (pf_consumer_get_error (c), "after EOS") != NULL);
      next_event (old, &ev, 1);
      CHECK_INT (ev.type, ==, PF_EVENT_EOS);
      CHECK_INT (pf_consumer_receive (old, 30000, &ev), ==, -EPIPE);
    } else {
      CHECK_INT (pf_consumer_receive (c, 30000, &ev), ==, -ECONNRESET);
      CHECK (strstr (pf_consumer_get_error (c), "without EOS") != NULL);
      CHECK_INT (pf_consumer_receive (old, 30000, &ev), ==, -EPIPE);
    }
    pf_consumer_unref (c);
    pf_consumer_unref (old);
  }
  CHECK_INT (t_count_fds (), ==, fds0);
}

/* A producer that stops reading: the consumer's releases fill its socket,
 * one cannot be sent within 5 s and the connection fails with -ETIMEDOUT,
 * never an end of stream. (A raw producer over a socketpair.) */
static void
test_stuck_producer (void)
{
  int fds0 = t_count_fds ();
  uint8_t b[PF_MAX_MSG_SIZE];
  pf_stream_info si = {.delivery = PF_DELIVERY_EVERY_FRAME };
  struct pf_msg_frame f;
  pf_consumer *c;
  pf_segment *seg;
  pf_event ev = { 0 };
  int sv[2], fd, i, res = 0;

  CHECK_INT (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), ==, 0);
  CHECK_INT (pf_segment_new ("t", FRAME_SIZE, 0, &seg), ==, 0);
  CHECK_INT (pf_test_send_fds (sv[1], b, pf_msg_write_hello (b,
              PF_ROLE_PRODUCER, 1000, 1), NULL, 0), ==, 0);
  CHECK_INT (pf_test_send_fds (sv[1], b, pf_msg_write_stream (b, &si), NULL,
          0), ==, 0);
  fd = pf_segment_get_fd (seg);
  CHECK_INT (pf_test_send_fds (sv[1], b, pf_msg_write_segment_add (b, 1,
              FRAME_SIZE), &fd, 1), ==, 0);
  CHECK_INT (pf_consumer_new_from_fd_with (sv[0], 5000, &every, &c), ==, 0);
  raw_frame_init (&f);
  for (i = 1; i <= 100000 && res == 0; i++) {
    f.seq = (uint64_t) i;
    /* the consumer reads what it is sent, so this socket never fills */
    CHECK_INT (pf_test_send_fds (sv[1], b, pf_msg_write_frame (b, &f), NULL,
            0), ==, 0);
    next_event (c, &ev, 1);
    CHECK_INT (ev.type, ==, PF_EVENT_FRAME);
    res = pf_consumer_release (c, ev.frame.seq);
    pf_consumer_event_clear (&ev);
  }
  CHECK_INT (res, ==, -ETIMEDOUT);
  CHECK (strstr (pf_consumer_get_error (c), "stopped reading") != NULL);
  CHECK_INT (pf_consumer_receive (c, 1000, &ev), ==, -ETIMEDOUT);
  pf_consumer_unref (c);
  close (sv[1]);
  pf_segment_unref (seg);
  CHECK_INT (t_count_fds (), ==, fds0);
}

/* ---- handshake ----------------------------------------------------------------- */

/* Version 1 on either side is refused as documented: a version-1
 * producer's HELLO makes the consumer fail with -EPROTONOSUPPORT (a
 * version-1 consumer against our producer: test-hostile,
 * producer-bad-handshake); a producer past max_clients refuses with REFUSE
 * (-EUSERS), reports it, and serves a newcomer once a place is free. */
static void
test_handshake_v2 (void)
{
  int fds0 = t_count_fds ();
  pf_producer_config cfg = {.max_clients = 1 };
  uint8_t b[PF_MAX_MSG_SIZE];
  pf_consumer *c, *c2;
  t_producer tp;
  int sv[2];

  CHECK_INT (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), ==, 0);
  CHECK_INT (pf_test_send_fds (sv[1], b, pf_msg_write_hello_full (b, 1,
              PF_ROLE_PRODUCER, 4, 0, 1), NULL, 0), ==, 0);
  CHECK_INT (pf_consumer_new_from_fd_with (sv[0], 5000, NULL, &c), ==,
      -EPROTONOSUPPORT);
  CHECK (strstr (pf_consumer_connect_error (), "version 1") != NULL);
  close (sv[1]);
  /* a bad request never leaves */
  {
    pf_consumer_options bad = {.delivery = 3 };

    CHECK_INT (pf_consumer_connect_with (t_path ("none"), 0, -1, &bad, &c),
        ==, -EINVAL);
    CHECK (c == NULL);
    /* from an fd: the fd is taken (closed), *out cleared */
    CHECK_INT (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), ==,
        0);
    c = (pf_consumer *) & bad;
    CHECK_INT (pf_consumer_new_from_fd_with (sv[0], 0, &bad, &c), ==, -EINVAL);
    CHECK (c == NULL);
    CHECK_INT (fcntl (sv[0], F_GETFD), ==, -1);
    close (sv[1]);
  }

  CHECK_INT (t_producer_start_config (&tp, t_path ("sock"), 4, &cfg), ==, 0);
  CHECK_INT (pf_consumer_connect_with (t_path ("sock"), 5000, -1, NULL, &c),
      ==, 0);
  WAIT_FOR (tp.connected == 1);
  CHECK_INT (pf_consumer_connect_with (t_path ("sock"), 5000, -1, NULL, &c2),
      ==, -EUSERS);
  CHECK (strstr (pf_consumer_connect_error (), "maximum of 1") != NULL);
  WAIT_FOR (tp.events[PF_CLIENT_EVENT_REFUSED] == 1);
  CHECK_INT (tp.last_event.type, ==, PF_CLIENT_EVENT_REFUSED);
  CHECK_INT (tp.last_event.pid, ==, getpid ());
  CHECK_INT (tp.connected, ==, 1);
  CHECK_INT (tp.disconnected, ==, 0);
  pf_consumer_unref (c);
  WAIT_FOR (tp.disconnected == 1);
  CHECK_INT (pf_consumer_connect_with (t_path ("sock"), 5000, -1, NULL, &c2),
      ==, 0);
  WAIT_FOR (tp.connected == 2);
  pf_consumer_unref (c2);
  t_producer_stop (&tp);
  CHECK_INT (t_count_fds (), ==, fds0);
}

static const t_case cases[] = {
  {"reliable-and-stuck", test_reliable_and_stuck},
  {"reliable-queued", test_reliable_queued},
  {"wait-ready", test_wait_ready},
  {"reliable-timeout", test_reliable_timeout},
  {"newest-stale", test_newest_stale},
  {"newest-stale-raw", test_newest_stale_raw},
  {"segment-pts", test_segment_pts},
  {"late-joiner", test_late_joiner},
  {"crash-vs-eos", test_crash_vs_eos},
  {"stuck-producer", test_stuck_producer},
  {"handshake-v2", test_handshake_v2},
  {NULL, NULL}
};

int
main (int argc, char **argv)
{
  return t_main (argc, argv, cases);
}
