/* pinnedflow transport: what a consumer needs from the first frame (issue
 * 25), on pf_node_producer/pf_producer and pf_consumer:
 *  - a node-API producer states its segment (TIME, not live) in its first
 *    STREAM, so a consumer with delivery auto knows the liveness at once
 *    (pinnedshmsrc waited up to 1 s for it); set_live() says live;
 *  - a consumer disconnected for falling behind (every-frame, frames held
 *    past the reliable timeout) is told so by a REFUSE before the hang-up
 *    and fails with -ECONNABORTED, not -ECONNRESET (a crash);
 *  - a REFUSE with an unknown reason after the handshake is a protocol
 *    error.
 * No timing is asserted.
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "harness.h"

#include <pinnedflow/pf-node.h>

#include <errno.h>
#include <string.h>

/* The next STREAM of @c (CAPS skipped), into @ev. */
static void
next_stream (pf_consumer * c, pf_event * ev)
{
  int res;

  do {
    pf_consumer_event_clear (ev);
    res = pf_consumer_receive (c, 30000, ev);
    CHECK_MSG (res == 1, "receive: %d (%s)", res, pf_consumer_get_error (c));
  } while (ev->type == PF_EVENT_CAPS);
  CHECK_INT (ev->type, ==, PF_EVENT_STREAM);
}

static void
test_node_segment (void)
{
  int fds0 = t_count_fds ();
  pf_node_producer_config cfg;
  pf_node_producer *np;
  pf_consumer *c;
  pf_event ev = { 0 };

  memset (&cfg, 0, sizeof (cfg));
  cfg.socket_path = t_path ("sock");
  cfg.slot_size = 4096;
  cfg.flags = PF_NODE_PRODUCER_NO_LOCK;
  CHECK_INT (pf_node_producer_new (&cfg, &np), ==, 0);
  c = t_connect (NULL);
  next_stream (c, &ev);
  /* the liveness is known: a segment, TIME, not live, every frame */
  CHECK_INT (ev.stream.flags, ==, PF_STREAM_HAS_SEGMENT);
  CHECK_INT (ev.stream.delivery, ==, PF_DELIVERY_EVERY_FRAME);
  CHECK_INT (ev.stream.segment.format, ==, 3);
  CHECK (ev.stream.segment.rate == 1.0);
  CHECK (ev.stream.segment.start == 0);
  CHECK_INT (ev.stream.segment.flags, ==, 0);
  /* live from now on: said at once, the segment kept */
  CHECK_INT (pf_node_producer_set_live (np, 1), ==, 0);
  next_stream (c, &ev);
  CHECK_INT (ev.stream.flags, ==, PF_STREAM_LIVE | PF_STREAM_HAS_SEGMENT);
  CHECK_INT (ev.stream.delivery, ==, PF_DELIVERY_NEWEST_FRAME);
  pf_consumer_event_clear (&ev);
  pf_consumer_unref (c);
  pf_node_producer_free (np);
  CHECK_INT (t_count_fds (), ==, fds0);
}

static const pf_consumer_options every = {.delivery = PF_DELIVERY_EVERY_FRAME
};

/* Every-frame consumer holding its 2 frames past a 100 ms reliable
 * timeout, action disconnect: the producer reports TIMED_OUT, the
 * consumer gets its frames, then -ECONNABORTED with words of its own. */
static void
test_fell_behind (void)
{
  int fds0 = t_count_fds ();
  pf_producer_config pc;
  t_producer tp;
  pf_segment *seg;
  pf_consumer *c;
  pf_event ev = { 0 };
  int res, frames = 0;

  memset (&pc, 0, sizeof (pc));
  pc.reliable_timeout_ms = 100;
  pc.reliable_action = PF_RELIABLE_TIMEOUT_DISCONNECT;
  CHECK_INT (t_producer_start_config (&tp, t_path ("sock"), 2, &pc), ==, 0);
  CHECK_INT (pf_segment_new ("t", 2 * 4096, 0, &seg), ==, 0);
  c = t_connect (&every);
  WAIT_FOR (tp.connected == 1);
  CHECK_INT (t_publish (&tp, seg, 0, 4096, 1), ==, 1);
  CHECK_INT (t_publish (&tp, seg, 4096, 4096, 2), ==, 1);
  /* blocks for the reliable timeout, then the consumer is gone */
  CHECK_INT (pf_producer_wait_ready (tp.p, -1), ==, 0);
  CHECK_INT (tp.events[PF_CLIENT_EVENT_TIMED_OUT], ==, 1);
  WAIT_FOR (tp.disconnected == 1);
  /* the frames (kept), then the reason */
  for (;;) {
    pf_consumer_event_clear (&ev);
    res = pf_consumer_receive (c, 30000, &ev);
    if (res != 1)
      break;
    if (ev.type == PF_EVENT_FRAME)
      frames++;
  }
  CHECK_INT (frames, ==, 2);
  CHECK_MSG (res == -ECONNABORTED, "receive: %d (%s)", res,
      pf_consumer_get_error (c));
  CHECK (strstr (pf_consumer_get_error (c), "falling behind") != NULL);
  CHECK (strstr (pf_consumer_get_error (c), "100 ms") != NULL);
  pf_consumer_unref (c);
  t_finish (&tp, seg, fds0);
}

/* REFUSE reasons on the wire: 1 (too many) and 2 (fell behind) parse, any
 * other is refused. */
static void
test_refuse_reasons (void)
{
  uint8_t buf[sizeof (struct pf_msg_refuse)];
  struct pf_msg msg;
  size_t n;

  n = pf_msg_write_refuse (buf, PF_REFUSE_FELL_BEHIND, 300);
  CHECK_INT (pf_msg_parse (buf, n, 0, &msg), ==, 0);
  CHECK_INT (msg.u.refuse.reason, ==, PF_REFUSE_FELL_BEHIND);
  CHECK_INT (msg.u.refuse.limit, ==, 300);
  n = pf_msg_write_refuse (buf, PF_REFUSE_TOO_MANY_CONSUMERS, 4);
  CHECK_INT (pf_msg_parse (buf, n, 0, &msg), ==, 0);
  n = pf_msg_write_refuse (buf, 3, 0);
  CHECK_INT (pf_msg_parse (buf, n, 0, &msg), ==, -EPROTO);
}

static const t_case cases[] = {
  {"node-segment", test_node_segment},
  {"fell-behind", test_fell_behind},
  {"refuse-reasons", test_refuse_reasons},
  {NULL, NULL}
};

int
main (int argc, char **argv)
{
  return t_main (argc, argv, cases);
}
