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
 * - a frame goes out of pinnedcudaupload as soon as its own copy completed,
 *   without waiting for the next input, and the LATENCY query answers what
 *   the element adds (issue 22, defect 5);
 * - pinnedcudadownload reading GstCudaMemory never makes a host wait that
 *   spins a core (the emulator's "syncs.spinning") and never synchronizes
 *   a whole stream, which would wait for the later frames queued on it
 *   (issue 22, defect 6).
 *
 * The GStreamer version's path: the libgstcuda the plugin loads (1.22 on
 * this host: no GstCudaStream); cuda-interop-1.24 points the plugin at
 * libpfemu-gstcuda.so (GST_PINNEDFLOW_GSTCUDA, pfemu-gstcuda.c), which adds
 * 1.24's stream API to the 1.22 library, and runs the tests that read with
 * libgstcuda's rules.
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
#include <gst/app/gstappsink.h>
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

/* nvcodec's elements: loaded in the test's own process (its plugin_init
 * makes and drops a context per device), before the counters are reset */
static const gchar *const nvcodec_features[] = {
  "cudaupload", "cudadownload", NULL
};

static void
setup (void)
{
  cuda_test_load_features (nvcodec_features);
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

/* Issue 22, defect 5: a live source pushes one frame and nothing after it.
 * pinnedcudaupload must push it once its copy completed (late here:
 * PFEMU_COPY_DELAY_US), not when a next input arrives; the frame is
 * complete for a reader following libgstcuda's rules. The LATENCY query
 * through the element answers upstream's latency plus what it adds: on
 * the 1.22 path the wait for the copy (at least the emulated delay, and a
 * LATENCY message posted when it grew), on 1.24+ nothing (pushed at
 * once). */
GST_START_TEST (test_push_one_frame)
{
  const gchar *format = "NV12";
  const GstClockTime up_min = 5 * GST_MSECOND, up_max = 40 * GST_MSECOND;
  GstElement *pipeline, *sink, *src, *up;
  GstCaps *caps = cuda_test_make_caps (format, ODD_W, ODD_H);
  GstVideoInfo info;
  GstPinnedCudaLayout layout;
  GstSample *sample;
  GstBuffer *buf;
  GstQuery *q;
  GstPad *pad;
  GstBus *bus;
  GstMessage *msg;
  GstClockTime min = 0, max = 0;
  gboolean live = FALSE;
  Checker ck;
  long delay_us = emulated ? atol (g_getenv ("PFEMU_COPY_DELAY_US") ?
      g_getenv ("PFEMU_COPY_DELAY_US") : "2000") : 0;

  checker_init (&ck, READ_DEVICE, format);
  pipeline = gst_parse_launch ("appsrc name=src is-live=true format=time "
      "min-latency=5000000 max-latency=40000000 ! pinnedcudaupload name=up ! "
      "video/x-raw(" CAPS_FEATURE_CUDA ") ! appsink name=sink sync=false",
      NULL);
  fail_unless (pipeline != NULL);
  src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  up = gst_bin_get_by_name (GST_BIN (pipeline), "up");
  g_object_set (src, "caps", caps, NULL);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  fail_unless (gst_element_get_state (pipeline, NULL, NULL,
          10 * GST_SECOND) != GST_STATE_CHANGE_FAILURE);

  gst_video_info_from_caps (&info, caps);
  gst_pinned_cuda_layout_init (&layout, &info);
  buf = gst_buffer_new_allocate (NULL, info.size, NULL);
  gst_buffer_add_video_meta_full (buf, GST_VIDEO_FRAME_FLAG_NONE,
      GST_VIDEO_INFO_FORMAT (&info), ODD_W, ODD_H,
      GST_VIDEO_INFO_N_PLANES (&info), info.offset, info.stride);
  fail_unless (cuda_test_fill_buffer (buf, &info, &layout, 0));
  GST_BUFFER_PTS (buf) = 0;
  GST_BUFFER_DURATION (buf) = 33 * GST_MSECOND;
  fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC (src), buf),
      GST_FLOW_OK);

  /* no second frame, no EOS: it must come out by itself */
  sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink), 20 * GST_SECOND);
  fail_unless (sample != NULL, "the only frame did not come out of "
      "pinnedcudaupload without a next input (held for the next frame)");
  fail_unless_equals_int (check_device (&ck, gst_sample_get_buffer (sample),
          0), 0);
  fail_unless_equals_int (ck.not_cuda, 0);
  gst_sample_unref (sample);

  /* what the element adds to upstream's latency */
  pad = gst_element_get_static_pad (up, "src");
  q = gst_query_new_latency ();
  fail_unless (gst_pad_query (pad, q), "LATENCY query not answered");
  gst_query_parse_latency (q, &live, &min, &max);
  gst_query_unref (q);
  gst_object_unref (pad);
  fail_unless (live);
  GST_INFO ("latency through pinnedcudaupload: %" GST_TIME_FORMAT " - %"
      GST_TIME_FORMAT, GST_TIME_ARGS (min), GST_TIME_ARGS (max));
  bus = gst_element_get_bus (pipeline);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_LATENCY);
  while (msg && GST_MESSAGE_SRC (msg) != GST_OBJECT (up)) {
    gst_message_unref (msg);
    msg = gst_bus_pop_filtered (bus, GST_MESSAGE_LATENCY);
  }
  if (cuda_memory_get_stream == NULL) {
    /* 1.22: held until its copy completed, and said so */
    fail_unless (min >= up_min + delay_us * GST_USECOND,
        "min latency %" GST_TIME_FORMAT " does not count the wait for the "
        "copy (%ld us late)", GST_TIME_ARGS (min), delay_us);
    fail_unless (max >= up_max + delay_us * GST_USECOND);
    fail_unless (max - up_max == min - up_min);
    fail_unless (msg != NULL, "no LATENCY message from pinnedcudaupload");
  } else {
    /* 1.24+: pushed at once, the reader waits on the GPU */
    fail_unless_equals_uint64 (min, up_min);
    fail_unless_equals_uint64 (max, up_max);
  }
  if (msg)
    gst_message_unref (msg);
  gst_object_unref (bus);

  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_caps_unref (caps);
  gst_object_unref (up);
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
}

