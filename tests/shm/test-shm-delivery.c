/* Delivery policies across processes (issue 10), each test a producer and
 * its consumers as separate gst pipelines (shm-peer launch), compared frame
 * by frame against the list the producer's side printed (index, PTS,
 * duration, SHA-1 of the bytes):
 *  - a non-live producer (videotestsrc, a decoded Matroska file) delivers
 *    every frame, byte-identical and with the source's PTS, to 1 and to 3
 *    consumers; both sides exit 0 at EOS;
 *  - one slowed consumer: every-frame still gets N of N, newest-frame gets
 *    fewer (each one intact), the others N of N;
 *  - a live producer with stuck consumers (1 and 2, default pool): the
 *    others and the producer keep going (frames counted), the stuck one's
 *    drops are posted on the producer's bus;
 *  - an every-frame consumer that stops releasing is demoted (or
 *    disconnected) after reliable-timeout, with warnings on both buses;
 *  - a late joiner of a stream with key frames starts at one and then gets
 *    every frame;
 *  - a producer that crashes is an error on the consumer's bus, not EOS;
 *  - a consumer past max-clients is refused, and both sides say so;
 *  - a pool that cannot be page-locked is a warning, frames still flow;
 *  - a render waiting for a stuck every-frame consumer without a bound is
 *    ended by a flushing seek and by going to NULL.
 * No timing is asserted: counts only, over generous windows.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <gst/check/gstcheck.h>
#include <glib/gstdio.h>

#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shm-launch.h"
#include "shm-proc.h"

#define CAPS SHM_LAUNCH_CAPS

/* The end of a non-live case: the producer @p exits 0 at EOS having
 * listed @n frames, and each of the @n_clients consumers @c exits 0 at EOS
 * with every one of them (byte-identical, the producer's PTS and duration),
 * from a stream it was told is not live. */
static void
check_nonlive_delivery (ShmChild * p, gint n, ShmChild ** c, guint n_clients)
{
  GArray *src;
  guint i;

  src = shm_producer_frames (p, n);
  for (i = 0; i < n_clients; i++) {
    shm_check_got_all (src, c[i], "consumer");
    fail_unless (strstr (c[i]->out->str, "live=(boolean)false") != NULL,
        "%s", shm_said (c[i]));
  }
  g_array_unref (src);
}

/* Non-live producer, 1 and 3 consumers: every consumer N of N,
 * byte-identical, with the source's PTS and duration; exit 0 both sides. */
static const guint nonlive_clients[] = { 1, 3 };

GST_START_TEST (test_nonlive_every_frame)
{
  const guint n_clients = nonlive_clients[__i__];
  const gint N = 60;
  ShmChild *p, *c[3];
  guint i;

  /* sync=false: the producer as fast as it can, a file being decoded */
  p = shm_spawn_producer (N, FALSE, n_clients, "sync=false", NULL, NULL);
  /* consumers a little slower than the producer (5 ms a frame), as real
   * ones are: a producer that did not wait for them would skip frames */
  for (i = 0; i < n_clients; i++)
    c[i] = shm_spawn_consumer (NULL, 5000, NULL);
  check_nonlive_delivery (p, N, c, n_clients);
  for (i = 0; i < n_clients; i++) {
    /* every frame asked of the producer, none reported late */
    fail_unless (strstr (c[i]->out->str, "delivery=(string)every-frame"),
        "%s", shm_said (c[i]));
    fail_unless_equals_int (shm_count_lines (c[i], "QOS", NULL), 0);
  }
  /* nothing dropped, nothing said about drops */
  fail_unless_equals_int (shm_count_lines (p, "ELEMENT", "pinnedshmsink-drops"),
      0);
  fail_unless_equals_int (shm_child_get (p, "STATS", "drops"), 0);
}

GST_END_TEST;

/* The same from a decoded file (Matroska of JPEG frames, made here):
 * filesrc ! matroskademux ! jpegdec ! videoconvert ! pinnedshmsink. */
static void
make_clip (const gchar * path, gint n)
{
  gchar *desc = g_strdup_printf ("videotestsrc num-buffers=%d pattern=ball ! "
      "video/x-raw,width=160,height=120,framerate=30/1 ! jpegenc ! "
      "matroskamux ! filesink location=%s", n, path);
  GstElement *pipeline = gst_parse_launch (desc, NULL);
  GstMessage *msg;

  fail_unless (pipeline != NULL, "%s", desc);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  msg = gst_bus_timed_pop_filtered (GST_ELEMENT_BUS (pipeline),
      30 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless (msg != NULL && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS);
  gst_message_unref (msg);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);
  g_free (desc);
}

