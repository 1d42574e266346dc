/* Shared by the pinnedshm tests and their helper program.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "shm-common.h"
#include "shm-proc.h"

#include <string.h>
#include <time.h>

#include <gst/video/video.h>
#include <gst/pinnedflow/gstpinnedallocator.h>

guint64
shm_monotonic_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (guint64) ts.tv_sec * G_GUINT64_CONSTANT (1000000000) + ts.tv_nsec;
}

static inline guint8
pattern_byte (guint64 k, gsize i)
{
  return (guint8) (k * 31 + i * 7 + (i >> 8));
}

static void
write_stamp (guint8 * hdr, guint64 k, guint64 clock_pts, guint64 mono)
{
  guint64 v[3] = { GUINT64_TO_LE (k), GUINT64_TO_LE (clock_pts),
    GUINT64_TO_LE (mono)
  };
  memcpy (hdr, v, sizeof (v));
}

void
shm_pattern_fill (guint8 * data, gsize size, guint64 k, guint64 clock_pts,
    guint64 mono)
{
  gsize i;

  g_assert (size >= SHM_STAMP_SIZE);
  write_stamp (data, k, clock_pts, mono);
  for (i = SHM_STAMP_SIZE; i < size; i++)
    data[i] = pattern_byte (k, i);
}

void
shm_pattern_fill_buffer (GstBuffer * buf, guint64 k, guint64 clock_pts,
    guint64 mono)
{
  gsize size = gst_buffer_get_size (buf);
  guint8 *tmp = g_malloc (size);

  shm_pattern_fill (tmp, size, k, clock_pts, mono);
  gst_buffer_fill (buf, 0, tmp, size);
  g_free (tmp);
}

gboolean
shm_pattern_check (const guint8 * data, gsize size, guint64 * k,
    guint64 * clock_pts, guint64 * mono)
{
  guint64 v[3];
  gsize i;

  if (size < SHM_STAMP_SIZE)
    return FALSE;
  memcpy (v, data, sizeof (v));
  *k = GUINT64_FROM_LE (v[0]);
  *clock_pts = GUINT64_FROM_LE (v[1]);
  *mono = GUINT64_FROM_LE (v[2]);
  for (i = SHM_STAMP_SIZE; i < size; i++)
    if (data[i] != pattern_byte (*k, i))
      return FALSE;
  return TRUE;
}

static GstPadProbeReturn
stamp_in_place (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  GstElement *sink = GST_ELEMENT (gst_pad_get_parent (pad));
  guint64 *counter = user_data;
  GstBuffer *buf = gst_buffer_make_writable (GST_PAD_PROBE_INFO_BUFFER (info));
  GstClockTime base = gst_element_get_base_time (sink);
  GstMapInfo map;

  GST_PAD_PROBE_INFO_DATA (info) = buf;
  if (gst_buffer_map (buf, &map, GST_MAP_WRITE)) {
    shm_pattern_fill (map.data, map.size, (*counter)++,
        base ? GST_BUFFER_PTS (buf) + base : G_MAXUINT64, shm_monotonic_ns ());
    gst_buffer_unmap (buf, &map);
  }
  gst_object_unref (sink);
  return GST_PAD_PROBE_OK;
}

void
shm_stamp_sink (GstElement * sink)
{
  GstPad *pad = gst_element_get_static_pad (sink, "sink");

  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, stamp_in_place,
      g_new0 (guint64, 1), g_free);
  gst_object_unref (pad);
}

struct _ShmConsumer
{
  GstElement *pipeline;
  GstElement *src;
  GstElement *sink;
  gboolean check_ts;
  GstCaps *caps;
  gsize expected_size;          /* 0: any */
  GstVideoInfo vinfo;           /* valid when expected_size != 0 */
  gboolean have_k;
  GPtrArray *held;
  ShmResult r;
};

