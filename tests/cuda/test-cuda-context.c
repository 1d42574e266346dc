/* The CUDA context of pinnedcudaupload/pinnedcudadownload (issue 22,
 * defects 1-3): one context per device per process.
 *
 * The rules checked, through the driver-API emulator with nvcodec's own
 * elements (tests/cuda/emu) and the cudart emulator, which tags every
 * allocation, event, stream and registration with its context, refuses an
 * event recorded on a stream of another context (400), drops a context's
 * registrations when it is destroyed, and in EXCLUSIVE_PROCESS compute
 * mode refuses a second context (46):
 * - defect 1: with the GstCudaContext nvcodec made (cuCtxCreate), the
 *   memory:PinnedflowCUDA path works: its device frames and their events
 *   are made in that context, so the copy stream (made there too) can
 *   record them; frames arrive byte for byte;
 * - defect 2: where our element makes the pipeline's context, it is the
 *   device's primary one, wrapped (no cuCtxCreate); where nvcodec made it,
 *   our element makes no context of its own (no cudaSetDevice before the
 *   GstCudaContext is bound), so the pipeline runs in EXCLUSIVE_PROCESS;
 * - defect 3: a registration made under nvcodec's context keeps that
 *   context alive as long as its segment: a segment that outlives the
 *   pipeline stays registered (no staged copies in the next pipeline), and
 *   is unregistered, then the context destroyed, when the segment dies.
 *
 * Emulated only (the counters are the emulator's); exits 77 (SKIP) where
 * nvcodec or libgstcuda's driver are not usable, or outside the emulator.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <gst/gst.h>
#include <gst/check/gstcheck.h>
#include <gst/app/gstappsrc.h>
#include <gst/video/video.h>
#include <gst/pinnedflow/pinnedflow.h>
#include <pinnedflow/pf-segment.h>

#include <gst/pinnedcuda/gstpinnedcudaloader.h>
#include <gst/pinnedcuda/gstpinnedcudamemory.h>

#include "cuda-test-util.h"

#define FORMAT "NV12"
#define W 161
#define H 93
#define N_FRAMES 12

/* our pair through memory:PinnedflowCUDA, then nvcodec's elements
 * downstream: they start first and make the pipeline's context */
#define NVCODEC_PIPELINE "appsrc name=src ! pinnedcudaupload ! " \
  "video/x-raw(" GST_CAPS_FEATURE_MEMORY_PINNEDFLOW_CUDA ") ! " \
  "pinnedcudadownload ! video/x-raw ! cudaupload ! cudadownload ! " \
  "video/x-raw ! appsink name=sink"
/* our pair alone: our element makes the context */
#define OWN_PIPELINE "appsrc name=src ! pinnedcudaupload ! " \
  "video/x-raw(" GST_CAPS_FEATURE_MEMORY_PINNEDFLOW_CUDA ") ! " \
  "pinnedcudadownload ! video/x-raw ! appsink name=sink"

static CudaTestEmu pfemu;

typedef struct
{
  GstVideoInfo info;
  GstPinnedCudaLayout layout;
  guint received, bad_bytes;
  GMutex lock;
} Checker;

static GstFlowReturn
on_new_sample (GstElement * sink, gpointer user_data)
{
  Checker *ck = user_data;
  GstSample *sample = NULL;
  GstVideoFrame frame;

  g_signal_emit_by_name (sink, "pull-sample", &sample);
  if (sample == NULL)
    return GST_FLOW_ERROR;
  g_mutex_lock (&ck->lock);
  if (gst_video_frame_map (&frame, &ck->info, gst_sample_get_buffer (sample),
          GST_MAP_READ)) {
    ck->bad_bytes += cuda_test_check_frame (&frame, &ck->layout, ck->received);
    gst_video_frame_unmap (&frame);
  } else {
    ck->bad_bytes++;
  }
  ck->received++;
  g_mutex_unlock (&ck->lock);
  gst_sample_unref (sample);
  return GST_FLOW_OK;
}

/* Runs @desc with N_FRAMES frames of the pattern pushed into its appsrc:
 * buffers from @pool (pinned segments the test keeps) or, with @pool NULL,
 * system memory. Returns the error or NULL; *@received and *@bad_bytes
 * what the appsink got. */
