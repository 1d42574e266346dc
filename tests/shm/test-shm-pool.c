/* pinnedshmsink's pool: limits that bite speak (issue 26, item 4).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The rule (docs/elements.md, pinnedshmsink `pool-size`): the pool gives
 * every consumer max-client-buffers frames plus 2, so that consumers that
 * stop releasing never take the slots the others need; whenever that
 * cannot be honoured the sink says so on the bus at start, with a
 * GST_RESOURCE_ERROR_SETTINGS warning:
 *  - the automatic pool, capped at 256 buffers (max-clients=80 x 4 + 2 =
 *    322 got 256 silently on b0e183f, and 64 stuck consumers took them all);
 *  - an explicit pool-size below it;
 *  - max-clients=0 (no bound on consumers at all).
 * And not when the pool fits (the defaults, max-clients=60: 242 buffers).
 * The pool the sink proposes upstream is checked too (ALLOCATION query).
 */
#include <gst/check/gstcheck.h>

#include <string.h>
#include <unistd.h>

#include "pf-test-util.h"

static gchar tmpdir[256];

/* Starts a pinnedshmsink with @props in a pipeline (READY -> PAUSED runs
 * its start()), then stops it; returns the text of every warning it posted
 * (message and debug, "\n" between), "" when none. *@pool_count: the
 * buffers of the pool it proposes for 64x64 RGBA. */
static gchar *
run_sink (const gchar * props, guint * pool_count)
{
  gchar *desc, *sock = g_build_filename (tmpdir, "sock", NULL);
  GstElement *pipe, *sink;
  GstPad *pad;
  GstBus *bus;
  GstMessage *m;
  GString *out = g_string_new ("");
  GstCaps *caps;
  GstQuery *q;
  GstBufferPool *pool = NULL;
  guint size, min = 0, max = 0;
  GError *err = NULL;

  desc = g_strdup_printf ("pinnedshmsink name=sink socket-path=%s %s", sock,
      props);
  sink = gst_parse_launch (desc, &err);
  fail_unless (sink != NULL, "%s: %s", desc, err ? err->message : "?");
  pipe = gst_pipeline_new (NULL);
  gst_bin_add (GST_BIN (pipe), gst_object_ref (sink));
  bus = gst_element_get_bus (pipe);
  fail_if (gst_element_set_state (pipe, GST_STATE_PAUSED) ==
      GST_STATE_CHANGE_FAILURE);

  caps = gst_caps_from_string ("video/x-raw,format=RGBA,width=64,height=64,"
      "framerate=30/1");
  q = gst_query_new_allocation (caps, TRUE);
  pad = gst_element_get_static_pad (sink, "sink");
  fail_unless (gst_pad_query (pad, q));
  gst_object_unref (pad);
  fail_unless (gst_query_get_n_allocation_pools (q) == 1);
  gst_query_parse_nth_allocation_pool (q, 0, &pool, &size, &min, &max);
  fail_unless_equals_int (min, max);
  *pool_count = max;
  if (pool)
    gst_object_unref (pool);
  gst_query_unref (q);
  gst_caps_unref (caps);

  /* before NULL: a pipeline going to NULL flushes its bus */
  while ((m = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING)) != NULL) {
    GError *w = NULL;
    gchar *dbg = NULL;

    gst_message_parse_warning (m, &w, &dbg);
    fail_unless (w->domain == GST_RESOURCE_ERROR &&
        w->code == GST_RESOURCE_ERROR_SETTINGS, "%s", w->message);
    g_string_append_printf (out, "%s\n%s\n", w->message, dbg);
    g_clear_error (&w);
    g_free (dbg);
    gst_message_unref (m);
  }
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (sink);
  gst_object_unref (pipe);
  g_free (desc);
  g_free (sock);
  return g_string_free (out, FALSE);
}

GST_START_TEST (test_pool_fits)
{
  const gchar *props[] = { "", "max-clients=60", "max-clients=2 "
        "max-client-buffers=8 pool-size=18", "max-clients=1 pool-size=256"
  };
  const guint count[] = { 18, 242, 18, 256 };
  guint i, n;

  for (i = 0; i < G_N_ELEMENTS (props); i++) {
    gchar *w = run_sink (props[i], &n);

    fail_unless (w[0] == '\0', "%s: warned:\n%s", props[i], w);
    fail_unless_equals_int (n, count[i]);
    g_free (w);
  }
}

GST_END_TEST;

GST_START_TEST (test_pool_capped_speaks)
{
  guint n;
  gchar *w = run_sink ("max-clients=80", &n);

  /* capped at 256: posted, with what it needs and how to fit */
  fail_unless_equals_int (n, 256);
  fail_unless (strstr (w, "capped at 256 buffers") != NULL,
      "warnings posted: [%s]", w);
  fail_unless (strstr (w, "= 322") != NULL, "warnings posted: [%s]", w);
  fail_unless (strstr (w, "lower max-clients to 63") != NULL,
      "warnings posted: [%s]", w);
  g_free (w);

  w = run_sink ("max-clients=4 max-client-buffers=100", &n);
  fail_unless_equals_int (n, 256);
  fail_unless (strstr (w, "capped at 256 buffers") != NULL,
      "warnings posted: [%s]", w);
  g_free (w);
}

GST_END_TEST;

GST_START_TEST (test_pool_small_or_unbounded_speaks)
{
  guint n;
  gchar *w = run_sink ("max-clients=4 pool-size=10", &n);

  fail_unless_equals_int (n, 10);
  fail_unless (strstr (w, "pool-size 10 is too small for max-clients 4")
      != NULL, "warnings posted: [%s]", w);
  g_free (w);

  w = run_sink ("max-clients=0", &n);
  fail_unless_equals_int (n, 18);
  fail_unless (strstr (w, "max-clients=0 (no limit)") != NULL,
      "warnings posted: [%s]", w);
  g_free (w);
}

GST_END_TEST;

static void
setup (void)
{
  fail_unless (pf_test_make_tmpdir (tmpdir, sizeof (tmpdir), "pf-pool") == 0);
}

static void
teardown (void)
{
  pf_test_remove_tree (tmpdir);
}

static Suite *
shm_pool_suite (void)
{
  Suite *s = suite_create ("pinnedshm-pool");
  TCase *tc = tcase_create ("general");

  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_pool_fits);
  tcase_add_test (tc, test_pool_capped_speaks);
  tcase_add_test (tc, test_pool_small_or_unbounded_speaks);
  suite_add_tcase (s, tc);
  return s;
}

GST_CHECK_MAIN (shm_pool);
