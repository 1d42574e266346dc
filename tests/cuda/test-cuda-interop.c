/* Interop of pinnedcudaupload/pinnedcudadownload with GStreamer's CUDA
 * elements (nvcodec's cudaupload/cudadownload, libgstcuda's GstCudaMemory
 * and gst.cuda.context): issue 11.
 *
 * The rules checked:
 * - pinnedshmsrc ! pinnedcudaupload ! cudadownload gives the producer's
 *   frames byte for byte (RGBA, NV12, I420 at odd sizes), by DMA from the
 *   received segment, through memory:CUDAMemory;
 * - cudaupload ! pinnedcudadownload gives the source's frames byte for byte;
 * - the pipeline has one CUDA context: the one nvcodec's element made is
 *   shared with ours (the emulator counts cuCtxCreate);
 * - our element never synchronizes its stream per frame (the emulator
 *   counts cudaStreamSynchronize: one per element stop at most);
 * - a GstCudaMemory buffer pushed by pinnedcudaupload holds the finished
 *   frame for a reader that follows libgstcuda's rules: on 1.24+ it carries
 *   its GstCudaStream and NEED_SYNC, and gst_cuda_memory_sync() makes it
 *   readable; on 1.22 (no stream) it is complete when pushed. The reader
 *   copies it back with a synchronous cudaMemcpy2D, which does not wait for
 *   our non-blocking stream: with the emulator's late copies
 *   (PFEMU_COPY_DELAY_US) a frame pushed early reads stale.
 *
 * Run against the emulators (tests/cuda/emu: libcuda.so.1 and libnvcuvid.so.1
 * stand-ins, PINNEDFLOW_CUDA_MODE=emulated) or a real GPU (mode real).
 * Exits 77 (SKIP) with the reason where nvcodec's elements are not
 * registered or libgstcuda finds no driver.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <glib/gstdio.h>
#include <gst/gst.h>
#include <gst/check/gstcheck.h>
#include <gst/app/gstappsrc.h>
#include <gst/video/video.h>
#include <pinnedflow/pf-segment.h>

#include <gst/pinnedcuda/gstpinnedcudaloader.h>
#include <gst/pinnedcuda/gstpinnedcudamemory.h>

#include "cuda-test-util.h"

#define CAPS_FEATURE_CUDA "memory:CUDAMemory"
#define MAP_CUDA (GST_MAP_FLAG_LAST << 1)
#define MEMORY_NEED_SYNC (GST_MEMORY_FLAG_LAST << 2)

static gboolean emulated;
static CudaTestEmu pfemu;       /* when emulated */

/* libgstcuda 1.24+ (NULL on 1.22) */
static gpointer (*cuda_memory_get_stream) (GstMemory * mem);
static void (*cuda_memory_sync) (GstMemory * mem);

static const gchar *formats[] = { "RGBA", "NV12", "I420" };

#define ODD_W 161
#define ODD_H 93

/* ------------------------------------------------------------ frames */

/* ------------------------------------------------------------ checking */

typedef enum
{
  READ_SYSTEM,                  /* system memory: gst_video_frame_map */
  READ_DEVICE,                  /* GstCudaMemory: libgstcuda's rules, then
                                 * a synchronous cudaMemcpy2D back */
} ReadKind;

typedef struct
{
  ReadKind kind;
  GstVideoInfo info;
  GstPinnedCudaLayout layout;
  guint received, bad_bytes, bad_frames;
  guint need_sync, with_stream, not_cuda;
  GMutex lock;
} Checker;

static guint
check_system (Checker * ck, GstBuffer * buf, guint seed)
{
  GstVideoFrame frame;
  guint bad;

  if (!gst_video_frame_map (&frame, &ck->info, buf, GST_MAP_READ))
    return 1;
  bad = cuda_test_check_frame (&frame, &ck->layout, seed);
  gst_video_frame_unmap (&frame);
  return bad;
}

/* What a CUDA consumer (e.g. nvh264enc) does with a GstCudaMemory: on
 * 1.24+ synchronize the memory's stream when NEED_SYNC says so, then read
 * the device pointer of a GST_MAP_CUDA map. The read here is a synchronous
 * cudaMemcpy2D on the legacy stream, which does not wait for the upload's
 * non-blocking stream. */
