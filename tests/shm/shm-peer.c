/* Helper process of the pinnedshm tests: a stamping producer or a verifying
 * consumer, each in its own process.
 *
 *   shm-peer produce --socket P [--caps C] [--frames N] [--copy] [--multi]
 *       [--caps2 C --switch-at K] [--wait] [--clients K] [--live] [--sync]
 *       [--pool-size N] [--max-client-buffers N] [--pinned-chunks N]
 *       [--sink-props "live-max-lag=-1 ..."]
 *   shm-peer relay --socket P --out Q [--pool-size N]
 *       [--max-client-buffers N]
 *   shm-peer consume --socket P [--count N] [--hold K] [--sync]
 *       [--check-ts] [--src-props "on-disconnect=... connect-timeout=..."]
 *   shm-peer launch --socket P --pipeline DESC [--clients K] [--gop G]
 *       [--hold K] [--memlock-limit BYTES]
 *
 * The producer prints one "EOSCLIENT ..." line per client as the EOS
 * reaches its sink, and "STATS ..." and one "CLIENT ..." line per client
 * still connected at the end; the consumer prints "RESULT ..." (see shm-common.c). The relay
 * (pinnedshmsrc from P ! pinnedshmsink on Q, republishing the producer's
 * segments) listens on Q, waits for one client there, then connects to P;
 * at EOS it prints "LISTENING", "STATS ..." and "CLIENT ..." like a
 * producer.
 *
 * launch runs the gst-launch-1.0 description DESC (every "@SOCKET@" in it
 * replaced by P). It prints "FRAME i pts=.. dts=.. dur=.. flags=0x..
 * sum=SHA1" for every buffer that reaches the sink pad of the element named
 * "tap" (the checksum of its bytes), one line per bus message: "WARNING",
 * "ELEMENT" (the structure), "QOS" (its counters), then "EOS" (exit 0) or
 * "ERROR src=.. domain=.. code=.. msg=.. debug=.." (exit 1). With an element
 * named "sink" that is a pinnedshmsink it waits in PAUSED for --clients K
 * consumers (after printing "PAUSED") and prints its stats at the end like
 * produce; with one named
 * "src" that is a pinnedshmsrc it prints "SRCSTATS" (its stats structure).
 * --gop G marks every buffer at the tap whose index is not a multiple of G
 * as a delta unit (GST_BUFFER_FLAG_DELTA_UNIT); --hold K keeps the first K
 * buffers at the tap (never released while the pipeline runs).
 * --memlock-limit BYTES sets RLIMIT_MEMLOCK before the pipeline is made,
 * and, run as root (whom the limit does not bind), drops to uid/gid 65534
 * first: mlock() of anything bigger is then refused.
 *
 * --pinned-chunks N: appsrc pushes buffers of N pinned memories, each taken
 * from a different slot of a GstPinnedBufferPool (appended in reverse
 * order, so no two are adjacent in the segment), with a GstVideoMeta for
 * video caps; the pusher writes the pattern itself.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <gst/gst.h>
#include <gst/app/gstappsrc.h>
#include <gst/base/gstbasesink.h>
#include <gst/base/gstbasesrc.h>
#include <gst/video/video.h>
#include <gst/pinnedflow/gstpinnedbufferpool.h>

#include "shm-common.h"

static gchar *opt_socket;
static gchar *opt_caps =
    (gchar *) "video/x-raw,format=RGBA,width=320,height=240,framerate=30/1";
static gchar *opt_caps2;
static gint opt_switch_at = -1;
static gint opt_frames = 30;
static gboolean opt_copy, opt_multi, opt_wait, opt_live, opt_sync;
static gint opt_clients = 0;
static gint opt_pool_size = 8, opt_max_client_buffers = 8;
static gint opt_hold = 0;
static gint opt_count = 0;
static gboolean opt_check_ts;
static gchar *opt_src_props;
static gchar *opt_sink_props;
static gint opt_pinned_chunks = 0;
static gchar *opt_out;
static gchar *opt_pipeline;
static gint opt_gop = 0;
static gint64 opt_memlock_limit = -1;

static GOptionEntry entries[] = {
  {"socket", 's', 0, G_OPTION_ARG_STRING, &opt_socket, "socket path", NULL},
  {"caps", 'c', 0, G_OPTION_ARG_STRING, &opt_caps, "caps", NULL},
  {"caps2", 0, 0, G_OPTION_ARG_STRING, &opt_caps2, "caps after switch", NULL},
  {"switch-at", 0, 0, G_OPTION_ARG_INT, &opt_switch_at, "frame", NULL},
  {"frames", 'n', 0, G_OPTION_ARG_INT, &opt_frames, "frames (-1 forever)",
      NULL},
  {"copy", 0, 0, G_OPTION_ARG_NONE, &opt_copy, "foreign memory", NULL},
  {"multi", 0, 0, G_OPTION_ARG_NONE, &opt_multi, "multi-memory", NULL},
  {"wait", 0, 0, G_OPTION_ARG_NONE, &opt_wait, "wait-for-connection", NULL},
  {"clients", 0, 0, G_OPTION_ARG_INT, &opt_clients, "wait for K clients",
      NULL},
  {"live", 0, 0, G_OPTION_ARG_NONE, &opt_live, "live source", NULL},
  {"sync", 0, 0, G_OPTION_ARG_NONE, &opt_sync, "sink sync=true", NULL},
  {"pool-size", 0, 0, G_OPTION_ARG_INT, &opt_pool_size, "pool-size", NULL},
  {"max-client-buffers", 0, 0, G_OPTION_ARG_INT, &opt_max_client_buffers,
      "max-client-buffers", NULL},
  {"count", 0, 0, G_OPTION_ARG_INT, &opt_count, "consume: stop after N "
        "frames (0: at EOS)", NULL},
  {"hold", 0, 0, G_OPTION_ARG_INT, &opt_hold, "frames never released", NULL},
  {"check-ts", 0, 0, G_OPTION_ARG_NONE, &opt_check_ts, "check PTS", NULL},
  {"src-props", 0, 0, G_OPTION_ARG_STRING, &opt_src_props, "src props", NULL},
  {"sink-props", 0, 0, G_OPTION_ARG_STRING, &opt_sink_props,
      "produce: more pinnedshmsink properties, name=value ...", NULL},
  {"pinned-chunks", 0, 0, G_OPTION_ARG_INT, &opt_pinned_chunks,
      "buffers of N pinned memories", NULL},
  {"out", 0, 0, G_OPTION_ARG_STRING, &opt_out, "relay: socket to publish on",
      NULL},
  {"pipeline", 0, 0, G_OPTION_ARG_STRING, &opt_pipeline, "launch: pipeline",
      NULL},
  {"gop", 0, 0, G_OPTION_ARG_INT, &opt_gop, "launch: a key frame every G",
      NULL},
  {"memlock-limit", 0, 0, G_OPTION_ARG_INT64, &opt_memlock_limit,
      "launch: RLIMIT_MEMLOCK (as uid 65534 when root)", NULL},
  {NULL}
};

static guint64 counter;
static GstElement *capsfilter;

/* Stamps every buffer on its way into the sink: in place (pool memory:
 * zero copy) or into a new system-memory buffer (--copy). */
