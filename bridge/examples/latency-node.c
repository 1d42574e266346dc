/* pf-latency-node: consume frames and print their latency
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Usage: pf-latency-node SOCKET [MAX_FRAMES]
 *
 * Feed it with, for instance:
 *   gst-launch-1.0 videotestsrc num-buffers=100 ! \
 *     video/x-raw,format=RGBA,width=1920,height=1080 ! \
 *     pinnedshmsink socket-path=SOCKET
 *
 * Latency is receive time minus the producer's send time (both
 * CLOCK_MONOTONIC on this machine): the hand-off cost, not the pipeline's.
 * Uses poll() on the consumer fd as an event loop would.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>

#include <pinnedflow/pf-node.h> /* pkg-config --cflags pinnedflow */

int
main (int argc, char **argv)
{
  pf_node_consumer *cons = NULL;
  pf_node_frame *f;
  struct pollfd pfd;
  uint64_t count = 0, max = UINT64_MAX, sum = 0;
  int res, done = 0;

  if (argc < 2) {
    fprintf (stderr, "usage: %s SOCKET [MAX_FRAMES]\n", argv[0]);
    return 2;
  }
  if (argc > 2)
    max = strtoull (argv[2], NULL, 10);
  setvbuf (stdout, NULL, _IOLBF, 0);    /* one line per frame, even in a pipe */

  res = pf_node_consumer_new (argv[1], 10000, &cons);
  if (res < 0) {
    fprintf (stderr, "cannot connect to %s: %s\n", argv[1],
        pf_node_strerror (res));
    return 1;
  }
  pfd.fd = pf_node_consumer_get_fd (cons);
  pfd.events = POLLIN;
  while (!done && count < max) {
    if (poll (&pfd, 1, -1) < 0 && errno != EINTR)
      break;
    /* Drain everything that is ready. */
    while ((res = pf_node_consumer_next (cons, 0, &f)) == 1) {
      uint64_t lat = f->recv_time - f->send_time;
      printf ("frame %" PRIu64 " pts %" PRIu64 " %ux%u %s size %" PRIu64
          " latency %.1f us\n", f->seq, f->pts, f->info.width,
          f->info.height, f->info.format, f->size, lat / 1000.0);
      sum += lat;
      count++;
      pf_node_frame_release (f);
      if (count >= max)
        break;
    }
    if (res == PF_NODE_EOS) {
      printf ("EOS\n");
      done = 1;
    } else if (res < 0) {
      fprintf (stderr, "stream ended: %s (%s)\n", pf_node_strerror (res),
          pf_node_consumer_get_error (cons));
      done = 1;
    }
  }
  if (count)
    printf ("%" PRIu64 " frames, mean latency %.1f us\n", count,
        sum / 1000.0 / count);
  pf_node_consumer_free (cons);
  return count > 0 ? 0 : 1;
}