static gchar *
run_pipeline (const gchar * desc, GstBufferPool * pool, guint * received,
    guint * bad_bytes)
{
  GstElement *pipeline, *src, *sink;
  GstCaps *caps = cuda_test_make_caps (FORMAT, W, H);
  Checker ck;
  gchar *err;
  guint i;

  memset (&ck, 0, sizeof (ck));
  g_mutex_init (&ck.lock);
  gst_video_info_from_caps (&ck.info, caps);
  gst_pinned_cuda_layout_init (&ck.layout, &ck.info);
  pipeline = gst_parse_launch (desc, NULL);
  fail_unless (pipeline != NULL, "cannot parse %s", desc);
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  g_object_set (sink, "emit-signals", TRUE, "sync", FALSE, NULL);
  g_signal_connect (sink, "new-sample", G_CALLBACK (on_new_sample), &ck);
  g_object_set (src, "caps", caps, "format", GST_FORMAT_TIME, NULL);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  for (i = 0; i < N_FRAMES; i++) {
    GstBuffer *buf = NULL;

    if (pool) {
      if (gst_buffer_pool_acquire_buffer (pool, &buf, NULL) != GST_FLOW_OK)
        break;
    } else {
      buf = gst_buffer_new_allocate (NULL, ck.info.size, NULL);
      gst_buffer_add_video_meta_full (buf, GST_VIDEO_FRAME_FLAG_NONE,
          GST_VIDEO_INFO_FORMAT (&ck.info), W, H,
          GST_VIDEO_INFO_N_PLANES (&ck.info), ck.info.offset, ck.info.stride);
    }
    fail_unless (cuda_test_fill_buffer (buf, &ck.info, &ck.layout, i));
    GST_BUFFER_PTS (buf) = i * GST_MSECOND;
    GST_BUFFER_DURATION (buf) = GST_MSECOND;
    if (gst_app_src_push_buffer (GST_APP_SRC (src), buf) != GST_FLOW_OK)
      break;
  }
  gst_app_src_end_of_stream (GST_APP_SRC (src));
  err = cuda_test_wait_eos_or_error (pipeline);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  gst_caps_unref (caps);
  *received = ck.received;
  *bad_bytes = ck.bad_bytes;
  g_mutex_clear (&ck.lock);
  return err;
}

static void
check_intact (gchar * err, guint received, guint bad_bytes)
{
  fail_unless (err == NULL, "error: %s", err);
  fail_unless_equals_int (received, N_FRAMES);
  fail_unless_equals_int (bad_bytes, 0);
}

/* nvcodec's elements: loaded in the test's own process (its plugin_init
 * makes and drops a context per device), before the counters are reset */
static const gchar *const nvcodec_features[] = {
  "cudaupload", "cudadownload", NULL
};

static void
setup (void)
{
  g_unsetenv ("PFEMU_COMPUTE_MODE");
  cuda_test_load_features (nvcodec_features);
  pfemu.reset ();
}

/* Nothing CUDA left alive: no allocation, stream, event, registration or
 * created context. */
static void
teardown (void)
{
  fail_unless (pfemu.live_total () == 0, "emulator reports leaks: %s",
      pfemu.leak_report ());
  fail_unless_equals_int (pfemu.query ("live.contexts"), 0);
  fail_unless_equals_int (pf_segment_count_live (), 0);
  g_unsetenv ("PFEMU_COMPUTE_MODE");
}

/* Defect 1: nvcodec made the pipeline's context (cuCtxCreate); the
 * PinnedflowCUDA frames and their events are made in it, so the copy
 * stream (made in it) records them: no 400, every frame byte-exact. */
GST_START_TEST (test_nvcodec_context_pinnedflow_path)
{
  guint received = 0, bad = 0;
  gchar *err;

  err = run_pipeline (NVCODEC_PIPELINE, NULL, &received, &bad);
  check_intact (err, received, bad);
  fail_unless_equals_int (pfemu.query ("events.cross_context"), 0);
  /* nvcodec's context, shared: no other */
  fail_unless_equals_int (pfemu.query ("contexts.created"), 1);
  fail_unless_equals_int (pfemu.query ("contexts.device0"), 0);
}

GST_END_TEST;

/* Defect 2: the context our element makes is the primary one, wrapped
 * (cudart's, PyTorch's): no cuCtxCreate, one context in the process. */