static GstPadProbeReturn
stamp_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  GstElement *sink = user_data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  guint64 k;

  /* pinned multi-memory buffers come stamped (a write map would merge
   * their memories into one system memory) */
  if (opt_pinned_chunks > 0)
    return GST_PAD_PROBE_OK;
  k = counter++;
  GstClockTime base = gst_element_get_base_time (sink);
  /* unknown while prerolling (no base time yet) */
  /* when the sink renders it: + the latency (a live pipeline's) */
  guint64 clock_pts = base ? GST_BUFFER_PTS (buf) + base +
      gst_base_sink_get_latency (GST_BASE_SINK (sink)) : G_MAXUINT64;

  if (opt_switch_at >= 0 && k == (guint64) opt_switch_at && opt_caps2) {
    GstCaps *caps2 = gst_caps_from_string (opt_caps2);
    g_object_set (capsfilter, "caps", caps2, NULL);
    gst_caps_unref (caps2);
  }

  if (opt_copy) {
    gsize size = gst_buffer_get_size (buf);
    GstBuffer *copy = gst_buffer_new ();

    if (opt_multi) {
      gsize a = size / 3, b = size / 3;
      gst_buffer_append_memory (copy, gst_allocator_alloc (NULL, a, NULL));
      gst_buffer_append_memory (copy, gst_allocator_alloc (NULL, b, NULL));
      gst_buffer_append_memory (copy, gst_allocator_alloc (NULL,
              size - a - b, NULL));
    } else {
      gst_buffer_append_memory (copy, gst_allocator_alloc (NULL, size, NULL));
    }
    gst_buffer_copy_into (copy, buf, GST_BUFFER_COPY_METADATA, 0, -1);
    shm_pattern_fill_buffer (copy, k, clock_pts, shm_monotonic_ns ());
    gst_buffer_unref (buf);
    GST_PAD_PROBE_INFO_DATA (info) = copy;
  } else {
    GstMapInfo map;

    buf = gst_buffer_make_writable (buf);
    GST_PAD_PROBE_INFO_DATA (info) = buf;
    if (!gst_buffer_map (buf, &map, GST_MAP_WRITE))
      g_error ("cannot map buffer for writing");
    shm_pattern_fill (map.data, map.size, k, clock_pts, shm_monotonic_ns ());
    gst_buffer_unmap (buf, &map);
  }
  return GST_PAD_PROBE_OK;
}