GST_START_TEST (test_decoded_file)
{
  const guint n_clients = nonlive_clients[__i__];
  const gint N = 45;
  gchar *clip = g_build_filename (shm_dir, "clip.mkv", NULL);
  gchar *desc, *k;
  ShmChild *p, *c[3];
  guint i;

  make_clip (clip, N);
  desc = g_strdup_printf ("filesrc location=%s ! matroskademux ! jpegdec ! "
      "videoconvert ! video/x-raw,format=RGBA ! identity name=tap ! "
      "pinnedshmsink name=sink socket-path=@SOCKET@ sync=false", clip);
  k = g_strdup_printf ("%u", n_clients);
  p = shm_spawn_launch (desc, "--clients", k, NULL);
  fail_unless (shm_child_wait_line (p, "PAUSED"), "%s", shm_said (p));
  for (i = 0; i < n_clients; i++)
    c[i] = shm_spawn_consumer (NULL, 5000, NULL);
  check_nonlive_delivery (p, N, c, n_clients);
  g_free (k);
  g_free (desc);
  g_free (clip);
}

GST_END_TEST;

/* One consumer slowed by identity sleep-time (100 ms a frame): as
 * every-frame (auto from a non-live producer) it still gets N of N and
 * holds the producer back; as newest-frame it gets fewer, each intact, and
 * its drops are posted. The two others get N of N in both cases. */
static const gchar *slow_props[] = { "", "delivery=newest-frame" };

GST_START_TEST (test_slow_consumer)
{
  const gboolean leaky = __i__ == 1;
  const gint N = 30;
  ShmChild *p, *slow, *c[2];
  GArray *src, *got;
  gchar *pid;
  guint i;

  p = shm_spawn_producer (N, FALSE, 3, NULL, NULL, NULL);
  slow = shm_spawn_consumer (slow_props[__i__], 100000, NULL);
  for (i = 0; i < 2; i++)
    c[i] = shm_spawn_consumer (NULL, 0, NULL);
  src = shm_producer_frames (p, N);
  for (i = 0; i < 2; i++) {
    shm_check_got_all (src, c[i], "consumer");
  }
  shm_wait_ok (slow, "slow consumer");
  got = shm_frames_of (slow);
  pid = g_strdup_printf ("pid=(int)%d", slow->pid);
  if (leaky) {
    fail_unless (got->len >= 1 && got->len < (guint) N, "leaky slow "
        "consumer got %u of %d", got->len, N);
    /* a live source (newest-frame): its own PTS */
    shm_check_frames (src, got, TRUE, "leaky consumer");
    /* and it said so: QoS with the frames it never saw */
    fail_unless (shm_count_lines (slow, "QOS src=src", "format=buffers") >= 1,
        "%s", shm_said (slow));
    fail_if (shm_count_lines (slow, "QOS src=src", "dropped=0") > 0, "%s",
        shm_said (slow));
    fail_unless (strstr (slow->out->str, "delivery=(string)newest-frame"),
        "%s", shm_said (slow));
    /* the producer said so, naming the consumer */
    fail_unless (shm_count_lines (p, "ELEMENT src=sink pinnedshmsink-drops",
            pid) >= 1, "%s", shm_said (p));
  } else {
    shm_check_all_from (src, got, 0, "reliable consumer");
    fail_unless_equals_int (shm_count_lines (p, "ELEMENT",
            "pinnedshmsink-drops"), 0);
  }
  g_free (pid);
  g_array_unref (got);
  g_array_unref (src);
}

GST_END_TEST;

/* Live at 30 frames/s with 1 and 2 stuck consumers (they keep every
 * buffer) and the default pool: the producer renders all N frames and the
 * free consumer receives at least 3/4 of them (at 30 frames/s it is never
 * at its limit; the margin is for a loaded machine); each stuck consumer's
 * drops are posted on the producer's bus as pinnedshmsink-drops naming it,
 * and a warning. */
static const guint n_stuck[] = { 1, 2 };

