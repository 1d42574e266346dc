/* Bridge suite: the node API in one process and across forked processes
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Usage: test-node CASE   (meson registers one test per case)
 *   layout          video layouts and caps text agree with GstVideoInfo/GstCaps
 *   roundtrip       frames byte-exact with caps, timestamps, video meta,
 *                   segment exposure; caps change; EOS; hang-up; no leak
 *   pool            bounded loans (EAGAIN/ETIMEDOUT), slots back only after
 *                   every consumer released; discard; bad loans
 *   crash-producer  SIGKILL of the producer: the consumer sees -ECONNRESET
 *                   (lost, not an end), held frames stay readable, nothing
 *                   leaks; restart on the path
 *   crash-consumer  SIGKILL of a consumer holding frames: every slot back
 *   delivery        the default follows the producer's liveness (every
 *                   frame, then newest frame), told through STREAM; an
 *                   explicit request is kept; a stuck every-frame consumer
 *                   is demoted and publish goes on; a newest-frame consumer
 *                   gets the newest queued frame, stale ones released
 *   stalled-pool    consumers that hold the whole pool and release nothing
 *                   are disconnected after the reliable timeout: the loan
 *                   succeeds, the consumer sees the producer lost
 *   connect-wait    no producer: an error at once (timeout 0), or waiting
 *                   for one that comes up later
 */
#include "bridge-check.h"

#include <errno.h>
#include <fcntl.h>
#include <gst/video/video.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pinnedflow/pf-node.h>

#define W 64
#define H 48
#define FRAME_NS 33333333ull

static uint8_t
pattern (uint32_t x, uint32_t y, uint32_t c, uint64_t n)
{
  return (uint8_t) (x + 2 * y + 3 * c + 5 * n);
}

static void
fill_rgba (uint8_t * data, const pf_node_video_layout * l, uint64_t n)
{
  uint32_t x, y, c;

  for (y = 0; y < l->height; y++)
    for (x = 0; x < l->width; x++)
      for (c = 0; c < 4; c++)
        data[l->plane_offset[0] + (uint64_t) y * l->plane_stride[0] + x * 4 +
            c] = pattern (x, y, c, n);
}

/* Returns the first mismatching byte index + 1, or 0. */
static long
check_rgba (const uint8_t * data, const pf_node_video_layout * l, uint64_t n)
{
  uint32_t x, y, c;
  uint64_t i;

  for (y = 0; y < l->height; y++)
    for (x = 0; x < l->width; x++)
      for (c = 0; c < 4; c++) {
        i = l->plane_offset[0] + (uint64_t) y *l->plane_stride[0] + x * 4 + c;
        if (data[i] != pattern (x, y, c, n))
          return (long) i + 1;
      }
  return 0;
}

static pf_node_producer *
make_producer (const char *path, unsigned int n_slots, uint64_t slot_size,
    unsigned int max_client)
{
  pf_node_producer_config cfg = { 0 };
  pf_node_producer *p = NULL;

  cfg.socket_path = path;
  cfg.n_slots = n_slots;
  cfg.slot_size = slot_size;
  cfg.max_client_frames = max_client;
  CHECK_INT (pf_node_producer_new (&cfg, &p), ==, 0);
  return p;
}

static void
publish_rgba (pf_node_producer * p, uint64_t n, int expect_receivers)
{
  pf_node_loan loan;

  CHECK_INT (pf_node_producer_loan_video (p, 5000, &loan), ==, 0);
  fill_rgba (loan.data, &loan.layout, n);
  loan.pts = n * FRAME_NS;
  loan.duration = FRAME_NS;
  CHECK_INT (pf_node_producer_publish (p, &loan), ==, expect_receivers);
}

/* Waits (up to 5 s) until the producer has read the consumers' RELEASEs
 * and they hold @want frames in all: a release is a message its I/O thread
 * reads later, and a newest-frame consumer still counted at its limit is
 * skipped by the next publish. */
static void
wait_total_held (pf_node_producer * p, unsigned int want)
{
  pf_client_stats st[8];
  unsigned int i, n, held = 0;
  int tries;

  for (tries = 0; tries < 500; tries++) {
    n = pf_producer_get_client_stats (pf_node_producer_get_transport (p), st,
        8);
    for (held = 0, i = 0; i < n && i < 8; i++)
      held += st[i].held;
    if (held == want)
      return;
    usleep (10000);
  }
  CHECK_INT (held, ==, want);
}

static pf_node_frame *
next_frame (pf_node_consumer * c)
{
  pf_node_frame *f = NULL;
  int res = pf_node_consumer_next (c, 10000, &f);

  CHECK_MSG (res == 1, "next = %d (%s: %s)", res, pf_node_strerror (res),
      pf_node_consumer_get_error (c));
  return f;
}

/* ------------------------------------------------------------------------ */