static void
print_client_stats (GstElement * sink, const gchar * tag, gboolean totals)
{
  GstStructure *s;
  const GValue *clients;
  guint64 frames, zc, copies, drops, in_flight;
  guint i;

  g_object_get (sink, "stats", &s, NULL);
  gst_structure_get (s, "frames", G_TYPE_UINT64, &frames,
      "zero-copy-frames", G_TYPE_UINT64, &zc, "copies", G_TYPE_UINT64,
      &copies, "drops", G_TYPE_UINT64, &drops, "in-flight", G_TYPE_UINT64,
      &in_flight, NULL);
  if (totals)
    printf ("STATS frames=%" G_GUINT64_FORMAT " zero_copy=%" G_GUINT64_FORMAT
        " copies=%" G_GUINT64_FORMAT " drops=%" G_GUINT64_FORMAT " in_flight=%"
        G_GUINT64_FORMAT "\n", frames, zc, copies, drops, in_flight);
  clients = gst_structure_get_value (s, "clients");
  for (i = 0; i < gst_value_array_get_size (clients); i++) {
    const GstStructure *c =
        gst_value_get_structure (gst_value_array_get_value (clients, i));
    guint64 sent, released, dropped;
    guint held, id;

    gst_structure_get (c, "id", G_TYPE_UINT, &id, "sent", G_TYPE_UINT64,
        &sent, "released", G_TYPE_UINT64, &released, "dropped",
        G_TYPE_UINT64, &dropped, "held", G_TYPE_UINT, &held, NULL);
    printf ("%s id=%u sent=%" G_GUINT64_FORMAT " released=%"
        G_GUINT64_FORMAT " dropped=%" G_GUINT64_FORMAT " held=%u\n", tag, id,
        sent, released, dropped, held);
  }
  fflush (stdout);
  gst_structure_free (s);
}

static void
print_stats (GstElement * sink)
{
  print_client_stats (sink, "CLIENT", TRUE);
}

/* The clients as the EOS reaches the sink, before it tells them: once told,
 * they hang up and leave the sink's stats. */
static GstPadProbeReturn
eos_stats_probe (GstPad * pad, GstPadProbeInfo * info, gpointer sink)
{
  if (GST_EVENT_TYPE (GST_PAD_PROBE_INFO_EVENT (info)) == GST_EVENT_EOS)
    print_client_stats (sink, "EOSCLIENT", FALSE);
  return GST_PAD_PROBE_OK;
}

static void
wait_clients (GstElement * sink)
{
  guint n = 0;

  while (opt_clients > 0) {
    g_object_get (sink, "num-clients", &n, NULL);
    if (n >= (guint) opt_clients)
      break;
    g_usleep (5000);
  }
}

static gpointer
push_octets (gpointer data)
{
  GstAppSrc *src = data;
  gint k;

  for (k = 0; opt_frames < 0 || k < opt_frames; k++) {
    gsize size = 1000 + ((gsize) k * 997) % 7000;
    GstBuffer *buf = gst_buffer_new ();

    if (opt_multi) {
      gst_buffer_append_memory (buf, gst_allocator_alloc (NULL, 100, NULL));
      gst_buffer_append_memory (buf, gst_allocator_alloc (NULL, size - 100,
              NULL));
    } else {
      gst_buffer_append_memory (buf, gst_allocator_alloc (NULL, size, NULL));
    }
    GST_BUFFER_PTS (buf) = k * 10 * GST_MSECOND;
    GST_BUFFER_DURATION (buf) = 10 * GST_MSECOND;
    /* the sink-pad probe stamps it */
    if (gst_app_src_push_buffer (src, buf) != GST_FLOW_OK)
      return NULL;
  }
  gst_app_src_end_of_stream (src);
  return NULL;
}

