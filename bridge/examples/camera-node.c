/* pf-camera-node: a CPU "camera" publishing synthetic RGBA frames
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Usage: pf-camera-node SOCKET [FRAMES [WIDTH HEIGHT [FPS]]]
 *   FPS 0 publishes as fast as slots come back.
 *
 * Consume it with, for instance:
 *   gst-launch-1.0 pinnedshmsrc socket-path=SOCKET ! videoconvert ! autovideosink
 *
 * The frame is a moving gradient; byte (x, y, c) of frame n is
 * (x + 2 * y + 3 * c + 5 * n) & 0xff, so a consumer can check it.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pinnedflow/pf-node.h> /* pkg-config --cflags pinnedflow */

static volatile sig_atomic_t stop;

static void
on_signal (int sig)
{
  stop = 1;
}

static void
fill (uint8_t * data, const pf_node_video_layout * l, uint64_t n)
{
  uint32_t x, y, c;

  for (y = 0; y < l->height; y++) {
    uint8_t *row = data + l->plane_offset[0] + (uint64_t) y *
        l->plane_stride[0];
    for (x = 0; x < l->width; x++)
      for (c = 0; c < 4; c++)
        row[x * 4 + c] = (uint8_t) (x + 2 * y + 3 * c + 5 * n);
  }
}

int
main (int argc, char **argv)
{
  pf_node_producer_config cfg = { 0 };
  pf_node_producer *prod = NULL;
  pf_node_loan loan;
  pf_node_video_layout layout;
  uint64_t n, frames = 300, period, start;
  uint32_t width = 640, height = 480;
  int fps = 30, res, sent;

  if (argc < 2) {
    fprintf (stderr, "usage: %s SOCKET [FRAMES [WIDTH HEIGHT [FPS]]]\n",
        argv[0]);
    return 2;
  }
  if (argc > 2)
    frames = strtoull (argv[2], NULL, 10);
  if (argc > 4) {
    width = (uint32_t) atoi (argv[3]);
    height = (uint32_t) atoi (argv[4]);
  }
  if (argc > 5)
    fps = atoi (argv[5]);
  signal (SIGINT, on_signal);
  signal (SIGTERM, on_signal);

  res = pf_node_video_layout_compute ("RGBA", width, height, 0, &layout);
  if (res < 0) {
    fprintf (stderr, "bad size: %s\n", pf_node_strerror (res));
    return 1;
  }
  cfg.socket_path = argv[1];
  cfg.n_slots = 4;
  cfg.slot_size = layout.size;
  /* max_client_frames 0: a consumer may hold every slot, so a slow one
   * slows the camera (loans wait) instead of missing frames. */
  res = pf_node_producer_new (&cfg, &prod);
  if (res < 0) {
    fprintf (stderr, "cannot listen on %s: %s\n", argv[1],
        pf_node_strerror (res));
    return 1;
  }
  res = pf_node_producer_set_video (prod, "RGBA", width, height,
      fps > 0 ? fps : 30, 1);
  if (res < 0)
    goto out;

  /* A camera would just start; the example waits so nothing is lost. */
  fprintf (stderr, "camera: waiting for a consumer on %s\n", argv[1]);
  while (!stop && pf_node_producer_wait_clients (prod, 1, 200) == -ETIMEDOUT);
  fprintf (stderr, "camera: consumer connected, publishing\n");

  period = fps > 0 ? 1000000000ull / (uint64_t) fps : 0;
  start = pf_monotonic_ns ();
  for (n = 0; n < frames && !stop; n++) {
    res = pf_node_producer_loan_video (prod, 1000, &loan);
    if (res == -ETIMEDOUT) {
      fprintf (stderr, "camera: frame %" PRIu64 " dropped (no free slot)\n", n);
      continue;
    } else if (res < 0) {
      fprintf (stderr, "loan: %s\n", pf_node_strerror (res));
      goto out;
    }
    fill (loan.data, &loan.layout, n);
    loan.pts = n * (fps > 0 ? period : 33333333ull);
    loan.duration = fps > 0 ? period : 33333333ull;
    sent = pf_node_producer_publish (prod, &loan);
    if (sent < 0) {
      res = sent;
      fprintf (stderr, "publish: %s\n", pf_node_strerror (res));
      goto out;
    }
    if (period) {
      uint64_t due = start + (n + 1) * period, now = pf_monotonic_ns ();
      if (due > now) {
        struct timespec ts = { (time_t) ((due - now) / 1000000000ull),
          (long) ((due - now) % 1000000000ull)
        };
        nanosleep (&ts, NULL);
      }
    }
  }
  pf_node_producer_send_eos (prod);
  /* Give consumers the chance to release the last frames. */
  pf_node_producer_wait_idle (prod, 2000);
  fprintf (stderr, "camera: published %" PRIu64 " frames\n", n);
  res = 0;
out:
  pf_node_producer_free (prod);
  return res < 0 ? 1 : 0;
}