ShmConsumer *
shm_consumer_new (const gchar * socket, const gchar * extra, gboolean sync,
    gboolean check_ts)
{
  ShmConsumer *c = g_new0 (ShmConsumer, 1);
  GError *err = NULL;
  gchar *desc;

  desc = g_strdup_printf ("pinnedshmsrc name=src socket-path=%s %s ! "
      "appsink name=sink sync=%s", socket, extra ? extra : "",
      sync ? "true" : "false");
  c->pipeline = gst_parse_launch (desc, &err);
  if (c->pipeline == NULL)
    g_error ("could not build \"%s\": %s", desc, err->message);
  g_free (desc);
  c->src = gst_bin_get_by_name (GST_BIN (c->pipeline), "src");
  c->sink = gst_bin_get_by_name (GST_BIN (c->pipeline), "sink");
  shm_track_pipeline (c->pipeline);
  c->check_ts = check_ts;
  c->held = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_sample_unref);
  return c;
}

GstElement *
shm_consumer_get_pipeline (ShmConsumer * c)
{
  return c->pipeline;
}

GstElement *
shm_consumer_get_src (ShmConsumer * c)
{
  return c->src;
}

gboolean
shm_consumer_start (ShmConsumer * c)
{
  return gst_element_set_state (c->pipeline, GST_STATE_PLAYING)
      != GST_STATE_CHANGE_FAILURE;
}

/* Maps @buf as a video frame (planes found through its GstVideoMeta, each
 * in whatever memory holds it) and checks the first and last line of every
 * plane against the pattern at the meta's offsets in the frame. */
static gboolean
check_planes (ShmConsumer * c, GstBuffer * buf, guint64 k)
{
  GstVideoMeta *vm = gst_buffer_get_video_meta (buf);
  GstVideoFrame frame;
  gboolean ok = TRUE;
  guint p;

  if (!gst_video_frame_map (&frame, &c->vinfo, buf, GST_MAP_READ))
    return FALSE;
  for (p = 0; ok && p < GST_VIDEO_FRAME_N_PLANES (&frame); p++) {
    const guint8 *data = GST_VIDEO_FRAME_PLANE_DATA (&frame, p);
    gint stride = GST_VIDEO_FRAME_PLANE_STRIDE (&frame, p);
    gint comp[GST_VIDEO_MAX_COMPONENTS];
    gint lines, l, j;

    gst_video_format_info_component (frame.info.finfo, p, comp);
    lines = GST_VIDEO_FRAME_COMP_HEIGHT (&frame, comp[0]);
    for (l = 0; ok && l < lines; l += MAX (lines - 1, 1)) {
      for (j = 0; ok && j < stride; j++) {
        gsize at = vm->offset[p] + (gsize) l * stride + j;

        if (at >= SHM_STAMP_SIZE
            && data[(gsize) l * stride + j] != pattern_byte (k, at))
          ok = FALSE;
      }
    }
  }
  gst_video_frame_unmap (&frame);
  return ok;
}

