/* pinnedflow demo: one process publishes a camera (or test pattern) with
 * pinnedshmsink, another receives it with pinnedshmsrc; both print what
 * crosses, once a second.
 *
 *   pf-demo produce SOCKET SECONDS [CAMERA-DESCRIPTION]
 *   pf-demo consume SOCKET [MIDDLE-DESCRIPTION]
 *
 * The producer sends EOS after SECONDS; the consumer exits 0 when that EOS
 * arrives, and 1 on an error or if nothing arrived.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gst/gst.h>

typedef struct
{
  GMainLoop *loop;
  GstElement *pipeline;
  GstElement *shm;              /* pinnedshmsink or pinnedshmsrc */
  guint64 last_frames;
  guint seconds;
  guint elapsed;
  int status;
  /* consumer */
  guint64 pinned, buffers;
} Demo;

static guint64
get_u64 (const GstStructure * s, const gchar * field)
{
  guint64 v = 0;

  gst_structure_get_uint64 (s, field, &v);
  return v;
}

static gboolean
on_bus (GstBus * bus, GstMessage * msg, gpointer data)
{
  Demo *d = data;

  switch (GST_MESSAGE_TYPE (msg)) {
    case GST_MESSAGE_EOS:
      d->status = 0;
      g_main_loop_quit (d->loop);
      break;
    case GST_MESSAGE_ERROR:{
      GError *err = NULL;
      gchar *dbg = NULL;

      gst_message_parse_error (msg, &err, &dbg);
      fprintf (stderr, "error: %s (%s)\n", err->message, dbg ? dbg : "");
      g_clear_error (&err);
      g_free (dbg);
      d->status = 1;
      g_main_loop_quit (d->loop);
      break;
    }
    default:
      break;
  }
  return TRUE;
}

/* ------------------------------------------------------------------------ */

static gboolean
producer_tick (gpointer data)
{
  Demo *d = data;
  GstStructure *s;
  guint64 frames, copies, zc, drops;
  guint clients;

  g_object_get (d->shm, "stats", &s, "num-clients", &clients, NULL);
  frames = get_u64 (s, "frames");
  copies = get_u64 (s, "copies");
  zc = get_u64 (s, "zero-copy-frames");
  drops = get_u64 (s, "drops");
  printf ("[producer] %3" G_GUINT64_FORMAT " frames/s  clients %u  "
      "zero-copy %" G_GUINT64_FORMAT "  copies %" G_GUINT64_FORMAT
      " (%.2f per frame)  dropped %" G_GUINT64_FORMAT "\n",
      frames - d->last_frames, clients, zc, copies,
      frames ? (double) copies / frames : 0.0, drops);
  fflush (stdout);
  d->last_frames = frames;
  gst_structure_free (s);

  if (++d->elapsed == d->seconds) {
    printf ("[producer] %u s done, sending EOS\n", d->seconds);
    fflush (stdout);
    gst_element_send_event (d->pipeline, gst_event_new_eos ());
  }
  return G_SOURCE_CONTINUE;
}