typedef struct
{
  GstAppSrc *src;
  GstCaps *caps;
} PinnedPush;

/* Sizes of the @n pieces of a frame of @size bytes: the planes when there
 * are as many, else equal parts (the last one takes the rest). */
static void
piece_sizes (const GstVideoInfo * vinfo, gsize size, guint n, gsize * sizes)
{
  guint i;

  if (vinfo && GST_VIDEO_INFO_N_PLANES (vinfo) == n) {
    for (i = 0; i < n; i++)
      sizes[i] = (i + 1 < n ? GST_VIDEO_INFO_PLANE_OFFSET (vinfo, i + 1)
          : GST_VIDEO_INFO_SIZE (vinfo)) - GST_VIDEO_INFO_PLANE_OFFSET (vinfo,
          i);
    return;
  }
  for (i = 0; i < n; i++)
    sizes[i] = i + 1 < n ? size / n : size - (size / n) * (n - 1);
}

static gpointer
push_pinned (gpointer data)
{
  PinnedPush *pp = data;
  GstVideoInfo vinfo, *vi = NULL;
  GstBufferPool *pool = gst_pinned_buffer_pool_new ();
  GstStructure *config;
  guint n = (guint) opt_pinned_chunks;
  gsize slot = 8000, sizes[16];
  GstClockTime duration = 10 * GST_MSECOND;
  gint k;

  g_assert (n >= 1 && n <= G_N_ELEMENTS (sizes));
  if (gst_video_info_from_caps (&vinfo, pp->caps)) {
    vi = &vinfo;
    piece_sizes (vi, GST_VIDEO_INFO_SIZE (vi), n, sizes);
    slot = 0;
    for (k = 0; k < (gint) n; k++)
      slot = MAX (slot, sizes[k]);
    if (GST_VIDEO_INFO_FPS_N (vi) > 0)
      duration = gst_util_uint64_scale_int (GST_SECOND,
          GST_VIDEO_INFO_FPS_D (vi), GST_VIDEO_INFO_FPS_N (vi));
  }
  /* as many frames as a client may hold: the pool's back-pressure keeps
   * the producer from running past the client's limit (no skipped frame) */
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, NULL, slot, 0,
      n * opt_max_client_buffers);
  if (!gst_buffer_pool_set_config (pool, config)
      || !gst_buffer_pool_set_active (pool, TRUE))
    g_error ("cannot start the pinned pool");

  for (k = 0; opt_frames < 0 || k < opt_frames; k++) {
    gsize size =
        vi ? GST_VIDEO_INFO_SIZE (vi) : 1000 + ((gsize) k * 997) % 7000;
    GstMemory *mems[16];
    GstBuffer *buf = gst_buffer_new ();
    guint i;

    if (!vi)
      piece_sizes (NULL, size, n, sizes);
    for (i = 0; i < n; i++) {
      GstBuffer *b = NULL;

      if (gst_buffer_pool_acquire_buffer (pool, &b, NULL) != GST_FLOW_OK)
        goto done;
      /* taken out of its pool buffer (which the pool then drops, its
       * memory having been removed): the slot stays busy until the memory
       * dies. A mere extra ref would let the pool hand the same memory out
       * again with the buffer. */
      mems[i] = gst_buffer_get_memory (b, 0);
      gst_buffer_remove_memory (b, 0);
      gst_buffer_unref (b);
      /* the frame's piece n-1-i: appended in reverse below, the frame's
       * first piece lies in the last slot taken */
      gst_memory_resize (mems[i], 0, sizes[n - 1 - i]);
    }
    for (i = n; i > 0; i--)
      gst_buffer_append_memory (buf, mems[i - 1]);
    GST_BUFFER_PTS (buf) = k * duration;
    GST_BUFFER_DURATION (buf) = duration;
    GST_BUFFER_OFFSET (buf) = k;
    GST_BUFFER_OFFSET_END (buf) = k + 1;
    if (vi) {
      gsize offsets[GST_VIDEO_MAX_PLANES];
      gint strides[GST_VIDEO_MAX_PLANES];

      for (i = 0; i < GST_VIDEO_INFO_N_PLANES (vi); i++) {
        offsets[i] = GST_VIDEO_INFO_PLANE_OFFSET (vi, i);
        strides[i] = GST_VIDEO_INFO_PLANE_STRIDE (vi, i);
      }
      gst_buffer_add_video_meta_full (buf, GST_VIDEO_FRAME_FLAG_NONE,
          GST_VIDEO_INFO_FORMAT (vi), GST_VIDEO_INFO_WIDTH (vi),
          GST_VIDEO_INFO_HEIGHT (vi), GST_VIDEO_INFO_N_PLANES (vi), offsets,
          strides);
    }
    shm_pattern_fill_buffer (buf, (guint64) k, G_MAXUINT64,
        shm_monotonic_ns ());
    if (gst_app_src_push_buffer (pp->src, buf) != GST_FLOW_OK)
      goto done;
  }
  gst_app_src_end_of_stream (pp->src);