static void
check_sample (ShmConsumer * c, GstSample * sample)
{
  GstBuffer *buf = gst_sample_get_buffer (sample);
  GstCaps *caps = gst_sample_get_caps (sample);
  GstMapInfo map;
  guint64 k, clock_pts, mono;
  guint i, n;
  gboolean pinned = TRUE;

  if (caps && (c->caps == NULL || !gst_caps_is_equal (caps, c->caps))) {
    GstVideoInfo info;

    gst_caps_replace (&c->caps, caps);
    c->r.caps_changes++;
    c->expected_size = 0;
    if (gst_structure_has_name (gst_caps_get_structure (caps, 0),
            "video/x-raw") && gst_video_info_from_caps (&info, caps)) {
      c->expected_size = GST_VIDEO_INFO_SIZE (&info);
      c->vinfo = info;
    }
  }

  n = gst_buffer_n_memory (buf);
  c->r.max_memories = MAX (c->r.max_memories, n);
  for (i = 0; i < n; i++) {
    GstMemory *mem = gst_buffer_peek_memory (buf, i);

    if (!gst_is_pinned_memory (mem) || !GST_MEMORY_IS_READONLY (mem))
      pinned = FALSE;
  }
  if (pinned)
    c->r.pinned++;

  if (c->expected_size && gst_buffer_get_size (buf) != c->expected_size)
    c->r.wrong_size++;

  if (!gst_buffer_map (buf, &map, GST_MAP_READ)) {
    c->r.bad++;
    return;
  }
  if (!shm_pattern_check (map.data, map.size, &k, &clock_pts, &mono)) {
    c->r.bad++;
    gst_buffer_unmap (buf, &map);
    return;
  }
  gst_buffer_unmap (buf, &map);

  c->r.frames++;
  if (GST_BUFFER_OFFSET (buf) == k)
    c->r.offset_ok++;
  if (c->expected_size) {
    GstVideoMeta *vm = gst_buffer_get_video_meta (buf);
    gint fn = GST_VIDEO_INFO_FPS_N (&c->vinfo);
    gint fd = GST_VIDEO_INFO_FPS_D (&c->vinfo);
    guint p, ok = vm != NULL
        && vm->n_planes == GST_VIDEO_INFO_N_PLANES (&c->vinfo)
        && vm->width == (guint) GST_VIDEO_INFO_WIDTH (&c->vinfo)
        && vm->height == (guint) GST_VIDEO_INFO_HEIGHT (&c->vinfo);

    for (p = 0; ok && p < vm->n_planes; p++)
      ok = vm->offset[p] == GST_VIDEO_INFO_PLANE_OFFSET (&c->vinfo, p)
          && vm->stride[p] == GST_VIDEO_INFO_PLANE_STRIDE (&c->vinfo, p);
    if (ok)
      c->r.vmeta_ok++;
    if (vm != NULL && check_planes (c, buf, k))
      c->r.planes_ok++;
    /* videotestsrc rounds each duration to the ns: +-1 */
    if (fn > 0 && GST_BUFFER_DURATION_IS_VALID (buf)
        && ABS ((gint64) GST_BUFFER_DURATION (buf) -
            (gint64) gst_util_uint64_scale_int (GST_SECOND, fd, fn)) <= 1)
      c->r.duration_ok++;
  }
  if (!c->have_k) {
    c->r.first_k = k;
    c->have_k = TRUE;
  } else if (k <= c->r.last_k) {
    c->r.out_of_order++;
  } else {
    c->r.gaps += k - c->r.last_k - 1;
  }
  c->r.last_k = k;
  {
    guint64 now = shm_monotonic_ns ();
    if (now > mono)
      c->r.latency_sum_ns += now - mono;
  }

  if (c->check_ts && clock_pts != G_MAXUINT64) {
    GstClockTime base = gst_element_get_base_time (c->pipeline);

    c->r.ts_checked++;
    if (!GST_BUFFER_PTS_IS_VALID (buf)
        || GST_BUFFER_PTS (buf) + base != clock_pts)
      c->r.ts_bad++;
  }
}

/* Takes the errors and EOS posted so far; the first error is kept. */
static void
drain_bus (ShmConsumer * c, GstBus * bus)
{
  GstMessage *msg;

  while ((msg = gst_bus_pop_filtered (bus,
              GST_MESSAGE_ERROR | GST_MESSAGE_EOS))) {
    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
      GError *err = NULL;
      gchar *dbg = NULL;

      gst_message_parse_error (msg, &err, &dbg);
      if (!c->r.error) {
        c->r.error = TRUE;
        c->r.error_text = g_strdup_printf ("%s (%s)", err->message,
            dbg ? dbg : "");
      }
      g_clear_error (&err);
      g_free (dbg);
    }
    /* EOS: samples can still be queued in the appsink; its own EOS
     * (below) ends the run */
    gst_message_unref (msg);
  }
}

