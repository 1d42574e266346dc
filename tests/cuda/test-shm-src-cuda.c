/* pinnedflow CUDA suite: pinnedshmsrc's device frames as memory:CUDAMemory,
 * and the domain it names (issue 32, item 2) on the driver-API stand-in
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   test-shm-src-cuda cuda|nv12|auto|order|domain|domain-off|resize|
 *                     no-device|other-device
 *
 * Run with the emulators' environment and PFEMU_VMM=1 (meson:
 * emu_vmm_env): GStreamer's own libgstcuda and nvcodec (cudadownload) run
 * on the driver stand-in. One case per process; exit 0 pass, 77 skip (no
 * cudadownload: nvcodec not installed). The producer process is forked
 * before anything here touches CUDA (the emulator enforces CUDA's fork
 * rule).
 *
 * cuda: the producer is videotestsrc ! 64x48 RGBA ! pinnedcudaupload !
 *   video/x-raw(memory:PinnedflowCUDA) ! pinnedshmsink (device frames in
 *   its device segments); here pinnedshmsrc device-frames=on !
 *   video/x-raw(memory:CUDAMemory) ! cudadownload ! appsink gets every
 *   frame byte-exact against the same videotestsrc frames made here; the
 *   src's caps carry memory:CUDAMemory; every frame counted as a device
 *   frame; device-copies 0 where libgstcuda wraps device memory (1.24+:
 *   gst_cuda_allocator_alloc_wrapped), one per frame on 1.22, and the
 *   emulator's device-to-device copies in this process agree; nothing
 *   left mapped (VMM handles, reservations, mappings) or open (fds) here
 *   once the pipeline is down, so every frame went back.
 * nv12: the same in NV12 (two planes, the chroma plane at its row offset).
 * auto: the same with device-frames=auto: a downstream that takes
 *   memory:CUDAMemory only (cudadownload) is enough to ask.
 * order: pinnedshmsrc ! pinnedcudadownload, which takes both features:
 *   memory:PinnedflowCUDA is chosen (no copy, no GstCudaContext, on any
 *   version): device-copies 0.
 * domain: the producer is a host node producer with domains enabled
 *   (pf_node_producer_enable_domains()): pinnedshmsrc device-frames=on
 *   names device 0 in a DOMAIN (its stats: domain-device 0) and gets
 *   every frame as a device frame, byte-exact through memory:CUDAMemory
 *   and cudadownload; the producer uploaded each frame once (its domain
 *   stats: N uploads, checked there), this process uploaded nothing
 *   (no host-to-device copy here).
 * resize: the domain case with new caps halfway (frames 11-20 at 32x24):
 *   every frame byte-exact at its size through memory:CUDAMemory (1.22: a
 *   pool for the new size), device-copies as in cuda.
 * domain-off: the same producer without domains enabled, and
 *   pinnedshmsrc device-frames=on ! video/x-raw ! appsink: the DOMAIN is
 *   sent (domain-device 0) and host frames still come, byte-exact, as
 *   system memory (device-frames 0).
 * no-device: pinnedshmsrc device-frames=on cuda-device-id=3 on a machine
 *   with one device: a RESOURCE SETTINGS error naming the property once
 *   connected, no frame, no crash; the producer (a node producer) stays up
 *   until the pipeline is down; no fd or mapping left here.
 * other-device: two devices here (PFEMU_DEVICE_COUNT=2), the frames on
 *   device 0 (the producer of "cuda"), pinnedshmsrc cuda-device-id=1 !
 *   memory:CUDAMemory: the GstCudaContext is device 1's, so the first
 *   frame is a STREAM DECODE error naming both devices; nothing left
 *   mapped or open here (the producer, whose sink then waits for another
 *   consumer, is killed).
 */
#include <pinnedflow/pf-device-segment.h>
#include <pinnedflow/pf-node-domains.h>
#include <pinnedflow/pf-node.h>
#include <pinnedflow/pf-producer.h>

#include "pf-test-util.h"

#include <gst/gst.h>
#include <gst/app/gstappsink.h>
#include <gst/video/video.h>