done:
  gst_buffer_pool_set_active (pool, FALSE);
  gst_object_unref (pool);
  return NULL;
}

/* "name=value name=value": each set on @obj as gst-launch-1.0 would. */
static void
set_props (GstElement * obj, const gchar * props)
{
  gchar **kv;
  guint i;

  if (props == NULL)
    return;
  kv = g_strsplit (props, " ", -1);
  for (i = 0; kv[i]; i++) {
    gchar *eq = strchr (kv[i], '=');

    if (eq == NULL)
      continue;
    *eq = '\0';
    gst_util_set_object_arg (G_OBJECT (obj), kv[i], eq + 1);
  }
  g_strfreev (kv);
}

static int
produce (void)
{
  GstElement *pipeline, *src, *sink;
  GstCaps *caps = gst_caps_from_string (opt_caps);
  gboolean video;
  GstBus *bus;
  GstMessage *msg;
  GstPad *pad;
  GThread *pusher = NULL;
  PinnedPush pp = { NULL, NULL };
  int ret = 0;

  if (caps == NULL)
    g_error ("bad caps %s", opt_caps);
  video = gst_structure_has_name (gst_caps_get_structure (caps, 0),
      "video/x-raw");
  pipeline = gst_pipeline_new (NULL);
  sink = gst_element_factory_make ("pinnedshmsink", "sink");
  if (sink == NULL)
    g_error ("no pinnedshmsink");
  g_object_set (sink, "socket-path", opt_socket, "sync", opt_sync,
      "wait-for-connection", opt_wait, "pool-size", opt_pool_size,
      "max-client-buffers", opt_max_client_buffers, NULL);
  set_props (sink, opt_sink_props);
  if (video && opt_pinned_chunks == 0) {
    src = gst_element_factory_make ("videotestsrc", "src");
    g_object_set (src, "num-buffers", opt_frames, "is-live", opt_live,
        "pattern", 2 /* black */ , NULL);
    capsfilter = gst_element_factory_make ("capsfilter", "cf");
    g_object_set (capsfilter, "caps", caps, NULL);
    gst_bin_add_many (GST_BIN (pipeline), src, capsfilter, sink, NULL);
    gst_element_link_many (src, capsfilter, sink, NULL);
  } else {
    src = gst_element_factory_make ("appsrc", "src");
    g_object_set (src, "caps", caps, "format", GST_FORMAT_TIME, "block", TRUE,
        "max-bytes", (guint64) 65536, "is-live", opt_live, NULL);
    gst_bin_add_many (GST_BIN (pipeline), src, sink, NULL);
    gst_element_link (src, sink);
  }
  pp.src = GST_IS_APP_SRC (src) ? GST_APP_SRC (src) : NULL;
  pp.caps = caps;

  pad = gst_element_get_static_pad (sink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, stamp_probe, sink, NULL);
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM,
      eos_stats_probe, sink, NULL);
  gst_object_unref (pad);

  if (gst_element_set_state (pipeline, GST_STATE_PAUSED) ==
      GST_STATE_CHANGE_FAILURE)
    g_error ("cannot start the producer");
  wait_clients (sink);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  printf ("PLAYING\n");
  fflush (stdout);
  if (opt_pinned_chunks > 0)
    pusher = g_thread_new ("push", push_pinned, &pp);
  else if (!video)
    pusher = g_thread_new ("push", push_octets, src);

  bus = gst_element_get_bus (pipeline);
  msg = gst_bus_timed_pop_filtered (bus, GST_CLOCK_TIME_NONE,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    GError *err = NULL;

    gst_message_parse_error (msg, &err, NULL);
    printf ("ERROR %s\n", err->message);
    g_clear_error (&err);
    ret = 1;
  }
  gst_message_unref (msg);
  gst_object_unref (bus);
  print_stats (sink);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  if (pusher)
    g_thread_join (pusher);
  gst_object_unref (pipeline);
  gst_caps_unref (caps);
  return ret;
}