static void
test_layout (void)
{
  static const char *fmts[] = { "RGBA", "BGRx", "xRGB", "RGB", "BGR",
    "GRAY8", "GRAY16_LE", "YUY2", "UYVY", "I420", "YV12", "NV12", "NV21",
    "Y444"
  };
  static const uint32_t sizes[][2] = { {1, 1}, {2, 2}, {3, 5}, {64, 48},
  {641, 479}, {1920, 1080}
  };
  pf_node_video_layout l;
  pf_node_caps_info ci;
  GstVideoInfo vi;
  GstCaps *caps;
  gchar *s;
  char buf[256];
  size_t f, z;
  guint i;

  gst_init (NULL, NULL);
  for (f = 0; f < G_N_ELEMENTS (fmts); f++) {
    for (z = 0; z < G_N_ELEMENTS (sizes); z++) {
      CHECK (gst_video_info_set_format (&vi,
              gst_video_format_from_string (fmts[f]), sizes[z][0],
              sizes[z][1]));
      CHECK_INT (pf_node_video_layout_compute (fmts[f], sizes[z][0],
              sizes[z][1], 0, &l), ==, 0);
      CHECK_MSG (l.size == vi.size, "%s %ux%u: size %" G_GUINT64_FORMAT
          " vs %" G_GSIZE_FORMAT, fmts[f], sizes[z][0], sizes[z][1], l.size,
          vi.size);
      CHECK_INT (l.n_planes, ==, GST_VIDEO_INFO_N_PLANES (&vi));
      for (i = 0; i < l.n_planes; i++) {
        CHECK_MSG (l.plane_offset[i] == vi.offset[i] &&
            l.plane_stride[i] == vi.stride[i], "%s %ux%u plane %u",
            fmts[f], sizes[z][0], sizes[z][1], i);
      }
      /* GPU pitch: everything aligned, nothing overlapping. */
      CHECK_INT (pf_node_video_layout_compute (fmts[f], sizes[z][0],
              sizes[z][1], 256, &l), ==, 0);
      for (i = 0; i < l.n_planes; i++) {
        CHECK (l.plane_stride[i] % 256 == 0 && l.plane_offset[i] % 256 == 0);
        CHECK ((uint32_t) l.plane_stride[i] >= l.plane_row_bytes[i]);
        if (i > 0)
          CHECK (l.plane_offset[i] >= l.plane_offset[i - 1] +
              (uint64_t) l.plane_stride[i - 1] * l.plane_height[i - 1]);
      }
    }
  }
  CHECK_INT (pf_node_video_layout_compute ("NOPE", 4, 4, 0, &l), ==, -ENOTSUP);
  CHECK_INT (pf_node_video_layout_compute ("RGBA", 0, 4, 0, &l), ==, -EINVAL);
  CHECK_INT (pf_node_video_layout_compute ("RGBA", 4, 4, 3, &l), ==, -EINVAL);

  /* Caps written by GStreamer parse back. */
  caps = gst_caps_from_string ("video/x-raw, format=NV12, width=641, "
      "height=479, framerate=30000/1001, colorimetry=bt709, "
      "multiview-mode=mono, interlace-mode=progressive");
  s = gst_caps_to_string (caps);
  CHECK_INT (pf_node_caps_parse (s, &ci), ==, 0);
  CHECK (strcmp (ci.media_type, "video/x-raw") == 0);
  CHECK (strcmp (ci.format, "NV12") == 0);
  CHECK (ci.width == 641 && ci.height == 479);
  CHECK (ci.fps_n == 30000 && ci.fps_d == 1001);
  g_free (s);
  gst_caps_unref (caps);
  CHECK_INT (pf_node_caps_parse ("video/x-raw(memory:SystemMemory), "
          "width=(int)8, format=(string)\"RGBA\", height=(int)2", &ci), ==, 0);
  CHECK (strcmp (ci.format, "RGBA") == 0 && ci.width == 8 && ci.height == 2);
  CHECK (ci.fps_n == 0 && ci.fps_d == 1);
  CHECK_INT (pf_node_caps_parse ("  ", &ci), ==, -EINVAL);

  /* And what we write, GStreamer reads. */
  CHECK (pf_node_video_caps (buf, sizeof (buf), "I420", 320, 240, 25, 1) > 0);
  caps = gst_caps_from_string (buf);
  CHECK (caps != NULL);
  CHECK (gst_video_info_from_caps (&vi, caps));
  CHECK (GST_VIDEO_INFO_FORMAT (&vi) == GST_VIDEO_FORMAT_I420);
  CHECK (vi.width == 320 && vi.height == 240 && vi.fps_n == 25);
  gst_caps_unref (caps);
  CHECK_INT (pf_node_video_caps (buf, 10, "I420", 320, 240, 25, 1), ==,
      -ENOSPC);
  CHECK (strlen (pf_node_strerror (-EAGAIN)) > 0);
  CHECK (strlen (pf_node_strerror (-EHWPOISON)) > 0);
}

/* ------------------------------------------------------------------------ */

