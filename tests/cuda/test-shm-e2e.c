/* pinnedflow CUDA suite: a decoder's device output to another process's
 * GPU consumers, end to end (issue 32, "Done when")
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   test-shm-e2e rgba|nv12 PYTHON CONSUMER_PY   (the one run, in a format)
 *
 * Run with the emulators' environment, PFEMU_VMM=1 and the Python bridge
 * on PYTHONPATH (meson: tests/bridge/meson.build, shm-e2e and
 * shm-e2e-nv12). Exit 0 pass,
 * 77 skip (nvcodec's cudaupload or cudadownload not registered).
 *
 * In one run, four processes (forked before anything touches CUDA; the
 * emulator enforces CUDA's fork rule), on one socket:
 *   A: videotestsrc pattern=ball ! RGBA (or NV12) 64x48 ! cudaupload !
 *      video/x-raw(memory:CUDAMemory) ! pinnedshmsink min-clients=3
 *      (nvcodec's cudaupload: the emulators' stand-in for nvh264dec's
 *      device output);
 *   B1: pinnedshmsrc device-frames=on ! video/x-raw(memory:CUDAMemory) !
 *      cudadownload ! appsink;
 *   B2: pinnedshmsrc device-frames=on ! pinnedcudadownload ! appsink;
 *   C: pinnedflow.Consumer(device=True) in Python, each frame read
 *      through its DLPack capsule (tests/bridge/shm_e2e_consumer.py).
 * Every consumer gets all 20 frames, byte-exact against the same
 * videotestsrc frames made on the CPU, as device frames (B's src:
 * device-frames 20; C: the device domain). Each process reports its
 * element stats and the emulator's copies by direction (pfemu_query
 * copies.dtod/htod/dtoh, counted from before its pipeline) into a file;
 * this process checks them against the version's copy budget (in frame
 * copies; the emulator counts one per plane: NV12 doubles its counts):
 *   A: device-copies 20 and 20 device-to-device copies on 1.22 (the
 *      GstCudaMemory copied into the sink's device segment), 0 and
 *      zero-copy-frames 20 on 1.24+ (cudaupload wrote into the sink's
 *      exportable pool), its stat copies (any kind) the same; 20
 *      host-to-device copies (cudaupload's uploads), no device-to-host
 *      copy (no host frame made for anyone);
 *   B1: device-copies 20 = its device-to-device copies on 1.22 (the
 *      src's own copy into a GstCudaBufferPool), 0 on 1.24+ (wrapped);
 *   B2: device-copies 0, no device-to-device copy (memory:PinnedflowCUDA
 *      chosen, no copy on any version);
 *   C: no device-to-device copy.
 * So between cudaupload's output and the reads: 0 copies on 1.24+; on
 * 1.22 one per frame for B2 and C (the sink's), two for B1 (the sink's,
 * the src's). No process uploads but A. Nothing left: no VMM handle,
 * reservation or mapping in any process, no fd in A (once its pipeline
 * is down), B1, B2, C and here.
 */
#include <pinnedflow/pf-device-segment.h>

#include "pf-test-util.h"

#include <gst/gst.h>
#include <gst/app/gstappsink.h>
#include <gst/video/video.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define W 64
#define H 48
#define N_FRAMES 20

static long (*emu_query) (const char *);
/* the run's format (RGBA, NV12) and its planes */
static const char *format = "RGBA";
static guint n_planes = 1;

static void
emu_up (void)
{
  const char *rt_path = getenv ("GST_PINNEDFLOW_CUDART");
  void *rt = rt_path ? dlopen (rt_path, RTLD_NOW | RTLD_LOCAL) : NULL;

  if (rt != NULL)
    *(void **) &emu_query = dlsym (rt, "pfemu_query");
  CHECK_MSG (emu_query != NULL, "cannot load the cudart emulator: %s",
      dlerror ());
}

static void
check_vmm_empty (const char *who)
{
  CHECK_INT (pf_device_segment_teardown_errors (), ==, 0);
  CHECK_MSG (emu_query ("live.vmm.handles") == 0
      && emu_query ("live.vmm.reservations") == 0
      && emu_query ("live.vmm.mappings") == 0,
      "%s: VMM left: %ld handles, %ld reservations, %ld mappings", who,
      emu_query ("live.vmm.handles"), emu_query ("live.vmm.reservations"),
      emu_query ("live.vmm.mappings"));
}

