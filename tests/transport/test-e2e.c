/* pinnedflow transport: end-to-end producer/consumer tests
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "harness.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SEG_SIZE (1024 * 1024)
#define FRAME_SIZE (200 * 1024 + 13)

/* Receives frames and checks their bytes; returns the number of good
 * frames, or -1 on a bad one. Stops after @n frames or at EOS/error. */
static int
consume (pf_consumer * c, int n, int release, int *caps_seen)
{
  pf_event ev;
  int got = 0, res;

  while (got < n) {
    res = pf_consumer_receive (c, 30000, &ev);
    if (res <= 0) {
      fprintf (stderr, "receive: %d (%s)\n", res, pf_consumer_get_error (c));
      return got;
    }
    if (ev.type == PF_EVENT_CAPS) {
      if (caps_seen)
        (*caps_seen)++;
      continue;
    }
    if (ev.type == PF_EVENT_EOS)
      break;
    if (ev.frame.n_chunks != 1 || ev.frame.chunks[0].size != FRAME_SIZE ||
        !t_check_fill (ev.data[0], ev.frame.chunks[0].size, ev.frame.offset)) {
      fprintf (stderr, "frame %" PRIu64 " corrupt\n", ev.frame.seq);
      pf_consumer_event_clear (&ev);
      return -1;
    }
    if (release && pf_consumer_release (c, ev.frame.seq) != 0)
      return -1;
    pf_consumer_event_clear (&ev);
    got++;
  }
  return got;
}

static void
test_in_process (void)
{
  int fds0 = t_count_fds (), segs0 = pf_segment_count_live ();
  t_producer tp;
  pf_consumer *c;
  pf_segment *seg;
  pf_event ev;
  int i, caps = 0;

  CHECK_INT (t_producer_start (&tp, t_path ("sock"), 4), ==, 0);
  CHECK_INT (pf_producer_set_caps (tp.p, "video/x-raw,format=RGBA"), ==, 0);
  CHECK_INT (pf_segment_new ("t", SEG_SIZE * 4, 0, &seg), ==, 0);
  CHECK_INT (pf_consumer_connect (t_path ("sock"), 5000, &c), ==, 0);
  CHECK_INT (pf_consumer_get_max_held (c), ==, 4);
  CHECK (pf_consumer_get_session_id (c) != 0);
  CHECK_INT (pf_producer_get_n_clients (tp.p), ==, 1);

  /* First the caps. */
  CHECK_INT (pf_consumer_receive (c, 30000, &ev), ==, 1);
  CHECK_INT (ev.type, ==, PF_EVENT_CAPS);
  CHECK (strcmp (ev.caps, "video/x-raw,format=RGBA") == 0);

  CHECK_INT (tp.disconnected, ==, 0);
  for (i = 1; i <= 200; i++) {
    /* Releases travel back asynchronously: wait for the producer to see
     * them, or it would (rightly) skip frames beyond the limit. */
    WAIT_FOR (atomic_load ((_Atomic int *) &tp.released) >= i - 4);
    CHECK_INT (t_publish (&tp, seg, (uint64_t) (i % 4) * SEG_SIZE, FRAME_SIZE,
            i), ==, 1);
    CHECK_INT (consume (c, 1, 1, &caps), ==, 1);
  }
  WAIT_FOR (atomic_load ((_Atomic int *) &tp.released) == 200);
  CHECK_INT (pf_consumer_get_held (c), ==, 0);

  pf_consumer_unref (c);
  pf_segment_unref (seg);
  t_producer_stop (&tp);
  CHECK_INT (tp.connected, ==, 1);
  CHECK_INT (tp.disconnected, ==, 1);
  CHECK_INT (pf_segment_count_live (), ==, segs0);
  CHECK_INT (t_count_fds (), ==, fds0);
}

static const t_case cases[] = {
  {"in-process", test_in_process},
  {NULL, NULL}
};

int
main (int argc, char **argv)
{
  return t_main (argc, argv, cases);
}