#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define W 64
#define H 48
#define N_FRAMES 20
#define SLOTS 4

static long (*emu_query) (const char *);

/* what the producer sent, frame by frame (GstBuffer, system memory) */
static GPtrArray *expected;

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
check_vmm_empty (void)
{
  CHECK_INT (pf_device_segment_teardown_errors (), ==, 0);
  CHECK_INT (emu_query ("live.vmm.handles"), ==, 0);
  CHECK_INT (emu_query ("live.vmm.reservations"), ==, 0);
  CHECK_INT (emu_query ("live.vmm.mappings"), ==, 0);
}

/* Whether the libgstcuda the plugin opens wraps device memory (1.24+). */
static gboolean
gstcuda_wraps (void)
{
  const char *name = getenv ("GST_PINNEDFLOW_GSTCUDA");
  void *h = dlopen (name && *name ? name : "libgstcuda-1.0.so.0",
      RTLD_NOW | RTLD_LOCAL);

  CHECK_MSG (h != NULL, "libgstcuda: %s", dlerror ());
  return dlsym (h, "gst_cuda_allocator_alloc_wrapped") != NULL;
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

static gint
stat_int (GstElement * e, const gchar * field)
{
  GstStructure *s = NULL;
  gint v = G_MININT;

  g_object_get (e, "stats", &s, NULL);
  CHECK (s != NULL);
  CHECK_MSG (gst_structure_get_int (s, field, &v), "no %s", field);
  gst_structure_free (s);
  return v;
}

/* Runs @desc (an appsink named sink) to EOS; its buffers deep-copied into
 * @out when given. */
static void
run_to_eos (const gchar * desc, GPtrArray * out, GstElement ** keep)
{
  GError *err = NULL;
  GstElement *pipe = gst_parse_launch (desc, &err);
  GstElement *sink;
  GstBus *bus;
  GstMessage *msg;

  CHECK_MSG (pipe != NULL, "%s: %s", desc, err ? err->message : "?");
  sink = gst_bin_get_by_name (GST_BIN (pipe), "sink");
  bus = gst_element_get_bus (pipe);
  CHECK (gst_element_set_state (pipe, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  if (out != NULL) {
    GstSample *sample;

    CHECK (sink != NULL);
    while ((sample = gst_app_sink_pull_sample (GST_APP_SINK (sink))) != NULL) {
      g_ptr_array_add (out, gst_buffer_copy_deep (gst_sample_get_buffer
              (sample)));
      gst_sample_unref (sample);
    }
  }
  msg = gst_bus_timed_pop_filtered (bus, 30 * GST_SECOND,
      GST_MESSAGE_ERROR | GST_MESSAGE_EOS);
  if (msg != NULL && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    GError *e = NULL;
    gchar *dbg = NULL;

    gst_message_parse_error (msg, &e, &dbg);
    pf_test_fail (__FILE__, __LINE__, "%s: error from %s: %s (%s)", desc,
        GST_MESSAGE_SRC_NAME (msg), e->message, dbg ? dbg : "");
  }
  CHECK_MSG (msg != NULL, "%s: no EOS", desc);
  gst_message_unref (msg);
  if (keep == NULL) {
    CHECK (gst_element_set_state (pipe, GST_STATE_NULL) ==
        GST_STATE_CHANGE_SUCCESS);
    gst_object_unref (pipe);
  } else {
    *keep = pipe;
  }
  gst_object_unref (bus);
  if (sink != NULL)
    gst_object_unref (sink);
}

/* ---- producers --------------------------------------------------------- */

static gchar *
source_desc (const char *format)
{
  return g_strdup_printf ("videotestsrc num-buffers=%d pattern=ball ! "
      "video/x-raw,format=%s,width=%d,height=%d,framerate=30/1", N_FRAMES,
      format, W, H);
}

/* pinnedcudaupload's device frames through pinnedshmsink; @strict: the
 * consumer takes every frame; else (other-device) the sink copies into
 * no other domain (domains=false): its frames stay on device 0, whatever
 * device the consumer named */
static int
sink_producer_main (const char *path, const char *format, gboolean strict)
{
  gchar *src = source_desc (format);
  gchar *desc = g_strdup_printf ("%s ! pinnedcudaupload ! "
      "video/x-raw(memory:PinnedflowCUDA) ! pinnedshmsink name=s "
      "socket-path=%s wait-for-connection=true%s", src, path,
      strict ? "" : " domains=false");
  GstElement *pipe = NULL, *s;

  gst_init (NULL, NULL);
  run_to_eos (desc, NULL, &pipe);
  s = gst_bin_get_by_name (GST_BIN (pipe), "s");
  if (strict) {
    CHECK_INT (stat_u64 (s, "frames"), ==, N_FRAMES);
    CHECK_INT (stat_u64 (s, "device-copies"), ==, 0);
    CHECK_INT (stat_u64 (s, "zero-copy-frames"), ==, N_FRAMES);
  }
  gst_object_unref (s);
  CHECK (gst_element_set_state (pipe, GST_STATE_NULL) ==
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (pipe);
  g_free (desc);
  g_free (src);
  emu_up ();
  check_vmm_empty ();
  return 0;
}

static guint8
pattern (gsize i, guint64 k)
{
  return (guint8) ((i * 13 + k * 71 + (i >> 9)) & 0xff);
}

/* the node producers' frame size: W x H, after frame N_FRAMES / 2 half
 * that with @resize */
static guint
frame_w (guint64 seq, gboolean resize)
{
  return resize && seq > N_FRAMES / 2 ? W / 2 : W;
}

static guint
frame_h (guint64 seq, gboolean resize)
{
  return resize && seq > N_FRAMES / 2 ? H / 2 : H;
}

/* a host node producer that uploads into the domains its consumers want
 * (@domains), or that ignores them; new caps halfway with @resize */
static int
node_producer_main (const char *path, gboolean domains, gboolean resize)
{
  pf_node_producer_config cfg;
  pf_node_producer *p = NULL;
  pf_node_domain_stats st;
  gsize i;
  int k, res;

  memset (&cfg, 0, sizeof (cfg));
  cfg.socket_path = path;
  cfg.n_slots = SLOTS;
  cfg.slot_size = W * 4 * H;
  CHECK_INT (pf_node_producer_new (&cfg, &p), ==, 0);
  res = domains ? pf_node_producer_enable_domains (p) : 0;
  CHECK_MSG (res == 0, "enable_domains: %d", res);
  CHECK_INT (pf_node_producer_set_video (p, "RGBA", W, H, 30, 1), ==, 0);
  CHECK_INT (pf_node_producer_wait_clients (p, 1, 20000), ==, 0);
  /* the consumer's DOMAIN has come */
  for (k = 0; k < 2000; k++) {
    pf_producer_domain d[2];

    if (pf_producer_get_device_domains (pf_node_producer_get_transport (p),
            d, 2) == 1)
      break;
    g_usleep (5000);
  }
  CHECK_MSG (k < 2000, "no DOMAIN from pinnedshmsrc");
  for (k = 1; k <= N_FRAMES; k++) {
    gsize n = (gsize) frame_w (k, resize) * 4 * frame_h (k, resize);
    pf_node_loan loan;

    if (resize && k == N_FRAMES / 2 + 1)
      CHECK_INT (pf_node_producer_set_video (p, "RGBA", W / 2, H / 2, 30, 1),
          ==, 0);
    CHECK_INT (pf_node_producer_loan_video (p, 20000, &loan), ==, 0);
    for (i = 0; i < n; i++)
      ((guint8 *) loan.data)[i] = pattern (i, (guint64) k);
    loan.pts = (uint64_t) k *(GST_SECOND / 30);
    res = pf_node_producer_publish (p, &loan);
    CHECK_MSG (res == 1, "publish %d: %d", k, res);
  }
  if (!domains) {
    /* no domains: no domain stats. EOS first: appsink keeps the last
     * buffer it gave out (its cached GstSample) until the next pull or its
     * stop, and here that buffer is the producer's frame itself, so it
     * comes back when the consumer stops; the consumer's side checks that
     * nothing stays mapped there */
    CHECK_INT (pf_node_producer_get_domain_stats (p, &st), ==, -EINVAL);
    memset (&st, 0, sizeof (st));
    st.frames = N_FRAMES;
    CHECK_INT (pf_node_producer_send_eos (p), >=, 0);
    CHECK_INT (pf_node_producer_wait_idle (p, 20000), ==, 0);
  } else {
    CHECK_INT (pf_node_producer_wait_idle (p, 20000), ==, 0);
    CHECK_INT (pf_node_producer_get_domain_stats (p, &st), ==, 0);
    /* one upload per frame, into the consumer's device */
    CHECK_INT (st.frames, ==, N_FRAMES);
    CHECK_INT (st.uploads, ==, N_FRAMES);
    CHECK_INT (st.frames_uploaded, ==, N_FRAMES);
    CHECK_INT (st.n_domains, ==, 1);
    CHECK_INT (st.domain[0].ordinal, ==, 0);
    CHECK_INT (st.domain[0].uploads, ==, N_FRAMES);
    CHECK_INT (pf_node_producer_send_eos (p), >=, 0);
  }
  pf_node_producer_free (p);
  printf ("producer: %" G_GUINT64_FORMAT " frames, %" G_GUINT64_FORMAT
      " uploads\n", (guint64) st.frames, (guint64) st.uploads);
  fflush (stdout);
  return 0;
}

/* a node producer that stays up until @done_fd reads EOF (the consumer
 * may come and go before it could see it) */
static int
idle_producer_main (const char *path, int done_fd)
{
  pf_node_producer_config cfg;
  pf_node_producer *p = NULL;
  char b;

  memset (&cfg, 0, sizeof (cfg));
  cfg.socket_path = path;
  cfg.n_slots = SLOTS;
  cfg.slot_size = W * 4 * H;
  CHECK_INT (pf_node_producer_new (&cfg, &p), ==, 0);
  CHECK_INT (pf_node_producer_set_video (p, "RGBA", W, H, 30, 1), ==, 0);
  while (read (done_fd, &b, 1) > 0);
  pf_node_producer_free (p);
  return 0;
}

/* no-device: the src refuses a device that is not there, once connected;
 * other-device: frames on another device than the pipeline's context. */
static void
run_error (const char *path, const char *c)
{
  gboolean other = strcmp (c, "other-device") == 0;
  gchar *desc = g_strdup_printf ("pinnedshmsrc name=src socket-path=%s "
      "connect-timeout=20000 delivery=every-frame device-frames=on "
      "cuda-device-id=%d ! video/x-raw(memory:CUDAMemory) ! cudadownload ! "
      "fakesink", path, other ? 1 : 3);
  GError *err = NULL, *e = NULL;
  GstElement *pipe = gst_parse_launch (desc, &err);
  GstBus *bus;
  GstMessage *msg;
  gchar *dbg = NULL;

  CHECK_MSG (pipe != NULL, "%s: %s", desc, err ? err->message : "?");
  bus = gst_element_get_bus (pipe);
  (void) gst_element_set_state (pipe, GST_STATE_PLAYING);
  msg = gst_bus_timed_pop_filtered (bus, 30 * GST_SECOND,
      GST_MESSAGE_ERROR | GST_MESSAGE_EOS);
  CHECK_MSG (msg != NULL && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR,
      "no error");
  gst_message_parse_error (msg, &e, &dbg);
  printf ("%s: error from %s: %s (%s)\n", c, GST_MESSAGE_SRC_NAME (msg),
      e->message, dbg ? dbg : "");
  if (other) {
    CHECK (g_error_matches (e, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE));
    CHECK_MSG (dbg != NULL && strstr (dbg, "the frame is on CUDA device 0, "
            "the pipeline's GstCudaContext on device 1") != NULL, "%s", dbg);
  } else {
    CHECK (g_error_matches (e, GST_RESOURCE_ERROR,
            GST_RESOURCE_ERROR_SETTINGS));
    CHECK_MSG (strstr (e->message, "cuda-device-id=3") != NULL, "%s",
        e->message);
  }
  CHECK_MSG (strcmp (GST_MESSAGE_SRC_NAME (msg), "src") == 0, "from %s",
      GST_MESSAGE_SRC_NAME (msg));
  g_clear_error (&e);
  g_free (dbg);
  gst_message_unref (msg);
  CHECK (gst_element_set_state (pipe, GST_STATE_NULL) ==
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (bus);
  gst_object_unref (pipe);
  g_free (desc);
}

/* ---- this process: the pipeline ---------------------------------------- */

static void
check_frame (GstSample * sample, guint64 seq, gboolean node, gboolean resize)
{
  GstVideoInfo info;
  GstVideoFrame frame, want;
  guint p;
  gsize r, x;

  CHECK (gst_video_info_from_caps (&info, gst_sample_get_caps (sample)));
  CHECK (gst_video_frame_map (&frame, &info, gst_sample_get_buffer (sample),
          GST_MAP_READ));
  if (node) {
    const guint8 *d = GST_VIDEO_FRAME_PLANE_DATA (&frame, 0);
    gint stride = GST_VIDEO_FRAME_PLANE_STRIDE (&frame, 0);
    gsize w = frame_w (seq, resize), h = frame_h (seq, resize);

    CHECK_INT (GST_VIDEO_INFO_WIDTH (&info), ==, w);
    CHECK_INT (GST_VIDEO_INFO_HEIGHT (&info), ==, h);
    for (r = 0; r < h; r++)
      for (x = 0; x < w * 4; x++)
        CHECK_MSG (d[r * stride + x] == pattern (r * w * 4 + x, seq),
            "frame %" G_GUINT64_FORMAT " row %" G_GSIZE_FORMAT " byte %"
            G_GSIZE_FORMAT ": %02x, want %02x", seq, r, x, d[r * stride + x],
            pattern (r * w * 4 + x, seq));
    gst_video_frame_unmap (&frame);
    return;
  }
  CHECK (seq <= expected->len);
  CHECK (gst_video_frame_map (&want, &info, g_ptr_array_index (expected,
              seq - 1), GST_MAP_READ));
  for (p = 0; p < GST_VIDEO_FRAME_N_PLANES (&frame); p++) {
    gsize rows = GST_VIDEO_FRAME_COMP_HEIGHT (&frame, p);
    gsize bytes = GST_VIDEO_FRAME_COMP_WIDTH (&frame, p) *
        GST_VIDEO_FRAME_COMP_PSTRIDE (&frame, p);

    for (r = 0; r < rows; r++)
      CHECK_MSG (memcmp ((const guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&frame,
                  p) + r * GST_VIDEO_FRAME_PLANE_STRIDE (&frame, p),
              (const guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&want, p) +
              r * GST_VIDEO_FRAME_PLANE_STRIDE (&want, p), bytes) == 0,
          "frame %" G_GUINT64_FORMAT " plane %u row %" G_GSIZE_FORMAT
          " differs", seq, p, r);
  }
  gst_video_frame_unmap (&want);
  gst_video_frame_unmap (&frame);
}

/* The src's negotiated caps: whether they carry @feature. */
static gboolean
src_caps_have (GstElement * src, const gchar * feature)
{
  GstPad *pad = gst_element_get_static_pad (src, "src");
  GstCaps *caps = gst_pad_get_current_caps (pad);
  gboolean res;

  CHECK (caps != NULL);
  res = gst_caps_features_contains (gst_caps_get_features (caps, 0), feature);
  gst_caps_unref (caps);
  gst_object_unref (pad);
  return res;
}

static void
run_pipeline (const char *path, const char *c)
{
  gboolean resize = strcmp (c, "resize") == 0;
  gboolean node = strncmp (c, "domain", 6) == 0 || resize;
  gboolean host = strcmp (c, "domain-off") == 0;
  gboolean order = strcmp (c, "order") == 0;
  const char *mode = strcmp (c, "auto") == 0 ? "auto" : "on";
  const char *feature = order ? "memory:PinnedflowCUDA" : host ?
      GST_CAPS_FEATURE_MEMORY_SYSTEM_MEMORY : "memory:CUDAMemory";
  GstElement *pipe, *sink, *src;
  GstBus *bus;
  GError *err = NULL;
  gchar *desc;
  guint64 seq = 0, want_copies;
  long d2d0 = emu_query ("copies.d2d");
  long htod0 = emu_query ("calls.cuMemcpyHtoD_v2");
  gboolean done = FALSE;

  desc = g_strdup_printf ("pinnedshmsrc name=src socket-path=%s "
      "connect-timeout=20000 delivery=every-frame device-frames=%s ! %s ! "
      "video/x-raw ! appsink name=sink sync=false max-buffers=2 "
      "enable-last-sample=false", path, mode,
      order ? "pinnedcudadownload" : host ? "identity" :
      "video/x-raw(memory:CUDAMemory) ! cudadownload");
  pipe = gst_parse_launch (desc, &err);
  CHECK_MSG (pipe != NULL, "%s: %s", desc, err ? err->message : "?");
  g_free (desc);
  sink = gst_bin_get_by_name (GST_BIN (pipe), "sink");
  src = gst_bin_get_by_name (GST_BIN (pipe), "src");
  bus = gst_element_get_bus (pipe);
  CHECK (gst_element_set_state (pipe, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);

  while (!done) {
    GstSample *sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink),
        50 * GST_MSECOND);
    GstMessage *msg;

    if (sample != NULL) {
      check_frame (sample, ++seq, node, resize);
      gst_sample_unref (sample);
      continue;
    }
    msg = gst_bus_timed_pop_filtered (bus, 10 * GST_MSECOND,
        GST_MESSAGE_ERROR | GST_MESSAGE_EOS);
    if (msg == NULL)
      continue;
    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
      GError *e = NULL;
      gchar *dbg = NULL;

      gst_message_parse_error (msg, &e, &dbg);
      pf_test_fail (__FILE__, __LINE__, "error from %s: %s (%s)",
          GST_MESSAGE_SRC_NAME (msg), e->message, dbg ? dbg : "");
    }
    while ((sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink),
                0)) != NULL) {
      check_frame (sample, ++seq, node, resize);
      gst_sample_unref (sample);
    }
    gst_message_unref (msg);
    done = TRUE;
  }

  CHECK_INT (seq, ==, N_FRAMES);
  CHECK_MSG (src_caps_have (src, feature), "the src's caps lack %s", feature);
  CHECK_INT (stat_u64 (src, "frames"), ==, N_FRAMES);
  /* every frame came as a device frame */
  CHECK_INT (stat_u64 (src, "device-frames"), ==, host ? 0 : N_FRAMES);
  want_copies = order || host || gstcuda_wraps ()? 0 : N_FRAMES;
  CHECK_INT (stat_u64 (src, "device-copies"), ==, want_copies);
  /* the emulator saw those copies (one cudaMemcpy2DAsync per plane), and
   * no other, in this process */
  CHECK_INT (emu_query ("copies.d2d") - d2d0, ==,
      (long) want_copies * (strcmp (c, "nv12") == 0 ? 2 : 1));
  /* nothing uploaded here */
  CHECK_INT (emu_query ("calls.cuMemcpyHtoD_v2") - htod0, ==, 0);
  if (node)
    CHECK_INT (stat_int (src, "domain-device"), ==, 0);
  printf ("%s: %" G_GUINT64_FORMAT " frames as %s, %" G_GUINT64_FORMAT
      " device copies (libgstcuda %s)\n", c, seq, feature, want_copies,
      gstcuda_wraps ()? "wraps, 1.24+" : "1.22, copies");
  CHECK (gst_element_set_state (pipe, GST_STATE_NULL) ==
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (bus);
  gst_object_unref (sink);
  gst_object_unref (src);
  gst_object_unref (pipe);
}

int
main (int argc, char **argv)
{
  const char *c = argc > 1 ? argv[1] : "";
  const char *format = strcmp (c, "nv12") == 0 ? "NV12" : "RGBA";
  char dir[256], path[300];
  GstElementFactory *f;
  pid_t pid;
  int fds0, done[2];

  if (strcmp (c, "cuda") != 0 && strcmp (c, "nv12") != 0
      && strcmp (c, "auto") != 0 && strcmp (c, "order") != 0
      && strcmp (c, "domain") != 0 && strcmp (c, "domain-off") != 0
      && strcmp (c, "resize") != 0 && strcmp (c, "no-device") != 0
      && strcmp (c, "other-device") != 0) {
    fprintf (stderr, "usage: %s cuda|nv12|auto|order|domain|domain-off|"
        "resize|no-device|other-device\n", argv[0]);
    return 2;
  }
  CHECK_MSG (getenv ("PFEMU_VMM") != NULL, "run with PFEMU_VMM=1 (meson)");
  /* nvcodec's cudadownload (registers without touching CUDA in this
   * process: the registry is scanned by a helper process or cached) */
  gst_init (&argc, &argv);
  f = gst_element_factory_find ("cudadownload");
  if (f == NULL) {
    printf ("SKIP: no cudadownload (nvcodec) here\n");
    return 77;
  }
  gst_object_unref (f);

  CHECK_INT (pf_test_make_tmpdir (dir, sizeof (dir), "pf-src-cuda"), ==, 0);
  snprintf (path, sizeof (path), "%s/sock", dir);
  /* no-device: the producer's end of the pipe reads EOF when we are done */
  CHECK_INT (pipe (done), ==, 0);
  pid = pf_test_fork ();
  CHECK (pid >= 0);
  if (pid == 0) {
    close (done[1]);
    _exit (strncmp (c, "domain", 6) == 0 || strcmp (c, "resize") == 0 ?
        node_producer_main (path, strcmp (c, "domain-off") != 0,
            strcmp (c, "resize") == 0) :
        strcmp (c, "no-device") == 0 ? idle_producer_main (path, done[0]) :
        sink_producer_main (path, format, strcmp (c, "other-device") != 0));
  }
  close (done[0]);

  if (strncmp (c, "domain", 6) != 0 && strcmp (c, "resize") != 0
      && strcmp (c, "no-device") != 0 && strcmp (c, "other-device") != 0) {
    gchar *src = source_desc (format);
    gchar *desc = g_strdup_printf ("%s ! appsink name=sink sync=false", src);

    /* the frames the producer's videotestsrc makes, made here on the CPU */
    expected = g_ptr_array_new_with_free_func ((GDestroyNotify)
        gst_buffer_unref);
    run_to_eos (desc, expected, NULL);
    CHECK_INT (expected->len, ==, N_FRAMES);
    g_free (desc);
    g_free (src);
  }
  emu_up ();
  {
    /* the system clock's poll fds (kept for the process's life) are not
     * the pipeline's: made before counting */
    GstClock *clk = gst_system_clock_obtain ();
    GstClockID id = gst_clock_new_single_shot_id (clk,
        gst_clock_get_time (clk) + GST_MSECOND);

    gst_clock_id_wait (id, NULL);
    gst_clock_id_unref (id);
    gst_object_unref (clk);
  }
  fds0 = pf_test_count_fds ();
  if (strcmp (c, "no-device") == 0 || strcmp (c, "other-device") == 0)
    run_error (path, c);
  else
    run_pipeline (path, c);
  close (done[1]);
  fds0--;                       /* that one, counted in fds0 */
  if (strcmp (c, "other-device") == 0) {
    /* its pinnedshmsink (wait-for-connection) waits for another consumer */
    CHECK_INT (kill (pid, SIGKILL), ==, 0);
    (void) pf_test_wait (pid);
  } else {
    CHECK_INT (pf_test_exit_code (pf_test_wait (pid)), ==, 0);
  }
  /* every frame went back: nothing of the producer's left mapped here */
  check_vmm_empty ();
  CHECK_INT (pf_test_count_fds (), ==, fds0);
  if (expected != NULL)
    g_ptr_array_unref (expected);
  pf_test_remove_tree (dir);
  printf ("%s: ok\n", c);
  return 0;
}
