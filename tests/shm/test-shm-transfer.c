/* pinnedshmsink -> pinnedshmsrc across processes: frames intact, zero-copy
 * and copy paths, caps changes, EOS, timestamps, several clients, a slow
 * client.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <gst/check/gstcheck.h>

#include <stdlib.h>

#include "shm-common.h"
#include "shm-proc.h"

/* A producer child, an in-process consumer that verifies every frame until
 * EOS; returns the consumer's result (to free) and reaps the producer. */
static ShmResult
run_pair (ShmChild * producer, const gchar * src_props, gboolean sync,
    gboolean check_ts)
{
  ShmConsumer *c = shm_consumer_new (shm_sock, src_props, sync, check_ts);
  ShmResult r;
  gchar *line;

  fail_unless (shm_consumer_start (c));
  shm_consumer_run (c, 0, 60000, 0);
  r = *shm_consumer_result (c);
  r.error_text = g_strdup (r.error_text);
  line = shm_result_to_string (&r);
  GST_INFO ("%s", line);
  g_free (line);
  shm_consumer_free (c);
  fail_unless_equals_int (shm_child_wait (producer), 0);
  GST_INFO ("producer: %s", producer->out->str);
  return r;
}

static void
check_intact (const ShmResult * r, guint n)
{
  fail_if (r->error, "consumer error: %s", r->error_text);
  fail_unless (r->eos, "no EOS reached the consumer");
  fail_unless_equals_int (r->frames, n);
  fail_unless_equals_int (r->bad, 0);
  fail_unless_equals_int (r->wrong_size, 0);
  fail_unless_equals_int (r->out_of_order, 0);
  fail_unless_equals_int (r->gaps, 0);
  /* every buffer is a read-only slice of a shared segment */
  fail_unless_equals_int (r->pinned, n);
}

static const gchar *zero_copy_caps[] = {
  "video/x-raw,format=RGBA,width=640,height=480,framerate=30/1",
  "video/x-raw,format=I420,width=320,height=240,framerate=30/1",
  "video/x-raw,format=RGB,width=33,height=17,framerate=30/1",
  "video/x-raw,format=NV12,width=1920,height=1080,framerate=30/1",
};

GST_START_TEST (test_zero_copy_formats)
{
  const gchar *caps = zero_copy_caps[__i__];
  const guint n = 12;
  gchar *nstr = g_strdup_printf ("%u", n);
  ShmChild *p;
  ShmResult r;

  /* max-client-buffers = pool-size: the pool applies back-pressure, no
   * frame is ever skipped */
  p = shm_child_spawn ("produce", shm_sock, "--caps", caps, "--frames", nstr,
      "--wait", "--pool-size", "8", "--max-client-buffers", "8", NULL);
  r = run_pair (p, "connect-timeout=-1", FALSE, FALSE);
  check_intact (&r, n);
  fail_unless_equals_int (shm_child_get (p, "STATS", "zero_copy"), n);
  fail_unless_equals_int (shm_child_get (p, "STATS", "copies"), 0);
  fail_unless_equals_int (shm_child_get (p, "STATS", "frames"), n);
  /* buffer offsets, durations and the video layout crossed too */
  fail_unless_equals_int (r.offset_ok, n);
  fail_unless_equals_int (r.duration_ok, n);
  fail_unless_equals_int (r.vmeta_ok, n);
  fail_unless_equals_int (r.planes_ok, n);
  g_free (r.error_text);
  g_free (nstr);
}

GST_END_TEST;

/* busy-poll-us on: the source spins on the socket between frames (up to
 * 2 ms, or the whole gap: 1 s) and still takes every frame, intact, in
 * order, then EOS */
static const gchar *busy_poll_props[] = {
  "connect-timeout=-1 busy-poll-us=2000",
  "connect-timeout=-1 busy-poll-us=1000000",
};

GST_START_TEST (test_busy_poll)
{
  const guint n = 30;
  gchar *nstr = g_strdup_printf ("%u", n);
  ShmChild *p;
  ShmResult r;

  p = shm_child_spawn ("produce", shm_sock, "--caps", zero_copy_caps[0],
      "--frames", nstr, "--wait", "--pool-size", "8",
      "--max-client-buffers", "8", NULL);
  r = run_pair (p, busy_poll_props[__i__], FALSE, FALSE);
  check_intact (&r, n);
  fail_unless_equals_int (shm_child_get (p, "STATS", "zero_copy"), n);
  fail_unless_equals_int (r.vmeta_ok, n);
  g_free (r.error_text);
  g_free (nstr);
}