static void
test_roundtrip (void)
{
  const char *path = bc_path ("rt.sock");
  pf_node_video_layout l;
  pf_node_producer *p;
  pf_node_consumer *c;
  pf_node_frame *f, *g;
  pf_node_loan loan;
  uint64_t seg_id = 0, n;
  int fds0 = pf_test_count_fds (), seals;

  CHECK_INT (pf_node_video_layout_compute ("RGBA", W, H, 0, &l), ==, 0);
  p = make_producer (path, 3, l.size, 0);
  CHECK_INT (pf_node_producer_get_n_slots (p), ==, 3);
  {
    /* A path socket with the default mode; a live one is not stolen. */
    pf_node_producer_config cfg2 = { 0 };
    pf_node_producer *p2 = NULL;
    struct stat st;

    CHECK_INT (stat (path, &st), ==, 0);
    CHECK (S_ISSOCK (st.st_mode) && (st.st_mode & 0777) == 0600);
    cfg2.socket_path = path;
    cfg2.slot_size = 4096;
    CHECK_INT (pf_node_producer_new (&cfg2, &p2), ==, -EADDRINUSE);
    CHECK (p2 == NULL);
    cfg2.slot_size = 0;
    CHECK_INT (pf_node_producer_new (&cfg2, &p2), ==, -EINVAL);
  }
  CHECK_INT (pf_node_producer_set_video (p, "RGBA", W, H, 30, 1), ==, 0);
  CHECK_INT (pf_node_consumer_new (path, 5000, &c), ==, 0);
  CHECK_INT (pf_node_producer_wait_clients (p, 1, 10000), ==, 0);

  for (n = 0; n < 10; n++) {
    CHECK_INT (pf_node_producer_loan_video (p, 5000, &loan), ==, 0);
    CHECK (loan.size == l.size && loan.capacity >= l.size);
    CHECK (((uintptr_t) loan.data) % pf_page_size () == 0);
    CHECK (loan.layout.plane_stride[0] == W * 4);
    fill_rgba (loan.data, &loan.layout, n);
    loan.pts = n * FRAME_NS;
    loan.dts = PF_TIME_NONE;
    loan.duration = FRAME_NS;
    CHECK_INT (pf_node_producer_publish (p, &loan), ==, 1);

    f = next_frame (c);
    CHECK (f->n_chunks == 1 && f->size == l.size && f->data != NULL);
    CHECK (f->pts == n * FRAME_NS && f->duration == FRAME_NS);
    CHECK (f->dts == PF_TIME_NONE);
    CHECK (strcmp (f->info.format, "RGBA") == 0);
    CHECK (f->info.width == W && f->info.height == H);
    CHECK (f->info.fps_n == 30 && f->info.fps_d == 1);
    CHECK (strstr (f->caps, "video/x-raw") == f->caps);
    CHECK (f->has_video_meta && f->layout.n_planes == 1);
    CHECK (f->layout.plane_stride[0] == W * 4);
    CHECK_MSG (check_rgba (f->data, &f->layout, n) == 0, "frame %d bytes",
        (int) n);
    CHECK (f->send_time > 0 && f->recv_time >= f->send_time);
    /* The segment, as a CUDA node would register it. */
    CHECK (f->readonly == 1);
    CHECK ((const uint8_t *) f->data == (const uint8_t *) f->segment_base +
        f->segment_offset);
    CHECK (f->segment_offset + f->size <= f->segment_size);
    CHECK (f->segment_size >= 3 * l.size);
    seals = fcntl (f->segment_fd, F_GET_SEALS);
    CHECK (seals >= 0 && (seals & F_SEAL_SHRINK) && (seals & F_SEAL_GROW) &&
        (seals & F_SEAL_FUTURE_WRITE));
    CHECK (mmap (NULL, pf_page_size (), PROT_READ | PROT_WRITE, MAP_SHARED,
            f->segment_fd, 0) == MAP_FAILED);
    if (n == 0)
      seg_id = f->segment_id;
    CHECK (f->segment_id == seg_id);    /* one segment for the pool */
    CHECK (pf_segment_get_base (f->segment) == f->segment_base);
    CHECK_INT (pf_node_consumer_get_held (c), ==, 1);
    CHECK_INT (pf_node_frame_release (f), ==, 0);
  }
  CHECK_INT (pf_node_producer_wait_idle (p, 10000), ==, 0);
  CHECK_INT (pf_node_producer_get_free_slots (p), ==, 3);

  /* A caps change reaches the consumer with the next frame. */
  CHECK_INT (pf_node_producer_set_video (p, "GRAY8", 30, 7, 5, 1), ==, 0);
  CHECK_INT (pf_node_producer_loan_video (p, 5000, &loan), ==, 0);
  CHECK (loan.layout.plane_stride[0] == 32 && loan.size == 32 * 7);
  memset (loan.data, 0xab, loan.size);
  CHECK_INT (pf_node_producer_publish (p, &loan), ==, 1);
  f = next_frame (c);
  CHECK (strcmp (f->info.format, "GRAY8") == 0 && f->info.width == 30);
  CHECK (f->size == 32 * 7 && ((const uint8_t *) f->data)[32 * 7 - 1] == 0xab);
  CHECK (strcmp (pf_node_consumer_get_caps (c), f->caps) == 0);
  pf_node_frame_release (f);

  /* Plain loans carry no video meta. */
  CHECK_INT (pf_node_producer_set_caps (p, "application/octet-stream"), ==, 0);
  CHECK_INT (pf_node_producer_loan_video (p, 0, &loan), ==, -EINVAL);
  CHECK_INT (pf_node_producer_loan (p, 5000, &loan), ==, 0);
  loan.size = 100;
  memcpy (loan.data, "hello", 6);
  CHECK_INT (pf_node_producer_publish (p, &loan), ==, 1);
  f = next_frame (c);
  CHECK (f->size == 100 && !f->has_video_meta && f->layout.n_planes == 0);
  CHECK (strcmp (f->data, "hello") == 0);
  CHECK (strcmp (f->info.media_type, "application/octet-stream") == 0);
  pf_node_frame_release (f);

  CHECK_INT (pf_node_producer_send_eos (p), ==, 0);
  CHECK_INT (pf_node_consumer_next (c, 10000, &f), ==, PF_NODE_EOS);
  CHECK (f == NULL);

  /* A frame held across the producer's end stays readable. The producer
   * ends cleanly (EOS, then it closes): EOS, then -EPIPE, not "lost". */
  CHECK_INT (pf_node_producer_set_video (p, "RGBA", W, H, 30, 1), ==, 0);
  publish_rgba (p, 77, 1);
  f = next_frame (c);
  CHECK_INT (pf_node_producer_send_eos (p), ==, 0);
  pf_node_producer_free (p);
  CHECK_INT (pf_node_consumer_next (c, 10000, &g), ==, PF_NODE_EOS);
  CHECK_INT (pf_node_consumer_next (c, 10000, &g), ==, -EPIPE);
  CHECK (g == NULL);
  CHECK (strlen (pf_node_consumer_get_error (c)) > 0);
  CHECK (check_rgba (f->data, &f->layout, 77) == 0);
  pf_node_consumer_free (c);    /* the frame keeps the connection object */
  CHECK (check_rgba (f->data, &f->layout, 77) == 0);
  pf_node_frame_release (f);

  CHECK_INT (pf_segment_count_live (), ==, 0);
  CHECK_INT (pf_test_count_fds (), ==, fds0);
  CHECK (access (path, F_OK) < 0);      /* socket unlinked */
}