/* Once, on the relay's first frame: a RECONFIGURE upstream, as any
 * downstream element may send, makes the source renegotiate with its caps
 * and run an ALLOCATION query (answered with the sink's pinned pool). */
static GstPadProbeReturn
reconfigure_once (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  gst_pad_push_event (pad, gst_event_new_reconfigure ());
  return GST_PAD_PROBE_REMOVE;
}

static int
relay (void)
{
  GstElement *pipeline, *sink, *src;
  GstBufferPool *pool;
  GError *err = NULL;
  GstMessage *msg;
  GstStructure *s;
  guint64 frames = 0, gaps = 0;
  gchar *desc;
  guint n = 0;
  int ret = 0;

  if (opt_out == NULL)
    g_error ("relay needs --out");
  /* every-frame: started before the producer, the source cannot ask it
   * whether it is live, and would be a live one (newest frame for the
   * relay's clients) */
  desc = g_strdup_printf ("pinnedshmsrc name=src socket-path=%s "
      "connect-timeout=-1 delivery=every-frame ! pinnedshmsink name=sink socket-path=%s "
      "sync=false wait-for-connection=true pool-size=%d "
      "max-client-buffers=%d", opt_socket, opt_out, opt_pool_size,
      opt_max_client_buffers);
  pipeline = gst_parse_launch (desc, &err);
  if (pipeline == NULL)
    g_error ("%s: %s", desc, err->message);
  g_free (desc);
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  {
    GstPad *pad = gst_element_get_static_pad (sink, "sink");

    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, reconfigure_once, NULL,
        NULL);
    gst_object_unref (pad);
  }

  /* PAUSED: the sink listens, the (live) source has not connected yet */
  if (gst_element_set_state (pipeline, GST_STATE_PAUSED) ==
      GST_STATE_CHANGE_FAILURE)
    g_error ("cannot start the relay");
  printf ("LISTENING\n");
  fflush (stdout);
  while (n == 0) {
    g_object_get (sink, "num-clients", &n, NULL);
    g_usleep (5000);
  }
  gst_element_set_state (pipeline, GST_STATE_PLAYING);

  msg = gst_bus_timed_pop_filtered (GST_ELEMENT_BUS (pipeline),
      GST_CLOCK_TIME_NONE, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    gst_message_parse_error (msg, &err, NULL);
    printf ("ERROR %s\n", err->message);
    g_clear_error (&err);
    ret = 1;
  }
  gst_message_unref (msg);
  print_stats (sink);
  src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  g_object_get (src, "stats", &s, NULL);
  gst_structure_get_uint64 (s, "frames", &frames);
  gst_structure_get_uint64 (s, "gaps", &gaps);
  gst_structure_free (s);
  /* pool=1: the source activated a pool it never uses */
  pool = gst_base_src_get_buffer_pool (GST_BASE_SRC (src));
  printf ("SRCSTATS frames=%" G_GUINT64_FORMAT " gaps=%" G_GUINT64_FORMAT
      " pool=%d\n", frames, gaps, pool != NULL);
  fflush (stdout);
  if (pool)
    gst_object_unref (pool);
  gst_object_unref (src);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  return ret;
}

static int
consume (void)
{
  ShmConsumer *c = shm_consumer_new (opt_socket,
      opt_src_props ? opt_src_props : "connect-timeout=-1", opt_sync,
      opt_check_ts);
  const ShmResult *r;
  gchar *line;
  int ret;

  if (!shm_consumer_start (c))
    g_error ("cannot start the consumer");
  shm_consumer_run (c, opt_count > 0 ? (guint) opt_count : 0, -1,
      (guint) opt_hold);
  r = shm_consumer_result (c);
  line = shm_result_to_string (r);
  printf ("%s\n", line);
  fflush (stdout);
  g_free (line);
  ret = r->error ? 1 : 0;
  shm_consumer_free (c);
  return ret;
}