GST_START_TEST (test_live_stuck_consumers)
{
  const guint stuck = n_stuck[__i__];
  const gint N = 90;
  ShmChild *p, *s[2], *free_c;
  GArray *src, *got;
  guint i;

  p = shm_spawn_producer (N, TRUE, stuck + 1, NULL, NULL, NULL);
  for (i = 0; i < stuck; i++)
    s[i] = shm_spawn_consumer (NULL, 0, "100000");
  free_c = shm_spawn_consumer (NULL, 0, NULL);
  src = shm_producer_frames (p, N);

  shm_wait_ok (free_c, "free consumer");
  got = shm_frames_of (free_c);
  fail_unless (got->len >= (guint) N * 3 / 4, "free consumer got %u of %d",
      got->len, N);
  fail_unless (strstr (free_c->out->str, "live=(boolean)true"), "%s",
      shm_said (free_c));
  fail_unless (strstr (free_c->out->str, "delivery=(string)newest-frame"),
      "%s", shm_said (free_c));
  g_array_unref (got);

  for (i = 0; i < stuck; i++) {
    gchar *pid;

    shm_wait_ok (s[i], "stuck consumer");
    got = shm_frames_of (s[i]);
    /* it got its limit (max-client-buffers 4), maybe a few queued, then
     * nothing */
    fail_unless (got->len >= 1 && got->len <= 8, "stuck consumer got %u",
        got->len);
    g_array_unref (got);
    pid = g_strdup_printf ("pid=(int)%d", s[i]->pid);
    fail_unless (shm_count_lines (p, "ELEMENT src=sink pinnedshmsink-drops",
            pid) >= 1, "no drops posted for %s:\n%s", pid, shm_said (p));
    g_free (pid);
  }
  fail_unless (shm_count_lines (p, "WARNING src=sink",
          "misses frames") >= stuck, "%s", shm_said (p));
  g_array_unref (src);
}

GST_END_TEST;

/* An every-frame consumer that never releases holds the non-live producer
 * back for reliable-timeout (300 ms), then is demoted (a warning on both
 * buses, and the other consumer and the producer finish N of N) or
 * disconnected (its source posts an error). */
static const gchar *timeout_actions[] = { "demote", "disconnect" };

GST_START_TEST (test_reliable_timeout)
{
  const gchar *action = timeout_actions[__i__];
  const gint N = 30;
  ShmChild *p, *stuck, *c;
  GArray *src;
  gchar *props;

  props = g_strdup_printf ("reliable-timeout=300 reliable-timeout-action=%s",
      action);
  p = shm_spawn_producer (N, FALSE, 2, props, NULL, NULL);
  stuck = shm_spawn_consumer ("delivery=every-frame", 0, "100000");
  c = shm_spawn_consumer (NULL, 0, NULL);
  src = shm_producer_frames (p, N);
  shm_check_got_all (src, c, "consumer");

  if (__i__ == 0) {
    fail_unless (shm_count_lines (p, "ELEMENT src=sink",
            "pinnedshmsink-client-demoted") == 1, "%s", shm_said (p));
    fail_unless (shm_count_lines (p, "WARNING src=sink", "demoted") == 1, "%s",
        shm_said (p));
    shm_wait_ok (stuck, "demoted consumer");
    fail_unless (shm_count_lines (stuck, "WARNING src=src", "demoted") == 1,
        "%s", shm_said (stuck));
    fail_unless (strstr (stuck->out->str, "demoted=(boolean)true"), "%s",
        shm_said (stuck));
  } else {
    fail_unless (shm_count_lines (p, "ELEMENT src=sink",
            "pinnedshmsink-client-timed-out") == 1, "%s", shm_said (p));
    fail_unless (shm_count_lines (p, "WARNING src=sink", "disconnected") == 1,
        "%s", shm_said (p));
    fail_unless_equals_int (shm_child_wait (stuck), 1);
    fail_unless (shm_count_lines (stuck, "ERROR src=src", NULL) == 1, "%s",
        shm_said (stuck));
    /* in its own words (the producer said why), not those of a crash */
    fail_unless (shm_count_lines (stuck, "ERROR src=src",
            "disconnected this consumer for falling behind") == 1, "%s",
        shm_said (stuck));
    fail_unless (strstr (stuck->out->str, "vanished") == NULL, "%s",
        shm_said (stuck));
  }
  g_free (props);
  g_array_unref (src);
}

GST_END_TEST;

/* A consumer joining a non-live stream with a key frame every 10 frames
 * (the others marked DELTA_UNIT) while another one paces it: its first
 * frame is a key frame, then it gets every frame to the end, intact. */
