/* Right from the first frame, whatever order the processes start in (issue
 * 25), each case with its producer and consumers as gst pipelines:
 *  - consumers started before a non-live producer get the source's PTS,
 *    duration and bytes, every frame (is-live auto and true);
 *  - three consumers started first and a producer with
 *    wait-for-connection=true min-clients=3: each gets N of N;
 *  - a producer whose upstream segment carries GST_SEGMENT_FLAG_SEGMENT
 *    (and RESET): the consumer ends at its EOS, and only the flags that
 *    travel reach its pipeline; the same flags sent on the wire by a bare
 *    pf_producer (what a producer without the sink's filter sends) are
 *    dropped by the source;
 *  - a consumer refused at max-clients with on-disconnect=reconnect warns,
 *    keeps trying, and is served once a slot is free.
 * No timing is asserted: the waits are bounds that catch hangs.
 *
 * Threads and lifetimes: the test's thread; children and directories are
 * the fixture's (shm-proc.c), pipelines made here go to NULL before the
 * test ends.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <gst/check/gstcheck.h>

#include <string.h>

#include <pinnedflow/pf-producer.h>

#include "shm-launch.h"
#include "shm-proc.h"

#define CAPS SHM_LAUNCH_CAPS
/* generous: the machine may be loaded */
#define WAIT_S 60

/* A consumer started first: it printed PAUSED, and went on to PLAYING
 * where it waits for the producer (it asked nobody going to PAUSED). */
static ShmChild *
consumer_first (const gchar * props)
{
  ShmChild *c = shm_spawn_consumer (props, 0, NULL);

  fail_unless (shm_child_wait_line (c, "PAUSED"), "%s", shm_said (c));
  return c;
}

static const gchar *const first_props[] = { NULL, "is-live=true" };

/* Consumer first, then a non-live producer (wait-for-connection=true): the
 * consumer gets every frame with the source's PTS and duration (it used
 * to get them shifted by the time it waited). */
GST_START_TEST (test_consumer_first)
{
  const gint N = 10;
  ShmChild *c, *p;
  GArray *src;

  c = consumer_first (first_props[__i__]);
  /* the consumer is past going to PAUSED without a producer */
  g_usleep (300 * 1000);
  p = shm_spawn_producer (N, FALSE, 0, "wait-for-connection=true sync=false",
      NULL, NULL);
  src = shm_producer_frames (p, N);
  shm_check_got_all (src, c, "consumer started first");
  /* it went to PAUSED as a live source, with nobody to ask */
  fail_unless (strstr (c->out->str, "live=(boolean)true") != NULL, "%s",
      shm_said (c));
  g_array_unref (src);
}

GST_END_TEST;

/* Three consumers first, then a producer of 90 frames with
 * wait-for-connection=true min-clients=3: each consumer N of N, with the
 * source's PTS (with min-clients 1, one or two of them got 89). */
GST_START_TEST (test_min_clients)
{
  const gint N = 90;
  ShmChild *c[3], *p;
  GArray *src;
  guint i;

  for (i = 0; i < 3; i++)
    c[i] = consumer_first (NULL);
  g_usleep (300 * 1000);
  p = shm_spawn_producer (N, FALSE, 0, "wait-for-connection=true "
      "min-clients=3 sync=false", NULL, NULL);
  src = shm_producer_frames (p, N);
  for (i = 0; i < 3; i++)
    shm_check_got_all (src, c[i], "consumer started first");
  g_array_unref (src);
}

GST_END_TEST;

/* ---- segment flags ---- */

#define SEEK_FLAGS (GST_SEGMENT_FLAG_SEGMENT | GST_SEGMENT_FLAG_RESET)

/* Adds SEEK_FLAGS (and TRICKMODE_NO_AUDIO, which travels) to every
 * SEGMENT going down the pad: what a segment seek upstream would give. */
static GstPadProbeReturn
flag_segment (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  GstEvent *ev = GST_PAD_PROBE_INFO_EVENT (info);
  GstSegment seg;

  if (GST_EVENT_TYPE (ev) != GST_EVENT_SEGMENT)
    return GST_PAD_PROBE_OK;
  gst_event_copy_segment (ev, &seg);
  seg.flags |= SEEK_FLAGS | GST_SEGMENT_FLAG_TRICKMODE_NO_AUDIO;
  gst_event_unref (ev);
  GST_PAD_PROBE_INFO_DATA (info) = gst_event_new_segment (&seg);
  return GST_PAD_PROBE_OK;
}