static guint
check_device (Checker * ck, GstBuffer * buf, guint seed)
{
  const GstPinnedCudaRuntime *rt = gst_pinned_cuda_runtime_get (NULL);
  GstMemory *mem = gst_buffer_peek_memory (buf, 0);
  GstVideoMeta *meta = gst_buffer_get_video_meta (buf);
  GstMapInfo map;
  guint p, bad = 0;

  if (rt == NULL || meta == NULL ||
      g_strcmp0 (mem->allocator->mem_type, "gst.cuda.memory") != 0) {
    ck->not_cuda++;
    return 1;
  }
  if (cuda_memory_get_stream && cuda_memory_get_stream (mem)) {
    ck->with_stream++;
    if (GST_MEMORY_FLAG_IS_SET (mem, MEMORY_NEED_SYNC))
      ck->need_sync++;
    cuda_memory_sync (mem);
  }
  if (!gst_memory_map (mem, &map, GST_MAP_READ | MAP_CUDA))
    return 1;
  for (p = 0; p < ck->layout.n_planes; p++) {
    gsize w = ck->layout.width_bytes[p], rows = ck->layout.rows[p];
    guint8 *host = g_malloc (w * rows);

    if (rt->Memcpy2D (host, w, map.data + meta->offset[p], meta->stride[p], w,
            rows, GST_PINNED_CUDA_MEMCPY_DEVICE_TO_HOST) != 0)
      bad++;
    else
      bad += cuda_test_check_plane (host, w, &ck->layout, p, seed);
    g_free (host);
  }
  gst_memory_unmap (mem, &map);
  return bad;
}

static GstFlowReturn
on_new_sample (GstElement * sink, gpointer user_data)
{
  Checker *ck = user_data;
  GstSample *sample = NULL;
  GstBuffer *buf;
  guint bad;

  g_signal_emit_by_name (sink, "pull-sample", &sample);
  if (sample == NULL)
    return GST_FLOW_ERROR;
  buf = gst_sample_get_buffer (sample);
  g_mutex_lock (&ck->lock);
  /* in order: the seed is the frame's index */
  bad = ck->kind == READ_SYSTEM ? check_system (ck, buf, ck->received) :
      check_device (ck, buf, ck->received);
  ck->received++;
  ck->bad_bytes += bad;
  ck->bad_frames += bad != 0;
  g_mutex_unlock (&ck->lock);
  gst_sample_unref (sample);
  return GST_FLOW_OK;
}

static void
checker_init (Checker * ck, ReadKind kind, const gchar * format)
{
  GstCaps *caps = cuda_test_make_caps (format, ODD_W, ODD_H);

  memset (ck, 0, sizeof (*ck));
  g_mutex_init (&ck->lock);
  ck->kind = kind;
  gst_video_info_from_caps (&ck->info, caps);
  gst_pinned_cuda_layout_init (&ck->layout, &ck->info);
  gst_caps_unref (caps);
}

/* Pushes @n frames of the pattern into the appsrc named "src". */
static void
push_frames (GstElement * pipeline, const gchar * format, guint n)
{
  GstElement *src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  GstCaps *caps = cuda_test_make_caps (format, ODD_W, ODD_H);
  GstVideoInfo info;
  GstPinnedCudaLayout layout;
  guint i;

  gst_video_info_from_caps (&info, caps);
  gst_pinned_cuda_layout_init (&layout, &info);
  g_object_set (src, "caps", caps, "format", GST_FORMAT_TIME, NULL);
  for (i = 0; i < n; i++) {
    GstBuffer *buf = gst_buffer_new_allocate (NULL, info.size, NULL);

    gst_buffer_add_video_meta_full (buf, GST_VIDEO_FRAME_FLAG_NONE,
        GST_VIDEO_INFO_FORMAT (&info), ODD_W, ODD_H,
        GST_VIDEO_INFO_N_PLANES (&info), info.offset, info.stride);
    fail_unless (cuda_test_fill_buffer (buf, &info, &layout, i));
    GST_BUFFER_PTS (buf) = i * GST_MSECOND;
    GST_BUFFER_DURATION (buf) = GST_MSECOND;
    if (gst_app_src_push_buffer (GST_APP_SRC (src), buf) != GST_FLOW_OK)
      break;
  }
  gst_app_src_end_of_stream (GST_APP_SRC (src));
  gst_caps_unref (caps);
  gst_object_unref (src);
}