GST_END_TEST;

/* The emulator's counters the no-spin test reads. */
typedef struct
{
  long spinning, stream_syncs, event_syncs, waits;
} SyncCounts;

static void
sync_counts_read (SyncCounts * c)
{
  memset (c, 0, sizeof (*c));
  if (!emulated)
    return;                     /* nothing counts them on a GPU */
  c->spinning = pfemu.query ("syncs.spinning");
  c->stream_syncs = pfemu.query ("stream.syncs");
  c->event_syncs = pfemu.query ("events.sync");
  c->waits = pfemu.query ("stream.waits");
}

/* On the first buffer into pinnedcudadownload (before its transform
 * reads it, after pinnedcudaupload negotiated and configured its pool):
 * the counters the streaming is measured from. */
static GstPadProbeReturn
first_frame_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  sync_counts_read (user_data);
  return GST_PAD_PROBE_REMOVE;
}

/* Issue 22, defect 6: pinnedcudadownload reading pinnedcudaupload's
 * GstCudaMemory (on 1.24+ with its GstCudaStream and NEED_SYNC) orders its
 * copy after the memory's stream on the GPU and waits on the host only for
 * its own copy's event, made with blocking sync: while the frames flow, no
 * host wait spins ("syncs.spinning": stream syncs in a CU_CTX_SCHED_AUTO
 * context, event syncs without blocking sync) and no stream is
 * synchronized at all (a stream sync waits for every frame queued on the
 * stream after the one wanted). Byte-exact frames.
 * Counted while the frames flow: from the first frame's arrival at
 * pinnedcudadownload to EOS, before the elements stop (a stop drains its
 * stream once). What happens before the first frame is libgstcuda's own
 * and happens once: 1.26's GstCudaBufferPool set_config, in
 * pinnedcudaupload's allocation, frees the memory it allocated to read the
 * layout with a cuStreamSynchronize of the configured (still idle)
 * stream. */
