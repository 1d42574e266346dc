/* Allocations on the per-frame path of pinnedshmsink and pinnedshmsrc.
 *
 *   test-shm-alloc producer|consumer
 *
 * Two processes (the producer forked: appsrc ! pinnedshmsink, the frames in
 * the sink's pool; the consumer: pinnedshmsrc ! fakesink) stream FRAMES
 * frames. Every malloc (), calloc () and realloc () of each process is
 * counted (this executable defines them over glibc's __libc_* functions, so
 * GLib's and GStreamer's calls come here too; G_SLICE=always-malloc puts
 * g_slice under malloc: set here before GLib starts, re-executing if
 * needed). Each side counts over the same window of steady-state frames
 * (WINDOW frames after WARM ones): the producer between two pushes, the
 * consumer between two buffers reaching fakesink. The side named on the
 * command line must have made fewer than ALLOWED allocations in its window
 * (none per frame): exit 0, else 1 (2: the stream failed); the counts are
 * printed either way.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gst/gst.h>
#include <gst/app/gstappsrc.h>

#include "pf-test-util.h"

#define WARM 40
#define WINDOW 200
/* allocations a side may make in the window: an allocation made for every
 * frame, or for one frame in ten, is over it; what is left are the rare
 * ones of threads that wake up on their own (0 to 5 seen in the producer
 * over 100 frames: GstBus, task pools), which do not grow with frames */
#define ALLOWED (WINDOW / 20)
#define FRAMES (WARM + WINDOW + 20)

/* ---- counting allocator ---- */

extern void *__libc_malloc (size_t size);
extern void *__libc_calloc (size_t n, size_t size);
extern void *__libc_realloc (void *p, size_t size);

static unsigned long allocations;

void *
malloc (size_t size)
{
  __atomic_fetch_add (&allocations, 1, __ATOMIC_RELAXED);
  return __libc_malloc (size);
}

void *
calloc (size_t n, size_t size)
{
  __atomic_fetch_add (&allocations, 1, __ATOMIC_RELAXED);
  return __libc_calloc (n, size);
}

void *
realloc (void *p, size_t size)
{
  __atomic_fetch_add (&allocations, 1, __ATOMIC_RELAXED);
  return __libc_realloc (p, size);
}

static unsigned long
count (void)
{
  return __atomic_load_n (&allocations, __ATOMIC_RELAXED);
}

/* ---- producer (child) ---- */

static int
run_producer (const char *sock, int report_fd)
{
  GstElement *pipeline, *src, *sink;
  GstCaps *caps;
  GstQuery *query;
  GstBufferPool *pool = NULL;
  GstPad *pad;
  GstBus *bus;
  GstMessage *msg;
  unsigned long c0 = 0, c1 = 0;
  int k, ok = 0;

  caps = gst_caps_new_simple ("video/x-raw", "format", G_TYPE_STRING, "RGBA",
      "width", G_TYPE_INT, 320, "height", G_TYPE_INT, 240,
      "framerate", GST_TYPE_FRACTION, 0, 1, NULL);
  pipeline = gst_pipeline_new (NULL);
  src = gst_element_factory_make ("appsrc", NULL);
  sink = gst_element_factory_make ("pinnedshmsink", NULL);
  if (src == NULL || sink == NULL)
    return 2;
  g_object_set (src, "caps", caps, "format", GST_FORMAT_TIME, "block", TRUE,
      "max-buffers", (guint64) 2, NULL);
  g_object_set (sink, "socket-path", sock, "pool-size", 8,
      "max-client-buffers", 8, "wait-for-connection", TRUE, "sync", FALSE,
      "async", FALSE, NULL);
  gst_bin_add_many (GST_BIN (pipeline), src, sink, NULL);
  gst_element_link (src, sink);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);

  pad = gst_element_get_static_pad (src, "src");
  query = gst_query_new_allocation (caps, TRUE);
  if (gst_pad_peer_query (pad, query)
      && gst_query_get_n_allocation_pools (query) > 0)
    gst_query_parse_nth_allocation_pool (query, 0, &pool, NULL, NULL, NULL);
  gst_query_unref (query);
  gst_object_unref (pad);
  if (pool == NULL || !gst_buffer_pool_set_active (pool, TRUE)) {
    fprintf (stderr, "producer: pinnedshmsink proposed no usable pool\n");
    return 2;
  }

  for (k = 0; k < FRAMES; k++) {
    GstBuffer *buf = NULL;

    if (k == WARM)
      c0 = count ();
    if (k == WARM + WINDOW)
      c1 = count ();
    if (gst_buffer_pool_acquire_buffer (pool, &buf, NULL) != GST_FLOW_OK)
      break;
    GST_BUFFER_PTS (buf) = k * GST_MSECOND;
    gst_buffer_memset (buf, 0, k & 0xff, 64);
    if (gst_app_src_push_buffer (GST_APP_SRC (src), buf) != GST_FLOW_OK)
      break;
  }
  ok = k == FRAMES;
  gst_app_src_end_of_stream (GST_APP_SRC (src));
  bus = gst_element_get_bus (pipeline);
  msg = gst_bus_timed_pop_filtered (bus, 30 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  if (msg == NULL || GST_MESSAGE_TYPE (msg) != GST_MESSAGE_EOS)
    ok = 0;
  if (msg)
    gst_message_unref (msg);
  gst_object_unref (bus);
  if (ok) {
    unsigned long n = c1 - c0;

    if (write (report_fd, &n, sizeof (n)) != sizeof (n))
      ok = 0;
  }
  gst_buffer_pool_set_active (pool, FALSE);
  gst_object_unref (pool);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);
  gst_caps_unref (caps);
  return ok ? 0 : 2;
}