/* The flags of the last SEGMENT reaching the consumer's sink. */
static GstPadProbeReturn
note_segment (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  GstEvent *ev = GST_PAD_PROBE_INFO_EVENT (info);
  const GstSegment *seg;

  if (GST_EVENT_TYPE (ev) == GST_EVENT_SEGMENT) {
    gst_event_parse_segment (ev, &seg);
    g_atomic_int_set ((gint *) user_data, (gint) seg->flags);
  }
  return GST_PAD_PROBE_OK;
}

/* pinnedshmsrc socket-path=shm_sock connect-timeout=-1 ! fakesink name=out,
 * the flags of its last segment in *@flags. */
static GstElement *
consumer_pipeline (gint * flags)
{
  gchar *desc = g_strdup_printf ("pinnedshmsrc socket-path=%s "
      "connect-timeout=-1 ! fakesink name=out sync=false", shm_sock);
  GstElement *pipeline = gst_parse_launch (desc, NULL);
  GstElement *out;
  GstPad *pad;

  fail_unless (pipeline != NULL, "%s", desc);
  out = gst_bin_get_by_name (GST_BIN (pipeline), "out");
  pad = gst_element_get_static_pad (out, "sink");
  *flags = -1;
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, note_segment,
      flags, NULL);
  gst_object_unref (pad);
  gst_object_unref (out);
  g_free (desc);
  return pipeline;
}

/* EOS (TRUE) or an error or nothing within WAIT_S (FALSE) on @pipeline's
 * bus. */
