/* pinnedshmsrc's limits: the producer's HELLO deadline and the budget of
 * shared memory it accepts (issue 8).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The rules (docs/elements.md, pinnedshmsrc):
 * - a peer that accepts the connection and never says HELLO ends the wait
 *   by connect-timeout with GST_RESOURCE_ERROR_READ "... accepted the
 *   connection but sent no HELLO", told apart from nobody listening
 *   (GST_RESOURCE_ERROR_OPEN_READ "No producer on ..."); texts valid UTF-8;
 * - a segment past max-mapped-bytes / max-mapped-segments is refused
 *   before it is mapped, with GST_RESOURCE_ERROR_NO_SPACE_LEFT naming the
 *   bytes and the budget, and costs this process no memory; a producer
 *   within the budget streams as before.
 * Durations are checked against the deadline with a generous margin (2 s).
 */
#include <gst/check/gstcheck.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <pinnedflow/pf-consumer.h>
#include <pinnedflow/pf-protocol-private.h>
#include "shm-common.h"
#include "shm-proc.h"

#define MARGIN_MS 2000

/* A field of /proc/self/status in KiB (VmRSS, RssShmem). */
static gint64
status_kib (const gchar * field)
{
  gchar *text = NULL, *p, *key = g_strdup_printf ("\n%s:", field);
  gint64 v = -1;

  fail_unless (g_file_get_contents ("/proc/self/status", &text, NULL, NULL));
  if ((p = strstr (text, key)) != NULL)
    v = g_ascii_strtoll (p + strlen (key), NULL, 10);
  g_free (key);
  g_free (text);
  fail_unless (v >= 0, "no %s in /proc/self/status", field);
  return v;
}

