/* Helpers shared by the v4l2 suite's tests (v4l2-test-util.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Threading: the test's thread only.
 */
#include "v4l2-test-util.h"

#include <gst/check/gstcheck.h>

#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void
v4l2_test_setup (const gchar * tmpl, gchar ** tmpdir, gchar ** sock)
{
  *tmpdir = g_dir_make_tmp (tmpl, NULL);
  fail_unless (*tmpdir != NULL);
  *sock = g_build_filename (*tmpdir, "pf.sock", NULL);
}

void
v4l2_test_teardown (GstElement ** running, gchar ** tmpdir, gchar ** sock)
{
  if (*running) {
    gst_element_set_state (*running, GST_STATE_NULL);
    gst_object_unref (*running);
    *running = NULL;
  }
  unlink (*sock);
  rmdir (*tmpdir);
  g_clear_pointer (sock, g_free);
  g_clear_pointer (tmpdir, g_free);
}

gint64
v4l2_test_get_key (const gchar * line, const gchar * key)
{
  gchar *k = g_strdup_printf (" %s=", key);
  const gchar *p = strstr (line, k);
  gint64 v = p ? g_ascii_strtoll (p + strlen (k), NULL, 10) : -1;

  g_free (k);
  return v;
}

/* Reads the child's output to its end, returns the RESULT line. */
static gchar *
read_result (gint out_fd)
{
  GString *s = g_string_new (NULL);
  gchar buf[4096], *line;
  gssize n;

  while ((n = read (out_fd, buf, sizeof (buf))) > 0)
    g_string_append_len (s, buf, n);
  line = strstr (s->str, "RESULT ");
  line = line ? g_strndup (line, strcspn (line, "\n")) : NULL;
  g_string_free (s, TRUE);
  return line;
}

GPid
v4l2_test_spawn_consumer (const gchar * sock, gchar ** extra, gint * out_fd)
{
  GPtrArray *argv = g_ptr_array_new ();
  gchar *consumer;
  GError *err = NULL;
  GPid pid;

  consumer = g_build_filename (g_getenv ("PINNEDFLOW_BUILD_ROOT"), "tests",
      "v4l2", "v4l2-consumer", NULL);
  g_ptr_array_add (argv, consumer);
  g_ptr_array_add (argv, (gpointer) sock);
  for (; extra && *extra; extra++)
    g_ptr_array_add (argv, *extra);
  g_ptr_array_add (argv, NULL);
  fail_unless (g_spawn_async_with_pipes (NULL, (gchar **) argv->pdata, NULL,
          G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid, NULL, out_fd, NULL,
          &err), "spawn %s: %s", consumer, err ? err->message : "");
  g_ptr_array_free (argv, TRUE);
  g_free (consumer);
  return pid;
}

gchar *
v4l2_test_finish (GstElement * pipe, GPid pid, gint out_fd,
    gboolean error_ok, gchar ** error, const gchar * what)
{
  GstMessage *msg;
  GstBus *bus;
  GError *err = NULL;
  gchar *line;
  gint status;

  bus = gst_element_get_bus (pipe);
  msg = gst_bus_timed_pop_filtered (bus, 60 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "no EOS within 60 s");
  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    gchar *dbg = NULL;

    gst_message_parse_error (msg, &err, &dbg);
    fail_unless (error_ok, "error from %s: %s (%s)",
        GST_MESSAGE_SRC_NAME (msg), err->message, dbg);
    *error = g_strdup_printf ("%s: %s (%s)", GST_MESSAGE_SRC_NAME (msg),
        err->message, dbg);
    g_free (dbg);
    g_clear_error (&err);
    kill (pid, SIGTERM);
  }
  gst_message_unref (msg);
  gst_object_unref (bus);

  line = read_result (out_fd);
  close (out_fd);
  fail_unless (waitpid (pid, &status, 0) == pid);
  g_spawn_close_pid (pid);
  fail_unless (line != NULL || *error, "the consumer gave no RESULT");
  GST_INFO ("%s: %s", what, line ? line : *error);
  return line ? line : g_strdup ("");
}

void
v4l2_test_sink_stats (GstElement * sink, guint64 * frames, guint64 * copies,
    guint64 * zero_copy)
{
  GstStructure *stats = NULL;

  g_object_get (sink, "stats", &stats, NULL);
  fail_unless (stats != NULL);
  gst_structure_get_uint64 (stats, "frames", frames);
  gst_structure_get_uint64 (stats, "copies", copies);
  gst_structure_get_uint64 (stats, "zero-copy-frames", zero_copy);
  gst_structure_free (stats);
}
