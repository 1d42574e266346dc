/* Helper process of the v4l2 tests: a consumer in another process that
 * checks every frame the V4L2 stand-in wrote, byte for byte.
 *
 *   v4l2-consumer SOCKET [HOLD [HOLD_FOR]]
 *
 * Runs pinnedshmsrc socket-path=SOCKET ! appsink until EOS, maps each
 * frame with its video meta (the strides the driver chose) and compares
 * every byte of every row with the pattern of pfemu-v4l2.h for the
 * sequence number in its header. HOLD: the first HOLD frames are kept
 * (their buffers referenced, so their slots stay with us) until HOLD_FOR
 * more frames arrived, then checked again: a driver that was given one
 * of their slots while we read it would have written a newer frame there.
 * Prints "READY" once connected, then
 *   RESULT frames=N bad=B first=S last=S held=K held_bad=H held_seen=F
 *          eos=E sysmem=M
 * (held_seen: frames received while the held ones were kept; sysmem: 1
 * when every frame came with system-memory caps) and exits 0
 * when EOS arrived, 1 on an error.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "pfemu-v4l2.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gst/gst.h>
#include <gst/app/gstappsink.h>
#include <gst/video/video.h>

#define MAX_HOLD 32

/* 0 when the frame is the stand-in's frame for its header's sequence;
 * *seq gets that sequence. */
static int
check_frame (GstBuffer * buf, GstVideoInfo * info, guint32 * seq)
{
  GstVideoFrame frame;
  guint p, y, x, rows_before = 0;
  int bad = 0;

  if (!gst_video_frame_map (&frame, info, buf, GST_MAP_READ))
    return 1;
  {
    const guint8 *d = GST_VIDEO_FRAME_PLANE_DATA (&frame, 0);

    if (memcmp (d, PFEMU_V4L2_MAGIC, 4) != 0)
      bad = 1;
    memcpy (seq, d + 4, 4);
  }
  for (p = 0; p < GST_VIDEO_FRAME_N_PLANES (&frame) && !bad; p++) {
    const guint8 *d = GST_VIDEO_FRAME_PLANE_DATA (&frame, p);
    gint stride = GST_VIDEO_FRAME_PLANE_STRIDE (&frame, p);
    guint rows = GST_VIDEO_FRAME_COMP_HEIGHT (&frame, p);
    guint rb = GST_VIDEO_FRAME_COMP_WIDTH (&frame, p) *
        GST_VIDEO_FRAME_COMP_PSTRIDE (&frame, p);

    if (GST_VIDEO_FRAME_FORMAT (&frame) == GST_VIDEO_FORMAT_YUY2)
      rb = GST_VIDEO_FRAME_WIDTH (&frame) * 2;
    for (y = 0; y < rows && !bad; y++) {
      const guint8 *row = d + (gsize) y * stride;
      guint r = rows_before + y;

      for (x = (r == 0 ? PFEMU_V4L2_HEADER : 0); x < rb; x++) {
        if (row[x] != pfemu_v4l2_pattern (*seq, r, x)) {
          g_printerr ("frame %u plane %u row %u byte %u: %u, expected %u\n",
              *seq, p, y, x, row[x], pfemu_v4l2_pattern (*seq, r, x));
          bad = 1;
          break;
        }
      }
    }
    rows_before += rows;
  }
  gst_video_frame_unmap (&frame);
  return bad;
}

int
main (int argc, char **argv)
{
  GstElement *pipeline, *sink;
  GError *err = NULL;
  gchar *desc;
  guint hold = 0, hold_for = 0, n_held = 0, held_seen = 0;
  guint frames = 0, bad = 0, held_bad = 0;
  guint32 first = 0, last = 0, held_seq[MAX_HOLD];
  GstSample *held[MAX_HOLD];
  gboolean eos = FALSE, sysmem = TRUE;
  guint i;

  gst_init (&argc, &argv);
  if (argc < 2) {
    g_printerr ("usage: %s SOCKET [HOLD [HOLD_FOR]]\n", argv[0]);
    return 2;
  }
  if (argc > 2)
    hold = MIN (atoi (argv[2]), MAX_HOLD);
  if (argc > 3)
    hold_for = atoi (argv[3]);

  desc = g_strdup_printf ("pinnedshmsrc socket-path=%s connect-timeout=20000"
      " delivery=every-frame ! appsink name=sink sync=false max-buffers=64",
      argv[1]);
  pipeline = gst_parse_launch (desc, &err);
  g_free (desc);
  if (pipeline == NULL) {
    g_printerr ("parse: %s\n", err->message);
    return 1;
  }
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  printf ("READY\n");
  fflush (stdout);

  for (;;) {
    GstSample *s = gst_app_sink_try_pull_sample (GST_APP_SINK (sink),
        30 * GST_SECOND);
    GstVideoInfo info;
    guint32 seq = 0;

    if (s == NULL) {
      eos = gst_app_sink_is_eos (GST_APP_SINK (sink));
      break;
    }
    if (!gst_video_info_from_caps (&info, gst_sample_get_caps (s))
        || check_frame (gst_sample_get_buffer (s), &info, &seq)) {
      bad++;
    }
    if (!gst_caps_features_is_equal (gst_caps_get_features
            (gst_sample_get_caps (s), 0),
            GST_CAPS_FEATURES_MEMORY_SYSTEM_MEMORY))
      sysmem = FALSE;
    if (frames == 0)
      first = seq;
    last = seq;
    frames++;
    if (n_held < hold && held_seen == 0) {
      held_seq[n_held] = seq;
      held[n_held++] = s;
      continue;
    }
    gst_sample_unref (s);
    if (n_held > 0 && held[0] != NULL) {
      if (++held_seen >= hold_for) {
        /* every held frame is still the one we got */
        for (i = 0; i < n_held; i++) {
          guint32 again = 0;

          if (!gst_video_info_from_caps (&info, gst_sample_get_caps (held[i]))
              || check_frame (gst_sample_get_buffer (held[i]), &info, &again)
              || again != held_seq[i])
            held_bad++;
          gst_sample_unref (held[i]);
          held[i] = NULL;
        }
      }
    }
  }
  for (i = 0; i < n_held; i++)
    if (held[i])
      gst_sample_unref (held[i]);
  {
    GstBus *bus = gst_element_get_bus (pipeline);
    GstMessage *m = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);

    if (m) {
      gchar *dbg = NULL;

      gst_message_parse_error (m, &err, &dbg);
      g_printerr ("ERROR from %s: %s (%s)\n", GST_MESSAGE_SRC_NAME (m),
          err->message, dbg);
      g_clear_error (&err);
      g_free (dbg);
      gst_message_unref (m);
      eos = FALSE;
    }
    gst_object_unref (bus);
  }

  printf ("RESULT frames=%u bad=%u first=%u last=%u held=%u held_bad=%u "
      "held_seen=%u eos=%d sysmem=%d\n", frames, bad, first, last, n_held,
      held_bad, held_seen, eos, sysmem);
  fflush (stdout);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  return eos ? 0 : 1;
}