static gboolean
ends_with_eos (GstElement * pipeline)
{
  GstMessage *msg = gst_bus_timed_pop_filtered (GST_ELEMENT_BUS (pipeline),
      WAIT_S * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  gboolean eos = msg != NULL && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS;

  if (msg)
    gst_message_unref (msg);
  return eos;
}

/* A producer whose upstream's segment carries SEGMENT | RESET: its 5
 * frames and its EOS reach the consumer, which ends (a SEGMENT flag in the
 * source's segment turned the EOS into SEGMENT_DONE: it never ended), and
 * its segment holds only the flags that travel. */
GST_START_TEST (test_segment_flag_sink)
{
  GstElement *prod, *cons, *sink;
  GstPad *pad;
  gchar *desc;
  gint flags;

  desc = g_strdup_printf ("videotestsrc num-buffers=5 pattern=ball ! " CAPS
      " ! pinnedshmsink name=sink socket-path=%s sync=false "
      "wait-for-connection=true", shm_sock);
  prod = gst_parse_launch (desc, NULL);
  g_free (desc);
  fail_unless (prod != NULL);
  sink = gst_bin_get_by_name (GST_BIN (prod), "sink");
  pad = gst_element_get_static_pad (sink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, flag_segment,
      NULL, NULL);
  gst_object_unref (pad);
  gst_object_unref (sink);
  fail_unless (gst_element_set_state (prod, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);

  cons = consumer_pipeline (&flags);
  fail_unless (gst_element_set_state (cons, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  fail_unless (ends_with_eos (prod), "the producer did not end");
  fail_unless (ends_with_eos (cons), "the consumer did not end at the "
      "producer's EOS");
  fail_unless_equals_int (flags, GST_SEGMENT_FLAG_TRICKMODE_NO_AUDIO);

  gst_element_set_state (cons, GST_STATE_NULL);
  gst_element_set_state (prod, GST_STATE_NULL);
  gst_object_unref (cons);
  gst_object_unref (prod);
}

GST_END_TEST;

/* The same flags on the wire, from a bare pf_producer (CAPS, a STREAM
 * whose TIME segment has SEGMENT | RESET, EOS; no frames): the source
 * drops them and its pipeline ends at the EOS. */
GST_START_TEST (test_segment_flag_wire)
{
  pf_producer_config config;
  pf_stream_segment seg;
  pf_producer *p = NULL;
  GstElement *cons;
  gint flags, i;

  memset (&config, 0, sizeof (config));
  config.socket_path = shm_sock;
  config.perms = 0600;
  config.max_client_frames = 4;
  fail_unless_equals_int (pf_producer_new (&config, &p), 0);
  fail_unless_equals_int (pf_producer_set_caps (p, CAPS), 0);
  memset (&seg, 0, sizeof (seg));
  seg.format = GST_FORMAT_TIME;
  seg.flags = SEEK_FLAGS;
  seg.rate = seg.applied_rate = 1.0;
  seg.stop = seg.duration = GST_CLOCK_TIME_NONE;
  fail_unless_equals_int (pf_producer_set_segment (p, &seg), 0);

  cons = consumer_pipeline (&flags);
  fail_unless (gst_element_set_state (cons, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  for (i = 0; i < WAIT_S * 100 && pf_producer_get_n_clients (p) == 0; i++)
    g_usleep (10 * 1000);
  fail_unless (pf_producer_get_n_clients (p) == 1);
  fail_unless_equals_int (pf_producer_send_eos (p), 0);
  fail_unless (ends_with_eos (cons), "the consumer did not end at the "
      "producer's EOS");
  /* none reached it (no frame came, no segment was pushed) or one
   * without them */
  fail_unless (flags == -1 || (flags & SEEK_FLAGS) == 0, "flags 0x%x", flags);

  gst_element_set_state (cons, GST_STATE_NULL);
  gst_object_unref (cons);
  pf_producer_close (p);
  pf_producer_unref (p);
}

GST_END_TEST;

/* max-clients=1, one consumer served; a second with
 * on-disconnect=reconnect is refused: it warns (RESOURCE BUSY, "retrying")
 * instead of erroring out, and once the first leaves it is served. */
GST_START_TEST (test_refused_reconnect)
{
  ShmChild *p, *c1, *c2;
  gchar *code;

  p = shm_spawn_producer (-1, TRUE, 1, "max-clients=1", NULL, NULL);
  c1 = shm_spawn_consumer (NULL, 0, NULL);
  fail_unless (shm_child_wait_line (c1, "FRAME 3 "), "%s", shm_said (c1));
  c2 = shm_spawn_consumer ("on-disconnect=reconnect", 0, NULL);
  fail_unless (shm_child_wait_line (c2, "WARNING src=src"), "%s",
      shm_said (c2));
  code = g_strdup_printf ("code=%d ", GST_RESOURCE_ERROR_BUSY);
  fail_unless (shm_count_lines (c2, "WARNING src=src", code) == 1, "%s",
      shm_said (c2));
  fail_unless (shm_count_lines (c2, "WARNING src=src",
          "refused this consumer") == 1, "%s", shm_said (c2));
  fail_unless (shm_count_lines (c2, "WARNING src=src", "retrying") == 1,
      "%s", shm_said (c2));
  /* the producer refused it at least once */
  fail_unless (shm_child_wait_line (p, "ELEMENT src=sink "
          "pinnedshmsink-client-refused"), "%s", shm_said (p));
  /* the first one leaves: the second one gets frames */
  shm_child_kill (c1, SIGKILL);
  fail_unless (shm_child_wait_line (c2, "FRAME 3 "), "%s", shm_said (c2));
  fail_unless_equals_int (shm_count_lines (c2, "ERROR", NULL), 0);
  g_free (code);
}

GST_END_TEST;

static Suite *
order_suite (void)
{
  Suite *s = suite_create ("pinnedshm-order");
  TCase *tc = tcase_create ("order");

  tcase_set_timeout (tc, 180);
  tcase_add_checked_fixture (tc, shm_setup, shm_teardown);
  tcase_add_loop_test (tc, test_consumer_first, 0, G_N_ELEMENTS (first_props));
  tcase_add_test (tc, test_min_clients);
  tcase_add_test (tc, test_segment_flag_sink);
  tcase_add_test (tc, test_segment_flag_wire);
  tcase_add_test (tc, test_refused_reconnect);
  suite_add_tcase (s, tc);
  return s;
}

GST_CHECK_MAIN (order);