/* ---- consumer (this process) ---- */

typedef struct
{
  unsigned frames;
  unsigned long c0, c1;
} Window;

static GstPadProbeReturn
on_buffer (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Window *w = data;

  /* the count before this buffer's own (nil) work downstream */
  if (w->frames == WARM)
    w->c0 = count ();
  if (w->frames == WARM + WINDOW)
    w->c1 = count ();
  w->frames++;
  return GST_PAD_PROBE_OK;
}

int
main (int argc, char **argv)
{
  char dir[256], sock[300];
  int fds[2], status, side_consumer, ret = 2;
  unsigned long prod = 0;
  Window w = { 0, };
  GstElement *pipeline, *fsink;
  GstBus *bus;
  GstMessage *msg;
  GstPad *pad;
  gchar *desc;
  pid_t pid;

  if (argc != 2 || (strcmp (argv[1], "producer") != 0
          && strcmp (argv[1], "consumer") != 0)) {
    fprintf (stderr, "usage: %s producer|consumer\n", argv[0]);
    return 2;
  }
  side_consumer = strcmp (argv[1], "consumer") == 0;
  /* g_slice must go through malloc to be counted; GLib reads G_SLICE
   * once, before main () (meson's environment sets it; run by hand, this
   * re-executes itself with it) */
  if (g_strcmp0 (getenv ("G_SLICE"), "always-malloc") != 0) {
    setenv ("G_SLICE", "always-malloc", 1);
    execv ("/proc/self/exe", argv);
    fprintf (stderr, "re-exec: %s\n", strerror (errno));
    return 2;
  }

  /* is the counter in the path? valgrind, for one, replaces malloc in
   * this executable too: then nothing can be counted here */
  {
    void *(*volatile m) (size_t) = malloc;
    unsigned long before = count ();
    void *p = m (16);

    free (p);
    if (count () == before) {
      printf ("SKIP: malloc () is not this executable's here (valgrind?): "
          "allocations cannot be counted\n");
      return 77;
    }
  }

  if (pf_test_make_tmpdir (dir, sizeof (dir), "shm-alloc") < 0
      || pipe (fds) < 0)
    return 2;
  snprintf (sock, sizeof (sock), "%s/s", dir);

  pid = pf_test_fork ();
  if (pid < 0)
    return 2;
  if (pid == 0) {
    close (fds[0]);
    gst_init (NULL, NULL);
    _exit (run_producer (sock, fds[1]));
  }
  close (fds[1]);

  gst_init (NULL, NULL);
  desc = g_strdup_printf ("pinnedshmsrc socket-path=%s connect-timeout=-1 "
      "! fakesink name=sink sync=false", sock);
  pipeline = gst_parse_launch (desc, NULL);
  g_free (desc);
  if (pipeline == NULL) {
    pf_test_kill_children ();
    goto out;
  }
  fsink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  pad = gst_element_get_static_pad (fsink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, on_buffer, &w, NULL);
  gst_object_unref (pad);
  gst_object_unref (fsink);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  bus = gst_element_get_bus (pipeline);
  msg = gst_bus_timed_pop_filtered (bus, 60 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  if (msg && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS && w.frames == FRAMES)
    ret = 0;
  else
    fprintf (stderr, "consumer: %u of %d frames, %s\n", w.frames, FRAMES,
        msg ? GST_MESSAGE_TYPE_NAME (msg) : "timed out");
  if (msg)
    gst_message_unref (msg);
  gst_object_unref (bus);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);

out:
  if (read (fds[0], &prod, sizeof (prod)) != sizeof (prod))
    ret = 2;
  close (fds[0]);
  status = pf_test_wait (pid);
  if (pf_test_exit_code (status) != 0) {
    fprintf (stderr, "producer exited with %d\n", pf_test_exit_code (status));
    ret = 2;
  }
  pf_test_remove_tree (dir);
  if (ret != 0)
    return ret;

  printf ("allocations over %d steady-state frames: producer %lu (%.2f per "
      "frame), consumer %lu (%.2f per frame)\n", WINDOW, prod,
      (double) prod / WINDOW, w.c1 - w.c0, (double) (w.c1 - w.c0) / WINDOW);
  if ((side_consumer ? w.c1 - w.c0 : prod) >= ALLOWED)
    return 1;
  return 0;
}