/* ------------------------------------------------------------------------ */

struct delayed_release
{
  pf_node_frame *frame;
};

static void *
release_later (void *data)
{
  struct delayed_release *d = data;

  usleep (100 * 1000);
  pf_node_frame_release (d->frame);
  return NULL;
}

static void
test_pool (void)
{
  const char *path = bc_path ("pool.sock");
  pf_node_producer *p;
  pf_node_consumer *c1, *c2;
  pf_node_frame *f[3];
  pf_node_loan a, b, x;
  struct delayed_release d;
  pthread_t th;
  unsigned int held_slot;
  int fds0 = pf_test_count_fds ();

  p = make_producer (path, 2, 4096, 2);
  CHECK_INT (pf_node_producer_set_video (p, "GRAY8", 64, 64, 30, 1), ==, 0);

  /* Nobody connected: loans are bounded, publishing returns the slot. */
  CHECK_INT (pf_node_producer_loan_video (p, 0, &a), ==, 0);
  CHECK_INT (pf_node_producer_loan_video (p, 0, &b), ==, 0);
  CHECK (a.slot != b.slot);
  CHECK_INT (pf_node_producer_get_free_slots (p), ==, 0);
  CHECK_INT (pf_node_producer_loan_video (p, 0, &x), ==, -EAGAIN);
  CHECK_INT (pf_node_producer_loan_video (p, 50, &x), ==, -ETIMEDOUT);
  CHECK_INT (pf_node_producer_discard (p, &a), ==, 0);
  CHECK_INT (pf_node_producer_discard (p, &a), ==, -EINVAL);
  CHECK_INT (pf_node_producer_publish (p, &a), ==, -EINVAL);
  CHECK_INT (pf_node_producer_get_free_slots (p), ==, 1);
  CHECK_INT (pf_node_producer_publish (p, &b), ==, 0);
  CHECK_INT (pf_node_producer_publish (p, &b), ==, -EINVAL);
  CHECK_INT (pf_node_producer_get_free_slots (p), ==, 2);
  CHECK_INT (pf_node_producer_loan (p, 0, &a), ==, 0);
  a.size = a.capacity + 1;
  CHECK_INT (pf_node_producer_publish (p, &a), ==, -EINVAL);
  CHECK_INT (pf_node_producer_get_free_slots (p), ==, 2);
  CHECK_INT (pf_node_producer_wait_idle (p, 0), ==, 0);

  /* One consumer holding both slots blocks loans until it releases. */
  CHECK_INT (pf_node_consumer_new (path, 5000, &c1), ==, 0);
  CHECK_INT (pf_node_producer_wait_clients (p, 1, 10000), ==, 0);
  CHECK_INT (pf_node_consumer_get_max_held (c1), ==, 2);
  CHECK_INT (pf_node_producer_loan_video (p, 0, &a), ==, 0);
  CHECK_INT (pf_node_producer_publish (p, &a), ==, 1);
  CHECK_INT (pf_node_producer_loan_video (p, 0, &a), ==, 0);
  CHECK_INT (pf_node_producer_publish (p, &a), ==, 1);
  f[0] = next_frame (c1);
  f[1] = next_frame (c1);
  CHECK_INT (pf_node_producer_get_free_slots (p), ==, 0);
  CHECK_INT (pf_node_producer_loan_video (p, 0, &x), ==, -EAGAIN);
  CHECK_INT (pf_node_producer_loan_video (p, 50, &x), ==, -ETIMEDOUT);
  /* A blocked loan wakes when another thread releases. */
  held_slot = (unsigned int) (f[0]->segment_offset / a.capacity);
  d.frame = f[0];
  CHECK_INT (pthread_create (&th, NULL, release_later, &d), ==, 0);
  CHECK_INT (pf_node_producer_loan_video (p, -1, &x), ==, 0);
  pthread_join (th, NULL);
  CHECK_INT (x.slot, ==, held_slot);
  CHECK_INT (pf_node_producer_discard (p, &x), ==, 0);
  pf_node_frame_release (f[1]);
  CHECK_INT (pf_node_producer_wait_idle (p, 10000), ==, 0);

  /* Two consumers: a slot returns only when both released it. */
  CHECK_INT (pf_node_consumer_new (path, 5000, &c2), ==, 0);
  CHECK_INT (pf_node_producer_wait_clients (p, 2, 10000), ==, 0);
  CHECK_INT (pf_node_producer_loan_video (p, 0, &a), ==, 0);
  CHECK_INT (pf_node_producer_publish (p, &a), ==, 2);
  f[0] = next_frame (c1);
  f[1] = next_frame (c2);
  CHECK (f[0]->seq == f[1]->seq);
  pf_node_frame_release (f[0]);
  /* Cannot become idle: c2 still holds the frame. */
  CHECK_INT (pf_node_producer_wait_idle (p, 100), ==, -ETIMEDOUT);
  CHECK_INT (pf_node_producer_get_free_slots (p), ==, 1);
  pf_node_frame_release (f[1]);
  CHECK_INT (pf_node_producer_wait_idle (p, 10000), ==, 0);
  CHECK_INT (pf_node_producer_get_free_slots (p), ==, 2);

  /* Frames one consumer keeps keep their slots out of the pool. */
  CHECK_INT (pf_node_producer_loan_video (p, 0, &a), ==, 0);
  CHECK_INT (pf_node_producer_publish (p, &a), ==, 2);
  f[0] = next_frame (c1);
  f[1] = next_frame (c2);
  pf_node_frame_release (f[1]);
  CHECK_INT (pf_node_producer_loan_video (p, 0, &a), ==, 0);
  CHECK_INT (pf_node_producer_publish (p, &a), ==, 2);
  f[1] = next_frame (c2);
  f[2] = next_frame (c1);
  pf_node_frame_release (f[1]);
  /* c1 holds 2 = its limit, and both slots: the pool is empty. */
  CHECK_INT (pf_node_producer_wait_idle (p, 100), ==, -ETIMEDOUT);
  CHECK_INT (pf_node_producer_get_free_slots (p), ==, 0);
  /* Dropping c1's handle with frames out: they stay valid, and their
   * slots come back when they are released. */
  pf_node_consumer_free (c1);
  pf_node_frame_release (f[0]);
  pf_node_frame_release (f[2]);
  CHECK_INT (pf_node_producer_wait_idle (p, 10000), ==, 0);
  CHECK_INT (pf_node_producer_get_free_slots (p), ==, 2);

  pf_node_consumer_free (c2);
  pf_node_producer_free (p);
  CHECK_INT (pf_segment_count_live (), ==, 0);
  CHECK_INT (pf_test_count_fds (), ==, fds0);
}