GST_END_TEST;

typedef struct
{
  const gchar *caps;
  gboolean multi;
} CopyCase;

static const CopyCase copy_cases[] = {
  {"video/x-raw,format=RGBA,width=320,height=240,framerate=100/1", FALSE},
  {"video/x-raw,format=I420,width=352,height=288,framerate=100/1", TRUE},
  {"application/octet-stream", FALSE},
  {"application/octet-stream", TRUE},
};

GST_START_TEST (test_copy_path)
{
  const CopyCase *cc = &copy_cases[__i__];
  const guint n = 40;
  ShmChild *p;
  ShmResult r;

  /* foreign memory (system memory, possibly several chunks): copied once
   * into the sink's pinned pool. The producer is paced (sync) and the
   * limits generous so that no frame is skipped. */
  if (cc->multi)
    p = shm_child_spawn ("produce", shm_sock, "--caps", cc->caps, "--frames",
        "40", "--copy", "--multi", "--sync", "--wait", "--pool-size", "32",
        "--max-client-buffers", "32", NULL);
  else
    p = shm_child_spawn ("produce", shm_sock, "--caps", cc->caps, "--frames",
        "40", "--copy", "--sync", "--wait", "--pool-size", "32",
        "--max-client-buffers", "32", NULL);
  r = run_pair (p, "connect-timeout=-1", FALSE, FALSE);
  check_intact (&r, n);
  fail_unless_equals_int (shm_child_get (p, "STATS", "copies"), n);
  fail_unless_equals_int (shm_child_get (p, "STATS", "zero_copy"), 0);
  g_free (r.error_text);
}

GST_END_TEST;

typedef struct
{
  const gchar *caps;
  const gchar *chunks;          /* pinned memories per buffer */
  gboolean zero_copy;
} MultiCase;

static const MultiCase multi_cases[] = {
  /* one plane per memory */
  {"video/x-raw,format=I420,width=320,height=240,framerate=30/1", "3", TRUE},
  {"video/x-raw,format=NV12,width=640,height=480,framerate=30/1", "2", TRUE},
  {"video/x-raw,format=Y444,width=64,height=48,framerate=30/1", "3", TRUE},
  /* PF_MAX_CHUNKS memories of any size */
  {"application/octet-stream", "4", TRUE},
  /* one more than a frame message can name: copied once */
  {"application/octet-stream", "5", FALSE},
};

GST_START_TEST (test_multi_memory)
{
  const MultiCase *mc = &multi_cases[__i__];
  gboolean video = g_str_has_prefix (mc->caps, "video/");
  guint chunks = atoi (mc->chunks);
  const guint n = 30;
  ShmChild *p;
  ShmResult r;

  /* every buffer is made of several pinned memories, each a slot of the
   * producer's pool, in reverse slot order: up to 4 of them cross as one
   * frame of several chunks, with no copy */
  if (mc->zero_copy)
    p = shm_child_spawn ("produce", shm_sock, "--caps", mc->caps, "--frames",
        "30", "--pinned-chunks", mc->chunks, "--wait", "--max-client-buffers",
        "8", NULL);
  else
    /* the copy path never waits for its pool: pace the producer, and let
     * the client hold every frame, so that none is skipped */
    p = shm_child_spawn ("produce", shm_sock, "--caps", mc->caps, "--frames",
        "30", "--pinned-chunks", mc->chunks, "--wait", "--sync",
        "--pool-size", "32", "--max-client-buffers", "32", NULL);
  r = run_pair (p, "connect-timeout=-1", FALSE, FALSE);
  check_intact (&r, n);
  fail_unless_equals_int (shm_child_get (p, "STATS", "frames"), n);
  if (mc->zero_copy) {
    fail_unless_equals_int (shm_child_get (p, "STATS", "zero_copy"), n);
    fail_unless_equals_int (shm_child_get (p, "STATS", "copies"), 0);
    /* the consumer's buffers have as many memories as the producer's */
    fail_unless_equals_int (r.max_memories, chunks);
  } else {
    fail_unless_equals_int (shm_child_get (p, "STATS", "zero_copy"), 0);
    fail_unless_equals_int (shm_child_get (p, "STATS", "copies"), n);
    fail_unless_equals_int (r.max_memories, 1);
  }
  fail_unless_equals_int (r.offset_ok, n);
  if (video) {
    /* the video meta's plane offsets, relative to the whole frame, find
     * each plane in its own memory on the consumer side */
    fail_unless_equals_int (r.vmeta_ok, n);
    fail_unless_equals_int (r.planes_ok, n);
    fail_unless_equals_int (r.duration_ok, n);
  }
  g_free (r.error_text);
}