GST_START_TEST (test_own_context_is_primary)
{
  guint received = 0, bad = 0;
  gchar *err;

  err = run_pipeline (OWN_PIPELINE, NULL, &received, &bad);
  check_intact (err, received, bad);
  fail_unless_equals_int (pfemu.query ("contexts.created"), 0);
  fail_unless_equals_int (pfemu.query ("contexts.device0"), 1);
  fail_unless (pfemu.query ("primary.retains") >= 1);
  /* every retain released once the pipeline is gone */
  fail_unless_equals_int (pfemu.query ("primary.refs.device0"), 0);
  fail_unless_equals_int (pfemu.query ("events.cross_context"), 0);
}

GST_END_TEST;

/* Defect 2: in EXCLUSIVE_PROCESS compute mode the device takes one
 * context: with nvcodec's bound our elements make none (no cudaSetDevice,
 * no primary context), so the pipeline runs. */
GST_START_TEST (test_exclusive_process_nvcodec)
{
  guint received = 0, bad = 0;
  gchar *err;

  g_setenv ("PFEMU_COMPUTE_MODE", "exclusive-process", TRUE);
  pfemu.reset ();
  err = run_pipeline (NVCODEC_PIPELINE, NULL, &received, &bad);
  check_intact (err, received, bad);
  fail_unless_equals_int (pfemu.query ("contexts.refused"), 0);
  fail_unless_equals_int (pfemu.query ("contexts.created"), 1);
  fail_unless_equals_int (pfemu.query ("contexts.device0"), 0);
}

GST_END_TEST;

/* Defect 3: a segment registered under nvcodec's context outlives the
 * pipeline: it stays registered (the registration holds the context), so
 * the next pipeline copies from it by DMA, not staged; when the segment
 * dies it is unregistered and the context destroyed. */
GST_START_TEST (test_registration_outlives_pipeline)
{
  GstCaps *caps = cuda_test_make_caps (FORMAT, W, H);
  GstVideoInfo info;
  GstBufferPool *pool;
  guint received = 0, bad = 0;
  gchar *err;

  gst_video_info_from_caps (&info, caps);
  /* one buffer per frame: acquiring never waits on a failed pipeline */
  pool = gst_pinned_buffer_pool_new_configured (caps, info.size, N_FRAMES,
      N_FRAMES, TRUE, (GstPinnedSegmentFlags) 0);
  fail_unless (pool != NULL);
  fail_unless (gst_buffer_pool_set_active (pool, TRUE));

  err = run_pipeline (NVCODEC_PIPELINE, pool, &received, &bad);
  check_intact (err, received, bad);
  fail_unless_equals_int (pfemu.query ("contexts.created"), 1);
  /* the pipeline is gone (with pinnedcudadownload's own output segment),
   * the test's segment is not: still registered */
  fail_unless_equals_int (pfemu.query ("registrations.dropped"), 0);
  fail_unless_equals_int (pfemu.query ("live.registrations"), 1);

  err = run_pipeline (OWN_PIPELINE, pool, &received, &bad);
  check_intact (err, received, bad);
  /* the second pipeline's copies from the segment are DMA, not staged */
  fail_unless_equals_int (pfemu.query ("copies.pageable"), 0);
  fail_unless_equals_int (pfemu.query ("live.registrations"), 1);

  fail_unless (gst_buffer_pool_set_active (pool, FALSE));
  gst_object_unref (pool);
  gst_caps_unref (caps);
  /* the segment died: unregistered (in its context), then the context
   * destroyed */
  fail_unless_equals_int (pfemu.query ("live.registrations"), 0);
  fail_unless_equals_int (pfemu.query ("unregistrations"),
      pfemu.query ("registrations"));
  fail_unless_equals_int (pfemu.query ("contexts.destroyed"), 1);
}

GST_END_TEST;

/* ------------------------------------------------- the emulator's rules */

/* cudart (the emulator) and the driver (its libcuda.so.1 stand-in): the
 * calls the rules below need, handles as pointers. */
static struct
{
  int (*SetDevice) (int dev);
  int (*DeviceGetAttribute) (int *value, int attr, int dev);
  int (*StreamCreateWithFlags) (void **s, unsigned int flags);
  int (*StreamDestroy) (void *s);
  int (*StreamSynchronize) (void *s);
  int (*StreamWaitEvent) (void *s, void *e, unsigned int flags);
  int (*EventCreateWithFlags) (void **e, unsigned int flags);
  int (*EventDestroy) (void *e);
  int (*EventRecord) (void *e, void *s);
  int (*MallocPitch) (void **p, size_t *pitch, size_t w, size_t h);
  int (*Free) (void *p);
  int (*HostRegister) (void *p, size_t size, unsigned int flags);
  int (*HostUnregister) (void *p);
  int (*Memcpy2DAsync) (void *dst, size_t dp, const void *src, size_t sp,
      size_t w, size_t h, int kind, void *s);
  int (*cuInit) (unsigned int flags);
  int (*cuCtxCreate) (void **ctx, unsigned int flags, int dev);
  int (*cuCtxDestroy) (void *ctx);
  int (*cuCtxPopCurrent) (void **ctx);
  int (*cuDevicePrimaryCtxRetain) (void **ctx, int dev);
  int (*cuDevicePrimaryCtxRelease) (int dev);
} api;