/* ------------------------------------------------------------------------ */

static void
child_producer (const char *path, int n_frames)
{
  pf_node_producer *p;
  int i;

  p = make_producer (path, 4, W * H * 4, 0);
  CHECK_INT (pf_node_producer_set_video (p, "RGBA", W, H, 30, 1), ==, 0);
  CHECK_INT (pf_node_producer_wait_clients (p, 1, 10000), ==, 0);
  for (i = 0; i < n_frames; i++)
    publish_rgba (p, (uint64_t) i, 1);
  for (;;)
    pause ();
}

static void
test_crash_producer (void)
{
  const char *path = bc_path ("cp.sock");
  pf_node_consumer *c;
  pf_node_frame *f[3], *g;
  pf_node_producer *p;
  pid_t pid;
  int i, fds0 = pf_test_count_fds (), res, st;

  pid = bc_fork ();
  if (pid == 0)
    child_producer (path, 3);
  CHECK_INT (pf_node_consumer_new (path, 10000, &c), ==, 0);
  for (i = 0; i < 3; i++) {
    f[i] = next_frame (c);
    CHECK (check_rgba (f[i]->data, &f[i]->layout, (uint64_t) i) == 0);
  }
  st = bc_kill_wait (pid, SIGKILL);
  CHECK (WIFSIGNALED (st) && WTERMSIG (st) == SIGKILL);
  /* killed mid-stream, no EOS: lost, told apart from an end of stream */
  res = pf_node_consumer_next (c, 10000, &g);
  CHECK_MSG (res == -ECONNRESET, "after the producer died: %d (%s)", res,
      pf_node_consumer_get_error (c));
  CHECK (strstr (pf_node_consumer_get_error (c), "without EOS") != NULL);
  CHECK (strstr (pf_node_strerror (res), "without EOS") != NULL);
  /* The memfd outlives its creator: held frames stay intact, no SIGBUS. */
  for (i = 0; i < 3; i++) {
    CHECK (check_rgba (f[i]->data, &f[i]->layout, (uint64_t) i) == 0);
    res = pf_node_frame_release (f[i]);
    CHECK (res == 0 || res == -EPIPE);
  }
  pf_node_consumer_free (c);
  CHECK_INT (pf_segment_count_live (), ==, 0);
  CHECK_INT (pf_test_count_fds (), ==, fds0);

  /* The dead producer's socket file does not block a restart. */
  CHECK (access (path, F_OK) == 0);
  p = make_producer (path, 2, 4096, 0);
  CHECK_INT (pf_node_consumer_new (path, 5000, &c), ==, 0);
  CHECK_INT (pf_node_producer_set_video (p, "RGBA", 32, 32, 30, 1), ==, 0);
  CHECK_INT (pf_node_producer_wait_clients (p, 1, 10000), ==, 0);
  publish_rgba (p, 9, 1);
  g = next_frame (c);
  CHECK (check_rgba (g->data, &g->layout, 9) == 0);
  pf_node_frame_release (g);
  pf_node_consumer_free (c);
  pf_node_producer_free (p);
  CHECK_INT (pf_segment_count_live (), ==, 0);
  CHECK_INT (pf_test_count_fds (), ==, fds0);
}