/* A pipeline: "appsrc name=src ! MIDDLE ! appsink name=sink" (or @desc as
 * given when it names its own source), checked by @ck. Returns the error
 * or NULL; @stats_of names an element whose "stats" go to *@stats. */
static gchar *
run_pipeline (const gchar * desc, const gchar * format, guint n, Checker * ck,
    const gchar * stats_of, GstStructure ** stats)
{
  GstElement *pipeline, *sink, *src;
  gchar *err;

  pipeline = gst_parse_launch (desc, NULL);
  fail_unless (pipeline != NULL, "cannot parse %s", desc);
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  g_object_set (sink, "emit-signals", TRUE, "sync", FALSE, NULL);
  g_signal_connect (sink, "new-sample", G_CALLBACK (on_new_sample), ck);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  if (src && GST_IS_APP_SRC (src))
    push_frames (pipeline, format, n);
  err = cuda_test_wait_eos_or_error (pipeline);
  if (stats_of && stats) {
    GstElement *e = gst_bin_get_by_name (GST_BIN (pipeline), stats_of);
    g_object_get (e, "stats", stats, NULL);
    gst_object_unref (e);
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  if (src)
    gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  return err;
}

/* What every pipeline here must give: no error, @n frames received, each
 * byte-exact. */
static void
check_intact (const Checker * ck, const gchar * err, const gchar * format,
    guint n)
{
  fail_unless (err == NULL, "error: %s", err);
  fail_unless_equals_int (ck->received, n);
  fail_unless (ck->bad_bytes == 0, "%s: %u bad bytes in %u frames", format,
      ck->bad_bytes, ck->bad_frames);
}

/* ------------------------------------------------------------ fixture */

static void
setup (void)
{
  if (emulated)
    pfemu.reset ();
}

/* Nothing CUDA left alive: no allocation, stream, event, registration or
 * context (the emulator's report). */
static void
teardown (void)
{
  if (emulated) {
    fail_unless (pfemu.live_total () == 0, "emulator reports leaks: %s",
        pfemu.leak_report ());
    fail_unless_equals_int (pfemu.query ("live.contexts"), 0);
  }
  fail_unless_equals_int (pf_segment_count_live (), 0);
}

/* Stream synchronizations an element of ours makes when it stops, none
 * per frame: the copy engine's stop and the context's close. The tests run
 * 12-24 frames, so a synchronization per frame could not pass. */
#define STOP_SYNCS 2

/* One context for the pipeline (nvcodec's cuCtxCreate one, or the primary
 * one our element wrapped, by whichever element made it first; the other
 * took it from the gst.cuda.context query), and no per-frame
 * cudaStreamSynchronize in our elements. */
static void
check_counters (guint n_ours)
{
  if (!emulated)
    return;
  fail_unless_equals_int (pfemu.query ("contexts.created") +
      pfemu.query ("contexts.device0"), 1);
  fail_unless (pfemu.query ("calls.cudaStreamSynchronize") <=
      (long) (STOP_SYNCS * n_ours),
      "%ld cudaStreamSynchronize calls for %u of our elements",
      pfemu.query ("calls.cudaStreamSynchronize"), n_ours);
}

/* ------------------------------------------------------------ tests */

/* pinnedshmsink (other process) -> pinnedshmsrc ! pinnedcudaupload !
 * cudadownload: every frame byte-exact, by DMA from the received segment,
 * in GstCudaMemory, one context. */
GST_START_TEST (test_shm_to_cudadownload)
{
  const gchar *format = formats[__i__];
  const guint n = 24;
  gchar *dir = g_dir_make_tmp ("pfcudaio-XXXXXX", NULL);
  gchar *sock = g_build_filename (dir, "sock", NULL);
  GstStructure *stats = NULL;
  GError *error = NULL;
  Checker ck;
  gchar *desc, *err;
  guint64 frames = 0, pinned = 0;
  int status = -1;
  GPid pid;

  checker_init (&ck, READ_SYSTEM, format);
  fail_unless (cuda_test_spawn_producer (sock, format, ODD_W, ODD_H, n, &pid,
          &error), "spawn: %s", error ? error->message : "");
  desc = g_strdup_printf ("pinnedshmsrc socket-path=%s connect-timeout=20000 "
      "! pinnedcudaupload name=up ! video/x-raw(" CAPS_FEATURE_CUDA ") ! "
      "cudadownload ! video/x-raw ! appsink name=sink", sock);
  err = run_pipeline (desc, format, n, &ck, "up", &stats);
  g_free (desc);
  fail_unless (waitpid (pid, &status, 0) == pid);
  g_spawn_close_pid (pid);
  g_unlink (sock);
  g_rmdir (dir);

  check_intact (&ck, err, format, n);
  fail_unless (WIFEXITED (status) && WEXITSTATUS (status) == 0,
      "producer failed (status %d)", status);
  gst_structure_get_uint64 (stats, "frames", &frames);
  gst_structure_get_uint64 (stats, "pinned-copies", &pinned);
  fail_unless_equals_int (frames, n);
  /* DMA from the producer's segment, not staged */
  fail_unless_equals_int (pinned, n);
  check_counters (1);
  gst_structure_free (stats);
  g_free (sock);
  g_free (dir);
}

GST_END_TEST;

/* appsrc ! cudaupload ! pinnedcudadownload: every frame byte-exact (the
 * planes read from GstCudaMemory by its video meta), one context. */
GST_START_TEST (test_cudaupload_to_pinned)
{
  const gchar *format = formats[__i__];
  const guint n = 12;
  GstStructure *stats = NULL;
  Checker ck;
  gchar *err;
  guint64 frames = 0;

  checker_init (&ck, READ_SYSTEM, format);
  err = run_pipeline ("appsrc name=src ! cudaupload ! "
      "video/x-raw(" CAPS_FEATURE_CUDA ") ! pinnedcudadownload name=down ! "
      "appsink name=sink", format, n, &ck, "down", &stats);
  check_intact (&ck, err, format, n);
  gst_structure_get_uint64 (stats, "frames", &frames);
  fail_unless_equals_int (frames, n);
  check_counters (1);
  gst_structure_free (stats);
}

GST_END_TEST;

/* Our own pair through memory:CUDAMemory (what they choose when libgstcuda
 * is present): byte-exact, one context. */
GST_START_TEST (test_pair_cuda_memory)
{
  const gchar *format = formats[__i__];
  const guint n = 12;
  Checker ck;
  gchar *err;

  checker_init (&ck, READ_SYSTEM, format);
  err = run_pipeline ("appsrc name=src ! pinnedcudaupload ! "
      "video/x-raw(" CAPS_FEATURE_CUDA ") ! pinnedcudadownload ! "
      "appsink name=sink", format, n, &ck, NULL, NULL);
  check_intact (&ck, err, format, n);
  check_counters (2);
}

GST_END_TEST;

/* A GstCudaMemory frame as a CUDA consumer receives it from
 * pinnedcudaupload: complete once libgstcuda's rules are followed (1.24+:
 * it carries its stream and NEED_SYNC; 1.22: complete when pushed). With
 * late emulated copies a frame pushed before its copy completed (or one
 * without NEED_SYNC on 1.24+) reads stale. */
GST_START_TEST (test_cuda_memory_ready)
{
  const gchar *format = formats[__i__];
  const guint n = 16;
  Checker ck;
  gchar *err;

  checker_init (&ck, READ_DEVICE, format);
  err = run_pipeline ("appsrc name=src ! pinnedcudaupload max-inflight=3 ! "
      "video/x-raw(" CAPS_FEATURE_CUDA ") ! appsink name=sink", format, n,
      &ck, NULL, NULL);
  check_intact (&ck, err, format, n);
  fail_unless_equals_int (ck.not_cuda, 0);
  if (cuda_memory_get_stream) {
    /* 1.24+: every frame carries the stream, marked as needing a sync */
    fail_unless_equals_int (ck.with_stream, n);
    fail_unless_equals_int (ck.need_sync, n);
  } else {
    fail_unless_equals_int (ck.with_stream, 0);
  }
  if (emulated) {
    fail_unless (pfemu.query ("calls.cudaStreamSynchronize") <= STOP_SYNCS,
        "%ld cudaStreamSynchronize calls",
        pfemu.query ("calls.cudaStreamSynchronize"));
  }
}

GST_END_TEST;

static Suite *
interop_suite (void)
{
  Suite *s = suite_create ("cuda-interop");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 120);
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_loop_test (tc, test_shm_to_cudadownload, 0, G_N_ELEMENTS (formats));
  tcase_add_loop_test (tc, test_cudaupload_to_pinned, 0,
      G_N_ELEMENTS (formats));
  tcase_add_loop_test (tc, test_pair_cuda_memory, 0, G_N_ELEMENTS (formats));
  tcase_add_loop_test (tc, test_cuda_memory_ready, 0, G_N_ELEMENTS (formats));
  suite_add_tcase (s, tc);
  return s;
}