GST_START_TEST (test_late_joiner)
{
  const gint N = 60;
  ShmChild *p, *pacer, *late;
  GArray *src, *got;
  gint k0;

  p = shm_spawn_producer (N, FALSE, 1, NULL, "--gop", "10");
  pacer = shm_spawn_consumer (NULL, 30000, NULL);
  fail_unless (shm_child_wait_line (pacer, "FRAME 15 "), "%s",
      shm_said (pacer));
  late = shm_spawn_consumer (NULL, 0, NULL);
  src = shm_producer_frames (p, N);
  shm_check_got_all (src, pacer, "first consumer");

  shm_wait_ok (late, "late consumer");
  got = shm_frames_of (late);
  fail_unless (got->len > 0, "%s", shm_said (late));
  k0 = shm_check_subset (src, got, "late consumer");
  fail_unless (k0 >= 10 && k0 % 10 == 0, "late joiner started at %d", k0);
  fail_if (g_array_index (got, ShmFrame, 0).flags & GST_BUFFER_FLAG_DELTA_UNIT);
  shm_check_all_from (src, got, k0, "late consumer");
  g_array_unref (got);
  g_array_unref (src);
}

GST_END_TEST;

/* A live producer SIGKILLed mid-stream: the consumer posts
 * GST_RESOURCE_ERROR_READ "vanished" and exits 1; no EOS. */
GST_START_TEST (test_producer_crash)
{
  ShmChild *p, *c;
  gchar *code;

  p = shm_spawn_producer (-1, TRUE, 1, NULL, NULL, NULL);
  c = shm_spawn_consumer (NULL, 0, NULL);
  fail_unless (shm_child_wait_line (c, "FRAME 5 "), "%s", shm_said (c));
  shm_child_kill (p, SIGKILL);
  fail_unless_equals_int (shm_child_wait (c), 1);
  code = g_strdup_printf ("code=%d ", GST_RESOURCE_ERROR_READ);
  fail_unless (shm_count_lines (c,
          "ERROR src=src domain=gst-resource-error-quark", code) == 1, "%s",
      shm_said (c));
  fail_unless (shm_count_lines (c, "ERROR", "vanished without EOS") == 1, "%s",
      shm_said (c));
  fail_unless_equals_int (shm_count_lines (c, "EOS", NULL), 0);
  g_free (code);
}

GST_END_TEST;

/* max-clients=1: a second consumer is refused in the handshake (its
 * source posts GST_RESOURCE_ERROR_BUSY, it exits 1), the producer posts a
 * warning and a pinnedshmsink-client-refused naming it, and the first
 * consumer goes on receiving. */
GST_START_TEST (test_max_clients)
{
  ShmChild *p, *c1, *c2;
  gchar *code, *pid, *next;
  guint n;

  p = shm_spawn_producer (-1, TRUE, 1, "max-clients=1", NULL, NULL);
  c1 = shm_spawn_consumer (NULL, 0, NULL);
  fail_unless (shm_child_wait_line (c1, "FRAME 3 "), "%s", shm_said (c1));
  c2 = shm_spawn_consumer (NULL, 0, NULL);
  fail_unless_equals_int (shm_child_wait (c2), 1);
  code = g_strdup_printf ("code=%d ", GST_RESOURCE_ERROR_BUSY);
  fail_unless (shm_count_lines (c2, "ERROR src=src", code) == 1, "%s",
      shm_said (c2));
  fail_unless (shm_count_lines (c2, "ERROR", "refused this consumer") == 1,
      "%s", shm_said (c2));
  fail_unless (shm_child_wait_line (p,
          "ELEMENT src=sink " "pinnedshmsink-client-refused"), "%s",
      shm_said (p));
  pid = g_strdup_printf ("pid=(int)%d", c2->pid);
  /* refused going to PAUSED and when streaming: once or twice */
  fail_unless (shm_count_lines (p,
          "ELEMENT src=sink pinnedshmsink-client-refused", pid) >= 1, "%s",
      shm_said (p));
  fail_unless (shm_count_lines (p, "WARNING src=sink",
          "Refused a consumer") >= 1, "%s", shm_said (p));
  /* the first one is still served */
  n = shm_count_lines (c1, "FRAME ", NULL);
  next = g_strdup_printf ("FRAME %u ", n + 5);
  fail_unless (shm_child_wait_line (c1, next), "%s", shm_said (c1));
  g_free (next);
  g_free (pid);
  g_free (code);
}

