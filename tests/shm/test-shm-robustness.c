/* pinnedshmsink/pinnedshmsrc when things go wrong: a producer or consumer
 * killed with SIGKILL, a stale socket, no client at all, and a hostile raw
 * peer sending forged fds and malformed messages.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <gst/check/gstcheck.h>
#include <gst/base/gstbasesrc.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <pinnedflow/pf-consumer.h>
#include <pinnedflow/pf-protocol-private.h>
#include "shm-common.h"
#include "shm-proc.h"

static ShmChild *
spawn_live_producer (void)
{
  return shm_child_spawn ("produce", shm_sock, "--frames", "-1", "--live",
      "--caps", "video/x-raw,format=RGBA,width=320,height=240,framerate=100/1",
      NULL);
}

static guint64
src_stat (ShmConsumer * c, const gchar * field)
{
  GstStructure *s;
  guint64 v = 0;

  g_object_get (shm_consumer_get_src (c), "stats", &s, NULL);
  fail_unless (gst_structure_get_uint64 (s, field, &v));
  gst_structure_free (s);
  return v;
}

/* Opens, for good, what GStreamer opens lazily the first time a consumer
 * pipeline runs (registry, clock, bus poll fds), so that fd counts taken
 * after it compare exactly. */
static void
warm_up_fds (void)
{
  gchar *nowhere = g_build_filename (shm_dir, "nobody.sock", NULL);
  ShmConsumer *c = shm_consumer_new (nowhere, "connect-timeout=-1", FALSE,
      FALSE);

  fail_unless (shm_consumer_start (c));
  shm_consumer_run (c, 0, 50, 0);
  shm_consumer_free (c);
  g_free (nowhere);
}

/* ------------------------------------------------------------------------ */
/* SIGKILL of the producer, for each on-disconnect mode */

GST_START_TEST (test_kill_producer_eos)
{
  ShmChild *p;
  ShmConsumer *c;
  const ShmResult *r;
  guint fds;

  warm_up_fds ();
  fds = shm_count_fds ();
  p = spawn_live_producer ();
  c = shm_consumer_new (shm_sock, "connect-timeout=-1 on-disconnect=eos", FALSE,
      FALSE);
  fail_unless (shm_consumer_start (c));
  fail_unless_equals_int (shm_consumer_run (c, 10, 30000, 0), 10);
  shm_child_kill (p, SIGKILL);
  shm_consumer_run (c, 0, 30000, 0);
  r = shm_consumer_result (c);
  fail_if (r->error, "error: %s", r->error_text);
  fail_unless (r->eos);
  fail_unless_equals_int (r->bad, 0);
  shm_consumer_free (c);
  /* the producer's pipe to us, its segments, our socket: all closed */
  shm_proc_cleanup ();
  fail_unless_equals_int (shm_count_fds (), fds);
}

GST_END_TEST;

GST_START_TEST (test_kill_producer_error)
{
  ShmChild *p;
  ShmConsumer *c;
  const ShmResult *r;
  guint fds;

  warm_up_fds ();
  fds = shm_count_fds ();
  p = spawn_live_producer ();
  c = shm_consumer_new (shm_sock, "connect-timeout=-1 on-disconnect=error",
      FALSE, FALSE);
  fail_unless (shm_consumer_start (c));
  fail_unless_equals_int (shm_consumer_run (c, 10, 30000, 0), 10);
  shm_child_kill (p, SIGKILL);
  shm_consumer_run (c, 0, 30000, 0);
  r = shm_consumer_result (c);
  fail_unless (r->error);
  fail_unless (strstr (r->error_text, "vanished without EOS") != NULL, "%s",
      r->error_text);
  fail_unless_equals_int (r->bad, 0);
  shm_consumer_free (c);
  shm_proc_cleanup ();
  fail_unless_equals_int (shm_count_fds (), fds);
}

GST_END_TEST;