/* ------------------------------------------------------------ main */

/* NULL when nvcodec's elements and libgstcuda's driver are usable, else
 * why not. */
static gchar *
skip_reason (void)
{
  GstElementFactory *f;
  GstPluginFeature *loaded;
  GstElement *up;
  GstPad *pad;
  GstCaps *caps;
  gboolean cuda_memory;
  void *lib;
  gboolean (*load_library) (void);

  f = gst_element_factory_find ("cudadownload");
  if (f == NULL)
    return g_strdup ("nvcodec's cudadownload is not registered (nvcodec not "
        "installed, or no CUDA driver/device for it)");
  /* nvcodec's plugin_init makes (and drops) a context per device to probe
   * it: loaded here, before the tests count contexts */
  loaded = gst_plugin_feature_load (GST_PLUGIN_FEATURE (f));
  gst_object_unref (f);
  if (loaded == NULL)
    return g_strdup ("nvcodec's plugin does not load");
  gst_object_unref (loaded);
  f = gst_element_factory_find ("cudaupload");
  if (f == NULL)
    return g_strdup ("nvcodec's cudaupload is not registered");
  gst_object_unref (f);
  lib = dlopen ("libgstcuda-1.0.so.0", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL)
    return g_strdup ("libgstcuda-1.0.so.0 not loadable");
  load_library = dlsym (lib, "gst_cuda_load_library");
  if (load_library == NULL || !load_library ())
    return g_strdup ("libgstcuda finds no CUDA driver (libcuda.so.1)");
  cuda_memory_get_stream = dlsym (lib, "gst_cuda_memory_get_stream");
  cuda_memory_sync = dlsym (lib, "gst_cuda_memory_sync");
  if (cuda_memory_get_stream == NULL || cuda_memory_sync == NULL) {
    cuda_memory_get_stream = NULL;
    cuda_memory_sync = NULL;
  }
  /* our element offers memory:CUDAMemory only when it loads libgstcuda */
  up = gst_element_factory_make ("pinnedcudaupload", NULL);
  if (up == NULL)
    return g_strdup ("pinnedcudaupload not found");
  pad = gst_element_get_static_pad (up, "src");
  caps = gst_pad_query_caps (pad, NULL);
  cuda_memory = gst_caps_features_contains (gst_caps_get_features (caps, 0),
      CAPS_FEATURE_CUDA);
  gst_caps_unref (caps);
  gst_object_unref (pad);
  gst_object_unref (up);
  if (!cuda_memory)
    return g_strdup ("pinnedcudaupload does not offer memory:CUDAMemory");
  return NULL;
}