GST_END_TEST;

typedef struct
{
  const gchar *caps;
  const gchar *mode;            /* how the producer fills its buffers */
} RelayCase;

static const RelayCase relay_cases[] = {
  {"video/x-raw,format=RGBA,width=640,height=480,framerate=30/1", "pool"},
  {"video/x-raw,format=I420,width=320,height=240,framerate=30/1", "chunks"},
  {"video/x-raw,format=RGBA,width=320,height=240,framerate=100/1", "copy"},
  {"application/octet-stream", "chunks"},
};

GST_START_TEST (test_relay)
{
  const RelayCase *rc = &relay_cases[__i__];
  gboolean video = g_str_has_prefix (rc->caps, "video/");
  gchar *up = g_build_filename (shm_dir, "up.sock", NULL);
  const guint n = 40;
  ShmConsumer *c;
  ShmChild *p, *relay;
  const ShmResult *r;

  /* producer -> relay (pinnedshmsrc ! pinnedshmsink) -> consumer, three
   * processes. The relay republishes the read-only segments it imported:
   * its clients map the producer's memory, nothing is copied on the way. */
  c = shm_consumer_new (shm_sock, "connect-timeout=-1", FALSE, FALSE);
  fail_unless (shm_consumer_start (c));
  relay = shm_child_spawn ("relay", up, "--out", shm_sock, "--pool-size", "8",
      "--max-client-buffers", "32", NULL);
  if (g_str_equal (rc->mode, "pool"))
    p = shm_child_spawn ("produce", up, "--caps", rc->caps, "--frames", "40",
        "--clients", "1", "--pool-size", "8", "--max-client-buffers", "8",
        NULL);
  else if (g_str_equal (rc->mode, "chunks"))
    p = shm_child_spawn ("produce", up, "--caps", rc->caps, "--frames", "40",
        "--pinned-chunks", video ? "3" : "4", "--clients", "1",
        "--max-client-buffers", "8", NULL);
  else
    p = shm_child_spawn ("produce", up, "--caps", rc->caps, "--frames", "40",
        "--copy", "--sync", "--clients", "1", "--pool-size", "32",
        "--max-client-buffers", "32", NULL);

  shm_consumer_run (c, 0, 60000, 0);
  r = shm_consumer_result (c);
  fail_unless_equals_int (shm_child_wait (p), 0);
  fail_unless_equals_int (shm_child_wait (relay), 0);
  GST_INFO ("producer: %s", p->out->str);
  GST_INFO ("relay: %s", relay->out->str);

  /* every frame, every byte, in order, in read-only pinned memory */
  fail_if (r->error, "consumer error: %s", r->error_text);
  fail_unless (r->eos, "no EOS reached the consumer");
  fail_unless_equals_int (r->frames, n);
  fail_unless_equals_int (r->bad, 0);
  fail_unless_equals_int (r->wrong_size, 0);
  fail_unless_equals_int (r->out_of_order, 0);
  fail_unless_equals_int (r->gaps, 0);
  fail_unless_equals_int (r->pinned, n);
  fail_unless_equals_int (r->offset_ok, n);
  if (video) {
    fail_unless_equals_int (r->vmeta_ok, n);
    fail_unless_equals_int (r->planes_ok, n);
  }
  if (g_str_equal (rc->mode, "chunks"))
    fail_unless_equals_int (r->max_memories, video ? 3 : 4);

  /* the producer copied only in copy mode; the relay never */
  fail_unless_equals_int (shm_child_get (p, "STATS", "copies"),
      g_str_equal (rc->mode, "copy") ? n : 0);
  fail_unless_equals_int (shm_child_get (relay, "STATS", "frames"), n);
  fail_unless_equals_int (shm_child_get (relay, "STATS", "zero_copy"), n);
  fail_unless_equals_int (shm_child_get (relay, "STATS", "copies"), 0);
  fail_unless_equals_int (shm_child_get (relay, "STATS", "drops"), 0);
  fail_unless_equals_int (shm_child_get (relay, "SRCSTATS", "frames"), n);
  fail_unless_equals_int (shm_child_get (relay, "SRCSTATS", "gaps"), 0);
  /* the relay's source took no pool (its sink proposes a pinned one) */
  fail_unless_equals_int (shm_child_get (relay, "SRCSTATS", "pool"), 0);

  shm_consumer_free (c);
  g_free (up);
}

GST_END_TEST;