GST_START_TEST (test_kill_producer_reconnect)
{
  ShmChild *p;
  ShmConsumer *c;
  const ShmResult *r;
  guint fds;

  warm_up_fds ();
  fds = shm_count_fds ();
  p = spawn_live_producer ();
  c = shm_consumer_new (shm_sock, "connect-timeout=-1 on-disconnect=reconnect",
      FALSE, FALSE);
  fail_unless (shm_consumer_start (c));
  /* keep 3 frames of the first producer across the reconnect */
  fail_unless_equals_int (shm_consumer_run (c, 10, 30000, 3), 10);
  shm_child_kill (p, SIGKILL);
  /* the producer is dead: frames we hold stay mapped and intact */
  fail_unless_equals_int (shm_consumer_verify_held (c), 3);

  /* the killed producer left its socket file behind: the new one must
   * start anyway, and the running consumer pick it up */
  p = spawn_live_producer ();
  shm_consumer_run (c, 10, 30000, 3);
  r = shm_consumer_result (c);
  fail_if (r->error, "error: %s", r->error_text);
  fail_if (r->eos);
  fail_unless_equals_int (r->frames, 20);
  fail_unless_equals_int (src_stat (c, "reconnects"), 1);

  /* frames of the old connection are freed now: their releases must not
   * reach the new producer (it would drop us for releasing what we do not
   * hold, with seq numbers that restart at 1) */
  shm_consumer_drop_held (c);
  fail_unless_equals_int (shm_consumer_run (c, 20, 30000, 0), 20);

  r = shm_consumer_result (c);
  fail_if (r->error, "error: %s", r->error_text);
  fail_if (r->eos);
  fail_unless_equals_int (r->frames, 40);
  fail_unless_equals_int (r->bad, 0);
  /* the restarted producer counts from 0 again: one step back, once */
  fail_unless (r->out_of_order <= 1);
  fail_unless_equals_int (src_stat (c, "reconnects"), 1);
  shm_consumer_free (c);
  shm_child_kill (p, SIGKILL);
  /* both connections and every segment of both producers are gone */
  shm_proc_cleanup ();
  fail_unless_equals_int (shm_count_fds (), fds);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* SIGKILL of a consumer: the producer reclaims its frames */

typedef struct
{
  gint connected, disconnected;
  gint last_pid;
} ClientCounts;

static void
on_connected (GstElement * sink, guint id, gint pid, guint uid,
    ClientCounts * cc)
{
  g_atomic_int_inc (&cc->connected);
}

static void
on_disconnected (GstElement * sink, guint id, gint pid, guint uid,
    ClientCounts * cc)
{
  g_atomic_int_set (&cc->last_pid, pid);
  g_atomic_int_inc (&cc->disconnected);
}

static GstStructure *
sink_stats (GstElement * sink)
{
  GstStructure *s;

  g_object_get (sink, "stats", &s, NULL);
  return s;
}

static guint64
stat_u64 (const GstStructure * s, const gchar * f)
{
  guint64 v = 0;

  fail_unless (gst_structure_get_uint64 (s, f, &v), "no field %s", f);
  return v;
}

/* held of the client with @pid, or -1 */
static gint
client_held (GstElement * sink, gint pid)
{
  GstStructure *s = sink_stats (sink);
  const GValue *a = gst_structure_get_value (s, "clients");
  gint held = -1;
  guint i;

  for (i = 0; i < gst_value_array_get_size (a); i++) {
    const GstStructure *c =
        gst_value_get_structure (gst_value_array_get_value (a, i));
    gint p;
    guint h;

    gst_structure_get (c, "pid", G_TYPE_INT, &p, "held", G_TYPE_UINT, &h, NULL);
    if (p == pid)
      held = h;
  }
  gst_structure_free (s);
  return held;
}

static void
wait_until (gboolean (*cond) (gpointer), gpointer data)
{
  /* not a timing assertion: the suite timeout catches a hang */
  while (!cond (data))
    g_usleep (10000);
}

static gboolean
slow_holds_all (gpointer data)
{
  gpointer *d = data;
  return client_held (d[0], GPOINTER_TO_INT (d[1])) == 8;
}

static gboolean
one_disconnected (gpointer data)
{
  return g_atomic_int_get (&((ClientCounts *) data)->disconnected) >= 1;
}

static gboolean
two_connected (gpointer data)
{
  return g_atomic_int_get (&((ClientCounts *) data)->connected) >= 2;
}

static gboolean
all_disconnected (gpointer data)
{
  return g_atomic_int_get (&((ClientCounts *) data)->disconnected) >= 2;
}

GST_START_TEST (test_kill_consumer_reclaim)
{
  GstElement *pipeline, *sink, *src;
  ShmChild *slow, *healthy;
  ClientCounts cc = { 0, };
  GstStructure *s;
  GstBufferPool *pool;
  GstBuffer *bufs[16];
  gpointer d[2];
  guint64 frames_at_kill;
  guint i;
  gchar *desc;

  desc = g_strdup_printf ("videotestsrc name=src is-live=true pattern=black "
      "! video/x-raw,format=RGBA,width=320,height=240,framerate=30/1 ! "
      "pinnedshmsink name=sink socket-path=%s pool-size=16 "
      "max-client-buffers=8 wait-for-connection=true live-max-lag=-1",
      shm_sock);
  pipeline = gst_parse_launch (desc, NULL);
  g_free (desc);
  fail_unless (pipeline != NULL);
  shm_track_pipeline (pipeline);
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  shm_stamp_sink (sink);
  g_signal_connect (sink, "client-connected", G_CALLBACK (on_connected), &cc);
  g_signal_connect (sink, "client-disconnected",
      G_CALLBACK (on_disconnected), &cc);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);

  /* The slow client keeps every frame it gets: 8 of the 16 pool buffers;
   * the producer still has 8 for the healthy one. */
  slow = shm_child_spawn ("consume", shm_sock, "--hold", "100000", NULL);
  d[0] = sink;
  d[1] = GINT_TO_POINTER (slow->pid);
  wait_until (slow_holds_all, d);
  /* every frame, strictly (live-max-lag=-1 above): what it receives does
   * not depend on how the machine schedules it. As the newest-frame
   * consumer a live stream gives by default, a loaded machine that starved
   * it 266 ms (8 frames) made it skip one, and the gap/frame checks below
   * failed for a reason that is not this test's (issue 25). The stuck one
   * stays newest-frame: it never makes the producer wait. */
  healthy = shm_child_spawn ("consume", shm_sock, "--src-props",
      "connect-timeout=-1 delivery=every-frame", NULL);
  /* connected before the slow one dies: the 30 frames counted below all
   * go to it (a loaded machine started it after them: 20 frames) */
  wait_until (two_connected, &cc);

  shm_child_kill (slow, SIGKILL);
  wait_until (one_disconnected, &cc);
  fail_unless_equals_int (g_atomic_int_get (&cc.last_pid), slow->pid);
  s = sink_stats (sink);
  frames_at_kill = stat_u64 (s, "frames");
  gst_structure_free (s);

  /* run on for a while, then end the stream: the healthy client gets EOS */
  for (;;) {
    s = sink_stats (sink);
    if (stat_u64 (s, "frames") > frames_at_kill + 30) {
      gst_structure_free (s);
      break;
    }
    gst_structure_free (s);
    g_usleep (10000);
  }
  gst_element_send_event (pipeline, gst_event_new_eos ());
  fail_unless_equals_int (shm_child_wait (healthy), 0);
  GST_INFO ("healthy: %s", healthy->out->str);
  fail_unless_equals_int (shm_child_get (healthy, "RESULT", "eos"), 1);
  fail_unless_equals_int (shm_child_get (healthy, "RESULT", "bad"), 0);
  /* it never saw a gap, before or after the other one died */
  fail_unless_equals_int (shm_child_get (healthy, "RESULT", "gaps"), 0);
  fail_unless (shm_child_get (healthy, "RESULT", "frames") > 30);

  wait_until (all_disconnected, &cc);
  fail_unless_equals_int (g_atomic_int_get (&cc.connected), 2);
  s = sink_stats (sink);
  /* every frame ever published came back */
  fail_unless_equals_int (stat_u64 (s, "in-flight"), 0);
  fail_unless_equals_int (stat_u64 (s, "copies"), 0);
  gst_structure_free (s);

  /* and so did every buffer of the pool: all 16 can be taken at once */
  pool = gst_base_src_get_buffer_pool (GST_BASE_SRC (src));
  fail_unless (pool != NULL);
  for (i = 0; i < 16; i++) {
    GstBufferPoolAcquireParams params = { 0, };

    params.flags = GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT;
    fail_unless_equals_int (gst_buffer_pool_acquire_buffer (pool, &bufs[i],
            &params), GST_FLOW_OK);
  }
  for (i = 0; i < 16; i++)
    gst_buffer_unref (bufs[i]);
  gst_object_unref (pool);

  shm_untrack_pipeline (pipeline);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */

static GstElement *
producer_pipeline (const gchar * props, gint num_buffers)
{
  gchar *desc = g_strdup_printf ("videotestsrc num-buffers=%d pattern=black "
      "! video/x-raw,format=RGBA,width=64,height=64 ! "
      "pinnedshmsink name=sink socket-path=%s %s", num_buffers, shm_sock,
      props);
  GstElement *pipeline = gst_parse_launch (desc, NULL);
  GstElement *sink;

  g_free (desc);
  fail_unless (pipeline != NULL);
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  shm_stamp_sink (sink);
  gst_object_unref (sink);
  return pipeline;
}

GST_START_TEST (test_stale_socket)
{
  struct sockaddr_un addr = { 0, };
  struct stat st;
  GstElement *pipeline, *other;
  GstMessage *msg;
  ShmChild *c;
  int fd;

  /* a socket file nobody listens on, as a crashed producer leaves it */
  fd = socket (AF_UNIX, SOCK_SEQPACKET, 0);
  addr.sun_family = AF_UNIX;
  g_strlcpy (addr.sun_path, shm_sock, sizeof (addr.sun_path));
  fail_unless (bind (fd, (struct sockaddr *) &addr, sizeof (addr)) == 0);
  fail_unless (listen (fd, 1) == 0);
  close (fd);
  fail_unless (g_file_test (shm_sock, G_FILE_TEST_EXISTS));

  pipeline = producer_pipeline ("wait-for-connection=true perms=0640", 20);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  /* the new socket has the mode asked for */
  fail_unless (stat (shm_sock, &st) == 0);
  fail_unless (S_ISSOCK (st.st_mode));
  fail_unless_equals_int (st.st_mode & 0777, 0640);

  /* a live producer on the same path is refused */
  other = producer_pipeline ("", 1);
  fail_unless (gst_element_set_state (other, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  gst_element_set_state (other, GST_STATE_NULL);
  gst_object_unref (other);

  c = shm_child_spawn ("consume", shm_sock, NULL);
  fail_unless_equals_int (shm_child_wait (c), 0);
  fail_unless_equals_int (shm_child_get (c, "RESULT", "frames"), 20);
  fail_unless_equals_int (shm_child_get (c, "RESULT", "eos"), 1);

  msg = gst_bus_timed_pop_filtered (GST_ELEMENT_BUS (pipeline),
      GST_CLOCK_TIME_NONE, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless_equals_int (GST_MESSAGE_TYPE (msg), GST_MESSAGE_EOS);
  gst_message_unref (msg);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);
  /* the socket file goes with the producer */
  fail_if (g_file_test (shm_sock, G_FILE_TEST_EXISTS));
}

GST_END_TEST;

GST_START_TEST (test_no_client)
{
  GstElement *pipeline, *sink;
  GstMessage *msg;
  GstStructure *s;

  /* wait-for-connection=false: frames nobody receives are dropped */
  pipeline = producer_pipeline ("", 10);
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  msg = gst_bus_timed_pop_filtered (GST_ELEMENT_BUS (pipeline),
      GST_CLOCK_TIME_NONE, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless_equals_int (GST_MESSAGE_TYPE (msg), GST_MESSAGE_EOS);
  gst_message_unref (msg);
  s = sink_stats (sink);
  fail_unless_equals_int (stat_u64 (s, "frames"), 10);
  fail_unless_equals_int (stat_u64 (s, "drops"), 10);
  fail_unless_equals_int (stat_u64 (s, "in-flight"), 0);
  gst_structure_free (s);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (pipeline);

  /* wait-for-connection=true: render blocks, a state change unblocks it */
  pipeline = producer_pipeline ("wait-for-connection=true", 10);
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  gst_element_get_state (pipeline, NULL, NULL, GST_CLOCK_TIME_NONE);
  g_usleep (100000);
  s = sink_stats (sink);
  fail_unless_equals_int (stat_u64 (s, "frames"), 0);
  gst_structure_free (s);
  fail_unless_equals_int (gst_element_set_state (pipeline, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
}

GST_END_TEST;

GST_START_TEST (test_src_waiting)
{
  ShmConsumer *c;
  const ShmResult *r;

  /* connect-timeout: gives up with an error when nobody comes */
  c = shm_consumer_new (shm_sock, "connect-timeout=200", FALSE, FALSE);
  fail_unless (shm_consumer_start (c));
  shm_consumer_run (c, 0, 30000, 0);
  r = shm_consumer_result (c);
  fail_unless (r->error);
  fail_unless (strstr (r->error_text, "No producer") != NULL, "%s",
      r->error_text);
  shm_consumer_free (c);

  /* connect-timeout=-1: waits, and a state change interrupts the wait */
  c = shm_consumer_new (shm_sock, "connect-timeout=-1", FALSE, FALSE);
  fail_unless (shm_consumer_start (c));
  fail_unless_equals_int (shm_consumer_run (c, 0, 200, 0), 0);
  fail_if (shm_consumer_result (c)->error);
  fail_unless_equals_int (gst_element_set_state (shm_consumer_get_pipeline
          (c), GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  shm_consumer_free (c);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* A hostile producer: raw messages on a socket the src connects to. */

typedef enum
{
  HOSTILE_BAD_HELLO,
  HOSTILE_GARBAGE,
  HOSTILE_PIPE_FD,
  HOSTILE_UNSEALED_MEMFD,
  HOSTILE_SHORT_MEMFD,
  HOSTILE_TWO_FDS,
  HOSTILE_FRAME_OUTSIDE,
  HOSTILE_FRAME_UNKNOWN_SEGMENT,
  HOSTILE_TRUNCATED_FRAME,
  HOSTILE_BAD_CAPS,
  HOSTILE_BAD_VIDEO_META,
  HOSTILE_PLANE_PAST_END,
  HOSTILE_PLANE_ACROSS_CHUNKS,
  N_HOSTILE
} Hostile;

static const gchar *hostile_names[] = {
  "bad-hello", "garbage", "pipe-fd", "unsealed-memfd", "short-memfd",
  "two-fds", "frame-outside", "frame-unknown-segment", "truncated-frame",
  "bad-caps", "bad-video-meta", "plane-past-end", "plane-across-chunks",
};

static void
send_with_fds (int fd, const void *buf, size_t len, const int *fds, int n)
{
  struct iovec iov = { (void *) buf, len };
  struct msghdr msg = { 0, };
  char ctrl[CMSG_SPACE (sizeof (int) * 4)];

  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (n > 0) {
    struct cmsghdr *cmsg;

    memset (ctrl, 0, sizeof (ctrl));
    msg.msg_control = ctrl;
    msg.msg_controllen = CMSG_SPACE (sizeof (int) * n);
    cmsg = CMSG_FIRSTHDR (&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN (sizeof (int) * n);
    memcpy (CMSG_DATA (cmsg), fds, sizeof (int) * n);
  }
  /* the peer may already have hung up: that is fine */
  sendmsg (fd, &msg, MSG_NOSIGNAL);
}

static int
sealed_memfd (gsize size, gboolean seal)
{
  int fd = memfd_create ("hostile", MFD_CLOEXEC | MFD_ALLOW_SEALING);

  fail_unless (fd >= 0);
  fail_unless (ftruncate (fd, size) == 0);
  if (seal)
    fail_unless (fcntl (fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0);
  return fd;
}

static void
send_segment (int peer, guint64 id, guint64 claimed, int fd)
{
  guint8 buf[PF_MAX_MSG_SIZE];
  size_t len = pf_msg_write_segment_add (buf, id, claimed);

  send_with_fds (peer, buf, len, &fd, 1);
}

static void
send_caps (int peer, const gchar * caps)
{
  guint8 buf[PF_MAX_MSG_SIZE];
  size_t len = pf_msg_write_caps (buf, 1, caps);

  send_with_fds (peer, buf, len, NULL, 0);
}

typedef enum
{
  META_NONE,
  META_FAR_OUTSIDE,             /* a plane offset far past the frame */
  META_PAST_END,                /* starts inside, 16 lines of 64 do not fit */
  META_ACROSS_CHUNKS,           /* 2 chunks of size/2, one plane over both */
} BadMeta;

static void
send_frame (int peer, guint64 seg, guint64 offset, guint64 size,
    BadMeta bad_meta, gboolean truncate)
{
  guint8 buf[PF_MAX_MSG_SIZE];
  struct pf_msg_frame f;
  size_t len;

  memset (&f, 0, sizeof (f));
  f.seq = 1;
  f.caps_seq = 1;
  f.n_chunks = 1;
  f.chunks[0].segment_id = seg;
  f.chunks[0].offset = offset;
  f.chunks[0].size = size;
  if (bad_meta == META_ACROSS_CHUNKS) {
    f.n_chunks = 2;
    f.chunks[0].size = size / 2;
    f.chunks[1] = f.chunks[0];
    f.chunks[1].offset = offset + size / 2;
  }
  f.pts = f.dts = f.duration = f.clock_pts = PF_TIME_NONE;
  f.offset = f.offset_end = G_MAXUINT64;
  f.send_time = pf_monotonic_ns ();
  if (bad_meta != META_NONE) {
    f.meta_flags = PF_FRAME_HAS_VIDEO_META;
    f.width = 16;
    f.height = 16;
    f.n_planes = 1;
    f.plane_offset[0] = bad_meta == META_FAR_OUTSIDE ?
        G_GUINT64_CONSTANT (1) << 40 : 0;
    f.plane_stride[0] = bad_meta == META_PAST_END ? 64 : 16;
  }
  len = pf_msg_write_frame (buf, &f);
  send_with_fds (peer, buf, truncate ? len / 2 : len, NULL, 0);
}

static void
run_hostile (Hostile mode, int peer)
{
  guint8 buf[PF_MAX_MSG_SIZE];
  size_t len;
  int fds[2], mfd;

  if (mode == HOSTILE_BAD_HELLO) {
    len = pf_msg_write_hello (buf, PF_ROLE_PRODUCER, 4, 1);
    ((struct pf_msg_hello *) buf)->magic = 0xdeadbeef;
    send_with_fds (peer, buf, len, NULL, 0);
    return;
  }
  len = pf_msg_write_hello (buf, PF_ROLE_PRODUCER, 4, 1);
  send_with_fds (peer, buf, len, NULL, 0);

  switch (mode) {
    case HOSTILE_GARBAGE:
      memset (buf, 0xa5, 100);
      send_with_fds (peer, buf, 100, NULL, 0);
      break;
    case HOSTILE_PIPE_FD:
      fail_unless (pipe (fds) == 0);
      send_segment (peer, 1, 4096, fds[0]);
      close (fds[0]);
      close (fds[1]);
      break;
    case HOSTILE_UNSEALED_MEMFD:
      mfd = sealed_memfd (65536, FALSE);
      send_segment (peer, 1, 65536, mfd);
      close (mfd);
      break;
    case HOSTILE_SHORT_MEMFD:
      mfd = sealed_memfd (4096, TRUE);
      send_segment (peer, 1, 1 << 20, mfd);
      close (mfd);
      break;
    case HOSTILE_TWO_FDS:
      mfd = sealed_memfd (4096, TRUE);
      fds[0] = mfd;
      fds[1] = mfd;
      len = pf_msg_write_segment_add (buf, 1, 4096);
      send_with_fds (peer, buf, len, fds, 2);
      close (mfd);
      break;
    case HOSTILE_FRAME_OUTSIDE:
      mfd = sealed_memfd (4096, TRUE);
      send_segment (peer, 1, 4096, mfd);
      close (mfd);
      send_caps (peer, "application/octet-stream");
      send_frame (peer, 1, 4000, 4096, META_NONE, FALSE);
      break;
    case HOSTILE_FRAME_UNKNOWN_SEGMENT:
      send_caps (peer, "application/octet-stream");
      send_frame (peer, 77, 0, 16, META_NONE, FALSE);
      break;
    case HOSTILE_TRUNCATED_FRAME:
      mfd = sealed_memfd (4096, TRUE);
      send_segment (peer, 1, 4096, mfd);
      close (mfd);
      send_frame (peer, 1, 0, 16, META_NONE, TRUE);
      break;
    case HOSTILE_BAD_CAPS:
      send_caps (peer, "video/x-raw,width=(int)[ 1, 10 ],,,,");
      break;
    case HOSTILE_BAD_VIDEO_META:
    case HOSTILE_PLANE_PAST_END:
    case HOSTILE_PLANE_ACROSS_CHUNKS:
      /* a GRAY8 16x16 frame of 256 bytes, whose video meta would make a
       * GstVideoFrame read outside the memory that holds the plane */
      mfd = sealed_memfd (4096, TRUE);
      send_segment (peer, 1, 4096, mfd);
      close (mfd);
      send_caps (peer, "video/x-raw,format=GRAY8,width=16,height=16,"
          "framerate=30/1");
      send_frame (peer, 1, 0, 256, mode == HOSTILE_BAD_VIDEO_META ?
          META_FAR_OUTSIDE : mode == HOSTILE_PLANE_PAST_END ? META_PAST_END :
          META_ACROSS_CHUNKS, FALSE);
      break;
    default:
      g_assert_not_reached ();
  }
}

static void
hostile_once (Hostile mode)
{
  struct sockaddr_un addr = { 0, };
  struct pollfd pfd;
  ShmConsumer *c;
  const ShmResult *r;
  int lfd, peer;
  guint8 hello[256];

  lfd = socket (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  addr.sun_family = AF_UNIX;
  g_strlcpy (addr.sun_path, shm_sock, sizeof (addr.sun_path));
  unlink (shm_sock);
  fail_unless (bind (lfd, (struct sockaddr *) &addr, sizeof (addr)) == 0);
  fail_unless (listen (lfd, 4) == 0);

  /* delivery explicit: no connection going to PAUSED (auto asks the
   * producer whether it is live), the one accepted here is the source's */
  c = shm_consumer_new (shm_sock, "connect-timeout=-1 on-disconnect=reconnect "
      "delivery=newest-frame", FALSE, FALSE);
  fail_unless (shm_consumer_start (c));
  peer = accept4 (lfd, NULL, NULL, SOCK_CLOEXEC);
  fail_unless (peer >= 0);
  /* the consumer's HELLO */
  pfd.fd = peer;
  pfd.events = POLLIN;
  fail_unless (poll (&pfd, 1, 30000) == 1);
  fail_unless (recv (peer, hello, sizeof (hello), 0) > 0);

  run_hostile (mode, peer);

  /* an error, even in reconnect mode: a protocol violation is not a
   * disconnection */
  shm_consumer_run (c, 0, 30000, 0);
  r = shm_consumer_result (c);
  fail_unless (r->error, "%s: no error posted (eos %d, frames %u)",
      hostile_names[mode], r->eos, r->frames);
  GST_INFO ("%s: %s", hostile_names[mode], r->error_text);
  fail_unless_equals_int (r->frames, 0);
  shm_consumer_free (c);
  close (peer);
  close (lfd);
  unlink (shm_sock);
}

/* the source waits in poll (), or spins first (busy-poll-us) */
static const gchar *unlock_connected_props[] = {
  "connect-timeout=-1 delivery=newest-frame",
  "connect-timeout=-1 busy-poll-us=1000000 delivery=newest-frame",
};

GST_START_TEST (test_src_unlock_connected)
{
  struct sockaddr_un addr = { 0, };
  struct pollfd pfd;
  guint8 buf[PF_MAX_MSG_SIZE];
  ShmConsumer *c;
  int lfd, peer;
  size_t len;

  /* a producer that says hello and then nothing: the source waits on the
   * socket; going to NULL must interrupt that wait */
  lfd = socket (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  addr.sun_family = AF_UNIX;
  g_strlcpy (addr.sun_path, shm_sock, sizeof (addr.sun_path));
  fail_unless (bind (lfd, (struct sockaddr *) &addr, sizeof (addr)) == 0);
  fail_unless (listen (lfd, 4) == 0);
  c = shm_consumer_new (shm_sock, unlock_connected_props[__i__], FALSE, FALSE);
  fail_unless (shm_consumer_start (c));
  peer = accept4 (lfd, NULL, NULL, SOCK_CLOEXEC);
  fail_unless (peer >= 0);
  pfd.fd = peer;
  pfd.events = POLLIN;
  fail_unless (poll (&pfd, 1, 30000) == 1);
  fail_unless (recv (peer, buf, sizeof (buf), 0) > 0);
  len = pf_msg_write_hello (buf, PF_ROLE_PRODUCER, 4, 1);
  send_with_fds (peer, buf, len, NULL, 0);

  fail_unless_equals_int (shm_consumer_run (c, 0, 200, 0), 0);
  fail_if (shm_consumer_result (c)->error);
  fail_unless_equals_int (gst_element_set_state (shm_consumer_get_pipeline
          (c), GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  shm_consumer_free (c);
  close (peer);
  close (lfd);
}

GST_END_TEST;

/* A listening socket at @shm_sock that nobody serves: it accepts (the kernel
 * completes connections into the backlog) but never says HELLO. */
static int
silent_listener (void)
{
  struct sockaddr_un addr = { 0, };
  int lfd;

  lfd = socket (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  fail_unless (lfd >= 0);
  addr.sun_family = AF_UNIX;
  g_strlcpy (addr.sun_path, shm_sock, sizeof (addr.sun_path));
  fail_unless (bind (lfd, (struct sockaddr *) &addr, sizeof (addr)) == 0);
  fail_unless (listen (lfd, 4) == 0);
  return lfd;
}

/* Accepts the next connection and reads the consumer's HELLO from it: the
 * consumer is then waiting for ours. */
static int
accept_hello (int lfd)
{
  guint8 buf[PF_MAX_MSG_SIZE];
  struct pollfd pfd;
  int peer;

  peer = accept4 (lfd, NULL, NULL, SOCK_CLOEXEC);
  fail_unless (peer >= 0);
  pfd.fd = peer;
  pfd.events = POLLIN;
  fail_unless (poll (&pfd, 1, -1) == 1);
  fail_unless_equals_int (recv (peer, buf, sizeof (buf), 0),
      sizeof (struct pf_msg_hello));
  return peer;
}

/* TRUE when the other end of @peer is closed (end of file, nothing
 * pending): the consumer did not leave its socket open. */
static gboolean
peer_closed (int peer)
{
  guint8 buf[PF_MAX_MSG_SIZE];
  struct pollfd pfd = { peer, POLLIN, 0 };

  fail_unless (poll (&pfd, 1, -1) == 1);
  return recv (peer, buf, sizeof (buf), MSG_DONTWAIT) == 0;
}

/* A fake producer's sending thread: frames of one 4096-byte segment, one
 * a millisecond, sequence numbers increasing, until told to stop; it never
 * reads what the consumer sends (its RELEASEs). */
typedef struct
{
  int peer;
  gint stop;
} DeafProducer;

static gpointer
deaf_producer (gpointer data)
{
  DeafProducer *dp = data;
  guint8 buf[PF_MAX_MSG_SIZE];
  struct pf_msg_frame f;
  guint64 seq = 1;
  size_t len;

  while (!g_atomic_int_get (&dp->stop)) {
    memset (&f, 0, sizeof (f));
    f.seq = seq;
    f.caps_seq = 1;
    f.n_chunks = 1;
    f.chunks[0].segment_id = 1;
    f.chunks[0].size = 256;
    f.pts = f.dts = f.duration = f.clock_pts = PF_TIME_NONE;
    f.offset = f.offset_end = G_MAXUINT64;
    f.send_time = pf_monotonic_ns ();
    len = pf_msg_write_frame (buf, &f);
    if (send (dp->peer, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT) == (gssize) len)
      seq++;
    else if (errno != EAGAIN)
      break;
    g_usleep (1000);
  }
  return NULL;
}

/* A producer that stops reading the consumer's RELEASEs (it only sends):
 * once a release could not be sent for 5 s the source posts
 * GST_RESOURCE_ERROR_WRITE "The producer stopped reading this consumer's
 * releases", not EOS (issue 10; it used to end with EOS). */
GST_START_TEST (test_producer_stops_reading)
{
  guint8 buf[PF_MAX_MSG_SIZE];
  DeafProducer dp = { -1, 0 };
  ShmConsumer *c;
  const ShmResult *r;
  GThread *t;
  size_t len;
  int lfd, mfd;

  lfd = silent_listener ();
  /* an explicit delivery: no connection going to PAUSED */
  c = shm_consumer_new (shm_sock, "connect-timeout=-1 delivery=every-frame",
      FALSE, FALSE);
  fail_unless (shm_consumer_start (c));
  dp.peer = accept_hello (lfd);
  /* a limit the fake never reaches: it cannot count what the consumer
   * holds, since it reads no RELEASE */
  len = pf_msg_write_hello (buf, PF_ROLE_PRODUCER, 1 << 20, 1);
  send_with_fds (dp.peer, buf, len, NULL, 0);
  mfd = sealed_memfd (4096, TRUE);
  send_segment (dp.peer, 1, 4096, mfd);
  close (mfd);
  send_caps (dp.peer, "application/octet-stream");
  t = g_thread_new ("deaf", deaf_producer, &dp);

  shm_consumer_run (c, 0, 30000, 0);
  g_atomic_int_set (&dp.stop, 1);
  g_thread_join (t);
  r = shm_consumer_result (c);
  /* an error (GstBaseSrc also sends EOS downstream after one: appsink's
   * EOS says nothing here) */
  fail_unless (r->error, "no error (eos %d, frames %u)", r->eos, r->frames);
  fail_unless (strstr (r->error_text, "stopped reading") != NULL, "%s",
      r->error_text);
  shm_consumer_free (c);
  close (dp.peer);
  close (lfd);
}

GST_END_TEST;

typedef struct
{
  const gchar *path;
  gint cancel_fd;
  gint res;
  pf_consumer *c;
} ConnectCall;

static gpointer
connect_thread (gpointer data)
{
  ConnectCall *call = data;

  /* -1: no timeout of its own; only the cancel fd can end the wait */
  call->res = pf_consumer_connect_cancellable (call->path, -1,
      call->cancel_fd, &call->c);
  return NULL;
}

static void
cancel (int efd)
{
  guint64 one = 1;

  fail_unless (write (efd, &one, sizeof (one)) == sizeof (one));
}

GST_START_TEST (test_connect_cancellable)
{
  ConnectCall call = { 0, };
  GThread *t;
  guint before;
  int efd, lfd, peer;

  efd = eventfd (0, EFD_CLOEXEC);
  fail_unless (efd >= 0);
  call.path = shm_sock;
  call.cancel_fd = efd;

  /* nobody at the path, waiting for ever: the cancel fd ends the retries */
  before = shm_count_fds ();
  t = g_thread_new ("connect", connect_thread, &call);
  cancel (efd);
  g_thread_join (t);
  fail_unless_equals_int (call.res, -ECANCELED);
  fail_unless (call.c == NULL);
  fail_unless_equals_int (shm_count_fds (), before);

  /* cancelled before the call: nothing is even attempted (the listener's
   * backlog stays empty) */
  lfd = silent_listener ();
  call.res = 0;
  connect_thread (&call);
  fail_unless_equals_int (call.res, -ECANCELED);
  {
    struct pollfd pfd = { lfd, POLLIN, 0 };

    fail_unless_equals_int (poll (&pfd, 1, 0), 0);
  }
  {
    guint64 v;

    fail_unless (read (efd, &v, sizeof (v)) == sizeof (v));
  }

  /* a peer that accepts and never says HELLO: waiting for the HELLO (for
   * ever, timeout -1) is what gets cancelled, and the socket is closed */
  before = shm_count_fds ();
  call.res = 0;
  t = g_thread_new ("connect", connect_thread, &call);
  peer = accept_hello (lfd);
  cancel (efd);
  g_thread_join (t);
  fail_unless_equals_int (call.res, -ECANCELED);
  fail_unless (call.c == NULL);
  fail_unless (peer_closed (peer));
  close (peer);
  fail_unless_equals_int (shm_count_fds (), before);

  /* the same listener answering with a HELLO: the cancel fd, unset, does
   * not get in the way */
  {
    guint64 v;
    guint8 buf[PF_MAX_MSG_SIZE];
    size_t len;

    fail_unless (read (efd, &v, sizeof (v)) == sizeof (v));
    call.res = -1;
    t = g_thread_new ("connect", connect_thread, &call);
    peer = accept_hello (lfd);
    len = pf_msg_write_hello (buf, PF_ROLE_PRODUCER, 3, 42);
    fail_unless (send (peer, buf, len, MSG_NOSIGNAL) == (gssize) len);
    g_thread_join (t);
    fail_unless_equals_int (call.res, 0);
    fail_unless (call.c != NULL);
    fail_unless_equals_int (pf_consumer_get_max_held (call.c), 3);
    fail_unless_equals_int (pf_consumer_get_session_id (call.c), 42);
    pf_consumer_unref (call.c);
    fail_unless (peer_closed (peer));
    close (peer);
  }

  close (lfd);
  close (efd);
}

GST_END_TEST;

GST_START_TEST (test_src_unlock_handshake)
{
  ShmConsumer *c;
  const ShmResult *r;
  guint before;
  int lfd, peer;

  /* warm up what GStreamer opens for good, for the fd count below */
  c = shm_consumer_new (shm_sock, "connect-timeout=-1", FALSE, FALSE);
  gst_element_set_state (shm_consumer_get_pipeline (c), GST_STATE_PAUSED);
  gst_element_set_state (shm_consumer_get_pipeline (c), GST_STATE_NULL);
  shm_consumer_free (c);

  /* The source connects to a peer that accepts and never answers. With
   * connect-timeout=-1 the source waits for its HELLO for ever: only the
   * state change can end that wait, and it must. */
  lfd = silent_listener ();
  before = shm_count_fds ();
  c = shm_consumer_new (shm_sock, "connect-timeout=-1 delivery=newest-frame",
      FALSE, FALSE);
  fail_unless (shm_consumer_start (c));
  peer = accept_hello (lfd);
  /* the source is now in the handshake */
  fail_unless_equals_int (shm_consumer_run (c, 0, 100, 0), 0);
  r = shm_consumer_result (c);
  fail_if (r->error, "%s", r->error_text);
  fail_unless_equals_int (gst_element_set_state (shm_consumer_get_pipeline
          (c), GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  /* it hung up: no socket left open */
  fail_unless (peer_closed (peer));
  close (peer);
  /* and it can start again, wait again, and be stopped again */
  fail_unless (shm_consumer_start (c));
  peer = accept_hello (lfd);
  fail_unless_equals_int (gst_element_set_state (shm_consumer_get_pipeline
          (c), GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  fail_unless (peer_closed (peer));
  close (peer);
  shm_consumer_free (c);
  fail_unless_equals_int (shm_count_fds (), before);
  close (lfd);
}

GST_END_TEST;

GST_START_TEST (test_hostile_peer)
{
  Hostile mode = __i__;
  guint before, after;

  /* once to warm up what GStreamer opens for good (registry, poll fds) */
  hostile_once (mode);
  before = shm_count_fds ();
  hostile_once (mode);
  hostile_once (mode);
  after = shm_count_fds ();
  fail_unless_equals_int (after, before);
}

GST_END_TEST;

static Suite *
shm_robustness_suite (void)
{
  Suite *s = suite_create ("pinnedshm-robustness");
  TCase *tc = tcase_create ("general");

  tcase_add_checked_fixture (tc, shm_setup, shm_teardown);
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_kill_producer_eos);
  tcase_add_test (tc, test_kill_producer_error);
  tcase_add_test (tc, test_producer_stops_reading);
  tcase_add_test (tc, test_kill_producer_reconnect);
  tcase_add_test (tc, test_kill_consumer_reclaim);
  tcase_add_test (tc, test_stale_socket);
  tcase_add_test (tc, test_no_client);
  tcase_add_test (tc, test_src_waiting);
  tcase_add_loop_test (tc, test_src_unlock_connected, 0,
      G_N_ELEMENTS (unlock_connected_props));
  tcase_add_test (tc, test_connect_cancellable);
  tcase_add_test (tc, test_src_unlock_handshake);
  tcase_add_loop_test (tc, test_hostile_peer, 0, N_HOSTILE);
  suite_add_tcase (s, tc);
  return s;
}

GST_CHECK_MAIN (shm_robustness);