static void
child_consumer (const char *path, int hold, int ready_fd)
{
  pf_node_consumer *c;
  pf_node_frame *f;
  int i;

  CHECK_INT (pf_node_consumer_new (path, 10000, &c), ==, 0);
  for (i = 0; i < hold; i++) {
    f = next_frame (c);
    CHECK (check_rgba (f->data, &f->layout, (uint64_t) i) == 0);
    /* kept: the process dies holding it */
  }
  CHECK (write (ready_fd, "r", 1) == 1);
  for (;;)
    pause ();
}

static void
test_crash_consumer (void)
{
  const char *path = bc_path ("cc.sock");
  pf_node_producer *p;
  pf_node_consumer *c;
  pf_node_frame *f;
  pid_t pid;
  int pipefd[2], i, fds0 = pf_test_count_fds (), st;
  char ch;

  p = make_producer (path, 4, W * H * 4, 3);
  CHECK_INT (pf_node_producer_set_video (p, "RGBA", W, H, 30, 1), ==, 0);
  CHECK_INT (pipe2 (pipefd, O_CLOEXEC), ==, 0);
  pid = bc_fork ();
  if (pid == 0)
    child_consumer (path, 3, pipefd[1]);
  close (pipefd[1]);
  CHECK_INT (pf_node_producer_wait_clients (p, 1, 10000), ==, 0);
  for (i = 0; i < 3; i++)
    publish_rgba (p, (uint64_t) i, 1);
  CHECK_INT (read (pipefd[0], &ch, 1), ==, 1);
  close (pipefd[0]);
  CHECK_INT (pf_node_producer_get_free_slots (p), ==, 1);
  CHECK_INT (pf_node_producer_get_n_clients (p), ==, 1);

  st = bc_kill_wait (pid, SIGKILL);
  CHECK (WIFSIGNALED (st));
  /* The transport reclaims the dead client's frames: every slot back. */
  CHECK_INT (pf_node_producer_wait_idle (p, 10000), ==, 0);
  CHECK_INT (pf_node_producer_get_free_slots (p), ==, 4);
  for (i = 0; i < 1000 && pf_node_producer_get_n_clients (p) > 0; i++)
    usleep (10000);
  CHECK_INT (pf_node_producer_get_n_clients (p), ==, 0);

  /* And the producer keeps serving. */
  CHECK_INT (pf_node_consumer_new (path, 5000, &c), ==, 0);
  CHECK_INT (pf_node_producer_wait_clients (p, 1, 10000), ==, 0);
  publish_rgba (p, 42, 1);
  f = next_frame (c);
  CHECK (check_rgba (f->data, &f->layout, 42) == 0);
  pf_node_frame_release (f);
  pf_node_consumer_free (c);
  pf_node_producer_free (p);
  CHECK_INT (pf_segment_count_live (), ==, 0);
  CHECK_INT (pf_test_count_fds (), ==, fds0);
}

/* ------------------------------------------------------------------------ */