GST_END_TEST;

/* Whether uid 65534 can reach what the peer loads after it dropped to
 * it (run as root): the build tree (the plugin's libraries) and every
 * plugin directory, all of whose parents it must be able to enter (a
 * build inside a 0700 directory, like a home on Debian 12, is out of its
 * reach). NULL when it can (or nobody drops); else why not. The kernel is
 * asked by a shell run as that user (exec'd: under valgrind only this
 * process is checked). */
static void
drop_to_nobody (gpointer user_data)
{
  if (setgroups (0, NULL) != 0 || setgid (65534) != 0 || setuid (65534) != 0)
    _exit (100);
}

static gchar *
nobody_cannot_reach_build (void)
{
  const gchar *root = g_getenv ("PINNEDFLOW_BUILD_ROOT");
  const gchar *plugins = g_getenv ("GST_PLUGIN_PATH_1_0");
  GPtrArray *argv;
  gchar **dirs, *out = NULL, *why = NULL;
  gint status = 0;
  guint i;

  if (geteuid () != 0)
    return NULL;
  argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (gpointer) "/bin/sh");
  g_ptr_array_add (argv, (gpointer) "-c");
  g_ptr_array_add (argv, (gpointer) "for p; do [ -r \"$p\" ] && "
      "[ -x \"$p\" ] || { printf %s \"$p\"; exit 1; }; done");
  g_ptr_array_add (argv, (gpointer) "sh");
  if (root)
    g_ptr_array_add (argv, (gpointer) root);
  dirs = g_strsplit (plugins ? plugins : "", ":", -1);
  for (i = 0; dirs[i]; i++)
    if (dirs[i][0] != '\0')
      g_ptr_array_add (argv, dirs[i]);
  g_ptr_array_add (argv, NULL);
  if (!g_spawn_sync (NULL, (gchar **) argv->pdata, NULL,
          G_SPAWN_STDERR_TO_DEV_NULL, drop_to_nobody, NULL, &out, NULL,
          &status, NULL))
    why = g_strdup ("could not run a check as uid 65534");
  else if (WIFEXITED (status) && WEXITSTATUS (status) == 100)
    why = g_strdup ("could not drop to uid 65534");
  else if (!WIFEXITED (status) || WEXITSTATUS (status) != 0)
    why = g_strdup_printf ("uid 65534 cannot read %s (a parent directory "
        "is closed to others, e.g. mode 0700)", out ? out : "the build");
  g_free (out);
  g_strfreev (dirs);
  g_ptr_array_unref (argv);
  return why;
}

/* A producer whose pool cannot be page-locked (RLIMIT_MEMLOCK 64 KiB, as
 * uid 65534 when run as root): one GST_RESOURCE_ERROR_NO_SPACE_LEFT
 * warning naming the limit, and the frames still all arrive. */
GST_START_TEST (test_pool_not_locked)
{
  const gint N = 30;
  ShmChild *p, *c;
  GArray *src, *got;
  gchar *code, *desc;

  /* the producer, maybe uid 65534, makes its socket in our directory */
  fail_unless (g_chmod (shm_dir, 0777) == 0);
  desc = g_strdup_printf ("videotestsrc num-buffers=%d pattern=ball ! " CAPS
      " ! identity name=tap ! pinnedshmsink name=sink socket-path=@SOCKET@ "
      "perms=0666", N);
  p = shm_spawn_launch (desc, "--clients", "1", "--memlock-limit", "65536",
      NULL);
  g_free (desc);
  fail_unless (shm_child_wait_line (p, "PAUSED"), "%s", shm_said (p));
  c = shm_spawn_consumer (NULL, 0, NULL);
  shm_wait_ok (p, "producer");
  shm_wait_ok (c, "consumer");
  src = shm_frames_of (p);
  got = shm_frames_of (c);
  fail_unless_equals_int (src->len, N);
  shm_check_all_from (src, got, 0, "consumer");
  code = g_strdup_printf ("code=%d ", GST_RESOURCE_ERROR_NO_SPACE_LEFT);
  fail_unless (shm_count_lines (p, "WARNING src=sink", code) == 1, "%s",
      shm_said (p));
  fail_unless (shm_count_lines (p, "WARNING src=sink",
          "Could not page-lock") == 1, "%s", shm_said (p));
  /* the debug text, on the warning's next line */
  fail_unless (shm_count_lines (p, "mlock refused",
          "RLIMIT_MEMLOCK is 65536 bytes") == 1, "%s", shm_said (p));
  g_free (code);
  g_array_unref (got);
  g_array_unref (src);
}

