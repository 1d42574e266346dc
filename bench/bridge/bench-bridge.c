/* bench-bridge: node-library hand-off next to the element pair, same run
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Usage: bench-bridge [FRAMES_FLAT [FRAMES_30HZ]]
 *
 * 1080p RGBA, producer and consumer in two processes, the producer writing
 * every byte of every frame (memset for the library, videotestsrc
 * pattern=solid-color for the elements), the consumer touching nothing:
 *   - pf-node producer -> pf-node consumer
 *   - gst-launch videotestsrc ! pinnedshmsink -> pinnedshmsrc ! fakesink
 *   - and the two mixed pairs, which tell producer from consumer costs,
 * at 30 Hz (the dataflow workload) and flat out. Latency is the consumer's
 * receive time minus the producer's send time (CLOCK_MONOTONIC, stamped by
 * the transport in both cases; pinnedshmsrc reports it as latency-last).
 */
#include <errno.h>
#include <gst/gst.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <pinnedflow/pf-node.h>

#include "bench-util.h"

#define W 1920
#define H 1080
#define N_SLOTS 4

typedef struct
{
  const char *name;
  unsigned int frames;
  double fps, mb_s, p50_us, p99_us, mean_us;
} result;

static char sock_dir[] = "/tmp/pf-bench-bridge-XXXXXX";

static void
summarize (result * r, uint64_t * lat, unsigned int n, uint64_t t0, uint64_t t1)
{
  uint64_t sum = 0;
  unsigned int i;

  r->frames = n;
  if (n == 0)
    return;
  bench_sort_u64 (lat, n);
  for (i = 0; i < n; i++)
    sum += lat[i];
  r->p50_us = lat[n / 2] / 1000.0;
  r->p99_us = lat[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1] / 1000.0;
  r->mean_us = sum / 1000.0 / n;
  if (t1 > t0 && n > 1) {
    r->fps = (n - 1) * 1e9 / (double) (t1 - t0);
    r->mb_s = r->fps * W * H * 4 / 1e6;
  }
}

/* ------------------------------------------------------------------------ */

static pid_t
spawn_lib_producer (const char *path, unsigned int frames, int paced)
{
  pid_t pid = fork ();

  if (pid == 0)
    bench_node_producer (path, N_SLOTS, W, H, frames, paced);
  return pid;
}

static pid_t
spawn_gst_producer (const char *path, unsigned int frames, int paced)
{
  char sinkprop[160], nbuf[32];
  pid_t pid;

  snprintf (sinkprop, sizeof (sinkprop), "socket-path=%s", path);
  snprintf (nbuf, sizeof (nbuf), "num-buffers=%u", frames);
  pid = fork ();
  if (pid == 0) {
    prctl (PR_SET_PDEATHSIG, SIGKILL);
    execlp ("gst-launch-1.0", "gst-launch-1.0", "-q", "videotestsrc", nbuf,
        "pattern=solid-color", paced ? "is-live=true" : "is-live=false", "!",
        paced ? "video/x-raw,format=RGBA,width=1920,height=1080,framerate=30/1"
        : "video/x-raw,format=RGBA,width=1920,height=1080,framerate=1000/1",
        "!", "pinnedshmsink", sinkprop, "wait-for-connection=true",
        "pool-size=4", "max-client-buffers=4",
        paced ? "sync=true" : "sync=false", NULL);
    _exit (127);
  }
  return pid;
}

static int
consume_lib (result * r, const char *path, unsigned int frames)
{
  pf_node_consumer *c;
  pf_node_frame *f;
  uint64_t *lat = calloc (frames, sizeof (uint64_t)), t0 = 0, t1 = 0;
  unsigned int n = 0;

  if (pf_node_consumer_new (path, 10000, &c) == 0) {
    while (n < frames && pf_node_consumer_next (c, 10000, &f) == 1) {
      lat[n++] = f->recv_time - f->send_time;
      if (n == 1)
        t0 = f->recv_time;
      t1 = f->recv_time;
      pf_node_frame_release (f);
    }
    pf_node_consumer_free (c);
  }
  summarize (r, lat, n, t0, t1);
  free (lat);
  return n == frames ? 0 : -1;
}

/* ------------------------------------------------------------------------ */

typedef struct
{
  GstElement *src;
  uint64_t *lat;
  unsigned int n, max;
  uint64_t t0, t1;
} gst_ctx;

static void
on_handoff (GstElement * sink, GstBuffer * buf, GstPad * pad, gpointer data)
{
  gst_ctx *ctx = data;
  GstStructure *stats = NULL;
  guint64 l = 0;

  g_object_get (ctx->src, "stats", &stats, NULL);
  if (stats && gst_structure_get_uint64 (stats, "latency-last", &l) &&
      ctx->n < ctx->max) {
    ctx->lat[ctx->n++] = l;
    if (ctx->n == 1)
      ctx->t0 = pf_monotonic_ns ();
    ctx->t1 = pf_monotonic_ns ();
  }
  if (stats)
    gst_structure_free (stats);
}