GST_START_TEST (test_caps_change)
{
  ShmChild *p;
  ShmResult r;

  p = shm_child_spawn ("produce", shm_sock, "--caps",
      "video/x-raw,format=RGBA,width=320,height=240,framerate=30/1",
      "--caps2", "video/x-raw,format=RGBA,width=160,height=120,framerate=30/1",
      "--switch-at", "10", "--frames", "30", "--wait", "--pool-size", "8",
      "--max-client-buffers", "16", NULL);
  /* frames of the old pool can still be held when the new pool fills:
   * max-client-buffers is twice the pool so that nothing is skipped */
  r = run_pair (p, "connect-timeout=-1", FALSE, FALSE);
  /* each frame has the size of the caps it came with (wrong_size == 0) */
  check_intact (&r, 30);
  fail_unless_equals_int (r.caps_changes, 2);
  fail_unless_equals_int (shm_child_get (p, "STATS", "copies"), 0);
  g_free (r.error_text);
}

GST_END_TEST;

/* A live producer, and a non-live one whose consumer started first (so it
 * could not ask: a live source, which keeps a non-live stream's own
 * timestamps, issue 25: checked exactly in test-shm-order.c; here the
 * synced appsink must get every frame, which it would not with a wrong
 * segment base). */
static const gboolean ts_live[] = { FALSE, TRUE };

GST_START_TEST (test_timestamps)
{
  ShmConsumer *c;
  ShmChild *p;
  const ShmResult *r;

  /* The consumer runs first, so the producer's base time is later than
   * ours; a PTS converted wrongly would make the synced appsink wait for
   * ever or fail the exact comparison. A live source (pinnedshmsrc found
   * no producer going to PAUSED) maps the producer's clock time. */
  c = shm_consumer_new (shm_sock, "connect-timeout=-1", TRUE, ts_live[__i__]);
  fail_unless (shm_consumer_start (c));
  p = shm_child_spawn ("produce", shm_sock, "--caps",
      "video/x-raw,format=RGBA,width=320,height=240,framerate=30/1",
      "--frames", "15", "--sync", "--clients", "1",
      /* every frame is asserted: strict lossless delivery from the live
       * source (a consumer more than 100 ms behind on a loaded machine
       * would be demoted and lose one, issue 26) */
      "--sink-props", "live-max-lag=-1", ts_live[__i__] ? "--live" : NULL,
      NULL);
  shm_consumer_run (c, 0, 60000, 0);
  r = shm_consumer_result (c);
  fail_if (r->error, "consumer error: %s", r->error_text);
  fail_unless (r->eos);
  fail_unless_equals_int (r->frames, 15);
  fail_unless_equals_int (r->bad, 0);
  if (!ts_live[__i__])
    goto done;
  /* the preroll frame is stamped before the producer has a base time */
  fail_unless (r->ts_checked >= 14);
  /* PTS + our base time == the producer's running time + its base time
   * (+ its sink's latency). A live producer's first frame may differ: its
   * sink learns its latency (one frame at 30/s) while that frame waits for
   * its render time, after the stamp was taken. */
  fail_unless (r->ts_bad <= 1, "%u PTS wrong", r->ts_bad);
done:
  shm_consumer_free (c);
  fail_unless_equals_int (shm_child_wait (p), 0);
}

GST_END_TEST;

GST_START_TEST (test_many_clients)
{
  ShmChild *p, *c[3];
  guint i;

  p = shm_child_spawn ("produce", shm_sock, "--frames", "60", "--clients", "3",
      "--pool-size", "16", "--max-client-buffers", "16", NULL);
  for (i = 0; i < 3; i++)
    c[i] = shm_child_spawn ("consume", shm_sock, NULL);

  fail_unless_equals_int (shm_child_wait (p), 0);
  fail_unless_equals_int (shm_child_get (p, "STATS", "zero_copy"), 60);
  for (i = 0; i < 3; i++) {
    fail_unless_equals_int (shm_child_wait (c[i]), 0);
    GST_INFO ("consumer %u: %s", i, c[i]->out->str);
    fail_unless_equals_int (shm_child_get (c[i], "RESULT", "frames"), 60);
    fail_unless_equals_int (shm_child_get (c[i], "RESULT", "bad"), 0);
    fail_unless_equals_int (shm_child_get (c[i], "RESULT", "gaps"), 0);
    fail_unless_equals_int (shm_child_get (c[i], "RESULT", "pinned"), 60);
    fail_unless_equals_int (shm_child_get (c[i], "RESULT", "eos"), 1);
  }
}

GST_END_TEST;