GST_END_TEST;

static guint64
sink_frames (GstElement * sink)
{
  GstStructure *st;
  guint64 frames = 0;

  g_object_get (sink, "stats", &st, NULL);
  gst_structure_get_uint64 (st, "frames", &frames);
  gst_structure_free (st);
  return frames;
}

/* The sink, in this process, waiting in render for a stuck every-frame
 * consumer with no bound (reliable-timeout=-1): a flushing seek and then
 * the state change to NULL both end the wait (they would hang if they did
 * not). Under the valgrind setup this is the sink's code under valgrind. */
GST_START_TEST (test_reliable_wait_interrupted)
{
  GstElement *pipeline, *sink;
  ShmChild *stuck;
  gchar *desc;
  guint64 before;
  gint i;

  desc = g_strdup_printf ("videotestsrc pattern=ball ! " CAPS " ! "
      "pinnedshmsink name=sink socket-path=%s sync=false "
      "wait-for-connection=true reliable-timeout=-1", shm_sock);
  pipeline = gst_parse_launch (desc, NULL);
  g_free (desc);
  fail_unless (pipeline != NULL);
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  stuck = shm_spawn_consumer ("delivery=every-frame", 0, "100000");
  /* it got its 4 frames (max-client-buffers) and keeps them */
  fail_unless (shm_child_wait_line (stuck, "FRAME 3 "), "%s", shm_said (stuck));
  /* render is held back: the count stops (it would run on at thousands of
   * frames a second otherwise) */
  for (i = 0; i < 100; i++) {
    before = sink_frames (sink);
    g_usleep (100 * 1000);
    if (sink_frames (sink) == before)
      break;
  }
  fail_unless_equals_uint64 (sink_frames (sink), before);
  fail_unless (before <= 8, "%" G_GUINT64_FORMAT " frames rendered", before);

  fail_unless (gst_element_seek_simple (pipeline, GST_FORMAT_TIME,
          GST_SEEK_FLAG_FLUSH, 0));
  fail_unless_equals_int (gst_element_set_state (pipeline, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
}

GST_END_TEST;

static Suite *
delivery_suite (void)
{
  Suite *s = suite_create ("pinnedshm-delivery");
  TCase *tc = tcase_create ("delivery");

  tcase_set_timeout (tc, 120);
  tcase_add_checked_fixture (tc, shm_setup, shm_teardown);
  tcase_add_loop_test (tc, test_nonlive_every_frame, 0,
      G_N_ELEMENTS (nonlive_clients));
  tcase_add_loop_test (tc, test_decoded_file, 0,
      G_N_ELEMENTS (nonlive_clients));
  tcase_add_loop_test (tc, test_slow_consumer, 0, G_N_ELEMENTS (slow_props));
  tcase_add_loop_test (tc, test_live_stuck_consumers, 0,
      G_N_ELEMENTS (n_stuck));
  tcase_add_loop_test (tc, test_reliable_timeout, 0,
      G_N_ELEMENTS (timeout_actions));
  tcase_add_test (tc, test_late_joiner);
  tcase_add_test (tc, test_producer_crash);
  tcase_add_test (tc, test_max_clients);
  tcase_add_test (tc, test_pool_not_locked);
  tcase_add_test (tc, test_reliable_wait_interrupted);
  suite_add_tcase (s, tc);
  return s;
}

/* As GST_CHECK_MAIN, but test_pool_not_locked, run alone by its own meson
 * test (GST_CHECKS=test_pool_not_locked), exits 77 (meson: SKIP) with its
 * reason when its producer, run as uid 65534, could not load the build. */
int
main (int argc, char **argv)
{
  const gchar *only = g_getenv ("GST_CHECKS");
  gchar *why;

  gst_check_init (&argc, &argv);
  if (only != NULL && strstr (only, "test_pool_not_locked") != NULL
      && (why = nobody_cannot_reach_build ()) != NULL) {
    g_print ("SKIP test_pool_not_locked: %s\n", why);
    g_free (why);
    return 77;
  }
  return gst_check_run_suite (delivery_suite (), "delivery", __FILE__);
}