static void
test_connect_wait (void)
{
  const char *path = bc_path ("late.sock");
  pf_node_consumer *c = NULL;
  pf_node_frame *f;
  pid_t pid;
  int res, st, fds0 = pf_test_count_fds ();

  /* Nobody there and no waiting: a clear error at once. */
  res = pf_node_consumer_new (path, 0, &c);
  CHECK_MSG (res < 0 && c == NULL, "connect to nobody: %d", res);
  CHECK (strlen (pf_node_strerror (res)) > 0);
  CHECK_INT (pf_test_count_fds (), ==, fds0);

  /* A producer that comes up later is waited for. */
  pid = bc_fork ();
  if (pid == 0) {
    usleep (300 * 1000);
    child_producer (path, 1);
  }
  CHECK_INT (pf_node_consumer_new (path, 20000, &c), ==, 0);
  f = next_frame (c);
  CHECK (check_rgba (f->data, &f->layout, 0) == 0);
  pf_node_frame_release (f);
  pf_node_consumer_free (c);
  st = bc_kill_wait (pid, SIGKILL);
  CHECK (WIFSIGNALED (st));
  CHECK_INT (pf_segment_count_live (), ==, 0);
  CHECK_INT (pf_test_count_fds (), ==, fds0);
}

/* Delivery through the node API, in one process. */
static void
test_delivery (void)
{
  const char *path = bc_path ("dl.sock");
  pf_node_consumer *def, *every, *newest;
  pf_node_frame *f, *held[2];
  pf_consumer_stats st;
  pf_stream_info si;
  pf_node_producer *p;
  int i, fds0 = pf_test_count_fds ();

  p = make_producer (path, 12, 64 * 1024, 4);
  CHECK_INT (pf_node_producer_set_reliable_timeout (p, 300, 0), ==, 0);
  CHECK_INT (pf_node_producer_set_video (p, "RGBA", W, H, 30, 1), ==, 0);
  CHECK_INT (pf_node_consumer_new_with (path, 5000, 9, &def), ==, -EINVAL);
  CHECK_INT (pf_node_consumer_new (path, 5000, &def), ==, 0);
  CHECK_INT (pf_node_consumer_new_with (path, 5000, PF_DELIVERY_EVERY_FRAME,
          &every), ==, 0);
  CHECK_INT (pf_node_consumer_new_with (path, 5000, PF_DELIVERY_NEWEST_FRAME,
          &newest), ==, 0);
  CHECK_INT (pf_node_producer_wait_clients (p, 3, 10000), ==, 0);

  /* not live (the default): every frame for the default consumer */
  publish_rgba (p, 0, 3);       /* seq 1 */
  f = next_frame (def);
  CHECK_INT (pf_node_consumer_get_delivery (def), ==, PF_DELIVERY_EVERY_FRAME);
  pf_node_consumer_get_stream (def, &si);
  /* not live, and its segment (TIME from 0) says so from the start */
  CHECK_INT (si.flags, ==, PF_STREAM_HAS_SEGMENT);
  CHECK_INT (si.segment.format, ==, 3);
  pf_node_frame_release (f);
  f = next_frame (every);
  CHECK_INT (pf_node_consumer_get_delivery (every), ==,
      PF_DELIVERY_EVERY_FRAME);
  pf_node_frame_release (f);
  f = next_frame (newest);
  CHECK_INT (pf_node_consumer_get_delivery (newest), ==,
      PF_DELIVERY_NEWEST_FRAME);
  pf_node_frame_release (f);

  /* live: the default consumer follows, the explicit one keeps its own */
  CHECK_INT (pf_node_producer_set_live (p, 1), ==, 0);
  publish_rgba (p, 1, 3);       /* seq 2 */
  f = next_frame (def);
  CHECK_INT (pf_node_consumer_get_delivery (def), ==, PF_DELIVERY_NEWEST_FRAME);
  pf_node_consumer_get_stream (def, &si);
  CHECK (si.flags & PF_STREAM_LIVE);
  pf_node_frame_release (f);
  f = next_frame (every);
  CHECK_INT (pf_node_consumer_get_delivery (every), ==,
      PF_DELIVERY_EVERY_FRAME);
  pf_node_frame_release (f);

  /* newest frame: seq 2, 3, 4 queued unread; it gets 4, the stale 2 and 3
   * released unseen (so they count no more against its limit) */
  publish_rgba (p, 2, 3);       /* seq 3 */
  publish_rgba (p, 3, 3);       /* seq 4 */
  f = next_frame (newest);
  CHECK_INT (f->seq, ==, 4);
  CHECK (check_rgba (f->data, &f->layout, 3) == 0);
  pf_node_consumer_get_stats (newest, &st);
  CHECK_INT (st.frames_stale_dropped, ==, 2);
  CHECK_INT (st.delivery, ==, PF_DELIVERY_NEWEST_FRAME);
  pf_node_frame_release (f);
  f = next_frame (def);         /* newest frame now: 3 is stale */
  CHECK_INT (f->seq, ==, 4);
  pf_node_frame_release (f);

  /* the every-frame consumer stops releasing: it holds 3 and 4, gets 5 and
   * 6 (its limit of 4); publishing 7 waits for it, demotes it after 300 ms
   * and goes on without it */
  held[0] = next_frame (every);
  held[1] = next_frame (every);
  CHECK (check_rgba (held[1]->data, &held[1]->layout, 3) == 0);
  wait_total_held (p, 2);       /* the others' releases read */
  publish_rgba (p, 4, 3);       /* seq 5 */
  publish_rgba (p, 5, 3);       /* seq 6 */
  publish_rgba (p, 6, 2);       /* seq 7: def and newest only */
  for (i = 5; i <= 6; i++) {    /* what it was sent before the demotion */
    f = next_frame (every);
    CHECK_INT (f->seq, ==, i);
    pf_node_frame_release (f);
  }
  CHECK_INT (pf_node_consumer_next (every, 0, &f), ==, 0);
  CHECK_INT (pf_node_consumer_get_delivery (every), ==,
      PF_DELIVERY_NEWEST_FRAME);
  pf_node_consumer_get_stream (every, &si);
  CHECK (si.flags & PF_STREAM_DEMOTED);
  pf_node_consumer_get_stats (every, &st);
  CHECK_INT (st.demoted, ==, 1);
  pf_node_frame_release (held[0]);
  pf_node_frame_release (held[1]);

  pf_node_consumer_free (def);
  pf_node_consumer_free (every);
  pf_node_consumer_free (newest);
  pf_node_producer_free (p);
  CHECK_INT (pf_segment_count_live (), ==, 0);
  CHECK_INT (pf_test_count_fds (), ==, fds0);
}