static void
load_api (void)
{
  void *rt = dlopen (g_getenv ("GST_PINNEDFLOW_CUDART"), RTLD_NOW);
  void *cu = dlopen ("libcuda.so.1", RTLD_NOW);

  fail_unless (rt != NULL && cu != NULL);
#define RT(f) fail_unless ((*(void **) (&api.f) = dlsym (rt, "cuda" #f)) != NULL)
#define CU(f, n) fail_unless ((*(void **) (&api.f) = dlsym (cu, n)) != NULL)
  RT (SetDevice);
  RT (DeviceGetAttribute);
  RT (StreamCreateWithFlags);
  RT (StreamDestroy);
  RT (StreamSynchronize);
  RT (StreamWaitEvent);
  RT (EventCreateWithFlags);
  RT (EventDestroy);
  RT (EventRecord);
  RT (MallocPitch);
  RT (Free);
  RT (HostRegister);
  RT (HostUnregister);
  RT (Memcpy2DAsync);
  CU (cuInit, "cuInit");
  CU (cuCtxCreate, "cuCtxCreate_v2");
  CU (cuCtxDestroy, "cuCtxDestroy_v2");
  CU (cuCtxPopCurrent, "cuCtxPopCurrent_v2");
  CU (cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  CU (cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
#undef RT
#undef CU
  /* kept open: the emulator is loaded by the plugin anyway */
}

#define LEGACY ((void *) (guintptr) 1)
#define PER_THREAD ((void *) (guintptr) 2)

/* An event records only on a stream of its own context (400 otherwise,
 * the legacy stream being the current context's); a stream may wait on
 * an event of another context; handles 1 and 2 are the default streams. */
GST_START_TEST (test_emulator_cross_context)
{
  void *ctx = NULL, *ev_primary = NULL, *ev_ctx = NULL, *s_ctx = NULL;

  load_api ();
  fail_unless_equals_int (api.SetDevice (0), 0);
  fail_unless_equals_int (api.EventCreateWithFlags (&ev_primary, 2), 0);
  fail_unless_equals_int (api.cuInit (0), 0);
  fail_unless_equals_int (api.cuCtxCreate (&ctx, 0, 0), 0);     /* pushed */
  fail_unless_equals_int (api.StreamCreateWithFlags (&s_ctx, 1), 0);
  fail_unless_equals_int (api.EventCreateWithFlags (&ev_ctx, 2), 0);

  fail_unless_equals_int (api.EventRecord (ev_primary, s_ctx), 400);
  fail_unless_equals_int (api.EventRecord (ev_primary, NULL), 400);
  fail_unless_equals_int (pfemu.query ("events.cross_context"), 2);
  fail_unless_equals_int (api.EventRecord (ev_ctx, s_ctx), 0);
  fail_unless_equals_int (api.StreamWaitEvent (s_ctx, ev_primary, 0), 0);
  /* legacy and per-thread default streams */
  fail_unless_equals_int (api.EventRecord (ev_ctx, NULL), 0);
  fail_unless_equals_int (api.EventRecord (ev_ctx, LEGACY), 0);
  fail_unless_equals_int (api.EventRecord (ev_ctx, PER_THREAD), 0);
  fail_unless_equals_int (api.StreamWaitEvent (PER_THREAD, ev_ctx, 0), 0);
  fail_unless_equals_int (api.StreamWaitEvent (LEGACY, ev_ctx, 0), 0);
  fail_unless_equals_int (api.StreamSynchronize (LEGACY), 0);
  fail_unless_equals_int (api.StreamSynchronize (PER_THREAD), 0);
  fail_unless_equals_int (api.StreamSynchronize (s_ctx), 0);
  fail_unless_equals_int (api.StreamDestroy (LEGACY), 400);

  fail_unless_equals_int (api.EventDestroy (ev_ctx), 0);
  fail_unless_equals_int (api.StreamDestroy (s_ctx), 0);
  fail_unless_equals_int (api.cuCtxDestroy (ctx), 0);
  fail_unless_equals_int (api.EventDestroy (ev_primary), 0);
}

GST_END_TEST;

/* Destroying a context drops the registrations made in it: copies from
 * those pages are staged (synchronous, counted pageable) and
 * cudaHostUnregister no longer knows them (713). */
GST_START_TEST (test_emulator_destroy_drops_registrations)
{
  const gsize size = 64 * 1024;
  guint8 *host = mmap (NULL, size, PROT_READ | PROT_WRITE,
      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void *ctx = NULL, *dev = NULL, *s = NULL;
  size_t pitch = 0;

  fail_unless (host != MAP_FAILED);
  load_api ();
  fail_unless_equals_int (api.cuInit (0), 0);
  fail_unless_equals_int (api.cuCtxCreate (&ctx, 0, 0), 0);
  fail_unless_equals_int (api.HostRegister (host, size, 0x01), 0);
  fail_unless_equals_int (pfemu.query ("live.registrations"), 1);
  fail_unless_equals_int (api.cuCtxDestroy (ctx), 0);
  fail_unless_equals_int (pfemu.query ("registrations.dropped"), 1);
  fail_unless_equals_int (pfemu.query ("live.registrations"), 0);

  /* in the primary context now */
  fail_unless_equals_int (api.SetDevice (0), 0);
  fail_unless_equals_int (api.MallocPitch (&dev, &pitch, 1024, 16), 0);
  fail_unless_equals_int (api.StreamCreateWithFlags (&s, 1), 0);
  fail_unless_equals_int (api.Memcpy2DAsync (dev, pitch, host, 1024, 1024,
          16, 1, s), 0);
  fail_unless_equals_int (pfemu.query ("copies.pageable"), 1);
  fail_unless_equals_int (pfemu.query ("copies.pinned"), 0);
  fail_unless_equals_int (api.HostUnregister (host), 713);
  fail_unless_equals_int (api.StreamDestroy (s), 0);
  fail_unless_equals_int (api.Free (dev), 0);
  munmap (host, size);
}

GST_END_TEST;

/* A registration pins its pages for the context that made it, for every
 * context with cudaHostRegisterPortable (what pinnedflow uses). */
GST_START_TEST (test_emulator_portable_registration)
{
  const gsize size = 64 * 1024;
  guint8 *host = mmap (NULL, 2 * size, PROT_READ | PROT_WRITE,
      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  guint8 *portable = host + size;
  void *ctx = NULL, *dev = NULL;
  size_t pitch = 0;

  fail_unless (host != MAP_FAILED);
  load_api ();
  fail_unless_equals_int (api.SetDevice (0), 0);
  fail_unless_equals_int (api.MallocPitch (&dev, &pitch, 1024, 16), 0);
  fail_unless_equals_int (api.cuInit (0), 0);
  fail_unless_equals_int (api.cuCtxCreate (&ctx, 0, 0), 0);
  fail_unless_equals_int (api.HostRegister (host, size, 0), 0);
  fail_unless_equals_int (api.HostRegister (portable, size, 0x01), 0);
  fail_unless_equals_int (api.cuCtxPopCurrent (NULL), 0);
  /* back in the primary context (the thread's before the push) */
  fail_unless_equals_int (api.Memcpy2DAsync (dev, pitch, host, 1024, 1024,
          16, 1, PER_THREAD), 0);
  fail_unless_equals_int (api.Memcpy2DAsync (dev, pitch, portable, 1024,
          1024, 16, 1, PER_THREAD), 0);
  fail_unless_equals_int (pfemu.query ("copies.pageable"), 1);
  fail_unless_equals_int (pfemu.query ("copies.pinned"), 1);
  fail_unless_equals_int (api.cuCtxDestroy (ctx), 0);
  fail_unless_equals_int (pfemu.query ("registrations.dropped"), 2);
  fail_unless_equals_int (api.Free (dev), 0);
  munmap (host, 2 * size);
}

GST_END_TEST;

/* PFEMU_COMPUTE_MODE=exclusive-process: one context on the device, and
 * attribute 20 (compute mode) reads 3. */
GST_START_TEST (test_emulator_exclusive_process)
{
  void *ctx = NULL, *other = NULL, *primary = NULL;
  int mode = -1;

  g_setenv ("PFEMU_COMPUTE_MODE", "exclusive-process", TRUE);
  pfemu.reset ();
  load_api ();
  fail_unless_equals_int (api.DeviceGetAttribute (&mode, 20, 0), 0);
  fail_unless_equals_int (mode, 3);
  fail_unless_equals_int (api.cuInit (0), 0);
  fail_unless_equals_int (api.cuCtxCreate (&ctx, 0, 0), 0);
  fail_unless_equals_int (api.cuCtxCreate (&other, 0, 0), 46);
  fail_unless_equals_int (api.cuDevicePrimaryCtxRetain (&primary, 0), 46);
  fail_unless_equals_int (api.cuCtxPopCurrent (NULL), 0);
  /* cudart on a thread without a context: its primary one, refused */
  fail_unless_equals_int (api.SetDevice (0), 46);
  fail_unless_equals_int (pfemu.query ("contexts.refused"), 3);
  fail_unless_equals_int (pfemu.query ("contexts.device0"), 0);
  fail_unless_equals_int (api.cuCtxDestroy (ctx), 0);
  /* the device is free again: the primary context, then no other */
  fail_unless_equals_int (api.SetDevice (0), 0);
  fail_unless_equals_int (api.cuCtxCreate (&other, 0, 0), 46);
}

GST_END_TEST;

static Suite *
context_suite (void)
{
  Suite *s = suite_create ("cuda-context");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 120);
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_nvcodec_context_pinnedflow_path);
  tcase_add_test (tc, test_own_context_is_primary);
  tcase_add_test (tc, test_exclusive_process_nvcodec);
  tcase_add_test (tc, test_registration_outlives_pipeline);
  suite_add_tcase (s, tc);
  tc = tcase_create ("emulator");
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_emulator_cross_context);
  tcase_add_test (tc, test_emulator_destroy_drops_registrations);
  tcase_add_test (tc, test_emulator_portable_registration);
  tcase_add_test (tc, test_emulator_exclusive_process);
  suite_add_tcase (s, tc);
  return s;
}

/* In a child process (loading nvcodec initialises CUDA): NULL when
 * nvcodec's elements and libgstcuda's driver are usable, else why not. */
static gchar *
skip_reason (void)
{
  const gchar *names[] = { "cudaupload", "cudadownload" };
  GstPluginFeature *loaded;
  GstElementFactory *f;
  gboolean (*load_library) (void);
  void *lib;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (names); i++) {
    f = gst_element_factory_find (names[i]);
    if (f == NULL)
      return g_strdup_printf ("nvcodec's %s is not registered", names[i]);
    loaded = gst_plugin_feature_load (GST_PLUGIN_FEATURE (f));
    gst_object_unref (f);
    if (loaded == NULL)
      return g_strdup ("nvcodec's plugin does not load");
    gst_object_unref (loaded);
  }
  lib = dlopen ("libgstcuda-1.0.so.0", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL)
    return g_strdup ("libgstcuda-1.0.so.0 not loadable");
  load_library = dlsym (lib, "gst_cuda_load_library");
  if (load_library == NULL || !load_library ())
    return g_strdup ("libgstcuda finds no CUDA driver (libcuda.so.1)");
  return NULL;
}

int
main (int argc, char **argv)
{
  gchar *why = NULL;

  gst_check_init (&argc, &argv);
  if (g_strcmp0 (g_getenv ("PINNEDFLOW_CUDA_MODE"), "emulated") != 0) {
    g_print ("SKIP: the context tests read the emulator's counters\n");
    return 77;
  }
  if (!cuda_test_emu_load (&pfemu, g_getenv ("GST_PINNEDFLOW_CUDART"))) {
    g_printerr ("cuda-context: cannot load the emulator from "
        "GST_PINNEDFLOW_CUDART=%s\n", g_getenv ("GST_PINNEDFLOW_CUDART"));
    return 1;
  }
  /* in a child: loading nvcodec initialises CUDA, and the suite forks a
   * child per test */
  if (!cuda_test_probe_in_child (skip_reason, &pfemu, &why)) {
    g_printerr ("FAIL: probing nvcodec: %s\n", why);
    g_free (why);
    return 1;
  }
  if (why) {
    g_print ("SKIP: %s\n", why);
    g_free (why);
    return 77;
  }
  if (!cuda_test_check_fork ("cuda-context", &pfemu))
    return 1;
  return gst_check_run_suite (context_suite (), "cuda-context", __FILE__);
}