/* The system clock's poll fds (kept for the process's life) are not a
 * pipeline's: made before counting fds. */
static void
clock_up (void)
{
  GstClock *clk = gst_system_clock_obtain ();
  GstClockID id = gst_clock_new_single_shot_id (clk,
      gst_clock_get_time (clk) + GST_MSECOND);

  gst_clock_id_wait (id, NULL);
  gst_clock_id_unref (id);
  gst_object_unref (clk);
}

static guint64
stat_u64 (GstElement * e, const gchar * field)
{
  GstStructure *s = NULL;
  guint64 v = G_MAXUINT64;

  g_object_get (e, "stats", &s, NULL);
  CHECK (s != NULL);
  CHECK_MSG (gst_structure_get_uint64 (s, field, &v), "no %s", field);
  gst_structure_free (s);
  return v;
}

static guint
gst_minor (void)
{
  guint major, minor, micro, nano;

  gst_version (&major, &minor, &micro, &nano);
  return minor;
}

/* 1.24+: no device copy (the sink's exportable pool, the src's wrap) */
static gboolean
wraps (void)
{
  return gst_minor () >= 24;
}

static gchar *
source_desc (void)
{
  return g_strdup_printf ("videotestsrc num-buffers=%d pattern=ball ! "
      "video/x-raw,format=%s,width=%d,height=%d,framerate=30/1", N_FRAMES,
      format, W, H);
}

/* The emulator's copies by direction in this process, from @base. */
typedef struct
{
  long dtod, htod, dtoh;
} copies;

static copies
copies_now (void)
{
  copies c = { emu_query ("copies.dtod"), emu_query ("copies.htod"),
    emu_query ("copies.dtoh")
  };
  return c;
}

static void
fail_on_error (GstMessage * msg, const char *who)
{
  GError *e = NULL;
  gchar *dbg = NULL;

  if (msg == NULL || GST_MESSAGE_TYPE (msg) != GST_MESSAGE_ERROR)
    return;
  gst_message_parse_error (msg, &e, &dbg);
  pf_test_fail (__FILE__, __LINE__, "%s: error from %s: %s (%s)", who,
      GST_MESSAGE_SRC_NAME (msg), e->message, dbg ? dbg : "");
}

/* ---- A: the producer ---------------------------------------------------- */