static int
listener (void)
{
  struct sockaddr_un addr = { 0, };
  int lfd = socket (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

  fail_unless (lfd >= 0);
  addr.sun_family = AF_UNIX;
  g_strlcpy (addr.sun_path, shm_sock, sizeof (addr.sun_path));
  fail_unless (bind (lfd, (struct sockaddr *) &addr, sizeof (addr)) == 0);
  fail_unless (listen (lfd, 8) == 0);
  return lfd;
}

typedef struct
{
  GQuark domain;
  gint code;
  gchar *message;
  gchar *debug;
  gint64 elapsed_ms;            /* from PLAYING to the error */
} BusError;

static void
bus_error_clear (BusError * e)
{
  g_free (e->message);
  g_free (e->debug);
}

/* Runs "pinnedshmsrc @props ! fakesink" until its first error (fails the
 * test after 30 s without one). While it runs, @during (if set) is called
 * once with @data. */
static void
run_until_error (const gchar * props, void (*during) (gpointer),
    gpointer data, BusError * out)
{
  /* an explicit delivery: no connection going to PAUSED (pinnedshmsrc
   * asks a producer whether it is live only with delivery=auto), so the
   * fake producers here see the one connection they expect */
  gchar *desc = g_strdup_printf ("pinnedshmsrc socket-path=%s %s "
      "delivery=newest-frame ! fakesink", shm_sock, props);
  GstElement *pipeline = gst_parse_launch (desc, NULL);
  GstBus *bus;
  GstMessage *msg;
  GError *err = NULL;
  gint64 t0;

  fail_unless (pipeline != NULL);
  bus = gst_element_get_bus (pipeline);
  t0 = g_get_monotonic_time ();
  fail_if (gst_element_set_state (pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  if (during)
    during (data);
  msg = gst_bus_timed_pop_filtered (bus, 30 * GST_SECOND, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "no error within 30 s (%s)", desc);
  out->elapsed_ms = (g_get_monotonic_time () - t0) / 1000;
  gst_message_parse_error (msg, &err, &out->debug);
  out->domain = err->domain;
  out->code = err->code;
  out->message = g_strdup (err->message);
  GST_INFO ("%s: %s (%s) after %" G_GINT64_FORMAT " ms", props, out->message,
      out->debug, out->elapsed_ms);
  fail_unless (g_utf8_validate (out->message, -1, NULL));
  fail_unless (out->debug && g_utf8_validate (out->debug, -1, NULL));
  g_error_free (err);
  gst_message_unref (msg);
  fail_unless_equals_int (gst_element_set_state (pipeline, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
  g_free (desc);
}

/* ------------------------------------------------------------------------ */

/* The reproduction, in process: the peer accepts (the kernel queues
 * the connection) and never speaks. */
GST_START_TEST (test_silent_producer)
{
  int lfd = listener ();
  BusError e = { 0, };

  run_until_error ("connect-timeout=300", NULL, NULL, &e);
  fail_unless_equals_int (e.domain, GST_RESOURCE_ERROR);
  fail_unless_equals_int (e.code, GST_RESOURCE_ERROR_READ);
  fail_unless (strstr (e.message, "accepted the connection but sent no "
          "HELLO") != NULL, "%s", e.message);
  fail_unless (strstr (e.message, shm_sock) != NULL, "%s", e.message);
  fail_unless (strstr (e.debug, "sent no HELLO within") != NULL, "%s", e.debug);
  fail_unless (strstr (e.debug, "connect-timeout 300 ms") != NULL, "%s",
      e.debug);
  fail_unless (e.elapsed_ms < 300 + MARGIN_MS, "%" G_GINT64_FORMAT " ms",
      e.elapsed_ms);
  bus_error_clear (&e);
  close (lfd);
}

GST_END_TEST;

/* Nobody listening: another code, another headline. */
GST_START_TEST (test_nobody_listening)
{
  BusError e = { 0, };

  run_until_error ("connect-timeout=100", NULL, NULL, &e);
  fail_unless_equals_int (e.domain, GST_RESOURCE_ERROR);
  fail_unless_equals_int (e.code, GST_RESOURCE_ERROR_OPEN_READ);
  fail_unless (strstr (e.message, "No producer on") != NULL, "%s", e.message);
  fail_unless (e.elapsed_ms < 100 + MARGIN_MS);
  bus_error_clear (&e);
}

GST_END_TEST;

/* 50 starts against a silent producer, 150 ms each: the same clean error
 * every time, nothing accumulates (the valgrind setup runs it). */
GST_START_TEST (test_silent_loop)
{
  int lfd = listener (), peer, i;
  struct pollfd pfd = { lfd, POLLIN, 0 };
  guint fds0 = 0;

  for (i = 0; i < 50; i++) {
    BusError e = { 0, };

    run_until_error ("connect-timeout=150", NULL, NULL, &e);
    fail_unless_equals_int (e.code, GST_RESOURCE_ERROR_READ);
    fail_unless (strstr (e.debug, "sent no HELLO within") != NULL, "%s",
        e.debug);
    fail_unless (e.elapsed_ms < 150 + MARGIN_MS);
    bus_error_clear (&e);
    /* empty the backlog, as a producer that accepts would */
    while (poll (&pfd, 1, 0) == 1) {
      peer = accept4 (lfd, NULL, NULL, SOCK_CLOEXEC);
      fail_unless (peer >= 0);
      close (peer);
    }
    if (i == 0)
      fds0 = shm_count_fds ();  /* after GStreamer opened what it keeps */
  }
  fail_unless_equals_int (shm_count_fds (), fds0);
  close (lfd);
}

GST_END_TEST;

typedef struct
{
  int lfd;
  int peer;                     /* the accepted connection, kept open */
} RawProducer;

/* A raw producer announcing one sparse 1 GiB sealed memfd. */
static void
announce_1gib (gpointer data)
{
  RawProducer *rp = data;
  int peer, mfd;
  guint8 buf[PF_MAX_MSG_SIZE];
  struct pollfd pfd;
  struct iovec iov;
  struct msghdr mh = { 0, };
  union
  {
    char b[CMSG_SPACE (sizeof (int))];
    struct cmsghdr align;
  } ctl;
  struct cmsghdr *cmsg;
  size_t len;

  peer = rp->peer = accept4 (rp->lfd, NULL, NULL, SOCK_CLOEXEC);
  fail_unless (peer >= 0);
  pfd.fd = peer;
  pfd.events = POLLIN;
  fail_unless (poll (&pfd, 1, 30000) == 1);
  fail_unless_equals_int (recv (peer, buf, sizeof (buf), 0),
      sizeof (struct pf_msg_hello));
  len = pf_msg_write_hello (buf, PF_ROLE_PRODUCER, 4, 1);
  fail_unless (send (peer, buf, len, MSG_NOSIGNAL) == (gssize) len);

  mfd = memfd_create ("sparse", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  fail_unless (mfd >= 0);
  fail_unless (ftruncate (mfd, G_GINT64_CONSTANT (1) << 30) == 0);
  fail_unless (fcntl (mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0);
  len = pf_msg_write_segment_add (buf, 1, G_GUINT64_CONSTANT (1) << 30);
  iov.iov_base = buf;
  iov.iov_len = len;
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  memset (&ctl, 0, sizeof (ctl));
  mh.msg_control = ctl.b;
  mh.msg_controllen = sizeof (ctl.b);
  cmsg = CMSG_FIRSTHDR (&mh);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN (sizeof (int));
  memcpy (CMSG_DATA (cmsg), &mfd, sizeof (int));
  fail_unless (sendmsg (peer, &mh, MSG_NOSIGNAL) == (gssize) len);
  close (mfd);
}

GST_START_TEST (test_oversize_segment)
{
  RawProducer rp = { listener (), -1 };
  gint64 rss0, shm0;
  BusError e = { 0, };
  guint8 buf[64];

  rss0 = status_kib ("VmRSS");
  shm0 = status_kib ("RssShmem");
  run_until_error ("connect-timeout=-1", announce_1gib, &rp, &e);
  fail_unless_equals_int (e.domain, GST_RESOURCE_ERROR);
  fail_unless_equals_int (e.code, GST_RESOURCE_ERROR_NO_SPACE_LEFT);
  fail_unless (strstr (e.debug, "1073741824 bytes") != NULL, "%s", e.debug);
  fail_unless (strstr (e.debug, "budget of 805306368 bytes") != NULL, "%s",
      e.debug);
  /* nothing of it was mapped (16 MiB of slack for GStreamer itself) */
  fail_unless (status_kib ("VmRSS") - rss0 < 16 * 1024);
  fail_unless (status_kib ("RssShmem") - shm0 < 16 * 1024);
  bus_error_clear (&e);
  /* and the source hung up (the fd it got was closed with it) */
  fail_unless (recv (rp.peer, buf, sizeof (buf), 0) == 0);
  close (rp.peer);
  close (rp.lfd);
}

GST_END_TEST;

static void
spawn_producer (void)
{
  shm_child_spawn ("produce", shm_sock, "--frames", "-1", "--live", "--caps",
      "video/x-raw,format=RGBA,width=320,height=240,framerate=100/1", NULL);
}

/* A real pinnedshmsink: refused under a budget smaller than its pool,
 * streaming within one. */
GST_START_TEST (test_real_producer_budget)
{
  ShmConsumer *c;
  const ShmResult *r;

  spawn_producer ();

  c = shm_consumer_new (shm_sock, "connect-timeout=-1 max-mapped-bytes=65536",
      FALSE, FALSE);
  fail_unless (shm_consumer_start (c));
  shm_consumer_run (c, 0, 30000, 0);
  r = shm_consumer_result (c);
  fail_unless (r->error);
  fail_unless (strstr (r->error_text, "exceeds the budget") != NULL, "%s",
      r->error_text);
  fail_unless (strstr (r->error_text, "budget of 65536 bytes") != NULL, "%s",
      r->error_text);
  fail_unless_equals_int (r->frames, 0);
  shm_consumer_free (c);

  c = shm_consumer_new (shm_sock, "connect-timeout=-1 max-mapped-segments=1",
      FALSE, FALSE);
  fail_unless (shm_consumer_start (c));
  fail_unless_equals_int (shm_consumer_run (c, 20, 30000, 0), 20);
  r = shm_consumer_result (c);
  fail_if (r->error, "%s", r->error_text);
  fail_unless_equals_int (r->bad, 0);
  shm_consumer_free (c);

  c = shm_consumer_new (shm_sock, "connect-timeout=-1 lock-segments=true",
      FALSE, FALSE);
  fail_unless (shm_consumer_start (c));
  fail_unless_equals_int (shm_consumer_run (c, 20, 30000, 0), 20);
  fail_if (shm_consumer_result (c)->error);
  shm_consumer_free (c);
}

GST_END_TEST;

GST_START_TEST (test_properties)
{
  GstElement *src = gst_element_factory_make ("pinnedshmsrc", NULL);
  guint64 bytes;
  guint segs;
  gboolean lock;

  g_object_get (src, "max-mapped-bytes", &bytes, "max-mapped-segments", &segs,
      "lock-segments", &lock, NULL);
  fail_unless_equals_uint64 (bytes, PF_CONSUMER_DEFAULT_MAX_BYTES);
  fail_unless_equals_int (segs, PF_CONSUMER_DEFAULT_MAX_SEGMENTS);
  fail_if (lock);
  /* the default refuses 1 GiB and fits a 4K RGBA pool of 16 frames */
  fail_unless (bytes < (G_GUINT64_CONSTANT (1) << 30));
  fail_unless (bytes >= G_GUINT64_CONSTANT (3840) * 2160 * 4 * 16);
  gst_object_unref (src);
}

GST_END_TEST;

static Suite *
shm_limits_suite (void)
{
  Suite *s = suite_create ("pinnedshm-limits");
  TCase *tc = tcase_create ("limits");

  tcase_add_checked_fixture (tc, shm_setup, shm_teardown);
  tcase_set_timeout (tc, 120);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_properties);
  tcase_add_test (tc, test_silent_producer);
  tcase_add_test (tc, test_nobody_listening);
  tcase_add_test (tc, test_silent_loop);
  tcase_add_test (tc, test_oversize_segment);
  tcase_add_test (tc, test_real_producer_budget);
  return s;
}

GST_CHECK_MAIN (shm_limits);