GST_START_TEST (test_slow_client)
{
  ShmChild *p, *slow, *c[2];
  guint i, n_slow = 0;

  /* max-client-buffers=2, pool of 8: the slow client keeps 2 pool buffers
   * for ever; the producer must finish and the others keep receiving. */
  p = shm_child_spawn ("produce", shm_sock, "--frames", "100", "--clients", "3",
      "--live", "--caps",
      "video/x-raw,format=RGBA,width=320,height=240,framerate=100/1",
      "--pool-size", "8", "--max-client-buffers", "2", NULL);
  slow = shm_child_spawn ("consume", shm_sock, "--hold", "1000", NULL);
  for (i = 0; i < 2; i++)
    c[i] = shm_child_spawn ("consume", shm_sock, NULL);

  fail_unless_equals_int (shm_child_wait (p), 0);
  GST_INFO ("producer: %s", p->out->str);
  fail_unless_equals_int (shm_child_get (p, "STATS", "frames"), 100);

  fail_unless_equals_int (shm_child_wait (slow), 0);
  GST_INFO ("slow: %s", slow->out->str);
  /* it got what it may hold, then EOS */
  fail_unless_equals_int (shm_child_get (slow, "RESULT", "frames"), 2);
  fail_unless_equals_int (shm_child_get (slow, "RESULT", "eos"), 1);
  /* the producer's view: it holds 2 for good, every other frame skipped
   * it. Under load one or two more may have been sent and released unseen
   * (stale, newest-frame delivery: a newer one was queued behind them):
   * sent + dropped == 100, released == sent - 2 (issue 25: "sent=2
   * dropped=98" exactly failed on a loaded machine with sent=3
   * released=1 dropped=97). */
  for (i = 0; i < 3; i++) {
    gint64 sent = shm_child_get_nth (p, "EOSCLIENT", i, "sent");
    gint64 dropped = shm_child_get_nth (p, "EOSCLIENT", i, "dropped");

    if (shm_child_get_nth (p, "EOSCLIENT", i, "held") == 2
        && sent + dropped == 100 && dropped >= 90
        && shm_child_get_nth (p, "EOSCLIENT", i, "released") == sent - 2)
      n_slow++;
  }
  fail_unless (n_slow == 1, "no slow EOSCLIENT (held 2, the rest "
      "skipped):\n%s", p->out->str);

  for (i = 0; i < 2; i++) {
    gint64 frames;

    fail_unless_equals_int (shm_child_wait (c[i]), 0);
    GST_INFO ("consumer %u: %s", i, c[i]->out->str);
    frames = shm_child_get (c[i], "RESULT", "frames");
    fail_unless_equals_int (shm_child_get (c[i], "RESULT", "bad"), 0);
    fail_unless_equals_int (shm_child_get (c[i], "RESULT", "eos"), 1);
    fail_unless_equals_int (shm_child_get (c[i], "RESULT", "out_of_order"), 0);
    /* Not held back by the slow one: it got more than the 2 frames the
     * slow client could ever have. (How many more depends on how fast this
     * process runs next to a 100 frames/s live producer: a client that falls
     * 2 frames behind is skipped, by design; no count is assumed here.) */
    fail_unless (frames > 2, "only %" G_GINT64_FORMAT " frames", frames);
  }
}

GST_END_TEST;

static Suite *
shm_transfer_suite (void)
{
  Suite *s = suite_create ("pinnedshm-transfer");
  TCase *tc = tcase_create ("general");

  tcase_add_checked_fixture (tc, shm_setup, shm_teardown);
  tcase_set_timeout (tc, 120);
  tcase_add_loop_test (tc, test_zero_copy_formats, 0,
      G_N_ELEMENTS (zero_copy_caps));
  tcase_add_loop_test (tc, test_busy_poll, 0, G_N_ELEMENTS (busy_poll_props));
  tcase_add_loop_test (tc, test_copy_path, 0, G_N_ELEMENTS (copy_cases));
  tcase_add_loop_test (tc, test_multi_memory, 0, G_N_ELEMENTS (multi_cases));
  tcase_add_loop_test (tc, test_relay, 0, G_N_ELEMENTS (relay_cases));
  tcase_add_test (tc, test_caps_change);
  tcase_add_loop_test (tc, test_timestamps, 0, G_N_ELEMENTS (ts_live));
  tcase_add_test (tc, test_many_clients);
  tcase_add_test (tc, test_slow_client);
  suite_add_tcase (s, tc);
  return s;
}

GST_CHECK_MAIN (shm_transfer);