GST_START_TEST (test_download_no_spin)
{
  const gchar *format = formats[__i__];
  const guint n = 12;
  GstElement *pipeline, *sink, *src, *down;
  GstPad *pad;
  SyncCounts first = { -1, -1, -1, -1 }, eos;
  long spinning, stream_syncs, event_syncs, waits;
  Checker ck;
  gchar *err;

  checker_init (&ck, READ_SYSTEM, format);
  pipeline = gst_parse_launch ("appsrc name=src ! pinnedcudaupload ! "
      "video/x-raw(" CAPS_FEATURE_CUDA ") ! pinnedcudadownload name=down ! "
      "appsink name=sink", NULL);
  fail_unless (pipeline != NULL);
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  g_object_set (sink, "emit-signals", TRUE, "sync", FALSE, NULL);
  g_signal_connect (sink, "new-sample", G_CALLBACK (on_new_sample), &ck);
  down = gst_bin_get_by_name (GST_BIN (pipeline), "down");
  pad = gst_element_get_static_pad (down, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, first_frame_probe,
      &first, NULL);
  gst_object_unref (pad);
  gst_object_unref (down);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  push_frames (pipeline, format, n);
  err = cuda_test_wait_eos_or_error (pipeline);
  sync_counts_read (&eos);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (pipeline);

  fail_unless (first.spinning >= 0, "no frame reached pinnedcudadownload");
  spinning = eos.spinning - first.spinning;
  stream_syncs = eos.stream_syncs - first.stream_syncs;
  event_syncs = eos.event_syncs - first.event_syncs;
  waits = eos.waits - first.waits;
  GST_INFO ("before the first frame: %ld spinning waits, %ld stream syncs",
      first.spinning, first.stream_syncs);

  check_intact (&ck, err, format, n);
  g_free (err);
  if (!emulated) {
    /* the frames went through on the device, byte-exact */
    g_print ("SKIP (part of test_download_no_spin, %s): spinning host waits "
        "are counted only by the emulator; %u frames checked byte-exact\n",
        format, n);
    return;
  }
  fail_unless (spinning == 0, "%ld host waits that spin a core while %u "
      "frames went through (%ld stream syncs)", spinning, n, stream_syncs);
  fail_unless (stream_syncs == 0, "%ld stream synchronizations while the "
      "frames flowed", stream_syncs);
  /* the download waited for each frame's own copy on the host */
  fail_unless (event_syncs >= (long) n, "%ld event waits for %u frames",
      event_syncs, n);
  /* 1.24+: on the GPU, the memory's stream waited for each upload's copy
   * (the first frame's before the window) and the download's stream for
   * the memory's stream (1.22: the frames are complete when pushed,
   * nothing to wait for) */
  if (cuda_memory_get_stream)
    fail_unless (waits >= 2 * (long) n - 1, "%ld stream waits for %u frames",
        waits, n);
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
  tcase_add_test (tc, test_push_one_frame);
  tcase_add_loop_test (tc, test_download_no_spin, 0, G_N_ELEMENTS (formats));
  suite_add_tcase (s, tc);
  return s;
}

/* ------------------------------------------------------------ main */

/* In a child process (it loads nvcodec, which initialises CUDA): NULL
 * when nvcodec's elements and libgstcuda's driver are usable, else why
 * not. */