guint
shm_consumer_run (ShmConsumer * c, guint n, gint timeout_ms, guint hold)
{
  GstBus *bus = gst_element_get_bus (c->pipeline);
  guint got = 0;
  gint64 last = g_get_monotonic_time ();

  while (!c->r.eos && !c->r.error && (n == 0 || got < n)) {
    GstSample *sample;

    drain_bus (c, bus);
    if (c->r.error)
      break;

    sample = gst_app_sink_try_pull_sample (GST_APP_SINK (c->sink),
        20 * GST_MSECOND);
    if (sample == NULL) {
      if (gst_app_sink_is_eos (GST_APP_SINK (c->sink))) {
        /* a source that fails posts its error, then pushes EOS */
        drain_bus (c, bus);
        c->r.eos = TRUE;
      }
      if (timeout_ms >= 0
          && g_get_monotonic_time () - last > (gint64) timeout_ms * 1000)
        break;
      continue;
    }
    last = g_get_monotonic_time ();
    check_sample (c, sample);
    got++;
    if (c->held->len < hold)
      g_ptr_array_add (c->held, sample);
    else
      gst_sample_unref (sample);
  }
  gst_object_unref (bus);
  {
    GstStructure *st;
    g_object_get (c->src, "stats", &st, NULL);
    gst_structure_get_uint64 (st, "frames", &c->r.src_frames);
    gst_structure_free (st);
  }
  return got;
}

guint
shm_consumer_verify_held (ShmConsumer * c)
{
  guint i, ok = 0;

  for (i = 0; i < c->held->len; i++) {
    GstBuffer *buf = gst_sample_get_buffer (g_ptr_array_index (c->held, i));
    guint64 k, t, m;
    GstMapInfo map;

    if (!gst_buffer_map (buf, &map, GST_MAP_READ))
      continue;
    if (shm_pattern_check (map.data, map.size, &k, &t, &m))
      ok++;
    gst_buffer_unmap (buf, &map);
  }
  return ok;
}

void
shm_consumer_drop_held (ShmConsumer * c)
{
  g_ptr_array_set_size (c->held, 0);
}

const ShmResult *
shm_consumer_result (ShmConsumer * c)
{
  return &c->r;
}

gchar *
shm_result_to_string (const ShmResult * r)
{
  return g_strdup_printf ("RESULT frames=%u bad=%u wrong_size=%u "
      "out_of_order=%u gaps=%u caps_changes=%u pinned=%u ts_checked=%u "
      "ts_bad=%u offset_ok=%u duration_ok=%u vmeta_ok=%u planes_ok=%u "
      "max_memories=%u src_frames=%"
      G_GUINT64_FORMAT " eos=%d error=%d first_k=%" G_GUINT64_FORMAT " last_k=%"
      G_GUINT64_FORMAT " latency_us=%" G_GUINT64_FORMAT " error_text=%s",
      r->frames, r->bad, r->wrong_size, r->out_of_order, r->gaps,
      r->caps_changes, r->pinned, r->ts_checked, r->ts_bad, r->offset_ok,
      r->duration_ok, r->vmeta_ok, r->planes_ok, r->max_memories,
      r->src_frames,
      r->eos, r->error,
      r->first_k, r->last_k,
      r->frames ? r->latency_sum_ns / r->frames / 1000 : 0,
      r->error_text ? r->error_text : "");
}

void
shm_consumer_free (ShmConsumer * c)
{
  shm_untrack_pipeline (c->pipeline);
  gst_element_set_state (c->pipeline, GST_STATE_NULL);
  g_ptr_array_unref (c->held);
  gst_caps_replace (&c->caps, NULL);
  gst_object_unref (c->src);
  gst_object_unref (c->sink);
  gst_object_unref (c->pipeline);
  g_free (c->r.error_text);
  g_free (c);
}