/* ---- launch: any pipeline, its frames and its bus messages printed ---- */

typedef struct
{
  guint64 index;
  GPtrArray *held;
} Tap;

static GstPadProbeReturn
tap_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  Tap *tap = user_data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstMapInfo map;
  gchar *sum = NULL;

  if (opt_gop > 0) {
    buf = gst_buffer_make_writable (buf);
    GST_PAD_PROBE_INFO_DATA (info) = buf;
    if (tap->index % opt_gop == 0)
      GST_BUFFER_FLAG_UNSET (buf, GST_BUFFER_FLAG_DELTA_UNIT);
    else
      GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DELTA_UNIT);
  }
  if (gst_buffer_map (buf, &map, GST_MAP_READ)) {
    sum = g_compute_checksum_for_data (G_CHECKSUM_SHA1, map.data, map.size);
    gst_buffer_unmap (buf, &map);
  }
  printf ("FRAME %" G_GUINT64_FORMAT " pts=%" G_GINT64_FORMAT " dts=%"
      G_GINT64_FORMAT " dur=%" G_GINT64_FORMAT " flags=0x%x sum=%s\n",
      tap->index, (gint64) GST_BUFFER_PTS (buf), (gint64) GST_BUFFER_DTS (buf),
      (gint64) GST_BUFFER_DURATION (buf), GST_BUFFER_FLAGS (buf),
      sum ? sum : "none");
  fflush (stdout);
  g_free (sum);
  if (tap->index < (guint64) opt_hold)
    g_ptr_array_add (tap->held, gst_buffer_ref (buf));
  tap->index++;
  return GST_PAD_PROBE_OK;
}

/* One line per message; TRUE when the pipeline is done (EOS or error). */
static gboolean
print_message (GstMessage * msg, int *ret)
{
  const gchar *src = GST_MESSAGE_SRC_NAME (msg);
  GError *err = NULL;
  gchar *debug = NULL, *str;
  const GstStructure *s;

  switch (GST_MESSAGE_TYPE (msg)) {
    case GST_MESSAGE_EOS:
      printf ("EOS\n");
      fflush (stdout);
      *ret = 0;
      return TRUE;
    case GST_MESSAGE_ERROR:
      gst_message_parse_error (msg, &err, &debug);
      printf ("ERROR src=%s domain=%s code=%d msg=%s debug=%s\n", src,
          g_quark_to_string (err->domain), err->code, err->message,
          debug ? debug : "");
      g_clear_error (&err);
      g_free (debug);
      fflush (stdout);
      *ret = 1;
      return TRUE;
    case GST_MESSAGE_WARNING:
      gst_message_parse_warning (msg, &err, &debug);
      printf ("WARNING src=%s domain=%s code=%d msg=%s debug=%s\n", src,
          g_quark_to_string (err->domain), err->code, err->message,
          debug ? debug : "");
      g_clear_error (&err);
      g_free (debug);
      break;
    case GST_MESSAGE_ELEMENT:
      s = gst_message_get_structure (msg);
      str = gst_structure_to_string (s);
      printf ("ELEMENT src=%s %s\n", src, str);
      g_free (str);
      break;
    case GST_MESSAGE_QOS:{
      GstFormat format;
      guint64 processed, dropped;
      gboolean live;
      guint64 rt, st, ts, dur;

      gst_message_parse_qos (msg, &live, &rt, &st, &ts, &dur);
      gst_message_parse_qos_stats (msg, &format, &processed, &dropped);
      printf ("QOS src=%s live=%d format=%s processed=%" G_GINT64_FORMAT
          " dropped=%" G_GINT64_FORMAT "\n", src, live,
          gst_format_get_name (format), (gint64) processed, (gint64) dropped);
      break;
    }
    default:
      break;
  }
  fflush (stdout);
  return FALSE;
}

static void
print_src_stats (GstElement * src)
{
  GstStructure *s;
  gchar *str;

  g_object_get (src, "stats", &s, NULL);
  str = gst_structure_to_string (s);
  printf ("SRCSTATS %s\n", str);
  fflush (stdout);
  g_free (str);
  gst_structure_free (s);
}

