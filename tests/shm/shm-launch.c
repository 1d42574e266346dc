/* The launch peers of the pinnedshm tests (shm-peer launch): spawning
 * producers and consumers as gst pipelines, and reading and comparing the
 * frames they printed. See shm-launch.h.
 *
 * Threads and lifetimes: the test's thread only; every check fails the
 * running test (libcheck); returned arrays and strings are the caller's
 * (shm_said's leaks: failures only).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <gst/check/gstcheck.h>

#include <stdio.h>
#include <string.h>

#include "shm-launch.h"

/* The FRAME lines a launch child printed, in order. */
GArray *
shm_frames_of (ShmChild * c)
{
  GArray *a = g_array_new (FALSE, TRUE, sizeof (ShmFrame));
  gchar **lines = g_strsplit (c->out->str, "\n", -1);
  guint i;

  for (i = 0; lines[i]; i++) {
    ShmFrame f = { 0, };
    gchar sum[64] = "";

    if (!g_str_has_prefix (lines[i], "FRAME "))
      continue;
    if (sscanf (lines[i], "FRAME %" G_GUINT64_FORMAT " pts=%" G_GINT64_FORMAT
            " dts=%*s dur=%" G_GINT64_FORMAT
            " flags=0x%x sum=%63s", &f.index, &f.pts, &f.dur, &f.flags,
            sum) != 5)
      g_error ("bad line: %s", lines[i]);
    g_strlcpy (f.sum, sum, sizeof (f.sum));
    g_array_append_val (a, f);
  }
  g_strfreev (lines);
  return a;
}

/* What @c printed but its frames, at most 1500 bytes: for failure
 * messages (check cannot carry long ones). Leaked: failures only. */
const gchar *
shm_said (ShmChild * c)
{
  gchar **lines = g_strsplit (c->out->str, "\n", -1);
  GString *out = g_string_new (NULL);
  guint i;

  for (i = 0; lines[i]; i++)
    if (!g_str_has_prefix (lines[i], "FRAME "))
      g_string_append_printf (out, "%.300s\n", lines[i]);
  g_strfreev (lines);
  if (out->len > 1500)
    g_string_truncate (out, 1500);
  return g_string_free (out, FALSE);
}

/* The number of lines of @c starting with @prefix and holding @needle
 * (NULL: any). */
guint
shm_count_lines (ShmChild * c, const gchar * prefix, const gchar * needle)
{
  gchar **lines = g_strsplit (c->out->str, "\n", -1);
  guint i, n = 0;

  for (i = 0; lines[i]; i++)
    if (g_str_has_prefix (lines[i], prefix)
        && (needle == NULL || strstr (lines[i], needle)))
      n++;
  g_strfreev (lines);
  return n;
}

/* The index in @src, from @from on, of the frame with @f's PTS (@by_sum:
 * with its bytes), or -1. */
static gint
shm_find_frame (GArray * src, const ShmFrame * f, gboolean by_sum, guint from)
{
  guint i;

  for (i = from; i < src->len; i++) {
    const ShmFrame *s = &g_array_index (src, ShmFrame, i);

    if (by_sum ? g_str_equal (s->sum, f->sum) : s->pts == f->pts)
      return (gint) i;
  }
  return -1;
}

gint
shm_check_subset (GArray * src, GArray * got, const gchar * who)
{
  return shm_check_frames (src, got, FALSE, who);
}

/* As shm_check_subset (); @by_sum: frames found by their bytes (a live
 * source's PTS are its own running time), PTS not compared. */
gint
shm_check_frames (GArray * src, GArray * got, gboolean by_sum,
    const gchar * who)
{
  gint k_first = -1, k_last = -1;
  guint i;

  for (i = 0; i < got->len; i++) {
    const ShmFrame *f = &g_array_index (got, ShmFrame, i);
    gint k = shm_find_frame (src, f, by_sum, by_sum ? (guint) (k_last + 1) : 0);

    fail_unless (k >= 0, "%s: frame %u (PTS %" G_GINT64_FORMAT ", %s) is "
        "not one of the source's", who, i, f->pts, f->sum);
    fail_unless (k > k_last, "%s: frame %u out of order", who, i);
    fail_unless_equals_string (f->sum, g_array_index (src, ShmFrame, k).sum);
    fail_unless_equals_int64 (f->dur, g_array_index (src, ShmFrame, k).dur);
    if (k_first < 0)
      k_first = k;
    k_last = k;
  }
  return k_first;
}