static int
produce (const gchar * socket, guint seconds, const gchar * camera)
{
  Demo d = { 0, };
  GError *err = NULL;
  gchar *desc;
  GstBus *bus;

  desc = g_strdup_printf ("%s ! videoconvert ! videoscale ! "
      "video/x-raw,format=RGBA,width=1280,height=720 ! "
      "pinnedshmsink name=shm socket-path=%s wait-for-connection=true "
      "pool-size=8 max-client-buffers=4", camera, socket);
  printf ("[producer] %s\n", desc);
  d.pipeline = gst_parse_launch (desc, &err);
  g_free (desc);
  if (d.pipeline == NULL) {
    fprintf (stderr, "[producer] %s\n", err->message);
    return 1;
  }
  d.shm = gst_bin_get_by_name (GST_BIN (d.pipeline), "shm");
  d.seconds = seconds;
  d.loop = g_main_loop_new (NULL, FALSE);
  bus = gst_element_get_bus (d.pipeline);
  gst_bus_add_watch (bus, on_bus, &d);
  g_timeout_add_seconds (1, producer_tick, &d);

  d.status = 1;
  if (gst_element_set_state (d.pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE)
    g_main_loop_run (d.loop);
  producer_tick (&d);
  gst_element_set_state (d.pipeline, GST_STATE_NULL);
  gst_bus_remove_watch (bus);
  gst_object_unref (bus);
  gst_object_unref (d.shm);
  gst_object_unref (d.pipeline);
  g_main_loop_unref (d.loop);
  return d.status;
}

/* ------------------------------------------------------------------------ */

static GstPadProbeReturn
count_pinned (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Demo *d = data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  guint i, n = gst_buffer_n_memory (buf);
  gboolean pinned = n > 0;

  for (i = 0; i < n; i++) {
    GstMemory *mem = gst_buffer_peek_memory (buf, i);
    /* read-only slices of the producer's pinned segment: no copy made */
    if (!gst_memory_is_type (mem, "pinnedflow")
        || !GST_MEMORY_IS_READONLY (mem))
      pinned = FALSE;
  }
  d->buffers++;
  if (pinned)
    d->pinned++;
  return GST_PAD_PROBE_OK;
}

static gboolean
consumer_tick (gpointer data)
{
  Demo *d = data;
  GstStructure *s;
  guint64 frames;

  g_object_get (d->shm, "stats", &s, NULL);
  frames = get_u64 (s, "frames");
  printf ("[consumer] %3" G_GUINT64_FORMAT " frames/s  latency mean %.0f us"
      "  max %.0f us  in shared memory %" G_GUINT64_FORMAT "/%"
      G_GUINT64_FORMAT "  skipped %" G_GUINT64_FORMAT "\n",
      frames - d->last_frames, get_u64 (s, "latency-mean") / 1000.0,
      get_u64 (s, "latency-max") / 1000.0, d->pinned, d->buffers,
      get_u64 (s, "gaps"));
  fflush (stdout);
  d->last_frames = frames;
  gst_structure_free (s);
  return G_SOURCE_CONTINUE;
}

static int
consume (const gchar * socket, const gchar * middle)
{
  Demo d = { 0, };
  GError *err = NULL;
  GstPad *pad;
  gchar *desc;
  GstBus *bus;

  /* The queue lets the source go back to its socket while the sink waits
   * for each frame's render time: latency is then the hop, not the wait. */
  desc = g_strdup_printf ("pinnedshmsrc name=shm socket-path=%s "
      "connect-timeout=10000 ! queue max-size-buffers=2 ! %s%sfakesink sync=true",
      socket, middle ? middle : "", middle && *middle ? " ! " : "");
  printf ("[consumer] %s\n", desc);
  d.pipeline = gst_parse_launch (desc, &err);
  g_free (desc);
  if (d.pipeline == NULL) {
    fprintf (stderr, "[consumer] %s\n", err->message);
    return 1;
  }
  d.shm = gst_bin_get_by_name (GST_BIN (d.pipeline), "shm");
  pad = gst_element_get_static_pad (d.shm, "src");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, count_pinned, &d, NULL);
  gst_object_unref (pad);
  d.loop = g_main_loop_new (NULL, FALSE);
  bus = gst_element_get_bus (d.pipeline);
  gst_bus_add_watch (bus, on_bus, &d);
  g_timeout_add_seconds (1, consumer_tick, &d);

  d.status = 1;
  if (gst_element_set_state (d.pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE)
    g_main_loop_run (d.loop);
  consumer_tick (&d);
  if (d.status == 0 && d.buffers == 0) {
    fprintf (stderr, "[consumer] EOS without any frame\n");
    d.status = 1;
  }
  printf ("[consumer] %s: %" G_GUINT64_FORMAT " frames, %" G_GUINT64_FORMAT
      " of them read in place from the producer's memory\n",
      d.status == 0 ? "EOS" : "FAILED", d.buffers, d.pinned);
  gst_element_set_state (d.pipeline, GST_STATE_NULL);
  gst_bus_remove_watch (bus);
  gst_object_unref (bus);
  gst_object_unref (d.shm);
  gst_object_unref (d.pipeline);
  g_main_loop_unref (d.loop);
  return d.status;
}

int
main (int argc, char **argv)
{
  gst_init (&argc, &argv);
  if (argc >= 4 && strcmp (argv[1], "produce") == 0)
    return produce (argv[2], (guint) atoi (argv[3]),
        argc >= 5 ? argv[4] : "videotestsrc is-live=true");
  if (argc >= 3 && strcmp (argv[1], "consume") == 0)
    return consume (argv[2], argc >= 4 ? argv[3] : NULL);
  fprintf (stderr, "usage: pf-demo produce SOCKET SECONDS [CAMERA]\n"
      "       pf-demo consume SOCKET [MIDDLE]\n");
  return 2;
}
