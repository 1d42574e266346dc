/* shm-bench's producer processes (shm-bench --role produce): the
 * GStreamer sinks fed from the pacing thread, and the floor's socket; the
 * floor's receiving thread of the consumer side; what every producer
 * reports when it ends (CPU time, context switches).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Each producer is a process of its own, one pacing thread of ours (the
 * sinks add theirs); its CPU and switches are counted from
 * bench_producer_start() (the consumer is there) to the consumer's SIGUSR1,
 * which main() blocked before any thread existed.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gst/gst.h>
#include <gst/app/gstappsrc.h>

/* the wire FRAME message, for the size of the floor's message */
#include <pinnedflow/pf-wire-private.h>

#include "shm-bench.h"

/* ------------------------------------------------------------------------ */
/* producer process */

static gint clients;
/* the floor: one bare SOCK_SEQPACKET message of the FRAME message's size
 * per frame, paced like the element pair */
int
floor_produce (const ProducerArgs * a)
{
  struct sockaddr_un addr = {.sun_family = AF_UNIX };
  struct pf_msg_frame msg;
  guint64 t0, period = 1000000000u / (guint) MAX (a->rate, 1);
  gint k, n = a->frames;
  int lfd, fd;

  prctl (PR_SET_PDEATHSIG, SIGKILL);
  g_strlcpy (addr.sun_path, a->socket, sizeof (addr.sun_path));
  lfd = socket (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (lfd < 0 || bind (lfd, (struct sockaddr *) &addr, sizeof (addr)) < 0
      || listen (lfd, 1) < 0)
    g_error ("floor socket: %s", g_strerror (errno));
  fd = accept (lfd, NULL, NULL);
  if (fd < 0)
    g_error ("floor accept: %s", g_strerror (errno));
  close (lfd);

  bench_producer_start ();
  memset (&msg, 0, sizeof (msg));
  t0 = bench_now_ns () + 100 * 1000000u;
  for (k = 0; k < n; k++) {
    if (a->paced)
      bench_sleep_until (t0 + k * period);
    msg.seq = k;
    msg.send_time = bench_now_ns ();
    if (send (fd, &msg, sizeof (msg), MSG_NOSIGNAL) != sizeof (msg))
      break;
  }
  bench_producer_report_and_exit (a->socket);
  close (fd);
  return 0;
}

static void
on_pinned_client (GstElement * sink, guint id, gint pid, guint uid,
    gpointer data)
{
  g_atomic_int_inc (&clients);
}

static void
on_shm_client (GstElement * sink, gint fd, gpointer data)
{
  g_atomic_int_inc (&clients);
}

static guint64
in_flight (GstElement * sink)
{
  GstStructure *s;
  guint64 n = 0;

  g_object_get (sink, "stats", &s, NULL);
  gst_structure_get_uint64 (s, "in-flight", &n);
  gst_structure_free (s);
  return n;
}

/* The producer's source pad, pushed from the pacing thread (the default):
 * what a camera's streaming thread does, one thread from the frame to the
 * sink's render, as the floor's producer sends from its pacing thread. */
static GstPad *
push_pad_new (GstElement * sink, GstCaps * caps)
{
  GstPad *pad = gst_pad_new ("src", GST_PAD_SRC), *sinkpad;
  GstSegment segment;

  sinkpad = gst_element_get_static_pad (sink, "sink");
  gst_pad_set_active (pad, TRUE);
  if (gst_pad_link (pad, sinkpad) != GST_PAD_LINK_OK)
    g_error ("cannot link the producer's pad to the sink");
  gst_object_unref (sinkpad);
  gst_pad_push_event (pad, gst_event_new_stream_start ("shm-bench"));
  gst_pad_push_event (pad, gst_event_new_caps (caps));
  gst_segment_init (&segment, GST_FORMAT_TIME);
  gst_pad_push_event (pad, gst_event_new_segment (&segment));
  return pad;
}

int
gst_produce (const ProducerArgs * a)
{
  gboolean pinned = g_str_has_prefix (a->impl, "pinned");
  gboolean copy = g_str_has_suffix (a->impl, "copy");
  gboolean unixfd = strcmp (a->impl, "unixfd") == 0;
  gsize size = (gsize) a->width * a->height * 4;
  GstElement *pipeline, *src = NULL, *sink;
  GstCaps *caps;
  GstBufferPool *pool = NULL, *sysmem_pool = NULL;
  GstAllocator *allocator = NULL;
  GstAllocationParams params;
  GstQuery *query;
  GstPad *pad, *push_pad = NULL;
  guint64 t0, period = 1000000000u / (guint) MAX (a->rate, 1);
  gint k, n = a->frames;

  prctl (PR_SET_PDEATHSIG, SIGKILL);
  caps = gst_caps_new_simple ("video/x-raw", "format", G_TYPE_STRING, "RGBA",
      "width", G_TYPE_INT, a->width, "height", G_TYPE_INT, a->height,
      "framerate", GST_TYPE_FRACTION, 0, 1, NULL);
  pipeline = gst_pipeline_new (NULL);
  if (pinned) {
    sink = gst_element_factory_make ("pinnedshmsink", NULL);
    /* max-client-buffers = pool-size: back-pressure, no frame skipped */
    if (sink)
      g_object_set (sink, "socket-path", a->socket, "pool-size",
          a->pool_size, "max-client-buffers", a->pool_size,
          "wait-for-connection", TRUE, NULL);
  } else if (unixfd) {
    sink = gst_element_factory_make ("unixfdsink", NULL);
    if (sink)
      g_object_set (sink, "socket-path", a->socket, "wait-for-connection",
          TRUE, NULL);
  } else {
    sink = gst_element_factory_make ("shmsink", NULL);
    if (sink)
      g_object_set (sink, "socket-path", a->socket, "shm-size",
          (guint) (size * 8 + (1 << 20)), "wait-for-connection", TRUE, NULL);
  }
  if (sink == NULL)
    g_error ("no sink for %s", a->impl);
  g_object_set (sink, "sync", FALSE, "async", FALSE, NULL);
  if (!unixfd)
    g_signal_connect (sink, "client-connected", pinned ?
        G_CALLBACK (on_pinned_client) : G_CALLBACK (on_shm_client), NULL);
  gst_bin_add (GST_BIN (pipeline), sink);
  if (a->appsrc) {
    src = gst_element_factory_make ("appsrc", NULL);
    g_object_set (src, "caps", caps, "format", GST_FORMAT_TIME, "block", TRUE,
        "max-buffers", (guint64) 2, NULL);
    gst_bin_add (GST_BIN (pipeline), src);
    gst_element_link (src, sink);
  }
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  if (!a->appsrc)
    push_pad = push_pad_new (sink, caps);

  /* what an upstream element would do: ask the sink for memory */
  pad = push_pad ? gst_object_ref (push_pad) :
      gst_element_get_static_pad (src, "src");
  query = gst_query_new_allocation (caps, TRUE);
  if (!copy && gst_pad_peer_query (pad, query)) {
    if (gst_query_get_n_allocation_pools (query) > 0)
      gst_query_parse_nth_allocation_pool (query, 0, &pool, NULL, NULL, NULL);
    if (gst_query_get_n_allocation_params (query) > 0)
      gst_query_parse_nth_allocation_param (query, 0, &allocator, &params);
  }
  gst_query_unref (query);
  gst_object_unref (pad);
  if (pinned && !copy && (pool == NULL || !gst_buffer_pool_set_active (pool,
              TRUE)))
    g_error ("pinnedshmsink proposed no usable pool");
  if (copy) {
    /* system memory, recycled as a real producer's would be */
    GstStructure *config;

    sysmem_pool = gst_buffer_pool_new ();
    config = gst_buffer_pool_get_config (sysmem_pool);
    gst_buffer_pool_config_set_params (config, caps, size, 4, 0);
    if (!gst_buffer_pool_set_config (sysmem_pool, config)
        || !gst_buffer_pool_set_active (sysmem_pool, TRUE))
      g_error ("no system memory pool");
  }
  if (!pinned && !copy && allocator == NULL)
    g_error ("%s proposed no allocator", a->impl);
  if (unixfd && pool == NULL) {
    /* buffers of the proposed (memfd) allocator, recycled by a pool as
     * GstShmAllocator's documentation asks: a new memfd per frame would
     * be the producer's cost, not the transport's */
    GstStructure *config;

    pool = gst_buffer_pool_new ();
    config = gst_buffer_pool_get_config (pool);
    gst_buffer_pool_config_set_params (config, caps, size, a->pool_size,
        a->pool_size);
    gst_buffer_pool_config_set_allocator (config, allocator, &params);
    if (!gst_buffer_pool_set_config (pool, config)
        || !gst_buffer_pool_set_active (pool, TRUE))
      g_error ("no pool on unixfdsink's allocator");
  }
  gst_allocation_params_init (&params);

  /* start the clock once the consumer is there */
  if (unixfd) {
    gchar *ready = g_strconcat (a->socket, ".ready", NULL);

    while (!g_file_test (ready, G_FILE_TEST_EXISTS))
      g_usleep (1000);
    g_free (ready);
  } else {
    while (g_atomic_int_get (&clients) == 0)
      g_usleep (1000);
  }

  bench_producer_start ();
  t0 = bench_now_ns () + 100 * 1000000u;
  for (k = 0; k < n; k++) {
    GstBuffer *buf = NULL;
    GstFlowReturn ret;
    guint64 stamp[2];

    if (pool) {
      if (gst_buffer_pool_acquire_buffer (pool, &buf, NULL) != GST_FLOW_OK)
        break;
    } else if (allocator) {
      /* shmsink's allocator fails while its area is full: wait */
      while ((buf = gst_buffer_new_allocate (allocator, size, &params)) == NULL)
        g_usleep (100);
    } else {
      /* copy path: the sink drops rather than waits when its copy pool is
       * all out; hold back instead, as the pool does for zero copy, so the
       * run measures the sustainable rate */
      if (pinned)
        while (in_flight (sink) >= 6)
          g_usleep (50);
      if (gst_buffer_pool_acquire_buffer (sysmem_pool, &buf, NULL) !=
          GST_FLOW_OK)
        break;
    }
    if (a->paced)
      bench_sleep_until (t0 + k * period);
    GST_BUFFER_PTS (buf) = k * period;
    stamp[0] = k;
    stamp[1] = bench_now_ns ();
    gst_buffer_fill (buf, 0, stamp, sizeof (stamp));
    if (push_pad)
      ret = gst_pad_push (push_pad, buf);
    else
      ret = gst_app_src_push_buffer (GST_APP_SRC (src), buf);
    if (ret != GST_FLOW_OK)
      break;
  }
  /* no EOS from the pacing thread: shmsink's EOS waits until every buffer
   * came back, and the consumer's fakesink keeps the last one */
  if (src)
    gst_app_src_end_of_stream (GST_APP_SRC (src));
  /* the consumer stops on its own after n frames, asks for our CPU time
   * and kills us if we do not exit */
  return bench_producer_report_and_exit (a->socket);
}

/* the floor's consumer: sleeps in recv() until the producer's message */
gpointer
floor_receive (gpointer data)
{
  Probe *p = data;
  struct sockaddr_un addr = {.sun_family = AF_UNIX };
  struct pf_msg_frame msg;
  int fd, tries;

  if (!bench_wait_socket (p->sock, p->pid))
    return NULL;
  g_strlcpy (addr.sun_path, p->sock, sizeof (addr.sun_path));
  fd = socket (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return NULL;
  /* the socket file exists a moment before listen() */
  for (tries = 0; connect (fd, (struct sockaddr *) &addr,
          sizeof (addr)) < 0; tries++) {
    if (tries == 10000 || (errno != ECONNREFUSED && errno != EINTR)) {
      close (fd);
      return NULL;
    }
    g_usleep (1000);
  }
  for (;;) {
    ssize_t r = recv (fd, &msg, sizeof (msg), 0);
    guint64 t = bench_now_ns ();

    if (r < 0 && errno == EINTR)
      continue;
    if (r != sizeof (msg))
      break;
    probe_record (p, t, msg.send_time);
    if (msg.seq + 1 >= (guint64) p->want)
      break;
  }
  close (fd);
  return NULL;
}