/* The pool is the producer's only memory: consumers holding every slot
 * without releasing are disconnected after the reliable timeout, whatever
 * their delivery, and are told they fell behind (-ECONNABORTED, issue 25;
 * never a clean end, nor the words of a crash). */
static void
test_stalled_pool (void)
{
  const char *path = bc_path ("sp.sock");
  pf_node_consumer *c;
  pf_node_frame *f[2], *g;
  pf_node_producer *p;
  pf_node_loan loan;
  int res, fds0 = pf_test_count_fds ();

  p = make_producer (path, 2, 64 * 1024, 0);    /* may hold both slots */
  CHECK_INT (pf_node_producer_set_reliable_timeout (p, 300, 0), ==, 0);
  CHECK_INT (pf_node_producer_set_video (p, "RGBA", W, H, 30, 1), ==, 0);
  CHECK_INT (pf_node_consumer_new_with (path, 5000, PF_DELIVERY_NEWEST_FRAME,
          &c), ==, 0);
  CHECK_INT (pf_node_producer_wait_clients (p, 1, 10000), ==, 0);
  publish_rgba (p, 0, 1);
  f[0] = next_frame (c);
  publish_rgba (p, 1, 1);
  f[1] = next_frame (c);
  CHECK_INT (pf_node_producer_get_free_slots (p), ==, 0);
  /* no slot for 0 ms: no waiting, no eviction */
  CHECK_INT (pf_node_producer_loan (p, 0, &loan), ==, -EAGAIN);
  /* a loan that waits: after 300 ms the consumer is disconnected */
  CHECK_INT (pf_node_producer_loan (p, 20000, &loan), ==, 0);
  CHECK_INT (pf_node_producer_discard (p, &loan), ==, 0);
  CHECK_INT (pf_node_producer_get_n_clients (p), ==, 0);
  res = pf_node_consumer_next (c, 10000, &g);
  CHECK_MSG (res == -ECONNABORTED, "%d (%s)", res,
      pf_node_consumer_get_error (c));
  CHECK (strstr (pf_node_consumer_get_error (c), "falling behind") != NULL);
  CHECK (check_rgba (f[1]->data, &f[1]->layout, 1) == 0);
  pf_node_frame_release (f[0]);
  pf_node_frame_release (f[1]);
  pf_node_consumer_free (c);
  pf_node_producer_free (p);
  CHECK_INT (pf_segment_count_live (), ==, 0);
  CHECK_INT (pf_test_count_fds (), ==, fds0);
}

int
main (int argc, char **argv)
{
  static const struct
  {
    const char *name;
    void (*fn) (void);
  } cases[] = {
    {"layout", test_layout},
    {"roundtrip", test_roundtrip},
    {"pool", test_pool},
    {"crash-producer", test_crash_producer},
    {"crash-consumer", test_crash_consumer},
    {"delivery", test_delivery},
    {"stalled-pool", test_stalled_pool},
    {"connect-wait", test_connect_wait},
  };
  size_t i;

  if (argc != 2) {
    fprintf (stderr, "usage: %s CASE\n", argv[0]);
    return 2;
  }
  bc_init ();
  for (i = 0; i < sizeof (cases) / sizeof (cases[0]); i++) {
    if (strcmp (argv[1], cases[i].name) == 0) {
      cases[i].fn ();
      printf ("ok %s\n", cases[i].name);
      return 0;
    }
  }
  fprintf (stderr, "unknown case %s\n", argv[1]);
  return 2;
}