int
main (int argc, char **argv)
{
  const gchar *mode = g_getenv ("PINNEDFLOW_CUDA_MODE");
  gchar *why;
  int producer = cuda_test_producer_main (argc, argv);

  if (producer >= 0)
    return producer;
  gst_check_init (&argc, &argv);
  if (g_strcmp0 (mode, "emulated") == 0) {
    if (!cuda_test_emu_load (&pfemu, g_getenv ("GST_PINNEDFLOW_CUDART"))) {
      g_printerr ("cuda-interop: cannot load the emulator from "
          "GST_PINNEDFLOW_CUDART=%s\n", g_getenv ("GST_PINNEDFLOW_CUDART"));
      return 1;
    }
    emulated = TRUE;
  } else {
    GError *error = NULL;
    if (gst_pinned_cuda_runtime_open_device (0, &error) == NULL) {
      g_print ("SKIP: no usable CUDA device (%s): the interop tests ran "
          "against the emulators only\n", error->message);
      g_error_free (error);
      return 77;
    }
  }
  why = skip_reason ();
  if (why) {
    g_print ("SKIP: %s: the interop tests with GStreamer's CUDA elements did "
        "not run\n", why);
    g_free (why);
    return 77;
  }
  g_print ("libgstcuda %s GstCudaStream: the %s path\n",
      cuda_memory_get_stream ? "with" : "without",
      cuda_memory_get_stream ? "1.24+ (stream + NEED_SYNC)" :
      "1.22 (pushed once the copy completed)");
  return gst_check_run_suite (interop_suite (), "cuda-interop", __FILE__);
}