static gboolean
is_a (GstElement * e, const gchar * factory)
{
  GstElementFactory *f = e ? gst_element_get_factory (e) : NULL;

  return f && g_strcmp0 (GST_OBJECT_NAME (f), factory) == 0;
}

static int
launch (void)
{
  GstElement *pipeline, *sink, *src, *tapel;
  GError *err = NULL;
  gchar **parts;
  gchar *desc;
  Tap tap = { 0, g_ptr_array_new_with_free_func (
        (GDestroyNotify) gst_buffer_unref)
  };
  int ret = 1;

  if (opt_pipeline == NULL)
    g_error ("launch needs --pipeline");
  if (opt_memlock_limit >= 0) {
    struct rlimit rl = { (rlim_t) opt_memlock_limit,
      (rlim_t) opt_memlock_limit
    };

    if (setrlimit (RLIMIT_MEMLOCK, &rl) != 0)
      g_error ("setrlimit: %s", g_strerror (errno));
    if (geteuid () == 0 && (setgid (65534) != 0 || setuid (65534) != 0))
      g_error ("cannot drop to uid 65534: %s", g_strerror (errno));
  }
  parts = g_strsplit (opt_pipeline, "@SOCKET@", -1);
  desc = g_strjoinv (opt_socket, parts);
  g_strfreev (parts);
  pipeline = gst_parse_launch (desc, &err);
  if (pipeline == NULL || err != NULL)
    g_error ("%s: %s", desc, err ? err->message : "?");
  g_free (desc);

  tapel = gst_bin_get_by_name (GST_BIN (pipeline), "tap");
  if (tapel) {
    GstPad *pad = gst_element_get_static_pad (tapel, "sink");

    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, tap_probe, &tap, NULL);
    gst_object_unref (pad);
    gst_object_unref (tapel);
  }
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  if (sink && !is_a (sink, "pinnedshmsink"))
    gst_clear_object (&sink);
  src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  if (src && !is_a (src, "pinnedshmsrc"))
    gst_clear_object (&src);

  if (gst_element_set_state (pipeline, GST_STATE_PAUSED) ==
      GST_STATE_CHANGE_FAILURE) {
    GstMessage *msg = gst_bus_pop_filtered (GST_ELEMENT_BUS (pipeline),
        GST_MESSAGE_ERROR);

    if (msg) {
      print_message (msg, &ret);
      gst_message_unref (msg);
    } else {
      printf ("ERROR src=pipeline domain=none code=0 msg=cannot pause "
          "debug=\n");
    }
    goto done;
  }
  printf ("PAUSED\n");
  fflush (stdout);
  if (sink)
    wait_clients (sink);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  printf ("PLAYING\n");
  fflush (stdout);

  for (;;) {
    GstMessage *msg = gst_bus_timed_pop (GST_ELEMENT_BUS (pipeline),
        GST_CLOCK_TIME_NONE);
    gboolean done = print_message (msg, &ret);

    gst_message_unref (msg);
    if (done)
      break;
  }
  if (sink)
    print_stats (sink);
  if (src)
    print_src_stats (src);

done:
  gst_element_set_state (pipeline, GST_STATE_NULL);
  g_ptr_array_unref (tap.held);
  gst_clear_object (&sink);
  gst_clear_object (&src);
  gst_object_unref (pipeline);
  return ret;
}

int
main (int argc, char **argv)
{
  GOptionContext *ctx = g_option_context_new ("produce|consume");
  GError *err = NULL;

  /* never outlive the test that spawned us */
  prctl (PR_SET_PDEATHSIG, SIGKILL);

  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  if (!g_option_context_parse (ctx, &argc, &argv, &err) || argc < 2
      || opt_socket == NULL) {
    g_printerr ("usage: shm-peer produce|consume --socket PATH ...\n");
    return 2;
  }
  g_option_context_free (ctx);

  if (strcmp (argv[1], "produce") == 0)
    return produce ();
  if (strcmp (argv[1], "consume") == 0)
    return consume ();
  if (strcmp (argv[1], "relay") == 0)
    return relay ();
  if (strcmp (argv[1], "launch") == 0)
    return launch ();
  g_printerr ("unknown mode %s\n", argv[1]);
  return 2;
}