/* @got is exactly @src from index @from on. */
void
shm_check_all_from (GArray * src, GArray * got, guint from, const gchar * who)
{
  fail_unless_equals_int (got->len, src->len - from);
  fail_unless_equals_int (shm_check_subset (src, got, who),
      got->len ? (gint) from : -1);
}

ShmChild *
shm_spawn_launch (const gchar * pipeline, ...)
{
  const gchar *args[8] = { NULL, };
  const gchar *a;
  va_list ap;
  guint n = 0;

  va_start (ap, pipeline);
  while ((a = va_arg (ap, const gchar *)) != NULL && n < 6)
      args[n++] = a;
  va_end (ap);
  return shm_child_spawn ("launch", shm_sock, "--pipeline", pipeline, args[0],
      args[1], args[2], args[3], args[4], args[5], NULL);
}

/* A producer of @n frames: videotestsrc (is-live=@live) ! CAPS ! tap !
 * pinnedshmsink name=sink @sink_props, waiting in PAUSED for @clients. */
ShmChild *
shm_spawn_producer (gint n, gboolean live, guint clients,
    const gchar * sink_props, const gchar * extra_arg, const gchar * extra_val)
{
  gchar *desc = g_strdup_printf ("videotestsrc num-buffers=%d is-live=%s "
      "pattern=ball ! " SHM_LAUNCH_CAPS
      " ! identity name=tap ! pinnedshmsink name=sink "
      "socket-path=@SOCKET@ %s", n, live ? "true" : "false",
      sink_props ? sink_props : "");
  gchar *k = g_strdup_printf ("%u", clients);
  ShmChild *c = shm_spawn_launch (desc, "--clients", k, extra_arg, extra_val,
      NULL);

  g_free (desc);
  g_free (k);
  /* listening, its upstream's segment (so its liveness) known */
  fail_unless (shm_child_wait_line (c, "PAUSED"), "%s", shm_said (c));
  return c;
}

/* A consumer: pinnedshmsrc name=src @src_props [! identity sleep-time=
 * @sleep_us] ! fakesink name=tap; @hold: buffers kept at the tap. */
ShmChild *
shm_spawn_consumer (const gchar * src_props, guint sleep_us, const gchar * hold)
{
  gchar *slow = sleep_us ? g_strdup_printf ("identity sleep-time=%u ! ",
      sleep_us) : g_strdup ("");
  gchar *desc = g_strdup_printf ("pinnedshmsrc name=src socket-path=@SOCKET@ "
      "connect-timeout=-1 %s ! %sfakesink name=tap sync=false",
      src_props ? src_props : "", slow);
  ShmChild *c = shm_spawn_launch (desc, hold ? "--hold" : NULL, hold, NULL);

  g_free (desc);
  g_free (slow);
  return c;
}

/* Reaps @c, which must exit 0 at EOS. */
void
shm_wait_ok (ShmChild * c, const gchar * who)
{
  fail_unless_equals_int (shm_child_wait (c), 0);
  fail_unless (shm_count_lines (c, "EOS", NULL) == 1, "%s: no EOS:\n%s", who,
      shm_said (c));
  fail_unless (shm_count_lines (c, "ERROR", NULL) == 0, "%s", shm_said (c));
}

/* Reaps the producer @p (exit 0 at EOS) and returns the @n frames it
 * listed. */
GArray *
shm_producer_frames (ShmChild * p, gint n)
{
  GArray *src;

  shm_wait_ok (p, "producer");
  src = shm_frames_of (p);
  fail_unless_equals_int (src->len, n);
  return src;
}

/* Reaps the consumer @c (exit 0 at EOS), which got every frame of @src. */
void
shm_check_got_all (GArray * src, ShmChild * c, const gchar * who)
{
  GArray *got;

  shm_wait_ok (c, who);
  got = shm_frames_of (c);
  shm_check_all_from (src, got, 0, who);
  g_array_unref (got);
}