static gchar *
skip_reason (void)
{
  GstElementFactory *f;
  GstPluginFeature *loaded;
  GstElement *up;
  GstPad *pad;
  GstCaps *caps;
  gboolean cuda_memory;
  const gchar *gstcuda;
  void *lib;
  gboolean (*load_library) (void);

  f = gst_element_factory_find ("cudadownload");
  if (f == NULL)
    return g_strdup ("nvcodec's cudadownload is not registered (nvcodec not "
        "installed, or no CUDA driver/device for it)");
  /* nvcodec's plugin_init probes each device with a context */
  loaded = gst_plugin_feature_load (GST_PLUGIN_FEATURE (f));
  gst_object_unref (f);
  if (loaded == NULL)
    return g_strdup ("nvcodec's plugin does not load");
  gst_object_unref (loaded);
  f = gst_element_factory_find ("cudaupload");
  if (f == NULL)
    return g_strdup ("nvcodec's cudaupload is not registered");
  gst_object_unref (f);
  /* the library the plugin uses (gstpinnedcudagst.c) */
  gstcuda = g_getenv ("GST_PINNEDFLOW_GSTCUDA");
  if (gstcuda == NULL || *gstcuda == '\0')
    gstcuda = "libgstcuda-1.0.so.0";
  lib = dlopen (gstcuda, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL)
    return g_strdup_printf ("%s not loadable", gstcuda);
  load_library = dlsym (lib, "gst_cuda_load_library");
  if (load_library == NULL || !load_library ())
    return g_strdup ("libgstcuda finds no CUDA driver (libcuda.so.1)");
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

/* In a child process: NULL when device 0 is usable, else why not. */
static gchar *
probe_real_device (void)
{
  GError *error = NULL;
  gchar *res;

  if (gst_pinned_cuda_runtime_open_device (0, &error) != NULL)
    return NULL;
  res = g_strdup_printf ("no usable CUDA device (%s): the interop tests ran "
      "against the emulators only", error->message);
  g_error_free (error);
  return res;
}

/* libgstcuda's 1.24+ stream API, looked up without initialising CUDA
 * (dlopen and dlsym only). */
static void
find_stream_api (void)
{
  const gchar *gstcuda = g_getenv ("GST_PINNEDFLOW_GSTCUDA");
  void *lib;

  if (gstcuda == NULL || *gstcuda == '\0')
    gstcuda = "libgstcuda-1.0.so.0";
  lib = dlopen (gstcuda, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL)
    return;
  cuda_memory_get_stream = dlsym (lib, "gst_cuda_memory_get_stream");
  cuda_memory_sync = dlsym (lib, "gst_cuda_memory_sync");
  if (cuda_memory_get_stream == NULL || cuda_memory_sync == NULL) {
    cuda_memory_get_stream = NULL;
    cuda_memory_sync = NULL;
  }
}

int
main (int argc, char **argv)
{
  const gchar *mode = g_getenv ("PINNEDFLOW_CUDA_MODE");
  gchar *why = NULL;
  int producer = cuda_test_producer_main (argc, argv);

  if (producer >= 0)
    return producer;
  gst_check_init (&argc, &argv);
  /* CUDA is never initialised here (nvcodec's plugin_init would): the
   * suite forks a child per test; the probes run in a child of their own */
  if (g_strcmp0 (mode, "emulated") == 0) {
    if (!cuda_test_emu_load (&pfemu, g_getenv ("GST_PINNEDFLOW_CUDART"))) {
      g_printerr ("cuda-interop: cannot load the emulator from "
          "GST_PINNEDFLOW_CUDART=%s\n", g_getenv ("GST_PINNEDFLOW_CUDART"));
      return 1;
    }
    emulated = TRUE;
  } else {
    if (!cuda_test_probe_in_child (probe_real_device, emulated ? &pfemu : NULL,
            &why)) {
      g_printerr ("FAIL: probing the CUDA device: %s\n", why);
      g_free (why);
      return 1;
    }
    if (why) {
      g_print ("SKIP: %s\n", why);
      g_free (why);
      return 77;
    }
  }
  if (!cuda_test_probe_in_child (skip_reason, emulated ? &pfemu : NULL, &why)) {
    g_printerr ("FAIL: probing nvcodec: %s\n", why);
    g_free (why);
    return 1;
  }
  if (why) {
    g_print ("SKIP: %s: the interop tests with GStreamer's CUDA elements did "
        "not run\n", why);
    g_free (why);
    return 77;
  }
  find_stream_api ();
  g_print ("libgstcuda %s GstCudaStream: the %s path\n",
      cuda_memory_get_stream ? "with" : "without",
      cuda_memory_get_stream ? "1.24+ (stream + NEED_SYNC)" :
      "1.22 (pushed once the copy completed)");
  if (!cuda_test_check_fork ("cuda-interop", emulated ? &pfemu : NULL))
    return 1;
  return gst_check_run_suite (interop_suite (), "cuda-interop", __FILE__);
}
