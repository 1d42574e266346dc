/* v4l2-bench: CPU and copies per frame of v4l2src ! pinnedshmsink, in
 * every io-mode, side by side in one run (issue 34).
 *
 *   v4l2-bench [--frames N] [--width W --height H] [--fps F]
 *
 * The camera is the V4L2 stand-in of tests/v4l2 (libpfemu-v4l2.so,
 * preloaded: the bench re-executes itself with LD_PRELOAD set) with
 * PFEMU_V4L2_PATTERN=sparse: it stamps only a header and one row per
 * frame, so the producer's CPU is what v4l2src and pinnedshmsink cost,
 * as with a camera whose DMA costs no CPU. For each format (YUY2, NV12)
 * and io-mode (mmap, userptr, dmabuf-import) it runs
 *   v4l2src io-mode=M num-buffers=N ! video/x-raw,format=F,... !
 *   pinnedshmsink wait-for-connection=true
 * with one consumer process (pinnedshmsrc ! fakesink) and prints one row:
 *   format mode frames drops copies/frame producer-us/frame consumer-us/frame
 * (user + system CPU from getrusage of each process over the run,
 * divided by the frames the sink published), or the error that ended
 * the run. dmabuf-import runs on the stand-in's /dev/udmabuf
 * (PFEMU_UDMABUF=1): the sink's pool exports its slots as udmabufs.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gst/gst.h>

static gint frames = 150, width = 1920, height = 1080, fps = 30;

static gdouble
cpu_us (const struct rusage *a, const struct rusage *b)
{
  return (b->ru_utime.tv_sec - a->ru_utime.tv_sec) * 1e6 +
      (b->ru_utime.tv_usec - a->ru_utime.tv_usec) +
      (b->ru_stime.tv_sec - a->ru_stime.tv_sec) * 1e6 +
      (b->ru_stime.tv_usec - a->ru_stime.tv_usec);
}

/* The consumer: pinnedshmsrc ! fakesink until EOS; prints its CPU. */
static int
consume (const gchar * sock)
{
  gchar *desc = g_strdup_printf ("pinnedshmsrc socket-path=%s "
      "connect-timeout=20000 ! fakesink sync=false", sock);
  GstElement *pipe = gst_parse_launch (desc, NULL);
  GstBus *bus;
  GstMessage *m;
  struct rusage r0, r1;

  g_free (desc);
  if (pipe == NULL)
    return 1;
  getrusage (RUSAGE_SELF, &r0);
  gst_element_set_state (pipe, GST_STATE_PLAYING);
  bus = gst_element_get_bus (pipe);
  m = gst_bus_timed_pop_filtered (bus, 120 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  getrusage (RUSAGE_SELF, &r1);
  printf ("CONSUMER cpu_us=%.0f\n", cpu_us (&r0, &r1));
  fflush (stdout);
  if (m)
    gst_message_unref (m);
  gst_object_unref (bus);
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (pipe);
  return 0;
}

static void
run (const gchar * self, const gchar * format, const gchar * mode,
    const gchar * sock)
{
  gchar *desc, *argv[4], *out = NULL, *err_text = NULL;
  GstElement *pipe, *sink;
  GstStructure *stats = NULL;
  GstMessage *m;
  GstBus *bus;
  GError *err = NULL;
  GPid pid;
  gint out_fd, status;
  guint64 n = 0, copies = 0, drops = 0;
  struct rusage r0, r1;
  gdouble consumer_us = -1;
  GString *s = g_string_new (NULL);
  gchar buf[512];
  gssize len;

  desc = g_strdup_printf ("v4l2src device=/dev/video-pfemu0 io-mode=%s "
      "num-buffers=%d ! video/x-raw,format=%s,width=%d,height=%d,"
      "framerate=%d/1 ! pinnedshmsink name=sink socket-path=%s "
      "wait-for-connection=true", mode, frames, format, width, height, fps,
      sock);
  pipe = gst_parse_launch (desc, &err);
  g_free (desc);
  if (pipe == NULL) {
    printf ("%-5s %-14s error: %s\n", format, mode, err->message);
    g_clear_error (&err);
    return;
  }
  sink = gst_bin_get_by_name (GST_BIN (pipe), "sink");
  /* dmabuf-import: the slots as udmabufs (the stand-in's, read at open) */
  if (strcmp (mode, "dmabuf-import") == 0)
    g_setenv ("PFEMU_UDMABUF", "1", TRUE);
  else
    g_unsetenv ("PFEMU_UDMABUF");
  getrusage (RUSAGE_SELF, &r0);
  gst_element_set_state (pipe, GST_STATE_PLAYING);

  argv[0] = (gchar *) self;
  argv[1] = (gchar *) "--consume";
  argv[2] = (gchar *) sock;
  argv[3] = NULL;
  if (!g_spawn_async_with_pipes (NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
          NULL, NULL, &pid, NULL, &out_fd, NULL, &err)) {
    printf ("%-5s %-14s error: spawn: %s\n", format, mode, err->message);
    g_clear_error (&err);
    goto done;
  }
  bus = gst_element_get_bus (pipe);
  m = gst_bus_timed_pop_filtered (bus, 120 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  getrusage (RUSAGE_SELF, &r1);
  if (m && GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR) {
    gchar *dbg = NULL;

    gst_message_parse_error (m, &err, &dbg);
    err_text = g_strdup_printf ("%s (%s)", err->message, dbg ? dbg : "");
    g_clear_error (&err);
    g_free (dbg);
    kill (pid, SIGTERM);
  } else if (m == NULL) {
    err_text = g_strdup ("no EOS within 120 s");
    kill (pid, SIGTERM);
  }
  if (m)
    gst_message_unref (m);
  gst_object_unref (bus);
  while ((len = read (out_fd, buf, sizeof (buf))) > 0)
    g_string_append_len (s, buf, len);
  close (out_fd);
  waitpid (pid, &status, 0);
  g_spawn_close_pid (pid);
  out = strstr (s->str, "cpu_us=");
  if (out)
    consumer_us = g_ascii_strtod (out + 7, NULL);

  g_object_get (sink, "stats", &stats, NULL);
  if (stats) {
    gst_structure_get_uint64 (stats, "frames", &n);
    gst_structure_get_uint64 (stats, "copies", &copies);
    gst_structure_get_uint64 (stats, "drops", &drops);
    gst_structure_free (stats);
  }
  if (err_text) {
    /* the first line of the message is enough for a table */
    printf ("%-5s %-14s error: %.*s\n", format, mode,
        (int) strcspn (err_text, "\n("), err_text);
  } else if (n == 0) {
    printf ("%-5s %-14s error: no frame published\n", format, mode);
  } else {
    printf ("%-5s %-14s %6" G_GUINT64_FORMAT " %6" G_GUINT64_FORMAT
        " %6.2f %10.1f %10.1f\n", format, mode, n, drops,
        (gdouble) copies / n, cpu_us (&r0, &r1) / n, consumer_us / n);
  }
  fflush (stdout);
done:
  g_free (err_text);
  g_string_free (s, TRUE);
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (pipe);
}

int
main (int argc, char **argv)
{
  static const gchar *formats[] = { "YUY2", "NV12" };
  static const gchar *modes[] = { "mmap", "userptr", "dmabuf-import" };
  const gchar *preload = g_getenv ("LD_PRELOAD");
  gchar *dir, *sock;
  guint f, m;
  int i;

  if (argc == 3 && strcmp (argv[1], "--consume") == 0) {
    gst_init (NULL, NULL);
    return consume (argv[2]);
  }
  for (i = 1; i + 1 < argc; i += 2) {
    if (strcmp (argv[i], "--frames") == 0)
      frames = atoi (argv[i + 1]);
    else if (strcmp (argv[i], "--width") == 0)
      width = atoi (argv[i + 1]);
    else if (strcmp (argv[i], "--height") == 0)
      height = atoi (argv[i + 1]);
    else if (strcmp (argv[i], "--fps") == 0)
      fps = atoi (argv[i + 1]);
  }
  if (preload == NULL || strstr (preload, "libpfemu-v4l2.so") == NULL) {
    /* the stand-in must be there before anything is loaded */
    g_setenv ("LD_PRELOAD", PFEMU_V4L2_LIB, TRUE);
    g_setenv ("PFEMU_V4L2_PATTERN", "sparse", TRUE);
    execv ("/proc/self/exe", argv);
    fprintf (stderr, "v4l2-bench: exec: %s\n", g_strerror (errno));
    return 1;
  }
  gst_init (&argc, &argv);
  if (gst_registry_check_feature_version (gst_registry_get (), "v4l2src", 1,
          0, 0) == FALSE) {
    printf ("v4l2-bench: no v4l2src (gstreamer1.0-plugins-good)\n");
    return 77;
  }
  dir = g_dir_make_tmp ("v4l2-bench-XXXXXX", NULL);
  sock = g_build_filename (dir, "pf.sock", NULL);
  printf ("# v4l2src ! pinnedshmsink, %dx%d@%d, %d frames, stand-in camera "
      "(sparse pattern), %s, %ld CPUs online\n", width, height,
      fps, frames, gst_version_string (), sysconf (_SC_NPROCESSORS_ONLN));
  printf ("# %-3s %-14s %6s %6s %6s %10s %10s\n", "fmt", "io-mode",
      "frames", "drops", "copies", "prod-us/f", "cons-us/f");
  for (f = 0; f < G_N_ELEMENTS (formats); f++)
    for (m = 0; m < G_N_ELEMENTS (modes); m++) {
      run ("/proc/self/exe", formats[f], modes[m], sock);
      unlink (sock);
    }
  rmdir (dir);
  g_free (sock);
  g_free (dir);
  return 0;
}