static int
consume_gst (result * r, const char *path, unsigned int frames)
{
  gchar *desc;
  GstElement *pipe, *sink;
  GstBus *bus;
  GstMessage *msg;
  gst_ctx ctx = { 0 };
  int ok = 0;

  ctx.max = frames;
  ctx.lat = calloc (frames, sizeof (uint64_t));
  desc = g_strdup_printf ("pinnedshmsrc name=src socket-path=%s "
      "connect-timeout=10000 ! fakesink name=sink sync=false "
      "signal-handoffs=true", path);
  pipe = gst_parse_launch (desc, NULL);
  g_free (desc);
  if (pipe == NULL)
    goto out;
  ctx.src = gst_bin_get_by_name (GST_BIN (pipe), "src");
  sink = gst_bin_get_by_name (GST_BIN (pipe), "sink");
  g_signal_connect (sink, "handoff", G_CALLBACK (on_handoff), &ctx);
  gst_element_set_state (pipe, GST_STATE_PLAYING);
  bus = gst_element_get_bus (pipe);
  msg = gst_bus_timed_pop_filtered (bus, 120 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  if (msg && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS)
    ok = 1;
  else if (msg) {
    GError *err = NULL;
    gst_message_parse_error (msg, &err, NULL);
    fprintf (stderr, "pinnedshmsrc: %s\n", err ? err->message : "?");
    g_clear_error (&err);
  }
  if (msg)
    gst_message_unref (msg);
  gst_object_unref (bus);
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (ctx.src);
  gst_object_unref (pipe);
out:
  summarize (r, ctx.lat, ctx.n, ctx.t0, ctx.t1);
  free (ctx.lat);
  return ok && ctx.n == frames ? 0 : -1;
}

/* One producer kind into one consumer kind; 'l' library, 'g' elements. */
static int
run (result * r, char prod, char cons, unsigned int frames, int paced)
{
  static unsigned int count;
  char path[128];
  pid_t pid;
  int res, st;

  snprintf (path, sizeof (path), "%s/run%u.sock", sock_dir, count++);
  pid = prod == 'l' ? spawn_lib_producer (path, frames, paced) :
      spawn_gst_producer (path, frames, paced);
  res = cons == 'l' ? consume_lib (r, path, frames) :
      consume_gst (r, path, frames);
  kill (pid, SIGTERM);
  waitpid (pid, &st, 0);
  unlink (path);
  if (res < 0)
    fprintf (stderr, "%s: %u of %u frames\n", r->name, r->frames, frames);
  return res;
}

/* ------------------------------------------------------------------------ */

static void
print_row (const char *mode, const result * r)
{
  printf ("| %-8s | %-36s | %6u | %8.1f | %8.0f | %8.1f | %8.1f | %8.1f |\n",
      mode, r->name, r->frames, r->fps, r->mb_s, r->p50_us, r->p99_us,
      r->mean_us);
}

int
main (int argc, char **argv)
{
  unsigned int flat = argc > 1 ? (unsigned int) atoi (argv[1]) : 600;
  unsigned int paced = argc > 2 ? (unsigned int) atoi (argv[2]) : 150;
  static const struct
  {
    char prod, cons;
    const char *name;
  } paths[] = {
    {'l', 'l', "pf-node -> pf-node"},
    {'g', 'g', "pinnedshmsink -> pinnedshmsrc"},
    {'l', 'g', "pf-node -> pinnedshmsrc"},
    {'g', 'l', "pinnedshmsink -> pf-node"},
  };
  result res[2][4];
  int fail = 0, m;
  size_t i;

  gst_init (&argc, &argv);
  signal (SIGPIPE, SIG_IGN);
  if (mkdtemp (sock_dir) == NULL) {
    perror ("mkdtemp");
    return 1;
  }
  printf ("1080p RGBA (%d bytes/frame), %d slots, producer and consumer in "
      "two processes\n\n", W * H * 4, N_SLOTS);
  memset (res, 0, sizeof (res));
  for (m = 0; m < 2; m++) {
    for (i = 0; i < 4; i++) {
      res[m][i].name = paths[i].name;
      fail |= run (&res[m][i], paths[i].prod, paths[i].cons,
          m == 0 ? paced : flat, m == 0);
    }
  }

  printf ("| mode     | path                                 | frames |"
      "  fps     |  MB/s    | p50 us   | p99 us   | mean us  |\n");
  printf ("|----------|--------------------------------------|--------|"
      "----------|----------|----------|----------|----------|\n");
  for (m = 0; m < 2; m++)
    for (i = 0; i < 4; i++)
      print_row (m == 0 ? "30 Hz" : "flat out", &res[m][i]);
  if (res[0][1].p50_us > 0 && res[1][1].fps > 0 && res[1][1].p50_us > 0)
    printf ("\nratios library/elements: 30 Hz p50 latency %.2f, flat-out "
        "p50 latency %.2f, flat-out throughput %.2f\n",
        res[0][0].p50_us / res[0][1].p50_us,
        res[1][0].p50_us / res[1][1].p50_us, res[1][0].fps / res[1][1].fps);
  rmdir (sock_dir);
  if (fail)
    fprintf (stderr, "some run did not deliver every frame\n");
  return fail ? 1 : 0;
}