static int
producer_main (const char *path, int clients, const char *report)
{
  gchar *src = source_desc ();
  gchar *desc = g_strdup_printf ("%s ! cudaupload ! "
      "video/x-raw(memory:CUDAMemory) ! pinnedshmsink name=s "
      "socket-path=%s wait-for-connection=true min-clients=%d "
      "max-clients=%d max-client-buffers=2", src, path, clients, clients);
  GError *err = NULL;
  GstElement *pipe, *s;
  GstBus *bus;
  GstMessage *msg;
  copies c0, c;
  guint64 frames, dcopies, zero;
  int fds0;
  FILE *f;

  gst_init (NULL, NULL);
  emu_up ();
  clock_up ();
  fds0 = pf_test_count_fds ();
  c0 = copies_now ();
  pipe = gst_parse_launch (desc, &err);
  CHECK_MSG (pipe != NULL, "%s: %s", desc, err ? err->message : "?");
  s = gst_bin_get_by_name (GST_BIN (pipe), "s");
  bus = gst_element_get_bus (pipe);
  CHECK (gst_element_set_state (pipe, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  msg = gst_bus_timed_pop_filtered (bus, 60 * GST_SECOND,
      GST_MESSAGE_ERROR | GST_MESSAGE_EOS);
  fail_on_error (msg, "A");
  CHECK_MSG (msg != NULL, "A: no EOS");
  gst_message_unref (msg);
  frames = stat_u64 (s, "frames");
  dcopies = stat_u64 (s, "device-copies");
  zero = stat_u64 (s, "zero-copy-frames");
  CHECK (gst_element_set_state (pipe, GST_STATE_NULL) ==
      GST_STATE_CHANGE_SUCCESS);
  c = copies_now ();
  printf ("A (GStreamer 1.%u): frames %" G_GUINT64_FORMAT ", device-copies %"
      G_GUINT64_FORMAT ", zero-copy-frames %" G_GUINT64_FORMAT ", copies "
      "%" G_GUINT64_FORMAT "; emulator: dtod %ld htod %ld dtoh %ld\n",
      gst_minor (), frames, dcopies, zero, stat_u64 (s, "copies"),
      c.dtod - c0.dtod, c.htod - c0.htod, c.dtoh - c0.dtoh);
  fflush (stdout);
  f = fopen (report, "we");
  CHECK (f != NULL);
  fprintf (f, "frames %" G_GUINT64_FORMAT " device-copies %"
      G_GUINT64_FORMAT " zero-copy-frames %" G_GUINT64_FORMAT
      " copies %" G_GUINT64_FORMAT " dtod %ld htod %ld dtoh %ld\n",
      frames, dcopies, zero, stat_u64 (s, "copies"), c.dtod - c0.dtod,
      c.htod - c0.htod, c.dtoh - c0.dtoh);
  CHECK_INT (fclose (f), ==, 0);
  gst_object_unref (s);
  gst_object_unref (bus);
  gst_object_unref (pipe);
  g_free (desc);
  g_free (src);
  /* every frame back from every consumer, the segments gone */
  check_vmm_empty ("A");
  CHECK_MSG (pf_test_count_fds () == fds0, "A: fds %d, were %d",
      pf_test_count_fds (), fds0);
  return 0;
}

/* ---- B: pinnedshmsrc consumers ----------------------------------------- */

static void
check_frame (GstSample * sample, GstBuffer * want_buf, guint64 seq,
    const char *who)
{
  GstVideoInfo info;
  GstVideoFrame frame, want;
  guint p;
  gsize r;

  CHECK (gst_video_info_from_caps (&info, gst_sample_get_caps (sample)));
  CHECK_INT (GST_VIDEO_INFO_WIDTH (&info), ==, W);
  CHECK_INT (GST_VIDEO_INFO_HEIGHT (&info), ==, H);
  CHECK (gst_video_frame_map (&frame, &info, gst_sample_get_buffer (sample),
          GST_MAP_READ));
  CHECK (gst_video_frame_map (&want, &info, want_buf, GST_MAP_READ));
  CHECK_INT (GST_VIDEO_FRAME_N_PLANES (&frame), ==, n_planes);
  for (p = 0; p < n_planes; p++) {
    gsize rows = GST_VIDEO_FRAME_COMP_HEIGHT (&frame, p);
    gsize bytes = GST_VIDEO_FRAME_COMP_WIDTH (&frame, p) *
        GST_VIDEO_FRAME_COMP_PSTRIDE (&frame, p);

    for (r = 0; r < rows; r++)
      CHECK_MSG (memcmp ((const guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&frame,
                  p) + r * GST_VIDEO_FRAME_PLANE_STRIDE (&frame, p),
              (const guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&want, p) +
              r * GST_VIDEO_FRAME_PLANE_STRIDE (&want, p), bytes) == 0,
          "%s: frame %" G_GUINT64_FORMAT " plane %u row %" G_GSIZE_FORMAT
          " differs", who, seq, p, r);
  }
  gst_video_frame_unmap (&want);
  gst_video_frame_unmap (&frame);
}

/* @ours: pinnedcudadownload (memory:PinnedflowCUDA), else cudadownload
 * (memory:CUDAMemory) */
static int
consumer_main (const char *path, gboolean ours, const char *report)
{
  const char *who = ours ? "B2" : "B1";
  gchar *src = source_desc ();
  gchar *desc = g_strdup_printf ("%s ! appsink name=sink sync=false", src);
  const char *feature = ours ? "memory:PinnedflowCUDA" : "memory:CUDAMemory";
  GPtrArray *expected = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_buffer_unref);
  GError *err = NULL;
  GstElement *pipe, *sink, *srce;
  GstBus *bus;
  GstSample *sample;
  GstMessage *msg;
  GstPad *pad;
  GstCaps *caps;
  guint64 seq = 0, dcopies, dframes;
  copies c0, c;
  int fds0;
  FILE *f;

  gst_init (NULL, NULL);
  /* the frames A's videotestsrc makes, made here on the CPU */
  pipe = gst_parse_launch (desc, &err);
  CHECK_MSG (pipe != NULL, "%s: %s", desc, err ? err->message : "?");
  sink = gst_bin_get_by_name (GST_BIN (pipe), "sink");
  CHECK (gst_element_set_state (pipe, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  while ((sample = gst_app_sink_pull_sample (GST_APP_SINK (sink))) != NULL) {
    g_ptr_array_add (expected,
        gst_buffer_copy_deep (gst_sample_get_buffer (sample)));
    gst_sample_unref (sample);
  }
  CHECK (gst_element_set_state (pipe, GST_STATE_NULL) ==
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (sink);
  gst_object_unref (pipe);
  g_free (desc);
  CHECK_INT (expected->len, ==, N_FRAMES);

  emu_up ();
  clock_up ();
  fds0 = pf_test_count_fds ();
  c0 = copies_now ();
  desc = g_strdup_printf ("pinnedshmsrc name=src socket-path=%s "
      "connect-timeout=20000 delivery=every-frame device-frames=on ! %s ! "
      "video/x-raw ! appsink name=sink sync=false max-buffers=2 "
      "enable-last-sample=false", path, ours ? "pinnedcudadownload" :
      "video/x-raw(memory:CUDAMemory) ! cudadownload");
  pipe = gst_parse_launch (desc, &err);
  CHECK_MSG (pipe != NULL, "%s: %s", desc, err ? err->message : "?");
  sink = gst_bin_get_by_name (GST_BIN (pipe), "sink");
  srce = gst_bin_get_by_name (GST_BIN (pipe), "src");
  bus = gst_element_get_bus (pipe);
  CHECK (gst_element_set_state (pipe, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  while ((sample = gst_app_sink_pull_sample (GST_APP_SINK (sink))) != NULL) {
    CHECK_MSG (seq < N_FRAMES, "%s: more than %d frames", who, N_FRAMES);
    check_frame (sample, g_ptr_array_index (expected, seq), seq + 1, who);
    seq++;
    gst_sample_unref (sample);
  }
  msg = gst_bus_timed_pop_filtered (bus, 30 * GST_SECOND,
      GST_MESSAGE_ERROR | GST_MESSAGE_EOS);
  fail_on_error (msg, who);
  CHECK_MSG (msg != NULL, "%s: no EOS", who);
  gst_message_unref (msg);
  CHECK_INT (seq, ==, N_FRAMES);
  pad = gst_element_get_static_pad (srce, "src");
  caps = gst_pad_get_current_caps (pad);
  CHECK (caps != NULL);
  CHECK_MSG (gst_caps_features_contains (gst_caps_get_features (caps, 0),
          feature), "%s: the src's caps lack %s", who, feature);
  gst_caps_unref (caps);
  gst_object_unref (pad);
  CHECK_INT (stat_u64 (srce, "frames"), ==, N_FRAMES);
  dframes = stat_u64 (srce, "device-frames");
  dcopies = stat_u64 (srce, "device-copies");
  CHECK (gst_element_set_state (pipe, GST_STATE_NULL) ==
      GST_STATE_CHANGE_SUCCESS);
  c = copies_now ();
  printf ("%s: %" G_GUINT64_FORMAT " frames byte-exact as %s, "
      "device-frames %" G_GUINT64_FORMAT ", device-copies %" G_GUINT64_FORMAT
      "; emulator: dtod %ld htod %ld dtoh %ld\n", who, seq, feature, dframes,
      dcopies, c.dtod - c0.dtod, c.htod - c0.htod, c.dtoh - c0.dtoh);
  fflush (stdout);
  f = fopen (report, "we");
  CHECK (f != NULL);
  fprintf (f, "frames %" G_GUINT64_FORMAT " device-frames %" G_GUINT64_FORMAT
      " device-copies %" G_GUINT64_FORMAT " dtod %ld htod %ld dtoh %ld\n",
      seq, dframes, dcopies, c.dtod - c0.dtod, c.htod - c0.htod,
      c.dtoh - c0.dtoh);
  CHECK_INT (fclose (f), ==, 0);
  gst_object_unref (bus);
  gst_object_unref (sink);
  gst_object_unref (srce);
  gst_object_unref (pipe);
  g_free (desc);
  g_free (src);
  g_ptr_array_unref (expected);
  check_vmm_empty (who);
  CHECK_MSG (pf_test_count_fds () == fds0, "%s: fds %d, were %d", who,
      pf_test_count_fds (), fds0);
  return 0;
}

/* ---- this process: C, then the budget ---------------------------------- */

/* @key's value in the one-line report @path ("key value ...") */
static long
report_get (const char *path, const char *key)
{
  gchar *text = NULL, **tok;
  long v = -1;
  guint i;

  CHECK_MSG (g_file_get_contents (path, &text, NULL, NULL), "no report %s",
      path);
  tok = g_strsplit_set (g_strstrip (text), " ", -1);
  for (i = 0; tok[i] != NULL && tok[i + 1] != NULL; i += 2)
    if (strcmp (tok[i], key) == 0)
      v = strtol (tok[i + 1], NULL, 10);
  g_strfreev (tok);
  g_free (text);
  CHECK_MSG (v >= 0, "%s: no %s", path, key);
  return v;
}

static gboolean
have (const char *name)
{
  GstElementFactory *f = gst_element_factory_find (name);

  if (f == NULL)
    return FALSE;
  gst_object_unref (f);
  return TRUE;
}

int
main (int argc, char **argv)
{
  char dir[256], path[300], raw[300], rep[4][300];
  gchar *src, *desc, *out = NULL, *errout = NULL;
  pid_t a, b1, b2;
  long n = N_FRAMES, want;
  int fds0, status = -1;
  gint64 dtod_total;
  GError *err = NULL;
  GstElement *pipe;
  GstBus *bus;
  GstMessage *msg;

  if (argc != 4 || (strcmp (argv[1], "rgba") != 0
          && strcmp (argv[1], "nv12") != 0)) {
    fprintf (stderr, "usage: %s rgba|nv12 PYTHON CONSUMER_PY\n", argv[0]);
    return 2;
  }
  if (strcmp (argv[1], "nv12") == 0) {
    format = "NV12";
    n_planes = 2;
  }
  CHECK_MSG (getenv ("PFEMU_VMM") != NULL, "run with PFEMU_VMM=1 (meson)");
  gst_init (&argc, &argv);
  if (!have ("cudaupload") || !have ("cudadownload")) {
    printf ("SKIP: nvcodec's cudaupload/cudadownload not registered here\n");
    return 77;
  }
  clock_up ();
  fds0 = pf_test_count_fds ();
  CHECK_INT (pf_test_make_tmpdir (dir, sizeof (dir), "pf-e2e"), ==, 0);
  snprintf (path, sizeof (path), "%s/sock", dir);
  snprintf (raw, sizeof (raw), "%s/expected.raw", dir);
  snprintf (rep[0], sizeof (rep[0]), "%s/A", dir);
  snprintf (rep[1], sizeof (rep[1]), "%s/B1", dir);
  snprintf (rep[2], sizeof (rep[2]), "%s/B2", dir);
  snprintf (rep[3], sizeof (rep[3]), "%s/C", dir);

  /* A, B1, B2 first: nothing here has touched CUDA (nor will) */
  a = pf_test_fork ();
  CHECK (a >= 0);
  if (a == 0)
    _exit (producer_main (path, 3, rep[0]));
  b1 = pf_test_fork ();
  CHECK (b1 >= 0);
  if (b1 == 0)
    _exit (consumer_main (path, FALSE, rep[1]));
  b2 = pf_test_fork ();
  CHECK (b2 >= 0);
  if (b2 == 0)
    _exit (consumer_main (path, TRUE, rep[2]));

  /* C's expected frames, made on the CPU */
  src = source_desc ();
  desc = g_strdup_printf ("%s ! filesink location=%s", src, raw);
  pipe = gst_parse_launch (desc, &err);
  CHECK_MSG (pipe != NULL, "%s: %s", desc, err ? err->message : "?");
  bus = gst_element_get_bus (pipe);
  CHECK (gst_element_set_state (pipe, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  msg = gst_bus_timed_pop_filtered (bus, 30 * GST_SECOND,
      GST_MESSAGE_ERROR | GST_MESSAGE_EOS);
  fail_on_error (msg, "expected frames");
  CHECK (msg != NULL);
  gst_message_unref (msg);
  CHECK (gst_element_set_state (pipe, GST_STATE_NULL) ==
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (bus);
  gst_object_unref (pipe);
  g_free (desc);
  g_free (src);

  /* C: the Python node */
  {
    gchar *nstr = g_strdup_printf ("%d", N_FRAMES);
    gchar *wstr = g_strdup_printf ("%d", W);
    gchar *hstr = g_strdup_printf ("%d", H);
    gchar *pargv[] = { argv[2], argv[3], path, raw, nstr, wstr, hstr,
      (gchar *) format, rep[3], NULL
    };

    CHECK_MSG (g_spawn_sync (NULL, pargv, NULL, G_SPAWN_DEFAULT, NULL, NULL,
            &out, &errout, &status, &err), "python: %s",
        err ? err->message : "?");
    printf ("%s", out);
    fprintf (stderr, "%s", errout);
    CHECK_MSG (g_spawn_check_wait_status (status, NULL), "C (Python) "
        "failed: %s", errout);
    g_free (out);
    g_free (errout);
    g_free (nstr);
    g_free (wstr);
    g_free (hstr);
  }
  CHECK_INT (pf_test_exit_code (pf_test_wait (b1)), ==, 0);
  CHECK_INT (pf_test_exit_code (pf_test_wait (b2)), ==, 0);
  CHECK_INT (pf_test_exit_code (pf_test_wait (a)), ==, 0);

  /* the budget, from every process's own counts */
  CHECK_INT (report_get (rep[0], "frames"), ==, n);
  CHECK_INT (report_get (rep[1], "device-frames"), ==, n);
  CHECK_INT (report_get (rep[2], "device-frames"), ==, n);
  CHECK_INT (report_get (rep[3], "frames"), ==, n);
  /* A: the uploads only; no host frame made for anyone */
  CHECK_INT (report_get (rep[0], "htod"), ==, n * n_planes);
  CHECK_INT (report_get (rep[0], "dtoh"), ==, 0);
  /* the sink's copies (any kind): its device copies only */
  CHECK_INT (report_get (rep[0], "copies"), ==,
      report_get (rep[0], "device-copies"));
  /* nothing uploaded by a consumer */
  CHECK_INT (report_get (rep[1], "htod"), ==, 0);
  CHECK_INT (report_get (rep[2], "htod"), ==, 0);
  CHECK_INT (report_get (rep[3], "htod"), ==, 0);
  want = wraps ()? 0 : n;
  /* A: the sink's one copy on 1.22, none on 1.24+ */
  CHECK_INT (report_get (rep[0], "device-copies"), ==, want);
  /* the emulator counts a copy per plane */
  CHECK_INT (report_get (rep[0], "dtod"), ==, want * n_planes);
  CHECK_INT (report_get (rep[0], "zero-copy-frames"), ==, n - want);
  /* B1: the src's own counted copy on 1.22 (into a GstCudaBufferPool),
   * wrapped with none on 1.24+ */
  CHECK_INT (report_get (rep[1], "device-copies"), ==, want);
  CHECK_INT (report_get (rep[1], "dtod"), ==, want * n_planes);
  /* B2, C: none */
  CHECK_INT (report_get (rep[2], "device-copies"), ==, 0);
  CHECK_INT (report_get (rep[2], "dtod"), ==, 0);
  CHECK_INT (report_get (rep[3], "dtod"), ==, 0);
  dtod_total = report_get (rep[0], "dtod") + report_get (rep[1], "dtod") +
      report_get (rep[2], "dtod") + report_get (rep[3], "dtod");
  printf ("device-to-device copies in all four processes: %" G_GINT64_FORMAT
      " (%s, %u plane copies a frame) for %ld frames (GStreamer 1.%u): to "
      "B2 and C %ld frame copies per frame, to B1 %ld; C: frames %ld dtod %ld "
      "htod %ld\n", dtod_total, format, n_planes, n, gst_minor (),
      report_get (rep[0], "dtod") / n / n_planes,
      (report_get (rep[0], "dtod") + report_get (rep[1], "dtod")) / n /
      n_planes,
      report_get (rep[3], "frames"), report_get (rep[3], "dtod"),
      report_get (rep[3], "htod"));

  pf_test_remove_tree (dir);
  CHECK_MSG (pf_test_count_fds () == fds0, "fds %d, were %d",
      pf_test_count_fds (), fds0);
  printf ("e2e: ok\n");
  return 0;
}
